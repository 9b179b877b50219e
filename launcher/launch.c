/* SPDX-License-Identifier: MIT */
/* launch.c: starting a bgrun supervisor (this program again, exec'd with --_supervise) and reading its report. */

/*
 * Shared by `bgrun COMMAND` and by the hooks of `bgrun clone`: both start
 * the supervisor through the primitive (so no code runs between fork and
 * exec here either), give it the write end of a pipe as descriptor 3, and
 * learn from one line on it whether the command was executed.
 */

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pid_t launch_read_report(int fd, struct bgrun_failure *failure)
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

int launch_supervisor(const char *id, const struct sup_launch *l,
		      struct bgrun_child **ret_child, int *ret_report_fd)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	char self[PATH_MAX], *id_opt = NULL;
	const char **sargv = NULL;
	int pipefd[2] = { -1, -1 }, status = -1;
	size_t n_args = 0;
	ssize_t n;
	pid_t r;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		cli_msg("cannot find the bgrun program: %s", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	while (l->args[n_args] != NULL)
		n_args++;
	sargv = calloc(n_args + 3, sizeof(*sargv));
	if (sargv != NULL && asprintf(&id_opt, "--_supervise=%s", id) < 0)
		id_opt = NULL;
	if (sargv == NULL || id_opt == NULL || pipe2(pipefd, O_CLOEXEC) < 0) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	sargv[0] = self;
	sargv[1] = id_opt;
	memcpy(&sargv[2], l->args, n_args * sizeof(*sargv));

	opts.argv = sargv;
	opts.env_set = l->env_set;
	if (l->stdin_inherit)
		opts.in.kind = BGRUN_STDIO_INHERIT;
	opts.detach = l->detach;
	opts.pass_fds = &pipefd[1];
	opts.n_pass_fds = 1;
	opts.failure = &failure;
	r = bgrun_spawn(&opts, ret_child);
	(void)close(pipefd[1]);
	if (r < 0) {
		cli_msg("cannot start the supervisor %s: %s", self,
			bgrun_strerror(r));
		goto out;
	}
	*ret_report_fd = pipefd[0];
	pipefd[0] = -1;
	status = 0;
out:
	if (pipefd[0] >= 0)
		(void)close(pipefd[0]);
	free(id_opt);
	free(sargv);
	return status;
}
