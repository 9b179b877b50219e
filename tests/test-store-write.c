/* SPDX-License-Identifier: MIT */
/* test-store-write.c: store-tests cases for writing: field round trips, argv bytes, upserts, lost rows. */

#include "test-store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS INT64_C(1000000)
#define T0 INT64_C(1700000000000000000) /* a fixed CLOCK_REALTIME */

/* An event with every field known (the strings are string literals). */
static void full_event(struct bgrun_event *ev, const char *const *argv)
{
	bgrun_event_init(ev, "commandfinish", "bgrun");
	ev->pid = 4242;
	ev->supervisor_pid = 4241;
	ev->supervisor_start = 777;
	ev->argv = argv;
	ev->display = "do it";
	ev->cwd = "/some/where";
	ev->tag = "nightly";
	ev->start_ns = T0;
	ev->end_ns = T0 + 1500 * MS;
	ev->duration_ns = 1500 * MS + 3;
	ev->exit_code = 3;
	ev->core_dumped = 0;
	ev->result = BGRUN_RESULT_FAILED;
	ev->user_cpu_ns = 11;
	ev->sys_cpu_ns = 12;
	ev->max_rss_kb = 13;
	ev->minor_faults = 14;
	ev->major_faults = 15;
	ev->in_blocks = 16;
	ev->out_blocks = 17;
	ev->vol_ctxsw = 18;
	ev->invol_ctxsw = 19;
	ev->stdout_path = "/tmp/out.log";
	ev->stderr_path = "/tmp/err.log";
	ev->message = "multi\nline \"message\"";
	ev->options_json = "{\"repo\": \"/r\", \"n\": [1, 2]}";
}

static void check_same_event(const struct bgrun_event *a,
			     const struct bgrun_event *b)
{
#define SAME_S(n) ASSERT_STR_EQ_NULL(a->n, b->n);
#define SAME_I(n) ASSERT_EQ(a->n, b->n);
	ASSERT_STR_EQ(a->id, b->id);
	SAME_S(event) SAME_S(source) SAME_S(host) SAME_I(uid) SAME_S(user)
	SAME_S(boot_id) SAME_I(pid) SAME_I(supervisor_pid)
	SAME_I(supervisor_start) SAME_S(display) SAME_S(cwd) SAME_S(tag)
	SAME_I(start_ns) SAME_I(end_ns) SAME_I(duration_ns) SAME_I(exit_code)
	SAME_I(signal) SAME_I(core_dumped) SAME_S(result) SAME_I(user_cpu_ns)
	SAME_I(sys_cpu_ns) SAME_I(max_rss_kb) SAME_I(minor_faults)
	SAME_I(major_faults) SAME_I(in_blocks) SAME_I(out_blocks)
	SAME_I(vol_ctxsw) SAME_I(invol_ctxsw) SAME_S(stdout_path)
	SAME_S(stderr_path) SAME_S(message)
#undef SAME_S
#undef SAME_I
	check_argv(a->argv, b->argv);
}

void case_roundtrip(void)
{
	static const char *const argv[] = { "hg", "clone", "a b", NULL };
	struct bgrun_event ev, bare;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	full_event(&ev, argv);
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	check_same_event(&rows.ev[0], &ev);
	ASSERT_STR_EQ(rows.stored_result[0], "failed");
	/* The options come back as the same JSON (minified by SQLite). */
	ASSERT_STR_EQ(rows.ev[0].options_json, "{\"repo\":\"/r\",\"n\":[1,2]}");
	ASSERT(rows.recorded_ns[0] > 0);
	ASSERT_EQ(rows.time_ns[0], T0);
	t_rows_free(&rows);

	/* An event with nothing known: every column NULL. */
	bgrun_event_init(&bare, "develwarn", NULL);
	bare.host = bare.user = bare.boot_id = NULL;
	bare.uid = BGRUN_NULL;
	ASSERT_EQ(bgrun_store_put(s, &bare), 1);
	t_get(s, bare.id, &rows);
	check_same_event(&rows.ev[0], &bare);
	ASSERT(rows.ev[0].options_json == NULL);
	ASSERT_EQ(rows.argc[0], 0);
	ASSERT(rows.ev[0].argv == NULL);
	ASSERT_EQ(rows.time_ns[0], rows.recorded_ns[0]);
	t_rows_free(&rows);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	t_check_nulls(raw, bare.id, true);
	t_check_nulls(raw, ev.id, false);
	/* Every row's JSON, as made by SQLite, is valid. */
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events WHERE "
				 "json_valid(argv) OR argv IS NULL", NULL), 2);
	sqlite3_close(raw);
	free(db);
}

