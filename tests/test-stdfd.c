/* SPDX-License-Identifier: MIT */
/* test-stdfd.c: the caller's own 0, 1, 2 passed on, and stdio open errors. */

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The caller's descriptors 0, 1, 2 are replaced by files f0, f1, f2 for the
 * length of one bgrun_spawn() call only. Nothing may fail in between, since
 * a failure message would go to the wrong stderr.
 */
struct redirect {
	char *path[3];
	char *real[3];
	bool cloexec;
};

static void redirect_init(struct redirect *rd, bool cloexec)
{
	const char *dir = test_tmpdir();

	for (int i = 0; i < 3; i++) {
		char name[8];

		(void)snprintf(name, sizeof(name), "f%d", i);
		rd->path[i] = test_path(dir, name);
		test_write_file(rd->path[i], "", 0, 0644);
		rd->real[i] = test_realpath(rd->path[i]);
	}
	rd->cloexec = cloexec;
}

static void redirect_free(struct redirect *rd)
{
	for (int i = 0; i < 3; i++) {
		free(rd->path[i]);
		free(rd->real[i]);
	}
}

/* Spawns with the caller's 0, 1, 2 on f0, f1, f2; returns bgrun_spawn's. */
static int spawn_redirected(const struct redirect *rd,
			    const struct bgrun_spawn_opts *opts,
			    struct bgrun_child **ret_child)
{
	int saved[3], fds[3], r;

	for (int i = 0; i < 3; i++) {
		fds[i] = open(rd->path[i], O_RDWR | O_CLOEXEC);
		ASSERT_SYS(fds[i]);
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 100);
	}
	for (int i = 0; i < 3; i++)
		(void)dup3(fds[i], i, rd->cloexec ? O_CLOEXEC : 0);
	r = bgrun_spawn(opts, ret_child);
	for (int i = 0; i < 3; i++) {
		if (saved[i] >= 0)
			(void)dup2(saved[i], i);
		else
			(void)close(i);
	}
	for (int i = 0; i < 3; i++) {
		ASSERT_SYS(close(fds[i]));
		if (saved[i] >= 0)
			ASSERT_SYS(close(saved[i]));
	}
	return r;
}

/* Runs the report helper redirected; want[i] is which f the child's i is. */
static void check(const struct redirect *rd, struct bgrun_spawn_opts *opts,
		  const int want[3])
{
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	const char *argv[] = { test_self(), "helper", "report", rpath, NULL };
	struct bgrun_child *child = NULL;
	struct report rep;
	int r;

	opts->argv = argv;
	r = spawn_redirected(rd, opts, &child);
	opts->argv = NULL;
	ASSERT_OK(r);
	ASSERT_INT(bgrun_child_started(child, NULL), >, 0);
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	report_wait(rpath, &rep);
	for (int i = 0; i < 3; i++) {
		char key[4];

		(void)snprintf(key, sizeof(key), "fd%d", i);
		ASSERT_STR_EQ(report_get(&rep, key), rd->real[want[i]]);
	}
	ASSERT_STR_EQ(report_get(&rep, "fds"), "0,1,2");
	report_free(&rep);
	free(rpath);
}

static void set_fd(struct bgrun_stdio *s, int fd)
{
	s->kind = BGRUN_STDIO_FD;
	s->fd = fd;
}

void test_stdio_swapped(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct redirect rd;
	const int swapped[3] = { 0, 2, 1 };

	/* out = the caller's 2, err = the caller's 1. */
	redirect_init(&rd, false);
	set_fd(&opts.in, 0);
	set_fd(&opts.out, 2);
	set_fd(&opts.err, 1);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, swapped);
	}
	redirect_free(&rd);
}

