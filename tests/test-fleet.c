/* SPDX-License-Identifier: MIT */
/* test-fleet.c: forwarding to a real PostgreSQL of the test's own: two hosts, the server restarted mid-flood, kill -9, yielding. */

#include "test-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef T_HAVE_LIBPQ

static void no_libpq(void)
{
	SKIP("this build has no libpq (libpq-dev): nothing to forward with");
}

void case_fleet_two_hosts(void) { no_libpq(); }
void case_fleet_refused(void) { no_libpq(); }
void case_fleet_pg_restart(void) { no_libpq(); }
void case_fleet_kill9(void) { no_libpq(); }
void case_fleet_filters(void) { no_libpq(); }
void case_fleet_order(void) { no_libpq(); }
void case_fleet_yield(void) { no_libpq(); }

#else

#include <libpq-fe.h>
#include <pwd.h>

/*
 * THE SERVER: a cluster of the test's own in a temporary directory,
 * listening only on a Unix socket there, never the system's. initdb and
 * the server refuse to run as root (as CI runs): then they run as nobody,
 * through runuser, in a directory nobody owns.
 */
#define PG_BINDIR_DEFAULT "/usr/lib/postgresql/15/bin"

struct t_pg {
	char dir[64];
	char bindir[256];
	char conninfo[256];
	bool as_nobody;
	bool running;
};

static struct t_pg *the_pg; /* stopped at exit */

/* Runs argv (as nobody if need be), output to dir/cmd.log; its exit code. */
static int pg_run(struct t_pg *pg, const char *const *args)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[32];
	struct bgrun_child *child;
	struct bgrun_status st;
	char log[128];
	size_t n = 0;
	int r;

	if (pg->as_nobody) {
		argv[n++] = "/usr/sbin/runuser";
		argv[n++] = "-u";
		argv[n++] = "nobody";
		argv[n++] = "--";
	}
	for (size_t i = 0; args[i] != NULL && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	(void)snprintf(log, sizeof(log), "%s/cmd.log", pg->dir);
	o.argv = argv;
	o.out = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = log,
				      .append = true };
	o.err = o.out;
	r = bgrun_spawn(&o, &child);
	if (r < 0)
		FAIL("cannot start %s: %s", argv[0], bgrun_strerror(r));
	if (bgrun_child_wait(child, 120000, &st) < 0)
		FAIL("%s did not finish within 120 s", args[0]);
	bgrun_child_free(child);
	return st.exited ? (int)st.exit_code : 128 + (int)st.signal;
}

static void pg_cmd(struct t_pg *pg, const char *const *args)
{
	char log[128], *text;
	int code = pg_run(pg, args);

	if (code == 0)
		return;
	(void)snprintf(log, sizeof(log), "%s/cmd.log", pg->dir);
	text = NULL;
	{
		FILE *f = fopen(log, "re");
		static char buf[4096];
		size_t k = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		buf[k] = '\0';
		text = buf;
		if (f != NULL)
			(void)fclose(f);
	}
	FAIL("%s exited %d: %s", args[0], code, text);
}

static const char *pg_bin(struct t_pg *pg, const char *name)
{
	return t_path(pg->bindir, name);
}

static void pg_start(struct t_pg *pg)
{
	char opts[256], logfile[128], data[128];

	(void)snprintf(data, sizeof(data), "%s/data", pg->dir);
	(void)snprintf(logfile, sizeof(logfile), "%s/server.log", pg->dir);
	/* fsync off: a test's server need not survive a power cut. */
	(void)snprintf(opts, sizeof(opts),
		       "-c listen_addresses='' -k %s -p 5432 -c fsync=off "
		       "-c max_connections=40 -c track_commit_timestamp=on",
		       pg->dir);
	pg_cmd(pg, (const char *const[]){ pg_bin(pg, "pg_ctl"), "-D", data,
					  "-l", logfile, "-w", "-t", "60",
					  "-o", opts, "start", NULL });
	pg->running = true;
}

/* mode: "fast" (sessions ended cleanly) or "immediate" (like a crash). */
static void pg_stop(struct t_pg *pg, const char *mode)
{
	char data[128];

	(void)snprintf(data, sizeof(data), "%s/data", pg->dir);
	pg_cmd(pg, (const char *const[]){ pg_bin(pg, "pg_ctl"), "-D", data,
					  "-m", mode, "-w", "-t", "60", "stop",
					  NULL });
	pg->running = false;
}

static void pg_cleanup(void)
{
	if (the_pg != NULL && the_pg->running)
		(void)pg_run(the_pg, (const char *const[]){
			pg_bin(the_pg, "pg_ctl"), "-D",
			t_path(the_pg->dir, "data"), "-m", "immediate", "-w",
			"stop", NULL });
	if (the_pg != NULL)
		t_rmtree(the_pg->dir);
	the_pg = NULL;
}

/* A new cluster, started; skips when there is no server to run. */
static struct t_pg *pg_new(void)
{
	static struct t_pg pg;
	const char *env = getenv("BGRUN_TEST_PG_BINDIR");
	struct passwd *nobody = NULL;
	char initdb[300];

	memset(&pg, 0, sizeof(pg));
	(void)snprintf(pg.bindir, sizeof(pg.bindir), "%s",
		       env != NULL && env[0] != '\0' ? env : PG_BINDIR_DEFAULT);
	(void)snprintf(initdb, sizeof(initdb), "%s/initdb", pg.bindir);
	if (access(initdb, X_OK) < 0)
		SKIP("no PostgreSQL server to test with: %s: %s (install "
		     "postgresql, or set BGRUN_TEST_PG_BINDIR)",
		     initdb, strerror(errno));
	if (geteuid() == 0) {
		nobody = getpwnam("nobody");
		if (nobody == NULL || access("/usr/sbin/runuser", X_OK) < 0)
			SKIP("running as root without user nobody or runuser: "
			     "PostgreSQL will not run as root");
		pg.as_nobody = true;
	}
	(void)snprintf(pg.dir, sizeof(pg.dir), "/tmp/bgpg.XXXXXX");
	if (mkdtemp(pg.dir) == NULL)
		FAIL("mkdtemp: %m");
	the_pg = &pg;
	(void)atexit(pg_cleanup);
	if (nobody != NULL &&
	    (chown(pg.dir, nobody->pw_uid, nobody->pw_gid) < 0 ||
	     chmod(pg.dir, 0755) < 0))
		FAIL("chown %s: %m", pg.dir);
	pg_cmd(&pg, (const char *const[]){ initdb, "-D",
					   t_path(pg.dir, "data"), "-U", "bgrun",
					   "--auth=trust", "-E", "UTF8",
					   "--locale=C", "--no-sync", NULL });
	(void)snprintf(pg.conninfo, sizeof(pg.conninfo),
		       "postgresql://bgrun@/postgres?host=%s&port=5432", pg.dir);
	pg_start(&pg);
	return &pg;
}

