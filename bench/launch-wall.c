/* SPDX-License-Identifier: MIT */
/* launch-wall.c: whole-process wall time of `bgrun -- true`, logged and not, next to `setsid -f true`. */

/*
 * What a user pays for one `bgrun -- CMD` at a shell prompt: the time from
 * starting the bgrun process to its exit. With the log, bgrun starts a
 * supervisor and waits for its report that CMD was executed; the
 * supervisor then writes the log in the background. Between two logged
 * runs the benchmark waits, untimed, until the previous run's finish is in
 * the log, so that supervisors do not pile up and every run starts from
 * the same state, and it waits for every process a run left behind (it
 * is their subreaper). `setsid -f true` (util-linux: fork, setsid, exec) is the
 * baseline a user would otherwise type; `bgrun --version` is the floor,
 * bgrun's own process start and exit. The mechanisms take turns, one run
 * each per round, so that the machine's load falls on all of them alike.
 * Beside the wall time, the CPU (user + system) of the run and of every
 * process it left behind (COMMAND, the supervisor, its recorder): what a
 * launch costs the machine, off the user's clock included.
 */

#include "bgrun.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct mech {
	const char *name;
	const char *argv[8];
	bool logged; /* leaves one event per run in the log */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ms(void)
{
	return (double)bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) / 1e6;
}

static int count_row(void *data, const struct bgrun_event_row *row)
{
	(void)row;
	++*(int64_t *)data;
	return 0;
}

/* Waits until the log holds `want` successful events (untimed). */
static int wait_logged(const char *db, int64_t want)
{
	double deadline = now_ms() + 30000;
	struct bgrun_query q = BGRUN_QUERY_INIT;

	q.result = BGRUN_RESULT_SUCCESS;
	while (now_ms() < deadline) {
		struct bgrun_store *store = NULL;
		int64_t n = 0;

		if (bgrun_store_new(&store) == 0 &&
		    bgrun_store_open(store, db, BGRUN_STORE_READONLY) == 0)
			(void)bgrun_store_query(store, &q, count_row, &n);
		bgrun_store_close(store);
		if (n >= want)
			return 0;
		(void)usleep(200);
	}
	return -ETIMEDOUT;
}

/*
 * Waits (untimed) until every process the last run left behind has
 * ended: `setsid -f`'s child, a supervisor and its recorder. We are their
 * subreaper, so they are ours to wait for; without this, the run after
 * `setsid -f true` would share the CPUs with its `true`, and a mechanism's
 * place in the round would show in its times. Returns their CPU in ms
 * (each one's own and that of the children it reaped itself).
 */
static double settle(void)
{
	struct rusage ru;
	double cpu = 0;
	pid_t pid;

	while ((pid = wait4(-1, NULL, 0, &ru)) > 0 || errno == EINTR)
		if (pid > 0)
			cpu += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	return cpu;
}

/*
 * One run: spawn, wait for exit; returns the wall time in ms or < 0, and
 * the CPU of the process in *ret_cpu.
 */
static double run_once(const struct mech *m, double *ret_cpu)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	struct bgrun_status st;
	double t0, t1;
	int r;

	o.argv = m->argv;
	o.detach = false;
	t0 = now_ms();
	r = bgrun_spawn(&o, &child);
	if (r < 0)
		return r;
	r = bgrun_child_wait(child, -1, &st);
	t1 = now_ms();
	bgrun_child_free(child);
	if (r < 0 || !st.exited || st.exit_code != 0)
		return -1;
	*ret_cpu = (double)(st.rusage.user_cpu_ns + st.rusage.sys_cpu_ns) / 1e6;
	return t1 - t0;
}

