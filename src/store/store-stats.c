/* SPDX-License-Identifier: MIT */
/* store-stats.c: per-command statistics over the store: runs, failures, duration percentiles. */


#include "store-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One command's figures while its rows are read. */
struct stats_group {
	char *display;
	struct bgrun_stats_row row;
	int64_t *durations; /* ascending */
	size_t n, cap;
};

static int64_t nearest_rank(const struct stats_group *g, int percent)
{
	size_t rank = (g->n * (size_t)percent + 99) / 100;

	if (g->n == 0)
		return BGRUN_NULL;
	return g->durations[rank > 0 ? rank - 1 : 0];
}

static int stats_emit(struct stats_group *g, bgrun_store_stats_cb cb,
		      void *data)
{
	if (g->row.runs == 0)
		return 0;
	g->row.display = g->display;
	g->row.p50_ns = nearest_rank(g, 50);
	g->row.p95_ns = nearest_rank(g, 95);
	g->row.max_ns = g->n > 0 ? g->durations[g->n - 1] : BGRUN_NULL;
	return cb(data, &g->row);
}

static bool same_display(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

int bgrun_store_stats(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_stats_cb cb, void *data)
{
	return bgrun_store_stats_by(store, query, BGRUN_STATS_COMMAND, cb, data);
}

int bgrun_store_stats_by(struct bgrun_store *store,
			 const struct bgrun_query *query,
			 enum bgrun_stats_key key,
			 bgrun_store_stats_cb cb, void *data)
{
	struct stats_group g = { 0 };
	bool started = false;
	sqlite3_stmt *stmt;
	int r, rc;

	if (store == NULL || query == NULL || cb == NULL ||
	    (unsigned)key >= BGRUN_STATS_N_KEYS)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	r = bgrun__store_filter_stmt(store, BGRUN__READ_STATS + (unsigned)key,
				     query, &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *display = bgrun__column_text(stmt, 0);
		const char *result = bgrun__reported_result(bgrun__column_text(stmt, 1),
						     bgrun__column_text(stmt, 2),
						     bgrun__column_int(stmt, 3),
						     bgrun__column_int(stmt, 4),
						     bgrun__column_int(stmt, 6),
						     bgrun__column_int(stmt, 7));
		int64_t duration = bgrun__column_int(stmt, 5);

		if (!started || !same_display(display, g.display)) {
			r = started ? stats_emit(&g, cb, data) : 0;
			if (r != 0)
				break;
			started = true;
			free(g.display);
			g.display = NULL;
			if (display != NULL && (g.display = strdup(display)) == NULL) {
				r = -ENOMEM;
				break;
			}
			memset(&g.row, 0, sizeof(g.row));
			g.n = 0;
		}
		if (!bgrun__result_matches(query, result) ||
		    (result != NULL && strcmp(result, BGRUN_RESULT_RUNNING) == 0))
			continue;
		g.row.runs++;
		if (result != NULL && strcmp(result, BGRUN_RESULT_SUCCESS) != 0)
			g.row.failures++;
		if (duration == BGRUN_NULL)
			continue;
		if (g.n == g.cap) {
			size_t cap = g.cap ? 2 * g.cap : 64;
			int64_t *grown = realloc(g.durations,
						 cap * sizeof(*grown));

			if (grown == NULL) {
				r = -ENOMEM;
				break;
			}
			g.durations = grown;
			g.cap = cap;
		}
		g.durations[g.n++] = duration;
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = bgrun__store_fail(store, rc, "reading events");
	else if (r == 0 && rc == SQLITE_DONE && started)
		r = stats_emit(&g, cb, data);
	bgrun__release_stmt(stmt);
	free(g.display);
	free(g.durations);
	if (r == -ENOMEM)
		(void)bgrun__store_failf(store, r, "out of memory");
	return r;
}
