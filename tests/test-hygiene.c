/* SPDX-License-Identifier: MIT */
/* test-hygiene.c: what the child does not inherit, and ensurestart on/off. */

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum { N_HIGH = 200, HIGH_BASE = 1000, HIGH_STEP = 3 };

void test_hygiene_fds(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct rlimit rl;
	int fds[N_HIGH + 1], n = 0, low[2], top;
	struct report rep;

	ASSERT_SYS(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < HIGH_BASE + N_HIGH * HIGH_STEP + 10) {
		rl.rlim_cur = rl.rlim_max;
		if (rl.rlim_cur < HIGH_BASE + N_HIGH * HIGH_STEP + 10 ||
		    setrlimit(RLIMIT_NOFILE, &rl) < 0)
			SKIP("RLIMIT_NOFILE too small for %d descriptors",
			     HIGH_BASE + N_HIGH * HIGH_STEP);
	}
	/* High descriptors, every other one inheritable, and the top one. */
	for (int i = 0; i < N_HIGH; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		ASSERT_SYS(fd);
		fds[n] = HIGH_BASE + i * HIGH_STEP;
		ASSERT_SYS(dup3(fd, fds[n], i % 2 ? O_CLOEXEC : 0));
		ASSERT_SYS(close(fd));
		n++;
	}
	top = rl.rlim_cur > 65536 ? 65535 : (int)rl.rlim_cur - 1;
	ASSERT_SYS(dup2(fds[0], top));
	fds[n++] = top;
	/* Low ones too, without close-on-exec. */
	ASSERT_SYS(pipe(low));

	for (int mode = 0; mode < 3; mode++) {
		opts.ensurestart = mode != 1;
		opts.detach = mode != 2;
		test_run_report(&opts, NULL, &rep);
		ASSERT_STR_EQ(report_get(&rep, "fds"), "0,1,2");
		report_free(&rep);
	}
	for (int i = 0; i < n; i++)
		ASSERT_SYS(close(fds[i]));
	ASSERT_SYS(close(low[0]));
	ASSERT_SYS(close(low[1]));
}

static void expect_zero_mask(const struct report *rep, const char *key)
{
	const char *val = report_get(rep, key);
	char *end;
	unsigned long long mask = strtoull(val, &end, 16);

	if (*end != '\0' || end == val || mask != 0)
		FAIL("the child's %s is %s, not all zero", key, val);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	handled = sig;
}

/*
 * The caller ignores SIGINT and SIGPIPE, handles SIGCHLD and SIGUSR2, and
 * blocks SIGTERM and SIGUSR1: the child starts with none of that, and the
 * caller keeps all of it.
 */
static void check_signals(bool ensurestart)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction handler = { .sa_handler = on_signal,
				     .sa_flags = SA_RESTART };
	static struct sigaction before[NSIG], after[NSIG];
	sigset_t block, mask_before, mask_after;
	struct report rep;

	ASSERT_SYS(sigaction(SIGINT, &ign, NULL));
	ASSERT_SYS(sigaction(SIGPIPE, &ign, NULL));
	ASSERT_SYS(sigaction(SIGCHLD, &handler, NULL));
	ASSERT_SYS(sigaction(SIGUSR2, &handler, NULL));
	(void)sigemptyset(&block);
	(void)sigaddset(&block, SIGTERM);
	(void)sigaddset(&block, SIGUSR1);
	ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, NULL), 0);

	ASSERT_EQ(pthread_sigmask(SIG_BLOCK, NULL, &mask_before), 0);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &before[sig]) < 0)
			before[sig].sa_handler = SIG_ERR;

	opts.ensurestart = ensurestart;
	for (int with_handle = 0; with_handle < 2; with_handle++) {
		opts.detach = with_handle;
		test_run_report(&opts, NULL, &rep);
		expect_zero_mask(&rep, "sigblk");
		expect_zero_mask(&rep, "sigign");
		report_free(&rep);
	}

	ASSERT_EQ(pthread_sigmask(SIG_BLOCK, NULL, &mask_after), 0);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(&mask_before, sig) !=
		    sigismember(&mask_after, sig))
			FAIL("signal %d (%s) changed in the caller's mask", sig,
			     strsignal(sig));
		if (sigaction(sig, NULL, &after[sig]) < 0)
			after[sig].sa_handler = SIG_ERR;
		if (before[sig].sa_handler != after[sig].sa_handler ||
		    before[sig].sa_flags != after[sig].sa_flags)
			FAIL("signal %d (%s) changed disposition in the caller",
			     sig, strsignal(sig));
	}
	ASSERT(sigismember(&mask_after, SIGTERM));
	ASSERT(sigismember(&mask_after, SIGUSR1));
	ASSERT(after[SIGINT].sa_handler == SIG_IGN);
	ASSERT(after[SIGCHLD].sa_handler == on_signal);
	/* Our children ended: SIGCHLD reached our handler. */
	ASSERT_EQ(handled, SIGCHLD);
}

