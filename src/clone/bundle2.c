/* SPDX-License-Identifier: MIT */
/* bundle2.c: the reader of stream clone bundles v2: the bundle2 container, the stream2 part, its framed payload and its entries. */

/*
 * Format (mercurial/bundle2.py, bundle20 and bundlepart; streamclone.py,
 * generatev2 and _emit2; integers big-endian):
 *
 *   "HG20"  i32 n  n bytes of stream parameters ("name=value name2",
 *                  urlquoted; a capital first letter makes one mandatory)
 *   parts:  i32 n  (0: end of stream)  n bytes of part header:
 *             u8 t  t bytes of type (capitals: mandatory)  u32 id
 *             u8 mandatory count  u8 advisory count
 *             a (u8 key size, u8 value size) per parameter, then the
 *             keys and values in that order
 *           the payload, in frames: i32 n  n bytes (0: end of payload;
 *             -1: an out-of-band part follows, then the frames go on)
 *
 * A stream bundle has one part, "stream2", with the mandatory parameters
 * filecount, bytecount and requirements (urlquoted, comma-separated).
 * Its payload is filecount entries: a source byte ('s': the store, 'c':
 * .hg/cache), uvarint name length, uvarint data length, the name, the
 * data. Mercurial cuts the payload into 32 KiB frames whatever the entry
 * boundaries, so an entry may span frames: bgrun__bundle2_fill moves the
 * payload into buf without the frame headers, and the entries are read
 * from there as v1's are. Most of it is read straight into buf (readv:
 * the rest of a frame there, what follows into rbuf), so a v2 bundle
 * costs about what a v1 bundle does.
 *
 * Mercurial's reader trusts filecount and reads on; this one also wants
 * the byte count kept, the payload to end with the last entry and the
 * container after its parts, and checks against the size of a regular
 * file what the counts announce, before anything is written. A compressed
 * container (stream parameter Compression=BZ, GZ or ZS, which
 * `hg bundle -t zstd-v2;stream=v2` writes) is refused: Mercurial writes
 * stream bundles uncompressed on purpose (bundle2.addpartbundlestream2:
 * compression defeats their point), and `hg bundle -t none-v2;stream=v2`
 * is what makes one.
 */

#include "clone-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Raw bytes read past the end of a frame at most: the payload goes
 * straight into buf, only what follows a frame's end is copied.
 */
#define RAW_READ 4096
/* Longest stream parameters and part header accepted. */
#define PARAMS_MAX (1 << 20)
/* Payload runs kept for offsets before fill stops reading ahead. */
#define SEGS_MAX 4096
/* The smallest entry: source byte, two one-byte lengths, one-byte name. */
#define MIN_ENTRY 4
/* Parameters of a part: at most 255 of each kind. */
#define PART_PARAMS_MAX 510

static int oom(struct bgrun__bundle *b)
{
	return bgrun__bundle_error(b, -ENOMEM, "%s", strerror(ENOMEM));
}

/* The bundle offset of rbuf[rhead]. */
static uint64_t rhere(const struct bgrun__bundle *b)
{
	return b->raw_pos - (b->rtail - b->rhead);
}

uint64_t bgrun__bundle2_here(const struct bgrun__bundle *b)
{
	uint64_t pos = b->pos - (b->tail - b->head);
	size_t i = b->nsegs;

	/*
	 * Nothing buffered: where reading goes on, whether or not the runs
	 * of the last fill are still noted (they are not after a fill that
	 * found buf empty; they are when it found bytes left and then the
	 * end-of-payload marker), so that two readings of the same bytes in
	 * different read sizes name the same offset (fuzz/fuzz-bundle.c).
	 */
	if (b->head == b->tail)
		return rhere(b);
	while (i > 0 && b->segs[i - 1].pos > pos)
		i--;
	if (i == 0)
		return rhere(b);
	return b->segs[i - 1].raw + (pos - b->segs[i - 1].pos);
}

void bgrun__bundle2_close(struct bgrun__bundle *b)
{
	free(b->rbuf);
	free(b->segs);
	b->rbuf = NULL;
	b->segs = NULL;
}

