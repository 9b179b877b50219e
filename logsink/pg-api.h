/* SPDX-License-Identifier: MIT */
/* pg-api.h: the PostgreSQL module (logsink-pg.so): what logsink-full finds in it when it loads it. */

#ifndef LSINK_PG_API_H
#define LSINK_PG_API_H

#include "serve.h"

/*
 * WHY A MODULE: libpq brings some twenty libraries (OpenSSL, Kerberos,
 * LDAP...): linked into logsink-full they cost every run of it (every
 * query, every daemon) their loading and about 5 MiB of resident memory,
 * used or not. So everything PostgreSQL lives in logsink-pg.so, beside
 * logsink-full, loaded (dlopen) by the first call that needs it (pg-load.c
 * holds the functions logsink-full calls). The module has its own copy of
 * msg.c, and exports this table only.
 */
struct lsink_pg_api {
	int (*forward_start)(const struct lsink_forward_opts *o,
			     struct lsink_forward **ret_forward, char *err,
			     size_t size);
	void (*forward_kick)(struct lsink_forward *f);
	void (*forward_stop)(struct lsink_forward *f);
	int (*init_main)(int argc, char **argv, const char *db);
	int (*query)(const char *conninfo, const struct bgrun_query *q,
		     bgrun_store_row_cb cb, void *data);
	int (*get)(const char *conninfo, const char *id_or_part,
		   bgrun_store_row_cb cb, void *data);
	int (*stats)(const char *conninfo, const struct bgrun_query *q,
		     enum bgrun_stats_key key, bgrun_store_stats_cb cb,
		   void *data);
};

/* The table's symbol in the module, and the module's file name. */
#define LSINK_PG_API_SYMBOL "lsink_pg_api"
#define LSINK_PG_MODULE "logsink-pg.so"

#endif /* LSINK_PG_API_H */
