/* SPDX-License-Identifier: MIT */
/* pg-load.c: logsink-full's side of PostgreSQL: loads logsink-pg.so on first use and calls into it. */

#include "pg-api.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct lsink_pg_api *api;
static char why[PATH_MAX + 256];

/*
 * The module beside our own executable (installed beside logsink-full, in
 * the build directory beside it too), loaded once. THREAD SAFETY: first
 * called on the main thread (a verb, or the daemon's start before its
 * threads); later calls only read api.
 */
static const struct lsink_pg_api *load(void)
{
	static bool tried;
	char path[PATH_MAX];
	ssize_t len;
	void *h;

	if (tried)
		return api;
	tried = true;
#ifndef LSINK_HAVE_PG_MODULE
	(void)snprintf(why, sizeof(why), "this logsink was built without "
					 "PostgreSQL support (libpq)");
	return NULL;
#endif
	len = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (len <= 0) {
		(void)snprintf(why, sizeof(why), "cannot find %s: %s",
			       LSINK_PG_MODULE, strerror(errno));
		return NULL;
	}
	path[len] = '\0';
	(void)snprintf(strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path,
		       sizeof(path) - (size_t)(strrchr(path, '/') != NULL
						       ? strrchr(path, '/') + 1 - path
						       : 0),
		       "%s", LSINK_PG_MODULE);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		(void)snprintf(why, sizeof(why),
			       "PostgreSQL support is not available: %s",
			       dlerror());
		return NULL;
	}
	api = dlsym(h, LSINK_PG_API_SYMBOL);
	if (api == NULL)
		(void)snprintf(why, sizeof(why), "%s: no %s", path,
			       LSINK_PG_API_SYMBOL);
	return api;
}

int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size)
{
	if (load() == NULL) {
		(void)snprintf(err, size, "--forward: %s", why);
		return -ENOTSUP;
	}
	return api->forward_start(o, ret_forward, err, size);
}

void lsink_forward_kick(struct lsink_forward *f)
{
	if (f != NULL)
		api->forward_kick(f);
}

void lsink_forward_stop(struct lsink_forward *f)
{
	if (f != NULL)
		api->forward_stop(f);
}

int lsink_pg_init_main(int argc, char **argv, const char *db)
{
	if (load() == NULL) {
		lsink_msg("pg-init: %s", why);
		return LSINK_EXIT_FAILURE;
	}
	return api->init_main(argc, argv, db);
}

int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data)
{
	if (load() == NULL) {
		lsink_msg("--db postgresql://: %s", why);
		return -ENOTSUP;
	}
	return api->query(conninfo, q, cb, data);
}

int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   enum bgrun_stats_key key, bgrun_store_stats_cb cb,
		   void *data)
{
	if (load() == NULL) {
		lsink_msg("--db postgresql://: %s", why);
		return -ENOTSUP;
	}
	return api->stats(conninfo, q, key, cb, data);
}

int lsink_pg_get(const char *conninfo, const char *id_or_part,
		 bgrun_store_row_cb cb, void *data)
{
	if (load() == NULL) {
		lsink_msg("--db postgresql://: %s", why);
		return -EIO;
	}
	return api->get(conninfo, id_or_part, cb, data);
}
