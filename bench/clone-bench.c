/* SPDX-License-Identifier: MIT */
/* clone-bench.c: bgrun clone against tar x and hg debugapplystreamclonebundle on the same bundle; closer and chunk-size effects; v2 against v1. */

/*
 * Usage: clone-bench [--files N[,N...]] [--runs R] [--dir DIR] [--dest DIR]
 *                    [--keep-until-end] [--csv FILE] [--bgrun PATH]
 *                    [--gen PATH] [--stream-gen PATH] [--quick] [--url]
 *                    [--only SUBSTR[,SUBSTR...]]
 *
 * For each N (default 10000,100000) it uses DIR/repo-N, made by
 * bench/gen-repo.sh when missing: a real hg repository of N files, its
 * stream clone bundle v1 and a tar of the same store files. N:large is a
 * repository of N incompressible 1 MiB files (DIR/repo-N-large), where
 * the write size matters. Every method
 * then writes a fresh copy under DEST/dest-N (DEST: --dest, default DIR;
 * put it on another file system to measure that one), R times (default 7,
 * 3 from 50,000 files on) in round robin (each round runs every method
 * once, so that the machine's changing load hits all alike), timed as a
 * whole process from spawn to exit (through the library: bgrun_spawn and
 * bgrun_child_wait). Before each run sync(2) flushes what earlier runs
 * wrote; their output is removed at once, or only at the end with
 * --keep-until-end (for ext4: see measure()). The page cache is warm (the
 * bundle is read from memory): this measures writing a store.
 *
 * The table gives the median (p50), p90 (nearest rank: of 5 or 7 runs,
 * the slowest) and best of the runs, files/s and MB/s (of the bundle's
 * file bytes), the ratio to `tar x` and how many times faster than hg.
 * Targets: bgrun clone <= 1.2 x tar, >= 4 x faster than hg
 * debugapplystreamclonebundle (into a fresh `hg init`, init untimed), and
 * the stream bundle v2 of the same repository (DIR/repo-N/bundle2.hg,
 * made from the repository when missing) applied in <= 1.1 x the time of
 * the v1 bundle. Beside the default (2 writer threads) are one writing
 * thread (the default before them), other writer counts, closers behind
 * the writers, write sizes, and (in process) every close made 1 ms
 * slower. --only SUBSTR,... runs only the methods whose names hold one
 * of the substrings (and those the targets need).
 * --csv writes one line per run: files,method,run,seconds.
 *
 * --url measures clones over HTTP instead: the bench starts `hg serve` on
 * 127.0.0.1 (a port it picks) on DIR/repo-N/repo and times `bgrun clone
 * http://127.0.0.1:PORT/` against `hg clone --stream -U` from the same
 * server, with `tar x` of the same store files beside them; target: >= 4
 * x faster than hg (on tmpfs: --dest on a tmpfs). Both ask the same
 * server for the same bundle2 stream, uncompressed (the server sends a
 * stream clone uncompressed to hg too: wireprotoserver's
 * prefer_uncompressed), so what differs is the client. Beside them: the
 * server's own time for the same request (curl into /dev/null, with
 * bgrun's headers), hg making those bytes in one process without HTTP
 * (bench/hg-stream-gen.py: exchange.getbundlechunks, as the server calls
 * it), the same two for the legacy stream_out, and a last row, the
 * ceiling that the server's time puts on hg/this for any client. Then
 * both clients again against a second hg serve of the same repository
 * that advertises a clonebundles manifest (extensions.clonebundles) whose
 * one entry is the v2 stream bundle on a static server (python3 -m
 * http.server): how servers that serve many clones keep up; its target
 * line says where the 4 x stands when the server is not the bound.
 */

#include "bgrun.h"
#include "bgrun/test-control.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 8
#define MAX_RUNS 50

/*
 * A way of making dest from the bundle. %B bundle, %T tar, %D dest, %R
 * the repository, %S bench/hg-stream-gen.py.
 */
struct method {
	const char *name;
	const char *const argv[16];
	bool hg_init; /* `hg init %D` first, untimed */
	bool mkdir;   /* mkdir %D first, untimed */
	/*
	 * In process instead (bgrun_clone), every close(2) made 1 ms slower,
	 * as on the NTFS of seed 000: what the background closer is for.
	 */
	bool slow;
	int threads;  /* closer threads (-1: the default) */
	int writers;  /* writer threads (-1: the default) */
	/* The program prints its own seconds (hg-stream-gen.py): those count. */
	bool self_timed;
};

