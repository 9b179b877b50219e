/* SPDX-License-Identifier: MIT */
/* forward-bench.c: forwarding to PostgreSQL: events/s into the fleet table from K hosts, lag, local ingest beside it. */

/*
 * Usage: forward-bench --pg CONNINFO [--events N] [--hosts 1,4,16]
 *                      [--batch N] [--backlog] [--logsink PATH] [--dir DIR]
 *                      [--csv FILE] [--serve-arg ARG]...
 *        forward-bench --pg CONNINFO --acks [--rounds N] [--events N]
 *                      [--clients N] [--window N] [--serve-arg ARG]...
 *
 * For each K of --hosts: empties the fleet table of CONNINFO, starts K
 * daemons (`logsink serve --forward=CONNINFO --forward-host=bench-I`),
 * each with a store of its own (a simulated host), and one client thread
 * per daemon writing N/K events of the shape a bgrun supervisor writes,
 * 100 per bgrun_sink_put_batch. It reports, in the same run:
 *   local      events/s acked by the daemons (first put to last ack)
 *   forwarded  events/s in PostgreSQL (first put to the last row seen
 *              there, polled every 5 ms)
 *   lag        per event, from its local commit (recorded_ns) to its
 *              insert in PostgreSQL (forwarded_at), p50 and p99
 * The forwarded rate cannot pass the local one when the clients are the
 * slower side; --backlog measures the forwarders alone: the daemons first
 * take the N events without --forward, then are started again with it,
 * and "forwarded" is N over the time from that start to the last row
 * there (the lag is then the backlog's age, not reported).
 * Beside them, the CPU time per event of the server's processes (read
 * from /proc where the server runs here) and of the daemons (what they
 * used from start to stop; with --backlog, of the forwarding start): on a
 * shared machine, what the work costs, whatever share of the CPUs it got.
 * The end is seen by looking for each client's last event id (the key's
 * index), not by counting the table, which would take the server's CPU
 * from the forwarders being measured.
 * --serve-arg gives the forwarding daemons one more option each
 * (--forward-connections=N, to compare).
 * --acks compares the daemon's acks with forwarding off and on, in one
 * run (forward-acks.c says how).
 * The server is whatever CONNINFO names: a local one here (see
 * docs/fleet.md for the numbers and how they were taken).
 */

#include "bgrun.h"
#include "forward-bench.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FORWARD_BENCH_LOGSINK
#define FORWARD_BENCH_LOGSINK "logsink"
#endif

#define MAX_HOSTS 64
#define PUT_BATCH 100

const char *logsink = FORWARD_BENCH_LOGSINK;
const char *conninfo;
const char *base_dir = "/tmp";
static const char *batch_arg = "2000";
static bool backlog;
static const char *serve_args[8];
static int n_serve_args;

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)fputs("forward-bench: ", stderr);
	(void)vfprintf(stderr, fmt, ap);
	(void)fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

int64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

PGconn *pg_connect(void)
{
	PGconn *c = PQconnectdb(conninfo);

	if (PQstatus(c) != CONNECTION_OK)
		die("%s", PQerrorMessage(c));
	return c;
}

int64_t pg_int(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);
	int64_t v = -1;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    !PQgetisnull(res, 0, 0))
		v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

/* The CPU time (ms) of the children reaped: the daemons stopped. */
static int64_t children_cpu_ms(void)
{
	struct rusage ru;

	(void)getrusage(RUSAGE_CHILDREN, &ru);
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* Clock ticks of CPU time of process pid, with its reaped children's. */
static int64_t proc_ticks(long pid, bool reaped)
{
	unsigned long long ut, st, cut, cst;
	char path[64], stat[1024], *q;
	int64_t ticks = -1;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	if (fgets(stat, sizeof(stat), f) != NULL &&
	    (q = strrchr(stat, ')')) != NULL &&
	    sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			  "%llu %llu %llu %llu", &ut, &st, &cut, &cst) == 4)
		ticks = (int64_t)(ut + st + (reaped ? cut + cst : 0));
	(void)fclose(f);
	return ticks;
}

/*
 * The CPU time (ms) of the server's processes, where the server is on
 * this machine and its data directory readable (-1 otherwise): the
 * postmaster's own and what it reaped, with its live children's. Read
 * from /proc, so that nothing is asked of the server.
 */