static uint64_t room(const struct bgrun__bundle *b, uint64_t off)
{
	return b->size > off ? b->size - off : 0;
}

/* Makes need raw bytes available in rbuf (need <= rcap): 1, 0 at the end. */
static int rfill(struct bgrun__bundle *b, size_t need)
{
	while (b->rtail - b->rhead < need) {
		struct iovec iov;
		ssize_t n;

		if (b->rhead == b->rtail) {
			b->rhead = b->rtail = 0;
		} else if (b->rcap - b->rhead < need) {
			memmove(b->rbuf, b->rbuf + b->rhead, b->rtail - b->rhead);
			b->rtail -= b->rhead;
			b->rhead = 0;
		}
		iov.iov_base = b->rbuf + b->rtail;
		iov.iov_len = b->rcap - b->rtail;
		if (iov.iov_len > RAW_READ)
			iov.iov_len = RAW_READ;
		n = bgrun__bundle_raw_readv(b, &iov, 1);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return 0;
		b->rtail += (size_t)n;
	}
	return 1;
}

static int truncated(struct bgrun__bundle *b, const char *where)
{
	return bgrun__bundle_fail(b, b->raw_pos,
				  "truncated bundle: it ends in %s", where);
}

/*
 * Copies n raw bytes to dst, or skips them when dst is NULL; fails naming
 * what was cut (where).
 */
static int rtake(struct bgrun__bundle *b, void *dst, uint64_t n,
		 const char *where)
{
	while (n > 0) {
		size_t k;
		int r = rfill(b, 1);

		if (r < 0)
			return r;
		if (r == 0)
			return truncated(b, where);
		k = b->rtail - b->rhead;
		if (k > n)
			k = (size_t)n;
		if (dst != NULL) {
			memcpy(dst, b->rbuf + b->rhead, k);
			dst = (char *)dst + k;
		}
		b->rhead += k;
		n -= k;
	}
	return 0;
}

/* Reads a big-endian i32. */
static int rtake_i32(struct bgrun__bundle *b, int32_t *ret, const char *where)
{
	unsigned char p[4];
	int r = rtake(b, p, 4, where);

	if (r == 0)
		*ret = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
				 (uint32_t)p[2] << 8 | p[3]);
	return r;
}

/* Skips n raw bytes. */
static int rskip(struct bgrun__bundle *b, uint64_t n, const char *where)
{
	return rtake(b, NULL, n, where);
}

