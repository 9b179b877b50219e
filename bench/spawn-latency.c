/* SPDX-License-Identifier: MIT */
/* spawn-latency.c: launch latency of bgrun_spawn and its alternatives as the caller's heap grows. */

/*
 * Reproduces and extends the table behind Mercurial's runbgcommand work:
 * the cost of launching a trivial background command from a process with a
 * big heap. fork()-based launchers copy the caller's page tables, so they
 * slow down as the heap grows; posix_spawn (clone(CLONE_VM|CLONE_VFORK) in
 * glibc) does not. The mechanisms themselves are in spawn-latency-mech.c.
 */

#include "spawn-latency.h"

#include "bgrun.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES 32
#define MIN_RUNS 5
#define WARMUP_RUNS 3
#define DEFAULT_MEM "0,200,500,1000,4000"
#define QUICK_MEM "0,200"
#define DEFAULT_BUDGET_MS 1500
#define QUICK_BUDGET_MS 150
#define DEFAULT_MAX_RUNS 300

struct config {
	long mem_mb[MAX_SIZES]; /* ascending, no duplicates */
	int nsizes;
	bool thp;
	const char *cmd;
	int budget_ms;
	int max_runs;
	const char *csv;
	const char *plot;
	bool parts;
};

struct result {
	bool done;
	int runs;
	double p50, p90, min; /* ms */
};

/* results[size][mechanism][ensurestart] */
static struct result results[MAX_SIZES][SL_NMECH][2];

static const char usage_text[] =
"usage: spawn-latency [options]\n"
"\n"
"Times launches of a trivial command with bgrun_spawn, raw posix_spawn,\n"
"fork+exec, Mercurial 5.5's double fork, Mercurial 6's `sh -c '( cmd ) &'`\n"
"from a Python that vforks (hg6_sh_bg) and from one that forks\n"
"(hg6_sh_bg_fork), and libuv's uv_spawn, from a process holding a growing\n"
"touched heap.\n"
"\n"
"  --mem LIST        heap sizes in MB, comma-separated (default " DEFAULT_MEM ")\n"
"  --thp             let the heap use transparent huge pages (default: 4 KiB\n"
"                    pages, MADV_NOHUGEPAGE, as an interpreter heap looks)\n"
"  --cmd PATH        the command to launch (default /bin/true)\n"
"  --budget-ms N     time budget per cell in ms (default 1500)\n"
"  --max-runs N      runs per cell at most (default 300; at least 5 are made)\n"
"  --quick           sizes " QUICK_MEM " and a 150 ms budget\n"
"  --csv FILE        write mechanism,mem_mb,ensurestart,runs,p50_ms,p90_ms,min_ms\n"
"  --plot FILE.png   plot p50 against heap size with gnuplot, if installed\n"
"  --parts           instead: bgrun_spawn's own part, one piece at a time (raw\n"
"                    posix_spawn, + setsid, + the signal attributes, + /dev/null\n"
"                    opened by the child or dup2'd from the caller's, + closefrom,\n"
"                    + pidfd_open and epoll_ctl), interleaved; --mem default 0\n"
"  --help            show this help\n";

BGRUN__PRINTF(1, 2)
static _Noreturn void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("spawn-latency: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try --help)\n", stderr);
	exit(2);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static long parse_num(const char *s, const char *what, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max)
		usage_error("bad %s '%s'", what, s);
	return v;
}

static void parse_mem(struct config *cfg, const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int i, n = 0;

	if (copy == NULL) {
		fputs("spawn-latency: out of memory\n", stderr);
		exit(1);
	}
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES)
			usage_error("too many sizes in --mem '%s'", list);
		cfg->mem_mb[n++] = parse_num(tok, "--mem size", 1L << 20);
	}
	free(copy);
	if (n == 0)
		usage_error("--mem '%s' lists no size", list);
	qsort(cfg->mem_mb, (size_t)n, sizeof(long), cmp_long);
	cfg->nsizes = 0;
	for (i = 0; i < n; i++) {
		if (cfg->nsizes == 0 || cfg->mem_mb[cfg->nsizes - 1] != cfg->mem_mb[i])
			cfg->mem_mb[cfg->nsizes++] = cfg->mem_mb[i];
	}
}

