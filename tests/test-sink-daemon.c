/* SPDX-License-Identifier: MIT */
/* test-sink-daemon.c: `logsink serve` seen from its socket: bad frames, peers, socket rules, limits. */

#include "test-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void send_event(int fd, uint32_t seq, struct bgrun_event *ev)
{
	struct bgrun_wire_buf b = { 0 };

	ASSERT(bgrun_wire_put_event(&b, seq, ev) > 0);
	t_send(fd, b.data, b.len);
	bgrun_wire_buf_free(&b);
}

/* Reads one frame and expects its type, seq and (for ERROR) code. */
static void expect(int fd, unsigned type, uint32_t seq, int64_t code)
{
	struct bgrun_wire_msg m;

	if (t_read_frame(fd, 10000, &m) == 0)
		FAIL("EOF instead of a frame of type %u", type);
	if (m.type != type || m.seq != seq ||
	    (type == BGRUN_WIRE_ERROR && m.code != code))
		FAIL("got type %u seq %u code %lld, expected type %u seq %u code %lld",
		     m.type, m.seq, (long long)m.code, type, seq, (long long)code);
	if (type == BGRUN_WIRE_ACK)
		ASSERT_EQ(m.status, 0);
	bgrun_wire_msg_release(&m);
}

/* A refusal from the length field: the seq is known only if it was read too. */
static void expect_too_large(int fd, uint32_t seq)
{
	struct bgrun_wire_msg m;

	if (t_read_frame(fd, 10000, &m) == 0)
		FAIL("EOF instead of an error");
	if (m.type != BGRUN_WIRE_ERROR || m.code != BGRUN_WIRE_E_TOO_LARGE ||
	    (m.seq != seq && m.seq != 0))
		FAIL("got type %u seq %u code %lld, expected too_large",
		     m.type, m.seq, (long long)m.code);
	bgrun_wire_msg_release(&m);
}

static void expect_eof(int fd)
{
	struct bgrun_wire_msg m;

	if (t_read_frame(fd, 10000, &m) != 0)
		FAIL("a frame of type %u instead of EOF", m.type);
}

static void hello(int fd)
{
	struct bgrun_wire_buf b = { 0 };

	ASSERT(bgrun_wire_put_hello(&b, 0, &(struct bgrun_wire_hello){
		1, BGRUN_NULL, BGRUN_NULL, NULL, BGRUN_NULL, BGRUN_NULL }) > 0);
	t_send(fd, b.data, b.len);
	bgrun_wire_buf_free(&b);
	expect(fd, BGRUN_WIRE_HELLO, 0, 0);
}

