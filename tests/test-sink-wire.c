/* SPDX-License-Identifier: MIT */
/* test-sink-wire.c: the frame codec: round trips of every field and type, and refusals of bad frames. */

#include "test-sink.h"

#include <errno.h>
#include <stdlib.h>

/* A frame built by hand: header, then fields appended with put_*. */
struct hand {
	uint8_t b[4096];
	size_t len;
};

static void be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void h_begin(struct hand *h, unsigned version, unsigned type, uint32_t seq)
{
	h->len = 10;
	h->b[4] = (uint8_t)version;
	h->b[5] = (uint8_t)type;
	be(h->b + 6, seq, 4);
}

static void h_field(struct hand *h, unsigned tag, const void *val, uint32_t len)
{
	be(h->b + h->len, tag, 2);
	be(h->b + h->len + 2, len, 4);
	memcpy(h->b + h->len + 6, val, len);
	h->len += 6 + len;
}

static void h_int(struct hand *h, unsigned tag, int64_t v)
{
	uint8_t b[8];

	be(b, (uint64_t)v, 8);
	h_field(h, tag, b, 8);
}

static void h_str(struct hand *h, unsigned tag, const char *s)
{
	h_field(h, tag, s, (uint32_t)strlen(s));
}

static uint8_t *h_end(struct hand *h)
{
	be(h->b, h->len - 4, 4);
	return h->b;
}

/* Decodes h and expects failure r. */
static void expect_bad(struct hand *h, int want, const char *what)
{
	struct bgrun_wire_msg m;
	const char *why = NULL;
	int r = bgrun_wire_decode(h_end(h), h->len, &m, &why);

	if (r != want)
		FAIL("%s: decode gave %d, not %d", what, r, want);
	ASSERT(why != NULL);
}

static void minimal_event(struct hand *h)
{
	h_begin(h, 1, BGRUN_WIRE_EVENT, 7);
	h_str(h, 1, "an-id");
	h_str(h, 2, "commandfinish");
}