void test_hygiene_signals(void)
{
	check_signals(true);
}

void test_hygiene_signals_async(void)
{
	check_signals(false);
}

/* /proc/PID/cmdline with its NULs as spaces (NULL when gone). */
static char *read_cmdline(pid_t pid, size_t *ret_len)
{
	char path[64], *s;

	(void)snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	s = test_read_file(path, ret_len);
	for (size_t i = 0; s != NULL && i < *ret_len; i++)
		if (s[i] == '\0')
			s[i] = ' ';
	return s;
}

/*
 * Checks that the exec has happened: read right after bgrun_spawn returns,
 * /proc/PID/cmdline is no longer ours (a child between clone and execve
 * shares or copies our memory, so it shows our cmdline). The kernel
 * releases a vfork parent inside execve before it sets the new argv up,
 * so an empty cmdline is possible for an instant: then it must become the
 * new argv.
 */
static void expect_cmdline(pid_t pid, const char *const *argv)
{
	char *got, *ours, want[4096];
	size_t len, ours_len, wlen = 0;
	int64_t deadline = test_now_ms() + TEST_DEADLINE_MS;

	for (size_t i = 0; argv[i] != NULL; i++) {
		size_t n = strlen(argv[i]) + 1;

		ASSERT(wlen + n < sizeof(want));
		memcpy(want + wlen, argv[i], n);
		want[wlen + n - 1] = ' ';
		wlen += n;
	}
	want[wlen] = '\0';
	got = read_cmdline(pid, &len);
	ours = read_cmdline(getpid(), &ours_len);
	if (got == NULL || ours == NULL)
		FAIL("cannot read the cmdline of %d or ours", (int)pid);
	if (len == ours_len && memcmp(got, ours, len) == 0)
		FAIL("child %d still has our cmdline \"%s\": not executed yet",
		     (int)pid, ours);
	while (len == 0 && test_now_ms() < deadline) {
		free(got);
		test_msleep(1);
		got = read_cmdline(pid, &len);
		if (got == NULL)
			FAIL("child %d vanished", (int)pid);
	}
	if (len != wlen || memcmp(got, want, len) != 0)
		FAIL("child %d has cmdline \"%.*s\", not \"%s\"", (int)pid,
		     (int)len, got, want);
	free(ours);
	free(got);
}

void test_ensurestart_on(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "pause", NULL };
	struct bgrun_child *child;
	struct bgrun_status st;
	pid_t pid;

	/* Read right after the return, the child's argv is the new one. */
	opts.argv = argv;
	pid = bgrun_spawn(&opts, &child);
	ASSERT_INT(pid, >, 0);
	test_kill_at_exit(pid);
	expect_cmdline(pid, argv);
	ASSERT_EQ(bgrun_child_pid(child), pid);
	ASSERT_EQ(bgrun_child_started(child, NULL), pid);
	ASSERT_OK(bgrun_child_kill(child, SIGKILL));
	ASSERT_OK(bgrun_child_wait(child, TEST_DEADLINE_MS, &st));
	ASSERT_EQ(st.pid, pid);
	bgrun_child_free(child);

	/* Without a handle: it pauses, so the pid stays ours to kill. */
	for (int detach = 0; detach < 2; detach++) {
		opts.detach = detach;
		pid = bgrun_spawn(&opts, NULL);
		ASSERT_INT(pid, >, 0);
		test_kill_at_exit(pid);
		expect_cmdline(pid, argv);
		ASSERT_SYS(kill(pid, SIGKILL));
	}
	test_wait_reaped();
}

