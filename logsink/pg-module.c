/* SPDX-License-Identifier: MIT */
/* pg-module.c: the table logsink-pg.so exports: its PostgreSQL functions (see pg-api.h). */

#include "pg-api.h"

__attribute__((visibility("default")))
extern const struct lsink_pg_api lsink_pg_api;

const struct lsink_pg_api lsink_pg_api = {
	.forward_start = lsink_forward_start,
	.forward_kick = lsink_forward_kick,
	.forward_stop = lsink_forward_stop,
	.init_main = lsink_pg_init_main,
	.query = lsink_pg_query,
	.get = lsink_pg_get,
	.stats = lsink_pg_stats,
};
