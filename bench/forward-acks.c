/* SPDX-License-Identifier: MIT */
/* forward-acks.c: forward-bench --acks: the daemon's acks with forwarding off and on, alternating, in one run. */

/*
 * forward-bench --pg CONNINFO --acks [--rounds R] [--events N]
 *               [--clients C] [--window W] [--serve-arg ARG]...
 *
 * What sink-bench's "daemon, pipelined" scenario measures (C clients on
 * the raw protocol, each keeping up to W events in flight, its frames
 * encoded before the clock starts; acked events/s from the first send to
 * the last ack; per event, the time from its frame written to its ACK
 * read), 2R times, each on a fresh store and daemon (and an empty fleet
 * table, after a CHECKPOINT, and, with forwarding, once the forwarder is
 * connected: that is once per start, not compared): without --forward
 * and with it, alternating (off first in odd rounds, on first in even
 * ones, so that neither side always runs after the other). With
 * forwarding, each run then waits for its last events in PostgreSQL:
 * "fwd after" is the time from the last ack to there, the lag p50/p99
 * per event from its local commit to its insert there. The summary: each
 * side's medians (events/s, and of the runs' p50 and p99), on/off of
 * those, and the median of each round's on/off (the steadier figure).
 * The load average is printed before and after: on a shared machine the
 * ratio of the same run is what means something.
 */

#include "bench-sink.h"
#include "forward-bench.h"
#include "bgrun/wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 32
#define MAX_ROUNDS 15

struct aclient {
	pthread_t thread;
	const char *sock;
	int n, window;
	int64_t *lat;          /* per event, ns */
	int done;
	int64_t first_ns, last_ns;
	char last_id[BGRUN_EVENT_ID_MAX + 1];
};

static pthread_barrier_t start_line;

/* Reads what came and takes each whole ACK in it. */
static void read_acks(struct aclient *c, int fd, uint8_t *in, size_t *have,
		      const int64_t *sent)
{
	size_t used = 0, size;
	ssize_t k = recv(fd, in + *have, (1 << 16) - *have, 0);

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
		t = now_ns();
		c->lat[c->done++] = t - sent[m.seq];
		c->last_ns = t;
		bgrun_wire_msg_release(&m);
		used += size;
	}
	memmove(in, in + used, *have - used);
	*have -= used;
}

static void *client_main(void *arg)
{
	struct aclient *c = arg;
	int64_t *sent = calloc((size_t)c->n + 1, sizeof(*sent));
	size_t *off = calloc((size_t)c->n + 1, sizeof(*off));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct bgrun_wire_buf frames = { 0 };
	uint8_t *in = malloc(1 << 16);
	struct bgrun_event ev;
	size_t have = 0;
	int fd, next = 0;

	if (sent == NULL || off == NULL || in == NULL)
		die("out of memory");
	for (int i = 0; i < c->n; i++) {
		off[i] = frames.len;
		bench_make_event(&ev, i);
		if (bgrun_wire_put_event(&frames, (uint32_t)i + 1, &ev) < 0)
			die("encoding");
		(void)snprintf(c->last_id, sizeof(c->last_id), "%s", ev.id);
	}
	off[c->n] = frames.len;
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot connect to the daemon: %s", strerror(errno));
	(void)pthread_barrier_wait(&start_line);
	c->first_ns = now_ns();
	while (c->done < c->n) {
		/* Top the window up, in one write. */
		int first = next;

		while (next < c->n && next - c->done < c->window)
			next++;
		if (next > first) {
			int64_t t = now_ns();

			for (int s = first + 1; s <= next; s++)
				sent[s] = t;
			/* errno is send's when it fails. */
			if (bench_send_all(fd, frames.data + off[first],
					   off[next] - off[first]) < 0)
				die("send: %s", strerror(errno));
		}
		read_acks(c, fd, in, &have, sent);
	}
	bgrun_wire_buf_free(&frames);
	free(in);
	free(off);
	free(sent);
	(void)close(fd);
	return NULL;
}

struct arun {
	bool fwd;
	double eps;               /* acked events/s */
	double p50, p90, p99;     /* ack latency, ms */
	double fwd_after_s;       /* last ack to the last row there */
	double lag50, lag99;      /* ms */
};

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank, as sink-bench. */
static double pct_ms(const int64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (n == 0)
		return 0;
	return (double)sorted[rank == 0 ? 0 : rank - 1 < n ? rank - 1 : n - 1] /
	       1e6;
}

