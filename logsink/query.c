/* SPDX-License-Identifier: MIT */
/* query.c: `logsink query` (`ls`): list events, newest first, as a table, JSON lines or CSV. */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char help_head[] =
	"Usage: logsink query [OPTION]...\n"
	"   or: logsink ls [OPTION]...\n"
	"List recorded events, newest first.\n"
	"\n";

static const char help_tail[] =
	"      --id=PART      events whose id contains PART\n"
	"      --limit=N      at most N events\n"
	"      --table        an aligned table (the default)\n"
	"      --json         one JSON object per line, each event as the log\n"
	"                     stores it (argv as a JSON array; an argument that\n"
	"                     is not UTF-8 as {\"hex\": \"...\"})\n"
	"      --csv          CSV (RFC 4180) with a header line: id, time (ISO\n"
	"                     8601), event, source, result, exit_code, signal,\n"
	"                     duration_ms, tag, cwd, command; CRLF line ends;\n"
	"                     control characters but tab, CR and LF as \\xNN\n"
	LSINK_COMMON_HELP
	"\n"
	"With --db postgresql://... (a URI libpq reads) the fleet table that\n"
	"`logsink serve --forward` fills is read instead, with the same filters.\n"
	"\n"
	"The table's columns: TIME (local), DURATION, RESULT, EXIT (the exit code,\n"
	"or the signal that killed the command), ID (the id's last 8 characters:\n"
	"'logsink show' takes them as shown, or any part of them, or of the id,\n"
	"that no other event's id contains) and COMMAND (for an event without\n"
	"one, as 'logsink send --event deploy --message ...' records: its name\n"
	"and message, 'deploy: ...'). On a terminal each line is cut to\n"
	"the terminal's width. Written to a pipe or a file the table is the\n"
	"default too, and is never cut: use --json or --csv for programs.\n"
	"A running event whose supervisor vanished is shown as lost.\n";

enum { OPT_ID = LSINK_OPT_LAST };

