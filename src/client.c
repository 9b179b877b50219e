/* SPDX-License-Identifier: MIT */
/* client.c: the sink client: the daemon when its socket answers, else the embedded store, else the spool. */

#include "internal.h"
#include "sink-internal.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000
/* The daemon answers a HELLO at once, or it is not worth waiting for. */
#define HELLO_TIMEOUT_MS 5000
/* Frames of a batch encoded and in flight at once. */
#define WINDOW 512

/* An event's fate so far, in status[]: else BGRUN_SINK_VIA_* or -errno. */
#define PENDING INT_MIN

struct bgrun_sink {
	enum bgrun_sink_mode mode;
	char *db;       /* NULL: no database path could be found */
	char *socket;   /* NULL: no socket path could be found */
	char *logsink;  /* NULL: "logsink" in PATH */
	int timeout_ms;
	int fd;         /* the daemon connection, or -1 */
	bool started;   /* AUTO: a daemon was started (once per sink) */
	bool replayed;  /* the spool was replayed into store */
	bool spooled;
	uint32_t next_seq;
	struct bgrun_store *store;
	struct bgrun__wire_buf out;
	size_t out_sent;
	uint8_t *in;
	size_t in_len, in_cap;
	char errmsg[512];
};

__attribute__((format(printf, 3, 4)))
static int fail(struct bgrun_sink *sink, int error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(sink->errmsg, sizeof(sink->errmsg), fmt, ap);
	va_end(ap);
	sink->errmsg[strcspn(sink->errmsg, "\n")] = '\0';
	return error;
}

int bgrun_sink_default_socket(char **ret_path)
{
	const char *env = getenv("BGRUN_SOCKET"), *xdg = getenv("XDG_RUNTIME_DIR");
	char *path;
	int r;

	if (env != NULL && env[0] != '\0')
		r = asprintf(&path, "%s", env);
	else if (xdg != NULL && xdg[0] == '/')
		r = asprintf(&path, "%s/bgrun/sink.sock", xdg);
	else
		r = asprintf(&path, "/tmp/bgrun-%u/sink.sock", (unsigned)getuid());
	if (r < 0)
		return -ENOMEM;
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		free(path);
		return -ENAMETOOLONG;
	}
	*ret_path = path;
	return 0;
}

int bgrun__sink_check_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
		return -EPERM;
	return 0;
}

