/* SPDX-License-Identifier: MIT */
/* tcore.h: what every test program shares (tlib.c): the one-line exit, quoting, removing a tree. */

#ifndef BGRUN_TCORE_H
#define BGRUN_TCORE_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Prints "FILE:LINE: PREFIX" and the message as one line on stderr, then
 * exits with code (1: failed, 77: skipped). Thread-safe: the first
 * thread to get here prints and exits, the others wait for that.
 */
__attribute__((noreturn, format(printf, 5, 0)))
void t_vexit(int code, const char *file, int line, const char *prefix,
	     const char *fmt, va_list ap);

/* Failing (exit 1) and skipping (exit 77) with a one-line reason. */
__attribute__((noreturn, format(printf, 3, 4)))
void t_fail(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn, format(printf, 3, 4)))
void t_skip(const char *file, int line, const char *fmt, ...);
/* A bounded one-line rendering of s (C escapes, "(null)" for NULL). */
void t_quote(char *buf, size_t size, const char *s);

/* This program's path (/proc/self/exe). */
const char *t_self(void);

/* Removes a directory tree (best effort, for clean-up). */
void t_rmtree(const char *dir);

#endif /* BGRUN_TCORE_H */
