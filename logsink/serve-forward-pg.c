/* SPDX-License-Identifier: MIT */
/* serve-forward-pg.c: the forwarder's connections to PostgreSQL, and a batch sent on one in one transaction. */

#include "serve-forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lock wait that fails, with several connections (see connect_one). */
#define LOCK_TIMEOUT "10s"

/* "user@host:port/dbname" of conninfo, as far as it says. */
void lsink_fwd_describe(const char *conninfo, char *out, size_t size)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	const char *host = NULL, *port = NULL, *db = NULL, *user = NULL;

	for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
		if (o->val == NULL || o->val[0] == '\0')
			continue;
		if (strcmp(o->keyword, "host") == 0)
			host = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			port = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			db = o->val;
		else if (strcmp(o->keyword, "user") == 0)
			user = o->val;
		else if (strcmp(o->keyword, "service") == 0 && host == NULL)
			host = o->val;
	}
	(void)snprintf(out, size, "postgresql://%s%s%s%s%s/%s",
		       user ? user : "", user ? "@" : "",
		       host ? host : "(default)", port ? ":" : "",
		       port ? port : "", db ? db : "");
	PQconninfoFree(opts);
}

/* Ends every connection (a batch in flight is rolled back). */
void lsink_fwd_disconnect(struct lsink_forward *f)
{
	PGcancel *cancel[LSINK_FORWARD_CONNS_MAX];

	(void)pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n_conns; i++) {
		cancel[i] = f->conns[i].cancel;
		f->conns[i].cancel = NULL;
	}
	(void)pthread_mutex_unlock(&f->lock);
	for (size_t i = 0; i < f->n_conns; i++) {
		PQfreeCancel(cancel[i]);
		PQfinish(f->conns[i].pg);
		f->conns[i].pg = NULL;
	}
	f->connected = false;
	f->made_lo = 1;
	f->made_hi = 0;
	f->n_flight = 0;
	f->pending = false;
}

/* Makes connection c: connected, schema checked. 0, or -1 said. */
static int connect_one(struct lsink_forward *f, struct fconn *c)
{
	char err[512];

	c->pg = lsink_pg_connect(f->o.conninfo);
	if (c->pg == NULL || PQstatus(c->pg) != CONNECTION_OK) {
		lsink_pg_error(c->pg, NULL, err, sizeof(err));
		lsink_fwd_problem(f, "cannot connect",
				  c->pg != NULL ? err : "out of memory");
		return -1;
	}
	if (lsink_pg_setup(c->pg, err, sizeof(err)) < 0) {
		lsink_fwd_problem(f, "the fleet schema", err);
		return -1;
	}
	if (lsink_pg_exec(c->pg, "CREATE TEMP TABLE IF NOT EXISTS fleet_batch "
				 "(LIKE fleet_events INCLUDING DEFAULTS) "
				 "ON COMMIT DELETE ROWS",
			  err, sizeof(err)) < 0) {
		lsink_fwd_problem(f, "a temporary table", err);
		return -1;
	}
	/*
	 * With several connections a younger batch's transaction stays open
	 * until the forwarder commits it, after the older ones: if someone
	 * else's lock request (a partition made by another daemon, an
	 * administrator's DDL) waits for it and an older batch of ours waits
	 * behind that request, the server sees no cycle (it goes through
	 * the forwarder), and nothing would move. A lock wait of ours that
	 * long fails instead: everything in flight rolls back, the other
	 * gets its lock, and the batches are sent again.
	 */
	if (f->n_conns > 1 &&
	    lsink_pg_exec(c->pg, "SET lock_timeout = '" LOCK_TIMEOUT "'", err,
			  sizeof(err)) < 0) {
		lsink_fwd_problem(f, "setting lock_timeout", err);
		return -1;
	}
	free(c->safe_sql);
	free(c->safe_open_sql);
	c->safe_sql = NULL;
	c->safe_open_sql = lsink_fwd_safe_sql(f, c->pg);
	if (c->safe_open_sql != NULL) {
		size_t len = strlen(c->safe_open_sql);

		c->safe_sql = c->safe_open_sql;
		c->safe_open_sql = strdup(c->safe_sql);
		if (!lsink_fwd_append(&c->safe_sql, &len, "; COMMIT")) {
			free(c->safe_sql);
			c->safe_sql = NULL;
		}
	}
	if (c->safe_sql == NULL || c->safe_open_sql == NULL) {
		lsink_fwd_problem(f, "preparing", "out of memory");
		return -1;
	}
	(void)pthread_mutex_lock(&f->lock);
	c->cancel = PQgetCancel(c->pg);
	(void)pthread_mutex_unlock(&f->lock);
	return 0;
}

