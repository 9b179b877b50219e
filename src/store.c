/* SPDX-License-Identifier: MIT */
/* store.c: the SQLite event store: paths, opening, schema migrations, locking. */

#include "internal.h"
#include "store-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define COLUMN_S(n) { #n, offsetof(struct bgrun_event, n), true },
#define COLUMN_I(n) { #n, offsetof(struct bgrun_event, n), false },
const struct bgrun__column bgrun__columns[] = {
	BGRUN__EVENT_COLUMNS(COLUMN_S, COLUMN_I)
};
const size_t bgrun__n_columns =
	sizeof(bgrun__columns) / sizeof(bgrun__columns[0]);

/*
 * Schema migrations: step i takes user_version i to i + 1, in one
 * transaction. Never edit a step once released: add one. Version 1 is the
 * first table; version 2 added the supervisor's start time, the options,
 * the resource use and the indexes of the queries.
 */
static const char *const migrations[BGRUN__STORE_VERSION] = {
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
	"CREATE INDEX events_result ON events(result, time_ns);"
	"CREATE INDEX events_tag ON events(tag, time_ns);"
	"CREATE INDEX events_source_event ON events(source, event, time_ns);"
	"CREATE INDEX events_cwd ON events(cwd, time_ns);"
	"PRAGMA user_version = 2;",
};

#define SQL_PARAM(n) ", :" #n
#define SQL_KEEP(n) ", " #n " = coalesce(excluded." #n ", " #n ")"

static const char *const stmt_sql[BGRUN__N_STMTS] = {
	[BGRUN__STMT_BEGIN] = "BEGIN IMMEDIATE",
	[BGRUN__STMT_COMMIT] = "COMMIT",
	[BGRUN__STMT_ROLLBACK] = "ROLLBACK",
	[BGRUN__STMT_ARGV_TEXT] = "SELECT json_insert(?1, '$[#]', ?2)",
	[BGRUN__STMT_ARGV_HEX] =
		"SELECT json_insert(?1, '$[#]', json_object('hex', hex(?2)))",
	[BGRUN__STMT_ARGV_DECODE] =
		"SELECT type = 'object', "
		"CASE WHEN type = 'object' THEN json_extract(value, '$.hex') "
		"ELSE value END FROM json_each(?1) ORDER BY key",
	[BGRUN__STMT_OPTIONS_CHECK] =
		"SELECT CASE WHEN json_valid(?1) "
		"THEN json_type(?1) = 'object' ELSE 0 END",
	/*
	 * The upsert: see bgrun_store_put() in bgrun.h for the rules. In DO
	 * UPDATE, a bare column name is the stored value.
	 */
	[BGRUN__STMT_UPSERT] =
		"INSERT INTO events(id, recorded_ns, argv, options"
		BGRUN__EVENT_COLUMNS(BGRUN__SQL_NAME, BGRUN__SQL_NAME)
		") VALUES(:id, :recorded_ns, :argv, json(:options)"
		BGRUN__EVENT_COLUMNS(SQL_PARAM, SQL_PARAM)
		") ON CONFLICT(id) DO UPDATE SET "
		"argv = coalesce(excluded.argv, argv)"
		", options = coalesce(excluded.options, options)"
		BGRUN__EVENT_COLUMNS(SQL_KEEP, SQL_KEEP)
		" WHERE result = 'running' OR (result = 'lost' AND "
		"excluded.result NOT IN ('running', 'lost'))",
	[BGRUN__STMT_JSON_LOST] = "SELECT json_set(?1, '$.result', 'lost')",
	[BGRUN__STMT_GET_EXACT] = BGRUN__SQL_ROW " WHERE id = ?1",
	[BGRUN__STMT_GET_PREFIX] = "SELECT id FROM events WHERE id GLOB ?1 "
				   "ORDER BY id LIMIT 2",
	[BGRUN__STMT_RUNNING] =
		"SELECT id, boot_id, supervisor_pid, supervisor_start "
		"FROM events WHERE result = 'running'",
	[BGRUN__STMT_MARK_LOST] =
		"UPDATE events SET result = 'lost' "
		"WHERE id = ?1 AND result = 'running'",
	[BGRUN__STMT_PRUNE] =
		"DELETE FROM events "
		"WHERE time_ns < ?1 AND result IS NOT 'running'",
};

