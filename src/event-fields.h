/* SPDX-License-Identifier: MIT */
/* event-fields.h: the one table of struct bgrun_event's fields: the wire table, the store's columns, event init and the counts come from it. */

#ifndef BGRUN_EVENT_FIELDS_H
#define BGRUN_EVENT_FIELDS_H

#include "bgrun/event.h"

#include <string.h>

/*
 * Every member of struct bgrun_event, in the struct's order (event.c
 * checks at compile time that the table and the struct agree: same
 * members, same order, same types), as
 *
 *	X(name, kind, column, sql, tag)
 *
 * name    the member of struct bgrun_event
 * kind    how it is held, sent and stored:
 *           id    the event id (char[], the store's primary key)
 *           text  const char *, a plain column
 *           int   int64_t, BGRUN_NULL for unknown, a plain column
 *           argv  const char *const *, stored as a JSON array
 *           json  const char *, a JSON object, stored through json()
 *           kv    const char *const *, pairs that the store turns into
 *                 the JSON object of the column `options`
 * column  its column in the events table, which is also its key in a
 *         row's JSON (the store makes that JSON from the columns)
 * sql     the column's declaration in the schema (store-schema.c); a
 *         test compares it with PRAGMA table_xinfo of fresh and of
 *         migrated stores
 * tag     its tag in an EVENT frame (docs/protocol.md): the field's
 *         position + 1, never changed once released
 *
 * The plain columns (text and int) are what the store's statements list
 * from this table, in this order; the others are handled by hand there.
 * docs/hacking.md says how to add a field.
 */
#define BGRUN__EVENT_FIELDS(X) \
	X(id,               id,   id,               "TEXT PRIMARY KEY NOT NULL", 1) \
	X(event,            text, event,            "TEXT NOT NULL", 2) \
	X(source,           text, source,           "TEXT",    3) \
	X(host,             text, host,             "TEXT",    4) \
	X(uid,              int,  uid,              "INTEGER", 5) \
	X(user,             text, user,             "TEXT",    6) \
	X(boot_id,          text, boot_id,          "TEXT",    7) \
	X(pid,              int,  pid,              "INTEGER", 8) \
	X(supervisor_pid,   int,  supervisor_pid,   "INTEGER", 9) \
	X(supervisor_start, int,  supervisor_start, "INTEGER", 10) \
	X(argv,             argv, argv,             "TEXT",    11) \
	X(display,          text, display,          "TEXT",    12) \
	X(cwd,              text, cwd,              "TEXT",    13) \
	X(tag,              text, tag,              "TEXT",    14) \
	X(start_ns,         int,  start_ns,         "INTEGER", 15) \
	X(end_ns,           int,  end_ns,           "INTEGER", 16) \
	X(duration_ns,      int,  duration_ns,      "INTEGER", 17) \
	X(exit_code,        int,  exit_code,        "INTEGER", 18) \
	X(signal,           int,  signal,           "INTEGER", 19) \
	X(core_dumped,      int,  core_dumped,      "INTEGER", 20) \
	X(result,           text, result,           "TEXT",    21) \
	X(user_cpu_ns,      int,  user_cpu_ns,      "INTEGER", 22) \
	X(sys_cpu_ns,       int,  sys_cpu_ns,       "INTEGER", 23) \
	X(max_rss_kb,       int,  max_rss_kb,       "INTEGER", 24) \
	X(minor_faults,     int,  minor_faults,     "INTEGER", 25) \
	X(major_faults,     int,  major_faults,     "INTEGER", 26) \
	X(in_blocks,        int,  in_blocks,        "INTEGER", 27) \
	X(out_blocks,       int,  out_blocks,       "INTEGER", 28) \
	X(vol_ctxsw,        int,  vol_ctxsw,        "INTEGER", 29) \
	X(invol_ctxsw,      int,  invol_ctxsw,      "INTEGER", 30) \
	X(stdout_path,      text, stdout_path,      "TEXT",    31) \
	X(stderr_path,      text, stderr_path,      "TEXT",    32) \
	X(message,          text, message,          "TEXT",    33) \
	X(options_json,     json, options,          "TEXT",    34) \
	X(options_kv,       kv,   options,          "TEXT",    35)

/*
 * Selecting by kind: BGRUN__IF_PLAIN(kind, tokens) is the tokens for a
 * plain column (text, int) and nothing for the others; BGRUN__IF_INT the
 * same for int alone.
 */
