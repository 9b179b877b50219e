/* SPDX-License-Identifier: MIT */
/* pg-none.c: the PostgreSQL side in a logsink built without libpq: refused, saying why. */

#include "serve.h"

#include <errno.h>
#include <stdio.h>

int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size)
{
	(void)o;
	(void)ret_forward;
	(void)snprintf(err, size, "--forward: this logsink was built without "
				  "PostgreSQL support (libpq)");
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

int lsink_pg_init_main(int argc, char **argv, const char *db)
{
	(void)argc;
	(void)argv;
	(void)db;
	lsink_msg("pg-init: this logsink was built without PostgreSQL "
		  "support (libpq)");
	return LSINK_EXIT_FAILURE;
}

int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data)
{
	(void)conninfo;
	(void)q;
	(void)cb;
	(void)data;
	lsink_msg("--db postgresql://: this logsink was built without "
		  "PostgreSQL support (libpq)");
	return -ENOTSUP;
}

int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   bool by_host, bgrun_store_stats_cb cb, void *data)
{
	(void)by_host;
	(void)cb;
	return lsink_pg_query(conninfo, q, NULL, data);
}