void case_wire_roundtrip(void)
{
	static const char *const argv[] = { "hg", "", "a b\n\x01", "\xff\xfe", NULL };
	static const char *const empty[] = { NULL };
	struct bgrun_wire_buf b = { 0 };
	struct bgrun_wire_msg m;
	struct bgrun_event ev;
	size_t size = 0;
	int n;

	/* Every field set, each to a value of its own. */
	bgrun_wire_event_clear(&ev);
	strcpy(ev.id, "0123456789abcdefABCDEF._-0123456789");
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *f = &bgrun_wire_fields[i];
		char *base = (char *)&ev + f->offset;

		if (f->kind == BGRUN_WIRE_INT) {
			int64_t v = i == 4 ? INT64_MAX : -(int64_t)i * 1000000007;

			memcpy(base, &v, sizeof(v));
		} else if (f->kind == BGRUN_WIRE_STR) {
			const char *s = f->name; /* its own name as its value */

			memcpy(base, &s, sizeof(s));
		}
	}
	ev.argv = argv;
	ev.options_kv = argv; /* any NULL-terminated list travels */
	ev.message = "";
	ev.options_json = "{\"k\": [1, \"\\u00e9\"]}";
	n = bgrun_wire_put_event(&b, 0xfffffffe, &ev);
	ASSERT(n > 0);
	ASSERT_EQ(b.len, n);
	ASSERT_EQ(bgrun_wire_frame_size(b.data, b.len, BGRUN_WIRE_MAX_FRAME, &size), 1);
	ASSERT_EQ(size, b.len);
	ASSERT_OK(bgrun_wire_decode(b.data, size, &m, NULL));
	ASSERT_EQ(m.type, BGRUN_WIRE_EVENT);
	ASSERT_EQ(m.seq, 0xfffffffe);
	ASSERT_STR_EQ_NULL(m.ev.id, ev.id);
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *f = &bgrun_wire_fields[i];
		const char *a = (const char *)&ev + f->offset;
		const char *z = (const char *)&m.ev + f->offset;

		if (f->kind == BGRUN_WIRE_INT) {
			int64_t x, y;

			memcpy(&x, a, 8);
			memcpy(&y, z, 8);
			if (x != y)
				FAIL("%s: %lld vs %lld", f->name, (long long)x,
				     (long long)y);
		} else if (f->kind == BGRUN_WIRE_STR) {
			const char *x, *y;

			memcpy(&x, a, sizeof(x));
			memcpy(&y, z, sizeof(y));
			ASSERT_STR_EQ_NULL(y, x);
		}
	}
	for (size_t i = 0; i < 5; i++) {
		ASSERT_STR_EQ_NULL(m.ev.argv[i], argv[i]);
		ASSERT_STR_EQ_NULL(m.ev.options_kv[i], argv[i]);
	}
	bgrun_wire_msg_release(&m);

	/* Unknown stays unknown; an empty argv is not an absent one. */
	b.len = 0;
	bgrun_wire_event_clear(&ev);
	strcpy(ev.id, "x");
	ev.event = "e";
	ev.argv = empty;
	ASSERT(bgrun_wire_put_event(&b, 1, &ev) > 0);
	ASSERT_OK(bgrun_wire_decode(b.data, b.len, &m, NULL));
	ASSERT(m.ev.argv != NULL && m.ev.argv[0] == NULL);
	ASSERT(m.ev.source == NULL && m.ev.pid == BGRUN_NULL &&
	       m.ev.exit_code == BGRUN_NULL && m.ev.options_json == NULL &&
	       m.ev.options_kv == NULL);
	bgrun_wire_msg_release(&m);

	/* Events the encoder refuses. */
	ev.id[0] = '\0';
	ASSERT_EQ(bgrun_wire_put_event(&b, 1, &ev), -EINVAL);
	strcpy(ev.id, "bad id");
	ASSERT_EQ(bgrun_wire_put_event(&b, 1, &ev), -EINVAL);
	strcpy(ev.id, "ok");
	ev.event = NULL;
	ASSERT_EQ(bgrun_wire_put_event(&b, 1, &ev), -EINVAL);
	{
		char *big = malloc(BGRUN_WIRE_MAX_FRAME + 1);

		ASSERT(big != NULL);
		memset(big, 'x', BGRUN_WIRE_MAX_FRAME);
		big[BGRUN_WIRE_MAX_FRAME] = '\0';
		ev.event = "e";
		ev.message = big;
		size = b.len;
		ASSERT_EQ(bgrun_wire_put_event(&b, 1, &ev), -EMSGSIZE);
		ASSERT_EQ(b.len, size); /* unchanged on failure */
		free(big);
	}

	/* ACK, ERROR and HELLO, back to back in one buffer. */
	b.len = 0;
	ASSERT(bgrun_wire_put_ack(&b, 42, 0) > 0);
	ASSERT(bgrun_wire_put_error(&b, 43, BGRUN_WIRE_E_INVALID,
				     "bad\nsecond line") > 0);
	ASSERT(bgrun_wire_put_hello(&b, 0, &(struct bgrun_wire_hello){
		1, BGRUN_WIRE_MAX_FRAME, 1234, "/x/events.db", 5, 6 }) > 0);
	{
		size_t off = 0;

		ASSERT_EQ(bgrun_wire_frame_size(b.data, b.len, BGRUN_WIRE_MAX_FRAME, &size), 1);
		ASSERT_OK(bgrun_wire_decode(b.data, size, &m, NULL));
		ASSERT(m.type == BGRUN_WIRE_ACK && m.seq == 42 && m.status == 0);
		bgrun_wire_msg_release(&m);
		off += size;
		ASSERT_EQ(bgrun_wire_frame_size(b.data + off, b.len - off, BGRUN_WIRE_MAX_FRAME, &size), 1);
		ASSERT_OK(bgrun_wire_decode(b.data + off, size, &m, NULL));
		ASSERT(m.type == BGRUN_WIRE_ERROR && m.seq == 43 &&
		       m.code == BGRUN_WIRE_E_INVALID);
		ASSERT_STR_EQ_NULL(m.text, "bad"); /* one line only */
		bgrun_wire_msg_release(&m);
		off += size;
		ASSERT_EQ(bgrun_wire_frame_size(b.data + off, b.len - off, BGRUN_WIRE_MAX_FRAME, &size), 1);
		ASSERT_OK(bgrun_wire_decode(b.data + off, size, &m, NULL));
		ASSERT(m.type == BGRUN_WIRE_HELLO && m.hello.version == 1 &&
		       m.hello.pid == 1234 && m.hello.db_dev == 5 &&
		       m.hello.db_ino == 6);
		ASSERT_STR_EQ_NULL(m.hello.db_path, "/x/events.db");
		bgrun_wire_msg_release(&m);
		ASSERT_EQ(off + size, b.len);
	}
	bgrun_wire_buf_free(&b);

	/* A field of a later version is skipped, not refused. */
	{
		struct hand h;

		minimal_event(&h);
		h_str(&h, 999, "from the future");
		h_int(&h, 64, 1); /* an ACK's tag, meaningless in an EVENT */
		ASSERT_OK(bgrun_wire_decode(h_end(&h), h.len, &m, NULL));
		ASSERT_STR_EQ_NULL(m.ev.event, "commandfinish");
		bgrun_wire_msg_release(&m);
	}
}