void case_daemon_bad_frames(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_event ev[6];
	struct t_daemon d;
	int good, bad;

	t_daemon_start(&d, db, sock, NULL);
	good = t_connect(sock);
	t_event(&ev[0], 0);
	send_event(good, 1, &ev[0]);
	expect(good, BGRUN_WIRE_ACK, 1, 0);

	/* Oversized: refused from the length field, then closed. */
	bad = t_connect(sock);
	t_send(bad, "\x7f\xff\xff\xff\x01\x02\x00\x00\x00\x09", 10);
	expect_too_large(bad, 9);
	expect_eof(bad);
	(void)close(bad);

	/* Garbage that happens to have a small length. */
	bad = t_connect(sock);
	t_send(bad, "\x00\x00\x00\x0a\x01\x02\x00\x00\x00\x05\xff\xff\x00\x00", 14);
	expect(bad, BGRUN_WIRE_ERROR, 5, BGRUN_WIRE_E_MALFORMED);
	expect_eof(bad);
	(void)close(bad);

	/* Text from another protocol. */
	bad = t_connect(sock);
	t_send(bad, "GET / HTTP/1.0\r\n\r\n", 18);
	expect_too_large(bad, 0x48545450); /* "HTTP" */
	expect_eof(bad);
	(void)close(bad);

	/* Another version; a frame type the daemon does not take. */
	bad = t_connect(sock);
	t_send(bad, "\x00\x00\x00\x06\x02\x02\x00\x00\x00\x03", 10);
	expect(bad, BGRUN_WIRE_ERROR, 3, BGRUN_WIRE_E_VERSION);
	expect_eof(bad);
	(void)close(bad);
	bad = t_connect(sock);
	{
		struct bgrun_wire_buf b = { 0 };

		ASSERT(bgrun_wire_put_ack(&b, 4, 0) > 0);
		t_send(bad, b.data, b.len);
		bgrun_wire_buf_free(&b);
	}
	expect(bad, BGRUN_WIRE_ERROR, 4, BGRUN_WIRE_E_UNEXPECTED);
	expect_eof(bad);
	(void)close(bad);

	/* A valid event, then a malformed frame in the same write: the event
	 * is still committed and acked, then the error, then EOF. */
	{
		struct bgrun_wire_buf b = { 0 };
		struct bgrun_wire_msg m;
		bool acked = false, erred = false;
		uint8_t all[4096];

		t_event(&ev[1], 1);
		ASSERT(bgrun_wire_put_event(&b, 11, &ev[1]) > 0);
		/* Frame 12: a field header cut short. */
		ASSERT(b.len + 14 <= sizeof(all));
		memcpy(all, b.data, b.len);
		memcpy(all + b.len, "\x00\x00\x00\x0a\x01\x02\x00\x00\x00\x0c"
		       "\x00\x01\x00\x00", 14);
		bad = t_connect(sock);
		t_send(bad, all, b.len + 14);
		bgrun_wire_buf_free(&b);
		while (t_read_frame(bad, 10000, &m) == 1) {
			if (m.type == BGRUN_WIRE_ACK && m.seq == 11)
				acked = true;
			else if (m.type == BGRUN_WIRE_ERROR && m.seq == 12 &&
				 m.code == BGRUN_WIRE_E_MALFORMED)
				erred = true;
			else
				FAIL("unexpected frame type %u seq %u", m.type, m.seq);
			bgrun_wire_msg_release(&m);
		}
		ASSERT(acked && erred);
		(void)close(bad);
		ASSERT(t_db_has(db, ev[1].id));
	}

	/* Truncated: half a frame, then the client stops sending. */
	bad = t_connect(sock);
	t_send(bad, "\x00\x00\x01\x00\x01\x02\x00\x00\x00\x07\x00\x01", 12);
	(void)shutdown(bad, SHUT_WR);
	expect_eof(bad);
	(void)close(bad);

	/* The first client was served all along. */
	t_event(&ev[2], 2);
	send_event(good, 2, &ev[2]);
	expect(good, BGRUN_WIRE_ACK, 2, 0);
	hello(good);

	/*
	 * An event the store refuses (well-formed, but core_dumped is 7) is
	 * answered with its own error and the reason, in its turn (answers
	 * keep the order of arrival); the connection stays, and the events
	 * around it in the same write are stored.
	 */
	{
		struct bgrun_wire_buf b = { 0 };
		struct bgrun_wire_msg m;

		t_event(&ev[3], 3);
		t_event(&ev[4], 4);
		ev[4].core_dumped = 7;
		t_event(&ev[5], 5);
		ASSERT(bgrun_wire_put_event(&b, 20, &ev[3]) > 0);
		ASSERT(bgrun_wire_put_event(&b, 21, &ev[4]) > 0);
		ASSERT(bgrun_wire_put_event(&b, 22, &ev[5]) > 0);
		t_send(good, b.data, b.len);
		bgrun_wire_buf_free(&b);
		expect(good, BGRUN_WIRE_ACK, 20, 0);
		if (t_read_frame(good, 10000, &m) == 0)
			FAIL("EOF instead of the error of seq 21");
		if (m.type != BGRUN_WIRE_ERROR || m.seq != 21 ||
		    m.code != BGRUN_WIRE_E_INVALID || m.text == NULL ||
		    strstr(m.text, "core_dumped") == NULL)
			FAIL("got type %u seq %u code %lld (%s), expected the "
			     "refusal of seq 21", m.type, m.seq,
			     (long long)m.code, m.text ? m.text : "");
		bgrun_wire_msg_release(&m);
		expect(good, BGRUN_WIRE_ACK, 22, 0);
		ASSERT(t_db_has(db, ev[3].id) && t_db_has(db, ev[5].id));
		ASSERT(!t_db_has(db, ev[4].id));
		hello(good);
	}
	(void)close(good);
	ASSERT(t_db_has(db, ev[0].id) && t_db_has(db, ev[2].id));
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 5);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}

