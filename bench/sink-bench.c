/* SPDX-License-Identifier: MIT */
/* sink-bench.c: the sink daemon against the embedded store: acked events/s, ack latency, daemon RSS, hook time. */

/*
 * Usage: sink-bench [--quick] [--events N] [--window N] [--rounds N]
 *                   [--hooks N] [--dir DIR] [--logsink PATH] [--csv FILE]
 *                   [--floor PATH]
 *                   [--only SCENARIO] [--clients N] [--serve-arg ARG]...
 *
 * For 1, 8 and 32 clients (threads of this program, each on its own
 * persistent connection or store), in one run on the same machine:
 *   daemon, pipelined   raw protocol, up to --window (256) events in flight
 *                       per client, its frames encoded before the clock
 *                       starts (so that the clients' encoding does not
 *                       take the daemon's CPUs);
 *                       latency = frame written -> its ACK read
 *                       (the writer commits what has arrived: the more in
 *                       flight, the larger its transactions; see ev/txn);
 *                       run --rounds (3) times, the median round reported
 *   daemon, put         bgrun_sink_put one event at a time (the client API)
 *   embedded, put       bgrun_sink_put with BGRUN_SINK=embedded: each put
 *                       is one transaction of the client's own store
 *   embedded, put, processes   the same from client processes (forked),
 *                       as bgrun's recorders and hooks write: no lock of
 *                       SQLite's shared by the clients
 * Each scenario starts a fresh database (and daemon), writes N events of
 * the shape a bgrun supervisor writes (argv, rusage...), and reports
 * events/s (first send to last ack) and per-event latency p50/p99/max.
 * The daemon's peak RSS is VmHWM from /proc/PID/status at the end of its
 * scenario. Then `logsink send --from-hg-env` is spawned --hooks times
 * (bgrun_spawn, ensurestart, waited for) with a logtoprocess environment,
 * with a daemon and without; its wall time is spawn to reap. Before it,
 * the floors of a hook, spawned the same way: /bin/true, and hook-floor
 * (bench/hook-floor.c, --floor PATH) making one record durable, an
 * append or an SQLite row.
 * --only runs the scenarios whose name starts with SCENARIO ("daemon,
 * pipelined", "hook"...), --clients those with N clients. --serve-arg
 * gives every daemon one more option (--forward=..., to see that
 * forwarding leaves local acks alone).
 */

#include "bench-sink.h"
#include "bgrun.h"
#include "bgrun/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SINK_BENCH_LOGSINK
#define SINK_BENCH_LOGSINK "logsink"
#endif

/*
 * Events in flight per pipelining client (--window): a quarter of what
 * the daemon lets a connection have pending (--max-pending, 1024).
 */
static int window = 256;
/* Rounds of the pipelined scenario (--rounds): the median is reported. */
#define MAX_ROUNDS 15
static int rounds = 3;
#define MAX_CLIENTS 32

enum kind { PIPELINED, PUT_DAEMON, PUT_EMBEDDED, PUT_EMBEDDED_PROC, HOOK_DAEMON,
	    HOOK_EMBEDDED, HOOK_TRUE, HOOK_APPEND, HOOK_SQLITE_NOSYNC, HOOK_SQLITE,
	    HOOK_SQLITE7 };

static const char *const kind_names[] = {
	[PIPELINED] = "daemon, pipelined",
	[PUT_DAEMON] = "daemon, bgrun_sink_put",
	[PUT_EMBEDDED] = "embedded, bgrun_sink_put",
	[PUT_EMBEDDED_PROC] = "embedded, put, processes",
	[HOOK_DAEMON] = "hook: logsink send, daemon",
	[HOOK_EMBEDDED] = "hook: logsink send, embedded",
	[HOOK_TRUE] = "hook floor: /bin/true",
	/* bench/hook-floor.c: the least a durable hook costs. */
	[HOOK_APPEND] = "hook floor: append + fdatasync",
	[HOOK_SQLITE_NOSYNC] = "hook floor: SQLite row",
	[HOOK_SQLITE] = "hook floor: SQLite row + flush",
	[HOOK_SQLITE7] = "hook floor: 7 pages + flush",
};
/* hook-floor's mode for each of its kinds. */
static const char *const floor_modes[] = {
	[HOOK_APPEND] = "append",
	[HOOK_SQLITE_NOSYNC] = "sqlite-nosync",
	[HOOK_SQLITE] = "sqlite",
	[HOOK_SQLITE7] = "sqlite-7",
};

