/* SPDX-License-Identifier: MIT */
/* pg-schema.c: the fleet table in PostgreSQL: connecting, creating and checking the schema, monthly partitions. */

#include "pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLUMN_DEF(kind, n, type) ", " LSINK_PG_NAME(kind, n, type) " " type

/*
 * Schema version 1. Never edit a released version: add a step. The
 * indexes are declared on the partitioned table, so each partition gets
 * them. The result index leaves out successes (most rows, and never what
 * anybody looks for), as the local store's does.
 */
static const char schema_v1[] =
	"CREATE TABLE fleet_events (id text NOT NULL"
	LSINK_PG_COLUMNS(COLUMN_DEF)
	", forwarded_at timestamptz NOT NULL DEFAULT now()"
	", PRIMARY KEY (id, recorded_ns)"
	") PARTITION BY RANGE (recorded_ns);"
	"CREATE INDEX fleet_events_time ON fleet_events (time_ns);"
	"CREATE INDEX fleet_events_host ON fleet_events (host, time_ns);"
	"CREATE INDEX fleet_events_result ON fleet_events (result, time_ns) "
	"WHERE result <> 'success';"
	"CREATE INDEX fleet_events_display ON fleet_events "
	"(display text_pattern_ops, time_ns);"
	"CREATE INDEX fleet_events_tag ON fleet_events (tag, time_ns) "
	"WHERE tag IS NOT NULL;";

/*
 * Version 2: the indexes of the filters other than time on their column
 * alone. Many rows share a host, a result, a command or a tag, and
 * PostgreSQL's B-trees keep equal keys once with a list of rows
 * (deduplication, since 13), which a second column (time_ns, unique)
 * defeated. Measured on 100,000 forwarded rows of one command: those four
 * indexes take 2.0 MB instead of 11.4 MB (what has to stay in memory for
 * inserts to be cheap), for about 5 % less of the server's CPU per
 * insert. A filtered query combines such an index with the time index
 * (bitmap AND), or sorts what it found. forwarded_at is also when each row was inserted
 * (clock_timestamp), not when its transaction began (now), as the
 * forwarder's direct COPY leaves it to the default (serve-forward-pg.c).
 */
static const char schema_v2[] =
	"DROP INDEX fleet_events_host, fleet_events_result, "
	"fleet_events_display, fleet_events_tag;"
	"CREATE INDEX fleet_events_by_host ON fleet_events (host);"
	"CREATE INDEX fleet_events_by_result ON fleet_events (result) "
	"WHERE result <> 'success';"
	"CREATE INDEX fleet_events_by_command ON fleet_events "
	"(display text_pattern_ops);"
	"CREATE INDEX fleet_events_by_tag ON fleet_events (tag) "
	"WHERE tag IS NOT NULL;"
	"ALTER TABLE fleet_events ALTER COLUMN forwarded_at "
	"SET DEFAULT clock_timestamp();";

/* The steps, schema_steps[v - 1] making version v from v - 1. */
static const char *const schema_steps[] = { schema_v1, schema_v2 };
_Static_assert(sizeof(schema_steps) / sizeof(schema_steps[0]) ==
		       LSINK_PG_SCHEMA_VERSION,
	       "a step for each schema version");

/* The steps from version v to the current one, and the version recorded. */
static int migrate(PGconn *pg, long v, char *err, size_t size)
{
	char sql[64];

	for (; v < LSINK_PG_SCHEMA_VERSION; v++)
		if (lsink_pg_exec(pg, schema_steps[v], err, size) < 0)
			return -1;
	(void)snprintf(sql, sizeof(sql), "INSERT INTO fleet_schema VALUES (%d)",
		       LSINK_PG_SCHEMA_VERSION);
	return lsink_pg_exec(pg, sql, err, size);
}

void lsink_pg_error(PGconn *pg, const PGresult *res, char *err, size_t size)
{
	const char *state = res != NULL
				    ? PQresultErrorField(res, PG_DIAG_SQLSTATE)
				    : NULL;
	const char *msg = res != NULL ? PQresultErrorMessage(res) : "";
	size_t len;

	if (msg == NULL || msg[0] == '\0')
		msg = PQerrorMessage(pg);
	if (msg == NULL || msg[0] == '\0')
		msg = "unknown error";
	/* libpq's messages end with a newline, and may have more lines. */
	if (strncmp(msg, "ERROR:  ", 8) == 0)
		msg += 8;
	len = strcspn(msg, "\n");
	if (state != NULL)
		(void)snprintf(err, size, "%s: %.*s", state, (int)len, msg);
	else
		(void)snprintf(err, size, "%.*s", (int)len, msg);
}

int lsink_pg_exec(PGconn *pg, const char *sql, char *err, size_t size)
{
	PGresult *res = PQexec(pg, sql);
	ExecStatusType st = PQresultStatus(res);
	int r = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		lsink_pg_error(pg, res, err, size);
		r = -1;
	}
	PQclear(res);
	return r;
}

/* Notices ("relation already exists, skipping") are not for our logs. */
static void no_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

