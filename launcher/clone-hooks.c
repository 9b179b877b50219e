/* SPDX-License-Identifier: MIT */
/* clone-hooks.c: the hooks of `bgrun clone`: read from hgrc-like files, launched through a supervisor. */

/*
 * The config syntax is Mercurial's (mercurial/config.py): [section],
 * "name = value", indented continuation lines, ';' and '#' comments,
 * %include FILE and %unset NAME. Only [hooks] is kept. As in Mercurial, a
 * hook named TYPE or TYPE.SUFFIX runs for TYPE, an empty command disables
 * it, hooks run by descending priority.NAME and then in the order they
 * were defined (a redefinition moves a hook to the end).
 */

#include "clone-cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INCLUDE_DEPTH 10

void hooks_free(struct hooks *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		free(h->v[i].cmd);
	}
	free(h->v);
	*h = (struct hooks){ 0 };
}

static void hooks_del(struct hooks *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++) {
		if (strcmp(h->v[i].name, name) == 0) {
			free(h->v[i].name);
			free(h->v[i].cmd);
			memmove(&h->v[i], &h->v[i + 1],
				(h->n - i - 1) * sizeof(h->v[0]));
			h->n--;
			return;
		}
	}
}

int hooks_set(struct hooks *h, const char *name, const char *cmd)
{
	struct hook *v;
	char *n = strdup(name), *c = strdup(cmd);

	if (n == NULL || c == NULL)
		goto oom;
	hooks_del(h, name);
	if (h->n == h->cap) {
		v = realloc(h->v, (h->cap ? 2 * h->cap : 8) * sizeof(*v));
		if (v == NULL)
			goto oom;
		h->v = v;
		h->cap = h->cap ? 2 * h->cap : 8;
	}
	h->v[h->n++] = (struct hook){ .name = n, .cmd = c };
	return 0;
oom:
	free(n);
	free(c);
	return -ENOMEM;
}

/* Appends a continuation line to the value of the hook named name. */
static int hooks_append(struct hooks *h, const char *name, const char *more)
{
	for (size_t i = 0; i < h->n; i++) {
		if (strcmp(h->v[i].name, name) == 0) {
			char *c;

			if (asprintf(&c, "%s\n%s", h->v[i].cmd, more) < 0)
				return -ENOMEM;
			free(h->v[i].cmd);
			h->v[i].cmd = c;
		}
	}
	return 0;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\v' || *s == '\f' || *s == '\r')
		s++;
	n = strlen(s);
	while (n > 0 && strchr(" \t\v\f\r\n", s[n - 1]) != NULL)
		s[--n] = '\0';
	return s;
}

static int parse_file(struct hooks *h, const char *path, int depth,
		      char **errmsg);

/* %include: relative to the including file, ~/ to $HOME; missing is fine. */
static int include(struct hooks *h, const char *from, const char *arg,
		   int depth, char **errmsg)
{
	const char *home = getenv("HOME"), *slash = strrchr(from, '/');
	char *path = NULL;
	int r;

	if (arg[0] == '~' && arg[1] == '/' && home != NULL)
		r = asprintf(&path, "%s%s", home, arg + 1);
	else if (arg[0] == '/' || slash == NULL)
		r = asprintf(&path, "%s", arg);
	else
		r = asprintf(&path, "%.*s/%s", (int)(slash - from), from, arg);
	if (r < 0)
		return -ENOMEM;
	r = parse_file(h, path, depth + 1, errmsg);
	free(path);
	return r == -ENOENT ? 0 : r;
}

__attribute__((format(printf, 2, 3)))
static int config_error(char **errmsg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(errmsg, fmt, ap) < 0)
		*errmsg = NULL;
	va_end(ap);
	return -EINVAL;
}

