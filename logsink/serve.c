/* SPDX-License-Identifier: MIT */
/* serve.c: `logsink serve`: options, the store, stopping, the loop (the listener itself is the platform half's: serve-socket.c, serve-pipe.c). */

#include "serve.h"

#include <errno.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often the spool is looked at while running. */
#define REPLAY_EVERY_MS 30000

enum {
	OPT_SOCKET = LSINK_OPT_FIRST_VERB,
	OPT_FOREGROUND,
	OPT_DETACH,
	OPT_READY_FD,
	OPT_ALLOW_ROOT,
	OPT_MAX_CONNS,
	OPT_MAX_PENDING,
	OPT_QUEUE_MAX,
	OPT_IDLE,
	OPT_EXIT_IDLE,
	OPT_BATCH_MAX,
	OPT_DELAY,
	OPT_LOG,
	OPT_FORWARD,
	OPT_FORWARD_HOST,
	OPT_FORWARD_BATCH,
	OPT_FORWARD_CONNS,
	OPT_FORWARD_YIELD,
	OPT_FRAME_TIMEOUT,
	OPT_MAX_PER_PROCESS,
	OPT_RESERVE,
	OPT_STOP,
};

static const struct option options[] = {
	LSINK_COMMON_OPTIONS,
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "detach", no_argument, NULL, OPT_DETACH },
	{ "ready-fd", required_argument, NULL, OPT_READY_FD },
	{ "allow-root", no_argument, NULL, OPT_ALLOW_ROOT },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONNS },
	{ "max-pending", required_argument, NULL, OPT_MAX_PENDING },
	{ "queue-max", required_argument, NULL, OPT_QUEUE_MAX },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "frame-timeout", required_argument, NULL, OPT_FRAME_TIMEOUT },
	{ "max-per-process", required_argument, NULL, OPT_MAX_PER_PROCESS },
	{ "reserve", required_argument, NULL, OPT_RESERVE },
	{ "exit-idle", required_argument, NULL, OPT_EXIT_IDLE },
	{ "batch-max", required_argument, NULL, OPT_BATCH_MAX },
	{ "commit-delay", required_argument, NULL, OPT_DELAY },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "forward", required_argument, NULL, OPT_FORWARD },
	{ "forward-host", required_argument, NULL, OPT_FORWARD_HOST },
	{ "forward-batch", required_argument, NULL, OPT_FORWARD_BATCH },
	{ "forward-connections", required_argument, NULL, OPT_FORWARD_CONNS },
	{ "forward-yield", required_argument, NULL, OPT_FORWARD_YIELD },
	{ "stop", no_argument, NULL, OPT_STOP },
	{ NULL, 0, NULL, 0 },
};

