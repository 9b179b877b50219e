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
#if BGRUN_CLI_LOG
#include "output.h"
#include "verbs.h"
#endif

#include <errno.h>
#include <limits.h>
#include <signal.h>
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

#if !defined(_WIN32)
/*
 * --wait: SIGTERM, SIGINT and SIGHUP sent to bgrun are for the command.
 * They go to our child (the supervisor, which passes them to the
 * command's group; or, --no-log, the command), and bgrun waits on for
 * the end, which is then the command's. One the terminal sent to the
 * whole foreground group (SI_KERNEL) has reached our child already.
 * Blocked from before the launch until the child's pid is known, so that
 * none is lost; the primitive starts the child with none blocked.
 */
static volatile sig_atomic_t forward_pid;
static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP };
static sigset_t forward_old; /* the mask before forward_block */

/* ASYNC-SIGNAL-SAFE: kill() only. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (forward_pid > 0 && si->si_code != SI_KERNEL)
		(void)kill((pid_t)forward_pid, sig);
}

static void forward_block(void)
{
	sigset_t set;

	(void)sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		(void)sigaddset(&set, forwarded[i]);
	(void)sigprocmask(SIG_BLOCK, &set, &forward_old);
}

/* From now on to pid (0: nobody; the signals' defaults again). */
static void forward_to(bgrun_pid_t pid)
{
	struct sigaction sa = { .sa_sigaction = forward,
				.sa_flags = SA_SIGINFO | SA_RESTART };

	forward_pid = pid;
	if (pid <= 0)
		sa = (struct sigaction){ .sa_handler = SIG_DFL };
	(void)sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		(void)sigaction(forwarded[i], &sa, NULL);
	(void)sigprocmask(SIG_SETMASK, &forward_old, NULL);
}
#else
/* Windows: no signals to pass on (a console's Ctrl-C reaches the child). */
static void forward_block(void)
{
}

static void forward_to(bgrun_pid_t pid)
{
	(void)pid;
}
#endif

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
	if (c->wait)
		forward_block();
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
		int code;

		forward_to(r);
		code = wait_child(c->cmd[0], child);
		if (status == EXIT_SUCCESS)
			status = code;
	}
out:
	if (c->wait)
		forward_to(0);
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
		/* Done once it has the report (but for --wait). */
		.exits_after_report = !c->wait,
		.timeout_ns = c->timeout_ns,
		.kill_after_ns = c->kill_after_ns,
	};
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	struct capture cap;
	struct follow_file f[2];
	char id[BGRUN_EVENT_ID_MAX + 1];
	int report_fd = -1, status = EXIT_SUCCESS, error = 0, ifd = -1;
	size_t n_follow = 0;
	pid_t r;

	/* The event id is chosen here, so --print-id needs no round trip. */
	bgrun_event_new_id(id);
	status = cli_check_log(c, id);
	if (status != EXIT_SUCCESS)
		return status;
	cli_spawn_opts(c, &cmd);
	capture_init(&cap);
	capture_open(c, id, &cmd, &cap);
	l.out_capture = cap.path[0];
	l.err_capture = cap.path[1];
	l.max_output = cap.max_output;
	l.env_file = cap.env_path;
	/*
	 * --wait shows the kept output as it comes by following the file,
	 * not by a pipe (a tee): the command writes to a file either way,
	 * and nothing of the job depends on us reading (we may be killed, or
	 * our stdout may block). The watch is made before our descriptor is
	 * closed, so the end cannot be missed (follow.c). Merged, both
	 * streams come out on our stdout, in the order they were written.
	 */
	if (c->wait && cap.path[0] != NULL)
		f[n_follow++] = (struct follow_file){ .path = cap.path[0],
						      .out = 1 };
	if (c->wait && cap.path[1] != NULL &&
	    (cap.path[0] == NULL || strcmp(cap.path[0], cap.path[1]) != 0))
		f[n_follow++] = (struct follow_file){
			.path = cap.path[1], .out = cap.path[0] != NULL ? 2 : 1 };
	if (n_follow > 0 && follow_open(f, n_follow, &ifd) < 0)
		n_follow = 0;
	/*
	 * A reader of ours that goes away (bgrun -w | head) ends the display,
	 * not bgrun: the job is still ours to wait for. The primitive starts
	 * the supervisor with every signal at its default, so this stays ours.
	 */
	if (n_follow > 0)
		(void)signal(SIGPIPE, SIG_IGN);
	if (c->wait)
		forward_block();
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
		goto out;
	default:
		/* Nothing runs and nothing is recorded: no file either. */
		capture_discard(&cap);
		status = EXIT_CANCELED;
		goto out;
	}
	/* The supervisor has its own descriptors of the files now. */
	capture_close_fds(&cap);
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
		int code;

		forward_to(bgrun_child_pid(child));
		if (r > 0 && n_follow > 0) {
			int e = follow_run(f, n_follow, ifd, false);

			if (e < 0)
				cli_msg("cannot follow the output: %s",
					bgrun_strerror(e));
		}
		code = wait_child("the supervisor", child);
		if (status == EXIT_SUCCESS)
			status = code;
		/* Its recorder has exited: what became of the record. */
		cli_check_record(c, id);
	}
out:
	if (c->wait)
		forward_to(0);
	follow_close(f, n_follow, ifd);
	capture_free(&cap);
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
#elif BGRUN_CLI_CLONE
	/*
	 * The Windows build: no bgrun-full to execute, the clone pipeline is
	 * linked in, and the clone runs here (not recorded, for now).
	 */
	if (argc > 1 && strcmp(argv[1], "clone") == 0)
		return clone_main(argc - 1, argv + 1);
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
