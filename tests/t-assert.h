/* SPDX-License-Identifier: MIT */
/* t-assert.h: the assertions every test runner shares (tests/test.h, tests/win/win-tests.c); the runner defines FAIL first. */

#ifndef BGRUN_TESTS_T_ASSERT_H
#define BGRUN_TESTS_T_ASSERT_H

#ifndef FAIL
#error "define FAIL(...) (the runner's way to fail a case) before including t-assert.h"
#endif

#define ASSERT(cond) \
	do { \
		if (!(cond)) \
			FAIL("assertion failed: %s", #cond); \
	} while (0)

/* Compares two integers with op, printing both values on failure. */
#define ASSERT_INT(a, op, b) \
	do { \
		long long a_ = (long long)(a), b_ = (long long)(b); \
		if (!(a_ op b_)) \
			FAIL("%s %s %s (%lld vs %lld)", #a, #op, #b, a_, b_); \
	} while (0)
#define ASSERT_EQ(a, b) ASSERT_INT(a, ==, b)

#endif /* BGRUN_TESTS_T_ASSERT_H */
