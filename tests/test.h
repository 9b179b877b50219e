/* SPDX-License-Identifier: MIT */
/* test.h: the test programs' one assertion library (cases, one-line failures, assertions), and run-tests' helpers. */

#ifndef BGRUN_TEST_H
#define BGRUN_TEST_H

#include "bgrun.h"
#include "bgrun/test-control.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/*
 * EVERY TEST PROGRAM (test.c): run-tests, store-tests and sink-tests.
 *
 * A case is a function of no arguments that returns when it passed and
 * exits through FAIL (1) or SKIP (77, as meson expects) when not. The
 * cases of each program are listed once, in tests/cases.def.
 */
struct t_case {
	const char *name;
	void (*fn)(void);
};

/*
 * The runner's part of main(): `PROG --list` prints the names, `PROG CASE
 * [ARGS...]` runs before() (if not NULL) and then the case. Returns the
 * exit status: 0, or 2 with a one-line message for a usage error (usage
 * is the "usage: ..." line) or an unknown case.
 */
int t_cases_main(const char *prog, const char *usage,
		 const struct t_case *cases, size_t n, int argc, char **argv,
		 void (*before)(void));

/*
 * Prints "FILE:LINE: PREFIX" and the message as one line on stderr, then
 * exits with code (1: failed, 77: skipped). Thread-safe: the first
 * thread to get here prints and exits, the others wait for that.
 */
__attribute__((noreturn)) BGRUN__PRINTF(5, 0)
void t_vexit(int code, const char *file, int line, const char *prefix,
	     const char *fmt, va_list ap);

/* Failing (exit 1) and skipping (exit 77) with a one-line reason. */
__attribute__((noreturn)) BGRUN__PRINTF(3, 4)
void t_fail(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn)) BGRUN__PRINTF(3, 4)
void t_skip(const char *file, int line, const char *fmt, ...);
/* Fails with "EXPR (A vs B)", both strings quoted by t_quote. */
__attribute__((noreturn))
void t_fail_str(const char *file, int line, const char *expr, const char *a,
		const char *b);
/* A bounded one-line rendering of s (C escapes, "(null)" for NULL). */
void t_quote(char *buf, size_t size, const char *s);

/* This program's path (/proc/self/exe). */
const char *t_self(void);

/* Removes a directory tree (best effort, for clean-up). */
void t_rmtree(const char *dir);

#define FAIL(...) t_fail(__FILE__, __LINE__, __VA_ARGS__)
#define SKIP(...) t_skip(__FILE__, __LINE__, __VA_ARGS__)

#include "t-assert.h"

/* Two equal strings, neither NULL. */
#define ASSERT_STR_EQ(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) \
			t_fail_str(__FILE__, __LINE__, #a " == " #b, a_, b_); \
	} while (0)
/* Both NULL, or two equal strings. */
#define ASSERT_STR_EQ_NULL(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		if ((a_ == NULL) != (b_ == NULL) || \
		    (a_ != NULL && strcmp(a_, b_) != 0)) \
			t_fail_str(__FILE__, __LINE__, #a " == " #b, a_, b_); \
	} while (0)

/* A library call returning >= 0 or -errno. */
#define ASSERT_OK(expr) \
	do { \
		int r_ = (int)(expr); \
		if (r_ < 0) \
			FAIL("%s failed: %s (%d)", #expr, bgrun_strerror(r_), \
			     r_); \
	} while (0)

