/* SPDX-License-Identifier: MIT */
/* store-schema.c: the store's schema: what a file holds, migrations, WAL mode, connection settings. */


#include "store-internal.h"

#include <errno.h>
#include <string.h>

/*
 * Schema migrations: step i takes user_version i to i + 1, in one
 * transaction. Never edit a step once released: add one. Version 1 is the
 * first table; version 2 added the supervisor's start time, the options,
 * the resource use and the indexes of the queries; version 3 the change
 * sequence that forwarding reads (see bgrun_store_changes in store.h).
 *
 * The columns of the event's fields are declared here by hand, as they
 * were released, not made from src/event-fields.h: a column's place in
 * the file is fixed by the step that added it. store-schema_columns
 * checks that fresh and migrated stores agree with that table.
 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE events ("
	"id TEXT PRIMARY KEY NOT NULL, "
	"event TEXT NOT NULL, source TEXT, host TEXT, uid INTEGER, "
	"user TEXT, boot_id TEXT, pid INTEGER, supervisor_pid INTEGER, "
	"argv TEXT, display TEXT, cwd TEXT, tag TEXT, "
	"start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, "
	"exit_code INTEGER, signal INTEGER, core_dumped INTEGER, "
	"result TEXT, stdout_path TEXT, stderr_path TEXT, message TEXT, "
	"recorded_ns INTEGER NOT NULL, "
	"time_ns INTEGER GENERATED ALWAYS AS "
	"(coalesce(start_ns, recorded_ns)) VIRTUAL"
	") STRICT;"
	"PRAGMA application_id = 1650946677;" /* BGRUN__STORE_APP_ID */
	"PRAGMA user_version = 1;",

	/* 1 -> 2 */
	"ALTER TABLE events ADD COLUMN supervisor_start INTEGER;"
	"ALTER TABLE events ADD COLUMN options TEXT;"
	"ALTER TABLE events ADD COLUMN user_cpu_ns INTEGER;"
	"ALTER TABLE events ADD COLUMN sys_cpu_ns INTEGER;"
	"ALTER TABLE events ADD COLUMN max_rss_kb INTEGER;"
	"ALTER TABLE events ADD COLUMN minor_faults INTEGER;"
	"ALTER TABLE events ADD COLUMN major_faults INTEGER;"
	"ALTER TABLE events ADD COLUMN in_blocks INTEGER;"
	"ALTER TABLE events ADD COLUMN out_blocks INTEGER;"
	"ALTER TABLE events ADD COLUMN vol_ctxsw INTEGER;"
	"ALTER TABLE events ADD COLUMN invol_ctxsw INTEGER;"
	"CREATE INDEX events_time ON events(time_ns);"
	/*
	 * Most rows are successes and nobody looks them up by result: they
	 * stay out of this index, which spares every such write an index
	 * page. Queries spell out the term `result != 'success'` (see
	 * store-query.c) so that SQLite can prove the index usable.
	 */
	"CREATE INDEX events_result ON events(result, time_ns) "
	"WHERE result != 'success';"
	"CREATE INDEX events_tag ON events(tag, time_ns) "
	"WHERE tag IS NOT NULL;"
	"CREATE INDEX events_source_event ON events(source, event, time_ns);"
	"CREATE INDEX events_cwd ON events(cwd, time_ns);"
	"PRAGMA user_version = 2;",

	/* 2 -> 3 */
	/*
	 * changed_seq: every insert or change of a row takes the next number
	 * of the counter, so "the rows after N" are what changed since a
	 * reader had N, updated rows included. The counter has a row of its
	 * own, not max(changed_seq): pruning must never let a number come
	 * back. Existing rows are numbered in the order they were inserted,
	 * to be forwarded too.
	 */
	"ALTER TABLE events ADD COLUMN changed_seq INTEGER;"
	"UPDATE events SET changed_seq = rowid;"
	"CREATE INDEX events_changed ON events(changed_seq);"
	"CREATE TABLE counters ("
	"name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) STRICT;"
	"INSERT INTO counters VALUES ('changed_seq', "
	"coalesce((SELECT max(rowid) FROM events), 0));"
	/* How far each reader of changes got (a forwarding target). */
	"CREATE TABLE cursors ("
	"name TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, "
	"updated_ns INTEGER NOT NULL) STRICT;"
	"PRAGMA user_version = 3;",
};
/* A missing step would leave the loop of migrate() without an end. */
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
		       BGRUN__STORE_VERSION,
	       "one migration step per schema version");

