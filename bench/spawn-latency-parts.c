/* SPDX-License-Identifier: MIT */
/* spawn-latency-parts.c: spawn-latency --parts: posix_spawn with what bgrun_spawn adds to it, one piece at a time. */

/*
 * Each part is a posix_spawn with every piece before it and its own, as
 * src/unix/spawn.c makes them for a launch with its stdio on /dev/null
 * and no handle (the usual background launch):
 *
 *   part_signals    + POSIX_SPAWN_SETSID, the empty mask, every signal to
 *                     its default (POSIX_SPAWN_SETSIGMASK | SETSIGDEF)
 *   part_null_open  + /dev/null opened by the child onto 0, dup2'd to 1, 2
 *   part_null_dup   instead of that: a /dev/null of the caller's, checked
 *                     with fstat, dup2'd onto 0, 1, 2 by the child
 *   part_closefrom  + every descriptor above 2 closed in the child
 *   part_pidfd      + the reaper's hand-off: pidfd_open and epoll_ctl
 *
 * The file actions and the epoll set are made once, untimed, as the
 * library makes its own once; the signal attributes are made in each
 * launch, as the library does. After the timed part, untimed: the pidfd
 * leaves the set and is closed, and the child is reaped.
 */

#include "spawn-latency.h"

#include "bgrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct sl_part {
	enum sl_mech mech;
	char *argv[2]; /* borrowed cmd */
	posix_spawn_file_actions_t fa;
	bool fa_ready;
	int null_fd;
	struct stat null_st;
	int epfd;
};

bool sl_is_part(enum sl_mech mech)
{
	return mech >= SL_PART_SIGNALS && mech <= SL_PART_PIDFD;
}

static int build_actions(struct sl_part *p)
{
	posix_spawn_file_actions_t *fa = &p->fa;
	int r = 0;

	if (p->mech == SL_PART_SIGNALS)
		return 0;
	r = posix_spawn_file_actions_init(fa);
	if (r != 0)
		return -r;
	p->fa_ready = true;
	if (p->mech == SL_PART_NULL_OPEN) {
		r = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDWR, 0);
		for (int i = 1; i < 3 && r == 0; i++)
			r = posix_spawn_file_actions_adddup2(fa, 0, i);
		return -r;
	}
	p->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (p->null_fd < 0 || fstat(p->null_fd, &p->null_st) < 0)
		return -errno;
	for (int i = 0; i < 3 && r == 0; i++)
		r = posix_spawn_file_actions_adddup2(fa, p->null_fd, i);
	if (r == 0 && p->mech >= SL_PART_CLOSEFROM)
		r = posix_spawn_file_actions_addclosefrom_np(fa, 3);
	return -r;
}

int sl_part_new(enum sl_mech mech, const char *cmd, struct sl_part **ret_part,
		const char **ret_what)
{
	struct sl_part *p = calloc(1, sizeof(*p));
	int r;

	*ret_what = "malloc";
	if (p == NULL)
		return -ENOMEM;
	p->mech = mech;
	p->argv[0] = (char *)cmd;
	p->null_fd = p->epfd = -1;
	*ret_what = "the file actions";
	r = build_actions(p);
	if (r == 0 && mech == SL_PART_PIDFD) {
		*ret_what = "epoll_create1";
		p->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (p->epfd < 0)
			r = -errno;
	}
	if (r == 0)
		*ret_part = p;
	else
		sl_part_free(p);
	return r;
}

void sl_part_free(struct sl_part *p)
{
	if (p == NULL)
		return;
	if (p->fa_ready)
		(void)posix_spawn_file_actions_destroy(&p->fa);
	if (p->null_fd >= 0)
		(void)close(p->null_fd);
	if (p->epfd >= 0)
		(void)close(p->epfd);
	free(p);
}

int sl_part_run(struct sl_part *p, int64_t *ret_ns, const char **ret_what)
{
	posix_spawnattr_t attr;
	struct stat st;
	sigset_t set;
	int64_t t0, t1;
	int r, pidfd = -1, status;
	pid_t pid;

	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	*ret_what = "posix_spawnattr";
	r = posix_spawnattr_init(&attr);
	(void)sigemptyset(&set);
	if (r == 0)
		r = posix_spawnattr_setsigmask(&attr, &set);
	(void)sigfillset(&set);
	if (r == 0)
		r = posix_spawnattr_setsigdefault(&attr, &set);
	if (r == 0)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
							    POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF);
	if (r != 0)
		return -r;
	if (p->null_fd >= 0 &&
	    (fstat(p->null_fd, &st) < 0 || st.st_ino != p->null_st.st_ino)) {
		*ret_what = "fstat";
		(void)posix_spawnattr_destroy(&attr);
		return -EBADF;
	}
	*ret_what = "posix_spawn";
	r = posix_spawn(&pid, p->argv[0], p->fa_ready ? &p->fa : NULL, &attr,
			p->argv, environ);
	if (r == 0 && p->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd >= 0)
			(void)epoll_ctl(p->epfd, EPOLL_CTL_ADD, pidfd, &ev);
	}
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	(void)posix_spawnattr_destroy(&attr);
	if (r != 0)
		return -r;
	if (pidfd >= 0) {
		(void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, pidfd, NULL);
		(void)close(pidfd);
	} else if (p->epfd >= 0) {
		*ret_what = "pidfd_open";
		r = -errno;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			*ret_what = "waitpid";
			return -errno;
		}
	*ret_ns = t1 - t0;
	return r;
}
