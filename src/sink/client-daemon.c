/* SPDX-License-Identifier: MIT */
/* client-daemon.c: the sink client's daemon path (private, in both libraries): HELLO, pipelined events and acks, over the platform's connection (sinkconn.c). */

#include "sink-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The daemon answers a HELLO at once, or it is not worth waiting for. */
#define HELLO_TIMEOUT_MS 5000
/* Frames of a batch encoded and in flight at once. */
#define WINDOW 512
/* The longest wait for the daemon unless the options say (bgrun.h). */
#define DEFAULT_TIMEOUT_MS 30000

/* Records a one-line message as the sink's; returns error. */
int bgrun__sink_fail(struct bgrun_sink *sink, int error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(sink->errmsg, sizeof(sink->errmsg), fmt, ap);
	va_end(ap);
	sink->errmsg[strcspn(sink->errmsg, "\n")] = '\0';
	return error;
}

int bgrun__sink_enter(struct bgrun_sink *sink)
{
	sink->errmsg[0] = '\0';
	sink->spooled = false;
	if (!sink->open)
		return bgrun__sink_fail(sink, -EINVAL, "the sink is not open");
	return 0;
}

/*
 * The posts still waiting for an answer will get none (the connection
 * is gone, or gave up): error, and the sink's message as their why.
 */
static void fail_posts(struct bgrun_sink *sink, int error)
{
	const char *why = sink->errmsg[0] != '\0'
				  ? sink->errmsg
				  : "the connection to the daemon closed "
				    "before its answer";

	for (size_t i = 0; i < sink->n_posts && sink->posts_waiting > 0; i++) {
		struct bgrun__sink_post *p = &sink->posts[i];

		if (p->status != BGRUN__SINK_PENDING)
			continue;
		p->status = error;
		free(p->why);
		p->why = strdup(why);
		sink->posts_waiting--;
	}
}

void bgrun__sink_disconnect(struct bgrun_sink *sink)
{
	if (sink->posts_waiting > 0)
		fail_posts(sink, -ECONNRESET);
	bgrun__sinkconn_close(&sink->conn);
	sink->hello_pending = false;
	sink->out.len = sink->out_sent = 0;
	sink->in_len = 0;
}

/* Called for each frame received; 1: done, 0: more, -errno: give up. */
typedef int (*frame_fn)(struct bgrun_sink *sink, struct bgrun_wire_msg *m,
			void *ctx);

/*
 * Sends what out holds from sink->out_sent on while reading frames for
 * fn, until fn says done (or, with until_sent, as soon as) and everything
 * is sent: acks are read while frames are written (bgrun__sinkconn_step),
 * so neither side can wait on the other. out is sink->out, or the posted
 * frames (bgrun__sink_post).
 */
static int pump(struct bgrun_sink *sink, const struct bgrun_wire_buf *out,
		int timeout_ms, frame_fn fn, void *ctx, bool until_sent)
{
	int64_t deadline = bgrun__now_ns(CLOCK_MONOTONIC) +
			   (int64_t)timeout_ms * 1000000;
	bool done = until_sent;
	size_t sent, n;
	int r;

	for (;;) {
		int64_t left;

		if (sink->out_sent >= out->len && done)
			break;
		left = (deadline - bgrun__now_ns(CLOCK_MONOTONIC)) / 1000000;
		if (left <= 0)
			return bgrun__sink_fail(sink, -ETIMEDOUT,
						"%s: no answer from the daemon "
						"within %d ms",
						sink->socket, timeout_ms);
		if (sink->in_cap - sink->in_len < 4096) {
			size_t cap = sink->in_cap ? 2 * sink->in_cap : 16384;
			uint8_t *grown;

			if (cap > BGRUN_WIRE_MAX_FRAME + 2 * 4096)
				return bgrun__sink_fail(
					sink, -EPROTO,
					"%s: the daemon sent an "
					"oversized frame",
					sink->socket);
			grown = realloc(sink->in, cap);
			if (grown == NULL)
				return bgrun__sink_fail(sink, -ENOMEM,
							"out of memory");
			sink->in = grown;
			sink->in_cap = cap;
		}
		r = bgrun__sinkconn_step(&sink->conn,
					 out->data + sink->out_sent,
					 out->len - sink->out_sent, &sent,
					 sink->in + sink->in_len,
					 sink->in_cap - sink->in_len, &n,
					 (int)left);
		if (r == -ECONNRESET)
			return bgrun__sink_fail(sink, r,
						"%s: the daemon closed the "
						"connection",
						sink->socket);
		if (r < 0)
			return bgrun__sink_fail(sink, r, "%s: %s", sink->socket,
						strerror(-r));
		sink->out_sent += sent;
		if (n == 0)
			continue;
		sink->in_len += (size_t)n;
		for (;;) {
			struct bgrun_wire_msg m;
			const char *why = NULL;
			size_t size = 0;

			r = bgrun_wire_frame_size(sink->in, sink->in_len,
						   BGRUN_WIRE_MAX_FRAME,
						   &size);
			if (r == 0)
				break;
			if (r > 0)
				r = bgrun_wire_decode(sink->in, size, &m,
						       &why);
			if (r < 0)
				return bgrun__sink_fail(
					sink, -EPROTO,
					"%s: bad frame from the "
					"daemon: %s",
					sink->socket,
					why != NULL ? why : "bad length");
			r = fn(sink, &m, ctx);
			bgrun_wire_msg_release(&m);
			memmove(sink->in, sink->in + size, sink->in_len - size);
			sink->in_len -= size;
			if (r < 0)
				return r;
			if (r > 0)
				done = true;
		}
	}
	sink->out.len = sink->out_sent = 0;
	return 0;
}