/* Whether kind is one of hook-floor's. */
static bool is_floor(enum kind kind)
{
	return floor_modes[kind] != NULL;
}

static const char *logsink = SINK_BENCH_LOGSINK;
#ifndef SINK_BENCH_FLOOR
#define SINK_BENCH_FLOOR "hook-floor"
#endif
static const char *hook_floor = SINK_BENCH_FLOOR;
static const char *base_dir;
static int run_no;

struct client {
	pthread_t thread;
	enum kind kind;
	const char *db, *sock;
	int n;                 /* events to write */
	int64_t *lat;          /* per event, ns */
	int done;              /* acked or stored */
	int64_t first_ns, last_ns;
};

static pthread_barrier_t start_line;
/*
 * The start line of client processes (PUT_EMBEDDED_PROC): each says it is
 * ready on ready_pipe, then reads go_pipe until the parent closes it.
 */
static int ready_pipe[2] = { -1, -1 }, go_pipe[2] = { -1, -1 };

static void start_wait(void)
{
	char b = 0;

	if (write(ready_pipe[1], &b, 1) != 1)
		_exit(1);
	while (read(go_pipe[0], &b, 1) < 0 && errno == EINTR)
		;
}

static void die(const char *what)
{
	fprintf(stderr, "sink-bench: %s\n", what);
	exit(1);
}

static int connect_to(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot connect to the daemon");
	return fd;
}

/*
 * The client's events, each encoded once before the clock starts (frame
 * i + 1 begins at off[i]): what is timed is the daemon, not the encoder.
 */
static void encode_all(struct client *c, struct bgrun_wire_buf *frames,
		       size_t *off)
{
	struct bgrun_event ev;

	for (int i = 0; i < c->n; i++) {
		off[i] = frames->len;
		bench_make_event(&ev, i);
		if (bgrun_wire_put_event(frames, (uint32_t)i + 1, &ev) < 0)
			die("encoding");
	}
	off[c->n] = frames->len;
}

/* Reads what came and takes each whole ACK in it. */
static void read_acks(struct client *c, int fd, uint8_t *in, size_t *have,
		      const int64_t *sent)
{
	size_t used = 0, size;
	ssize_t k;

	k = recv(fd, in + *have, (1 << 16) - *have, 0);
	if (k < 0 && errno == EINTR)
		return;
	if (k <= 0)
		die("the daemon closed the connection");
	*have += (size_t)k;
	while (bgrun_wire_frame_size(in + used, *have - used, 1 << 15,
				      &size) == 1) {
		struct bgrun_wire_msg m;
		int64_t t;

		if (bgrun_wire_decode(in + used, size, &m, NULL) < 0 ||
		    m.type != BGRUN_WIRE_ACK || m.seq == 0 ||
		    m.seq > (uint32_t)c->n)
			die("unexpected answer from the daemon");
		t = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		c->lat[c->done++] = t - sent[m.seq];
		c->last_ns = t;
		bgrun_wire_msg_release(&m);
		used += size;
	}
	memmove(in, in + used, *have - used);
	*have -= used;
}

/* Raw protocol, --window events in flight: the daemon's best case. */
static void run_pipelined(struct client *c)
{
	int64_t *sent = calloc((size_t)c->n + 1, sizeof(*sent));
	size_t *off = calloc((size_t)c->n + 1, sizeof(*off));
	struct bgrun_wire_buf frames = { 0 };
	uint8_t *in = malloc(1 << 16);
	size_t have = 0;
	int fd = connect_to(c->sock), next = 0;

	if (sent == NULL || off == NULL || in == NULL)
		die("out of memory");
	encode_all(c, &frames, off);
	(void)pthread_barrier_wait(&start_line);
	c->first_ns = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	while (c->done < c->n) {
		/* Top the window up, in one write. */
		int first = next;

		while (next < c->n && next - c->done < window)
			next++;
		if (next > first) {
			int64_t t = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);

			for (int s = first + 1; s <= next; s++)
				sent[s] = t;
			/* errno is send's when it fails. */
			if (bench_send_all(fd, frames.data + off[first],
					   off[next] - off[first]) < 0)
				die("send");
		}
		read_acks(c, fd, in, &have, sent);
	}
	bgrun_wire_buf_free(&frames);
	free(in);
	free(off);
	free(sent);
	(void)close(fd);
}