static int64_t server_cpu_ms(PGconn *pg)
{
	static long pm = -1;
	char path[64], line[4096];
	int64_t total, t;
	FILE *f;

	if (pm < 0) {
		PGresult *r = PQexec(pg, "SELECT setting FROM pg_settings "
					 "WHERE name = 'data_directory'");
		char pidfile[1024];

		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
			(void)snprintf(pidfile, sizeof(pidfile),
				       "%s/postmaster.pid", PQgetvalue(r, 0, 0));
			f = fopen(pidfile, "re");
			if (f != NULL && fscanf(f, "%ld", &pm) != 1)
				pm = -1;
			if (f != NULL)
				(void)fclose(f);
		}
		PQclear(r);
	}
	total = pm > 0 ? proc_ticks(pm, true) : -1;
	if (total < 0)
		return -1;
	(void)snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", pm, pm);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	(void)fclose(f);
	for (char *p = line, *end;; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		t = proc_ticks(pid, false);
		total += t > 0 ? t : 0;
	}
	return total * 1000 / sysconf(_SC_CLK_TCK);
}

/* The daemons' server processes (at most MAX_HOSTS * 2): their count. */
static int backend_pids(PGconn *pg, long *pids)
{
	PGresult *r = PQexec(pg, "SELECT pid FROM pg_stat_activity WHERE "
				 "application_name = 'logsink'");
	int n = 0;

	for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK &&
			i < PQntuples(r) && n < MAX_HOSTS * 2; i++)
		pids[n++] = strtol(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	return n;
}

/*
 * Until the postmaster reaped them (their /proc entries gone), so that
 * their CPU time is in its children's: it reaps a moment after they end.
 */
static void wait_reaped(const long *pids, int n)
{
	int64_t deadline = now_ns() + 10 * (int64_t)1000000000;
	char path[64];

	for (int i = 0; i < n; i++) {
		(void)snprintf(path, sizeof(path), "/proc/%ld", pids[i]);
		while (access(path, F_OK) == 0 && now_ns() < deadline)
			(void)poll(NULL, 0, 5);
	}
}

void daemon_start(struct daemon *d, const char *dir, int i, bool fw)
{
	char fwd[1024], host[64], batch[64];
	const char *argv[10 + 8 + 1] = { logsink, "--db", d->db, "serve",
					    "--socket", d->sock, "--ready-fd=3",
					    fwd, host, batch };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char line[256] = "";
	ssize_t n;
	int p[2];

	(void)snprintf(d->db, sizeof(d->db), "%s/h%d.db", dir, i);
	(void)snprintf(d->sock, sizeof(d->sock), "%s/h%d.sock", dir, i);
	(void)snprintf(d->log, sizeof(d->log), "%s.log", d->db);
	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", conninfo);
	(void)snprintf(host, sizeof(host), "--forward-host=bench-%d", i);
	(void)snprintf(batch, sizeof(batch), "--forward-batch=%s", batch_arg);
	if (!fw)
		argv[7] = NULL;
	for (int a = 0; fw && a < n_serve_args; a++)
		argv[10 + a] = serve_args[a];
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	o.argv = argv;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	o.err = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = d->log };
	if (bgrun_spawn(&o, &d->child) < 0)
		die("cannot start %s (--logsink PATH?)", logsink);
	(void)close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	(void)close(p[0]);
	if (n <= 0 || strncmp(line, "READY", 5) != 0)
		die("the daemon did not start: %s", line);
}

void daemon_stop(struct daemon *d)
{
	struct bgrun_status st;

	(void)bgrun_child_kill(d->child, SIGTERM);
	(void)bgrun_child_wait(d->child, -1, &st);
	bgrun_child_free(d->child);
}

struct client {
	pthread_t thread;
	struct daemon *d;
	long n;
	int64_t end_ns;
	char last_id[BGRUN_EVENT_ID_MAX + 1]; /* the last event put */
};

static void *client_main(void *arg)
{
	static const char *const argv[] = { "make", "-C", "build", "-j8",
					    "all", NULL };
	struct client *c = arg;
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_event evs[PUT_BATCH];
	struct bgrun_sink *sink;

	o.mode = BGRUN_SINK_DAEMON;
	o.db = c->d->db;
	o.socket = c->d->sock;
	if (bgrun_sink_new(&sink) < 0 || bgrun_sink_open(sink, &o) < 0)
		die("bgrun_sink_open");
	for (long done = 0; done < c->n; done += PUT_BATCH) {
		for (int i = 0; i < PUT_BATCH; i++) {
			bgrun_event_init(&evs[i], "commandfinish", "bgrun");
			evs[i].argv = argv;
			evs[i].cwd = "/home/user/src/project";
			evs[i].tag = "ci";
			evs[i].start_ns = 1;
			evs[i].exit_code = i % 10 == 0;
			evs[i].result = i % 10 == 0 ? BGRUN_RESULT_FAILED
						    : BGRUN_RESULT_SUCCESS;
			evs[i].duration_ns = 1000000 + i;
			evs[i].user_cpu_ns = 500000;
			evs[i].sys_cpu_ns = 100000;
			evs[i].max_rss_kb = 20480;
			evs[i].pid = 1000 + i;
		}
		if (bgrun_sink_put_batch(sink, evs, PUT_BATCH) !=
		    BGRUN_SINK_VIA_DAEMON)
			die("a put failed: %s", bgrun_sink_errmsg(sink));
		(void)snprintf(c->last_id, sizeof(c->last_id), "%s",
			       evs[PUT_BATCH - 1].id);
	}
	c->end_ns = now_ns();
	bgrun_sink_close(sink);
	return NULL;
}

