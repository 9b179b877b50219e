/* SPDX-License-Identifier: MIT */
/* serve-forward.c: the daemon's forwarder thread: ships the store's changes to PostgreSQL, in order, once each. */

#include "serve.h"
#include "pg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <time.h>

/*
 * FORWARDING
 *
 * The forwarder has its own connection to the store and follows it by
 * change number (bgrun_store_changes): whatever reached the store, from
 * this daemon's writer, an embedded writer or the spool, and every later
 * change of a row (a running row that finished, a row marked lost) comes
 * after the cursor. A batch is sent in one PostgreSQL transaction: COPY
 * (typed columns, text format) straight into the fleet table (DIRECT
 * COPY below), or, when a row is there already, COPY into a temporary
 * table and one INSERT ... ON CONFLICT into the fleet table, whose rule
 * is the local store's (a running row takes any new state, a lost one a
 * final state, a final one nothing). Only after that COMMIT is the
 * cursor moved, in the store. A crash between the two sends the batch
 * again, which changes nothing at the table: delivery is at least once,
 * the table holds each event once.
 *
 * The writer never waits for any of it: it only signals that it
 * committed. Every failure (no server, a dropped connection, an error of
 * the server) ends the connection; the forwarder says what went wrong
 * once, waits (doubling, up to BACKOFF_MAX_MS) and starts again from the
 * cursor with a new connection, schema check included.
 */

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* How often the store is looked at without a signal (embedded writers). */
#define POLL_MS 1000
/* The forwarder thread's nice value. */
#define FORWARD_NICE 10

struct lsink_forward {
	struct lsink_forward_opts o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	bool stop, kicked;
	bool busy;                 /* sending a batch */
	PGcancel *cancel;          /* while connected, for stopping */
	/* The thread's own: */
	struct bgrun_store *store;
	PGconn *pg;
	char *copy_sql, *direct_sql, *insert_sql;
	char shown[256];           /* the server, for messages */
	char target[512];          /* the cursor's name */
	char node[256];            /* this machine's name */
	int64_t cursor;
	int64_t made_lo, made_hi;  /* months known to have partitions */
	char *send_sql;            /* the INSERT and the COMMIT, for pg */
	/*
	 * Two batches: the one being sent and the next, read from the store
	 * meanwhile (see PIPELINE).
	 */
	struct batch {
		char *buf;         /* COPY text */
		size_t len, cap, n;
		int64_t seq, lo_ns, hi_ns;
		bool failed;       /* appending ran out of memory */
		const char *forced, *node; /* the hosts, as in send_sql */
		bool direct;       /* sent by COPY into fleet_events */
	} batches[2];
	int direct_skip;           /* batches to send the safe way first */
	int direct_wait;           /* the next skip after a conflict */
	uint64_t n_direct;
	char said[512];            /* the problem last logged */
	int backoff_ms;
	uint64_t n_sent, n_batches;
};

static const char *const column_names[] = {
#define COLUMN_NAME(kind, n, type) LSINK_PG_NAME(kind, n, type),
	LSINK_PG_COLUMNS(COLUMN_NAME)
#undef COLUMN_NAME
};
#define N_PG_COLUMNS (sizeof(column_names) / sizeof(column_names[0]))

/*
 * "id, a, b ..." (without id when first is NULL), each name after prefix,
 * host as host_expr when given.
 */
static bool append_list(char **sql, size_t *len, const char *first,
			const char *prefix, const char *host_expr)
{
	char *grown;
	size_t room;

	for (size_t i = 0; i <= N_PG_COLUMNS; i++) {
		const char *name = i == 0 ? "id" : column_names[i - 1];
		bool is_host = strcmp(name, "\"host\"") == 0;
		char piece[256];

		if (first == NULL && i == 0)
			continue; /* lists without the key */
		if (is_host && host_expr != NULL)
			(void)snprintf(piece, sizeof(piece), "%s", host_expr);
		else
			(void)snprintf(piece, sizeof(piece), "%s%s", prefix,
				       name);
		room = *len + strlen(piece) + 3;
		grown = realloc(*sql, room);
		if (grown == NULL)
			return false;
		*sql = grown;
		*len += (size_t)sprintf(*sql + *len, "%s%s",
					i == (first == NULL ? 1u : 0u) ? ""
								       : ", ",
					piece);
	}
	return true;
}

