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
/* A lock wait that fails, with several connections (see connect_one). */
#define LOCK_TIMEOUT "10s"
/* The forwarder thread's nice value. */
#define FORWARD_NICE 10

/* One connection to the server (see SEVERAL CONNECTIONS). */
struct fconn {
	PGconn *pg;
	PGcancel *cancel;          /* under the forwarder's lock */
	/* The safe way's strings, for pg: with the COMMIT, and without. */
	char *safe_sql, *safe_open_sql;
};

struct lsink_forward {
	struct lsink_forward_opts o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	bool stop, kicked;
	bool busy;                 /* waiting for the server */
	/* The thread's own: */
	struct bgrun_store *store;
	struct fconn conns[LSINK_FORWARD_CONNS_MAX];
	size_t n_conns;            /* o.connections */
	bool connected;            /* all of conns */
	char *copy_sql, *direct_sql, *direct_open_sql, *insert_sql;
	char shown[256];           /* the server, for messages */
	char target[512];          /* the cursor's name */
	char node[256];            /* this machine's name */
	int64_t cursor;
	int64_t made_lo, made_hi;  /* months known to have partitions */
	/*
	 * The batches in flight, oldest first, and perhaps one more read
	 * from the store and not sent yet (see PIPELINE): a ring of
	 * n_conns + 1, from head.
	 */
	struct batch {
		char *buf;         /* COPY text */
		size_t len, cap, n;
		int64_t seq, lo_ns, hi_ns;
		bool failed;       /* appending ran out of memory */
		const char *forced, *node; /* the hosts, as in safe_sql */
		bool direct;       /* sent by COPY into fleet_events */
		bool open;         /* its COMMIT is to be sent (ORDER) */
		struct fconn *conn; /* in flight on it, or NULL */
		bool want_keys;    /* keys wanted (n_conns > 1) */
		uint64_t *keys;    /* its ids' hashes, n, sorted */
		size_t keys_cap;
	} batches[LSINK_FORWARD_CONNS_MAX + 1];
	size_t head, n_flight;
	bool pending;              /* the one after those in flight is read */
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
 * The statements of a batch, made from the column list: BEGIN and the
 * COPY into table, then tail (the direct COPY's COMMIT; the safe way's
 * INSERT and COMMIT are added for each connection: make_safe_sql); and
 * the INSERT from the temporary table, where $1 is this machine's name
 * (for events without a host) and $2 the forced host or NULL.
 */
static char *make_copy_sql(const char *table, const char *tail)
{
	char *sql = NULL;
	size_t len = 0;

	if (append_str(&sql, &len, "BEGIN; COPY ") &&
	    append_str(&sql, &len, table) && append_str(&sql, &len, " (") &&
	    append_list(&sql, &len, "", "", NULL) &&
	    append_str(&sql, &len, ") FROM STDIN") &&
	    append_str(&sql, &len, tail))
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

/* Ends every connection (a batch in flight is rolled back). */
static void disconnect(struct lsink_forward *f)
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

/*
 * The safe way's string: BEGIN, the COPY into the temporary table and the
 * INSERT from there ($1 and $2 made literals of this connection: its
 * encoding, its quoting rules), all sent at once (see ONE STRING A
 * BATCH); the COMMIT is added by the caller.
 */
static char *make_safe_sql(struct lsink_forward *f, PGconn *pg)
{
	char *node = PQescapeLiteral(pg, f->node, strlen(f->node));
	char *host = f->o.host != NULL
			     ? PQescapeLiteral(pg, f->o.host, strlen(f->o.host))
			     : NULL;
	char *sql = NULL;
	size_t len = 0;
	bool ok = node != NULL && (f->o.host == NULL || host != NULL) &&
		  append_str(&sql, &len, f->copy_sql) &&
		  append_str(&sql, &len, "; ");

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
	PQfreemem(node);
	PQfreemem(host);
	if (!ok) {
		free(sql);
		return NULL;
	}
	return sql;
}

/* Makes connection c: connected, schema checked. 0, or -1 said. */
static int connect_one(struct lsink_forward *f, struct fconn *c)
{
	char err[512];

	c->pg = lsink_pg_connect(f->o.conninfo);
	if (c->pg == NULL || PQstatus(c->pg) != CONNECTION_OK) {
		lsink_pg_error(c->pg, NULL, err, sizeof(err));
		problem(f, "cannot connect", c->pg != NULL ? err : "out of memory");
		return -1;
	}
	if (lsink_pg_setup(c->pg, err, sizeof(err)) < 0) {
		problem(f, "the fleet schema", err);
		return -1;
	}
	if (lsink_pg_exec(c->pg, "CREATE TEMP TABLE IF NOT EXISTS fleet_batch "
				 "(LIKE fleet_events INCLUDING DEFAULTS) "
				 "ON COMMIT DELETE ROWS",
			  err, sizeof(err)) < 0) {
		problem(f, "a temporary table", err);
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
		problem(f, "setting lock_timeout", err);
		return -1;
	}
	free(c->safe_sql);
	free(c->safe_open_sql);
	c->safe_sql = NULL;
	c->safe_open_sql = make_safe_sql(f, c->pg);
	if (c->safe_open_sql != NULL) {
		size_t len = strlen(c->safe_open_sql);

		c->safe_sql = c->safe_open_sql;
		c->safe_open_sql = strdup(c->safe_sql);
		if (!append_str(&c->safe_sql, &len, "; COMMIT")) {
			free(c->safe_sql);
			c->safe_sql = NULL;
		}
	}
	if (c->safe_sql == NULL || c->safe_open_sql == NULL) {
		problem(f, "preparing", "out of memory");
		return -1;
	}
	(void)pthread_mutex_lock(&f->lock);
	c->cancel = PQgetCancel(c->pg);
	(void)pthread_mutex_unlock(&f->lock);
	return 0;
}

/* Connects all, reads the cursor. 0, or -1 said. */
static int connect_pg(struct lsink_forward *f)
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
		problem(f, "reading the cursor", bgrun_store_errmsg(f->store));
		goto fail;
	}
	f->connected = true;
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

/* FNV-1a of an id: the key of its row in shares_rows. */
static uint64_t id_key(const char *id)
{
	uint64_t h = 14695981039346656037ull;

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211ull;
	return h;
}

static bool add_key(struct batch *b, const char *id)
{
	uint64_t *grown;

	if (b->n == b->keys_cap) {
		grown = realloc(b->keys, (b->keys_cap ? 2 * b->keys_cap : 1024) *
						 sizeof(*grown));
		if (grown == NULL)
			return false;
		b->keys = grown;
		b->keys_cap = b->keys_cap ? 2 * b->keys_cap : 1024;
	}
	b->keys[b->n] = id_key(id);
	return true;
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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
	if (b->want_keys && !add_key(b, ev->id)) {
		b->failed = true;
		return 1;
	}
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
	if (b->want_keys && b->n > 1)
		qsort(b->keys, b->n, sizeof(*b->keys), cmp_key);
	return (int)b->n;
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
static int copy_batch(PGconn *pg, const char *sql, const struct batch *b,
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
static bool new_months(const struct lsink_forward *f, const struct batch *b)
{
	return lsink_pg_month(b->lo_ns) < f->made_lo ||
	       lsink_pg_month(b->hi_ns) > f->made_hi;
}

/*
 * Starts sending b on c in one transaction: its partitions, then its
 * string and its rows; end_batch waits for the rest. 0, or -1 said.
 */
static int start_batch(struct lsink_forward *f, struct fconn *c,
		       struct batch *b)
{
	int64_t lo = lsink_pg_month(b->lo_ns), hi = lsink_pg_month(b->hi_ns);
	char err[512];

	if (new_months(f, b)) {
		if (lsink_pg_partitions(c->pg, b->lo_ns, b->hi_ns, err,
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
	/* Behind another: committed once that one is (ORDER). */
	b->open = f->n_flight > 0;
	if (copy_batch(c->pg,
		       b->direct ? b->open ? f->direct_open_sql : f->direct_sql
		       : b->open ? c->safe_open_sql : c->safe_sql,
		       b, err, sizeof(err)) < 0) {
		problem(f, "sending events", err);
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
static int end_batch(struct lsink_forward *f, struct batch *b)
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
 * is read from the store (after the ones in flight, not the cursor), and
 * once the oldest committed, the next is sent before the cursor is saved
 * here: the store and the server do not take turns. What was read ahead
 * or sent after a batch that fails is dropped with it, and reading
 * starts again at the cursor, which moved only after a COMMIT.
 *
 * SEVERAL CONNECTIONS (--forward-connections, o.connections): a batch is
 * sent on each, so that the server takes them in parallel (one process
 * of the server per connection). ORDER: only the oldest batch in flight
 * has its COMMIT in its string; the younger ones are sent without it
 * (b->open), their rows inserted meanwhile, and each is committed once
 * it is the oldest, after the one before it. So batches are committed in
 * the store's order, as with one connection: whoever sees an event in
 * the table sees every event stored before it, and the cursor moves over
 * each batch in turn. A failure ends them all (the open ones roll back)
 * and sends again everything after the cursor: exactly once holds (a
 * row sent again is a conflict, taken the safe way). Since a younger
 * batch's transaction waits for the forwarder, it must never hold what
 * an older one needs: two transactions in flight never write the same
 * row (a row changed again after it was read: shares_rows), and
 * partitions are made only with nothing in flight.
 */

/* The batch i places after the oldest in flight. */
static struct batch *ring(struct lsink_forward *f, size_t i)
{
	return &f->batches[(f->head + i) % (f->n_conns + 1)];
}

/* Whether a row of b is in a batch in flight (by its id's key). */
static bool shares_rows(struct lsink_forward *f, const struct batch *b)
{
	for (size_t j = 0; j < f->n_flight; j++) {
		const struct batch *x = ring(f, j);

		for (size_t i = 0; i < b->n; i++)
			if (bsearch(&b->keys[i], x->keys, x->n, sizeof(*x->keys),
				    cmp_key) != NULL)
				return true;
	}
	return false;
}

/*
 * Sends the batch read ahead, if a connection is free for it: 1 sent, 0
 * not now, -1 failed (said).
 */
static int send_pending(struct lsink_forward *f)
{
	struct batch *b = ring(f, f->n_flight);
	struct fconn *c = NULL;
	int r;

	/*
	 * Not beside batches in flight: one that writes a row of theirs, or
	 * one that makes a partition (the younger ones' transactions, open
	 * until the older ones commit, would hold it up).
	 */
	if (!f->pending || f->n_flight == f->n_conns ||
	    (f->n_flight > 0 && (new_months(f, b) || shares_rows(f, b))))
		return 0;
	for (size_t i = 0; i < f->n_conns && c == NULL; i++) {
		c = &f->conns[i];
		for (size_t j = 0; j < f->n_flight && c != NULL; j++)
			if (ring(f, j)->conn == c)
				c = NULL;
	}
	set_busy(f, true);
	r = start_batch(f, c, b);
	set_busy(f, false);
	if (r < 0)
		return -1;
	f->n_flight++;
	f->pending = false;
	return 1;
}

static void *forward_main(void *arg)
{
	struct lsink_forward *f = arg;
	struct batch *b;
	int n, r, sent;

	/*
	 * The writer's acks come first: where CPUs are short (the server on
	 * the same machine, or a busy one) the forwarder yields to it and
	 * catches up later. On Linux a nice value is per thread.
	 */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), FORWARD_NICE);

	while (!stopping(f)) {
		if (!f->connected && connect_pg(f) < 0) {
			back_off(f);
			continue;
		}
		/* One read ahead, after those in flight. */
		if (!f->pending) {
			b = ring(f, f->n_flight);
			n = read_batch(f, b, f->n_flight > 0
						     ? ring(f, f->n_flight - 1)->seq
						     : f->cursor);
			if (n < 0)
				goto failed;
			f->pending = n > 0;
		}
		sent = send_pending(f);
		if (sent < 0)
			goto failed;
		if (sent > 0)
			continue;
		if (f->n_flight == 0) {
			/* Nothing to send: until the store changes. */
			(void)pthread_mutex_lock(&f->lock);
			wait_kick(f, POLL_MS);
			(void)pthread_mutex_unlock(&f->lock);
			continue;
		}
		/* The oldest in flight: its end, then the cursor. */
		b = ring(f, 0);
		set_busy(f, true);
		r = end_batch(f, b);
		set_busy(f, false);
		if (r < 0)
			goto failed;
		f->head = (f->head + 1) % (f->n_conns + 1);
		f->n_flight--;
		/* Committed there: the next goes while the cursor is saved. */
		sent = send_pending(f);
		if (bgrun_store_cursor_set(f->store, f->target, b->seq) < 0)
			problem(f, "saving the cursor",
				bgrun_store_errmsg(f->store));
		f->cursor = b->seq;
		f->n_sent += b->n;
		f->n_batches++;
		f->backoff_ms = BACKOFF_MIN_MS;
		if (sent < 0)
			goto failed;
		if (f->said[0] != '\0') {
			lsink_msg("forwarding to %s: working again",
				  lsink_printable(f->shown));
			f->said[0] = '\0';
		}
		continue;
failed:
		disconnect(f);
		back_off(f);
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
	free(f->direct_open_sql);
	free(f->insert_sql);
	for (size_t i = 0; i < LSINK_FORWARD_CONNS_MAX; i++) {
		free(f->conns[i].safe_sql);
		free(f->conns[i].safe_open_sql);
	}
	for (size_t i = 0; i <= LSINK_FORWARD_CONNS_MAX; i++) {
		free(f->batches[i].buf);
		free(f->batches[i].keys);
	}
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
	f->n_conns = o->connections < 1 ? 1
		     : o->connections > LSINK_FORWARD_CONNS_MAX
			     ? LSINK_FORWARD_CONNS_MAX
			     : o->connections;
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
	for (size_t i = 0; i <= LSINK_FORWARD_CONNS_MAX; i++) {
		f->batches[i].forced = f->o.host;
		f->batches[i].node = f->node;
		f->batches[i].want_keys = f->n_conns > 1;
	}
	f->copy_sql = make_copy_sql("fleet_batch", "");
	f->direct_sql = make_copy_sql("fleet_events", "; COMMIT");
	f->direct_open_sql = make_copy_sql("fleet_events", "");
	f->insert_sql = make_insert_sql();
	if (f->copy_sql == NULL || f->direct_sql == NULL ||
	    f->direct_open_sql == NULL ||
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
	for (size_t i = 0; f->busy && i < f->n_conns; i++)
		if (f->conns[i].cancel != NULL)
			(void)PQcancel(f->conns[i].cancel, ignored,
				       (int)sizeof(ignored));
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