static void parse_args(struct config *cfg, int argc, char **argv)
{
	enum { O_MEM = 256, O_THP, O_CMD, O_BUDGET, O_MAX_RUNS, O_QUICK, O_CSV, O_PLOT, O_PARTS,
	       O_HELP };
	static const struct option longopts[] = {
		{ "mem", required_argument, NULL, O_MEM },
		{ "thp", no_argument, NULL, O_THP },
		{ "cmd", required_argument, NULL, O_CMD },
		{ "budget-ms", required_argument, NULL, O_BUDGET },
		{ "max-runs", required_argument, NULL, O_MAX_RUNS },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "csv", required_argument, NULL, O_CSV },
		{ "plot", required_argument, NULL, O_PLOT },
		{ "parts", no_argument, NULL, O_PARTS },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *mem = NULL;
	bool quick = false;
	int budget = -1, c;

	cfg->cmd = "/bin/true";
	cfg->max_runs = DEFAULT_MAX_RUNS;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case O_MEM:
			mem = optarg;
			break;
		case O_THP:
			cfg->thp = true;
			break;
		case O_CMD:
			cfg->cmd = optarg;
			break;
		case O_BUDGET:
			budget = (int)parse_num(optarg, "--budget-ms", 3600000);
			break;
		case O_MAX_RUNS:
			cfg->max_runs = (int)parse_num(optarg, "--max-runs", 1000000);
			if (cfg->max_runs < MIN_RUNS)
				cfg->max_runs = MIN_RUNS;
			break;
		case O_QUICK:
			quick = true;
			break;
		case O_CSV:
			cfg->csv = optarg;
			break;
		case O_PLOT:
			cfg->plot = optarg;
			break;
		case O_PARTS:
			cfg->parts = true;
			break;
		case 'h':
		case O_HELP:
			fputs(usage_text, stdout);
			exit(0);
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	/* Explicit --mem and --budget-ms win over --quick, in any order. */
	parse_mem(cfg, mem != NULL ? mem : quick ? QUICK_MEM : cfg->parts ? "0" : DEFAULT_MEM);
	cfg->budget_ms = budget >= 0 ? budget : quick ? QUICK_BUDGET_MS : DEFAULT_BUDGET_MS;
	if (strchr(cfg->cmd, '/') == NULL)
		usage_error("--cmd '%s' must be a path (with a '/')", cfg->cmd);
	if (access(cfg->cmd, X_OK) < 0) {
		fprintf(stderr, "spawn-latency: %s: %s\n", cfg->cmd, strerror(errno));
		exit(1);
	}
}

/* Linear interpolation between the closest ranks (sorted input). */
static double percentile(const double *s, int n, double q)
{
	double rank = q * (n - 1);
	int lo = (int)rank;

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + (rank - lo) * (s[lo + 1] - s[lo]);
}

static _Noreturn void runtime_error(const char *what, int err)
{
	fprintf(stderr, "spawn-latency: %s: %s\n", what, strerror(-err));
	exit(1);
}

static void measure_cell(const struct config *cfg, enum sl_mech m, bool on,
			 double *samples, struct result *res)
{
	int64_t budget_ns = (int64_t)cfg->budget_ms * 1000000, start, ns;
	struct sl_cell *cell;
	const char *what = "";
	char msg[128];
	int i, n = 0, r;

	r = sl_cell_new(m, on, cfg->cmd, &cell, &what);
	if (r < 0)
		runtime_error(what, r);
	/* Warm up caches and the library's threads; cheap ones get all three. */
	start = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	for (i = 0; i < WARMUP_RUNS; i++) {
		r = sl_cell_run(cell, &ns, &what);
		if (r < 0)
			goto fail;
		if (bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - start > budget_ns / 5)
			break;
	}
	/* The budget counts the untimed reaping too, so the run time is bounded. */
	start = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	while (n < cfg->max_runs && (n < MIN_RUNS || bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - start < budget_ns)) {
		r = sl_cell_run(cell, &ns, &what);
		if (r < 0)
			goto fail;
		samples[n++] = (double)ns / 1e6;
	}
	sl_cell_free(cell);
	qsort(samples, (size_t)n, sizeof(double), cmp_double);
	res->done = true;
	res->runs = n;
	res->p50 = percentile(samples, n, 0.50);
	res->p90 = percentile(samples, n, 0.90);
	res->min = samples[0];
	return;

fail:
	(void)snprintf(msg, sizeof(msg), "%s (ensurestart=%s): %s",
		       sl_mechs[m].name, on ? "on" : "off", what);
	runtime_error(msg, r);
}

