/* SPDX-License-Identifier: MIT */
/* wire.c: the sink protocol's frames written: the field table, the encoders, the error names. */

#include "wire-internal.h"
#include "event-fields.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Made from the table in event-fields.h, in its order: index i holds tag
 * i + 1 (event.c checks it at compile time), which the decoder relies on.
 */
#define WIRE_FIELD(name, kind, column, sql, tag) \
	{ tag, BGRUN__FIELD_WIRE(kind), #name, \
	  offsetof(struct bgrun_event, name) },
const struct bgrun_wire_field bgrun_wire_fields[] = {
	BGRUN__EVENT_FIELDS(WIRE_FIELD)
};
const size_t bgrun_wire_n_fields = BGRUN__N_EVENT_FIELDS;

const struct bgrun_wire_field *bgrun_wire_field_by_name(const char *name)
{
	for (size_t i = 0; i < bgrun_wire_n_fields; i++)
		if (strcmp(bgrun_wire_fields[i].name, name) == 0)
			return &bgrun_wire_fields[i];
	return NULL;
}

int64_t *bgrun__wire_int_at(struct bgrun_event *ev,
			    const struct bgrun_wire_field *f)
{
	return (int64_t *)(void *)((char *)ev + f->offset);
}

const char **bgrun__wire_str_at(struct bgrun_event *ev,
				const struct bgrun_wire_field *f)
{
	return (const char **)(void *)((char *)ev + f->offset);
}

const char *const **bgrun__wire_argv_at(struct bgrun_event *ev,
					const struct bgrun_wire_field *f)
{
	return (const char *const **)((char *)ev + f->offset);
}

void bgrun_wire_event_clear(struct bgrun_event *ev)
{
	bgrun__event_clear(ev);
}

bool bgrun_event_id_valid(const char *id, size_t n)
{
	return bgrun__wire_valid_id((const uint8_t *)id, n);
}

const char *bgrun_event_short_id(const char *id)
{
	size_t n = strlen(id);

	return n > BGRUN_EVENT_SHORT_ID ? id + n - BGRUN_EVENT_SHORT_ID : id;
}