static PGconn *pg_conn(struct t_pg *pg)
{
	PGconn *c = PQconnectdb(pg->conninfo);

	if (PQstatus(c) != CONNECTION_OK)
		FAIL("connecting to the test server: %s", PQerrorMessage(c));
	return c;
}

/* The integer sql gives; -1 when it fails (a table not made yet). */
static int64_t pg_int(struct t_pg *pg, const char *sql)
{
	PGconn *c = pg_conn(pg);
	PGresult *res = PQexec(c, sql);
	int64_t v = -1;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    !PQgetisnull(res, 0, 0))
		v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	PQfinish(c);
	return v;
}

/* Runs sql, which must work. */
static void pg_exec(struct t_pg *pg, const char *sql)
{
	PGconn *c = pg_conn(pg);
	PGresult *res = PQexec(c, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		FAIL("%s: %s", sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

/* Polls pg_int until it is want or timeout_ms passes: the last value. */
static int64_t pg_wait(struct t_pg *pg, const char *sql, int64_t want,
		       int timeout_ms)
{
	int64_t deadline = t_now_ms() + timeout_ms, v;

	while ((v = pg_int(pg, sql)) != want && t_now_ms() < deadline)
		(void)poll(NULL, 0, 50);
	return v;
}

typedef char t_id[BGRUN_EVENT_ID_MAX + 1];

static int cmp_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * Every id of ids[0..n) is in the fleet table exactly once, and no id is
 * there twice; the table holds nothing else (of host, when not NULL)
 * unless more is true.
 */
static void pg_expect_ids(struct t_pg *pg, const char *host, t_id *ids,
			  size_t n, bool more)
{
	PGconn *c = pg_conn(pg);
	const char *params[1] = { host };
	PGresult *res = PQexecParams(
		c, host != NULL ? "SELECT id FROM fleet_events WHERE host = $1 "
				  "ORDER BY id COLLATE \"C\""
				: "SELECT id FROM fleet_events ORDER BY id "
				  "COLLATE \"C\"",
		host != NULL ? 1 : 0, NULL, params, NULL, NULL, 0);
	size_t rows, i = 0, j = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		FAIL("reading the fleet table: %s", PQerrorMessage(c));
	rows = (size_t)PQntuples(res);
	qsort(ids, n, sizeof(*ids), cmp_id);
	for (size_t k = 1; k < n; k++)
		if (strcmp(ids[k - 1], ids[k]) == 0)
			FAIL("the test made id %s twice", ids[k]);
	for (size_t k = 1; k < rows; k++)
		if (strcmp(PQgetvalue(res, (int)k - 1, 0),
			   PQgetvalue(res, (int)k, 0)) == 0)
			FAIL("id %s is in the fleet table twice",
			     PQgetvalue(res, (int)k, 0));
	/* Both sorted by bytes: one walk compares them. */
	while (j < n) {
		int cmp = i < rows ? strcmp(PQgetvalue(res, (int)i, 0), ids[j])
				   : 1;

		if (cmp > 0)
			FAIL("acked event %s is not in the fleet table "
			     "(%zu rows, %zu acked)", ids[j], rows, n);
		if (cmp < 0 && !more)
			FAIL("event %s is in the fleet table, but was not "
			     "acked", PQgetvalue(res, (int)i, 0));
		if (cmp == 0)
			j++;
		i++;
	}
	if (i < rows && !more)
		FAIL("%zu rows in the fleet table, %zu events acked", rows, n);
	PQclear(res);
	PQfinish(c);
}

/* ---- clients ---- */

#define FLEET_BATCH 25

struct t_flood {
	const char *db, *sock;
	enum bgrun_sink_mode mode;
	t_id *ids;            /* the acked ones (the flooder's own until joined) */
	size_t n, max;        /* max: room in ids, doubled as needed */
	_Atomic size_t acked; /* n, for other threads */
	_Atomic bool *stop;
	int failed;
};

static void *flood_main(void *arg)
{
	struct t_flood *f = arg;
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_event evs[FLEET_BATCH];
	struct bgrun_sink *sink;

	o.mode = f->mode;
	o.db = f->db;
	o.socket = f->sock;
	o.timeout_ms = 20000;
	if (bgrun_sink_new(&sink) < 0 || bgrun_sink_open(sink, &o) < 0)
		FAIL("bgrun_sink_open");
	while (!*f->stop) {
		int r;

		/*
		 * Until told to stop, however long the faults take: a flood
		 * that ended at a fixed count left a later wait for more
		 * waiting in vain (CI: 60000 acked, all three at their cap).
		 */
		if (f->n + FLEET_BATCH > f->max) {
			t_id *more = realloc(f->ids, 2 * f->max * sizeof(*more));

			if (more == NULL)
				FAIL("out of memory for %zu ids", 2 * f->max);
			f->ids = more;
			f->max *= 2;
		}

		for (int i = 0; i < FLEET_BATCH; i++) {
			t_event(&evs[i], i % 3);
			evs[i].tag = "fleet";
		}
		r = bgrun_sink_put_batch(sink, evs, FLEET_BATCH);
		if (r < 0) {
			/* Not acked: not expected anywhere (some may be spooled). */
			f->failed++;
			continue;
		}
		for (int i = 0; i < FLEET_BATCH; i++)
			memcpy(f->ids[f->n + (size_t)i], evs[i].id, sizeof(t_id));
		f->n += FLEET_BATCH;
		f->acked = f->n;
	}
	bgrun_sink_close(sink);
	return NULL;
}

static size_t total_acked(struct t_flood *f, int n)
{
	size_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += f[i].acked;
	return sum;
}

static void wait_total(struct t_flood *f, int n, size_t want)
{
	int64_t deadline = t_now_ms() + 120000;

	while (total_acked(f, n) < want && t_now_ms() < deadline)
		(void)poll(NULL, 0, 5);
	if (total_acked(f, n) < want)
		FAIL("only %zu events acked, waiting for %zu", total_acked(f, n),
		     want);
}

/* All the acked ids of n flooders in one array (malloc'd). */
static t_id *all_ids(struct t_flood *f, int n, size_t *ret_n)
{
	size_t total = 0, at = 0;
	t_id *ids;

	for (int i = 0; i < n; i++)
		total += f[i].n;
	ids = calloc(total + 1, sizeof(*ids));
	ASSERT(ids != NULL);
	for (int i = 0; i < n; i++) {
		memcpy(ids + at, f[i].ids, f[i].n * sizeof(*ids));
		at += f[i].n;
	}
	*ret_n = total;
	return ids;
}

static char *read_log(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "re");
	size_t k = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	buf[k] = '\0';
	if (f != NULL)
		(void)fclose(f);
	return buf;
}

/* How many lines of text contain needle. */
static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/*
 * A problem is said once: no line of the log repeats the one before it,
 * however many times the forwarder retried.
 */
static void expect_said_once(const char *log)
{
	const char *line = log, *next;
	size_t prev_len = 0;
	const char *prev = NULL;

	for (; *line != '\0'; line = next) {
		size_t len = strcspn(line, "\n");

		next = line + len + (line[len] == '\n');
		if (prev != NULL && len == prev_len &&
		    strncmp(line, prev, len) == 0)
			FAIL("the log repeats itself: %.*s", (int)len, line);
		prev = line;
		prev_len = len;
	}
}

/* `logsink ARGS...`, its stdout into out (static); its exit code. */
static int run_logsink_to(const char *const *args, char **out, bool with_err)
{
	static char buf[1 << 16];
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[16];
	static const char *path;
	struct bgrun_child *child;
	struct bgrun_status st;
	size_t n = 0;
	FILE *f;

	if (path == NULL)
		path = t_path(t_tmpdir(), "out");
	argv[n++] = t_logsink;
	for (size_t i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	o.argv = argv;
	o.out = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE, .path = path };
	if (with_err)
		o.err = (struct bgrun_stdio){ .kind = BGRUN_STDIO_FILE,
					      .path = path, .append = true };
	ASSERT_OK(bgrun_spawn(&o, &child));
	if (bgrun_child_wait(child, 60000, &st) < 0)
		FAIL("logsink did not finish within 60 s");
	bgrun_child_free(child);
	f = fopen(path, "re");
	ASSERT(f != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	(void)fclose(f);
	*out = buf;
	return st.exited ? (int)st.exit_code : 128 + (int)st.signal;
}

/* Runs logsink with args; its output (stdout) in *out, its exit code. */
static int run_logsink(const char *const *args, char **out)
{
	return run_logsink_to(args, out, false);
}

#define COUNT_ALL "SELECT count(*) FROM fleet_events"

void case_fleet_two_hosts(void)
{
	struct t_pg *pg = pg_new();
	const char *dir[2] = { t_tmpdir(), t_tmpdir() };
	const char *hosts[2] = { "host-a", "host-b" };
	struct t_daemon d[2];
	char fwd[300], sql[256];
	t_id ids[2][61], running_id[2];
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink;
	struct bgrun_event ev, running;

	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	for (int h = 0; h < 2; h++) {
		char host_opt[64];

		(void)snprintf(host_opt, sizeof(host_opt), "--forward-host=%s",
			       hosts[h]);
		/* The default (one connection), and two. */
		t_daemon_start(&d[h], t_path(dir[h], "ev.db"),
			       t_path(dir[h], "s/sink.sock"),
			       (const char *const[]){
				       fwd, host_opt,
				       h == 1 ? "--forward-connections=2" : NULL,
				       NULL });
	}
	for (int h = 0; h < 2; h++) {
		o.mode = BGRUN_SINK_DAEMON;
		o.db = d[h].db;
		o.socket = d[h].sock;
		ASSERT_OK(bgrun_sink_new(&sink));
		ASSERT_OK(bgrun_sink_open(sink, &o));
		for (int i = 0; i < 50; i++) {
			t_event(&ev, i);
			ASSERT_EQ(bgrun_sink_put(sink, &ev),
				  BGRUN_SINK_VIA_DAEMON);
			memcpy(ids[h][i], ev.id, sizeof(t_id));
		}
		/* A running row, to become final later. */
		t_event(&running, 0);
		running.result = BGRUN_RESULT_RUNNING;
		running.exit_code = BGRUN_NULL;
		ASSERT_EQ(bgrun_sink_put(sink, &running), BGRUN_SINK_VIA_DAEMON);
		memcpy(ids[h][50], running.id, sizeof(t_id));
		memcpy(running_id[h], running.id, sizeof(t_id));
		bgrun_sink_close(sink);
		/* Written without the daemon, into its store: forwarded too. */
		o.mode = BGRUN_SINK_EMBEDDED;
		ASSERT_OK(bgrun_sink_new(&sink));
		ASSERT_OK(bgrun_sink_open(sink, &o));
		for (int i = 51; i < 61; i++) {
			t_event(&ev, i);
			ASSERT_EQ(bgrun_sink_put(sink, &ev), BGRUN_SINK_VIA_STORE);
			memcpy(ids[h][i], ev.id, sizeof(t_id));
		}
		/*
		 * The running row finishes, written by another writer, in
		 * one transaction with an event stored already (as a spool
		 * replayed after a crash has them): the write that changes
		 * nothing comes last and must not leave the store's change
		 * counter above every row's number, where no cursor can
		 * reach it (checked at the end).
		 */
		running.result = BGRUN_RESULT_FAILED;
		running.exit_code = 99;
		{
			struct bgrun_event two[2] = { running, ev };

			ASSERT_EQ(bgrun_sink_put_batch(sink, two, 2),
				  BGRUN_SINK_VIA_STORE);
		}
		bgrun_sink_close(sink);
	}
	if (pg_wait(pg, "SELECT count(*) FROM fleet_events WHERE result = "
			"'failed' AND exit_code = 99", 2, 60000) != 2) {
		fprintf(stderr, "%s", read_log(d[0].log));
		FAIL("the running rows did not both end there; logs above "
		     "and:\n%s", read_log(d[1].log));
	}
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, 122, 60000), 122);
	for (int h = 0; h < 2; h++) {
		pg_expect_ids(pg, hosts[h], ids[h], 61, false);
		(void)snprintf(sql, sizeof(sql),
			       "SELECT count(*) FROM fleet_events WHERE host = "
			       "'%s' AND tag IS NULL AND argv::text = "
			       "'[\"hg\",\"commit\",\"-m\",\"a message\"]'",
			       hosts[h]);
		ASSERT_EQ(pg_int(pg, sql), 61);
	}
	ASSERT_EQ(pg_int(pg, "SELECT count(*) FROM fleet_events WHERE "
			     "result = 'running'"), 0);
	ASSERT_EQ(pg_int(pg, "SELECT max(version) FROM fleet_schema"), 2);
	/* Version 2's indexes: the filters' columns alone (deduplicated). */
	ASSERT_EQ(pg_int(pg, "SELECT count(*) FROM pg_indexes WHERE tablename = "
			     "'fleet_events' AND indexname LIKE 'fleet_events_by_%'"), 4);
	/* Partitioned by month, the partitions made as events came. */
	ASSERT(pg_int(pg, "SELECT count(*) FROM pg_inherits WHERE inhparent = "
			  "'fleet_events'::regclass") >= 1);
	/* The fleet read like a log: the same filters, --host among them. */
	for (int h = 0; h < 2; h++) {
		char host_opt[64], *out;

		(void)snprintf(host_opt, sizeof(host_opt), "--host=%s", hosts[h]);
		ASSERT_EQ(run_logsink((const char *const[]){
				      "query", "--db", pg->conninfo, host_opt,
				      "--csv", NULL }, &out), 0);
		ASSERT_EQ(count_lines(out, "\n"), 1 + 61);
		ASSERT(strstr(out, ids[h][0]) != NULL);
		ASSERT(strstr(out, ids[1 - h][0]) == NULL);
		ASSERT_EQ(run_logsink((const char *const[]){
				      "query", "--db", pg->conninfo, host_opt,
				      "--result=failed", "--tag=none", NULL },
				      &out), 0);
		ASSERT_EQ(count_lines(out, "\n"), 1);
		ASSERT_EQ(run_logsink((const char *const[]){
				      "query", "--db", pg->conninfo, host_opt,
				      "--cmd=hg c*", "--limit=5", "--json", NULL },
				      &out), 0);
		ASSERT_EQ(count_lines(out, "\n"), 5);
		ASSERT_EQ(count_lines(out, hosts[h]), 5);
	}
	{
		char *out;

		ASSERT_EQ(run_logsink((const char *const[]){
				      "stats", "--db", pg->conninfo, "--by=host",
				      "--csv", NULL }, &out), 0);
		/* 61 runs each; failures: exit codes 1..60 but 0, 51, and 99. */
		ASSERT(strstr(out, "host-a,61,") != NULL);
		ASSERT(strstr(out, "host-b,61,") != NULL);
		/* A local log groups by host too (all its own, mostly). */
		ASSERT_EQ(run_logsink((const char *const[]){
				      "stats", "--by=host", "--csv", "--db",
				      d[0].db, NULL }, &out), 0);
		ASSERT(strncmp(out, "host,runs,", 10) == 0);
		/* The other keys, in PostgreSQL's words. */
		ASSERT_EQ(run_logsink((const char *const[]){
				      "stats", "--db", pg->conninfo, "--by=day",
				      "--csv", NULL }, &out), 0);
		ASSERT(strncmp(out, "day,runs,", 9) == 0);
		ASSERT_EQ(run_logsink((const char *const[]){
				      "stats", "--db", pg->conninfo, "--by=argv0",
				      "--sort=count", "--limit=1", "--csv", NULL },
				      &out), 0);
		ASSERT(strncmp(out, "argv0,runs,", 11) == 0);
		/* show: any part of an id, as with a local log. */
		{
			char part[9];

			memcpy(part, running_id[1] + strlen(running_id[1]) - 9, 8);
			part[8] = '\0';
			ASSERT_EQ(run_logsink((const char *const[]){
					      "show", "--db", pg->conninfo,
					      part, NULL }, &out), 0);
			ASSERT(strstr(out, running_id[1]) != NULL);
		}
		/* show: by the end of an id, as with a local log. */
		ASSERT_EQ(run_logsink((const char *const[]){
				      "show", "--db", pg->conninfo,
				      running_id[1] + strlen(running_id[1]) - 8,
				      NULL }, &out), 0);
		ASSERT(strstr(out, running_id[1]) != NULL);
		ASSERT(strstr(out, "host: host-b") != NULL);
		ASSERT(strstr(out, "exit_code: 99") != NULL);
		ASSERT_EQ(run_logsink((const char *const[]){
				      "show", "--db", pg->conninfo, "0", NULL },
				      &out), 1); /* all start so: ambiguous */
		ASSERT_EQ(run_logsink((const char *const[]){
				      "show", "--db", pg->conninfo, "no_such", NULL },
				      &out), 1);
	}
	/* The table dropped under a running daemon: made again, filled on. */
	pg_exec(pg, "DROP TABLE fleet_events");
	o.mode = BGRUN_SINK_DAEMON;
	o.db = d[0].db;
	o.socket = d[0].sock;
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &o));
	for (int i = 0; i < 5; i++) {
		t_event(&ev, i);
		ASSERT_EQ(bgrun_sink_put(sink, &ev), BGRUN_SINK_VIA_DAEMON);
		memcpy(ids[0][i], ev.id, sizeof(t_id));
	}
	bgrun_sink_close(sink);
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, 5, 60000), 5);
	pg_expect_ids(pg, "host-a", ids[0], 5, false);
	ASSERT(strstr(read_log(d[0].log), "42P01") != NULL);
	for (int h = 0; h < 2; h++) {
		int code = t_daemon_stop(&d[h], SIGTERM);

		if (code != 0)
			FAIL("daemon %d exited %d: %s", h, code,
			     read_log(d[h].log));
		ASSERT(strstr(read_log(d[h].log), "forwarding to") != NULL);
		/* The cursor, committed after PostgreSQL was, reached the end. */
		ASSERT_EQ(t_db_int(d[h].db, "SELECT seq FROM cursors"),
			  t_db_int(d[h].db, "SELECT value FROM counters"));
	}
}