static const struct method methods[] = {
	{ "bgrun clone (default: 2 writer threads)",
	  { "%G", "clone", "--no-log", "-q", "%B", "%D" } },
	{ "bgrun clone --write-threads 0 (one, 4 closers)",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "0", "%B", "%D" } },
	{ "bgrun clone --write-threads 0 --close-threads 0",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "0",
	    "--close-threads", "0", "%B", "%D" } },
	{ "bgrun clone --write-threads 1",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "1", "%B", "%D" } },
	{ "bgrun clone --write-threads 3",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "3", "%B", "%D" } },
	{ "bgrun clone --close-threads 4 (behind writers)",
	  { "%G", "clone", "--no-log", "-q", "--close-threads", "4", "%B", "%D" } },
	{ "bgrun clone --chunk-size 32K",
	  { "%G", "clone", "--no-log", "-q", "--chunk-size", "32K", "%B", "%D" } },
	{ "bgrun clone --chunk-size 256K",
	  { "%G", "clone", "--no-log", "-q", "--chunk-size", "256K", "%B", "%D" } },
	{ "bgrun clone --chunk-size 8M",
	  { "%G", "clone", "--no-log", "-q", "--chunk-size", "8M", "%B", "%D" } },
	{ "bgrun clone --copy-file-range (one thread)",
	  { "%G", "clone", "--no-log", "-q", "--copy-file-range", "%B", "%D" } },
	{ "bgrun clone (recording the event)",
	  { "%G", "clone", "-q", "--db", "%E", "%B", "%D" } },
	{ "tar x of the same store files",
	  { "tar", "-xf", "%T", "-C", "%D" }, .mkdir = true },
	{ "hg debugapplystreamclonebundle",
	  { "hg", "-R", "%D", "debugapplystreamclonebundle", "%B" }, .hg_init = true },
	{ "1 ms closes: one thread, synchronous", { NULL }, .slow = true,
	  .threads = 0, .writers = 0 },
	{ "1 ms closes: one thread, 4 closer threads", { NULL }, .slow = true,
	  .threads = 4, .writers = 0 },
	{ "1 ms closes: 2 writer threads (default)", { NULL }, .slow = true,
	  .threads = -1, .writers = -1 },
	{ "1 ms closes: 2 writers, 4 closer threads", { NULL }, .slow = true,
	  .threads = 4, .writers = -1 },
	{ "bgrun clone of the stream bundle v2",
	  { "%G", "clone", "--no-log", "-q", "%V", "%D" } },
	{ "bgrun clone of the v2 bundle, --write-threads 0",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "0", "%V", "%D" } },
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))
#define M_DEFAULT 0
#define M_ONE 1
#define M_TAR 11
#define M_HG 12
#define M_V2 17
#define M_V2_ONE 18

/* --url: %U is the server's URL. */
static const struct method url_methods[] = {
	{ "bgrun clone http://... (bundle2 stream)",
	  { "%G", "clone", "--no-log", "-q", "%U", "%D" } },
	{ "hg clone --stream -U http://...",
	  { "hg", "clone", "-q", "--stream", "-U", "%U", "%D" } },
	{ "tar x of the same store files",
	  { "tar", "-xf", "%T", "-C", "%D" }, .mkdir = true },
	/*
	 * What no client can beat: the server making the stream, asked
	 * exactly as bgrun clone asks (clone-http.c: the same headers).
	 */
	{ "the server's stream alone (curl > /dev/null)",
	  { "curl", "-s", "-f", "-o", "/dev/null", "-A",
	    "mercurial/proto-1.0 (bgrun clone)", "-H",
	    "X-HgArg-1: bundlecaps=HG20%2Cbundle2%3DHG20%250Astream%253Dv2"
	    "&cg=0&common=0000000000000000000000000000000000000000&stream=1",
	    "-H", "X-HgProto-1: 0.1 0.2 comp=none", "-H",
	    "Accept: application/mercurial-0.2", "%W" } },
	/* Of which hg making the bytes, without HTTP (in one process). */
	{ "hg making the stream, no HTTP (hg-stream-gen)",
	  { "/usr/bin/python3", "%S", "%R" }, .self_timed = true },
	/* The legacy stream (v1 entries, no bundle2 framing): cheaper? */
	{ "the server's legacy stream_out (curl)",
	  { "curl", "-s", "-f", "-o", "/dev/null", "-A",
	    "mercurial/proto-1.0 (bgrun clone)", "%O" } },
	{ "hg making the legacy stream, no HTTP",
	  { "/usr/bin/python3", "%S", "%R", "v1" }, .self_timed = true },
	{ "bgrun clone --write-threads 0 http://...",
	  { "%G", "clone", "--no-log", "-q", "--write-threads", "0", "%U", "%D" } },
	/*
	 * The same repository from a second hg serve that advertises a
	 * clonebundles manifest (extensions.clonebundles) whose one entry is
	 * the v2 stream bundle on a static server (Python's http.server):
	 * how a server that serves many clones keeps up. Both clients use it.
	 */
	{ "bgrun clone http://... (clonebundles)",
	  { "%G", "clone", "--no-log", "-q", "%K", "%D" } },
	{ "hg clone --stream -U http://... (clonebundles)",
	  { "hg", "clone", "-q", "--stream", "-U", "%K", "%D" } },
	{ "the clone bundle alone (curl > /dev/null)",
	  { "curl", "-s", "-f", "-o", "/dev/null", "%F" } },
};
#define N_URL_METHODS (sizeof(url_methods) / sizeof(url_methods[0]))
#define U_BGRUN 0
#define U_HG 1
#define U_TAR 2
#define U_CURL 3
#define U_GEN 4
#define U_LEGACY 5
#define U_LEGACY_GEN 6
#define U_CB_BGRUN 8
#define U_CB_HG 9
#define U_CB_CURL 10

