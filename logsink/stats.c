/* SPDX-License-Identifier: MIT */
/* stats.c: `logsink stats`: runs, failures and duration percentiles per command (or tag, day...), and their plot. */

#include "logsink.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char help_head[] =
	"Usage: logsink stats [OPTION]...\n"
	"For each command (as shown by 'logsink query'), or what --by says: the\n"
	"number of finished runs, how many did not succeed, and the median\n"
	"(p50), 95th percentile (p95) and longest duration, over all events or\n"
	"those chosen by:\n"
	"\n";

static const char help_tail[] =
	"      --by=KEY       one row per KEY: command (the default), argv0 (the\n"
	"                     program), tag, host, or day (the local day the\n"
	"                     events started)\n"
	"      --sort=ORDER   rows by KEY (the default), or the most first:\n"
	"                     count (runs), failures, p50, p95 or max\n"
	"      --limit=N      the first N rows only\n"
	"      --plot=FILE.png  also plot each run's duration over time, one\n"
	"                     series per row shown (at most 10), with gnuplot;\n"
	"                     choose a command or a tag with --cmd or --tag\n"
	"      --table        an aligned table (the default)\n"
	"      --json         one JSON object per row: KEY (command, argv0...),\n"
	"                     runs, failures, p50_ns, p95_ns, max_ns\n"
	"      --csv          CSV with a header line: KEY, runs, failures,\n"
	"                     p50_ms, p95_ms, max_ms\n"
	LSINK_COMMON_HELP
	"\n"
	"Percentiles use the nearest-rank method. Running events are not counted.\n"
	"On a terminal the last column is cut to the terminal's width.\n"
	"With --db postgresql://..., days are those of the session's time zone.\n";

enum {
	OPT_SORT = LSINK_OPT_LAST,
	OPT_PLOT,
};

static const struct option options[] = {
	LSINK_FILTER_OPTIONS,
	{ "table", no_argument, NULL, LSINK_OPT_TABLE },
	{ "json", no_argument, NULL, LSINK_OPT_JSON },
	{ "csv", no_argument, NULL, LSINK_OPT_CSV },
	{ "by", required_argument, NULL, LSINK_OPT_BY },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "limit", required_argument, NULL, LSINK_OPT_LIMIT },
	{ "plot", required_argument, NULL, OPT_PLOT },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* The keys' names, as --by takes them and as the output's first column. */
static const char *const key_names[BGRUN_STATS_N_KEYS] = {
	[BGRUN_STATS_COMMAND] = "command",
	[BGRUN_STATS_ARGV0] = "argv0",
	[BGRUN_STATS_TAG] = "tag",
	[BGRUN_STATS_HOST] = "host",
	[BGRUN_STATS_DAY] = "day",
};

enum sort {
	SORT_KEY,
	SORT_COUNT,
	SORT_FAILURES,
	SORT_P50,
	SORT_P95,
	SORT_MAX,
};

static const char *const sort_names[] = {
	[SORT_KEY] = "key",	  [SORT_COUNT] = "count", [SORT_FAILURES] = "failures",
	[SORT_P50] = "p50",	  [SORT_P95] = "p95",	  [SORT_MAX] = "max",
};

#define TABLE_FORMAT "%6s  %6s  %8s  %8s  %8s  "
#define TABLE_PREFIX (6 + 2 + 6 + 2 + 8 + 2 + 8 + 2 + 8 + 2)
#define TABLE_MIN_COMMAND 16
/* The most series a plot has: more could not be told apart. */
#define PLOT_MAX_SERIES 10

/* The rows, read whole: they are sorted and cut before being printed. */
struct rows {
	struct bgrun_stats_row *v;
	size_t n, cap;
	bool failed; /* out of memory */
};

struct output {
	enum lsink_format format;
	enum bgrun_stats_key key;
	int command_cols;
	/*
	 * --json: the objects are made by SQLite (json_object), like the
	 * events' own JSON, on a private in-memory database.
	 */
	sqlite3 *db;
	sqlite3_stmt *json;
};

static int collect(void *data, const struct bgrun_stats_row *row)
{
	struct rows *rows = data;
	struct bgrun_stats_row copy = *row;

	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? 2 * rows->cap : 64;
		struct bgrun_stats_row *grown = realloc(rows->v, cap * sizeof(*grown));

		if (grown == NULL)
			goto nomem;
		rows->v = grown;
		rows->cap = cap;
	}
	if (row->display != NULL && (copy.display = strdup(row->display)) == NULL)
		goto nomem;
	rows->v[rows->n++] = copy;
	return 0;
nomem:
	rows->failed = true;
	return 1;
}

static void rows_free(struct rows *rows)
{
	for (size_t i = 0; i < rows->n; i++)
		free((char *)rows->v[i].display);
	free(rows->v);
}

