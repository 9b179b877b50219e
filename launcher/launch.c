/* SPDX-License-Identifier: MIT */
/* launch.c: starting a bgrun supervisor (bgrun-start, then bgrun-full as its recorder), sending it its plan and reading its report. */

/*
 * Shared by `bgrun COMMAND` and by the hooks of `bgrun clone`: both start
 * the supervisor through the primitive (so no code runs between fork and
 * exec here either), give it one end of a socket pair as descriptor 3,
 * send the plan on it, and learn from one line back whether the command
 * was executed (starter.h). The supervisor's first program is bgrun-start
 * (start.c says why), which launches COMMAND and starts the recorder,
 * bgrun-full (supervise.c).
 */

#include "cli.h"
#include "starter.h"
#include "bgrun/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
	if (sscanf(line, STARTER_REPORT_OK " %ld", &a) == 1 && a > 0)
		return (pid_t)a;
	if (sscanf(line, STARTER_REPORT_ERROR " %ld %ld", &a, &b) == 2 &&
	    a > 0) {
		failure->stage = (enum bgrun_stage)b;
		failure->error = (int)-a;
		return (pid_t)-a;
	}
	return 0;
}

/* The plan for bgrun-start (starter.h), built in memory. */
struct plan {
	char *buf;
	size_t len, size;
	bool failed; /* out of memory: the plan is void */
};

static void plan_put(struct plan *p, const void *s, size_t n)
{
	if (p->failed)
		return;
	if (p->size - p->len < n) {
		size_t size = p->size == 0 ? 4096 : p->size;
		char *buf;

		while (size - p->len < n)
			size *= 2;
		buf = realloc(p->buf, size);
		if (buf == NULL) {
			p->failed = true;
			return;
		}
		p->buf = buf;
		p->size = size;
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
}

/* One string of the plan, with its NUL. */
static void plan_str(struct plan *p, const char *s)
{
	plan_put(p, s, strlen(s) + 1);
}

BGRUN__PRINTF(2, 3)
static void plan_strf(struct plan *p, const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	plan_str(p, buf);
}

/* A vector: its count, then its strings (first, then v). */
static void plan_vec(struct plan *p, const char *const *first,
		     const char *const *v)
{
	size_t n = vec_len(first) + vec_len(v);

	plan_strf(p, "%zu", n);
	for (size_t i = 0; first != NULL && first[i] != NULL; i++)
		plan_str(p, first[i]);
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		plan_str(p, v[i]);
}

/*
 * Every signal, those the C library reserves for itself included: COMMAND
 * starts with each at its default and none blocked, as libbgrun starts
 * any child (bgrun/spawn.h), whatever bgrun-start's own state.
 */
static void plan_all_signals(struct plan *p)
{
	char buf[8];

	for (int sig = 1; sig <= SIGRTMAX; sig++) {
		int n = snprintf(buf, sizeof(buf), sig > 1 ? ",%d" : "%d",
				 sig);

		plan_put(p, buf, (size_t)n);
	}
	plan_put(p, "", 1);
}

/*
 * The kept output as bgrun-start sees it: its descriptor 1 and, when it
 * is a file of its own, 2 (a merged stderr is stdout's open file).
 */
static void plan_outputs(struct plan *p, const struct sup_launch *l)
{
	bool out = l->out_capture != NULL;
	bool err = l->err_capture != NULL &&
		   l->cmd->err.kind != BGRUN_STDIO_STDOUT;
	char *s;

	plan_strf(p, "%d", (int)out + (int)err);
	for (int fd = 1; fd <= 2; fd++) {
		const char *path = fd == 1 ? l->out_capture : l->err_capture;

		if (!(fd == 1 ? out : err))
			continue;
		if (asprintf(&s, "%d:%s", fd, path) < 0) {
			p->failed = true;
			return;
		}
		plan_str(p, s);
		free(s);
	}
}

/*
 * bgrun-start's plan: COMMAND as the primitive would launch it (the
 * library computes its argv and environment from the options), and the
 * recorder, REC = self --_supervise=ID --_origin=DIR [--_source=S] ARGS...
 */
static int build_plan(struct plan *p, const char *path,
		      const char *const *argv, const char *const *envp,
		      const char *const *rec, const struct sup_launch *l)
{
	const struct bgrun_spawn_opts *o = l->cmd;
	char flags[4] = "-";

	if (o->detach)
		flags[0] = STARTER_SETSID;
	else if (o->new_pgroup)
		flags[0] = STARTER_SETPGROUP;
	if (l->exits_after_report)
		flags[flags[0] == '-' ? 0 : 1] = STARTER_AWAIT_EXIT;
	plan_str(p, STARTER_PLAN_MAGIC);
	plan_str(p, flags);
	plan_str(p, "");      /* SIGMASK: none blocked */
	plan_all_signals(p);  /* SIGDEFAULT */
	plan_strf(p, "%lld", (long long)l->timeout_ns);
	plan_strf(p, "%lld", (long long)l->kill_after_ns);
	plan_strf(p, "%lld", (long long)l->max_output);
	plan_outputs(p, l);
	plan_str(p, path);
	plan_vec(p, NULL, argv);
	plan_vec(p, NULL, envp);
	plan_vec(p, rec, l->args);
	return p->failed ? -ENOMEM : 0;
}

/*
 * Sends the plan from *sent on, then its end: bgrun-start reads to it.
 * With wait false, only what the socket takes at once: that is called
 * before bgrun-start runs, so that it finds the plan (all of it, unless
 * it is large) waiting for it instead of waiting for us.
 */
static void send_plan(int fd, const struct plan *p, size_t *sent, bool wait)
{
	while (*sent < p->len) {
		/* bgrun-start gone: no SIGPIPE; its report never comes. */
		ssize_t n = send(fd, p->buf + *sent, p->len - *sent,
				 MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!wait && n < 0 && errno == EAGAIN)
				return;
			*sent = p->len; /* bgrun-start is gone: give up */
			break;
		}
		*sent += (size_t)n;
	}
	(void)shutdown(fd, SHUT_WR);
}

