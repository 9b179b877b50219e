/* SPDX-License-Identifier: MIT */
/* store-changes.c: reading the store in change order, and the cursors of its readers (forwarding). */

#include "store-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The columns of BGRUN__STMT_CHANGES before the plain ones. */
#define CHANGES_PLAIN 6

int bgrun_store_changes(struct bgrun_store *store, int64_t after_seq,
			int64_t limit, bgrun_store_change_cb cb, void *data)
{
	struct bgrun_store_change c;
	sqlite3_stmt *stmt;
	int r, rc;

	if (store == NULL || cb == NULL || limit < 0 || after_seq < 0)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	r = bgrun__store_stmt(store, BGRUN__STMT_CHANGES, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_int64(stmt, 1, after_seq);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(stmt, 2, limit > 0 ? limit : -1);
	/* One statement: the whole read sees one snapshot. */
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *id = bgrun__column_text(stmt, 1);

		memset(&c, 0, sizeof(c));
		c.seq = sqlite3_column_int64(stmt, 0);
		(void)snprintf(c.ev.id, sizeof(c.ev.id), "%s", id ? id : "");
		c.recorded_ns = sqlite3_column_int64(stmt, 2);
		c.time_ns = sqlite3_column_int64(stmt, 3);
		c.argv_json = bgrun__column_text(stmt, 4);
		c.ev.options_json = bgrun__column_text(stmt, 5);
		bgrun__column_fields(stmt, CHANGES_PLAIN, &c.ev);
		r = cb(data, &c);
		if (r != 0)
			break;
		rc = SQLITE_OK;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = bgrun__store_fail(store, rc, "reading changes");
	bgrun__release_stmt(stmt);
	return r;
}

/* The first integer of stmt's first row (bound already), or 0 without one. */
static int step_int(struct bgrun_store *store, sqlite3_stmt *stmt,
		    const char *what, int64_t *ret_value)
{
	int rc = sqlite3_step(stmt), r = 0;

	if (rc == SQLITE_ROW)
		*ret_value = sqlite3_column_int64(stmt, 0);
	else if (rc == SQLITE_DONE)
		*ret_value = 0;
	else
		r = bgrun__store_fail(store, rc, what);
	bgrun__release_stmt(stmt);
	return r;
}

int bgrun_store_last_change(struct bgrun_store *store, int64_t *ret_seq)
{
	sqlite3_stmt *stmt;
	int64_t seq = 0;
	int r;

	if (store == NULL || ret_seq == NULL)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r >= 0)
		r = bgrun__store_stmt(store, BGRUN__STMT_SEQ_GET, &stmt);
	if (r >= 0)
		r = step_int(store, stmt, "reading the change counter", &seq);
	if (r >= 0)
		*ret_seq = seq;
	return r;
}

int bgrun_store_cursor_get(struct bgrun_store *store, const char *name,
			   int64_t *ret_seq)
{
	sqlite3_stmt *stmt;
	int64_t seq = 0;
	int r, rc;

	if (store == NULL || name == NULL || name[0] == '\0' || ret_seq == NULL)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	r = bgrun__store_stmt(store, BGRUN__STMT_CURSOR_GET, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	if (rc != SQLITE_OK) {
		bgrun__release_stmt(stmt);
		return bgrun__store_fail(store, rc, "reading a cursor");
	}
	r = step_int(store, stmt, "reading a cursor", &seq);
	if (r >= 0)
		*ret_seq = seq;
	return r;
}

int bgrun_store_cursor_set(struct bgrun_store *store, const char *name,
			   int64_t seq)
{
	sqlite3_stmt *stmt;
	int r, rc;

	if (store == NULL || name == NULL || name[0] == '\0' || seq < 0)
		return -EINVAL;
	r = bgrun__store_enter_write(store);
	if (r < 0)
		return r;
	r = bgrun__store_stmt(store, BGRUN__STMT_CURSOR_SET, &stmt);
	if (r >= 0) {
		rc = sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(stmt, 2, seq);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(stmt, 3,
						bgrun__now_ns(CLOCK_REALTIME));
		if (rc == SQLITE_OK)
			rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE)
			r = bgrun__store_fail(store, rc, "writing a cursor");
		bgrun__release_stmt(stmt);
	}
	return bgrun__store_end(store, r);
}
