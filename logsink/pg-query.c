/* SPDX-License-Identifier: MIT */
/* pg-query.c: `logsink query|stats --db postgresql://...`: the filters of struct bgrun_query over the fleet table. */

#include "logsink.h"
#include "pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The filters are the rows of BGRUN_QUERY_FILTERS (bgrun/filters.h), in
 * their PostgreSQL words, as the local store renders their SQLite ones:
 * the same meaning but for lost rows, as the table says.
 */
/*
 * A row as read back: its columns, its JSON as the store gives it, and
 * its argv's exact bytes: each argument hex-encoded, separated by commas
 * (a string as its UTF-8, an {"hex": ...} object as what it encodes),
 * with their count (one empty argument and none read alike otherwise).
 */
#define ROW_SQL "SELECT f.*, (to_jsonb(f) - 'forwarded_at')::text AS json, " \
		"json_array_length(f.argv) AS argc, " \
		"(SELECT string_agg(encode(CASE WHEN json_typeof(a) = " \
		"'object' THEN decode(a->>'hex', 'hex') ELSE " \
		"convert_to(a #>> '{}', 'UTF8') END, 'hex'), ',' ORDER BY i) " \
		"FROM json_array_elements(f.argv) WITH ORDINALITY e(a, i)) " \
		"AS argv_hex FROM fleet_events f"

struct sql {
	char text[4096];
	size_t len;
	const char *params[BGRUN_QUERY_N_FILTERS + 4];
	char ints[BGRUN_QUERY_N_FILTERS + 4][24];
	char *regex[BGRUN_QUERY_N_FILTERS]; /* made for GLOBs, to free */
	int n, n_regex;
};

static void add(struct sql *s, const char *piece)
{
	size_t k = strlen(piece);

	if (s->len + k < sizeof(s->text)) {
		memcpy(s->text + s->len, piece, k + 1);
		s->len += k;
	}
}

/* piece, then the next parameter ($N), bound to value. */
static void add_param(struct sql *s, const char *piece, const char *value)
{
	char num[16];

	s->params[s->n++] = value;
	(void)snprintf(num, sizeof(num), "$%d", s->n);
	add(s, piece);
	add(s, num);
}

/*
 * A GLOB (as SQLite reads it: *, ?, [...], [^...], case-sensitive) as a
 * POSIX regular expression matching the whole text. malloc'd.
 */
static char *glob_regex(const char *glob)
{
	char *re = malloc(4 * strlen(glob) + 3), *o = re;

	if (re == NULL)
		return NULL;
	*o++ = '^';
	for (const char *p = glob; *p != '\0'; p++) {
		if (*p == '*') {
			*o++ = '.';
			*o++ = '*';
		} else if (*p == '?') {
			*o++ = '.';
		} else if (*p == '[' && strchr(p + 1 + (p[1] == '^') + 1, ']')) {
			/* A set: copied, ']' first kept literal as in GLOB. */
			const char *end = strchr(p + 1 + (p[1] == '^') + 1, ']');

			*o++ = '[';
			p++;
			if (*p == '^')
				*o++ = *p++;
			while (p < end) {
				if (*p == '\\')
					*o++ = '\\';
				*o++ = *p++;
			}
			*o++ = ']';
		} else {
			if (strchr(".^$+(){}|\\[]", *p) != NULL)
				*o++ = '\\';
			*o++ = *p;
		}
	}
	*o++ = '$';
	*o = '\0';
	return re;
}

/*
 * A term of BGRUN_QUERY_FILTERS: its text with `?` made the next
 * parameter, bound to value.
 */
static void add_term(struct sql *s, const char *term, const char *value)
{
	const char *q = strchr(term, '?');
	char head[256];

	if (q == NULL) {
		add(s, term);
		return;
	}
	(void)snprintf(head, sizeof(head), "%.*s", (int)(q - term), term);
	add_param(s, head, value);
	add(s, q + 1);
}

static const char *int_value(struct sql *s, int64_t v)
{
	char *num = s->ints[s->n];

	(void)snprintf(num, sizeof(s->ints[0]), "%lld", (long long)v);
	return num;
}

static const char *glob_value(struct sql *s, const char *glob)
{
	char *re = glob_regex(glob);

	if (re != NULL)
		s->regex[s->n_regex++] = re;
	return re;
}

static void sql_free(struct sql *s)
{
	for (int i = 0; i < s->n_regex; i++)
		free(s->regex[i]);
	s->n_regex = 0;
}

#define VALUE_NONE(s, v) NULL
#define VALUE_INT(s, v) int_value(s, v)
#define VALUE_TEXT(s, v) (v)
#define VALUE_GLOB(s, v) glob_value(s, v)