/* The recorder's own options, before bgrun's (supervise.c). */
struct rec_opts {
	const char *v[12];
	char supervise[64]; /* --_supervise=ID */
	char *origin;       /* --_origin=DIR */
	char *source;       /* --_source=S */
	char *link;         /* --_link=KEY:ID */
	char *out, *err;    /* --_stdout=PATH, --_stderr=PATH: kept output */
	char max[48];       /* --_max-output=BYTES */
	char *env;          /* --_env=PATH: the kept environment */
};

/*
 * COMMAND could not be started: a recorder records it (spawn_failed),
 * the same code as for a failure bgrun-start meets. With ensurestart the
 * row is there when we return: a recorder killed before it could write
 * it is replaced, as bgrun-start replaces its own (start.c: struct
 * recorder), up to the same number of times.
 */
#define RECORDER_STARTS 4

static void record_failure(const struct rec_opts *ro,
			   const struct sup_launch *l, int error,
			   const struct bgrun_failure *failure, int64_t rt,
			   int64_t mono)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	size_t n_rec = vec_len(ro->v), n_args = vec_len(l->args);
	const char **v = calloc(n_rec + n_args + 2, sizeof(*v));
	char failed[128];
	int sv[2];

	if (v == NULL)
		return;
	(void)snprintf(failed, sizeof(failed), "--_failed=%d:%d:%lld:%lld",
		       -error, (int)failure->stage, (long long)rt,
		       (long long)mono);
	/* As bgrun-start does it: --_failed after the recorder's path. */
	v[0] = ro->v[0];
	v[1] = failed;
	memcpy(&v[2], &ro->v[1], (n_rec - 1) * sizeof(*v));
	memcpy(&v[n_rec + 1], l->args, n_args * sizeof(*v));
	opts.argv = v;
	/*
	 * Its descriptor 3, a socket we made, is the recorder's proof that
	 * it was started by us (supervise.c: from_chain). It closes it once
	 * it has looked: without ensurestart we wait for that (EOF), so that
	 * it still finds us its parent.
	 */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(v);
		return;
	}
	opts.pass_fds = &sv[1];
	opts.n_pass_fds = 1;
	for (int i = 0; i < RECORDER_STARTS; i++) {
		bool killed;
		char c;

		if (bgrun_spawn(&opts, l->ensurestart ? &child : NULL) <= 0)
			break;
		if (child == NULL) {
			(void)close(sv[1]);
			sv[1] = -1;
			while (read(sv[0], &c, 1) < 0 && errno == EINTR)
				;
			break;
		}
		killed = bgrun_child_wait(child, -1, &st) >= 0 && st.signaled;
		bgrun_child_free(child);
		child = NULL;
		if (!killed)
			break;
	}
	if (sv[1] >= 0)
		(void)close(sv[1]);
	(void)close(sv[0]);
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
	struct rec_opts ro = { .origin = NULL };
	struct plan plan = { .buf = NULL };
	char buf[PATH_MAX], full[PATH_MAX], here[PATH_MAX];
	char *path = NULL, **cmd_argv = NULL, **cmd_envp = NULL;
	const char *starter, *argv[2];
	int sv[2] = { -1, -1 }, r;
	size_t k = 0, sent = 0;
	int64_t rt, mono;

	if (getcwd(here, sizeof(here)) == NULL) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		return SUP_NOT_STARTED;
	}
	/* The recorder is bgrun-record: the store is its business, not ours. */
	ro.v[k++] = bgrun_helper_path(NULL, "bgrun-record", BGRUN_RECORD_PATH,
				      full, sizeof(full));
	starter = bgrun_helper_path(NULL, "bgrun-start", BGRUN_START_PATH,
				     buf, sizeof(buf));
	(void)snprintf(ro.supervise, sizeof(ro.supervise), "--_supervise=%s",
		       id);
	ro.v[k++] = ro.supervise;
	if (asprintf(&ro.origin, "--_origin=%s", here) < 0 ||
	    (l->source != NULL &&
	     asprintf(&ro.source, "--_source=%s", l->source) < 0)) {
		cli_msg("cannot start the supervisor: %s", strerror(ENOMEM));
		goto out;
	}
	ro.v[k++] = ro.origin;
	if (ro.source != NULL)
		ro.v[k++] = ro.source;
	if (l->link_key != NULL) {
		if (asprintf(&ro.link, "--_link=%s:%s", l->link_key,
			     l->link_id) < 0) {
			ro.link = NULL;
			cli_msg("cannot start the supervisor: %s", strerror(ENOMEM));
			goto out;
		}
		ro.v[k++] = ro.link;
	}
	if ((l->out_capture != NULL &&
	     asprintf(&ro.out, "--_stdout=%s", l->out_capture) < 0) ||
	    (l->err_capture != NULL &&
	     asprintf(&ro.err, "--_stderr=%s", l->err_capture) < 0)) {
		cli_msg("cannot start the supervisor: %s", strerror(ENOMEM));
		goto out;
	}
	if (ro.out != NULL)
		ro.v[k++] = ro.out;
	if (ro.err != NULL)
		ro.v[k++] = ro.err;
	if (ro.out != NULL || ro.err != NULL) {
		(void)snprintf(ro.max, sizeof(ro.max), "--_max-output=%lld",
			       (long long)l->max_output);
		ro.v[k++] = ro.max;
	}

	rt = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	mono = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	opts.failure = failure;
	/* The program, its argv and environment: one reading of the options. */
	r = bgrun_spawn_command(&opts, &path, &cmd_argv, &cmd_envp);
	if (r < 0)
		goto cmd_failed;

	/*
	 * The kept environment: named here, written by bgrun-start once
	 * it has reported (start.c, keep_env), off our clock.
	 */
	if (l->env_file != NULL) {
		if (asprintf(&ro.env, "--_env=%s", l->env_file) < 0) {
			ro.env = NULL;
			cli_msg("cannot start the supervisor: %s", strerror(ENOMEM));
			goto out;
		}
		ro.v[k++] = ro.env;
	}
	r = build_plan(&plan, path, (const char *const *)cmd_argv,
		       (const char *const *)cmd_envp, ro.v, l);
	if (r < 0) {
		cli_msg("cannot start the supervisor: %s", bgrun_strerror(r));
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		cli_msg("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	send_plan(sv[0], &plan, &sent, false);
	/*
	 * COMMAND's directory and streams; our environment, not its (the
	 * recorder's is ours; COMMAND's is in the plan). Detached, a process
	 * group of its own, not a session: COMMAND gets the new session (the
	 * plan says so), and the supervisor, out of our group, is out of
	 * reach of the terminal's signals as well. A setsid() in the child is
	 * on our clock: it moves the child to a new scheduler autogroup,
	 * which on a loaded machine often waits a whole round of the other
	 * groups for a CPU; one is enough.
	 */
	if (opts.detach) {
		opts.detach = false;
		opts.new_pgroup = true;
	}
	argv[0] = starter;
	argv[1] = NULL;
	opts.argv = argv;
	opts.shell = NULL;
	opts.env = NULL;
	opts.env_set = NULL;
	opts.env_unset = NULL;
	opts.ensurestart = true;
	opts.pass_fds = &sv[1];
	opts.n_pass_fds = 1;
	opts.failure = &sf;
	r = bgrun_spawn(&opts, ret_child);
	(void)close(sv[1]);
	if (r < 0 && sf.stage == BGRUN_STAGE_EXEC) {
		cli_msg("cannot start the supervisor %s: %s", starter,
			bgrun_strerror(r));
		goto out;
	}
	if (r < 0) {
		*failure = sf;
		goto cmd_failed;
	}
	if (sent < plan.len)
		send_plan(sv[0], &plan, &sent, true);
	*ret_report_fd = sv[0];
	sv[0] = -1;
	status = SUP_STARTED;
	goto out;

cmd_failed:
	*ret_error = r;
	record_failure(&ro, l, r, failure, rt, mono);
	status = SUP_CMD_FAILED;
out:
	/* A kept environment no row names would be nobody's to prune. */
	if (l->env_file != NULL && (ro.env == NULL || status == SUP_NOT_STARTED))
		(void)unlink(l->env_file);
	if (sv[0] >= 0)
		(void)close(sv[0]);
	free(plan.buf);
	free(path);
	free(cmd_argv);
	free(cmd_envp);
	free(ro.origin);
	free(ro.source);
	free(ro.link);
	free(ro.out);
	free(ro.err);
	free(ro.env);
	return status;
}
