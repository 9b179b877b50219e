/* SPDX-License-Identifier: MIT */
/* serve.h: private declarations of `logsink serve`, the sink daemon: server, connections, writer thread. */

#ifndef LSINK_SERVE_H
#define LSINK_SERVE_H

#include "logsink.h"
#include "sink-verbs.h"
#include "bgrun/store.h"
#include "bgrun/wire.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

/*
 * THREADS: everything runs on the libuv loop's thread except the writer
 * (serve-writer.c), which owns the store's SQLite connection. They share
 * only the writer's two lists, under its lock: items to write (the loop
 * pushes) and items written (the writer appends, then wakes the loop with
 * uv_async_send). So the loop never waits on the store, and an ack is
 * sent only for an item that came back committed.
 *
 * The loop prepares each event before handing it over (checks, argv and
 * options as JSON, display, UTF-8): that work needs no file, only SQLite's
 * JSON functions, which the loop runs on an in-memory connection of its
 * own (the scratch store). The writer, the daemon's bottleneck, is left
 * the SQL writes, while the loop's thread uses the other CPU. An event
 * the checks refuse still goes through the writer's lists, unwritten, so
 * that a connection's answers come in the order its events came.
 */

struct lsink_conn;

/* One event, from its frame to its ack. */
struct lsink_item {
	struct lsink_item *next;
	struct lsink_conn *conn; /* kept allocated while items are out */
	uint32_t seq;
	size_t bytes;            /* its frame's size, for the queue's budget */
	int status;              /* once written: 0 committed, or -errno */
	char *why;               /* on failure: the store's message, or NULL */
	bool refused;            /* by the loop's checks: status and why set;
				    the writer passes it on unwritten, so
				    that answers keep the order of arrival */
	struct bgrun_wire_msg msg; /* msg.ev is the event */
	struct bgrun_store_prepared *prep; /* made by the loop, of msg.ev */
};

struct lsink_writer {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	struct lsink_item *todo, **todo_tail;
	size_t n_todo;
	struct lsink_item *done, **done_tail;
	bool stop;               /* write what is queued, then end */
	bool replay;             /* replay the spool at the next chance */
	/* Set before the thread starts, then the writer's own: */
	struct bgrun_store *store;
	struct bgrun_store_prepared **batch; /* batch_max of them */
	const char *db;
	size_t batch_max;        /* events per transaction at most */
	int64_t delay_ns;        /* how long a batch may wait to grow */
	uv_async_t *wake;        /* the loop's, woken when items are done */
	struct lsink_forward *forward; /* told of each commit, or NULL */
	uint64_t n_commits;      /* the writer's; read after it is joined */
};

/* The daemon's limits and settings (from the command line). */
struct lsink_limits {
	size_t max_conns;
	size_t max_pending;  /* per connection: events not yet acked */
	size_t queue_max;    /* in all: events handed to the writer */
	size_t queue_bytes;  /* in all: the bytes of their frames */
	size_t write_max;    /* per connection: reply bytes not yet written */
	uint64_t idle_ms;    /* a connection with nothing to do is closed */
	uint64_t frame_ms;   /* a frame must be whole this long after its
				first byte (0: no limit) */
	size_t max_per_pid;  /* connections of one peer process at most */
	size_t reserve;      /* the last slots: only for processes that hold
				no other connection */
	uint64_t exit_idle_ms; /* 0: never; else exit when nobody came */
	bool allow_root;     /* root's connections are taken too */
};

struct lsink_server {
	uv_loop_t loop;
	uv_pipe_t listener;
	uv_async_t wake;
	uv_async_t stop;           /* sent by the platform's stopper (any thread) */
	uv_signal_t sigterm, sigint;
	uv_timer_t sweep;
	bool listening;
	struct lsink_writer writer;
	struct lsink_limits lim;
	struct lsink_conn *conns;  /* every connection until its close callback */
	size_t n_handles;          /* how many that is */
	size_t n_conns;            /* those not closing: what the limit counts */
	size_t queued;             /* items handed to the writer, not yet back */
	size_t queued_bytes;       /* their frames' sizes */
	struct lsink_item *staged, **staged_tail; /* parsed, not yet pushed */
	size_t n_staged;
	bool paused;               /* reading stopped everywhere: queue full */
	bool draining;
	bool done;                 /* the handles are being closed */
	int64_t uid;               /* our own effective uid (Windows: BGRUN_NULL) */
	void *platform;            /* the platform half's own state, or NULL */
	uint64_t idle_since_ms;    /* when the last connection went away */
	uint64_t replay_at_ms;     /* the next periodic spool replay */
	struct bgrun_wire_hello hello; /* what a HELLO is answered with */
	struct bgrun_store *scratch;    /* the loop's, for preparing events */
	uint64_t n_events;         /* acked */
};

/* serve-conn.c: connections, frames, acks, limits. */

/* The listener's connection callback. */
void lsink_conn_accept(uv_stream_t *listener, int status);
/* Answers the items the writer gave back (a list), then frees them. */
void lsink_conn_results(struct lsink_server *srv, struct lsink_item *done);
/* Closes idle connections and frames past their deadline (every second). */
void lsink_conn_sweep(struct lsink_server *srv, uint64_t now_ms);
/* Draining: stop reading everywhere; close what has nothing left. */
void lsink_conn_finish_all(struct lsink_server *srv);
/* Once draining and empty: stops the writer and closes every handle. */
void lsink_serve_maybe_done(struct lsink_server *srv);

