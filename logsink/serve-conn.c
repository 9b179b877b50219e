/* SPDX-License-Identifier: MIT */
/* serve-conn.c: the daemon's connections: peer checks, frames in, acks out, limits and backpressure. */

#include "serve.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The read buffer starts small; it grows for a large frame, then shrinks. */
#define BUF_MIN (16u * 1024)
#define BUF_MAX (BGRUN_WIRE_LEN_SIZE + BGRUN_WIRE_MAX_FRAME + BUF_MIN)

struct lsink_conn {
	uv_pipe_t pipe; /* embedded; the conn is freed after its close */
	struct lsink_server *srv;
	struct lsink_conn *prev, *next;
	struct lsink_conn *touched; /* next in lsink_conn_results' list */
	uint8_t *buf;
	size_t len, cap;
	struct bgrun_wire_buf out; /* replies not yet handed to uv_write */
	size_t in_flight;          /* items out at the writer */
	size_t write_bytes;        /* handed to uv_write, not yet written */
	uint64_t last_ms;          /* last time it did something */
	uint64_t frame_ms;         /* when the partial frame in buf began */
	uint64_t progress_ms;      /* accepted, or its last whole frame */
	int64_t uid;
	int64_t pid;
	bool reading, finishing, closing, closed, is_touched;
};

struct wreq {
	uv_write_t req;
	struct lsink_conn *conn;
	size_t len;
	uint8_t data[];
};

static void conn_flow(struct lsink_conn *c);

static void maybe_free(struct lsink_conn *c)
{
	if (!c->closed || c->in_flight > 0)
		return;
	bgrun_wire_buf_free(&c->out);
	free(c->buf);
	free(c);
}

static void on_close(uv_handle_t *h)
{
	struct lsink_conn *c = (struct lsink_conn *)(void *)h;
	struct lsink_server *srv = c->srv;

	c->closed = true;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	srv->n_handles--;
	maybe_free(c);
	lsink_serve_maybe_done(srv);
}

static void conn_close(struct lsink_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->reading = false;
	/* The descriptor is closed now: it no longer counts against the limit. */
	if (--c->srv->n_conns == 0)
		c->srv->idle_since_ms = uv_now(&c->srv->loop);
	uv_close((uv_handle_t *)&c->pipe, on_close);
}

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)(void *)req;
	struct lsink_conn *c = w->conn;

	c->write_bytes -= w->len;
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c); /* the peer went away */
		return;
	}
	c->last_ms = uv_now(&c->srv->loop);
	conn_flow(c);
}

/* Hands what c->out holds to libuv in one write. */
static void flush(struct lsink_conn *c)
{
	struct wreq *w;
	uv_buf_t b;

	if (c->out.len == 0 || c->closing)
		return;
	w = malloc(sizeof(*w) + c->out.len);
	if (w == NULL) {
		lsink_msg("out of memory: closing a connection");
		conn_close(c);
		return;
	}
	w->conn = c;
	w->len = c->out.len;
	memcpy(w->data, c->out.data, c->out.len);
	c->out.len = 0;
	b = uv_buf_init((char *)w->data, (unsigned)w->len);
	if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, on_write) < 0) {
		free(w); /* a failed call never fires its callback */
		conn_close(c);
		return;
	}
	c->write_bytes += w->len;
	/* Shrink a buffer that grew for a burst of replies. */
	if (c->out.cap > 64 * 1024)
		bgrun_wire_buf_free(&c->out);
}

/* A frame that breaks the protocol: say why, then close (after the acks due). */
static void protocol_error(struct lsink_conn *c, uint32_t seq, int code,
			   const char *why)
{
	lsink_msg("connection from pid %lld: %s: %s", (long long)c->pid,
		  bgrun_wire_code_name(code), why);
	(void)bgrun_wire_put_error(&c->out, seq, code, why);
	flush(c);
	c->finishing = true;
}

static bool may_read(const struct lsink_conn *c)
{
	const struct lsink_limits *lim = &c->srv->lim;

	return !c->finishing && !c->closing && !c->srv->paused &&
	       c->in_flight < lim->max_pending &&
	       c->write_bytes < lim->write_max;
}