/*
 * The cells whose differences are a few microseconds (bgrun_spawn with
 * ensurestart, posix_spawn, posix_spawn with setsid) take turns, one run
 * each in a round, so that the machine's drifting load falls on them
 * alike; samples holds max_runs doubles per cell.
 */
static void measure_interleaved(const struct config *cfg, const enum sl_mech *mech,
				int n, double *samples, struct result **res)
{
	int64_t budget_ns = (int64_t)cfg->budget_ms * 1000000 * n, start, ns;
	struct sl_cell *cell[SL_NMECH];
	const char *what = "";
	char msg[128];
	int i, k, runs = 0, r = 0;

	for (k = 0; k < n; k++) {
		r = sl_cell_new(mech[k], true, cfg->cmd, &cell[k], &what);
		if (r < 0)
			goto fail;
	}
	for (i = 0; i < WARMUP_RUNS; i++)
		for (k = 0; k < n; k++)
			if ((r = sl_cell_run(cell[k], &ns, &what)) < 0)
				goto fail;
	start = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	while (runs < cfg->max_runs &&
	       (runs < MIN_RUNS || bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - start < budget_ns)) {
		for (k = 0; k < n; k++) {
			if ((r = sl_cell_run(cell[k], &ns, &what)) < 0)
				goto fail;
			samples[k * cfg->max_runs + runs] = (double)ns / 1e6;
		}
		runs++;
	}
	for (k = 0; k < n; k++) {
		double *v = &samples[k * cfg->max_runs];

		sl_cell_free(cell[k]);
		qsort(v, (size_t)runs, sizeof(double), cmp_double);
		res[k]->done = true;
		res[k]->runs = runs;
		res[k]->p50 = percentile(v, runs, 0.50);
		res[k]->p90 = percentile(v, runs, 0.90);
		res[k]->min = v[0];
	}
	return;

fail:
	(void)snprintf(msg, sizeof(msg), "%s (ensurestart=on): %s",
		       sl_mechs[mech[k < n ? k : 0]].name, what);
	runtime_error(msg, r);
}

static void print_ms(const struct result *r)
{
	if (r->done)
		printf("  %9.3f %9.3f", r->p50, r->p90);
	else
		printf("  %9s %9s", "-", "-");
}

static void print_table(const struct config *cfg)
{
	int s, m;

	printf("\nLaunch latency of %s in ms from a caller with a touched heap of %s\n"
	       "(p50/p90 over the runs; ensurestart=off: until the call returns)\n\n",
	       cfg->cmd, cfg->thp ? "huge pages allowed (MADV_HUGEPAGE)" :
	       "4 KiB pages (MADV_NOHUGEPAGE)");
	printf("%-18s %7s  %-19s  %-19s  %9s\n", "", "", "  ensurestart=on", "  ensurestart=off", "");
	printf("%-18s %7s  %9s %9s  %9s %9s  %9s\n", "mechanism", "mem MB",
	       "p50", "p90", "p50", "p90", "runs");
	for (m = 0; m < SL_NMECH; m++) {
		for (s = 0; s < cfg->nsizes; s++) {
			const struct result *on = &results[s][m][1], *off = &results[s][m][0];
			char runs[32];

			if (!on->done && !off->done)
				continue;
			if (off->done)
				(void)snprintf(runs, sizeof(runs), "%d/%d", on->runs, off->runs);
			else
				(void)snprintf(runs, sizeof(runs), "%d/-", on->runs);
			printf("%-18s %7ld", sl_mechs[m].name, cfg->mem_mb[s]);
			print_ms(on);
			print_ms(off);
			printf("  %9s\n", runs);
		}
	}
}