/* urllib.parse.unquote_to_bytes, in place: %xx decoded, the rest kept. */
static size_t unquote(char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < len && (hi = bgrun__hex_value(s[i + 1])) >= 0 &&
		    (lo = bgrun__hex_value(s[i + 2])) >= 0) {
			s[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	s[o] = '\0';
	return o;
}

/*
 * Switches the reader to the container's raw bytes (rbuf) once the magic
 * is seen: buf is kept for the payload. What was read ahead into buf is
 * read again from a file or memory; from a pipe it becomes rbuf.
 */
static int start_raw(struct bgrun__bundle *b)
{
	size_t cap = bgrun__os_fd_bad(b->fd) ? (size_t)65536 : b->cap;

	if (!bgrun__os_fd_bad(b->fd) && !b->seekable) {
		unsigned char *payload = malloc(cap);

		if (payload == NULL)
			return oom(b);
		b->rbuf = b->buf;
		b->rcap = b->cap;
		b->rhead = b->head;
		b->rtail = b->tail;
		b->buf = payload;
	} else {
		b->raw_pos = b->pos - (b->tail - b->head);
		b->rbuf = malloc(RAW_READ);
		if (b->rbuf == NULL)
			return oom(b);
		b->rcap = RAW_READ;
		if (bgrun__os_fd_bad(b->fd)) {
			b->buf = malloc(cap);
			if (b->buf == NULL)
				return oom(b);
			b->own_buf = true;
			b->cap = cap;
		}
	}
	b->head = b->tail = 0;
	b->pos = 0;
	b->eof = false;
	return 0;
}

/* A part header, parsed; keys and values point into hdr. */
struct part {
	uint64_t offset;       /* of its header size */
	char type[256];        /* lowercased */
	bool mandatory;
	size_t nparams;
	struct {
		const char *key, *val;
		size_t key_len, val_len;
		bool mandatory;
		uint64_t val_offset;
	} params[PART_PARAMS_MAX];
	char *hdr;
};

static int bad_header(struct bgrun__bundle *b, const struct part *p,
		      uint64_t off, const char *what)
{
	return bgrun__bundle_fail(b, off,
		"part header too short for %s (part at offset %llu)", what,
		(unsigned long long)p->offset);
}

/*
 * Reads a part header at the current raw offset: 1 with *p filled, 0 at
 * the end-of-stream marker. The caller frees p->hdr.
 */
static int read_part(struct bgrun__bundle *b, struct part *p)
{
	uint64_t start;
	int32_t size = 0;
	size_t at = 0, n, sizes;
	unsigned char *h;
	int r;

	p->offset = rhere(b);
	p->hdr = NULL;
	r = rtake_i32(b, &size, "a part header size");
	if (r < 0)
		return r;
	if (size == 0)
		return 0;
	if (size < 0)
		return bgrun__bundle_fail(b, p->offset,
			"negative part header size %d", (int)size);
	if (size > PARAMS_MAX)
		return bgrun__bundle_fail(b, p->offset,
			"part header of %d bytes (more than %d)", (int)size,
			PARAMS_MAX);
	start = p->offset + 4;
	p->hdr = malloc((size_t)size + 1);
	if (p->hdr == NULL)
		return oom(b);
	r = rtake(b, p->hdr, (size_t)size, "a part header");
	if (r < 0)
		return r;
	h = (unsigned char *)p->hdr;
	n = (size_t)size;

	if (n < 1 || n < 1 + (size_t)h[0])
		return bad_header(b, p, start, "its type");
	if (h[0] == 0)
		return bgrun__bundle_fail(b, start, "part with an empty type");
	p->mandatory = false;
	for (size_t i = 0; i < h[0]; i++) {
		unsigned char c = h[1 + i];

		if (c >= 'A' && c <= 'Z') {
			p->mandatory = true;
			c = (unsigned char)(c - 'A' + 'a');
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			     c == '_' || c == ':' || c == '-')) {
			return bgrun__bundle_fail(b, start + 1 + i,
				"invalid byte 0x%02x in a part type", c);
		}
		p->type[i] = (char)c;
	}
	p->type[h[0]] = '\0';
	at = 1 + (size_t)h[0];
	/* u32 id, then the two counts. */
	if (n < at + 6)
		return bad_header(b, p, start + at, "its id and parameter counts");
	at += 4;
	p->nparams = (size_t)h[at] + h[at + 1];
	sizes = at + 2;
	at = sizes + 2 * p->nparams;
	if (n < at)
		return bad_header(b, p, start + sizes, "its parameter sizes");
	for (size_t i = 0; i < p->nparams; i++) {
		size_t kl = h[sizes + 2 * i], vl = h[sizes + 2 * i + 1];

		if (n < at + kl + vl)
			return bad_header(b, p, start + at, "its parameters");
		p->params[i].key = p->hdr + at;
		p->params[i].key_len = kl;
		p->params[i].val = p->hdr + at + kl;
		p->params[i].val_len = vl;
		p->params[i].val_offset = start + at + kl;
		p->params[i].mandatory = i < h[sizes - 2];
		at += kl + vl;
	}
	if (at != n)
		return bgrun__bundle_fail(b, start + at,
			"%zu bytes after the parameters of a part header",
			n - at);
	return 1;
}

static int next_frame(struct bgrun__bundle *b, bool nested);

/* Skips the payload of a part that is not ours (nested: in an interrupt). */
static int skip_payload(struct bgrun__bundle *b, bool nested,
			const char *where)
{
	int r;

	while ((r = next_frame(b, nested)) > 0) {
		r = rskip(b, b->frame_left, where);
		b->frame_left = 0;
		if (r < 0)
			break;
	}
	return r;
}

