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
 * recorder, which records the finish. Above it, in the process bgrun
 * started, a guardian waits to take over if the supervisor is killed
 * (see THE GUARDIAN below).
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
 * and 2, bgrun's environment, and bgrun's channel as descriptor 3.
 *
 * No rule is made here. bgrun sends the plan on that channel (starter.h):
 * COMMAND's path, argv and whole environment, its signal mask and
 * defaults, whether it leads a session, the timeout, the recorder's argv,
 * all computed by bgrun through libbgrun. This program applies them,
 * which is why it can be a static musl program that links nothing of
 * ours and includes no private header.
 *
 * Detached, COMMAND leads a session of its own (as it would without a
 * supervisor), so SIGTERM, SIGINT and SIGHUP sent to us (or a timeout)
 * reach COMMAND and whatever it started through killpg(), without
 * signalling us, and so does `bgrun kill` (starter.h). The group cannot be
 * recycled under us: COMMAND is reaped only after the last killpg(). With
 * --wait, COMMAND stays in the caller's process group and only COMMAND
 * itself is signalled.
 *
 * The report goes back on descriptor 3 (starter.h). The recorder reads
 * COMMAND's end on its descriptor 3, one line (see format_end). Exit
 * status: COMMAND's (128+N for signal N), 124 when the timeout's SIGTERM
 * ended it (as timeout(1)), or the recorder's when COMMAND did not start.
 */

#include "bgrun/spawn.h" /* enum bgrun_stage, for the report */
#include "starter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A kept output file (starter.h: OUTPUT). */
struct output {
	const char *path;
	int src;         /* our descriptor 1 or 2, as COMMAND got it */
	int fd;          /* our own of it, kept until the finish is recorded */
	int wd;          /* its inotify watch, for the cap */
	int64_t dropped; /* bytes the cap took from its start */
};

