/* SPDX-License-Identifier: MIT */
/* clone-internal.h: declarations shared by the clone pipeline's files (bundle, store paths, writer, closer). */

#ifndef BGRUN_CLONE_INTERNAL_H
#define BGRUN_CLONE_INTERNAL_H

#include "bgrun/clone.h"
#include "bgrun/sink.h"
#include "common/common.h"
#include "platform.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sha1.c: the SHA-1 digest of len bytes. */
void bgrun__sha1(const void *data, size_t len, unsigned char out[20]);

/*
 * storepath.c: Mercurial's store path encoding (mercurial/store.py),
 * byte for byte. Every function returns a malloc'd NUL-terminated string
 * in *ret (the caller frees it) and its length, or -ENOMEM.
 */

/* encodedir: ".hg/" -> ".hg.hg/", ".i/" -> ".i.hg/", ".d/" -> ".d.hg/". */
int bgrun__encodedir(const char *path, size_t len, char **ret, size_t *ret_len);
/* decodedir: the inverse, as store.decodedir does it. */
int bgrun__decodedir(const char *path, size_t len, char **ret, size_t *ret_len);
/*
 * The store file name of a store path (data/..., meta/..., 00changelog.i):
 * store._hybridencode(path, dotencode), which is store._pathencode (and the
 * C parsers.pathencode) when dotencode is true: the reversible encoding
 * (capitals as _x, reserved bytes as ~xx, Windows names, trailing dots and
 * spaces), or, when that is longer than 120 bytes, the dh/ hashed form.
 */
int bgrun__hgpath_encode(const char *path, size_t len, bool dotencode,
			 char **ret, size_t *ret_len);

/*
 * bundle.c: a streaming reader of stream clone bundles, v1 (HGS1) and v2
 * (HG20 with a stream2 part: bundle2.c).
 *
 * The bundle comes from a descriptor (a regular file is read with pread,
 * so that copy_file_range can take an entry's bytes straight from it, and
 * its size lets lies be caught before anything is written) or from memory
 * (the fuzz target). Every format error is -EBADMSG with a one-line
 * message and the bundle offset it concerns in err/err_offset; a read
 * error is -errno with a message; a set cancel flag gives -ECANCELED.
 *
 * Offsets are those of the bundle's bytes. In a v1 bundle the entries are
 * the bundle's bytes; in a v2 bundle they are the stream2 part's payload,
 * cut into frames: buf then holds the payload without the frame headers
 * (so that an entry's bytes stay contiguous), rbuf the raw bytes of the
 * container, and segs maps a payload position back to its bundle offset.
 */
#define BGRUN__BUNDLE_NAME_MAX 8192 /* longest entry name accepted */

/* A run of payload bytes that is contiguous in the bundle too. */
struct bgrun__bundle_seg {
	uint64_t pos; /* payload position of its first byte */
	uint64_t raw; /* its bundle offset */
};

struct bgrun__bundle {
	bgrun_os_fd_t fd;     /* borrowed; BGRUN_OS_FD_NONE for a bundle in memory */
	const unsigned char *mem; /* the bundle in memory (fd -1) */
	bool seekable;        /* a regular file: read with pread */
	bool sized;           /* size is known (a regular file, or memory) */
	uint64_t base;        /* the descriptor's offset of bundle byte 0 */
	uint64_t size;        /* bytes in the bundle, when sized */
	uint64_t raw_pos;     /* bundle offset of the next byte read from the source */
	uint64_t pos;         /* position of the byte after buf[tail] (v1: = raw_pos) */
	unsigned char *buf;
	size_t cap, head, tail; /* unread bytes are buf[head..tail) */
	bool own_buf, eof;
	const volatile sig_atomic_t *cancel;

	/* The header. */
	unsigned int version; /* 1 or 2 */
	uint64_t file_count, byte_count;
	char *requirements;   /* comma-separated (v2: unquoted) */
	uint64_t req_offset;  /* where the bundle states them */
	uint64_t data_start;  /* offset of the first entry */

	/* v2 (bundle2.c): the container's raw bytes, the payload framing. */
	bool framed;          /* buf holds the stream2 payload */
	bool payload_end;     /* its end-of-payload frame was read */
	bool stream_end;      /* the container's end-of-stream marker too */
	unsigned char *rbuf;
	size_t rcap, rhead, rtail; /* unread raw bytes are rbuf[rhead..rtail) */
	uint32_t frame_left;  /* bytes of the current frame not yet in buf */
	struct bgrun__bundle_seg *segs;
	size_t nsegs, segs_cap;
	uint64_t count_offset[2]; /* where filecount and bytecount are stated */

	/* Progress through the entries. */
	uint64_t files_seen, bytes_seen;
	uint64_t entry_left;  /* bytes of the current entry still unread */
	uint64_t entry_offset;
	char *name;           /* the current entry's name (NUL-terminated) */
	size_t name_len, name_cap;

