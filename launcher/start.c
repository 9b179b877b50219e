/* SPDX-License-Identifier: MIT */
/* start.c: bgrun-start, a logged launch's supervisor: launch COMMAND, report, wait for it, hand its end to the recorder. */

/*
 * Why a program of its own: `bgrun COMMAND` (ensurestart) returns once
 * COMMAND has been executed by its supervisor, so the supervisor's own
 * start-up is on the user's clock. This program does only what has to
 * come before the report: launch COMMAND with posix_spawn, write the
 * report. Then it starts the recorder (bgrun-full --_supervise, which loads
 * SQLite and writes the `running` row), and stays COMMAND's parent: it
 * forwards signals, enforces the timeout, reaps COMMAND the moment it
 * ends (exact duration and rusage from wait4), and writes that to the
 * recorder, which records the finish.
 *
 * Built statically against musl when musl-gcc is there (meson.build):
 * glibc's start-up runs about a hundred CPUID instructions (its CPU
 * feature and cache detection), each one a trap to the hypervisor on a
 * virtual machine; musl runs none. Any C library works.
 *
 * Everything that can fail in a way the user must hear about before
 * anything runs (the working directory, the standard streams, finding the
 * program) was done by bgrun when it started us through the primitive:
 * we start in COMMAND's working directory with COMMAND's descriptors 0, 1
 * and 2, bgrun's environment, and the report pipe as descriptor 3.
 *
 * Detached, COMMAND leads a session of its own (as it would without a
 * supervisor), so SIGTERM, SIGINT and SIGHUP sent to us (or a timeout)
 * reach COMMAND and whatever it started through killpg(), without
 * signalling us. The group cannot be recycled under us: COMMAND is reaped
 * only after the last killpg(). With --wait (no 'd'), COMMAND stays in
 * the caller's process group and only COMMAND itself is signalled.
 *
 * Usage (internal; launch.c builds it):
 *
 *   bgrun-start FLAGS TIMEOUT KILL_AFTER PATH NENV ENV... NREC REC... ARGV...
 *
 *   FLAGS    "-", or letters: d = COMMAND leads a new session (detached),
 *            c = COMMAND's environment starts empty instead of ours
 *   TIMEOUT, KILL_AFTER  nanoseconds, 0 for none: SIGTERM after TIMEOUT,
 *            then SIGKILL KILL_AFTER later
 *   PATH     the program to execute (resolved by bgrun)
 *   ENV      NENV changes to the environment for COMMAND, in order:
 *            NAME=VALUE sets, NAME unsets (an unset wins, as in libbgrun)
 *   REC      the recorder's argv (NREC items), started with
 *            --_child=PID:REALTIME_NS:MONOTONIC_NS (or, when COMMAND could
 *            not be executed, --_failed=ERRNO:STAGE:REALTIME_NS:
 *            MONOTONIC_NS) inserted after REC[0]
 *   ARGV     COMMAND's argv, to the end
 *
 * Report on descriptor 3, one line: "ok PID" or "error ERRNO STAGE". The
 * recorder reads COMMAND's end on its descriptor 3, one line (see
 * write_end). Exit status: COMMAND's (128+N for signal N), or the
 * recorder's when COMMAND did not start.
 */

#include "bgrun.h"
#include "sigall.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT_FD 3

extern char **environ;

struct start {
	bool detach, clear;
	int64_t timeout_ns, kill_after_ns;
	const char *path;
	char **env, **rec, **argv;
	int n_env, n_rec;
	int64_t realtime, mono; /* just before COMMAND was launched */
	pid_t pid;              /* COMMAND's, or -1 */
	int error;              /* why not */
};

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	(void)clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The length of an environment entry's or a change's name. */
static size_t name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq != NULL ? (size_t)(eq - s) : strlen(s);
}

