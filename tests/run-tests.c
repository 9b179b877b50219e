/* SPDX-License-Identifier: MIT */
/* run-tests.c: the unit test runner: one case per run, --list, helper. */

#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define UNIT(name) { #name, test_##name },
#define STORE(name)
#define SINK(name)
static const struct t_case cases[] = {
#include "cases.def"
};
#undef UNIT
#undef STORE
#undef SINK

/*
 * What the atexit handler undoes, whether the case passed or failed:
 * paused children to kill, then temp dirs to remove.
 */
static pthread_mutex_t cleanup_lock = PTHREAD_MUTEX_INITIALIZER;
static char *tmpdirs[64];
static int n_tmpdirs;
static pid_t kill_pids[64];
static int n_kill_pids;

static int scan_children(pid_t *pids, int max, bool zombies);

static void cleanup(void)
{
	pid_t kids[256];
	int n_kids;

	(void)pthread_mutex_lock(&cleanup_lock);
	/* Only our unreaped children: their pids cannot have been reused. */
	n_kids = scan_children(kids, 256, false);
	for (int i = 0; i < n_kill_pids; i++)
		for (int j = 0; j < n_kids && j < 256; j++)
			if (kids[j] == kill_pids[i])
				(void)kill(kill_pids[i], SIGKILL);
	for (int i = 0; i < n_tmpdirs; i++) {
		t_rmtree(tmpdirs[i]);
		free(tmpdirs[i]);
	}
	n_tmpdirs = 0;
	n_kill_pids = 0;
	(void)pthread_mutex_unlock(&cleanup_lock);
}

void test_kill_at_exit(pid_t pid)
{
	(void)pthread_mutex_lock(&cleanup_lock);
	if (n_kill_pids < (int)(sizeof(kill_pids) / sizeof(kill_pids[0])))
		kill_pids[n_kill_pids++] = pid;
	(void)pthread_mutex_unlock(&cleanup_lock);
}

void *test_malloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		FAIL("out of memory (%zu bytes)", size);
	return p;
}

char *test_strdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		FAIL("out of memory");
	return p;
}

char *test_printf(const char *fmt, ...)
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

void test_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

size_t test_strv_len(char *const *v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

const char *test_self(void)
{
	return t_self();
}

int64_t test_now_ms(void)
{
	return bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) / 1000000;
}

void test_msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const char *test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir;

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	dir = test_printf("%s/bgrun-test-XXXXXX", base);
	if (mkdtemp(dir) == NULL)
		FAIL("mkdtemp %s: %m", dir);
	(void)pthread_mutex_lock(&cleanup_lock);
	if (n_tmpdirs == (int)(sizeof(tmpdirs) / sizeof(tmpdirs[0]))) {
		(void)pthread_mutex_unlock(&cleanup_lock);
		(void)rmdir(dir);
		FAIL("too many temp dirs");
	}
	tmpdirs[n_tmpdirs++] = dir;
	(void)pthread_mutex_unlock(&cleanup_lock);
	return dir;
}

char *test_path(const char *dir, const char *name)
{
	return test_printf("%s/%s", dir, name);
}

void test_write_file(const char *path, const void *data, size_t len,
		     mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int r;

	if (fd < 0)
		FAIL("open %s: %m", path);
	r = bgrun_write_all(fd, data, len);
	if (r < 0)
		FAIL("write %s: %s", path, strerror(-r));
	ASSERT_SYS(fchmod(fd, mode));
	ASSERT_SYS(close(fd));
}

char *test_read_file(const char *path, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *buf;

	if (fd < 0 && errno == ENOENT)
		return NULL;
	if (fd < 0)
		FAIL("open %s: %m", path);
	buf = test_malloc(cap + 1);
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
			FAIL("read %s: %m", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	(void)close(fd);
	buf[len] = '\0';
	if (ret_len != NULL)
		*ret_len = len;
	return buf;
}

char *test_realpath(const char *path)
{
	char *r = realpath(path, NULL);

	if (r == NULL)
		FAIL("realpath %s: %m", path);
	return r;
}

int test_count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (dir == NULL)
		FAIL("opendir /proc/self/fd: %m");
	for (struct dirent *de; (de = readdir(dir)) != NULL;)
		if (de->d_name[0] != '.')
			n++;
	(void)closedir(dir);
	return n - 1; /* the directory's own descriptor */
}

/*
 * Children of this process (zombies only when zombies), from /proc/N/stat;
 * -1 if /proc cannot be read.
 */