static void handle_event(struct lsink_conn *c, struct bgrun_wire_msg *m,
			 size_t bytes)
{
	struct lsink_server *srv = c->srv;
	struct lsink_item *it = calloc(1, sizeof(*it));
	int r;

	if (it == NULL) {
		bgrun_wire_msg_release(m);
		(void)bgrun_wire_put_error(
			&c->out, m->seq, BGRUN_WIRE_E_STORE, "out of memory");
		flush(c);
		return;
	}
	/*
	 * Who sent it is the kernel's word, not the payload's. A sender that
	 * could not name its user (the static front: no NSS there) or chose
	 * not to (bgrun_event_init_lean) leaves the name to us.
	 */
	if (m->ev.uid != c->uid)
		m->ev.user = NULL;
	else if (m->ev.user == NULL)
		m->ev.user = bgrun_user_name(c->uid);
	m->ev.uid = c->uid;
	/*
	 * A sender on this machine's socket runs in this boot: one that
	 * left the boot id out (bgrun_event_init_lean) gets ours.
	 */
	if (m->ev.boot_id == NULL)
		m->ev.boot_id = bgrun_boot_id();
	it->msg = *m;
	/* Checked and made ready here, so that the writer only writes. */
	r = bgrun_store_prepare(srv->scratch, &it->msg.ev, &it->prep);
	if (r < 0) {
		it->refused = true;
		lsink_item_fail(it, r, bgrun_store_errmsg(srv->scratch));
	}
	it->conn = c;
	it->seq = m->seq;
	it->bytes = bytes;
	c->in_flight++;
	srv->queued_bytes += bytes;
	if ((++srv->queued >= srv->lim.queue_max ||
	     srv->queued_bytes >= srv->lim.queue_bytes) && !srv->paused) {
		/* Backpressure: nobody is read until the writer catches up. */
		srv->paused = true;
		for (struct lsink_conn *o = srv->conns; o != NULL; o = o->next)
			if (o->reading && !o->closing) {
				(void)uv_read_stop((uv_stream_t *)&o->pipe);
				o->reading = false;
			}
	}
	/* Staged: parse_frames hands all it parsed to the writer at once. */
	it->next = NULL;
	*srv->staged_tail = it;
	srv->staged_tail = &it->next;
	srv->n_staged++;
}

static void handle_frame(struct lsink_conn *c, const uint8_t *frame,
			 size_t size)
{
	struct bgrun_wire_msg m;
	const char *why = "malformed frame";
	int r;

	r = bgrun_wire_decode(frame, size, &m, &why);
	if (r == -ENOMEM) {
		(void)bgrun_wire_put_error(
			&c->out, bgrun_wire_frame_seq(frame, size),
			BGRUN_WIRE_E_STORE, "out of memory");
		flush(c);
		return;
	}
	if (r < 0) {
		protocol_error(c, bgrun_wire_frame_seq(frame, size),
			       r == -EPROTONOSUPPORT ? BGRUN_WIRE_E_VERSION
						     : BGRUN_WIRE_E_MALFORMED,
			       why);
		return;
	}
	switch (m.type) {
	case BGRUN_WIRE_EVENT:
		handle_event(c, &m, size);
		return;
	case BGRUN_WIRE_HELLO: {
		/* Who we are, and how we are now: what `logsink status` shows. */
		struct bgrun_wire_hello h = c->srv->hello;

		h.events = (int64_t)c->srv->n_events;
		h.queued = (int64_t)c->srv->queued;
		(void)bgrun_wire_put_hello(&c->out, m.seq, &h);
		flush(c);
		break;
	}
	default:
		protocol_error(c, m.seq, BGRUN_WIRE_E_UNEXPECTED,
			       "only HELLO and EVENT frames are taken");
		break;
	}
	bgrun_wire_msg_release(&m);
}