/*
 * A round trip of every field of the wire table (the event's fields, in
 * the order of src/event-fields.h), each with a value of its own, so that
 * a new field is checked without a word here: read back as it was
 * written, and under its name in the row's JSON.
 */
void case_every_field(void)
{
	static const char *const argv[] = { "a", "b c", NULL };
	char strs[64][16];
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ASSERT(bgrun_wire_n_fields <= 64);
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *f = &bgrun_wire_fields[i];
		char *at = (char *)&ev + f->offset;
		const char *str = strs[i];
		int64_t v = f->tag * 1000 + 7;

		(void)snprintf(strs[i], sizeof(strs[i]), "f%u", f->tag);
		if (strcmp(f->name, "core_dumped") == 0)
			v = 1; /* the store takes 0 and 1 only */
		if (strcmp(f->name, "result") == 0)
			str = BGRUN_RESULT_TIMEOUT;
		if (strcmp(f->name, "options_json") == 0)
			str = "{\"k\":\"v\"}";
		switch (f->kind) {
		case BGRUN_WIRE_INT:
			memcpy(at, &v, sizeof(v));
			break;
		case BGRUN_WIRE_STR:
			memcpy(at, &str, sizeof(str));
			break;
		case BGRUN_WIRE_ARGV:
			/* options_kv counts only without options_json. */
			if (strcmp(f->name, "options_kv") != 0) {
				const char *const *a = argv;

				memcpy(at, &a, sizeof(a));
			}
			break;
		}
	}
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	for (size_t i = 0; i < bgrun_wire_n_fields; i++) {
		const struct bgrun_wire_field *f = &bgrun_wire_fields[i];
		const char *want = (const char *)&ev + f->offset;
		const char *have = (const char *)&rows.ev[0] + f->offset;
		const char *ws, *hs, *js;
		const char *const *wa, *const *ha;
		int64_t wv, hv;
		char *path = t_printf("$.%s", f->name);

		switch (f->kind) {
		case BGRUN_WIRE_ID:
			ASSERT_STR_EQ(have, want);
			break;
		case BGRUN_WIRE_INT:
			memcpy(&wv, want, sizeof(wv));
			memcpy(&hv, have, sizeof(hv));
			if (hv != wv)
				FAIL("%s: read back %lld, written %lld",
				     f->name, (long long)hv, (long long)wv);
			js = t_json_text(raw, rows.json[0], path);
			ASSERT(js != NULL && strtoll(js, NULL, 10) == wv);
			break;
		case BGRUN_WIRE_STR:
			memcpy(&ws, want, sizeof(ws));
			memcpy(&hs, have, sizeof(hs));
			ASSERT_STR_EQ(hs, ws);
			/* The JSON names options_json `options`. */
			if (strcmp(f->name, "options_json") != 0)
				ASSERT_STR_EQ(t_json_text(raw, rows.json[0],
							  path), ws);
			break;
		case BGRUN_WIRE_ARGV:
			memcpy(&wa, want, sizeof(wa));
			memcpy(&ha, have, sizeof(ha));
			/* Rows come back with options_json, never _kv. */
			if (strcmp(f->name, "options_kv") == 0)
				ASSERT(ha == NULL);
			else
				check_argv(ha, wa);
			break;
		}
		free(path);
	}
	ASSERT_STR_EQ(t_json_text(raw, rows.json[0], "$.options.k"), "v");
	sqlite3_close(raw);
	t_rows_free(&rows);
	free(db);
}

