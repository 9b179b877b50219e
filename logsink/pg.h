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
#define LSINK_PG_SCHEMA_VERSION 1
/* pg_advisory_xact_lock's key for schema changes: "bgru". */
#define LSINK_PG_LOCK_KEY "1650946677"

/*
 * The fleet table's columns after id: name and PostgreSQL type. "user"
 * is quoted: a reserved word there.
 */
#define LSINK_PG_COLUMNS(X) \
	X(recorded_ns, "bigint NOT NULL") X(time_ns, "bigint NOT NULL") \
	X(host, "text") X(event, "text NOT NULL") X(source, "text") \
	X(uid, "bigint") X("user", "text") X(boot_id, "text") \
	X(pid, "bigint") X(supervisor_pid, "bigint") \
	X(supervisor_start, "bigint") X(argv, "json") X(display, "text") \
	X(cwd, "text") X(tag, "text") X(start_ns, "bigint") \
	X(end_ns, "bigint") X(duration_ns, "bigint") X(exit_code, "bigint") \
	X(signal, "bigint") X(core_dumped, "bigint") X(result, "text") \
	X(user_cpu_ns, "bigint") X(sys_cpu_ns, "bigint") \
	X(max_rss_kb, "bigint") X(minor_faults, "bigint") \
	X(major_faults, "bigint") X(in_blocks, "bigint") \
	X(out_blocks, "bigint") X(vol_ctxsw, "bigint") \
	X(invol_ctxsw, "bigint") X(stdout_path, "text") \
	X(stderr_path, "text") X(message, "text") X(options, "json")

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
