/* SPDX-License-Identifier: MIT */
/* helper.c: `run-tests helper MODE`, the program the tests spawn; its use. */

/*
 * The modes (the command-line tests use them too: keep them stable):
 *   report FILE [ARGS...]  read stdin to EOF, write what the process sees
 *                          to FILE.tmp, rename it to FILE: key=value lines
 *                          pid ppid sid pgid sigblk sigign fds fd0 fd1 fd2
 *                          (then fdN for the first few N > 2 open) cwd
 *                          argc arg... env... stdin_len stdin_fnv
 *   exit N                 exit with status N
 *   signal SIG             reset SIG to its default and raise it
 *   pause                  block until killed
 *   stdout TEXT            write TEXT "\n" to descriptor 1
 *   stderr TEXT            write TEXT "\n" to descriptor 2
 *   outerr OUT ERR         write OUT "\n" to descriptor 1, then ERR "\n" to 2
 *   cat                    copy stdin to stdout
 *   sleep-ms N             sleep N milliseconds, exit 0
 *   inotify-hog            make inotify instances until the user's limit
 *                          refuses one (EMFILE), print "ready N" and hold
 *                          them until stdin ends; exit 77 if the process's
 *                          descriptor limit came first
 * Exit status 100 means the helper itself failed (bad usage, I/O error).
 */

#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define HELPER_FAILED 100

extern char **environ;

uint64_t test_fnv1a(const void *data, size_t len, uint64_t hash)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= UINT64_C(0x100000001b3);
	}
	return hash;
}

static int write_line(int fd, const char *text)
{
	int r = bgrun_write_all(fd, text, strlen(text));

	return r < 0 ? r : bgrun_write_all(fd, "\n", 1);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The open descriptors, sorted, but the one listing them; or -errno. */
static int list_fds(int *fds, int max)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0, dfd;

	if (dir == NULL)
		return -errno;
	dfd = dirfd(dir);
	while ((de = readdir(dir)) != NULL) {
		char *end;
		long fd;

		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end != '\0' || fd == dfd)
			continue;
		if (n < max)
			fds[n++] = (int)fd;
	}
	(void)closedir(dir);
	qsort(fds, (size_t)n, sizeof(fds[0]), cmp_int);
	return n;
}

/* What descriptor fd is open on (readlink), or "-" when closed. */
static void fd_target(int fd, char *buf, size_t size)
{
	char proc[64];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, size - 1);
	if (n < 0)
		(void)snprintf(buf, size, "-");
	else
		buf[n] = '\0';
}

/* Copies the SigBlk and SigIgn fields of /proc/self/status. */
static int report_signals(FILE *out)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[512];
	int found = 0;

	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		char val[64];

		if (sscanf(line, "SigBlk: %63s", val) == 1) {
			fprintf(out, "sigblk=%s\n", val);
			found++;
		} else if (sscanf(line, "SigIgn: %63s", val) == 1) {
			fprintf(out, "sigign=%s\n", val);
			found++;
		}
	}
	(void)fclose(f);
	return found == 2 ? 0 : -EIO;
}

static void report_hex(FILE *out, const char *key, const char *s)
{
	fprintf(out, "%s=", key);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fprintf(out, "%02x", *p);
	fputc('\n', out);
}

