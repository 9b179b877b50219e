/* SPDX-License-Identifier: MIT */
/* plot.c: `logsink stats --plot FILE.png`: each run's duration over time, drawn by gnuplot launched through libbgrun. */

#include "logsink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One series: the runs of one row of stats. */
struct series {
	const char *key; /* the row's key (borrowed; NULL: none) */
	FILE *data;      /* "x y" lines: local time as seconds, duration in s */
	char *buf;
	size_t len, points;
	double min, max;
	long long first, last; /* the x range */
};

struct plot {
	enum bgrun_stats_key key;
	struct series *series;
	size_t n;
	size_t points;
};

static bool same(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* The key of an event as bgrun_store_stats_by groups it. */
static const char *event_key(const struct bgrun_event_row *row,
			     enum bgrun_stats_key key, char *day, size_t size)
{
	const struct bgrun_event *ev = &row->ev;
	time_t secs = (time_t)(row->time_ns / 1000000000);
	struct tm tm;

	switch (key) {
	case BGRUN_STATS_COMMAND:
		return ev->display;
	case BGRUN_STATS_ARGV0:
		return ev->argv != NULL ? ev->argv[0] : NULL;
	case BGRUN_STATS_TAG:
		return ev->tag;
	case BGRUN_STATS_HOST:
		return ev->host;
	case BGRUN_STATS_DAY:
		if (localtime_r(&secs, &tm) == NULL ||
		    strftime(day, size, "%Y-%m-%d", &tm) == 0)
			return NULL;
		return day;
	case BGRUN_STATS_N_KEYS:
		break;
	}
	return NULL;
}

static int add_point(void *data, const struct bgrun_event_row *row)
{
	struct plot *p = data;
	const struct bgrun_event *ev = &row->ev;
	time_t secs = (time_t)(row->time_ns / 1000000000);
	const char *key;
	char day[32];
	struct tm tm;
	long long x;
	double y;

	if (ev->duration_ns == BGRUN_NULL || ev->duration_ns <= 0 ||
	    (ev->result != NULL && strcmp(ev->result, BGRUN_RESULT_RUNNING) == 0))
		return 0;
	key = event_key(row, p->key, day, sizeof(day));
	for (size_t i = 0; i < p->n; i++) {
		struct series *s = &p->series[i];

		if (!same(key, s->key))
			continue;
		/* gnuplot reads times as UTC: local time, shifted by its offset. */
		if (localtime_r(&secs, &tm) == NULL)
			return 0;
		y = (double)ev->duration_ns / 1e9;
		x = (long long)secs + (long long)tm.tm_gmtoff;
		(void)fprintf(s->data, "%lld %.9f\n", x, y);
		if (s->points == 0 || x < s->first)
			s->first = x;
		if (s->points == 0 || x > s->last)
			s->last = x;
		if (s->points == 0 || y < s->min)
			s->min = y;
		if (s->points == 0 || y > s->max)
			s->max = y;
		s->points++;
		p->points++;
		return 0;
	}
	return 0;
}

/* A gnuplot single-quoted string: a quote inside is doubled. */
static void gp_quoted(FILE *f, const char *s)
{
	(void)fputc('\'', f);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			(void)fputc('\'', f);
		(void)fputc(*s, f);
	}
	(void)fputc('\'', f);
}