static int parse_file(struct hooks *h, const char *path, int depth,
		      char **errmsg)
{
	FILE *f;
	char *line = NULL, *item = NULL, *section = strdup("");
	size_t cap = 0;
	unsigned int lineno = 0;
	bool cont = false;
	int r = 0;

	if (depth > INCLUDE_DEPTH)
		return config_error(errmsg, "%s: includes nested too deeply",
				    path);
	f = fopen(path, "re");
	if (f == NULL) {
		r = -errno;
		if (r != -ENOENT || depth == 0)
			(void)config_error(errmsg, "%s: %s", path,
					   strerror(errno));
		free(section);
		return r == -ENOENT ? r : -EINVAL;
	}
	while (r == 0 && section != NULL && getline(&line, &cap, f) >= 0) {
		char *l = line, *v, *eq;

		if (++lineno == 1 && strncmp(l, "\xef\xbb\xbf", 3) == 0)
			l += 3;
		if (cont) {
			if (l[0] == ';' || l[0] == '#')
				continue;
			if ((l[0] == ' ' || l[0] == '\t') && *trim(l) != '\0') {
				if (strcmp(section, "hooks") == 0)
					r = hooks_append(h, item, trim(l));
				continue;
			}
			cont = false;
		}
		if (strncmp(l, "%include", 8) == 0 && (l[8] == ' ' || l[8] == '\t')) {
			r = include(h, path, trim(l + 8), depth, errmsg);
			continue;
		}
		if (l[0] == ';' || l[0] == '#' || *trim(l) == '\0')
			continue;
		if (l[0] == '[' && (v = strchr(l + 1, ']')) != NULL &&
		    v > l + 1 && memchr(l + 1, '[', (size_t)(v - l - 1)) == NULL) {
			free(section);
			section = strndup(l + 1, (size_t)(v - l - 1));
			continue;
		}
		eq = strchr(l, '=');
		if (eq != NULL && eq > l && !strchr(" \t", l[0])) {
			*eq = '\0';
			free(item);
			item = strdup(trim(l));
			cont = true;
			if (item == NULL)
				r = -ENOMEM;
			else if (strcmp(section, "hooks") == 0)
				r = hooks_set(h, item, trim(eq + 1));
			continue;
		}
		if (strncmp(l, "%unset", 6) == 0 && (l[6] == ' ' || l[6] == '\t')) {
			if (strcmp(section, "hooks") == 0)
				hooks_del(h, trim(l + 6));
			continue;
		}
		r = config_error(errmsg, "%s:%u: parse error: %s%s", path, lineno,
				 l[0] == ' ' ? "unexpected leading whitespace: " : "",
				 trim(l));
	}
	if (r == 0 && section == NULL)
		r = -ENOMEM;
	if (r == -ENOMEM && *errmsg == NULL)
		(void)config_error(errmsg, "%s: %s", path, strerror(ENOMEM));
	(void)fclose(f);
	free(line);
	free(item);
	free(section);
	return r;
}

int hooks_load(struct hooks *h, const char *path, char **errmsg)
{
	*errmsg = NULL;
	return parse_file(h, path, 0, errmsg);
}

/* The priority of hook name: [hooks] priority.NAME, default 0. */
static long priority(const struct hooks *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strncmp(h->v[i].name, "priority.", 9) == 0 &&
		    strcmp(h->v[i].name + 9, name) == 0)
			return strtol(h->v[i].cmd, NULL, 10);
	return 0;
}

/* Whether hook name is of type: "TYPE" or "TYPE.SUFFIX". */
static bool of_type(const char *name, const char *type)
{
	size_t n = strlen(type);

	return strncmp(name, type, n) == 0 &&
	       (name[n] == '\0' || name[n] == '.') &&
	       strchr(name, ':') == NULL;
}

/*
 * Starts one hook; 0, or -1 after saying why it did not start. With
 * run->wait, *ret_child is a handle on it (the hook itself, or its
 * supervisor, which exits with the hook's status).
 */