int bgrun__sqlite_errno(sqlite3 *db, int rc)
{
	int sys;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
	case SQLITE_FORMAT:
		return -EBADMSG;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	case SQLITE_INTERRUPT:
		return -EINTR;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		sys = db != NULL ? sqlite3_system_errno(db) : 0;
		return sys > 0 ? -sys : -EIO;
	}
	return -EIO;
}

int bgrun__store_failf(struct bgrun_store *store, int error,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(store->errmsg, sizeof(store->errmsg), fmt, ap);
	va_end(ap);
	return error;
}

int bgrun__store_fail(struct bgrun_store *store, int rc, const char *what)
{
	return bgrun__store_failf(store, bgrun__sqlite_errno(store->db, rc),
				  "%s: %s", what,
				  store->db != NULL ? sqlite3_errmsg(store->db)
						    : sqlite3_errstr(rc));
}

const char *bgrun_store_errmsg(const struct bgrun_store *store)
{
	return store != NULL ? store->errmsg : "";
}

int bgrun__store_prepare(struct bgrun_store *store, const char *sql,
			 sqlite3_stmt **ret_stmt)
{
	sqlite3_stmt *stmt = NULL;
	int rc;

	rc = sqlite3_prepare_v3(store->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
				&stmt, NULL);
	if (rc != SQLITE_OK)
		return bgrun__store_fail(store, rc, "preparing a statement");
	*ret_stmt = stmt;
	return 0;
}

int bgrun__store_stmt(struct bgrun_store *store, enum bgrun__stmt_id id,
		      sqlite3_stmt **ret_stmt)
{
	int r;

	if (store->stmts[id] == NULL) {
		r = bgrun__store_prepare(store, stmt_sql[id],
					 &store->stmts[id]);
		if (r < 0)
			return r;
	}
	*ret_stmt = store->stmts[id];
	return 0;
}