/* Polls the daemon's log until it holds needle, or 60 s pass. */
static void wait_log(const char *log, const char *needle)
{
	int64_t deadline = t_now_ms() + 60000;

	while (strstr(read_log(log), needle) == NULL && t_now_ms() < deadline)
		(void)poll(NULL, 0, 20);
	if (strstr(read_log(log), needle) == NULL)
		FAIL("the log never said '%s': %s", needle, read_log(log));
}

/* n events through the daemon d, acked; their ids into ids. */
static void put_n(struct t_daemon *d, t_id *ids, int n)
{
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink;
	struct bgrun_event ev;

	o.mode = BGRUN_SINK_DAEMON;
	o.db = d->db;
	o.socket = d->sock;
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &o));
	for (int i = 0; i < n; i++) {
		t_event(&ev, i);
		ASSERT_EQ(bgrun_sink_put(sink, &ev), BGRUN_SINK_VIA_DAEMON);
		memcpy(ids[i], ev.id, sizeof(t_id));
	}
	bgrun_sink_close(sink);
}

/*
 * The server down when the daemon starts, and a server that refuses the
 * daemon (a role it does not know): both daemons start, take and ack
 * events, say what is wrong once, and forward all once the server is
 * there and takes them.
 */
void case_fleet_refused(void)
{
	struct t_pg *pg = pg_new();
	const char *dir[2] = { t_tmpdir(), t_tmpdir() };
	struct t_daemon d[2];
	char fwd[2][300];
	t_id ids[2][100];

	pg_stop(pg, "fast");
	(void)snprintf(fwd[0], sizeof(fwd[0]), "--forward=%s", pg->conninfo);
	(void)snprintf(fwd[1], sizeof(fwd[1]),
		       "--forward=postgresql://fleetuser@/postgres?host=%s&"
		       "port=5432", pg->dir);
	t_daemon_start(&d[0], t_path(dir[0], "ev.db"),
		       t_path(dir[0], "s/sink.sock"),
		       (const char *const[]){ fwd[0], "--forward-host=down",
					      NULL });
	t_daemon_start(&d[1], t_path(dir[1], "ev.db"),
		       t_path(dir[1], "s/sink.sock"),
		       (const char *const[]){ fwd[1], "--forward-host=refused",
					      NULL });
	put_n(&d[0], ids[0], 100);
	put_n(&d[1], ids[1], 100);
	wait_log(d[0].log, "cannot connect");
	pg_start(pg);
	wait_log(d[1].log, "role \"fleetuser\" does not exist");
	ASSERT_EQ(pg_wait(pg, "SELECT count(*) FROM fleet_events WHERE host = "
			      "'down'", 100, 60000), 100);
	/* Still refused: nothing of the other daemon's. */
	ASSERT_EQ(pg_int(pg, "SELECT count(*) FROM fleet_events WHERE host = "
			     "'refused'"), 0);
	pg_exec(pg, "CREATE ROLE fleetuser LOGIN SUPERUSER");
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, 200, 60000), 200);
	pg_expect_ids(pg, "down", ids[0], 100, false);
	pg_expect_ids(pg, "refused", ids[1], 100, false);
	for (int h = 0; h < 2; h++) {
		ASSERT_EQ(t_daemon_stop(&d[h], SIGTERM), 0);
		expect_said_once(read_log(d[h].log));
		ASSERT(strstr(read_log(d[h].log), "working again") != NULL);
	}
	fprintf(stderr, "%s", read_log(d[1].log));
	ASSERT_EQ(count_lines(read_log(d[1].log), "does not exist"), 1);
}

