/* SPDX-License-Identifier: MIT */
/* tlib.h: what store-tests and sink-tests share: cases, one-line failures, assertions, removing a tree. */

#ifndef BGRUN_TLIB_H
#define BGRUN_TLIB_H

#include "bgrun.h"
#include "bgrun/test-control.h"
#include "tcore.h"

#include <string.h>

/* One case: `PROGRAM CASE` runs it; --list prints the names. */
struct t_case {
	const char *name;
	void (*fn)(void);
};
#define T_CASE(name) { #name, case_##name }

/* Fails with both strings shown bounded and escaped. */
__attribute__((noreturn))
void t_fail_str(const char *file, int line, const char *expr, const char *a,
		const char *b);

#define FAIL(...) t_fail(__FILE__, __LINE__, __VA_ARGS__)
#define SKIP(...) t_skip(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(cond) \
	do { \
		if (!(cond)) \
			FAIL("assertion failed: %s", #cond); \
	} while (0)
#define ASSERT_EQ(a, b) \
	do { \
		long long a_ = (long long)(a), b_ = (long long)(b); \
		if (a_ != b_) \
			FAIL("%s == %s (%lld vs %lld)", #a, #b, a_, b_); \
	} while (0)
/* A call returning >= 0 or -errno. */
#define ASSERT_OK(expr) \
	do { \
		int r_ = (int)(expr); \
		if (r_ < 0) \
			FAIL("%s failed: %s (%d)", #expr, bgrun_strerror(r_), \
			     r_); \
	} while (0)

#endif /* BGRUN_TLIB_H */
