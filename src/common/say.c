/* SPDX-License-Identifier: MIT */
/* say.c: a failure explained in the caller's buffer, for the sink's checks of both builds (health.c, win/sink.c). */

#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>

int bgrun__say(char *why, size_t size, int error, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && size > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return error;
}
