/* SPDX-License-Identifier: MIT */
/* onexit.c: exit notifications: the --on-exit commands and the configuration's [on-exit] ones, started by the recorder once a job's end is recorded. */

/*
 * The recorder (supervise.c) calls on_exit_run after it has written the
 * job's final row: the row is never delayed by a notification, and a
 * command that reads the log (`bgrun show $BGRUN_ID`) finds the end there.
 * Each command is a job of its own, launched like `bgrun -s -- CMD`
 * through the primitive under a supervisor of its own (launch.c), recorded
 * with source `on-exit` and options.on_exit_of naming the job it reports;
 * the recorder does not wait for it. A notification's own end runs no
 * notification (its source says what it is), so none can loop.
 *
 * Which commands: those of --on-exit, in order, then, unless
 * --no-on-exit, the items of the user's configuration file's [on-exit]
 * section (NAME = CMD, in the file's order) for the user's own launches
 * (source bgrun: not clone hooks).
 */

#include "cli.h"
#include "bgrun/config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The environment a notification gets on top of the recorder's. */
struct notify_env {
	char *v[9]; /* NAME=VALUE..., NULL */
	size_t n;
	bool failed;
};

static void put(struct notify_env *e, const char *name, const char *value)
{
	char *s;

	if (asprintf(&s, "%s=%s", name, value != NULL ? value : "") < 0) {
		e->failed = true;
		return;
	}
	e->v[e->n++] = s;
}

static void put_int(struct notify_env *e, const char *name, int64_t value)
{
	char buf[32] = "";

	if (value != BGRUN_NULL)
		(void)snprintf(buf, sizeof(buf), "%lld", (long long)value);
	put(e, name, buf);
}

/*
 * BGRUN_ID, BGRUN_RESULT, BGRUN_EXIT_CODE and BGRUN_SIGNAL (decimal, ""
 * when the other one is the end), BGRUN_DURATION_MS, BGRUN_COMMAND (the
 * command as logsink shows it), BGRUN_TAG, BGRUN_OUTPUT (the job's
 * stdout file, "" if none).
 */
static int make_env(struct notify_env *e, const struct bgrun_event *ev)
{
	char *display = NULL;

	if (ev->argv != NULL && bgrun_argv_display(ev->argv, &display) < 0)
		return -ENOMEM;
	put(e, "BGRUN_ID", ev->id);
	put(e, "BGRUN_RESULT", ev->result);
	put_int(e, "BGRUN_EXIT_CODE", ev->exit_code);
	put_int(e, "BGRUN_SIGNAL", ev->signal);
	put_int(e, "BGRUN_DURATION_MS", ev->duration_ns == BGRUN_NULL
						? BGRUN_NULL
						: ev->duration_ns / 1000000);
	put(e, "BGRUN_COMMAND", display);
	put(e, "BGRUN_TAG", ev->tag);
	put(e, "BGRUN_OUTPUT", ev->stdout_path);
	free(display);
	e->v[e->n] = NULL;
	return e->failed ? -ENOMEM : 0;
}

/* Starts one notification, CMD, a /bin/sh script; not waited for. */
static void start_one(const char *cmd, const struct cli *c,
		      const struct bgrun_event *ev, const struct notify_env *e)
{
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct sup_launch l = { .cmd = &o, .source = "on-exit",
				.link_key = "on_exit_of", .link_id = ev->id };
	struct bgrun_child *child = NULL;
	char id[BGRUN_EVENT_ID_MAX + 1];
	const char *args[8];
	size_t n = 0;
	int fd = -1, error = 0;

	o.shell = cmd;
	o.env_set = (const char *const *)e->v;
	o.detach = true;
	o.failure = &failure;
	/* Its record goes where the job's went. */
	if (c->db != NULL) {
		args[n++] = "--db";
		args[n++] = c->db;
	}
	args[n++] = "-s";
	args[n++] = "--";
	args[n++] = cmd;
	args[n] = NULL;
	l.args = args;
	bgrun_event_new_id(id);
	/* A failure to start it is recorded (spawn_failed), as for any job. */
	if (launch_supervisor(id, &l, &child, &fd, &error, &failure) ==
	    SUP_STARTED)
		(void)close(fd);
	bgrun_child_disown(child);
}

void on_exit_run(const struct cli *c, const struct bgrun_event *ev)
{
	struct notify_env e = { .n = 0 };
	struct bgrun_config *config = NULL;
	const char *name, *value;
	size_t iter = 0;
	bool own = ev->source != NULL && strcmp(ev->source, "bgrun") == 0;

	if (ev->source != NULL && strcmp(ev->source, "on-exit") == 0)
		return;
	/* The configuration's, read now: this is the only reader of them. */
	if (own && !c->no_on_exit && bgrun_config_new(&config) == 0 &&
	    bgrun_config_read_user(config) < 0) {
		/* bgrun said it at launch; our stderr is /dev/null. */
		bgrun_config_free(config);
		config = NULL;
	}
	if (c->n_on_exit == 0 &&
	    (config == NULL ||
	     !bgrun_config_next(config, "on-exit", &iter, &name, &value)))
		goto out;
	iter = 0;
	if (make_env(&e, ev) < 0)
		goto out;
	for (size_t i = 0; i < c->n_on_exit; i++)
		start_one(c->on_exit[i], c, ev, &e);
	while (config != NULL &&
	       bgrun_config_next(config, "on-exit", &iter, &name, &value))
		if (value[0] != '\0')
			start_one(value, c, ev, &e);
out:
	for (size_t i = 0; i < e.n; i++)
		free(e.v[i]);
	bgrun_config_free(config);
}