static void print_summary(const struct config *cfg)
{
	int s, last = cfg->nsizes - 1;
	const struct result *b, *o;

	printf("\nbgrun_spawn(on) p50 vs hg55_double_fork(on) p50:\n");
	for (s = 0; s < cfg->nsizes; s++) {
		b = &results[s][SL_BGRUN_SPAWN][1];
		o = &results[s][SL_HG55_DOUBLE_FORK][1];
		printf("  %5ld MB: %9.3f ms vs %9.3f ms  -> %.1fx faster\n",
		       cfg->mem_mb[s], b->p50, o->p50, o->p50 / b->p50);
	}
	printf("\nbgrun_spawn(on) p50 vs raw posix_spawn p50 (the library's overhead):\n");
	for (s = 0; s < cfg->nsizes; s++) {
		b = &results[s][SL_BGRUN_SPAWN][1];
		o = &results[s][SL_POSIX_SPAWN][1];
		printf("  %5ld MB: %9.3f ms vs %9.3f ms  -> %+.3f ms (%.2fx); p90 %.3f vs %.3f (%.2fx)\n",
		       cfg->mem_mb[s], b->p50, o->p50, b->p50 - o->p50, b->p50 / o->p50,
		       b->p90, o->p90, b->p90 / o->p90);
	}
	printf("\nbgrun_spawn(on) vs posix_spawn with POSIX_SPAWN_SETSID (the floor of a detached launch):\n");
	for (s = 0; s < cfg->nsizes; s++) {
		b = &results[s][SL_BGRUN_SPAWN][1];
		o = &results[s][SL_POSIX_SPAWN_SETSID][1];
		printf("  %5ld MB: p50 %9.3f ms vs %9.3f ms  -> %+.3f ms; p90 %.3f vs %.3f (%.2fx)\n",
		       cfg->mem_mb[s], b->p50, o->p50, b->p50 - o->p50,
		       b->p90, o->p90, b->p90 / o->p90);
	}
	b = &results[last][SL_BGRUN_SPAWN][1];
	o = &results[0][SL_BGRUN_SPAWN][1];
	printf("\nbgrun_spawn(on) p50 at %ld MB / at %ld MB: %.3f / %.3f = %.2fx\n",
	       cfg->mem_mb[last], cfg->mem_mb[0], b->p50, o->p50, b->p50 / o->p50);
}

/*
 * --parts: each piece against the line it builds on (part_null_dup
 * replaces part_null_open: both build on part_signals), and against raw
 * posix_spawn.
 */
static void print_parts(const struct config *cfg)
{
	static const enum sl_mech order[] = {
		SL_POSIX_SPAWN, SL_POSIX_SPAWN_SETSID, SL_PART_SIGNALS,
		SL_PART_NULL_OPEN, SL_PART_NULL_DUP, SL_PART_CLOSEFROM,
		SL_PART_PIDFD, SL_BGRUN_SPAWN,
	};
	static const enum sl_mech base[] = {
		SL_POSIX_SPAWN, SL_POSIX_SPAWN, SL_POSIX_SPAWN_SETSID,
		SL_PART_SIGNALS, SL_PART_SIGNALS, SL_PART_NULL_DUP,
		SL_PART_CLOSEFROM, SL_PART_PIDFD,
	};

	for (int s = 0; s < cfg->nsizes; s++) {
		const struct result *raw = &results[s][SL_POSIX_SPAWN][1];

		printf("\nbgrun_spawn's part, one piece at a time, at %ld MB (ms; each line has\n"
		       "the pieces of the line it builds on, and its own):\n\n", cfg->mem_mb[s]);
		printf("%-20s %9s %9s %9s  %-20s %9s %9s\n", "mechanism", "p50", "p90", "min",
		       "builds on", "p50 +", "vs raw");
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			const struct result *r = &results[s][order[i]][1];
			const struct result *b = &results[s][base[i]][1];

			printf("%-20s %9.3f %9.3f %9.3f  %-20s", sl_mechs[order[i]].name,
			       r->p50, r->p90, r->min, i == 0 ? "" : sl_mechs[base[i]].name);
			if (i == 0)
				printf(" %9s %9s\n", "", "");
			else
				printf(" %+9.3f %+9.3f\n", r->p50 - b->p50, r->p50 - raw->p50);
		}
	}
}