/* The client API, one event per call (daemon or embedded). */
static void run_put(struct client *c)
{
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	int want = c->kind == PUT_DAEMON ? BGRUN_SINK_VIA_DAEMON : BGRUN_SINK_VIA_STORE;

	o.mode = c->kind == PUT_DAEMON ? BGRUN_SINK_DAEMON : BGRUN_SINK_EMBEDDED;
	if (c->kind == PUT_EMBEDDED_PROC)
		want = BGRUN_SINK_VIA_STORE;
	o.db = c->db;
	o.socket = c->sock;
	if (bgrun_sink_new(&sink) < 0)
		die("bgrun_sink_new");
	if (bgrun_sink_open(sink, &o) < 0)
		die(bgrun_sink_errmsg(sink));
	/* Connected (or the store opened) before the clock starts. */
	bench_make_event(&ev, 0);
	if (bgrun_sink_put(sink, &ev) != want)
		die(bgrun_sink_errmsg(sink));
	if (c->kind == PUT_EMBEDDED_PROC)
		start_wait();
	else
		(void)pthread_barrier_wait(&start_line);
	c->first_ns = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	for (int i = 1; i <= c->n; i++) {
		int64_t t;

		bench_make_event(&ev, i);
		t = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		if (bgrun_sink_put(sink, &ev) != want)
			die(bgrun_sink_errmsg(sink));
		c->last_ns = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		c->lat[c->done++] = c->last_ns - t;
	}
	bgrun_sink_close(sink);
}

static void *client_main(void *arg)
{
	struct client *c = arg;

	if (c->kind == PIPELINED)
		run_pipelined(c);
	else
		run_put(c);
	return NULL;
}

/* ---- the daemon ---- */

struct daemon {
	struct bgrun_child *child;
	pid_t pid;
	char log[600];
};

/* --serve-arg ARG (repeated): more options of every daemon started. */
#define MAX_SERVE_ARGS 8
static const char *serve_args[MAX_SERVE_ARGS];
static int n_serve_args;

static void daemon_start(struct daemon *d, const char *db, const char *sock)
{
	const char *argv[8 + MAX_SERVE_ARGS] = { logsink, "--db", db, "serve",
						 "--socket", sock,
						 "--ready-fd=3" };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char line[256] = "";
	ssize_t n;
	int p[2];

	for (int i = 0; i < n_serve_args; i++)
		argv[7 + i] = serve_args[i];
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe");
	o.argv = argv;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	(void)snprintf(d->log, sizeof(d->log), "%s.log", db);
	o.err = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = d->log };
	d->pid = bgrun_spawn(&o, &d->child);
	(void)close(p[1]);
	if (d->pid < 0)
		die("cannot start logsink serve (--logsink PATH?)");
	n = read(p[0], line, sizeof(line) - 1);
	(void)close(p[0]);
	if (n <= 0 || strncmp(line, "READY", 5) != 0)
		die("the daemon did not start");
}

/* VmHWM of pid, in kB (-1 if unknown). */
static long peak_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	(void)fclose(f);
	return kb;
}

/* Stops it; the mean number of events per transaction it reported. */
static double daemon_stop(struct daemon *d)
{
	unsigned long long events = 0, txns = 0;
	struct bgrun_status st;
	char line[512];
	FILE *f;

	(void)bgrun_child_kill(d->child, SIGTERM);
	(void)bgrun_child_wait(d->child, -1, &st);
	bgrun_child_free(d->child);
	f = fopen(d->log, "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		(void)sscanf(line, "logsink: stopped: %llu events committed in %llu",
			     &events, &txns);
	if (f != NULL)
		(void)fclose(f);
	return txns > 0 ? (double)events / (double)txns : 0;
}

/* ---- results ---- */

/* Nearest rank. */
static int64_t pct(const int64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (n == 0)
		return 0;
	return sorted[rank == 0 ? 0 : rank - 1 < n ? rank - 1 : n - 1];
}

static FILE *csv;

