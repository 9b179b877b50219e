/* SPDX-License-Identifier: MIT */
/* storepath.c: Mercurial's store path encoding (store.py: encodedir, _encodefname, _auxencode, _hybridencode). */

/*
 * A port of the rules, not of the code: each function below names the
 * store.py function whose output it reproduces byte for byte, and the
 * tests compare them with Mercurial's own (the C parsers.pathencode and
 * the pure Python _hybridencode) on crafted and random paths.
 */

#include "clone-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* store._maxstorepathlen, _dirprefixlen, _maxshortdirslen. */
#define MAX_STORE_PATH 120
#define DIR_PREFIX 8
#define MAX_SHORT_DIRS (8 * (DIR_PREFIX + 1) - 4)

/* A growing string; an allocation failure is remembered, not reported. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_reserve(struct sbuf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	sb_reserve(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_addc(struct sbuf *b, char c)
{
	sb_add(b, &c, 1);
}

/* "~xx", the escape of a reserved byte. */
static void sb_tilde(struct sbuf *b, unsigned char c)
{
	char esc[4];

	(void)snprintf(esc, sizeof(esc), "~%02x", c);
	sb_add(b, esc, 3);
}

/* Hands the string over: 0, or -ENOMEM (and frees it). */
static int sb_finish(struct sbuf *b, char **ret, size_t *ret_len)
{
	sb_reserve(b, 0);
	if (b->oom) {
		free(b->p);
		return -ENOMEM;
	}
	b->p[b->len] = '\0';
	*ret = b->p;
	if (ret_len != NULL)
		*ret_len = b->len;
	return 0;
}

/* Python's bytes.replace(pat, rep): left to right, non-overlapping. */
static void replace_all(struct sbuf *out, const char *s, size_t len,
			const char *pat, const char *rep)
{
	size_t plen = strlen(pat), rlen = strlen(rep);
	const char *end = s + len, *m;

	while ((m = memmem(s, (size_t)(end - s), pat, plen)) != NULL) {
		sb_add(out, s, (size_t)(m - s));
		sb_add(out, rep, rlen);
		s = m + plen;
	}
	sb_add(out, s, (size_t)(end - s));
}

/* Applies three replacements in order, as store.py chains them. */
static int replace3(const char *path, size_t len, const char *const pairs[6],
		    char **ret, size_t *ret_len)
{
	struct sbuf a = { 0 }, b = { 0 };

	replace_all(&a, path, len, pairs[0], pairs[1]);
	if (!a.oom)
		replace_all(&b, a.p != NULL ? a.p : "", a.len, pairs[2],
			    pairs[3]);
	a.len = 0;
	if (!b.oom)
		replace_all(&a, b.p != NULL ? b.p : "", b.len, pairs[4],
			    pairs[5]);
	a.oom |= b.oom;
	free(b.p);
	return sb_finish(&a, ret, ret_len);
}

int bgrun__encodedir(const char *path, size_t len, char **ret, size_t *ret_len)
{
	static const char *const pairs[6] = { ".hg/", ".hg.hg/", ".i/",
					      ".i.hg/", ".d/", ".d.hg/" };

	return replace3(path, len, pairs, ret, ret_len);
}

int bgrun__decodedir(const char *path, size_t len, char **ret, size_t *ret_len)
{
	static const char *const pairs[6] = { ".d.hg/", ".d/", ".i.hg/",
					      ".i/", ".hg.hg/", ".hg/" };
	struct sbuf b = { 0 };

	if (memmem(path, len, ".hg/", 4) == NULL) {
		sb_add(&b, path, len);
		return sb_finish(&b, ret, ret_len);
	}
	return replace3(path, len, pairs, ret, ret_len);
}

/* store._reserved(): control bytes, 126..255 and \:*?"<>| . */
static bool reserved(unsigned char c)
{
	return c < 32 || c >= 126 || (c != '\0' && strchr("\\:*?\"<>|", c));
}

/* store._encodefname (upper: capitals as "_x", '_' as "__"). */
static void encodefname(struct sbuf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (reserved(c)) {
			sb_tilde(out, c);
		} else if ((c >= 'A' && c <= 'Z') || c == '_') {
			sb_addc(out, '_');
			sb_addc(out, (char)(c == '_' ? '_' : c - 'A' + 'a'));
		} else {
			sb_addc(out, (char)c);
		}
	}
}

/* store.lowerencode: capitals lowered, reserved bytes as "~xx". */
static void lowerencode(struct sbuf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (reserved(c))
			sb_tilde(out, c);
		else if (c >= 'A' && c <= 'Z')
			sb_addc(out, (char)(c - 'A' + 'a'));
		else
			sb_addc(out, (char)c);
	}
}

/*
 * store._auxencode for one path component n (assumed lowercase): a
 * leading '.' or ' ' (dotencode), or a Windows device name as basename
 * ("aux", "com1.txt"), and a trailing '.' or ' ', are escaped.
 */