/*
 * An out-of-band part inside a payload (frame size -1): what Mercurial's
 * producer sends when it fails half-way (error:abort and its message);
 * other advisory parts are skipped, as its interrupthandler does.
 */
static int interrupt(struct bgrun__bundle *b, uint64_t off, bool nested)
{
	struct part *p;
	char msg[300] = "";
	int r;

	if (nested)
		return bgrun__bundle_fail(b, off,
			"an interrupt inside an interrupt part");
	p = malloc(sizeof(*p));
	if (p == NULL)
		return oom(b);
	r = read_part(b, p);
	if (r <= 0)
		goto out;
	if (strncmp(p->type, "error:", 6) == 0) {
		for (size_t i = 0; i < p->nparams; i++)
			if (p->params[i].key_len == 7 &&
			    memcmp(p->params[i].key, "message", 7) == 0)
				bgrun__quote(msg, sizeof(msg), p->params[i].val,
					     p->params[i].val_len);
		r = bgrun__bundle_fail(b, off,
			"the bundle's producer failed while writing it (%s)%s%s",
			p->type, msg[0] ? ": " : "", msg);
		goto out;
	}
	if (p->mandatory) {
		r = bgrun__bundle_error(b, -EPROTONOSUPPORT,
			"unsupported mandatory interrupt part '%s' at offset %llu",
			p->type, (unsigned long long)p->offset);
		goto out;
	}
	/* Its payload: frames up to the end one. */
	r = skip_payload(b, true, "an interrupt part's payload");
out:
	free(p->hdr);
	free(p);
	return r;
}

/*
 * Reads the next frame header: 1 with b->frame_left set, 0 at the end of
 * the payload, or -errno. Interrupt parts are handled.
 */
static int next_frame(struct bgrun__bundle *b, bool nested)
{
	for (;;) {
		uint64_t off = rhere(b);
		int32_t size = 0;
		int r = rtake_i32(b, &size, "the size of a payload frame");

		if (r < 0)
			return r;
		if (size > 0) {
			b->frame_left = (uint32_t)size;
			return 1;
		}
		if (size == 0)
			return 0;
		if (size != -1)
			return bgrun__bundle_fail(b, off,
				"negative payload frame size %d", (int)size);
		r = interrupt(b, off, nested);
		if (r < 0)
			return r;
	}
}

/* Drops the runs that end before the next unread byte of buf. */
static void prune_segs(struct bgrun__bundle *b)
{
	uint64_t pos = b->pos - (b->tail - b->head);
	size_t f = 0;

	while (f + 1 < b->nsegs && b->segs[f + 1].pos <= pos)
		f++;
	if (f > 0) {
		memmove(b->segs, b->segs + f, (b->nsegs - f) * sizeof(b->segs[0]));
		b->nsegs -= f;
	}
}

/* Notes that payload position pos is at bundle offset raw. */
static int add_seg(struct bgrun__bundle *b, uint64_t pos, uint64_t raw)
{
	struct bgrun__bundle_seg *last = b->nsegs ? &b->segs[b->nsegs - 1] : NULL;

	if (last != NULL && last->raw + (pos - last->pos) == raw)
		return 0;
	if (b->nsegs == b->segs_cap) {
		size_t cap = b->segs_cap ? 2 * b->segs_cap : 64;
		struct bgrun__bundle_seg *p = realloc(b->segs, cap * sizeof(*p));

		if (p == NULL)
			return oom(b);
		b->segs = p;
		b->segs_cap = cap;
	}
	b->segs[b->nsegs++] = (struct bgrun__bundle_seg){ pos, raw };
	return 0;
}