static void report(enum kind kind, int clients, int64_t *lat, size_t n,
		   double seconds, long rss_kb, double per_txn)
{
	char rate[32] = "-", rss[32] = "-", txn[32] = "-";

	qsort(lat, n, sizeof(*lat), bench_cmp64);
	if (seconds > 0)
		(void)snprintf(rate, sizeof(rate), "%.0f", (double)n / seconds);
	if (rss_kb >= 0)
		(void)snprintf(rss, sizeof(rss), "%.1f", (double)rss_kb / 1024);
	if (per_txn > 0)
		(void)snprintf(txn, sizeof(txn), "%.1f", per_txn);
	printf("%-30s %7d %7zu %8.3f %9s %9.1f %9.1f %9.1f %9.1f %8s %7s\n",
	       kind_names[kind], clients, n, seconds, rate,
	       (double)pct(lat, n, 50) / 1e3, (double)pct(lat, n, 90) / 1e3,
	       (double)pct(lat, n, 99) / 1e3,
	       n ? (double)lat[n - 1] / 1e3 : 0.0, rss, txn);
	(void)fflush(stdout);
	if (csv != NULL)
		fprintf(csv, "\"%s\",%d,%zu,%.6f,%s,%.1f,%.1f,%.1f,%.1f,%s,%s\n",
			kind_names[kind], clients, n, seconds,
			seconds > 0 ? rate : "", (double)pct(lat, n, 50) / 1e3,
			(double)pct(lat, n, 90) / 1e3,
			(double)pct(lat, n, 99) / 1e3,
			n ? (double)lat[n - 1] / 1e3 : 0.0, rss_kb >= 0 ? rss : "",
			per_txn > 0 ? txn : "");
}

static void paths(char *db, char *sock)
{
	run_no++;
	(void)snprintf(db, 512, "%s/run%d.db", base_dir, run_no);
	(void)snprintf(sock, 108, "%s/s%d.sock", base_dir, run_no);
}

/*
 * The embedded clients as processes (as bgrun's recorders and hooks are):
 * each forked, opening its own store, its results in shared memory.
 */
static void run_processes(struct client *c, int clients, int events,
			  const char *db)
{
	struct client *shared;
	pid_t pids[MAX_CLIENTS];
	char b;

	shared = mmap(NULL, sizeof(*shared) * (size_t)clients,
		      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || pipe2(ready_pipe, O_CLOEXEC) < 0 ||
	    pipe2(go_pipe, O_CLOEXEC) < 0)
		die("out of memory");
	for (int i = 0; i < clients; i++) {
		shared[i] = (struct client){ .kind = PUT_EMBEDDED_PROC, .db = db,
					     .n = events / clients +
						  (i < events % clients) };
		shared[i].lat = mmap(NULL, (size_t)shared[i].n * sizeof(int64_t) + 1,
				     PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared[i].lat == MAP_FAILED)
			die("out of memory");
	}
	(void)fflush(stdout);
	for (int i = 0; i < clients; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			(void)close(go_pipe[1]);
			run_put(&shared[i]);
			_exit(0);
		}
	}
	(void)close(ready_pipe[1]);
	(void)close(go_pipe[0]);
	for (int i = 0; i < clients; i++)
		if (read(ready_pipe[0], &b, 1) != 1)
			die("a client process failed");
	(void)close(go_pipe[1]);
	for (int i = 0; i < clients; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			die("a client process failed");
	}
	(void)close(ready_pipe[0]);
	memcpy(c, shared, sizeof(*shared) * (size_t)clients);
	(void)munmap(shared, sizeof(*shared) * (size_t)clients);
}

/* One run of a scenario: fresh database (and daemon), clients, results. */
struct run {
	int64_t *lat;          /* per event, ns */
	size_t n;
	double seconds;
	long rss_kb;           /* the daemon's peak, or -1 */
	double per_txn;        /* events per transaction, or 0 */
};

