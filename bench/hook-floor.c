/* SPDX-License-Identifier: MIT */
/* hook-floor.c: what any durable hook process costs at least: an append made durable, or one SQLite row made durable. */

/*
 * Usage: hook-floor append|sqlite|sqlite-nosync|sqlite-7 DIR
 *
 * sink-bench --only hook runs it beside `logsink send --from-hg-env`, a
 * process each time, as logtoprocess would, so that target 4 of the
 * README (the embedded hook within 2 x /bin/true) can be read against
 * what no hook can go below here:
 *   append         DIR/floor.log: one record of the size of the hook's
 *                  event appended, then fdatasync: the least a durable
 *                  record costs, in any format;
 *   sqlite         DIR/floor.db: one row of that size inserted into a
 *                  table of two columns and made durable as the store
 *                  makes its rows (WAL, synchronous = NORMAL, the WAL
 *                  flushed before the close, no checkpoint at close until
 *                  the WAL holds 32 pages): SQLite's own part of the hook,
 *                  without the store's schema, lock, checks and fields;
 *   sqlite-nosync  the same without the flush;
 *   sqlite-7       DIR/floor7.db: as sqlite, but the row also goes into
 *                  four indexes and a counter's row is updated, so that
 *                  the commit writes seven pages, as the store's does for
 *                  a hook's event (the table, its id's index, the time,
 *                  source and event, working directory and change-number
 *                  indexes, the change counter).
 * Linked like logsink (statically where logsink is), so that its start
 * costs what logsink's does.
 */

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* About the size of the hook's event as the store keeps it. */
#define RECORD_BYTES 350
/* The store's BGRUN__STORE_CLOSE_CHECKPOINT_PAGES. */
#define CLOSE_CHECKPOINT_PAGES 32

static int fail(const char *what, const char *why)
{
	(void)fprintf(stderr, "hook-floor: %s: %s\n", what, why);
	return 1;
}

static void record(char *buf, size_t size)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	(void)snprintf(buf, size, "%lld.%09ld %d ", (long long)ts.tv_sec,
		       ts.tv_nsec, (int)getpid());
	for (size_t n = strlen(buf); n + 2 < size; n++)
		buf[n] = 'x';
	buf[size - 2] = '\n';
	buf[size - 1] = '\0';
}

static int append(const char *dir)
{
	char path[4096], buf[RECORD_BYTES + 1];
	int fd;

	(void)snprintf(path, sizeof(path), "%s/floor.log", dir);
	record(buf, sizeof(buf));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(path, "cannot open");
	if (write(fd, buf, RECORD_BYTES) != RECORD_BYTES || fdatasync(fd) < 0) {
		(void)close(fd);
		return fail(path, "cannot write");
	}
	return close(fd) < 0 ? fail(path, "cannot close") : 0;
}

static int frames;

static int count_frames(void *ctx, sqlite3 *db, const char *name, int n)
{
	(void)ctx;
	(void)db;
	(void)name;
	frames = n;
	return SQLITE_OK;
}

/* The schema of each mode's table (made by its first run), and its insert. */
static const char *const schema[2] = {
	"CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY NOT NULL, "
	"body TEXT NOT NULL) STRICT;",
	"CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY NOT NULL, "
	"body TEXT NOT NULL, a TEXT, b TEXT, c TEXT, d INTEGER) STRICT;"
	"CREATE INDEX IF NOT EXISTS ta ON t(a, d);"
	"CREATE INDEX IF NOT EXISTS tb ON t(b, d);"
	"CREATE INDEX IF NOT EXISTS tc ON t(c, d);"
	"CREATE INDEX IF NOT EXISTS td ON t(d);"
	"CREATE TABLE IF NOT EXISTS k (name TEXT PRIMARY KEY NOT NULL, "
	"value INTEGER NOT NULL) STRICT;"
	"INSERT OR IGNORE INTO k VALUES ('seq', 0);",
};
static const char *const insert[2] = {
	"INSERT INTO t VALUES (?1, ?2)",
	"INSERT INTO t VALUES (?1, ?2, ?1, ?1, ?1, "
	"(SELECT value + 1 FROM k WHERE name = 'seq'))",
};

static int one_row(const char *dir, int sync, int seven)
{
	char path[4096], wal[4200], buf[RECORD_BYTES + 1];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int persist = 1, fd, rc;

	(void)snprintf(path, sizeof(path), "%s/%s", dir,
		       seven ? "floor7.db" : "floor.db");
	(void)snprintf(wal, sizeof(wal), "%s-wal", path);
	record(buf, sizeof(buf));
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return fail(path, sqlite3_errstr(rc));
	(void)sqlite3_busy_timeout(db, 5000);
	(void)sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	(void)sqlite3_wal_hook(db, count_frames, NULL);
	rc = sqlite3_exec(db,
			  "PRAGMA synchronous = NORMAL;"
			  "PRAGMA journal_size_limit = 4194304;",
			  NULL, NULL, NULL);
	if (rc == SQLITE_OK &&
	    sqlite3_prepare_v2(db, insert[seven], -1, &st, NULL) != SQLITE_OK) {
		/*
		 * No table yet: the first run makes the file (WAL mode is the
		 * file's) and its schema, so that the others do only what a
		 * hook must.
		 */
		rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, schema[seven], NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_prepare_v2(db, insert[seven], -1, &st, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		(void)sqlite3_bind_text(st, 1, buf, 40, SQLITE_STATIC);
		(void)sqlite3_bind_text(st, 2, buf, RECORD_BYTES, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
	}
	(void)sqlite3_finalize(st);
	if (rc == SQLITE_OK && seven)
		rc = sqlite3_exec(db, "UPDATE k SET value = value + 1 WHERE name = 'seq'",
				  NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		(void)fail(path, sqlite3_errmsg(db));
		(void)sqlite3_close_v2(db);
		return 1;
	}
	if (sync) {
		fd = open(wal, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fdatasync(fd) < 0)
			(void)fail(wal, "cannot flush");
		if (fd >= 0)
			(void)close(fd);
	}
	if (frames < CLOSE_CHECKPOINT_PAGES)
		(void)sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	return sqlite3_close_v2(db) == SQLITE_OK ? 0 : fail(path, "cannot close");
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "append") == 0)
		return append(argv[2]);
	if (argc == 3 && strcmp(argv[1], "sqlite") == 0)
		return one_row(argv[2], 1, 0);
	if (argc == 3 && strcmp(argv[1], "sqlite-nosync") == 0)
		return one_row(argv[2], 0, 0);
	if (argc == 3 && strcmp(argv[1], "sqlite-7") == 0)
		return one_row(argv[2], 1, 1);
	(void)fprintf(stderr, "usage: hook-floor append|sqlite|sqlite-nosync|sqlite-7 DIR\n");
	return 2;
}