/* Connects all, reads the cursor. 0, or -1 said. */
int lsink_fwd_connect(struct lsink_forward *f)
{
	PGconn *pg;
	int r;

	for (size_t i = 0; i < f->n_conns; i++)
		if (connect_one(f, &f->conns[i]) < 0)
			goto fail;
	/*
	 * The cursor belongs to the server and database actually reached,
	 * whatever string named them.
	 */
	pg = f->conns[0].pg;
	(void)snprintf(f->target, sizeof(f->target), "postgresql://%s@%s:%s/%s",
		       PQuser(pg), PQhost(pg), PQport(pg), PQdb(pg));
	r = bgrun_store_cursor_get(f->store, f->target, &f->cursor);
	if (r < 0) {
		lsink_fwd_problem(f, "reading the cursor", bgrun_store_errmsg(f->store));
		goto fail;
	}
	f->connected = true;
	return 0;
fail:
	lsink_fwd_disconnect(f);
	return -1;
}

/*
 * ONE STRING A BATCH. A batch's statements go as one query string,
 * "BEGIN; COPY ... FROM STDIN; [INSERT ...;] COMMIT": the server runs
 * them one after the other, the COPY taking the rows sent after it, and
 * the COMMIT follows the COPY (or the INSERT) at once, without waiting
 * for the forwarder to see the COPY's result and send it. So a batch
 * costs two waits for the server (the COPY's start, and the end of it
 * all), and nothing of the server's work waits for the forwarder. An
 * error ends the string there (the rest is not run) and leaves the
 * transaction failed: the direct COPY's unique violation is then rolled
 * back and the batch sent the safe way.
 */

/* BEGIN and the COPY of b that sql says, the rest to come. 0, or -1 with err. */
static int copy_batch(PGconn *pg, const char *sql, const struct fbatch *b,
		      char *err, size_t size)
{
	/* PQexec stops at the COPY and gives its result: the rows are wanted. */
	PGresult *res = PQexec(pg, sql);

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		lsink_pg_error(pg, res, err, size);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	if (PQputCopyData(pg, b->buf, (int)b->len) != 1 ||
	    PQputCopyEnd(pg, NULL) != 1) {
		lsink_pg_error(pg, NULL, err, size);
		return -1;
	}
	return 0;
}

/*
 * The results of a batch's string after the COPY's start: want commands
 * done (COPY, [INSERT,] COMMIT). 0, or -1 with err, and *ret_conflict set
 * when the COPY failed because a row was there already (a unique
 * violation).
 */
static int batch_results(PGconn *pg, int want, bool *ret_conflict, char *err,
			 size_t size)
{
	const char *state;
	PGresult *res;
	int done = 0, r = 0;

	*ret_conflict = false;
	/* To the end: the connection takes nothing else before. */
	while ((res = PQgetResult(pg)) != NULL) {
		if (PQresultStatus(res) == PGRES_COMMAND_OK) {
			done++;
		} else if (r == 0) {
			lsink_pg_error(pg, res, err, size);
			state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
			*ret_conflict = done == 0 && state != NULL &&
					strcmp(state, "23505") == 0;
			r = -1;
		}
		PQclear(res);
	}
	if (r == 0 && done != want) {
		lsink_pg_error(pg, NULL, err, size);
		r = -1;
	}
	return r;
}