void case_json_row(void)
{
	static const char *const argv[] = { "a\"b", "\xff", NULL };
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	full_event(&ev, argv);
	ev.signal = BGRUN_NULL;
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_valid(?1)", rows.json[0]), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.exit_code')",
			    rows.json[0]), 3);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_type(?1, '$.signal') = 'null'",
			    rows.json[0]), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_array_length(?1, '$.argv')",
			    rows.json[0]), 2);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.argv[0]') = "
				 "'a\"b'", rows.json[0]), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.argv[1].hex') = "
				 "'FF'", rows.json[0]), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.options.n[1]')",
			    rows.json[0]), 2);
	ASSERT_STR_EQ_NULL(t_json_text(raw, rows.json[0], "$.id"), ev.id);
	ASSERT_STR_EQ_NULL(t_json_text(raw, rows.json[0], "$.display"),
			   "do it");
	sqlite3_close(raw);
	t_rows_free(&rows);
	bgrun_store_close(s);
	free(db);
}

void case_argv_bytes(void)
{
	static const char *const argv[] = {
		"prog", "with space", "new\nline", "", "\xff", "\x80",
		"a\x80z", "\xc3\xa9t\xc3\xa9", "\xed\xa0\x80", "\xc0\xaf",
		"quote'and\"dq", "\\x41", "{\"hex\":\"41\"}", "\t\r\x01\x7f",
		"\xf4\x90\x80\x80", "\xf0\x9f\x98\x80", NULL,
	};
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ev.argv = argv;
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	check_argv(rows.ev[0].argv, argv);
	ASSERT_EQ(rows.argc[0], 16);
	t_rows_free(&rows);
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 1);
	check_argv(rows.ev[0].argv, argv);
	/* The display is made from argv, valid UTF-8 and printable. */
	ASSERT(strncmp(rows.ev[0].display,
		       "prog 'with space' 'new\\x0aline' '' '\\xff' '\\x80' "
		       "'a\\x80z' '\xc3\xa9t\xc3\xa9' '\\xed\\xa0\\x80'",
		       60) == 0);
	t_rows_free(&rows);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_valid(argv) FROM events", NULL),
		  1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_array_length(argv) FROM events",
			    NULL), 16);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(argv, '$[4].hex') = 'FF'"
				 " FROM events", NULL), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(argv, '$[12]') = "
				 "'{\"hex\":\"41\"}' FROM events", NULL), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_valid(display) OR 1 FROM events",
			    NULL), 1);
	sqlite3_close(raw);
	free(db);
}

/* argv of every length around the statements' chunk of 16, in order. */
void case_argv_lengths(void)
{
	static const size_t lengths[] = { 0, 1, 15, 16, 17, 33, 200 };
	char args[200][8];
	const char *argv[201];
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");

	ASSERT_OK(t_open(db, 0, &s));
	for (size_t i = 0; i < 200; i++) {
		/* Every seventh one is not UTF-8: an object of its bytes. */
		(void)snprintf(args[i], sizeof(args[i]),
			       i % 7 == 3 ? "\xff%zu" : "a%zu", i);
		argv[i] = args[i];
	}
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		const char *saved = argv[lengths[k]];

		argv[lengths[k]] = NULL;
		bgrun_event_init(&ev, "commandfinish", "bgrun");
		ev.argv = argv;
		ASSERT_EQ(bgrun_store_put(s, &ev), 1);
		t_get(s, ev.id, &rows);
		ASSERT_EQ(rows.argc[0], lengths[k]);
		check_argv(rows.ev[0].argv, argv);
		t_rows_free(&rows);
		argv[lengths[k]] = saved;
	}
	bgrun_store_close(s);
	free(db);
}