/* The -errno for a refusal of the whole connection. */
static int refusal(struct bgrun_sink *sink, const struct bgrun_wire_msg *m)
{
	int error = m->code == BGRUN_WIRE_E_BUSY	 ? -EBUSY
		    : m->code == BGRUN_WIRE_E_DENIED	 ? -EACCES
		    : m->code == BGRUN_WIRE_E_SHUTDOWN ? -ESHUTDOWN
							 : -EPROTO;

	return bgrun__sink_fail(sink, error, "%s: the daemon refused: %s%s%s",
				sink->socket, bgrun_wire_code_name(m->code),
				m->text != NULL ? ": " : "",
				m->text != NULL ? m->text : "");
}

static int on_hello(struct bgrun_sink *sink, struct bgrun_wire_msg *m,
		    void *ctx)
{
	int64_t dev, ino;

	if (m->type == BGRUN_WIRE_ERROR)
		return refusal(sink, m);
	if (m->type != BGRUN_WIRE_HELLO)
		return bgrun__sink_fail(sink, -EPROTO,
					"%s: no HELLO from the daemon",
					sink->socket);
	/* The daemon must write the database this sink is for. */
	if (sink->db != NULL &&
	    (bgrun__file_identity(sink->db, &dev, &ino) < 0 ||
	     m->hello.db_dev != dev || m->hello.db_ino != ino))
		return bgrun__sink_fail(
			sink, -EXDEV, "%s: the daemon writes %s, not %s",
			sink->socket,
			m->hello.db_path != NULL ? m->hello.db_path
						 : "another database",
			sink->db);
	sink->hello_pending = false;
	if (ctx != NULL) {
		struct bgrun_sink_daemon_status *status = ctx;

		status->pid = m->hello.pid;
		status->started_ns = m->hello.started_ns;
		status->events = m->hello.events;
		status->queued = m->hello.queued;
		(void)snprintf(status->db, sizeof(status->db), "%s",
			       m->hello.db_path != NULL ? m->hello.db_path : "");
	}
	return 1;
}

/*
 * Sends what sink->out holds of the HELLO and reads the answer (ahead:
 * only sends): 0, or -errno with the connection dropped.
 */
static int hello_exchange(struct bgrun_sink *sink,
			  struct bgrun_sink_daemon_status *status, bool ahead)
{
	int r = pump(sink, &sink->out,
		     sink->timeout_ms < HELLO_TIMEOUT_MS ? sink->timeout_ms
							: HELLO_TIMEOUT_MS,
		     on_hello, status, ahead);

	if (r < 0)
		bgrun__sink_disconnect(sink);
	return r < 0 ? r : 0;
}

/*
 * Connects to the daemon and checks who it is: 0, or -errno. status
 * (optional) gets what its HELLO says of it. ahead: only sends the HELLO,
 * its answer left for the next use of the connection (hello_pending).
 */
static int connect_daemon(struct bgrun_sink *sink,
			  struct bgrun_sink_daemon_status *status, bool ahead)
{
	struct bgrun_wire_hello hello = {
		.version = BGRUN_WIRE_VERSION, .max_frame = BGRUN_WIRE_MAX_FRAME,
		.pid = getpid(), .db_dev = BGRUN_NULL,
		.db_ino = BGRUN_NULL, .started_ns = BGRUN_NULL,
		.events = BGRUN_NULL, .queued = BGRUN_NULL,
	};
	char err[sizeof(sink->errmsg)];
	int r;