void test_stdio_rotated(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct redirect rd;
	const int rotated[3] = { 2, 0, 1 }, same[3] = { 0, 1, 1 };

	/* A cycle of three: no order of plain dup2 calls gets it right. */
	redirect_init(&rd, false);
	set_fd(&opts.in, 2);
	set_fd(&opts.out, 0);
	set_fd(&opts.err, 1);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, rotated);
	}

	/* Each on itself, and one descriptor twice. */
	set_fd(&opts.in, 0);
	set_fd(&opts.out, 1);
	set_fd(&opts.err, 1);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, same);
	}
	redirect_free(&rd);
}

void test_stdio_inherit_cloexec(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct redirect rd;
	const int same[3] = { 0, 1, 2 }, swapped[3] = { 0, 2, 1 };

	/*
	 * The caller's 0, 1, 2 are close-on-exec: dup2(fd, fd) would keep
	 * that flag and the child would start with them closed.
	 */
	redirect_init(&rd, true);
	opts.in.kind = BGRUN_STDIO_INHERIT;
	opts.out.kind = BGRUN_STDIO_INHERIT;
	opts.err.kind = BGRUN_STDIO_INHERIT;
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, same);
	}
	set_fd(&opts.in, 0);
	set_fd(&opts.out, 1);
	set_fd(&opts.err, 2);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, same);
	}
	set_fd(&opts.out, 2);
	set_fd(&opts.err, 1);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		check(&rd, &opts, swapped);
	}
	redirect_free(&rd);
}

void test_stdout_open_fail(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *dir = test_tmpdir();

	opts.argv = argv;
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = "/nonexistent-bgrun-dir/out.txt";
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_STDOUT);
	opts.out.append = true;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_STDOUT);
	/* A directory. */
	opts.out.path = dir;
	test_expect_spawn_error(&opts, -EISDIR, BGRUN_STAGE_STDOUT);
	/* Failing stdout also when stderr joins it. */
	opts.out.path = "/nonexistent-bgrun-dir/out.txt";
	opts.err.kind = BGRUN_STDIO_STDOUT;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_STDOUT);
}

void test_stderr_open_fail(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *dir = test_tmpdir();
	char *out = test_path(dir, "out.txt");

	opts.argv = argv;
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = out;
	opts.err.kind = BGRUN_STDIO_FILE;
	opts.err.path = "/nonexistent-bgrun-dir/err.txt";
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_STDERR);
	opts.err.path = dir;
	test_expect_spawn_error(&opts, -EISDIR, BGRUN_STAGE_STDERR);
	free(out);
}

/* What our descriptor fd is open on (readlink of /proc/self/fd/N). */
static char *fd_target(int fd)
{
	char proc[64], buf[4096];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n < 0)
		FAIL("readlink %s: %m", proc);
	buf[n] = '\0';
	return test_strdup(buf);
}

/* Checks the child's fds and that its 3, 4, ... are want[0], want[1], ... */
static void expect_passed(const struct report *rep, char *const *want,
			  int n)
{
	char fds[64] = "0,1,2", key[16];

	for (int i = 0; i < n; i++) {
		size_t len = strlen(fds);

		(void)snprintf(fds + len, sizeof(fds) - len, ",%d", 3 + i);
		(void)snprintf(key, sizeof(key), "fd%d", 3 + i);
		ASSERT_STR_EQ(report_get(rep, key), want[i]);
	}
	ASSERT_STR_EQ(report_get(rep, "fds"), fds);
}

