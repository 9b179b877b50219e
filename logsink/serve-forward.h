/* SPDX-License-Identifier: MIT */
/* serve-forward.h: private declarations of the forwarder (serve-forward*.c): its state, its batches, its connections. */

#ifndef LSINK_SERVE_FORWARD_H
#define LSINK_SERVE_FORWARD_H

#include "serve.h"
#include "pg.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * THREAD SAFETY: everything here is the forwarder thread's own, but the
 * fields marked "under lock", which the writer (kicks) and the loop
 * (stopping) touch too.
 */

/* One connection to the server (see SEVERAL CONNECTIONS in serve-forward.c). */
struct fconn {
	PGconn *pg;
	PGcancel *cancel;          /* under the forwarder's lock */
	/* The safe way's strings, for pg: with the COMMIT, and without. */
	char *safe_sql, *safe_open_sql;
};

/* A batch: the store's changes after a change number, as COPY data. */
struct fbatch {
	char *buf;         /* COPY's binary format */
	size_t len, cap, n;
	int64_t seq, lo_ns, hi_ns;
	bool failed;       /* appending ran out of memory */
	const char *forced, *node; /* the hosts, as in safe_sql */
	bool direct;       /* sent by COPY into fleet_events */
	bool open;         /* its COMMIT to be sent (ORDER) */
	struct fconn *conn; /* in flight on it, or NULL */
	bool want_keys;    /* keys wanted (n_conns > 1) */
	uint64_t *keys;    /* its ids' hashes, n, sorted */
	size_t keys_cap;
};

struct lsink_forward {
	struct lsink_forward_opts o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	bool stop, kicked;
	bool busy;                 /* waiting for the server */
	bool waiting;              /* for a kick */
	/* The writer's commits (CLOCK_MONOTONIC; see YIELDING): */
	int64_t last_commit_ns;    /* the last */
	int64_t first_commit_ns;   /* the first not read, 0 none, 1 old */
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
	 * from the store and not sent yet (see PIPELINE, serve-forward.c):
	 * a ring of n_conns + 1, from head.
	 */
	struct fbatch batches[LSINK_FORWARD_CONNS_MAX + 1];
	size_t head, n_flight;
	bool pending;              /* the one after those in flight is read */
	int direct_skip;           /* batches to send the safe way first */
	int direct_wait;           /* the next skip after a conflict */
	uint64_t n_direct;
	char said[512];            /* the problem last logged */
	int backoff_ms;
	uint64_t n_sent, n_batches;
	int64_t held_ns;           /* waited for the writer, in all */
};

/* serve-forward.c: the thread. */

/* Says what is wrong, once until it changes or forwarding works again. */
void lsink_fwd_problem(struct lsink_forward *f, const char *what,
		       const char *why);

/* serve-forward-batch.c: batches and the statements that send them. */

/*
 * The statements of a batch, made from the column list: BEGIN and the
 * COPY into table, then tail; and the INSERT from the temporary table
 * ($1 this machine's name, $2 the forced host or NULL). NULL: no memory.
 */
char *lsink_fwd_copy_sql(const char *table, const char *tail);
char *lsink_fwd_insert_sql(void);
/* The safe way's string for pg, without its COMMIT. NULL: no memory. */
char *lsink_fwd_safe_sql(struct lsink_forward *f, PGconn *pg);
/* Appends s to *sql (*len long). false: no memory, *sql unchanged. */
bool lsink_fwd_append(char **sql, size_t *len, const char *s);
/* Reads into b the batch after change number after: its size, or -1 said. */
int lsink_fwd_read(struct lsink_forward *f, struct fbatch *b, int64_t after);
/* Whether a row of b is in x (by its id's key; both have keys). */
bool lsink_fwd_shares_rows(const struct fbatch *b, const struct fbatch *x);

/* serve-forward-pg.c: the connections, and a batch sent on one. */

/* "user@host:port/dbname" of conninfo, as far as it says. */
void lsink_fwd_describe(const char *conninfo, char *out, size_t size);
/* Connects all, reads the cursor. 0, or -1 said. */
int lsink_fwd_connect(struct lsink_forward *f);
/* Ends every connection (a batch in flight is rolled back). */
void lsink_fwd_disconnect(struct lsink_forward *f);
/* Whether b has rows of months not known to have partitions. */
bool lsink_fwd_new_months(const struct lsink_forward *f,
			  const struct fbatch *b);
/*
 * Starts sending b on c, and waits for the rest of it (committed, or
 * sent again the safe way). 0, or -1 said.
 */
int lsink_fwd_start_batch(struct lsink_forward *f, struct fconn *c,
			  struct fbatch *b);
int lsink_fwd_end_batch(struct lsink_forward *f, struct fbatch *b);

#endif /* LSINK_SERVE_FORWARD_H */