	if (sink->socket == NULL)
		return bgrun__sink_fail(sink, -ENOENT,
					"no socket path for the daemon");
	r = bgrun__sinkconn_open(sink->socket, &sink->conn, err, sizeof(err));
	if (r < 0)
		return bgrun__sink_fail(sink, r, "%s", err);
	sink->out.len = sink->out_sent = sink->in_len = 0;
	r = bgrun_wire_put_hello(&sink->out, 0, &hello);
	if (r < 0) {
		bgrun__sink_disconnect(sink);
		return r;
	}
	sink->hello_pending = true;
	return hello_exchange(sink, status, ahead);
}

/* Starts a daemon (AUTO) and waits until it says it is ready, or why not. */
static int start_daemon(struct bgrun_sink *sink)
{
	const char *argv[12];
	char line[256];
	size_t i = 0;
	int r;

	sink->started = true;
	argv[i++] = sink->logsink != NULL ? sink->logsink : "logsink";
	if (sink->db != NULL) {
		argv[i++] = "--db";
		argv[i++] = sink->db;
	}
	argv[i++] = "serve";
	argv[i++] = "--socket";
	argv[i++] = sink->socket;
	argv[i++] = "--exit-idle=10m";
	argv[i] = NULL;
	r = bgrun__sinkconn_start(argv, sink->timeout_ms, line, sizeof(line));
	if (r >= 0 && strncmp(line, "READY", 5) == 0)
		return 0;
	return bgrun__sink_fail(sink, r < 0 ? r : -EIO,
				"the daemon did not start: %s", line);
}

/*
 * What an ERROR answering one event says: -EINVAL when the store refused
 * the event (its message names it: no other store would take it either),
 * else -EIO (the daemon's store failed it: another path may not); why
 * gets one line.
 */
static int event_error(const struct bgrun_sink *sink,
		       const struct bgrun_wire_msg *m, char *why, size_t size)
{
	int error = -EIO;

	if (m->code == BGRUN_WIRE_E_INVALID) {
		error = -EINVAL;
		(void)snprintf(why, size, "%s",
			       m->text != NULL ? m->text : "an invalid event");
	} else {
		(void)snprintf(why, size, "%s: %s%s%s", sink->socket,
			       bgrun_wire_code_name(m->code),
			       m->text != NULL ? ": " : "",
			       m->text != NULL ? m->text : "");
	}
	why[strcspn(why, "\n")] = '\0';
	return error;
}

/*
 * An answer to a posted event (bgrun_sink_post) is taken in: true; false
 * if m answers none that waits.
 */
static bool posted_answer(struct bgrun_sink *sink,
			  const struct bgrun_wire_msg *m)
{
	struct bgrun__sink_post *p = NULL;
	char why[sizeof(sink->errmsg)];

	if (m->seq == 0 || sink->posts_waiting == 0)
		return false;
	for (size_t i = 0; i < sink->n_posts; i++) {
		if (sink->posts[i].seq == m->seq &&
		    sink->posts[i].status == BGRUN__SINK_PENDING) {
			p = &sink->posts[i];
			break;
		}
	}
	if (p == NULL)
		return false;
	sink->posts_waiting--;
	if (m->type == BGRUN_WIRE_ACK) {
		p->status = BGRUN_SINK_VIA_DAEMON;
		return true;
	}
	p->status = event_error(sink, m, why, sizeof(why));
	p->why = strdup(why);
	return true;
}

/*
 * A frame that answers no event the caller waits for: a post's answer
 * (1), a refusal of the whole connection (-errno), an ack for nothing we
 * wait for (0), or no answer at all (-EPROTO).
 */
static int other_answer(struct bgrun_sink *sink, const struct bgrun_wire_msg *m)
{
	if (m->type != BGRUN_WIRE_ACK && m->type != BGRUN_WIRE_ERROR)
		return bgrun__sink_fail(sink, -EPROTO,
					"%s: unexpected frame from the "
					"daemon",
					sink->socket);
	if (posted_answer(sink, m))
		return 1;
	if (m->type == BGRUN_WIRE_ERROR)
		return refusal(sink, m);
	return 0;
}

