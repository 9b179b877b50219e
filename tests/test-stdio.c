/* SPDX-License-Identifier: MIT */
/* test-stdio.c: the child's descriptors 0, 1 and 2. */

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Runs opts with argv (ensurestart as set) and checks it exits 0. */
static void run(struct bgrun_spawn_opts *opts, const char *const *argv)
{
	struct bgrun_child *child;

	opts->argv = argv;
	ASSERT_OK(bgrun_spawn(opts, &child));
	ASSERT_INT(bgrun_child_started(child, NULL), >, 0);
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	opts->argv = NULL;
}

/* Everything readable from fd until end of file. */
static char *read_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = test_malloc(cap + 1);

	for (;;) {
		ssize_t n;

		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (buf == NULL)
				FAIL("out of memory");
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			FAIL("read: %m");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static void write_fd(int fd, const void *data, size_t len)
{
	int r = bgrun_write_all(fd, data, len);

	if (r < 0)
		FAIL("write: %s", strerror(-r));
}

static void expect_file(const char *path, const char *want)
{
	char *got = test_read_file(path, NULL);

	if (got == NULL)
		FAIL("%s does not exist", path);
	ASSERT_STR_EQ(got, want);
	free(got);
}

static void expect_stdin(const struct report *rep, const void *data,
			 size_t len)
{
	char want[17];

	(void)snprintf(want, sizeof(want), "%016llx", (unsigned long long)
		       test_fnv1a(data, len, TEST_FNV_INIT));
	ASSERT_EQ(report_get_int(rep, "stdin_len"), len);
	ASSERT_STR_EQ(report_get(rep, "stdin_fnv"), want);
}

/* len pseudo-random bytes (xorshift), all byte values included. */
static unsigned char *random_bytes(size_t len)
{
	unsigned char *p = test_malloc(len);
	uint64_t x = UINT64_C(0x9e3779b97f4a7c15);

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
	return p;
}

void test_stdin_null(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;

	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "fd0"), "/dev/null");
	ASSERT_EQ(report_get_int(&rep, "stdin_len"), 0);
	report_free(&rep);
}

void test_stdin_bytes_small(void)
{
	static const char data[] = "hello\0world\n\xff";
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	char *buf = test_malloc(sizeof(data));
	struct report rep;

	opts.in.kind = BGRUN_STDIO_BYTES;
	opts.in.bytes = data;
	opts.in.len = sizeof(data);
	test_run_report(&opts, NULL, &rep);
	expect_stdin(&rep, data, sizeof(data));
	report_free(&rep);

	/* Zero bytes: an empty stdin. */
	opts.in.len = 0;
	test_run_report(&opts, NULL, &rep);
	expect_stdin(&rep, "", 0);
	report_free(&rep);

	/*
	 * The bytes are copied before bgrun_spawn returns, also when the
	 * launch is queued: overwriting them at once changes nothing.
	 */
	for (int ensure = 0; ensure < 2; ensure++) {
		const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
		const char *argv[] = { test_self(), "helper", "report", rpath,
				       NULL };
		struct bgrun_child *child;

		memcpy(buf, data, sizeof(data));
		opts.in.bytes = buf;
		opts.in.len = sizeof(data);
		opts.ensurestart = ensure;
		opts.argv = argv;
		ASSERT_OK(bgrun_spawn(&opts, &child));
		memset(buf, 'X', sizeof(data));
		test_wait_exit(child, 0);
		bgrun_child_free(child);
		report_wait(rpath, &rep);
		expect_stdin(&rep, data, sizeof(data));
		report_free(&rep);
		free(rpath);
	}
	free(buf);
}