static int helper_report(const char *file, int argc, char **argv)
{
	enum { N_TARGETS = 3 + 16 }; /* 0, 1, 2 and the first extra ones */
	char buf[65536], link[PATH_MAX + 1], target[N_TARGETS][PATH_MAX + 1];
	int fds[4096], n_fds, n_targets = 0, targets[N_TARGETS];
	char *tmp = NULL;
	uint64_t hash = TEST_FNV_INIT, len = 0;
	FILE *out = NULL;
	int r;

	/* Stdin first: a test feeding a pipe waits for the report after it. */
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		hash = test_fnv1a(buf, (size_t)n, hash);
		len += (uint64_t)n;
	}

	/* Descriptors are listed before opening the report itself. */
	n_fds = list_fds(fds, (int)(sizeof(fds) / sizeof(fds[0])));
	if (n_fds < 0)
		return HELPER_FAILED;
	for (int fd = 0; fd < 3; fd++)
		targets[n_targets++] = fd;
	for (int i = 0; i < n_fds && n_targets < N_TARGETS; i++)
		if (fds[i] > 2)
			targets[n_targets++] = fds[i];
	for (int i = 0; i < n_targets; i++)
		fd_target(targets[i], target[i], sizeof(target[i]));
	if (asprintf(&tmp, "%s.tmp", file) < 0)
		return HELPER_FAILED;
	out = fopen(tmp, "we");
	if (out == NULL)
		goto fail;
	fprintf(out, "pid=%d\nppid=%d\nsid=%d\npgid=%d\n", (int)getpid(),
		(int)getppid(), (int)getsid(0), (int)getpgrp());
	r = report_signals(out);
	if (r < 0)
		goto fail;
	fputs("fds=", out);
	for (int i = 0; i < n_fds; i++)
		fprintf(out, "%s%d", i > 0 ? "," : "", fds[i]);
	fputc('\n', out);
	for (int i = 0; i < n_targets; i++)
		fprintf(out, "fd%d=%s\n", targets[i], target[i]);
	fprintf(out, "cwd=%s\n", getcwd(link, sizeof(link)) ? link : "-");
	fprintf(out, "argc=%d\n", argc);
	for (int i = 0; i < argc; i++)
		report_hex(out, "arg", argv[i]);
	for (char **e = environ; e != NULL && *e != NULL; e++)
		report_hex(out, "env", *e);
	fprintf(out, "stdin_len=%llu\nstdin_fnv=%016llx\n",
		(unsigned long long)len, (unsigned long long)hash);
	if (fclose(out) != 0) {
		out = NULL;
		goto fail;
	}
	out = NULL;
	if (rename(tmp, file) < 0)
		goto fail;
	free(tmp);
	return 0;

fail:
	if (out != NULL)
		(void)fclose(out);
	free(tmp);
	return HELPER_FAILED;
}

static int helper_cat(void)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return HELPER_FAILED;
		if (n == 0)
			return 0;
		if (bgrun_write_all(1, buf, (size_t)n) < 0)
			return HELPER_FAILED;
	}
}

static int helper_signal(int sig)
{
	sigset_t set;

	(void)signal(sig, SIG_DFL);
	(void)sigemptyset(&set);
	(void)sigaddset(&set, sig);
	(void)sigprocmask(SIG_UNBLOCK, &set, NULL);
	(void)raise(sig);
	return HELPER_FAILED;
}

static int helper_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

/*
 * Uses up the user's inotify instances (fs.inotify.max_user_instances is
 * per user), so that the user's other processes get EMFILE from
 * inotify_init1 while we hold them: how a test meets the fallbacks of
 * those that need inotify, without changing the limit for anyone else.
 */
static int helper_inotify_hog(void)
{
	struct rlimit rl;
	char buf[64];
	long n = 0;

	/* Our descriptor limit must not be what refuses first. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (;;) {
		if (inotify_init1(IN_CLOEXEC) >= 0) {
			n++;
			continue;
		}
		if (errno != EMFILE)
			return HELPER_FAILED;
		break;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    (rlim_t)n + 8 >= rl.rlim_cur) {
		(void)write_line(2, "inotify-hog: the descriptor limit came first");
		return 77;
	}
	(void)snprintf(buf, sizeof(buf), "ready %ld", n);
	if (write_line(1, buf) < 0)
		return HELPER_FAILED;
	for (;;) {
		ssize_t r = read(0, buf, sizeof(buf));

		if (r == 0 || (r < 0 && errno != EINTR))
			return 0;
	}
}

/* argv: run-tests helper MODE ARGS... */
int helper_main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";

	if (strcmp(mode, "report") == 0 && argc >= 4)
		return helper_report(argv[3], argc, argv);
	if (strcmp(mode, "exit") == 0 && argc >= 4)
		return atoi(argv[3]);
	if (strcmp(mode, "signal") == 0 && argc >= 4)
		return helper_signal(atoi(argv[3]));
	if (strcmp(mode, "pause") == 0) {
		for (;;)
			(void)pause();
	}
	if (strcmp(mode, "stdout") == 0 && argc >= 4)
		return write_line(1, argv[3]) < 0 ? HELPER_FAILED : 0;
	if (strcmp(mode, "stderr") == 0 && argc >= 4)
		return write_line(2, argv[3]) < 0 ? HELPER_FAILED : 0;
	if (strcmp(mode, "outerr") == 0 && argc >= 5) {
		if (write_line(1, argv[3]) < 0 || write_line(2, argv[4]) < 0)
			return HELPER_FAILED;
		return 0;
	}
	if (strcmp(mode, "cat") == 0)
		return helper_cat();
	if (strcmp(mode, "sleep-ms") == 0 && argc >= 4)
		return helper_sleep_ms(atol(argv[3]));
	if (strcmp(mode, "inotify-hog") == 0)
		return helper_inotify_hog();
	(void)write_line(2, "usage: run-tests helper "
		"report FILE|exit N|signal SIG|pause|stdout TEXT|stderr TEXT|"
		"outerr OUT ERR|cat|sleep-ms N|inotify-hog");
	return HELPER_FAILED;
}

