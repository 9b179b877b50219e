/* SPDX-License-Identifier: MIT */
/* bundle.c: the reader of stream clone bundles v1: header, entries, their bytes, and every way they can lie (v2 in bundle2.c). */

/*
 * Format (mercurial/streamclone.py, generatebundlev1 and generatev1):
 *
 *   offset 0   "HGS1"
 *          4   compression, "UN" (the only one Mercurial ever wrote)
 *          6   u64 file count          (big-endian)
 *         14   u64 byte count          (the sum of the entry sizes)
 *         22   u16 n, the length of the requirements with their NUL
 *         24   n bytes: "req1,req2,...\0"
 *     24 + n   entries: name "\0" decimal-size "\n", then size bytes
 *
 * Nothing in the format marks its end: the counts do. Mercurial's own
 * reader trusts them; this one checks that they are kept (no entry beyond
 * the byte count, no byte after the last file) and, for a regular file,
 * that what the header announces fits in the file before anything is
 * written, so a lying bundle fails early and cheaply.
 */

#include "clone-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The smallest entry: a one-byte name, NUL, one digit, newline. */
#define MIN_ENTRY 4

void bgrun__quote(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	assert(size >= 8);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		/* Each byte takes at most 4; keep room for "..." and NUL. */
		if (o + 8 > size) {
			memcpy(out + o, "...", 4);
			return;
		}
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

int bgrun__bundle_fail(struct bgrun__bundle *b, uint64_t offset,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	b->err_offset = offset;
	b->err_at_offset = true;
	return -EBADMSG;
}

int bgrun__bundle_error(struct bgrun__bundle *b, int error,
			const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	b->err_at_offset = false;
	return error;
}

/* A read error: -errno, with a message. */
static int fail_errno(struct bgrun__bundle *b, int error)
{
	return bgrun__bundle_error(b, -error, "cannot read the bundle: %s",
				   strerror(error));
}

/* The bundle offset of the next unread byte. */
static uint64_t here(const struct bgrun__bundle *b)
{
	if (b->framed)
		return bgrun__bundle2_here(b);
	return b->pos - (b->tail - b->head);
}

uint64_t bgrun__bundle_here(const struct bgrun__bundle *b)
{
	return here(b);
}

/* Bytes of a sized bundle after offset off. */
static uint64_t room(const struct bgrun__bundle *b, uint64_t off)
{
	return b->size > off ? b->size - off : 0;
}

int bgrun__bundle_open_fd(struct bgrun__bundle *b, bgrun_os_fd_t fd,
			  size_t bufsize)
{
	uint64_t size, off;
	bool regular;
	int r;

	*b = (struct bgrun__bundle){ .fd = fd };
	r = bgrun__file_info(fd, &regular, &size, &off);
	if (r < 0)
		return fail_errno(b, -r);
	if (regular) {
		b->seekable = b->sized = true;
		b->base = off;
		b->size = size > off ? size - off : 0;
	}
	if (bufsize < 512)
		bufsize = 512;
	b->buf = malloc(bufsize);
	if (b->buf == NULL)
		return fail_errno(b, ENOMEM);
	b->cap = bufsize;
	b->own_buf = true;
	return 0;
}

void bgrun__bundle_open_mem(struct bgrun__bundle *b, const void *data,
			    size_t len)
{
	*b = (struct bgrun__bundle){ .fd = BGRUN_OS_FD_NONE, .sized = true,
				     .size = len };
	b->mem = data;
	b->buf = (unsigned char *)data;
	b->cap = b->tail = len;
	b->pos = b->raw_pos = len;
	b->eof = true;
}

void bgrun__bundle_close(struct bgrun__bundle *b)
{
	if (b->own_buf)
		free(b->buf);
	bgrun__bundle2_close(b);
	free(b->requirements);
	free(b->name);
	b->buf = NULL;
	b->requirements = b->name = NULL;
	b->own_buf = false;
}

static bool canceled(const struct bgrun__bundle *b)
{
	return b->cancel != NULL && *b->cancel;
}

ssize_t bgrun__bundle_raw_readv(struct bgrun__bundle *b,
				const struct iovec *iov, int n)
{
	for (;;) {
		ssize_t got;

		if (canceled(b))
			return bgrun__bundle_error(b, -ECANCELED, "interrupted");
		if (bgrun__os_fd_bad(b->fd)) {
			size_t left = b->size - b->raw_pos;

			got = 0;
			for (int i = 0; i < n && left > 0; i++) {
				size_t k = iov[i].iov_len < left ? iov[i].iov_len
								 : left;

				memcpy(iov[i].iov_base, b->mem + b->raw_pos + got, k);
				got += (ssize_t)k;
				left -= k;
			}
		} else {
			got = bgrun__file_readv(b->fd, iov, n,
						b->seekable ? (int64_t)(b->base + b->raw_pos)
							    : -1,
						b->cancel);
		}
		if (got == -EINTR)
			continue; /* the flag is looked at first */
		if (got < 0)
			return fail_errno(b, (int)-got);
		b->raw_pos += (uint64_t)got;
		return got;
	}
}

/*
 * Makes at least need unread bytes available (need <= cap), fewer only at
 * the end of the bundle. Returns the number available or -errno.
 */
static ssize_t fill(struct bgrun__bundle *b, size_t need)
{
	if (b->framed)
		return bgrun__bundle2_fill(b, need);
	if (need > b->cap)
		need = b->cap;
	while (b->tail - b->head < need && !b->eof) {
		struct iovec iov;
		ssize_t n;

		if (b->head == b->tail) {
			b->head = b->tail = 0;
		} else if (b->cap - b->head < need) {
			memmove(b->buf, b->buf + b->head, b->tail - b->head);
			b->tail -= b->head;
			b->head = 0;
		}
		iov = (struct iovec){ b->buf + b->tail, b->cap - b->tail };
		n = bgrun__bundle_raw_readv(b, &iov, 1);
		if (n < 0)
			return n;
		if (n == 0)
			b->eof = true;
		b->tail += (size_t)n;
		b->pos += (uint64_t)n;
	}
	return (ssize_t)(b->tail - b->head);
}

ssize_t bgrun__bundle_fill(struct bgrun__bundle *b, size_t need)
{
	return fill(b, need);
}

/* Copies up to n bytes to dst; returns how many (short at the end) or -errno. */
static ssize_t take(struct bgrun__bundle *b, void *dst, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t avail = fill(b, n - got);
		size_t k;

		if (avail < 0)
			return avail;
		if (avail == 0)
			break;
		k = (size_t)avail < n - got ? (size_t)avail : n - got;
		memcpy((char *)dst + got, b->buf + b->head, k);
		b->head += k;
		got += k;
	}
	return (ssize_t)got;
}