/* serve-writer.c: the thread that owns the store. */

/* Starts the writer (w->store, db, batch_max, delay_ns, wake set). */
int lsink_writer_start(struct lsink_writer *w);
/* Queues a list of n items, head to *tail (loop thread): one lock for all. */
void lsink_writer_push(struct lsink_writer *w, struct lsink_item *head,
		       struct lsink_item **tail, size_t n);
/* The items written since the last call (loop thread). */
struct lsink_item *lsink_writer_take(struct lsink_writer *w);
/* Asks for a spool replay. */
void lsink_writer_replay(struct lsink_writer *w);
/* Lets it write what is queued, then joins it. */
void lsink_writer_stop(struct lsink_writer *w);

/* Frees an item and what it holds. */
void lsink_item_free(struct lsink_item *item);
/* Marks an item failed: error, and why (kept if not empty). */
void lsink_item_fail(struct lsink_item *item, int error, const char *why);

/*
 * serve-forward.c: the forwarder thread (PostgreSQL), when --forward is
 * given; pg-none.c in a logsink built without libpq.
 */
struct lsink_forward;
struct lsink_forward_opts {
	const char *conninfo; /* borrowed: a postgresql:// URI or key=value */
	const char *db;       /* the store, which it opens for itself */
	const char *host;     /* the host of every event forwarded, or NULL */
	size_t batch_max;     /* events per PostgreSQL transaction */
	size_t connections;   /* to the server, a batch in flight on each */
	uint64_t yield_ms;    /* waiting for the writer's pauses at most */
};
/* --forward-connections at most. */
#define LSINK_FORWARD_CONNS_MAX 8
/*
 * Starts forwarding. -errno with a one-line message in err (a string
 * libpq cannot read is -EINVAL; no libpq, -ENOTSUP).
 */
int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size);
/* The store changed (any thread); accepts NULL. */
void lsink_forward_kick(struct lsink_forward *f);
/* Stops the thread after its current batch and frees it; accepts NULL. */
void lsink_forward_stop(struct lsink_forward *f);

/* serve.c and its platform half: `logsink serve` itself. */

/* The daemon: its server, its store and its socket. */
struct lsink_serve {
	struct lsink_server srv;
	const char *db;
	char *db_alloc, *db_real;
	char *socket;
	bool detach, activated;
	int ready_fd, lock_fd, listen_fd;
	ino_t sock_ino;
	const char *log;
	struct bgrun_store *store;
	struct lsink_forward_opts fwd;
	struct lsink_forward *forward;
};

/*
 * A start-up failure: one line on stderr, and "ERROR LINE" to whoever
 * waits on --ready-fd (then closed). Returns -1.
 */
BGRUN__PRINTF(2, 3)
int lsink_serve_fail(struct lsink_serve *s, const char *fmt, ...);
/* Says line to whoever waits on --ready-fd, then closes it (once). */
void lsink_serve_ready_say(struct lsink_serve *s, const char *line);

/*
 * The daemon's platform half: serve-socket.c on POSIX (a Unix socket,
 * SO_PEERCRED, SIGTERM), serve-pipe.c on Windows (a named pipe with an
 * owner-only DACL, the client process's token, a stop event). serve.c
 * and serve-conn.c call these and nothing of the platform's own.
 */

/*
 * Before the store is opened: the one-daemon lock taken and (POSIX) the
 * socket bound (s->listen_fd; systemd's when activated), s->srv.uid
 * set. 0, or -1 after lsink_serve_fail.
 */
int lsink_serve_listen(struct lsink_serve *s);
/* In the loop: s->srv.listener listening, with lsink_conn_accept. 0 or -1 (failed). */
int lsink_serve_listen_start(struct lsink_serve *s);
/*
 * The platform's other ways to be told to stop, besides SIGTERM and
 * SIGINT (uv_signal): each calls uv_async_send(&srv->stop). Stopped by
 * lsink_serve_stoppers_end before that handle is closed.
 */
int lsink_serve_stoppers_start(struct lsink_serve *s);
void lsink_serve_stoppers_end(struct lsink_server *srv);
/* Gives back what listening took (our socket file, the lock). */
void lsink_serve_unlisten(struct lsink_serve *s);
/*
 * `serve --stop`, once the daemon said who it is (pid, serving path):
 * asks it to stop, then waits up to wait_ms for it to exit. 0, or -1
 * with a one-line message in err.
 */
int lsink_serve_stop_pid(const char *path, int64_t pid, int wait_ms,
			 char *err, size_t size);
/* --detach: ourselves again in the background; the exit status. */
int lsink_serve_detach(int argc, char **argv, const char *db);
/* Whether fd may be --ready-fd's (an open descriptor), made close-on-exec. */
bool lsink_serve_ready_fd_ok(int fd);
/* Which file the database is, for the HELLO (what clients compare). */
int lsink_serve_file_identity(const char *path, int64_t *ret_dev,
			      int64_t *ret_ino);

/* Who is at the other end of an accepted connection. */
struct lsink_peer {
	int64_t uid;     /* the kernel's word (Windows: BGRUN_NULL) */
	int64_t pid;
	bool allowed;    /* our user (or root, with --allow-root) */
	char who[160];   /* for messages: "uid 1000 (pid 42)" */
};
/* 0 and *ret filled, or -errno (the connection is then closed). */
int lsink_conn_peer(struct lsink_server *srv, uv_pipe_t *pipe,
		    struct lsink_peer *ret);

#endif /* LSINK_SERVE_H */