/*
 * DIRECT COPY. Most batches hold only rows the table has not seen, and a
 * COPY straight into fleet_events costs the server about half of the COPY
 * into the temporary table and the INSERT ... ON CONFLICT from there
 * (measured: 3.4 against 6.9 us a row of its CPU, before the secondary
 * indexes). So a batch goes that way first: if no row was there, the
 * table holds what the INSERT would have made (the host is resolved here
 * as it does, forwarded_at defaults to clock_timestamp()); if one was (a
 * row sent again after a failure, a running row that finished, a row
 * marked lost), the COPY fails with a unique violation, the transaction
 * is rolled back, and the batch goes again the safe way. Exactly once
 * holds either way: a committed batch is one or the other, whole. After a
 * conflict, the next batches go the safe way (1, 2, 4 ... 64 of them,
 * halved again by each direct success), so that a stream of changed rows
 * does not pay for two tries each time.
 */

/* Whether b has rows of months not known to have partitions. */
bool lsink_fwd_new_months(const struct lsink_forward *f, const struct fbatch *b)
{
	return lsink_pg_month(b->lo_ns) < f->made_lo ||
	       lsink_pg_month(b->hi_ns) > f->made_hi;
}

/*
 * Starts sending b on c in one transaction: its partitions, then its
 * string and its rows; end_batch waits for the rest. 0, or -1 said.
 */
int lsink_fwd_start_batch(struct lsink_forward *f, struct fconn *c,
		       struct fbatch *b)
{
	int64_t lo = lsink_pg_month(b->lo_ns), hi = lsink_pg_month(b->hi_ns);
	char err[512];

	if (lsink_fwd_new_months(f, b)) {
		if (lsink_pg_partitions(c->pg, b->lo_ns, b->hi_ns, err,
					sizeof(err)) < 0) {
			lsink_fwd_problem(f, "making partitions", err);
			return -1;
		}
		if (f->made_lo > f->made_hi || hi + 1 < f->made_lo ||
		    lo > f->made_hi + 1) {
			f->made_lo = lo;
			f->made_hi = hi;
		} else {
			f->made_lo = lo < f->made_lo ? lo : f->made_lo;
			f->made_hi = hi > f->made_hi ? hi : f->made_hi;
		}
	}
	b->direct = f->direct_skip == 0;
	if (!b->direct)
		f->direct_skip--;
	/* Behind another: committed once that one is (ORDER). */
	b->open = f->n_flight > 0;
	if (copy_batch(c->pg,
		       b->direct ? b->open ? f->direct_open_sql : f->direct_sql
		       : b->open ? c->safe_open_sql : c->safe_sql,
		       b, err, sizeof(err)) < 0) {
		lsink_fwd_problem(f, "sending events", err);
		return -1;
	}
	b->conn = c;
	return 0;
}

/*
 * Waits for the end of what start_batch sent: committed, or, the direct
 * COPY having met a row already there, rolled back and the batch sent
 * again the safe way. 0, or -1 said.
 */
int lsink_fwd_end_batch(struct lsink_forward *f, struct fbatch *b)
{
	PGconn *pg = b->conn->pg;
	const char *safe_sql = b->conn->safe_sql;
	char err[512];
	bool conflict;

	b->conn = NULL;
	if (batch_results(pg, (b->direct ? 1 : 2) + !b->open, &conflict, err,
			  sizeof(err)) == 0) {
		/* The older ones committed: now this one (ORDER). */
		if (b->open && lsink_pg_exec(pg, "COMMIT", err, sizeof(err)) < 0)
			goto fail;
		if (b->direct) {
			f->direct_wait /= 2;
			f->n_direct++;
		}
		return 0;
	}
	if (!b->direct || !conflict ||
	    lsink_pg_exec(pg, "ROLLBACK", err, sizeof(err)) < 0)
		goto fail;
	f->direct_wait = f->direct_wait == 0 ? 1
			 : f->direct_wait >= 32 ? 64 : 2 * f->direct_wait;
	f->direct_skip = f->direct_wait;
	b->direct = false;
	if (copy_batch(pg, safe_sql, b, err, sizeof(err)) < 0 ||
	    batch_results(pg, 3, &conflict, err, sizeof(err)) < 0)
		goto fail;
	return 0;
fail:
	lsink_fwd_problem(f, "sending events", err);
	return -1;
}
