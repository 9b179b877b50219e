/* SPDX-License-Identifier: MIT */
/* spawn.c: bgrun_spawn(), the portable front of the primitive. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>

static int fail_args(const struct bgrun_spawn_opts *opts, int r)
{
	if (opts->failure != NULL) {
		opts->failure->stage = r == -ENOMEM ? BGRUN_STAGE_SETUP
						    : BGRUN_STAGE_ARGS;
		opts->failure->error = r;
	}
	return r;
}

int bgrun_spawn(const struct bgrun_spawn_opts *opts,
		struct bgrun_child **ret_child)
{
	struct bgrun_child *child = NULL;
	struct bgrun__req req;
	struct bgrun__proc proc;
	int r;

	if (opts == NULL)
		return -EINVAL;
	bgrun__init_once();
	if (!opts->ensurestart) {
		if (ret_child == NULL && opts->on_start == NULL)
			return fail_args(opts, -EINVAL);
		if (ret_child != NULL) {
			child = bgrun__child_new();
			if (child == NULL)
				return fail_args(opts, -ENOMEM);
		}
		r = bgrun__async_submit(opts, child);
		if (r < 0) {
			if (child != NULL)
				bgrun__child_unref(child);
			return fail_args(opts, r);
		}
		if (child != NULL)
			*ret_child = child;
		return 0;
	}

	r = bgrun__req_build(opts, false, &req);
	if (r < 0)
		return fail_args(opts, r);
	if (ret_child != NULL) {
		child = bgrun__child_new();
		if (child == NULL) {
			bgrun__req_release(&req);
			return fail_args(opts, -ENOMEM);
		}
	}
	r = bgrun__platform_spawn(&req, &proc, opts->failure);
	bgrun__req_release(&req);
	if (r < 0) {
		if (child != NULL)
			bgrun__child_unref(child);
		return r;
	}
	if (child != NULL) {
		bgrun__child_set_started(child, &proc);
		*ret_child = child;
	} else {
		bgrun__reaper_adopt(&proc);
	}
	return proc.pid;
}

int bgrun_spawn_resolve(const struct bgrun_spawn_opts *opts, char **ret_path)
{
	struct bgrun__req req;
	int r;

	if (opts == NULL || ret_path == NULL)
		return -EINVAL;
	r = bgrun__req_build(opts, false, &req);
	if (r < 0)
		return fail_args(opts, r);
	r = bgrun__platform_resolve(&req, ret_path, opts->failure);
	bgrun__req_release(&req);
	return r;
}

int bgrun_spawn_command(const struct bgrun_spawn_opts *opts, char **ret_path,
			char ***ret_argv, char ***ret_envp)
{
	struct bgrun__req req;
	char **argv, **envp, *path = NULL;
	int r;

	if (opts == NULL || ret_argv == NULL || ret_envp == NULL)
		return -EINVAL;
	r = bgrun__req_build(opts, false, &req);
	if (r < 0)
		return fail_args(opts, r);
	if (ret_path != NULL) {
		r = bgrun__platform_resolve(&req, &path, opts->failure);
		if (r < 0) {
			bgrun__req_release(&req);
			return r;
		}
	}
	/* req borrows from opts and the caller's environment: copies outlive both. */
	argv = bgrun__vec_copy(req.argv);
	envp = bgrun__vec_copy(req.envp);
	bgrun__req_release(&req);
	if (argv == NULL || envp == NULL) {
		free(path);
		free(argv);
		free(envp);
		return fail_args(opts, -ENOMEM);
	}
	if (ret_path != NULL)
		*ret_path = path;
	*ret_argv = argv;
	*ret_envp = envp;
	return 0;
}