/* A libc call returning -1 with errno on failure. */
#define ASSERT_SYS(expr) \
	do { \
		if ((expr) == -1) \
			FAIL("%s failed: %m", #expr); \
	} while (0)

/*
 * RUN-TESTS (run-tests.c, helper.c): the unit runner of the primitive.
 * Its cases are the UNIT lines of tests/cases.def: a case named N is the
 * function test_N(), defined in a tests/test-<area>.c file.
 */
#define UNIT(name) void test_##name(void);
#define STORE(name)
#define SINK(name)
#include "cases.def"
#undef UNIT
#undef STORE
#undef SINK

/* helper.c: `run-tests helper MODE ARGS...`, the program the tests spawn. */
int helper_main(int argc, char **argv);
uint64_t test_fnv1a(const void *data, size_t len, uint64_t hash);
#define TEST_FNV_INIT UINT64_C(0xcbf29ce484222325)

/* Memory, failing the test when exhausted. */
void *test_malloc(size_t size);
char *test_strdup(const char *s);
BGRUN__PRINTF(1, 2)
char *test_printf(const char *fmt, ...);
void test_strv_free(char **v);
size_t test_strv_len(char *const *v);

/* This very program (readlink of /proc/self/exe). */
const char *test_self(void);

/* Time and polling (to poll a condition with a deadline only). */
int64_t test_now_ms(void);
void test_msleep(int ms);
#define TEST_DEADLINE_MS 10000

/* A new directory under $TMPDIR or /tmp, removed at exit (even on failure). */
const char *test_tmpdir(void); /* owned by the runner */
char *test_path(const char *dir, const char *name);
void test_write_file(const char *path, const void *data, size_t len,
		     mode_t mode);
/* The whole file (NUL-terminated), or NULL if it does not exist. */
char *test_read_file(const char *path, size_t *ret_len);
/* The caller's resolved path (the report's cwd= form). */
char *test_realpath(const char *path);

/* Process state. */
int test_count_fds(void);
int test_count_children(pid_t *ret_pids, int max); /* of this process */
int test_count_zombies(void);                      /* children in state Z */
/* Polls until bgrun__test_control(BGRUN__TEST_REAPER_PENDING) == 0 and no zombie child remains. */
void test_wait_reaped(void);
/* One launch of each kind so that the library's lazily made state exists. */
void test_warmup(void);
/* SIGKILLs pid when the test exits (for `helper pause` children). */
void test_kill_at_exit(pid_t pid);

/* A parsed `helper report` file: key=value lines in order. */
struct report {
	size_t n;
	char **keys;
	char **vals;
};

/* Polls for path with a deadline, then parses it. */
void report_wait(const char *path, struct report *rep);
void report_free(struct report *rep);
/* The first value of key (fails the test if absent). */
const char *report_get(const struct report *rep, const char *key);
long long report_get_int(const struct report *rep, const char *key);
/* Every value of key ("arg", "env"), hex-decoded, NULL-terminated. */
char **report_get_all(const struct report *rep, const char *key);

/*
 * Launches opts with ensurestart on and a handle, waits for its report and
 * for its exit (status 0), then fills rep. When rpath is NULL, argv is set
 * to `run-tests helper report FILE` with FILE in a new temp dir.
 */
void test_run_report(struct bgrun_spawn_opts *opts, const char *rpath,
		     struct report *rep);

/*
 * Checks that opts fails with error at stage, leaving no process and no
 * descriptor behind, with ensurestart on (with and without a handle) and
 * with ensurestart off (through bgrun_child_started and on_start).
 */
void test_expect_spawn_error(const struct bgrun_spawn_opts *opts, int error,
			     enum bgrun_stage stage);

/* An on_start callback recording its calls into a struct test_start_rec. */
struct test_start_seen {
	int calls;
	int successes;                  /* calls with a pid > 0 */
	pid_t last;                     /* the last pid_or_error */
	struct bgrun_failure failure;   /* copied from the last failure */
	bool failure_missing;           /* a failure came with failure NULL */
};
struct test_start_rec {
	pthread_mutex_t lock;
	struct test_start_seen seen;
};
#define TEST_START_REC_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }
void test_start_cb(void *data, pid_t pid_or_error,
		   const struct bgrun_failure *failure);
/* A copy of what the callback has seen so far. */
struct test_start_seen test_start_seen(struct test_start_rec *rec);

/* Waits for the child with the deadline and checks it exited with code. */
void test_wait_exit(struct bgrun_child *child, int code);

#endif /* BGRUN_TEST_H */
