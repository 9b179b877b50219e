/* SPDX-License-Identifier: MIT */
/* common.h: small helpers every part of the libraries uses (src/common/), never installed. */

#ifndef BGRUN_COMMON_INTERNAL_H
#define BGRUN_COMMON_INTERNAL_H

#include "bgrun/common.h"
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A helper program of ours: NAME beside this program (self, NULL: as
 * bgrun__self_path tells) when there is one there, as in a build tree;
 * else the installed path. In buf (size bytes) or installed.
 */
const char *bgrun__helper_path(const char *self, const char *name,
			       const char *installed, char *buf, size_t size);

/* Clocks, in nanoseconds. */
int64_t bgrun__now_ns(int clock_id);

/*
 * A per-user file as the XDG base directories place it: $XDG_VAR/leaf
 * (an absolute $XDG_VAR), else $HOME/home_dir/leaf; malloc'd into
 * *ret_path. -ENOENT when neither is set, -ENOMEM.
 */
int bgrun__user_path(const char *xdg_var, const char *home_dir,
		     const char *leaf, char **ret_path);

/* The length of a NULL-terminated vector (0 for a NULL one). */
static inline size_t bgrun__vec_len(const char *const *v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

/* The value of the hex digit c, -1 if c is not one. */
static inline int bgrun__hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Creates a thread with every signal blocked (caller's mask restored). */
int bgrun__thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg);
/* The same, for a thread that is joined rather than detached. */
int bgrun__thread_start_joinable(pthread_t *ret_thread, void *(*fn)(void *),
				 void *arg);

/* utf8.c */
/* The length of the valid UTF-8 sequence at s[0..n), 0 if invalid (bgrun_utf8_decode). */
size_t bgrun__utf8_decode(const char *s, size_t n, uint32_t *ret_cp);
bool bgrun__utf8_valid(const char *s, size_t n);
/*
 * s with each byte that is not part of valid UTF-8 replaced by \xNN:
 * *ret_copy is NULL when s is valid as it is, else a malloc'd copy.
 */
int bgrun__utf8_sanitize(const char *s, char **ret_copy);
/*
 * Copies s[0..n) to o, invalid bytes (and, if printable_only, control
 * characters) as \xNN; o needs 4 * n bytes. Returns the end.
 */
char *bgrun__put_escaped(char *o, const char *s, size_t n, bool printable_only);

/*
 * dropped.c: the distinct event ids a dropped-events file (f, read to its
 * end) notes for database db, in *ret_count. 0, or -ENOMEM.
 */
int bgrun__dropped_count_file(FILE *f, const char *db, int64_t *ret_count);

/*
 * say.c: why (size bytes, may be NULL) formatted from fmt, for the
 * callers that explain a failure in a caller's buffer; returns error.
 */
BGRUN__PRINTF(4, 5)
int bgrun__say(char *why, size_t size, int error, const char *fmt, ...);

#endif /* BGRUN_COMMON_INTERNAL_H */