/* Whether a change in list[0..n) names the variable of entry. */
static bool named(const char *entry, char *const *list, int n, bool unsets)
{
	size_t len = name_len(entry);

	for (int i = 0; i < n; i++)
		if ((!unsets || strchr(list[i], '=') == NULL) &&
		    name_len(list[i]) == len &&
		    strncmp(list[i], entry, len) == 0)
			return true;
	return false;
}

/*
 * COMMAND's environment: ours (or none), minus every name a change
 * mentions, plus the sets (the last set of a name wins, an unset beats
 * any set): the rules of libbgrun's request.c.
 */
static char **command_env(const struct start *st)
{
	size_t n_base = 0, k = 0;
	char **envp;

	while (!st->clear && environ[n_base] != NULL)
		n_base++;
	envp = malloc((n_base + (size_t)st->n_env + 1) * sizeof(*envp));
	if (envp == NULL)
		return NULL;
	for (size_t i = 0; i < n_base; i++)
		if (!named(environ[i], st->env, st->n_env, false))
			envp[k++] = environ[i];
	for (int i = 0; i < st->n_env; i++)
		if (strchr(st->env[i], '=') != NULL &&
		    !named(st->env[i], st->env + i + 1, st->n_env - i - 1,
			   false) &&
		    !named(st->env[i], st->env, st->n_env, true))
			envp[k++] = st->env[i];
	envp[k] = NULL;
	return envp;
}

/* Launches COMMAND: empty mask, every signal at its default. */
static void launch(struct start *st)
{
	posix_spawnattr_t attr;
	char **envp = command_env(st);
	sigset_t set;
	int r = envp == NULL ? ENOMEM : posix_spawnattr_init(&attr);

	if (r == 0) {
		(void)sigemptyset(&set);
		(void)posix_spawnattr_setsigmask(&attr, &set);
		bgrun__sigset_all(&set);
		(void)posix_spawnattr_setsigdefault(&attr, &set);
		r = posix_spawnattr_setflags(
			&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				       (st->detach ? POSIX_SPAWN_SETSID : 0));
		st->realtime = now_ns(CLOCK_REALTIME);
		st->mono = now_ns(CLOCK_MONOTONIC);
		if (r == 0)
			r = posix_spawn(&st->pid, st->path, NULL, &attr,
					st->argv, envp);
		(void)posix_spawnattr_destroy(&attr);
	}
	free(envp);
	st->error = r;
	if (r != 0)
		st->pid = -1;
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/*
 * bgrun may be gone already (--no-ensurestart): EPIPE, ignored. Detached,
 * bgrun exits once it has read the report: we wait for that (its end of
 * the pipe closes: POLLERR here), up to a few milliseconds, before
 * loading the recorder, which would otherwise take a CPU from bgrun's
 * exit and COMMAND's start. With --wait bgrun stays: no waiting.
 */
static void report(const struct start *st)
{
	struct pollfd p = { .fd = REPORT_FD, .events = 0 };
	char line[64];

	if (st->pid > 0)
		(void)snprintf(line, sizeof(line), "ok %ld\n", (long)st->pid);
	else
		(void)snprintf(line, sizeof(line), "error %d %d\n", st->error,
			       (int)BGRUN_STAGE_EXEC);
	write_all(REPORT_FD, line, strlen(line));
	if (st->detach)
		while (poll(&p, 1, 20) < 0 && errno == EINTR)
			;
	(void)close(REPORT_FD);
}

/* We must not hold COMMAND's streams (a pipe's end, a terminal). */
static void null_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		(void)dup2(fd, i);
	if (fd > 2)
		(void)close(fd);
}

/*
 * Starts the recorder with *ret_fd the write end of its descriptor 3.
 * It keeps our signal mask (the signals we forward stay blocked there:
 * they are for COMMAND) and our ignored SIGPIPE.
 */
