/* SPDX-License-Identifier: MIT */
/* test-store-util.c: store-tests' runner, helper modes (writer, exit, wait) and shared helpers. */

#include "test-store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmpdirs[16];
static int n_tmpdirs;

static void cleanup(void)
{
	for (int i = 0; i < n_tmpdirs; i++) {
		t_rmtree(tmpdirs[i]);
		free(tmpdirs[i]);
	}
	n_tmpdirs = 0;
}

char *t_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		FAIL("out of memory");
	return s;
}

char *t_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir;

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	dir = t_printf("%s/store-tests.XXXXXX", base);
	if (mkdtemp(dir) == NULL)
		FAIL("mkdtemp %s: %m", dir);
	if (n_tmpdirs == (int)(sizeof(tmpdirs) / sizeof(tmpdirs[0])))
		FAIL("too many temp dirs");
	tmpdirs[n_tmpdirs++] = dir;
	return dir;
}

char *t_path(const char *dir, const char *name)
{
	return t_printf("%s/%s", dir, name);
}

char *t_read_file(const char *path)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = fopen(path, "re");
	ssize_t n;

	if (f == NULL)
		FAIL("open %s: %m", path);
	n = getdelim(&buf, &size, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return strdup("");
	}
	return buf;
}

void t_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		FAIL("open %s: %m", path);
	if (write(fd, data, len) != (ssize_t)len)
		FAIL("write %s: %m", path);
	(void)close(fd);
}

static int entries;

static int count_entry(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	if (ftw->level > 0)
		entries++;
	return 0;
}

int t_count_entries(const char *dir)
{
	entries = 0;
	if (nftw(dir, count_entry, 16, FTW_PHYS) < 0)
		FAIL("nftw %s: %m", dir);
	return entries;
}

mode_t t_umask(void)
{
	mode_t m = umask(022);

	(void)umask(m);
	return m;
}

int t_open(const char *path, unsigned flags, struct bgrun_store **ret)
{
	struct bgrun_store *s;
	int r = bgrun_store_new(&s);

	if (r < 0)
		return r;
	r = bgrun_store_open(s, path, flags);
	if (r < 0) {
		fprintf(stderr, "bgrun_store_open: %s\n", bgrun_store_errmsg(s));
		bgrun_store_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

char *t_open_error(const char *path, unsigned flags, int error)
{
	struct bgrun_store *s;
	char *msg;

	ASSERT_OK(bgrun_store_new(&s));
	ASSERT_EQ(bgrun_store_open(s, path, flags), error);
	msg = strdup(bgrun_store_errmsg(s));
	bgrun_store_close(s);
	if (msg == NULL)
		FAIL("out of memory");
	ASSERT(msg[0] != '\0' && strchr(msg, '\n') == NULL);
	return msg;
}

static sqlite3 *sql_open(const char *path, int flags)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK)
		FAIL("sqlite3_open_v2 %s: %s", path, sqlite3_errmsg(db));
	(void)sqlite3_busy_timeout(db, 10000);
	return db;
}

sqlite3 *t_sql_open(const char *path)
{
	return sql_open(path, SQLITE_OPEN_READONLY);
}

sqlite3 *t_sql_open_rw(const char *path)
{
	return sql_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
}

void t_sql_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		FAIL("%s: %s", sql, err);
}

static sqlite3_stmt *sql_row(sqlite3 *db, const char *sql, const char *param)
{
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		FAIL("%s: %s", sql, sqlite3_errmsg(db));
	if (param != NULL)
		(void)sqlite3_bind_text(stmt, 1, param, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_ROW)
		FAIL("%s: no row (%s)", sql, sqlite3_errmsg(db));
	return stmt;
}

int64_t t_sql_int(sqlite3 *db, const char *sql, const char *param)
{
	sqlite3_stmt *stmt = sql_row(db, sql, param);
	int64_t v = sqlite3_column_int64(stmt, 0);

	sqlite3_finalize(stmt);
	return v;
}

const char *t_sql_text(sqlite3 *db, const char *sql)
{
	static char buf[1024];
	sqlite3_stmt *stmt = sql_row(db, sql, NULL);
	const unsigned char *s = sqlite3_column_text(stmt, 0);

	(void)snprintf(buf, sizeof(buf), "%s", s ? (const char *)s : "");
	sqlite3_finalize(stmt);
	return buf;
}