void test_stdin_bytes_large(void)
{
	enum { LEN = 8 * 1024 * 1024 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	unsigned char *data = random_bytes(LEN);
	struct report rep;

	opts.in.kind = BGRUN_STDIO_BYTES;
	opts.in.bytes = data;
	opts.in.len = LEN;
	for (int ensure = 0; ensure < 2; ensure++) {
		opts.ensurestart = ensure;
		test_run_report(&opts, NULL, &rep);
		expect_stdin(&rep, data, LEN);
		report_free(&rep);
	}
	free(data);
}

struct spawn_job {
	struct bgrun_spawn_opts *opts;
	struct bgrun_child *child;
	int result;
};

static void *spawn_thread(void *arg)
{
	struct spawn_job *job = arg;

	job->result = bgrun_spawn(job->opts, &job->child);
	return NULL;
}

void test_stdin_bytes_no_block(void)
{
	enum { LEN = 8 * 1024 * 1024 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "pause", NULL };
	unsigned char *data = random_bytes(LEN);
	struct spawn_job job = { &opts, NULL, 0 };
	struct bgrun_status st;
	struct timespec deadline;
	pthread_t thread;
	int r;

	/* A child that never reads its 8 MiB: bgrun_spawn must not wait. */
	opts.argv = argv;
	opts.in.kind = BGRUN_STDIO_BYTES;
	opts.in.bytes = data;
	opts.in.len = LEN;
	r = pthread_create(&thread, NULL, spawn_thread, &job);
	if (r != 0)
		FAIL("pthread_create: %s", strerror(r));
	(void)clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += TEST_DEADLINE_MS / 1000;
	r = pthread_timedjoin_np(thread, NULL, &deadline);
	if (r != 0)
		FAIL("bgrun_spawn still blocked after %d ms (child not "
		     "reading stdin)", TEST_DEADLINE_MS);
	ASSERT_OK(job.result);
	test_kill_at_exit(job.result);
	ASSERT_OK(bgrun_child_kill(job.child, SIGKILL));
	ASSERT_OK(bgrun_child_wait(job.child, TEST_DEADLINE_MS, &st));
	ASSERT(st.signaled);
	ASSERT_EQ(st.signal, SIGKILL);
	bgrun_child_free(job.child);
	free(data);
}

void test_stdin_fd_pipe(void)
{
	enum { LEN = 300 * 1024 }; /* more than a pipe holds */
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	unsigned char *data = random_bytes(LEN);

	/* A write error is a failure message, not death by SIGPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	opts.in.kind = BGRUN_STDIO_FD;
	for (int ensure = 1; ensure >= 0; ensure--) {
		const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
		const char *argv[] = { test_self(), "helper", "report", rpath,
				       NULL };
		struct bgrun_failure f = { BGRUN_STAGE_NONE, 0 };
		struct bgrun_child *child;
		struct report rep;
		int p[2], r;

		ASSERT_SYS(pipe2(p, O_CLOEXEC));
		opts.argv = argv;
		opts.in.fd = p[0];
		opts.ensurestart = ensure;
		ASSERT_OK(bgrun_spawn(&opts, &child));
		/*
		 * Borrowed for the call only: still ours, ours to close at
		 * once, also when the launch is queued.
		 */
		ASSERT_SYS(fcntl(p[0], F_GETFD));
		ASSERT_SYS(close(p[0]));
		r = bgrun_child_started(child, &f);
		if (r < 0)
			FAIL("launch (ensurestart %d) failed at stage %s: %s",
			     ensure, bgrun_stage_name(f.stage),
			     bgrun_strerror(r));
		/* The child sees end of file only if no copy of p[1] leaked. */
		write_fd(p[1], data, LEN);
		ASSERT_SYS(close(p[1]));
		report_wait(rpath, &rep);
		expect_stdin(&rep, data, LEN);
		ASSERT(strncmp(report_get(&rep, "fd0"), "pipe:", 5) == 0);
		test_wait_exit(child, 0);
		bgrun_child_free(child);
		report_free(&rep);
		free(rpath);
	}
	free(data);
}

void test_stdin_fd_file(void)
{
	static const char text[] = "file contents\n";
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *file = test_path(dir, "input");
	char *real;
	struct report rep;
	int fd;

	test_write_file(file, text, sizeof(text) - 1, 0644);
	real = test_realpath(file);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	ASSERT_SYS(fd);
	opts.in.kind = BGRUN_STDIO_FD;
	opts.in.fd = fd;
	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "fd0"), real);
	expect_stdin(&rep, text, sizeof(text) - 1);
	ASSERT_SYS(fcntl(fd, F_GETFD));
	ASSERT_SYS(close(fd));
	report_free(&rep);
	free(real);
	free(file);
}