static bool append_str(char **sql, size_t *len, const char *s)
{
	char *grown = realloc(*sql, *len + strlen(s) + 1);

	if (grown == NULL)
		return false;
	*sql = grown;
	*len += (size_t)sprintf(*sql + *len, "%s", s);
	return true;
}

/*
 * The statements of a batch, made from the column list: the COPY into
 * the temporary table (after the BEGIN), and the INSERT from there, where
 * $1 is this machine's name (for events without a host) and $2 the forced
 * host or NULL (made literals for each connection: send_sql).
 */
static char *make_copy_sql(const char *table)
{
	char *sql = NULL;
	size_t len = 0;

	if (append_str(&sql, &len, "BEGIN; COPY ") &&
	    append_str(&sql, &len, table) && append_str(&sql, &len, " (") &&
	    append_list(&sql, &len, "", "", NULL) &&
	    append_str(&sql, &len, ") FROM STDIN"))
		return sql;
	free(sql);
	return NULL;
}

static char *make_insert_sql(void)
{
	char *sql = NULL;
	size_t len = 0;
	bool ok;

	ok = append_str(&sql, &len, "INSERT INTO fleet_events (") &&
	     append_list(&sql, &len, "", "", NULL) &&
	     append_str(&sql, &len, ", forwarded_at) SELECT ") &&
	     append_list(&sql, &len, "", "b.",
			 "coalesce($2::text, b.host, $1::text)") &&
	     append_str(&sql, &len,
			", clock_timestamp() FROM fleet_batch b "
			"ON CONFLICT (id, recorded_ns) DO UPDATE SET (") &&
	     append_list(&sql, &len, NULL, "", NULL) &&
	     append_str(&sql, &len, ") = ROW(") &&
	     append_list(&sql, &len, NULL, "excluded.", NULL) &&
	     append_str(&sql, &len,
			"), forwarded_at = excluded.forwarded_at "
			"WHERE fleet_events.result = 'running' OR "
			"(fleet_events.result = 'lost' AND "
			"excluded.result NOT IN ('running', 'lost'))");
	if (!ok) {
		free(sql);
		return NULL;
	}
	return sql;
}

/* "user@host:port/dbname" of conninfo, as far as it says. */
static void describe(const char *conninfo, char *out, size_t size)
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

/* Says what is wrong, once until it changes or forwarding works again. */
static void problem(struct lsink_forward *f, const char *what,
		    const char *why)
{
	char line[sizeof(f->said)];

	(void)snprintf(line, sizeof(line), "%s: %s", what, why);
	if (strcmp(line, f->said) == 0)
		return;
	memcpy(f->said, line, sizeof(line));
	lsink_msg("forwarding to %s: %s (events are kept here; retrying)",
		  lsink_printable(f->shown), lsink_printable(line));
}

static void disconnect(struct lsink_forward *f)
{
	PGcancel *cancel;

	(void)pthread_mutex_lock(&f->lock);
	cancel = f->cancel;
	f->cancel = NULL;
	(void)pthread_mutex_unlock(&f->lock);
	PQfreeCancel(cancel);
	PQfinish(f->pg);
	f->pg = NULL;
	f->made_lo = 1;
	f->made_hi = 0;
}

/*
 * The INSERT and the COMMIT of a batch as one string, $1 and $2 made
 * literals of this connection (its encoding, its quoting rules): sent at
 * once, so that the batch takes one round trip after the COPY, during
 * which the next one is read from the store.
 */