struct result {
	int hosts;
	long events;
	double local_eps, forward_eps;
	double pg_cpu_us; /* the server's CPU time per event, or -1 */
	double daemon_cpu_us; /* the daemons' */
	double lag_p50_ms, lag_p99_ms;
};

static void run(int k, long events, struct result *res)
{
	struct daemon d[MAX_HOSTS];
	struct client c[MAX_HOSTS];
	char dir[256], sql[MAX_HOSTS * 48 + 128];
	int64_t t0, t_acked = 0, t_fwd, cpu0, cpu1, dcpu0, dcpu1;
	long pids[MAX_HOSTS * 2];
	int backends;
	long per = events / k / PUT_BATCH * PUT_BATCH;
	PGconn *pg = pg_connect();
	PGresult *r;

	(void)snprintf(dir, sizeof(dir), "%s/forward-bench.%d.%d", base_dir,
		       (int)getpid(), k);
	if (mkdir(dir, 0700) < 0)
		die("%s: %s", dir, strerror(errno));
	/* The table, if there, starts empty (the daemons make it if not). */
	PQclear(PQexec(pg, "TRUNCATE fleet_events"));
	for (int i = 0; i < k; i++)
		daemon_start(&d[i], dir, i, !backlog);
	cpu0 = server_cpu_ms(pg);
	dcpu0 = children_cpu_ms();
	t0 = now_ns();
	for (int i = 0; i < k; i++) {
		c[i] = (struct client){ .d = &d[i], .n = per };
		if (pthread_create(&c[i].thread, NULL, client_main, &c[i]) != 0)
			die("pthread_create");
	}
	for (int i = 0; i < k; i++) {
		(void)pthread_join(c[i].thread, NULL);
		if (c[i].end_ns > t_acked)
			t_acked = c[i].end_ns;
	}
	res->local_eps = (double)(per * k) / ((double)(t_acked - t0) / 1e9);
	if (backlog) {
		for (int i = 0; i < k; i++)
			daemon_stop(&d[i]);
		cpu0 = server_cpu_ms(pg);
		dcpu0 = children_cpu_ms();
		t0 = now_ns();
		for (int i = 0; i < k; i++)
			daemon_start(&d[i], dir, i, true);
	}
	/* Each client's last event there: a client's events go in order. */
	(void)snprintf(sql, sizeof(sql),
		       "SELECT count(*) FROM fleet_events WHERE id IN (");
	for (int i = 0; i < k; i++)
		(void)snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
			       "%s'%s'", i ? ", " : "", c[i].last_id);
	(void)snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), ")");
	while (pg_int(pg, sql) < k)
		(void)poll(NULL, 0, 5);
	t_fwd = now_ns();
	backends = backend_pids(pg, pids);
	for (int i = 0; i < k; i++)
		daemon_stop(&d[i]);
	wait_reaped(pids, backends);
	cpu1 = server_cpu_ms(pg);
	dcpu1 = children_cpu_ms();
	if (pg_int(pg, "SELECT count(*) FROM fleet_events") != per * k)
		die("%lld rows in fleet_events, %ld expected",
		    (long long)pg_int(pg, "SELECT count(*) FROM fleet_events"),
		    per * k);
	(void)snprintf(sql, sizeof(sql),
		       "SELECT percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP "
		       "(ORDER BY extract(epoch FROM forwarded_at) * 1e9 - "
		       "recorded_ns) FROM fleet_events");
	r = PQexec(pg, sql);
	res->hosts = k;
	res->events = per * k;
	res->pg_cpu_us = cpu0 < 0 || cpu1 < 0 ? -1
			 : (double)(cpu1 - cpu0) * 1000 / (double)(per * k);
	res->daemon_cpu_us = (double)(dcpu1 - dcpu0) * 1000 / (double)(per * k);
	res->forward_eps = (double)(per * k) / ((double)(t_fwd - t0) / 1e9);
	res->lag_p50_ms = res->lag_p99_ms = -1;
	if (!backlog && PQresultStatus(r) == PGRES_TUPLES_OK &&
	    PQntuples(r) == 1) {
		/* "{p50,p99}" in ns */
		const char *v = PQgetvalue(r, 0, 0);

		if (sscanf(v, "{%lf,%lf}", &res->lag_p50_ms,
			   &res->lag_p99_ms) == 2) {
			res->lag_p50_ms /= 1e6;
			res->lag_p99_ms /= 1e6;
		}
	}
	PQclear(r);
	PQfinish(pg);
	for (int i = 0; i < k; i++) {
		(void)unlink(d[i].db);
		(void)snprintf(sql, sizeof(sql), "%s-lock", d[i].db);
		(void)unlink(sql);
	}
}

