/* SPDX-License-Identifier: MIT */
/* store.c: the SQLite event store: paths, opening and closing, statements, errors, the write lock. */


#include "store-internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define COLUMN(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, { #column, offsetof(struct bgrun_event, name), \
				BGRUN__FIELD_TEXT(kind) },)
const struct bgrun__column bgrun__columns[BGRUN__N_COLUMNS] = {
	BGRUN__EVENT_FIELDS(COLUMN)
};

#define SQL_PARAM(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, ", :" #column)
#define SQL_KEEP(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, ", " #column " = coalesce(excluded." #column \
			", " #column ")")
/* The insert of a row, which the insert and the upsert share. */
#define SQL_INSERT \
	"INSERT INTO events(id, recorded_ns, argv, options" \
	BGRUN__EVENT_FIELDS(BGRUN__SQL_NAME) \
	", changed_seq" \
	") VALUES(:id, :recorded_ns, :argv, json(:options)" \
	BGRUN__EVENT_FIELDS(SQL_PARAM) \
	", :changed_seq)"

static const char *const stmt_sql[BGRUN__N_STMTS] = {
	[BGRUN__STMT_BEGIN] = "BEGIN IMMEDIATE",
	[BGRUN__STMT_COMMIT] = "COMMIT",
	[BGRUN__STMT_ROLLBACK] = "ROLLBACK",
	[BGRUN__STMT_ARGV_DECODE] =
		"SELECT type = 'object', "
		"CASE WHEN type = 'object' THEN json_extract(value, '$.hex') "
		"ELSE value END FROM json_each(?1) ORDER BY key",
	[BGRUN__STMT_OPTIONS_CHECK] =
		"SELECT CASE WHEN json_valid(?1) "
		"THEN json_type(?1) = 'object' ELSE 0 END",
	/* One NAME, VALUE pair of options_kv into the object ?1. */
	[BGRUN__STMT_OPTIONS_ADD] = "SELECT json_patch(?1, json_object(?2, ?3))",
	/*
	 * A new row, tried first: preparing the upsert below costs SQLite
	 * about four times as much (0.28 ms against 0.07 here), which a
	 * one-event process (the hook target) paid for every event, most of
	 * them new.
	 */
	[BGRUN__STMT_INSERT] = SQL_INSERT " ON CONFLICT(id) DO NOTHING",
	/*
	 * The upsert, for an id the store has: see bgrun_store_put() in
	 * bgrun.h for the rules. In DO UPDATE, a bare column name is the
	 * stored value.
	 */
	[BGRUN__STMT_UPSERT] =
		SQL_INSERT " ON CONFLICT(id) DO UPDATE SET "
		"argv = coalesce(excluded.argv, argv)"
		", options = coalesce(excluded.options, options)"
		BGRUN__EVENT_FIELDS(SQL_KEEP)
		", changed_seq = excluded.changed_seq"
		" WHERE result = 'running' OR (result = 'lost' AND "
		"excluded.result NOT IN ('running', 'lost'))",
	[BGRUN__STMT_JSON_LOST] = "SELECT json_set(?1, '$.result', 'lost')",
	[BGRUN__STMT_GET_EXACT] = BGRUN__SQL_ROW " WHERE id = ?1",
	/* Any part of an id (bgrun/event.h IDS FOR PEOPLE): a scan. */
	[BGRUN__STMT_GET_PART] = "SELECT id FROM events "
				   "WHERE instr(id, ?1) > 0 LIMIT 2",
	[BGRUN__STMT_RUNNING] =
		"SELECT id, boot_id, supervisor_pid, supervisor_start, pid, "
		"start_ns FROM events WHERE result = 'running' AND result != 'success'",
	[BGRUN__STMT_MARK_LOST] =
		"UPDATE events SET result = 'lost', changed_seq = ?2 "
		"WHERE id = ?1 AND result = 'running'",
	[BGRUN__STMT_SEQ_GET] =
		"SELECT value FROM counters WHERE name = 'changed_seq'",
	[BGRUN__STMT_SEQ_SET] =
		"UPDATE counters SET value = ?1 WHERE name = 'changed_seq'",
	/* See store-changes.c for the columns' positions. */
	[BGRUN__STMT_CHANGES] =
		"SELECT changed_seq, id, recorded_ns, time_ns, argv, options"
		BGRUN__EVENT_FIELDS(BGRUN__SQL_NAME)
		" FROM events "
		"WHERE changed_seq > ?1 ORDER BY changed_seq LIMIT ?2",
	[BGRUN__STMT_CURSOR_GET] = "SELECT seq FROM cursors WHERE name = ?1",
	[BGRUN__STMT_CURSOR_SET] =
		"INSERT INTO cursors(name, seq, updated_ns) VALUES(?1, ?2, ?3) "
		"ON CONFLICT(name) DO UPDATE SET seq = excluded.seq, "
		"updated_ns = excluded.updated_ns",
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
		/* store-write.c binds the plain columns by position. */
		bool row = id == BGRUN__STMT_INSERT || id == BGRUN__STMT_UPSERT;

		for (size_t i = 0; row && i < BGRUN__N_COLUMNS; i++)
			assert(strcmp(sqlite3_bind_parameter_name(
					      store->stmts[id],
					      BGRUN__UPSERT_PLAIN + (int)i) + 1,
				      bgrun__columns[i].name) == 0);
		assert(!row ||
		       strcmp(sqlite3_bind_parameter_name(store->stmts[id],
							  BGRUN__UPSERT_SEQ),
			      ":changed_seq") == 0);
		(void)row;
	}
	*ret_stmt = store->stmts[id];
	return 0;
}