void test_stdin_file(void)
{
	static const char text[] = "read from a file\n\x01\xff";
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *file = test_path(dir, "input"), *sub = test_path(dir, "sub");
	char *real, *missing = test_path(dir, "missing");
	struct report rep;

	test_write_file(file, text, sizeof(text) - 1, 0644);
	real = test_realpath(file);
	ASSERT_SYS(mkdir(sub, 0755));
	/* Relative to the caller's cwd, not to .cwd. */
	ASSERT_SYS(chdir(dir));
	opts.in.kind = BGRUN_STDIO_FILE;
	opts.in.path = "input";
	opts.cwd = sub;
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		test_run_report(&opts, NULL, &rep);
		ASSERT_STR_EQ(report_get(&rep, "fd0"), real);
		expect_stdin(&rep, text, sizeof(text) - 1);
		report_free(&rep);
	}
	ASSERT_SYS(chdir("/"));

	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	opts.argv = argv;
	opts.in.path = missing;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_STDIN);
	free(missing);
	free(real);
	free(sub);
	free(file);
}

void test_stdout_null(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;

	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "fd1"), "/dev/null");
	ASSERT_STR_EQ(report_get(&rep, "fd2"), "/dev/null");
	report_free(&rep);
}

/*
 * The library may keep a descriptor on /dev/null for the children's
 * stdio. A caller that closes it (descriptors it did not open) and gets
 * a file of its own at that number must not have its children wired to
 * that file: their 0, 1 and 2 are still /dev/null, and the file is left
 * as it was.
 */