static int write_csv(const struct config *cfg)
{
	FILE *f = fopen(cfg->csv, "w");
	int s, m, on;

	if (f == NULL)
		return -errno;
	fputs("mechanism,mem_mb,ensurestart,runs,p50_ms,p90_ms,min_ms\n", f);
	for (m = 0; m < SL_NMECH; m++) {
		for (s = 0; s < cfg->nsizes; s++) {
			for (on = 1; on >= 0; on--) {
				const struct result *r = &results[s][m][on];

				if (!r->done)
					continue;
				fprintf(f, "%s,%ld,%s,%d,%.4f,%.4f,%.4f\n", sl_mechs[m].name,
					cfg->mem_mb[s], on ? "on" : "off", r->runs,
					r->p50, r->p90, r->min);
			}
		}
	}
	if (ferror(f)) {
		(void)fclose(f);
		return -EIO;
	}
	if (fclose(f) != 0)
		return -errno;
	return 0;
}

/* A gnuplot single-quoted string: a quote inside is doubled. */
static void gp_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* The data file: one block (gnuplot "index") per mechanism and ensurestart. */
static int write_plot_data(const struct config *cfg, int fd)
{
	FILE *f = fdopen(fd, "w");
	int s, m, on;

	if (f == NULL)
		return -errno;
	for (m = 0; m < SL_NMECH; m++) {
		for (on = 1; on >= 0; on--) {
			if (!results[0][m][on].done)
				continue;
			fprintf(f, "# %s %s\n", sl_mechs[m].name, on ? "on" : "off");
			for (s = 0; s < cfg->nsizes; s++)
				fprintf(f, "%ld %.6f\n", cfg->mem_mb[s], results[s][m][on].p50);
			fputs("\n\n", f);
		}
	}
	if (ferror(f)) {
		(void)fclose(f);
		return -EIO;
	}
	return fclose(f) != 0 ? -errno : 0;
}

