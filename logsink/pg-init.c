/* SPDX-License-Identifier: MIT */
/* pg-init.c: `logsink pg-init`: create or check the fleet table in PostgreSQL, and this month's partitions. */

#include "logsink.h"
#include "pg.h"

#include <getopt.h>
#include <stdlib.h>
#include <time.h>

static const char help_text[] =
	"Usage: logsink pg-init [OPTION]... [CONNINFO]\n"
	"Create the fleet table (fleet_events, partitioned by month) and its\n"
	"schema version in the PostgreSQL database CONNINFO names (a\n"
	"postgresql:// URI or a key=value string; none: libpq's PG* variables\n"
	"and PGSERVICE), or check that it is there, and make the partitions of\n"
	"this month and the next. `logsink serve --forward` does the same on\n"
	"its first connection; this is for a database prepared beforehand.\n"
	"\n"
	"  -h, --help         display this help and exit\n";

static const struct option options[] = {
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int lsink_pg_init_main(int argc, char **argv, const char *db)
{
	const char *conninfo = "";
	char err[512];
	PGconn *pg;
	struct timespec ts;
	int64_t now;
	int opt, status = LSINK_EXIT_FAILURE;

	(void)db;
	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			lsink_help(help_text);
		case LSINK_OPT_DB:
			break; /* the local log plays no part */
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		conninfo = argv[optind++];
	if (optind < argc)
		lsink_usage("pg-init: unexpected argument '%s'",
			    lsink_printable(argv[optind]));
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	pg = lsink_pg_connect(conninfo);
	if (pg == NULL || PQstatus(pg) != CONNECTION_OK) {
		lsink_pg_error(pg, NULL, err, sizeof(err));
		lsink_msg("pg-init: cannot connect: %s",
			  pg != NULL ? lsink_printable(err) : "out of memory");
		goto out;
	}
	if (lsink_pg_setup(pg, err, sizeof(err)) < 0 ||
	    lsink_pg_partitions(pg, now, now + INT64_C(31) * 86400 * 1000000000,
				err, sizeof(err)) < 0) {
		lsink_msg("pg-init: %s", lsink_printable(err));
		goto out;
	}
	(void)printf("fleet schema version %d in %s on %s\n",
		     LSINK_PG_SCHEMA_VERSION, PQdb(pg), PQhost(pg));
	status = lsink_flush_stdout();
out:
	PQfinish(pg);
	return status;
}
