/* SPDX-License-Identifier: MIT */
/* wire-decode.c: the sink protocol's frames read back: lengths, fields, events, without trusting a byte. */

#include "wire-internal.h"
#include "event-fields.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bgrun_wire_frame_size(const uint8_t *buf, size_t len, size_t max_len,
			   size_t *ret_size)
{
	uint32_t n;

	if (len < BGRUN_WIRE_LEN_SIZE) {
		*ret_size = 0;
		return 0;
	}
	n = bgrun__wire_get_u32(buf);
	if (max_len > BGRUN_WIRE_MAX_FRAME)
		max_len = BGRUN_WIRE_MAX_FRAME;
	if (n > max_len)
		return -EMSGSIZE;
	if (n < BGRUN_WIRE_HEADER - BGRUN_WIRE_LEN_SIZE)
		return -EBADMSG;
	*ret_size = BGRUN_WIRE_LEN_SIZE + (size_t)n;
	return len >= *ret_size ? 1 : 0;
}

uint32_t bgrun_wire_frame_seq(const uint8_t *frame, size_t size)
{
	return size >= BGRUN_WIRE_HEADER ? bgrun__wire_get_u32(frame + 6) : 0;
}

/* The kind of field tag in a frame of type, or -1 if it has no such field. */
static int field_kind(unsigned type, unsigned tag)
{
	switch (type) {
	case BGRUN_WIRE_EVENT:
		if (tag >= 1 && tag <= BGRUN__N_EVENT_FIELDS)
			return bgrun_wire_fields[tag - 1].kind;
		return -1;
	case BGRUN_WIRE_ACK:
		return tag == BGRUN_WIRE_T_STATUS ? BGRUN_WIRE_INT : -1;
	case BGRUN_WIRE_ERROR:
		if (tag == BGRUN_WIRE_T_CODE)
			return BGRUN_WIRE_INT;
		return tag == BGRUN_WIRE_T_TEXT ? BGRUN_WIRE_STR : -1;
	case BGRUN_WIRE_HELLO:
		if (tag == BGRUN_WIRE_T_DB_PATH)
			return BGRUN_WIRE_STR;
		return tag >= BGRUN_WIRE_T_VERSION &&
				       tag <= BGRUN_WIRE_T_QUEUED
			       ? BGRUN_WIRE_INT
			       : -1;
	}
	return -1;
}

/* One field as found in the frame. */
struct tlv {
	unsigned tag;
	int kind;
	const uint8_t *val;
	uint32_t len;
};

struct cursor {
	const uint8_t *p;
	size_t left;
};

/* The next field: 1, 0 at the end, -EBADMSG if truncated. */
static int next_tlv(struct cursor *c, unsigned type, struct tlv *t)
{
	if (c->left == 0)
		return 0;
	if (c->left < 6)
		return -EBADMSG;
	t->tag = (unsigned)c->p[0] << 8 | c->p[1];
	t->len = bgrun__wire_get_u32(c->p + 2);
	if (t->len > c->left - 6)
		return -EBADMSG;
	t->val = c->p + 6;
	t->kind = field_kind(type, t->tag);
	c->p += 6 + t->len;
	c->left -= 6 + t->len;
	return 1;
}

/*
 * Checks one argv value; *ret_count gets its number of strings and
 * *ret_bytes the bytes they need with their terminators.
 */
static int check_argv(const struct tlv *t, size_t *ret_count, size_t *ret_bytes)
{
	struct cursor c = { t->val, t->len };
	size_t count, bytes = 0;

	if (c.left < 4)
		return -EBADMSG;
	count = bgrun__wire_get_u32(c.p);
	c.p += 4;
	c.left -= 4;
	/* Each string takes at least its 4-byte length: no huge counts. */
	if (count > c.left / 4)
		return -EBADMSG;
	for (size_t i = 0; i < count; i++) {
		uint32_t n;

		if (c.left < 4)
			return -EBADMSG;
		n = bgrun__wire_get_u32(c.p);
		if (n > c.left - 4 || memchr(c.p + 4, '\0', n) != NULL)
			return -EBADMSG;
		bytes += (size_t)n + 1;
		c.p += 4 + n;
		c.left -= 4 + n;
	}
	if (c.left != 0)
		return -EBADMSG;
	*ret_count = count;
	*ret_bytes = bytes;
	return 0;
}