static const char help_text[] =
	"Usage: logsink [--db=PATH] serve [OPTION]...\n"
	"Run the sink daemon: take events on a Unix socket, commit them to the\n"
	"log in groups, and acknowledge each one once it is committed.\n"
	"\n"
	"      --socket=PATH        where to listen (default: $BGRUN_SOCKET, else\n"
	"                           $XDG_RUNTIME_DIR/bgrun/sink.sock, else\n"
	"                           /tmp/bgrun-$UID/sink.sock, for root\n"
	"                           /run/bgrun/sink.sock); its directory\n"
	"                           must be yours alone (mode 0700): it is made\n"
	"                           if missing, with its parents only below\n"
	"                           $XDG_RUNTIME_DIR\n"
	"      --foreground         stay in the foreground (the default)\n"
	"      --detach             run in the background; return once it listens\n"
	"      --log=FILE           append messages to FILE instead of stderr\n"
	"      --allow-root         also take events from root (uid 0)\n"
	"      --max-connections=N  at most N clients at once (default 256)\n"
	"      --max-pending=N      stop reading a client with N events unacked\n"
	"                           (default 1024)\n"
	"      --queue-max=N        stop reading everyone with N events queued\n"
	"                           (default 16384; or 64 MiB of them)\n"
	"      --idle-timeout=DUR   close a silent connection after DUR (default 60s)\n"
	"      --frame-timeout=DUR  close a connection whose frame is not whole DUR\n"
	"                           after its first byte (default 10s)\n"
	"      --max-per-process=N  at most N connections of one process (default 32)\n"
	"      --reserve=N          keep the last N connections for processes that\n"
	"                           hold none (default max-connections/16); when\n"
	"                           all are taken, the one longest without a whole\n"
	"                           frame (a frame-timeout at least) makes room\n"
	"      --exit-idle=DUR      exit once nobody connected for DUR (default: never)\n"
	"      --batch-max=N        events per transaction at most (default 2048)\n"
	"      --commit-delay=DUR   let a transaction wait DUR for more events\n"
	"                           (default 0: commit as soon as the last one ended)\n"
	"      --ready-fd=N         write \"READY PID\" (or \"ERROR MESSAGE\") to\n"
	"                           descriptor N when listening, then close it\n"
	"      --forward=CONNINFO   also ship every event of the log to PostgreSQL\n"
	"                           (a postgresql:// URI or libpq's key=value\n"
	"                           string; 'postgresql://' alone: libpq's PG*\n"
	"                           variables and PGSERVICE), after it is\n"
	"                           committed here; see docs/fleet.md\n"
	"      --forward-host=NAME  the host recorded in PostgreSQL for every\n"
	"                           event (default: the event's own, else this\n"
	"                           machine's name)\n"
	"      --forward-batch=N    events per PostgreSQL transaction (default 2000)\n"
	"      --forward-connections=N\n"
	"                           batches in flight at once, each on a\n"
	"                           connection of its own (1 to 8, default 1)\n"
	"      --forward-yield=DUR  while the daemon is busy storing events,\n"
	"                           forward in its pauses, waiting DUR at most\n"
	"                           (default 5s; 0: never wait)\n"
	"      --stop               stop the daemon serving the socket (and the\n"
	"                           database: --db) and wait until it has exited\n"
	LSINK_COMMON_HELP
	"\n"
	"Started by systemd with socket activation (LISTEN_FDS), it takes its\n"
	"socket from there. SIGTERM or SIGINT: stop accepting, commit and ack\n"
	"what was received, exit 0. On Windows it listens on a named pipe,\n"
	"$BGRUN_SOCKET or \\\\.\\pipe\\bgrun-sink-SID (SID: the user's), that only\n"
	"the user may open; --stop sets the daemon's stop event.\n";


static size_t parse_count(const char *arg, const char *name)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v == 0 ||
	    v > 1u << 24 || arg[0] == '-')
		lsink_usage("--%s: not a count from 1 to 16777216: '%s'", name,
			    lsink_printable(arg));
	return (size_t)v;
}

static uint64_t parse_ms(const char *arg, const char *name)
{
	int64_t ns;

	if (bgrun_parse_duration(arg, &ns) < 0)
		lsink_usage("invalid duration '%s' for --%s: "
			    BGRUN_DURATION_EXPECTED, lsink_printable(arg), name);
	return (uint64_t)(ns / 1000000);
}

/* How long --stop waits for the daemon to commit what it has and exit. */
#define STOP_WAIT_MS 60000

/*
 * `serve --stop`: the daemon says who it is (its HELLO, on a connection
 * checked as every client's), is asked to stop (the platform half:
 * SIGTERM on POSIX, its stop event on Windows), and is waited for.
 */
