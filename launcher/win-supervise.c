/* SPDX-License-Identifier: MIT */
/* win-supervise.c: bgrun-supervise.exe, the Windows build's supervisor of a logged launch: launches COMMAND, reports, records `running` and then the finish. */

/*
 * On POSIX a logged launch is a chain (launch.c): bgrun-start, a small
 * static program that launches COMMAND, stays its parent and reaps it
 * with wait4, and bgrun-full, the recorder that writes to the store
 * (supervise.c). The chain exists for POSIX reasons: only a parent can
 * reap a child and read its rusage, and the program that waits should be
 * small and load no SQLite before COMMAND starts. On Windows any process
 * with a handle on COMMAND's process waits for it and reads its times,
 * so one program does it all: this one, started by bgrun (win-launch.c)
 * with bgrun's own options, which launches COMMAND with the primitive,
 * reports on descriptor 3 ("ok PID" or "error ERRNO STAGE", launch.c's
 * words), writes the `running` row, waits on COMMAND's process handle
 * and writes the finish: exit code, duration, and what the system gives
 * of COMMAND's resource use (bgrun/spawn.h: times, peak working set, IO
 * counts).
 *
 * The events go through the sink (src/sink/client.c: the daemon on its
 * named pipe as $BGRUN_SINK says, else the store, else the spool
 * DB.spool\ beside it, else the dropped-events count). A record that cannot be stored is said on
 * our stderr, with where it was kept: bgrun's while bgrun waits (-w),
 * else NUL, and then the spool and `logsink query`'s warning say it.
 * Our exit code is COMMAND's, as `bgrun -w` reports it.
 *
 * Our own options come first, as --_NAME=VALUE (--_supervise=ID); bgrun
 * does not know them, so they cannot come from its command line. Unlike
 * POSIX's recorder (supervise.c: from_chain), nothing here proves that
 * bgrun started us: whoever runs this by hand can write a row into their
 * own log, which they can write anyway.
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "cli.h"
#include "starter.h"
#include "bgrun/util.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_FD 3
#define SIGTERM_ 15

struct sup {
	const struct cli *c;
	struct bgrun_event ev;
	struct bgrun_sink *sink;
	char *db;
	char **argv;
	char *cwd, *out, *err;
	bool said; /* a failure to record was said once */
};

/* path made absolute against our working directory (bgrun's). */
static char *absolute(const char *path)
{
	return path != NULL ? _fullpath(NULL, path, 0) : NULL;
}

/*
 * One write to the log through the sink: the daemon ($BGRUN_SINK), the
 * store, else the spool beside it, else the dropped-events count. The first
 * store opened drains what earlier writers spooled. A failure is said
 * once, with where the record was kept, and never changes COMMAND.
 */
static void record(struct sup *s)
{
	int r = 0;

	if (s->sink == NULL) {
		struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;

		o.db = s->db;
		r = bgrun_sink_new(&s->sink);
		if (r >= 0)
			r = bgrun_sink_open(s->sink, &o);
		if (r < 0 && !s->said) {
			s->said = true;
			cli_msg("event %s cannot be recorded: %s", s->ev.id,
				s->sink != NULL && bgrun_sink_errmsg(s->sink)[0]
					? cli_printable(bgrun_sink_errmsg(s->sink))
					: bgrun_strerror(r));
		}
		if (r < 0) {
			bgrun_sink_close(s->sink);
			s->sink = NULL;
			return;
		}
	}
	r = bgrun_sink_put(s->sink, &s->ev);
	if (r < 0 && !s->said) {
		s->said = true;
		cli_msg("event %s cannot be recorded: %s", s->ev.id,
			cli_printable(bgrun_sink_errmsg(s->sink)));
	}
}

static int describe(struct sup *s)
{
	const struct cli *c = s->c;
	struct bgrun_spawn_opts opts;
	char **envp = NULL;
	int r;

	if (c->db != NULL) {
		s->db = absolute(c->db);
	} else {
		r = bgrun_store_default_path(&s->db);
		if (r < 0) {
			cli_msg("no event log: set BGRUN_DB or LOCALAPPDATA");
			return r;
		}
	}
	if (s->db == NULL)
		return -ENOMEM;
	cli_spawn_opts(c, &opts);
	if (bgrun_spawn_command(&opts, NULL, &s->argv, &envp) == 0)
		free(envp);
	else
		s->argv = NULL;
	s->cwd = absolute(c->cwd != NULL ? c->cwd : ".");
	s->out = absolute(c->out_path);
	s->err = absolute(c->err_path);
	s->ev.argv = s->argv != NULL ? (const char *const *)s->argv
				     : (const char *const *)c->cmd;
	s->ev.cwd = s->cwd;
	s->ev.tag = c->tag;
	s->ev.stdout_path = s->out;
	s->ev.stderr_path = s->err;
	/* We are the supervisor: `lost` once we are gone and it is not done. */
	s->ev.supervisor_pid = (int64_t)GetCurrentProcessId();
	s->ev.supervisor_start =
		bgrun_proc_starttime((bgrun_pid_t)GetCurrentProcessId());
	return 0;
}

/*
 * One line to bgrun (launch.c's words: starter.h), then our end closed:
 * bgrun reads to it. error < 0: "error ERRNO STAGE", else "ok PID".
 */