static char *make_send_sql(struct lsink_forward *f)
{
	char *node = PQescapeLiteral(f->pg, f->node, strlen(f->node));
	char *host = f->o.host != NULL
			     ? PQescapeLiteral(f->pg, f->o.host, strlen(f->o.host))
			     : NULL;
	char *sql = NULL;
	size_t len = 0;
	bool ok = node != NULL && (f->o.host == NULL || host != NULL);

	for (const char *p = f->insert_sql; ok && *p != '\0';) {
		const char *d = strchr(p, '$');
		size_t span = d != NULL ? (size_t)(d - p) : strlen(p);
		char *grown = realloc(sql, len + span + 1);

		if (grown == NULL) {
			ok = false;
			break;
		}
		sql = grown;
		memcpy(sql + len, p, span);
		len += span;
		sql[len] = '\0';
		p += span;
		if (d == NULL)
			break;
		/* The only $ in the statement are $1 and $2. */
		ok = append_str(&sql, &len, d[1] == '1' ? node
				: host != NULL ? host : "NULL");
		p = d + 2;
	}
	ok = ok && append_str(&sql, &len, "; COMMIT");
	PQfreemem(node);
	PQfreemem(host);
	if (!ok) {
		free(sql);
		return NULL;
	}
	return sql;
}

/* Connects, checks the schema, reads the cursor. 0, or -1 said. */
static int connect_pg(struct lsink_forward *f)
{
	char err[512];
	int r;

	f->pg = lsink_pg_connect(f->o.conninfo);
	if (f->pg == NULL || PQstatus(f->pg) != CONNECTION_OK) {
		lsink_pg_error(f->pg, NULL, err, sizeof(err));
		problem(f, "cannot connect", f->pg != NULL ? err : "out of memory");
		goto fail;
	}
	if (lsink_pg_setup(f->pg, err, sizeof(err)) < 0) {
		problem(f, "the fleet schema", err);
		goto fail;
	}
	if (lsink_pg_exec(f->pg, "CREATE TEMP TABLE IF NOT EXISTS fleet_batch "
				 "(LIKE fleet_events INCLUDING DEFAULTS) "
				 "ON COMMIT DELETE ROWS",
			  err, sizeof(err)) < 0) {
		problem(f, "a temporary table", err);
		goto fail;
	}
	/*
	 * The cursor belongs to the server and database actually reached,
	 * whatever string named them.
	 */
	(void)snprintf(f->target, sizeof(f->target), "postgresql://%s@%s:%s/%s",
		       PQuser(f->pg), PQhost(f->pg), PQport(f->pg),
		       PQdb(f->pg));
	r = bgrun_store_cursor_get(f->store, f->target, &f->cursor);
	if (r < 0) {
		problem(f, "reading the cursor", bgrun_store_errmsg(f->store));
		goto fail;
	}
	free(f->send_sql);
	f->send_sql = make_send_sql(f);
	if (f->send_sql == NULL) {
		problem(f, "preparing", "out of memory");
		goto fail;
	}
	(void)pthread_mutex_lock(&f->lock);
	f->cancel = PQgetCancel(f->pg);
	(void)pthread_mutex_unlock(&f->lock);
	return 0;
fail:
	disconnect(f);
	return -1;
}

/* Room for need more bytes in the batch. */
static bool reserve(struct batch *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 1 << 16;
	char *grown;

	if (b->len + need <= b->cap)
		return true;
	while (cap < b->len + need)
		cap *= 2;
	grown = realloc(b->buf, cap);
	if (grown == NULL)
		return false;
	b->buf = grown;
	b->cap = cap;
	return true;
}

/* One field of COPY's text format, then the separator sep. */
static bool put_text(struct batch *b, const char *s, char sep)
{
	if (s == NULL) {
		if (!reserve(b, 3))
			return false;
		b->buf[b->len++] = '\\';
		b->buf[b->len++] = 'N';
		b->buf[b->len++] = sep;
		return true;
	}
	if (!reserve(b, 2 * strlen(s) + 1))
		return false;
	for (; *s != '\0'; s++) {
		char e = *s == '\\' ? '\\' : *s == '\t' ? 't'
			 : *s == '\n' ? 'n' : *s == '\r' ? 'r' : 0;

		if (e != 0) {
			b->buf[b->len++] = '\\';
			b->buf[b->len++] = e;
		} else {
			b->buf[b->len++] = *s;
		}
	}
	b->buf[b->len++] = sep;
	return true;
}