static char *script(const struct plot *p, const char *file, size_t *ret_len)
{
	double min = 0, max = 0;
	long long first = 0, last = 0;
	char *buf = NULL;
	size_t len = 0, k = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	(void)fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		    "  set terminal pngcairo size 1000,600\n"
		    "} else {\n"
		    "  set terminal png size 1000,600\n"
		    "}\n"
		    /* Enhanced text would turn '_' in commands into subscripts. */
		    "set termoption noenhanced\n"
		    "set output ", f);
	gp_quoted(f, file);
	(void)fputs("\nset title 'Duration of each run'\n"
		    "set xdata time\n"
		    "set timefmt '%s'\n"
		    "set xlabel 'start (local time)'\n"
		    "set grid\n"
		    "set key below\n", f);
	for (size_t i = 0; i < p->n; i++) {
		const struct series *s = &p->series[i];

		if (s->points == 0)
			continue;
		if (k == 0 || s->min < min)
			min = s->min;
		if (k == 0 || s->first < first)
			first = s->first;
		if (s->last > last)
			last = s->last;
		if (s->max > max)
			max = s->max;
		k++;
		(void)fprintf(f, "$d%zu << EOD\n", i);
		(void)fwrite(s->buf, 1, s->len, f);
		(void)fputs("EOD\n", f);
	}
	/* Runs of a few ms beside runs of minutes: a log scale shows both. */
	if (min > 0 && max > 100 * min)
		(void)fputs("set logscale y\nset ylabel 'duration, s (log scale)'\n", f);
	else
		(void)fputs("set yrange [0:*]\nset ylabel 'duration, s'\n", f);
	(void)fprintf(f, "set format y '%%g'\nset format x \"%s\"\n",
		      last - first < 3600 ? "%H:%M:%S" : "%m-%d\\n%H:%M");
	/* Runs within a minute: a range gnuplot need not widen (and warn). */
	if (last - first < 60)
		(void)fprintf(f, "set xrange [%lld:%lld]\n", first - 30, last + 30);
	(void)fputs("plot", f);
	k = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct series *s = &p->series[i];

		if (s->points == 0)
			continue;
		(void)fprintf(f, "%s$d%zu using 1:2 with points pt 7 ps 0.6 title ",
			      k++ == 0 ? " " : ", \\\n     ", i);
		gp_quoted(f, s->key != NULL ? lsink_printable(s->key) : "(none)");
	}
	(void)fputs("\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

/* Runs gnuplot with the script on its stdin: 0, or -1 after saying why. */
static int run_gnuplot(const char *text, size_t len)
{
	static const char *const gp_argv[] = { "gnuplot", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { 0 };
	struct bgrun_child *child = NULL;
	struct bgrun_status st = { 0 };
	int r;

	o.argv = gp_argv;
	o.detach = false;
	o.in.kind = BGRUN_STDIO_BYTES;
	o.in.bytes = text;
	o.in.len = len;
	o.out.kind = BGRUN_STDIO_NULL;
	o.err.kind = BGRUN_STDIO_INHERIT;
	o.failure = &failure;
	r = bgrun_spawn(&o, &child);
	if (r == -ENOENT && failure.stage == BGRUN_STAGE_EXEC) {
		lsink_msg("--plot: gnuplot is not installed (not found in PATH)");
		return -1;
	}
	if (r >= 0)
		r = bgrun_child_wait(child, -1, &st);
	bgrun_child_free(child);
	if (r < 0) {
		lsink_msg("--plot: cannot run gnuplot: %s", bgrun_strerror(r));
		return -1;
	}
	if (!st.exited || st.exit_code != 0) {
		lsink_msg("--plot: gnuplot failed (%s %d)",
			  st.exited ? "exit status" : "signal",
			  st.exited ? st.exit_code : st.signal);
		return -1;
	}
	return 0;
}

int lsink_plot(struct bgrun_store *store, const struct bgrun_query *q,
	       enum bgrun_stats_key key, const char *file,
	       const struct bgrun_stats_row *rows, size_t n)
{
	struct plot p = { .key = key, .n = n };
	char *text = NULL;
	size_t len = 0;
	int r = -1;

	p.series = calloc(n > 0 ? n : 1, sizeof(*p.series));
	if (p.series == NULL)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		p.series[i].key = rows[i].display;
		p.series[i].data = open_memstream(&p.series[i].buf,
						  &p.series[i].len);
		if (p.series[i].data == NULL)
			goto nomem;
	}
	if (store != NULL) {
		int rc = bgrun_store_query(store, q, add_point, &p);

		if (rc < 0) {
			lsink_store_error(store, rc, "cannot read the log");
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (fclose(p.series[i].data) != 0)
			goto nomem;
		p.series[i].data = NULL;
	}
	if (p.points == 0) {
		lsink_msg("--plot: no finished runs with a duration to plot");
		goto out;
	}
	text = script(&p, file, &len);
	if (text == NULL)
		goto nomem;
	r = run_gnuplot(text, len);
	goto out;
nomem:
	lsink_msg("out of memory");
out:
	for (size_t i = 0; p.series != NULL && i < n; i++) {
		if (p.series[i].data != NULL)
			(void)fclose(p.series[i].data);
		free(p.series[i].buf);
	}
	free(p.series);
	free(text);
	return r;
}