void case_daemon_other_uid(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_event ev;
	struct t_daemon d;
	int status, fd;
	pid_t pid;

	if (geteuid() != 0)
		SKIP("needs root, to connect as another uid");
	t_daemon_start(&d, db, sock, NULL);
	/* Let uid 65534 reach the socket: the daemon must refuse by itself. */
	if (chmod(dir, 0755) < 0 || chmod(t_path(dir, "s"), 0755) < 0 ||
	    chmod(sock, 0666) < 0)
		FAIL("chmod: %m");
	t_event(&ev, 0);
	ev.uid = 65534;
	pid = fork();
	if (pid < 0)
		FAIL("fork: %m");
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		struct bgrun_wire_buf b = { 0 };

		fd = t_connect(sock);
		expect(fd, BGRUN_WIRE_ERROR, 0, BGRUN_WIRE_E_DENIED);
		expect_eof(fd);
		/* Sending anyway changes nothing (it may fail: closed). */
		if (bgrun_wire_put_event(&b, 1, &ev) > 0)
			(void)send(fd, b.data, b.len, MSG_NOSIGNAL);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		FAIL("the child as uid 65534 did not exit");
	if (WEXITSTATUS(status) == 3)
		FAIL("setuid(65534): %m");
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 0);
	/* Our own uid is served; the uid recorded is the kernel's. */
	fd = t_connect(sock);
	send_event(fd, 1, &ev);
	expect(fd, BGRUN_WIRE_ACK, 1, 0);
	(void)close(fd);
	ASSERT_EQ(t_db_int(db, "SELECT uid FROM events"), 0);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}