static void usage(FILE *f)
{
	(void)fprintf(f,
		"usage: launch-wall [--runs N] [--csv FILE] [--bgrun PATH] [--against PATH]\n"
		"Times whole `bgrun -- true` processes (logged, --no-log,\n"
		"--no-ensurestart) against `setsid -f true`, in one run;\n"
		"--against adds the same rows for another bgrun (a previous build).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runs", required_argument, NULL, 'n' },
		{ "csv", required_argument, NULL, 'c' },
		{ "bgrun", required_argument, NULL, 'b' },
		{ "against", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char self[PATH_MAX], bgrun[PATH_MAX + 32], tmpl[] = "/tmp/bgrun-wall-XXXXXX";
	char db[sizeof(tmpl) + 16];
	const char *csv = NULL, *bgrun_path = NULL, *against = NULL;
	int runs = 200, opt;
	ssize_t n;
	double p50[8] = { 0 };
	double p90_setsid = 1;
	FILE *out = NULL;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			runs = atoi(optarg);
			if (runs < 5) {
				(void)fprintf(stderr, "launch-wall: --runs must be >= 5\n");
				return 2;
			}
			break;
		case 'c':
			csv = optarg;
			break;
		case 'b':
			bgrun_path = optarg;
			break;
		case 'a':
			against = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (bgrun_path == NULL) {
		/* build/bench/launch-wall -> build/launcher/bgrun */
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0) {
			perror("launch-wall: /proc/self/exe");
			return 1;
		}
		self[n] = '\0';
		(void)snprintf(bgrun, sizeof(bgrun), "%s/../launcher/bgrun",
			       dirname(self));
		bgrun_path = bgrun;
	}
	if (access(bgrun_path, X_OK) < 0 ||
	    (against != NULL && access(against, X_OK) < 0)) {
		(void)fprintf(stderr, "launch-wall: %s: %s\n",
			      access(bgrun_path, X_OK) < 0 ? bgrun_path : against,
			      strerror(errno));
		return 1;
	}
	if (mkdtemp(tmpl) == NULL) {
		perror("launch-wall: mkdtemp");
		return 1;
	}
	(void)snprintf(db, sizeof(db), "%s/events.db", tmpl);
	(void)setenv("BGRUN_DB", db, 1);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		(void)fprintf(stderr, "launch-wall: warning: PR_SET_CHILD_SUBREAPER: "
			      "%s; runs may overlap\n", strerror(errno));

	const struct mech mechs[] = {
		{ "setsid -f true", { "setsid", "-f", "true" }, false },
		{ "bgrun --no-log -- true", { bgrun_path, "--no-log", "--", "true" }, false },
		{ "bgrun -- true", { bgrun_path, "--", "true" }, true },
		{ "bgrun --no-ensurestart -- true",
		  { bgrun_path, "--no-ensurestart", "--", "true" }, true },
		/* The floor: starting and ending the bgrun process alone. */
		{ "bgrun --version", { bgrun_path, "--version" }, false },
		/* --against: the same launches by the other bgrun. */
		{ "against: bgrun --no-log -- true", { against, "--no-log", "--", "true" }, false },
		{ "against: bgrun -- true", { against, "--", "true" }, true },
		{ "against: bgrun --no-ensurestart -- true",
		  { against, "--no-ensurestart", "--", "true" }, true },
	};
	const int nmech = (int)(sizeof(mechs) / sizeof(mechs[0])) -
			  (against == NULL ? 3 : 0);
	double *t = calloc((size_t)(runs * nmech), sizeof(*t));
	double *cpu = calloc((size_t)(runs * nmech), sizeof(*cpu));
	int64_t logged = 0;

	if (t == NULL || cpu == NULL)
		return 1;
	if (csv != NULL && (out = fopen(csv, "w")) == NULL) {
		(void)fprintf(stderr, "launch-wall: %s: %s\n", csv, strerror(errno));
		return 1;
	}
	if (out != NULL)
		(void)fprintf(out, "mechanism,runs,p50_ms,p90_ms,min_ms,ratio_vs_setsid,"
				   "cpu_p50_ms\n");
	/*
	 * Interleaved, one run of each mechanism per round, so that the
	 * machine's drifting load falls on all of them alike. Three
	 * untimed rounds first: page cache, the log's schema, ld.so's cache.
	 */
	for (int i = 0; i < 3 + runs; i++) {
		for (int m = 0; m < nmech; m++) {
			double c = 0, ms = run_once(&mechs[m], &c);

			if (ms < 0) {
				(void)fprintf(stderr, "launch-wall: %s failed\n",
					      mechs[m].name);
				return 1;
			}
			if (mechs[m].logged && wait_logged(db, ++logged) < 0) {
				(void)fprintf(stderr,
					      "launch-wall: %s: no log row\n",
					      mechs[m].name);
				return 1;
			}
			c += settle();
			if (i >= 3) {
				t[m * runs + i - 3] = ms;
				cpu[m * runs + i - 3] = c;
			}
		}
	}
	(void)printf("%-41s %6s %9s %9s %9s %8s %8s %9s\n", "mechanism", "runs",
		     "p50 ms", "p90 ms", "min ms", "x setsid", "p90 x", "cpu ms");
	for (int m = 0; m < nmech; m++) {
		double *v = &t[m * runs], *c = &cpu[m * runs];

		qsort(v, (size_t)runs, sizeof(*v), cmp_double);
		qsort(c, (size_t)runs, sizeof(*c), cmp_double);
		p50[m] = v[runs / 2];
		if (m == 0)
			p90_setsid = v[runs * 9 / 10];
		(void)printf("%-41s %6d %9.3f %9.3f %9.3f %8.2f %8.2f %9.3f\n",
			     mechs[m].name, runs, p50[m], v[runs * 9 / 10], v[0],
			     p50[m] / p50[0], v[runs * 9 / 10] / p90_setsid,
			     c[runs / 2]);
		if (out != NULL)
			(void)fprintf(out, "%s,%d,%.4f,%.4f,%.4f,%.3f,%.4f\n",
				      mechs[m].name, runs, p50[m],
				      v[runs * 9 / 10], v[0], p50[m] / p50[0],
				      c[runs / 2]);
	}
	(void)printf("\nlogging adds %.3f ms to bgrun's wall time (p50, ensurestart), "
		     "%.3f ms without ensurestart\n",
		     p50[2] - p50[1], p50[3] - p50[1]);
	(void)printf("(cpu ms: p50 of the user + system CPU of the run and of every "
		     "process it left behind)\n");
	if (out != NULL)
		(void)fclose(out);
	free(t);
	free(cpu);
	/* The log and its -wal, -shm and -lock companions, then the dir. */
	for (int i = 0; i < 4; i++) {
		static const char *const suffix[] = { "", "-wal", "-shm", "-lock" };
		char f[sizeof(db) + 8];

		(void)snprintf(f, sizeof(f), "%s%s", db, suffix[i]);
		(void)unlink(f);
	}
	(void)rmdir(tmpl);
	return 0;
}
