/* SPDX-License-Identifier: MIT */
/* utf8.c: UTF-8 checked and repaired (invalid bytes as \\xNN), for the event model and the store. */

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t bgrun__utf8_decode(const char *str, size_t n, uint32_t *ret_cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	uint32_t cp;
	size_t len;

	if (n == 0)
		return 0;
	if (c < 0x80) {
		if (ret_cp != NULL)
			*ret_cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	/* The second byte's range excludes overlongs and surrogates. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (ret_cp != NULL)
		*ret_cp = cp;
	return len;
}

bool bgrun__utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;

	for (size_t i = 0; i < n; i += len) {
		/* Most text is ASCII: skip it without decoding. */
		if (u[i] < 0x80) {
			len = 1;
			continue;
		}
		len = bgrun__utf8_decode((const char *)u + i, n - i, NULL);
		if (len == 0)
			return false;
	}
	return true;
}

static char *put_hex(char *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

	*o++ = '\\';
	*o++ = 'x';
	*o++ = hex[c >> 4];
	*o++ = hex[c & 15];
	return o;
}

/*
 * Appends s to o, escaping as \xNN every byte that is not valid UTF-8 and,
 * when printable_only, every control character (C0, DEL and C1).
 */
char *bgrun__put_escaped(char *o, const char *s, size_t n, bool printable_only)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;

	for (size_t i = 0; i < n; i += len) {
		/* A run of printable ASCII is copied as it is. */
		for (len = 0; i + len < n && u[i + len] >= 0x20 &&
			      u[i + len] < 0x7f;
		     len++)
			;
		if (len > 0) {
			memcpy(o, u + i, len);
			o += len;
			continue;
		}
		len = bgrun__utf8_decode((const char *)u + i, n - i, NULL);
		if (len == 0) {
			o = put_hex(o, u[i]);
			len = 1;
		} else if (printable_only &&
			   ((len == 1 && (u[i] < 0x20 || u[i] == 0x7f)) ||
			    (len == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0))) {
			for (size_t k = 0; k < len; k++)
				o = put_hex(o, u[i + k]);
		} else {
			memcpy(o, u + i, len);
			o += len;
		}
	}
	return o;
}

int bgrun__utf8_sanitize(const char *s, char **ret_copy)
{
	size_t n = strlen(s);
	char *copy, *end;

	if (bgrun__utf8_valid(s, n)) {
		*ret_copy = NULL;
		return 0;
	}
	copy = malloc(4 * n + 1);
	if (copy == NULL)
		return -ENOMEM;
	end = bgrun__put_escaped(copy, s, n, false);
	*end = '\0';
	*ret_copy = copy;
	return 0;
}
