/* SPDX-License-Identifier: MIT */
/* store-write.c: events per second through the embedded store's write path, 1 and 16 writer processes. */

/*
 * Usage: store-write [--quick] [--events N] [--dir DIR] [--csv FILE]
 *
 * Each scenario starts on a new database in DIR (default: a new directory
 * under $TMPDIR or /tmp) and runs writer processes of this same program
 * (`store-write --worker ...`, launched with bgrun_spawn): each opens the
 * store, reports ready, and when all are ready (a pipe closes) writes its
 * share of the events, timing each call. The figure is recorded events
 * over wall time from the start signal to the last writer's exit, and the
 * rows are counted afterwards.
 */

#include "bgrun.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 64

enum mode {
	MODE_PUT,        /* one put (one transaction) per event */
	MODE_BATCH,      /* put_batch of 100 */
	MODE_SUPERVISOR, /* per event: open, put running, put final, close */
};

struct scenario {
	const char *name;
	enum mode mode;
	int procs;
};

static const struct scenario scenarios[] = {
	{ "put", MODE_PUT, 1 },
	{ "put", MODE_PUT, 16 },
	{ "put_batch(100)", MODE_BATCH, 1 },
	{ "put_batch(100)", MODE_BATCH, 16 },
	{ "supervisor: open+running+final+close", MODE_SUPERVISOR, 1 },
	{ "supervisor: open+running+final+close", MODE_SUPERVISOR, 16 },
};

#define BATCH 100

static const char *const sample_argv[] = {
	"hg", "pull", "-u", "https://example.org/repo/with a space", NULL,
};

static void die(const char *what, int r)
{
	fprintf(stderr, "store-write: %s: %s\n", what, bgrun_strerror(r));
	exit(1);
}

/* A final event as a supervisor would write it. */
static void sample_event(struct bgrun_event *ev, bool running)
{
	struct bgrun_status st = { .pid = 12345, .exited = true };

	bgrun_event_init(ev, "commandfinish", "bgrun");
	ev->argv = sample_argv;
	ev->cwd = "/home/someone/src/project";
	ev->tag = "bench";
	ev->supervisor_pid = getpid();
	ev->stdout_path = "/home/someone/.local/state/bgrun/out/12345.out";
	ev->stderr_path = "/home/someone/.local/state/bgrun/out/12345.err";
	if (running) {
		ev->result = BGRUN_RESULT_RUNNING;
		ev->start_ns = 1700000000000000000;
		return;
	}
	st.start_realtime_ns = 1700000000000000000;
	st.end_realtime_ns = st.start_realtime_ns + 1234567;
	st.duration_ns = 1234567;
	st.rusage.max_rss_kb = 4321;
	st.rusage.minor_faults = 99;
	bgrun_event_set_status(ev, &st);
}

static struct bgrun_store *open_store(const char *db)
{
	struct bgrun_store *s = NULL;
	int r = bgrun_store_new(&s);

	if (r >= 0)
		r = bgrun_store_open(s, db, 0);
	if (r < 0) {
		fprintf(stderr, "store-write: %s\n",
			s != NULL ? bgrun_store_errmsg(s) : bgrun_strerror(r));
		exit(1);
	}
	return s;
}

static void put_checked(struct bgrun_store *s, const struct bgrun_event *evs,
			size_t n)
{
	int r = bgrun_store_put_batch(s, evs, n);

	if (r < 0) {
		fprintf(stderr, "store-write: put: %s\n", bgrun_store_errmsg(s));
		exit(1);
	}
}

/*
 * `store-write --worker MODE DB COUNT OUT`: the writer process. Writes one
 * byte to stdout when ready, waits for EOF on stdin, then writes COUNT
 * events and the duration of each call (int64 ns) to OUT.
 */
