/* SPDX-License-Identifier: MIT */
/* test-wait.c: statuses through the handle, and the library's own reaping. */

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Launches `run-tests helper ARGS...` with a handle; returns the pid. */
static pid_t launch(struct bgrun_child **ret_child, bool ensurestart,
		    const char *mode, const char *arg)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", mode, arg, NULL };
	pid_t pid;
	int r;

	opts.argv = argv;
	opts.ensurestart = ensurestart;
	r = bgrun_spawn(&opts, ret_child);
	ASSERT_OK(r);
	pid = bgrun_child_started(*ret_child, NULL);
	ASSERT_INT(pid, >, 0);
	ASSERT_EQ(r, ensurestart ? pid : 0);
	return pid;
}

void test_wait_exit_code(void)
{
	static const char *const codes[] = { "0", "3", "128", "137", "255" };
	struct bgrun_child *child;
	struct bgrun_status st;

	for (int ensure = 0; ensure < 2; ensure++) {
		for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
			pid_t pid = launch(&child, ensure, "exit", codes[i]);

			ASSERT_OK(bgrun_child_wait(child, -1, &st));
			ASSERT_EQ(st.pid, pid);
			ASSERT(st.exited);
			ASSERT(!st.signaled);
			ASSERT(!st.core_dumped);
			/* The full byte: 255 stays 255, 137 is no signal. */
			ASSERT_EQ(st.exit_code, atoi(codes[i]));
			bgrun_child_free(child);
		}
	}
}

void test_wait_signal_kill(void)
{
	static const int sigs[] = { SIGKILL, SIGTERM, SIGUSR1 };
	struct bgrun_child *child;
	struct bgrun_status st;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		pid_t pid = launch(&child, i != 1, "pause", NULL);

		test_kill_at_exit(pid);
		ASSERT_OK(bgrun_child_kill(child, sigs[i]));
		ASSERT_OK(bgrun_child_wait(child, TEST_DEADLINE_MS, &st));
		ASSERT_EQ(st.pid, pid);
		ASSERT(st.signaled);
		ASSERT(!st.exited);
		ASSERT_EQ(st.signal, sigs[i]);
		/* Never folded into exit_code (as 128 + N). */
		ASSERT_INT(st.exit_code, !=, 128 + sigs[i]);
		/* Reaped: nothing left to signal. */
		ASSERT_EQ(bgrun_child_kill(child, SIGKILL), -ESRCH);
		ASSERT_EQ(bgrun_child_kill(child, 0), -ESRCH);
		bgrun_child_free(child);
	}
}