/* options_kv: the store makes the JSON object, whatever the bytes. */
void case_options_kv(void)
{
	static const char *const kv[] = {
		"return_code", "1", "canonical_command", "commit",
		"quote\"back\\slash", "new\nline", "bad", "\xff\xfe", NULL
	};
	static const char *const odd[] = { "a", "1", "b", NULL };
	static const char *const none[] = { NULL };
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	bgrun_event_init(&ev, "commandfinish", "hg");
	ev.options_kv = kv;
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_type(options) = 'object' FROM "
			    "events WHERE id = ?1", ev.id), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(options, "
			    "'$.return_code') = '1' FROM events WHERE id = ?1",
			    ev.id), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events, "
			    "json_each(events.options) WHERE events.id = ?1 "
			    "AND json_each.key = 'quote\"back\\slash' AND "
			    "json_each.value = 'new' || char(10) || 'line'",
			    ev.id), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(options, '$.bad') = "
			    "'\\xff\\xfe' FROM events WHERE id = ?1", ev.id),
		  1);
	sqlite3_close(raw);
	t_get(s, ev.id, &rows);
	ASSERT(rows.ev[0].options_json != NULL &&
	       strstr(rows.ev[0].options_json, "\"canonical_command\":\"commit\"") !=
		       NULL);
	t_rows_free(&rows);

	/* options_json wins; an empty list is an empty object; odd: -EINVAL. */
	bgrun_event_init(&ev, "commandfinish", "hg");
	ev.options_json = "{\"k\":1}";
	ev.options_kv = kv;
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].options_json, "{\"k\":1}");
	t_rows_free(&rows);
	bgrun_event_init(&ev, "commandfinish", "hg");
	ev.options_kv = none;
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].options_json, "{}");
	t_rows_free(&rows);
	ev.options_kv = odd;
	ASSERT_EQ(bgrun_store_put(s, &ev), -EINVAL);
	ASSERT(strstr(bgrun_store_errmsg(s), "options_kv") != NULL);
	bgrun_store_close(s);
	free(db);
}

void case_text_not_utf8(void)
{
	struct bgrun_event ev;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ev.cwd = "/home/caf\xe9";
	ev.message = "ok \xc3\xa9 \xff";
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, ev.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].cwd, "/home/caf\\xe9");
	ASSERT_STR_EQ(rows.ev[0].message, "ok \xc3\xa9 \\xff");
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_valid(?1)", rows.json[0]), 1);
	sqlite3_close(raw);
	t_rows_free(&rows);
	bgrun_store_close(s);
	free(db);
}

void case_invalid_events(void)
{
	struct bgrun_event evs[3];
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	for (int i = 0; i < 3; i++)
		bgrun_event_init(&evs[i], "commandfinish", "bgrun");
	strcpy(evs[1].id, "bad id!");
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
	ASSERT(strlen(bgrun_store_errmsg(s)) > 0);
	evs[1].id[0] = '\0';
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
	bgrun_event_init(&evs[1], NULL, "bgrun");
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
	evs[1].event = "x";
	evs[1].result = "exploded";
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
	evs[1].result = NULL;
	evs[1].core_dumped = 2;
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
	evs[1].core_dumped = BGRUN_NULL;
	static const char *const bad_json[] = { "{", "[1]", "3", "\"s\"",
						"{\"a\":1} x", "{\"\xff\":1}" };
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		evs[1].options_json = bad_json[i];
		ASSERT_EQ(bgrun_store_put(s, &evs[1]), -EINVAL);
		ASSERT(strstr(bgrun_store_errmsg(s), "options_json") != NULL);
	}
	/* One bad event: the batch writes nothing. */
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 3), -EINVAL);
	evs[1].options_json = "{}";
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 0), 0);
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 3), 3);
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 3), 0);
	ASSERT_STR_EQ(bgrun_store_errmsg(s), "");
	bgrun_store_close(s);
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events", NULL), 3);
	sqlite3_close(raw);
	free(db);
}