static void acks_once(int no, bool fwd, long events, int clients, int window,
		      struct arun *r)
{
	struct aclient c[MAX_CLIENTS];
	char dir[256], sql[MAX_CLIENTS * 48 + 128];
	int64_t first = INT64_MAX, last = 0, *lat;
	size_t n = 0;
	struct daemon d;
	PGconn *pg = pg_connect();
	PGresult *res;

	*r = (struct arun){ .fwd = fwd, .fwd_after_s = -1, .lag50 = -1,
			    .lag99 = -1 };
	(void)snprintf(dir, sizeof(dir), "%s/forward-bench.%d.acks%d",
		       base_dir, (int)getpid(), no);
	if (mkdir(dir, 0700) < 0)
		die("%s: %s", dir, strerror(errno));
	/*
	 * Both sides start alike: an empty table, and the server's dirty
	 * pages of the run before written out, not during this one.
	 */
	PQclear(PQexec(pg, "TRUNCATE fleet_events"));
	PQclear(PQexec(pg, "CHECKPOINT"));
	daemon_start(&d, dir, 0, fwd);
	/*
	 * A forwarding daemon connects once at its start (a process of the
	 * server, the schema checked, a temporary table): that is not what
	 * is compared, so the clients wait until it is done.
	 */
	while (fwd && pg_int(pg, "SELECT count(*) FROM pg_stat_activity WHERE "
				 "application_name = 'logsink' AND state = "
				 "'idle'") < 1)
		(void)poll(NULL, 0, 5);
	lat = malloc((size_t)events * sizeof(*lat));
	if (lat == NULL ||
	    pthread_barrier_init(&start_line, NULL, (unsigned)clients) != 0)
		die("out of memory");
	for (int i = 0; i < clients; i++) {
		c[i] = (struct aclient){ .sock = d.sock, .window = window,
					 .n = (int)(events / clients +
						    (i < events % clients)) };
		c[i].lat = malloc((size_t)c[i].n * sizeof(int64_t) + 1);
		if (c[i].lat == NULL ||
		    pthread_create(&c[i].thread, NULL, client_main, &c[i]) != 0)
			die("cannot start a client");
	}
	for (int i = 0; i < clients; i++) {
		(void)pthread_join(c[i].thread, NULL);
		memcpy(lat + n, c[i].lat, (size_t)c[i].done * sizeof(*lat));
		n += (size_t)c[i].done;
		first = c[i].first_ns < first ? c[i].first_ns : first;
		last = c[i].last_ns > last ? c[i].last_ns : last;
		free(c[i].lat);
	}
	(void)pthread_barrier_destroy(&start_line);
	qsort(lat, n, sizeof(*lat), bench_cmp64);
	r->eps = (double)n / ((double)(last - first) / 1e9);
	r->p50 = pct_ms(lat, n, 50);
	r->p90 = pct_ms(lat, n, 90);
	r->p99 = pct_ms(lat, n, 99);
	free(lat);
	if (fwd) {
		/* Each client's last event there: a connection's go in order. */
		(void)snprintf(sql, sizeof(sql), "SELECT count(*) FROM "
			       "fleet_events WHERE id IN (");
		for (int i = 0; i < clients; i++)
			(void)snprintf(sql + strlen(sql),
				       sizeof(sql) - strlen(sql), "%s'%s'",
				       i ? ", " : "", c[i].last_id);
		(void)snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), ")");
		while (pg_int(pg, sql) < clients)
			(void)poll(NULL, 0, 5);
		r->fwd_after_s = (double)(now_ns() - last) / 1e9;
		res = PQexec(pg, "SELECT percentile_disc(ARRAY[0.5, 0.99]) "
				 "WITHIN GROUP (ORDER BY extract(epoch FROM "
				 "forwarded_at) * 1e9 - recorded_ns) FROM "
				 "fleet_events");
		if (PQresultStatus(res) == PGRES_TUPLES_OK &&
		    PQntuples(res) == 1 &&
		    sscanf(PQgetvalue(res, 0, 0), "{%lf,%lf}", &r->lag50,
			   &r->lag99) == 2) {
			r->lag50 /= 1e6;
			r->lag99 /= 1e6;
		}
		PQclear(res);
		if (pg_int(pg, "SELECT count(*) FROM fleet_events") != events)
			die("fleet_events does not hold the %ld events", events);
	}
	daemon_stop(&d);
	PQfinish(pg);
	(void)unlink(d.db);
	(void)snprintf(sql, sizeof(sql), "%s-lock", d.db);
	(void)unlink(sql);
	(void)unlink(d.log);
	(void)rmdir(dir);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "re");

	(void)snprintf(buf, size, "?");
	if (f != NULL) {
		if (fgets(buf, (int)size, f) != NULL)
			buf[strcspn(buf, "\n")] = '\0';
		(void)fclose(f);
	}
	return buf;
}

