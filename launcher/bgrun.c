/* SPDX-License-Identifier: MIT */
/* bgrun.c: the bgrun command: launch COMMAND alone, or under a supervisor that records its finish. */

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static int print_pid(pid_t pid)
{
	(void)printf("%ld\n", (long)pid);
	return cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS;
}

/* --no-log: one posix_spawn of COMMAND, nothing recorded. */
static int launch_direct(const struct cli *c)
{
	struct bgrun_spawn_opts opts;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	int status = EXIT_SUCCESS;
	pid_t r;

	cli_spawn_opts(c, &opts);
	opts.failure = &failure;
	/*
	 * Without ensurestart bgrun still needs the outcome before it exits,
	 * so it keeps a handle and asks for it.
	 */
	r = bgrun_spawn(&opts, c->wait || !c->ensurestart ? &child : NULL);
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
	bgrun_child_free(child);
	return status;
}

/*
 * Reads the supervisor's one-line report from fd: "ok PID" or
 * "error ERRNO STAGE". Returns the pid, -errno with *failure filled, or
 * 0 if the supervisor went away without a word.
 */
static pid_t read_report(int fd, struct bgrun_failure *failure)
{
	char line[128];
	size_t len = 0;
	long a, b;

	while (len < sizeof(line) - 1) {
		ssize_t n = read(fd, line + len, sizeof(line) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	line[len] = '\0';
	if (sscanf(line, "ok %ld", &a) == 1 && a > 0)
		return (pid_t)a;
	if (sscanf(line, "error %ld %ld", &a, &b) == 2 && a > 0) {
		failure->stage = (enum bgrun_stage)b;
		failure->error = (int)-a;
		return (pid_t)-a;
	}
	return 0;
}

/*
 * The default: start a supervisor (this program again, exec'd through the
 * primitive, so no code runs between fork and exec here either) that
 * launches COMMAND, reports on a pipe given as its descriptor 3, records a
 * `running` event, waits and records the finish. With ensurestart bgrun
 * returns once the report says COMMAND was executed (or why not); without,
 * as soon as the supervisor is running.
 */
static int launch_supervised(const struct cli *c, int argc, char **argv)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	char id[BGRUN_EVENT_ID_MAX + 1], self[PATH_MAX], *id_opt = NULL;
	char **sargv = NULL;
	int pipefd[2] = { -1, -1 }, status = EXIT_CANCELED;
	ssize_t n;
	pid_t r;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		cli_msg("cannot find the bgrun program: %s", strerror(errno));
		return EXIT_CANCELED;
	}
	self[n] = '\0';
	/* The event id is chosen here, so --print-id needs no round trip. */
	bgrun_event_new_id(id);
	sargv = calloc((size_t)argc + 2, sizeof(*sargv));
	if (sargv == NULL || asprintf(&id_opt, "--_supervise=%s", id) < 0 ||
	    pipe2(pipefd, O_CLOEXEC) < 0) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	sargv[0] = self;
	sargv[1] = id_opt;
	memcpy(&sargv[2], &argv[1], (size_t)(argc - 1) * sizeof(*sargv));

	opts.argv = (const char *const *)sargv;
	if (c->in_path != NULL && strcmp(c->in_path, "-") == 0)
		opts.in.kind = BGRUN_STDIO_INHERIT;
	opts.detach = !c->wait;
	opts.pass_fds = &pipefd[1];
	opts.n_pass_fds = 1;
	opts.failure = &failure;
	r = bgrun_spawn(&opts, c->wait ? &child : NULL);
	(void)close(pipefd[1]);
	if (r < 0) {
		cli_msg("cannot start the supervisor %s: %s", self,
			bgrun_strerror(r));
		goto out;
	}
	status = EXIT_SUCCESS;
	if (c->print_id) {
		(void)printf("%s\n", id);
		if (cli_flush_stdout() < 0)
			status = EXIT_CANCELED;
	}
	if (!c->ensurestart && !c->wait)
		goto out;

	r = read_report(pipefd[0], &failure);
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
	}
out:
	if (pipefd[0] >= 0)
		(void)close(pipefd[0]);
	bgrun_child_free(child);
	free(id_opt);
	free(sargv);
	return status;
}

int main(int argc, char **argv)
{
	struct cli c;
	int status;

	cli_parse(&c, argc, argv);
	if (c.supervise_id != NULL)
		status = supervise_main(&c);
	else if (c.log)
		status = launch_supervised(&c, argc, argv);
	else
		status = launch_direct(&c);
	cli_free(&c);
	return status;
}
