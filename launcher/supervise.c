/* SPDX-License-Identifier: MIT */
/* supervise.c: bgrun's supervisor: launch COMMAND, record it running, wait, record its finish. */

#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/*
 * The supervisor is a program of its own (bgrun exec'd with --_supervise),
 * so it may do what the library never does: block signals and take
 * SIGCHLD through a signalfd. Detached, COMMAND leads a session of its own
 * (as it would without a supervisor), so SIGTERM, SIGINT and SIGHUP sent
 * to the supervisor (or a timeout) reach COMMAND and whatever it started
 * through killpg(), without signalling the supervisor. The group cannot be
 * recycled under us: COMMAND is reaped only after the last killpg(). With
 * --wait, COMMAND stays in the caller's process group (terminal signals
 * reach it directly) and only COMMAND itself is signalled.
 */

#define REPORT_FD 3

struct sup {
	const struct cli *c;
	struct bgrun_event ev;
	struct bgrun_sink *sink;
	char *argv_buf[4];   /* /bin/sh -c SCRIPT for --shell, before args */
	char **argv;
	char *cwd, *out, *err;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* An absolute version of path, relative to dir (NULL: our cwd). */
static char *absolute(const char *path, const char *dir)
{
	char here[PATH_MAX], *out;

	if (path == NULL)
		return NULL;
	if (path[0] == '/')
		return strdup(path);
	if (dir == NULL) {
		if (getcwd(here, sizeof(here)) == NULL)
			return strdup(path);
		dir = here;
	}
	return asprintf(&out, "%s/%s", dir, path) < 0 ? NULL : out;
}

/*
 * Records the event through the sink client: the daemon if its socket
 * answers, else the embedded store, else the spool ($BGRUN_SINK chooses).
 * A failure to record never changes the command (our stderr is
 * /dev/null: the event, if valid, is in the spool for later).
 */
static void record(struct sup *s)
{
	if (s->sink == NULL) {
		struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;

		o.db = s->c->db;
		if (bgrun_sink_open(&o, &s->sink) < 0)
			return;
	}
	(void)bgrun_sink_put(s->sink, &s->ev);
}

static void describe(struct sup *s)
{
	const struct cli *c = s->c;
	size_t n = 0;

	s->argv = c->cmd;
	if (c->shell) {
		/* What runs: /bin/sh -c SCRIPT [ARG0 ARGS...]. */
		while (c->cmd[n] != NULL)
			n++;
		s->argv = calloc(n + 3, sizeof(*s->argv));
		if (s->argv != NULL) {
			s->argv[0] = (char *)"/bin/sh";
			s->argv[1] = (char *)"-c";
			memcpy(&s->argv[2], c->cmd, n * sizeof(*s->argv));
		} else {
			s->argv = c->cmd;
		}
	}
	s->cwd = realpath(c->cwd != NULL ? c->cwd : ".", NULL);
	s->out = absolute(c->out_path, NULL);
	s->err = absolute(c->err_path, NULL);
	s->ev.argv = (const char *const *)s->argv;
	s->ev.cwd = s->cwd;
	s->ev.tag = c->tag;
	s->ev.stdout_path = s->out;
	s->ev.stderr_path = s->err != NULL ? s->err : NULL;
	s->ev.supervisor_pid = getpid();
	s->ev.supervisor_start = bgrun_proc_starttime(getpid());
}

static void *record_running(void *arg)
{
	record(arg);
	return NULL;
}

static void arm(int tfd, int64_t ns)
{
	struct itimerspec its = { .it_value = { ns / 1000000000,
						ns % 1000000000 } };

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

/*
 * Waits for COMMAND, forwarding signals and enforcing the timeout.
 * Returns 0 with *st filled, or -errno.
 */
static int supervise(struct sup *s, struct bgrun_child *child, pid_t pid,
		     int sfd, bool *timed_out, struct bgrun_status *st)
{
	const struct cli *c = s->c;
	pid_t target = c->wait ? pid : -pid; /* for kill(): its group */
	int tfd = -1, stage = 0, r;

	if (c->timeout_ns > 0) {
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (tfd >= 0)
			arm(tfd, c->timeout_ns);
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN },
				       { .fd = tfd, .events = POLLIN } };
		struct signalfd_siginfo si;
		uint64_t ticks;

		r = bgrun_child_wait(child, 0, st);
		if (r != -ETIMEDOUT)
			break;
		if (poll(p, tfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if ((p[0].revents & POLLIN) &&
		    read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGCHLD)
			(void)kill(target, (int)si.ssi_signo);
		if (tfd >= 0 && (p[1].revents & POLLIN) &&
		    read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
			*timed_out = true;
			(void)kill(target, stage++ == 0 ? SIGTERM : SIGKILL);
			if (stage == 1 && c->kill_after_ns > 0)
				arm(tfd, c->kill_after_ns);
		}
	}
	if (tfd >= 0)
		(void)close(tfd);
	return r;
}

int supervise_main(const struct cli *c)
{
	struct sup s = { .c = c };
	struct bgrun_spawn_opts opts;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	struct bgrun_status st;
	bool timed_out = false, writer;
	pthread_t thread;
	sigset_t set;
	int64_t start_ns;
	int sfd, status, r = 0;
	pid_t pid;

	/* bgrun may be gone when we report (--no-ensurestart): no SIGPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	(void)sigemptyset(&set);
	(void)sigaddset(&set, SIGCHLD);
	(void)sigaddset(&set, SIGTERM);
	(void)sigaddset(&set, SIGINT);
	(void)sigaddset(&set, SIGHUP);
	(void)sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);

	cli_spawn_opts(c, &opts); /* detached unless --wait */
	/* --no-ensurestart was for bgrun; here the outcome is needed now. */
	opts.ensurestart = true;
	opts.failure = &failure;
	start_ns = now_ns();
	pid = bgrun_spawn(&opts, &child);
	/* Report first: bgrun (and its user) waits for nothing else. */
	if (pid < 0)
		(void)dprintf(REPORT_FD, "error %d %d\n", -pid, failure.stage);
	else
		(void)dprintf(REPORT_FD, "ok %ld\n", (long)pid);
	(void)close(REPORT_FD);

	bgrun_event_init(&s.ev, "commandfinish",
			 c->source != NULL ? c->source : "bgrun");
	if (strlen(c->supervise_id) <= BGRUN_EVENT_ID_MAX)
		strcpy(s.ev.id, c->supervise_id);
	describe(&s);
	s.ev.start_ns = start_ns;
	if (pid < 0) {
		/* Our stderr is /dev/null: this only gives the exit code. */
		status = cli_report_failure(c, pid, &failure);
		s.ev.result = BGRUN_RESULT_SPAWN_FAILED;
		s.ev.end_ns = now_ns();
		s.ev.message = bgrun_strerror(pid);
		record(&s);
		goto out;
	}
	/*
	 * The `running` row is written by a thread while this one waits:
	 * opening and writing the database takes milliseconds, and a short
	 * command must not look longer than it ran. The thread only reads
	 * s.ev, which stays unchanged until it is joined.
	 */
	s.ev.pid = pid;
	s.ev.result = BGRUN_RESULT_RUNNING;
	writer = pthread_create(&thread, NULL, record_running, &s) == 0;
	if (!writer)
		record(&s);
	if (sfd < 0 || supervise(&s, child, pid, sfd, &timed_out, &st) < 0)
		/* Cannot watch it: wait plainly, without forwarding. */
		r = bgrun_child_wait(child, -1, &st);
	if (writer)
		(void)pthread_join(thread, NULL);
	if (r < 0) {
		status = EXIT_CANCELED;
		goto out;
	}
	bgrun_event_set_status(&s.ev, &st);
	if (timed_out)
		s.ev.result = BGRUN_RESULT_TIMEOUT;
	record(&s);
	status = cli_status_code(&st);
out:
	bgrun_child_free(child);
	bgrun_sink_close(s.sink);
	if (s.argv != c->cmd)
		free(s.argv);
	free(s.cwd);
	free(s.out);
	free(s.err);
	return status;
}