int run_acks(int rounds, long events, int clients, int window)
{
	struct arun runs[2 * MAX_ROUNDS];
	double v[2][6][MAX_ROUNDS];
	char load[128];
	int k[2] = { 0, 0 };

	if (rounds < 1 || rounds > MAX_ROUNDS || clients < 1 ||
	    clients > MAX_CLIENTS || window < 1 || events < clients)
		die("--acks: --rounds 1 to %d, --clients 1 to %d, --window at "
		    "least 1, --events at least --clients", MAX_ROUNDS,
		    MAX_CLIENTS);
	printf("forward-bench --acks: %ld events, %d clients, %d in flight "
	       "each, %d rounds; load average %s\n", events, clients, window,
	       rounds, loadavg(load, sizeof(load)));
	printf("%-5s %-4s %9s %8s %8s %8s %10s %9s %9s\n", "round", "fwd",
	       "acked/s", "p50 ms", "p90 ms", "p99 ms", "fwd after", "lag p50",
	       "lag p99");
	(void)fflush(stdout);
	for (int i = 0; i < rounds; i++) {
		for (int j = 0; j < 2; j++) {
			bool fwd = (i % 2 == 0) == (j == 1);
			struct arun *r = &runs[2 * i + j];

			acks_once(2 * i + j, fwd, events, clients, window, r);
			if (fwd)
				printf("%-5d %-4s %9.0f %8.1f %8.1f %8.1f %9.2fs "
				       "%7.0fms %7.0fms\n", i + 1, "on", r->eps,
				       r->p50, r->p90, r->p99, r->fwd_after_s,
				       r->lag50, r->lag99);
			else
				printf("%-5d %-4s %9.0f %8.1f %8.1f %8.1f %10s "
				       "%9s %9s\n", i + 1, "off", r->eps,
				       r->p50, r->p90, r->p99, "-", "-", "-");
			(void)fflush(stdout);
			v[fwd][0][k[fwd]] = r->eps;
			v[fwd][1][k[fwd]] = r->p50;
			v[fwd][2][k[fwd]] = r->p90;
			v[fwd][3][k[fwd]] = r->p99;
			v[fwd][4][k[fwd]] = r->fwd_after_s;
			v[fwd][5][k[fwd]] = r->lag99;
			k[fwd]++;
		}
	}
	{
		double off[4], on[6];

		for (int m = 0; m < 4; m++)
			off[m] = median(v[0][m], k[0]);
		for (int m = 0; m < 6; m++)
			on[m] = median(v[1][m], k[1]);
		printf("median off: %.0f acked/s, p50 %.1f ms, p90 %.1f ms, "
		       "p99 %.1f ms\n", off[0], off[1], off[2], off[3]);
		printf("median on:  %.0f acked/s, p50 %.1f ms, p90 %.1f ms, "
		       "p99 %.1f ms; all there %.2f s after the last ack, lag "
		       "p99 %.0f ms\n", on[0], on[1], on[2], on[3], on[4], on[5]);
		double ratio[2][MAX_ROUNDS];

		printf("on/off of the medians: acked/s %.2f, p50 %.2f, p90 "
		       "%.2f, p99 %.2f\non/off in each round, acked/s:",
		       on[0] / off[0], on[1] / off[1], on[2] / off[2],
		       on[3] / off[3]);
		/*
		 * The machine's share for this program changes from one
		 * moment to the next: the ratio within a round, on and off
		 * side by side, varies less than either side.
		 */
		for (int i = 0; i < rounds; i++) {
			const struct arun *a = &runs[2 * i + (i % 2 == 0)],
					  *b = &runs[2 * i + (i % 2 != 0)];

			ratio[0][i] = a->eps / b->eps;
			ratio[1][i] = a->p50 / b->p50;
			printf(" %.2f", ratio[0][i]);
		}
		printf("\nmedian of the rounds' on/off: acked/s %.2f, p50 %.2f\n",
		       median(ratio[0], rounds), median(ratio[1], rounds));
		printf("load average now %s\n", loadavg(load, sizeof(load)));
	}
	return 0;
}