static bool put_int(struct batch *b, int64_t v, char sep)
{
	char num[24];

	if (v == BGRUN_NULL)
		return put_text(b, NULL, sep);
	(void)snprintf(num, sizeof(num), "%lld", (long long)v);
	return put_text(b, num, sep);
}

/*
 * A row as one line of COPY's text format, its columns in the order of
 * LSINK_PG_COLUMNS, id first.
 */
static int add_change(void *data, const struct bgrun_store_change *c)
{
	struct batch *b = data;
	const struct bgrun_event *ev = &c->ev;
	bool ok = put_text(b, ev->id, '\t');

	/* Every column is followed by a tab; the last one's becomes \n. */
	/*
	 * The host as the INSERT makes it (the forced one, else the event's,
	 * else this machine's): the direct COPY has no INSERT.
	 */
#define PUT_S(n) ok = ok && put_text(b, strcmp(#n, "host") != 0 ? ev->n \
				     : b->forced != NULL ? b->forced \
				     : ev->host != NULL ? ev->host : b->node, '\t');
#define PUT_I(n) ok = ok && put_int(b, ev->n, '\t');
#define PUT_R(n) ok = ok && put_int(b, c->n, '\t');
#define PUT_J(n) ok = ok && put_text(b, strcmp(#n, "argv") == 0 \
					 ? c->argv_json : ev->options_json, '\t');
#define PUT(kind, n, type) PUT_##kind(n)
	LSINK_PG_COLUMNS(PUT)
#undef PUT
	if (!ok) {
		b->failed = true;
		return 1;
	}
	b->buf[b->len - 1] = '\n';
	if (b->n == 0 || c->recorded_ns < b->lo_ns)
		b->lo_ns = c->recorded_ns;
	if (b->n == 0 || c->recorded_ns > b->hi_ns)
		b->hi_ns = c->recorded_ns;
	b->seq = c->seq;
	b->n++;
	return 0;
}

/*
 * Reads into b the batch after change number after. Its size, or -1
 * said.
 */
static int read_batch(struct lsink_forward *f, struct batch *b, int64_t after)
{
	int r;

	b->len = b->n = 0;
	b->failed = false;
	r = bgrun_store_changes(f->store, after, (int64_t)f->o.batch_max,
				add_change, b);
	if (b->failed || r < 0) {
		problem(f, "reading the local store",
			b->failed ? "out of memory" : bgrun_store_errmsg(f->store));
		return -1;
	}
	return (int)b->n;
}

/* BEGIN and the COPY of b that sql says. 0, or -1 with err. */
static int copy_batch(struct lsink_forward *f, const char *sql,
		      const struct batch *b, char *err, size_t size)
{
	/* "BEGIN; COPY ...": PQexec stops at the COPY, its last command. */
	PGresult *res = PQexec(f->pg, sql);

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		lsink_pg_error(f->pg, res, err, size);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	if (PQputCopyData(f->pg, b->buf, (int)b->len) != 1 ||
	    PQputCopyEnd(f->pg, NULL) != 1) {
		lsink_pg_error(f->pg, NULL, err, size);
		return -1;
	}
	return 0;
}

/*
 * The COPY's result: 0, or -1 with err and *ret_conflict set when a row
 * was there already (a unique violation).
 */
static int copy_result(struct lsink_forward *f, bool *ret_conflict, char *err,
		       size_t size)
{
	PGresult *res = PQgetResult(f->pg);
	const char *state;
	int r = 0;

	*ret_conflict = false;
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		lsink_pg_error(f->pg, res, err, size);
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		*ret_conflict = state != NULL && strcmp(state, "23505") == 0;
		r = -1;
	}
	PQclear(res);
	while ((res = PQgetResult(f->pg)) != NULL)
		PQclear(res);
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