void case_daemon_activation(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "act.sock");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { "/bin/sh", "-c",
			       "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" --db \"$1\" "
			       "serve --ready-fd=4",
			       t_logsink, db, NULL };
	struct t_daemon d = { 0 };
	struct bgrun_event ev;
	struct stat st;
	char line[256];
	ssize_t n;
	int lfd, p[2], fds[2], fd;

	/* What systemd does: the socket made and listening before we run. */
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 16) < 0 || pipe2(p, O_CLOEXEC) < 0)
		FAIL("listen: %m");
	fds[0] = lfd;
	fds[1] = p[1];
	o.argv = argv;
	o.pass_fds = fds; /* as 3 and 4 */
	o.n_pass_fds = 2;
	o.err = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE,
				      .path = t_path(dir, "log") };
	d.pid = bgrun_spawn(&o, &d.child);
	ASSERT_OK(d.pid);
	t_track(d.pid);
	(void)close(p[1]);
	(void)close(lfd);
	n = read(p[0], line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = '\0';
	(void)close(p[0]);
	if (strncmp(line, "READY", 5) != 0)
		FAIL("no READY from the activated daemon: '%s'", line);
	fd = t_connect(sock);
	t_event(&ev, 0);
	send_event(fd, 77, &ev);
	expect(fd, BGRUN_WIRE_ACK, 77, 0);
	(void)close(fd);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	ASSERT(t_db_has(db, ev.id));
	/* systemd's socket: left in place. */
	ASSERT(lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
}

static void bind_only(const char *path, bool do_listen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		FAIL("bind %s: %m", path);
	if (do_listen) {
		if (listen(fd, 4) < 0)
			FAIL("listen: %m");
		return; /* kept open (and listening) until the case ends */
	}
	(void)close(fd);
}

void case_daemon_socket_rules(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	char longpath[200], msg[1100], *path;
	struct t_daemon d, d2;
	struct stat st;
	int fd;

	/* Too long for sun_path: refused, never truncated. */
	(void)snprintf(longpath, sizeof(longpath), "%s/%0120d.sock", dir, 0);
	ASSERT_EQ(t_daemon_refused(db, longpath, NULL, msg, sizeof(msg)), 1);
	ASSERT(strstr(msg, "too long") != NULL);
	(void)setenv("BGRUN_SOCKET", longpath, 1);
	ASSERT_EQ(bgrun_sink_default_socket(&path), -ENAMETOOLONG);
	(void)unsetenv("BGRUN_SOCKET");

	/*
	 * Without $XDG_RUNTIME_DIR: root's socket is in /run, where no one
	 * else can make its directory first; another user's in /tmp.
	 */
	{
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		char *saved = xdg != NULL ? strdup(xdg) : NULL, want[64];

		(void)unsetenv("XDG_RUNTIME_DIR");
		if (getuid() == 0)
			(void)snprintf(want, sizeof(want), "/run/bgrun/sink.sock");
		else
			(void)snprintf(want, sizeof(want), "/tmp/bgrun-%u/sink.sock",
				       (unsigned)getuid());
		ASSERT_OK(bgrun_sink_default_socket(&path));
		if (strcmp(path, want) != 0)
			FAIL("default socket %s, want %s", path, want);
		free(path);
		if (saved != NULL)
			(void)setenv("XDG_RUNTIME_DIR", saved, 1);
		free(saved);
	}

	/* A stale socket (nobody listens) is replaced. */
	if (mkdir(t_path(dir, "s"), 0700) < 0)
		FAIL("mkdir: %m");
	bind_only(sock, false);
	t_daemon_start(&d, db, sock, NULL);
	ASSERT(stat(t_path(dir, "s"), &st) == 0 && (st.st_mode & 0777) == 0700);
	ASSERT(lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       (st.st_mode & 0777) == 0600);

	/* A second daemon on the same socket refuses, and says who serves. */
	ASSERT_EQ(t_daemon_refused(t_path(dir, "other.db"), sock, NULL, msg,
				   sizeof(msg)), 1);
	ASSERT(strstr(msg, "already serving") != NULL);
	{
		char pid[32];

		(void)snprintf(pid, sizeof(pid), "pid %d", (int)d.pid);
		if (strstr(msg, pid) == NULL)
			FAIL("'%s' does not name %s", msg, pid);
	}
	fd = t_connect(sock); /* the first one still serves */
	hello(fd);
	(void)close(fd);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	ASSERT(lstat(sock, &st) < 0 && errno == ENOENT); /* removed at exit */

	/* Not a socket; a directory open to others; someone else listening. */
	fd = open(sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	(void)close(fd);
	ASSERT_EQ(t_daemon_refused(db, sock, NULL, msg, sizeof(msg)), 1);
	ASSERT(strstr(msg, "not a socket") != NULL);
	(void)unlink(sock);
	if (mkdir(t_path(dir, "open"), 0755) < 0 || chmod(t_path(dir, "open"), 0755) < 0)
		FAIL("mkdir: %m");
	ASSERT_EQ(t_daemon_refused(db, t_path(dir, "open/sink.sock"), NULL, msg,
				   sizeof(msg)), 1);
	ASSERT(strstr(msg, "0700") != NULL);
	/* And it says what to do. */
	ASSERT(strstr(msg, ": chmod 0700 it, or set BGRUN_SOCKET or XDG_RUNTIME_DIR elsewhere") != NULL);
	bind_only(sock, true);
	ASSERT_EQ(t_daemon_refused(db, sock, NULL, msg, sizeof(msg)), 1);
	ASSERT(strstr(msg, "already listens") != NULL);

	/*
	 * A new directory is made 0700; its parents only below
	 * $XDG_RUNTIME_DIR: a mistyped path leaves no tree behind.
	 */
	ASSERT_EQ(t_daemon_refused(db, t_path(dir, "new/deeper/sink.sock"),
				   NULL, msg, sizeof(msg)), 1);
	ASSERT(strstr(msg, "its parent directory does not exist") != NULL);
	ASSERT(stat(t_path(dir, "new"), &st) < 0 && errno == ENOENT);
	t_daemon_start(&d2, db, t_path(dir, "new/sink.sock"), NULL);
	ASSERT(stat(t_path(dir, "new"), &st) == 0 &&
	       (st.st_mode & 0777) == 0700);
	ASSERT_EQ(t_daemon_stop(&d2, SIGINT), 0);
	if (mkdir(t_path(dir, "rt"), 0700) < 0)
		FAIL("mkdir: %m");
	(void)setenv("XDG_RUNTIME_DIR", t_path(dir, "rt"), 1);
	t_daemon_start(&d2, db, t_path(dir, "rt/a/b/sink.sock"), NULL);
	ASSERT(stat(t_path(dir, "rt/a/b"), &st) == 0 &&
	       (st.st_mode & 0777) == 0700);
	ASSERT_EQ(t_daemon_stop(&d2, SIGINT), 0);
	(void)unsetenv("XDG_RUNTIME_DIR");
}

void case_daemon_status(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "sink.sock");
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink_daemon_status st;
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	struct t_daemon d;
	char real[PATH_MAX];
	int64_t before = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);

	so.mode = BGRUN_SINK_DAEMON;
	so.db = db;
	so.socket = sock;
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &so));
	/* Nobody serves yet: said, and st untouched. */
	st.pid = 12345;
	ASSERT_EQ(bgrun_sink_daemon_status(sink, &st), -ENOENT);
	ASSERT_EQ(st.pid, 12345);
	t_daemon_start(&d, db, sock, NULL);
	ASSERT_OK(bgrun_sink_daemon_status(sink, &st));
	ASSERT_EQ(st.pid, d.pid);
	ASSERT_EQ(st.events, 0);
	ASSERT_EQ(st.queued, 0);
	ASSERT(st.started_ns >= before - 1000000000 &&
	       st.started_ns <= bgrun_clock_ns(BGRUN_CLOCK_REALTIME));
	ASSERT(realpath(db, real) != NULL);
	ASSERT_STR_EQ(st.db, real);
	for (int i = 0; i < 3; i++) {
		bgrun_event_init(&ev, "exthook", "test");
		ASSERT_EQ(bgrun_sink_put(sink, &ev), BGRUN_SINK_VIA_DAEMON);
	}
	/* Acked means committed: counted by the time the put returned. */
	ASSERT_OK(bgrun_sink_daemon_status(sink, &st));
	ASSERT_EQ(st.events, 3);
	ASSERT_EQ(st.queued, 0);
	bgrun_sink_close(sink);
	/* Another database's sink: the daemon is not its. */
	so.db = t_path(dir, "other.db");
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &so));
	ASSERT(close(open(so.db, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) == 0);
	ASSERT_EQ(bgrun_sink_daemon_status(sink, &st), -EXDEV);
	bgrun_sink_close(sink);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}

