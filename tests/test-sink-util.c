/* SPDX-License-Identifier: MIT */
/* test-sink-util.c: sink-tests' runner and helpers: temporary dirs, daemons, raw frames, row counts. */

#include "test-sink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

const char *t_logsink;
static char *tmpdirs[8];
static int n_tmpdirs;
static pid_t main_pid;
/* Every path t_path made lives until exit: callers keep them freely. */
static char *paths[256];
static int n_paths;
/* Daemons still running, killed at exit if a case fails before it stops them. */
static pid_t daemons[32];

static void cleanup(void)
{
	/* Only the runner cleans up, not a child that exits. */
	if (getpid() != main_pid)
		return;
	for (int i = 0; i < 32; i++)
		if (daemons[i] > 0)
			(void)kill(daemons[i], SIGKILL);
	for (int i = 0; i < n_tmpdirs; i++) {
		t_rmtree(tmpdirs[i]);
		free(tmpdirs[i]);
	}
	n_tmpdirs = 0;
	for (int i = 0; i < n_paths; i++)
		free(paths[i]);
	n_paths = 0;
}

const char *t_tmpdir(void)
{
	char *dir = strdup("/tmp/sinkt.XXXXXX");

	if (dir == NULL || mkdtemp(dir) == NULL || n_tmpdirs == 8)
		FAIL("mkdtemp: %m");
	tmpdirs[n_tmpdirs++] = dir;
	return dir;
}

const char *t_path(const char *dir, const char *name)
{
	char *p;

	if (n_paths == 256 || asprintf(&p, "%s/%s", dir, name) < 0)
		FAIL("t_path: out of room");
	paths[n_paths++] = p;
	return p;
}

int64_t t_now_ms(void)
{
	return bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) / 1000000;
}

void t_track(pid_t pid)
{
	for (int i = 0; i < 32; i++) {
		if (daemons[i] == 0) {
			daemons[i] = pid;
			return;
		}
	}
}

bool t_pid_alive(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	bool alive;

	if (kill(pid, 0) < 0)
		return false;
	/* A zombie nobody reaps yet (not our child) is gone too. */
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	alive = fgets(buf, sizeof(buf), f) != NULL &&
		(p = strrchr(buf, ')')) != NULL && p[1] == ' ' && p[2] != 'Z' &&
		p[2] != 'X';
	(void)fclose(f);
	return alive;
}

void t_untrack(pid_t pid)
{
	for (int i = 0; i < 32; i++)
		if (daemons[i] == pid)
			daemons[i] = 0;
}

/* Spawns the daemon; *ret_line gets its READY/ERROR line. */
static int spawn_daemon(struct t_daemon *d, const char *db, const char *sock,
			const char *const *args, char *line, size_t size)
{
	const char *argv[32];
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	size_t n = 0, used = 0;
	int p[2], r;

	memset(d, 0, sizeof(*d));
	(void)snprintf(d->db, sizeof(d->db), "%s", db);
	(void)snprintf(d->sock, sizeof(d->sock), "%s", sock);
	(void)snprintf(d->log, sizeof(d->log), "%s.log", db);
	argv[n++] = t_logsink;
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n++] = "serve";
	argv[n++] = "--socket";
	argv[n++] = sock;
	argv[n++] = "--ready-fd=3";
	for (size_t i = 0; args != NULL && args[i] != NULL && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		FAIL("pipe: %m");
	o.argv = argv;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	o.err = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = d->log,
				      .append = true };
	r = bgrun_spawn(&o, &d->child);
	(void)close(p[1]);
	if (r < 0)
		FAIL("cannot start %s: %s", t_logsink, bgrun_strerror(r));
	d->pid = r;
	t_track(r);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t k;

		if (poll(&pf, 1, 30000) <= 0)
			FAIL("the daemon said nothing within 30 s");
		k = read(p[0], line + used, size - 1 - used);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		used += (size_t)k;
	}
	(void)close(p[0]);
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return strncmp(line, "READY ", 6) == 0 ? 0 : -1;
}

void t_daemon_start(struct t_daemon *d, const char *db, const char *sock,
		    const char *const *args)
{
	char line[1100];

	if (spawn_daemon(d, db, sock, args, line, sizeof(line)) < 0)
		FAIL("the daemon did not start: %s", line);
}

int t_daemon_refused(const char *db, const char *sock, const char *const *args,
		     char *msg, size_t size)
{
	struct t_daemon d;
	char line[1100];
	int code;

	if (spawn_daemon(&d, db, sock, args, line, sizeof(line)) == 0)
		FAIL("the daemon started, but it should have refused");
	if (strncmp(line, "ERROR ", 6) != 0)
		FAIL("no ERROR line from the daemon: '%s'", line);
	(void)snprintf(msg, size, "%s", line + 6);
	code = t_daemon_stop(&d, 0);
	return code;
}

int t_daemon_stop(struct t_daemon *d, int sig)
{
	struct bgrun_status st;

	if (sig != 0)
		(void)bgrun_child_kill(d->child, sig);
	if (bgrun_child_wait(d->child, 60000, &st) < 0)
		FAIL("the daemon did not exit within 60 s");
	t_untrack(d->pid);
	bgrun_child_free(d->child);
	d->child = NULL;
	return st.exited ? st.exit_code : 128 + st.signal;
}

int t_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		FAIL("connect %s: %m", sock);
	return fd;
}

void t_send(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			FAIL("send: %m");
		p += n;
		len -= (size_t)n;
	}
}

