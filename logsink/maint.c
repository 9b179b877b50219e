/* SPDX-License-Identifier: MIT */
/* maint.c: the verbs that change the log: `logsink prune` and `logsink mark-lost`. */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>

static const char prune_help[] =
	"Usage: logsink prune (--older-than=AGE | --keep=N)... [OPTION]...\n"
	"Delete old events: those that started more than AGE ago (90s, 10m, 2h,\n"
	"30d, 1w, 1h30m: a unit is required) and, with --keep, all but the N\n"
	"newest of each command (of each event name for events without one);\n"
	"with both, only the events old enough that are not among the N newest.\n"
	"Events still running are kept. Running events whose supervisor vanished\n"
	"are first recorded as lost (see mark-lost). The space the events took is\n"
	"given back to the file system, and the command says how much:\n"
	"'pruned N events; the log shrank by B bytes (SIZE)'. The output bgrun\n"
	"kept for them (bgrun logs) is removed with them, and counted.\n"
	"\n"
	"      --older-than=AGE  how old an event must be to go\n"
	"      --keep=N          keep the N newest events of each command\n"
	"  -n, --dry-run         say what would go, change nothing\n"
	LSINK_COMMON_HELP;

static const char mark_lost_help[] =
	"Usage: logsink mark-lost [OPTION]...\n"
	"Record as lost every running event whose supervisor is gone (it was\n"
	"killed, or the machine restarted), and print how many there were.\n"
	"Queries already show such events as lost; this stores it.\n"
	"\n"
	LSINK_COMMON_HELP;

enum {
	OPT_KEEP = LSINK_OPT_LAST,
	OPT_DRY_RUN,
};

static const struct option prune_options[] = {
	{ "older-than", required_argument, NULL, LSINK_OPT_OLDER_THAN },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "dry-run", no_argument, NULL, 'n' },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static const struct option mark_lost_options[] = {
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* A size for people: "512 B", "48.0 KiB", "3.2 MiB". */
static void fmt_bytes(char *buf, size_t size, int64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t i = 0;

	if (bytes < 1024) {
		(void)snprintf(buf, size, "%lld B", (long long)bytes);
		return;
	}
	for (v /= 1024; v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0]); i++)
		v /= 1024;
	(void)snprintf(buf, size, "%.1f %s", v, units[i]);
}

static int64_t keep_arg(const char *arg)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || n <= 0)
		lsink_usage("invalid count '%s' for --keep: expected a positive "
			    "number", lsink_printable(arg));
	return n;
}

int lsink_prune_main(int argc, char **argv, const char *db)
{
	struct bgrun_prune how = BGRUN_PRUNE_INIT;
	struct bgrun_prune_result res = { 0 };
	struct bgrun_store *store = NULL;
	const char *older_than = NULL;
	int64_t age = 0;
	char size[32];
	int opt, r, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "hn", prune_options, NULL)) != -1) {
		switch (opt) {
		case LSINK_OPT_OLDER_THAN:
			older_than = optarg;
			break;
		case OPT_KEEP:
			how.keep = keep_arg(optarg);
			break;
		case 'n':
			how.dry_run = true;
			break;
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case 'h':
			lsink_help(prune_help);
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("extra operand '%s'", lsink_printable(argv[optind]));
	if (older_than == NULL && how.keep == 0)
		lsink_usage("prune needs --older-than=AGE or --keep=N");
	/* A unit is required: "--older-than 0" must not mean everything. */
	if (older_than != NULL &&
	    bgrun_parse_duration_flags(older_than, BGRUN_DURATION_UNIT, &age) < 0)
		lsink_usage("invalid duration '%s' for --older-than: "
			    BGRUN_DURATION_EXPECTED, lsink_printable(older_than));
	if (older_than != NULL)
		how.older_than_ns = lsink_now_ns() - age;

	if (lsink_open(db, LSINK_OPEN_MISSING_OK, &store) < 0)
		return LSINK_EXIT_FAILURE;
	r = store != NULL ? bgrun_store_prune_with(store, &how, &res) : 0;
	if (r < 0) {
		lsink_store_error(store, r, "cannot prune");
		status = LSINK_EXIT_FAILURE;
	} else {
		char osize[32];

		fmt_bytes(size, sizeof(size), res.freed_bytes);
		fmt_bytes(osize, sizeof(osize), res.output_bytes);
		if (how.dry_run)
			(void)printf("would prune %lld event%s; the log would "
				     "shrink by about %lld bytes (%s)",
				     (long long)res.deleted,
				     res.deleted == 1 ? "" : "s",
				     (long long)res.freed_bytes, size);
		else
			(void)printf("pruned %lld event%s; the log shrank by "
				     "%lld bytes (%s)",
				     (long long)res.deleted,
				     res.deleted == 1 ? "" : "s",
				     (long long)res.freed_bytes, size);
		/* Said only when there were some, as bgrun keeps them. */
		if (res.output_files > 0)
			(void)printf("; %s %lld output file%s (%s)",
				     how.dry_run ? "would remove" : "removed",
				     (long long)res.output_files,
				     res.output_files == 1 ? "" : "s", osize);
		(void)putchar('\n');
	}
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	bgrun_store_close(store);
	return status;
}

int lsink_mark_lost_main(int argc, char **argv, const char *db)
{
	struct bgrun_store *store = NULL;
	int64_t count = 0;
	int opt, r, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", mark_lost_options, NULL)) !=
	       -1) {
		switch (opt) {
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case 'h':
			lsink_help(mark_lost_help);
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("extra operand '%s'", lsink_printable(argv[optind]));

	if (lsink_open(db, LSINK_OPEN_MISSING_OK, &store) < 0)
		return LSINK_EXIT_FAILURE;
	r = store != NULL ? bgrun_store_mark_lost(store, &count) : 0;
	if (r < 0) {
		lsink_store_error(store, r, "cannot mark lost events");
		status = LSINK_EXIT_FAILURE;
	} else {
		(void)printf("%lld\n", (long long)count);
	}
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	bgrun_store_close(store);
	return status;
}
