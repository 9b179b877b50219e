/* SPDX-License-Identifier: MIT */
/* supervise.c: the recorder of a logged launch: COMMAND's `running` row, then its finish as bgrun-start saw it. */

#include "cli.h"
#include "bgrun/util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * bgrun-start (start.c) launches COMMAND, stays its parent and reaps it;
 * it starts this program (bgrun-full --_child=... --_supervise=ID ...) to
 * write to the log, which needs SQLite: the `running` row at once, then the
 * finish, read from descriptor 3 as one line when COMMAND has ended. If
 * that line never comes (bgrun-start was killed), the row stays
 * `running` and queries call it `lost`: its supervisor (bgrun-start, our
 * parent) is gone. If we are killed instead, bgrun-start starts another
 * recorder, which writes both rows again (start.c: struct recorder): so
 * nothing here may depend on being the first. With --_failed, or started by bgrun itself for a
 * launch that failed before anything ran (launch.c), it records
 * `spawn_failed` and exits with the code bgrun would give.
 *
 * The signals bgrun-start forwards to COMMAND stay blocked here (we
 * inherit its mask): they are not for us.
 */

#define END_FD 3

/*
 * The recorder's own options, which come first on its command line
 * (launch.c writes them, start.c adds --_child or --_failed), each as
 * --_NAME=VALUE. Only bgrun-full's recorder parses them: `bgrun` does
 * not know them, so they cannot be given from its command line, and
 * bgrun-full takes them only with the descriptor 3 the chain gives it
 * (from_chain).
 */
struct rec {
	const char *id;     /* --_supervise: the event id bgrun chose */
	const char *source; /* --_source: the event's source; NULL: "bgrun" */
	const char *origin; /* --_origin: bgrun's working directory */
	/* --_link=KEY:ID: what this job is to job ID (cli.h: sup_launch) */
	char link_key[16];
	const char *link_id;
	/* --_stdout, --_stderr: the kept output's files (output.c), if any */
	const char *out_capture, *err_capture;
	const char *max_output; /* --_max-output: their cap, in bytes */
	const char *env_file;   /* --_env: the kept environment (output.c) */
	/*
	 * COMMAND, already started by bgrun-start (--_child: child_pid > 0),
	 * or why it could not be (--_failed), with the clocks read just
	 * before.
	 */
	pid_t child_pid;
	int failed_error; /* an errno value */
	enum bgrun_stage failed_stage;
	int64_t start_realtime_ns, start_mono_ns;
};

struct sup {
	const struct cli *c;
	const struct rec *rec;
	struct bgrun_event ev;
	struct bgrun_sink *sink;
	char **argv;
	char *cwd, *out, *err, *db, *in, *env;
	/*
	 * options_kv, NAME, VALUE..., NULL: what was kept of the output, what
	 * this job is to another, and what `bgrun restart` repeats (see
	 * describe); output_dropped at the end once known. Sized in describe.
	 */
	const char **kv;
	size_t n_kv;
	char dropped[32], timeout[32], kill_after[32];
	char (*on_exit_key)[32];
};

/* path made absolute against dir (itself absolute, or NULL: ours). */
static char *absolute(const char *path, const char *dir)
{
	char here[PATH_MAX], *out;

	if (path == NULL)
		return NULL;
	if (path[0] == '/')
		return strdup(path);
	if (dir == NULL) {
		if (getcwd(here, sizeof(here)) == NULL)
			return strdup(path);
		dir = here;
	}
	return asprintf(&out, "%s/%s", dir, path) < 0 ? NULL : out;
}

/*
 * Records the event through the sink client: the daemon if its socket
 * answers, else the embedded store, else the spool ($BGRUN_SINK chooses).
 * A failure to record never changes the command (our stderr is
 * /dev/null: the event, if valid, is in the spool for later).
 */
