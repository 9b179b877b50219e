/* SPDX-License-Identifier: MIT */
/* store-prune.c: deleting old events and giving their space back to the file system. */

#include "store-internal.h"
#include "bgrun/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * What each deleted row leaves of its kept output (bgrun's own files,
 * options.output = 'kept': launcher/output.c) and of its kept
 * environment (options.env_file), to be removed with it.
 */
#define RETURNING_OUTPUT                                                   \
	" RETURNING CASE WHEN json_extract(options, '$.output') = 'kept' " \
	"THEN id END, stdout_path, stderr_path, id, "                      \
	"json_extract(options, '$.env_file')"

/* Rows past the age bound, running ones never (their end is still to come). */
static const char prune_sql[] =
	"DELETE FROM events WHERE time_ns < ?1 AND result IS NOT 'running'"
	RETURNING_OUTPUT;
/*
 * With a number to keep: the newest rows of each command (events without
 * one: of each event name) are spared, counting finished rows only.
 */
static const char prune_keep_sql[] =
	"DELETE FROM events WHERE rowid IN ("
	"SELECT rowid FROM (SELECT rowid, time_ns, row_number() OVER ("
	"PARTITION BY event, display ORDER BY time_ns DESC, rowid DESC) AS newer "
	"FROM events WHERE result IS NOT 'running') "
	"WHERE newer > ?2 AND time_ns < ?1)" RETURNING_OUTPUT;

/* The kept output files of the deleted rows, removed after the commit. */
struct outputs {
	char **path;
	size_t n, cap;
	bool failed; /* out of memory: some are not listed */
};

static void outputs_free(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->path[i]);
	free(o->path);
}

/*
 * Adds path if it is event id's file of a kind wanted (env: ID.env; else
 * ID.log, ID.out or ID.err: bgrun_output_file_of), so that no row,
 * whatever it says, makes prune remove a file bgrun did not make for
 * that event.
 */
static void outputs_add(struct outputs *o, const char *path, const char *id,
			bool env)
{
	int which;

	if (path == NULL || id == NULL)
		return;
	which = bgrun_output_file_of(path, id);
	if (which < 0 || (which == BGRUN_OUTPUT_ENV) != env)
		return;
	/* Merged: stdout_path and stderr_path name one file. */
	if (o->n > 0 && strcmp(o->path[o->n - 1], path) == 0)
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		char **v = realloc(o->path, cap * sizeof(*v));

		if (v == NULL) {
			o->failed = true;
			return;
		}
		o->path = v;
		o->cap = cap;
	}
	if ((o->path[o->n] = strdup(path)) != NULL)
		o->n++;
	else
		o->failed = true;
}

/*
 * Counts the files and the space they take (their blocks: the cap's
 * holes take none), and removes them unless dry. A file already gone is
 * not counted.
 */