static int stop_daemon(const char *db, const char *socket)
{
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink_daemon_status st;
	struct bgrun_sink *sink = NULL;
	char *dflt = NULL, err[512];
	const char *path;
	int r, status = LSINK_EXIT_FAILURE;

	so.mode = BGRUN_SINK_DAEMON;
	so.db = db;
	so.socket = socket;
	r = bgrun_sink_new(&sink);
	if (r >= 0)
		r = bgrun_sink_open(sink, &so);
	if (r < 0) {
		lsink_msg("%s", sink != NULL ? bgrun_sink_errmsg(sink)
					     : bgrun_strerror(r));
		goto out;
	}
	path = socket;
	if (path == NULL && bgrun_sink_default_socket(&dflt) >= 0)
		path = dflt;
	r = bgrun_sink_daemon_status(sink, &st);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		(void)printf("no daemon is serving '%s'\n",
			     lsink_printable(path != NULL ? path : "?"));
		status = EXIT_SUCCESS;
		goto out;
	}
	if (r < 0 || st.pid <= 0) {
		lsink_msg("%s", r < 0 ? bgrun_sink_errmsg(sink)
				      : "the daemon did not say its pid");
		goto out;
	}
	path = path != NULL ? path : "?";
	if (lsink_serve_stop_pid(path, st.pid, STOP_WAIT_MS, err,
				 sizeof(err)) < 0) {
		lsink_msg("%s", err);
		goto out;
	}
	(void)printf("stopped the daemon (pid %lld) serving '%s'\n",
		     (long long)st.pid, lsink_printable(path));
	status = EXIT_SUCCESS;
out:
	free(dflt);
	bgrun_sink_close(sink);
	if (lsink_flush_stdout() != 0)
		status = LSINK_EXIT_FAILURE;
	return status;
}

/* A startup failure: one line on stderr, and to whoever waits on --ready-fd. */
int lsink_serve_fail(struct lsink_serve *s, const char *fmt, ...)
{
	char line[1024], said[1040];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	lsink_msg("%s", line);
	if (s->ready_fd >= 0) {
		(void)snprintf(said, sizeof(said), "ERROR %s", line);
		lsink_serve_ready_say(s, said);
	}
	return -1;
}

