/* SPDX-License-Identifier: MIT */
/* bgrun/clone.h: the clone pipeline: apply a Mercurial stream clone bundle (libbgrun-store). */

#ifndef BGRUN_CLONE_H
#define BGRUN_CLONE_H

#include "bgrun/common.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * bgrun_clone() applies a Mercurial stream clone bundle, either version:
 *
 * v1, what `hg debugcreatestreamclonebundle` writes (Mercurial's
 * streamclone.generatebundlev1):
 *
 *   "HGS1" "UN" u64 files u64 bytes u16 n  requirements (n bytes, ending
 *   in NUL)  then per file: name "\0" size "\n" and size bytes
 *
 * (integers big-endian; names are store paths with only store.encodedir
 * applied; the sizes add up to bytes).
 *
 * v2, what `hg bundle -a -t 'none-v2;stream=v2'` writes and clonebundles
 * servers serve (bundle2.py, streamclone.generatev2): a bundle2 container
 * ("HG20", stream parameters, parts, each with a header of mandatory and
 * advisory parameters and a payload cut into frames of up to 32 KiB) with
 * one "stream2" part, whose parameters give filecount, bytecount and the
 * requirements, and whose payload holds per file: a source byte ('s' the
 * store, 'c' .hg/cache), uvarint name length, uvarint size, the store path
 * and its bytes. Cache files (branch caches, tags caches, rev-branch
 * cache) go to .hg/cache. A compressed container (Compression=BZ, GZ or
 * ZS, e.g. from `hg bundle -t zstd-v2;stream=v2`) is refused
 * (-EPROTONOSUPPORT): Mercurial writes stream bundles uncompressed.
 * Out-of-band parts in the payload are honoured as Mercurial does: an
 * error part fails the clone with its message, an advisory one is
 * skipped; advisory parts around the stream2 part are skipped. Mercurial
 * 6.3 writes no stream v3 (asked for 'stream=v3-exp' it writes a
 * changegroup bundle, which is refused as not a stream clone).
 *
 * The result is a new repository at dest, as `hg clone --stream -U`
 * would make it: .hg/requires and .hg/store/requires for the bundle's
 * requirements combined with those of a new repository (share-safe,
 * store, fncache, dotencode), each file under its store name
 * (store._pathencode: capitals, reserved bytes and Windows names escaped,
 * over-long paths hashed into dh/), and the fncache. The repository has
 * no working directory checkout (like `clone -U`); `hg update` makes one.
 * Every requirement Mercurial 6.3 accepts in a stream clone is applied,
 * except its experimental, unstable formats (exp-revlogv2.2,
 * exp-changelog-v2, exp-copies-sidedata-changeset), which are refused
 * with the reason (bgrun_clone_supported_requirement tells).
 *
 * It is built in a temporary directory beside dest (".NAME.clone-XXXXXX")
 * and renamed to dest at the end, so dest appears complete or not at all,
 * and a failure (or a cancel) removes everything it wrote. dest must not
 * exist or be an empty directory. What a clone killed outright (SIGKILL)
 * leaves is removed by the next clone into the same directory, or by
 * bgrun_clone_cleanup (struct bgrun_clone_stale says how it is told).
 */

/*
 * What a clone that was killed (SIGKILL, a crash, a reboot) had reached,
 * as found by a later clone into the same directory or by
 * bgrun_clone_cleanup.
 */
enum bgrun_clone_left {
	/* Its temporary directory, which was removed. */
	BGRUN_CLONE_LEFT_TEMPORARY = 0,
	/* Its rename into dest: it finished, but not its caller's record. */
	BGRUN_CLONE_LEFT_FINISHED = 1,
	/* Nothing (killed before its temporary, or after its failure). */
	BGRUN_CLONE_LEFT_NOTHING = 2,
};

/*
 * A clone that was killed, found by a later clone into the same directory
 * or by bgrun_clone_cleanup. Each clone has an owner file beside its
 * temporary directory (".NAME.clone-XXXXXX.owner"), locked from before
 * the directory exists until bgrun_clone_close (or the next bgrun_clone
 * on the same object): record the clone's end before that, and a kill in
 * between is found here. An owner file is taken only when its lock is
 * free and the process it names is gone (another boot, or no process
 * with that pid and start time). Every string is borrowed for the
 * duration of the callback; "" when not recorded.
 */