int main(int argc, char **argv)
{
	const char *hosts = "1,4,16", *csv = NULL;
	long events = 0;
	int acks = 0, rounds = 5, clients = 8, window = 256;
	struct result res[16];
	int n_res = 0;
	FILE *out;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--pg") == 0 && i + 1 < argc)
			conninfo = argv[++i];
		else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
			events = atol(argv[++i]);
		else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc)
			hosts = argv[++i];
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch_arg = argv[++i];
		else if (strcmp(argv[i], "--backlog") == 0)
			backlog = true;
		else if (strcmp(argv[i], "--acks") == 0)
			acks = 1;
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
			clients = atoi(argv[++i]);
		else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc)
			window = atoi(argv[++i]);
		else if (strcmp(argv[i], "--logsink") == 0 && i + 1 < argc)
			logsink = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			base_dir = argv[++i];
		else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			csv = argv[++i];
		else if (strcmp(argv[i], "--serve-arg") == 0 && i + 1 < argc &&
			 n_serve_args < 8)
			serve_args[n_serve_args++] = argv[++i];
		else {
			fprintf(stderr,
				"usage: forward-bench --pg CONNINFO [--events N] "
				"[--hosts 1,4,16] [--batch N] [--backlog] "
				"[--logsink PATH] [--dir DIR] [--csv FILE] "
				"[--serve-arg ARG]...\n"
				"       forward-bench --pg CONNINFO --acks "
				"[--rounds N] [--events N] [--clients N] "
				"[--window N] [--serve-arg ARG]...\n");
			return 2;
		}
	}
	if (conninfo == NULL)
		die("--pg CONNINFO: the PostgreSQL to forward to (a test one: "
		    "its fleet_events table is emptied)");
	if (acks)
		return run_acks(rounds, events ? events : 50000, clients, window);
	if (events == 0)
		events = 200000;
	if (events < 100)
		die("--events must be at least 100");
	for (const char *p = hosts; *p != '\0';) {
		int k = atoi(p);

		if (k < 1 || k > MAX_HOSTS || n_res == 16)
			die("--hosts: counts from 1 to %d", MAX_HOSTS);
		if (events / k < PUT_BATCH)
			die("--events: fewer than %d per host", PUT_BATCH);
		run(k, events, &res[n_res++]);
		p += strcspn(p, ",");
		p += *p == ',';
	}
	printf("%-6s %9s %12s %14s %10s %10s %10s %10s\n", "hosts", "events",
	       "local ev/s", backlog ? "backlog ev/s" : "forwarded ev/s",
	       "lag p50", "lag p99", "server cpu", "daemon cpu");
	for (int i = 0; i < n_res; i++) {
		char p50[24] = "-", p99[24] = "-";

		/* No lag with --backlog: the events waited on purpose. */
		if (res[i].lag_p50_ms >= 0) {
			(void)snprintf(p50, sizeof(p50), "%.1fms", res[i].lag_p50_ms);
			(void)snprintf(p99, sizeof(p99), "%.1fms", res[i].lag_p99_ms);
		}
		printf("%-6d %9ld %12.0f %14.0f %10s %10s %6.1fus/ev %6.1fus/ev\n",
		       res[i].hosts, res[i].events, res[i].local_eps,
		       res[i].forward_eps, p50, p99, res[i].pg_cpu_us,
		       res[i].daemon_cpu_us);
	}
	if (csv != NULL) {
		out = fopen(csv, "we");
		if (out == NULL)
			die("%s: %s", csv, strerror(errno));
		fprintf(out, "hosts,events,local_eps,%s,lag_p50_ms,"
			     "lag_p99_ms,server_cpu_us,daemon_cpu_us\n",
			backlog ? "backlog_eps" : "forwarded_eps");
		for (int i = 0; i < n_res; i++)
			fprintf(out, "%d,%ld,%.0f,%.0f,%.2f,%.2f,%.1f,%.1f\n",
				res[i].hosts, res[i].events, res[i].local_eps,
				res[i].forward_eps, res[i].lag_p50_ms,
				res[i].lag_p99_ms, res[i].pg_cpu_us,
				res[i].daemon_cpu_us);
		(void)fclose(out);
	}
	return 0;
}