	/* The last error: a message, and the offset it concerns if any. */
	bool err_at_offset;
	uint64_t err_offset;
	char err[512];
};

/* What bgrun__bundle_next found. */
struct bgrun__entry {
	const char *name; /* borrowed from the reader until the next call */
	size_t name_len;
	uint64_t size;
	uint64_t offset;  /* where the entry's "name\0size\n" (v2: source byte) starts */
	bool cache;       /* v2: a cache file (.hg/cache/NAME), not a store file */
};

/* Reads from fd (borrowed) with a buffer of bufsize bytes. */
int bgrun__bundle_open_fd(struct bgrun__bundle *b, bgrun_os_fd_t fd,
			  size_t bufsize);
/* Reads from len bytes at data (borrowed until bgrun__bundle_close). */
void bgrun__bundle_open_mem(struct bgrun__bundle *b, const void *data,
			    size_t len);
/* Releases the reader's memory (never the descriptor); accepts a zeroed one. */
void bgrun__bundle_close(struct bgrun__bundle *b);
/* Reads and checks the header: magic, compression, counts, requirements. */
int bgrun__bundle_header(struct bgrun__bundle *b);
/*
 * Reads the next entry's name and size: 1 with *ret filled, or 0 after the
 * last one (once the counts are checked and nothing follows). The data of
 * the previous entry must have been consumed.
 */
int bgrun__bundle_next(struct bgrun__bundle *b, struct bgrun__entry *ret);
/*
 * Gives up to max bytes of the current entry's data, from the buffer
 * (refilled as needed): 1 with *ret_ptr and *ret_len set (valid until the
 * next call), 0 when the entry is consumed. max >= 1.
 */
int bgrun__bundle_data(struct bgrun__bundle *b, size_t max,
		       const void **ret_ptr, size_t *ret_len);
/*
 * For a seekable bundle whose buffer holds none of the current entry's
 * remaining bytes: marks them consumed and gives their offset in the
 * descriptor, to be copied from it directly. 0, or -EAGAIN if not
 * possible now (use bgrun__bundle_data).
 */
int bgrun__bundle_take_direct(struct bgrun__bundle *b, uint64_t *ret_fd_off,
			      uint64_t *ret_len);
/*
 * Sets the last error (format error at offset) and returns -EBADMSG; the
 * writer uses it for entries it cannot place (duplicates, conflicts).
 */
BGRUN__PRINTF(3, 4)
int bgrun__bundle_fail(struct bgrun__bundle *b, uint64_t offset,
		       const char *fmt, ...);
/* Sets the last error to a message without offset and returns error. */
BGRUN__PRINTF(3, 4)
int bgrun__bundle_error(struct bgrun__bundle *b, int error,
			const char *fmt, ...);
/*
 * Between bundle.c and bundle2.c. fill makes at least need unread bytes
 * available in buf (fewer only at the end) and returns how many or -errno;
 * take copies up to n bytes out (short only at the end); here is the
 * bundle offset of the next unread byte of buf; raw_readv reads from the
 * source at raw_pos (0 at its end); check_name applies the rules of a
 * store entry's name (in b->name) and returns 0 or -EBADMSG.
 */
ssize_t bgrun__bundle_fill(struct bgrun__bundle *b, size_t need);
ssize_t bgrun__bundle_take(struct bgrun__bundle *b, void *dst, size_t n);
uint64_t bgrun__bundle_here(const struct bgrun__bundle *b);
ssize_t bgrun__bundle_raw_readv(struct bgrun__bundle *b,
				const struct iovec *iov, int n);
int bgrun__bundle_check_name(struct bgrun__bundle *b, uint64_t off);
/* Whether s (len bytes) has the ending of a revlog file (.i, .d, .nd...). */
bool bgrun__revlog_ending(const char *s, size_t len);
/* Grows b->name to hold len bytes and a NUL: 0 or -ENOMEM (with message). */
int bgrun__bundle_name_room(struct bgrun__bundle *b, size_t len);

/*
 * bundle2.c: the v2 side, called by bundle.c's functions of the same
 * purpose once the magic says "HG20": the container's stream parameters
 * and parts up to the stream2 part's parameters; its entries; the
 * payload's frames (fill); the parts and end-of-stream marker after it.
 */
int bgrun__bundle2_header(struct bgrun__bundle *b);
int bgrun__bundle2_next(struct bgrun__bundle *b, struct bgrun__entry *ret);
ssize_t bgrun__bundle2_fill(struct bgrun__bundle *b, size_t need);
uint64_t bgrun__bundle2_here(const struct bgrun__bundle *b);
void bgrun__bundle2_close(struct bgrun__bundle *b);