struct bgrun_clone_stale {
	const char *path;    /* its temporary: DIR/.NAME.clone-XXXXXX */
	const char *dest;    /* the destination that clone was given */
	const char *id;      /* that clone's opts.id */
	int64_t pid;         /* its process */
	const char *boot_id; /* the boot it ran in */
	int64_t start_ns;    /* when it began (CLOCK_REALTIME), or BGRUN_NULL */
	enum bgrun_clone_left left; /* what it had reached */
};

typedef void (*bgrun_clone_stale_cb)(void *data,
				     const struct bgrun_clone_stale *s);

/* Progress, passed to the progress callback. */
struct bgrun_clone_progress {
	uint64_t files_total, bytes_total; /* from the bundle's header (v2:
					    * the stream2 part's parameters) */
	uint64_t files_done, bytes_done;   /* entries (and bytes) done */
};

/*
 * Called from the calling thread after the header is read, after each file
 * and during large files (often: it must be cheap, e.g. look at a clock
 * and return).
 */
typedef void (*bgrun_clone_progress_cb)(void *data,
					const struct bgrun_clone_progress *p);

/* The default size of reads from the bundle and of writes: 1 MiB. */
#define BGRUN_CLONE_CHUNK_DEFAULT ((size_t)1 << 20)
/*
 * Background closing (and writing) is used from this many files on (as
 * Mercurial's).
 */
#define BGRUN_CLONE_CLOSE_THRESHOLD_DEFAULT 2048
#define BGRUN_CLONE_CLOSE_THREADS_DEFAULT 4
#define BGRUN_CLONE_CLOSE_QUEUE 384
#define BGRUN_CLONE_WRITE_THREADS_DEFAULT 2

/*
 * What to clone and how. Plain data: start from BGRUN_CLONE_OPTS_INIT.
 * Everything is borrowed for the duration of the call.
 */
struct bgrun_clone_opts {
	/* The bundle: a path, or bundle_fd (>= 0, borrowed, read from its
	 * current offset) when set. "-" is not special here. */
	const char *bundle;
	bgrun_os_fd_t bundle_fd;
	/* The new repository. */
	const char *dest;
	/*
	 * Background closer threads: < 0 the default (4; when writer
	 * threads write the files, none on POSIX, where they close their
	 * own, 4 on Windows), 0 closes every file on the writing thread.
	 * The pool starts only when the bundle holds at least
	 * close_threshold files (0: the default, 2048).
	 */
	int close_threads;
	uint64_t close_threshold;
	/* Read and write size; 0: BGRUN_CLONE_CHUNK_DEFAULT. */
	size_t chunk_size;
	/*
	 * Copy each file's bytes with copy_file_range(2) from a bundle that
	 * is a regular file (in the kernel, no copy through user space).
	 * Ignored for a pipe.
	 */
	bool copy_file_range;
	bgrun_clone_progress_cb progress;
	void *progress_data;
	/*
	 * Optional: when *cancel becomes non-zero (say, from a signal
	 * handler) the clone stops, removes its work and returns -ECANCELED.
	 */
	const volatile sig_atomic_t *cancel;
	/*
	 * Optional: an id for this clone (an event id, say), and when it
	 * began (CLOCK_REALTIME ns, 0: now), written in its temporary
	 * directory's owner file, for whoever removes that directory if
	 * the clone is killed.
	 */
	const char *id;
	int64_t start_ns;
	/*
	 * Optional: called for each temporary directory of a killed clone
	 * that this clone removes (from dest's directory, before it starts).
	 */
	bgrun_clone_stale_cb stale;
	void *stale_data;
	/*
	 * Writer threads: < 0 the default (2), 0
	 * writes every file on the calling thread. From close_threshold
	 * files on, the store's files are created, written and closed by
	 * them (each directory's by one, in bundle order), the calling
	 * thread reading the bundle and handing them over; not with
	 * copy_file_range.
	 */
	int write_threads;
};