PGconn *lsink_pg_connect(const char *conninfo)
{
	/*
	 * Later values override earlier ones, and dbname is expanded in
	 * place: the connection string's own connect_timeout or
	 * application_name win over these defaults. Empty values are not
	 * given, so libpq looks at PG* and PGSERVICE for them.
	 */
	static const char *const keys[] = { "connect_timeout",
					    "application_name", "dbname",
					    "client_encoding", NULL };
	const char *values[] = { "10", "logsink", conninfo, "UTF8", NULL };
	PGconn *pg = PQconnectdbParams(keys, values, 1);

	if (pg != NULL)
		(void)PQsetNoticeProcessor(pg, no_notices, NULL);
	return pg;
}

/* The text of the first row's first column of a query, or NULL. */
static int query_text(PGconn *pg, const char *sql, char *out, size_t out_size,
		      bool *ret_null, char *err, size_t size)
{
	PGresult *res = PQexec(pg, sql);
	int r = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		lsink_pg_error(pg, res, err, size);
		r = -1;
	} else if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0)) {
		*ret_null = true;
	} else {
		*ret_null = false;
		(void)snprintf(out, out_size, "%s", PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	return r;
}

int lsink_pg_setup(PGconn *pg, char *err, size_t size)
{
	char version[32];
	bool none = true;
	long v;

	if (lsink_pg_exec(pg, "BEGIN", err, size) < 0)
		return -1;
	/* Two daemons starting at once: the second waits, then sees it made. */
	if (lsink_pg_exec(pg, "SELECT pg_advisory_xact_lock(" LSINK_PG_LOCK_KEY
			      ")", err, size) < 0 ||
	    lsink_pg_exec(pg, "CREATE TABLE IF NOT EXISTS fleet_schema "
			      "(version integer NOT NULL)", err, size) < 0 ||
	    query_text(pg, "SELECT max(version) FROM fleet_schema", version,
		       sizeof(version), &none, err, size) < 0)
		goto fail;
	v = none ? 0 : strtol(version, NULL, 10);
	if (v > LSINK_PG_SCHEMA_VERSION) {
		(void)snprintf(err, size,
			       "the fleet schema is version %ld, newer than "
			       "this logsink's (%d)",
			       v, LSINK_PG_SCHEMA_VERSION);
		goto fail;
	}
	/*
	 * The table dropped behind our back (by hand, to start afresh): made
	 * again, rather than failing forever. What was forwarded before is
	 * not sent again (the cursors say it was).
	 */
	if (v >= 1 && query_text(pg, "SELECT to_regclass('fleet_events')",
				 version, sizeof(version), &none, err,
				 size) < 0)
		goto fail;
	if (v >= 1 && none)
		v = 0;
	if (v < LSINK_PG_SCHEMA_VERSION && migrate(pg, v, err, size) < 0)
		goto fail;
	if (lsink_pg_exec(pg, "COMMIT", err, size) < 0)
		goto fail;
	return 0;
fail:
	(void)lsink_pg_exec(pg, "ROLLBACK", version, sizeof(version));
	return -1;
}

int64_t lsink_pg_month(int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000 - (ns % 1000000000 < 0));
	struct tm tm;

	(void)gmtime_r(&t, &tm);
	return (int64_t)(tm.tm_year + 1900) * 12 + tm.tm_mon;
}

/* The first ns of month m (as lsink_pg_month gives). */
static int64_t month_start_ns(int64_t m)
{
	struct tm tm = { .tm_year = (int)(m / 12) - 1900,
			 .tm_mon = (int)(m % 12), .tm_mday = 1 };

	return (int64_t)timegm(&tm) * 1000000000;
}

int lsink_pg_partitions(PGconn *pg, int64_t lo_ns, int64_t hi_ns, char *err,
			size_t size)
{
	int64_t lo = lsink_pg_month(lo_ns), hi = lsink_pg_month(hi_ns);
	char sql[512], ignored[64];

	if (hi - lo > 1200) /* clocks of a hundred years: not months to make */
		lo = hi - 1200;
	if (lsink_pg_exec(pg, "BEGIN", err, size) < 0)
		return -1;
	/*
	 * CREATE TABLE IF NOT EXISTS is not safe against a concurrent one
	 * (both may pass the check): the lock orders the forwarders.
	 */
	if (lsink_pg_exec(pg, "SELECT pg_advisory_xact_lock(" LSINK_PG_LOCK_KEY
			      ")", err, size) < 0)
		goto fail;
	for (int64_t m = lo; m <= hi; m++) {
		(void)snprintf(sql, sizeof(sql),
			       "CREATE TABLE IF NOT EXISTS "
			       "fleet_events_%04lld_%02lld PARTITION OF "
			       "fleet_events FOR VALUES FROM (%lld) TO (%lld)",
			       (long long)(m / 12), (long long)(m % 12 + 1),
			       (long long)month_start_ns(m),
			       (long long)month_start_ns(m + 1));
		if (lsink_pg_exec(pg, sql, err, size) < 0)
			goto fail;
	}
	if (lsink_pg_exec(pg, "COMMIT", err, size) < 0)
		goto fail;
	return 0;
fail:
	(void)lsink_pg_exec(pg, "ROLLBACK", ignored, sizeof(ignored));
	return -1;
}