static void run_once(enum kind kind, int clients, int events, struct run *r)
{
	struct client c[MAX_CLIENTS];
	char db[512], sock[108];
	struct daemon d = { 0 };
	int64_t first = INT64_MAX, last = 0;

	*r = (struct run){ .rss_kb = -1 };
	paths(db, sock);
	if (kind != PUT_EMBEDDED && kind != PUT_EMBEDDED_PROC)
		daemon_start(&d, db, sock);
	r->lat = malloc((size_t)events * sizeof(*r->lat));
	if (r->lat == NULL ||
	    pthread_barrier_init(&start_line, NULL, (unsigned)clients) != 0)
		die("out of memory");
	if (kind == PUT_EMBEDDED_PROC) {
		run_processes(c, clients, events, db);
		goto gather;
	}
	for (int i = 0; i < clients; i++) {
		c[i] = (struct client){ .kind = kind, .db = db, .sock = sock,
					.n = events / clients + (i < events % clients) };
		c[i].lat = malloc((size_t)c[i].n * sizeof(int64_t) + 1);
		if (c[i].lat == NULL ||
		    pthread_create(&c[i].thread, NULL, client_main, &c[i]) != 0)
			die("cannot start a client");
	}
	for (int i = 0; i < clients; i++)
		(void)pthread_join(c[i].thread, NULL);
gather:
	for (int i = 0; i < clients; i++) {
		memcpy(r->lat + r->n, c[i].lat, (size_t)c[i].done * sizeof(int64_t));
		r->n += (size_t)c[i].done;
		if (c[i].first_ns < first)
			first = c[i].first_ns;
		if (c[i].last_ns > last)
			last = c[i].last_ns;
		if (kind == PUT_EMBEDDED_PROC)
			(void)munmap(c[i].lat, (size_t)c[i].n * sizeof(int64_t) + 1);
		else
			free(c[i].lat);
	}
	(void)pthread_barrier_destroy(&start_line);
	if (kind != PUT_EMBEDDED && kind != PUT_EMBEDDED_PROC) {
		r->rss_kb = peak_rss_kb(d.pid);
		r->per_txn = daemon_stop(&d);
	}
	r->seconds = (double)(last - first) / 1e9;
}

static int cmp_rate(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	double rx = (double)x->n / x->seconds, ry = (double)y->n / y->seconds;

	return (rx > ry) - (rx < ry);
}

/*
 * A scenario, run `rounds` times (the pipelined one; a second or less
 * each, where a neighbour's burst on this shared machine weighs most):
 * the row is the median round, and the rounds' events/s follow it.
 */
static void scenario(enum kind kind, int clients, int events, long *max_rss)
{
	struct run runs[MAX_ROUNDS];
	int k = kind == PIPELINED ? rounds : 1;

	for (int i = 0; i < k; i++) {
		run_once(kind, clients, events, &runs[i]);
		if (runs[i].rss_kb > *max_rss)
			*max_rss = runs[i].rss_kb;
	}
	qsort(runs, (size_t)k, sizeof(runs[0]), cmp_rate);
	report(kind, clients, runs[k / 2].lat, runs[k / 2].n,
	       runs[k / 2].seconds, runs[k / 2].rss_kb, runs[k / 2].per_txn);
	if (k > 1) {
		printf("  (median of %d rounds; events/s of each:", k);
		for (int i = 0; i < k; i++)
			printf(" %.0f", (double)runs[i].n / runs[i].seconds);
		printf(")\n");
	}
	for (int i = 0; i < k; i++)
		free(runs[i].lat);
}

/* One kind of hook process: how it is started, and what it took. */
struct hook_run {
	enum kind kind;
	char db[512], sock[108], env_db[600], env_sock[200], pid[32];
	const char *argv[4];
	const char *env[10];
	struct bgrun_spawn_opts o;
	struct daemon d;
	int64_t *lat, *cpu;
};

static void hook_setup(struct hook_run *h, enum kind kind, int k)
{
	const char *env[] = { "EVENT=commandfinish", h->pid,
			      "MSG1=status exited 0 after 0.05 seconds\n",
			      "OPT_RETURN_CODE=0", "OPT_DURATION=0.0512345",
			      "OPT_CANONICAL_COMMAND=status", h->env_db, h->env_sock,
			      "BGRUN_SINK=", NULL };

	h->kind = kind;
	paths(h->db, h->sock);
	(void)snprintf(h->env_db, sizeof(h->env_db), "BGRUN_DB=%s", h->db);
	(void)snprintf(h->env_sock, sizeof(h->env_sock), "BGRUN_SOCKET=%s", h->sock);
	(void)snprintf(h->pid, sizeof(h->pid), "HGPID=%d", (int)getpid());
	memcpy(h->env, env, sizeof(env));
	h->lat = malloc((size_t)k * sizeof(*h->lat));
	h->cpu = malloc((size_t)k * sizeof(*h->cpu));
	if (h->lat == NULL || h->cpu == NULL)
		die("out of memory");
	if (kind == HOOK_TRUE) {
		h->argv[0] = "/bin/true";
	} else if (is_floor(kind)) {
		/* Its files in a directory of its own, where db would be. */
		if (mkdir(h->db, 0700) < 0)
			die("cannot make the floor's directory");
		h->argv[0] = hook_floor;
		h->argv[1] = floor_modes[kind];
		h->argv[2] = h->db;
	} else {
		h->argv[0] = logsink;
		h->argv[1] = "send";
		h->argv[2] = "--from-hg-env";
	}
	h->o = (struct bgrun_spawn_opts)BGRUN_SPAWN_OPTS_INIT;
	h->o.argv = h->argv;
	h->o.env_set = h->env;
	if (kind == HOOK_DAEMON)
		daemon_start(&h->d, h->db, h->sock);
}

