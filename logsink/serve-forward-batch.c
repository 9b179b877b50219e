/* SPDX-License-Identifier: MIT */
/* serve-forward-batch.c: the forwarder's batches: the store's changes as COPY data, and the statements that send them. */

#include "serve-forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool lsink_fwd_append(char **sql, size_t *len, const char *s)
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
char *lsink_fwd_copy_sql(const char *table, const char *tail)
{
	char *sql = NULL;
	size_t len = 0;

	if (lsink_fwd_append(&sql, &len, "BEGIN; COPY ") &&
	    lsink_fwd_append(&sql, &len, table) &&
	    lsink_fwd_append(&sql, &len, " (") &&
	    append_list(&sql, &len, "", "", NULL) &&
	    lsink_fwd_append(&sql, &len, ") FROM STDIN WITH (FORMAT binary)") &&
	    lsink_fwd_append(&sql, &len, tail))
		return sql;
	free(sql);
	return NULL;
}

char *lsink_fwd_insert_sql(void)
{
	char *sql = NULL;
	size_t len = 0;
	bool ok;

	ok = lsink_fwd_append(&sql, &len, "INSERT INTO fleet_events (") &&
	     append_list(&sql, &len, "", "", NULL) &&
	     lsink_fwd_append(&sql, &len, ", forwarded_at) SELECT ") &&
	     append_list(&sql, &len, "", "b.",
			 "coalesce($2::text, b.host, $1::text)") &&
	     lsink_fwd_append(&sql, &len,
			", clock_timestamp() FROM fleet_batch b "
			"ON CONFLICT (id, recorded_ns) DO UPDATE SET (") &&
	     append_list(&sql, &len, NULL, "", NULL) &&
	     lsink_fwd_append(&sql, &len, ") = ROW(") &&
	     append_list(&sql, &len, NULL, "excluded.", NULL) &&
	     lsink_fwd_append(&sql, &len,
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

/*
 * The safe way's string: BEGIN, the COPY into the temporary table and the
 * INSERT from there ($1 and $2 made literals of this connection: its
 * encoding, its quoting rules), all sent at once (see ONE STRING A
 * BATCH, serve-forward-pg.c); the COMMIT is added by the caller.
 */
char *lsink_fwd_safe_sql(struct lsink_forward *f, PGconn *pg)
{
	char *node = PQescapeLiteral(pg, f->node, strlen(f->node));
	char *host = f->o.host != NULL
			     ? PQescapeLiteral(pg, f->o.host, strlen(f->o.host))
			     : NULL;
	char *sql = NULL;
	size_t len = 0;
	bool ok = node != NULL && (f->o.host == NULL || host != NULL) &&
		  lsink_fwd_append(&sql, &len, f->copy_sql) &&
		  lsink_fwd_append(&sql, &len, "; ");

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
		ok = lsink_fwd_append(&sql, &len, d[1] == '1' ? node
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

/* Room for need more bytes in the batch. */
static bool reserve(struct fbatch *b, size_t need)
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

/*
 * COPY's binary format: a field is its length (int32, -1 for NULL) and
 * its bytes, a bigint 8 bytes, all in network order; a row starts with
 * its number of fields, the data with a signature and two int32 0 (no
 * flags, no extension), and ends with -1 as an int16. Text and json go
 * as their bytes (json's binary form is its text, checked by the server
 * as in the text format). Against the text format (measured: docs/
 * fleet.md), nothing is formatted or escaped here, nor parsed there: 1.5
 * against 1.8 us of the forwarder's CPU an event, 6.5 against 6.7 of
 * the server's. The columns' types are the schema's (pg-schema.c), which
 * the forwarder checks at each connection.
 */
static void put_be(struct fbatch *b, uint64_t v, int bytes)
{
	while (bytes-- > 0)
		b->buf[b->len++] = (char)(v >> (8 * bytes));
}

static bool bin_text(struct fbatch *b, const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n > INT32_MAX || !reserve(b, 4 + n))
		return false;
	put_be(b, s != NULL ? (uint32_t)n : UINT32_MAX, 4);
	memcpy(b->buf + b->len, s != NULL ? s : "", n);
	b->len += n;
	return true;
}

static bool bin_int(struct fbatch *b, int64_t v)
{
	if (v == BGRUN_NULL)
		return bin_text(b, NULL);
	if (!reserve(b, 12))
		return false;
	put_be(b, 8, 4);
	put_be(b, (uint64_t)v, 8);
	return true;
}

/* FNV-1a of an id: the key of its row in shares_rows. */
static uint64_t id_key(const char *id)
{
	uint64_t h = 14695981039346656037ull;

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211ull;
	return h;
}

static bool add_key(struct fbatch *b, const char *id)
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
 * A row in COPY's binary format, its columns in the order of
 * LSINK_PG_COLUMNS, id first (the data's header before the first).
 */
static int add_change(void *data, const struct bgrun_store_change *c)
{
	struct fbatch *b = data;
	const struct bgrun_event *ev = &c->ev;
	bool ok;

	if (b->len == 0) {
		if (!reserve(b, 19)) {
			b->failed = true;
			return 1;
		}
		memcpy(b->buf, "PGCOPY\n\377\r\n\0", 11);
		b->len = 11;
		put_be(b, 0, 4);
		put_be(b, 0, 4);
	}
	ok = reserve(b, 2);
	if (ok)
		put_be(b, 1 + N_PG_COLUMNS, 2);
	ok = ok && bin_text(b, ev->id);

	/*
	 * The host as the INSERT makes it (the forced one, else the event's,
	 * else this machine's): the direct COPY has no INSERT.
	 */
#define PUT_S(n) ok = ok && bin_text(b, strcmp(#n, "host") != 0 ? ev->n \
				     : b->forced != NULL ? b->forced \
				     : ev->host != NULL ? ev->host : b->node);
#define PUT_I(n) ok = ok && bin_int(b, ev->n);
#define PUT_R(n) ok = ok && bin_int(b, c->n);
#define PUT_J(n) ok = ok && bin_text(b, strcmp(#n, "argv") == 0 \
					 ? c->argv_json : ev->options_json);
#define PUT(kind, n, type) PUT_##kind(n)
	LSINK_PG_COLUMNS(PUT)
#undef PUT
	if (!ok) {
		b->failed = true;
		return 1;
	}
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
int lsink_fwd_read(struct lsink_forward *f, struct fbatch *b, int64_t after)
{
	int r;

	b->len = b->n = 0;
	b->failed = false;
	r = bgrun_store_changes(f->store, after, (int64_t)f->o.batch_max,
				add_change, b);
	if (b->failed || r < 0) {
		lsink_fwd_problem(f, "reading the local store",
				  b->failed ? "out of memory"
					    : bgrun_store_errmsg(f->store));
		return -1;
	}
	if (b->n > 0 && !reserve(b, 2)) {
		lsink_fwd_problem(f, "reading the local store", "out of memory");
		return -1;
	}
	if (b->n > 0)
		put_be(b, UINT16_MAX, 2);
	if (b->want_keys && b->n > 1)
		qsort(b->keys, b->n, sizeof(*b->keys), cmp_key);
	return (int)b->n;
}

bool lsink_fwd_shares_rows(const struct fbatch *b, const struct fbatch *x)
{
	for (size_t i = 0; i < b->n; i++)
		if (bsearch(&b->keys[i], x->keys, x->n, sizeof(*x->keys),
			    cmp_key) != NULL)
			return true;
	return false;
}