void case_wire_reject(void)
{
	struct hand h;
	uint8_t hdr[4];
	size_t size = 0;

	/* The length alone decides, before any allocation. */
	be(hdr, BGRUN_WIRE_MAX_FRAME + 1, 4);
	ASSERT_EQ(bgrun_wire_frame_size(hdr, 4, BGRUN_WIRE_MAX_FRAME, &size), -EMSGSIZE);
	be(hdr, 0xffffffff, 4);
	ASSERT_EQ(bgrun_wire_frame_size(hdr, 4, BGRUN_WIRE_MAX_FRAME, &size), -EMSGSIZE);
	be(hdr, 5, 4);
	ASSERT_EQ(bgrun_wire_frame_size(hdr, 4, BGRUN_WIRE_MAX_FRAME, &size), -EBADMSG);
	be(hdr, 100, 4);
	ASSERT_EQ(bgrun_wire_frame_size(hdr, 4, BGRUN_WIRE_MAX_FRAME, &size), 0);
	ASSERT_EQ(size, 104);
	ASSERT_EQ(bgrun_wire_frame_size(hdr, 4, 50, &size), -EMSGSIZE);

	minimal_event(&h);
	h.b[4] = 2;
	expect_bad(&h, -EPROTONOSUPPORT, "version 2");
	h_begin(&h, 1, 9, 1);
	expect_bad(&h, -EBADMSG, "unknown type");
	h_begin(&h, 1, 0, 1);
	expect_bad(&h, -EBADMSG, "type 0");

	h_begin(&h, 1, BGRUN_WIRE_EVENT, 1);
	h_str(&h, 2, "e");
	expect_bad(&h, -EBADMSG, "no id");
	h_begin(&h, 1, BGRUN_WIRE_EVENT, 1);
	h_str(&h, 1, "x");
	expect_bad(&h, -EBADMSG, "no event name");
	h_begin(&h, 1, BGRUN_WIRE_EVENT, 1);
	h_str(&h, 1, "x");
	h_str(&h, 2, "");
	expect_bad(&h, -EBADMSG, "empty event name");
	h_begin(&h, 1, BGRUN_WIRE_EVENT, 1);
	h_str(&h, 1, "x y");
	h_str(&h, 2, "e");
	expect_bad(&h, -EBADMSG, "bad id");
	h_begin(&h, 1, BGRUN_WIRE_EVENT, 1);
	h_str(&h, 1, "0123456789012345678901234567890123456");
	h_str(&h, 2, "e");
	expect_bad(&h, -EBADMSG, "id too long");

	minimal_event(&h);
	h_str(&h, 2, "again");
	expect_bad(&h, -EBADMSG, "duplicate tag");
	minimal_event(&h);
	h_field(&h, 3, "a\0b", 3);
	expect_bad(&h, -EBADMSG, "NUL in a string");
	minimal_event(&h);
	h_field(&h, 8, "1234", 4);
	expect_bad(&h, -EBADMSG, "short integer");
	minimal_event(&h);
	{
		/* argv: a count far above what the bytes could hold. */
		uint8_t v[8];

		be(v, 0x7fffffff, 4);
		be(v + 4, 0, 4);
		h_field(&h, 11, v, 8);
	}
	expect_bad(&h, -EBADMSG, "argv count");
	minimal_event(&h);
	{
		/* argv: a string running past its field. */
		uint8_t v[9];

		be(v, 1, 4);
		be(v + 4, 10, 4);
		v[8] = 'a';
		h_field(&h, 11, v, 9);
	}
	expect_bad(&h, -EBADMSG, "argv string length");
	minimal_event(&h);
	{
		uint8_t v[9];

		be(v, 0, 4);
		h_field(&h, 11, v, 5); /* bytes after the last string */
	}
	expect_bad(&h, -EBADMSG, "argv trailing bytes");

	/* A field's length past the end of the frame. */
	minimal_event(&h);
	h_str(&h, 3, "source");
	be(h.b + h.len - 6 - 4, 1000, 4);
	expect_bad(&h, -EBADMSG, "field past the end");
	/* Fewer than 6 bytes of a field header. */
	minimal_event(&h);
	h.b[h.len++] = 0;
	h.b[h.len++] = 3;
	expect_bad(&h, -EBADMSG, "truncated field header");

	h_begin(&h, 1, BGRUN_WIRE_ACK, 1);
	expect_bad(&h, -EBADMSG, "ack without status");
	h_begin(&h, 1, BGRUN_WIRE_ERROR, 1);
	h_str(&h, 66, "text only");
	expect_bad(&h, -EBADMSG, "error without code");

	/* The length field must match the frame's size. */
	{
		struct bgrun_wire_msg m;

		minimal_event(&h);
		h_end(&h);
		ASSERT_EQ(bgrun_wire_decode(h.b, h.len - 1, &m, NULL), -EBADMSG);
		ASSERT_EQ(bgrun_wire_decode(h.b, 3, &m, NULL), -EBADMSG);
	}
}