ssize_t bgrun__bundle2_fill(struct bgrun__bundle *b, size_t need)
{
	if (need > b->cap)
		need = b->cap;
	while (b->tail - b->head < need && !b->eof) {
		uint64_t raw;
		size_t k;
		int r;

		if (b->head == b->tail) {
			b->head = b->tail = 0;
			b->nsegs = 0;
		} else if (b->cap - b->head < need) {
			memmove(b->buf, b->buf + b->head, b->tail - b->head);
			b->tail -= b->head;
			b->head = 0;
			prune_segs(b);
		}
		if (b->nsegs >= SEGS_MAX) {
			/* Tiny frames: give what there is before more. */
			prune_segs(b);
			if (b->nsegs >= SEGS_MAX)
				break;
		}
		if (b->frame_left == 0) {
			r = next_frame(b, false);
			if (r < 0)
				return r;
			if (r == 0)
				b->eof = b->payload_end = true;
			continue;
		}
		k = b->cap - b->tail < b->frame_left ? b->cap - b->tail
						     : b->frame_left;
		raw = rhere(b);
		if (b->rhead < b->rtail) {
			if (k > b->rtail - b->rhead)
				k = b->rtail - b->rhead;
			memcpy(b->buf + b->tail, b->rbuf + b->rhead, k);
			b->rhead += k;
		} else {
			/* The rest of the frame into buf, what follows into rbuf. */
			struct iovec iov[2] = {
				{ b->buf + b->tail, k },
				{ b->rbuf, b->rcap < RAW_READ ? b->rcap : RAW_READ },
			};
			ssize_t n;

			b->rhead = b->rtail = 0;
			n = bgrun__bundle_raw_readv(b, iov, 2);
			if (n < 0)
				return n;
			if (n == 0)
				return bgrun__bundle_fail(b, b->raw_pos,
					"truncated bundle: it ends %u bytes before the end of a payload frame",
					(unsigned)b->frame_left);
			if ((size_t)n > k)
				b->rtail = (size_t)n - k;
			else
				k = (size_t)n;
		}
		r = add_seg(b, b->pos, raw);
		if (r < 0)
			return r;
		b->tail += k;
		b->pos += k;
		b->frame_left -= (uint32_t)k;
	}
	return (ssize_t)(b->tail - b->head);
}

/* A decimal count from a part parameter. */
static int parse_count(struct bgrun__bundle *b, const char *v, size_t len,
		       uint64_t off, const char *what, uint64_t *ret)
{
	uint64_t n = 0;

	if (len == 0)
		return bgrun__bundle_fail(b, off, "part stream2: empty %s", what);
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bgrun__bundle_fail(b, off + i,
				"part stream2: invalid byte 0x%02x in its %s",
				(unsigned char)v[i], what);
		if (n > (UINT64_MAX - 9) / 10)
			return bgrun__bundle_fail(b, off,
				"part stream2: %s too large", what);
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = n;
	return 0;
}

