/* SPDX-License-Identifier: MIT */
/* win-verbs.c: what logsink's Windows build does not have (PostgreSQL: pg-init, a postgresql:// --db, serve --forward; the plot): each says so when asked for. */

#include "logsink.h"
#include "serve.h"
#include "sink-verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Said as an error with the failure exit code, not as a usage error:
 * the command line is right, this build lacks the part. README,
 * Windows, lists what the Windows build has and why the rest waits
 * (PostgreSQL: no libpq built for Windows; the plot: gnuplot is not
 * expected on Windows).
 */
static int missing(const char *what)
{
	lsink_msg("%s: not available in the Windows build (it has query, "
		  "show, stats, status, prune, mark-lost, send and serve)",
		  what);
	return LSINK_EXIT_FAILURE;
}

int lsink_pg_init_main(int argc, char **argv, const char *db)
{
	(void)argc;
	(void)argv;
	(void)db;
	return missing("pg-init");
}

static int pg_missing(void)
{
	(void)missing("a PostgreSQL --db");
	return -EIO;
}

int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data)
{
	(void)conninfo;
	(void)q;
	(void)cb;
	(void)data;
	return pg_missing();
}

int lsink_pg_get(const char *conninfo, const char *id_or_part,
		 bgrun_store_row_cb cb, void *data)
{
	(void)conninfo;
	(void)id_or_part;
	(void)cb;
	(void)data;
	return pg_missing();
}

int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   enum bgrun_stats_key key, bgrun_store_stats_cb cb,
		   void *data)
{
	(void)conninfo;
	(void)q;
	(void)key;
	(void)cb;
	(void)data;
	return pg_missing();
}

int lsink_plot(struct bgrun_store *store, const struct bgrun_query *q,
	       enum bgrun_stats_key key, const char *file,
	       const struct bgrun_stats_row *rows, size_t n)
{
	(void)store;
	(void)q;
	(void)key;
	(void)file;
	(void)rows;
	(void)n;
	return missing("--plot") != 0 ? -1 : -1;
}

int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size)
{
	(void)o;
	(void)ret_forward;
	(void)snprintf(err, size,
		       "--forward: not available in the Windows build "
		       "(no libpq)");
	return -ENOTSUP;
}

void lsink_forward_kick(struct lsink_forward *f)
{
	(void)f;
}

void lsink_forward_stop(struct lsink_forward *f)
{
	(void)f;
}
