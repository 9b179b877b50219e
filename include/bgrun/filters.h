/* SPDX-License-Identifier: MIT */
/* bgrun/filters.h: the filters of struct bgrun_query as one table, with each SQL dialect's words for them. */

#ifndef BGRUN_FILTERS_H
#define BGRUN_FILTERS_H

#include "bgrun/store.h"

#include <string.h>

/*
 * THE FILTER MODEL
 *
 * Every condition a struct bgrun_query can set is one row of
 * BGRUN_QUERY_FILTERS, and every reader of events renders its WHERE
 * clause from these rows: the local store (SQLite, src/store/store-query.c)
 * and logsink's fleet table (PostgreSQL, logsink/pg-query.c). Adding a
 * filter is a field of struct bgrun_query, its option, and one row here.
 *
 * Each row is X(NAME, KIND, ON, VALUE, SQLITE, POSTGRESQL):
 *   NAME        BGRUN_QUERY_FILTER_<NAME> numbers the row.
 *   KIND        the value bound: NONE (no value), INT (int64_t), TEXT
 *               (a string) or GLOB (a string, a pattern as SQLite's GLOB
 *               reads it: a dialect without GLOB converts it).
 *   ON, VALUE   expressions of q (a const struct bgrun_query *): whether
 *               the row applies, and its value (0 for NONE).
 *   SQLITE, POSTGRESQL
 *               the term in each dialect, " AND ...", with one `?` where
 *               the value goes (none for NONE); a renderer numbers them
 *               ($1... for PostgreSQL) in the order of the rows.
 * Rows with exclusive ON conditions are variants of one option, where a
 * dialect wants different words for some values (--result).
 *
 * The dialects differ where the stores do. A `running` row whose
 * supervisor is gone is reported `lost` by the local store, which judges
 * that in C after the SQL (so its --failed and --result=lost let running
 * rows through); the fleet table's `lost` is what the host stored.
 * SQLite's terms are also written so that its partial index on results
 * (WHERE result != 'success') can be used.
 */
#define BGRUN_QUERY_FILTERS(X) \
	X(SINCE, INT, (q)->since_ns != BGRUN_NULL, (q)->since_ns, \
	  " AND time_ns >= ?", " AND time_ns >= ?") \
	X(UNTIL, INT, (q)->until_ns != BGRUN_NULL, (q)->until_ns, \
	  " AND time_ns < ?", " AND time_ns < ?") \
	X(FAILED, NONE, (q)->failed, 0, \
	  " AND result != 'success'", \
	  " AND result <> 'success' AND result <> 'running'") \
	X(RESULT_LOST, NONE, \
	  (q)->result != NULL && strcmp((q)->result, BGRUN_RESULT_LOST) == 0, \
	  0, " AND result IN ('lost', 'running') AND result != 'success'", \
	  " AND result = 'lost'") \
	X(RESULT_SUCCESS, TEXT, \
	  (q)->result != NULL && strcmp((q)->result, BGRUN_RESULT_SUCCESS) == 0, \
	  (q)->result, " AND result = ?", " AND result = ?") \
	X(RESULT, TEXT, \
	  (q)->result != NULL && strcmp((q)->result, BGRUN_RESULT_LOST) != 0 && \
		  strcmp((q)->result, BGRUN_RESULT_SUCCESS) != 0, \
	  (q)->result, " AND result = ? AND result != 'success'", \
	  " AND result = ?") \
	X(CMD, GLOB, (q)->cmd_glob != NULL, (q)->cmd_glob, \
	  " AND display GLOB ?", " AND display ~ ?") \
	X(TAG, TEXT, (q)->tag != NULL, (q)->tag, \
	  " AND tag = ?", " AND tag = ?") \
	X(CWD, TEXT, (q)->cwd != NULL, (q)->cwd, \
	  " AND cwd = ?", " AND cwd = ?") \
	X(SOURCE, TEXT, (q)->source != NULL, (q)->source, \
	  " AND source = ?", " AND source = ?") \
	X(EVENT, TEXT, (q)->event != NULL, (q)->event, \
	  " AND event = ?", " AND event = ?") \
	X(HOST, TEXT, (q)->host != NULL, (q)->host, \
	  " AND host = ?", " AND host = ?") \
	X(ID, TEXT, (q)->id_part != NULL, (q)->id_part, \
	  " AND instr(id, ?) > 0", " AND strpos(id, ?::text) > 0")

/* The KINDs, as BGRUN_QUERY_<KIND>. */
enum bgrun_query_kind {
	BGRUN_QUERY_NONE,
	BGRUN_QUERY_INT,
	BGRUN_QUERY_TEXT,
	BGRUN_QUERY_GLOB,
};

enum bgrun_query_filter {
#define BGRUN_QUERY_FILTER_ENUM(name, kind, on, value, sqlite, pg) \
	BGRUN_QUERY_FILTER_##name,
	BGRUN_QUERY_FILTERS(BGRUN_QUERY_FILTER_ENUM)
#undef BGRUN_QUERY_FILTER_ENUM
	BGRUN_QUERY_N_FILTERS
};

/* The rows of BGRUN_QUERY_FILTERS that apply to q, one bit each. */
static inline unsigned bgrun_query_filter_mask(const struct bgrun_query *q)
{
	unsigned mask = 0;

#define BGRUN_QUERY_FILTER_BIT(name, kind, on, value, sqlite, pg) \
	if (on) \
		mask |= 1u << BGRUN_QUERY_FILTER_##name;
	BGRUN_QUERY_FILTERS(BGRUN_QUERY_FILTER_BIT)
#undef BGRUN_QUERY_FILTER_BIT
	return mask;
}

#endif /* BGRUN_FILTERS_H */