static int start_hook(const struct hook *hk, const struct hook_run *run,
		      const char *const *env, struct bgrun_child **ret_child)
{
	struct bgrun_child *child = NULL;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct sup_launch l = { .cmd = &o, .ensurestart = true };
	char id[BGRUN_EVENT_ID_MAX + 1];
	const char *args[16];
	size_t n = 0;
	int fd = -1, error = 0;
	pid_t pid;

	if (strncmp(hk->cmd, "python:", 7) == 0) {
		cli_msg("clone: hook %s cannot start: python hooks are not supported",
			cli_printable(hk->name));
		return -1;
	}
	o.shell = hk->cmd;
	o.cwd = run->cwd;
	o.env_set = env;
	o.failure = &failure;
	if (!run->log) {
		pid = bgrun_spawn(&o, run->wait ? &child : NULL);
		id[0] = '\0';
	} else {
		bgrun_event_new_id(id);
		l.source = "clone-hook";
		args[n++] = "--tag";
		args[n++] = hk->name;
		if (run->cwd != NULL) {
			args[n++] = "-C";
			args[n++] = run->cwd;
		}
		if (run->db != NULL) {
			args[n++] = "--db";
			args[n++] = run->db;
		}
		args[n++] = "-s";
		args[n++] = "--";
		args[n++] = hk->cmd;
		args[n] = NULL;
		l.args = args;
		switch (launch_supervisor(id, &l, run->wait ? &child : NULL, &fd,
					  &error, &failure)) {
		case SUP_STARTED:
			pid = launch_read_report(fd, &failure);
			(void)close(fd);
			break;
		case SUP_CMD_FAILED:
			pid = error;
			break;
		default:
			return -1;
		}
		if (pid == 0) {
			cli_msg("clone: the supervisor of hook %s exited without a report",
				cli_printable(hk->name));
			bgrun_child_free(child);
			return -1;
		}
	}
	if (pid < 0) {
		cli_msg("clone: hook %s cannot start (%s): %s",
			cli_printable(hk->name), bgrun_stage_name(failure.stage),
			bgrun_strerror(pid));
		bgrun_child_free(child);
		return -1;
	}
	if (run->verbose)
		cli_msg("clone: hook %s started, pid %ld%s%s",
			cli_printable(hk->name), (long)pid,
			id[0] ? ", event " : "", id);
	*ret_child = child;
	return 0;
}

/* --wait: 0 when the hook succeeded, else -1 after saying how it ended. */
static int wait_hook(const struct hook *hk, const struct hook_run *run,
		     struct bgrun_child *child)
{
	struct bgrun_status st;
	int r = bgrun_child_wait(child, -1, &st), code;

	bgrun_child_free(child);
	if (r < 0) {
		cli_msg("clone: cannot wait for hook %s: %s",
			cli_printable(hk->name), bgrun_strerror(r));
		return -1;
	}
	code = cli_status_code(&st);
	if (code != 0) {
		cli_msg("clone: hook %s failed: exit status %d",
			cli_printable(hk->name), code);
		return -1;
	}
	if (run->verbose)
		cli_msg("clone: hook %s finished", cli_printable(hk->name));
	return 0;
}

int hooks_run(const struct hooks *h, const struct hook_run *run)
{
	const char **env = NULL;
	const struct hook **order = NULL;
	struct bgrun_child **children = NULL;
	char *type_var = NULL, *name_var = NULL;
	size_t n_env = 0, n = 0;
	int failed = 0;

	while (run->env != NULL && run->env[n_env] != NULL)
		n_env++;
	env = calloc(n_env + 3, sizeof(*env));
	order = calloc(h->n + 1, sizeof(*order));
	children = calloc(h->n + 1, sizeof(*children));
	if (env == NULL || order == NULL || children == NULL ||
	    asprintf(&type_var, "HG_HOOKTYPE=%s", run->type) < 0) {
		cli_msg("clone: cannot run the %s hooks: %s", run->type,
			strerror(ENOMEM));
		free(env);
		free(order);
		free(children);
		return -1;
	}
	memcpy(env, run->env, n_env * sizeof(*env));
	env[n_env] = type_var;
	/* The hooks of this type, by descending priority, stable. */
	for (size_t i = 0; i < h->n; i++)
		if (of_type(h->v[i].name, run->type) && h->v[i].cmd[0] != '\0')
			order[n++] = &h->v[i];
	for (size_t i = 1; i < n; i++) {
		for (size_t k = i; k > 0; k--) {
			const struct hook *t = order[k - 1];

			if (priority(h, order[k]->name) <= priority(h, t->name))
				break;
			order[k - 1] = order[k];
			order[k] = t;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct hook *hk = order[i];

		free(name_var);
		if (asprintf(&name_var, "HG_HOOKNAME=%s", hk->name) < 0) {
			name_var = NULL;
			failed++;
			continue;
		}
		env[n_env + 1] = name_var;
		if (start_hook(hk, run, env, &children[i]) < 0)
			failed++;
	}
	/* All of them started first: they run side by side, as without it. */
	for (size_t i = 0; i < n; i++)
		if (children[i] != NULL && wait_hook(order[i], run, children[i]) < 0)
			failed++;
	free(name_var);
	free(type_var);
	free(env);
	free(order);
	free(children);
	return failed;
}