static void hook_once(struct hook_run *h, int i)
{
	struct bgrun_child *child;
	struct bgrun_status st;

	if (bgrun_spawn(&h->o, &child) < 0 || bgrun_child_wait(child, -1, &st) < 0)
		die(is_floor(h->kind) ? "cannot run hook-floor (--floor PATH?)"
					   : "cannot run logsink send");
	bgrun_child_free(child);
	if (!st.exited || st.exit_code != 0)
		die(is_floor(h->kind) ? "hook-floor failed" : "logsink send failed");
	h->lat[i] = st.duration_ns;
	h->cpu[i] = st.rusage.user_cpu_ns + st.rusage.sys_cpu_ns;
}

static void hook_report(struct hook_run *h, int k)
{
	if (h->kind == HOOK_DAEMON)
		(void)daemon_stop(&h->d);
	report(h->kind, 1, h->lat, (size_t)k, 0, -1, 0);
	/* CPU time is what the machine's load does not stretch. */
	qsort(h->cpu, (size_t)k, sizeof(*h->cpu), bench_cmp64);
	printf("%-30s %7s %7s %8s %9s %9.1f %9.1f %9.1f %9.1f\n", "  its CPU (user+sys)",
	       "", "", "", "", (double)pct(h->cpu, (size_t)k, 50) / 1e3,
	       (double)pct(h->cpu, (size_t)k, 90) / 1e3,
	       (double)pct(h->cpu, (size_t)k, 99) / 1e3, (double)h->cpu[k - 1] / 1e3);
	if (csv != NULL)
		fprintf(csv, "\"%s (cpu)\",1,%d,,,%.1f,%.1f,%.1f,%.1f,,\n",
			kind_names[h->kind], k, (double)pct(h->cpu, (size_t)k, 50) / 1e3,
			(double)pct(h->cpu, (size_t)k, 90) / 1e3,
			(double)pct(h->cpu, (size_t)k, 99) / 1e3,
			(double)h->cpu[k - 1] / 1e3);
	free(h->lat);
	free(h->cpu);
}

/*
 * The hook processes, `logsink send --from-hg-env` as logtoprocess runs
 * it and the floors beside it, k of each, interleaved: one of every kind
 * a round, the order turning each round, so that what the machine does
 * meanwhile falls on all of them alike (run one kind after the other,
 * /bin/true's p50 moved by 40% between runs here).
 */
static void hooks(const enum kind *kinds, int nk, int k)
{
	struct hook_run *h = calloc((size_t)nk, sizeof(*h));

	if (h == NULL)
		die("out of memory");
	for (int j = 0; j < nk; j++)
		hook_setup(&h[j], kinds[j], k);
	for (int i = 0; i < k; i++)
		for (int j = 0; j < nk; j++)
			hook_once(&h[(i + j) % nk], i);
	for (int j = 0; j < nk; j++)
		hook_report(&h[j], k);
	free(h);
}

/* The machine is shared: say how busy it was. */
static const char *loadavg(void)
{
	static char buf[64] = "?";
	FILE *f = fopen("/proc/loadavg", "re");

	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) != NULL)
			buf[strcspn(buf, " ")] = '\0';
		(void)fclose(f);
	}
	return buf;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

/* Whether --only (a prefix of a scenario's name, or none) selects kind. */
static bool wanted(const char *only, enum kind kind)
{
	return only == NULL ||
	       strncmp(kind_names[kind], only, strlen(only)) == 0;
}

