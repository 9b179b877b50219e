/* SPDX-License-Identifier: MIT */
/* maint.c: the verbs that change the log: `logsink prune` and `logsink mark-lost`. */

#include "logsink.h"

#include <getopt.h>
#include <stdlib.h>

static const char prune_help[] =
	"Usage: logsink prune --older-than=DURATION [OPTION]...\n"
	"Delete the events older than DURATION (90s, 10m, 2h, 30d), by the time\n"
	"they started; events still running are kept. Running events whose\n"
	"supervisor vanished are first recorded as lost (see mark-lost).\n"
	"Prints 'pruned N events'.\n"
	"\n"
	"      --older-than=DURATION  how old an event must be to go\n"
	LSINK_COMMON_HELP;

static const char mark_lost_help[] =
	"Usage: logsink mark-lost [OPTION]...\n"
	"Record as lost every running event whose supervisor is gone (it was\n"
	"killed, or the machine restarted), and print how many there were.\n"
	"Queries already show such events as lost; this stores it.\n"
	"\n"
	LSINK_COMMON_HELP;

static const struct option prune_options[] = {
	{ "older-than", required_argument, NULL, LSINK_OPT_OLDER_THAN },
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static const struct option mark_lost_options[] = {
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int lsink_prune_main(int argc, char **argv, const char *db)
{
	struct bgrun_store *store = NULL;
	const char *older_than = NULL;
	int64_t age = 0, deleted = 0;
	int opt, r, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", prune_options, NULL)) != -1) {
		switch (opt) {
		case LSINK_OPT_OLDER_THAN:
			older_than = optarg;
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
	if (older_than == NULL)
		lsink_usage("prune needs --older-than=DURATION");
	if (bgrun_parse_duration(older_than, &age) < 0)
		lsink_usage("invalid duration '%s' for --older-than: expected "
			    "a number and a unit (90s, 10m, 2h, 30d)",
			    lsink_printable(older_than));

	if (lsink_open(db, false, &store) < 0)
		return LSINK_EXIT_FAILURE;
	r = bgrun_store_prune(store, bgrun_clock_ns(BGRUN_CLOCK_REALTIME) - age, &deleted);
	if (r < 0) {
		lsink_store_error(store, r, "cannot prune");
		status = LSINK_EXIT_FAILURE;
	} else {
		(void)printf("pruned %lld events\n", (long long)deleted);
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

	if (lsink_open(db, false, &store) < 0)
		return LSINK_EXIT_FAILURE;
	r = bgrun_store_mark_lost(store, &count);
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