int t_read_frame(int fd, int timeout_ms, struct bgrun_wire_msg *m)
{
	uint8_t buf[BGRUN_WIRE_HEADER + 2048];
	size_t used = 0, size = 0;
	int64_t deadline = t_now_ms() + timeout_ms;

	/* Byte by byte past the header's length: never read into the next frame. */
	for (;;) {
		size_t want = used < 4 ? 4 - used : size - used;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r;

		if (used >= 4) {
			r = bgrun_wire_frame_size(buf, used, sizeof(buf) - 4, &size);
			if (r < 0)
				FAIL("bad frame from the daemon");
			if (r == 1)
				break;
			want = size - used;
		}
		if (poll(&pf, 1, (int)(deadline - t_now_ms())) <= 0)
			FAIL("no frame within %d ms", timeout_ms);
		n = recv(fd, buf + used, want, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNRESET)
			return 0;
		if (n < 0)
			FAIL("recv: %m");
		if (n == 0) {
			if (used > 0)
				FAIL("EOF inside a frame");
			return 0;
		}
		used += (size_t)n;
	}
	if (bgrun_wire_decode(buf, size, m, NULL) < 0)
		FAIL("undecodable frame from the daemon");
	return 1;
}

void t_event(struct bgrun_event *ev, int64_t i)
{
	static const char *const argv[] = { "hg", "commit", "-m", "a message", NULL };

	bgrun_event_init(ev, "commandfinish", "test");
	ev->argv = argv;
	ev->exit_code = i;
	ev->result = i == 0 ? BGRUN_RESULT_SUCCESS : BGRUN_RESULT_FAILED;
	ev->duration_ns = 1000 + i;
}

int64_t t_db_int(const char *db, const char *sql)
{
	sqlite3 *conn = NULL;
	sqlite3_stmt *stmt = NULL;
	int64_t v = -1;

	if (sqlite3_open_v2(db, &conn, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(conn, 10000);
		if (sqlite3_prepare_v2(conn, sql, -1, &stmt, NULL) == SQLITE_OK &&
		    sqlite3_step(stmt) == SQLITE_ROW)
			v = sqlite3_column_int64(stmt, 0);
	}
	(void)sqlite3_finalize(stmt);
	(void)sqlite3_close(conn);
	return v;
}

int64_t t_db_wait(const char *db, const char *sql, int64_t want, int timeout_ms)
{
	int64_t deadline = t_now_ms() + timeout_ms, v;

	/* Polling a condition with a deadline: never a fixed sleep. */
	while ((v = t_db_int(db, sql)) != want && t_now_ms() < deadline)
		(void)poll(NULL, 0, 20);
	return v;
}

bool t_db_has(const char *db, const char *id)
{
	char sql[128];

	(void)snprintf(sql, sizeof(sql),
		       "SELECT count(*) FROM events WHERE id = '%s'", id);
	return t_db_int(db, sql) == 1;
}

size_t t_db_present(const char *db, const char (*ids)[BGRUN_EVENT_ID_MAX + 1],
		    size_t n)
{
	sqlite3 *conn = NULL;
	sqlite3_stmt *stmt = NULL;
	size_t found = 0;

	if (sqlite3_open_v2(db, &conn, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(conn, 10000) != SQLITE_OK ||
	    sqlite3_prepare_v2(conn, "SELECT count(*) FROM events WHERE id = ?",
			       -1, &stmt, NULL) != SQLITE_OK)
		FAIL("%s: %s", db, sqlite3_errmsg(conn));
	for (size_t i = 0; i < n; i++) {
		(void)sqlite3_bind_text(stmt, 1, ids[i], -1, SQLITE_STATIC);
		if (sqlite3_step(stmt) == SQLITE_ROW &&
		    sqlite3_column_int64(stmt, 0) == 1)
			found++;
		(void)sqlite3_reset(stmt);
	}
	(void)sqlite3_finalize(stmt);
	(void)sqlite3_close(conn);
	return found;
}

int t_wait_files(const char *dir, const char *suffix, int want, int timeout_ms)
{
	int64_t deadline = t_now_ms() + timeout_ms;
	int n;

	while ((n = t_count_files(dir, suffix)) != want && t_now_ms() < deadline)
		(void)poll(NULL, 0, 20);
	return n;
}

int t_count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), k = strlen(suffix);

		if (e->d_name[0] != '.' && len > k &&
		    strcmp(e->d_name + len - k, suffix) == 0)
			n++;
	}
	(void)closedir(d);
	return n;
}

#define UNIT(name)
#define STORE(name)
#define SINK(name) { #name, case_##name },
static const struct t_case cases[] = {
#include "cases.def"
};
#undef UNIT
#undef STORE
#undef SINK

int main(int argc, char **argv)
{
	static const char usage[] = "usage: sink-tests CASE LOGSINK | --list";

	main_pid = getpid();
	(void)atexit(cleanup);
	(void)signal(SIGPIPE, SIG_IGN);
	if (argc == 2 && strcmp(argv[1], "--list") != 0) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	t_logsink = argc >= 3 ? argv[2] : NULL;
	/* The environment must not steer the sink under test. */
	(void)unsetenv("BGRUN_SINK");
	(void)unsetenv("BGRUN_SOCKET");
	(void)unsetenv("BGRUN_DB");
	return t_cases_main("sink-tests", usage, cases,
			    sizeof(cases) / sizeof(cases[0]), argc, argv, NULL);
}
