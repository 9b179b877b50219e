/* SPDX-License-Identifier: MIT */
/* stats.c: `logsink stats`: runs, failures and duration percentiles per command. */

#include "logsink.h"

#include <getopt.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static const char help_head[] =
	"Usage: logsink stats [OPTION]...\n"
	"For each command (as shown by 'logsink query'): the number of finished\n"
	"runs, how many did not succeed, and the median (p50), 95th percentile\n"
	"(p95) and longest duration, over all events or those chosen by:\n"
	"\n";

static const char help_tail[] =
	"      --table        an aligned table (the default)\n"
	"      --json         one JSON object per command: command, runs,\n"
	"                     failures, p50_ns, p95_ns, max_ns\n"
	"      --csv          CSV with a header line: command, runs, failures,\n"
	"                     p50_ms, p95_ms, max_ms\n"
	"      --by=KEY       one row per command (the default) or, for a fleet\n"
	"                     (--db postgresql://...), per host\n"
	LSINK_COMMON_HELP
	"\n"
	"Percentiles use the nearest-rank method. Running events are not counted.\n"
	"On a terminal the command is cut to the terminal's width.\n";

static const struct option options[] = {
	LSINK_FILTER_OPTIONS,
	{ "table", no_argument, NULL, LSINK_OPT_TABLE },
	{ "json", no_argument, NULL, LSINK_OPT_JSON },
	{ "csv", no_argument, NULL, LSINK_OPT_CSV },
	{ "by", required_argument, NULL, LSINK_OPT_BY },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

#define TABLE_FORMAT "%6s  %6s  %8s  %8s  %8s  "
#define TABLE_PREFIX (6 + 2 + 6 + 2 + 8 + 2 + 8 + 2 + 8 + 2)
#define TABLE_MIN_COMMAND 16

struct output {
	enum lsink_format format;
	int command_cols;
	/*
	 * --json: the objects are made by SQLite (json_object), like the
	 * events' own JSON, on a private in-memory database.
	 */
	sqlite3 *db;
	sqlite3_stmt *json;
};

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

static int print_stats(void *data, const struct bgrun_stats_row *row)
{
	struct output *o = data;
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
					"SELECT json_object('command', ?1, "
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

int lsink_stats_main(int argc, char **argv, const char *db)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct output o = { .command_cols = -1 };
	struct bgrun_store *store = NULL;
	int opt, r, width, status = LSINK_EXIT_FAILURE;
	bool by_host = false;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (lsink_filter_option(&q, opt, optarg) ||
		    lsink_format_option(&o.format, opt))
			continue;
		switch (opt) {
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case LSINK_OPT_BY:
			if (strcmp(optarg, "host") == 0)
				by_host = true;
			else if (strcmp(optarg, "command") == 0)
				by_host = false;
			else
				lsink_usage("--by: 'command' or 'host', not '%s'",
					    lsink_printable(optarg));
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

	if (by_host && !lsink_db_is_pg(db))
		lsink_usage("--by=host: for a fleet (--db postgresql://...) "
			    "only: a local log is one host's");
	if (!lsink_db_is_pg(db) && lsink_open(db, true, &store) < 0)
		return LSINK_EXIT_FAILURE;
	if (o.format == LSINK_FORMAT_JSON && json_init(&o) < 0)
		goto out;
	width = lsink_terminal_width();
	if (o.format == LSINK_FORMAT_AUTO)
		o.format = LSINK_FORMAT_TABLE;
	if (o.format == LSINK_FORMAT_TABLE && width > 0) {
		o.command_cols = width - TABLE_PREFIX;
		if (o.command_cols < TABLE_MIN_COMMAND)
			o.command_cols = TABLE_MIN_COMMAND;
	}
	if (o.format == LSINK_FORMAT_TABLE)
		(void)printf(TABLE_FORMAT "COMMAND\n", "RUNS", "FAILED", "P50",
			     "P95", "MAX");
	else if (o.format == LSINK_FORMAT_CSV)
		(void)printf("command,runs,failures,p50_ms,p95_ms,max_ms"
			     LSINK_CSV_EOL);
	if (lsink_db_is_pg(db))
		r = lsink_pg_stats(db, &q, by_host, print_stats, &o);
	else
		r = bgrun_store_stats(store, &q, print_stats, &o);
	if (r < 0 && store != NULL)
		lsink_store_error(store, r, "cannot read the log");
	else if (r == 0)
		status = EXIT_SUCCESS;
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
out:
	(void)sqlite3_finalize(o.json);
	(void)sqlite3_close(o.db);
	bgrun_store_close(store);
	return status;
}