/*
 * Every wait for the lock is bounded (a holder may be stopped: SIGSTOP, a
 * debugger): when the lock has not changed hands for the bound, the write
 * fails with -ETIMEDOUT, and the sink client keeps the event in the spool
 * and says so. A queue that moves is waited out: 1,600 recorders at once
 * on a loaded machine wait longer than the bound in all, and spooling
 * then only stranded their events until the next writer.
 */
static int lock_file_mail(struct bgrun_store *store,
			  struct bgrun__filelock_mail *mail)
{
	int r = bgrun__filelock_acquire_mail(&store->lock,
					      store->lock_timeout_ns,
					      BGRUN__FILELOCK_STILL, mail);

	if (r == -ETIMEDOUT)
		return bgrun__store_failf(store, r,
					  "%s-lock: another writer has held "
					  "the log's lock for over %.3g s "
					  "(stopped?)", store->path,
					  (double)store->lock_timeout_ns / 1e9);
	if (r < 0)
		return bgrun__store_failf(store, r, "locking %s-lock: %s",
					  store->path, strerror(-r));
	return r; /* 0: held; 1: mail's work done by the holder */
}

static int lock_file(struct bgrun_store *store)
{
	return lock_file_mail(store, NULL);
}

static void unlock_file(struct bgrun_store *store)
{
	bgrun__filelock_release(&store->lock);
}

int bgrun__store_lock(struct bgrun_store *store)
{
	if (store->readonly || store->lock_fd < 0)
		return bgrun__store_failf(store, -EROFS,
					  "%s: the store is open read-only",
					  store->path);
	return lock_file(store);
}

void bgrun__store_unlock(struct bgrun_store *store)
{
	unlock_file(store);
}