static int scan_children(pid_t *pids, int max, bool zombies)
{
	DIR *dir = opendir("/proc");
	pid_t self = getpid();
	int n = 0;

	if (dir == NULL)
		return -1;
	for (struct dirent *de; (de = readdir(dir)) != NULL;) {
		char path[300], buf[1024], *p, state;
		int fd, ppid;
		ssize_t len;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone meanwhile */
		len = read(fd, buf, sizeof(buf) - 1);
		(void)close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* "pid (comm) S ppid ...": comm may hold spaces and ')'. */
		p = strrchr(buf, ')');
		if (p == NULL || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid != self || (zombies && state != 'Z'))
			continue;
		if (n < max)
			pids[n] = (pid_t)atoi(de->d_name);
		n++;
	}
	(void)closedir(dir);
	return n;
}

int test_count_children(pid_t *ret_pids, int max)
{
	int n = scan_children(ret_pids, max, false);

	if (n < 0)
		FAIL("cannot read /proc");
	return n;
}

int test_count_zombies(void)
{
	int n = scan_children(NULL, 0, true);

	if (n < 0)
		FAIL("cannot read /proc");
	return n;
}

void test_wait_reaped(void)
{
	int64_t deadline = test_now_ms() + TEST_DEADLINE_MS;
	int pending, zombies;

	for (;;) {
		pending = bgrun__test_control(BGRUN__TEST_REAPER_PENDING);
		zombies = test_count_zombies();
		if (pending == 0 && zombies == 0)
			return;
		if (test_now_ms() > deadline)
			break;
		test_msleep(2);
	}
	FAIL("not reaped after %d ms: reaper pending = %d, "
	     "%d zombie children", TEST_DEADLINE_MS, pending, zombies);
}

void test_start_cb(void *data, pid_t pid_or_error,
		   const struct bgrun_failure *failure)
{
	struct test_start_rec *rec = data;

	(void)pthread_mutex_lock(&rec->lock);
	rec->seen.calls++;
	rec->seen.last = pid_or_error;
	if (pid_or_error > 0)
		rec->seen.successes++;
	else if (failure == NULL)
		rec->seen.failure_missing = true;
	else
		rec->seen.failure = *failure;
	(void)pthread_mutex_unlock(&rec->lock);
}

struct test_start_seen test_start_seen(struct test_start_rec *rec)
{
	struct test_start_seen seen;

	(void)pthread_mutex_lock(&rec->lock);
	seen = rec->seen;
	(void)pthread_mutex_unlock(&rec->lock);
	return seen;
}

void test_wait_exit(struct bgrun_child *child, int code)
{
	struct bgrun_status st;

	ASSERT_OK(bgrun_child_wait(child, TEST_DEADLINE_MS, &st));
	if (!st.exited)
		FAIL("child %d did not exit: signaled=%d signal=%d",
		     (int)st.pid, st.signaled, st.signal);
	ASSERT_EQ(st.exit_code, code);
}

void test_warmup(void)
{
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *pause[] = { test_self(), "helper", "pause", NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct test_start_rec rec = TEST_START_REC_INIT;
	struct bgrun_child *child;
	pid_t pid;

	opts.argv = argv;
	ASSERT_OK(bgrun_spawn(&opts, NULL));
	ASSERT_OK(bgrun_spawn(&opts, &child));
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	opts.ensurestart = false;
	ASSERT_OK(bgrun_spawn(&opts, &child));
	ASSERT_INT(bgrun_child_started(child, NULL), >, 0);
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	opts.on_start = test_start_cb;
	opts.on_start_data = &rec;
	ASSERT_OK(bgrun_spawn(&opts, NULL));
	bgrun_spawn_flush();
	ASSERT_EQ(test_start_seen(&rec).successes, 1);
	test_wait_reaped();
	/*
	 * The reaper's watcher (and its descriptors) starts with the first
	 * child still running when adopted; one that exited first is reaped
	 * on the spot. A child that waits to be killed starts it for sure.
	 */
	opts.argv = pause;
	opts.ensurestart = true;
	opts.on_start = NULL;
	pid = bgrun_spawn(&opts, NULL);
	ASSERT_INT(pid, >, 0);
	test_kill_at_exit(pid);
	ASSERT_EQ(bgrun__test_control(BGRUN__TEST_REAPER_PENDING), 1);
	ASSERT_SYS(kill(pid, SIGKILL));
	test_wait_reaped();
}

/* What a case needs before it runs: clean-up at exit, our own path. */
static void before_case(void)
{
	if (atexit(cleanup) != 0)
		FAIL("atexit failed");
	(void)test_self();
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: run-tests CASE | --list | helper MODE ARGS...";

	/*
	 * _exit: the helper has nothing to flush, and skipping atexit work
	 * (LeakSanitizer's check in sanitizer builds) keeps it cheap.
	 */
	if (argc >= 2 && strcmp(argv[1], "helper") == 0)
		_exit(helper_main(argc, argv));
	if (argc > 2) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	return t_cases_main("run-tests", usage, cases,
			    sizeof(cases) / sizeof(cases[0]), argc, argv,
			    before_case);
}