void test_stdio_null_fd_closed(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *victim = test_path(dir, "victim.txt");
	struct report rep;
	char link[64], target[PATH_MAX];
	size_t len;
	int fd;

	test_run_report(&opts, NULL, &rep);
	report_free(&rep);
	test_write_file(victim, "mine\n", 5, 0644);
	fd = open(victim, O_RDWR | O_CLOEXEC);
	ASSERT_SYS(fd);
	/* Every /dev/null of ours above 2 becomes our file instead. */
	for (int i = 3; i < 1024; i++) {
		ssize_t n;

		(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", i);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0 || i == fd)
			continue;
		target[n] = '\0';
		if (strcmp(target, "/dev/null") != 0)
			continue;
		ASSERT_SYS(dup3(fd, i, O_CLOEXEC));
	}
	for (int round = 0; round < 2; round++) {
		opts.ensurestart = round == 0;
		test_run_report(&opts, NULL, &rep);
		ASSERT_STR_EQ(report_get(&rep, "fd0"), "/dev/null");
		ASSERT_STR_EQ(report_get(&rep, "fd1"), "/dev/null");
		ASSERT_STR_EQ(report_get(&rep, "fd2"), "/dev/null");
		report_free(&rep);
	}
	free(test_read_file(victim, &len));
	ASSERT_EQ(len, 5);
	ASSERT_SYS(close(fd));
	free(victim);
}

void test_stdout_file_truncate(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *sub = test_path(dir, "sub");
	char *out = test_path(dir, "out.txt");
	char *wrong = test_path(sub, "out.txt");
	const char *argv[] = { test_self(), "helper", "stdout", "hello", NULL };
	const char *old = "old content, longer than the new one\n";

	/* A relative path is relative to the caller's cwd, not .cwd. */
	ASSERT_SYS(mkdir(sub, 0755));
	ASSERT_SYS(chdir(dir));
	test_write_file(out, old, strlen(old), 0644);
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = "out.txt";
	opts.cwd = sub;
	run(&opts, argv);
	expect_file(out, "hello\n");
	ASSERT(access(wrong, F_OK) != 0);

	/* Created when missing. */
	ASSERT_SYS(unlink(out));
	run(&opts, argv);
	expect_file(out, "hello\n");
	ASSERT_SYS(chdir("/"));
	free(wrong);
	free(out);
	free(sub);
}

void test_stdout_file_append(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *out = test_path(dir, "out.txt");
	const char *argv[] = { test_self(), "helper", "stdout", "hello", NULL };

	test_write_file(out, "old\n", 4, 0644);
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = out;
	opts.out.append = true;
	run(&opts, argv);
	expect_file(out, "old\nhello\n");
	opts.ensurestart = false;
	run(&opts, argv);
	expect_file(out, "old\nhello\nhello\n");
	free(out);
}

void test_stderr_file(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *err = test_path(dir, "err.txt");
	const char *argv[] = { test_self(), "helper", "outerr", "to stdout",
			       "to stderr", NULL };

	test_write_file(err, "old content, longer\n", 20, 0644);
	opts.err.kind = BGRUN_STDIO_FILE;
	opts.err.path = err;
	run(&opts, argv);
	expect_file(err, "to stderr\n");
	opts.err.append = true;
	run(&opts, argv);
	expect_file(err, "to stderr\nto stderr\n");
	free(err);
}

void test_stdout_fd_pipe(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *outerr[] = { test_self(), "helper", "outerr", "out line",
				 "err line", NULL };
	const char *cat[] = { test_self(), "helper", "cat", NULL };
	int po[2], pe[2];
	char *got;

	ASSERT_SYS(pipe2(po, O_CLOEXEC));
	ASSERT_SYS(pipe2(pe, O_CLOEXEC));
	opts.out.kind = BGRUN_STDIO_FD;
	opts.out.fd = po[1];
	opts.err.kind = BGRUN_STDIO_FD;
	opts.err.fd = pe[1];
	run(&opts, outerr);
	ASSERT_SYS(close(po[1]));
	ASSERT_SYS(close(pe[1]));
	got = read_fd(po[0]);
	ASSERT_STR_EQ(got, "out line\n");
	free(got);
	got = read_fd(pe[0]);
	ASSERT_STR_EQ(got, "err line\n");
	free(got);
	ASSERT_SYS(close(po[0]));
	ASSERT_SYS(close(pe[0]));

	/* Bytes in, pipe out, through `helper cat`. */
	ASSERT_SYS(pipe2(po, O_CLOEXEC));
	opts.in.kind = BGRUN_STDIO_BYTES;
	opts.in.bytes = "through cat\n";
	opts.in.len = 12;
	opts.out.fd = po[1];
	opts.err.kind = BGRUN_STDIO_NULL;
	run(&opts, cat);
	ASSERT_SYS(close(po[1]));
	got = read_fd(po[0]);
	ASSERT_STR_EQ(got, "through cat\n");
	free(got);
	ASSERT_SYS(close(po[0]));
}

void test_stderr_joined(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *out = test_path(dir, "out.txt"), *real;
	const char *argv[] = { test_self(), "helper", "outerr", "first",
			       "second", NULL };
	struct report rep;
	int p[2];
	char *got;

	/* One open file: the second line follows the first (one offset). */
	test_write_file(out, "old content, longer than both lines\n", 36, 0644);
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = out;
	opts.err.kind = BGRUN_STDIO_STDOUT;
	run(&opts, argv);
	expect_file(out, "first\nsecond\n");
	test_run_report(&opts, NULL, &rep);
	real = test_realpath(out);
	ASSERT_STR_EQ(report_get(&rep, "fd1"), real);
	ASSERT_STR_EQ(report_get(&rep, "fd2"), real);
	report_free(&rep);

	/* The same with a pipe. */
	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	opts.out.kind = BGRUN_STDIO_FD;
	opts.out.fd = p[1];
	run(&opts, argv);
	ASSERT_SYS(close(p[1]));
	got = read_fd(p[0]);
	ASSERT_STR_EQ(got, "first\nsecond\n");
	ASSERT_SYS(close(p[0]));
	free(got);

	/* And with stdout at its default, /dev/null. */
	opts.out.kind = BGRUN_STDIO_NULL;
	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "fd2"), "/dev/null");
	report_free(&rep);
	free(real);
	free(out);
}
