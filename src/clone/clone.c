/* SPDX-License-Identifier: MIT */
/* clone.c: bgrun_clone(): a stream clone bundle (v1 or v2) into a new repository, built aside and renamed into place. */

#include "clone-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Requirements. A stream clone bundle lists those of its source that fix
 * the format of the bytes it carries (requirements.STREAM_FIXED_REQUIREMENTS
 * intersected with the source's); the clone keeps the choices a new
 * repository makes for the rest, exactly as streamclone's
 * new_stream_clone_requirements() does: the defaults of `hg init` (6.3)
 * minus the stream-fixed ones, plus the bundle's. Those defaults, minus
 * generaldelta, revlogv1, sparserevlog and revlog-compression-zstd
 * (stream-fixed), are these four.
 */
static const char *const new_repo_requirements[] = {
	"dotencode", "fncache", "share-safe", "store",
};

/*
 * Requirements a bundle may carry: every one Mercurial 6.3 applies in a
 * stream clone (localrepo._basesupported, plus the zstd compression) is
 * either applied (why: NULL) or refused with the reason. Applied: formats
 * of revlog bytes we only copy, flags whose meaning lies in the files the
 * bundle carries (phases, bookmarks in the store), and the store layout
 * names, which describe what we write anyway.
 */
static const struct {
	const char *name;
	const char *why; /* NULL: supported */
} requirement_table[] = {
	{ "bookmarksinstore", NULL },
	{ "dotencode", NULL },
	{ "exp-archived-phase", NULL },
	{ "fncache", NULL },
	{ "generaldelta", NULL },
	{ "internal-phase-2", NULL },
	{ "persistent-nodemap", NULL }, /* accepted, not kept: see below */
	{ "revlog-compression-zstd", NULL },
	{ "revlogv1", NULL },
	{ "share-safe", NULL },
	{ "sparserevlog", NULL },
	{ "store", NULL },
	{ "treemanifest", NULL },
	{ "exp-changelog-v2",
	  "the experimental changelog v2, a format hg 6.3 enables only as 'enable-unstable-format-and-corrupt-my-data'" },
	{ "exp-copies-sidedata-changeset",
	  "copies kept in changeset sidedata, which lives in the experimental changelog v2" },
	{ "exp-revlogv2.2",
	  "the experimental revlog v2, unstable: docket files naming data files" },
	{ "shared", "a share's store is another repository's" },
	{ "relshared", "a share's store is another repository's" },
};

/* requirements.WORKING_DIR_REQUIREMENTS that we may write. */
static bool working_dir_requirement(const char *name)
{
	return strcmp(name, "share-safe") == 0;
}

/* The table's entry for name, or -1. */
static int requirement_index(const char *name)
{
	for (size_t i = 0;
	     i < sizeof(requirement_table) / sizeof(requirement_table[0]); i++)
		if (strcmp(name, requirement_table[i].name) == 0)
			return (int)i;
	return -1;
}

int bgrun_clone_supported_requirement(const char *name)
{
	int i = requirement_index(name);

	return i >= 0 && requirement_table[i].why == NULL;
}

/* The state of one clone. */
struct job {
	const struct bgrun_clone_opts *o;
	struct bgrun__bundle b;
	struct bgrun__writer w;
	struct bgrun_clone_progress p;
	const char *bundle_name;
	bgrun_os_fd_t bundle_fd;    /* ours when the options gave a path */
	bool own_bundle;
	struct bgrun__dir parent_dir, tmp, hg, store;
	bgrun_os_fd_t owner_fd;     /* the owner file, locked (stale.c) */
	bool owned, renamed;
	char *parent, *base, tmpname[256];
	bool dest_exists;           /* an empty directory: rename over it */
	const char *reqs[32];       /* the final requirements, sorted */
	size_t n_reqs;
	char *msg;                  /* the error message, malloc'd */
};

BGRUN__PRINTF(3, 4)
static int job_fail(struct job *j, int error, const char *fmt, ...)
{
	va_list ap;

	if (j->msg == NULL) {
		va_start(ap, fmt);
		if (vasprintf(&j->msg, fmt, ap) < 0)
			j->msg = NULL;
		va_end(ap);
	}
	return error;
}

/* The error the reader (or the writer through it) described. */
static int bundle_fail(struct job *j, int error)
{
	if (j->b.err[0] == '\0')
		return job_fail(j, error, "%s: %s", j->bundle_name,
				strerror(-error));
	if (j->b.err_at_offset)
		return job_fail(j, error, "%s: offset %llu: %s", j->bundle_name,
				(unsigned long long)j->b.err_offset, j->b.err);
	return job_fail(j, error, "%s: %s", j->bundle_name, j->b.err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks the bundle's requirements and computes the clone's. */
static int requirements(struct job *j)
{
	char *list = j->b.requirements, *save = NULL, *r;
	char unsupported[1024] = "";
	bool revlogv1 = false;

	for (size_t i = 0; i < 4; i++)
		j->reqs[j->n_reqs++] = new_repo_requirements[i];
	for (r = strtok_r(list, ",", &save); r != NULL;
	     r = strtok_r(NULL, ",", &save)) {
		bool dup = false;

		if (!bgrun_clone_supported_requirement(r)) {
			size_t n = strlen(unsupported);
			int k = requirement_index(r);

			(void)snprintf(unsupported + n, sizeof(unsupported) - n,
				       "%s%s%s%s%s", n ? ", " : "", r,
				       k >= 0 ? " (" : "",
				       k >= 0 ? requirement_table[k].why : "",
				       k >= 0 ? ")" : "");
			continue;
		}
		/*
		 * A nodemap is a cache of the revlog's index: older bundles
		 * list the requirement, but nothing in their revlogs needs
		 * it, and a repository that has it cannot be opened by a
		 * Mercurial without the Rust extensions (Debian's) unless
		 * configured for the slow path. Dropped, with the nodemaps,
		 * as `hg debugapplystreamclonebundle` does.
		 */
		if (strcmp(r, "persistent-nodemap") == 0)
			continue;
		revlogv1 |= strcmp(r, "revlogv1") == 0;
		for (size_t i = 0; i < j->n_reqs; i++)
			dup |= strcmp(j->reqs[i], r) == 0;
		if (!dup && j->n_reqs < sizeof(j->reqs) / sizeof(j->reqs[0]))
			j->reqs[j->n_reqs++] = r;
	}
	if (unsupported[0] != '\0')
		return job_fail(j, -EPROTONOSUPPORT,
			"%s: offset %llu: unsupported requirements: %s",
			j->bundle_name, (unsigned long long)j->b.req_offset,
			unsupported);
	if (!revlogv1)
		return job_fail(j, -EPROTONOSUPPORT,
			"%s: offset %llu: requirement revlogv1 missing (only revlog v1 stores are supported)",
			j->bundle_name, (unsigned long long)j->b.req_offset);
	qsort(j->reqs, j->n_reqs, sizeof(j->reqs[0]), cmp_str);
	return 0;
}

/* Creates name in dir (exclusively) holding len bytes of data. */
static int write_file(const struct bgrun__dir *dir, const char *name,
		      const void *data, size_t len)
{
	bgrun_os_fd_t fd;
	int r, r2;

	r = bgrun__dir_create(dir, name, &fd);
	if (r < 0)
		return r;
	r = bgrun__fd_write_all(fd, data, len);
	r2 = bgrun__file_close(fd);
	return r < 0 ? r : r2;
}

/* Writes the requirements of one side (working directory or store). */
static int write_requires(struct job *j, const struct bgrun__dir *dir, bool wd)
{
	char text[1024];
	size_t n = 0;

	for (size_t i = 0; i < j->n_reqs; i++)
		if (working_dir_requirement(j->reqs[i]) == wd)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\n",
					      j->reqs[i]);
	return write_file(dir, "requires", text, n);
}

/* The last separator in the first len bytes of s ('/', on Windows '\\' too), or NULL. */
static char *last_sep(char *s, size_t len)
{
	while (len > 0)
		if (strchr(BGRUN__PATH_SEPS, s[--len]) != NULL)
			return s + len;
	return NULL;
}

/* Splits dest into its parent and base name. */
static int split_dest(struct job *j)
{
	const char *dest = j->o->dest;
	size_t len = strlen(dest);
	char *slash;

	while (len > 1 && strchr(BGRUN__PATH_SEPS, dest[len - 1]) != NULL)
		len--;
	j->parent = strndup(dest, len);
	if (j->parent == NULL)
		return job_fail(j, -ENOMEM, "%s", strerror(ENOMEM));
	slash = last_sep(j->parent, len);
	if (slash == NULL) {
		j->base = j->parent;
		j->parent = strdup(".");
	} else {
		j->base = strdup(slash + 1);
		/* The root keeps its separator: "/", or a drive's "C:\\". */
		slash[slash == j->parent || slash[-1] == ':' ? 1 : 0] = '\0';
	}
	if (j->parent == NULL || j->base == NULL)
		return job_fail(j, -ENOMEM, "%s", strerror(ENOMEM));
	if (j->base[0] == '\0' || strcmp(j->base, ".") == 0 ||
	    strcmp(j->base, "..") == 0 || strchr(BGRUN__PATH_SEPS, j->base[0]) != NULL)
		return job_fail(j, -EINVAL,
			"%s: the destination must name a new directory", dest);
	return 0;
}

static int count_entry(void *data, const char *name)
{
	(void)name;
	++*(size_t *)data;
	return 1; /* one is enough */
}

/* Splits dest into its parent and base name, and checks it is free. */
static int check_dest(struct job *j)
{
	const char *dest = j->o->dest;
	struct bgrun__dir d = BGRUN__DIR_INIT;
	size_t entries = 0;
	int r;

	r = split_dest(j);
	if (r < 0)
		return r;
	r = bgrun__dir_open(j->parent, &j->parent_dir);
	if (r < 0)
		return job_fail(j, r, "%s: cannot open the parent directory: %s",
				dest, strerror(-r));
	/* dest itself, never through a symbolic link (which is not a directory). */
	r = bgrun__dir_open_at(&j->parent_dir, j->base, &d);
	if (r == -ENOTDIR || r == -ELOOP)
		return job_fail(j, -EEXIST,
			"%s: the destination exists and is not a directory",
			dest);
	if (r < 0 && r != -ENOENT)
		return job_fail(j, r, "%s: %s", dest, strerror(-r));
	if (r == 0) {
		r = bgrun__dir_list(&d, count_entry, &entries);
		bgrun__dir_close(&d);
		if (r < 0)
			return job_fail(j, r, "%s: %s", dest, strerror(-r));
		if (entries > 0)
			return job_fail(j, -ENOTEMPTY,
				"%s: the destination exists and is not empty",
				dest);
		j->dest_exists = true;
	}
	return 0;
}

/* Makes the temporary directory beside dest and .hg, .hg/store in it. */
static int make_tmp(struct job *j)
{
	/* What `hg init` puts there, so that pre-store clients give up. */
	static const char dummy[] =
		"\0\0\xff\xff dummy changelog to prevent using the old repo layout";
	unsigned char rnd[3];
	int r;

	/*
	 * The owner file first, then the directory: a kill -9 from now on
	 * leaves an owner file to judge (stale.c).
	 */
	for (int tries = 0;; tries++) {
		bgrun__random_bytes(rnd, sizeof(rnd));
		(void)snprintf(j->tmpname, sizeof(j->tmpname),
			       ".%.200s.clone-%02x%02x%02x", j->base, rnd[0],
			       rnd[1], rnd[2]);
		r = bgrun__clone_own(&j->parent_dir, j->tmpname, j->o->id,
				     j->o->dest,
				     j->o->start_ns ? j->o->start_ns
						    : bgrun__now_ns(CLOCK_REALTIME),
				     &j->owner_fd);
		if (r == 0) {
			r = bgrun__dir_mkdir(&j->parent_dir, j->tmpname);
			if (r == 0)
				break;
			bgrun__clone_disown(&j->parent_dir, j->tmpname,
					    j->owner_fd);
		}
		if (r != -EEXIST || tries == 100) {
			j->tmpname[0] = '\0';
			return job_fail(j, r,
				"%s: cannot create a temporary directory in %s: %s",
				j->o->dest, j->parent, strerror(-r));
		}
	}
	j->owned = true;
	r = bgrun__dir_open_at(&j->parent_dir, j->tmpname, &j->tmp);
	if (r < 0)
		return job_fail(j, r, "%s/%s: %s", j->parent, j->tmpname,
				strerror(-r));
	r = bgrun__dir_mkdir(&j->tmp, ".hg");
	if (r == 0)
		r = bgrun__dir_open_at(&j->tmp, ".hg", &j->hg);
	if (r == 0)
		r = bgrun__dir_mkdir(&j->hg, "store");
	if (r == 0)
		r = bgrun__dir_open_at(&j->hg, "store", &j->store);
	if (r < 0)
		return job_fail(j, r, "%s/%s: %s", j->parent, j->tmpname,
				strerror(-r));
	r = write_file(&j->hg, "00changelog.i", dummy, sizeof(dummy) - 1);
	if (r >= 0)
		r = write_requires(j, &j->hg, true);
	if (r >= 0)
		r = write_requires(j, &j->store, false);
	if (r < 0)
		return job_fail(j, r, "%s/%s: cannot write the requirements: %s",
				j->parent, j->tmpname, strerror(-r));
	return 0;
}

static void report(struct job *j)
{
	if (j->o->progress == NULL)
		return;
	j->p.files_done = j->w.files + j->w.skipped;
	j->p.bytes_done = j->w.bytes;
	j->o->progress(j->o->progress_data, &j->p);
}

static void writer_progress(void *data)
{
	report(data);
}

/* Each writer thread's ring: four pieces of 1 MiB. */
#define WRITE_RING ((size_t)4 << 20)

/* Reads every entry into the store, then the fncache. */
static int apply(struct job *j, unsigned int *ret_threads,
		 unsigned int *ret_writers)
{
	const struct bgrun_clone_opts *o = j->o;
	struct bgrun__closer *closer = NULL;
	struct bgrun__wpool *pool = NULL;
	struct bgrun__wpool_error pe;
	struct bgrun__entry e;
	uint64_t threshold = o->close_threshold ? o->close_threshold
						: BGRUN_CLONE_CLOSE_THRESHOLD_DEFAULT;
	unsigned int writers = o->write_threads < 0
				       ? BGRUN_CLONE_WRITE_THREADS_DEFAULT
				       : (unsigned int)o->write_threads;
	bool use_writers = writers > 0 && j->b.file_count >= threshold &&
			   !o->copy_file_range;
	unsigned int threads = o->close_threads >= 0 ? (unsigned int)o->close_threads
			       : use_writers ? BGRUN__CLOSERS_BEHIND_WRITERS
					     : BGRUN_CLONE_CLOSE_THREADS_DEFAULT;
	int r, r2;

	*ret_threads = *ret_writers = 0;
	if (threads > 0 && j->b.file_count >= threshold) {
		r = bgrun__closer_start(threads, BGRUN_CLONE_CLOSE_QUEUE,
					bgrun__clone_close_fn, &closer);
		if (r < 0)
			return job_fail(j, r, "cannot start closer threads: %s",
					strerror(-r));
		*ret_threads = threads;
	}
	bgrun__writer_init(&j->w, &j->store);
	if (use_writers) {
		r = bgrun__wpool_start(writers, WRITE_RING, closer,
				       bgrun__clone_close_fn, &pool);
		if (r == 0) {
			r = bgrun__writer_use_pool(&j->w, pool);
			*ret_writers = writers;
		}
		if (r < 0) {
			(void)bgrun__wpool_finish(pool, NULL);
			(void)bgrun__closer_finish(closer);
			return job_fail(j, r, "cannot start writer threads: %s",
					strerror(-r));
		}
	}
	j->w.hg = j->hg;
	j->w.chunk = o->chunk_size ? o->chunk_size : BGRUN_CLONE_CHUNK_DEFAULT;
	j->w.copy_range = o->copy_file_range;
	j->w.closer = closer;
	j->w.close_fn = bgrun__clone_close_fn;
	j->w.progress = o->progress != NULL ? writer_progress : NULL;
	j->w.progress_data = j;
	while ((r = bgrun__bundle_next(&j->b, &e)) > 0) {
		r = bgrun__writer_put(&j->w, &j->b, &e);
		if (r < 0)
			break;
		report(j);
	}
	/*
	 * A writer's failure concerns an earlier entry than anything the
	 * reader met since it handed that one over: it is the one to tell.
	 */
	r2 = bgrun__wpool_finish(pool, &pe);
	if (r2 < 0) {
		r = r2;
		if (pe.at_offset)
			(void)job_fail(j, r, "%s: offset %llu: %s", j->bundle_name,
				       (unsigned long long)pe.offset, pe.msg);
		else
			(void)job_fail(j, r, "%s: %s", j->bundle_name, pe.msg);
	}
	if (r < 0)
		(void)bundle_fail(j, r);
	r2 = bgrun__closer_finish(closer);
	if (r == 0 && r2 < 0)
		r = job_fail(j, r2, "cannot close a file written: %s",
			     strerror(-r2));
	if (r == 0) {
		r = bgrun__writer_fncache(&j->w);
		if (r < 0)
			(void)job_fail(j, r, "cannot write the fncache: %s",
				       strerror(-r));
	}
	return r;
}

/*
 * Moves the finished repository to dest. The owner file says so first:
 * a kill after the rename leaves it saying "renaming" beside no
 * temporary, which the sweep tells as a clone that finished.
 */
static int commit(struct job *j)
{
	int r;

	r = bgrun__clone_own_phase(j->owner_fd, "renaming");
	if (r < 0)
		return job_fail(j, r, "%s/%s%s: %s", j->parent, j->tmpname,
				BGRUN__CLONE_OWNER_SUFFIX, strerror(-r));
	r = bgrun__dir_rename(&j->parent_dir, j->tmpname, j->base,
			      j->dest_exists);
	if (r < 0) {
		(void)bgrun__clone_own_phase(j->owner_fd, "failed");
		return job_fail(j, r, "%s: %s", j->o->dest, strerror(-r));
	}
	j->renamed = true;
	return 0;
}

/* What outlives a clone: the message of its failure (bgrun.h CONVENTIONS). */
struct bgrun_clone {
	char errmsg[512];
	/*
	 * The last clone's owner file, kept locked until its end is
	 * recorded (bgrun_clone_close, or the next bgrun_clone): a kill
	 * before leaves it to the sweep.
	 */
	struct bgrun__dir parent_dir;
	char tmpname[256];
	bgrun_os_fd_t owner_fd;
	bool owned;
};

/* Lets the last clone's owner file go. */
static void disown(struct bgrun_clone *c)
{
	if (c->owned)
		bgrun__clone_disown(&c->parent_dir, c->tmpname, c->owner_fd);
	c->owned = false;
	bgrun__dir_close(&c->parent_dir);
}

int bgrun_clone_new(struct bgrun_clone **ret_clone)
{
	struct bgrun_clone *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	c->parent_dir = (struct bgrun__dir)BGRUN__DIR_INIT;
	c->owner_fd = BGRUN_OS_FD_NONE;
	*ret_clone = c;
	return 0;
}

const char *bgrun_clone_errmsg(const struct bgrun_clone *c)
{
	return c != NULL ? c->errmsg : "";
}

void bgrun_clone_close(struct bgrun_clone *c)
{
	if (c == NULL)
		return;
	disown(c);
	free(c);
}

/* What a job leaves when it ends: r, its message kept in c. */
static int job_end(struct bgrun_clone *c, struct job *j, int r)
{
	/* The owner file, and the directory it is in, go to c. */
	if (j->owned) {
		c->parent_dir = j->parent_dir;
		j->parent_dir = (struct bgrun__dir)BGRUN__DIR_INIT;
		(void)snprintf(c->tmpname, sizeof(c->tmpname), "%s",
			       j->tmpname);
		c->owner_fd = j->owner_fd;
		c->owned = true;
	}
	bgrun__dir_close(&j->parent_dir);
	free(j->parent);
	free(j->base);
	if (r < 0)
		(void)snprintf(c->errmsg, sizeof(c->errmsg), "%s",
			       j->msg != NULL ? j->msg : bgrun_strerror(r));
	free(j->msg);
	return r;
}

int bgrun_clone(struct bgrun_clone *c, const struct bgrun_clone_opts *opts,
		struct bgrun_clone_result *ret_result)
{
	struct job j = { .o = opts, .parent_dir = BGRUN__DIR_INIT,
			 .tmp = BGRUN__DIR_INIT, .hg = BGRUN__DIR_INIT,
			 .store = BGRUN__DIR_INIT };
	int64_t start = bgrun__now_ns(CLOCK_MONOTONIC);
	unsigned int threads = 0, writers = 0;
	bgrun_os_fd_t fd;
	size_t chunk;
	int r;

	if (c == NULL)
		return -EINVAL;
	disown(c);
	c->errmsg[0] = '\0';
	bgrun__writer_init(&j.w, &j.store);
	if (opts == NULL || opts->dest == NULL ||
	    (opts->bundle == NULL && bgrun__os_fd_bad(opts->bundle_fd))) {
		r = job_fail(&j, -EINVAL, "invalid clone options");
		goto out;
	}
	j.bundle_name = opts->bundle != NULL ? opts->bundle : "bundle";
	chunk = opts->chunk_size ? opts->chunk_size : BGRUN_CLONE_CHUNK_DEFAULT;
	r = check_dest(&j);
	if (r < 0)
		goto out;
	fd = opts->bundle_fd;
	if (bgrun__os_fd_bad(fd)) {
		r = bgrun__file_open_read(opts->bundle, &j.bundle_fd);
		if (r < 0) {
			(void)job_fail(&j, r, "%s: %s", opts->bundle,
				       strerror(-r));
			goto out;
		}
		fd = j.bundle_fd;
		j.own_bundle = true;
	}
	r = bgrun__bundle_open_fd(&j.b, fd, chunk);
	j.b.cancel = opts->cancel;
	if (r >= 0)
		r = bgrun__bundle_header(&j.b);
	if (r < 0) {
		(void)bundle_fail(&j, r);
		goto out;
	}
	r = requirements(&j);
	if (r < 0)
		goto out;
	/* What killed clones left beside dest (never a reason to fail). */
	(void)bgrun__clone_sweep(&j.parent_dir, j.parent, opts->stale,
				 opts->stale_data);
	j.p.files_total = j.b.file_count;
	j.p.bytes_total = j.b.byte_count;
	report(&j);
	r = make_tmp(&j);
	if (r >= 0)
		r = apply(&j, &threads, &writers);
	if (r >= 0)
		r = commit(&j);
	if (r < 0)
		goto out;
	if (ret_result != NULL) {
		struct bgrun_clone_result *res = ret_result;
		size_t n = 0;

		*res = (struct bgrun_clone_result){
			.files = j.w.files,
			.bytes = j.w.bytes,
			.bundle_files = j.b.file_count,
			.bundle_bytes = j.b.byte_count,
			.bundle_version = j.b.version,
			.duration_ns = bgrun__now_ns(CLOCK_MONOTONIC) - start,
			.close_threads = threads,
			.write_threads = writers,
			.chunk_size = chunk,
		};
		for (size_t i = 0; i < j.n_reqs; i++)
			n += (size_t)snprintf(res->requirements + n,
					      sizeof(res->requirements) - n,
					      "%s%s", i ? "," : "", j.reqs[i]);
	}
out:
	bgrun__writer_release(&j.w);
	bgrun__dir_close(&j.store);
	bgrun__dir_close(&j.hg);
	bgrun__dir_close(&j.tmp);
	/* A failure after make_tmp: take everything back (not the owner file). */
	if (j.tmpname[0] != '\0' && !j.renamed)
		bgrun__dir_remove_tree(&j.parent_dir, j.tmpname);
	if (j.own_bundle)
		(void)bgrun__file_close(j.bundle_fd);
	bgrun__bundle_close(&j.b);
	r = job_end(c, &j, r);
	return r < 0 ? r : 0;
}

int bgrun_clone_cleanup(struct bgrun_clone *c, const char *dest,
			bgrun_clone_stale_cb cb, void *data)
{
	struct bgrun_clone_opts o = BGRUN_CLONE_OPTS_INIT;
	struct job j = { .o = &o, .parent_dir = BGRUN__DIR_INIT };
	const char *dir;
	int r;

	if (c == NULL)
		return -EINVAL;
	c->errmsg[0] = '\0';
	if (dest != NULL) {
		o.dest = dest;
		r = split_dest(&j);
		if (r < 0)
			goto out;
		dir = j.parent;
	} else {
		dir = ".";
	}
	r = bgrun__dir_open(dir, &j.parent_dir);
	if (r < 0) {
		(void)job_fail(&j, r, "%s: %s", dir, strerror(-r));
		goto out;
	}
	r = bgrun__clone_sweep(&j.parent_dir, dir, cb, data);
	if (r < 0)
		(void)job_fail(&j, r, "%s: %s", dir, strerror(-r));
out:
	return job_end(c, &j, r);
}

int (*bgrun__clone_close_fn)(bgrun_os_fd_t fd);