void case_upsert(void)
{
	static const char *const argv[] = { "make", "-j8", NULL };
	struct bgrun_event run, fin, late;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	int64_t recorded;
	sqlite3 *raw;

	ASSERT_OK(t_open(db, 0, &s));
	bgrun_event_init(&run, "commandfinish", "bgrun");
	run.argv = argv;
	run.cwd = "/src";
	run.start_ns = T0;
	run.pid = 10;
	run.supervisor_pid = getpid();
	run.supervisor_start = bgrun_proc_starttime(getpid());
	run.result = BGRUN_RESULT_RUNNING;
	ASSERT_EQ(bgrun_store_put(s, &run), 1);
	t_get(s, run.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].result, "running");
	recorded = rows.recorded_ns[0];
	t_rows_free(&rows);

	/* The final write: same id, the row becomes final. */
	fin = run;
	fin.argv = NULL; /* unknown in this write: the stored one stays */
	fin.cwd = NULL;
	fin.exit_code = 0;
	fin.end_ns = T0 + 5 * MS;
	fin.duration_ns = 5 * MS;
	fin.result = BGRUN_RESULT_SUCCESS;
	ASSERT_EQ(bgrun_store_put(s, &fin), 1);
	t_get(s, run.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].result, "success");
	ASSERT_EQ(rows.ev[0].exit_code, 0);
	ASSERT_EQ(rows.ev[0].duration_ns, 5 * MS);
	ASSERT_STR_EQ(rows.ev[0].cwd, "/src");
	check_argv(rows.ev[0].argv, argv);
	ASSERT_EQ(rows.recorded_ns[0], recorded);
	t_rows_free(&rows);

	/* A retried final write, even a different one, changes nothing. */
	fin.exit_code = 1;
	fin.result = BGRUN_RESULT_FAILED;
	ASSERT_EQ(bgrun_store_put(s, &fin), 0);
	/* A late running write never overwrites the final row. */
	late = run;
	late.message = "late";
	ASSERT_EQ(bgrun_store_put(s, &late), 0);
	t_get(s, run.id, &rows);
	ASSERT_STR_EQ(rows.ev[0].result, "success");
	ASSERT_EQ(rows.ev[0].exit_code, 0);
	ASSERT(rows.ev[0].message == NULL);
	t_rows_free(&rows);

	/* A row marked lost still takes a final result, not a running one. */
	bgrun_event_init(&run, "commandfinish", "bgrun");
	run.result = BGRUN_RESULT_LOST;
	ASSERT_EQ(bgrun_store_put(s, &run), 1);
	run.result = BGRUN_RESULT_RUNNING;
	ASSERT_EQ(bgrun_store_put(s, &run), 0);
	run.result = BGRUN_RESULT_TIMEOUT;
	ASSERT_EQ(bgrun_store_put(s, &run), 1);
	ASSERT_EQ(bgrun_store_put(s, &run), 0);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events", NULL), 2);
	sqlite3_close(raw);
	free(db);
}