const char *t_json_text(sqlite3 *db, const char *json, const char *path)
{
	static char buf[1024];
	sqlite3_stmt *stmt = sql_row(db, "SELECT json_extract(?1, ?2)", json);
	const unsigned char *s;

	(void)sqlite3_reset(stmt);
	(void)sqlite3_bind_text(stmt, 2, path, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_ROW)
		FAIL("json_extract %s: %s", path, sqlite3_errmsg(db));
	s = sqlite3_column_text(stmt, 0);
	(void)snprintf(buf, sizeof(buf), "%s", s ? (const char *)s : "");
	sqlite3_finalize(stmt);
	return s != NULL ? buf : NULL;
}

void t_check_nulls(sqlite3 *db, const char *id, bool bare)
{
	static const char *const columns[] = {
		"id", "event", "source", "host", "uid", "user", "boot_id",
		"pid", "supervisor_pid", "supervisor_start", "argv", "display",
		"cwd", "tag", "start_ns", "end_ns", "duration_ns", "exit_code",
		"signal", "core_dumped", "result", "user_cpu_ns", "sys_cpu_ns",
		"max_rss_kb", "minor_faults", "major_faults", "in_blocks",
		"out_blocks", "vol_ctxsw", "invol_ctxsw", "stdout_path",
		"stderr_path", "message", "options", "recorded_ns", "time_ns",
	};
	/* Known for the bare event; unknown for the full one. */
	static const char *const bare_known = " id event recorded_ns time_ns ";
	static const char *const full_unknown = " signal ";

	for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
		char *sql = t_printf("SELECT typeof(%s) FROM events WHERE id = ?1",
				     columns[i]);
		char *word = t_printf(" %s ", columns[i]);
		bool want_null = bare ? strstr(bare_known, word) == NULL
				      : strstr(full_unknown, word) != NULL;
		sqlite3_stmt *stmt = sql_row(db, sql, id);
		const char *type = (const char *)sqlite3_column_text(stmt, 0);

		if ((strcmp(type, "null") == 0) != want_null)
			FAIL("column %s is %s", columns[i], type);
		sqlite3_finalize(stmt);
		free(sql);
		free(word);
	}
}

static char *dup_or_null(const char *s)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		FAIL("out of memory");
	return d;
}

int t_collect(void *data, const struct bgrun_event_row *row)
{
	struct t_rows *rows = data;
	struct bgrun_event *ev;
	size_t i = rows->n++;
	char **argv = NULL;

	if (rows->stop_at > 0 && rows->n == (size_t)rows->stop_at)
		return 7;
	if (i >= T_MAX_ROWS)
		return 0;
	ev = &rows->ev[i];
	*ev = row->ev;
#define DUP_S(n) ev->n = dup_or_null(ev->n);
	DUP_S(event) DUP_S(source) DUP_S(host) DUP_S(user) DUP_S(boot_id)
	DUP_S(display) DUP_S(cwd) DUP_S(tag) DUP_S(result) DUP_S(stdout_path)
	DUP_S(stderr_path) DUP_S(message) DUP_S(options_json)
#undef DUP_S
	if (row->ev.argv != NULL) {
		argv = calloc(row->argc + 1, sizeof(*argv));
		ASSERT(argv != NULL);
		for (size_t k = 0; k < row->argc; k++)
			argv[k] = dup_or_null(row->ev.argv[k]);
		ASSERT(row->ev.argv[row->argc] == NULL);
	}
	ev->argv = (const char *const *)argv;
	rows->argc[i] = row->argc;
	rows->stored_result[i] = dup_or_null(row->stored_result);
	rows->json[i] = dup_or_null(row->json);
	rows->recorded_ns[i] = row->recorded_ns;
	rows->time_ns[i] = row->time_ns;
	return 0;
}

void t_rows_free(struct t_rows *rows)
{
	for (size_t i = 0; i < rows->n && i < T_MAX_ROWS; i++) {
		struct bgrun_event *ev = &rows->ev[i];

#define FREE_S(n) free((char *)ev->n);
		FREE_S(event) FREE_S(source) FREE_S(host) FREE_S(user)
		FREE_S(boot_id) FREE_S(display) FREE_S(cwd) FREE_S(tag)
		FREE_S(result) FREE_S(stdout_path) FREE_S(stderr_path)
		FREE_S(message) FREE_S(options_json)
#undef FREE_S
		for (size_t k = 0; ev->argv != NULL && ev->argv[k]; k++)
			free((char *)ev->argv[k]);
		free((void *)ev->argv);
		free(rows->stored_result[i]);
		free(rows->json[i]);
	}
	rows->n = 0;
	rows->stop_at = 0;
}