static void record(struct sup *s)
{
	if (s->sink == NULL) {
		struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
		int r;

		o.db = s->db;
		r = bgrun_sink_new(&s->sink);
		if (r < 0)
			return;
		r = bgrun_sink_open(s->sink, &o);
		if (r < 0) {
			/* $BGRUN_SINK is wrong: nowhere to say so. */
			bgrun_sink_close(s->sink);
			s->sink = NULL;
			return;
		}
	}
	(void)bgrun_sink_put(s->sink, &s->ev);
}

/* One NAME, VALUE pair of the options (none once memory ran out). */
static void put(struct sup *s, const char *name, const char *value)
{
	if (s->kv == NULL || value == NULL)
		return;
	s->kv[s->n_kv++] = name;
	s->kv[s->n_kv++] = value;
	s->kv[s->n_kv] = NULL;
}

static void describe(struct sup *s)
{
	const struct cli *c = s->c;
	const char *origin = s->rec->origin;
	struct bgrun_spawn_opts opts;
	char **envp = NULL, *dir;

	/* Every pair describe may add, and output_dropped, and the NULL. */
	s->kv = calloc(2 * (16 + c->n_on_exit) + 1, sizeof(*s->kv));
	s->on_exit_key = calloc(c->n_on_exit + 1, sizeof(*s->on_exit_key));
	if (s->on_exit_key == NULL) {
		/* Out of memory: the row without its options. */
		free(s->kv);
		s->kv = NULL;
	}
	/* What runs, as the library makes it (-s: the shell's words first). */
	cli_spawn_opts(c, &opts);
	if (bgrun_spawn_command(&opts, NULL, &s->argv, &envp) == 0)
		free(envp);
	else
		s->argv = c->cmd;
	/* Paths on bgrun's command line are relative to where it ran. */
	dir = absolute(c->cwd != NULL ? c->cwd : ".", origin);
	s->cwd = dir != NULL ? realpath(dir, NULL) : NULL;
	if (s->cwd == NULL)
		s->cwd = dir, dir = NULL;
	free(dir);
	/* "-", /dev/stdout: bgrun's own stream, no file of the command's. */
	s->out = c->out_path != NULL && strcmp(c->out_path, "-") != 0
			 ? absolute(c->out_path, origin) : NULL;
	s->err = c->err_path != NULL && strcmp(c->err_path, "-") != 0
			 ? absolute(c->err_path, origin) : NULL;
	if (s->rec->out_capture != NULL || s->rec->err_capture != NULL) {
		/*
		 * The files are bgrun's: `output` says so, and prune removes
		 * them with the event (store-prune.c), those alone.
		 */
		if (s->rec->out_capture != NULL) {
			free(s->out);
			s->out = strdup(s->rec->out_capture);
		}
		if (s->rec->err_capture != NULL) {
			free(s->err);
			s->err = strdup(s->rec->err_capture);
		}
		put(s, "output", "kept");
		put(s, "output_max",
		    s->rec->max_output != NULL ? s->rec->max_output : "0");
	}
	/* Or what the environment names, as in bgrun's directory. */
	if (c->db != NULL) {
		s->db = absolute(c->db, origin);
	} else {
		char *db = NULL;

		if (bgrun_store_default_path(&db) == 0)
			s->db = absolute(db, origin);
		free(db);
	}
	s->ev.argv = (const char *const *)s->argv;
	s->ev.cwd = s->cwd;
	s->ev.tag = c->tag;
	s->ev.stdout_path = s->out;
	s->ev.stderr_path = s->err;
	/*
	 * In options: what this job is to another (a restart, a hook), and
	 * what `bgrun restart` repeats (restart.c) that has no column: -a,
	 * where the environment was kept (never the environment itself: the
	 * log is forwarded to other machines), -i, --timeout, --kill-after,
	 * the output settings, --on-exit and --no-on-exit. Values are
	 * strings, durations in nanoseconds.
	 */
	if (s->rec->link_id != NULL)
		put(s, s->rec->link_key, s->rec->link_id);
	if (c->append && (c->out_path != NULL || c->err_path != NULL))
		put(s, "append", "1");
	if (s->rec->env_file != NULL)
		put(s, "env_file",
		    s->env = absolute(s->rec->env_file, origin));
	else if (!c->keep_env)
		put(s, "keep_env", "0");
	if (c->in_path != NULL) {
		s->in = strcmp(c->in_path, "-") == 0 ? strdup("-")
						     : absolute(c->in_path, origin);
		put(s, "stdin", s->in);
	}
	if (c->timeout_ns > 0) {
		(void)snprintf(s->timeout, sizeof(s->timeout), "%lld",
			       (long long)c->timeout_ns);
		put(s, "timeout_ns", s->timeout);
	}
	if (c->kill_after_ns > 0) {
		(void)snprintf(s->kill_after, sizeof(s->kill_after), "%lld",
			       (long long)c->kill_after_ns);
		put(s, "kill_after_ns", s->kill_after);
	}
	/* Merged, the default, is not said; what restart does then: restart.c. */
	if (c->capture != CLI_CAPTURE_MERGED)
		put(s, "capture",
		    c->capture == CLI_CAPTURE_SPLIT ? "split" : "none");
	for (size_t i = 0; s->kv != NULL && i < c->n_on_exit; i++) {
		(void)snprintf(s->on_exit_key[i], sizeof(s->on_exit_key[i]),
			       "on_exit_%zu", i + 1);
		put(s, s->on_exit_key[i], c->on_exit[i]);
	}
	if (c->no_on_exit)
		put(s, "no_on_exit", "1");
	if (s->n_kv > 0)
		s->ev.options_kv = s->kv;
	/* The supervisor is bgrun-start, our parent. */
	s->ev.supervisor_pid = getppid();
	s->ev.supervisor_start = bgrun_proc_starttime(getppid());
	s->ev.start_ns = s->rec->start_realtime_ns > 0
				 ? s->rec->start_realtime_ns
				 : bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
}