static int worker_main(enum mode mode, const char *db, int count,
		       const char *out)
{
	struct bgrun_event *evs = calloc(BATCH, sizeof(*evs));
	size_t calls = mode == MODE_BATCH ? (size_t)(count + BATCH - 1) / BATCH
					  : (size_t)count;
	int64_t *lat = calloc(calls ? calls : 1, sizeof(*lat)), t;
	struct bgrun_store *s = NULL;
	size_t k = 0;
	ssize_t n;
	char c = 'r';
	FILE *f;

	if (evs == NULL || lat == NULL)
		die("worker", -ENOMEM);
	if (mode != MODE_SUPERVISOR)
		s = open_store(db);
	if (write(1, &c, 1) != 1)
		die("worker ready", -errno);
	while ((n = read(0, &c, 1)) != 0)
		if (n < 0 && errno != EINTR)
			break;
	for (int done = 0; done < count; k++) {
		int chunk = mode == MODE_BATCH && count - done > BATCH
				    ? BATCH
				    : (mode == MODE_BATCH ? count - done : 1);

		t = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		if (mode == MODE_SUPERVISOR) {
			struct bgrun_event fin;

			s = open_store(db);
			sample_event(&evs[0], true);
			put_checked(s, evs, 1);
			sample_event(&fin, false);
			memcpy(fin.id, evs[0].id, sizeof(fin.id));
			put_checked(s, &fin, 1);
			bgrun_store_close(s);
			s = NULL;
		} else {
			for (int i = 0; i < chunk; i++)
				sample_event(&evs[i], false);
			put_checked(s, evs, (size_t)chunk);
		}
		lat[k] = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - t;
		done += chunk;
	}
	bgrun_store_close(s);
	f = fopen(out, "we");
	if (f == NULL || fwrite(lat, sizeof(*lat), k, f) != k || fclose(f) != 0)
		die(out, -errno);
	free(lat);
	free(evs);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

static const char *fs_name(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0)
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xef53: return "ext4";
	case 0x01021994: return "tmpfs";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x794c7630: return "overlayfs";
	}
	return "other";
}

struct result {
	double seconds, per_s;
	double cpu; /* user + system seconds of the writers */
	int64_t p50, p99, max; /* per call, ns */
	int64_t rows;
};

static int64_t count_rows(const char *db)
{
	sqlite3 *raw = NULL;
	sqlite3_stmt *stmt = NULL;
	int64_t n = -1;

	if (sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(raw, "SELECT count(*) FROM events", -1, &stmt,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(raw);
	return n;
}

static void run_scenario(const struct scenario *sc, const char *dir,
			 int events, int index, struct result *res)
{
	char *sub, *db, count[32], mode[8], *outs[MAX_PROCS], self[PATH_MAX];
	struct bgrun_child *children[MAX_PROCS];
	int go[2], ready[2], per = events / sc->procs;
	int64_t *all = NULL, t0, total = 0;
	size_t n_all = 0;
	struct bgrun_status st;
	double cpu = 0;
	char c;

	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len < 0)
		die("readlink /proc/self/exe", -errno);
	self[len] = '\0';
	if (asprintf(&sub, "%s/s%d", dir, index) < 0 ||
	    asprintf(&db, "%s/events.db", sub) < 0)
		die("asprintf", -ENOMEM);
	bgrun_store_close(open_store(db)); /* created and migrated */
	(void)snprintf(count, sizeof(count), "%d", per);
	(void)snprintf(mode, sizeof(mode), "%d", (int)sc->mode);
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)
		die("pipe2", -errno);
	for (int i = 0; i < sc->procs; i++) {
		struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
		const char *argv[8];
		int r;

		if (asprintf(&outs[i], "%s/lat%d", sub, i) < 0)
			die("asprintf", -ENOMEM);
		argv[0] = self;
		argv[1] = "--worker";
		argv[2] = mode;
		argv[3] = db;
		argv[4] = count;
		argv[5] = outs[i];
		argv[6] = NULL;
		opts.argv = argv;
		opts.in.kind = BGRUN_STDIO_FD;
		opts.in.fd = go[0];
		opts.out.kind = BGRUN_STDIO_FD;
		opts.out.fd = ready[1];
		opts.err.kind = BGRUN_STDIO_INHERIT;
		r = bgrun_spawn(&opts, &children[i]);
		if (r < 0)
			die("bgrun_spawn", r);
	}
	(void)close(ready[1]);
	(void)close(go[0]);
	for (int i = 0; i < sc->procs; i++)
		if (read(ready[0], &c, 1) != 1)
			die("a worker failed before starting", -EIO);
	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	(void)close(go[1]);
	for (int i = 0; i < sc->procs; i++) {
		int r = bgrun_child_wait(children[i], -1, &st);

		if (r < 0 || !st.exited || st.exit_code != 0)
			die("a worker failed", r < 0 ? r : -EIO);
		cpu += (double)(st.rusage.user_cpu_ns + st.rusage.sys_cpu_ns) /
		       1e9;
		bgrun_child_free(children[i]);
	}
	res->seconds = (double)(bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - t0) / 1e9;
	res->cpu = cpu;
	(void)close(ready[0]);
	for (int i = 0; i < sc->procs; i++) {
		FILE *f = fopen(outs[i], "re");
		int64_t v;

		while (f != NULL && fread(&v, sizeof(v), 1, f) == 1) {
			int64_t *grown = realloc(all, (n_all + 1) * sizeof(*all));

			if (grown == NULL)
				die("realloc", -ENOMEM);
			all = grown;
			all[n_all++] = v;
		}
		if (f != NULL)
			fclose(f);
		free(outs[i]);
	}
	qsort(all, n_all, sizeof(*all), cmp_i64);
	total = (int64_t)per * sc->procs;
	res->per_s = (double)total / res->seconds;
	res->p50 = n_all ? all[(n_all * 50 + 99) / 100 - 1] : 0;
	res->p99 = n_all ? all[(n_all * 99 + 99) / 100 - 1] : 0;
	res->max = n_all ? all[n_all - 1] : 0;
	res->rows = count_rows(db);
	if (res->rows != total) {
		fprintf(stderr, "store-write: %s: %lld rows, expected %lld\n",
			sc->name, (long long)res->rows, (long long)total);
		exit(1);
	}
	free(all);
	free(db);
	free(sub);
}

