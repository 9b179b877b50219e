/* SPDX-License-Identifier: MIT */
/* test.c: the test programs' one assertion library: the case runner, one-line failures, quoting, removing a tree. */

#include "test.h"

#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Only the first failing thread prints and exits. */
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;

void t_vexit(int code, const char *file, int line, const char *prefix,
	     const char *fmt, va_list ap)
{
	(void)pthread_mutex_lock(&exit_lock);
	fprintf(stderr, "%s:%d: %s", file, line, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(code);
}

void t_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vexit(1, file, line, "", fmt, ap);
}

void t_skip(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vexit(77, file, line, "skipped: ", fmt, ap);
}

void t_quote(char *buf, size_t size, const char *s)
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

	t_quote(qa, sizeof(qa), a);
	t_quote(qb, sizeof(qb), b);
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

const char *t_self(void)
{
	static char self[PATH_MAX];
	ssize_t n;

	if (self[0] != '\0')
		return self;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		t_fail(__FILE__, __LINE__, "readlink /proc/self/exe: %m");
	self[n] = '\0';
	return self;
}

int t_cases_main(const char *prog, const char *usage,
		 const struct t_case *cases, size_t n, int argc, char **argv,
		 void (*before)(void))
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[1], cases[i].name) != 0)
			continue;
		if (before != NULL)
			before();
		cases[i].fn();
		return 0;
	}
	fprintf(stderr, "%s: no case named %s (see --list)\n", prog, argv[1]);
	return 2;
}
