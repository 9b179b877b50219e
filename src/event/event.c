/* SPDX-License-Identifier: MIT */
/* event.c: the event model: new events, exit statuses, display strings. */

#include "bgrun/event.h"
#include "common/common.h"
#include "event-fields.h"
#include "platform.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The table of event-fields.h against struct bgrun_event, at compile
 * time: a struct made from the table must have the same size, and each
 * member the same offset and type, so that a member missing from the
 * table, one out of the struct's order or one of another kind does not
 * build. And each tag must be the field's position + 1, which the wire
 * decoder relies on (and which makes a new field the struct's last).
 */
#define MIRROR_MEMBER(name, kind, column, sql, tag) \
	BGRUN__FIELD_DECL(kind, name);
struct event_mirror {
	BGRUN__EVENT_FIELDS(MIRROR_MEMBER)
};
_Static_assert(sizeof(struct event_mirror) == sizeof(struct bgrun_event),
	       "event-fields.h lists every member of struct bgrun_event");

#define MIRROR_INDEX(name, kind, column, sql, tag) MIRROR_INDEX_##name,
enum { BGRUN__EVENT_FIELDS(MIRROR_INDEX) };

/* gcc and clang compare the types; other compilers the offsets alone. */
#if defined(__GNUC__)
#define MIRROR_TYPE_CHECK(name, kind) \
	_Static_assert(__builtin_types_compatible_p( \
			       __typeof__(((struct event_mirror *)0)->name), \
			       __typeof__(((struct bgrun_event *)0)->name)), \
		       "event-fields.h: " #name " is not of kind " #kind);
#else
#define MIRROR_TYPE_CHECK(name, kind)
#endif
#define MIRROR_CHECK(name, kind, column, sql, tag) \
	_Static_assert(offsetof(struct event_mirror, name) == \
			       offsetof(struct bgrun_event, name), \
		       "event-fields.h: " #name " out of the struct's order"); \
	MIRROR_TYPE_CHECK(name, kind) \
	_Static_assert(tag == MIRROR_INDEX_##name + 1, \
		       "event-fields.h: " #name "'s tag is not its place + 1");
BGRUN__EVENT_FIELDS(MIRROR_CHECK)

/*
 * A UUID v7 (RFC 9562): the Unix time in milliseconds in the first 48
 * bits, then 74 random bits. Why not v4: a store's id index then grows at
 * its end, as its time index does; with random ids every insert touched a
 * page of its own (the sink daemon wrote ~7 KB per event, and took 1.6 to
 * 2.5 times longer).
 */
void bgrun_event_new_id(char id[BGRUN_EVENT_ID_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t ms = (uint64_t)bgrun__now_ns(CLOCK_REALTIME) / 1000000;
	unsigned char b[16];
	size_t o = 0;

	bgrun__random_bytes(b, sizeof(b));
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)(ms >> (8 * (5 - i)));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x70); /* version 7 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	for (size_t i = 0; i < sizeof(b); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			id[o++] = '-';
		id[o++] = hex[b[i] >> 4];
		id[o++] = hex[b[i] & 15];
	}
	id[o] = '\0';
}

void bgrun_event_init_lean(struct bgrun_event *ev, const char *event,
			   const char *source)
{
	bgrun__event_clear(ev);
	bgrun_event_new_id(ev->id);
	ev->event = event;
	ev->source = source;
	ev->host = bgrun__host_name();
	ev->uid = bgrun__user_id();
}

void bgrun_event_complete(struct bgrun_event *ev)
{
	if (ev->user == NULL && ev->uid != BGRUN_NULL)
		ev->user = bgrun__user_name(ev->uid);
	if (ev->boot_id == NULL)
		ev->boot_id = bgrun__boot_id();
}

void bgrun_event_init(struct bgrun_event *ev, const char *event,
		      const char *source)
{
	bgrun_event_init_lean(ev, event, source);
	bgrun_event_complete(ev);
}

const char *bgrun_boot_id(void)
{
	return bgrun__boot_id();
}

const char *bgrun_user_name(int64_t uid)
{
	return bgrun__user_name(uid);
}

void bgrun_event_set_status(struct bgrun_event *ev,
			    const struct bgrun_status *st)
{
	const struct bgrun_rusage *ru = &st->rusage;

	ev->pid = st->pid;
	if (st->exited) {
		ev->exit_code = st->exit_code;
		ev->signal = BGRUN_NULL;
		ev->core_dumped = 0;
		ev->result = st->exit_code == 0 ? BGRUN_RESULT_SUCCESS
						: BGRUN_RESULT_FAILED;
	} else if (st->signaled) {
		ev->exit_code = BGRUN_NULL;
		ev->signal = st->signal;
		ev->core_dumped = st->core_dumped ? 1 : 0;
		ev->result = BGRUN_RESULT_SIGNALED;
	}
	ev->start_ns = st->start_realtime_ns;
	ev->end_ns = st->end_realtime_ns;
	ev->duration_ns = st->duration_ns;
	ev->user_cpu_ns = ru->user_cpu_ns;
	ev->sys_cpu_ns = ru->sys_cpu_ns;
	ev->max_rss_kb = ru->max_rss_kb;
	ev->minor_faults = ru->minor_faults;
	ev->major_faults = ru->major_faults;
	ev->in_blocks = ru->in_blocks;
	ev->out_blocks = ru->out_blocks;
	ev->vol_ctxsw = ru->vol_ctxsw;
	ev->invol_ctxsw = ru->invol_ctxsw;
}


/* Mercurial's procutil.shellquote: quote unless only [a-zA-Z0-9._/+-]. */
static bool needs_quote(const char *s)
{
	if (*s == '\0')
		return true;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._/+-", *s) != NULL))
			return true;
	return false;
}

int bgrun_argv_display(const char *const *argv, char **ret_display)
{
	size_t size = 1;
	char *out, *o;

	if (argv == NULL)
		return -EINVAL;
	for (size_t i = 0; argv[i] != NULL; i++) {
		size_t n = strlen(argv[i]);

		/* Each byte becomes at most 4 ("\xNN" or '\''). */
		if (n > (SIZE_MAX - size) / 4 - 4)
			return -ENOMEM;
		size += 4 * n + 3;
	}
	out = malloc(size);
	if (out == NULL)
		return -ENOMEM;
	o = out;
	for (size_t i = 0; argv[i] != NULL; i++) {
		const char *a = argv[i], *q;

		if (i > 0)
			*o++ = ' ';
		if (!needs_quote(a)) {
			o = bgrun__put_escaped(o, a, strlen(a), true);
			continue;
		}
		*o++ = '\'';
		while ((q = strchr(a, '\'')) != NULL) {
			o = bgrun__put_escaped(o, a, (size_t)(q - a), true);
			memcpy(o, "'\\''", 4);
			o += 4;
			a = q + 1;
		}
		o = bgrun__put_escaped(o, a, strlen(a), true);
		*o++ = '\'';
	}
	*o = '\0';
	*ret_display = out;
	return 0;
}

int64_t bgrun_proc_starttime(bgrun_pid_t pid)
{
	return bgrun__proc_starttime((int64_t)pid);
}

size_t bgrun_utf8_decode(const char *s, size_t n, uint32_t *ret_cp)
{
	return bgrun__utf8_decode(s, n, ret_cp);
}