void case_lost(void)
{
	struct bgrun_event evs[4];
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct t_rows rows = { 0 };
	struct bgrun_status st;
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	int64_t dead_start, count = -1;
	pid_t dead;
	sqlite3 *raw;

	t_spawn_exited(&dead, &dead_start, &st);
	ASSERT_OK(t_open(db, 0, &s));
	for (int i = 0; i < 4; i++) {
		bgrun_event_init(&evs[i], "commandfinish", "bgrun");
		evs[i].result = BGRUN_RESULT_RUNNING;
		evs[i].start_ns = T0 + i;
		evs[i].supervisor_pid = getpid();
		evs[i].supervisor_start = bgrun_proc_starttime(getpid());
	}
	/* 0: alive (this process). 1: another boot. */
	evs[1].boot_id = "00000000-0000-4000-8000-000000000000";
	/* 2: a supervisor that exited and was reaped. */
	evs[2].supervisor_pid = dead;
	evs[2].supervisor_start = dead_start;
	/* 3: this pid, but another start time (a recycled pid). */
	evs[3].supervisor_start -= 1;
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 4), 4);

	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 4);
	static const char *const want[4] = { "lost", "lost", "lost", "running" };
	for (size_t i = 0; i < 4; i++) {
		/* Newest first: evs[3] comes first. */
		ASSERT_STR_EQ(rows.ev[i].id, evs[3 - i].id);
		ASSERT_STR_EQ(rows.ev[i].result, want[i]);
		ASSERT_STR_EQ(rows.stored_result[i], "running");
	}
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.result') = 'lost'",
			    rows.json[0]), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT json_extract(?1, '$.result') = "
				 "'running'", rows.json[3]), 1);
	t_rows_free(&rows);

	q.result = "lost";
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 3);
	t_rows_free(&rows);
	q.result = "running";
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 1);
	ASSERT_STR_EQ(rows.ev[0].id, evs[0].id);
	t_rows_free(&rows);
	q.result = NULL;
	q.failed = true;
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 3);
	t_rows_free(&rows);

	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events WHERE result = "
				 "'running'", NULL), 4);
	ASSERT_OK(bgrun_store_mark_lost(s, &count));
	ASSERT_EQ(count, 3);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events WHERE result = "
				 "'lost'", NULL), 3);
	ASSERT_OK(bgrun_store_mark_lost(s, &count));
	ASSERT_EQ(count, 0);
	q.failed = false;
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	for (size_t i = 0; i < 4; i++)
		ASSERT_STR_EQ(rows.ev[i].result, rows.stored_result[i]);
	t_rows_free(&rows);
	sqlite3_close(raw);
	bgrun_store_close(s);
	free(db);
}

/*
 * A supervisor gone while its command still runs: running, not lost,
 * until the command ends; a live process with the command's pid that
 * started at another time (a recycled pid) is not it.
 */
void case_lost_command_alive(void)
{
	const char *argv[] = { t_self(), "wait", NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct t_rows rows = { 0 };
	struct bgrun_event evs[2];
	struct bgrun_child *child;
	struct bgrun_status st;
	struct bgrun_store *s;
	char *db = t_path(t_tmpdir(), "events.db");
	int64_t dead_start, start, count = -1;
	pid_t dead, pid;
	int fds[2];

	t_spawn_exited(&dead, &dead_start, &st);
	ASSERT_SYS(pipe2(fds, O_CLOEXEC));
	opts.argv = argv;
	opts.in.kind = BGRUN_STDIO_FD;
	opts.in.fd = fds[0];
	start = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	pid = bgrun_spawn(&opts, &child);
	ASSERT_OK(pid);
	ASSERT_SYS(close(fds[0]));
	ASSERT_OK(t_open(db, 0, &s));
	for (int i = 0; i < 2; i++) {
		bgrun_event_init(&evs[i], "commandfinish", "bgrun");
		evs[i].result = BGRUN_RESULT_RUNNING;
		evs[i].supervisor_pid = dead;
		evs[i].supervisor_start = dead_start;
		evs[i].pid = pid;
		evs[i].start_ns = start;
	}
	/* 1: the same pid, an hour before: another process, gone. */
	evs[1].start_ns = start - INT64_C(3600000000000);
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 2), 2);
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_EQ(rows.n, 2);
	/* Newest first. */
	ASSERT_STR_EQ(rows.ev[0].id, evs[0].id);
	ASSERT_STR_EQ(rows.ev[0].result, "running");
	ASSERT_STR_EQ(rows.ev[1].result, "lost");
	t_rows_free(&rows);
	ASSERT_OK(bgrun_store_mark_lost(s, &count));
	ASSERT_EQ(count, 1);

	/* The command ends (a zombie, then reaped): lost. */
	ASSERT_SYS(close(fds[1]));
	ASSERT_OK(bgrun_child_wait(child, 60000, &st));
	bgrun_child_free(child);
	ASSERT_OK(bgrun_store_query(s, &q, t_collect, &rows));
	ASSERT_STR_EQ(rows.ev[0].result, "lost");
	t_rows_free(&rows);
	ASSERT_OK(bgrun_store_mark_lost(s, &count));
	ASSERT_EQ(count, 1);
	bgrun_store_close(s);
	free(db);
}