void case_daemon_limits(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *args[] = { "--max-connections=2", "--idle-timeout=300ms", NULL };
	int64_t start;
	struct t_daemon d;
	int a, b, c;

	t_daemon_start(&d, db, sock, args);
	a = t_connect(sock);
	hello(a);
	b = t_connect(sock);
	hello(b);
	c = t_connect(sock);
	expect(c, BGRUN_WIRE_ERROR, 0, BGRUN_WIRE_E_BUSY);
	expect_eof(c);
	(void)close(c);
	/* Silent connections are closed after the idle time. */
	start = t_now_ms();
	expect_eof(a);
	expect_eof(b);
	ASSERT(t_now_ms() - start < 5000);
	(void)close(a);
	(void)close(b);
	c = t_connect(sock); /* room again */
	hello(c);
	(void)close(c);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);

	/* --exit-idle: nobody comes, so it leaves by itself, cleanly. */
	{
		const char *idle[] = { "--exit-idle=300ms", NULL };

		t_daemon_start(&d, db, sock, idle);
		start = t_now_ms();
		ASSERT_EQ(t_daemon_stop(&d, 0), 0);
		ASSERT(t_now_ms() - start < 10000);
		ASSERT(access(sock, F_OK) < 0);
	}
}

struct flood {
	const char *db, *sock;
	int n, result;
};

static void *flood_main(void *arg)
{
	struct flood *f = arg;
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_event *evs = calloc((size_t)f->n, sizeof(*evs));
	struct bgrun_sink *sink = NULL;

	o.mode = BGRUN_SINK_DAEMON;
	o.db = f->db;
	o.socket = f->sock;
	for (int i = 0; i < f->n; i++)
		t_event(&evs[i], i);
	f->result = evs != NULL ? bgrun_sink_new(&sink) : -ENOMEM;
	if (f->result >= 0)
		f->result = bgrun_sink_open(sink, &o);
	if (f->result >= 0)
		f->result = bgrun_sink_put_batch(sink, evs, (size_t)f->n);
	if (f->result < 0 && sink != NULL)
		fprintf(stderr, "flood: %s\n", bgrun_sink_errmsg(sink));
	bgrun_sink_close(sink);
	free(evs);
	return NULL;
}