static pid_t start_recorder(struct start *st, int *ret_fd)
{
	posix_spawn_file_actions_t fa;
	char opt[96], **argv;
	int p[2];
	pid_t pid = -1;

	*ret_fd = -1;
	argv = calloc((size_t)st->n_rec + 2, sizeof(*argv));
	if (argv == NULL || pipe2(p, O_CLOEXEC) < 0) {
		free(argv);
		return -1;
	}
	if (st->pid > 0)
		(void)snprintf(opt, sizeof(opt), "--_child=%ld:%lld:%lld",
			       (long)st->pid, (long long)st->realtime,
			       (long long)st->mono);
	else
		(void)snprintf(opt, sizeof(opt), "--_failed=%d:%d:%lld:%lld",
			       st->error, (int)BGRUN_STAGE_EXEC,
			       (long long)st->realtime, (long long)st->mono);
	argv[0] = st->rec[0];
	argv[1] = opt;
	memcpy(&argv[2], &st->rec[1], (size_t)(st->n_rec - 1) * sizeof(*argv));
	if (posix_spawn_file_actions_init(&fa) == 0) {
		if (posix_spawn_file_actions_adddup2(&fa, p[0], 3) != 0 ||
		    posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
			pid = -1;
		(void)posix_spawn_file_actions_destroy(&fa);
	}
	(void)close(p[0]);
	if (pid > 0)
		*ret_fd = p[1];
	else
		(void)close(p[1]);
	free(argv);
	return pid;
}

static void arm(int tfd, int64_t ns)
{
	struct itimerspec its = { .it_value = { ns / 1000000000,
						ns % 1000000000 } };

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

/*
 * Waits for COMMAND, forwarding signals and enforcing the timeout, and
 * reaps it: 0 with *wstatus and *ru, or -1 (the status is lost).
 */
static int supervise(const struct start *st, int sfd, bool *timed_out,
		     int *wstatus, struct rusage *ru)
{
	pid_t target = st->detach ? -st->pid : st->pid; /* for kill() */
	int tfd = -1, stage = 0;
	pid_t r;

	if (sfd < 0) {
		/* Cannot watch it: wait plainly, without forwarding. */
		do
			r = wait4(st->pid, wstatus, 0, ru);
		while (r < 0 && errno == EINTR);
		return r == st->pid ? 0 : -1;
	}

	if (st->timeout_ns > 0) {
		/* The timeout runs from COMMAND's start. */
		int64_t ran = now_ns(CLOCK_MONOTONIC) - st->mono;

		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (tfd >= 0)
			arm(tfd, ran < st->timeout_ns ? st->timeout_ns - ran
						      : 1);
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN },
				       { .fd = tfd, .events = POLLIN } };
		struct signalfd_siginfo si;
		uint64_t ticks;

		r = wait4(st->pid, wstatus, WNOHANG, ru);
		if (r == st->pid || (r < 0 && errno != EINTR))
			break;
		if (poll(p, tfd >= 0 ? 2 : 1, -1) < 0)
			continue; /* EINTR; nothing else can fail here */
		if ((p[0].revents & POLLIN) &&
		    read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGCHLD)
			(void)kill(target, (int)si.ssi_signo);
		if (tfd >= 0 && (p[1].revents & POLLIN) &&
		    read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
			*timed_out = true;
			(void)kill(target, stage++ == 0 ? SIGTERM : SIGKILL);
			if (stage == 1 && st->kill_after_ns > 0)
				arm(tfd, st->kill_after_ns);
		}
	}
	if (tfd >= 0)
		(void)close(tfd);
	return r == st->pid ? 0 : -1;
}

/*
 * COMMAND's end for the recorder, one line of decimal fields:
 * "end WSTATUS TIMED_OUT END_REALTIME_NS DURATION_NS UTIME_US STIME_US
 * MAXRSS_KB MINFLT MAJFLT INBLOCK OUBLOCK NVCSW NIVCSW" (supervise.c).
 */
