/* SPDX-License-Identifier: MIT */
/* output.c: a logged launch's kept output: the per-event files, opened by bgrun and given to the command as its stdout and stderr. */

/*
 * The command writes straight into the file (no pipe, no copy by us,
 * nothing of ours between fork and exec): bgrun creates it here, the
 * primitive makes it the supervisor's descriptor 1 (and 2), and the
 * supervisor passes them on to the command as its own. One open file for
 * both streams when merged, so that their order is kept, as a terminal
 * shows it. The supervisor (start.c) keeps a descriptor of it until the
 * finish is recorded, and enforces the cap; readers (follow.c) learn
 * that a job is over when the last writer closes it (IN_CLOSE_WRITE).
 */

#include "cli.h"
#include "output.h"
#include "bgrun/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void capture_init(struct capture *cap)
{
	*cap = (struct capture){ .fd = { -1, -1 } };
}

/* DIR/ID.SUFFIX, created for us alone: a new file, never a link. */
static int create(const char *dir, const char *id,
		  enum bgrun_output_file which, char **ret_path, int *ret_fd)
{
	char *path;
	int fd, r;

	r = bgrun_output_path(dir, id, which, &path);
	if (r < 0)
		return r;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW |
				O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		free(path);
		return r;
	}
	*ret_path = path;
	*ret_fd = fd;
	return 0;
}

static void capture_discard_output(struct capture *cap);

/* The directory, made on first use; private: output may hold secrets. */
static int make_dir(const char *dir)
{
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	return errno == ENOENT ? bgrun_mkdir_p(dir, 0700) : -errno;
}

/*
 * DIR/ID.env, for COMMAND's environment (bgrun-start writes it once it
 * has reported: start.c, keep_env), so that `bgrun restart` can repeat
 * it; beside the output, never in the log, which is forwarded to other
 * machines. Only named here: a file's creation costs as much as the rest
 * of a launch on some file systems.
 */
static void open_env(const struct cli *c, const char *id,
		     struct capture *cap)
{
	int r = 0;

	if (!c->keep_env)
		return;
	if (cap->dir == NULL) {
		r = bgrun_output_default_dir(&cap->dir);
		if (r >= 0)
			r = make_dir(cap->dir);
	}
	if (r >= 0)
		r = bgrun_output_path(cap->dir, id, BGRUN_OUTPUT_ENV,
				      &cap->env_path);
	if (r < 0)
		cli_msg("cannot keep the environment of event %s in %s: %s; "
			"'bgrun restart' will not repeat it", id,
			cli_printable(cap->dir != NULL ? cap->dir
						       : "the state directory"),
			bgrun_strerror(r));
}

void capture_open(const struct cli *c, const char *id,
		  struct bgrun_spawn_opts *opts, struct capture *cap)
{
	/* The streams the user left alone: -o /dev/null is a choice too. */
	bool out = opts->out.kind == BGRUN_STDIO_NULL && c->out_path == NULL;
	bool err = opts->err.kind == BGRUN_STDIO_NULL && c->err_path == NULL;
	bool merged = c->capture == CLI_CAPTURE_MERGED;
	int r = 0;

	if (c->capture == CLI_CAPTURE_NONE || (!out && !err)) {
		open_env(c, id, cap);
		return;
	}
	r = bgrun_output_default_dir(&cap->dir);
	if (r >= 0)
		r = make_dir(cap->dir);
	if (r >= 0 && out)
		r = create(cap->dir, id,
			   merged ? BGRUN_OUTPUT_LOG : BGRUN_OUTPUT_OUT,
			   &cap->path[0], &cap->fd[0]);
	if (r >= 0 && err && merged && out) {
		cap->path[1] = strdup(cap->path[0]);
		if (cap->path[1] == NULL)
			r = -ENOMEM;
	} else if (r >= 0 && err) {
		r = create(cap->dir, id,
			   merged ? BGRUN_OUTPUT_LOG : BGRUN_OUTPUT_ERR,
			   &cap->path[1], &cap->fd[1]);
	}
	/* (A directory that failed for the output is said once, below.) */
	if (r >= 0)
		open_env(c, id, cap);
	if (r < 0) {
		/* Like a log that cannot be written: said, and launched. */
		cli_msg("cannot keep the output of event %s in %s: %s; it is "
			"discarded", id,
			cli_printable(cap->dir != NULL ? cap->dir
						       : "the state directory"),
			bgrun_strerror(r));
		capture_discard_output(cap);
		return;
	}
	cap->max_output = c->max_output;
	if (out) {
		opts->out.kind = BGRUN_STDIO_FD;
		opts->out.fd = cap->fd[0];
	}
	if (err && merged && out) {
		opts->err.kind = BGRUN_STDIO_STDOUT;
	} else if (err) {
		opts->err.kind = BGRUN_STDIO_FD;
		opts->err.fd = cap->fd[1];
	}
}

void capture_close_fds(struct capture *cap)
{
	for (int i = 0; i < 2; i++) {
		if (cap->fd[i] >= 0)
			(void)close(cap->fd[i]);
		cap->fd[i] = -1;
	}
}

/* The output files alone (the environment's stays). */
static void capture_discard_output(struct capture *cap)
{
	for (int i = 0; i < 2; i++) {
		if (cap->fd[i] >= 0)
			(void)close(cap->fd[i]);
		cap->fd[i] = -1;
		/* Both names may be one file (merged): unlink once is enough. */
		if (cap->path[i] != NULL)
			(void)unlink(cap->path[i]);
		free(cap->path[i]);
		cap->path[i] = NULL;
	}
}

void capture_discard(struct capture *cap)
{
	capture_close_fds(cap);
	capture_discard_output(cap);
	capture_discard_env(cap);
}

void capture_discard_env(struct capture *cap)
{
	if (cap->env_path != NULL)
		(void)unlink(cap->env_path);
	free(cap->env_path);
	cap->env_path = NULL;
}

void capture_free(struct capture *cap)
{
	capture_close_fds(cap);
	free(cap->path[0]);
	free(cap->path[1]);
	free(cap->env_path);
	free(cap->dir);
	capture_init(cap);
}
