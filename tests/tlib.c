/* SPDX-License-Identifier: MIT */
/* tlib.c: what store-tests and sink-tests share: one-line failures and removing a tree. */

#include "tlib.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void t_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void t_skip(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: skipped: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(77);
}

/* A bounded one-line rendering of s with C escapes. */
static void quote(char *buf, size_t size, const char *s)
{
	size_t used = 0;

	if (s == NULL) {
		(void)snprintf(buf, size, "(null)");
		return;
	}
	buf[used++] = '"';
	for (; *s && used + 8 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[used++] = (char)c;
		else
			used += (size_t)snprintf(buf + used, size - used,
						 "\\x%02x", c);
	}
	(void)snprintf(buf + used, size - used, "%s\"", *s ? "..." : "");
}

void t_fail_str(const char *file, int line, const char *expr, const char *a,
		const char *b)
{
	char qa[512], qb[512];

	quote(qa, sizeof(qa), a);
	quote(qb, sizeof(qb), b);
	t_fail(file, line, "%s (%s vs %s)", expr, qa, qb);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void t_rmtree(const char *dir)
{
	(void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