/* Pass one: every field checked; the memory the strings need measured. */
static int check_fields(const uint8_t *frame, size_t size, unsigned type,
			size_t *ret_mem, const char **why)
{
	struct cursor c = { frame + BGRUN_WIRE_HEADER,
			    size - BGRUN_WIRE_HEADER };
	uint64_t seen[2] = { 0, 0 };
	size_t mem = 0;
	struct tlv t;
	int r;

	while ((r = next_tlv(&c, type, &t)) > 0) {
		if (t.kind < 0)
			continue; /* a field of a later version: skipped */
		if (seen[t.tag / 64] & (UINT64_C(1) << (t.tag % 64))) {
			*why = "a field appears twice";
			return -EBADMSG;
		}
		seen[t.tag / 64] |= UINT64_C(1) << (t.tag % 64);
		switch (t.kind) {
		case BGRUN_WIRE_INT:
			if (t.len != 8) {
				*why = "an integer field is not 8 bytes long";
				return -EBADMSG;
			}
			break;
		case BGRUN_WIRE_ID:
			if (!bgrun__wire_valid_id(t.val, t.len)) {
				*why = "invalid event id";
				return -EBADMSG;
			}
			break;
		case BGRUN_WIRE_STR:
			if (memchr(t.val, '\0', t.len) != NULL) {
				*why = "a text field holds a NUL byte";
				return -EBADMSG;
			}
			if (type == BGRUN_WIRE_EVENT &&
			    t.tag == BGRUN__TAG_event && t.len == 0) {
				*why = "an empty event name";
				return -EBADMSG;
			}
			mem += (size_t)t.len + 1;
			break;
		case BGRUN_WIRE_ARGV: {
			size_t count, bytes;

			if (check_argv(&t, &count, &bytes) < 0) {
				*why = "malformed argv field";
				return -EBADMSG;
			}
			mem += (count + 1) * sizeof(char *) + bytes;
			break;
		}
		}
	}
	if (r < 0) {
		*why = "truncated field";
		return r;
	}
#define SEEN(tag) ((seen[(tag) / 64] >> ((tag) % 64)) & 1)
	if (type == BGRUN_WIRE_EVENT &&
	    (!SEEN(BGRUN__TAG_id) || !SEEN(BGRUN__TAG_event))) {
		*why = "an event needs an id and an event name";
		return -EBADMSG;
	}
	if (type == BGRUN_WIRE_ACK && !SEEN(BGRUN_WIRE_T_STATUS)) {
		*why = "an ack without a status";
		return -EBADMSG;
	}
	if (type == BGRUN_WIRE_ERROR && !SEEN(BGRUN_WIRE_T_CODE)) {
		*why = "an error without a code";
		return -EBADMSG;
	}
#undef SEEN
	*ret_mem = mem;
	return 0;
}

/* Arena of pass two: pointer arrays first (aligned), then string bytes. */
struct arena {
	char **ptrs;
	char *bytes;
};

static const char *copy_str(struct arena *a, const uint8_t *s, size_t n)
{
	char *out = a->bytes;

	memcpy(out, s, n);
	out[n] = '\0';
	a->bytes += n + 1;
	return out;
}

static const char *const *copy_argv(struct arena *a, const struct tlv *t)
{
	const uint8_t *p = t->val + 4;
	size_t count = bgrun__wire_get_u32(t->val);
	char **argv = a->ptrs;

	a->ptrs += count + 1;
	for (size_t i = 0; i < count; i++) {
		uint32_t n = bgrun__wire_get_u32(p);

		argv[i] = (char *)copy_str(a, p + 4, n);
		p += 4 + n;
	}
	argv[count] = NULL;
	return (const char *const *)argv;
}

