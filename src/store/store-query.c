/* SPDX-License-Identifier: MIT */
/* store-query.c: reading the store: filtered queries and lookups by id. */


#include "store-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The filters of struct bgrun_query are the rows of BGRUN_QUERY_FILTERS
 * (bgrun/filters.h), their SQLite terms used as they are (`?` numbered in
 * order by SQLite). A statement is made for each combination in use (so
 * that SQLite plans each with the right index) and kept.
 */
static const char *const filter_sql[BGRUN_QUERY_N_FILTERS] = {
#define FILTER_SQL(name, kind, on, value, sqlite, pg) \
	[BGRUN_QUERY_FILTER_##name] = sqlite,
	BGRUN_QUERY_FILTERS(FILTER_SQL)
#undef FILTER_SQL
};

#define STATS_HEAD(key) \
	"SELECT " key ", result, boot_id, supervisor_pid, supervisor_start, " \
	"duration_ns, pid, start_ns FROM events WHERE 1"
static const char *const kind_head[BGRUN__N_READS] = {
	[BGRUN__READ_ROWS] = BGRUN__SQL_ROW " WHERE 1",
	[BGRUN__READ_STATS + BGRUN_STATS_COMMAND] = STATS_HEAD("display"),
	[BGRUN__READ_STATS + BGRUN_STATS_ARGV0] =
		STATS_HEAD("json_extract(argv, '$[0]')"),
	[BGRUN__READ_STATS + BGRUN_STATS_TAG] = STATS_HEAD("tag"),
	[BGRUN__READ_STATS + BGRUN_STATS_HOST] = STATS_HEAD("host"),
	/* SQLite's localtime is the C library's: TZ, as logsink shows times. */
	[BGRUN__READ_STATS + BGRUN_STATS_DAY] =
		STATS_HEAD("date(time_ns / 1000000000, 'unixepoch', 'localtime')"),
};

/* The value of a row of BGRUN_QUERY_FILTERS, at the next `?`. */
#define BIND_NONE(v) SQLITE_OK
#define BIND_INT(v) sqlite3_bind_int64(stmt, ++i, (v))
#define BIND_TEXT(v) sqlite3_bind_text(stmt, ++i, (v), -1, SQLITE_STATIC)
#define BIND_GLOB(v) BIND_TEXT(v)

static int bind_filters(sqlite3_stmt *stmt, const struct bgrun_query *q)
{
	int i = 0, rc = SQLITE_OK;

#define BIND(name, kind, on, value, sqlite, pg) \
	if (rc == SQLITE_OK && (on)) \
		rc = BIND_##kind(value);
	BGRUN_QUERY_FILTERS(BIND)
#undef BIND
	return rc;
}

int bgrun__store_filter_stmt(struct bgrun_store *store, unsigned kind,
			     const struct bgrun_query *q,
			     sqlite3_stmt **ret_stmt)
{
	unsigned mask = bgrun_query_filter_mask(q);
	unsigned slot = (kind << BGRUN__N_FILTERS) | mask;
	char sql[4096];
	sqlite3_stmt *stmt;
	size_t used;
	int r, rc;

	if (store->filter_stmts == NULL) {
		store->filter_stmts = calloc(BGRUN__N_FILTER_STMTS,
					     sizeof(*store->filter_stmts));
		if (store->filter_stmts == NULL)
			return bgrun__store_failf(store, -ENOMEM,
						  "out of memory");
	}
	if (store->filter_stmts[slot] == NULL) {
		used = (size_t)snprintf(sql, sizeof(sql), "%s", kind_head[kind]);
		for (unsigned f = 0; f < BGRUN_QUERY_N_FILTERS; f++)
			if (mask & (1u << f))
				used += (size_t)snprintf(sql + used,
							 sizeof(sql) - used,
							 "%s", filter_sql[f]);
		used += (size_t)snprintf(sql + used, sizeof(sql) - used, "%s",
					 kind == BGRUN__READ_ROWS
						 ? " ORDER BY time_ns DESC, rowid DESC"
						 : " ORDER BY 1, duration_ns");
		assert(used < sizeof(sql));
		r = bgrun__store_prepare(store, sql, &store->filter_stmts[slot]);
		if (r < 0)
			return r;
	}
	stmt = store->filter_stmts[slot];
	rc = bind_filters(stmt, q);
	if (rc != SQLITE_OK) {
		(void)sqlite3_clear_bindings(stmt);
		return bgrun__store_fail(store, rc, "binding a query");
	}
	*ret_stmt = stmt;
	return 0;
}

void bgrun__column_fields(sqlite3_stmt *stmt, int first,
			  struct bgrun_event *ev)
{
	for (size_t i = 0; i < BGRUN__N_COLUMNS; i++) {
		char *field = (char *)ev + bgrun__columns[i].offset;
		int col = first + (int)i;

		if (bgrun__columns[i].text) {
			const char *s = bgrun__column_text(stmt, col);

			memcpy(field, &s, sizeof(s));
		} else {
			int64_t v = bgrun__column_int(stmt, col);

			memcpy(field, &v, sizeof(v));
		}
	}
}

/*
 * How far a live process's start may be from a row's start_ns and still
 * be its command: start_ns is read just before the launch (the launch may
 * wait for a CPU), the kernel counts in ticks, and the clock may have
 * been slewed since. A pid used again within this span of its first use
 * is what it cannot tell apart.
 */
#define COMMAND_START_SLACK_NS INT64_C(5000000000)

bool bgrun__row_lost(const char *boot_id, int64_t supervisor_pid,
		     int64_t supervisor_start, int64_t pid, int64_t start_ns)
{
	const char *boot = bgrun__boot_id();
	int64_t started;

	if (!bgrun__supervisor_gone(boot_id, supervisor_pid, supervisor_start))
		return false;
	if (pid == BGRUN_NULL || start_ns == BGRUN_NULL ||
	    (boot_id != NULL && boot != NULL && strcmp(boot_id, boot) != 0))
		return true;
	started = bgrun__proc_start_realtime(pid);
	return started == BGRUN_NULL ||
	       started < start_ns - COMMAND_START_SLACK_NS ||
	       started > start_ns + COMMAND_START_SLACK_NS;
}

const char *bgrun__reported_result(const char *stored, const char *boot_id,
				   int64_t supervisor_pid,
				   int64_t supervisor_start, int64_t pid,
				   int64_t start_ns)
{
	if (stored != NULL && strcmp(stored, BGRUN_RESULT_RUNNING) == 0 &&
	    bgrun__row_lost(boot_id, supervisor_pid, supervisor_start, pid,
			    start_ns))
		return BGRUN_RESULT_LOST;
	return stored;
}

bool bgrun__result_matches(const struct bgrun_query *q, const char *result)
{
	if (q == NULL)
		return true;
	if (q->failed &&
	    (result == NULL || strcmp(result, BGRUN_RESULT_SUCCESS) == 0 ||
	     strcmp(result, BGRUN_RESULT_RUNNING) == 0))
		return false;
	if (q->result != NULL &&
	    (result == NULL || strcmp(result, q->result) != 0))
		return false;
	return true;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/*
 * The exact bytes of each argument of a stored argv, through json_each:
 * strings as they are, {"hex": ...} objects decoded.
 */
static int decode_argv(struct bgrun_store *store, const char *json,
		       char ***ret_argv, size_t *ret_argc)
{
	char **argv = NULL, **grown, *arg;
	size_t n = 0, cap = 0;
	sqlite3_stmt *stmt;
	int r, rc;

	r = bgrun__store_stmt(store, BGRUN__STMT_ARGV_DECODE, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, json, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		bool hex = sqlite3_column_int(stmt, 0) != 0;
		const unsigned char *v = sqlite3_column_text(stmt, 1);
		size_t len = (size_t)sqlite3_column_bytes(stmt, 1);

		rc = SQLITE_OK;
		if (n + 2 > cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(argv, cap * sizeof(*argv));
			if (grown == NULL) {
				rc = SQLITE_NOMEM;
				break;
			}
			argv = grown;
		}
		arg = malloc(len + 1);
		if (arg == NULL) {
			rc = SQLITE_NOMEM;
			break;
		}
		if (!hex) {
			memcpy(arg, v != NULL ? (const char *)v : "", len);
			arg[len] = '\0';
		} else {
			size_t k;

			for (k = 0; k + 1 < len; k += 2) {
				int hi = bgrun__hex_value(v[k]), lo = bgrun__hex_value(v[k + 1]);

				if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
					break;
				arg[k / 2] = (char)(hi << 4 | lo);
			}
			arg[k / 2] = '\0';
			if (k != len) {
				free(arg);
				rc = SQLITE_CORRUPT;
				break;
			}
		}
		argv[n++] = arg;
		argv[n] = NULL;
	}
	if (rc != SQLITE_DONE)
		r = (rc & 0xff) == SQLITE_CORRUPT
			    ? bgrun__store_failf(store, -EBADMSG,
						 "a stored argv is malformed")
			    : bgrun__store_fail(store, rc, "decoding argv");
	bgrun__release_stmt(stmt);
	if (r < 0) {
		strv_free(argv);
		return r;
	}
	if (argv == NULL) {
		argv = calloc(1, sizeof(*argv));
		if (argv == NULL)
			return -ENOMEM;
	}
	*ret_argv = argv;
	*ret_argc = n;
	return 0;
}

/* The row's JSON with "result": "lost" (malloc'd). */
static int json_lost(struct bgrun_store *store, const char *json,
		     char **ret_json)
{
	sqlite3_stmt *stmt;
	char *copy = NULL;
	int r, rc;

	r = bgrun__store_stmt(store, BGRUN__STMT_JSON_LOST, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, json, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		copy = strdup(bgrun__column_text(stmt, 0) ? bgrun__column_text(stmt, 0) : "");
		rc = copy != NULL ? SQLITE_OK : SQLITE_NOMEM;
	}
	if (rc != SQLITE_OK)
		r = bgrun__store_fail(store, rc, "making a row's JSON");
	bgrun__release_stmt(stmt);
	if (r >= 0)
		*ret_json = copy;
	return r;
}

/*
 * Reads the current row of stmt (a BGRUN__SQL_ROW statement) and, if it
 * passes q's result conditions, calls cb (*ret_shown true). Returns the
 * callback's value or -errno (*ret_shown untouched when negative).
 */
static int emit_row(struct bgrun_store *store, sqlite3_stmt *stmt,
		    const struct bgrun_query *q, bgrun_store_row_cb cb,
		    void *data, bool *ret_shown)
{
	struct bgrun_event_row row;
	struct bgrun_event *ev = &row.ev;
	char **argv = NULL, *json = NULL;
	const char *argv_json;
	int r = 0;

	memset(&row, 0, sizeof(row));
	(void)snprintf(ev->id, sizeof(ev->id), "%s",
		       bgrun__column_text(stmt, 0) ? bgrun__column_text(stmt, 0) : "");
	row.recorded_ns = bgrun__column_int(stmt, 1);
	row.time_ns = bgrun__column_int(stmt, 2);
	argv_json = bgrun__column_text(stmt, 3);
	ev->options_json = bgrun__column_text(stmt, 4);
	bgrun__column_fields(stmt, BGRUN__ROW_PLAIN, ev);
	row.json = bgrun__column_text(stmt, BGRUN__ROW_JSON);
	row.stored_result = ev->result;
	ev->result = bgrun__reported_result(ev->result, ev->boot_id,
					    ev->supervisor_pid,
					    ev->supervisor_start, ev->pid,
					    ev->start_ns);
	if (!bgrun__result_matches(q, ev->result)) {
		*ret_shown = false;
		return 0;
	}
	if (ev->result != row.stored_result && row.json != NULL) {
		r = json_lost(store, row.json, &json);
		if (r < 0)
			goto cleanup;
		row.json = json;
	}
	if (argv_json != NULL) {
		r = decode_argv(store, argv_json, &argv, &row.argc);
		if (r < 0)
			goto cleanup;
		ev->argv = (const char *const *)argv;
	}
	r = cb(data, &row);
	if (r >= 0)
		*ret_shown = true;
cleanup:
	strv_free(argv);
	free(json);
	return r;
}

int bgrun_store_query(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_row_cb cb, void *data)
{
	sqlite3_stmt *stmt;
	int64_t shown = 0;
	bool one;
	int r, rc;

	if (store == NULL || query == NULL || cb == NULL || query->limit < 0)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	r = bgrun__store_filter_stmt(store, BGRUN__READ_ROWS, query, &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		r = emit_row(store, stmt, query, cb, data, &one);
		if (r != 0)
			break;
		if (one && ++shown == query->limit)
			break;
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = bgrun__store_fail(store, rc, "reading events");
	bgrun__release_stmt(stmt);
	return r;
}

/* Calls cb for the row with exactly this id, if there is one (*ret_found). */
static int get_exact(struct bgrun_store *store, const char *id,
		     bgrun_store_row_cb cb, void *data, bool *ret_found)
{
	sqlite3_stmt *stmt;
	bool found = false;
	int r, rc;

	r = bgrun__store_stmt(store, BGRUN__STMT_GET_EXACT, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, id, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		r = emit_row(store, stmt, NULL, cb, data, &found);
	else if (rc != SQLITE_DONE)
		r = bgrun__store_fail(store, rc, "reading an event");
	bgrun__release_stmt(stmt);
	if (r >= 0)
		*ret_found = found;
	return r;
}

int bgrun_store_get(struct bgrun_store *store, const char *id_or_part,
		    bgrun_store_row_cb cb, void *data)
{
	char id[BGRUN_EVENT_ID_MAX + 1];
	sqlite3_stmt *stmt;
	int r, rc, matches = 0;
	bool found;

	if (store == NULL || id_or_part == NULL || cb == NULL)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	if (!bgrun_event_id_valid(id_or_part, strlen(id_or_part)))
		return bgrun__store_failf(store, -EINVAL,
					  "'%.64s' is not an event id",
					  id_or_part);
	r = get_exact(store, id_or_part, cb, data, &found);
	if (r != 0 || found)
		return r;
	r = bgrun__store_stmt(store, BGRUN__STMT_GET_PART, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, id_or_part, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (matches++ == 0)
			(void)snprintf(id, sizeof(id), "%s",
				       bgrun__column_text(stmt, 0) ? bgrun__column_text(stmt, 0)
							    : "");
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		r = bgrun__store_fail(store, rc, "looking up an event id");
	bgrun__release_stmt(stmt);
	if (r < 0)
		return r;
	if (matches == 0)
		return bgrun__store_failf(store, -ENOENT, "no event '%s'",
					  id_or_part);
	if (matches > 1)
		return bgrun__store_failf(store, -EEXIST,
					  "event id '%s' is ambiguous: several "
					  "events' ids contain it", id_or_part);
	r = get_exact(store, id, cb, data, &found);
	if (r == 0 && !found) /* deleted meanwhile */
		return bgrun__store_failf(store, -ENOENT, "no event '%s'",
					  id_or_part);
	return r;
}
