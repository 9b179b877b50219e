/* SPDX-License-Identifier: MIT */
/* launch.c: starting a bgrun supervisor (bgrun-start, then bgrun-full --_supervise) and reading its report. */

/*
 * Shared by `bgrun COMMAND` and by the hooks of `bgrun clone`: both start
 * the supervisor through the primitive (so no code runs between fork and
 * exec here either), give it the write end of a pipe as descriptor 3, and
 * learn from one line on it whether the command was executed. The
 * supervisor's first program is bgrun-start (start.c says why), which
 * launches COMMAND and starts the recorder, `bgrun-full --_supervise`.
 */

#include "cli.h"
#include "bgrun/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pid_t launch_read_report(int fd, struct bgrun_failure *failure)
{
	char line[128];
	size_t len = 0;
	long a, b;

	/* One line; the supervisor may keep its end open after it. */
	while (len < sizeof(line) - 1 && memchr(line, '\n', len) == NULL) {
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

/* The strings of a supervisor's argv that are not the caller's. */
struct sup_strings {
	const char *self;       /* the recorder: bgrun-full */
	char supervise[64];     /* --_supervise=ID */
	char *origin;           /* --_origin=DIR */
	char flags[8], timeout[24], kill_after[24], n_env[24], n_sup[24];
};

/*
 * bgrun-start FLAGS TIMEOUT KILL_AFTER PATH NENV ENV... NREC REC... ARGV...
 * (start.c), with REC = self --_supervise=ID --_origin=DIR ARGS... The
 * strings are borrowed from l and from ss, which the caller keeps alive.
 */
static const char **starter_argv(const char *starter, const char *path,
				 struct sup_strings *ss,
				 const struct sup_launch *l)
{
	/* o->env is NULL (ours) or empty (--clear-env): bgrun-start's 'c'. */
	const struct bgrun_spawn_opts *o = l->cmd;
	size_t n_set = vec_len(o->env_set);
	size_t n_unset = vec_len(o->env_unset);
	size_t n_args = vec_len(l->args);
	size_t n_argv = vec_len(o->argv), k = 0;
	const char **v;

	v = calloc(n_set + n_unset + n_args + n_argv + 16, sizeof(*v));
	if (v == NULL)
		return NULL;
	(void)snprintf(ss->flags, sizeof(ss->flags), "-%s%s",
		       o->detach ? "d" : "", o->env != NULL ? "c" : "");
	(void)snprintf(ss->timeout, sizeof(ss->timeout), "%lld",
		       (long long)l->timeout_ns);
	(void)snprintf(ss->kill_after, sizeof(ss->kill_after), "%lld",
		       (long long)l->kill_after_ns);
	(void)snprintf(ss->n_env, sizeof(ss->n_env), "%zu", n_set + n_unset);
	(void)snprintf(ss->n_sup, sizeof(ss->n_sup), "%zu", 3 + n_args);
	v[k++] = starter;
	v[k++] = ss->flags;
	v[k++] = ss->timeout;
	v[k++] = ss->kill_after;
	v[k++] = path;
	v[k++] = ss->n_env;
	for (size_t i = 0; i < n_set; i++)
		v[k++] = o->env_set[i];
	for (size_t i = 0; i < n_unset; i++)
		v[k++] = o->env_unset[i];
	v[k++] = ss->n_sup;
	v[k++] = ss->self;
	v[k++] = ss->supervise;
	v[k++] = ss->origin;
	for (size_t i = 0; i < n_args; i++)
		v[k++] = l->args[i];
	if (o->shell != NULL) {
		v[k++] = "/bin/sh";
		v[k++] = "-c";
		v[k++] = o->shell;
	}
	for (size_t i = 0; i < n_argv; i++)
		v[k++] = o->argv[i];
	return v;
}

/*
 * COMMAND could not be started: a supervisor records it (spawn_failed),
 * the same code as for a failure bgrun-start meets. With ensurestart the
 * row is there when we return.
 */
static void record_failure(const struct sup_strings *ss,
			   const struct sup_launch *l, int error,
			   const struct bgrun_failure *failure, int64_t rt,
			   int64_t mono)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	size_t n_args = vec_len(l->args);
	const char **v = calloc(n_args + 5, sizeof(*v));
	char failed[128];

	if (v == NULL)
		return;
	(void)snprintf(failed, sizeof(failed), "--_failed=%d:%d:%lld:%lld",
		       -error, (int)failure->stage, (long long)rt,
		       (long long)mono);
	v[0] = ss->self;
	v[1] = failed;
	v[2] = ss->supervise;
	v[3] = ss->origin;
	memcpy(&v[4], l->args, n_args * sizeof(*v));
	opts.argv = v;
	if (bgrun_spawn(&opts, l->ensurestart ? &child : NULL) > 0 &&
	    child != NULL)
		(void)bgrun_child_wait(child, -1, &st);
	bgrun_child_free(child);
	free(v);
}

enum sup_started launch_supervisor(const char *id, const struct sup_launch *l,
				   struct bgrun_child **ret_child,
				   int *ret_report_fd, int *ret_error,
				   struct bgrun_failure *failure)
{
	struct bgrun_spawn_opts opts = *l->cmd;
	struct bgrun_failure sf = { .stage = BGRUN_STAGE_NONE };
	enum sup_started status = SUP_NOT_STARTED;
	struct sup_strings ss = { .self = NULL };
	char self[PATH_MAX], buf[PATH_MAX], full[PATH_MAX], here[PATH_MAX];
	char *path = NULL;
	const char *starter;
	const char **argv = NULL;
	int pipefd[2] = { -1, -1 }, r;
	int64_t rt, mono;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0 || getcwd(here, sizeof(here)) == NULL) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		return SUP_NOT_STARTED;
	}
	self[n] = '\0';
	/* The recorder is bgrun-full: the store is its business, not ours. */
	ss.self = bgrun_helper_path(self, "bgrun-full", BGRUN_FULL_PATH,
				     full, sizeof(full));
	starter = bgrun_helper_path(self, "bgrun-start", BGRUN_START_PATH,
				     buf, sizeof(buf));
	if (asprintf(&ss.origin, "--_origin=%s", here) < 0) {
		ss.origin = NULL;
		cli_msg("cannot start the supervisor: %s", strerror(ENOMEM));
		return SUP_NOT_STARTED;
	}
	(void)snprintf(ss.supervise, sizeof(ss.supervise), "--_supervise=%s",
		       id);

	rt = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	mono = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	opts.failure = failure;
	r = bgrun_spawn_resolve(&opts, &path);
	if (r < 0)
		goto cmd_failed;

	argv = starter_argv(starter, path, &ss, l);
	if (argv == NULL || pipe2(pipefd, O_CLOEXEC) < 0) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	/* COMMAND's directory and streams; our environment, not its. */
	opts.argv = argv;
	opts.shell = NULL;
	opts.env = NULL;
	opts.env_set = NULL;
	opts.env_unset = NULL;
	opts.ensurestart = true;
	opts.pass_fds = &pipefd[1];
	opts.n_pass_fds = 1;
	opts.failure = &sf;
	r = bgrun_spawn(&opts, ret_child);
	(void)close(pipefd[1]);
	if (r < 0 && sf.stage == BGRUN_STAGE_EXEC) {
		cli_msg("cannot start the supervisor %s: %s", starter,
			bgrun_strerror(r));
		goto out;
	}
	if (r < 0) {
		*failure = sf;
		goto cmd_failed;
	}
	*ret_report_fd = pipefd[0];
	pipefd[0] = -1;
	status = SUP_STARTED;
	goto out;

cmd_failed:
	*ret_error = r;
	record_failure(&ss, l, r, failure, rt, mono);
	status = SUP_CMD_FAILED;
out:
	if (pipefd[0] >= 0)
		(void)close(pipefd[0]);
	free(argv);
	free(path);
	free(ss.origin);
	return status;
}