/*
 * Starts sending b in one transaction: its partitions, BEGIN and the COPY,
 * and, the safe way, the INSERT and the COMMIT; end_batch waits for what
 * is left. 0, or -1 said.
 */
static int start_batch(struct lsink_forward *f, struct batch *b)
{
	int64_t lo = lsink_pg_month(b->lo_ns), hi = lsink_pg_month(b->hi_ns);
	char err[512];
	bool conflict;

	if (lo < f->made_lo || hi > f->made_hi) {
		if (lsink_pg_partitions(f->pg, b->lo_ns, b->hi_ns, err,
					sizeof(err)) < 0) {
			problem(f, "making partitions", err);
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
	if (copy_batch(f, b->direct ? f->direct_sql : f->copy_sql, b, err,
		       sizeof(err)) < 0)
		goto fail;
	/* Direct: the server inserts while the next batch is read. */
	if (b->direct)
		return 0;
	if (copy_result(f, &conflict, err, sizeof(err)) < 0)
		goto fail;
	if (PQsendQuery(f->pg, f->send_sql) != 1) {
		lsink_pg_error(f->pg, NULL, err, sizeof(err));
		goto fail;
	}
	return 0;
fail:
	problem(f, "sending events", err);
	return -1;
}

/*
 * Waits for what start_batch sent: the direct COPY (then COMMIT, or on a
 * conflict the batch again the safe way), or the INSERT and the COMMIT.
 * 0, or -1 said.
 */
static int end_batch(struct lsink_forward *f, struct batch *b)
{
	char err[512] = "";
	PGresult *res;
	bool conflict;
	int n = 0;

	if (b->direct) {
		if (copy_result(f, &conflict, err, sizeof(err)) == 0) {
			if (lsink_pg_exec(f->pg, "COMMIT", err, sizeof(err)) < 0)
				goto fail;
			f->direct_wait /= 2;
			f->n_direct++;
			return 0;
		}
		if (!conflict ||
		    lsink_pg_exec(f->pg, "ROLLBACK", err, sizeof(err)) < 0)
			goto fail;
		/*
		 * The conflict is dealt with: its message must not stay in
		 * err, which the loop below reads as the batch's failure
		 * (the batch, committed the safe way, would be taken as
		 * failed: the connection ended, the cursor left behind, the
		 * batch sent once more and the conflict logged as a fault).
		 */
		err[0] = '\0';
		f->direct_wait = f->direct_wait == 0 ? 1
				 : f->direct_wait >= 32 ? 64 : 2 * f->direct_wait;
		f->direct_skip = f->direct_wait;
		if (copy_batch(f, f->copy_sql, b, err, sizeof(err)) < 0 ||
		    copy_result(f, &conflict, err, sizeof(err)) < 0)
			goto fail;
		if (PQsendQuery(f->pg, f->send_sql) != 1) {
			lsink_pg_error(f->pg, NULL, err, sizeof(err));
			goto fail;
		}
	}
	/* Both must be done: an error ends the string's other commands. */
	while ((res = PQgetResult(f->pg)) != NULL) {
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
			n++;
		else if (err[0] == '\0')
			lsink_pg_error(f->pg, res, err, sizeof(err));
		PQclear(res);
	}
	if (err[0] == '\0' && n == 2)
		return 0;
	if (err[0] == '\0')
		lsink_pg_error(f->pg, NULL, err, sizeof(err));
fail:
	problem(f, "sending events", err);
	return -1;
}

/* CLOCK_MONOTONIC's time ms from now, for pthread_cond_timedwait. */
static struct timespec deadline(int ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Waits up to ms for a kick (or stop). Under lock. */
static void wait_kick(struct lsink_forward *f, int ms)
{
	struct timespec ts = deadline(ms);

	while (!f->kicked && !f->stop)
		if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) != 0)
			break;
	f->kicked = false;
}

/* After a failure: wait, longer each time. */
static void back_off(struct lsink_forward *f)
{
	(void)pthread_mutex_lock(&f->lock);
	if (!f->stop) {
		struct timespec ts = deadline(f->backoff_ms);

		/* Kicks do not cut it short: only stopping does. */
		while (!f->stop &&
		       pthread_cond_timedwait(&f->cond, &f->lock, &ts) == 0)
			;
	}
	(void)pthread_mutex_unlock(&f->lock);
	f->backoff_ms = f->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							   : f->backoff_ms * 2;
}

static bool stopping(struct lsink_forward *f)
{
	bool stop;

	(void)pthread_mutex_lock(&f->lock);
	stop = f->stop;
	(void)pthread_mutex_unlock(&f->lock);
	return stop;
}

static void set_busy(struct lsink_forward *f, bool busy)
{
	(void)pthread_mutex_lock(&f->lock);
	f->busy = busy;
	(void)pthread_mutex_unlock(&f->lock);
}

/*
 * PIPELINE: while the server inserts one batch and commits it, the next
 * is read from the store (after the one in flight, not the cursor), so
 * that the store and the server do not take turns. The next batch is
 * only a reading ahead: if the one in flight fails, it is dropped and
 * reading starts again at the cursor, which moved only after a COMMIT.
 */
static void *forward_main(void *arg)
{
	struct lsink_forward *f = arg;
	struct batch *cur = &f->batches[0], *next = &f->batches[1], *t;
	int n = 0, n_next, r;

	/*
	 * The writer's acks come first: where CPUs are short (the server on
	 * the same machine, or a busy one) the forwarder yields to it and
	 * catches up later. On Linux a nice value is per thread.
	 */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), FORWARD_NICE);

	while (!stopping(f)) {
		if (f->pg == NULL && connect_pg(f) < 0) {
			back_off(f);
			continue;
		}
		if (n == 0)
			n = read_batch(f, cur, f->cursor);
		if (n == 0) {
			(void)pthread_mutex_lock(&f->lock);
			wait_kick(f, POLL_MS);
			(void)pthread_mutex_unlock(&f->lock);
			continue;
		}
		n_next = 0;
		r = -1;
		if (n > 0) {
			set_busy(f, true);
			r = start_batch(f, cur);
			if (r == 0) {
				n_next = read_batch(f, next, cur->seq);
				r = end_batch(f, cur);
			}
			set_busy(f, false);
		}
		if (r < 0) {
			n = 0;
			disconnect(f);
			back_off(f);
			continue;
		}
		/* Committed there: now the cursor, here. */
		if (bgrun_store_cursor_set(f->store, f->target, cur->seq) < 0)
			problem(f, "saving the cursor",
				bgrun_store_errmsg(f->store));
		f->cursor = cur->seq;
		f->n_sent += cur->n;
		f->n_batches++;
		if (f->said[0] != '\0' && n_next >= 0) {
			lsink_msg("forwarding to %s: working again",
				  lsink_printable(f->shown));
			f->said[0] = '\0';
		}
		f->backoff_ms = BACKOFF_MIN_MS;
		if (n_next < 0) {
			/* The store could not be read: again from the cursor. */
			n = 0;
			disconnect(f);
			back_off(f);
			continue;
		}
		t = cur;
		cur = next;
		next = t;
		n = n_next;
	}
	disconnect(f);
	return NULL;
}

