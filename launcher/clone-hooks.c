/* SPDX-License-Identifier: MIT */
/* clone-hooks.c: the hooks of `bgrun clone`: read from hgrc-like files, launched through a supervisor. */

/*
 * The hooks are the [hooks] items of Mercurial-syntax files
 * (bgrun/config.h: the user's bgrun config, then --config FILEs, then
 * --hook): as in Mercurial, a hook named TYPE or TYPE.SUFFIX runs for
 * TYPE, an empty command disables it, hooks run by descending
 * priority.NAME and then in the order they were defined (a redefinition
 * moves a hook to the end).
 */

#include "clone-cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hooks_free(struct hooks *h)
{
	bgrun_config_free(h->config);
	h->config = NULL;
}

static int hooks_init(struct hooks *h)
{
	return h->config != NULL ? 0 : bgrun_config_new(&h->config);
}

int hooks_set(struct hooks *h, const char *name, const char *cmd)
{
	int r = hooks_init(h);

	return r < 0 ? r : bgrun_config_set(h->config, "hooks", name, cmd);
}

int hooks_load(struct hooks *h, const char *path, bool missing_ok,
	       char **errmsg)
{
	int r = hooks_init(h);

	*errmsg = NULL;
	if (r >= 0)
		r = bgrun_config_read(h->config, path);
	if (r == -ENOENT && missing_ok)
		return 0;
	if (r < 0)
		*errmsg = strdup(h->config != NULL ? bgrun_config_errmsg(h->config)
						   : strerror(-r));
	return r;
}

/* The priority of hook name: [hooks] priority.NAME, default 0. */
static long priority(const struct hooks *h, const char *name)
{
	char key[256];
	const char *v;

	(void)snprintf(key, sizeof(key), "priority.%s", name);
	v = bgrun_config_get(h->config, "hooks", key, NULL);
	return v != NULL ? strtol(v, NULL, 10) : 0;
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
#if BGRUN_CLI_LOG
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
#else
		/* Windows: one supervisor, bgrun-supervise.exe (win-launch.c). */
		(void)l;
		(void)args;
		(void)n;
		(void)fd;
		(void)error;
		bgrun_event_new_id(id);
		pid = win_launch_hook(id, hk->name, run->cwd, run->db, hk->cmd,
				      env, run->wait ? &child : NULL, &failure);
		if (pid == -1)
			return -1;
		if (pid == 0) {
			cli_msg("clone: the supervisor of hook %s exited without a report",
				cli_printable(hk->name));
			return -1;
		}
#endif
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
	struct hook *all = NULL;
	const struct hook **order = NULL;
	struct bgrun_child **children = NULL;
	const char *name, *cmd;
	size_t n_all = 0, iter = 0;
	char *type_var = NULL, *name_var = NULL;
	size_t n_env = 0, n = 0;
	int failed = 0;

	while (run->env != NULL && run->env[n_env] != NULL)
		n_env++;
	env = calloc(n_env + 3, sizeof(*env));
	while (h->config != NULL &&
	       bgrun_config_next(h->config, "hooks", &iter, &name, &cmd))
		n_all++;
	all = calloc(n_all + 1, sizeof(*all));
	order = calloc(n_all + 1, sizeof(*order));
	children = calloc(n_all + 1, sizeof(*children));
	if (env == NULL || all == NULL || order == NULL || children == NULL ||
	    asprintf(&type_var, "HG_HOOKTYPE=%s", run->type) < 0) {
		cli_msg("clone: cannot run the %s hooks: %s", run->type,
			strerror(ENOMEM));
		free(env);
		free(all);
		free(order);
		free(children);
		return -1;
	}
	memcpy(env, run->env, n_env * sizeof(*env));
	env[n_env] = type_var;
	/* The hooks of this type, by descending priority, stable. */
	iter = 0;
	for (size_t i = 0; i < n_all &&
	     bgrun_config_next(h->config, "hooks", &iter, &name, &cmd); i++) {
		all[i] = (struct hook){ .name = name, .cmd = cmd };
		if (of_type(name, run->type) && cmd[0] != '\0')
			order[n++] = &all[i];
	}
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
	free(all);
	free(order);
	free(children);
	return failed;
}