static const struct option options[] = {
	LSINK_FILTER_OPTIONS,
	{ "limit", required_argument, NULL, LSINK_OPT_LIMIT },
	{ "id", required_argument, NULL, OPT_ID },
	{ "table", no_argument, NULL, LSINK_OPT_TABLE },
	{ "json", no_argument, NULL, LSINK_OPT_JSON },
	{ "csv", no_argument, NULL, LSINK_OPT_CSV },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/*
 * The table: fixed widths, so that rows are written as they come. The
 * longest values: durations like "59m59s" (wider ones only past a day),
 * "spawn_failed", statuses of LSINK_STATUS_WIDTH.
 */
#define TABLE_FORMAT "%-19s  %8s  %-12s  %7s  %-8.8s  "
#define TABLE_PREFIX (19 + 2 + 8 + 2 + 12 + 2 + LSINK_STATUS_WIDTH + 2 + 8 + 2)
/* A terminal too narrow for the table still shows this much command. */
#define TABLE_MIN_COMMAND 16

struct output {
	enum lsink_format format;
	int command_cols; /* the room for the command; -1: all of it */
};

const char *lsink_event_what(const struct bgrun_event *ev)
{
	static char *what;

	if (ev->display != NULL)
		return ev->display;
	free(what);
	what = NULL;
	if (ev->message != NULL && ev->event != NULL &&
	    asprintf(&what, "%s: %s", ev->event, ev->message) >= 0)
		return what;
	what = NULL;
	return ev->event;
}

static void print_table_row(const struct output *o,
			    const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;
	char time[64], duration[32], status[32];

	lsink_fmt_time(time, sizeof(time), row->time_ns, 0);
	lsink_fmt_duration(duration, sizeof(duration), ev->duration_ns);
	lsink_fmt_status(status, sizeof(status), ev->exit_code, ev->signal);
	(void)printf(TABLE_FORMAT, time, duration,
		     ev->result != NULL ? ev->result : "-", status,
		     bgrun_event_short_id(ev->id));
	lsink_put_cell(stdout, lsink_event_what(ev), o->command_cols);
	(void)putchar('\n');
}

static void csv_int(int64_t v)
{
	if (v != BGRUN_NULL)
		(void)printf("%lld", (long long)v);
	(void)putchar(',');
}

static void print_csv_row(const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;
	char time[64];

	lsink_fmt_iso(time, sizeof(time), row->time_ns);
	lsink_put_csv(stdout, ev->id);
	(void)printf(",%s,", time);
	lsink_put_csv(stdout, ev->event);
	(void)putchar(',');
	lsink_put_csv(stdout, ev->source);
	(void)putchar(',');
	lsink_put_csv(stdout, ev->result);
	(void)putchar(',');
	csv_int(ev->exit_code);
	csv_int(ev->signal);
	if (ev->duration_ns != BGRUN_NULL && ev->duration_ns >= 0)
		(void)printf("%lld.%06lld",
			     (long long)(ev->duration_ns / 1000000),
			     (long long)(ev->duration_ns % 1000000));
	(void)putchar(',');
	lsink_put_csv(stdout, ev->tag);
	(void)putchar(',');
	lsink_put_csv(stdout, ev->cwd);
	(void)putchar(',');
	lsink_put_csv(stdout, ev->display);
	(void)fputs(LSINK_CSV_EOL, stdout);
}

static int print_row(void *data, const struct bgrun_event_row *row)
{
	const struct output *o = data;

	switch (o->format) {
	case LSINK_FORMAT_JSON:
		/* The JSON SQLite made, never one of ours. */
		(void)printf("%s\n", row->json != NULL ? row->json : "null");
		break;
	case LSINK_FORMAT_CSV:
		print_csv_row(row);
		break;
	default:
		print_table_row(o, row);
		break;
	}
	/* A write error (a full disk) ends the listing; main says why. */
	return ferror(stdout) ? 1 : 0;
}

int lsink_query_main(int argc, char **argv, const char *db)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct output o = { .command_cols = -1 };
	struct bgrun_store *store = NULL;
	int opt, r, width, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (lsink_filter_option(&q, opt, optarg) ||
		    lsink_format_option(&o.format, opt))
			continue;
		switch (opt) {
		case LSINK_OPT_LIMIT:
			q.limit = lsink_limit_arg(optarg);
			break;
		case OPT_ID:
			if (!bgrun_event_id_valid(optarg, strlen(optarg)))
				lsink_usage("'%s' is not an event id",
					    lsink_printable(optarg));
			q.id_part = optarg;
			break;
		case LSINK_OPT_DB:
			db = optarg;
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

	if (!lsink_db_is_pg(db) &&
	    lsink_open(db, LSINK_OPEN_READONLY | LSINK_OPEN_MISSING_OK, &store) < 0)
		return LSINK_EXIT_FAILURE;
	width = lsink_terminal_width();
	if (o.format == LSINK_FORMAT_AUTO)
		o.format = LSINK_FORMAT_TABLE;
	if (o.format == LSINK_FORMAT_TABLE && width > 0) {
		o.command_cols = width - TABLE_PREFIX;
		if (o.command_cols < TABLE_MIN_COMMAND)
			o.command_cols = TABLE_MIN_COMMAND;
	}
	if (o.format == LSINK_FORMAT_TABLE)
		(void)printf(TABLE_FORMAT "COMMAND\n", "TIME", "DURATION",
			     "RESULT", "EXIT", "ID");
	else if (o.format == LSINK_FORMAT_CSV)
		(void)printf("id,time,event,source,result,exit_code,signal,"
			     "duration_ms,tag,cwd,command" LSINK_CSV_EOL);
	if (lsink_db_is_pg(db)) {
		r = lsink_pg_query(db, &q, print_row, &o);
		if (r < 0)
			status = LSINK_EXIT_FAILURE;
	} else if (store != NULL) {
		r = bgrun_store_query(store, &q, print_row, &o);
	} else {
		r = 0; /* no log yet: nothing to list */
	}
	if (r < 0 && store != NULL) {
		lsink_store_error(store, r, "cannot read the log");
		status = LSINK_EXIT_FAILURE;
	}
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	bgrun_store_close(store);
	return status;
}
