/* SPDX-License-Identifier: MIT */
/* pg.h: private declarations of logsink's PostgreSQL side: the fleet table's schema, connecting, partitions. */

#ifndef LSINK_PG_H
#define LSINK_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * THE FLEET TABLE (PostgreSQL)
 *
 * fleet_events holds the events of every host that forwards to the
 * server, one row per event: the columns of the local store (same names,
 * integers as bigint, argv and options as json), host filled in by the
 * forwarder when the event has none, and forwarded_at. It is partitioned
 * by month of recorded_ns (when the event was first stored on its host,
 * a value that never changes, so that an update never has to move a row
 * between partitions); its key is (id, recorded_ns), as a partitioned
 * table's key must hold the partition key. fleet_schema holds the schema
 * version. Both are made by the first daemon that connects, or by
 * `logsink pg-init`, under an advisory lock.
 */
#define LSINK_PG_SCHEMA_VERSION 2
/* pg_advisory_xact_lock's key for schema changes: "bgru". */
#define LSINK_PG_LOCK_KEY "1650946677"

/*
 * The fleet table's columns after id, each X(KIND, name, type): KIND is S
 * for a text field of struct bgrun_event, I for an integer field, R for a
 * number of the row (recorded_ns, time_ns) and J for JSON (argv,
 * options). SQL names them quoted ("user" is a reserved word there).
 */
#define LSINK_PG_COLUMNS(X) \
	X(R, recorded_ns, "bigint NOT NULL") X(R, time_ns, "bigint NOT NULL") \
	X(S, host, "text") X(S, event, "text NOT NULL") X(S, source, "text") \
	X(I, uid, "bigint") X(S, user, "text") X(S, boot_id, "text") \
	X(I, pid, "bigint") X(I, supervisor_pid, "bigint") \
	X(I, supervisor_start, "bigint") X(J, argv, "json") \
	X(S, display, "text") X(S, cwd, "text") X(S, tag, "text") \
	X(I, start_ns, "bigint") X(I, end_ns, "bigint") \
	X(I, duration_ns, "bigint") X(I, exit_code, "bigint") \
	X(I, signal, "bigint") X(I, core_dumped, "bigint") \
	X(S, result, "text") X(I, user_cpu_ns, "bigint") \
	X(I, sys_cpu_ns, "bigint") X(I, max_rss_kb, "bigint") \
	X(I, minor_faults, "bigint") X(I, major_faults, "bigint") \
	X(I, in_blocks, "bigint") X(I, out_blocks, "bigint") \
	X(I, vol_ctxsw, "bigint") X(I, invol_ctxsw, "bigint") \
	X(S, stdout_path, "text") X(S, stderr_path, "text") \
	X(S, message, "text") X(J, options, "json")
#define LSINK_PG_NAME(kind, n, type) "\"" #n "\""

/*
 * Connects to conninfo (a postgresql:// URI or key=value string; "" or
 * a URI without parts: libpq's defaults, PG* variables and PGSERVICE).
 * Returns the connection (check PQstatus), NULL only without memory.
 * The client encoding is UTF8.
 */
PGconn *lsink_pg_connect(const char *conninfo);

/*
 * Creates or checks the schema (in one transaction, under the advisory
 * lock). 0, or -1 with a one-line message in err.
 */
int lsink_pg_setup(PGconn *pg, char *err, size_t size);

/*
 * Makes the monthly partitions covering recorded_ns from lo_ns to hi_ns
 * (inclusive) that are missing. 0, or -1 with a message in err.
 */
int lsink_pg_partitions(PGconn *pg, int64_t lo_ns, int64_t hi_ns, char *err,
			size_t size);

/* The month of ns (UTC) as YYYY * 12 + month - 1. */
int64_t lsink_pg_month(int64_t ns);

/*
 * A one-line message for res (or, when res is NULL or has none, for pg's
 * connection): "SQLSTATE: message" when the server gave a state.
 */
void lsink_pg_error(PGconn *pg, const PGresult *res, char *err, size_t size);

/* Runs sql (no parameters, no rows wanted): 0, or -1 with err. */
int lsink_pg_exec(PGconn *pg, const char *sql, char *err, size_t size);

#endif /* LSINK_PG_H */