#define FLOOD_THREADS 3
#define FLOOD_MAX 20000 /* the first room for ids */

static void flood_start(struct t_flood *f, pthread_t *th, const char *db,
			const char *sock, _Atomic bool *stop)
{
	for (int i = 0; i < FLOOD_THREADS; i++) {
		f[i] = (struct t_flood){ .db = db, .sock = sock,
					 .mode = BGRUN_SINK_DAEMON,
					 .max = FLOOD_MAX, .stop = stop };
		f[i].ids = calloc(FLOOD_MAX, sizeof(*f[i].ids));
		ASSERT(f[i].ids != NULL);
		ASSERT(pthread_create(&th[i], NULL, flood_main, &f[i]) == 0);
	}
}

static void flood_join(struct t_flood *f, pthread_t *th)
{
	for (int i = 0; i < FLOOD_THREADS; i++)
		(void)pthread_join(th[i], NULL);
}

static void flood_free(struct t_flood *f)
{
	for (int i = 0; i < FLOOD_THREADS; i++)
		free(f[i].ids);
}

void case_fleet_pg_restart(void)
{
	struct t_pg *pg = pg_new();
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct t_flood f[FLOOD_THREADS];
	pthread_t th[FLOOD_THREADS];
	_Atomic bool stop = false;
	struct t_daemon d;
	char fwd[300];
	size_t n, at_stop;
	t_id *ids;
	const char *log;

	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	/*
	 * Forwarding waits for the writer 200 ms at most (see YIELDING in
	 * serve-forward.c), so that it runs during the flood, as a backlog
	 * after each wait: the server goes while it works.
	 */
	t_daemon_start(&d, db, sock,
		       (const char *const[]){ fwd, "--forward-batch=200",
					      "--forward-connections=2",
					      "--forward-yield=200ms", NULL });
	flood_start(f, th, db, sock, &stop);
	wait_total(f, FLOOD_THREADS, 1500);
	/* Forwarding works before the fault... */
	ASSERT(pg_wait(pg, "SELECT (count(*) > 0)::int FROM fleet_events", 1, 60000) == 1);
	/* ...then the server goes, like a crash, in the middle of it all. */
	pg_stop(pg, "immediate");
	at_stop = total_acked(f, FLOOD_THREADS);
	/* The daemon keeps taking and acking events without it. */
	wait_total(f, FLOOD_THREADS, at_stop + 3000);
	pg_start(pg);
	wait_total(f, FLOOD_THREADS, total_acked(f, FLOOD_THREADS) + 1500);
	/* Stopped once more, cleanly this time, and back. */
	pg_stop(pg, "fast");
	wait_total(f, FLOOD_THREADS, total_acked(f, FLOOD_THREADS) + 1500);
	pg_start(pg);
	stop = true;
	flood_join(f, th);
	ids = all_ids(f, FLOOD_THREADS, &n);
	for (int i = 0; i < FLOOD_THREADS; i++)
		ASSERT_EQ(f[i].failed, 0);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), (int64_t)n);
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, (int64_t)n, 120000), (int64_t)n);
	pg_expect_ids(pg, NULL, ids, n, false);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	log = read_log(d.log);
	/* It said what went wrong, and that it works again; once each time. */
	ASSERT(strstr(log, "(events are kept here; retrying)") != NULL);
	ASSERT(count_lines(log, "working again") >= 1);
	expect_said_once(log);
	fprintf(stderr, "%zu events acked, %zu before the first stop; log:\n%s",
		n, at_stop, log);
	free(ids);
	flood_free(f);
}