static char *plot_script(const struct config *cfg, const char *data, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int m, on, block = 0;

	if (f == NULL)
		return NULL;
	fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
	      "  set terminal pngcairo size 1000,650\n"
	      "} else {\n"
	      "  set terminal png size 1000,650\n"
	      "}\n", f);
	/* Enhanced text would turn the '_' of the names into subscripts. */
	fputs("set termoption noenhanced\nset output ", f);
	gp_quoted(f, cfg->plot);
	fprintf(f, "\nset title 'Launching %s: p50 latency vs caller heap (%s)'\n",
		cfg->cmd, cfg->thp ? "THP allowed" : "4 KiB pages");
	fputs("set xlabel 'caller heap, MB'\n"
	      "set ylabel 'p50 latency, ms (log scale)'\n"
	      "set logscale y\n"
	      "set grid\n"
	      "set key outside right top\n"
	      "plot", f);
	for (m = 0; m < SL_NMECH; m++) {
		for (on = 1; on >= 0; on--) {
			if (!results[0][m][on].done)
				continue;
			fputs(block == 0 ? " " : ", \\\n     ", f);
			gp_quoted(f, data);
			fprintf(f, " index %d using 1:2 with linespoints lw 2 pt 7 lc %d dt %d"
				" title '%s %s'", block, m + 1, on ? 1 : 2,
				sl_mechs[m].name, on ? "on" : "off");
			block++;
		}
	}
	fputs("\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

/* Runs gnuplot through bgrun_spawn itself, the script fed as stdin bytes. */
static void plot(const struct config *cfg)
{
	const char *gp_argv[] = { "gnuplot", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { 0 };
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	char data[] = "/tmp/spawn-latency-XXXXXX";
	char *script = NULL;
	size_t len = 0;
	int fd, r;

	fd = mkostemp(data, O_CLOEXEC);
	if (fd < 0)
		runtime_error("mkostemp", -errno);
	r = write_plot_data(cfg, fd);
	if (r < 0) {
		(void)unlink(data);
		runtime_error(data, r);
	}
	script = plot_script(cfg, data, &len);
	if (script == NULL) {
		(void)unlink(data);
		runtime_error("plot script", -ENOMEM);
	}
	o.argv = gp_argv;
	o.detach = false;
	o.in.kind = BGRUN_STDIO_BYTES;
	o.in.bytes = script;
	o.in.len = len;
	o.err.kind = BGRUN_STDIO_INHERIT;
	o.failure = &failure;
	r = bgrun_spawn(&o, &child);
	free(script);
	if (r == -ENOENT && failure.stage == BGRUN_STAGE_EXEC) {
		(void)unlink(data);
		printf("\nplot skipped: gnuplot is not on PATH\n");
		return;
	}
	if (r >= 0)
		r = bgrun_child_wait(child, 120000, &st);
	bgrun_child_free(child);
	(void)unlink(data);
	if (r < 0)
		runtime_error("gnuplot", r);
	if (!st.exited || st.exit_code != 0) {
		fprintf(stderr, "spawn-latency: gnuplot failed (%s %d)\n",
			st.exited ? "exit status" : "signal",
			st.exited ? st.exit_code : st.signal);
		exit(1);
	}
	printf("\nplot written to %s\n", cfg->plot);
}

int main(int argc, char **argv)
{
	struct config cfg = { 0 };
	struct sl_heap heap = { 0 };
	double *samples;
	int64_t t_start = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC), t;
	int s, m, on, r;

	parse_args(&cfg, argc, argv);
	samples = calloc((size_t)cfg.max_runs * SL_NMECH, sizeof(double));
	if (samples == NULL)
		runtime_error("calloc", -ENOMEM);
	/* The double fork and sh & leave orphans; adopt them to reap them. */
	r = sl_become_subreaper();
	if (r < 0)
		fprintf(stderr, "spawn-latency: warning: PR_SET_CHILD_SUBREAPER: %s; "
			"orphans go to init\n", strerror(-r));
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (s = 0; s < cfg.nsizes; s++) {
		t = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		r = sl_heap_grow(&heap, (size_t)cfg.mem_mb[s] << 20, cfg.thp);
		if (r < 0) {
			char what[64];

			(void)snprintf(what, sizeof(what), "allocating %ld MB", cfg.mem_mb[s]);
			runtime_error(what, r);
		}
		fprintf(stderr, "spawn-latency: %ld MB heap ready (%.2f s",
			cfg.mem_mb[s], (double)(bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - t) / 1e9);
		if (cfg.thp)
			fprintf(stderr, ", %ld MB in huge pages", sl_anon_huge_mb());
		fputs("); measuring...\n", stderr);
		if (cfg.parts) {
			static const enum sl_mech parts[] = {
				SL_BGRUN_SPAWN, SL_POSIX_SPAWN, SL_POSIX_SPAWN_SETSID,
				SL_PART_SIGNALS, SL_PART_NULL_OPEN, SL_PART_NULL_DUP,
				SL_PART_CLOSEFROM, SL_PART_PIDFD,
			};
			enum { N = sizeof(parts) / sizeof(parts[0]) };
			struct result *res[N];

			for (int k = 0; k < N; k++)
				res[k] = &results[s][parts[k]][1];
			measure_interleaved(&cfg, parts, N, samples, res);
			continue;
		}
		{
			static const enum sl_mech close_ones[] = {
				SL_BGRUN_SPAWN, SL_POSIX_SPAWN, SL_POSIX_SPAWN_SETSID
			};
			struct result *res[3] = {
				&results[s][SL_BGRUN_SPAWN][1],
				&results[s][SL_POSIX_SPAWN][1],
				&results[s][SL_POSIX_SPAWN_SETSID][1],
			};

			measure_interleaved(&cfg, close_ones, 3, samples, res);
		}
		/* In order: uv_spawn last, as libuv holds SIGCHLD while it runs. */
		for (m = 0; m < SL_NMECH; m++) {
			for (on = 1; on >= (sl_mechs[m].has_off ? 0 : 1); on--)
				if (!results[s][m][on].done)
					measure_cell(&cfg, (enum sl_mech)m, on,
						     samples, &results[s][m][on]);
		}
	}
	bgrun_spawn_flush();
	sl_heap_free(&heap);
	free(samples);

	print_table(&cfg);
	if (cfg.parts)
		print_parts(&cfg);
	else
		print_summary(&cfg);
	if (cfg.csv != NULL) {
		r = write_csv(&cfg);
		if (r < 0)
			runtime_error(cfg.csv, r);
		printf("\nCSV written to %s\n", cfg.csv);
	}
	if (cfg.plot != NULL)
		plot(&cfg);
	printf("\ntotal run time: %.1f s\n", (double)(bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - t_start) / 1e9);
	return 0;
}