static int on_answer(struct bgrun_sink *sink, struct bgrun_wire_msg *m,
		     void *ctx)
{
	struct bgrun__sink_batch *b = ctx;
	size_t i = m->seq - b->base; /* wraps to a huge value if below */
	char why[sizeof(sink->errmsg)];
	int r;

	if ((m->type != BGRUN_WIRE_ACK && m->type != BGRUN_WIRE_ERROR) ||
	    m->seq == 0 || i >= b->n || b->status[i] != BGRUN__SINK_PENDING) {
		/* Not an answer to one of b's events: other_answer says what. */
		r = other_answer(sink, m);
		return r < 0 ? r : 0;
	}
	if (m->type == BGRUN_WIRE_ACK) {
		b->status[i] = BGRUN_SINK_VIA_DAEMON;
	} else {
		r = event_error(sink, m, why, sizeof(why));
		(void)bgrun__sink_fail(sink, r, "%s", why);
		/* The daemon's store failed it: the event stays pending. */
		b->status[i] = r == -EINVAL ? r : -EAGAIN;
	}
	return --b->waiting == 0 ? 1 : 0;
}

/* Sends the pending events of b over the connection, in windows. */
static int exchange(struct bgrun_sink *sink, struct bgrun__sink_batch *b)
{
	size_t next = 0;
	int r = 0;

	if (sink->next_seq > UINT32_MAX - b->n - 1)
		sink->next_seq = 1;
	b->base = sink->next_seq;
	sink->next_seq += (uint32_t)b->n;
	while (next < b->n) {
		b->waiting = 0;
		sink->out.len = sink->out_sent = 0;
		for (; next < b->n && b->waiting < WINDOW; next++) {
			if (b->status[next] != BGRUN__SINK_PENDING)
				continue;
			r = bgrun_wire_put_event(&sink->out,
						  b->base + (uint32_t)next,
						  &b->evs[next]);
			if (r == -EINVAL || r == -EMSGSIZE) {
				b->status[next] = bgrun__sink_fail(
					sink, -EINVAL,
					"event %s: "
					"cannot be encoded: %s",
					b->evs[next].id, strerror(-r));
				continue;
			}
			if (r < 0)
				return bgrun__sink_fail(sink, r, "%s",
							strerror(-r));
			b->waiting++;
		}
		if (b->waiting > 0)
			r = pump(sink, &sink->out, sink->timeout_ms, on_answer,
				 b, false);
		if (r < 0)
			return r;
	}
	return 0;
}

bool bgrun__sink_pending(const struct bgrun__sink_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->status[i] == BGRUN__SINK_PENDING)
			return true;
	return false;
}

int bgrun__sink_connect_daemon(struct bgrun_sink *sink)
{
	int r;

	if (bgrun__sinkconn_is_open(&sink->conn) && sink->hello_pending) {
		sink->out.len = sink->out_sent = 0;
		return hello_exchange(sink, NULL, false);
	}
	if (bgrun__sinkconn_is_open(&sink->conn))
		return 0;
	r = connect_daemon(sink, NULL, false);
	if ((r == -ENOENT || r == -ECONNREFUSED) &&
	    sink->mode == BGRUN_SINK_AUTO && !sink->started &&
	    start_daemon(sink) >= 0)
		r = connect_daemon(sink, NULL, false);
	return r;
}

int bgrun__sink_preconnect(struct bgrun_sink *sink)
{
	if (bgrun__sinkconn_is_open(&sink->conn))
		return 0;
	return connect_daemon(sink, NULL, true);
}

/* The frames read while posting or settling: answers to posts. */
static int on_posted(struct bgrun_sink *sink, struct bgrun_wire_msg *m,
		     void *ctx)
{
	int r = other_answer(sink, m);

	(void)ctx;
	if (r <= 0)
		return r;
	return sink->posts_waiting == 0 ? 1 : 0;
}

static bool all_committed(const struct bgrun_sink *sink)
{
	for (size_t i = 0; i < sink->n_posts; i++)
		if (sink->posts[i].status != BGRUN_SINK_VIA_DAEMON)
			return false;
	return true;
}