/* The test side: parsing what `helper report` wrote. */

static void report_parse(char *text, struct report *rep)
{
	size_t cap = 64;

	rep->n = 0;
	rep->keys = test_malloc(cap * sizeof(char *));
	rep->vals = test_malloc(cap * sizeof(char *));
	for (char *line = text, *next; *line != '\0'; line = next) {
		char *eq;

		next = strchr(line, '\n');
		if (next == NULL)
			FAIL("report: unterminated last line");
		*next++ = '\0';
		eq = strchr(line, '=');
		if (eq == NULL)
			FAIL("report: line without '=': %.60s", line);
		*eq = '\0';
		if (rep->n == cap) {
			cap *= 2;
			rep->keys = realloc(rep->keys, cap * sizeof(char *));
			rep->vals = realloc(rep->vals, cap * sizeof(char *));
			if (rep->keys == NULL || rep->vals == NULL)
				FAIL("out of memory");
		}
		rep->keys[rep->n] = test_strdup(line);
		rep->vals[rep->n] = test_strdup(eq + 1);
		rep->n++;
	}
}

void report_wait(const char *path, struct report *rep)
{
	int64_t deadline = test_now_ms() + TEST_DEADLINE_MS;
	char *text;

	while ((text = test_read_file(path, NULL)) == NULL) {
		if (test_now_ms() > deadline)
			FAIL("no report %s after %d ms", path,
			     TEST_DEADLINE_MS);
		test_msleep(2);
	}
	report_parse(text, rep);
	free(text);
	if (strcmp(rep->keys[rep->n - 1], "stdin_fnv") != 0)
		FAIL("report %s is incomplete", path);
}

void report_free(struct report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		free(rep->keys[i]);
		free(rep->vals[i]);
	}
	free(rep->keys);
	free(rep->vals);
	rep->n = 0;
	rep->keys = rep->vals = NULL;
}

const char *report_get(const struct report *rep, const char *key)
{
	for (size_t i = 0; i < rep->n; i++)
		if (strcmp(rep->keys[i], key) == 0)
			return rep->vals[i];
	FAIL("the report has no %s= line", key);
}