bool bgrun__wire_valid_id(const uint8_t *s, size_t n)
{
	if (n == 0 || n > BGRUN_EVENT_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* ---- encoding ---- */

void bgrun_wire_buf_free(struct bgrun_wire_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static int reserve(struct bgrun_wire_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *grown;

	if (b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more)
		cap *= 2;
	grown = realloc(b->data, cap);
	if (grown == NULL)
		return -ENOMEM;
	b->data = grown;
	b->cap = cap;
	return 0;
}

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	p = put_u32(p, (uint32_t)(v >> 32));
	return put_u32(p, (uint32_t)v);
}

/*
 * Frames are built in place: the header, then each field. The sizes are
 * measured first so that an oversized frame is refused before anything
 * is allocated for it.
 */
struct frame {
	size_t size; /* the bytes after the length field */
	uint8_t *p;
};

static void begin(struct frame *f, struct bgrun_wire_buf *b, unsigned type,
		  uint32_t seq)
{
	f->p = b->data + b->len;
	f->p = put_u32(f->p, (uint32_t)f->size);
	*f->p++ = BGRUN_WIRE_VERSION;
	*f->p++ = (uint8_t)type;
	f->p = put_u32(f->p, seq);
}

static void field_str(struct frame *f, uint16_t tag, const char *s)
{
	size_t n = strlen(s);

	f->p = put_u16(f->p, tag);
	f->p = put_u32(f->p, (uint32_t)n);
	memcpy(f->p, s, n);
	f->p += n;
}

static void field_int(struct frame *f, uint16_t tag, int64_t v)
{
	f->p = put_u16(f->p, tag);
	f->p = put_u32(f->p, 8);
	f->p = put_u64(f->p, (uint64_t)v);
}

/* The size of an argv field's value, or SIZE_MAX past the frame limit. */
static size_t argv_size(const char *const *argv)
{
	size_t n = 4;

	for (size_t i = 0; argv[i] != NULL; i++) {
		n += 4 + strnlen(argv[i], BGRUN_WIRE_MAX_FRAME + 1);
		if (n > BGRUN_WIRE_MAX_FRAME)
			return SIZE_MAX;
	}
	return n;
}

static void field_argv(struct frame *f, uint16_t tag, const char *const *argv,
		       size_t size)
{
	uint32_t count = 0;

	while (argv[count] != NULL)
		count++;
	f->p = put_u16(f->p, tag);
	f->p = put_u32(f->p, (uint32_t)size);
	f->p = put_u32(f->p, count);
	for (uint32_t i = 0; i < count; i++) {
		size_t n = strlen(argv[i]);

		f->p = put_u32(f->p, (uint32_t)n);
		memcpy(f->p, argv[i], n);
		f->p += n;
	}
}

/* Adds a field of n bytes to size; false once past the frame limit. */
static bool grow(size_t *size, size_t n)
{
	if (n > BGRUN_WIRE_MAX_FRAME)
		return false;
	*size += 6 + n;
	return *size <= BGRUN_WIRE_MAX_FRAME;
}

int bgrun_wire_put_event(struct bgrun_wire_buf *b, uint32_t seq,
			  const struct bgrun_event *ev)
{
	struct bgrun_event *e = (struct bgrun_event *)ev; /* read only */
	size_t size = BGRUN_WIRE_HEADER - BGRUN_WIRE_LEN_SIZE;
	struct frame f;
	int r;

	if (!bgrun__wire_valid_id((const uint8_t *)ev->id,
				  strnlen(ev->id, sizeof(ev->id))) ||
	    ev->event == NULL || ev->event[0] == '\0')
		return -EINVAL;
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *fd = &bgrun_wire_fields[i];
		size_t n = 0;

		switch (fd->kind) {
		case BGRUN_WIRE_ID:
			n = strlen(ev->id);
			break;
		case BGRUN_WIRE_STR:
			if (*bgrun__wire_str_at(e, fd) == NULL)
				continue;
			n = strnlen(*bgrun__wire_str_at(e, fd),
				    BGRUN_WIRE_MAX_FRAME + 1);
			break;
		case BGRUN_WIRE_INT:
			if (*bgrun__wire_int_at(e, fd) == BGRUN_NULL)
				continue;
			n = 8;
			break;
		case BGRUN_WIRE_ARGV:
			if (*bgrun__wire_argv_at(e, fd) == NULL)
				continue;
			n = argv_size(*bgrun__wire_argv_at(e, fd));
			break;
		}
		if (!grow(&size, n))
			return -EMSGSIZE;
	}
	r = reserve(b, BGRUN_WIRE_LEN_SIZE + size);
	if (r < 0)
		return r;
	f.size = size;
	begin(&f, b, BGRUN_WIRE_EVENT, seq);
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *fd = &bgrun_wire_fields[i];

		switch (fd->kind) {
		case BGRUN_WIRE_ID:
			field_str(&f, fd->tag, ev->id);
			break;
		case BGRUN_WIRE_STR:
			if (*bgrun__wire_str_at(e, fd) != NULL)
				field_str(&f, fd->tag,
					  *bgrun__wire_str_at(e, fd));
			break;
		case BGRUN_WIRE_INT:
			if (*bgrun__wire_int_at(e, fd) != BGRUN_NULL)
				field_int(&f, fd->tag,
					  *bgrun__wire_int_at(e, fd));
			break;
		case BGRUN_WIRE_ARGV:
			if (*bgrun__wire_argv_at(e, fd) != NULL)
				field_argv(&f, fd->tag,
					   *bgrun__wire_argv_at(e, fd),
					   argv_size(*bgrun__wire_argv_at(e, fd)));
			break;
		}
	}
	b->len += BGRUN_WIRE_LEN_SIZE + size;
	return (int)(BGRUN_WIRE_LEN_SIZE + size);
}

int bgrun_wire_put_ack(struct bgrun_wire_buf *b, uint32_t seq,
			int64_t status)
{
	struct frame f = { .size = BGRUN_WIRE_HEADER - BGRUN_WIRE_LEN_SIZE +
				   14 };
	int r = reserve(b, BGRUN_WIRE_LEN_SIZE + f.size);

	if (r < 0)
		return r;
	begin(&f, b, BGRUN_WIRE_ACK, seq);
	field_int(&f, BGRUN_WIRE_T_STATUS, status);
	b->len += BGRUN_WIRE_LEN_SIZE + f.size;
	return (int)(BGRUN_WIRE_LEN_SIZE + f.size);
}