static int post_once(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	struct bgrun__sink_post *p;
	uint32_t seq;
	int r;

	r = bgrun__sink_connect_daemon(sink);
	if (r < 0)
		return r;
	/*
	 * All answered and committed (the answers come in with each post):
	 * nothing to give back, so a long-lived poster holds no more than
	 * what is still in flight.
	 */
	if (sink->posts_waiting == 0 && all_committed(sink)) {
		sink->n_posts = 0;
		sink->posted.len = 0;
	}
	if (sink->n_posts == sink->cap_posts) {
		size_t cap = sink->cap_posts ? 2 * sink->cap_posts : 8;
		struct bgrun__sink_post *grown =
			realloc(sink->posts, cap * sizeof(*grown));

		if (grown == NULL)
			return bgrun__sink_fail(sink, -ENOMEM, "out of memory");
		sink->posts = grown;
		sink->cap_posts = cap;
	}
	if (sink->next_seq >= UINT32_MAX - 1)
		sink->next_seq = 1;
	seq = sink->next_seq;
	/*
	 * Encoded once, at the end of the posted frames, and sent from there:
	 * kept for bgrun_sink_settle, which may have to give it back.
	 */
	r = bgrun_wire_put_event(&sink->posted, seq, ev);
	if (r == -EINVAL || r == -EMSGSIZE)
		return bgrun__sink_fail(sink, -EINVAL,
					"event %s: cannot be encoded: %s",
					ev->id, strerror(-r));
	if (r < 0)
		return bgrun__sink_fail(sink, r, "%s", strerror(-r));
	p = &sink->posts[sink->n_posts];
	*p = (struct bgrun__sink_post){ .seq = seq,
					.status = BGRUN__SINK_PENDING,
					.off = sink->posted.len - (size_t)r,
					.len = (size_t)r };
	/* Waiting before it is sent: its answer may come in the same step. */
	sink->next_seq++;
	sink->n_posts++;
	sink->posts_waiting++;
	sink->out_sent = p->off;
	r = pump(sink, &sink->posted, sink->timeout_ms, on_posted, NULL, true);
	if (r < 0) {
		/*
		 * Not posted: the caller records it (same id). The others
		 * get no answer on a connection that is gone.
		 */
		bgrun__sink_disconnect(sink);
		sink->n_posts--;
		sink->posted.len -= p->len;
		free(p->why);
		return r;
	}
	return 0;
}

int bgrun__sink_post(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	bool kept = bgrun__sinkconn_is_open(&sink->conn);
	int r = post_once(sink, ev);

	/*
	 * A kept connection the daemon closed meanwhile (it closes idle
	 * ones after a minute; it may have restarted): once more on a new
	 * one, as bgrun__sink_via_daemon does. The frame was not taken
	 * (the same id, in any case).
	 */
	if (kept && (r == -ECONNRESET || r == -EPIPE))
		r = post_once(sink, ev);
	return r;
}

int bgrun__sink_settle(struct bgrun_sink *sink, bgrun_sink_unsettled_fn fn,
		       void *ctx)
{
	struct bgrun_wire_buf frames;
	struct bgrun__sink_post *posts;
	size_t n_posts;
	int n = 0, r;

	if (sink->posts_waiting > 0) {
		sink->out.len = sink->out_sent = 0;
		r = pump(sink, &sink->out, sink->timeout_ms, on_posted, NULL,
			 false);
		if (r < 0) {
			fail_posts(sink, r);
			bgrun__sink_disconnect(sink);
		}
	}
	/* Taken out first: fn may put (or post) on this very sink. */
	frames = sink->posted;
	posts = sink->posts;
	n_posts = sink->n_posts;
	sink->posted = (struct bgrun_wire_buf){ 0 };
	sink->posts = NULL;
	sink->n_posts = sink->cap_posts = sink->posts_waiting = 0;
	for (size_t i = 0; i < n_posts; i++) {
		struct bgrun__sink_post *p = &posts[i];
		struct bgrun_wire_msg m;

		if (p->status == BGRUN_SINK_VIA_DAEMON) {
			free(p->why);
			continue;
		}
		n++;
		if (fn == NULL) {
			/* the caller wants no event back */
		} else if (bgrun_wire_decode(frames.data + p->off, p->len, &m,
					     NULL) < 0) {
			fn(ctx, NULL, -ENOMEM,
			   "out of memory: a posted event could not be read "
			   "back");
		} else {
			fn(ctx, &m.ev, p->status,
			   p->why != NULL ? p->why : strerror(-p->status));
			bgrun_wire_msg_release(&m);
		}
		free(p->why);
	}
	free(posts);
	bgrun_wire_buf_free(&frames);
	return n;
}

int bgrun__sink_daemon_hello(struct bgrun_sink *sink,
			     struct bgrun_sink_daemon_status *status)
{
	int r;

	/* A HELLO is the daemon's state when it is sent: a new connection. */
	bgrun__sink_disconnect(sink);
	r = connect_daemon(sink, status, false);
	bgrun__sink_disconnect(sink);
	return r;
}