#define BGRUN__IF_PLAIN(kind, ...) BGRUN__IF_PLAIN_##kind(__VA_ARGS__)
#define BGRUN__IF_PLAIN_id(...)
#define BGRUN__IF_PLAIN_text(...) __VA_ARGS__
#define BGRUN__IF_PLAIN_int(...) __VA_ARGS__
#define BGRUN__IF_PLAIN_argv(...)
#define BGRUN__IF_PLAIN_json(...)
#define BGRUN__IF_PLAIN_kv(...)

#define BGRUN__IF_INT(kind, ...) BGRUN__IF_INT_##kind(__VA_ARGS__)
#define BGRUN__IF_INT_id(...)
#define BGRUN__IF_INT_text(...)
#define BGRUN__IF_INT_int(...) __VA_ARGS__
#define BGRUN__IF_INT_argv(...)
#define BGRUN__IF_INT_json(...)
#define BGRUN__IF_INT_kv(...)

/* Whether a plain column holds text (1) or an integer (0). */
#define BGRUN__FIELD_TEXT(kind) BGRUN__FIELD_TEXT_##kind
#define BGRUN__FIELD_TEXT_text 1
#define BGRUN__FIELD_TEXT_int 0

/* A kind's enum bgrun_wire_kind (include/bgrun/wire.h). */
#define BGRUN__FIELD_WIRE(kind) BGRUN__FIELD_WIRE_##kind
#define BGRUN__FIELD_WIRE_id BGRUN_WIRE_ID
#define BGRUN__FIELD_WIRE_text BGRUN_WIRE_STR
#define BGRUN__FIELD_WIRE_int BGRUN_WIRE_INT
#define BGRUN__FIELD_WIRE_argv BGRUN_WIRE_ARGV
#define BGRUN__FIELD_WIRE_json BGRUN_WIRE_STR
#define BGRUN__FIELD_WIRE_kv BGRUN_WIRE_ARGV

/* A kind's C type, as a declaration of member m (event.c's check). */
#define BGRUN__FIELD_DECL(kind, m) BGRUN__FIELD_DECL_##kind(m)
#define BGRUN__FIELD_DECL_id(m) char m[BGRUN_EVENT_ID_MAX + 1]
#define BGRUN__FIELD_DECL_text(m) const char *m
#define BGRUN__FIELD_DECL_int(m) int64_t m
#define BGRUN__FIELD_DECL_argv(m) const char *const *m
#define BGRUN__FIELD_DECL_json(m) const char *m
#define BGRUN__FIELD_DECL_kv(m) const char *const *m

/*
 * The counts and the tags, made from the table: BGRUN__TAG_<name> is a
 * field's tag, BGRUN__N_EVENT_FIELDS the number of fields (so of tags),
 * BGRUN__N_COLUMNS the number of plain columns.
 */
#define BGRUN__FIELD_TAG(name, kind, column, sql, tag) BGRUN__TAG_##name = tag,
enum { BGRUN__EVENT_FIELDS(BGRUN__FIELD_TAG) };
#undef BGRUN__FIELD_TAG

#define BGRUN__FIELD_ONE(name, kind, column, sql, tag) +1
#define BGRUN__FIELD_PLAIN_ONE(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, +1)
enum {
	BGRUN__N_EVENT_FIELDS = 0 BGRUN__EVENT_FIELDS(BGRUN__FIELD_ONE),
	BGRUN__N_COLUMNS = 0 BGRUN__EVENT_FIELDS(BGRUN__FIELD_PLAIN_ONE),
};
#undef BGRUN__FIELD_ONE
#undef BGRUN__FIELD_PLAIN_ONE

/*
 * Sets every field of ev to unknown: integers BGRUN_NULL, pointers NULL,
 * the id "" (bgrun_event_init and bgrun_wire_event_clear).
 */
static inline void bgrun__event_clear(struct bgrun_event *ev)
{
#define BGRUN__FIELD_CLEAR(name, kind, column, sql, tag) \
	BGRUN__IF_INT(kind, ev->name = BGRUN_NULL;)
	memset(ev, 0, sizeof(*ev));
	BGRUN__EVENT_FIELDS(BGRUN__FIELD_CLEAR)
#undef BGRUN__FIELD_CLEAR
}

#endif /* BGRUN_EVENT_FIELDS_H */