static void forward_free(struct lsink_forward *f)
{
	if (f == NULL)
		return;
	bgrun_store_close(f->store);
	free(f->copy_sql);
	free(f->direct_sql);
	free(f->insert_sql);
	free(f->send_sql);
	free(f->batches[0].buf);
	free(f->batches[1].buf);
	free(f);
}

int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size)
{
	struct lsink_forward *f = calloc(1, sizeof(*f));
	PQconninfoOption *parsed;
	pthread_condattr_t ca;
	char *perr = NULL;
	sigset_t all, old;
	struct utsname u;
	int r;

	if (f == NULL)
		return -ENOMEM;
	f->o = *o;
	f->made_lo = 1;
	f->backoff_ms = BACKOFF_MIN_MS;
	/* A string libpq cannot read is a usage error, now, not a retry loop. */
	parsed = PQconninfoParse(o->conninfo, &perr);
	if (parsed == NULL) {
		(void)snprintf(err, size, "--forward: %s",
			       perr != NULL ? strtok(perr, "\n")
					    : "out of memory");
		PQfreemem(perr);
		forward_free(f);
		return -EINVAL;
	}
	PQconninfoFree(parsed);
	describe(o->conninfo, f->shown, sizeof(f->shown));
	(void)snprintf(f->node, sizeof(f->node), "%s",
		       uname(&u) == 0 ? u.nodename : "unknown");
	for (int i = 0; i < 2; i++) {
		f->batches[i].forced = f->o.host;
		f->batches[i].node = f->node;
	}
	f->copy_sql = make_copy_sql("fleet_batch");
	f->direct_sql = make_copy_sql("fleet_events");
	f->insert_sql = make_insert_sql();
	if (f->copy_sql == NULL || f->direct_sql == NULL ||
	    f->insert_sql == NULL) {
		forward_free(f);
		return -ENOMEM;
	}
	r = bgrun_store_new(&f->store);
	if (r >= 0)
		r = bgrun_store_open(f->store, o->db, 0);
	if (r < 0) {
		(void)snprintf(err, size, "forwarding: %s",
			       f->store != NULL &&
					       bgrun_store_errmsg(f->store)[0]
				       ? bgrun_store_errmsg(f->store)
				       : bgrun_strerror(r));
		forward_free(f);
		return r;
	}
	r = pthread_mutex_init(&f->lock, NULL);
	if (r != 0) {
		forward_free(f);
		return -r;
	}
	(void)pthread_condattr_init(&ca);
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&f->cond, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0)
		goto fail_lock;
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&f->thread, NULL, forward_main, f);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		goto fail_cond;
	lsink_msg("forwarding to %s", lsink_printable(f->shown));
	*ret_forward = f;
	return 0;