int main(int argc, char **argv)
{
	const char *csv_path = NULL, *dir_arg = NULL, *base;
	int events = 16000, only = -1;
	char *dir;
	FILE *csv = NULL;

	if (argc == 6 && strcmp(argv[1], "--worker") == 0)
		return worker_main((enum mode)atoi(argv[2]), argv[3],
				   atoi(argv[4]), argv[5]);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			events = 1600;
		else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
			events = atoi(argv[++i]);
		else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			csv_path = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir_arg = argv[++i];
		else if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc)
			only = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: store-write [--quick] [--events N] "
					"[--dir DIR] [--csv FILE] "
					"[--scenario I]\n");
			return 2;
		}
	}
	if (events < 16) {
		fprintf(stderr, "store-write: --events must be >= 16\n");
		return 2;
	}
	base = dir_arg ? dir_arg : getenv("TMPDIR");
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	if (asprintf(&dir, "%s/store-write.XXXXXX", base) < 0 ||
	    mkdtemp(dir) == NULL)
		die("mkdtemp", -errno);
	if (csv_path != NULL) {
		csv = fopen(csv_path, "we");
		if (csv == NULL)
			die(csv_path, -errno);
		fprintf(csv, "scenario,processes,events,seconds,events_per_s,"
			     "cpu_seconds,call_p50_us,call_p99_us,"
			     "call_max_us\n");
	}
	printf("store-write: SQLite %s, %s on %s, %ld CPUs, %d events per "
	       "scenario\n", sqlite3_libversion(), dir, fs_name(dir),
	       sysconf(_SC_NPROCESSORS_ONLN), events);
	printf("%-38s %5s %7s %8s %9s %7s %8s %9s %9s\n", "scenario", "procs",
	       "events", "seconds", "events/s", "cpu s", "p50 us", "p99 us",
	       "max us");
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		const struct scenario *sc = &scenarios[i];
		int n = sc->mode == MODE_SUPERVISOR ? events / 4 : events;
		struct result res;

		if (only >= 0 && (size_t)only != i)
			continue;
		run_scenario(sc, dir, n, (int)i, &res);
		printf("%-38s %5d %7lld %8.3f %9.0f %7.2f %8.1f %9.1f %9.1f\n",
		       sc->name, sc->procs, (long long)res.rows, res.seconds,
		       res.per_s, res.cpu, res.p50 / 1e3, res.p99 / 1e3,
		       res.max / 1e3);
		fflush(stdout);
		if (csv != NULL)
			fprintf(csv, "\"%s\",%d,%lld,%.6f,%.1f,%.3f,%.1f,%.1f,"
				     "%.1f\n",
				sc->name, sc->procs, (long long)res.rows,
				res.seconds, res.per_s, res.cpu, res.p50 / 1e3,
				res.p99 / 1e3, res.max / 1e3);
	}
	printf("(p50/p99/max: per call: one put, one put_batch of %d, or one "
	       "supervisor's open+2 puts+close)\n", BATCH);
	if (csv != NULL && fclose(csv) != 0)
		die(csv_path, -errno);
	(void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
	return 0;
}