struct ctx {
	const char *bgrun, *gen, *streamgen, *dir, *dest_dir, *csv_path;
	const char *only;  /* --only: substrings of the methods to run */
	FILE *csv;
	const char *sizes[MAX_SIZES]; /* N, or N:large */
	int n_sizes, runs;
	bool keep;         /* --keep-until-end */
	bool url;          /* --url */
	char server[64];   /* --url: http://127.0.0.1:PORT/ */
	char getbundle[96]; /* --url: its ?cmd=getbundle */
	char stream_out[96]; /* --url: its ?cmd=stream_out */
	char cb_server[64];  /* --url: the hg serve with clonebundles */
	char cb_bundle[PATH_MAX]; /* --url: the bundle's URL on the static server */
	char cb_manifest[PATH_MAX + 32]; /* --url: the manifest written, or "" */
	char bundle[PATH_MAX], bundle2[PATH_MAX], tar[PATH_MAX], db[PATH_MAX];
	char repo[PATH_MAX]; /* DIR/repo-N[-large]/repo */
	char top[PATH_MAX - 64];  /* where the runs write: DEST/dest-N */
	char dest[PATH_MAX];      /* this run's: top/RUN-METHOD */
	uint64_t bytes, files;
};

/*
 * Runs argv, waits; returns its duration in ns, or -1 (said why). With
 * out, its standard output goes to that file.
 */