static enum sort sort_by;

static int64_t sort_value(const struct bgrun_stats_row *r)
{
	int64_t v = BGRUN_NULL;

	switch (sort_by) {
	case SORT_COUNT:
		v = r->runs;
		break;
	case SORT_FAILURES:
		v = r->failures;
		break;
	case SORT_P50:
		v = r->p50_ns;
		break;
	case SORT_P95:
		v = r->p95_ns;
		break;
	case SORT_MAX:
		v = r->max_ns;
		break;
	case SORT_KEY:
		break;
	}
	return v == BGRUN_NULL ? INT64_MIN : v;
}

/* The most first; ties in the store's order (no key first, then by bytes). */
static int compare(const void *a, const void *b)
{
	const struct bgrun_stats_row *x = a, *y = b;
	int64_t vx = sort_value(x), vy = sort_value(y);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->display == NULL || y->display == NULL)
		return (x->display != NULL) - (y->display != NULL);
	return strcmp(x->display, y->display);
}

static int bind_int(sqlite3_stmt *stmt, int i, int64_t v)
{
	return v == BGRUN_NULL ? sqlite3_bind_null(stmt, i)
			       : sqlite3_bind_int64(stmt, i, v);
}

static int print_json(struct output *o, const struct bgrun_stats_row *row)
{
	sqlite3_stmt *stmt = o->json;
	int rc;

	rc = row->display != NULL
		     ? sqlite3_bind_text(stmt, 1, row->display, -1, SQLITE_STATIC)
		     : sqlite3_bind_null(stmt, 1);
	if (rc == SQLITE_OK)
		rc = bind_int(stmt, 2, row->runs);
	if (rc == SQLITE_OK)
		rc = bind_int(stmt, 3, row->failures);
	if (rc == SQLITE_OK)
		rc = bind_int(stmt, 4, row->p50_ns);
	if (rc == SQLITE_OK)
		rc = bind_int(stmt, 5, row->p95_ns);
	if (rc == SQLITE_OK)
		rc = bind_int(stmt, 6, row->max_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(stmt, 7, key_names[o->key], -1,
				       SQLITE_STATIC);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		(void)printf("%s\n", (const char *)sqlite3_column_text(stmt, 0));
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK)
		lsink_msg("cannot make JSON: %s", sqlite3_errmsg(o->db));
	(void)sqlite3_reset(stmt);
	(void)sqlite3_clear_bindings(stmt);
	return rc == SQLITE_OK ? 0 : 1;
}

static void csv_ms(int64_t ns, const char *sep)
{
	if (ns != BGRUN_NULL)
		(void)printf("%lld.%06lld", (long long)(ns / 1000000),
			     (long long)(ns % 1000000));
	(void)fputs(sep, stdout);
}

static int print_stats(struct output *o, const struct bgrun_stats_row *row)
{
	char runs[24], failures[24], p50[32], p95[32], max[32];

	switch (o->format) {
	case LSINK_FORMAT_JSON:
		if (print_json(o, row) != 0)
			return 1;
		break;
	case LSINK_FORMAT_CSV:
		lsink_put_csv(stdout, row->display);
		(void)printf(",%lld,%lld,", (long long)row->runs,
			     (long long)row->failures);
		csv_ms(row->p50_ns, ",");
		csv_ms(row->p95_ns, ",");
		csv_ms(row->max_ns, LSINK_CSV_EOL);
		break;
	default:
		(void)snprintf(runs, sizeof(runs), "%lld", (long long)row->runs);
		(void)snprintf(failures, sizeof(failures), "%lld",
			       (long long)row->failures);
		lsink_fmt_duration(p50, sizeof(p50), row->p50_ns);
		lsink_fmt_duration(p95, sizeof(p95), row->p95_ns);
		lsink_fmt_duration(max, sizeof(max), row->max_ns);
		(void)printf(TABLE_FORMAT, runs, failures, p50, p95, max);
		lsink_put_cell(stdout, row->display, o->command_cols);
		(void)putchar('\n');
		break;
	}
	return ferror(stdout) ? 1 : 0;
}