ssize_t bgrun__bundle_take(struct bgrun__bundle *b, void *dst, size_t n)
{
	return take(b, dst, n);
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static int truncated(struct bgrun__bundle *b, const char *where)
{
	return bgrun__bundle_fail(b, here(b), "truncated bundle: it ends in %s",
				  where);
}

/* Checks the requirements text (n bytes at offset 24). */
static int check_requirements(struct bgrun__bundle *b, const char *req,
			      size_t n)
{
	if (req[n - 1] != '\0')
		return bgrun__bundle_fail(b, 24 + n - 1,
			"requirements not terminated by a NUL byte");
	for (size_t i = 0; i + 1 < n; i++) {
		unsigned char c = (unsigned char)req[i];

		if (c == '\0')
			return bgrun__bundle_fail(b, 24 + i,
				"NUL byte inside the requirements");
		if (!(c == ',' || c == '-' || c == '.' || c == '_' ||
		      (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z')))
			return bgrun__bundle_fail(b, 24 + i,
				"invalid byte 0x%02x in the requirements", c);
	}
	return 0;
}

int bgrun__bundle_header(struct bgrun__bundle *b)
{
	unsigned char h[24];
	char magic[32];
	uint64_t left;
	size_t n;
	ssize_t got;
	int r;

	got = fill(b, 4);
	if (got < 0)
		return (int)got;
	if (got >= 4 && memcmp(b->buf + b->head, "HG20", 4) == 0) {
		b->version = 2;
		return bgrun__bundle2_header(b);
	}
	b->version = 1;
	b->req_offset = 24;
	got = take(b, h, sizeof(h));
	if (got < 0)
		return (int)got;
	if (got >= 4 && memcmp(h, "HGS1", 4) != 0) {
		bgrun__quote(magic, sizeof(magic), (const char *)h, 4);
		if (memcmp(h, "HG10", 4) == 0)
			return bgrun__bundle_fail(b, 0,
				"not a stream clone bundle: '%s' is a changegroup bundle v1's magic",
				magic);
		return bgrun__bundle_fail(b, 0,
			"not a stream clone bundle: bad magic '%s' (expected 'HGS1' or 'HG20')",
			magic);
	}
	if (got < 4)
		return truncated(b, "the magic number");
	if (got >= 6 && memcmp(h + 4, "UN", 2) != 0) {
		bgrun__quote(magic, sizeof(magic), (const char *)h + 4, 2);
		(void)bgrun__bundle_fail(b, 4,
			"unsupported compression '%s' (only 'UN' exists in bundles v1)",
			magic);
		return -EPROTONOSUPPORT;
	}
	if (got < 24)
		return truncated(b, got < 6 ? "the compression" :
				    got < 14 ? "the file count" :
				    got < 22 ? "the byte count" :
					       "the requirements length");
	b->file_count = be64(h + 6);
	b->byte_count = be64(h + 14);
	n = (size_t)h[22] << 8 | h[23];
	if (n == 0)
		return bgrun__bundle_fail(b, 22,
			"requirements length 0 (it counts their final NUL)");
	b->requirements = malloc(n);
	if (b->requirements == NULL)
		return fail_errno(b, ENOMEM);
	got = take(b, b->requirements, n);
	if (got < 0)
		return (int)got;
	if ((size_t)got < n)
		return truncated(b, "the requirements");
	r = check_requirements(b, b->requirements, n);
	if (r < 0)
		return r;
	b->data_start = 24 + n;
	if (!b->sized)
		return 0;

	/* What the counts announce must fit in what follows. */
	left = room(b, b->data_start);
	if (b->byte_count > left)
		return bgrun__bundle_fail(b, 14,
			"truncated bundle or false byte count: %llu bytes of file data announced, %llu bytes follow the header",
			(unsigned long long)b->byte_count,
			(unsigned long long)left);
	if (b->file_count > (left - b->byte_count) / MIN_ENTRY)
		return bgrun__bundle_fail(b, 6,
			"truncated bundle or false file count: %llu files cannot fit in the %llu bytes after the header",
			(unsigned long long)b->file_count,
			(unsigned long long)left);
	return 0;
}

/* A bad entry name: what is wrong, then the name itself. */
static int name_fail(struct bgrun__bundle *b, uint64_t off, const char *what)
{
	char q[256];

	bgrun__quote(q, sizeof(q), b->name, b->name_len);
	return bgrun__bundle_fail(b, off, "%s: %s", what, q);
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/*
 * store.revlog_type(): the names store._walk and the fncache's datafiles
 * yield, by their ending (REVLOG_FILES_MAIN_EXT, REVLOG_FILES_OTHER_EXT).
 */
bool bgrun__revlog_ending(const char *s, size_t len)
{
	static const char *const ext[] = { ".i",   "i.tmpcensored", ".idx",
					   ".d",   ".dat",          ".n",
					   ".nd",  ".sda",          "d.tmpcensored" };

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (ends_with(s, len, ext[i]))
			return true;
	return false;
}

/*
 * Whether a stream clone can carry the store file s (len bytes): what
 * streamclone.generatev1 and _v2_walk send, store.walk (datafiles, the
 * revlogs under data/ and meta/; topfiles, those at the top, which are
 * the changelog's and the root manifest's), then phaseroots and obsstore
 * (v2). Anything else (journal, undo, wlock, hgrc, bookmarks, dh/...) is
 * a file the bundle has no business creating: Mercurial reads an
 * abandoned transaction from a planted journal, a lock from wlock.
 * A v1 name is encodedir'd, which changes neither its first component
 * nor its ending, so the raw name is checked.
 */
static bool stream_name(const char *s, size_t len)
{
	if (memchr(s, '/', len) == NULL)
		return (len == 10 && memcmp(s, "phaseroots", 10) == 0) ||
		       (len == 8 && memcmp(s, "obsstore", 8) == 0) ||
		       ((strncmp(s, "00changelog", 11) == 0 ||
			 strncmp(s, "00manifest", 10) == 0) &&
			bgrun__revlog_ending(s, len));
	return (strncmp(s, "data/", 5) == 0 || strncmp(s, "meta/", 5) == 0) &&
	       bgrun__revlog_ending(s, len);
}

/* Checks an entry name; returns 0 or the -EBADMSG of bgrun__bundle_fail. */
int bgrun__bundle_check_name(struct bgrun__bundle *b, uint64_t off)
{
	const char *name = b->name, *p, *end = b->name + b->name_len;

	if (b->name_len == 0)
		return bgrun__bundle_fail(b, off, "empty entry name");
	if (name[0] == '/')
		return name_fail(b, off, "absolute entry name");
	if (memchr(name, '\n', b->name_len) != NULL)
		return name_fail(b, off, "entry name contains a newline");
	if (memchr(name, '\r', b->name_len) != NULL)
		return name_fail(b, off, "entry name contains a carriage return");
	for (p = name; p <= end;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = (size_t)((slash != NULL ? slash : end) - p);

		if (n == 0)
			return name_fail(b, off, "entry name has an empty component");
		if (n == 1 && p[0] == '.')
			return name_fail(b, off, "entry name has a '.' component");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return name_fail(b, off, "entry name has a '..' component");
		if (slash == NULL)
			break;
		p = slash + 1;
	}
	if (strcmp(name, "requires") == 0 || strcmp(name, "fncache") == 0 ||
	    strcmp(name, "lock") == 0)
		return name_fail(b, off,
				 "entry name is a file the store keeps itself");
	if (!stream_name(name, b->name_len))
		return name_fail(b, off,
				 "entry name is not a file a stream clone creates (revlog files under data/ and meta/, 00changelog.*, 00manifest.*, phaseroots, obsstore)");
	return 0;
}

int bgrun__bundle_name_room(struct bgrun__bundle *b, size_t len)
{
	size_t cap = b->name_cap ? b->name_cap : 256;
	char *p;

	if (len + 1 <= b->name_cap)
		return 0;
	while (cap < len + 1)
		cap *= 2;
	p = realloc(b->name, cap);
	if (p == NULL)
		return fail_errno(b, ENOMEM);
	b->name = p;
	b->name_cap = cap;
	return 0;
}

/* Reads the name up to its NUL into b->name. */
static int read_name(struct bgrun__bundle *b, uint64_t off)
{
	int r;

	b->name_len = 0;
	for (;;) {
		ssize_t avail = fill(b, 1);
		const unsigned char *start, *nul;
		size_t n;

		if (avail < 0)
			return (int)avail;
		if (avail == 0) {
			if (b->name_len == 0)
				return bgrun__bundle_fail(b, off,
					"bundle ends after %llu of the %llu files announced (truncated, or a false file count)",
					(unsigned long long)b->files_seen,
					(unsigned long long)b->file_count);
			return truncated(b, "an entry name");
		}
		start = b->buf + b->head;
		nul = memchr(start, '\0', (size_t)avail);
		n = nul != NULL ? (size_t)(nul - start) : (size_t)avail;
		if (b->name_len + n > BGRUN__BUNDLE_NAME_MAX)
			return bgrun__bundle_fail(b, off,
				"entry name longer than %d bytes",
				BGRUN__BUNDLE_NAME_MAX);
		r = bgrun__bundle_name_room(b, b->name_len + n);
		if (r < 0)
			return r;
		memcpy(b->name + b->name_len, start, n);
		b->name_len += n;
		b->name[b->name_len] = '\0';
		b->head += n + (nul != NULL);
		if (nul != NULL)
			return 0;
	}
}

/*
 * A byte that is not part of a size. When a NUL follows before the end of
 * the line (within the next 64 bytes, however the bundle is buffered), the
 * "size" was the rest of a name holding a NUL byte.
 */
static int bad_size(struct bgrun__bundle *b, unsigned char c,
		    uint64_t name_end)
{
	ssize_t avail = fill(b, 64);
	const unsigned char *p = b->buf + b->head;
	const unsigned char *end = p + (avail > 64 ? 64 : avail > 0 ? avail : 0);
	const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
	const unsigned char *nul = memchr(p, '\0', (size_t)((nl ? nl : end) - p));
	char q[256];

	if (nul != NULL) {
		bgrun__quote(q, sizeof(q), b->name, b->name_len);
		return bgrun__bundle_fail(b, name_end,
			"entry name contains a NUL byte: %s\\x00...", q);
	}
	if (c == '\n')
		return bgrun__bundle_fail(b, here(b), "entry size missing");
	return bgrun__bundle_fail(b, here(b),
		"invalid entry size: byte 0x%02x where a digit or newline belongs",
		c);
}

/* Reads the decimal size and its newline. */
static int read_size(struct bgrun__bundle *b, uint64_t *ret_size)
{
	uint64_t v = 0, name_end = here(b) - 1;
	int digits = 0;

	for (;;) {
		ssize_t avail = fill(b, 1);
		unsigned char c;

		if (avail < 0)
			return (int)avail;
		if (avail == 0)
			return truncated(b, "an entry size");
		c = b->buf[b->head];
		if (c == '\n' && digits > 0) {
			b->head++;
			*ret_size = v;
			return 0;
		}
		if (c < '0' || c > '9')
			return bad_size(b, c, name_end);
		if (v > (UINT64_MAX - 9) / 10)
			return bgrun__bundle_fail(b, here(b),
				"entry size too large");
		v = v * 10 + (uint64_t)(c - '0');
		digits++;
		b->head++;
	}
}

int bgrun__bundle_next(struct bgrun__bundle *b, struct bgrun__entry *ret)
{
	uint64_t off = here(b), size = 0, left;
	char q[256];
	ssize_t avail;
	int r;

	assert(b->entry_left == 0);
	if (canceled(b))
		return bgrun__bundle_error(b, -ECANCELED, "interrupted");
	if (b->version == 2)
		return bgrun__bundle2_next(b, ret);
	if (b->files_seen == b->file_count) {
		avail = fill(b, 1);
		if (avail < 0)
			return (int)avail;
		if (avail > 0)
			return bgrun__bundle_fail(b, off,
				"unexpected data after the last of the %llu files announced (false file count?)",
				(unsigned long long)b->file_count);
		if (b->bytes_seen != b->byte_count)
			return bgrun__bundle_fail(b, 14,
				"false byte count: the header says %llu bytes, the %llu files hold %llu",
				(unsigned long long)b->byte_count,
				(unsigned long long)b->file_count,
				(unsigned long long)b->bytes_seen);
		return 0;
	}
	r = read_name(b, off);
	if (r < 0)
		return r;
	r = read_size(b, &size);
	if (r < 0)
		return r;
	r = bgrun__bundle_check_name(b, off);
	if (r < 0)
		return r;
	left = b->byte_count - b->bytes_seen;
	if (size > left || (b->sized && size > room(b, here(b)))) {
		bool count = size > left;

		bgrun__quote(q, sizeof(q), b->name, b->name_len);
		return bgrun__bundle_fail(b, off,
			"entry %s of %llu bytes is larger than the %llu bytes %s",
			q, (unsigned long long)size,
			(unsigned long long)(count ? left : room(b, here(b))),
			count ? "the byte count leaves" : "left in the bundle");
	}
	b->files_seen++;
	b->bytes_seen += size;
	b->entry_left = size;
	b->entry_offset = off;
	*ret = (struct bgrun__entry){ .name = b->name, .name_len = b->name_len,
				      .size = size, .offset = off };
	return 1;
}

int bgrun__bundle_data(struct bgrun__bundle *b, size_t max,
		       const void **ret_ptr, size_t *ret_len)
{
	size_t n;
	char q[256];

	if (b->entry_left == 0)
		return 0;
	if (b->head == b->tail) {
		size_t want = b->entry_left < b->cap ? (size_t)b->entry_left
						      : b->cap;
		ssize_t avail = fill(b, want);

		if (avail < 0)
			return (int)avail;
		if (avail == 0) {
			bgrun__quote(q, sizeof(q), b->name, b->name_len);
			return bgrun__bundle_fail(b, here(b),
				"truncated bundle: it ends %llu bytes before the end of entry %s",
				(unsigned long long)b->entry_left, q);
		}
	}
	n = b->tail - b->head;
	if (n > b->entry_left)
		n = (size_t)b->entry_left;
	if (n > max)
		n = max;
	*ret_ptr = b->buf + b->head;
	*ret_len = n;
	b->head += n;
	b->entry_left -= n;
	return 1;
}

int bgrun__bundle_take_direct(struct bgrun__bundle *b, uint64_t *ret_fd_off,
			      uint64_t *ret_len)
{
	if (!b->seekable || b->framed || b->head != b->tail ||
	    b->entry_left == 0)
		return -EAGAIN;
	/* bgrun__bundle_next checked that the entry fits in the file. */
	*ret_fd_off = b->base + b->pos;
	*ret_len = b->entry_left;
	b->pos += b->entry_left;
	b->raw_pos += b->entry_left;
	b->entry_left = 0;
	return 0;
}