void case_fleet_kill9(void)
{
	struct t_pg *pg = pg_new();
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct t_flood f[FLOOD_THREADS];
	pthread_t th[FLOOD_THREADS];
	_Atomic bool stop = false;
	struct t_daemon d;
	char fwd[300];
	const char *const args[] = { fwd, "--forward-batch=50",
				     "--forward-connections=2", NULL };
	int64_t in_pg, local;
	const char *last;
	size_t n, at;
	t_id *ids;

	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	t_daemon_start(&d, db, sock, args);
	flood_start(f, th, db, sock, &stop);
	wait_total(f, FLOOD_THREADS, 3000);
	ASSERT(pg_wait(pg, "SELECT (count(*) > 0)::int FROM fleet_events", 1, 60000) == 1);
	/* In the middle of forwarding (and of taking events): kill -9. */
	ASSERT_EQ(t_daemon_stop(&d, SIGKILL), 128 + SIGKILL);
	stop = true;
	flood_join(f, th);
	ids = all_ids(f, FLOOD_THREADS, &n);
	in_pg = pg_int(pg, COUNT_ALL);
	/* Restarted: what the clients spooled meanwhile comes in first. */
	at = strlen(read_log(d.log));
	t_daemon_start(&d, db, sock, args);
	ASSERT_EQ(t_wait_files(t_path(dir, "ev.db.spool"), ".ev", 0, 60000), 0);
	local = t_db_int(db, "SELECT count(*) FROM events");
	/* Every acked event is stored; the clients may have had more in flight. */
	ASSERT(local >= (int64_t)n);
	ASSERT(in_pg <= local);
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, local, 120000), local);
	/* The rows the cursor had not caught were sent again: still once each. */
	ASSERT_EQ(pg_int(pg, "SELECT count(DISTINCT id) FROM fleet_events"), local);
	pg_expect_ids(pg, NULL, ids, n, true);
	/*
	 * The cursor reaches the counter, though the spool replayed events
	 * stored already (the daemon committed them, the kill took the
	 * acks): writes that change nothing take no number.
	 */
	ASSERT_EQ(t_db_wait(db, "SELECT count(*) FROM cursors WHERE seq = "
				"(SELECT value FROM counters)", 1, 120000), 1);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	/*
	 * The batch the kill cut was sent again, meeting its rows (those the
	 * server had committed): no fault to say, only the safe way.
	 */
	if (strstr(read_log(d.log) + at, "retrying") != NULL)
		FAIL("a fault was said after the restart: %s",
		     read_log(d.log) + at);
	fprintf(stderr, "%zu acked, %lld stored, %lld in PostgreSQL at the kill\n",
		n, (long long)local, (long long)in_pg);
	/*
	 * Everything sent again: as another role, the daemon has a cursor of
	 * its own at 0. Each batch's direct COPY meets rows already there
	 * (a unique violation), is rolled back and goes the safe way: the
	 * table is as it was, and no batch went direct.
	 */
	pg_exec(pg, "CREATE ROLE again LOGIN SUPERUSER");
	(void)snprintf(fwd, sizeof(fwd),
		       "--forward=postgresql://again@/postgres?host=%s&port=5432",
		       pg->dir);
	at = strlen(read_log(d.log));
	t_daemon_start(&d, db, sock, args);
	ASSERT_EQ(t_db_wait(db, "SELECT count(*) FROM cursors WHERE seq = "
				"(SELECT value FROM counters)", 2, 120000), 2);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	/*
	 * Each conflict was met and the batch committed the safe way at
	 * once: not taken for a failure (no fault said, no reconnection).
	 */
	if (strstr(read_log(d.log) + at, "retrying") != NULL)
		FAIL("a conflict was taken for a fault: %s",
		     read_log(d.log) + at);
	local = t_db_int(db, "SELECT count(*) FROM events");
	ASSERT_EQ(pg_int(pg, COUNT_ALL), local);
	ASSERT_EQ(pg_int(pg, "SELECT count(DISTINCT id) FROM fleet_events"), local);
	pg_expect_ids(pg, NULL, ids, n, true);
	last = NULL;
	for (const char *p = read_log(d.log); (p = strstr(p, "forwarded ")); p++)
		last = p; /* the last run's stop line */
	ASSERT(last != NULL && strstr(last, "(0 by direct COPY)") != NULL);
	free(ids);
	flood_free(f);
}