static int json_init(struct output *o)
{
	int rc;

	rc = sqlite3_open_v2(":memory:", &o->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(o->db,
					"SELECT json_object(?7, ?1, "
					"'runs', ?2, 'failures', ?3, "
					"'p50_ns', ?4, 'p95_ns', ?5, "
					"'max_ns', ?6)",
					-1, &o->json, NULL);
	if (rc != SQLITE_OK) {
		lsink_msg("cannot make JSON: %s",
			  o->db != NULL ? sqlite3_errmsg(o->db)
					: sqlite3_errstr(rc));
		return -1;
	}
	return 0;
}

static void print_header(const struct output *o)
{
	const char *name = key_names[o->key];
	char key[16];
	size_t i;

	if (o->format == LSINK_FORMAT_TABLE) {
		for (i = 0; name[i] != '\0' && i + 1 < sizeof(key); i++)
			key[i] = (char)toupper((unsigned char)name[i]);
		key[i] = '\0';
		(void)printf(TABLE_FORMAT "%s\n", "RUNS", "FAILED", "P50", "P95",
			     "MAX", key);
	} else if (o->format == LSINK_FORMAT_CSV) {
		(void)printf("%s,runs,failures,p50_ms,p95_ms,max_ms" LSINK_CSV_EOL,
			     key_names[o->key]);
	}
}

int lsink_stats_main(int argc, char **argv, const char *db)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct output o = { .command_cols = -1 };
	struct bgrun_store *store = NULL;
	struct rows rows = { 0 };
	const char *plot = NULL;
	int64_t limit = 0;
	int opt, r = 0, width, status = LSINK_EXIT_FAILURE;
	size_t shown;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (lsink_filter_option(&q, opt, optarg) ||
		    lsink_format_option(&o.format, opt))
			continue;
		switch (opt) {
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case LSINK_OPT_BY: {
			size_t k;

			for (k = 0; k < BGRUN_STATS_N_KEYS; k++)
				if (strcmp(optarg, key_names[k]) == 0)
					break;
			if (k == BGRUN_STATS_N_KEYS)
				lsink_usage("invalid key '%s' for --by: expected "
					    "command, argv0, tag, host or day",
					    lsink_printable(optarg));
			o.key = (enum bgrun_stats_key)k;
			break;
		}
		case OPT_SORT: {
			size_t k;

			for (k = 0; k < sizeof(sort_names) / sizeof(sort_names[0]); k++)
				if (strcmp(optarg, sort_names[k]) == 0)
					break;
			if (k == sizeof(sort_names) / sizeof(sort_names[0]))
				lsink_usage("invalid order '%s' for --sort: expected "
					    "key, count, failures, p50, p95 or max",
					    lsink_printable(optarg));
			sort_by = (enum sort)k;
			break;
		}
		case LSINK_OPT_LIMIT:
			limit = lsink_limit_arg(optarg);
			break;
		case OPT_PLOT:
			plot = optarg;
			break;
		case 'h':
			(void)fputs(help_head, stdout);
			(void)fputs(lsink_filter_help, stdout);
			lsink_help(help_tail);
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("extra operand '%s'", lsink_printable(argv[optind]));
	if (plot != NULL && lsink_db_is_pg(db))
		lsink_usage("--plot: for a local log only");

	if (!lsink_db_is_pg(db) &&
	    lsink_open(db, LSINK_OPEN_READONLY | LSINK_OPEN_MISSING_OK, &store) < 0)
		return LSINK_EXIT_FAILURE;
	if (o.format == LSINK_FORMAT_JSON && json_init(&o) < 0)
		goto out;
	if (lsink_db_is_pg(db))
		r = lsink_pg_stats(db, &q, o.key, collect, &rows);
	else if (store != NULL)
		r = bgrun_store_stats_by(store, &q, o.key, collect, &rows);
	if (rows.failed) {
		lsink_msg("out of memory");
		goto out;
	}
	if (r < 0) {
		if (store != NULL) /* else said already */
			lsink_store_error(store, r, "cannot read the log");
		goto out;
	}
	if (sort_by != SORT_KEY)
		qsort(rows.v, rows.n, sizeof(*rows.v), compare);
	shown = limit > 0 && (size_t)limit < rows.n ? (size_t)limit : rows.n;

	width = lsink_terminal_width();
	if (o.format == LSINK_FORMAT_AUTO)
		o.format = LSINK_FORMAT_TABLE;
	if (o.format == LSINK_FORMAT_TABLE && width > 0) {
		o.command_cols = width - TABLE_PREFIX;
		if (o.command_cols < TABLE_MIN_COMMAND)
			o.command_cols = TABLE_MIN_COMMAND;
	}
	print_header(&o);
	status = EXIT_SUCCESS;
	for (size_t i = 0; i < shown; i++) {
		if (print_stats(&o, &rows.v[i]) != 0) {
			status = LSINK_EXIT_FAILURE;
			break;
		}
	}
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	if (status == EXIT_SUCCESS && plot != NULL &&
	    lsink_plot(store, &q, o.key, plot, rows.v,
		       shown < PLOT_MAX_SERIES ? shown : PLOT_MAX_SERIES) < 0)
		status = LSINK_EXIT_FAILURE;
out:
	rows_free(&rows);
	(void)sqlite3_finalize(o.json);
	(void)sqlite3_close(o.db);
	bgrun_store_close(store);
	return status;
}