int main(int argc, char **argv)
{
	static const int client_counts[] = { 1, 8, 32 };
	static const enum kind kinds[] = { PIPELINED, PUT_DAEMON, PUT_EMBEDDED,
					   PUT_EMBEDDED_PROC };
	const char *csv_path = NULL, *dir = NULL, *only = NULL;
	int only_clients = 0;
	int events = 40000, nhooks = 300;
	long max_rss = -1;
	char tmp[] = "/tmp/sink-bench.XXXXXX";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			events = 3200;
			nhooks = 50;
		} else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) {
			events = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
			window = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--hooks") == 0 && i + 1 < argc) {
			nhooks = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strcmp(argv[i], "--logsink") == 0 && i + 1 < argc) {
			logsink = argv[++i];
		} else if (strcmp(argv[i], "--floor") == 0 && i + 1 < argc) {
			hook_floor = argv[++i];
		} else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
			csv_path = argv[++i];
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else if (strcmp(argv[i], "--serve-arg") == 0 && i + 1 < argc &&
			   n_serve_args < MAX_SERVE_ARGS) {
			serve_args[n_serve_args++] = argv[++i];
		} else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc) {
			only_clients = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: sink-bench [--quick] [--events N] "
				"[--window N] [--rounds N] [--hooks N] [--dir DIR] "
				"[--logsink PATH] [--floor PATH] "
				"[--csv FILE] [--only SCENARIO] [--clients N] "
				"[--serve-arg ARG]...\n");
			return 2;
		}
	}
	if (events < 32 || nhooks < 1 || window < 1 || rounds < 1 ||
	    rounds > MAX_ROUNDS)
		die("--events must be at least 32, --hooks and --window at "
		    "least 1, --rounds 1 to 15");
	(void)signal(SIGPIPE, SIG_IGN);
	base_dir = dir != NULL ? dir : mkdtemp(tmp);
	if (base_dir == NULL)
		die("mkdtemp");
	if (csv_path != NULL) {
		csv = fopen(csv_path, "we");
		if (csv == NULL)
			die("cannot write the CSV file");
		fprintf(csv, "scenario,clients,events,seconds,events_per_s,"
			"p50_us,p90_us,p99_us,max_us,daemon_peak_rss_mib,events_per_txn\n");
	}
	printf("sink-bench: %d events per scenario, %d in flight per pipelining "
	       "client, %ld CPUs, load average %s, %s\n", events, window,
	       sysconf(_SC_NPROCESSORS_ONLN), loadavg(), logsink);
	printf("%-30s %7s %7s %8s %9s %9s %9s %9s %9s %8s %7s\n", "scenario", "clients",
	       "events", "seconds", "events/s", "p50 us", "p90 us", "p99 us", "max us",
	       "RSS MiB", "ev/txn");
	(void)fflush(stdout);
	for (size_t c = 0; c < 3; c++)
		for (size_t k = 0; k < 4; k++)
			if (wanted(only, kinds[k]) &&
			    (only_clients == 0 || only_clients == client_counts[c]))
				scenario(kinds[k], client_counts[c], events, &max_rss);
	{
		static const enum kind order[] = { HOOK_TRUE, HOOK_APPEND,
			HOOK_SQLITE_NOSYNC, HOOK_SQLITE, HOOK_SQLITE7, HOOK_DAEMON,
			HOOK_EMBEDDED };
		enum kind chosen[sizeof(order) / sizeof(order[0])];
		int nk = 0;

		for (size_t j = 0; j < sizeof(order) / sizeof(order[0]); j++)
			if (wanted(only, order[j]))
				chosen[nk++] = order[j];
		if (nk > 0)
			hooks(chosen, nk, nhooks);
	}
	/* None when no daemon scenario ran (--only hook). */
	if (max_rss >= 0)
		printf("daemon peak RSS (VmHWM, largest of its runs): %.1f MiB\n",
		       (double)max_rss / 1024);
	printf("(latency: per event, send to ack or per put; hooks: spawn to "
	       "reap of one process;\n pipelined clients encode their frames "
	       "before the clock starts;\n ev/txn: events per transaction of "
	       "the daemon's writer; load average now: %s)\n", loadavg());
	if (csv != NULL && fclose(csv) != 0)
		die("cannot write the CSV file");
	if (dir == NULL)
		(void)nftw(base_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