void test_ensurestart_off_callback(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	const char *argv[] = { test_self(), "helper", "report", rpath, NULL };
	struct test_start_seen seen;
	struct report rep;

	opts.argv = argv;
	opts.ensurestart = false;
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	ASSERT_EQ(bgrun_spawn(&opts, NULL), 0);
	bgrun_spawn_flush();
	seen = test_start_seen(&rec);
	ASSERT_EQ(seen.calls, 1);
	ASSERT_INT(seen.last, >, 0);
	report_wait(rpath, &rep);
	ASSERT_EQ(report_get_int(&rep, "pid"), seen.last);
	ASSERT_EQ(report_get_int(&rep, "ppid"), getpid());
	report_free(&rep);
	test_wait_reaped();
	free(rpath);
}

void test_ensurestart_off_handle(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	struct test_start_seen seen;
	struct bgrun_failure f = { BGRUN_STAGE_EXEC, 12345 };
	struct bgrun_child *child;
	struct report rep;
	pid_t pid;

	/* Through the handle only. */
	opts.ensurestart = false;
	test_run_report(&opts, NULL, &rep);
	report_free(&rep);

	/* Through the handle and the callback: the same pid, one call. */
	const char *argv[] = { test_self(), "helper", "exit", "5", NULL };
	opts.argv = argv;
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	ASSERT_EQ(bgrun_spawn(&opts, &child), 0);
	pid = bgrun_child_started(child, &f);
	ASSERT_INT(pid, >, 0);
	/* ret_failure is left untouched on success. */
	ASSERT_EQ(f.stage, BGRUN_STAGE_EXEC);
	ASSERT_EQ(f.error, 12345);
	ASSERT_EQ(bgrun_child_pid(child), pid);
	ASSERT_EQ(bgrun_child_started(child, NULL), pid);
	test_wait_exit(child, 5);
	bgrun_child_free(child);
	bgrun_spawn_flush();
	seen = test_start_seen(&rec);
	ASSERT_EQ(seen.calls, 1);
	ASSERT_EQ(seen.last, pid);
}

void test_ensurestart_off_enoent(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	const char *argv[] = { "/nonexistent-bgrun-dir/prog", NULL };
	struct test_start_seen seen;

	/* Through the callback only (no handle). */
	opts.argv = argv;
	opts.ensurestart = false;
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	ASSERT_EQ(bgrun_spawn(&opts, NULL), 0);
	bgrun_spawn_flush();
	seen = test_start_seen(&rec);
	ASSERT_EQ(seen.calls, 1);
	ASSERT_EQ(seen.last, -ENOENT);
	ASSERT(!seen.failure_missing);
	ASSERT_EQ(seen.failure.stage, BGRUN_STAGE_EXEC);
	ASSERT_EQ(seen.failure.error, -ENOENT);

	/* Through the handle, the callback and both (checks leftovers). */
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_EXEC);
}

void test_ensurestart_off_einval(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	struct bgrun_failure f = { BGRUN_STAGE_NONE, 0 };
	int fds, kids;

	/* Neither on_start nor a handle: the outcome would be lost. */
	test_warmup();
	fds = test_count_fds();
	kids = test_count_children(NULL, 0);
	opts.argv = argv;
	opts.ensurestart = false;
	opts.failure = &f;
	ASSERT_EQ(bgrun_spawn(&opts, NULL), -EINVAL);
	ASSERT_EQ(f.stage, BGRUN_STAGE_ARGS);
	ASSERT_EQ(f.error, -EINVAL);
	bgrun_spawn_flush();
	ASSERT_EQ(test_count_children(NULL, 0), kids);
	ASSERT_EQ(test_count_fds(), fds);
	ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 0);
}

void test_spawn_flush(void)
{
	enum { N = 64 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	struct test_start_seen seen;

	/* Nothing queued: returns. */
	bgrun_spawn_flush();
	opts.argv = argv;
	opts.ensurestart = false;
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	/* Every launch performed and its callback returned: 1, 2, 3... N. */
	for (int n = 1, total = 0; n <= N; n = n < 4 ? n + 1 : n * 4) {
		for (int i = 0; i < n; i++)
			ASSERT_EQ(bgrun_spawn(&opts, NULL), 0);
		total += n;
		bgrun_spawn_flush();
		seen = test_start_seen(&rec);
		ASSERT_EQ(seen.calls, total);
		ASSERT_EQ(seen.successes, total);
		bgrun_spawn_flush();
		ASSERT_EQ(test_start_seen(&rec).calls, total);
	}
	test_wait_reaped();
}