static void auxencode1(struct sbuf *out, const char *n, size_t len,
		       bool dotencode)
{
	static const char *const res3[] = { "aux", "con", "prn", "nul" };
	size_t start = out->len, l;
	const char *dot;
	bool dev = false;

	if (len == 0)
		return;
	if (dotencode && (n[0] == '.' || n[0] == ' ')) {
		sb_tilde(out, (unsigned char)n[0]);
		sb_add(out, n + 1, len - 1);
	} else {
		dot = memchr(n, '.', len);
		l = dot != NULL ? (size_t)(dot - n) : len;
		if (l == 3) {
			for (size_t i = 0; i < 4; i++)
				dev |= memcmp(n, res3[i], 3) == 0;
		} else if (l == 4 && n[3] >= '1' && n[3] <= '9') {
			dev = memcmp(n, "com", 3) == 0 ||
			      memcmp(n, "lpt", 3) == 0;
		}
		if (dev) {
			/* Encode the third letter: "aux" -> "au~78". */
			sb_add(out, n, 2);
			sb_tilde(out, (unsigned char)n[2]);
			sb_add(out, n + 3, len - 3);
		} else {
			sb_add(out, n, len);
		}
	}
	if (!out->oom && out->len > start &&
	    (out->p[out->len - 1] == '.' || out->p[out->len - 1] == ' ')) {
		unsigned char last = (unsigned char)out->p[out->len - 1];

		out->len--;
		sb_tilde(out, last);
	}
}

/* _auxencode over every '/'-separated component of s, joined again. */
static void auxencode(struct sbuf *out, const char *s, size_t len,
		      bool dotencode)
{
	const char *end = s + len;

	for (;;) {
		const char *slash = memchr(s, '/', (size_t)(end - s));
		const char *stop = slash != NULL ? slash : end;

		auxencode1(out, s, (size_t)(stop - s), dotencode);
		if (slash == NULL)
			break;
		sb_addc(out, '/');
		s = slash + 1;
	}
}

/* The extension of a basename as Python's os.path.splitext sees it. */
static size_t ext_start(const char *base, size_t len)
{
	const char *dot = NULL;

	for (size_t i = len; i > 0; i--) {
		if (base[i - 1] == '.') {
			dot = base + i - 1;
			break;
		}
	}
	if (dot == NULL)
		return len;
	/* Leading dots do not start an extension (".foo" has none). */
	for (const char *p = base; p < dot; p++)
		if (*p != '.')
			return (size_t)(dot - base);
	return len;
}

/*
 * store._hashencode(de, dotencode) of the encodedir'd path de: "dh/",
 * the first 8 bytes of as many directories as fit in 68, as much of the
 * basename as fits in 120, the hex SHA-1 of de, the extension.
 */
static int hashencode(const char *de, size_t len, bool dotencode,
		      char **ret, size_t *ret_len)
{
	struct sbuf low = { 0 }, parts = { 0 }, res = { 0 };
	unsigned char sha[20];
	char digest[41];
	const char *base, *p, *end;
	size_t base_len, ext, sdirs_len = 0, dirs_end, fill;

	bgrun__sha1(de, len, sha);
	for (int i = 0; i < 20; i++)
		(void)snprintf(digest + 2 * i, 3, "%02x", sha[i]);
	/* Skip the prefix "data/" or "meta/". */
	lowerencode(&low, de + (len > 5 ? 5 : len), len > 5 ? len - 5 : 0);
	auxencode(&parts, low.p != NULL ? low.p : "", low.len, dotencode);
	free(low.p);
	if (parts.oom || low.oom) {
		free(parts.p);
		return -ENOMEM;
	}
	p = parts.p != NULL ? parts.p : "";
	end = p + parts.len;
	base = p;
	for (const char *q = p; q < end; q++)
		if (*q == '/')
			base = q + 1;
	base_len = (size_t)(end - base);
	ext = ext_start(base, base_len);

	sb_add(&res, "dh/", 3);
	while (p < base) {
		const char *slash = memchr(p, '/', (size_t)(base - p));
		size_t n = (size_t)(slash - p), d = n < DIR_PREFIX ? n : DIR_PREFIX;
		size_t t = sdirs_len == 0 ? d : sdirs_len + 1 + d;

		if (sdirs_len != 0 && t > MAX_SHORT_DIRS)
			break;
		if (sdirs_len != 0)
			sb_addc(&res, '/');
		sb_add(&res, p, d);
		/* Windows cannot open directories ending in '.' or ' '. */
		if (d > 0 && !res.oom &&
		    (res.p[res.len - 1] == '.' || res.p[res.len - 1] == ' '))
			res.p[res.len - 1] = '_';
		sdirs_len = t;
		p = slash + 1;
	}
	if (sdirs_len > 0)
		sb_addc(&res, '/');
	dirs_end = res.len;
	/* Room left for the start of the basename, before digest and ext. */
	fill = dirs_end + 40 + (base_len - ext) < MAX_STORE_PATH
		       ? MAX_STORE_PATH - (dirs_end + 40 + (base_len - ext))
		       : 0;
	if (fill > base_len)
		fill = base_len;
	sb_add(&res, base, fill);
	sb_add(&res, digest, 40);
	sb_add(&res, base + ext, base_len - ext);
	free(parts.p);
	return sb_finish(&res, ret, ret_len);
}

int bgrun__hgpath_encode(const char *path, size_t len, bool dotencode,
			 char **ret, size_t *ret_len)
{
	struct sbuf ef = { 0 }, res = { 0 };
	char *de = NULL;
	size_t de_len;
	int r;

	r = bgrun__encodedir(path, len, &de, &de_len);
	if (r < 0)
		return r;
	encodefname(&ef, de, de_len);
	auxencode(&res, ef.p != NULL ? ef.p : "", ef.len, dotencode);
	res.oom |= ef.oom;
	free(ef.p);
	if (!res.oom && res.len > MAX_STORE_PATH) {
		free(res.p);
		r = hashencode(de, de_len, dotencode, ret, ret_len);
	} else {
		r = sb_finish(&res, ret, ret_len);
	}
	free(de);
	return r;
}