/* Reads bgrun-start's line about COMMAND's end (start.c: format_end). */
static int read_end(struct bgrun_status *st, bool *timed_out,
		    long long *dropped)
{
	char line[512];
	size_t len = 0;
	long long v[6];
	long r[7];
	int ws, to;

	while (len < sizeof(line) - 1) {
		ssize_t n = read(END_FD, line + len, sizeof(line) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	line[len] = '\0';
	if (sscanf(line, "end %d %d %lld %lld %lld %lld %ld %ld %ld %ld %ld %ld %ld %lld",
		   &ws, &to, &v[0], &v[1], &v[2], &v[3], &r[0], &r[1], &r[2],
		   &r[3], &r[4], &r[5], &r[6], dropped) != 14)
		return -1;
	*st = (struct bgrun_status){ .pid = 0 };
	st->exited = WIFEXITED(ws);
	st->exit_code = st->exited ? WEXITSTATUS(ws) : 0;
	st->signaled = WIFSIGNALED(ws);
	st->signal = st->signaled ? WTERMSIG(ws) : 0;
	st->core_dumped = st->signaled && WCOREDUMP(ws);
	st->end_realtime_ns = v[0];
	st->duration_ns = v[1];
	st->rusage.user_cpu_ns = (int64_t)v[2] * 1000;
	st->rusage.sys_cpu_ns = (int64_t)v[3] * 1000;
	st->rusage.max_rss_kb = r[0];
	st->rusage.minor_faults = r[1];
	st->rusage.major_faults = r[2];
	st->rusage.in_blocks = r[3];
	st->rusage.out_blocks = r[4];
	st->rusage.vol_ctxsw = r[5];
	st->rusage.invol_ctxsw = r[6];
	*timed_out = to != 0;
	return 0;
}

/*
 * --_child=PID:REALTIME:MONOTONIC or --_failed=ERRNO:STAGE:REALTIME:
 * MONOTONIC, as bgrun-start (start.c) or launch.c writes them.
 */
static int parse_start(struct rec *r, bool failed, const char *s)
{
	long long v[4];
	int n = failed ? 4 : 3, used = 0;

	if ((failed ? sscanf(s, "%lld:%lld:%lld:%lld%n", &v[0], &v[1], &v[2],
			     &v[3], &used)
		    : sscanf(s, "%lld:%lld:%lld%n", &v[0], &v[1], &v[2],
			     &used)) != n ||
	    s[used] != '\0' || v[0] <= 0 || v[0] > INT_MAX)
		return -1;
	if (failed) {
		if (v[1] <= BGRUN_STAGE_NONE || v[1] > BGRUN_STAGE_EXEC)
			return -1;
		r->failed_error = (int)v[0];
		r->failed_stage = (enum bgrun_stage)v[1];
	} else {
		r->child_pid = (pid_t)v[0];
	}
	r->start_realtime_ns = v[n - 2];
	r->start_mono_ns = v[n - 1];
	return 0;
}

/* --_link=KEY:ID, KEY one of those cli.h names. */
static int parse_link(struct rec *r, const char *v)
{
	const char *colon = strchr(v, ':');
	size_t n = colon != NULL ? (size_t)(colon - v) : 0;

	if (colon == NULL || n >= sizeof(r->link_key) ||
	    !bgrun_event_id_valid(colon + 1, strlen(colon + 1)))
		return -1;
	memcpy(r->link_key, v, n);
	r->link_key[n] = '\0';
	if (strcmp(r->link_key, "restart_of") != 0 &&
	    strcmp(r->link_key, "on_exit_of") != 0)
		return -1;
	r->link_id = colon + 1;
	return 0;
}

/* Whether arg is --_NAME=VALUE; *ret_value is VALUE. */
static bool is_opt(const char *arg, const char *name, const char **ret_value)
{
	size_t n = strlen(name);

	if (strncmp(arg, "--_", 3) != 0 || strncmp(arg + 3, name, n) != 0 ||
	    arg[3 + n] != '=')
		return false;
	*ret_value = arg + 4 + n;
	return true;
}

/*
 * Whether we were started by the supervisor chain, the only source of
 * our options: descriptor 3 is a Unix socket made by our parent (by
 * bgrun-start, or by bgrun for a launch that failed: SO_PEERCRED names
 * the process that made the pair), which no command line can give, so
 * that running bgrun-full by hand cannot write a forged row. A maker
 * that is gone (our parent, killed since it started us: we are an
 * orphan) is accepted too, so that its launch is still recorded (and
 * then reported lost).
 */
static bool from_chain(void)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int domain;
	socklen_t dlen = sizeof(domain);

	if (getsockopt(END_FD, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) < 0 ||
	    domain != AF_UNIX ||
	    getsockopt(END_FD, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
	    len != sizeof(cr) || cr.pid <= 0 || cr.uid != geteuid())
		return false;
	return cr.pid == getppid() || (kill(cr.pid, 0) < 0 && errno == ESRCH);
}

/*
 * Parses the recorder's own options, argv[1] on: the index of the first
 * argument that is not one of them, or -1 if one is malformed or
 * --_supervise or the start (--_child or --_failed) is missing.
 */
static int parse_rec(struct rec *r, int argc, char **argv)
{
	bool started = false;
	int i;

	for (i = 1; i < argc && strncmp(argv[i], "--_", 3) == 0; i++) {
		const char *v;

		if (is_opt(argv[i], "supervise", &v) && r->id == NULL)
			r->id = v;
		else if (is_opt(argv[i], "source", &v) && r->source == NULL)
			r->source = v;
		else if (is_opt(argv[i], "origin", &v) && r->origin == NULL)
			r->origin = v;
		else if (is_opt(argv[i], "link", &v) && r->link_id == NULL) {
			if (parse_link(r, v) < 0)
				return -1;
		} else if (is_opt(argv[i], "stdout", &v) && r->out_capture == NULL)
			r->out_capture = v;
		else if (is_opt(argv[i], "stderr", &v) && r->err_capture == NULL)
			r->err_capture = v;
		else if (is_opt(argv[i], "max-output", &v) &&
			 r->max_output == NULL)
			r->max_output = v;
		else if (is_opt(argv[i], "env", &v) && r->env_file == NULL)
			r->env_file = v;
		else if ((is_opt(argv[i], "child", &v) ||
			  is_opt(argv[i], "failed", &v)) &&
			 !started && parse_start(r, argv[i][3] == 'f', v) == 0)
			started = true;
		else
			return -1;
	}
	return r->id != NULL && started ? i : -1;
}

int supervise_main(int argc, char **argv)
{
	struct rec rec = { .id = NULL };
	struct sup s = { .rec = &rec };
	struct bgrun_failure failure;
	struct bgrun_status st;
	bool timed_out = false;
	long long dropped = 0;
	int status = EXIT_SUCCESS, k;
	struct cli c;

	k = parse_rec(&rec, argc, argv);
	if (k < 0 || !from_chain()) {
		(void)fprintf(stderr, "%s: internal to bgrun, run by its supervisor (see supervise.c)\n",
			      program_invocation_short_name);
		return EXIT_CANCELED;
	}
	/* Then bgrun's options and COMMAND, as the user gave them. */
	argv[k - 1] = argv[0];
	cli_parse(&c, argc - k + 1, argv + k - 1);
	s.c = &c;
	failure = (struct bgrun_failure){ .stage = rec.failed_stage,
					  .error = -rec.failed_error };
	/* Only a launch's end comes on it; bgrun may wait for its close. */
	if (rec.child_pid <= 0)
		(void)close(END_FD);

	/* bgrun-start is gone if nobody reads: not a reason to die. */
	(void)signal(SIGPIPE, SIG_IGN);
	/*
	 * We start in COMMAND's directory; a relative $BGRUN_DB (or
	 * XDG_STATE_HOME...) means bgrun's, as --db and the paths do: they
	 * are made absolute against it as strings (describe), the log's
	 * included, and the chdir serves the rest of what the environment
	 * names. A directory we may not enter (bgrun ran in one its user
	 * cannot search, as su leaves one in root's) is no reason to record
	 * nothing.
	 */
	if (rec.origin != NULL && chdir(rec.origin) < 0) {
		/* Then we stay where we are. */
	}
	bgrun_event_init(&s.ev, "commandfinish",
			 rec.source != NULL ? rec.source : "bgrun");
	if (strlen(rec.id) <= BGRUN_EVENT_ID_MAX)
		strcpy(s.ev.id, rec.id);
	describe(&s);
	if (rec.child_pid <= 0) {
		int error = rec.failed_error > 0 ? -rec.failed_error : -EINVAL;

		/* Our stderr is /dev/null: this only gives the exit code. */
		status = cli_report_failure(&c, error, &failure);
		s.ev.result = BGRUN_RESULT_SPAWN_FAILED;
		s.ev.end_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
		s.ev.message = bgrun_strerror(error);
		record(&s);
		on_exit_run(&c, &s.ev);
		goto out;
	}
	s.ev.pid = rec.child_pid;
	s.ev.result = BGRUN_RESULT_RUNNING;
	record(&s);
	if (read_end(&st, &timed_out, &dropped) < 0)
		goto out; /* stays running: lost, once bgrun-start is gone */
	st.pid = rec.child_pid;
	st.start_realtime_ns = rec.start_realtime_ns;
	bgrun_event_set_status(&s.ev, &st);
	if (timed_out)
		s.ev.result = BGRUN_RESULT_TIMEOUT;
	if (dropped > 0 && s.ev.options_kv != NULL) {
		/* The cap took the start of the output: said with the event. */
		(void)snprintf(s.dropped, sizeof(s.dropped), "%lld", dropped);
		put(&s, "output_dropped", s.dropped);
	}
	record(&s);
	/* After the row: a notification never delays it. */
	on_exit_run(&c, &s.ev);
out:
	bgrun_sink_close(s.sink);
	if (s.argv != c.cmd)
		free(s.argv);
	free(s.cwd);
	free(s.out);
	free(s.err);
	free(s.db);
	free(s.in);
	free(s.env);
	free(s.kv);
	free(s.on_exit_key);
	cli_free(&c);
	return status;
}
