/* SPDX-License-Identifier: MIT */
/* show.c: `logsink show ID`: every field of one event, one per line, or its JSON. */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
	"Usage: logsink show [OPTION]... ID\n"
	"Show everything recorded about event ID, one 'field: value' per line;\n"
	"'-' marks what is not known. ID is the event's id, or any part of it\n"
	"that no other event's id contains: the ID column of 'logsink query'\n"
	"(the id's last 8 characters) as shown, a few of its characters, or any\n"
	"other piece of the id. When several events' ids contain ID, they are\n"
	"listed (exit 1). The command's arguments come one per line (argv[0]: ...) with\n"
	"control characters and bytes that are not UTF-8 written as \\xNN, \\n,\n"
	"\\t, and a backslash as \\\\.\n"
	"\n"
	"      --json         the event as one JSON object, as the log stores it\n"
	LSINK_COMMON_HELP;

static const struct option options[] = {
	{ "json", no_argument, NULL, LSINK_OPT_JSON },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void text(const char *name, const char *value, unsigned flags)
{
	(void)printf("%s: ", name);
	if (value == NULL)
		(void)putchar('-');
	else
		(void)lsink_put_escaped(stdout, value, strlen(value), flags, -1,
					NULL);
	(void)putchar('\n');
}

static void integer(const char *name, int64_t value)
{
	if (value == BGRUN_NULL)
		(void)printf("%s: -\n", name);
	else
		(void)printf("%s: %lld\n", name, (long long)value);
}

static void when(const char *name, int64_t ns)
{
	char buf[96];

	lsink_fmt_time(buf, sizeof(buf), ns, 9);
	(void)printf("%s: %s\n", name, buf);
}

/* A duration for people, and exactly. */
static void duration(const char *name, int64_t ns)
{
	char buf[32];

	if (ns == BGRUN_NULL) {
		(void)printf("%s: -\n", name);
		return;
	}
	lsink_fmt_duration(buf, sizeof(buf), ns);
	(void)printf("%s: %s (%lld ns)\n", name, buf, (long long)ns);
}

static void argv_lines(const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;

	if (ev->argv == NULL) {
		(void)printf("argv: -\n");
		return;
	}
	if (row->argc == 0)
		(void)printf("argv: (empty)\n");
	for (size_t i = 0; i < row->argc; i++) {
		char name[32];

		(void)snprintf(name, sizeof(name), "argv[%zu]", i);
		/* Exact bytes: the escapes must be unambiguous. */
		text(name, ev->argv[i], LSINK_ESC_BACKSLASH);
	}
}

static int print_fields(const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;
	char sig[32];

	text("id", ev->id, 0);
	text("event", ev->event, 0);
	text("source", ev->source, 0);
	if (ev->result != NULL && row->stored_result != NULL &&
	    strcmp(ev->result, row->stored_result) != 0)
		(void)printf("result: %s (recorded as %s; its supervisor is gone)\n",
			     ev->result, row->stored_result);
	else
		text("result", ev->result, 0);
	text("command", ev->display, 0);
	argv_lines(row);
	text("cwd", ev->cwd, 0);
	text("tag", ev->tag, 0);
	integer("exit_code", ev->exit_code);
	if (ev->signal != BGRUN_NULL &&
	    lsink_signal_name(ev->signal, sig, sizeof(sig)))
		(void)printf("signal: %lld (%s)\n", (long long)ev->signal, sig);
	else
		integer("signal", ev->signal);
	text("core_dumped", ev->core_dumped == BGRUN_NULL ? NULL
			    : ev->core_dumped ? "yes" : "no", 0);
	when("time", row->time_ns);
	when("start", ev->start_ns);
	when("end", ev->end_ns);
	duration("duration", ev->duration_ns);
	when("recorded", row->recorded_ns);
	integer("pid", ev->pid);
	integer("supervisor_pid", ev->supervisor_pid);
	integer("supervisor_start", ev->supervisor_start);
	text("host", ev->host, 0);
	integer("uid", ev->uid);
	text("user", ev->user, 0);
	text("boot_id", ev->boot_id, 0);
	duration("user_cpu", ev->user_cpu_ns);
	duration("sys_cpu", ev->sys_cpu_ns);
	integer("max_rss_kb", ev->max_rss_kb);
	integer("minor_faults", ev->minor_faults);
	integer("major_faults", ev->major_faults);
	integer("in_blocks", ev->in_blocks);
	integer("out_blocks", ev->out_blocks);
	integer("vol_ctxsw", ev->vol_ctxsw);
	integer("invol_ctxsw", ev->invol_ctxsw);
	text("stdout_path", ev->stdout_path, 0);
	text("stderr_path", ev->stderr_path, 0);
	text("message", ev->message, 0);
	text("options", ev->options_json, 0);
	return 0;
}

/* One candidate of an ambiguous id, on stderr. */
static int print_candidate(void *data, const struct bgrun_event_row *row)
{
	int64_t *left = data;
	char time[64];

	if ((*left)-- <= 0)
		return 0;
	lsink_fmt_time(time, sizeof(time), row->time_ns, 0);
	(void)fprintf(stderr, "logsink:   %s  %s  %s  ", bgrun_event_short_id(row->ev.id),
		      row->ev.id, time);
	lsink_put_cell(stderr, lsink_event_what(&row->ev), 60);
	(void)fputc('\n', stderr);
	return 0;
}

/* How many events' ids contain part (a count callback). */
static int count_row(void *data, const struct bgrun_event_row *row)
{
	(void)row;
	++*(int64_t *)data;
	return 0;
}

void lsink_id_error(const char *db, struct bgrun_store *store, const char *id,
		    int error)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	int64_t n = 0, left = LSINK_CANDIDATES;

	switch (error) {
	case -ENOENT:
		lsink_msg("no event '%s'", lsink_printable(id));
		return;
	case -EINVAL:
		lsink_msg("'%s' is not an event id", lsink_printable(id));
		return;
	case -EEXIST:
		break;
	default:
		if (store != NULL) /* else said already */
			lsink_store_error(store, error, "cannot read the log");
		return;
	}
	q.id_part = id;
	if (lsink_db_is_pg(db))
		(void)lsink_pg_query(db, &q, count_row, &n);
	else
		(void)bgrun_store_query(store, &q, count_row, &n);
	lsink_msg("event id '%s' is ambiguous: %lld events' ids contain it:",
		  lsink_printable(id), (long long)n);
	if (lsink_db_is_pg(db))
		(void)lsink_pg_query(db, &q, print_candidate, &left);
	else
		(void)bgrun_store_query(store, &q, print_candidate, &left);
	if (n > LSINK_CANDIDATES)
		lsink_msg("  and %lld more", (long long)(n - LSINK_CANDIDATES));
}