void case_wire_prefixes(void)
{
	struct bgrun_wire_buf b = { 0 };
	struct bgrun_event ev;
	unsigned seed = 12345;

	/* Every prefix is "not yet"; every corruption decodes or fails cleanly. */
	t_event(&ev, 3);
	ev.message = "a message";
	ASSERT(bgrun_wire_put_event(&b, 9, &ev) > 0);
	for (size_t n = 0; n < b.len; n++) {
		size_t size = 0;

		ASSERT_EQ(bgrun_wire_frame_size(b.data, n, BGRUN_WIRE_MAX_FRAME, &size), 0);
		if (n >= 4)
			ASSERT_EQ(size, b.len);
	}
	for (int round = 0; round < 20000; round++) {
		uint8_t *copy = malloc(b.len);
		struct bgrun_wire_msg m;
		size_t pos;

		ASSERT(copy != NULL);
		memcpy(copy, b.data, b.len);
		for (int k = 0; k < 1 + round % 4; k++) {
			pos = 4 + (size_t)rand_r(&seed) % (b.len - 4);
			copy[pos] = (uint8_t)rand_r(&seed);
		}
		if (bgrun_wire_decode(copy, b.len, &m, NULL) == 0)
			bgrun_wire_msg_release(&m);
		free(copy);
	}
	bgrun_wire_buf_free(&b);
}