/*
 * ORDER, with several connections: a flood through a daemon with four of
 * them and small batches, so that batches are in flight side by side.
 * They must still be committed in the store's order (each row's
 * recorded_ns is taken under the store's write lock): along recorded_ns,
 * the commit times of the rows' transactions (the server keeps them:
 * track_commit_timestamp) never go back. Meanwhile an administrator
 * locks the table until the forwarder's lock_timeout ends its wait (see
 * connect_one in serve-forward-pg.c). Then, every acked event once, and the
 * cursor at the counter.
 */
void case_fleet_order(void)
{
	struct t_pg *pg = pg_new();
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct t_flood f[FLOOD_THREADS];
	pthread_t th[FLOOD_THREADS];
	_Atomic bool stop = false;
	struct t_daemon d;
	char fwd[300];
	PGconn *admin;
	PGresult *res;
	size_t n;
	t_id *ids, more[100];

	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	t_daemon_start(&d, db, sock,
		       (const char *const[]){ fwd, "--forward-batch=100",
					      "--forward-connections=4", NULL });
	flood_start(f, th, db, sock, &stop);
	wait_total(f, FLOOD_THREADS, 15000);
	stop = true;
	flood_join(f, th);
	ids = all_ids(f, FLOOD_THREADS, &n);
	/*
	 * An administrator's lock on the table (granted once what is in
	 * flight is committed, or rolled back by lock_timeout), and more
	 * events to forward meanwhile: the forwarder's wait for the lock
	 * ends with lock_timeout, and they go once the lock is gone.
	 */
	admin = pg_conn(pg);
	res = PQexec(admin, "BEGIN; LOCK TABLE fleet_events IN ACCESS "
			    "EXCLUSIVE MODE");
	ASSERT(PQresultStatus(res) == PGRES_COMMAND_OK);
	PQclear(res);
	put_n(&d, more, 100);
	wait_log(d.log, "55P03");
	PQclear(PQexec(admin, "COMMIT"));
	PQfinish(admin);
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, (int64_t)n + 100, 120000),
		  (int64_t)n + 100);
	pg_expect_ids(pg, NULL, ids, n, true);
	pg_expect_ids(pg, NULL, more, 100, true);
	ASSERT_EQ(pg_int(pg, "SELECT count(*) FROM (SELECT "
			     "pg_xact_commit_timestamp(xmin) AS t, "
			     "lag(pg_xact_commit_timestamp(xmin)) OVER (ORDER "
			     "BY recorded_ns, id) AS before FROM fleet_events) "
			     "x WHERE t < before"), 0);
	/* Several transactions, or the check above checked nothing. */
	ASSERT(pg_int(pg, "SELECT count(DISTINCT xmin::text) FROM "
			  "fleet_events") > 10);
	ASSERT_EQ(t_db_wait(db, "SELECT count(*) FROM cursors WHERE seq = "
				"(SELECT value FROM counters)", 1, 120000), 1);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	ASSERT(strstr(read_log(d.log), "working again") != NULL);
	expect_said_once(read_log(d.log));
	fprintf(stderr, "%zu events, %lld transactions\n", n,
		(long long)pg_int(pg, "SELECT count(DISTINCT xmin::text) FROM "
				      "fleet_events"));
	free(ids);
	flood_free(f);
}