/*
 * Writes s (len bytes) into out (size bytes) for a message: printable
 * ASCII as is, anything else as \xNN, cut with "..." when too long.
 */
void bgrun__quote(char *out, size_t size, const char *s, size_t len);

/*
 * closer.c: a pool of threads closing descriptors, with a bounded queue
 * (Mercurial's backgroundfilecloser). close(2) on a file just written can
 * cost milliseconds on some file systems (NTFS, NFS, FUSE, ext4 after a
 * truncation); the writer hands descriptors over and goes on writing.
 *
 * THREAD SAFETY: submit may be called by several threads (the writer
 * threads, wpool.c); finish once they are done.
 */
struct bgrun__closer;

/*
 * Starts threads (>= 1) with room for queue descriptors. close_fn NULL is
 * bgrun__file_close (close(2), CloseHandle); tests pass one that fails.
 */
int bgrun__closer_start(unsigned int threads, size_t queue,
			int (*close_fn)(bgrun_os_fd_t fd),
			struct bgrun__closer **ret_closer);
/*
 * Queues fd (consumed, even on error), waiting while the queue is full.
 * Returns the error of an earlier close if one failed (the caller stops),
 * else 0.
 */
int bgrun__closer_submit(struct bgrun__closer *c, bgrun_os_fd_t fd);
/*
 * Closes what is queued, joins the threads, frees c, and returns the first
 * close error (-errno) or 0. Accepts NULL.
 */
int bgrun__closer_finish(struct bgrun__closer *c);
/*
 * Closes fd (consumed) with close_fn, which reports as close(2) does
 * (-1, errno), or with bgrun__file_close when it is NULL: 0 or -errno.
 */
int bgrun__closer_close(int (*close_fn)(bgrun_os_fd_t fd), bgrun_os_fd_t fd);

/*
 * wpool.c: writer threads, each with a ring of records (a file's name,
 * store path and bytes, or a piece of them) that it carries out in
 * order: create in the record's directory (O_EXCL), write, close (in the
 * closer pool when there is one). See wpool.c for the ordering rules.
 *
 * THREAD SAFETY: everything but the wdir references is called by one
 * thread, the reader.
 */
struct bgrun__wpool;

/*
 * A directory files are created in, shared by the reader and the records
 * that name it: the last reference closes it (unless borrowed).
 */
struct bgrun__wdir {
	struct bgrun__dir dir;
	bool borrowed;      /* the store itself: never closed here */
	_Atomic unsigned int refs;
};

/* NULL on ENOMEM; d is consumed unless borrowed. One reference. */
struct bgrun__wdir *bgrun__wdir_new(const struct bgrun__dir *d, bool borrowed);
struct bgrun__wdir *bgrun__wdir_ref(struct bgrun__wdir *w);
/* Accepts NULL. Any thread. */
void bgrun__wdir_unref(struct bgrun__wdir *w);

/* A file, or a piece of it, handed to a writer (everything borrowed). */
struct bgrun__wpool_file {
	uint64_t seq;       /* the entry's rank in the bundle */
	uint64_t offset;    /* its bundle offset, for messages */
	struct bgrun__wdir *dir;
	const char *name;   /* the entry's name, for messages */
	size_t name_len;
	const char *path;   /* its store path (for messages); the file is */
	size_t path_len;    /* path + base_off, in dir */
	size_t base_off;
};

#define BGRUN__WPOOL_FIRST 1u /* the file's first record: create it */
#define BGRUN__WPOOL_LAST  2u /* its last: close it */
/* Smallest ring: a piece (a quarter) and the longest names fit in half. */
#define BGRUN__WPOOL_RING_MIN ((size_t)256 << 10)

/* A writer's failure, as bgrun__wpool_finish gives it. */
struct bgrun__wpool_error {
	bool at_offset;
	uint64_t offset;
	char msg[512];
};

/*
 * Starts threads (>= 1) with rings of ring bytes each (>= RING_MIN).
 * closer (borrowed, may be NULL) takes the files written to close them;
 * else close_fn (NULL: bgrun__file_close) on the writer.
 */
int bgrun__wpool_start(unsigned int threads, size_t ring,
		       struct bgrun__closer *closer,
		       int (*close_fn)(bgrun_os_fd_t fd),
		       struct bgrun__wpool **ret_pool);
unsigned int bgrun__wpool_threads(const struct bgrun__wpool *p);
/* The most data bytes one record takes. */
size_t bgrun__wpool_piece(const struct bgrun__wpool *p);
/*
 * Copies a record (flags: FIRST, LAST, both for a whole file; len at
 * most bgrun__wpool_piece) into the ring of writer which (mod the
 * count), waiting while it is full. -ECANCELED once a writer failed
 * (finish says why), -EINVAL for a record too large.
 */
