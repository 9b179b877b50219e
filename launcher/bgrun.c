/* SPDX-License-Identifier: MIT */
/* bgrun.c: the bgrun command: launch COMMAND alone, or under a supervisor that records its finish; the verbs (`bgrun ps`, `bgrun clone`...) are verbs.c's. */

/*
 * bgrun, which users run, does every launch and links no SQLite. The
 * roles that use the store are bgrun-full's (full.c): the recorder a
 * supervised launch starts (supervise.c), and the verbs that read the
 * log (`bgrun ps`, `kill`, `wait`, `restart`) or write a repository
 * (`bgrun clone`), for which bgrun executes it with the same arguments
 * (verbs.c).
 */

#include "cli.h"
#include "verbs.h"
#include "bgrun/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Waits for a child of ours and turns its status into our exit code. */
static int wait_child(const char *what, struct bgrun_child *child)
{
	struct bgrun_status st;
	int r;

	r = bgrun_child_wait(child, -1, &st);
	if (r < 0) {
		cli_msg("cannot wait for %s: %s", cli_printable(what),
			bgrun_strerror(r));
		return EXIT_CANCELED;
	}
	return cli_status_code(&st);
}

static int print_line(const char *s)
{
	(void)printf("%s\n", s);
	return cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS;
}

static int print_pid(bgrun_pid_t pid)
{
	char buf[32];

	(void)snprintf(buf, sizeof(buf), "%ld", (long)pid);
	return print_line(buf);
}

/* --no-log: one posix_spawn of COMMAND, nothing recorded. */
static int launch_direct(const struct cli *c)
{
	struct bgrun_spawn_opts opts;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	int status = EXIT_SUCCESS;
	bgrun_pid_t r;

	cli_spawn_opts(c, &opts);
	opts.failure = &failure;
	/*
	 * Without ensurestart bgrun still needs the outcome before it exits,
	 * so it asks the handle for it. Detached, the handle is disowned: we
	 * exit at once, and init reaps COMMAND.
	 */
	r = bgrun_spawn(&opts, &child);
	if (r >= 0 && !c->ensurestart)
		r = bgrun_child_started(child, &failure);
	if (r < 0) {
		status = cli_report_failure(c, r, &failure);
		goto out;
	}
	if (c->print_pid)
		status = print_pid(r);
	if (c->wait) {
		int code = wait_child(c->cmd[0], child);

		if (status == EXIT_SUCCESS)
			status = code;
	}
out:
	bgrun_child_disown(child);
	return status;
}

#if BGRUN_CLI_LOG
/*
 * The default: start a supervisor (bgrun-start, exec'd through the
 * primitive, so no code runs between fork and exec here either; it
 * launches COMMAND, reports on a pipe given as its descriptor 3, waits
 * for COMMAND and has bgrun-full, started as its recorder, write the
 * `running` row and the finish). With ensurestart bgrun returns once the report
 * says COMMAND was executed (or why not); without, as soon as the
 * supervisor is running.
 */
static int launch_supervised(const struct cli *c, char **argv)
{
	struct bgrun_spawn_opts cmd;
	struct sup_launch l = {
		.cmd = &cmd,
		/* bgrun's own options and COMMAND, as they came. */
		.args = (const char *const *)&argv[1],
		.ensurestart = c->ensurestart,
		.timeout_ns = c->timeout_ns,
		.kill_after_ns = c->kill_after_ns,
	};
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	char id[BGRUN_EVENT_ID_MAX + 1];
	int report_fd = -1, status = EXIT_SUCCESS, error = 0;
	pid_t r;

	/* The event id is chosen here, so --print-id needs no round trip. */
	bgrun_event_new_id(id);
	status = cli_check_log(c, id);
	if (status != EXIT_SUCCESS)
		return status;
	cli_spawn_opts(c, &cmd);
	switch (launch_supervisor(id, &l, &child, &report_fd, &error,
				  &failure)) {
	case SUP_STARTED:
		break;
	case SUP_CMD_FAILED:
		/* Recorded; without ensurestart the log is where it shows. */
		if (c->print_id)
			status = print_line(id);
		if (c->ensurestart || c->wait)
			status = cli_report_failure(c, error, &failure);
		return status;
	default:
		return EXIT_CANCELED;
	}
	if (c->print_id)
		status = print_line(id);
	if (!c->ensurestart && !c->wait)
		goto out;

	r = launch_read_report(report_fd, &failure);
	if (r < 0) {
		status = cli_report_failure(c, r, &failure);
	} else if (r == 0) {
		cli_msg("the supervisor of %s exited without a report",
			cli_printable(c->cmd[0]));
		status = EXIT_CANCELED;
	} else if (c->print_pid && status == EXIT_SUCCESS) {
		status = print_pid(r);
	}
	if (c->wait) {
		int code = wait_child("the supervisor", child);

		if (status == EXIT_SUCCESS)
			status = code;
		/* Its recorder has exited: what became of the record. */
		cli_check_record(c, id);
	}
out:
	/*
	 * The pipe stays open until we exit: bgrun-start waits for its end
	 * to close before it loads the recorder, which would otherwise take
	 * a CPU from our exit. The supervisor is disowned: we exit now, and
	 * init reaps it; the library's reaper would only be a thread for our
	 * exit to wait for.
	 */
	bgrun_child_disown(child);
	return status;
}
#endif

/*
 * The user's configuration file, before anything else: its [log] and
 * [sink] keys become the environment the chain reads (bgrun/config.h),
 * or the Windows supervisor. A broken file is a usage error, said once,
 * before anything runs.
 */
static void read_config(void)
{
	struct bgrun_config *config = NULL;

	if (bgrun_config_new(&config) < 0)
		return;
	if (bgrun_config_read_user(config) < 0) {
		cli_msg("%s", bgrun_config_errmsg(config));
		exit(EXIT_USAGE);
	}
	bgrun_config_free(config);
}

/*
 * main, or what the Windows build's wmain (win-main.c) calls with the
 * arguments in UTF-8.
 */
#ifndef BGRUN_CLI_MAIN
#define BGRUN_CLI_MAIN main
#endif
int BGRUN_CLI_MAIN(int argc, char **argv);

int BGRUN_CLI_MAIN(int argc, char **argv)
{
	struct cli c;
	int status;

	read_config();
#if BGRUN_CLI_LOG
	/* A verb (verbs.h): bgrun-full runs those that read the log. */
	if (argc > 1) {
		const struct verb *v = verb_find(argv[1]);

		if (v != NULL)
			return v->fn(argc - 1, argv + 1);
	}
#endif
	cli_parse(&c, argc, argv);
#if BGRUN_CLI_LOG
	if (c.log)
		status = launch_supervised(&c, argv);
	else
		status = launch_direct(&c);
#else
	/* The Windows build: its own supervisor (win-launch.c). */
	if (c.log)
		status = win_launch_logged(&c, argv);
	else
		status = launch_direct(&c);
#endif
	cli_free(&c);
	return status;
}
