/* SPDX-License-Identifier: MIT */
/* fuzz-frame.c: libFuzzer target for the sink protocol's frame decoder (src/event/wire-decode.c). */

/*
 * The input is read as a stream of frames, as the daemon reads a
 * connection: each whole frame is decoded; a decoded one is encoded again
 * and must decode to the same message (the codec is its own oracle); the
 * stream ends at the first length the daemon would refuse. Any crash,
 * sanitizer report or failed check is a finding.
 */

#include "bgrun/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "fuzz-frame: check failed: %s\n", #cond); \
			abort(); \
		} \
	} while (0)

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void same_event(const struct bgrun_event *a, const struct bgrun_event *b)
{
	CHECK(strcmp(a->id, b->id) == 0);
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *f = &bgrun_wire_fields[i];
		const char *x = (const char *)a + f->offset;
		const char *y = (const char *)b + f->offset;

		if (f->kind == BGRUN_WIRE_INT) {
			CHECK(memcmp(x, y, sizeof(int64_t)) == 0);
		} else if (f->kind == BGRUN_WIRE_STR) {
			const char *s, *t;

			memcpy(&s, x, sizeof(s));
			memcpy(&t, y, sizeof(t));
			CHECK(same_str(s, t));
		}
	}
	CHECK((a->argv == NULL) == (b->argv == NULL));
	if (a->argv != NULL) {
		size_t i = 0;

		for (; a->argv[i] != NULL; i++)
			CHECK(b->argv[i] != NULL && strcmp(a->argv[i], b->argv[i]) == 0);
		CHECK(b->argv[i] == NULL);
	}
}

/* Encodes m again, decodes that, and compares. */
static void round_trip(const struct bgrun_wire_msg *m)
{
	struct bgrun_wire_buf b = { 0 };
	struct bgrun_wire_msg again;
	size_t size = 0;
	int r = -1;

	switch (m->type) {
	case BGRUN_WIRE_EVENT:
		r = bgrun_wire_put_event(&b, m->seq, &m->ev);
		break;
	case BGRUN_WIRE_ACK:
		r = bgrun_wire_put_ack(&b, m->seq, m->status);
		break;
	case BGRUN_WIRE_ERROR:
		/* Only the first line of a text is kept: compare codes only. */
		r = bgrun_wire_put_error(&b, m->seq, (int)m->code, m->text);
		break;
	case BGRUN_WIRE_HELLO:
		r = bgrun_wire_put_hello(&b, m->seq, &m->hello);
		break;
	}
	if (r == -ENOMEM || (r == -EMSGSIZE && m->type == BGRUN_WIRE_HELLO)) {
		bgrun_wire_buf_free(&b);
		return;
	}
	/* What decoded within the limit encodes within it (unknown tags dropped). */
	CHECK(r > 0);
	CHECK(bgrun_wire_frame_size(b.data, b.len, BGRUN_WIRE_MAX_FRAME, &size) == 1);
	CHECK(size == b.len);
	CHECK(bgrun_wire_decode(b.data, b.len, &again, NULL) == 0);
	CHECK(again.type == m->type && again.seq == m->seq);
	if (m->type == BGRUN_WIRE_EVENT)
		same_event(&m->ev, &again.ev);
	if (m->type == BGRUN_WIRE_ACK)
		CHECK(again.status == m->status);
	if (m->type == BGRUN_WIRE_ERROR && (int64_t)(int)m->code == m->code)
		CHECK(again.code == m->code);
	if (m->type == BGRUN_WIRE_HELLO)
		CHECK(again.hello.pid == m->hello.pid &&
		      same_str(again.hello.db_path, m->hello.db_path));
	bgrun_wire_msg_release(&again);
	bgrun_wire_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct bgrun_wire_msg m;
		const char *why = NULL;
		size_t size = 0;
		int r;

		r = bgrun_wire_frame_size(data + off, len - off,
					   BGRUN_WIRE_MAX_FRAME, &size);
		if (r <= 0)
			break;
		CHECK(size >= BGRUN_WIRE_HEADER && size <= len - off);
		r = bgrun_wire_decode(data + off, size, &m, &why);
		if (r == 0) {
			round_trip(&m);
			bgrun_wire_msg_release(&m);
		} else {
			CHECK(why != NULL);
			CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -ENOMEM);
		}
		off += size;
	}
	return 0;
}