/*
 * THE SAME FILTERS, BOTH STORES. A set of events differing in every
 * field a filter looks at, stored locally and forwarded; then every row
 * of BGRUN_QUERY_FILTERS (bgrun/filters.h) is run against the local store
 * and the fleet table, through `logsink query` (the ID row through
 * `show` with a part of ids): both must give the same events, and an
 * event set that the filter actually cuts (neither none nor all). A row
 * added to the table without a case here fails the test.
 */
#define F_EVENTS 16
#define F_BASE_S 1793491200 /* 2026-11-01T00:00Z */

struct f_case {
	const char *args[4]; /* after "query" (or "show"), NULL-ended */
	bool show;           /* `show ARGS`, stdout and stderr */
};

/* Which of ids (bit i) the output names. */
static unsigned ids_in(const char *out, t_id *ids)
{
	unsigned mask = 0;

	for (int i = 0; i < F_EVENTS; i++)
		if (strstr(out, ids[i]) != NULL)
			mask |= 1u << i;
	return mask;
}

static unsigned f_run(const struct f_case *c, const char *db, t_id *ids)
{
	const char *args[12];
	char *out;
	size_t n = 0;
	int r;

	args[n++] = c->show ? "show" : "query";
	args[n++] = "--db";
	args[n++] = db;
	if (!c->show)
		args[n++] = "--csv";
	for (int i = 0; c->args[i] != NULL; i++)
		args[n++] = c->args[i];
	args[n] = NULL;
	r = run_logsink_to(args, &out, c->show);
	/* show: exit 1 when the part is ambiguous (the candidates listed). */
	if (r != 0 && !(c->show && r == 1))
		FAIL("logsink %s %s: exit %d: %s", args[0], c->args[0], r, out);
	return ids_in(out, ids);
}