long long report_get_int(const struct report *rep, const char *key)
{
	const char *val = report_get(rep, key);
	char *end;
	long long n;

	errno = 0;
	n = strtoll(val, &end, 10);
	if (errno != 0 || end == val || *end != '\0')
		FAIL("report: %s=%s is not a number", key, val);
	return n;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

char **report_get_all(const struct report *rep, const char *key)
{
	char **all = test_malloc((rep->n + 1) * sizeof(char *));
	size_t n = 0;

	for (size_t i = 0; i < rep->n; i++) {
		const char *hex = rep->vals[i];
		size_t len = strlen(hex);
		char *s;

		if (strcmp(rep->keys[i], key) != 0)
			continue;
		if (len % 2 != 0)
			FAIL("report: %s=%.40s has an odd length", key, hex);
		s = test_malloc(len / 2 + 1);
		for (size_t j = 0; j < len / 2; j++) {
			int hi = hex_digit(hex[2 * j]);
			int lo = hex_digit(hex[2 * j + 1]);

			if (hi < 0 || lo < 0)
				FAIL("report: %s=%.40s is not hex", key, hex);
			s[j] = (char)(hi << 4 | lo);
		}
		s[len / 2] = '\0';
		all[n++] = s;
	}
	all[n] = NULL;
	return all;
}

void test_run_report(struct bgrun_spawn_opts *opts, const char *rpath,
		     struct report *rep)
{
	const char *const *saved = opts->argv;
	const char *argv[5] = { test_self(), "helper", "report", NULL, NULL };
	struct bgrun_child *child = NULL;
	char *path = NULL;
	pid_t pid;
	int r;

	if (rpath == NULL) {
		const char *dir = test_tmpdir();

		path = test_path(dir, "report");
		argv[3] = path;
		opts->argv = argv;
		rpath = path;
	}
	r = bgrun_spawn(opts, &child);
	opts->argv = saved;
	ASSERT_OK(r);
	pid = bgrun_child_started(child, NULL);
	ASSERT_INT(pid, >, 0);
	if (opts->ensurestart)
		ASSERT_EQ(r, pid);
	else
		ASSERT_EQ(r, 0);
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	report_wait(rpath, rep);
	ASSERT_EQ(report_get_int(rep, "pid"), pid);
	free(path);
}

static void expect_same_state(int fds, int kids, const char *what)
{
	pid_t pids[16];
	int n = test_count_children(pids, 16);

	if (test_count_fds() != fds)
		FAIL("%s: %d descriptors before, %d after", what, fds,
		     test_count_fds());
	if (n != kids)
		FAIL("%s: %d children before, %d after (first: %d)", what, kids,
		     n, n > 0 ? (int)pids[0] : 0);
}

void test_expect_spawn_error(const struct bgrun_spawn_opts *opts, int error,
			     enum bgrun_stage stage)
{
	struct bgrun_spawn_opts o = *opts;
	struct test_start_rec rec = TEST_START_REC_INIT;
	struct test_start_seen seen;
	struct bgrun_failure f;
	struct bgrun_status st;
	struct bgrun_child *child, *const untouched = (void *)&rec;
	int fds, kids, r;

	test_warmup();
	fds = test_count_fds();
	kids = test_count_children(NULL, 0);

	/* ensurestart on: the error is the return value. */
	for (int with_handle = 0; with_handle < 2; with_handle++) {
		f = (struct bgrun_failure){ BGRUN_STAGE_NONE, 0 };
		o.failure = &f;
		o.ensurestart = true;
		child = untouched;
		r = bgrun_spawn(&o, with_handle ? &child : NULL);
		if (r != error)
			FAIL("bgrun_spawn (handle %d) gave %d (%s), "
			     "not %d (%s)", with_handle, r, bgrun_strerror(r),
			     error, bgrun_strerror(error));
		ASSERT_STR_EQ(bgrun_stage_name(f.stage),
			      bgrun_stage_name(stage));
		ASSERT_EQ(f.error, error);
		ASSERT(child == untouched);
		expect_same_state(fds, kids, "ensurestart on");
	}

	/* ensurestart off: the error goes to on_start and the handle. */
	o.ensurestart = false;
	o.on_start = test_start_cb;
	o.on_start_data = &rec;
	o.failure = NULL;
	child = NULL;
	r = bgrun_spawn(&o, &child);
	if (r < 0) {
		/* Only bad options may be refused before queueing. */
		ASSERT_EQ(stage, BGRUN_STAGE_ARGS);
		ASSERT_EQ(r, error);
		ASSERT(child == NULL);
		bgrun_spawn_flush();
		ASSERT_EQ(test_start_seen(&rec).calls, 0);
	} else {
		ASSERT_EQ(r, 0);
		ASSERT(child != NULL);
		f = (struct bgrun_failure){ BGRUN_STAGE_NONE, 0 };
		ASSERT_EQ(bgrun_child_started(child, &f), error);
		ASSERT_STR_EQ(bgrun_stage_name(f.stage),
			      bgrun_stage_name(stage));
		ASSERT_EQ(f.error, error);
		ASSERT_INT(bgrun_child_pid(child), <=, 0);
		ASSERT_EQ(bgrun_child_wait(child, 0, &st), error);
		ASSERT_INT(bgrun_child_kill(child, 0), <, 0);
		bgrun_child_free(child);
		bgrun_spawn_flush();
		seen = test_start_seen(&rec);
		ASSERT_EQ(seen.calls, 1);
		ASSERT_EQ(seen.last, error);
		ASSERT(!seen.failure_missing);
		ASSERT_STR_EQ(bgrun_stage_name(seen.failure.stage),
			      bgrun_stage_name(stage));
		ASSERT_EQ(seen.failure.error, error);
	}
	expect_same_state(fds, kids, "ensurestart off");
}
