/* SPDX-License-Identifier: MIT */
/* store-write.c: writing events into the store: checks, argv as JSON, upserts, lost rows, pruning. */


#include "store-internal.h"


#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bgrun__prepared_release(struct bgrun_store_prepared *p)
{
	free(p->argv_json);
	free(p->options_json);
	free(p->display);
	if (p->text != NULL)
		for (size_t i = 0; i < BGRUN__N_COLUMNS; i++)
			free(p->text[i]);
	free(p->text);
	memset(p, 0, sizeof(*p));
}

static bool valid_id(const char *id)
{
	return bgrun_event_id_valid(id, strnlen(id, BGRUN_EVENT_ID_MAX + 1));
}

static bool valid_result(const char *result)
{
	static const char *const results[] = {
		BGRUN_RESULT_RUNNING, BGRUN_RESULT_SUCCESS,
		BGRUN_RESULT_FAILED, BGRUN_RESULT_SIGNALED,
		BGRUN_RESULT_TIMEOUT, BGRUN_RESULT_SPAWN_FAILED,
		BGRUN_RESULT_LOST,
	};

	if (result == NULL)
		return true;
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		if (strcmp(result, results[i]) == 0)
			return true;
	return false;
}

/* 1 if json is a valid JSON object, 0 if not (SQLite's judgement). */
static int check_options(struct bgrun_store *store, const char *json)
{
	sqlite3_stmt *stmt;
	int r, rc;

	if (!bgrun__utf8_valid(json, strlen(json)))
		return 0;
	r = bgrun__store_stmt(store, BGRUN__STMT_OPTIONS_CHECK, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, json, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		r = sqlite3_column_int(stmt, 0) != 0;
	else
		r = bgrun__store_fail(store, rc, "checking options_json");
	bgrun__release_stmt(stmt);
	return r;
}

/* One pair into the object acc (SQLite's json_patch and json_object). */
static int add_option(struct bgrun_store *store, const char *acc,
		      const char *name, const char *value, char **ret_json)
{
	const unsigned char *out;
	char *safe[2] = { NULL, NULL }, *json = NULL;
	sqlite3_stmt *stmt;
	int r, rc;

	/* Text SQLite binds must be UTF-8: other bytes become \xNN. */
	if (bgrun__utf8_sanitize(name, &safe[0]) < 0 ||
	    bgrun__utf8_sanitize(value, &safe[1]) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = bgrun__store_stmt(store, BGRUN__STMT_OPTIONS_ADD, &stmt);
	if (r < 0)
		goto out;
	rc = sqlite3_bind_text(stmt, 1, acc, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(stmt, 2, safe[0] ? safe[0] : name, -1,
				       SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(stmt, 3, safe[1] ? safe[1] : value, -1,
				       SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		out = sqlite3_column_text(stmt, 0);
		json = out != NULL ? strdup((const char *)out) : NULL;
		rc = json != NULL ? SQLITE_OK : SQLITE_NOMEM;
	}
	if (rc == SQLITE_OK)
		*ret_json = json;
	r = rc == SQLITE_OK ? 0
			    : bgrun__store_fail(store, rc, "encoding options");
	bgrun__release_stmt(stmt);
out:
	free(safe[0]);
	free(safe[1]);
	return r;
}

/* options_kv as one JSON object, made by SQLite; *ret_json is malloc'd. */
static int encode_options(struct bgrun_store *store,
			  const struct bgrun_event *ev, char **ret_json)
{
	const char *const *kv = ev->options_kv;
	char *json = NULL, *next = NULL;
	size_t n = bgrun__vec_len(kv);
	int r;

	if (n % 2 != 0)
		return bgrun__store_failf(store, -EINVAL,
					  "event %s: options_kv is not NAME, "
					  "VALUE pairs", ev->id);
	for (size_t i = 0; i < n; i += 2) {
		r = add_option(store, json != NULL ? json : "{}", kv[i],
			       kv[i + 1], &next);
		free(json);
		json = next;
		if (r < 0)
			return r;
	}
	if (json == NULL)
		json = strdup("{}");
	if (json == NULL)
		return -ENOMEM;
	*ret_json = json;
	return 0;
}

/*
 * The statement making n arguments a JSON array: json_array(A2, A3, ...),
 * where each A is its parameter as a JSON string when bound as text, else
 * {"hex": "..."} of its bytes. Made once per n and kept.
 */
static int argv_stmt(struct bgrun_store *store, size_t n,
		     sqlite3_stmt **ret_stmt)
{
	char sql[64 + BGRUN__ARGV_CHUNK * 96];
	size_t len;
	int r;

	assert(n >= 1 && n <= BGRUN__ARGV_CHUNK);
	if (store->argv_stmts[n - 1] != NULL) {
		*ret_stmt = store->argv_stmts[n - 1];
		return 0;
	}
	len = (size_t)snprintf(sql, sizeof(sql), "SELECT json_array(");
	for (size_t i = 1; i <= n; i++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len,
					"%sCASE WHEN typeof(?%zu) = 'blob' "
					"THEN json_object('hex', hex(?%zu)) "
					"ELSE ?%zu END",
					i > 1 ? ", " : "", i, i, i);
	(void)snprintf(sql + len, sizeof(sql) - len, ")");
	r = bgrun__store_prepare(store, sql, &store->argv_stmts[n - 1]);
	if (r < 0)
		return r;
	*ret_stmt = store->argv_stmts[n - 1];
	return 0;
}

/*
 * argv[0 .. n - 1] as a JSON array, appended to the array *json (or made
 * the array if *json is NULL); *json is malloc'd. A valid UTF-8 argument
 * is bound as text (a JSON string), any other as a blob (an object
 * {"hex": "..."}). Arrays of SQLite's compact form join by their brackets:
 * "[a,b]" and "[c]" make "[a,b,c]".
 */
static int append_args(struct bgrun_store *store, const char *const *argv,
		       size_t n, char **json)
{
	const char *out;
	sqlite3_stmt *stmt;
	int r, rc;

	r = argv_stmt(store, n, &stmt);
	if (r < 0)
		return r;
	rc = SQLITE_OK;
	for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
		size_t len = strlen(argv[i]);

		rc = bgrun__utf8_valid(argv[i], len)
			     ? sqlite3_bind_text(stmt, (int)i + 1, argv[i],
						 (int)len, SQLITE_STATIC)
			     : sqlite3_bind_blob(stmt, (int)i + 1, argv[i],
						 (int)len, SQLITE_STATIC);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		out = (const char *)sqlite3_column_text(stmt, 0);
		if (out == NULL)
			rc = SQLITE_NOMEM;
		else if (*json == NULL)
			rc = (*json = strdup(out)) != NULL ? SQLITE_OK
							   : SQLITE_NOMEM;
		else {
			size_t have = strlen(*json), add = strlen(out);
			char *joined = realloc(*json, have + add);

			if (joined == NULL) {
				rc = SQLITE_NOMEM;
			} else {
				/* "[a,b]" + "[c]": "[a,b" "," "c]" */
				joined[have - 1] = ',';
				memcpy(joined + have, out + 1, add);
				*json = joined;
				rc = SQLITE_OK;
			}
		}
	}
	r = rc == SQLITE_OK ? 0 : bgrun__store_fail(store, rc, "encoding argv");
	bgrun__release_stmt(stmt);
	return r;
}

/* argv as a JSON array built by SQLite. *ret_json is malloc'd. */
static int encode_argv(struct bgrun_store *store, const char *const *argv,
		       char **ret_json)
{
	char *json = NULL;
	size_t argc = bgrun__vec_len(argv), n;
	int r;

	for (size_t i = 0; i < argc; i += n) {
		n = argc - i < BGRUN__ARGV_CHUNK ? argc - i : BGRUN__ARGV_CHUNK;
		r = append_args(store, argv + i, n, &json);
		if (r < 0) {
			free(json);
			return r;
		}
	}
	if (json == NULL)
		json = strdup("[]");
	if (json == NULL)
		return -ENOMEM;
	*ret_json = json;
	return 0;
}

int bgrun__event_prepare(struct bgrun_store *store,
			 const struct bgrun_event *ev, size_t index,
			 struct bgrun_store_prepared *p)
{
	int r;

	p->ev = ev;
	if (!valid_id(ev->id))
		return bgrun__store_failf(store, -EINVAL,
					  "event %llu: invalid id",
					  (unsigned long long)index);
	if (ev->event == NULL || ev->event[0] == '\0')
		return bgrun__store_failf(store, -EINVAL,
					  "event %s: no event name", ev->id);
	if (!valid_result(ev->result))
		return bgrun__store_failf(store, -EINVAL,
					  "event %s: unknown result", ev->id);
	if (ev->core_dumped != BGRUN_NULL && ev->core_dumped != 0 &&
	    ev->core_dumped != 1)
		return bgrun__store_failf(store, -EINVAL,
					  "event %s: core_dumped is not 0 or 1",
					  ev->id);
	if (ev->options_json != NULL) {
		r = check_options(store, ev->options_json);
		if (r < 0)
			return r;
		if (r == 0)
			return bgrun__store_failf(store, -EINVAL,
						  "event %s: options_json is "
						  "not a JSON object", ev->id);
	} else if (ev->options_kv != NULL) {
		r = encode_options(store, ev, &p->options_json);
		if (r < 0)
			return r;
	}
	if (ev->argv != NULL) {
		r = encode_argv(store, ev->argv, &p->argv_json);
		if (r < 0)
			return r;
		if (ev->display == NULL &&
		    bgrun_argv_display(ev->argv, &p->display) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < BGRUN__N_COLUMNS; i++) {
		const char *s;
		char *copy = NULL;

		if (!bgrun__columns[i].text)
			continue;
		memcpy(&s, (const char *)ev + bgrun__columns[i].offset,
		       sizeof(s));
		if (s == NULL)
			continue;
		if (bgrun__utf8_sanitize(s, &copy) < 0)
			return -ENOMEM;
		if (copy == NULL)
			continue; /* valid as it is */
		/* Rare: the table of copies is made for the first one. */
		if (p->text == NULL &&
		    (p->text = calloc(BGRUN__N_COLUMNS,
				      sizeof(*p->text))) == NULL) {
			free(copy);
			return -ENOMEM;
		}
		p->text[i] = copy;
	}
	return 0;
}

/*
 * The change counter (see the schema's version 3), read and written
 * inside a write transaction: the lock makes the numbers of one
 * transaction follow those of the one before, in commit order.
 */
static int seq_load(struct bgrun_store *store, int64_t *ret_seq)
{
	sqlite3_stmt *stmt;
	int r, rc;

	r = bgrun__store_stmt(store, BGRUN__STMT_SEQ_GET, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		*ret_seq = sqlite3_column_int64(stmt, 0);
	else if (rc == SQLITE_DONE)
		r = bgrun__store_failf(store, -EBADMSG,
				       "%s: the change counter is missing",
				       store->path);
	else
		r = bgrun__store_fail(store, rc, "reading the change counter");
	(void)sqlite3_reset(stmt);
	return r;
}

static int seq_save(struct bgrun_store *store, int64_t seq)
{
	sqlite3_stmt *stmt;
	int r, rc;

	r = bgrun__store_stmt(store, BGRUN__STMT_SEQ_SET, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_int64(stmt, 1, seq);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE)
		r = bgrun__store_fail(store, rc, "writing the change counter");
	bgrun__release_stmt(stmt);
	return r;
}

/*
 * One prepared event, its change numbered seq, through the statement id
 * (the insert or the upsert): 1 if a row changed, else 0.
 */
static int write_row(struct bgrun_store *store, enum bgrun__stmt_id id,
		     const struct bgrun_store_prepared *p, int64_t seq)
{
	const struct bgrun_event *ev = p->ev;
	sqlite3_stmt *stmt;
	int r, rc;

	r = bgrun__store_stmt(store, id, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_bind_text(stmt, 1, ev->id, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(stmt, 2,
					bgrun__now_ns(CLOCK_REALTIME));
	if (rc == SQLITE_OK)
		rc = p->argv_json != NULL
			     ? sqlite3_bind_text(stmt, 3, p->argv_json, -1,
						 SQLITE_STATIC)
			     : sqlite3_bind_null(stmt, 3);
	if (rc == SQLITE_OK)
		rc = p->options_json != NULL
			     ? sqlite3_bind_text(stmt, 4, p->options_json, -1,
						 SQLITE_STATIC)
		     : ev->options_json != NULL
			     ? sqlite3_bind_text(stmt, 4, ev->options_json, -1,
						 SQLITE_STATIC)
			     : sqlite3_bind_null(stmt, 4);
	for (size_t i = 0; i < BGRUN__N_COLUMNS && rc == SQLITE_OK; i++) {
		const struct bgrun__column *c = &bgrun__columns[i];
		const char *base = (const char *)ev + c->offset, *s;
		int param = BGRUN__UPSERT_PLAIN + (int)i;
		int64_t v;

		if (c->text) {
			memcpy(&s, base, sizeof(s));
			if (p->text != NULL && p->text[i] != NULL)
				s = p->text[i];
			else if (s == NULL && p->display != NULL &&
				 c->offset == offsetof(struct bgrun_event,
						       display))
				s = p->display;
			rc = s != NULL ? sqlite3_bind_text(stmt, param, s, -1,
							   SQLITE_STATIC)
				       : sqlite3_bind_null(stmt, param);
		} else {
			memcpy(&v, base, sizeof(v));
			rc = v != BGRUN_NULL
				     ? sqlite3_bind_int64(stmt, param, v)
				     : sqlite3_bind_null(stmt, param);
		}
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(stmt, BGRUN__UPSERT_SEQ, seq);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		r = sqlite3_changes(store->db) > 0 ? 1 : 0;
	else
		r = bgrun__store_failf(store,
				       bgrun__sqlite_errno(store->db, rc),
				       "writing event %s: %s", ev->id,
				       sqlite3_errmsg(store->db));
	bgrun__release_stmt(stmt);
	return r;
}

/*
 * The upsert of one prepared event, its change numbered seq: 1 if a row
 * changed, else 0. A new id is inserted; only an id the store has (a
 * running row finished, a replay) takes the upsert.
 */
static int write_event(struct bgrun_store *store,
		       const struct bgrun_store_prepared *p, int64_t seq)
{
	int r = write_row(store, BGRUN__STMT_INSERT, p, seq);

	return r != 0 ? r : write_row(store, BGRUN__STMT_UPSERT, p, seq);
}

/*
 * Group commit (src/platform.h): a put of one event that has to wait for
 * the lock leaves the event's frame in its mailbox, and whoever holds the
 * lock writes it in its own transaction. So N writers at once make about
 * one transaction per holder, not N one after the other: each waits for
 * one commit, not for N.
 */
static size_t make_mail(void *ctx, void *buf, size_t size)
{
	struct bgrun_wire_buf b = { 0 };
	size_t len = 0;

	if (bgrun_wire_put_event(&b, 0, ctx) > 0 && b.len <= size) {
		memcpy(buf, b.data, b.len);
		len = b.len;
	}
	bgrun_wire_buf_free(&b);
	return len;
}

/*
 * One taken event, written with the number after *seq: 1 or 0 as
 * write_event, -1 to give it back (not a frame of an event, or refused:
 * its writer then meets the error itself), or -2 when the failure ended
 * the transaction.
 */
static int32_t write_taken(struct bgrun_store *store,
			   const struct bgrun__filelock_taken *t, int64_t *seq)
{
	struct bgrun_store_prepared prep = { 0 };
	struct bgrun_wire_msg msg = { 0 };
	size_t size;
	int32_t result = -1;
	int r;

	if (bgrun_wire_frame_size(t->data, t->len, BGRUN_WIRE_MAX_FRAME,
				  &size) == 1 &&
	    size == t->len &&
	    bgrun_wire_decode(t->data, t->len, &msg, NULL) == 0 &&
	    msg.type == BGRUN_WIRE_EVENT &&
	    bgrun__event_prepare(store, &msg.ev, 0, &prep) >= 0) {
		r = write_event(store, &prep, *seq + 1);
		if (r >= 0) {
			*seq += r;
			result = r;
		} else if (sqlite3_get_autocommit(store->db)) {
			result = -2;
		}
	}
	bgrun__prepared_release(&prep);
	bgrun_wire_msg_release(&msg);
	return result;
}

/*
 * The events taken from the writers waiting behind us, after our own:
 * -1 if one of them ended the transaction (ours with it). Their failures
 * are theirs to report: the store's message stays ours.
 */
static int write_others(struct bgrun_store *store, int64_t *seq)
{
	char saved[sizeof(store->errmsg)];
	int r = 0;

	store->n_taken = bgrun__filelock_take(&store->lock, store->taken,
					      BGRUN__STORE_GROUP_MAX);
	if (store->n_taken == 0)
		return 0;
	memcpy(saved, store->errmsg, sizeof(saved));
	for (size_t i = 0; i < store->n_taken; i++) {
		store->taken_result[i] =
			r < 0 ? -1 : write_taken(store, &store->taken[i], seq);
		if (store->taken_result[i] == -2)
			r = -1;
	}
	memcpy(store->errmsg, saved, sizeof(saved));
	return r;
}

int bgrun__store_put_prepared(struct bgrun_store *store,
			      const struct bgrun_store_prepared *const *preps,
			      size_t n)
{
	struct bgrun__filelock_mail mail = { .make = make_mail };
	int64_t seq = 0, seq0;
	int r, changed = 0;

	store->errmsg[0] = '\0';
	/* One event only: a batch is all or none, a mail alone of its kind. */
	if (n == 1)
		mail.ctx = (void *)preps[0]->ev;
	r = bgrun__store_begin_mail(store, n == 1 ? &mail : NULL);
	if (r == 1)
		return mail.result;
	if (r < 0)
		return r;
	r = seq_load(store, &seq);
	seq0 = seq;
	for (size_t i = 0; i < n && r >= 0; i++) {
		/*
		 * A write that changes nothing takes no number: the row keeps
		 * its own, so the counter is always the number of the last
		 * change, and a reader that reached it has read everything.
		 * (Were a number used up by a batch's last write, a spool
		 * replaying events the store already had, the counter would
		 * stay above every row's, and a forwarder's cursor, always some
		 * row's number, could never reach it.)
		 */
		r = write_event(store, preps[i], seq + 1);
		if (r > 0) {
			seq++;
			changed++;
		}
	}
	if (r >= 0 && write_others(store, &seq) < 0)
		r = bgrun__store_failf(store, -EIO,
				       "%s: the transaction failed: %s",
				       store->path, sqlite3_errmsg(store->db));
	if (r >= 0 && seq != seq0)
		r = seq_save(store, seq);
	return bgrun__store_end(store, r < 0 ? r : changed);
}

int bgrun_store_prepare(struct bgrun_store *store,
			const struct bgrun_event *ev,
			struct bgrun_store_prepared **ret_prepared)
{
	struct bgrun_store_prepared *p;
	int r;

	if (store == NULL || ev == NULL || ret_prepared == NULL)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	r = bgrun__event_prepare(store, ev, 0, p);
	if (r < 0) {
		bgrun_store_prepared_free(p);
		return r;
	}
	*ret_prepared = p;
	return 0;
}

void bgrun_store_prepared_free(struct bgrun_store_prepared *p)
{
	if (p == NULL)
		return;
	bgrun__prepared_release(p);
	free(p);
}

int bgrun_store_put_prepared(struct bgrun_store *store,
			     struct bgrun_store_prepared *const *preps,
			     size_t n)
{
	int r;

	if (store == NULL || (preps == NULL && n > 0))
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	if (store->readonly)
		return bgrun__store_failf(store, -EROFS,
					  "%s: the store is open read-only",
					  store->path);
	return bgrun__store_put_prepared(
		store, (const struct bgrun_store_prepared *const *)preps, n);
}

int bgrun_store_put_batch(struct bgrun_store *store,
			  const struct bgrun_event *evs, size_t n)
{
	struct bgrun_store_prepared *preps = NULL, **ptrs;
	int r = 0;

	if (store == NULL || (evs == NULL && n > 0) || n > INT32_MAX)
		return -EINVAL;
	r = bgrun__store_enter(store);
	if (r < 0)
		return r;
	if (store->readonly)
		return bgrun__store_failf(store, -EROFS,
					  "%s: the store is open read-only",
					  store->path);
	if (n == 0)
		return 0;
	preps = calloc(n, sizeof(*preps) + sizeof(*ptrs));
	if (preps == NULL)
		return -ENOMEM;
	ptrs = (struct bgrun_store_prepared **)(preps + n);
	for (size_t i = 0; i < n && r >= 0; i++) {
		ptrs[i] = &preps[i];
		r = bgrun__event_prepare(store, &evs[i], i, &preps[i]);
	}
	if (r >= 0)
		r = bgrun__store_put_prepared(
			store, (const struct bgrun_store_prepared *const *)ptrs, n);
	for (size_t i = 0; i < n; i++)
		bgrun__prepared_release(&preps[i]);
	free(preps);
	if (r == -ENOMEM && store->errmsg[0] == '\0')
		(void)bgrun__store_failf(store, r, "out of memory");
	return r;
}

int bgrun_store_put(struct bgrun_store *store, const struct bgrun_event *ev)
{
	if (ev == NULL)
		return -EINVAL;
	return bgrun_store_put_batch(store, ev, 1);
}

int bgrun__store_mark_lost_locked(struct bgrun_store *store,
				  int64_t *ret_count)
{
	char (*ids)[BGRUN_EVENT_ID_MAX + 1] = NULL, (*grown)[BGRUN_EVENT_ID_MAX + 1];
	size_t n = 0, cap = 0;
	int64_t count = 0, seq = 0;
	sqlite3_stmt *stmt;
	int r, rc;

	/* Judge first, then update: no writes under a running SELECT. */
	r = bgrun__store_stmt(store, BGRUN__STMT_RUNNING, &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *id = bgrun__column_text(stmt, 0);

		if (id == NULL || strlen(id) > BGRUN_EVENT_ID_MAX ||
		    !bgrun__row_lost(bgrun__column_text(stmt, 1),
				     bgrun__column_int(stmt, 2),
				     bgrun__column_int(stmt, 3),
				     bgrun__column_int(stmt, 4),
				     bgrun__column_int(stmt, 5)))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(ids, cap * sizeof(*ids));
			if (grown == NULL) {
				rc = SQLITE_NOMEM;
				break;
			}
			ids = grown;
		}
		(void)strcpy(ids[n++], id);
	}
	r = rc == SQLITE_DONE ? 0
			      : bgrun__store_fail(store, rc, "finding lost rows");
	(void)sqlite3_reset(stmt);
	if (r < 0)
		goto cleanup;
	if (n == 0)
		goto done;
	r = seq_load(store, &seq);
	if (r >= 0)
		r = bgrun__store_stmt(store, BGRUN__STMT_MARK_LOST, &stmt);
	for (size_t i = 0; i < n && r >= 0; i++) {
		rc = sqlite3_bind_text(stmt, 1, ids[i], -1, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(stmt, 2, seq + 1);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE) {
			r = bgrun__store_fail(store, rc, "marking lost rows");
		} else if (sqlite3_changes(store->db) > 0) {
			/* As for writes: a number only for a change. */
			seq++;
			count++;
		}
		bgrun__release_stmt(stmt);
	}
	if (r >= 0 && count > 0)
		r = seq_save(store, seq);
done:
	if (r >= 0 && ret_count != NULL)
		*ret_count = count;
cleanup:
	free(ids);
	return r;
}

int bgrun_store_mark_lost(struct bgrun_store *store, int64_t *ret_count)
{
	int64_t count = 0;
	int r;

	if (store == NULL)
		return -EINVAL;
	r = bgrun__store_enter_write(store);
	if (r < 0)
		return r;
	r = bgrun__store_mark_lost_locked(store, &count);
	r = bgrun__store_end(store, r);
	if (r >= 0 && ret_count != NULL)
		*ret_count = count;
	return r < 0 ? r : 0;
}