void test_pass_fds(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *file = test_path(dir, "a"), *want[3];
	int p[2], a, pass[3], bad[] = { -1 };
	struct bgrun_child *child;
	struct report rep;

	test_write_file(file, "a\n", 2, 0644);
	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	a = open(file, O_RDONLY | O_CLOEXEC);
	ASSERT_SYS(a);
	ASSERT_SYS(dup3(a, 500, O_CLOEXEC));
	ASSERT_SYS(close(a));
	/* In this order, close-on-exec in the caller, one of them our 2. */
	pass[0] = p[1];
	pass[1] = 500;
	pass[2] = 2;
	for (int i = 0; i < 3; i++)
		want[i] = fd_target(pass[i]);
	opts.pass_fds = pass;
	opts.n_pass_fds = 3;
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		test_run_report(&opts, NULL, &rep);
		expect_passed(&rep, want, 3);
		report_free(&rep);
		for (int i = 0; i < 3; i++)
			ASSERT_SYS(fcntl(pass[i], F_GETFD));
	}

	/* Borrowed for the call only: closed at once, still passed. */
	char *rdir = test_path(dir, "r"), *rpath = test_path(rdir, "report");
	const char *argv[] = { test_self(), "helper", "report", rpath, NULL };
	ASSERT_SYS(mkdir(rdir, 0755));
	ASSERT_SYS(dup3(500, 501, O_CLOEXEC));
	pass[0] = 501;
	opts.argv = argv;
	opts.n_pass_fds = 1;
	ASSERT_EQ(bgrun_spawn(&opts, &child), 0);
	ASSERT_SYS(close(501));
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	report_wait(rpath, &rep);
	expect_passed(&rep, &want[1], 1);
	report_free(&rep);
	opts.argv = NULL;

	/* None. */
	opts.n_pass_fds = 0;
	test_run_report(&opts, NULL, &rep);
	expect_passed(&rep, NULL, 0);
	report_free(&rep);

	const char *argv_exit[] = { test_self(), "helper", "exit", "0", NULL };
	opts.argv = argv_exit;
	/* Not a descriptor at all. */
	opts.pass_fds = bad;
	opts.n_pass_fds = 1;
	test_expect_spawn_error(&opts, -EBADF, BGRUN_STAGE_ARGS);
	for (int i = 0; i < 3; i++)
		free(want[i]);
	ASSERT_SYS(close(500));
	ASSERT_SYS(close(p[0]));
	ASSERT_SYS(close(p[1]));
	free(rpath);
	free(rdir);
	free(file);
}

void test_pass_fds_cycle(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *path[3], *want[3];
	const int cycle[] = { 5, 3, 4 }, swap[] = { 4, 3 };
	struct report rep;

	/*
	 * Before the library's first call, so that it holds none of 3, 4, 5:
	 * files on exactly those, passed in an order that moves each one.
	 */
	for (int i = 0; i < 3; i++) {
		char name[4] = { 'f', (char)('3' + i), '\0' };
		int fd;

		if (fcntl(3 + i, F_GETFD) >= 0)
			SKIP("descriptor %d is already open", 3 + i);
		path[i] = test_path(dir, name);
		test_write_file(path[i], "", 0, 0644);
		fd = open(path[i], O_RDONLY | O_CLOEXEC);
		ASSERT_EQ(fd, 3 + i);
	}
	for (int i = 0; i < 3; i++)
		want[i] = test_realpath(path[cycle[i] - 3]);
	opts.pass_fds = cycle;
	opts.n_pass_fds = 3;
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		test_run_report(&opts, NULL, &rep);
		expect_passed(&rep, want, 3);
		report_free(&rep);
	}
	for (int i = 0; i < 3; i++)
		free(want[i]);

	/* Two swapped, and the first one also as stdin. */
	for (int i = 0; i < 2; i++)
		want[i] = test_realpath(path[swap[i] - 3]);
	opts.pass_fds = swap;
	opts.n_pass_fds = 2;
	set_fd(&opts.in, 4);
	for (int ensure = 1; ensure >= 0; ensure--) {
		opts.ensurestart = ensure;
		test_run_report(&opts, NULL, &rep);
		expect_passed(&rep, want, 2);
		ASSERT_STR_EQ(report_get(&rep, "fd0"), want[0]);
		report_free(&rep);
	}
	for (int i = 0; i < 2; i++)
		free(want[i]);
	for (int i = 0; i < 3; i++) {
		ASSERT_SYS(close(3 + i));
		free(path[i]);
	}
}