static int64_t run_out(const char *const *argv, bool quiet, const char *out)
{
	static const char *const env_set[] = { "HGRCPATH=/dev/null",
					       "HGPLAIN=1", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	int r;

	o.argv = argv;
	o.env_set = env_set;
	o.detach = false;
	if (!quiet) {
		o.out.kind = BGRUN_STDIO_INHERIT;
		o.err.kind = BGRUN_STDIO_INHERIT;
	} else {
		o.err.kind = BGRUN_STDIO_INHERIT;
	}
	if (out != NULL) {
		o.out.kind = BGRUN_STDIO_FILE;
		o.out.path = out;
	}
	r = bgrun_spawn(&o, &child);
	if (r >= 0)
		r = bgrun_child_wait(child, -1, &st);
	bgrun_child_free(child);
	if (r < 0) {
		fprintf(stderr, "clone-bench: %s: %s\n", argv[0], bgrun_strerror(r));
		return -1;
	}
	if (!st.exited || st.exit_code != 0) {
		fprintf(stderr, "clone-bench: %s %s failed (status %d)\n", argv[0],
			argv[1] ? argv[1] : "", st.exit_code);
		return -1;
	}
	return st.duration_ns;
}

static int64_t run(const char *const *argv, bool quiet)
{
	return run_out(argv, quiet, NULL);
}

/* Runs argv, which prints its own seconds first: those, in ns, or -1. */
static int64_t run_self_timed(const struct ctx *x, const char *const *argv)
{
	char out[PATH_MAX];
	double s = -1;
	FILE *f;

	(void)snprintf(out, sizeof(out), "%s/self-timed.out", x->dir);
	if (run_out(argv, true, out) < 0)
		return -1;
	f = fopen(out, "re");
	if (f == NULL || fscanf(f, "%lf", &s) != 1 || s < 0) {
		fprintf(stderr, "clone-bench: %s printed no time (%s)\n", argv[0], out);
		s = -1;
	}
	if (f != NULL)
		fclose(f);
	return s < 0 ? -1 : (int64_t)(s * 1e9);
}

static int sh(const char *a, const char *b, const char *c, const char *d)
{
	const char *argv[] = { a, b, c, d, NULL };

	return run(argv, true) < 0 ? -1 : 0;
}

static void remove_tree(const char *path)
{
	(void)sh("rm", "-rf", path, NULL);
	sync();
}

/* Makes DIR/repo-N[-large] if missing; fills the paths and the counts. */
static int prepare(struct ctx *x, long n, bool large)
{
	char repo[PATH_MAX - 64], count[32];
	unsigned char h[22];
	struct stat st;
	int fd;

	(void)snprintf(repo, sizeof(repo), "%s/repo-%ld%s", x->dir, n,
		       large ? "-large" : "");
	(void)snprintf(x->bundle, sizeof(x->bundle), "%s/bundle.hg", repo);
	(void)snprintf(x->bundle2, sizeof(x->bundle2), "%s/bundle2.hg", repo);
	(void)snprintf(x->tar, sizeof(x->tar), "%s/store.tar", repo);
	(void)snprintf(x->top, sizeof(x->top), "%s/dest-%ld%s",
		       x->dest_dir != NULL ? x->dest_dir : x->dir, n,
		       large ? "-large" : "");
	(void)snprintf(x->db, sizeof(x->db), "%s/events.db", x->dir);
	(void)snprintf(x->repo, sizeof(x->repo), "%s/repo", repo);
	if (stat(x->tar, &st) < 0) {
		(void)snprintf(count, sizeof(count), "%ld", n);
		const char *argv[] = { "bash", x->gen, count, repo,
				       large ? "large" : "source", NULL };

		fprintf(stderr, "clone-bench: generating %s (hg commits %ld files)...\n",
			repo, n);
		if (run(argv, true) < 0)
			return -1;
	}
	if (stat(x->bundle2, &st) < 0) {
		/* Data generated before v2 bundles were measured. */
		char r[PATH_MAX];
		const char *argv[] = { "hg", "-R", r, "bundle", "-q", "-a", "-t",
				       "none-v2;stream=v2", x->bundle2, NULL };

		(void)snprintf(r, sizeof(r), "%s/repo", repo);
		if (run(argv, true) < 0)
			return -1;
	}
	fd = open(x->bundle, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, h, sizeof(h)) != sizeof(h)) {
		fprintf(stderr, "clone-bench: cannot read %s\n", x->bundle);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	x->files = x->bytes = 0;
	for (int i = 0; i < 8; i++) {
		x->files = x->files << 8 | h[6 + i];
		x->bytes = x->bytes << 8 | h[14 + i];
	}
	return 0;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The argv of method m, its placeholders filled. */
static void method_argv(const struct ctx *x, const struct method *m,
			const char *argv[16])
{
	for (int i = 0; i < 16; i++) {
		const char *a = m->argv[i];

		argv[i] = a == NULL ? NULL :
			  strcmp(a, "%G") == 0 ? x->bgrun :
			  strcmp(a, "%B") == 0 ? x->bundle :
			  strcmp(a, "%V") == 0 ? x->bundle2 :
			  strcmp(a, "%T") == 0 ? x->tar :
			  strcmp(a, "%D") == 0 ? x->dest :
			  strcmp(a, "%E") == 0 ? x->db :
			  strcmp(a, "%U") == 0 ? x->server :
			  strcmp(a, "%R") == 0 ? x->repo :
			  strcmp(a, "%S") == 0 ? x->streamgen :
			  strcmp(a, "%W") == 0 ? x->getbundle :
			  strcmp(a, "%O") == 0 ? x->stream_out :
			  strcmp(a, "%K") == 0 ? x->cb_server :
			  strcmp(a, "%F") == 0 ? x->cb_bundle : a;
		if (a == NULL)
			break;
	}
}

static int slow_close(int fd)
{
	struct timespec ts = { 0, 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return close(fd);
}

/* The slow-close methods: bgrun_clone in this process. */
static int64_t run_in_process(struct ctx *x, const struct method *m)
{
	struct bgrun_clone_opts o = BGRUN_CLONE_OPTS_INIT;
	int64_t start = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	struct bgrun_clone *c;
	int r;

	if (bgrun_clone_new(&c) < 0)
		return -1;
	o.bundle = x->bundle;
	o.dest = x->dest;
	o.close_threads = m->threads;
	o.write_threads = m->writers;
	(void)bgrun__test_control(BGRUN__TEST_CLONE_CLOSE_FN, slow_close);
	r = bgrun_clone(c, &o, NULL);
	(void)bgrun__test_control(BGRUN__TEST_CLONE_CLOSE_FN, (int (*)(int))NULL);
	if (r < 0)
		fprintf(stderr, "clone-bench: %s\n", bgrun_clone_errmsg(c));
	bgrun_clone_close(c);
	if (r < 0)
		return -1;
	return bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - start;
}

/*
 * One timed run of method m into a fresh directory; -1 on failure. Its
 * output is removed at once, or with --keep-until-end only after the last
 * round: on ext4, inodes freed in the last 30 seconds are skipped by the
 * allocator one by one (recently_deleted() in ext4_create, seen with perf
 * as the top of the profile), which makes file creation after a mass
 * deletion several times slower, for every method alike but noisily.
 */
static int64_t measure(struct ctx *x, const struct method *m, int round,
		       size_t index)
{
	const char *argv[16];
	int64_t t;

	(void)snprintf(x->dest, sizeof(x->dest), "%s/%d-%zu", x->top, round,
		       index);
	method_argv(x, m, argv);
	if (m->mkdir && mkdir(x->dest, 0777) < 0)
		return -1;
	if (m->hg_init && sh("hg", "init", x->dest, NULL) < 0)
		return -1;
	sync();
	t = m->slow ? run_in_process(x, m) :
	    m->self_timed ? run_self_timed(x, argv) : run(argv, true);
	if (!x->keep)
		remove_tree(x->dest);
	return t;
}

/*
 * Whether --only lets method m run (those the targets need, always).
 * --only is a comma-separated list of substrings of the methods' names.
 */
static bool chosen(const struct ctx *x, const struct method *m, bool always)
{
	const char *p = x->only;

	if (p == NULL || always)
		return true;
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		const char *h = m->name;

		for (; (h = strchr(h, p[0])) != NULL; h++)
			if (n > 0 && strncmp(h, p, n) == 0)
				return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* Whether method i is measured on this repository. */
static bool wanted(const struct ctx *x, size_t i, long n, bool large)
{
	const struct method *m = &methods[i];

	if (!chosen(x, m, i == M_DEFAULT || i == M_ONE || i == M_TAR ||
			      i == M_HG || i == M_V2 || i == M_V2_ONE))
		return false;
	/* 1 ms per file: 10 s for 10,000 files synchronously; enough. */
	return !m->slow || (!large && n <= 20000);
}

/*
 * The runs of the n methods ms (those with on[i]) sorted into their
 * median and best, then printed as one table against tar (index m_tar)
 * and hg (m_hg).
 */
static void print_table(const struct ctx *x, const struct method *ms,
			size_t n, int64_t (*t)[MAX_RUNS], const bool *on,
			size_t m_tar, size_t m_hg, int64_t *med)
{
	int64_t best[N_METHODS], p90[N_METHODS];

	for (size_t i = 0; i < n; i++) {
		if (!on[i])
			continue;
		qsort(t[i], (size_t)x->runs, sizeof(t[i][0]), cmp64);
		med[i] = t[i][x->runs / 2];
		/* The nearest rank: of 5 or 7 runs, the slowest. */
		p90[i] = t[i][(x->runs * 9 + 9) / 10 - 1];
		best[i] = t[i][0];
	}
	printf("%-46s %24s %10s %8s %7s %8s\n", "method", "p50 (p90, best) s",
	       "files/s", "MB/s", "x tar", "hg/this");
	for (size_t i = 0; i < n; i++) {
		double s = (double)med[i] / 1e9;

		if (!on[i])
			continue;
		printf("%-46s %7.3f (%6.3f, %6.3f) %10.0f %8.1f %7.2f %8.1f\n",
		       ms[i].name, s, (double)p90[i] / 1e9, (double)best[i] / 1e9,
		       (double)x->files / s, (double)x->bytes / 1e6 / s,
		       (double)med[i] / (double)med[m_tar],
		       (double)med[m_hg] / (double)med[i]);
	}
}

static int bench_size(struct ctx *x, const char *spec)
{
	static int64_t t[N_METHODS][MAX_RUNS];
	int64_t med[N_METHODS];
	bool on[N_METHODS];
	bool large = strstr(spec, ":large") != NULL;
	long n = atol(spec);

	if (prepare(x, n, large) < 0)
		return -1;
	if (x->runs == 0)
		x->runs = n >= 50000 ? 3 : 7;
	printf("\n%ld-file%s repository: bundle of %" PRIu64 " files, %.1f MB; "
	       "into %s; median of %d runs (best in brackets)%s\n\n", n,
	       large ? " (1 MiB binaries)" : "", x->files, (double)x->bytes / 1e6, x->top, x->runs,
	       x->keep ? ", outputs kept until the end" : "");
	fflush(stdout);
	remove_tree(x->top);
	if (mkdir(x->top, 0777) < 0) {
		fprintf(stderr, "clone-bench: %s: %s\n", x->top, strerror(errno));
		return -1;
	}
	/*
	 * Round robin: each round runs every method once, so that a change
	 * in the machine's load (or the file system's state) over time hits
	 * all of them alike.
	 */
	for (int r = 0; r < x->runs; r++) {
		for (size_t i = 0; i < N_METHODS; i++) {
			if (!wanted(x, i, n, large))
				continue;
			t[i][r] = measure(x, &methods[i], r, i);
			if (t[i][r] < 0)
				return -1;
			if (x->csv != NULL) {
				fprintf(x->csv, "%s,\"%s\",%d,%.6f\n", spec,
					methods[i].name, r, (double)t[i][r] / 1e9);
				fflush(x->csv);
			}
		}
	}
	for (size_t i = 0; i < N_METHODS; i++)
		on[i] = wanted(x, i, n, large);
	print_table(x, methods, N_METHODS, t, on, M_TAR, M_HG, med);
	printf("\ntargets: bgrun clone %.2f x tar (<= 1.2: %s), %.1f x faster than hg (>= 4: %s)\n",
	       (double)med[M_DEFAULT] / (double)med[M_TAR],
	       (double)med[M_DEFAULT] <= 1.2 * (double)med[M_TAR] ? "met" : "NOT met",
	       (double)med[M_HG] / (double)med[M_DEFAULT],
	       (double)med[M_HG] >= 4.0 * (double)med[M_DEFAULT] ? "met" : "NOT met");
	printf("         the v2 bundle in %.2f x the time of the v1 bundle (<= 1.1: %s)\n",
	       (double)med[M_V2] / (double)med[M_DEFAULT],
	       (double)med[M_V2] <= 1.1 * (double)med[M_DEFAULT] ? "met" : "NOT met");
	printf("         (on one thread: v2 in %.2f x the time of v1)\n",
	       (double)med[M_V2_ONE] / (double)med[M_ONE]);
	printf("         the writer threads: %.2f x the time of one thread\n",
	       (double)med[M_DEFAULT] / (double)med[M_ONE]);
	fflush(stdout);
	remove_tree(x->top);
	return 0;
}

/*
 * --url: `hg serve -d` on x->repo, on 127.0.0.1 and a port it picks, read
 * from what it prints; its pid in *ret_pid, to be killed at the end.
 */
static int start_hg_serve(struct ctx *x, bool clonebundles, char *url,
			  size_t size, pid_t *ret_pid)
{
	char out[PATH_MAX], pidfile[PATH_MAX], buf[512];
	const char *argv[] = { "hg", "-R", x->repo, "serve", "-d", "-a",
			       "127.0.0.1", "-p", "0", "--pid-file", pidfile,
			       clonebundles ? "--config" : NULL,
			       "extensions.clonebundles=", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	const char *p;
	FILE *f;
	int r, port = 0;
	long pid = 0;

	(void)snprintf(out, sizeof(out), "%s/serve%s.out", x->dir,
		       clonebundles ? "-cb" : "");
	(void)snprintf(pidfile, sizeof(pidfile), "%s/serve%s.pid", x->dir,
		       clonebundles ? "-cb" : "");
	o.argv = argv;
	o.detach = false;
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	o.err.kind = BGRUN_STDIO_INHERIT;
	r = bgrun_spawn(&o, &child);
	if (r >= 0)
		r = bgrun_child_wait(child, -1, &st);
	bgrun_child_free(child);
	if (r < 0 || !st.exited || st.exit_code != 0) {
		fprintf(stderr, "clone-bench: hg serve did not start\n");
		return -1;
	}
	/* "listening at http://localhost:PORT/ (bound to 127.0.0.1:PORT)" */
	f = fopen(out, "re");
	if (f != NULL && fgets(buf, sizeof(buf), f) != NULL &&
	    (p = strstr(buf, "bound to 127.0.0.1:")) != NULL)
		port = atoi(p + 19);
	if (f != NULL)
		fclose(f);
	f = fopen(pidfile, "re");
	if (f != NULL && fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	if (f != NULL)
		fclose(f);
	if (port <= 0 || pid <= 0) {
		fprintf(stderr, "clone-bench: cannot read hg serve's port or pid (%s)\n",
			out);
		if (pid > 0)
			(void)kill((pid_t)pid, SIGTERM);
		return -1;
	}
	(void)snprintf(url, size, "http://127.0.0.1:%d/", port);
	*ret_pid = (pid_t)pid;
	return 0;
}

static int start_server(struct ctx *x, pid_t *ret_pid)
{
	if (start_hg_serve(x, false, x->server, sizeof(x->server), ret_pid) < 0)
		return -1;
	(void)snprintf(x->getbundle, sizeof(x->getbundle), "%s?cmd=getbundle",
		       x->server);
	(void)snprintf(x->stream_out, sizeof(x->stream_out), "%s?cmd=stream_out",
		       x->server);
	return 0;
}

/*
 * --url, the clonebundles rows: a static server (python3 -m http.server,
 * its pid in *ret_static) serving the v2 stream bundle's directory, the
 * manifest naming it in the repository (hg serve reads it at each
 * request; only a server with extensions.clonebundles advertises it), and
 * the second hg serve (*ret_pid).
 */
static int start_clonebundles(struct ctx *x, pid_t *ret_static, pid_t *ret_pid)
{
	char dir[PATH_MAX], log[PATH_MAX], spec[512];
	char buf[512], *slash;
	const char *argv[] = { "/usr/bin/python3", "-u", "-m", "http.server",
			       "0", "--bind", "127.0.0.1", "--directory", dir,
			       NULL };
	const char *spec_argv[] = { "hg", "debugbundle", "--spec", x->bundle2,
				    NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	int64_t deadline;
	int port = 0;
	FILE *f;

	(void)snprintf(dir, sizeof(dir), "%s", x->bundle2);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	(void)snprintf(log, sizeof(log), "%s/static.log", x->dir);
	(void)unlink(log);
	o.argv = argv;
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = log;
	o.err.kind = BGRUN_STDIO_FILE; /* its requests: the log */
	o.err.path = log;
	if (bgrun_spawn(&o, &child) < 0) {
		fprintf(stderr, "clone-bench: python3 -m http.server did not start\n");
		return -1;
	}
	*ret_static = bgrun_child_started(child, NULL);
	bgrun_child_free(child);
	/* "Serving HTTP on 127.0.0.1 port PORT (http://127.0.0.1:PORT/) ..." */
	deadline = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) + 30 * INT64_C(1000000000);
	while (port == 0 && bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) < deadline) {
		const char *p;

		f = fopen(log, "re");
		if (f != NULL && fgets(buf, sizeof(buf), f) != NULL &&
		    (p = strstr(buf, " port ")) != NULL)
			port = atoi(p + 6);
		if (f != NULL)
			fclose(f);
		if (port == 0)
			(void)poll(NULL, 0, 20);
	}
	if (port <= 0) {
		fprintf(stderr, "clone-bench: the static server said no port (%s)\n",
			log);
		return -1;
	}
	(void)snprintf(x->cb_bundle, sizeof(x->cb_bundle),
		       "http://127.0.0.1:%d/%s", port, slash + 1);
	/* The manifest's BUNDLESPEC. */
	(void)snprintf(buf, sizeof(buf), "%s/bundlespec.out", x->dir);
	if (run_out(spec_argv, true, buf) < 0)
		return -1;
	f = fopen(buf, "re");
	if (f == NULL || fgets(spec, sizeof(spec), f) == NULL) {
		if (f != NULL)
			fclose(f);
		fprintf(stderr, "clone-bench: hg debugbundle --spec said nothing\n");
		return -1;
	}
	fclose(f);
	spec[strcspn(spec, "\n")] = '\0';
	(void)snprintf(x->cb_manifest, sizeof(x->cb_manifest),
		       "%s/.hg/clonebundles.manifest", x->repo);
	f = fopen(x->cb_manifest, "we");
	if (f == NULL) {
		fprintf(stderr, "clone-bench: %s: %s\n", x->cb_manifest,
			strerror(errno));
		return -1;
	}
	/* hg debugbundle --spec prints it as a manifest holds it. */
	fprintf(f, "%s BUNDLESPEC=%s\n", x->cb_bundle, spec);
	if (fclose(f) != 0)
		return -1;
	return start_hg_serve(x, true, x->cb_server, sizeof(x->cb_server),
			      ret_pid);
}

/* --url: one repository's table, bgrun clone URL against hg clone. */
static int bench_url(struct ctx *x, const char *spec)
{
	static int64_t t[N_URL_METHODS][MAX_RUNS];
	bool url_on[N_URL_METHODS];
	int64_t med[N_METHODS];
	bool large = strstr(spec, ":large") != NULL;
	long n = atol(spec);
	pid_t server = 0, cb_server = 0, cb_static = 0;
	int status = -1;

	x->cb_manifest[0] = '\0';
	if (prepare(x, n, large) < 0 || start_server(x, &server) < 0)
		return -1;
	if (start_clonebundles(x, &cb_static, &cb_server) < 0)
		goto out;
	if (x->runs == 0)
		x->runs = n >= 50000 ? 3 : 7;
	printf("\n%ld-file%s repository over HTTP (hg serve at %s): %" PRIu64
	       " files, %.1f MB; into %s; median of %d runs (best in brackets)\n\n",
	       n, large ? " (1 MiB binaries)" : "", x->server, x->files,
	       (double)x->bytes / 1e6, x->top, x->runs);
	fflush(stdout);
	remove_tree(x->top);
	if (mkdir(x->top, 0777) < 0) {
		fprintf(stderr, "clone-bench: %s: %s\n", x->top, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < N_URL_METHODS; i++)
		url_on[i] = chosen(x, &url_methods[i],
				   i == U_BGRUN || i == U_HG || i == U_TAR ||
				   i == U_CURL || i >= U_CB_BGRUN);
	for (int r = 0; r < x->runs; r++) {
		for (size_t i = 0; i < N_URL_METHODS; i++) {
			if (!url_on[i])
				continue;
			t[i][r] = measure(x, &url_methods[i], r, i);
			if (t[i][r] < 0)
				goto out;
			if (x->csv != NULL) {
				fprintf(x->csv, "%s,\"%s\",%d,%.6f\n", spec,
					url_methods[i].name, r, (double)t[i][r] / 1e9);
				fflush(x->csv);
			}
		}
	}
	print_table(x, url_methods, N_URL_METHODS, t, url_on, U_TAR, U_HG, med);
	/*
	 * The bound as a row: a client that took no time at all would
	 * still wait for the server's stream, so hg/this can be no more.
	 */
	printf("%-46s %24s %10s %8s %7s %8.1f\n",
	       "server-bound ceiling (hg / the server alone)", "-", "-", "-", "-",
	       (double)med[U_HG] / (double)med[U_CURL]);
	printf("\ntarget: bgrun clone URL %.1f x faster than hg clone --stream -U (>= 4: %s)\n",
	       (double)med[U_HG] / (double)med[U_BGRUN],
	       (double)med[U_HG] >= 4.0 * (double)med[U_BGRUN] ? "met" : "NOT met");
	printf("        the server alone takes %.2f of bgrun's time: at most %.1f x is possible against hg; bgrun's is %.0f%% of that\n",
	       (double)med[U_CURL] / (double)med[U_BGRUN],
	       (double)med[U_HG] / (double)med[U_CURL],
	       100.0 * (double)med[U_CURL] / (double)med[U_BGRUN]);
	if (url_on[U_CB_BGRUN] && url_on[U_CB_HG])
		printf("        with a clonebundles manifest: bgrun clone URL %.1f x faster than hg clone --stream -U (>= 4: %s)\n",
		       (double)med[U_CB_HG] / (double)med[U_CB_BGRUN],
		       (double)med[U_CB_HG] >= 4.0 * (double)med[U_CB_BGRUN]
			       ? "met" : "NOT met");
	fflush(stdout);
	status = 0;
out:
	if (cb_server > 0)
		(void)kill(cb_server, SIGTERM);
	if (cb_static > 0)
		(void)kill(cb_static, SIGTERM);
	if (x->cb_manifest[0] != '\0')
		(void)unlink(x->cb_manifest);
	(void)kill(server, SIGTERM);
	remove_tree(x->top);
	return status;
}

static void usage(void)
{
	fputs("usage: clone-bench [--files N[,N...]] [--runs R] [--dir DIR] [--dest DIR]\n"
	      "                   [--keep-until-end] [--csv FILE] [--bgrun PATH]\n"
	      "                   [--gen PATH] [--stream-gen PATH] [--quick] [--url]\n"
	      "                   [--only SUBSTR[,SUBSTR...]]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "files", required_argument, NULL, 'f' },
		{ "runs", required_argument, NULL, 'r' },
		{ "dir", required_argument, NULL, 'd' },
		{ "dest", required_argument, NULL, 'D' },
		{ "keep-until-end", no_argument, NULL, 'k' },
		{ "csv", required_argument, NULL, 'c' },
		{ "bgrun", required_argument, NULL, 'b' },
		{ "gen", required_argument, NULL, 'g' },
		{ "quick", no_argument, NULL, 'q' },
		{ "url", no_argument, NULL, 'u' },
		{ "only", required_argument, NULL, 'o' },
		{ "stream-gen", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctx x = { .dir = "clone-bench-data", .bgrun = "bgrun",
			 .gen = "bench/gen-repo.sh",
			 .streamgen = "bench/hg-stream-gen.py" };
	char *files = NULL, *tok, *save = NULL;
	int opt, status = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'f': files = optarg; break;
		case 'r': x.runs = atoi(optarg); break;
		case 'd': x.dir = optarg; break;
		case 'D': x.dest_dir = optarg; break;
		case 'k': x.keep = true; break;
		case 'c': x.csv_path = optarg; break;
		case 'b': x.bgrun = optarg; break;
		case 'g': x.gen = optarg; break;
		case 'q': files = (char *)"2000"; x.runs = 1; break;
		case 'u': x.url = true; break;
		case 'o': x.only = optarg; break;
		case 's': x.streamgen = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || x.runs < 0 || x.runs > MAX_RUNS)
		usage();
	files = strdup(files != NULL ? files : "10000,100000");
	for (tok = strtok_r(files, ",", &save); tok && x.n_sizes < MAX_SIZES;
	     tok = strtok_r(NULL, ",", &save))
		x.sizes[x.n_sizes++] = tok;
	if (mkdir(x.dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "clone-bench: %s: %s\n", x.dir, strerror(errno));
		return 1;
	}
	if (x.csv_path != NULL) {
		x.csv = fopen(x.csv_path, "we");
		if (x.csv == NULL) {
			fprintf(stderr, "clone-bench: %s: %s\n", x.csv_path,
				strerror(errno));
			return 1;
		}
		fprintf(x.csv, "files,method,run,seconds\n");
	}
	for (int i = 0; i < x.n_sizes && status == 0; i++) {
		int runs = x.runs;

		status = (x.url ? bench_url(&x, x.sizes[i])
				: bench_size(&x, x.sizes[i])) < 0 ? 1 : 0;
		x.runs = runs;
	}
	if (x.csv != NULL)
		fclose(x.csv);
	free(files);
	return status;
}
