/* SPDX-License-Identifier: MIT */
/* writer.c: writes a bundle's entries under .hg/store with their store names, and collects the fncache. */

/*
 * Each entry is written as Mercurial's consumev1 (or consumev2) writes it
 * through the store vfs: the name is decodedir'd (v1 only: v2 names are
 * not encodedir'd), the file lands at its encoded store name
 * (storepath.c), and a data/ or meta/ path is added to the fncache
 * (encodedir'd, one per line). The bytes go out in large writes
 * straight from the reader's buffer (no copy), or with copy_file_range
 * from a regular-file bundle; every byte is written, so files are dense.
 * Files are created O_EXCL: two entries for one store file are an error,
 * not a silent overwrite.
 */

#include "clone-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bgrun__writer_init(struct bgrun__writer *w, const struct bgrun__dir *store)
{
	*w = (struct bgrun__writer){
		.hg = BGRUN__DIR_INIT,
		.cache = BGRUN__DIR_INIT,
		.dir = BGRUN__DIR_INIT,
		.chunk = BGRUN_CLONE_CHUNK_DEFAULT,
		.dotencode = true,
	};
	w->store = *store;
}

void bgrun__writer_release(struct bgrun__writer *w)
{
	bgrun__wdir_unref(w->wdir);
	bgrun__wdir_unref(w->wstore);
	w->wdir = w->wstore = NULL;
	bgrun__dir_close(&w->dir);
	bgrun__dir_close(&w->cache);
	w->have_dir = w->have_cache = false;
	free(w->dir_name);
	free(w->fncache);
	w->dir_name = w->fncache = NULL;
}

/*
 * The persistent nodemaps of the changelog and the root manifest
 * (00changelog.n, 00manifest-1a2b.nd, ...): Mercurial's
 * nodemap.post_stream_cleanup deletes them after a stream clone into a
 * repository without the persistent-nodemap requirement, as ours is, so
 * they are read and not written (a bundle of an older Mercurial may list
 * that requirement: clone.c drops it).
 */