static int print_event(void *data, const struct bgrun_event_row *row)
{
	const bool *json = data;

	if (*json)
		(void)printf("%s\n", row->json != NULL ? row->json : "null");
	else
		(void)print_fields(row);
	return 0;
}

int lsink_show_main(int argc, char **argv, const char *db)
{
	struct bgrun_store *store = NULL;
	const char *id;
	bool json = false;
	int opt, r, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case LSINK_OPT_JSON:
			json = true;
			break;
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case 'h':
			lsink_help(help_text);
		default:
			lsink_usage_hint();
		}
	}
	if (optind >= argc)
		lsink_usage("missing event id");
	id = argv[optind];
	if (optind + 1 < argc)
		lsink_usage("extra operand '%s'",
			    lsink_printable(argv[optind + 1]));

	/* Judged before the log is: no log yet is "no event", not a bad id. */
	if (!bgrun_event_id_valid(id, strlen(id)))
		r = -EINVAL;
	else if (lsink_db_is_pg(db))
		r = lsink_pg_get(db, id, print_event, &json);
	else if (lsink_open(db, LSINK_OPEN_READONLY | LSINK_OPEN_MISSING_OK,
			    &store) < 0)
		return LSINK_EXIT_FAILURE;
	else if (store != NULL)
		r = bgrun_store_get(store, id, print_event, &json);
	else
		r = -ENOENT; /* no log yet */
	if (r < 0) {
		lsink_id_error(db, store, id, r);
		status = LSINK_EXIT_FAILURE;
	}
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	bgrun_store_close(store);
	return status;
}
