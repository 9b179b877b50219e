/* SPDX-License-Identifier: MIT */
/* msg.c: logsink's messages, usage errors, help and printable text (also in the lean `logsink` front). */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

BGRUN__PRINTF(1, 0)
static void vmsg(const char *fmt, va_list ap)
{
	char line[4096];

	(void)vsnprintf(line, sizeof(line), fmt, ap);
	(void)fflush(stdout);
	(void)fprintf(stderr, "logsink: %s\n", line);
}

void lsink_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void lsink_usage_hint(void)
{
	(void)fputs("Try 'logsink --help'.\n", stderr);
	exit(LSINK_EXIT_USAGE);
}

void lsink_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	lsink_usage_hint();
}

int lsink_flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		lsink_msg("write error: %s", strerror(errno));
		return LSINK_EXIT_FAILURE;
	}
	return 0;
}

void lsink_help(const char *text)
{
	(void)fputs(text, stdout);
	exit(lsink_flush_stdout() != 0 ? LSINK_EXIT_FAILURE : EXIT_SUCCESS);
}

void lsink_getopt_init(char **argv)
{
	static char name[64];

	/* getopt names the program by argv[0] in its messages. */
	(void)snprintf(name, sizeof(name), "logsink %s", argv[0]);
	argv[0] = name;
	optind = 0; /* glibc: start afresh on a new vector */
	opterr = 1;
}

const char *lsink_printable(const char *s)
{
	static char *ring[4];
	static unsigned next;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (f == NULL)
		return "(out of memory)";
	(void)lsink_put_escaped(f, s, strlen(s), 0, -1, NULL);
	if (fclose(f) != 0 || buf == NULL) {
		free(buf);
		return "(out of memory)";
	}
	free(ring[next % 4]);
	ring[next++ % 4] = buf;
	return buf;
}
