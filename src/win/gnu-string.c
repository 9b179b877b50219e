/* SPDX-License-Identifier: MIT */
/* gnu-string.c: the GNU C library string calls the shared code uses that mingw-w64's C runtime lacks (memrchr, memmem, strndup). */

#include "platform.h"

#include <stdlib.h>
#include <string.h>

void *memrchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;

	while (n > 0)
		if (p[--n] == (unsigned char)c)
			return (void *)(p + n);
	return NULL;
}

void *memmem(const void *hay, size_t hay_len, const void *needle,
	     size_t needle_len)
{
	const unsigned char *h = hay, *end;

	if (needle_len == 0)
		return (void *)h;
	if (hay_len < needle_len)
		return NULL;
	end = h + (hay_len - needle_len);
	for (; h <= end; h++) {
		h = memchr(h, *(const unsigned char *)needle,
			   (size_t)(end - h) + 1);
		if (h == NULL)
			return NULL;
		if (memcmp(h, needle, needle_len) == 0)
			return (void *)h;
	}
	return NULL;
}

char *strndup(const char *s, size_t n)
{
	size_t len = 0;
	char *p;

	while (len < n && s[len] != '\0')
		len++;
	p = malloc(len + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}