void t_get(struct bgrun_store *s, const char *id, struct t_rows *rows)
{
	int r;

	t_rows_free(rows);
	r = bgrun_store_get(s, id, t_collect, rows);
	if (r < 0)
		FAIL("bgrun_store_get %s: %s (%s)", id, bgrun_strerror(r),
		     bgrun_store_errmsg(s));
	ASSERT_EQ(rows->n, 1);
}

void check_argv(const char *const *a, const char *const *b)
{
	size_t i;

	if (a == NULL || b == NULL) {
		ASSERT(a == b);
		return;
	}
	for (i = 0; a[i] != NULL && b[i] != NULL; i++)
		ASSERT_STR_EQ(a[i], b[i]);
	ASSERT(a[i] == NULL && b[i] == NULL);
}

void t_spawn_exited(pid_t *ret_pid, int64_t *ret_start,
		    struct bgrun_status *ret_status)
{
	const char *argv[] = { t_self(), "exit", NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	int r;

	opts.argv = argv;
	r = bgrun_spawn(&opts, &child);
	ASSERT_OK(r);
	/* Running or a zombie until reaped: /proc/PID/stat is there. */
	*ret_start = bgrun_proc_starttime(r);
	ASSERT(*ret_start != BGRUN_NULL);
	ASSERT_OK(bgrun_child_wait(child, 10000, ret_status));
	ASSERT(ret_status->exited && ret_status->exit_code == 0);
	bgrun_child_free(child);
	*ret_pid = r;
}

/*
 * `store-tests writer DB N`: waits for stdin to reach EOF (the start
 * signal), then opens DB and writes N events one transaction each.
 */
static int writer_main(const char *db, int n)
{
	struct bgrun_store *s;
	struct bgrun_event ev;
	char c;
	int r;

	for (;;) {
		ssize_t k = read(0, &c, 1);

		if (k == 0 || (k < 0 && errno != EINTR))
			break;
	}
	r = t_open(db, 0, &s);
	if (r < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		bgrun_event_init(&ev, "commandfinish", "writer");
		ev.supervisor_pid = getpid();
		ev.message = "concurrent";
		r = bgrun_store_put(s, &ev);
		if (r != 1) {
			fprintf(stderr, "writer %d: put %d: %s (%s)\n",
				(int)getpid(), i, bgrun_strerror(r),
				bgrun_store_errmsg(s));
			bgrun_store_close(s);
			return 1;
		}
	}
	bgrun_store_close(s);
	return 0;
}

/*
 * `store-tests put DB ID`: opens DB, says so with a byte on stdout, waits
 * for stdin to reach EOF, then writes one event named ID: 0 if the put
 * returned 1 (the row is new), else 1.
 */
static int put_main(const char *db, const char *id)
{
	struct bgrun_store *s;
	struct bgrun_event ev;
	char c;
	int r;

	if (t_open(db, 0, &s) < 0)
		return 1;
	if (write(1, "o", 1) != 1)
		return 1;
	for (;;) {
		ssize_t k = read(0, &c, 1);

		if (k == 0 || (k < 0 && errno != EINTR))
			break;
	}
	bgrun_event_init(&ev, "commandfinish", "put");
	(void)snprintf(ev.id, sizeof(ev.id), "%s", id);
	ev.supervisor_pid = getpid();
	r = bgrun_store_put(s, &ev);
	if (r != 1)
		fprintf(stderr, "put %s: %s (%s)\n", id, bgrun_strerror(r),
			bgrun_store_errmsg(s));
	bgrun_store_close(s);
	return r == 1 ? 0 : 1;
}

static void before_case(void)
{
	(void)atexit(cleanup);
}

int t_main(int argc, char **argv, const struct t_case *cases, size_t n)
{
	static const char usage[] =
		"usage: store-tests CASE | --list | writer DB N | put DB ID | exit | "
		"wait";

	if (argc >= 2 && strcmp(argv[1], "exit") == 0)
		return 0;
	if (argc == 2 && strcmp(argv[1], "wait") == 0) {
		/* Lives until its stdin reaches EOF. */
		char c;

		while (read(0, &c, 1) > 0 || errno == EINTR)
			;
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "writer") == 0)
		return writer_main(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "put") == 0)
		return put_main(argv[2], argv[3]);
	if (argc > 2) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	return t_cases_main("store-tests", usage, cases, n, argc, argv,
			    before_case);
}