void test_wait_signal_segv(void)
{
	struct rlimit rl = { 0, 0 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *pattern;
	const char *argv[] = { test_self(), "helper", "signal", "11", NULL };
	struct bgrun_child *child;
	struct bgrun_status st;
	pid_t pid;

	/* No core (the child inherits the limit), and none in our cwd. */
	ASSERT_SYS(getrlimit(RLIMIT_CORE, &rl));
	rl.rlim_cur = 0;
	ASSERT_SYS(setrlimit(RLIMIT_CORE, &rl));
	opts.argv = argv;
	opts.cwd = dir;
	pid = bgrun_spawn(&opts, &child);
	ASSERT_INT(pid, >, 0);
	ASSERT_OK(bgrun_child_wait(child, TEST_DEADLINE_MS, &st));
	ASSERT_EQ(st.pid, pid);
	ASSERT(st.signaled);
	ASSERT(!st.exited);
	ASSERT_EQ(st.signal, SIGSEGV);
	ASSERT_INT(st.exit_code, !=, 128 + SIGSEGV);
	/* A piped core_pattern ignores RLIMIT_CORE: core_dumped may be set. */
	pattern = test_read_file("/proc/sys/kernel/core_pattern", NULL);
	if (pattern == NULL || pattern[0] != '|')
		ASSERT(!st.core_dumped);
	bgrun_child_free(child);
	free(pattern);
}

void test_wait_times_rusage(void)
{
	enum { MS = 30 };
	struct bgrun_child *child;
	struct bgrun_status st;
	int64_t rt0, rt1, mono0, mono1;
	pid_t pid;

	rt0 = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	mono0 = test_now_ms();
	pid = launch(&child, true, "sleep-ms", "30");
	ASSERT_OK(bgrun_child_wait(child, TEST_DEADLINE_MS, &st));
	rt1 = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	mono1 = test_now_ms();
	ASSERT_EQ(st.pid, pid);
	ASSERT(st.exited);
	ASSERT_EQ(st.exit_code, 0);
	/* The child lived at least MS: a lower bound, not a timing. */
	ASSERT_INT(st.duration_ns, >=, (int64_t)MS * 1000000);
	ASSERT_INT(st.duration_ns, <=, (mono1 - mono0 + 1) * 1000000);
	ASSERT_INT(st.start_realtime_ns, >=, rt0);
	ASSERT_INT(st.start_realtime_ns, <, st.end_realtime_ns);
	ASSERT_INT(st.end_realtime_ns, <=, rt1);
	ASSERT_INT(st.rusage.max_rss_kb, >, 0);
	bgrun_child_free(child);
}

void test_wait_timeout(void)
{
	struct bgrun_child *child;
	struct bgrun_status st, first;
	pid_t pid = launch(&child, true, "pause", NULL);

	test_kill_at_exit(pid);
	/* Running: 0 polls, > 0 waits that long; *ret_status untouched. */
	memset(&st, 0x5a, sizeof(st));
	ASSERT_EQ(bgrun_child_wait(child, 0, &st), -ETIMEDOUT);
	ASSERT_EQ(bgrun_child_wait(child, 20, &st), -ETIMEDOUT);
	ASSERT_EQ(st.pid, 0x5a5a5a5a);
	ASSERT_OK(bgrun_child_kill(child, 0));
	ASSERT_OK(bgrun_child_kill(child, SIGKILL));
	ASSERT_OK(bgrun_child_wait(child, -1, &first));
	ASSERT(first.signaled);
	/* Ended: polling gives the status. */
	ASSERT_OK(bgrun_child_wait(child, 0, &st));
	ASSERT_EQ(st.pid, pid);
	ASSERT(st.signaled);
	ASSERT_EQ(st.signal, SIGKILL);
	bgrun_child_free(child);

	/* A child that has exited but is not collected yet: 0 reaps it. */
	pid = launch(&child, true, "exit", "4");
	for (int64_t end = test_now_ms() + TEST_DEADLINE_MS;;) {
		int r = bgrun_child_wait(child, 0, &st);

		if (r == 0)
			break;
		ASSERT_EQ(r, -ETIMEDOUT);
		if (test_now_ms() > end)
			FAIL("child %d not collected after %d ms", (int)pid,
			     TEST_DEADLINE_MS);
		test_msleep(2);
	}
	ASSERT(st.exited);
	ASSERT_EQ(st.exit_code, 4);
	bgrun_child_free(child);
}

static void expect_same_status(const struct bgrun_status *a,
			       const struct bgrun_status *b)
{
	ASSERT_EQ(a->pid, b->pid);
	ASSERT_EQ(a->exited, b->exited);
	ASSERT_EQ(a->exit_code, b->exit_code);
	ASSERT_EQ(a->signaled, b->signaled);
	ASSERT_EQ(a->signal, b->signal);
	ASSERT_EQ(a->core_dumped, b->core_dumped);
	ASSERT_EQ(a->start_realtime_ns, b->start_realtime_ns);
	ASSERT_EQ(a->end_realtime_ns, b->end_realtime_ns);
	ASSERT_EQ(a->duration_ns, b->duration_ns);
	ASSERT_EQ(a->rusage.max_rss_kb, b->rusage.max_rss_kb);
	ASSERT_EQ(a->rusage.user_cpu_ns, b->rusage.user_cpu_ns);
}

void test_wait_twice(void)
{
	struct bgrun_child *child;
	struct bgrun_status st1, st2, st3;

	for (int ensure = 0; ensure < 2; ensure++) {
		pid_t pid = launch(&child, ensure, "exit", "7");

		ASSERT_OK(bgrun_child_wait(child, -1, &st1));
		ASSERT_OK(bgrun_child_wait(child, -1, &st2));
		ASSERT_OK(bgrun_child_wait(child, 0, &st3));
		ASSERT_EQ(st1.pid, pid);
		ASSERT_EQ(st1.exit_code, 7);
		expect_same_status(&st1, &st2);
		expect_same_status(&st1, &st3);
		ASSERT_EQ(bgrun_child_pid(child), pid);
		bgrun_child_free(child);
	}
	bgrun_child_free(NULL);
}

void test_wait_failed_launch(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { "/nonexistent-bgrun-dir/prog", NULL };
	struct bgrun_child *child;
	struct bgrun_status st;
	struct bgrun_failure f = { BGRUN_STAGE_NONE, 0 };

	opts.argv = argv;
	opts.ensurestart = false;
	ASSERT_EQ(bgrun_spawn(&opts, &child), 0);
	ASSERT_EQ(bgrun_child_wait(child, -1, &st), -ENOENT);
	ASSERT_EQ(bgrun_child_wait(child, 0, &st), -ENOENT);
	ASSERT_EQ(bgrun_child_started(child, &f), -ENOENT);
	ASSERT_EQ(f.stage, BGRUN_STAGE_EXEC);
	ASSERT_EQ(f.error, -ENOENT);
	bgrun_child_free(child);
	test_wait_reaped();
}

void test_reap_no_handle(void)
{
	enum { N = 20 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	const char *exit0[] = { test_self(), "helper", "exit", "0", NULL };
	const char *sig[] = { test_self(), "helper", "signal", "15", NULL };
	const char *slow[] = { test_self(), "helper", "sleep-ms", "50", NULL };

	/* Exits, deaths by signal, later exits, queued ones, undetached. */
	for (int i = 0; i < N; i++) {
		opts.argv = i % 3 == 0 ? exit0 : i % 3 == 1 ? sig : slow;
		opts.detach = i % 4 != 0;
		opts.ensurestart = i % 2 == 0;
		opts.on_start = opts.ensurestart ? NULL : test_start_cb;
		opts.on_start_data = &rec;
		ASSERT_INT(bgrun_spawn(&opts, NULL), >=, 0);
	}
	bgrun_spawn_flush();
	ASSERT_EQ(test_start_seen(&rec).successes, N / 2);
	test_wait_reaped();
	ASSERT_EQ(test_count_children(NULL, 0), 0);
}

static bool is_child(pid_t pid)
{
	pid_t pids[256];
	int n = test_count_children(pids, 256);

	for (int i = 0; i < n && i < 256; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

void test_reap_freed_handle(void)
{
	struct bgrun_child *child;
	pid_t pid;

	/* Freed while running: the library reaps it once it ends. */
	pid = launch(&child, true, "pause", NULL);
	test_kill_at_exit(pid);
	bgrun_child_free(child);
	ASSERT(is_child(pid));
	/* Still running and unreaped: the pid cannot have been reused. */
	ASSERT_SYS(kill(pid, SIGKILL));
	test_wait_reaped();
	ASSERT(!is_child(pid));

	/* Freed once a zombie: reaped too. */
	pid = launch(&child, false, "exit", "0");
	for (int64_t end = test_now_ms() + TEST_DEADLINE_MS;
	     test_count_zombies() == 0;) {
		if (test_now_ms() > end)
			FAIL("child %d never became a zombie", (int)pid);
		test_msleep(2);
	}
	bgrun_child_free(child);
	test_wait_reaped();
	ASSERT(!is_child(pid));
}

void test_reap_freed_queued(void)
{
	enum { N = 16 };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	struct bgrun_child *child;

	/* Freed before (or while) launching: launched anyway, then reaped. */
	opts.argv = argv;
	opts.ensurestart = false;
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(bgrun_spawn(&opts, &child), 0);
		bgrun_child_free(child);
	}
	bgrun_spawn_flush();
	ASSERT_EQ(test_start_seen(&rec).calls, N);
	ASSERT_EQ(test_start_seen(&rec).successes, N);
	test_wait_reaped();
	ASSERT_EQ(test_count_children(NULL, 0), 0);
}

/* Whether thread tid is blocked in a wait the library's threads idle in. */
static bool thread_waits(pid_t tid)
{
	char path[64], buf[64];
	long nr;
	ssize_t n;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
		       (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT; /* gone: it holds nothing */
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return false; /* "running" */
	nr = strtol(buf, NULL, 10);
	if (nr == SYS_futex)
		return true;
#ifdef SYS_epoll_wait
	if (nr == SYS_epoll_wait)
		return true;
#endif
	return nr == SYS_epoll_pwait;
}

/*
 * Waits until every other thread of this process is blocked in a futex
 * or epoll wait, so none is inside the allocator when the caller forks.
 * glibc's malloc locks its arenas around fork; ASan's allocator does not,
 * and a child forked while another thread held one of its locks hangs on
 * its first allocation (seen in 1 of some 50 runs with the watcher thread
 * still freeing after it adopted a child).
 */
static void wait_threads_at_rest(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	bool all;

	do {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;

		ASSERT(d != NULL);
		all = true;
		while (all && (e = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(e->d_name);

			if (tid > 0 && tid != self && !thread_waits(tid))
				all = false;
		}
		(void)closedir(d);
		if (!all)
			(void)sched_yield();
	} while (!all);
}

/*
 * A caller may fork (the library never does). The forked child forgets
 * the parent's children, its watcher and its spawner thread (they are not
 * its own there), and launches and reaps its own with threads of its own;
 * the parent's reaper goes on as before.
 */
void test_reap_after_fork(void)
{
	struct bgrun_child *child;
	pid_t pid, forked, w;
	int wstatus;

	/* The parent's reaper watches one child, its spawner has run. */
	pid = launch(&child, false, "pause", NULL);
	test_kill_at_exit(pid);
	bgrun_child_free(child);
	ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 1);
	/*
	 * The spawner thread frees its job after the start is reported and
	 * the watcher frees after it adopts: a fork at such a moment is safe
	 * with glibc's malloc but not with ASan's allocator. So both are idle
	 * first: what this case checks is the fork.
	 */
	bgrun_spawn_flush();
	wait_threads_at_rest();
	(void)fflush(NULL);
	forked = fork();
	ASSERT_SYS(forked);
	if (forked == 0) {
		pid_t mine;

		ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 0);
		mine = launch(&child, false, "pause", NULL);
		bgrun_child_free(child);
		ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 1);
		ASSERT_SYS(kill(mine, SIGKILL));
		test_wait_reaped();
		ASSERT(!is_child(mine));
		/*
		 * _exit: the parent's reaper entries are left behind here by
		 * design (the reaper's fork hook), which LeakSanitizer would
		 * report.
		 */
		_exit(0);
	}
	do
		w = waitpid(forked, &wstatus, 0);
	while (w < 0 && errno == EINTR);
	ASSERT_EQ(w, forked);
	ASSERT(WIFEXITED(wstatus));
	ASSERT_EQ(WEXITSTATUS(wstatus), 0);
	ASSERT(is_child(pid));
	ASSERT_SYS(kill(pid, SIGKILL));
	test_wait_reaped();
	ASSERT(!is_child(pid));
}

static void note_pid(void *data, bgrun_pid_t pid_or_error,
		     const struct bgrun_failure *failure)
{
	(void)failure;
	*(pid_t *)data = pid_or_error;
}

/* Reaps pid ourselves: its exit code, or -1 if it is not ours to reap. */
static int reap_own(pid_t pid)
{
	int wstatus;
	pid_t w;

	do
		w = waitpid(pid, &wstatus, 0);
	while (w < 0 && errno == EINTR);
	if (w != pid || !WIFEXITED(wstatus))
		return -1;
	return WEXITSTATUS(wstatus);
}

/*
 * A disowned child is left to the caller: the library's reaper never
 * takes it (so the caller's own waitpid gets its status), whether it was
 * launched already or still queued when its handle was disowned.
 */
void test_reap_disowned(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "7", NULL };
	struct bgrun_child *child;
	pid_t pid = 0;

	for (int ensure = 0; ensure < 2; ensure++) {
		pid = launch(&child, ensure, "exit", "7");
		bgrun_child_disown(child);
		ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 0);
		ASSERT_EQ(reap_own(pid), 7);
	}
	/* Disowned while queued: the spawner launches it and lets it be. */
	opts.argv = argv;
	opts.ensurestart = false;
	opts.on_start = note_pid;
	opts.on_start_data = &pid;
	pid = 0;
	ASSERT_OK(bgrun_spawn(&opts, &child));
	bgrun_child_disown(child);
	bgrun_spawn_flush();
	ASSERT_INT(pid, >, 0);
	ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 0);
	ASSERT_EQ(reap_own(pid), 7);
	bgrun_child_disown(NULL);
}