static bool is_root_nodemap(const char *p, size_t len)
{
	size_t k;

	if (len > 11 && memcmp(p, "00changelog", 11) == 0)
		k = 11;
	else if (len > 10 && memcmp(p, "00manifest", 10) == 0)
		k = 10;
	else
		return false;
	p += k;
	len -= k;
	if ((len == 2 && memcmp(p, ".n", 2) == 0) ||
	    (len == 4 && memcmp(p, ".n.a", 4) == 0))
		return true;
	if (len < 5 || p[0] != '-' || memcmp(p + len - 3, ".nd", 3) != 0)
		return false;
	for (size_t i = 1; i < len - 3; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

static int fncache_add(struct bgrun__writer *w, const char *path, size_t len)
{
	char *ed;
	size_t ed_len;
	int r;

	r = bgrun__encodedir(path, len, &ed, &ed_len);
	if (r < 0)
		return r;
	if (w->fncache_len + ed_len + 1 > w->fncache_cap) {
		size_t cap = w->fncache_cap ? w->fncache_cap : 65536;
		char *p;

		while (cap < w->fncache_len + ed_len + 1)
			cap *= 2;
		p = realloc(w->fncache, cap);
		if (p == NULL) {
			free(ed);
			return -ENOMEM;
		}
		w->fncache = p;
		w->fncache_cap = cap;
	}
	memcpy(w->fncache + w->fncache_len, ed, ed_len);
	w->fncache_len += ed_len;
	w->fncache[w->fncache_len++] = '\n';
	free(ed);
	return 0;
}

/* mkdir -p of the first len bytes of path, relative to the store. */
static int make_dirs(struct bgrun__writer *w, char *path, size_t len)
{
	char *slash;
	int r;

	path[len] = '\0';
	r = bgrun__dir_mkdir(&w->store, path);
	if (r == 0 || r == -EEXIST)
		return 0;
	if (r != -ENOENT)
		return r;
	/* The parent is missing too: make it, then try again. */
	slash = memrchr(path, '/', len);
	if (slash == NULL)
		return -ENOENT;
	r = make_dirs(w, path, (size_t)(slash - path));
	*slash = '/';
	if (r < 0)
		return r;
	r = bgrun__dir_mkdir(&w->store, path);
	return r == -EEXIST ? 0 : r;
}

/*
 * Whether a component of the directory path p (len bytes) has a revlog
 * ending, so that a store file of that name may be waiting in a writer's
 * ring (wpool.c).
 */
static bool may_be_a_file(const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = (size_t)((slash != NULL ? slash : end) - p);

		if (bgrun__revlog_ending(p, n))
			return true;
		p += n + 1;
	}
	return false;
}

/* FNV-1a of the directory's path: which writer owns it. */
static unsigned int dir_writer(const char *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* Makes w->dir the directory enc[0..dir_len) (dir_len 0: the store). */
static int open_dir(struct bgrun__writer *w, struct bgrun__bundle *b,
		    const struct bgrun__entry *e, char *enc, size_t dir_len)
{
	char q[256];
	int r;

	if (w->have_dir && w->dir_len == dir_len &&
	    memcmp(w->dir_name, enc, dir_len) == 0)
		return 0;
	bgrun__dir_close(&w->dir);
	bgrun__dir_close(&w->cache);
	bgrun__wdir_unref(w->wdir);
	w->wdir = NULL;
	w->have_dir = w->have_cache = false;
	free(w->dir_name);
	w->dir_name = NULL;
	if (dir_len > 0) {
		enc[dir_len] = '\0';
		r = bgrun__dir_open_at(&w->store, enc, &w->dir);
		/*
		 * A writer may not have made the file that stands in the
		 * way yet: once the rings are empty, it is there.
		 */
		if (r == -ENOENT && w->pool != NULL &&
		    may_be_a_file(enc, dir_len)) {
			r = bgrun__wpool_fence(w->pool);
			if (r == 0)
				r = bgrun__dir_open_at(&w->store, enc, &w->dir);
		}
		if (r == -ENOENT) {
			r = make_dirs(w, enc, dir_len);
			if (r == 0)
				r = bgrun__dir_open_at(&w->store, enc, &w->dir);
		}
		enc[dir_len] = '/';
		bgrun__quote(q, sizeof(q), e->name, e->name_len);
		if (r == -ECANCELED)
			return r; /* a writer failed: bgrun__wpool_finish says why */
		if (r == -ENOTDIR || r == -EEXIST || r == -ELOOP)
			return bgrun__bundle_fail(b, e->offset,
				"entry %s needs a directory where an earlier entry is a file",
				q);
		if (r < 0)
			return bgrun__bundle_error(b, r,
				"cannot create the directory of %s: %s", q,
				strerror(-r));
		if (w->pool != NULL) {
			w->wdir = bgrun__wdir_new(&w->dir, false);
			if (w->wdir == NULL)
				return bgrun__bundle_error(b, -ENOMEM, "%s",
							   strerror(ENOMEM));
			w->dir = (struct bgrun__dir)BGRUN__DIR_INIT;
		}
	}
	w->which = dir_writer(enc, dir_len);
	w->dir_name = malloc(dir_len + 1);
	if (w->dir_name == NULL)
		return bgrun__bundle_error(b, -ENOMEM, "%s", strerror(ENOMEM));
	memcpy(w->dir_name, enc, dir_len);
	w->dir_len = dir_len;
	w->have_dir = true;
	return 0;
}

/*
 * An error (-errno) in placing the current entry: its message, and its
 * offset, as a writer thread gives them (wpool.c).
 */
BGRUN__PRINTF(3, 4)
static int entry_error(struct bgrun__bundle *b, int error, const char *fmt,
		       ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	b->err_at_offset = true;
	b->err_offset = b->entry_offset;
	return error;
}

/* A write error on the current entry's file. */
static int write_error(struct bgrun__bundle *b, int error)
{
	char q[256];

	bgrun__quote(q, sizeof(q), b->name, b->name_len);
	return entry_error(b, error, "cannot write %s: %s", q, strerror(-error));
}

/* Copies the entry's remaining bytes from the bundle's descriptor. */
static int copy_direct(struct bgrun__writer *w, struct bgrun__bundle *b,
		       bgrun_os_fd_t fd, uint64_t off, uint64_t len)
{
	uint64_t in = off;
	bool fallback = false;
	char *buf = NULL;
	int r = 0;

	while (len > 0 && r == 0) {
		size_t want = len < (uint64_t)1 << 30 ? (size_t)len : (size_t)1 << 30;
		ssize_t n;

		if (!fallback) {
			n = bgrun__file_copy_range(b->fd, &in, fd, want);
			if (n == -EXDEV || n == -EINVAL || n == -ENOSYS ||
			    n == -EOPNOTSUPP) {
				fallback = true; /* not between these files */
				continue;
			}
			if (n < 0)
				r = write_error(b, (int)n);
		} else {
			struct iovec iov;

			if (buf == NULL && (buf = malloc(w->chunk)) == NULL) {
				r = bgrun__bundle_error(b, -ENOMEM, "%s",
							strerror(ENOMEM));
				break;
			}
			iov = (struct iovec){ buf, want < w->chunk ? want : w->chunk };
			n = bgrun__file_readv(b->fd, &iov, 1, (int64_t)in, NULL);
			if (n == -EINTR)
				continue;
			if (n < 0)
				r = bgrun__bundle_error(b, (int)n,
					"cannot read the bundle: %s",
					strerror((int)-n));
			else if (n > 0 && (r = bgrun__fd_write_all(fd, buf, (size_t)n)) < 0)
				r = write_error(b, r);
			else
				in += (uint64_t)n;
		}
		if (r == 0 && n == 0)
			r = bgrun__bundle_error(b, -EIO,
				"cannot read the bundle: it shrank while being read");
		if (r < 0)
			break;
		len -= (uint64_t)n;
		w->bytes += (uint64_t)n;
		if (w->progress != NULL)
			w->progress(w->progress_data);
	}
	free(buf);
	return r;
}

/* Writes (or, when discard, skips) the data of the current entry. */
static int write_data(struct bgrun__writer *w, struct bgrun__bundle *b,
		      bgrun_os_fd_t fd, bool discard)
{
	const void *p;
	size_t n;
	uint64_t off, len;
	int r;

	for (;;) {
		if (!discard && w->copy_range &&
		    bgrun__bundle_take_direct(b, &off, &len) == 0)
			return copy_direct(w, b, fd, off, len);
		r = bgrun__bundle_data(b, w->chunk, &p, &n);
		if (r <= 0)
			return r;
		if (discard)
			continue;
		r = bgrun__fd_write_all(fd, p, n);
		if (r < 0)
			return write_error(b, r);
		w->bytes += n;
		if (w->progress != NULL)
			w->progress(w->progress_data);
	}
}

/* Closes the file just written (fd, consumed): in the pool or here. */
static int close_written(struct bgrun__writer *w, struct bgrun__bundle *b,
			 const struct bgrun__entry *e, bgrun_os_fd_t fd)
{
	char q[256];
	int r;

	if (w->closer != NULL) {
		r = bgrun__closer_submit(w->closer, fd);
		if (r < 0)
			r = bgrun__bundle_error(b, r,
				"cannot close a file written: %s", strerror(-r));
		return r;
	}
	r = bgrun__closer_close(w->close_fn, fd);
	if (r < 0) {
		bgrun__quote(q, sizeof(q), e->name, e->name_len);
		r = entry_error(b, r, "cannot close %s: %s", q, strerror(-r));
	}
	return r;
}

/*
 * A cache entry (v2): .hg/cache/NAME, the name as it is (the cache vfs
 * does not encode it; the reader lets through only the single-component
 * names a stream clone carries).
 */
static int put_cache(struct bgrun__writer *w, struct bgrun__bundle *b,
		     const struct bgrun__entry *e)
{
	bgrun_os_fd_t fd;
	char q[256];
	int r;

	if (!w->have_cache) {
		r = bgrun__dir_mkdir(&w->hg, "cache");
		if (r < 0 && r != -EEXIST)
			return bgrun__bundle_error(b, r,
				"cannot create .hg/cache: %s", strerror(-r));
		r = bgrun__dir_open_at(&w->hg, "cache", &w->cache);
		if (r < 0)
			return bgrun__bundle_error(b, r,
				"cannot open .hg/cache: %s", strerror(-r));
		w->have_cache = true;
	}
	bgrun__quote(q, sizeof(q), e->name, e->name_len);
	r = bgrun__dir_create(&w->cache, e->name, &fd);
	if (r == -EEXIST)
		return bgrun__bundle_fail(b, e->offset,
			"cache entry %s collides with an earlier entry", q);
	if (r < 0)
		return bgrun__bundle_error(b, r,
			"cannot create .hg/cache/%s: %s", q, strerror(-r));
	r = write_data(w, b, fd, false);
	if (r < 0) {
		(void)bgrun__file_close(fd);
		return r;
	}
	r = close_written(w, b, e, fd);
	if (r == 0) {
		w->files++;
		w->cache_files++;
	}
	return r;
}

/*
 * Hands the entry's file to the writer of its directory, in pieces of
 * what the reader's buffer holds (one for most files).
 */
static int pool_put(struct bgrun__writer *w, struct bgrun__bundle *b,
		    const struct bgrun__entry *e, const char *enc,
		    size_t enc_len, size_t dir_len)
{
	struct bgrun__wpool_file f = {
		.seq = w->seq++,
		.offset = e->offset,
		.dir = dir_len > 0 ? w->wdir : w->wstore,
		.name = e->name,
		.name_len = e->name_len,
		.path = enc,
		.path_len = enc_len,
		.base_off = dir_len > 0 ? dir_len + 1 : 0,
	};
	unsigned int flags = BGRUN__WPOOL_FIRST;
	size_t piece = bgrun__wpool_piece(w->pool);

	for (;;) {
		const void *p = NULL;
		size_t n = 0;
		int r = bgrun__bundle_data(b, piece, &p, &n);

		if (r < 0)
			return r;
		if (r == 0)
			n = 0;
		if (b->entry_left == 0)
			flags |= BGRUN__WPOOL_LAST;
		r = bgrun__wpool_put(w->pool, w->which, &f, flags, p, n);
		if (r < 0)
			return r;
		flags = 0;
		w->bytes += n;
		if (n > 0 && w->progress != NULL)
			w->progress(w->progress_data);
		if (b->entry_left == 0)
			break;
	}
	/* Counted when handed over: a clone that succeeds wrote them all. */
	w->files++;
	return 0;
}

int bgrun__writer_use_pool(struct bgrun__writer *w, struct bgrun__wpool *pool)
{
	w->wstore = bgrun__wdir_new(&w->store, true);
	if (w->wstore == NULL)
		return -ENOMEM;
	w->pool = pool;
	return 0;
}

int bgrun__writer_put(struct bgrun__writer *w, struct bgrun__bundle *b,
		      const struct bgrun__entry *e)
{
	char *path = NULL, *enc = NULL, *slash, q[256], qe[256];
	size_t len, enc_len, dir_len;
	bgrun_os_fd_t fd;
	int r;

	if (e->cache)
		return put_cache(w, b, e);
	/*
	 * A v1 name went through store.encodedir (generatev1 does it); a v2
	 * name is the store path itself (_emit2 sends what the walk gives).
	 */
	if (b->version == 2) {
		path = strndup(e->name, e->name_len);
		len = e->name_len;
		r = path != NULL ? 0 : -ENOMEM;
	} else {
		r = bgrun__decodedir(e->name, e->name_len, &path, &len);
	}
	if (r < 0)
		goto oom;
	if (is_root_nodemap(path, len)) {
		w->skipped++;
		r = write_data(w, b, BGRUN_OS_FD_NONE, true);
		goto out;
	}
	if ((len > 5 && memcmp(path, "data/", 5) == 0) ||
	    (len > 5 && memcmp(path, "meta/", 5) == 0)) {
		r = fncache_add(w, path, len);
		if (r < 0)
			goto oom;
	}
	r = bgrun__hgpath_encode(path, len, w->dotencode, &enc, &enc_len);
	if (r < 0)
		goto oom;
	slash = memrchr(enc, '/', enc_len);
	dir_len = slash != NULL ? (size_t)(slash - enc) : 0;
	r = open_dir(w, b, e, enc, dir_len);
	if (r < 0)
		goto out;
	if (w->pool != NULL) {
		r = pool_put(w, b, e, enc, enc_len, dir_len);
		goto out;
	}
	r = bgrun__dir_create(dir_len > 0 ? &w->dir : &w->store,
			      slash != NULL ? slash + 1 : enc, &fd);
	if (r < 0) {
		bgrun__quote(q, sizeof(q), e->name, e->name_len);
		bgrun__quote(qe, sizeof(qe), enc, enc_len);
		if (r == -EEXIST)
			r = bgrun__bundle_fail(b, e->offset,
				"entry %s collides with an earlier entry (store file %s)",
				q, qe);
		else
			r = entry_error(b, r, "cannot create %s: %s",
						qe, strerror(-r));
		goto out;
	}
	r = write_data(w, b, fd, false);
	if (r < 0) {
		(void)bgrun__file_close(fd);
		goto out;
	}
	r = close_written(w, b, e, fd);
	if (r == 0)
		w->files++;
	goto out;
oom:
	r = bgrun__bundle_error(b, -ENOMEM, "%s", strerror(ENOMEM));
out:
	free(enc);
	free(path);
	return r;
}

int bgrun__writer_fncache(struct bgrun__writer *w)
{
	bgrun_os_fd_t fd;
	int r, r2;

	if (w->fncache_len == 0)
		return 0;
	r = bgrun__dir_create(&w->store, "fncache", &fd);
	if (r < 0)
		return r;
	r = bgrun__fd_write_all(fd, w->fncache, w->fncache_len);
	r2 = bgrun__file_close(fd);
	return r < 0 ? r : r2;
}