/* $BGRUN_LOCK_TIMEOUT (seconds), else BGRUN__STORE_LOCK_MS. */
static int64_t lock_timeout_ns(void)
{
	const char *s = getenv("BGRUN_LOCK_TIMEOUT");
	char *end;
	double v;

	if (s != NULL && s[0] != '\0') {
		errno = 0;
		v = strtod(s, &end);
		if (errno == 0 && *end == '\0' && v >= 0 && v <= 86400)
			return (int64_t)(v * 1e9);
	}
	return BGRUN__STORE_LOCK_MS * INT64_C(1000000);
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
int bgrun__store_begin_mail(struct bgrun_store *store,
			    struct bgrun__filelock_mail *mail)
{
	int r;

	if (store->readonly)
		return bgrun__store_failf(store, -EROFS,
					  "%s: the store is open read-only",
					  store->path);
	r = lock_file_mail(store, mail);
	if (r != 0)
		return r;
	r = run_stmt(store, BGRUN__STMT_BEGIN, "beginning a transaction");
	if (r < 0)
		unlock_file(store);
	return r;
}

int bgrun__store_begin(struct bgrun_store *store)
{
	return bgrun__store_begin_mail(store, NULL);
}

int bgrun__store_end(struct bgrun_store *store, int r)
{
	_Atomic uint32_t *count = bgrun__filelock_counter(&store->lock);
	uint32_t seen;

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
	if (store->n_taken > 0) {
		if (r < 0)
			for (size_t i = 0; i < store->n_taken; i++)
				store->taken_result[i] = -1;
		bgrun__filelock_settle(&store->lock, store->taken,
				       store->taken_result, store->n_taken);
		store->n_taken = 0;
	}
	/* Read under the lock: a checkpoint that moves it has our commit. */
	seen = count != NULL ? atomic_load(count) : 0;
	unlock_file(store);
	if (store->wal_frames >= store->checkpoint_frames)
		bgrun__store_checkpoint_soon(store, seen);
	return r;
}

/* The directories above path, each new one made 0700 (mkdir -p). */
static int make_parents(struct bgrun_store *store)
{
	const char *slash = NULL;
	char *dir;
	int r;

	for (const char *p = store->path; *p != '\0'; p++)
		if (strchr(BGRUN__PATH_SEPS, *p) != NULL)
			slash = p;
	if (slash == NULL || slash == store->path)
		return 0; /* the working directory, or / */
	dir = strndup(store->path, (size_t)(slash - store->path));
	if (dir == NULL)
		return -ENOMEM;
	r = bgrun__mkdir_p(dir, 0700);
	if (r < 0)
		(void)bgrun__store_failf(store, r,
					 "%s: cannot create directory %s: %s",
					 store->path, dir, strerror(-r));
	free(dir);
	return r;
}

/*
 * Creates the file if missing, with mode 0600 (SQLite would use 0644).
 * Without ret_fd an existing file is never opened: closing a descriptor of
 * the database would drop every POSIX lock this process holds on it,
 * including those of another connection's SQLite (fcntl locks belong to
 * the process and the file, not to the descriptor).
 */
static int create_file(struct bgrun_store *store, const char *path, int *ret_fd)
{
	int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, fd;

	if (ret_fd == NULL)
		flags |= O_EXCL;
	do
		fd = open(path, flags, 0600);
	while (fd < 0 && errno == EINTR);
	if (fd < 0 && errno == EEXIST && ret_fd == NULL)
		return 0;
	if (fd < 0)
		return bgrun__store_failf(store, -errno, "%s: %s", path,
					  strerror(errno));
	if (ret_fd != NULL)
		*ret_fd = fd;
	else
		(void)close(fd);
	return 0;
}

int bgrun__store_open_db(struct bgrun_store *store, const char *name,
			  int flags)
{
	/* A path that SQLite could take for a URI is made plainly relative. */
	bool uri_like = strncmp(store->path, "file:", 5) == 0;
	char *relative = NULL;
	int rc;

	if (name == NULL && uri_like &&
	    asprintf(&relative, "./%s", store->path) < 0)
		return -ENOMEM;
	if (name == NULL)
		name = relative != NULL ? relative : store->path;
	rc = sqlite3_open_v2(name, &store->db, flags | SQLITE_OPEN_NOMUTEX,
			     NULL);
	free(relative);
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

/* Whether the -wal file holds nothing: missing, or empty. */
static bool wal_unused(struct bgrun_store *store)
{
	char *wal = NULL;
	struct stat st;
	bool unused;

	if (asprintf(&wal, "%s-wal", store->path) < 0)
		return false;
	if (stat(wal, &st) == 0)
		unused = st.st_size == 0;
	else
		unused = errno == ENOENT;
	free(wal);
	return unused;
}

/*
 * The -wal and -shm files are made with the database's mode (SQLite's
 * rule) and then kept: a database made readable to others (chmod) has
 * its companions made so too by its next writer, so that a reader who
 * may not write them can still read the log (SQLite reads a WAL database
 * read-only when both exist). They take the database's permission bits,
 * and only where they have its owner.
 */
static void companions_follow(struct bgrun_store *store)
{
	static const char *const companions[] = { "-wal", "-shm" };
	struct stat db, st;
	char *name = NULL;

	if (stat(store->path, &db) < 0)
		return;
	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		if (asprintf(&name, "%s%s", store->path, companions[i]) < 0)
			return;
		if (lstat(name, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == db.st_uid &&
		    (st.st_mode & 07777) != (db.st_mode & 0777))
			(void)chmod(name, db.st_mode & 0777);
		free(name);
	}
}

/*
 * Even a reader of a WAL database makes SQLite create the -wal and -shm
 * files, or open them read-write; where it can do neither (a directory
 * the caller may not write: another user's log, a read-only mount)
 * opening fails. Without a -wal file, or with an empty one, every commit
 * is in the database file and no writer is at work, so the file can
 * then be read as immutable (no locks, no companion files) instead.
 */
static int reopen_immutable(struct bgrun_store *store, int64_t *ret_version)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~-";
	char *abs = realpath(store->path, NULL), *uri = NULL, *o;
	int r;

	if (abs == NULL)
		return bgrun__store_failf(store, -errno, "%s: %s", store->path,
					  strerror(errno));
	uri = malloc(3 * strlen(abs) + sizeof("file:///?immutable=1"));
	if (uri == NULL) {
		free(abs);
		return -ENOMEM;
	}
	/*
	 * RFC 8089's form, which SQLite reads: the path with forward
	 * slashes, after a '/' of its own where it has none (a drive,
	 * "C:\...", on Windows: file:///C:/...; POSIX paths have theirs).
	 */
	o = uri + sprintf(uri, abs[0] == '/' ? "file://" : "file:///");
	for (const char *p = abs; *p != '\0'; p++) {
		if (strchr(BGRUN__PATH_SEPS, *p) != NULL)
			*o++ = '/';
		else if (strchr(plain, *p) != NULL)
			*o++ = *p;
		else
			o += sprintf(o, "%%%02X", (unsigned char)*p);
	}
	(void)strcpy(o, "?immutable=1");
	free(abs);
	(void)sqlite3_close_v2(store->db);
	store->db = NULL;
	r = bgrun__store_open_db(store, uri,
				 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
	free(uri);
	if (r >= 0)
		r = bgrun__store_identify(store, ret_version);
	return r;
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
	r = bgrun__store_open_db(store, NULL, SQLITE_OPEN_READONLY);
	if (r >= 0)
		r = bgrun__store_identify(store, &version);
	/*
	 * Where the -wal file can be neither made nor opened, SQLite's error
	 * is that of its last try: EROFS (making it), or ENOENT or EACCES
	 * (opening it read-only), and a file with pages in it may even look
	 * empty. Read-only media (snapshots, backups, ro mounts) are read
	 * as immutable then, when their -wal file holds nothing.
	 */
	if ((r == -EROFS || r == -ENOENT || r == -EACCES ||
	     (r >= 0 && version == 0 && st.st_size > 0)) &&
	    wal_unused(store))
		r = reopen_immutable(store, &version);
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

static int open_readwrite(struct bgrun_store *store)
{
	char *lock_path = NULL;
	bool had_lock;
	struct stat st;
	int64_t version;
	int r;

	r = make_parents(store);
	if (r < 0)
		return r;
	/*
	 * The rule of the -wal, -shm and -lock files (SQLite opens the first
	 * two O_NOFOLLOW): no symbolic link, or a link to any file of the
	 * user's (an empty one, say) would make that file a database.
	 */
	if (lstat(store->path, &st) == 0 && S_ISLNK(st.st_mode))
		return bgrun__store_failf(store, -ELOOP,
					  "%s is a symbolic link: refused for "
					  "writing (give the file it points to)",
					  store->path);
	r = create_file(store, store->path, NULL);
	if (r < 0)
		return r;
	if (asprintf(&lock_path, "%s-lock", store->path) < 0)
		return -ENOMEM;
	had_lock = access(lock_path, F_OK) == 0;
	r = create_file(store, lock_path, &store->lock_fd);
	if (r < 0) {
		free(lock_path);
		return r;
	}
	bgrun__filelock_init(&store->lock, store->lock_fd);
	store->lock_timeout_ns = lock_timeout_ns();
	r = bgrun__store_open_db(store, NULL,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW);
	if (r >= 0)
		r = lock_file(store);
	if (r >= 0) {
		r = bgrun__store_identify(store, &version);
		if (r >= 0)
			r = bgrun__store_setup(store, version);
		unlock_file(store);
	}
	/* Beside a file that is not ours, leave nothing of ours behind. */
	if (r == -EBADMSG && !had_lock)
		(void)unlink(lock_path);
	free(lock_path);
	if (r >= 0) {
		int persist = 1;

		store->checkpoint_frames = BGRUN__STORE_CHECKPOINT_PAGES;
		(void)sqlite3_wal_hook(store->db, bgrun__store_wal_hook,
				       store);
		/*
		 * The -wal and -shm files are made once and kept: making and
		 * unlinking them cost every short-lived writer two file
		 * creations, a sync of the directory and two unlinks.
		 */
		(void)sqlite3_file_control(store->db, "main",
					   SQLITE_FCNTL_PERSIST_WAL, &persist);
		companions_follow(store);
	}
	return r;
}

int bgrun_store_new(struct bgrun_store **ret_store)
{
	struct bgrun_store *store = calloc(1, sizeof(*store));

	if (store == NULL)
		return -ENOMEM;
	store->lock_fd = -1;
	store->lock.fd = -1;
	store->checkpoint_frames = INT_MAX;
	*ret_store = store;
	return 0;
}

int bgrun__store_enter(struct bgrun_store *store)
{
	store->errmsg[0] = '\0';
	if (store->db == NULL)
		return bgrun__store_failf(store, -EINVAL,
					  "the store is not open");
	return 0;
}

int bgrun__store_enter_write(struct bgrun_store *store)
{
	int r = bgrun__store_enter(store);

	return r < 0 ? r : bgrun__store_begin(store);
}

void bgrun__store_release(struct bgrun_store *store)
{
	for (size_t i = 0; i < BGRUN__N_STMTS; i++)
		(void)sqlite3_finalize(store->stmts[i]);
	for (size_t i = 0; i < BGRUN__ARGV_CHUNK; i++)
		(void)sqlite3_finalize(store->argv_stmts[i]);
	if (store->filter_stmts != NULL)
		for (size_t i = 0; i < BGRUN__N_FILTER_STMTS; i++)
			(void)sqlite3_finalize(store->filter_stmts[i]);
	free(store->filter_stmts);
	/*
	 * The checkpointer's connection closes first, so that ours is the
	 * last. In a forked child, the thread and its connection are the
	 * parent's: left alone.
	 */
	bgrun__store_checkpointer_stop(store);
	if (store->db != NULL && store->ckpt_own) {
		/* Another connection of this process is open: no checkpoint. */
		(void)sqlite3_db_config(store->db,
					SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
					NULL);
		(void)sqlite3_close_v2(store->db);
		store->db = NULL;
	}
	if (store->db != NULL) {
		/*
		 * Our commits are in the WAL (synchronous = NORMAL syncs it
		 * only at checkpoints): flushed before we go. The last
		 * connection to close would checkpoint the WAL; only a long
		 * one is (BGRUN__STORE_CLOSE_CHECKPOINT_PAGES says why), under
		 * the lock like every other write, and the close then cuts
		 * the WAL to nothing. (Leaving every WAL was measured too:
		 * the next process to open alone rebuilds the WAL index by
		 * reading the whole of it, up to 16 MiB.)
		 */
		bool checkpoint = store->lock_fd >= 0 &&
				  store->wal_frames >=
					  BGRUN__STORE_CLOSE_CHECKPOINT_PAGES;

		if (store->lock_fd >= 0)
			bgrun__store_flush_wal(store);
		/*
		 * Not the whole lock timeout: a write that timed out has
		 * already waited it, and without the lock the WAL is only
		 * left for the next writer to checkpoint.
		 */
		if (checkpoint &&
		    bgrun__filelock_acquire(&store->lock,
					    BGRUN__STORE_CHECKPOINT_WAIT_MS *
						    INT64_C(1000000),
					    BGRUN__FILELOCK_TOTAL) < 0)
			checkpoint = false;
		if (!checkpoint)
			(void)sqlite3_db_config(store->db,
						SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
						1, NULL);
		(void)sqlite3_close_v2(store->db);
	}
	bgrun__filelock_destroy(&store->lock);
	if (store->lock_fd >= 0)
		(void)close(store->lock_fd);
	free(store->path);
	*store = (struct bgrun_store){ .lock_fd = -1, .lock = { .fd = -1 },
				       .checkpoint_frames = INT_MAX };
}

/*
 * What both opens share: store must be as bgrun_store_new made it, and
 * goes back to that on failure, its message kept.
 */
static int open_with(struct bgrun_store *store, const char *path,
		     bool readonly, int (*how)(struct bgrun_store *store))
{
	char msg[sizeof(store->errmsg)];
	int r;

	store->errmsg[0] = '\0';
	if (store->db != NULL || store->path != NULL)
		return bgrun__store_failf(store, -EINVAL,
					  "%s: the store is open already",
					  store->path);
	store->readonly = readonly;
	store->path = strdup(path);
	r = store->path != NULL ? how(store) : -ENOMEM;
	if (r >= 0)
		return 0;
	if (store->errmsg[0] == '\0')
		(void)bgrun__store_failf(store, r, "%s: %s", path,
					 bgrun_strerror(r));
	memcpy(msg, store->errmsg, sizeof(msg));
	bgrun__store_release(store);
	memcpy(store->errmsg, msg, sizeof(msg));
	return r;
}

int bgrun_store_open(struct bgrun_store *store, const char *path,
		     unsigned flags)
{
	bool readonly = (flags & BGRUN_STORE_READONLY) != 0;

	if (store == NULL)
		return -EINVAL;
	if (path == NULL || path[0] == '\0' || (flags & ~BGRUN_STORE_READONLY))
		return bgrun__store_failf(store, -EINVAL,
					  "invalid store path or flags");
	return open_with(store, path, readonly,
			 readonly ? open_readonly : open_readwrite);
}

static int open_scratch(struct bgrun_store *store)
{
	return bgrun__store_open_db(store, ":memory:", SQLITE_OPEN_READWRITE);
}

int bgrun_store_open_scratch(struct bgrun_store *store)
{
	if (store == NULL)
		return -EINVAL;
	/* Read-only: there is nothing to write to. */
	return open_with(store, ":memory:", true, open_scratch);
}

void bgrun_store_close(struct bgrun_store *store)
{
	if (store == NULL)
		return;
	bgrun__store_release(store);
	free(store);
}