#define BGRUN_CLONE_OPTS_INIT { .bundle_fd = BGRUN_OS_FD_NONE, .close_threads = -1, \
				.write_threads = -1 }

/* What a clone did. */
struct bgrun_clone_result {
	uint64_t files;         /* files written, cache files included
				 * (skipped nodemaps excluded) */
	uint64_t bytes;         /* bytes written */
	uint64_t bundle_files;  /* entries in the bundle */
	uint64_t bundle_bytes;
	unsigned int bundle_version; /* 1 (HGS1) or 2 (HG20, stream2) */
	int64_t duration_ns;    /* CLOCK_MONOTONIC, the whole call */
	unsigned int close_threads; /* background closers used (0: none) */
	size_t chunk_size;
	/* The requirements written (sorted, comma-separated). */
	char requirements[512];
	unsigned int write_threads; /* writer threads used (0: none) */
};

/*
 * What a failed clone leaves to read: its message (see CONVENTIONS in
 * bgrun.h). Make one with bgrun_clone_new (-ENOMEM is its only failure,
 * *ret_clone untouched then); it may serve for any number of clones, one
 * at a time; free it with bgrun_clone_close (accepts NULL). It keeps
 * the last clone's owner file (struct bgrun_clone_stale) until it is
 * closed or serves again: close it once that clone's end is recorded.
 */
struct bgrun_clone;

BGRUN_EXTERN int bgrun_clone_new(struct bgrun_clone **ret_clone);
BGRUN_EXTERN void bgrun_clone_close(struct bgrun_clone *clone);

/*
 * A one-line message about the last failed bgrun_clone on clone ("" if
 * none), naming the bundle offset for a format error: "offset 1234:
 * entry name has a '..' component: data/../x.i". Valid until the next
 * call on clone. Accepts NULL.
 */
BGRUN_EXTERN const char *bgrun_clone_errmsg(const struct bgrun_clone *clone);

/*
 * Applies the bundle to a new repository at opts->dest and fills
 * *ret_result (optional; untouched on failure). Errors:
 *   -EBADMSG          the bundle is malformed or lies (truncated, bad
 *                     magic, counts that do not add up, a bad name, an
 *                     entry larger than what remains, a bundle2 part
 *                     header that does not add up, a frame cut short,
 *                     an error part from the bundle's producer...)
 *   -EPROTONOSUPPORT  a compression, a requirement, a mandatory bundle2
 *                     stream parameter, part or part parameter not
 *                     supported
 *   -ENOTEMPTY        dest exists and is not an empty directory
 *   -ECANCELED        *opts->cancel was set
 *   -EINVAL           invalid options
 *   and the errors of reading, creating, writing and closing files,
 * each explained by bgrun_clone_errmsg(clone). Nothing is left behind:
 * dest is untouched, the temporary directory removed.
 *
 * THREAD SAFETY: independent clones may run on several threads at once,
 * each with its own struct bgrun_clone.
 */
BGRUN_EXTERN int bgrun_clone(struct bgrun_clone *clone,
			     const struct bgrun_clone_opts *opts,
			     struct bgrun_clone_result *ret_result);

/*
 * Takes what killed clones left where a clone to dest would make its
 * temporary (dest's parent directory; dest NULL: the current directory),
 * as every bgrun_clone does before it starts, calling cb (may be NULL)
 * for each: their owner files, and their temporary directories if any.
 * What running clones and other users' own, and a temporary without an
 * owner file, are left. Returns how many killed clones were found, or
 * -errno if the directory cannot be read (explained by
 * bgrun_clone_errmsg(clone)).
 */
BGRUN_EXTERN int bgrun_clone_cleanup(struct bgrun_clone *clone,
				     const char *dest,
				     bgrun_clone_stale_cb cb, void *data);

/*
 * Whether the clone pipeline can apply a bundle with this requirement
 * (borrowed): 1 yes, 0 no.
 */
BGRUN_EXTERN int bgrun_clone_supported_requirement(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_CLONE_H */