int bgrun__sink_via_daemon(struct bgrun_sink *sink, struct bgrun__sink_batch *b)
{
	int r = 0;

	/* One more try on a new connection if the old one broke. */
	for (int attempt = 0; attempt < 2 && bgrun__sink_pending(b);
	     attempt++) {
		/* Connects, or reads the answer to a HELLO sent ahead. */
		r = bgrun__sink_connect_daemon(sink);
		if (r < 0)
			return r;
		r = exchange(sink, b);
		/* Events the daemon's store failed go on to the other paths. */
		for (size_t i = 0; i < b->n; i++)
			if (b->status[i] == -EAGAIN)
				b->status[i] = BGRUN__SINK_PENDING;
		if (r >= 0)
			return 0;
		bgrun__sink_disconnect(sink);
		if (r == -ETIMEDOUT)
			break;
	}
	return r;
}

static int parse_mode(enum bgrun_sink_mode mode, enum bgrun_sink_mode *ret_mode)
{
	static const struct {
		const char *name;
		enum bgrun_sink_mode mode;
	} names[] = {
		{ "", BGRUN_SINK_TRY },
		{ "try", BGRUN_SINK_TRY },
		{ "auto", BGRUN_SINK_AUTO },
		{ "embedded", BGRUN_SINK_EMBEDDED },
		{ "daemon", BGRUN_SINK_DAEMON },
	};
	const char *env;

	if (mode > BGRUN_SINK_DAEMON)
		return -EINVAL;
	if (mode != BGRUN_SINK_ENV) {
		*ret_mode = mode;
		return 0;
	}
	env = getenv("BGRUN_SINK");
	if (env == NULL)
		env = "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(env, names[i].name) == 0) {
			*ret_mode = names[i].mode;
			return 0;
		}
	}
	return -EINVAL;
}

/* Paths that cannot be found only close the paths that need them. */
int bgrun__sink_init(struct bgrun_sink *sink,
		     const struct bgrun_sink_opts *opts)
{
	const char *prog;
	int r;

	sink->conn = (struct bgrun__sinkconn)BGRUN__SINKCONN_INIT;
	sink->next_seq = 1;
	if (opts->timeout_ms < 0)
		return bgrun__sink_fail(sink, -EINVAL, "negative timeout: %d ms",
					opts->timeout_ms);
	sink->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms
						: DEFAULT_TIMEOUT_MS;
	r = parse_mode(opts->mode, &sink->mode);
	if (r < 0 && opts->mode != BGRUN_SINK_ENV)
		return bgrun__sink_fail(sink, r, "invalid sink mode %d",
					(int)opts->mode);
	if (r < 0)
		return bgrun__sink_fail(sink, r, "invalid BGRUN_SINK '%.64s': "
					"expected auto, embedded or daemon",
					getenv("BGRUN_SINK"));
	if (opts->db != NULL)
		sink->db = strdup(opts->db);
	else if (bgrun_store_default_path(&sink->db) == -ENOMEM)
		goto nomem;
	if (opts->db != NULL && sink->db == NULL)
		goto nomem;
	if (opts->socket != NULL)
		sink->socket = strdup(opts->socket);
	else if (bgrun_sink_default_socket(&sink->socket) == -ENOMEM)
		goto nomem;
	if (opts->socket != NULL && sink->socket == NULL)
		goto nomem;
	prog = opts->logsink != NULL ? opts->logsink : getenv("BGRUN_LOGSINK");
	if (prog != NULL && prog[0] != '\0' &&
	    (sink->logsink = strdup(prog)) == NULL)
		goto nomem;
	return 0;
nomem:
	return bgrun__sink_fail(sink, -ENOMEM, "out of memory");
}

void bgrun__sink_release(struct bgrun_sink *sink)
{
	bgrun__sink_disconnect(sink);
	for (size_t i = 0; i < sink->n_posts; i++)
		free(sink->posts[i].why);
	free(sink->posts);
	sink->posts = NULL;
	sink->n_posts = sink->cap_posts = sink->posts_waiting = 0;
	bgrun_wire_buf_free(&sink->posted);
	bgrun_wire_buf_free(&sink->out);
	free(sink->in);
	free(sink->db);
	free(sink->socket);
	free(sink->logsink);
	sink->out = (struct bgrun_wire_buf){ 0 };
	sink->in = NULL;
	sink->in_cap = 0;
	sink->db = sink->socket = sink->logsink = NULL;
	sink->open = false;
}