/* Handles the whole frames buffered, as long as the limits allow. */
static void parse_frames(struct lsink_conn *c)
{
	size_t off = 0, size = 0;
	int r;

	while (off < c->len && may_read(c)) {
		r = bgrun_wire_frame_size(c->buf + off, c->len - off,
					   BGRUN_WIRE_MAX_FRAME, &size);
		if (r == 0)
			break;
		if (r < 0) {
			/* Judged from the length field, before any allocation. */
			protocol_error(
				c,
				bgrun_wire_frame_seq(c->buf + off,
						      c->len - off),
				r == -EMSGSIZE ? BGRUN_WIRE_E_TOO_LARGE
					       : BGRUN_WIRE_E_MALFORMED,
				r == -EMSGSIZE
					? "frame larger than 1 MiB"
					: "frame shorter than its header");
			off = c->len;
			break;
		}
		handle_frame(c, c->buf + off, size);
		off += size;
		c->progress_ms = uv_now(&c->srv->loop);
	}
	/* What is left began in the bytes just read, or was waiting for us. */
	if (off > 0 && off < c->len)
		c->frame_ms = uv_now(&c->srv->loop);
	if (c->srv->n_staged > 0) {
		struct lsink_server *srv = c->srv;

		lsink_writer_push(&srv->writer, srv->staged, srv->staged_tail,
				  srv->n_staged);
		srv->staged = NULL;
		srv->staged_tail = &srv->staged;
		srv->n_staged = 0;
	}
	if (off > 0) {
		memmove(c->buf, c->buf + off, c->len - off);
		c->len -= off;
	}
	if (c->cap > BUF_MIN && c->len < BUF_MIN / 2) {
		uint8_t *small = realloc(c->buf, BUF_MIN);

		if (small != NULL) {
			c->buf = small;
			c->cap = BUF_MIN;
		}
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct lsink_conn *c = (struct lsink_conn *)(void *)h;
	size_t want = 0, cap = c->cap;
	uint8_t *grown;

	/* Room for the frame being read (its size is known and checked). */
	if (bgrun_wire_frame_size(c->buf, c->len, BGRUN_WIRE_MAX_FRAME,
				   &want) < 0)
		want = 0;
	if (want < c->len + 4096)
		want = c->len + 4096;
	while (cap < want && cap < BUF_MAX)
		cap = cap ? 2 * cap : BUF_MIN;
	if (cap > BUF_MAX)
		cap = BUF_MAX;
	if (cap != c->cap) {
		grown = realloc(c->buf, cap);
		if (grown != NULL) {
			c->buf = grown;
			c->cap = cap;
		}
	}
	/* An empty buffer makes libuv report UV_ENOBUFS. */
	*buf = uv_buf_init((char *)c->buf + c->len,
			   (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct lsink_conn *c = (struct lsink_conn *)(void *)s;

	if (nread == UV_EOF) {
		c->finishing = true; /* the client is done sending */
	} else if (nread < 0) {
		conn_close(c);
		return;
	} else if (nread > 0) {
		/* A frame's deadline runs from its first byte. */
		if (c->len == 0)
			c->frame_ms = uv_now(&c->srv->loop);
		c->len += (size_t)nread;
		c->last_ms = uv_now(&c->srv->loop);
		parse_frames(c);
	}
	conn_flow(c);
}

/* Reading on or off by the limits; closing once finished with nothing due. */
static void conn_flow(struct lsink_conn *c)
{
	if (c->closing)
		return;
	if (may_read(c) && c->len > 0)
		parse_frames(c);
	if (may_read(c) && !c->reading) {
		if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) <
		    0) {
			conn_close(c);
			return;
		}
		c->reading = true;
		/* The time we did not read is ours, not the frame's. */
		if (c->len > 0)
			c->frame_ms = uv_now(&c->srv->loop);
	} else if (!may_read(c) && c->reading) {
		(void)uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = false;
	}
	if (c->finishing && c->in_flight == 0 && c->write_bytes == 0 &&
	    c->out.len == 0)
		conn_close(c);
}

/* The open connections of c's peer process, c included. */
static size_t same_pid(const struct lsink_conn *c)
{
	size_t n = 0;

	for (const struct lsink_conn *o = c->srv->conns; o != NULL; o = o->next)
		n += !o->closing && !o->finishing && o->pid == c->pid;
	return n;
}

/*
 * Every slot is taken: makes room for a newcomer by closing the
 * connection that went longest without a whole frame, if that is at least
 * a frame deadline (a second without one) and it has nothing in flight.
 * Connections that trickle bytes, or sit silent, cannot keep the clients
 * that send events out. Whether one was found.
 */
static bool evict(struct lsink_server *srv, const struct lsink_conn *newcomer)
{
	uint64_t now = uv_now(&srv->loop);
	uint64_t grace = srv->lim.frame_ms > 0 ? srv->lim.frame_ms : 1000;
	struct lsink_conn *victim = NULL;

	for (struct lsink_conn *o = srv->conns; o != NULL; o = o->next)
		if (o != newcomer && !o->closing && !o->finishing &&
		    o->in_flight == 0 && now - o->progress_ms >= grace &&
		    (victim == NULL || o->progress_ms < victim->progress_ms))
			victim = o;
	if (victim == NULL)
		return false;
	(void)bgrun_wire_put_error(&victim->out, 0, BGRUN_WIRE_E_BUSY,
				    "too many connections: this one, without a frame for the longest, is closed for a newcomer");
	flush(victim);
	victim->finishing = true;
	conn_flow(victim);
	return true;
}

/* Whether c, just accepted, may stay: else it is told busy, and why. */
static bool admit(struct lsink_conn *c)
{
	struct lsink_server *srv = c->srv;
	const struct lsink_limits *lim = &srv->lim;
	size_t mine = same_pid(c), open = 0;
	const char *why = NULL;
	char msg[128];

	for (const struct lsink_conn *o = srv->conns; o != NULL; o = o->next)
		open += !o->closing && !o->finishing;
	if (mine > lim->max_per_pid) {
		(void)snprintf(msg, sizeof(msg),
			       "too many connections from process %lld (at most %zu)",
			       (long long)c->pid, lim->max_per_pid);
		why = msg;
	} else if (open > lim->max_conns - lim->reserve && mine > 1) {
		/* The reserve: one connection per process, for newcomers. */
		why = "too many connections (the last ones are kept for processes without one)";
	} else if (open > lim->max_conns && !evict(srv, c)) {
		why = "too many connections";
	}
	if (why == NULL)
		return true;
	(void)bgrun_wire_put_error(&c->out, 0, BGRUN_WIRE_E_BUSY, why);
	flush(c);
	c->finishing = true;
	return false;
}

void lsink_conn_accept(uv_stream_t *listener, int status)
{
	struct lsink_server *srv = listener->data;
	struct lsink_conn *c;
	struct lsink_peer peer;

	if (status < 0) {
		lsink_msg("accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || uv_pipe_init(&srv->loop, &c->pipe, 0) < 0) {
		free(c);
		lsink_msg("out of memory: a connection is refused");
		return;
	}
	c->srv = srv;
	c->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = c;
	srv->conns = c;
	srv->n_handles++;
	srv->n_conns++;
	c->last_ms = c->progress_ms = uv_now(&srv->loop);
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0) {
		conn_close(c);
		return;
	}
	/* The system says who connected; the payload never does. */
	if (lsink_conn_peer(srv, &c->pipe, &peer) < 0) {
		conn_close(c);
		return;
	}
	c->uid = peer.uid;
	c->pid = peer.pid;
	if (!peer.allowed) {
		lsink_msg("refused a connection from %s", peer.who);
		(void)bgrun_wire_put_error(
			&c->out, 0, BGRUN_WIRE_E_DENIED,
			"connections from another user are refused");
		flush(c);
		c->finishing = true;
	} else {
		(void)admit(c);
	}
	conn_flow(c);
}

void lsink_conn_results(struct lsink_server *srv, struct lsink_item *done)
{
	struct lsink_conn *touched = NULL, *c;
	struct lsink_item *next;

	for (struct lsink_item *it = done; it != NULL; it = next) {
		next = it->next;
		c = it->conn;
		srv->queued--;
		srv->queued_bytes -= it->bytes;
		c->in_flight--;
		if (it->status == 0)
			srv->n_events++;
		if (!c->closing) {
			if (it->status == 0)
				(void)bgrun_wire_put_ack(&c->out, it->seq, 0);
			else
				(void)bgrun_wire_put_error(
					&c->out, it->seq,
					it->status == -EINVAL
						? BGRUN_WIRE_E_INVALID
						: BGRUN_WIRE_E_STORE,
					it->why != NULL
						? it->why
						: bgrun_strerror(it->status));
			if (!c->is_touched) {
				c->is_touched = true;
				c->touched = touched;
				touched = c;
			}
		}
		if (it->status < 0 && it->status != -EINVAL)
			lsink_msg("event %s not stored: %s", it->msg.ev.id,
				  it->why != NULL ? lsink_printable(it->why)
						  : bgrun_strerror(it->status));
		lsink_item_free(it);
		maybe_free(c);
	}
	/* One write per connection for all its acks. */
	for (c = touched; c != NULL; c = touched) {
		touched = c->touched;
		c->is_touched = false;
		flush(c);
		conn_flow(c);
	}
	if (srv->paused && srv->queued <= srv->lim.queue_max / 2 &&
	    srv->queued_bytes <= srv->lim.queue_bytes / 2) {
		srv->paused = false;
		for (c = srv->conns; c != NULL; c = c->next)
			conn_flow(c);
	}
	lsink_serve_maybe_done(srv);
}

void lsink_conn_sweep(struct lsink_server *srv, uint64_t now_ms)
{
	struct lsink_conn *next;
	char why[96];

	for (struct lsink_conn *c = srv->conns; c != NULL; c = next) {
		next = c->next;
		/*
		 * Reading with bytes buffered means a frame begun, not whole.
		 * Each byte resets the idle time, not this deadline: one byte
		 * a second no longer holds a slot.
		 */
		if (!c->closing && !c->finishing && c->reading && c->len > 0 &&
		    srv->lim.frame_ms > 0 &&
		    now_ms - c->frame_ms >= srv->lim.frame_ms) {
			(void)snprintf(why, sizeof(why),
				       "frame not whole %llu ms after its first byte",
				       (unsigned long long)srv->lim.frame_ms);
			protocol_error(c, 0, BGRUN_WIRE_E_MALFORMED, why);
			conn_flow(c);
			continue;
		}
		if (c->closing || c->in_flight > 0)
			continue;
		/*
		 * Idle: nothing sent to us, nothing owed. A client that does
		 * not read its replies is closed the same way (its writes
		 * stay queued); while draining, quickly.
		 */
		if (now_ms - c->last_ms >=
		    (srv->draining ? 2000 : srv->lim.idle_ms))
			conn_close(c);
	}
}

void lsink_conn_finish_all(struct lsink_server *srv)
{
	for (struct lsink_conn *c = srv->conns; c != NULL; c = c->next) {
		c->finishing = true;
		conn_flow(c);
	}
}
