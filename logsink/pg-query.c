/* SPDX-License-Identifier: MIT */
/* pg-query.c: `logsink query|stats --db postgresql://...`: the filters of struct bgrun_query over the fleet table. */

#include "logsink.h"
#include "pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The filters, in PostgreSQL's words: the same model (struct
 * bgrun_query) and the same meaning as the store's SQL in
 * src/store/store-query.c, term for term, but for lost rows: whether a
 * running row's supervisor is gone can only be judged on its own host,
 * so the fleet table's `lost` is what its host stored (logsink
 * mark-lost, or prune, records it there, and the change is forwarded).
 */
/* A row as read back: its columns, and its JSON as the store gives it. */
#define ROW_SQL "SELECT f.*, (to_jsonb(f) - 'forwarded_at')::text AS json " \
		"FROM fleet_events f"

struct sql {
	char text[4096];
	size_t len;
	const char *params[16];
	char ints[2][24];
	int n;
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

/* The WHERE terms of q into s (*ret_re: the regex made, to free). */
static int where(struct sql *s, const struct bgrun_query *q, char **ret_re)
{
	*ret_re = NULL;
	add(s, " WHERE true");
	if (q->since_ns != BGRUN_NULL) {
		(void)snprintf(s->ints[0], sizeof(s->ints[0]), "%lld",
			       (long long)q->since_ns);
		add_param(s, " AND time_ns >= ", s->ints[0]);
	}
	if (q->until_ns != BGRUN_NULL) {
		(void)snprintf(s->ints[1], sizeof(s->ints[1]), "%lld",
			       (long long)q->until_ns);
		add_param(s, " AND time_ns < ", s->ints[1]);
	}
	/* Running rows are not failures (nor unknown results). */
	if (q->failed)
		add(s, " AND result <> 'success' AND result <> 'running'");
	if (q->result != NULL)
		add_param(s, " AND result = ", q->result);
	if (q->cmd_glob != NULL) {
		*ret_re = glob_regex(q->cmd_glob);
		if (*ret_re == NULL)
			return -ENOMEM;
		add_param(s, " AND display ~ ", *ret_re);
	}
	if (q->tag != NULL)
		add_param(s, " AND tag = ", q->tag);
	if (q->cwd != NULL)
		add_param(s, " AND cwd = ", q->cwd);
	if (q->source != NULL)
		add_param(s, " AND source = ", q->source);
	if (q->event != NULL)
		add_param(s, " AND event = ", q->event);
	if (q->host != NULL)
		add_param(s, " AND host = ", q->host);
	if (q->id_part != NULL) {
		add_param(s, " AND strpos(id, ", q->id_part);
		add(s, "::text) > 0");
	}
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

/* The rows of res (SELECT f.*, ... AS json) to cb: 0 or cb's value. */
static int emit_rows(const PGresult *res, bgrun_store_row_cb cb, void *data)
{
	int json = PQfnumber(res, "json"), r = 0;

	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		struct bgrun_event_row row;
		struct bgrun_event *ev = &row.ev;
		const char *id = get_text(res, i, 0);

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
		r = cb(data, &row);
	}
	return r;
}

int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data)
{
	struct sql s = { .len = 0 };
	char limit[24], *re = NULL;
	PGresult *res = NULL;
	int r = 0;

	/* The JSON of a row: its columns, as the local store gives them. */
	add(&s, ROW_SQL);
	if (where(&s, q, &re) < 0)
		return -ENOMEM;
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
	free(re);
	return r;
}

int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   enum bgrun_stats_key by, bgrun_store_stats_cb cb,
		   void *data)
{
	struct sql s = { .len = 0 };
	char *re = NULL;
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
	if (where(&s, q, &re) < 0)
		return -ENOMEM;
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
	free(re);
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