void lsink_serve_ready_say(struct lsink_serve *s, const char *line)
{
	size_t len = strlen(line), off = 0;
	ssize_t n;

	if (s->ready_fd < 0)
		return;
	while (off <= len) {
		/* The line, then its newline. */
		n = off < len ? write(s->ready_fd, line + off, len - off)
			      : write(s->ready_fd, "\n", 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	(void)close(s->ready_fd);
	s->ready_fd = -1;
}

/* ---- the loop ---- */

void lsink_serve_maybe_done(struct lsink_server *srv)
{
	if (!srv->draining || srv->done || srv->queued > 0 ||
	    srv->n_handles > 0)
		return;
	srv->done = true;
	lsink_writer_stop(&srv->writer);
	/* Nothing may send to the stop handle once it is closed. */
	lsink_serve_stoppers_end(srv);
	uv_close((uv_handle_t *)&srv->stop, NULL);
	uv_close((uv_handle_t *)&srv->wake, NULL);
	uv_close((uv_handle_t *)&srv->sweep, NULL);
	uv_close((uv_handle_t *)&srv->sigterm, NULL);
	uv_close((uv_handle_t *)&srv->sigint, NULL);
}

static void drain(struct lsink_server *srv)
{
	if (srv->draining)
		return;
	srv->draining = true;
	if (srv->listening)
		uv_close((uv_handle_t *)&srv->listener, NULL);
	srv->listening = false;
	lsink_conn_finish_all(srv);
	lsink_serve_maybe_done(srv);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct lsink_server *srv = h->data;

	if (srv->draining) {
		/* A second one: leave now (what was acked is committed). */
		lsink_msg("%s again: exiting without draining",
			  signum == SIGINT ? "SIGINT" : "SIGTERM");
		_exit(1);
	}
	drain(srv);
}

/* The platform's stopper (serve --stop on Windows): as SIGTERM's first time. */
static void on_stop(uv_async_t *h)
{
	drain(h->data);
}

static void on_wake(uv_async_t *h)
{
	struct lsink_server *srv = h->data;

	lsink_conn_results(srv, lsink_writer_take(&srv->writer));
}

static void on_sweep(uv_timer_t *h)
{
	struct lsink_server *srv = h->data;
	uint64_t now = uv_now(&srv->loop);

	lsink_conn_sweep(srv, now);
	if (!srv->draining && now >= srv->replay_at_ms) {
		srv->replay_at_ms = now + REPLAY_EVERY_MS;
		lsink_writer_replay(&srv->writer);
	}
	if (!srv->draining && srv->lim.exit_idle_ms > 0 && srv->n_conns == 0 &&
	    srv->queued == 0 &&
	    now - srv->idle_since_ms >= srv->lim.exit_idle_ms)
		drain(srv);
}

static int run(struct lsink_serve *s)
{
	struct lsink_server *srv = &s->srv;
	int r;

	r = uv_loop_init(&srv->loop);
	if (r < 0)
		return lsink_serve_fail(s, "uv_loop_init: %s", uv_strerror(r));
	srv->staged_tail = &srv->staged;
	srv->listener.data = srv->wake.data = srv->sweep.data = srv;
	srv->sigterm.data = srv->sigint.data = srv->stop.data = srv;
	if (lsink_serve_listen_start(s) < 0)
		return -1;
	srv->listening = true;
	(void)uv_async_init(&srv->loop, &srv->wake, on_wake);
	(void)uv_async_init(&srv->loop, &srv->stop, on_stop);
	if (lsink_serve_stoppers_start(s) < 0)
		return -1;
	(void)uv_timer_init(&srv->loop, &srv->sweep);
	(void)uv_signal_init(&srv->loop, &srv->sigterm);
	(void)uv_signal_init(&srv->loop, &srv->sigint);
	(void)uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
	(void)uv_signal_start(&srv->sigint, on_signal, SIGINT);
	srv->idle_since_ms = uv_now(&srv->loop);
	srv->replay_at_ms = uv_now(&srv->loop) + REPLAY_EVERY_MS;
	(void)uv_timer_start(&srv->sweep, on_sweep, 1000, 1000);
	srv->writer.wake = &srv->wake;
	r = lsink_writer_start(&srv->writer);
	if (r < 0)
		return lsink_serve_fail(s, "cannot start the writer thread: %s",
				    strerror(-r));
	if (s->ready_fd >= 0) {
		char line[64];

		(void)snprintf(line, sizeof(line), "READY %d", (int)getpid());
		lsink_serve_ready_say(s, line);
	}
	(void)uv_run(&srv->loop, UV_RUN_DEFAULT);
	return 0;
}

/* ---- the verb ---- */

static void cleanup(struct lsink_serve *s)
{
	/* After the writer, which tells it of commits. */
	lsink_forward_stop(s->forward);
	s->forward = NULL;
	if (s->ready_fd >= 0)
		(void)close(s->ready_fd);
	bgrun_store_close(s->store);
	bgrun_store_close(s->srv.scratch);
	/*
	 * The one-daemon lock last: `serve --stop` waits for it on POSIX,
	 * and the store's close (a checkpoint) may take a while; released
	 * before it, --stop returned while the daemon still ran.
	 */
	lsink_serve_unlisten(s);
	free(s->db_alloc);
	free(s->db_real);
	free(s->socket);
}

static int open_store(struct lsink_serve *s)
{
	int64_t dev, ino;
	int r;

	if (s->db == NULL) {
		r = bgrun_store_default_path(&s->db_alloc);
		if (r < 0)
			return lsink_serve_fail(
				s, "no event log: set BGRUN_DB, "
				   "XDG_STATE_HOME or HOME, or use --db");
		s->db = s->db_alloc;
	}
	r = bgrun_store_new(&s->store);
	if (r < 0)
		return lsink_serve_fail(s, "%s", bgrun_strerror(r));
	r = bgrun_store_open(s->store, s->db, 0);
	if (r < 0) {
		char why[1024];

		/* In the words of every other verb. */
		lsink_open_error_text(why, sizeof(why), s->db, r,
				      bgrun_store_errmsg(s->store));
		return lsink_serve_fail(s, "%s", why);
	}
	/* Clients check that we write the database they mean. */
	s->db_real = realpath(s->db, NULL);
	r = lsink_serve_file_identity(s->db, &dev, &ino);
	if (r < 0)
		return lsink_serve_fail(s, "'%s': %s", lsink_printable(s->db),
				    bgrun_strerror(r));
	s->srv.hello = (struct bgrun_wire_hello){
		BGRUN_WIRE_VERSION, BGRUN_WIRE_MAX_FRAME, getpid(),
		s->db_real != NULL ? s->db_real : s->db, dev, ino,
		bgrun_clock_ns(BGRUN_CLOCK_REALTIME),
		BGRUN_NULL, BGRUN_NULL,
	};
	return 0;
}

int lsink_serve_main(int argc, char **argv, const char *db)
{
	struct lsink_serve s = {
		.db = db, .ready_fd = -1, .lock_fd = -1, .listen_fd = -1,
		.srv.lim = { .max_conns = 256, .max_pending = 1024,
			     .queue_max = 16384, .queue_bytes = 64 << 20,
			     .write_max = 1 << 20, .idle_ms = 60000,
			     .frame_ms = 10000, .max_per_pid = 32,
			     .reserve = SIZE_MAX },
		.srv.writer = { .batch_max = 2048 },
		.fwd = { .batch_max = 2000, .connections = 1,
			 .yield_ms = 5000 },
	};
	int opt, r, status = LSINK_EXIT_FAILURE;
	const char *v;
	bool stop = false;

	/* The configuration file's [serve] keys, under the options. */
	if (lsink_config != NULL) {
		s.fwd.conninfo = bgrun_config_get(lsink_config, "serve",
						  "forward", NULL);
		v = bgrun_config_get(lsink_config, "serve", "forward-host", NULL);
		if (v != NULL && v[0] != '\0')
			s.fwd.host = v;
	}
	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			lsink_help(help_text);
		case LSINK_OPT_DB:
			s.db = optarg;
			break;
		case OPT_SOCKET:
			free(s.socket);
			s.socket = strdup(optarg);
			break;
		case OPT_FOREGROUND:
			s.detach = false;
			break;
		case OPT_DETACH:
			s.detach = true;
			break;
		case OPT_READY_FD:
			s.ready_fd = (int)parse_count(optarg, "ready-fd");
			if (!lsink_serve_ready_fd_ok(s.ready_fd))
				lsink_usage("--ready-fd: %d is not open",
					    s.ready_fd);
			break;
		case OPT_ALLOW_ROOT:
			s.srv.lim.allow_root = true;
			break;
		case OPT_MAX_CONNS:
			s.srv.lim.max_conns =
				parse_count(optarg, "max-connections");
			break;
		case OPT_MAX_PENDING:
			s.srv.lim.max_pending =
				parse_count(optarg, "max-pending");
			break;
		case OPT_QUEUE_MAX:
			s.srv.lim.queue_max = parse_count(optarg, "queue-max");
			break;
		case OPT_IDLE:
			s.srv.lim.idle_ms = parse_ms(optarg, "idle-timeout");
			break;
		case OPT_FRAME_TIMEOUT:
			s.srv.lim.frame_ms = parse_ms(optarg, "frame-timeout");
			break;
		case OPT_MAX_PER_PROCESS:
			s.srv.lim.max_per_pid =
				parse_count(optarg, "max-per-process");
			break;
		case OPT_RESERVE:
			s.srv.lim.reserve = strcmp(optarg, "0") == 0
				? 0 : parse_count(optarg, "reserve");
			break;
		case OPT_EXIT_IDLE:
			s.srv.lim.exit_idle_ms = parse_ms(optarg, "exit-idle");
			break;
		case OPT_BATCH_MAX:
			s.srv.writer.batch_max =
				parse_count(optarg, "batch-max");
			break;
		case OPT_DELAY:
			s.srv.writer.delay_ns =
				(int64_t)parse_ms(optarg, "commit-delay") *
				1000000;
			break;
		case OPT_LOG:
			s.log = optarg;
			break;
		case OPT_FORWARD:
			s.fwd.conninfo = optarg;
			break;
		case OPT_FORWARD_HOST:
			if (optarg[0] == '\0')
				lsink_usage("--forward-host: an empty name");
			s.fwd.host = optarg;
			break;
		case OPT_FORWARD_BATCH:
			s.fwd.batch_max = parse_count(optarg, "forward-batch");
			break;
		case OPT_FORWARD_CONNS:
			s.fwd.connections =
				parse_count(optarg, "forward-connections");
			if (s.fwd.connections > LSINK_FORWARD_CONNS_MAX)
				lsink_usage("--forward-connections: at most 8");
			break;
		case OPT_FORWARD_YIELD:
			s.fwd.yield_ms = parse_ms(optarg, "forward-yield");
			break;
		case OPT_STOP:
			stop = true;
			break;
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("serve: unexpected argument '%s'",
			    lsink_printable(argv[optind]));
	if (s.srv.lim.reserve == SIZE_MAX)
		s.srv.lim.reserve = s.srv.lim.max_conns / 16;
	else if (s.srv.lim.reserve >= s.srv.lim.max_conns)
		lsink_usage("--reserve=%zu: less than --max-connections=%zu, please",
			    s.srv.lim.reserve, s.srv.lim.max_conns);
	if (stop) {
		r = stop_daemon(s.db, s.socket);
		free(s.socket);
		return r;
	}
	if (s.detach) {
		free(s.socket);
		return lsink_serve_detach(argc, argv, db);
	}
	if (s.log != NULL) {
		int fd = open(s.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
			      0600);

		if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
			lsink_serve_fail(&s, "cannot open '%s': %s",
				     lsink_printable(s.log), strerror(errno));
			goto out;
		}
		(void)close(fd);
	}
	if (s.socket == NULL &&
	    (r = bgrun_sink_default_socket(&s.socket)) < 0) {
		lsink_serve_fail(&s, "no socket path: %s", bgrun_strerror(r));
		goto out;
	}
	if (lsink_serve_listen(&s) < 0)
		goto out;
	/*
	 * SQLite keeps memory statistics under a global mutex taken around
	 * every allocation; nothing here reads them, and not keeping them
	 * takes 6% off the writer's instructions per event. Possible only
	 * before SQLite's first use (which is next).
	 */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (open_store(&s) < 0)
		goto out;
	r = bgrun_store_new(&s.srv.scratch);
	if (r >= 0)
		r = bgrun_store_open_scratch(s.srv.scratch);
	if (r < 0) {
		lsink_serve_fail(&s, "cannot open an in-memory database: %s",
				 s.srv.scratch != NULL
					 ? bgrun_store_errmsg(s.srv.scratch)
					 : bgrun_strerror(r));
		goto out;
	}
	if (s.fwd.conninfo != NULL) {
		char err[512];

		s.fwd.db = s.db;
		r = lsink_forward_start(&s.fwd, &s.forward, err, sizeof(err));
		if (r < 0) {
			lsink_serve_fail(&s, "%s", err[0] ? err : bgrun_strerror(r));
			goto out;
		}
	}
	s.srv.writer.store = s.store;
	s.srv.writer.db = s.db;
	s.srv.writer.forward = s.forward;
	lsink_msg("serving '%s', writing '%s'", lsink_printable(s.socket),
		  lsink_printable(s.db));
	if (run(&s) < 0)
		goto out;
	lsink_msg("stopped: %llu events committed in %llu transactions",
		  (unsigned long long)s.srv.n_events,
		  (unsigned long long)s.srv.writer.n_commits);
	status = uv_loop_close(&s.srv.loop) == 0 ? 0 : LSINK_EXIT_FAILURE;
out:
	cleanup(&s);
	return status;
}