static void report(int error, enum bgrun_stage stage, bgrun_pid_t pid)
{
	char line[64];
	int n;

	if (error < 0)
		n = snprintf(line, sizeof(line), STARTER_REPORT_ERROR " %d %d\n",
			     -error, (int)stage);
	else
		n = snprintf(line, sizeof(line), STARTER_REPORT_OK " %ld\n",
			     (long)pid);
	if (_get_osfhandle(REPORT_FD) == -1)
		return;
	(void)_write(REPORT_FD, line, (unsigned)n);
	(void)_close(REPORT_FD);
}

/* --_supervise=ID: our one option; *ret_k is where bgrun's begin. */
static const char *parse_id(int argc, char **argv, int *ret_k)
{
	static const char opt[] = "--_supervise=";

	if (argc < 2 || strncmp(argv[1], opt, sizeof(opt) - 1) != 0 ||
	    !bgrun_event_id_valid(argv[1] + sizeof(opt) - 1,
				  strlen(argv[1] + sizeof(opt) - 1)))
		return NULL;
	*ret_k = 2;
	return argv[1] + sizeof(opt) - 1;
}

/* Waits for COMMAND, killing it at the timeout; *timed_out if it was. */
static int wait_command(const struct cli *c, struct bgrun_child *child,
			struct bgrun_status *st, bool *timed_out)
{
	int r;

	if (c->timeout_ns > 0) {
		int64_t ms = (c->timeout_ns + 999999) / 1000000;

		r = bgrun_child_wait(child, ms > INT32_MAX ? INT32_MAX : (int)ms,
				     st);
		if (r != -ETIMEDOUT)
			return r;
		/*
		 * No SIGTERM to give on Windows: the tree ends at once
		 * (bgrun/spawn.h), so --kill-after has nothing to add.
		 */
		*timed_out = true;
		(void)bgrun_child_kill(child, SIGTERM_);
	}
	return bgrun_child_wait(child, -1, st);
}

/*
 * The exit code bgrun gives for a failed launch, without its message:
 * bgrun read our report and says it (with -w our stderr is bgrun's, for
 * the failures to record, and would say it twice).
 */
static int quiet_failure_code(const struct cli *c, int error,
			      const struct bgrun_failure *failure)
{
	int saved, nul, code;

	(void)fflush(stderr);
	saved = _dup(2);
	nul = _open("NUL", _O_WRONLY);
	if (saved >= 0 && nul >= 0)
		(void)_dup2(nul, 2);
	code = cli_report_failure(c, error, failure);
	(void)fflush(stderr);
	if (saved >= 0 && nul >= 0)
		(void)_dup2(saved, 2);
	if (saved >= 0)
		(void)_close(saved);
	if (nul >= 0)
		(void)_close(nul);
	return code;
}

int bgrun_cli_main(int argc, char **argv);

int bgrun_cli_main(int argc, char **argv)
{
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_spawn_opts opts;
	struct bgrun_child *child = NULL;
	struct sup s = { .c = NULL };
	struct bgrun_status st;
	bool timed_out = false;
	const char *id;
	int status, k, r;
	struct cli c;

	id = parse_id(argc, argv, &k);
	if (id == NULL) {
		(void)fputs("bgrun-supervise: internal to bgrun, run by it for "
			    "a logged launch (see win-supervise.c)\n", stderr);
		return EXIT_CANCELED;
	}
	/* Then bgrun's options and COMMAND, as the user gave them. */
	argv[k - 1] = argv[0];
	cli_parse(&c, argc - k + 1, argv + k - 1);
	s.c = &c;
	bgrun_event_init(&s.ev, "commandfinish", "bgrun");
	strcpy(s.ev.id, id);
	r = describe(&s);
	if (r < 0) {
		report(r, BGRUN_STAGE_NONE, 0);
		status = EXIT_CANCELED;
		goto out;
	}

	cli_spawn_opts(&c, &opts);
	opts.failure = &failure;
	s.ev.start_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	r = bgrun_spawn(&opts, &child);
	if (r >= 0 && !c.ensurestart)
		r = bgrun_child_started(child, &failure);
	if (r < 0) {
		report(r, failure.stage, 0);
		status = quiet_failure_code(&c, r, &failure);
		s.ev.result = BGRUN_RESULT_SPAWN_FAILED;
		s.ev.end_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
		s.ev.message = bgrun_strerror(r);
		record(&s);
		goto out;
	}
	report(0, BGRUN_STAGE_NONE, r);
	s.ev.pid = r;
	s.ev.result = BGRUN_RESULT_RUNNING;
	record(&s);

	r = wait_command(&c, child, &st, &timed_out);
	if (r < 0) {
		/* Stays running: lost, once we are gone. */
		cli_msg("cannot wait for %s: %s", cli_printable(c.cmd[0]),
			bgrun_strerror(r));
		status = EXIT_CANCELED;
		goto out;
	}
	bgrun_event_set_status(&s.ev, &st);
	if (timed_out)
		s.ev.result = BGRUN_RESULT_TIMEOUT;
	record(&s);
	status = cli_status_code(&st);
out:
	bgrun_child_free(child);
	bgrun_sink_close(s.sink);
	free(s.db);
	free(s.argv);
	free(s.cwd);
	free(s.out);
	free(s.err);
	cli_free(&c);
	return status;
}