static void write_end(int fd, const struct start *st, int wstatus,
		      bool timed_out, const struct rusage *ru)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line),
		     "end %d %d %lld %lld %lld %lld %ld %ld %ld %ld %ld %ld %ld\n",
		     wstatus, timed_out ? 1 : 0,
		     (long long)now_ns(CLOCK_REALTIME),
		     (long long)(now_ns(CLOCK_MONOTONIC) - st->mono),
		     (long long)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
		     (long long)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
		     ru->ru_maxrss, ru->ru_minflt, ru->ru_majflt,
		     ru->ru_inblock, ru->ru_oublock, ru->ru_nvcsw,
		     ru->ru_nivcsw);
	if (n > 0 && (size_t)n < sizeof(line))
		write_all(fd, line, (size_t)n);
}

/* The recorder's exit status, or -1. */
static int wait_recorder(pid_t pid)
{
	int ws;
	pid_t r;

	do
		r = waitpid(pid, &ws, 0);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		return -1;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int count(const char *s, long long max, long long *ret)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || n < 0 || n > max)
		return -1;
	*ret = n;
	return 0;
}

static int parse(struct start *st, int argc, char **argv)
{
	long long n_env, n_rec;
	int i;

	if (argc < 8 || count(argv[2], INT64_MAX, &n_env) < 0)
		return -1;
	st->timeout_ns = n_env;
	if (count(argv[3], INT64_MAX, &n_env) < 0)
		return -1;
	st->kill_after_ns = n_env;
	st->path = argv[4];
	if (count(argv[5], argc, &n_env) < 0 || 6 + n_env >= argc ||
	    count(argv[6 + n_env], argc, &n_rec) < 0 || n_rec < 1 ||
	    7 + n_env + n_rec >= argc)
		return -1;
	st->clear = strchr(argv[1], 'c') != NULL;
	st->detach = strchr(argv[1], 'd') != NULL;
	st->env = &argv[6];
	st->n_env = (int)n_env;
	i = 7 + (int)n_env;
	st->rec = &argv[i];
	st->n_rec = (int)n_rec;
	st->argv = &argv[i + (int)n_rec];
	return 0;
}

int main(int argc, char **argv)
{
	struct start st = { .pid = -1 };
	struct rusage ru = { 0 };
	bool timed_out = false;
	int sfd, fd, wstatus = 0, code;
	sigset_t set;
	pid_t rec;

	/*
	 * Blocked from the start, so that none is lost: SIGCHLD for the
	 * signalfd, the others to forward. bgrun may have closed the report
	 * pipe when we write: SIGPIPE is ignored.
	 */
	(void)sigemptyset(&set);
	(void)sigaddset(&set, SIGCHLD);
	(void)sigaddset(&set, SIGTERM);
	(void)sigaddset(&set, SIGINT);
	(void)sigaddset(&set, SIGHUP);
	(void)sigprocmask(SIG_BLOCK, &set, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
	if (parse(&st, argc, argv) < 0) {
		(void)fputs("bgrun-start: internal to bgrun (see start.c)\n",
			    stderr);
		return 125;
	}

	launch(&st);
	report(&st);
	/* bgrun has its answer: what follows is off its clock. */
	null_stdio();
	rec = start_recorder(&st, &fd);
	if (st.pid <= 0) {
		/* The recorder says spawn_failed, and gives the exit code. */
		if (fd >= 0)
			(void)close(fd);
		code = rec > 0 ? wait_recorder(rec) : -1;
		return code >= 0 ? code : 125;
	}
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (supervise(&st, sfd, &timed_out, &wstatus, &ru) < 0) {
		code = 125;
	} else {
		if (fd >= 0)
			write_end(fd, &st, wstatus, timed_out, &ru);
		code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus)
					  : 128 + WTERMSIG(wstatus);
	}
	if (fd >= 0)
		(void)close(fd);
	/* Done when the finish is recorded (bgrun --wait relies on it). */
	if (rec > 0)
		(void)wait_recorder(rec);
	return code;
}