void case_daemon_backpressure(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *args[] = { "--queue-max=16", "--max-pending=8",
			       "--batch-max=4", NULL };
	struct flood f[4];
	pthread_t th[4];
	struct t_daemon d;

	/* Tiny limits: reading stops and resumes all the time; nothing is lost. */
	t_daemon_start(&d, db, sock, args);
	for (int i = 0; i < 4; i++) {
		f[i] = (struct flood){ db, sock, 700, 0 };
		ASSERT(pthread_create(&th[i], NULL, flood_main, &f[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		(void)pthread_join(th[i], NULL);
		ASSERT_EQ(f[i].result, BGRUN_SINK_VIA_DAEMON);
	}
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 2800);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}

void case_daemon_detach(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *out = t_path(dir, "out");
	const char *argv[] = { t_logsink, "--db", db, "serve", "--socket", sock,
			       "--detach", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	struct bgrun_status st;
	int64_t deadline;
	long pid = 0;
	FILE *f;
	int fd;

	o.argv = argv;
	o.out = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = out };
	ASSERT_OK(bgrun_spawn(&o, &child));
	ASSERT_OK(bgrun_child_wait(child, 30000, &st));
	bgrun_child_free(child);
	ASSERT(st.exited && st.exit_code == 0);
	/* It printed the daemon's pid, and returned once it listened. */
	f = fopen(out, "re");
	ASSERT(f != NULL && fscanf(f, "%ld", &pid) == 1 && pid > 0);
	(void)fclose(f);
	t_track((pid_t)pid);
	fd = t_connect(sock);
	hello(fd);
	(void)close(fd);
	ASSERT(kill((pid_t)pid, SIGTERM) == 0);
	/* Not our child (nor maybe anyone's to reap): its socket tells. */
	deadline = t_now_ms() + 30000;
	while (access(sock, F_OK) == 0 && t_now_ms() < deadline)
		(void)poll(NULL, 0, 10);
	ASSERT(access(sock, F_OK) < 0);
	/* Its socket goes just before it exits: wait for the pid too. */
	while (t_pid_alive((pid_t)pid) && t_now_ms() < deadline)
		(void)poll(NULL, 0, 10);
	t_untrack((pid_t)pid);
}

/* Reads one frame (within 10 s): whether it is an ERROR with code. */
static bool got_error(int fd, int64_t code, char *why, size_t size)
{
	struct bgrun_wire_msg m;
	bool ok;

	if (t_read_frame(fd, 10000, &m) == 0)
		return false;
	ok = m.type == BGRUN_WIRE_ERROR && m.code == code;
	if (why != NULL)
		(void)snprintf(why, size, "%s", m.text != NULL ? m.text : "");
	bgrun_wire_msg_release(&m);
	return ok;
}

/*
 * A client in a process of its own (its own pid to the daemon): connects,
 * says HELLO, sends an event, and exits 0 once it is acked; busy (or a
 * closed connection), it tries again, for up to 30 s.
 */
static pid_t real_client(const char *sock, const char *id_out)
{
	pid_t pid = fork();

	if (pid < 0)
		FAIL("fork: %m");
	if (pid > 0)
		return pid;
	for (int64_t end = t_now_ms() + 30000; t_now_ms() < end;) {
		struct bgrun_wire_buf b = { 0 };
		struct bgrun_wire_msg m;
		struct bgrun_event ev;
		int fd = t_connect(sock), got = 0;

		t_event(&ev, 7);
		(void)bgrun_wire_put_event(&b, 1, &ev);
		if (send(fd, b.data, b.len, MSG_NOSIGNAL) == (ssize_t)b.len)
			got = t_read_frame(fd, 10000, &m);
		bgrun_wire_buf_free(&b);
		(void)close(fd);
		if (got == 1 && m.type == BGRUN_WIRE_ACK && m.seq == 1) {
			FILE *f = fopen(id_out, "we");

			if (f != NULL) {
				(void)fprintf(f, "%s\n", ev.id);
				(void)fclose(f);
			}
			_exit(0);
		}
		if (got == 1)
			bgrun_wire_msg_release(&m);
		(void)poll(NULL, 0, 20);
	}
	_exit(1);
}

/*
 * A process of its own holding n silent connections; it writes a byte to
 * ready once they are made (so the daemon, accepting in order, takes them
 * before any connection made after that), then holds them until killed,
 * or exits with 0 or 1 after a last one is answered busy: 0 if the
 * answer contains want.
 */
static pid_t holder(const char *sock, int n, const char *want, int ready)
{
	pid_t pid = fork();
	char why[256];
	int fd;

	if (pid < 0)
		FAIL("fork: %m");
	if (pid > 0)
		return pid;
	for (int i = 0; i < n; i++)
		(void)t_connect(sock);
	if (want == NULL) {
		(void)!write(ready, "x", 1);
		for (;;)
			(void)pause();
	}
	fd = t_connect(sock);
	_exit(got_error(fd, BGRUN_WIRE_E_BUSY, why, sizeof(why)) &&
	      strstr(why, want) != NULL ? 0 : 1);
}

/*
 * Slowloris: one process holds at most --max-per-process connections;
 * the last --reserve slots go only to processes without one; with every
 * slot held by silent connections, a real client in a process of its own
 * has its event acked (the one longest without a frame makes room); and
 * connections that send a frame one byte at a time (each byte used to
 * reset the idle time, so they held their slots for ever) are closed once
 * the frame is not whole a frame-timeout after its first byte.
 */
void case_daemon_slowloris(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *args[] = { "--max-connections=8", "--max-per-process=4",
			       "--reserve=2", "--frame-timeout=300ms",
			       "--idle-timeout=60s", NULL };
	/* A frame announcing 1000 bytes: its bytes will come one by one. */
	static const unsigned char slow[] = { 0, 0, 3, 0xe8, 1, 2, 0, 0, 0, 1 };
	struct pollfd pfd[4];
	size_t sent[4] = { 0 };
	char why[256], idf[256], c;
	struct t_daemon d;
	int fds[4], ready[2], open_n, status, x;
	pid_t helper, fill[4], client;

	t_daemon_start(&d, db, sock, args);
	/* Four of this process's, silent; a fifth is over its share. */
	for (int i = 0; i < 4; i++)
		fds[i] = t_connect(sock);
	x = t_connect(sock);
	ASSERT(got_error(x, BGRUN_WIRE_E_BUSY, why, sizeof(why)));
	ASSERT(strstr(why, "from process") != NULL);
	expect_eof(x);
	(void)close(x);

	/* Another process: two taken (six in all), a third is the reserve's. */
	helper = holder(sock, 2, "kept for processes", -1);
	ASSERT(waitpid(helper, &status, 0) == helper && WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);

	/* Four processes of one connection each: two more, then the reserve. */
	ASSERT(pipe(ready) == 0);
	for (int i = 0; i < 4; i++)
		fill[i] = holder(sock, 1, NULL, ready[1]);
	for (int i = 0; i < 4; i++)
		ASSERT(read(ready[0], &c, 1) == 1);
	/* Full: a real client, a process of its own, is still served. */
	(void)snprintf(idf, sizeof(idf), "%s", t_path(dir, "client.id"));
	client = real_client(sock, idf);
	ASSERT(waitpid(client, &status, 0) == client && WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	{
		char id[BGRUN_EVENT_ID_MAX + 2] = "";
		FILE *f = fopen(idf, "re");

		ASSERT(f != NULL && fgets(id, sizeof(id), f) != NULL);
		(void)fclose(f);
		id[strcspn(id, "\n")] = '\0';
		ASSERT(t_db_has(db, id));
	}

	/*
	 * Ours now send a frame a byte every 50 ms: each is closed with an
	 * error (its frame past its deadline, or room made for a newcomer).
	 */
	open_n = 4;
	for (int64_t end = t_now_ms() + 30000; open_n > 0 && t_now_ms() < end;) {
		for (int i = 0; i < 4; i++) {
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
			if (fds[i] < 0)
				continue;
			(void)!send(fds[i], sent[i] < sizeof(slow) ? slow + sent[i] : slow,
				    1, MSG_NOSIGNAL);
			sent[i]++;
		}
		if (poll(pfd, 4, 50) <= 0)
			continue;
		for (int i = 0; i < 4; i++) {
			if (fds[i] < 0 || !(pfd[i].revents & (POLLIN | POLLHUP)))
				continue;
			why[0] = '\0';
			if (!got_error(fds[i], BGRUN_WIRE_E_MALFORMED, why, sizeof(why)) &&
			    strstr(why, "too many connections") == NULL)
				FAIL("slow connection %d: closed without a deadline error ('%s')", i, why);
			expect_eof(fds[i]);
			(void)close(fds[i]);
			fds[i] = -1;
			open_n--;
		}
	}
	ASSERT_EQ(open_n, 0);
	for (int i = 0; i < 4; i++) {
		(void)kill(fill[i], SIGKILL);
		(void)waitpid(fill[i], &status, 0);
	}
	(void)close(ready[0]);
	(void)close(ready[1]);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}