int bgrun__store_query_int(struct bgrun_store *store, const char *sql,
			   int64_t *ret_value)
{
	sqlite3_stmt *stmt = NULL;
	int rc;

	rc = sqlite3_prepare_v2(store->db, sql, -1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		*ret_value = sqlite3_column_int64(stmt, 0);
	(void)sqlite3_finalize(stmt);
	if (rc == SQLITE_ROW)
		return 0;
	if ((rc & 0xff) == SQLITE_NOTADB)
		return bgrun__store_failf(store, -EBADMSG,
					  "'%s': not a bgrun event database "
					  "(not an SQLite file)",
					  store->path);
	return bgrun__store_failf(store, bgrun__sqlite_errno(store->db, rc),
				  "%s: %s", store->path,
				  sqlite3_errmsg(store->db));
}

int bgrun__store_identify(struct bgrun_store *store, int64_t *ret_version)
{
	int64_t app = 0, version = 0, objects = 0;
	/*
	 * The three in one read transaction (unless the caller holds one):
	 * apart, a writer making the schema may commit between them, and
	 * the header read before (application_id 0) would be judged with
	 * the objects read after ("not a bgrun event database").
	 */
	bool own = sqlite3_get_autocommit(store->db) != 0;
	int r = 0;

	if (own && sqlite3_exec(store->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		own = false;
	r = bgrun__store_query_int(store, "PRAGMA application_id", &app);
	if (r >= 0)
		r = bgrun__store_query_int(store, "PRAGMA user_version", &version);
	if (r >= 0)
		r = bgrun__store_query_int(store, "SELECT count(*) FROM sqlite_schema",
			      &objects);
	if (own)
		(void)sqlite3_exec(store->db, "COMMIT", NULL, NULL, NULL);
	if (r < 0)
		return r;
	if (app == 0 && version == 0 && objects == 0) {
		*ret_version = 0;
		return 0;
	}
	if (app != BGRUN__STORE_APP_ID)
		return bgrun__store_failf(store, -EBADMSG,
					  "'%s': not a bgrun event database (an "
					  "SQLite database of another program: "
					  "application_id 0x%08llx)",
					  store->path,
					  (unsigned long long)(uint32_t)app);
	if (version > BGRUN__STORE_VERSION)
		return bgrun__store_failf(store, -EPROTO,
					  "%s: schema version %lld is newer "
					  "than this bgrun's (%d)",
					  store->path, (long long)version,
					  BGRUN__STORE_VERSION);
	*ret_version = version;
	return 0;
}

static int exec_sql(struct bgrun_store *store, const char *sql,
		    const char *what)
{
	int rc = sqlite3_exec(store->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return bgrun__store_failf(store,
					  bgrun__sqlite_errno(store->db, rc),
					  "%s: %s: %s", store->path, what,
					  sqlite3_errmsg(store->db));
	return 0;
}

/*
 * Runs the missing migration steps, all in one transaction: a reader
 * (which opens read-only and never migrates) sees the schema before or
 * after, never a step in between ("schema version 1 is older", as `bgrun
 * wait` met it while the first recorder made a new log).
 */
static int migrate(struct bgrun_store *store, int64_t version)
{
	int r;

	if (version >= BGRUN__STORE_VERSION)
		return 0;
	r = exec_sql(store, "BEGIN IMMEDIATE", "migrating");
	if (r < 0)
		return r;
	/* Another program may have done it meanwhile. */
	r = bgrun__store_identify(store, &version);
	while (r >= 0 && version < BGRUN__STORE_VERSION) {
		r = exec_sql(store, migrations[version], "migrating the schema");
		if (r >= 0)
			r = bgrun__store_identify(store, &version);
	}
	if (r >= 0)
		r = exec_sql(store, "COMMIT", "migrating");
	if (r < 0)
		(void)sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

/*
 * WAL mode is a property of the file: set once. (Changing it takes an
 * exclusive lock, so it is not asked for when already done. Where WAL is
 * impossible SQLite keeps the old mode, which still works, slower.)
 */
static int ensure_wal(struct bgrun_store *store)
{
	sqlite3_stmt *stmt = NULL;
	const unsigned char *mode;
	bool wal = false;
	int rc;

	rc = sqlite3_prepare_v2(store->db, "PRAGMA journal_mode", -1, &stmt,
				NULL);
	if (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
		mode = sqlite3_column_text(stmt, 0);
		wal = mode != NULL && strcmp((const char *)mode, "wal") == 0;
	}
	(void)sqlite3_finalize(stmt);
	if (wal)
		return 0;
	return exec_sql(store, "PRAGMA journal_mode = WAL", "setting WAL mode");
}

int bgrun__store_setup(struct bgrun_store *store, int64_t version)
{
	int r = 0;

	/*
	 * Pruned pages can go back to the file system (bgrun_store_prune_with)
	 * only in a file made with auto_vacuum: a setting of its creation,
	 * before the first table (and before WAL mode writes page 1). Older
	 * files are converted by their first prune.
	 */
	if (version == 0)
		r = exec_sql(store, "PRAGMA auto_vacuum = INCREMENTAL",
			     "setting auto_vacuum");
	if (r >= 0)
		r = ensure_wal(store);
	if (r >= 0)
		r = migrate(store, version);
	if (r >= 0)
		r = exec_sql(store, "PRAGMA synchronous = NORMAL; "
			     "PRAGMA cache_size = " BGRUN__STORE_CACHE_KIB "; "
			     "PRAGMA journal_size_limit = "
			     BGRUN__STORE_WAL_LIMIT_BYTES,
			     "configuring");
	/* No automatic checkpoints: see bgrun__store_checkpoint. */
	if (r >= 0)
		(void)sqlite3_wal_autocheckpoint(store->db, 0);
	return r;
}