/* The stream2 part's parameters. */
static int stream2_params(struct bgrun__bundle *b, const struct part *p)
{
	bool seen[3] = { false, false, false };
	static const char *const names[3] = { "filecount", "bytecount",
					      "requirements" };
	char q[256];
	int r;

	for (size_t i = 0; i < p->nparams; i++) {
		const char *k = p->params[i].key, *v = p->params[i].val;
		size_t kl = p->params[i].key_len, vl = p->params[i].val_len;
		uint64_t off = p->params[i].val_offset;
		int which = -1;

		for (int w = 0; w < 3; w++)
			if (kl == strlen(names[w]) && memcmp(k, names[w], kl) == 0)
				which = w;
		if (which < 0) {
			if (!p->params[i].mandatory)
				continue;
			bgrun__quote(q, sizeof(q), k, kl);
			(void)bgrun__bundle_fail(b, off - kl,
				"part stream2: unsupported mandatory parameter '%s'",
				q);
			return -EPROTONOSUPPORT;
		}
		seen[which] = true;
		if (which < 2) {
			r = parse_count(b, v, vl, off, names[which],
					which == 0 ? &b->file_count
						   : &b->byte_count);
			if (r < 0)
				return r;
			b->count_offset[which] = off;
			continue;
		}
		free(b->requirements);
		b->requirements = malloc(vl + 1);
		if (b->requirements == NULL)
			return oom(b);
		memcpy(b->requirements, v, vl);
		vl = unquote(b->requirements, vl);
		b->req_offset = off;
		for (size_t j = 0; j < vl; j++) {
			unsigned char c = (unsigned char)b->requirements[j];

			if (!(c == ',' || c == '-' || c == '.' || c == '_' ||
			      (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			      (c >= 'A' && c <= 'Z')))
				return bgrun__bundle_fail(b, off,
					"invalid byte 0x%02x in the requirements", c);
		}
	}
	for (int w = 0; w < 3; w++)
		if (!seen[w])
			return bgrun__bundle_fail(b, p->offset,
				"part stream2 without its %s parameter",
				names[w]);
	return 0;
}

/* The stream parameters (n bytes at offset 8). */
static int stream_params(struct bgrun__bundle *b, char *s, size_t n)
{
	size_t i = 0;
	char q[128], qv[64];

	while (i < n) {
		char *p = s + i, *sp = memchr(p, ' ', n - i), *eq, *val = NULL;
		size_t len = sp != NULL ? (size_t)(sp - p) : n - i, kl, vl = 0;
		uint64_t off = 8 + i;

		i += len + 1;
		eq = memchr(p, '=', len);
		kl = eq != NULL ? (size_t)(eq - p) : len;
		if (eq != NULL) {
			val = eq + 1;
			vl = unquote(val, len - kl - 1);
		}
		kl = unquote(p, kl);
		if (kl == 0)
			return bgrun__bundle_fail(b, off,
				"empty stream parameter name");
		if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')))
			return bgrun__bundle_fail(b, off,
				"stream parameter name not starting with a letter");
		bgrun__quote(q, sizeof(q), p, kl);
		if (kl == 11 && strncasecmp(p, "compression", 11) == 0) {
			if (val == NULL || (vl == 2 && memcmp(val, "UN", 2) == 0))
				continue;
			bgrun__quote(qv, sizeof(qv), val, vl);
			(void)bgrun__bundle_fail(b, off,
				"compressed bundle2 container (%s=%s): stream bundles are applied uncompressed (hg bundle -t 'none-v2;stream=v2' writes one)",
				q, qv);
			return -EPROTONOSUPPORT;
		}
		if (p[0] >= 'A' && p[0] <= 'Z') {
			(void)bgrun__bundle_fail(b, off,
				"unsupported mandatory stream parameter '%s'", q);
			return -EPROTONOSUPPORT;
		}
	}
	return 0;
}

int bgrun__bundle2_header(struct bgrun__bundle *b)
{
	struct part *p = NULL;
	int32_t n = 0;
	char *params;
	uint64_t left;
	int r;

	r = start_raw(b);
	if (r < 0)
		return r;
	r = rskip(b, 4, "the magic number");
	if (r == 0)
		r = rtake_i32(b, &n, "the stream parameters size");
	if (r < 0)
		return r;
	if (n < 0 || n > PARAMS_MAX)
		return bgrun__bundle_fail(b, 4,
			"stream parameters size %d out of range", (int)n);
	params = malloc((size_t)n + 1);
	if (params == NULL)
		return oom(b);
	r = rtake(b, params, (size_t)n, "the stream parameters");
	if (r == 0)
		r = stream_params(b, params, (size_t)n);
	free(params);
	if (r < 0)
		return r;

	p = malloc(sizeof(*p));
	if (p == NULL)
		return oom(b);
	p->hdr = NULL;
	for (;;) {
		free(p->hdr);
		r = read_part(b, p);
		if (r < 0)
			goto out;
		if (r == 0) {
			r = bgrun__bundle_fail(b, p->offset,
				"no stream2 part in this bundle2 (not a stream clone bundle)");
			goto out;
		}
		if (strcmp(p->type, "stream2") == 0)
			break;
		if (strcmp(p->type, "changegroup") == 0) {
			r = bgrun__bundle_fail(b, p->offset,
				"not a stream clone bundle: a changegroup part (hg bundle -t 'none-v2;stream=v2' writes a stream bundle)");
			goto out;
		}
		if (p->mandatory) {
			r = bgrun__bundle_error(b, -EPROTONOSUPPORT,
				"offset %llu: unsupported mandatory part '%s'",
				(unsigned long long)p->offset, p->type);
			b->err_at_offset = false;
			goto out;
		}
		r = skip_payload(b, false, "a part's payload");
		if (r < 0)
			goto out;
	}
	r = stream2_params(b, p);
	if (r < 0)
		goto out;
	b->framed = true;
	b->data_start = rhere(b);
	if (b->sized) {
		left = room(b, b->data_start);
		if (b->byte_count > left) {
			r = bgrun__bundle_fail(b, b->count_offset[1],
				"truncated bundle or false byte count: %llu bytes of file data announced, %llu bytes follow the part header",
				(unsigned long long)b->byte_count,
				(unsigned long long)left);
			goto out;
		}
		if (b->file_count > (left - b->byte_count) / MIN_ENTRY) {
			r = bgrun__bundle_fail(b, b->count_offset[0],
				"truncated bundle or false file count: %llu files cannot fit in the %llu bytes after the part header",
				(unsigned long long)b->file_count,
				(unsigned long long)left);
			goto out;
		}
	}
	r = 0;
out:
	if (p != NULL)
		free(p->hdr);
	free(p);
	return r;
}

/* The payload ended (or was cut) inside an entry's what. */
static int cut(struct bgrun__bundle *b, const char *what)
{
	return bgrun__bundle_fail(b, bgrun__bundle_here(b),
		"the stream2 payload ends in %s (false file count, or a payload cut short)",
		what);
}

/* Reads an unsigned LEB128 (util.uvarintdecodestream). */
static int uvarint(struct bgrun__bundle *b, const char *what, uint64_t *ret)
{
	uint64_t v = 0, off = bgrun__bundle_here(b);

	for (unsigned shift = 0;; shift += 7) {
		unsigned char c;
		ssize_t n = bgrun__bundle_take(b, &c, 1);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return cut(b, what);
		if (shift > 63 || (shift == 63 && (c & 0x7f) > 1))
			return bgrun__bundle_fail(b, off, "%s too large", what);
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	*ret = v;
	return 0;
}

/*
 * The files a stream clone takes from .hg/cache (cacheutil.cachetocopy):
 * branch2[-FILTER], tags2[-FILTER], rbc-names-v1, rbc-revs-v1,
 * hgtagsfnodes1. Nothing else is written there.
 */
static bool cache_name_ok(const char *n, size_t len)
{
	static const char *const exact[] = { "branch2", "tags2", "rbc-names-v1",
					     "rbc-revs-v1", "hgtagsfnodes1" };
	static const char *const filtered[] = { "branch2-", "tags2-" };

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (len == strlen(exact[i]) && memcmp(n, exact[i], len) == 0)
			return true;
	for (size_t i = 0; i < 2; i++) {
		size_t pl = strlen(filtered[i]);

		if (len <= pl || memcmp(n, filtered[i], pl) != 0)
			continue;
		for (size_t j = pl; j < len; j++)
			if (!((n[j] >= 'a' && n[j] <= 'z') || n[j] == '.' ||
			      n[j] == '-'))
				return false;
		return n[pl] != '.';
	}
	return false;
}

/* After the last entry: the end of the payload, the counts, the rest. */
static int finish(struct bgrun__bundle *b)
{
	struct part *p;
	uint64_t off;
	ssize_t avail;
	int r;

	if (b->stream_end)
		return 0;
	avail = bgrun__bundle_fill(b, 1);
	if (avail < 0)
		return (int)avail;
	if (avail > 0)
		return bgrun__bundle_fail(b, bgrun__bundle_here(b),
			"unexpected data after the last of the %llu files announced (false file count?)",
			(unsigned long long)b->file_count);
	if (b->bytes_seen != b->byte_count)
		return bgrun__bundle_fail(b, b->count_offset[1],
			"false byte count: the part says %llu bytes, the %llu files hold %llu",
			(unsigned long long)b->byte_count,
			(unsigned long long)b->file_count,
			(unsigned long long)b->bytes_seen);
	p = malloc(sizeof(*p));
	if (p == NULL)
		return oom(b);
	p->hdr = NULL;
	for (;;) {
		free(p->hdr);
		r = read_part(b, p);
		if (r <= 0)
			break;
		if (strcmp(p->type, "stream2") == 0 || p->mandatory) {
			r = bgrun__bundle_fail(b, p->offset,
				"unsupported %s part '%s' after the stream2 part",
				p->mandatory ? "mandatory" : "second", p->type);
			break;
		}
		r = skip_payload(b, false, "a part's payload");
		if (r < 0)
			break;
	}
	free(p->hdr);
	free(p);
	if (r < 0)
		return r;
	off = rhere(b);
	r = rfill(b, 1);
	if (r < 0)
		return r;
	if (r > 0)
		return bgrun__bundle_fail(b, off,
			"unexpected data after the end of the bundle2 stream");
	b->stream_end = true;
	return 0;
}

int bgrun__bundle2_next(struct bgrun__bundle *b, struct bgrun__entry *ret)
{
	uint64_t off, name_len = 0, size = 0, left, here;
	ssize_t avail;
	char q[256];
	unsigned char src;
	int r;

	if (b->files_seen == b->file_count)
		return finish(b);
	avail = bgrun__bundle_fill(b, 1);
	if (avail < 0)
		return (int)avail;
	off = bgrun__bundle_here(b);
	if (avail == 0)
		return bgrun__bundle_fail(b, off,
			"bundle ends after %llu of the %llu files announced (truncated, or a false file count)",
			(unsigned long long)b->files_seen,
			(unsigned long long)b->file_count);
	src = b->buf[b->head++];
	if (src != 's' && src != 'c')
		return bgrun__bundle_fail(b, off,
			"invalid entry source byte 0x%02x (expected 's', the store, or 'c', the cache)",
			src);
	r = uvarint(b, "an entry's name length", &name_len);
	if (r == 0)
		r = uvarint(b, "an entry's data length", &size);
	if (r < 0)
		return r;
	if (name_len == 0)
		return bgrun__bundle_fail(b, off, "empty entry name");
	if (name_len > BGRUN__BUNDLE_NAME_MAX)
		return bgrun__bundle_fail(b, off,
			"entry name longer than %d bytes",
			BGRUN__BUNDLE_NAME_MAX);
	r = bgrun__bundle_name_room(b, (size_t)name_len);
	if (r < 0)
		return r;
	avail = bgrun__bundle_take(b, b->name, (size_t)name_len);
	if (avail < 0)
		return (int)avail;
	if ((uint64_t)avail < name_len)
		return cut(b, "an entry name");
	b->name[name_len] = '\0';
	b->name_len = (size_t)name_len;
	if (memchr(b->name, '\0', b->name_len) != NULL) {
		bgrun__quote(q, sizeof(q), b->name, b->name_len);
		return bgrun__bundle_fail(b, off,
			"entry name contains a NUL byte: %s", q);
	}
	if (src == 's') {
		r = bgrun__bundle_check_name(b, off);
		if (r < 0)
			return r;
	} else if (!cache_name_ok(b->name, b->name_len)) {
		bgrun__quote(q, sizeof(q), b->name, b->name_len);
		return bgrun__bundle_fail(b, off,
			"cache entry name not one a stream clone carries (branch2*, tags2*, rbc-*-v1, hgtagsfnodes1): %s",
			q);
	}
	left = b->byte_count - b->bytes_seen;
	here = bgrun__bundle_here(b);
	if (size > left || (b->sized && size > room(b, here))) {
		bool count = size > left;

		bgrun__quote(q, sizeof(q), b->name, b->name_len);
		return bgrun__bundle_fail(b, off,
			"entry %s of %llu bytes is larger than the %llu bytes %s",
			q, (unsigned long long)size,
			(unsigned long long)(count ? left : room(b, here)),
			count ? "the byte count leaves" : "left in the bundle");
	}
	b->files_seen++;
	b->bytes_seen += size;
	b->entry_left = size;
	b->entry_offset = off;
	*ret = (struct bgrun__entry){ .name = b->name, .name_len = b->name_len,
				      .size = size, .offset = off,
				      .cache = src == 'c' };
	return 1;
}