int bgrun__wpool_put(struct bgrun__wpool *p, unsigned int which,
		     const struct bgrun__wpool_file *f, unsigned int flags,
		     const void *data, size_t len);
/* Waits until every record put is carried out: 0, or -ECANCELED. */
int bgrun__wpool_fence(struct bgrun__wpool *p);
/*
 * Carries out what is queued, joins the threads, frees p and returns
 * the failure of the earliest entry (-errno, -EBADMSG for a collision)
 * with its message in *ret_error (optional), or 0. Accepts NULL.
 */
int bgrun__wpool_finish(struct bgrun__wpool *p,
			struct bgrun__wpool_error *ret_error);

/*
 * writer.c: places the entries under .hg/store with the store's names and
 * collects the fncache.
 */
struct bgrun__writer {
	struct bgrun__dir store;  /* borrowed: the new .hg/store */
	struct bgrun__dir hg;     /* borrowed: the new .hg (for cache entries) */
	struct bgrun__dir cache;  /* .hg/cache, made at the first cache entry */
	bool have_cache;    /* cache is open */
	struct bgrun__dir dir;    /* the directory of the last file */
	bool have_dir;      /* dir is open (it is the store itself when dir_len is 0) */
	char *dir_name;     /* its encoded path relative to the store */
	size_t dir_len;
	size_t chunk;       /* largest write */
	bool copy_range;    /* copy_file_range from a seekable bundle */
	bool dotencode;
	struct bgrun__closer *closer; /* NULL: close here */
	int (*close_fn)(bgrun_os_fd_t fd);
	/*
	 * Writer threads (NULL: files are written here): the store's files
	 * go to the writer of their directory, wdir (dir, once open, handed
	 * over) or wstore; which is that writer; seq numbers the entries.
	 */
	struct bgrun__wpool *pool;
	struct bgrun__wdir *wdir, *wstore;
	unsigned int which;
	uint64_t seq;
	char *fncache;      /* the fncache file's text */
	size_t fncache_len, fncache_cap;
	uint64_t files, bytes; /* written so far */
	uint64_t cache_files; /* of which in .hg/cache */
	uint64_t skipped;   /* entries read but not written (nodemaps) */
	/* Called after each chunk written (may be NULL). */
	void (*progress)(void *data);
	void *progress_data;
};

void bgrun__writer_init(struct bgrun__writer *w, const struct bgrun__dir *store);
/*
 * Hands the store's files to pool (borrowed until the last put; cache
 * files are still written here): 0 or -ENOMEM.
 */
int bgrun__writer_use_pool(struct bgrun__writer *w, struct bgrun__wpool *pool);
/* Writes the entry just read by bgrun__bundle_next and consumes its data. */
int bgrun__writer_put(struct bgrun__writer *w, struct bgrun__bundle *b,
		      const struct bgrun__entry *e);
/* Writes the fncache file (if any entry needs one). */
int bgrun__writer_fncache(struct bgrun__writer *w);
void bgrun__writer_release(struct bgrun__writer *w);

/*
 * stale.c: the owner file beside a clone's temporary directory
 * (TMPNAME.owner: pid, its start time, boot id, the clone's id, start
 * and destination), locked from before the temporary exists until the
 * clone's end is recorded, and the sweep of those whose owner is gone.
 */
#define BGRUN__CLONE_OWNER_SUFFIX ".owner"
#define BGRUN__CLONE_NAME_MAX 256
/*
 * Creates the owner file of tmpname (which need not exist yet) in parent
 * and gives its file, which holds the lock: 0, -EEXIST if that name is
 * taken (or a sweeper looked at the new file before its lock: try
 * another name), or -errno.
 */
int bgrun__clone_own(const struct bgrun__dir *parent, const char *tmpname,
		     const char *id, const char *dest, int64_t start_ns,
		     bgrun_os_fd_t *ret_fd);
/* Appends a phase line ("renaming", "failed") to the owner file. */
int bgrun__clone_own_phase(bgrun_os_fd_t fd, const char *phase);
/* Removes the owner file of tmpname, then closes fd (and its lock). */
void bgrun__clone_disown(const struct bgrun__dir *parent, const char *tmpname,
			 bgrun_os_fd_t fd);
/*
 * Takes every owner file in parent_dir (named parent in messages) whose
 * owner is gone, and its temporary if there is one, calling cb (may be
 * NULL) for each: how many, or -errno if the directory cannot be read.
 */
int bgrun__clone_sweep(const struct bgrun__dir *parent_dir, const char *parent,
		       bgrun_clone_stale_cb cb, void *data);

/*
 * What closes the files written: bgrun__file_close, or a test's
 * replacement (bgrun__test_control).
 */
extern int (*bgrun__clone_close_fn)(bgrun_os_fd_t fd);


#endif /* BGRUN_CLONE_INTERNAL_H */