static int lock_file(struct bgrun_store *store)
{
	while (flock(store->lock_fd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return bgrun__store_failf(store, -errno,
						  "locking %s-lock: %s",
						  store->path, strerror(errno));
	}
	store->locked = true;
	return 0;
}

static void unlock_file(struct bgrun_store *store)
{
	if (store->locked)
		(void)flock(store->lock_fd, LOCK_UN);
	store->locked = false;
}

/* Runs a statement of the cache that returns no rows. */
static int run_stmt(struct bgrun_store *store, enum bgrun__stmt_id id,
		    const char *what)
{
	sqlite3_stmt *stmt;
	int r, rc;

	r = bgrun__store_stmt(store, id, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	(void)sqlite3_reset(stmt);
	if (rc != SQLITE_DONE)
		return bgrun__store_fail(store, rc, what);
	return 0;
}

/*
 * The flock comes first: among bgrun's writers only the lock holder ever
 * asks SQLite for the write lock, so BEGIN IMMEDIATE does not wait (the
 * busy timeout covers other programs), and no two of our transactions or
 * checkpoints overlap.
 */
int bgrun__store_begin(struct bgrun_store *store)
{
	int r;

	if (store->readonly)
		return bgrun__store_failf(store, -EROFS,
					  "%s: the store is open read-only",
					  store->path);
	r = lock_file(store);
	if (r < 0)
		return r;
	r = run_stmt(store, BGRUN__STMT_BEGIN, "beginning a transaction");
	if (r < 0)
		unlock_file(store);
	return r;
}

int bgrun__store_end(struct bgrun_store *store, int r)
{
	if (r >= 0) {
		int c = run_stmt(store, BGRUN__STMT_COMMIT, "committing");

		if (c < 0)
			r = c;
	}
	if (r < 0 && !sqlite3_get_autocommit(store->db)) {
		/* Keep the message of the failure, not of the rollback. */
		char saved[sizeof(store->errmsg)];

		memcpy(saved, store->errmsg, sizeof(saved));
		(void)run_stmt(store, BGRUN__STMT_ROLLBACK, "rolling back");
		memcpy(store->errmsg, saved, sizeof(saved));
	}
	unlock_file(store);
	return r;
}

int bgrun_store_default_path(char **ret_path)
{
	const char *db = getenv("BGRUN_DB"), *state, *home;
	char *path = NULL;
	int n = 0;

	state = getenv("XDG_STATE_HOME");
	home = getenv("HOME");
	if (db != NULL && db[0] != '\0')
		path = strdup(db);
	else if (state != NULL && state[0] == '/')
		n = asprintf(&path, "%s/bgrun/events.db", state);
	else if (home != NULL && home[0] != '\0')
		n = asprintf(&path, "%s/.local/state/bgrun/events.db", home);
	else
		return -ENOENT;
	if (n < 0 || path == NULL)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

/* mkdir -p of the directories above path, each made 0700. */
static int make_parents(struct bgrun_store *store)
{
	char *dir = strdup(store->path);
	int r = 0;

	if (dir == NULL)
		return -ENOMEM;
	for (char *p = strchr(dir + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
		if (p[-1] == '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			r = bgrun__store_failf(store, -errno,
					       "%s: cannot create directory %s: %s",
					       store->path, dir,
					       strerror(errno));
			break;
		}
		*p = '/';
	}
	free(dir);
	return r;
}

/* Creates the file if missing, with mode 0600 (SQLite would use 0644). */
static int create_file(struct bgrun_store *store, const char *path, int *ret_fd)
{
	int fd;

	do
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return bgrun__store_failf(store, -errno, "%s: %s", path,
					  strerror(errno));
	if (ret_fd != NULL)
		*ret_fd = fd;
	else
		(void)close(fd);
	return 0;
}

/* The first column of the first row of sql, an integer. */
static int query_int(struct bgrun_store *store, const char *sql,
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
					  "%s: not an SQLite database",
					  store->path);
	return bgrun__store_failf(store, bgrun__sqlite_errno(store->db, rc),
				  "%s: %s", store->path,
				  sqlite3_errmsg(store->db));
}

/*
 * What the file holds: *ret_version is our schema version, or 0 for a
 * database still empty. Anything else is -EBADMSG.
 */
static int identify(struct bgrun_store *store, int64_t *ret_version)
{
	int64_t app = 0, version = 0, objects = 0;
	int r;

	r = query_int(store, "PRAGMA application_id", &app);
	if (r >= 0)
		r = query_int(store, "PRAGMA user_version", &version);
	if (r >= 0)
		r = query_int(store, "SELECT count(*) FROM sqlite_schema",
			      &objects);
	if (r < 0)
		return r;
	if (app == 0 && version == 0 && objects == 0) {
		*ret_version = 0;
		return 0;
	}
	if (app != BGRUN__STORE_APP_ID)
		return bgrun__store_failf(store, -EBADMSG,
					  "%s: not a bgrun event store (an SQLite "
					  "database with application_id 0x%08llx)",
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

/* Runs the missing migration steps; the caller holds the file lock. */
static int migrate(struct bgrun_store *store, int64_t version)
{
	int r;

	while (version < BGRUN__STORE_VERSION) {
		r = exec_sql(store, "BEGIN IMMEDIATE", "migrating");
		if (r < 0)
			return r;
		/* Another program may have done it meanwhile. */
		r = identify(store, &version);
		if (r >= 0 && version < BGRUN__STORE_VERSION)
			r = exec_sql(store, migrations[version],
				     "migrating the schema");
		if (r >= 0)
			r = exec_sql(store, "COMMIT", "migrating");
		if (r < 0) {
			(void)sqlite3_exec(store->db, "ROLLBACK", NULL, NULL,
					   NULL);
			return r;
		}
		r = identify(store, &version);
		if (r < 0)
			return r;
	}
	return 0;
}

static int open_db(struct bgrun_store *store, int flags)
{
	/* A path that SQLite could take for a URI is made plainly relative. */
	bool uri_like = strncmp(store->path, "file:", 5) == 0;
	char *name = NULL;
	int rc;

	if (uri_like && asprintf(&name, "./%s", store->path) < 0)
		return -ENOMEM;
	rc = sqlite3_open_v2(name != NULL ? name : store->path, &store->db,
			     flags | SQLITE_OPEN_NOMUTEX, NULL);
	free(name);
	if (store->db == NULL)
		return bgrun__store_failf(store, -ENOMEM, "%s: out of memory",
					  store->path);
	if (rc != SQLITE_OK)
		return bgrun__store_failf(store,
					  bgrun__sqlite_errno(store->db, rc),
					  "%s: %s", store->path,
					  sqlite3_errmsg(store->db));
	(void)sqlite3_extended_result_codes(store->db, 1);
	(void)sqlite3_busy_timeout(store->db, BGRUN__STORE_BUSY_MS);
	(void)sqlite3_db_config(store->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0,
				NULL);
	(void)sqlite3_db_config(store->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	return 0;
}

static int open_readonly(struct bgrun_store *store)
{
	int64_t version;
	struct stat st;
	int r;

	if (stat(store->path, &st) < 0)
		return bgrun__store_failf(store, -errno, "%s: %s", store->path,
					  errno == ENOENT
						  ? "no such file (no events "
						    "recorded yet)"
						  : strerror(errno));
	r = open_db(store, SQLITE_OPEN_READONLY);
	if (r >= 0)
		r = identify(store, &version);
	if (r < 0)
		return r;
	if (version == 0)
		return bgrun__store_failf(store, -ENOENT,
					  "%s: empty database (no events "
					  "recorded yet)", store->path);
	if (version < BGRUN__STORE_VERSION)
		return bgrun__store_failf(store, -EPROTO,
					  "%s: schema version %lld is older "
					  "than this bgrun's (%d); open it "
					  "for writing once to upgrade it",
					  store->path, (long long)version,
					  BGRUN__STORE_VERSION);
	return 0;
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

static int open_readwrite(struct bgrun_store *store)
{
	char *lock_path = NULL;
	int64_t version;
	int r;

	r = make_parents(store);
	if (r < 0)
		return r;
	r = create_file(store, store->path, NULL);
	if (r < 0)
		return r;
	if (asprintf(&lock_path, "%s-lock", store->path) < 0)
		return -ENOMEM;
	r = create_file(store, lock_path, &store->lock_fd);
	free(lock_path);
	if (r < 0)
		return r;
	r = open_db(store, SQLITE_OPEN_READWRITE);
	if (r < 0)
		return r;
	r = lock_file(store);
	if (r < 0)
		return r;
	r = identify(store, &version);
	if (r < 0)
		goto cleanup;
	r = ensure_wal(store);
	if (r < 0)
		goto cleanup;
	r = migrate(store, version);
	if (r < 0)
		goto cleanup;
	r = exec_sql(store, "PRAGMA synchronous = NORMAL", "configuring");
cleanup:
	unlock_file(store);
	return r;
}

int bgrun_store_open(const char *path, unsigned flags,
		     struct bgrun_store **ret_store, char **ret_errmsg)
{
	struct bgrun_store *store;
	int r;

	store = calloc(1, sizeof(*store));
	if (store == NULL)
		return -ENOMEM;
	store->lock_fd = -1;
	store->readonly = (flags & BGRUN_STORE_READONLY) != 0;
	if (path == NULL || path[0] == '\0' || (flags & ~BGRUN_STORE_READONLY)) {
		r = bgrun__store_failf(store, -EINVAL,
				       "invalid store path or flags");
		goto fail;
	}
	store->path = strdup(path);
	if (store->path == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	r = store->readonly ? open_readonly(store) : open_readwrite(store);
	if (r < 0)
		goto fail;
	*ret_store = store;
	return 0;
fail:
	if (ret_errmsg != NULL)
		*ret_errmsg = strdup(store->errmsg[0] != '\0'
					     ? store->errmsg
					     : bgrun_strerror(r));
	bgrun_store_close(store);
	return r;
}

void bgrun_store_close(struct bgrun_store *store)
{
	if (store == NULL)
		return;
	for (size_t i = 0; i < BGRUN__N_STMTS; i++)
		(void)sqlite3_finalize(store->stmts[i]);
	if (store->filter_stmts != NULL)
		for (size_t i = 0; i < BGRUN__N_FILTER_STMTS; i++)
			(void)sqlite3_finalize(store->filter_stmts[i]);
	free(store->filter_stmts);
	if (store->db != NULL) {
		/*
		 * The last connection to close checkpoints the WAL: under the
		 * lock, like every other write.
		 */
		if (store->lock_fd >= 0 && !store->locked)
			(void)lock_file(store);
		(void)sqlite3_close_v2(store->db);
		unlock_file(store);
	}
	if (store->lock_fd >= 0)
		(void)close(store->lock_fd);
	free(store->path);
	free(store);
}