static int parse_mode(enum bgrun_sink_mode mode, enum bgrun_sink_mode *ret_mode)
{
	static const struct {
		const char *name;
		enum bgrun_sink_mode mode;
	} names[] = {
		{ "", BGRUN_SINK_TRY },		    { "try", BGRUN_SINK_TRY },
		{ "auto", BGRUN_SINK_AUTO },	    { "embedded", BGRUN_SINK_EMBEDDED },
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

int bgrun_sink_open(const struct bgrun_sink_opts *opts,
		    struct bgrun_sink **ret_sink)
{
	struct bgrun_sink_opts defaults = BGRUN_SINK_OPTS_INIT;
	const char *prog;
	struct bgrun_sink *sink;
	int r;

	if (opts == NULL)
		opts = &defaults;
	if (opts->timeout_ms < 0)
		return -EINVAL;
	sink = calloc(1, sizeof(*sink));
	if (sink == NULL)
		return -ENOMEM;
	sink->fd = -1;
	sink->next_seq = 1;
	sink->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms
						: DEFAULT_TIMEOUT_MS;
	r = parse_mode(opts->mode, &sink->mode);
	if (r < 0)
		goto fail;
	r = -ENOMEM;
	/* Paths that cannot be found only close the paths that need them. */
	if (opts->db != NULL)
		sink->db = strdup(opts->db);
	else if (bgrun_store_default_path(&sink->db) == -ENOMEM)
		goto fail;
	if (opts->db != NULL && sink->db == NULL)
		goto fail;
	if (opts->socket != NULL)
		sink->socket = strdup(opts->socket);
	else if (bgrun_sink_default_socket(&sink->socket) == -ENOMEM)
		goto fail;
	if (opts->socket != NULL && sink->socket == NULL)
		goto fail;
	prog = opts->logsink != NULL ? opts->logsink : getenv("BGRUN_LOGSINK");
	if (prog != NULL && prog[0] != '\0' &&
	    (sink->logsink = strdup(prog)) == NULL)
		goto fail;
	*ret_sink = sink;
	return 0;
fail:
	bgrun_sink_close(sink);
	return r;
}

static void disconnect(struct bgrun_sink *sink)
{
	if (sink->fd >= 0)
		(void)close(sink->fd);
	sink->fd = -1;
	sink->out.len = sink->out_sent = 0;
	sink->in_len = 0;
}

void bgrun_sink_close(struct bgrun_sink *sink)
{
	if (sink == NULL)
		return;
	disconnect(sink);
	bgrun_store_close(sink->store);
	bgrun__wire_buf_free(&sink->out);
	free(sink->in);
	free(sink->db);
	free(sink->socket);
	free(sink->logsink);
	free(sink);
}

bool bgrun_sink_spooled(const struct bgrun_sink *sink)
{
	return sink->spooled;
}

const char *bgrun_sink_errmsg(const struct bgrun_sink *sink)
{
	return sink->errmsg;
}

/* ---- talking to the daemon ---- */

/* Called for each frame received; 1: done, 0: more, -errno: give up. */
typedef int (*frame_fn)(struct bgrun_sink *sink, struct bgrun__wire_msg *m,
			void *ctx);

/*
 * Sends what sink->out holds while reading frames for fn, until fn says
 * done and everything is sent. The socket is non-blocking: acks are read
 * while frames are written, so neither side can wait on the other.
 */
static int pump(struct bgrun_sink *sink, int timeout_ms, frame_fn fn, void *ctx)
{
	int64_t deadline = bgrun__now_ns(CLOCK_MONOTONIC) +
			   (int64_t)timeout_ms * 1000000;
	bool done = false;
	ssize_t n;
	int r;

	for (;;) {
		struct pollfd p = { .fd = sink->fd, .events = POLLIN };
		int64_t left;

		if (sink->out_sent < sink->out.len)
			p.events |= POLLOUT;
		else if (done)
			break;
		left = (deadline - bgrun__now_ns(CLOCK_MONOTONIC)) / 1000000;
		if (left <= 0)
			return fail(sink, -ETIMEDOUT, "%s: no answer from the daemon "
				    "within %d ms", sink->socket, timeout_ms);
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return fail(sink, -errno, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		if (p.revents & POLLOUT) {
			n = send(sink->fd, sink->out.data + sink->out_sent,
				 sink->out.len - sink->out_sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				return fail(sink, -errno, "%s: %s", sink->socket,
					    strerror(errno));
			if (n > 0)
				sink->out_sent += (size_t)n;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (sink->in_cap - sink->in_len < 4096) {
			size_t cap = sink->in_cap ? 2 * sink->in_cap : 16384;
			uint8_t *grown;

			if (cap > BGRUN__WIRE_MAX_FRAME + 2 * 4096)
				return fail(sink, -EPROTO, "%s: the daemon sent an "
					    "oversized frame", sink->socket);
			grown = realloc(sink->in, cap);
			if (grown == NULL)
				return fail(sink, -ENOMEM, "out of memory");
			sink->in = grown;
			sink->in_cap = cap;
		}
		n = recv(sink->fd, sink->in + sink->in_len,
			 sink->in_cap - sink->in_len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return fail(sink, -errno, "%s: %s", sink->socket,
				    strerror(errno));
		if (n == 0)
			return fail(sink, -ECONNRESET, "%s: the daemon closed the "
				    "connection", sink->socket);
		sink->in_len += (size_t)n;
		for (;;) {
			struct bgrun__wire_msg m;
			const char *why = NULL;
			size_t size = 0;

			r = bgrun__wire_frame_size(sink->in, sink->in_len,
						   BGRUN__WIRE_MAX_FRAME, &size);
			if (r == 0)
				break;
			if (r > 0)
				r = bgrun__wire_decode(sink->in, size, &m, &why);
			if (r < 0)
				return fail(sink, -EPROTO, "%s: bad frame from the "
					    "daemon: %s", sink->socket,
					    why != NULL ? why : "bad length");
			r = fn(sink, &m, ctx);
			bgrun__wire_msg_release(&m);
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
static int refusal(struct bgrun_sink *sink, const struct bgrun__wire_msg *m)
{
	int error = m->code == BGRUN__WIRE_E_BUSY	 ? -EBUSY
		    : m->code == BGRUN__WIRE_E_DENIED	 ? -EACCES
		    : m->code == BGRUN__WIRE_E_SHUTDOWN ? -ESHUTDOWN
							 : -EPROTO;

	return fail(sink, error, "%s: the daemon refused: %s%s%s", sink->socket,
		    bgrun__wire_code_name(m->code), m->text != NULL ? ": " : "",
		    m->text != NULL ? m->text : "");
}

static int on_hello(struct bgrun_sink *sink, struct bgrun__wire_msg *m,
		    void *ctx)
{
	struct stat st;

	if (m->type == BGRUN__WIRE_ERROR)
		return refusal(sink, m);
	if (m->type != BGRUN__WIRE_HELLO)
		return fail(sink, -EPROTO, "%s: no HELLO from the daemon",
			    sink->socket);
	/* The daemon must write the database this sink is for. */
	if (sink->db != NULL &&
	    (stat(sink->db, &st) < 0 || m->hello.db_dev != (int64_t)st.st_dev ||
	     m->hello.db_ino != (int64_t)st.st_ino))
		return fail(sink, -EXDEV, "%s: the daemon writes %s, not %s",
			    sink->socket,
			    m->hello.db_path != NULL ? m->hello.db_path : "another database",
			    sink->db);
	return 1;
}

/* Connects to the daemon and checks who it is: 0, or -errno. */
static int connect_daemon(struct bgrun_sink *sink)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct bgrun__wire_hello hello = { BGRUN__WIRE_VERSION,
					   BGRUN__WIRE_MAX_FRAME, getpid(), NULL,
					   BGRUN_NULL, BGRUN_NULL };
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	char *slash;
	int fd, r;

	if (sink->socket == NULL)
		return fail(sink, -ENOENT, "no socket path for the daemon");
	if (strlen(sink->socket) >= sizeof(sa.sun_path))
		return fail(sink, -ENAMETOOLONG, "%s: socket path too long",
			    sink->socket);
	strcpy(sa.sun_path, sink->socket);
	/* Its directory must be ours alone, or anyone could pose as it. */
	slash = strrchr(sa.sun_path, '/');
	if (slash != NULL) {
		*slash = '\0';
		r = bgrun__sink_check_dir(slash == sa.sun_path ? "/" : sa.sun_path);
		*slash = '/';
		if (r == -EPERM || r == -ENOTDIR)
			return fail(sink, r, "%s: the directory is not yours "
				    "alone: not used", sink->socket);
		if (r < 0)
			return fail(sink, r, "%s: %s", sink->socket, strerror(-r));
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(sink, -errno, "socket: %s", strerror(errno));
	fd = bgrun__fd_high(fd, 3);
	if (fd < 0)
		return fail(sink, fd, "socket: %s", strerror(-fd));
	/* Non-blocking: a full backlog is EAGAIN, never an endless wait. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = fail(sink, -errno, "%s: %s", sink->socket, strerror(errno));
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		r = fail(sink, -errno, "SO_PEERCRED: %s", strerror(errno));
		goto fail;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		r = fail(sink, -EPERM, "%s: the daemon runs as uid %u: not used",
			 sink->socket, (unsigned)cred.uid);
		goto fail;
	}
	sink->fd = fd;
	sink->out.len = sink->out_sent = sink->in_len = 0;
	r = bgrun__wire_put_hello(&sink->out, 0, &hello);
	if (r >= 0)
		r = pump(sink, sink->timeout_ms < HELLO_TIMEOUT_MS
				       ? sink->timeout_ms
				       : HELLO_TIMEOUT_MS,
			 on_hello, NULL);
	if (r < 0)
		disconnect(sink);
	return r < 0 ? r : 0;
fail:
	(void)close(fd);
	return r;
}

/*
 * Starts a daemon (AUTO) and waits until it says it is ready (or why it
 * is not) on a pipe: no polling of the socket.
 */
static int start_daemon(struct bgrun_sink *sink)
{
	const char *argv[12];
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char line[256];
	size_t used = 0, i = 0;
	int p[2], r;
	pid_t pid;

	sink->started = true;
	if (pipe2(p, O_CLOEXEC) < 0)
		return fail(sink, -errno, "pipe: %s", strerror(errno));
	argv[i++] = sink->logsink != NULL ? sink->logsink : "logsink";
	if (sink->db != NULL) {
		argv[i++] = "--db";
		argv[i++] = sink->db;
	}
	argv[i++] = "serve";
	argv[i++] = "--socket";
	argv[i++] = sink->socket;
	argv[i++] = "--ready-fd=3";
	argv[i++] = "--exit-idle=10m";
	argv[i] = NULL;
	o.argv = argv;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	pid = bgrun_spawn(&o, NULL);
	(void)close(p[1]);
	if (pid < 0) {
		(void)close(p[0]);
		return fail(sink, pid, "cannot start %s: %s", argv[0],
			    bgrun_strerror(pid));
	}
	/* "READY PID" or "ERROR MESSAGE", then the pipe closes. */
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		r = poll(&pf, 1, sink->timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n = read(p[0], line + used, sizeof(line) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == sizeof(line) - 1)
			break;
	}
	(void)close(p[0]);
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (strncmp(line, "READY", 5) == 0)
		return 0;
	return fail(sink, -EIO, "the daemon did not start: %s",
		    used > 0 ? line : "no word from it");
}

struct batch {
	const struct bgrun_event *evs;
	int *status;
	size_t n;
	uint32_t base;    /* evs[i] was sent as seq base + i */
	size_t waiting;   /* frames sent and not answered */
	bool store_failed;
};

static int on_answer(struct bgrun_sink *sink, struct bgrun__wire_msg *m,
		     void *ctx)
{
	struct batch *b = ctx;
	size_t i = m->seq - b->base; /* wraps to a huge value if below */

	if (m->type != BGRUN__WIRE_ACK && m->type != BGRUN__WIRE_ERROR)
		return fail(sink, -EPROTO, "%s: unexpected frame from the "
			    "daemon", sink->socket);
	if (m->seq == 0 || i >= b->n || b->status[i] != PENDING) {
		if (m->type == BGRUN__WIRE_ERROR)
			return refusal(sink, m);
		return 0; /* an ack for nothing we wait for */
	}
	if (m->type == BGRUN__WIRE_ACK) {
		b->status[i] = BGRUN_SINK_VIA_DAEMON;
	} else if (m->code == BGRUN__WIRE_E_INVALID) {
		b->status[i] = fail(sink, -EINVAL, "event %s: %s", b->evs[i].id,
				    m->text != NULL ? m->text : "invalid");
	} else {
		/* The daemon's store failed it: the event stays pending. */
		b->status[i] = -EAGAIN;
		(void)fail(sink, -EIO, "%s: %s%s%s", sink->socket,
			   bgrun__wire_code_name(m->code),
			   m->text != NULL ? ": " : "",
			   m->text != NULL ? m->text : "");
	}
	return --b->waiting == 0 ? 1 : 0;
}

/* Sends the pending events of b over the connection, in windows. */
static int exchange(struct bgrun_sink *sink, struct batch *b)
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
			if (b->status[next] != PENDING)
				continue;
			r = bgrun__wire_put_event(&sink->out,
						  b->base + (uint32_t)next,
						  &b->evs[next]);
			if (r == -EINVAL || r == -EMSGSIZE) {
				b->status[next] = fail(sink, -EINVAL, "event %s: "
						       "cannot be encoded: %s",
						       b->evs[next].id,
						       strerror(-r));
				continue;
			}
			if (r < 0)
				return fail(sink, r, "%s", strerror(-r));
			b->waiting++;
		}
		if (b->waiting > 0)
			r = pump(sink, sink->timeout_ms, on_answer, b);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool any_pending(const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->status[i] == PENDING)
			return true;
	return false;
}

static int via_daemon(struct bgrun_sink *sink, struct batch *b)
{
	int r = 0;

	/* One more try on a new connection if the old one broke. */
	for (int attempt = 0; attempt < 2 && any_pending(b); attempt++) {
		if (sink->fd < 0) {
			r = connect_daemon(sink);
			if ((r == -ENOENT || r == -ECONNREFUSED) &&
			    sink->mode == BGRUN_SINK_AUTO && !sink->started &&
			    start_daemon(sink) >= 0)
				r = connect_daemon(sink);
			if (r < 0)
				return r;
		}
		r = exchange(sink, b);
		/* Events the daemon's store failed go on to the other paths. */
		for (size_t i = 0; i < b->n; i++)
			if (b->status[i] == -EAGAIN)
				b->status[i] = PENDING;
		if (r >= 0)
			return 0;
		disconnect(sink);
		if (r == -ETIMEDOUT)
			break;
	}
	return r;
}

static int open_store(struct bgrun_sink *sink)
{
	char *msg = NULL;
	int r;

	if (sink->store != NULL)
		return 0;
	if (sink->db == NULL)
		return fail(sink, -ENOENT, "no event log: set BGRUN_DB, "
			    "XDG_STATE_HOME or HOME");
	r = bgrun_store_open(sink->db, 0, &sink->store, &msg);
	if (r < 0) {
		(void)fail(sink, r, "%s", msg != NULL ? msg : bgrun_strerror(r));
		free(msg);
		return r;
	}
	if (!sink->replayed) {
		sink->replayed = true;
		(void)bgrun_sink_replay(sink->store, sink->db, NULL);
	}
	return 0;
}

static int via_store(struct bgrun_sink *sink, struct batch *b)
{
	struct bgrun_event *evs;
	size_t *idx, k = 0;
	int r;

	r = open_store(sink);
	if (r < 0)
		return r;
	evs = malloc(b->n * sizeof(*evs));
	idx = malloc(b->n * sizeof(*idx));
	if (evs == NULL || idx == NULL) {
		r = fail(sink, -ENOMEM, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (b->status[i] == PENDING) {
			evs[k] = b->evs[i];
			idx[k++] = i;
		}
	}
	r = bgrun_store_put_batch(sink->store, evs, k);
	if (r >= 0) {
		for (size_t j = 0; j < k; j++)
			b->status[idx[j]] = BGRUN_SINK_VIA_STORE;
		goto cleanup;
	}
	if (r != -EINVAL) {
		/* The store itself fails: the events go to the spool. */
		r = fail(sink, r, "%s", bgrun_store_errmsg(sink->store));
		goto cleanup;
	}
	/* All or none: find which ones are refused, and store the others. */
	for (size_t j = 0; j < k; j++) {
		r = k == 1 ? r : bgrun_store_put(sink->store, &evs[j]);
		if (r >= 0)
			b->status[idx[j]] = BGRUN_SINK_VIA_STORE;
		else if (r == -EINVAL)
			b->status[idx[j]] = fail(sink, r, "%s",
						 bgrun_store_errmsg(sink->store));
		else
			(void)fail(sink, r, "%s", bgrun_store_errmsg(sink->store));
	}
	r = 0;
cleanup:
	free(evs);
	free(idx);
	return r;
}

static int deliver(struct bgrun_sink *sink, const struct bgrun_event *evs,
		   size_t n)
{
	struct batch b = { .evs = evs, .n = n };
	char why[sizeof(sink->errmsg)] = "";
	int r = 0, first = 0, via = 0, spool_error = 0;

	sink->spooled = false;
	sink->errmsg[0] = '\0';
	b.status = malloc(n * sizeof(*b.status));
	if (b.status == NULL)
		return fail(sink, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		b.status[i] = PENDING;
	if (sink->mode != BGRUN_SINK_EMBEDDED)
		r = via_daemon(sink, &b);
	if (r < 0 && sink->mode == BGRUN_SINK_DAEMON)
		first = r;
	if (any_pending(&b) && sink->mode != BGRUN_SINK_DAEMON) {
		r = via_store(sink, &b);
		if (r < 0 || any_pending(&b))
			first = r < 0 ? r : -EIO;
	}
	(void)snprintf(why, sizeof(why), "%s", sink->errmsg);
	for (size_t i = 0; i < n; i++) {
		if (b.status[i] == PENDING) {
			/* The last resort, kept for the daemon or the next writer. */
			r = sink->db != NULL ? bgrun__spool_write(sink->db, &evs[i])
					     : -ENOENT;
			if (r >= 0)
				sink->spooled = true;
			else if (spool_error == 0)
				spool_error = r;
			if (first == 0)
				first = -EIO;
		} else if (b.status[i] < 0 && first == 0) {
			first = b.status[i];
		} else if (b.status[i] > via) {
			via = b.status[i];
		}
	}
	free(b.status);
	if (spool_error != 0)
		return fail(sink, first, "%s; and not kept in the spool: %s",
			    why[0] ? why : "not stored", strerror(-spool_error));
	if (sink->spooled)
		return fail(sink, first, "%s; kept in the spool %s.spool",
			    why[0] ? why : "not stored", sink->db);
	if (first < 0) {
		sink->spooled = false;
		return fail(sink, first, "%s", why);
	}
	sink->errmsg[0] = '\0';
	return via;
}

int bgrun_sink_put(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	if (sink == NULL || ev == NULL)
		return -EINVAL;
	return deliver(sink, ev, 1);
}

int bgrun_sink_put_batch(struct bgrun_sink *sink,
			 const struct bgrun_event *evs, size_t n)
{
	if (sink == NULL || (evs == NULL && n > 0))
		return -EINVAL;
	if (n == 0)
		return sink->mode == BGRUN_SINK_EMBEDDED ? BGRUN_SINK_VIA_STORE
							 : BGRUN_SINK_VIA_DAEMON;
	return deliver(sink, evs, n);
}