void case_fleet_filters(void)
{
	static const char *const argvs[][5] = {
		{ "make", "all", NULL }, { "make", "-C", "build", NULL },
		{ "hg", "commit", "-m", "x", NULL }, { "ls", "[x]", NULL },
		{ "ls", "ax", NULL },
		/* Bytes show must give exactly: empty, a tab, not UTF-8. */
		{ "printf", "", "a\tb", "\xff\xfe", NULL },
	};
	static const char *const results[] = {
		BGRUN_RESULT_SUCCESS, BGRUN_RESULT_FAILED, BGRUN_RESULT_SIGNALED,
		BGRUN_RESULT_TIMEOUT, BGRUN_RESULT_LOST, BGRUN_RESULT_SUCCESS,
		BGRUN_RESULT_SPAWN_FAILED,
	};
	struct t_pg *pg = pg_new();
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	char fwd[300], since[32], until[32], part[8];
	struct f_case cases[BGRUN_QUERY_N_FILTERS] = { 0 };
	const struct f_case more[] = {
		{ { "--cmd=*commit*", NULL } },
		{ { "--cmd=ls ?x", NULL } },
		{ { "--cmd=*[[]x]*", NULL } },
		{ { "--cmd=[mh]*", NULL } },
		{ { "--cmd=[^m]*", NULL } },
		{ { "--result=failed", NULL } },
		{ { "--host=h1", "--failed", since, NULL } },
		{ { "--tag=ci", "--cwd=/nonexistent/a", NULL } },
	};
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	struct t_daemon d;
	t_id ids[F_EVENTS];
	char *local_out, *pg_out, *a, *b;
	int show_ev = -1;

	/* The events, stored by an embedded writer before any daemon. */
	o.mode = BGRUN_SINK_EMBEDDED;
	o.db = db;
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &o));
	for (int i = 0; i < F_EVENTS; i++) {
		size_t k = (size_t)i % (sizeof(argvs) / sizeof(argvs[0]));

		bgrun_event_init(&ev, i % 5 ? "commandfinish" : "commandstart",
				 i % 4 ? "bgrun" : "hg");
		ev.argv = argvs[k];
		ev.host = i % 2 ? "h1" : "h2";
		ev.cwd = i % 3 ? "/nonexistent/a" : "/nonexistent/b";
		ev.tag = i % 3 == 1 ? "ci" : NULL;
		ev.start_ns = ((int64_t)F_BASE_S + i * 3600) * 1000000000;
		ev.result = results[(size_t)i % (sizeof(results) / sizeof(results[0]))];
		ev.exit_code = strcmp(ev.result, BGRUN_RESULT_FAILED) == 0 ? 1 : 0;
		ev.duration_ns = 1000 + i;
		ASSERT_EQ(bgrun_sink_put(sink, &ev), BGRUN_SINK_VIA_STORE);
		memcpy(ids[i], ev.id, sizeof(t_id));
		if (k == 5)
			show_ev = i;
	}
	bgrun_sink_close(sink);
	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	t_daemon_start(&d, db, t_path(dir, "s/sink.sock"),
		       (const char *const[]){ fwd, NULL });
	ASSERT_EQ(pg_wait(pg, COUNT_ALL, F_EVENTS, 60000), F_EVENTS);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);

	(void)snprintf(since, sizeof(since), "--since=@%d", F_BASE_S + 7 * 3600);
	(void)snprintf(until, sizeof(until), "--until=@%d", F_BASE_S + 7 * 3600);
	/* A part of ids[0]'s random tail: in it, maybe in a few others. */
	memcpy(part, ids[0] + strlen(ids[0]) - 4, 4);
	part[4] = '\0';
	cases[BGRUN_QUERY_FILTER_SINCE] = (struct f_case){ { since } };
	cases[BGRUN_QUERY_FILTER_UNTIL] = (struct f_case){ { until } };
	cases[BGRUN_QUERY_FILTER_FAILED] = (struct f_case){ { "--failed" } };
	cases[BGRUN_QUERY_FILTER_RESULT_LOST] =
		(struct f_case){ { "--result=lost" } };
	cases[BGRUN_QUERY_FILTER_RESULT_SUCCESS] =
		(struct f_case){ { "--result=success" } };
	cases[BGRUN_QUERY_FILTER_RESULT] =
		(struct f_case){ { "--result=signaled" } };
	cases[BGRUN_QUERY_FILTER_CMD] = (struct f_case){ { "--cmd=make*" } };
	cases[BGRUN_QUERY_FILTER_TAG] = (struct f_case){ { "--tag=ci" } };
	cases[BGRUN_QUERY_FILTER_CWD] =
		(struct f_case){ { "--cwd=/nonexistent/a" } };
	cases[BGRUN_QUERY_FILTER_SOURCE] = (struct f_case){ { "--source=hg" } };
	cases[BGRUN_QUERY_FILTER_EVENT] =
		(struct f_case){ { "--event=commandstart" } };
	cases[BGRUN_QUERY_FILTER_HOST] = (struct f_case){ { "--host=h1" } };
	cases[BGRUN_QUERY_FILTER_ID] = (struct f_case){ { part }, true };
	for (int f = 0; f < BGRUN_QUERY_N_FILTERS; f++) {
		unsigned local, fleet;

		if (cases[f].args[0] == NULL)
			FAIL("filter %d of bgrun/filters.h has no case here", f);
		local = f_run(&cases[f], db, ids);
		fleet = f_run(&cases[f], pg->conninfo, ids);
		fprintf(stderr, "filter %d %s: local %#x, fleet %#x\n", f,
			cases[f].args[0], local, fleet);
		ASSERT_EQ(local, fleet);
		ASSERT(local != 0);
		/* The id part: exactly the ids that contain it, maybe all. */
		if (f == BGRUN_QUERY_FILTER_ID) {
			unsigned want = 0;

			for (int i = 0; i < F_EVENTS; i++)
				if (strstr(ids[i], part) != NULL)
					want |= 1u << i;
			ASSERT_EQ(local, want);
		} else {
			ASSERT(local != (1u << F_EVENTS) - 1);
		}
	}
	for (size_t c = 0; c < sizeof(more) / sizeof(more[0]); c++) {
		unsigned local = f_run(&more[c], db, ids);
		unsigned fleet = f_run(&more[c], pg->conninfo, ids);

		fprintf(stderr, "%s %s: local %#x, fleet %#x\n", more[c].args[0],
			more[c].args[1] ? more[c].args[1] : "", local, fleet);
		ASSERT_EQ(local, fleet);
		ASSERT(local != 0 && local != (1u << F_EVENTS) - 1);
	}

	/* show: the argv lines of the fleet's row, byte for byte the local's. */
	ASSERT(show_ev >= 0);
	ASSERT_EQ(run_logsink((const char *const[]){ "show", "--db", db,
						     ids[show_ev], NULL },
			      &local_out), 0);
	local_out = strdup(local_out);
	ASSERT(local_out != NULL);
	ASSERT_EQ(run_logsink((const char *const[]){ "show", "--db",
						     pg->conninfo, ids[show_ev],
						     NULL },
			      &pg_out), 0);
	a = strstr(local_out, "\nargv");
	b = strstr(pg_out, "\nargv");
	ASSERT(a != NULL && b != NULL);
	ASSERT_EQ(count_lines(a, "\nargv["), 4);
	ASSERT_EQ(strncmp(a, b, (size_t)(strstr(a, "\ncwd") - a)), 0);
	ASSERT(strstr(pg_out, "argv: -") == NULL);
	free(local_out);
}

/*
 * YIELDING (serve-forward.c): a daemon that may wait an hour for pauses
 * of its writer still forwards once the writer is idle: 100 events put
 * one at a time, then none, are all there long before the hour (the
 * wait below ends at 60 s). A --forward-yield that is not a duration is
 * refused, as a usage error.
 */
void case_fleet_yield(void)
{
	struct t_pg *pg = pg_new();
	const char *dir = t_tmpdir();
	struct t_daemon d;
	char fwd[300], *out;
	t_id ids[100];

	(void)snprintf(fwd, sizeof(fwd), "--forward=%s", pg->conninfo);
	ASSERT_EQ(run_logsink_to((const char *const[]){
				      "--db", t_path(dir, "bad.db"), "serve",
				      "--socket", t_path(dir, "s/bad.sock"),
				      fwd, "--forward-yield=soon", NULL },
				 &out, true), 2);
	if (strstr(out, "invalid duration 'soon' for --forward-yield") == NULL)
		FAIL("not the usage error expected: %s", out);
	t_daemon_start(&d, t_path(dir, "ev.db"), t_path(dir, "s/sink.sock"),
		       (const char *const[]){ fwd, "--forward-host=yield",
					      "--forward-yield=1h", NULL });
	put_n(&d, ids, 100);
	if (pg_wait(pg, COUNT_ALL, 100, 60000) != 100)
		FAIL("an idle writer was waited for: %lld rows there; log:\n%s",
		     (long long)pg_int(pg, COUNT_ALL), read_log(d.log));
	pg_expect_ids(pg, "yield", ids, 100, false);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	if (strstr(read_log(d.log), "s of waiting for the writer") == NULL)
		FAIL("no time waited in the stop line: %s", read_log(d.log));
	fprintf(stderr, "%s", read_log(d.log));
}

#endif /* T_HAVE_LIBPQ */