int bgrun_wire_put_error(struct bgrun_wire_buf *b, uint32_t seq, int code,
			  const char *text)
{
	struct frame f = { .size = BGRUN_WIRE_HEADER - BGRUN_WIRE_LEN_SIZE +
				   14 };
	size_t n = text != NULL ? strnlen(text, 1024) : 0;
	char line[1025];
	int r;

	/* One line of at most 1 KiB: a message, never a payload. */
	if (text != NULL) {
		memcpy(line, text, n);
		line[n] = '\0';
		line[strcspn(line, "\n")] = '\0';
		f.size += 6 + strlen(line);
	}
	r = reserve(b, BGRUN_WIRE_LEN_SIZE + f.size);
	if (r < 0)
		return r;
	begin(&f, b, BGRUN_WIRE_ERROR, seq);
	field_int(&f, BGRUN_WIRE_T_CODE, code);
	if (text != NULL)
		field_str(&f, BGRUN_WIRE_T_TEXT, line);
	b->len += BGRUN_WIRE_LEN_SIZE + f.size;
	return (int)(BGRUN_WIRE_LEN_SIZE + f.size);
}

int bgrun_wire_put_hello(struct bgrun_wire_buf *b, uint32_t seq,
			  const struct bgrun_wire_hello *h)
{
	const int64_t ints[] = { h->version, h->max_frame, h->pid, h->db_dev,
				 h->db_ino, h->started_ns, h->events,
				 h->queued };
	const uint16_t tags[] = { BGRUN_WIRE_T_VERSION,
				  BGRUN_WIRE_T_MAX_FRAME, BGRUN_WIRE_T_PID,
				  BGRUN_WIRE_T_DB_DEV, BGRUN_WIRE_T_DB_INO,
				  BGRUN_WIRE_T_STARTED, BGRUN_WIRE_T_EVENTS,
				  BGRUN_WIRE_T_QUEUED };
	const size_t n_ints = sizeof(ints) / sizeof(ints[0]);
	struct frame f = { .size = BGRUN_WIRE_HEADER - BGRUN_WIRE_LEN_SIZE };
	int r;

	for (size_t i = 0; i < n_ints; i++)
		if (ints[i] != BGRUN_NULL)
			f.size += 14;
	if (h->db_path != NULL) {
		size_t n = strnlen(h->db_path, 4097);

		if (n > 4096)
			return -EMSGSIZE;
		f.size += 6 + n;
	}
	r = reserve(b, BGRUN_WIRE_LEN_SIZE + f.size);
	if (r < 0)
		return r;
	begin(&f, b, BGRUN_WIRE_HELLO, seq);
	for (size_t i = 0; i < n_ints; i++)
		if (ints[i] != BGRUN_NULL)
			field_int(&f, tags[i], ints[i]);
	if (h->db_path != NULL)
		field_str(&f, BGRUN_WIRE_T_DB_PATH, h->db_path);
	b->len += BGRUN_WIRE_LEN_SIZE + f.size;
	return (int)(BGRUN_WIRE_LEN_SIZE + f.size);
}

const char *bgrun_wire_code_name(int64_t code)
{
	static const char *const names[] = {
		[BGRUN_WIRE_E_MALFORMED] = "malformed frame",
		[BGRUN_WIRE_E_TOO_LARGE] = "frame too large",
		[BGRUN_WIRE_E_VERSION] = "unsupported version",
		[BGRUN_WIRE_E_UNEXPECTED] = "unexpected frame type",
		[BGRUN_WIRE_E_INVALID] = "invalid event",
		[BGRUN_WIRE_E_STORE] = "store failure",
		[BGRUN_WIRE_E_DENIED] = "permission denied",
		[BGRUN_WIRE_E_BUSY] = "too many connections",
		[BGRUN_WIRE_E_SHUTDOWN] = "shutting down",
	};

	if (code > 0 && code < (int64_t)(sizeof(names) / sizeof(names[0])) &&
	    names[code] != NULL)
		return names[code];
	return "unknown error";
}
