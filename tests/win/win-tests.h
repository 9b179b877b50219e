/* SPDX-License-Identifier: MIT */
/* win-tests.h: what the Windows test runner's files share (win-tests.c: the primitive's cases and the helpers; win-log-tests.c: the logged mode's cases). */

#ifndef BGRUN_WIN_TESTS_H
#define BGRUN_WIN_TESTS_H

#include "bgrun.h"

#include <stddef.h>
#include <wchar.h>

/* Ends the case: 0 passed, 1 failed, 77 skipped; says why on stderr. */
void __attribute__((noreturn)) BGRUN__PRINTF(4, 5)
t_exit(int code, const char *file, int line, const char *fmt, ...);
#define FAIL(...) t_exit(1, __FILE__, __LINE__, __VA_ARGS__)
#define SKIP(...) t_exit(77, __FILE__, __LINE__, __VA_ARGS__)
#include "../t-assert.h"
#define ASSERT_STR(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) \
			FAIL("%s == %s (\"%s\" vs \"%s\")", #a, #b, \
			     a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

extern const char *case_name;
/* win-helper.exe beside this program, and this case's own directory. */
extern char helper[];
extern char tmpdir[];

/* wine's version when under wine, else NULL. */
const char *wine_version(void);
char *dup_printf(const char *fmt, ...) BGRUN__PRINTF(1, 2);
wchar_t *wide(const char *s);
/* tmpdir\name, malloc'd. */
char *tmp_path(const char *name);
/* A whole file, NUL-terminated (NULL if absent); spit writes one. */
char *slurp(const char *path, size_t *ret_len);
void spit(const char *path, const char *text);
/* " (Windows error N)" for an EIO the library had no errno for. */
const char *win_detail(int r);
/* bgrun_spawn, failing the case on error (wine's start flakes retried). */
int spawn_or_fail(struct bgrun_spawn_opts *o, struct bgrun_child **ret);
/* Launches and waits: the exit code (fails the case if it did not exit). */
int run(struct bgrun_spawn_opts *o, struct bgrun_status *ret);
/* The build's bgrun.exe. */
char *bgrun_path(void);
/* Runs bgrun with args: its exit code; *ret_err (if not NULL) its stderr. */
int run_bgrun(const char *const *args, char **ret_err);
/* The awkward arguments (NULL-terminated), and the check of a file of them. */
extern const char *const awkward[];
void check_args(const char *out, const char *const *exp, size_t first);

/* win-log-tests.c: `win-tests --log-...`, the writers its cases launch. */
int win_log_child(int argc, char **argv);
/* Sets (NULL: removes) a variable of ours, which children inherit. */
void set_env(const char *name, const char *value);
/* The build's logsink.exe, beside bgrun.exe. */
char *logsink_path(void);
/* Runs logsink.exe with args: its exit code; *ret_out, *ret_err what it wrote. */
int run_logsink(const char *const *args, char **ret_out, char **ret_err);
#define LOG(name) void case_##name(void);
#include "log-cases.def"
#undef LOG

#endif /* BGRUN_WIN_TESTS_H */