static void store_field(struct bgrun_wire_msg *m, struct arena *a,
			const struct tlv *t)
{
	const struct bgrun_wire_field *fd;
	const char *s = NULL;
	int64_t v = 0;

	if (t->kind == BGRUN_WIRE_STR)
		s = copy_str(a, t->val, t->len);
	else if (t->kind == BGRUN_WIRE_INT)
		v = bgrun__wire_get_i64(t->val);
	switch (m->type) {
	case BGRUN_WIRE_EVENT:
		fd = &bgrun_wire_fields[t->tag - 1];
		if (t->kind == BGRUN_WIRE_ID) {
			memcpy(m->ev.id, t->val, t->len);
			m->ev.id[t->len] = '\0';
		} else if (t->kind == BGRUN_WIRE_ARGV) {
			*bgrun__wire_argv_at(&m->ev, fd) = copy_argv(a, t);
		} else if (t->kind == BGRUN_WIRE_STR) {
			*bgrun__wire_str_at(&m->ev, fd) = s;
		} else {
			*bgrun__wire_int_at(&m->ev, fd) = v;
		}
		break;
	case BGRUN_WIRE_ACK:
		m->status = v;
		break;
	case BGRUN_WIRE_ERROR:
		if (t->tag == BGRUN_WIRE_T_CODE)
			m->code = v;
		else
			m->text = s;
		break;
	case BGRUN_WIRE_HELLO:
		switch (t->tag) {
		case BGRUN_WIRE_T_VERSION: m->hello.version = v; break;
		case BGRUN_WIRE_T_MAX_FRAME: m->hello.max_frame = v; break;
		case BGRUN_WIRE_T_PID: m->hello.pid = v; break;
		case BGRUN_WIRE_T_DB_PATH: m->hello.db_path = s; break;
		case BGRUN_WIRE_T_DB_DEV: m->hello.db_dev = v; break;
		case BGRUN_WIRE_T_DB_INO: m->hello.db_ino = v; break;
		case BGRUN_WIRE_T_STARTED: m->hello.started_ns = v; break;
		case BGRUN_WIRE_T_EVENTS: m->hello.events = v; break;
		case BGRUN_WIRE_T_QUEUED: m->hello.queued = v; break;
		}
		break;
	}
}

int bgrun_wire_decode(const uint8_t *frame, size_t size,
		       struct bgrun_wire_msg *ret_msg, const char **why)
{
	struct bgrun_wire_msg m;
	const char *reason = "malformed frame";
	struct cursor c;
	struct arena a;
	size_t mem = 0;
	struct tlv t;
	int r;

	if (why == NULL)
		why = &reason;
	if (size < BGRUN_WIRE_HEADER ||
	    bgrun__wire_get_u32(frame) != size - BGRUN_WIRE_LEN_SIZE) {
		*why = "the length field does not match the frame";
		return -EBADMSG;
	}
	if (frame[4] != BGRUN_WIRE_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTONOSUPPORT;
	}
	memset(&m, 0, sizeof(m));
	m.type = frame[5];
	m.seq = bgrun_wire_frame_seq(frame, size);
	if (m.type < BGRUN_WIRE_HELLO || m.type > BGRUN_WIRE_ERROR) {
		*why = "unknown frame type";
		return -EBADMSG;
	}
	r = check_fields(frame, size, m.type, &mem, why);
	if (r < 0)
		return r;
	bgrun_wire_event_clear(&m.ev);
	m.hello = (struct bgrun_wire_hello){ BGRUN_NULL, BGRUN_NULL,
					      BGRUN_NULL, NULL,
					      BGRUN_NULL, BGRUN_NULL,
					      BGRUN_NULL, BGRUN_NULL,
					      BGRUN_NULL };
	m.status = m.code = BGRUN_NULL;
	if (mem > 0) {
		m.mem = malloc(mem);
		if (m.mem == NULL) {
			*why = "out of memory";
			return -ENOMEM;
		}
	}
	/* Pointer arrays at the start of the block, strings after them. */
	a.ptrs = m.mem;
	a.bytes = m.mem;
	c = (struct cursor){ frame + BGRUN_WIRE_HEADER,
			     size - BGRUN_WIRE_HEADER };
	while (next_tlv(&c, m.type, &t) > 0)
		if (t.kind == BGRUN_WIRE_ARGV)
			a.bytes += (bgrun__wire_get_u32(t.val) + 1) *
				   sizeof(char *);
	c = (struct cursor){ frame + BGRUN_WIRE_HEADER,
			     size - BGRUN_WIRE_HEADER };
	while (next_tlv(&c, m.type, &t) > 0)
		if (t.kind >= 0)
			store_field(&m, &a, &t);
	*ret_msg = m;
	return 0;
}

void bgrun_wire_msg_release(struct bgrun_wire_msg *msg)
{
	free(msg->mem);
	msg->mem = NULL;
}
