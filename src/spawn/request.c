/* SPDX-License-Identifier: MIT */
/* request.c: turns spawn options into the exact argv and envp to execute. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Length of the NAME part of "NAME=VALUE" (or of a bare NAME). */
static size_t name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq != NULL ? (size_t)(eq - s) : strlen(s);
}

/* Whether entry ("NAME=VALUE" or "NAME") is for name[0..len). */
static bool same_name(const char *entry, const char *name, size_t len)
{
	return bgrun__os_env_name_eq(entry, name, len) &&
	       (entry[len] == '=' || entry[len] == '\0');
}

static bool in_list(const char *entry, const char *const *list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		if (same_name(entry, list[i], name_len(list[i])))
			return true;
	return false;
}

static int validate(const struct bgrun_spawn_opts *o)
{
	const struct bgrun_stdio *s[3] = { &o->in, &o->out, &o->err };

	if (o->shell == NULL && (o->argv == NULL || o->argv[0] == NULL))
		return -EINVAL;
	for (size_t i = 0; o->env_set != NULL && o->env_set[i] != NULL; i++) {
		const char *eq = strchr(o->env_set[i], '=');

		if (eq == NULL || eq == o->env_set[i])
			return -EINVAL;
	}
	for (size_t i = 0; o->env_unset != NULL && o->env_unset[i] != NULL; i++)
		if (o->env_unset[i][0] == '\0' || strchr(o->env_unset[i], '='))
			return -EINVAL;
	for (size_t i = 0; o->pass_fds != NULL && i < o->n_pass_fds; i++)
		if (bgrun__os_fd_bad(o->pass_fds[i]))
			return -EBADF;
	for (int i = 0; i < 3; i++) {
		switch (s[i]->kind) {
		case BGRUN_STDIO_NULL:
		case BGRUN_STDIO_INHERIT:
			break;
		case BGRUN_STDIO_FD:
			if (bgrun__os_fd_bad(s[i]->fd))
				return -EBADF;
			break;
		case BGRUN_STDIO_FILE:
			if (s[i]->path == NULL || s[i]->path[0] == '\0')
				return -EINVAL;
			break;
		case BGRUN_STDIO_BYTES:
			if (i != 0 || (s[i]->bytes == NULL && s[i]->len > 0))
				return -EINVAL;
			break;
		case BGRUN_STDIO_STDOUT:
			if (i != 2)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The environment: base (opts->env or the caller's), minus every name that
 * env_set or env_unset mentions, plus env_set (the last of a name wins).
 */
static int build_envp(const struct bgrun_spawn_opts *o, char ***ret_envp)
{
	const char *const *base = o->env != NULL ? o->env
						 : bgrun__os_environ();
	size_t nbase = bgrun__vec_len(base);
	size_t nset = bgrun__vec_len(o->env_set), n = 0;
	char **envp;

	envp = malloc((nbase + nset + 1) * sizeof(*envp));
	if (envp == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nbase; i++)
		if (!in_list(base[i], o->env_set) &&
		    !in_list(base[i], o->env_unset))
			envp[n++] = (char *)base[i];
	for (size_t i = 0; i < nset; i++)
		if (!in_list(o->env_set[i], o->env_set + i + 1) &&
		    !in_list(o->env_set[i], o->env_unset))
			envp[n++] = (char *)o->env_set[i];
	envp[n] = NULL;
	*ret_envp = envp;
	return 0;
}

/* argv, or the platform's shell running o->shell with argv as its $0, $1... */
static int build_argv(const struct bgrun_spawn_opts *o, char ***ret_argv)
{
	const char *const *sh = o->shell != NULL ? bgrun__os_shell_argv() : NULL;
	size_t n = bgrun__vec_len(o->argv), nsh = bgrun__vec_len(sh), k = 0;
	char **argv;

	argv = malloc((nsh + 1 + n + 1) * sizeof(*argv));
	if (argv == NULL)
		return -ENOMEM;
	if (o->shell != NULL) {
		for (size_t i = 0; i < nsh; i++)
			argv[k++] = (char *)sh[i];
		argv[k++] = (char *)o->shell;
	}
	for (size_t i = 0; i < n; i++)
		argv[k++] = (char *)o->argv[i];
	argv[k] = NULL;
	*ret_argv = argv;
	return 0;
}

/* Copies a NULL-terminated vector's strings into the arena at *pos. */
static char **copy_vec(char **v, char ***slots, char **pos)
{
	char **out = *slots;
	size_t i;

	for (i = 0; v[i] != NULL; i++) {
		size_t len = strlen(v[i]) + 1;

		memcpy(*pos, v[i], len);
		out[i] = *pos;
		*pos += len;
	}
	out[i] = NULL;
	*slots += i + 1;
	return out;
}

static size_t vec_bytes(char **v)
{
	size_t total = 0, i;

	for (i = 0; v[i] != NULL; i++)
		total += strlen(v[i]) + 1;
	return total + (i + 1) * sizeof(char *);
}

char **bgrun__vec_copy(char **v)
{
	char **out = malloc(vec_bytes(v)), **slots = out, *pos;

	if (out == NULL)
		return NULL;
	pos = (char *)(out + bgrun__vec_len((const char *const *)v) + 1);
	return copy_vec(v, &slots, &pos);
}

static size_t str_bytes(const char *s)
{
	return s != NULL ? strlen(s) + 1 : 0;
}

static const char *copy_str(const char *s, char **pos)
{
	size_t len;
	char *out = *pos;

	if (s == NULL)
		return NULL;
	len = strlen(s) + 1;
	memcpy(out, s, len);
	*pos += len;
	return out;
}

static void close_owned_fds(struct bgrun__req *req)
{
	struct bgrun_stdio *s[3] = { &req->in, &req->out, &req->err };

	for (int i = 0; i < 3; i++)
		if (s[i]->kind == BGRUN_STDIO_FD && !bgrun__os_fd_bad(s[i]->fd))
			bgrun__os_fd_close(s[i]->fd);
	for (size_t i = 0; i < req->n_pass_fds; i++)
		if (!bgrun__os_fd_bad(req->pass_fds[i]))
			bgrun__os_fd_close(req->pass_fds[i]);
}

/*
 * A queued launch runs after the call returned, when the caller may have
 * closed or reused its descriptors: take duplicates now. The caller's own
 * 0, 1, 2 (INHERIT) are taken now too, as they are at the time of the call.
 */
static int take_fds(struct bgrun__req *req, bgrun_os_fd_t *pass)
{
	struct bgrun_stdio *s[3] = { &req->in, &req->out, &req->err };
	int r = 0;

	for (size_t i = 0; i < req->n_pass_fds; i++)
		pass[i] = BGRUN_OS_FD_NONE;
	for (int i = 0; i < 3; i++) {
		if (s[i]->kind == BGRUN_STDIO_INHERIT) {
			if (bgrun__os_std_fd(i, &s[i]->fd) < 0) {
				s[i]->kind = BGRUN_STDIO_NULL;
				continue;
			}
			s[i]->kind = BGRUN_STDIO_FD;
		}
		if (s[i]->kind == BGRUN_STDIO_FD) {
			bgrun_os_fd_t fd = s[i]->fd;

			s[i]->fd = BGRUN_OS_FD_NONE;
			if (r == 0)
				r = bgrun__os_fd_dup(fd, &s[i]->fd);
		}
	}
	for (size_t i = 0; i < req->n_pass_fds && r == 0; i++)
		r = bgrun__os_fd_dup(req->pass_fds[i], &pass[i]);
	req->pass_fds = pass;
	req->owns_fds = true;
	return r;
}

/*
 * A queued launch outlives the caller's buffers: move argv, envp, paths
 * and stdin bytes into one allocation, and take its own descriptors.
 * Layout: pointer slots, then the pass_fds ints (both aligned), then
 * strings and bytes. On failure the request still owns what it holds and
 * bgrun__req_release() frees it.
 */
static int make_deep(struct bgrun__req *req)
{
	size_t nptr = bgrun__vec_len((const char *const *)req->argv) + 1 +
		      bgrun__vec_len((const char *const *)req->envp) + 1;
	size_t size = vec_bytes(req->argv) + vec_bytes(req->envp) +
		      req->n_pass_fds * sizeof(bgrun_os_fd_t) + str_bytes(req->cwd) +
		      str_bytes(req->out.path) + str_bytes(req->err.path) +
		      req->in.len;
	char *arena, **slots, *pos;
	bgrun_os_fd_t *pass;

	arena = malloc(size);
	if (arena == NULL)
		return -ENOMEM;
	slots = (char **)arena;
	pass = (bgrun_os_fd_t *)(arena + nptr * sizeof(char *));
	pos = (char *)(pass + req->n_pass_fds);
	{
		char **argv = copy_vec(req->argv, &slots, &pos);
		char **envp = copy_vec(req->envp, &slots, &pos);

		free(req->argv);
		free(req->envp);
		req->argv = argv;
		req->envp = envp;
	}
	req->file = req->argv[0];
	req->cwd = copy_str(req->cwd, &pos);
	req->out.path = copy_str(req->out.path, &pos);
	req->err.path = copy_str(req->err.path, &pos);
	if (req->in.kind == BGRUN_STDIO_BYTES && req->in.len > 0) {
		memcpy(pos, req->in.bytes, req->in.len);
		req->in.bytes = pos;
	}
	req->arena = arena;
	return take_fds(req, pass);
}

int bgrun__req_build(const struct bgrun_spawn_opts *opts, bool deep,
		     struct bgrun__req *ret_req)
{
	struct bgrun__req req = { 0 };
	int r;

	r = validate(opts);
	if (r < 0)
		return r;
	r = build_argv(opts, &req.argv);
	if (r < 0)
		return r;
	r = build_envp(opts, &req.envp);
	if (r < 0)
		goto fail;
	req.file = req.argv[0];
	req.cwd = opts->cwd;
	req.in = opts->in;
	req.out = opts->out;
	req.err = opts->err;
	if (req.in.kind != BGRUN_STDIO_BYTES)
		req.in.len = 0;
	req.pass_fds = opts->pass_fds;
	req.n_pass_fds = opts->pass_fds != NULL ? opts->n_pass_fds : 0;
	req.shell = opts->shell != NULL;
	req.detach = opts->detach;
	req.new_pgroup = opts->new_pgroup;
	if (deep) {
		r = make_deep(&req);
		if (r < 0) {
			bgrun__req_release(&req);
			return r;
		}
	}
	*ret_req = req;
	return 0;
fail:
	free(req.argv);
	free(req.envp);
	return r;
}

void bgrun__req_release(struct bgrun__req *req)
{
	if (req == NULL)
		return;
	if (req->owns_fds)
		close_owned_fds(req);
	if (req->arena != NULL) {
		free(req->arena);
	} else {
		free(req->argv);
		free(req->envp);
	}
	memset(req, 0, sizeof(*req));
}