static void outputs_remove(const struct outputs *o, bool dry,
			   struct bgrun_prune_result *res)
{
	for (size_t i = 0; i < o->n; i++) {
		struct stat sb;

		if (lstat(o->path[i], &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if (!dry && unlink(o->path[i]) < 0)
			continue;
		res->output_files++;
		res->output_bytes += BGRUN__STAT_SPACE(&sb);
	}
}

/* The bytes the database's pages take (its file, once checkpointed). */
static int db_bytes(struct bgrun_store *store, int64_t *ret_bytes)
{
	int64_t pages = 0, size = 0;
	int r;

	r = bgrun__store_query_int(store, "PRAGMA page_count", &pages);
	if (r >= 0)
		r = bgrun__store_query_int(store, "PRAGMA page_size", &size);
	if (r >= 0)
		*ret_bytes = pages * size;
	return r;
}

static int exec(struct bgrun_store *store, const char *sql)
{
	int rc = sqlite3_exec(store->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : bgrun__store_fail(store, rc, sql);
}

/* Deletes what how says, in the transaction the caller holds. */
static int delete_rows(struct bgrun_store *store, const struct bgrun_prune *how,
		       int64_t *ret_deleted, struct outputs *out)
{
	int64_t n = 0;
	sqlite3_stmt *stmt = NULL;
	int64_t before = how->older_than_ns != BGRUN_NULL ? how->older_than_ns
							 : INT64_MAX;
	int r, rc;

	r = bgrun__store_mark_lost_locked(store, NULL);
	if (r < 0)
		return r;
	rc = sqlite3_prepare_v2(store->db, how->keep > 0 ? prune_keep_sql
							 : prune_sql,
				-1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(stmt, 1, before);
	if (rc == SQLITE_OK && how->keep > 0)
		rc = sqlite3_bind_int64(stmt, 2, how->keep);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW)
			break;
		n++;
		outputs_add(out, (const char *)sqlite3_column_text(stmt, 1),
			    (const char *)sqlite3_column_text(stmt, 0), false);
		outputs_add(out, (const char *)sqlite3_column_text(stmt, 2),
			    (const char *)sqlite3_column_text(stmt, 0), false);
		outputs_add(out, (const char *)sqlite3_column_text(stmt, 4),
			    (const char *)sqlite3_column_text(stmt, 3), true);
	}
	if (rc == SQLITE_DONE)
		*ret_deleted = n;
	(void)sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? 0 : bgrun__store_fail(store, rc, "pruning");
}

/*
 * A file made before auto_vacuum was set (store-schema.c) is rebuilt once
 * with it, which frees its pages too: VACUUM runs outside a transaction,
 * under the write lock like every write.
 */
static int convert(struct bgrun_store *store)
{
	int r;

	r = bgrun__store_lock(store);
	if (r < 0)
		return r;
	r = exec(store, "PRAGMA auto_vacuum = INCREMENTAL");
	if (r >= 0)
		r = exec(store, "VACUUM");
	bgrun__store_unlock(store);
	return r;
}

int bgrun_store_prune_with(struct bgrun_store *store,
			   const struct bgrun_prune *how,
			   struct bgrun_prune_result *ret_result)
{
	struct bgrun_prune_result res = { 0 };
	struct outputs out = { .path = NULL };
	int64_t before = 0, after = 0, mode = 0, free_pages = 0, page = 0;
	int r;

	if (store == NULL || how == NULL || how->keep < 0 ||
	    (how->older_than_ns == BGRUN_NULL && how->keep == 0))
		return -EINVAL;
	r = bgrun__store_enter_write(store);
	if (r < 0)
		return r;
	r = db_bytes(store, &before);
	if (r >= 0)
		r = bgrun__store_query_int(store, "PRAGMA auto_vacuum", &mode);
	if (r >= 0)
		r = delete_rows(store, how, &res.deleted, &out);
	if (r >= 0 && how->dry_run) {
		/* What the deletion left free: about what pruning gives back. */
		r = bgrun__store_query_int(store, "PRAGMA freelist_count", &free_pages);
		if (r >= 0)
			r = bgrun__store_query_int(store, "PRAGMA page_size", &page);
		res.freed_bytes = free_pages * page;
		/* Nothing of it stays: the same end as an error's. */
		(void)bgrun__store_end(store, r >= 0 ? -ECANCELED : r);
		if (r >= 0)
			outputs_remove(&out, true, &res);
		goto out;
	}
	/* mode 2: incremental; it may run inside the transaction. */
	if (r >= 0 && mode == 2)
		r = exec(store, "PRAGMA incremental_vacuum");
	r = bgrun__store_end(store, r);
	/* The events are gone for good: their files go too. */
	if (r >= 0)
		outputs_remove(&out, false, &res);
	if (r >= 0 && mode != 2 && res.deleted > 0)
		r = convert(store);
	/*
	 * The file shrinks when the WAL is checkpointed into it; do that now
	 * rather than when the last connection closes (a daemon may keep one).
	 */
	if (r >= 0 && bgrun__store_lock(store) >= 0) {
		(void)sqlite3_wal_checkpoint_v2(store->db, NULL,
						SQLITE_CHECKPOINT_TRUNCATE,
						NULL, NULL);
		bgrun__store_unlock(store);
	}
	if (r >= 0)
		r = db_bytes(store, &after);
	res.freed_bytes = before > after ? before - after : 0;
out:
	outputs_free(&out);
	if (r < 0)
		return r;
	if (ret_result != NULL)
		*ret_result = res;
	return 0;
}

int bgrun_store_prune(struct bgrun_store *store, int64_t older_than_ns,
		      int64_t *ret_deleted)
{
	struct bgrun_prune how = BGRUN_PRUNE_INIT;
	struct bgrun_prune_result res;
	int r;

	if (older_than_ns == BGRUN_NULL)
		return -EINVAL;
	how.older_than_ns = older_than_ns;
	r = bgrun_store_prune_with(store, &how, &res);
	if (r >= 0 && ret_deleted != NULL)
		*ret_deleted = res.deleted;
	return r;
}