fail_cond:
	(void)pthread_cond_destroy(&f->cond);
fail_lock:
	(void)pthread_mutex_destroy(&f->lock);
	forward_free(f);
	(void)snprintf(err, size, "cannot start the forwarder: %s",
		       strerror(r));
	return -r;
}

void lsink_forward_kick(struct lsink_forward *f)
{
	if (f == NULL)
		return;
	(void)pthread_mutex_lock(&f->lock);
	f->kicked = true;
	(void)pthread_cond_signal(&f->cond);
	(void)pthread_mutex_unlock(&f->lock);
}

void lsink_forward_stop(struct lsink_forward *f)
{
	char ignored[256];

	if (f == NULL)
		return;
	(void)pthread_mutex_lock(&f->lock);
	f->stop = true;
	/*
	 * A batch waiting on a slow server ends now, failed (and is sent
	 * again by the next start). Only then: a cancel request is a
	 * connection of its own, which a server that is not there makes wait.
	 */
	if (f->busy && f->cancel != NULL)
		(void)PQcancel(f->cancel, ignored, (int)sizeof(ignored));
	(void)pthread_cond_signal(&f->cond);
	(void)pthread_mutex_unlock(&f->lock);
	(void)pthread_join(f->thread, NULL);
	(void)pthread_cond_destroy(&f->cond);
	(void)pthread_mutex_destroy(&f->lock);
	lsink_msg("forwarded %llu events in %llu transactions (%llu by "
		  "direct COPY)", (unsigned long long)f->n_sent,
		  (unsigned long long)f->n_batches,
		  (unsigned long long)f->n_direct);
	forward_free(f);
}