/* The WHERE terms of q into s (sql_free frees what they made). */
static int where(struct sql *s, const struct bgrun_query *q)
{
	const char *value;

	add(s, " WHERE true");
#define TERM(name, kind, on, v, sqlite, pg) \
	if (on) { \
		value = VALUE_##kind(s, v); \
		if (BGRUN_QUERY_##kind != BGRUN_QUERY_NONE && value == NULL) \
			return -ENOMEM; \
		add_term(s, pg, value); \
	}
	BGRUN_QUERY_FILTERS(TERM)
#undef TERM
	return 0;
}

static int64_t get_int(const PGresult *res, int row, int col)
{
	if (col < 0 || PQgetisnull(res, row, col))
		return BGRUN_NULL;
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static const char *get_text(const PGresult *res, int row, int col)
{
	if (col < 0 || PQgetisnull(res, row, col))
		return NULL;
	return PQgetvalue(res, row, col);
}

/*
 * Connects and runs s; the result (it outlives the connection), or NULL
 * after saying why.
 */
static PGresult *run(const char *conninfo, const struct sql *s)
{
	PGconn *pg = lsink_pg_connect(conninfo);
	PGresult *res;
	char err[512];

	if (pg == NULL || PQstatus(pg) != CONNECTION_OK) {
		lsink_pg_error(pg, NULL, err, sizeof(err));
		lsink_msg("cannot connect to the fleet: %s",
			  pg != NULL ? lsink_printable(err) : "out of memory");
		PQfinish(pg);
		return NULL;
	}
	res = PQexecParams(pg, s->text, s->n, NULL, s->params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		lsink_pg_error(pg, res, err, sizeof(err));
		lsink_msg("cannot read the fleet: %s", lsink_printable(err));
		PQclear(res);
		res = NULL;
	}
	PQfinish(pg);
	return res;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * The argv of ROW_SQL's argc and argv_hex columns, as the store decodes
 * it (a NULL-ended array of strings, one malloc'd block): 0 (*ret_argv
 * NULL where argv is unknown), or -ENOMEM, -EBADMSG.
 */
static int decode_argv(const char *argc_text, const char *hex,
		       char ***ret_argv, size_t *ret_argc)
{
	size_t argc, len = hex != NULL ? strlen(hex) : 0;
	char **argv, *o;

	if (argc_text == NULL) {
		*ret_argv = NULL;
		*ret_argc = 0;
		return 0;
	}
	argc = (size_t)strtoull(argc_text, NULL, 10);
	/* The pointers, then the bytes (at most half the hex, each ended). */
	argv = malloc((argc + 1) * sizeof(*argv) + len / 2 + argc + 1);
	if (argv == NULL)
		return -ENOMEM;
	o = (char *)(argv + argc + 1);
	for (size_t k = 0; k < argc; k++) {
		argv[k] = o;
		while (hex != NULL && *hex != '\0' && *hex != ',') {
			int hi = hex_digit(hex[0]), lo = hi < 0 ? -1 : hex_digit(hex[1]);

			if (lo < 0 || (hi | lo) == 0) { /* no NUL in an argument */
				free(argv);
				return -EBADMSG;
			}
			*o++ = (char)(hi << 4 | lo);
			hex += 2;
		}
		*o++ = '\0';
		if (hex != NULL && *hex == ',')
			hex++;
	}
	argv[argc] = NULL;
	*ret_argv = argv;
	*ret_argc = argc;
	return 0;
}

/* The rows of res (ROW_SQL) to cb: 0, cb's value or -errno. */
static int emit_rows(const PGresult *res, bgrun_store_row_cb cb, void *data)
{
	int json = PQfnumber(res, "json"), argc = PQfnumber(res, "argc");
	int argv_hex = PQfnumber(res, "argv_hex"), r = 0;

	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		struct bgrun_event_row row;
		struct bgrun_event *ev = &row.ev;
		const char *id = get_text(res, i, 0);
		char **argv = NULL;

		memset(&row, 0, sizeof(row));
		(void)snprintf(ev->id, sizeof(ev->id), "%s", id ? id : "");
#define FIELD_S(n) ev->n = get_text(res, i, PQfnumber(res, "\"" #n "\""));
#define FIELD_I(n) ev->n = get_int(res, i, PQfnumber(res, "\"" #n "\""));
#define FIELD_R(n) row.n = get_int(res, i, PQfnumber(res, "\"" #n "\""));
#define FIELD_J(n)
#define FIELD(kind, n, type) FIELD_##kind(n)
		LSINK_PG_COLUMNS(FIELD)
#undef FIELD
		ev->options_json = get_text(res, i, PQfnumber(res, "options"));
		row.stored_result = ev->result;
		row.json = get_text(res, i, json);
		r = decode_argv(get_text(res, i, argc), get_text(res, i, argv_hex),
				&argv, &row.argc);
		if (r < 0) {
			lsink_msg("event %s: its argv in the fleet table is "
				  "malformed", lsink_printable(ev->id));
			break;
		}
		ev->argv = (const char *const *)argv;
		r = cb(data, &row);
		free(argv);
	}
	return r;
}

int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data)
{
	struct sql s = { .len = 0 };
	char limit[24];
	PGresult *res = NULL;
	int r = 0;

	/* The JSON of a row: its columns, as the local store gives them. */
	add(&s, ROW_SQL);
	if (where(&s, q) < 0) {
		r = -ENOMEM;
		goto out;
	}
	add(&s, " ORDER BY time_ns DESC, recorded_ns DESC, id DESC");
	if (q->limit > 0) {
		(void)snprintf(limit, sizeof(limit), "%lld", (long long)q->limit);
		add_param(&s, " LIMIT ", limit);
	}
	res = run(conninfo, &s);
	if (res == NULL) {
		r = -EIO;
		goto out;
	}
	r = emit_rows(res, cb, data);
out:
	PQclear(res);
	sql_free(&s);
	return r;
}

int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   enum bgrun_stats_key by, bgrun_store_stats_cb cb,
		   void *data)
{
	struct sql s = { .len = 0 };
	PGresult *res = NULL;
	static const char *const keys[BGRUN_STATS_N_KEYS] = {
		[BGRUN_STATS_COMMAND] = "display",
		[BGRUN_STATS_ARGV0] = "(argv->>0)",
		[BGRUN_STATS_TAG] = "tag",
		[BGRUN_STATS_HOST] = "host",
		/* In the session's time zone (libpq passes on $PGTZ). */
		[BGRUN_STATS_DAY] = "to_char(to_timestamp(time_ns / 1e9), 'YYYY-MM-DD')",
	};
	const char *key = keys[by];
	int r = 0;

	/*
	 * As bgrun_store_stats: runs are the rows not running; failures
	 * those with a result other than success; percentiles by nearest
	 * rank (percentile_disc) over the known durations of the runs.
	 */
	add(&s, "SELECT ");
	add(&s, key);
	add(&s, ", count(*) FILTER (WHERE result IS DISTINCT FROM 'running')"
		", count(*) FILTER (WHERE result <> 'success' AND "
		"result <> 'running')"
		", percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ns) "
		"FILTER (WHERE result IS DISTINCT FROM 'running')"
		", percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ns) "
		"FILTER (WHERE result IS DISTINCT FROM 'running')"
		", max(duration_ns) FILTER (WHERE result IS DISTINCT FROM "
		"'running') FROM fleet_events");
	if (where(&s, q) < 0) {
		r = -ENOMEM;
		goto out;
	}
	add(&s, " GROUP BY ");
	add(&s, key);
	/* The store's order: NULL first, then by bytes. */
	add(&s, " HAVING count(*) FILTER (WHERE result IS DISTINCT FROM "
		"'running') > 0 ORDER BY ");
	add(&s, key);
	add(&s, " COLLATE \"C\" NULLS FIRST");
	res = run(conninfo, &s);
	if (res == NULL) {
		r = -EIO;
		goto out;
	}
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		struct bgrun_stats_row row = {
			.display = get_text(res, i, 0),
			.runs = get_int(res, i, 1),
			.failures = get_int(res, i, 2),
			.p50_ns = get_int(res, i, 3),
			.p95_ns = get_int(res, i, 4),
			.max_ns = get_int(res, i, 5),
		};

		r = cb(data, &row);
	}
	if (r > 0)
		r = 0;
out:
	PQclear(res);
	sql_free(&s);
	return r;
}

int lsink_pg_get(const char *conninfo, const char *id_or_part,
		 bgrun_store_row_cb cb, void *data)
{
	struct sql s = { .len = 0 };
	size_t n = strlen(id_or_part);
	PGresult *res = NULL;
	int r = 0;

	/* As bgrun_store_get: the id, else the one id that contains it. */
	if (!bgrun_event_id_valid(id_or_part, n))
		return -EINVAL;
	add(&s, ROW_SQL);
	add_param(&s, " WHERE id = ", id_or_part);
	add(&s, " UNION ALL (" ROW_SQL);
	add_param(&s, " WHERE NOT EXISTS (SELECT 1 FROM fleet_events "
		      "WHERE id = ", id_or_part);
	add_param(&s, ") AND strpos(id, ", id_or_part);
	add(&s, "::text) > 0 LIMIT 2)");
	res = run(conninfo, &s);
	if (res == NULL)
		r = -EIO;
	else if (PQntuples(res) == 0)
		r = -ENOENT;
	else if (PQntuples(res) > 1)
		r = -EEXIST;
	else
		r = emit_rows(res, cb, data);
	PQclear(res);
	return r;
}