struct start {
	/* The plan, as bgrun sent it (starter.h). */
	char *plan;
	bool setsid, setpgroup;
	int bgrun_fd; /* a pidfd on bgrun (STARTER_AWAIT_EXIT), or -1 */
	sigset_t mask, sigdefault;
	int64_t timeout_ns, kill_after_ns;
	int64_t output_max;
	struct output out[2];
	size_t n_out;
	const char *path;
	char **argv, **envp, **rec;
	size_t n_rec;
	char **rec_envp;        /* ours: bgrun's environment */
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

/* Reads descriptor 3 to its end: the plan, NUL-terminated, or NULL. */
static char *read_plan(size_t *ret_len)
{
	size_t len = 0, size = 0;
	char *buf = NULL;

	for (;;) {
		ssize_t n;

		if (size - len < 4096) {
			char *p;

			size = size == 0 ? 16384 : 2 * size;
			p = size <= STARTER_PLAN_MAX ? realloc(buf, size + 1)
						     : NULL;
			if (p == NULL)
				goto fail;
			buf = p;
		}
		n = read(STARTER_FD, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_len = len;
	return buf;
fail:
	free(buf);
	return NULL;
}

/* A cursor over the plan's strings. */
struct cursor {
	char *p, *end;
	bool bad;
};

static char *next(struct cursor *c)
{
	char *s = c->p;

	if (c->bad || c->p >= c->end) {
		c->bad = true;
		return NULL;
	}
	c->p += strlen(s) + 1;
	return s;
}

static int64_t next_num(struct cursor *c, int64_t max)
{
	const char *s = next(c);
	char *e;
	long long n;

	if (s == NULL)
		return -1;
	errno = 0;
	n = strtoll(s, &e, 10);
	if (errno != 0 || e == s || *e != '\0' || n < 0 || n > max) {
		c->bad = true;
		return -1;
	}
	return n;
}

/* A count, then as many strings: a NULL-terminated vector into the plan. */
static char **next_vec(struct cursor *c, size_t *ret_n)
{
	/* Each string takes a byte at least: a bound before the calloc. */
	int64_t n = next_num(c, c->end - c->p);
	char **v;

	if (n < 0)
		return NULL;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (v == NULL) {
		c->bad = true;
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		v[i] = next(c);
	if (ret_n != NULL)
		*ret_n = (size_t)n;
	return v;
}

/*
 * bgrun, our parent, as a pidfd (Linux 5.3; close-on-exec), or -1. Only
 * while bgrun is our parent: the channel was made by bgrun (a socket
 * pair's SO_PEERCRED is its maker's), and getppid() names it before and
 * after the open. A bgrun gone already (--no-ensurestart exits at once)
 * has left us to another parent, which is not bgrun, and whose end is not
 * to be waited for: -1, and its closed end of the channel says it.
 */
static int open_parent(void)
{
#ifdef SYS_pidfd_open
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t ppid = getppid();
	int fd;

	if (getsockopt(STARTER_FD, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    cred.pid != ppid)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, ppid, 0);
	if (fd >= 0 && getppid() != ppid) {
		(void)close(fd);
		fd = -1;
	}
	return fd < 0 ? -1 : fd;
#else
	return -1;
#endif
}

/*
 * A sigset from decimal signal numbers joined by ','. The bits are
 * written into the set directly (the kernel's layout, which both glibc's
 * and musl's sigset_t are): sigaddset() refuses the signals the C library
 * reserves for itself, and those are the ones that matter in the
 * sigdefault set, which is why bgrun names them (posix_spawn's child
 * would set them to SIG_IGN otherwise, and SIG_IGN survives execve).
 */
static int sigset_from(const char *list, sigset_t *set)
{
	unsigned long *word = (unsigned long *)set;
	const unsigned bits = 8 * sizeof(*word);
	const char *p = list;

	(void)sigemptyset(set);
	while (*p != '\0') {
		char *e;
		long sig = strtol(p, &e, 10);

		if (e == p || sig < 1 ||
		    (unsigned long)(sig - 1) / bits >= sizeof(*set) / sizeof(*word))
			return -1;
		word[(sig - 1) / bits] |= 1UL << ((sig - 1) % bits);
		p = e;
		if (*p == ',')
			p++;
		else if (*p != '\0')
			return -1;
	}
	return 0;
}

static int parse_plan(struct start *st, size_t len)
{
	struct cursor c = { .p = st->plan, .end = st->plan + len };
	const char *magic = next(&c), *flags, *mask, *dfl;
	char **argv, **envp, **rec, **out;
	size_t n_out = 0;

	if (magic == NULL || strcmp(magic, STARTER_PLAN_MAGIC) != 0)
		return -1;
	flags = next(&c);
	mask = next(&c);
	dfl = next(&c);
	st->timeout_ns = next_num(&c, INT64_MAX);
	st->kill_after_ns = next_num(&c, INT64_MAX);
	st->output_max = next_num(&c, INT64_MAX);
	out = next_vec(&c, &n_out);
	for (size_t i = 0; out != NULL && i < n_out && !c.bad; i++) {
		const char *o = out[i];

		/* "1:PATH" or "2:PATH", each at most once. */
		if (n_out > 2 || (o[0] != '1' && o[0] != '2') || o[1] != ':' ||
		    o[2] == '\0' || (i == 1 && o[0] == out[0][0]))
			c.bad = true;
		else
			st->out[i] = (struct output){ .path = o + 2,
						      .src = o[0] - '0',
						      .fd = -1, .wd = -1 };
	}
	st->n_out = c.bad ? 0 : n_out;
	free(out);
	st->path = next(&c);
	/* Kept in st before the checks, so that main frees them. */
	st->argv = argv = next_vec(&c, NULL);
	st->envp = envp = next_vec(&c, NULL);
	st->rec = rec = next_vec(&c, &st->n_rec);
	if (c.bad || c.p != c.end || argv[0] == NULL || st->n_rec < 1 ||
	    sigset_from(mask, &st->mask) < 0 ||
	    sigset_from(dfl, &st->sigdefault) < 0)
		return -1;
	st->setsid = strchr(flags, STARTER_SETSID) != NULL;
	st->setpgroup = strchr(flags, STARTER_SETPGROUP) != NULL;
	if (strchr(flags, STARTER_AWAIT_EXIT) != NULL)
		st->bgrun_fd = open_parent();
	return 0;
}

/* Launches COMMAND as the plan says. */
static void launch(struct start *st)
{
	posix_spawnattr_t attr;
	int r = posix_spawnattr_init(&attr);

	if (r == 0) {
		(void)posix_spawnattr_setsigmask(&attr, &st->mask);
		(void)posix_spawnattr_setsigdefault(&attr, &st->sigdefault);
		r = posix_spawnattr_setflags(
			&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				       (st->setsid ? POSIX_SPAWN_SETSID
					: st->setpgroup ? POSIX_SPAWN_SETPGROUP
							: 0));
		st->realtime = now_ns(CLOCK_REALTIME);
		st->mono = now_ns(CLOCK_MONOTONIC);
		if (r == 0)
			r = posix_spawn(&st->pid, st->path, NULL, &attr,
					st->argv, st->envp);
		(void)posix_spawnattr_destroy(&attr);
	}
	st->error = r;
	if (r != 0)
		st->pid = -1;
}

/* 0, or -1 if the reader is gone (EPIPE: SIGPIPE is ignored) or worse. */
static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* write_all of n buffers, len bytes in all: 0, or -1. */
static int writev_all(int fd, struct iovec *v, size_t n, size_t len)
{
	ssize_t w = writev(fd, v, (int)n);

	if (w == (ssize_t)len)
		return 0;
	if (w < 0 && errno != EINTR)
		return -1;
	/* Short (or interrupted): the rest one buffer at a time. */
	for (size_t i = 0, done = w > 0 ? (size_t)w : 0; i < n; i++) {
		size_t skip = done < v[i].iov_len ? done : v[i].iov_len;

		done -= skip;
		if (write_all(fd, (const char *)v[i].iov_base + skip,
			      v[i].iov_len - skip) < 0)
			return -1;
	}
	return 0;
}

/*
 * bgrun may be gone already (--no-ensurestart): EPIPE, ignored. Detached,
 * bgrun exits once it has read the report: we wait for that, up to a few
 * milliseconds, before loading the recorder, which would otherwise take a
 * CPU from bgrun's exit and COMMAND's start. With STARTER_AWAIT_EXIT, for
 * bgrun's exit itself (its pidfd polls readable once its parent can reap
 * it); else for its end of the socket to close (POLLHUP here). The close
 * comes earlier, from within bgrun's exit: woken by it, we preempted the
 * exiting bgrun and loaded the recorder on its CPU, and bgrun's parent
 * waited milliseconds for an exit that was all but done. With --wait
 * bgrun stays: no waiting.
 */
static void report(struct start *st)
{
	struct pollfd p = { .fd = STARTER_FD, .events = 0 };
	char line[64];

	if (st->pid > 0)
		(void)snprintf(line, sizeof(line), STARTER_REPORT_OK " %ld\n",
			       (long)st->pid);
	else
		(void)snprintf(line, sizeof(line), STARTER_REPORT_ERROR " %d %d\n",
			       st->error, (int)BGRUN_STAGE_EXEC);
	write_all(STARTER_FD, line, strlen(line));
	if (st->bgrun_fd >= 0)
		p = (struct pollfd){ .fd = st->bgrun_fd, .events = POLLIN };
	if (st->setsid)
		while (poll(&p, 1, 20) < 0 && errno == EINTR)
			;
	(void)close(STARTER_FD);
	if (st->bgrun_fd >= 0)
		(void)close(st->bgrun_fd);
	st->bgrun_fd = -1;
}

/*
 * The kept output's descriptors, our own copies (close-on-exec: no
 * recorder gets them), before null_stdio: their last close is the job's
 * end for a reader (follow.c), so they stay open until the finish is
 * recorded (main returns), and the cap works through them.
 */
static void keep_outputs(struct start *st)
{
	for (size_t i = 0; i < st->n_out; i++)
		st->out[i].fd = fcntl(st->out[i].src, F_DUPFD_CLOEXEC, 3);
}

/*
 * COMMAND's environment, kept for `bgrun restart` in the file the
 * recorder's --_env names (bgrun made the name, launch.c): each entry
 * ended by its NUL, so that any bytes come back as they were. Written
 * here, after the report, so that its creation is off bgrun's clock,
 * and before the recorder starts, so that no row names it before it is
 * there. A file that cannot be made is said by restart, which then
 * finds none.
 */
static void keep_env(const struct start *st)
{
	static const char opt[] = "--_env=";
	const char *path = NULL;
	int fd;

	for (size_t i = 0; i < st->n_rec && path == NULL; i++)
		if (strncmp(st->rec[i], opt, sizeof(opt) - 1) == 0)
			path = st->rec[i] + sizeof(opt) - 1;
	if (path == NULL || st->pid <= 0)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return;
	/* A few writes, not one per variable (no malloc: see THE GUARDIAN). */
	for (size_t i = 0; st->envp != NULL && st->envp[i] != NULL;) {
		struct iovec v[64];
		size_t n = 0, len = 0;

		for (; n < 64 && st->envp[i] != NULL; n++, i++) {
			v[n].iov_base = st->envp[i];
			v[n].iov_len = strlen(st->envp[i]) + 1;
			len += v[n].iov_len;
		}
		if (writev_all(fd, v, n, len) < 0)
			break;
	}
	(void)close(fd);
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
 * The recorder (supervise.c), which may be killed like any process: it
 * holds nothing we cannot give again. While it runs, fd is our end of its
 * descriptor 3. One that ends before it has taken COMMAND's end from us
 * (killed while it waits for the log's lock, or while COMMAND runs, or
 * after it read the end but before it recorded it) is started again, up
 * to RECORDER_STARTS times in all: each writes the `running` row, then
 * the finish, and the store keeps one row per id and never takes a
 * finished row back to running, so a second writing of either changes
 * nothing. Without that, the exit status we hold would go into a dead
 * pipe, and the row would stay `running` (then `lost`), or be missing.
 */
#define RECORDER_STARTS 4

struct recorder {
	pid_t pid;     /* -1: none runs */
	int fd;        /* -1: none */
	unsigned starts;
};

/* The recorder's argv, made once before the guardian's clone, or NULL. */
static char **rec_argv;

/*
 * Starts a recorder, r->fd our end of its descriptor 3: 0, or -1
 * (none started; r->pid stays -1). It keeps our signal mask (the signals
 * we forward stay blocked there: they are for COMMAND) and our ignored
 * SIGPIPE.
 */
static int start_recorder(const struct start *st, struct recorder *r)
{
	posix_spawn_file_actions_t fa;
	char opt[96], **argv;
	int p[2];
	pid_t pid = -1;

	if (r->starts >= RECORDER_STARTS)
		return -1;
	r->starts++;
	/* Under a guardian, no malloc (see THE GUARDIAN): made before. */
	argv = rec_argv != NULL ? rec_argv : calloc(st->n_rec + 2, sizeof(*argv));
	/*
	 * A socket, not a pipe: the recorder takes its descriptor 3, made by
	 * its parent (SO_PEERCRED), as the proof that it was started by us,
	 * not from a command line (supervise.c: from_chain).
	 */
	if (argv == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) {
		if (argv != rec_argv)
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
	memcpy(&argv[2], &st->rec[1], (st->n_rec - 1) * sizeof(*argv));
	if (posix_spawn_file_actions_init(&fa) == 0) {
		if (posix_spawn_file_actions_adddup2(&fa, p[0], 3) != 0 ||
		    posix_spawn(&pid, argv[0], &fa, NULL, argv,
				st->rec_envp) != 0)
			pid = -1;
		(void)posix_spawn_file_actions_destroy(&fa);
	}
	(void)close(p[0]);
	if (argv != rec_argv)
		free(argv);
	if (pid <= 0) {
		(void)close(p[1]);
		return -1;
	}
	r->pid = pid;
	r->fd = p[1];
	return 0;
}

/* The recorder has ended and is reaped: forget it. */
static void recorder_gone(struct recorder *r)
{
	if (r->fd >= 0)
		(void)close(r->fd);
	r->fd = -1;
	r->pid = -1;
}

/*
 * While COMMAND runs: a recorder that has ended is started again at
 * once, so that the `running` row is there while COMMAND runs.
 */
static void check_recorder(const struct start *st, struct recorder *r)
{
	int ws;

	if (r->pid <= 0 || waitpid(r->pid, &ws, WNOHANG) != r->pid)
		return;
	recorder_gone(r);
	(void)start_recorder(st, r);
}

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

/*
 * The cap keeps the tail: the last output_max bytes (in whole blocks,
 * so a little more) are what a reader finds, the start of the file
 * becomes a hole (its blocks given back; the file's size, where writes
 * go, keeps growing, so COMMAND's writes are not disturbed). A reader
 * skips the hole (follow.c). Where holes cannot be made, the file is
 * emptied instead (O_APPEND: the next write goes to its new end), which
 * keeps what comes after. Checked each time the file is written to
 * (inotify): the file can pass the cap by what is written before we get
 * a CPU, not more.
 */
static void cap(const struct start *st, struct output *o)
{
	struct stat sb;
	int64_t keep_from;

	if (o->fd < 0 || fstat(o->fd, &sb) < 0 ||
	    (int64_t)sb.st_size - o->dropped <= st->output_max)
		return;
	keep_from = (int64_t)sb.st_size - st->output_max;
	keep_from -= keep_from % (sb.st_blksize > 0 ? sb.st_blksize : 4096);
	if (keep_from <= o->dropped)
		return;
	if (fallocate(o->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      o->dropped, keep_from - o->dropped) == 0) {
		o->dropped = keep_from;
	} else if (ftruncate(o->fd, 0) == 0) {
		/* No holes here: what the file held is gone, its size is 0. */
		o->dropped += sb.st_size;
	}
}

/* Without inotify, the cap is checked this often. */
#define CAP_POLL_NS 1000000000

/*
 * What wakes us to apply the cap: an inotify descriptor on the files, or,
 * when the user has used up their inotify instances (128 by default: as
 * many jobs running), a timer; -1 when there is no cap.
 */
static int watch_outputs(struct start *st)
{
	/* A tv_nsec of a whole second or more is EINVAL: split it. */
	struct itimerspec its = {
		.it_interval = { CAP_POLL_NS / 1000000000,
				 CAP_POLL_NS % 1000000000 },
		.it_value = { CAP_POLL_NS / 1000000000,
			      CAP_POLL_NS % 1000000000 },
	};
	int fd;

	if (st->output_max <= 0 || st->n_out == 0)
		return -1;
	for (size_t i = 0; i < st->n_out; i++)
		cap(st, &st->out[i]);
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	for (size_t i = 0; fd >= 0 && i < st->n_out; i++) {
		st->out[i].wd = inotify_add_watch(fd, st->out[i].path, IN_MODIFY);
		if (st->out[i].wd < 0) {
			(void)close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		return fd;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd >= 0)
		(void)timerfd_settime(fd, 0, &its, NULL);
	return fd;
}

/* Reads what woke us on fd (events, or the timer's ticks); applies the cap. */
static void check_outputs(struct start *st, int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	for (size_t i = 0; i < st->n_out; i++)
		cap(st, &st->out[i]);
}

/*
 * The guardian (below) is a subreaper: what COMMAND leaves behind,
 * orphaned, becomes its child. Reaps those that have ended, never
 * COMMAND nor the recorder, which are waited for by pid (the first
 * zombie found is looked at, not reaped, until it is neither).
 */
static void reap_adopted(const struct start *st, const struct recorder *r)
{
	for (;;) {
		siginfo_t si = { .si_pid = 0 };

		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
		    si.si_pid <= 0 || si.si_pid == st->pid ||
		    si.si_pid == r->pid)
			return;
		(void)waitpid(si.si_pid, NULL, WNOHANG);
	}
}

static void arm(int tfd, int64_t ns)
{
	struct itimerspec its = { .it_value = { ns / 1000000000,
						ns % 1000000000 } };

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

/*
 * A signal for COMMAND: SIGTERM, SIGINT, SIGHUP as they came, or what
 * `bgrun kill` asks for (starter.h), which the kernel let through only
 * from a process allowed to signal us. Signal 0 or one out of range is
 * ignored.
 */
static void forward(pid_t target, const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;

	if (sig == STARTER_KILL_SIGNAL) {
		if (si->ssi_code != SI_QUEUE)
			return;
		sig = si->ssi_int;
		if (sig < 1 || sig > SIGRTMAX)
			return;
	}
	(void)kill(target, sig);
}

/*
 * Whether COMMAND has ended, learnt without reaping it (WNOWAIT): its
 * status in *wstatus and its rusage in *ru (the waitid system call fills
 * one; the C library's waitid() does not pass it on). COMMAND stays a
 * zombie until reap_command(), called once the guardian has the end
 * line: a supervisor killed in between leaves a zombie, which the
 * guardian (the subreaper above us) reaps with its status and rusage.
 * 1 ended, 0 not yet (or EINTR), -1 error.
 */
static int ended(pid_t pid, bool block, int *wstatus, struct rusage *ru)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (syscall(SYS_waitid, P_PID, (id_t)pid, &si,
		    WEXITED | WNOWAIT | (block ? 0 : WNOHANG), ru) < 0)
		return errno == EINTR ? 0 : -1;
	if (si.si_pid != pid)
		return 0;
	switch (si.si_code) {
	case CLD_EXITED:
		*wstatus = (si.si_status & 0xff) << 8;
		return 1;
	case CLD_KILLED:
		*wstatus = si.si_status & 0x7f;
		return 1;
	case CLD_DUMPED:
		*wstatus = (si.si_status & 0x7f) | 0x80;
		return 1;
	}
	return 0;
}

static void reap_command(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Waits for COMMAND to end, forwarding signals and enforcing the
 * timeout, without reaping it (see ended()): 0 with *wstatus and *ru,
 * or -1 (the status is lost).
 */
static int supervise(struct start *st, struct recorder *rec, int sfd,
		     bool *timed_out, int *wstatus, struct rusage *ru)
{
	/* For kill(): COMMAND's group when it leads one. */
	pid_t target = st->setsid || st->setpgroup ? -st->pid : st->pid;
	bool own_group = st->setsid || st->setpgroup;
	int tfd = -1, ifd, stage = 0;
	int r;

	if (sfd < 0) {
		/* Cannot watch it: wait plainly, without forwarding. */
		do
			r = ended(st->pid, true, wstatus, ru);
		while (r == 0);
		return r == 1 ? 0 : -1;
	}

	if (st->timeout_ns > 0) {
		/* The timeout runs from COMMAND's start. */
		int64_t ran = now_ns(CLOCK_MONOTONIC) - st->mono;

		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (tfd >= 0)
			arm(tfd, ran < st->timeout_ns ? st->timeout_ns - ran
						      : 1);
	}
	ifd = watch_outputs(st);
	for (;;) {
		struct pollfd p[3] = { { .fd = sfd, .events = POLLIN },
				       { .fd = tfd, .events = POLLIN },
				       { .fd = ifd, .events = POLLIN } };
		struct signalfd_siginfo si;
		uint64_t ticks;

		r = ended(st->pid, false, wstatus, ru);
		if (r != 0)
			break;
		/* SIGCHLD also says when the recorder ends. */
		check_recorder(st, rec);
		reap_adopted(st, rec);
		if (poll(p, 3, -1) < 0) /* an fd of -1 is not polled */
			continue; /* EINTR; nothing else can fail here */
		/*
		 * In the caller's group (--wait), a signal the terminal sent
		 * to the whole group (SI_KERNEL) has reached COMMAND already:
		 * once is enough (a second SIGINT may mean "now" to it).
		 */
		if ((p[0].revents & POLLIN) &&
		    read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGCHLD &&
		    (own_group || si.ssi_code != SI_KERNEL))
			forward(target, &si);
		if (p[2].revents & POLLIN)
			check_outputs(st, ifd);
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
	if (ifd >= 0) {
		/* What COMMAND wrote last is within the cap too. */
		check_outputs(st, ifd);
		(void)close(ifd);
	}
	return r == 1 ? 0 : -1;
}

/*
 * COMMAND's end for the recorder, one line of decimal fields:
 * "end WSTATUS TIMED_OUT END_REALTIME_NS DURATION_NS UTIME_US STIME_US
 * MAXRSS_KB MINFLT MAJFLT INBLOCK OUBLOCK NVCSW NIVCSW DROPPED"
 * (supervise.c); DROPPED: the bytes the cap took from the kept output.
 */
static void format_end(char line[static 512], const struct start *st,
		       int wstatus, bool timed_out, const struct rusage *ru)
{
	int64_t dropped = 0;
	int n;

	for (size_t i = 0; i < st->n_out; i++)
		dropped += st->out[i].dropped;
	n = snprintf(line, 512,
		     "end %d %d %lld %lld %lld %lld %ld %ld %ld %ld %ld %ld %ld %lld\n",
		     wstatus, timed_out ? 1 : 0,
		     (long long)now_ns(CLOCK_REALTIME),
		     (long long)(now_ns(CLOCK_MONOTONIC) - st->mono),
		     (long long)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
		     (long long)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
		     ru->ru_maxrss, ru->ru_minflt, ru->ru_majflt,
		     ru->ru_inblock, ru->ru_oublock, ru->ru_nvcsw,
		     ru->ru_nivcsw, (long long)dropped);
	if (n < 0 || n >= 512)
		line[0] = '\0';
}

/*
 * Gives the recorder what it waits for (end: COMMAND's end line, or NULL
 * when COMMAND did not start: nothing), then waits for it to exit. Done
 * once one has exited of itself with the whole line read from us; one
 * killed, or gone before it read it (the write fails: EPIPE), is replaced
 * (see struct recorder). Returns the exit status of the last one (128+N
 * for signal N), or -1 if none ran.
 */
static int finish_recorder(const struct start *st, struct recorder *r,
			   const char *end)
{
	int code = -1;

	for (;;) {
		bool sent;
		int ws;
		pid_t w;

		if (r->pid <= 0 && start_recorder(st, r) < 0)
			return code;
		sent = end == NULL || write_all(r->fd, end, strlen(end)) == 0;
		(void)close(r->fd);
		r->fd = -1;
		do
			w = waitpid(r->pid, &ws, 0);
		while (w < 0 && errno == EINTR);
		recorder_gone(r);
		if (w < 0)
			return code;
		code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
		if (WIFEXITED(ws) && sent)
			return code;
	}
}

/*
 * THE GUARDIAN. The supervisor is COMMAND's parent, the one process that
 * learns its exit status and rusage; killed (kill -9) with nothing above
 * it, COMMAND was orphaned to init, which reaped it, and the finish was
 * never known. So bgrun-start's first process becomes the guardian, a
 * child subreaper (PR_SET_CHILD_SUBREAPER), and the supervisor is its
 * child: an orphaned COMMAND becomes the guardian's child, and the
 * guardian then does what the supervisor would have: forwards signals,
 * enforces the timeout, reaps COMMAND (its true status and rusage, from
 * wait4), and has a recorder write the finish (the `running` row again
 * first, which names the guardian as the supervisor now). The supervisor
 * tells it, on a pipe read only then, COMMAND's pid and start (or why it
 * could not start), then COMMAND's end line once it has it, so that a
 * supervisor killed after it reaped COMMAND loses nothing either.
 *
 * Only an ancestor of COMMAND can adopt it, so the guardian must exist
 * before COMMAND does, on the user's clock. A fork() there cost the
 * copy of the address space and the faults of copy-on-write before the
 * launch (launch-wall p50 1.5 x on a loaded machine). So the supervisor
 * is made much as posix_spawn makes its child: clone(CLONE_VM), on a
 * stack of its own, in the guardian's memory and descriptor table
 * (CLONE_FILES): nothing is copied, and the guardian at once sleeps in
 * waitpid until the supervisor has ended. (Not CLONE_VFORK: its wait is
 * uninterruptible, and every job would add 1 to the load average.)
 * Sharing is safe because only one of the two runs: the guardian touches
 * nothing in between (its only call, waitpid, with every caught signal
 * blocked, returns only then), and no heap memory after it (the
 * recorder's argv is made before: a supervisor killed inside malloc
 * would leave the heap half-changed).
 *
 * While it waits for it the guardian reaps nothing else, so the
 * supervisor is a subreaper too, from before the launch: what COMMAND
 * leaves behind (a daemon it started, orphaned) is the supervisor's to
 * reap, and goes to the guardian, then to init, only after. A killed guardian costs
 * nothing (the supervisor still is COMMAND's parent). Both killed: the
 * finish is lost, and the row is reported lost once COMMAND has ended
 * too (bgrun/store.h). Signals for COMMAND go to the supervisor (the
 * row's supervisor_pid); the guardian forwards none while it waits.
 */

/* The supervisor's end of the pipe to the guardian; -1: no guardian. */
static int guard_fd = -1;

/* One line to the guardian (atomic: far below PIPE_BUF); never blocks. */
static void tell_guard(const char *line)
{
	if (guard_fd >= 0)
		(void)write_all(guard_fd, line, strlen(line));
}

/* COMMAND's pid and start, or why it could not start (see guard_learn). */
static void tell_guard_launch(const struct start *st)
{
	char line[128];

	if (st->pid > 0)
		(void)snprintf(line, sizeof(line), "child %ld %lld %lld\n",
			       (long)st->pid, (long long)st->realtime,
			       (long long)st->mono);
	else
		(void)snprintf(line, sizeof(line), "failed %d %lld %lld\n",
			       st->error, (long long)st->realtime,
			       (long long)st->mono);
	tell_guard(line);
}

/* What the guardian knows of COMMAND. */
struct guard {
	pid_t sup;         /* the supervisor, our child */
	int fd;            /* our end of its pipe (non-blocking) */
	char buf[1024];    /* what it wrote, NUL-terminated */
	size_t len;
	bool reaped;       /* COMMAND became ours and ended: ws, ru */
	int ws;
	struct rusage ru;
};

/* Reads what the supervisor wrote so far. */
static void guard_drain(struct guard *g)
{
	for (;;) {
		ssize_t n = read(g->fd, g->buf + g->len,
				 sizeof(g->buf) - 1 - g->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		g->len += (size_t)n;
	}
	g->buf[g->len] = '\0';
}

/*
 * From the supervisor's lines: st->pid, st->error and the clocks, and
 * end (COMMAND's end line, or "" if it did not get that far). Returns 0,
 * or -1 if it told nothing (it ended before it launched anything).
 */
static int guard_learn(const struct guard *g, struct start *st,
		       char end[static 512])
{
	const char *p = g->buf;
	int r = -1;

	end[0] = '\0';
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		long long a, b, c;

		if (nl == NULL)
			break; /* a line cut short: not written whole */
		if (sscanf(p, "child %lld %lld %lld", &a, &b, &c) == 3 && a > 0) {
			st->pid = (pid_t)a;
			st->realtime = b;
			st->mono = c;
			r = 0;
		} else if (sscanf(p, "failed %lld %lld %lld", &a, &b, &c) == 3) {
			st->pid = -1;
			st->error = (int)a;
			st->realtime = b;
			st->mono = c;
			r = 0;
		} else if (strncmp(p, "end ", 4) == 0 &&
			   (size_t)(nl - p) + 2 <= 512) {
			memcpy(end, p, (size_t)(nl - p) + 1);
			end[nl - p + 1] = '\0';
		}
		p = nl + 1;
	}
	return r;
}

/*
 * Once the supervisor is gone: reaps what has ended among its orphans,
 * now ours, keeping COMMAND's status and rusage in g if it is among them
 * (st->pid, from guard_learn).
 */
static void guard_reap(struct guard *g, const struct start *st)
{
	for (;;) {
		struct rusage ru;
		int ws;
		pid_t w = wait4(-1, &ws, WNOHANG, &ru);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		if (w == st->pid) {
			g->reaped = true;
			g->ws = ws;
			g->ru = ru;
		}
	}
}

/* The supervisor's descriptors, left in the table we shared: closed. */
static void close_others(int keep)
{
	/* Few and low: the lowest free number is always taken. */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep)
			(void)close(fd);
}

/*
 * The guardian, once the supervisor has ended: takes over if it was
 * killed. Returns our exit status: the supervisor's, or COMMAND's
 * (128+N for signal N), or 125 if nothing was launched.
 */
/*
 * Waits for the supervisor to end (its status in *ws). bgrun signals its
 * child, which is us: SIGTERM, SIGINT and SIGHUP go on to the supervisor,
 * which forwards them to COMMAND as always. One the terminal sent to the
 * whole group (SI_KERNEL) has reached the supervisor already.
 */
static void guard_wait(const struct guard *g, const sigset_t *set, int *ws)
{
	for (;;) {
		siginfo_t si;
		pid_t w = waitpid(g->sup, ws, WNOHANG);

		if (w == g->sup || (w < 0 && errno != EINTR))
			return;
		if (sigwaitinfo(set, &si) < 0)
			continue; /* EINTR */
		if (si.si_signo == STARTER_KILL_SIGNAL) {
			/* bgrun kill's, queued with its signal: as it came. */
			if (si.si_code == SI_QUEUE)
				(void)sigqueue(g->sup, si.si_signo, si.si_value);
		} else if (si.si_signo != SIGCHLD && si.si_code != SI_KERNEL) {
			(void)kill(g->sup, si.si_signo);
		}
	}
}

static int guard(struct start *st, struct guard *g, const sigset_t *set)
{
	struct recorder rec = { .pid = -1, .fd = -1 };
	struct rusage ru = { 0 };
	bool timed_out = false;
	char end[512];
	int sfd = -1, ws = 0, cws = 0, to = 0;

	guard_wait(g, set, &ws);
	guard_drain(g);
	if (!WIFSIGNALED(ws) || guard_learn(g, st, end) < 0) {
		/* It ended of itself (its status is COMMAND's), or too early. */
		ws = WIFEXITED(ws) ? WEXITSTATUS(ws) : 125;
		goto out;
	}
	/* Its descriptors: the old recorder waits for the end of one. */
	close_others(g->fd);
	null_stdio();
	sfd = signalfd(-1, set, SFD_CLOEXEC);
	/* COMMAND may have ended already, a zombie that is ours now. */
	guard_reap(g, st);
	if (st->pid <= 0) {
		/* COMMAND could not start: the recorder says spawn_failed. */
		ws = finish_recorder(st, &rec, NULL);
		if (ws < 0)
			ws = 125;
		goto out;
	}
	if (end[0] == '\0' && g->reaped) {
		/* It ended as the supervisor was killed: we reaped it. */
		timed_out = st->timeout_ns > 0 && WIFSIGNALED(g->ws) &&
			    now_ns(CLOCK_MONOTONIC) - st->mono >= st->timeout_ns;
		format_end(end, st, g->ws, timed_out, &g->ru);
	} else if (end[0] == '\0') {
		/* It runs, our child now: the `running` row names us. */
		(void)start_recorder(st, &rec);
		if (supervise(st, &rec, sfd, &timed_out, &cws, &ru) == 0) {
			format_end(end, st, cws, timed_out, &ru);
			reap_command(st->pid);
		}
	}
	if (sscanf(end, "end %d %d", &cws, &to) == 2) {
		ws = WIFEXITED(cws) ? WEXITSTATUS(cws) : 128 + WTERMSIG(cws);
		/* As the supervisor would have said (timeout(1)'s rule). */
		if (to && !(WIFSIGNALED(cws) && WTERMSIG(cws) == SIGKILL))
			ws = STARTER_EXIT_TIMEOUT;
	} else
		ws = 125; /* the status is lost, as in main */
	(void)finish_recorder(st, &rec, end);
out:
	/* What ended and came to us, reaped; what runs goes to init. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (sfd >= 0)
		(void)close(sfd);
	return ws;
}

static int supervisor(struct start *st, const sigset_t *set);

struct sup_arg {
	struct start *st;
	const sigset_t *set;
};

static int supervisor_entry(void *arg)
{
	const struct sup_arg *a = arg;

	return supervisor(a->st, a->set);
}

/* The supervisor's stack: ample for what it calls (posix_spawn included). */
#define SUP_STACK (1u << 20)

/*
 * Runs the supervisor under a guardian and returns the guardian's exit
 * status, or -1 if no guardian can be had (the caller then is the
 * supervisor alone, as it was).
 */
static int run_guarded(struct start *st, const sigset_t *set)
{
	struct guard g = { .sup = -1 };
	struct sup_arg a = { .st = st, .set = set };
	char *stack;
	int p[2], r;

	rec_argv = calloc(st->n_rec + 2, sizeof(*rec_argv));
	if (rec_argv == NULL)
		return -1;
	stack = mmap(NULL, SUP_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		goto none;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		goto unmap;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		goto close_pipe;
	guard_fd = p[1];
	/* The supervisor runs on; we wait for it (guard: waitpid). */
	g.sup = clone(supervisor_entry, stack + SUP_STACK,
		      CLONE_VM | CLONE_FILES | SIGCHLD, &a);
	if (g.sup < 0) {
		guard_fd = -1;
		(void)prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
		goto close_pipe;
	}
	g.fd = p[0];
	r = guard(st, &g, set);
	(void)close(p[0]);
	(void)close(p[1]);
	(void)munmap(stack, SUP_STACK);
	free(rec_argv);
	rec_argv = NULL;
	return r;
close_pipe:
	(void)close(p[0]);
	(void)close(p[1]);
unmap:
	(void)munmap(stack, SUP_STACK);
none:
	free(rec_argv);
	rec_argv = NULL;
	return -1;
}

/*
 * The supervisor: launches COMMAND, reports, starts the recorder, waits
 * for COMMAND and has its finish recorded. Returns our exit status.
 */
static int supervisor(struct start *st, const sigset_t *set)
{
	struct recorder rec = { .pid = -1, .fd = -1 };
	struct rusage ru = { 0 };
	bool timed_out = false;
	int sfd, wstatus = 0, code;
	char end[512];

	/*
	 * Ours to reap while the guardian waits (see THE GUARDIAN), from
	 * the start: COMMAND may leave an orphan at once.
	 */
	if (guard_fd >= 0)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	launch(st);
	tell_guard_launch(st);
	report(st);
	/* bgrun has its answer: what follows is off its clock. */
	keep_env(st);
	keep_outputs(st);
	null_stdio();
	(void)start_recorder(st, &rec);
	if (st->pid <= 0) {
		/* The recorder says spawn_failed, and gives the exit code. */
		code = finish_recorder(st, &rec, NULL);
		return code < 0 ? 125 : code;
	}
	sfd = signalfd(-1, set, SFD_CLOEXEC);
	if (supervise(st, &rec, sfd, &timed_out, &wstatus, &ru) < 0) {
		/* The status is lost: no end line, the row stays running. */
		code = 125;
		end[0] = '\0';
	} else {
		format_end(end, st, wstatus, timed_out, &ru);
		tell_guard(end);
		/* The guardian has the end: COMMAND may go (see ended()). */
		reap_command(st->pid);
		code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus)
					  : 128 + WTERMSIG(wstatus);
		/*
		 * As timeout(1): 124 when the timeout ended it, but 137 when
		 * it took the SIGKILL of --kill-after.
		 */
		if (timed_out && !(WIFSIGNALED(wstatus) &&
				   WTERMSIG(wstatus) == SIGKILL))
			code = STARTER_EXIT_TIMEOUT;
	}
	/* Done when the finish is recorded (bgrun --wait relies on it). */
	(void)finish_recorder(st, &rec, end);
	/* The finish is recorded: a follower may stop (follow.c). */
	for (size_t i = 0; i < st->n_out; i++)
		if (st->out[i].fd >= 0)
			(void)close(st->out[i].fd);
	/* The table is shared with the guardian: leave it as we found it. */
	if (sfd >= 0)
		(void)close(sfd);
	return code;
}

int main(int argc, char **argv, char **envp)
{
	struct start st = { .pid = -1, .bgrun_fd = -1, .rec_envp = envp };
	int code;
	size_t len = 0;
	sigset_t set;

	/*
	 * Blocked from the start, so that none is lost: SIGCHLD for the
	 * signalfd, the others to forward. bgrun may have closed its end of
	 * the channel when we write: SIGPIPE is ignored.
	 */
	(void)sigemptyset(&set);
	(void)sigaddset(&set, SIGCHLD);
	(void)sigaddset(&set, SIGTERM);
	(void)sigaddset(&set, SIGINT);
	(void)sigaddset(&set, SIGHUP);
	(void)sigaddset(&set, STARTER_KILL_SIGNAL);
	(void)sigprocmask(SIG_BLOCK, &set, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)fcntl(STARTER_FD, F_SETFD, FD_CLOEXEC);
	st.plan = read_plan(&len);
	if (argc != 1 || st.plan == NULL || parse_plan(&st, len) < 0) {
		(void)fputs("bgrun-start: internal to bgrun (see starter.h)\n",
			    stderr);
		code = 125;
		goto out;
	}
	/* The guardian returns when all is done; without one, we supervise. */
	code = run_guarded(&st, &set);
	if (code < 0)
		code = supervisor(&st, &set);
out:
	free(st.argv);
	free(st.envp);
	free(st.rec);
	free(st.plan);
	return code;
}
