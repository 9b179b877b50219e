/* SPDX-License-Identifier: MIT */
/* follow.c: following a job's kept output as it grows (bgrun -w, bgrun logs -f), until its last writer closes it. */

/*
 * The end of a job is the end of its output file's only open file: bgrun
 * opened it once (output.c), the command and whatever it started share
 * it, and the supervisor keeps a descriptor of it until the finish is
 * recorded (start.c). inotify says IN_CLOSE_WRITE when the last of them
 * lets go, so a follower needs neither the job's pid nor a poll of the
 * log, and it cannot miss the end: the watch is made before it looks at
 * whether the job is over. A command that leaves a process behind still
 * holding its stdout is followed until that process lets go as well:
 * that is the output's end.
 *
 * The cap (start.c) drops the start of a file by punching a hole in it:
 * a reader skips the hole (SEEK_DATA), and says once how much it missed.
 */

#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

int follow_open(struct follow_file *f, size_t n, int *ret_ifd)
{
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (ifd < 0) {
		cli_msg("cannot follow the output: inotify: %s", strerror(errno));
		return -errno;
	}
	/* A lease broken in no_writer's instant would send SIGIO: no harm. */
	(void)signal(SIGIO, SIG_IGN);
	for (size_t i = 0; i < n; i++) {
		f[i].fd = -1;
		f[i].wd = inotify_add_watch(ifd, f[i].path,
					    IN_MODIFY | IN_CLOSE_WRITE);
		if (f[i].wd >= 0)
			f[i].fd = open(f[i].path, O_RDONLY | O_CLOEXEC);
		if (f[i].wd < 0 || f[i].fd < 0) {
			int r = -errno;

			cli_msg("cannot read '%s': %s", cli_printable(f[i].path),
				strerror(errno));
			follow_close(f, i + 1, ifd);
			return r;
		}
	}
	*ret_ifd = ifd;
	return 0;
}

void follow_close(struct follow_file *f, size_t n, int ifd)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].fd >= 0)
			(void)close(f[i].fd);
		f[i].fd = -1;
	}
	if (ifd >= 0)
		(void)close(ifd);
}

static void put(struct follow_file *f, const char *p, size_t len)
{
	while (len > 0 && !f->out_broken) {
		ssize_t w = write(f->out, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/*
			 * A reader gone (EPIPE: bgrun -w ignores SIGPIPE while
			 * it follows) stops the copy, not the job.
			 */
			f->out_broken = true;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
}

/* Copies from f->off to the end of what the file holds now. */
static void drain(struct follow_file *f)
{
	char buf[65536];

	for (;;) {
		off_t data = lseek(f->fd, f->off, SEEK_DATA);
		ssize_t n;

		/* ENXIO: nothing but a hole past off (or the end). */
		if (data < 0 && errno == ENXIO)
			return;
		if (data > f->off) {
			/* The cap dropped this much: the file's start is a hole. */
			char line[128];

			(void)snprintf(line, sizeof(line),
				       "bgrun: [%lld bytes of earlier output "
				       "dropped: over the cap]\n",
				       (long long)(data - f->off));
			f->dropped += data - f->off;
			if (!f->out_broken)
				(void)!write(2, line, strlen(line));
			f->off = data;
		}
		n = pread(f->fd, buf, sizeof(buf), f->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		f->off += n;
		put(f, buf, (size_t)n);
	}
}

/*
 * Whether no process has the file open for writing: a read lease is
 * granted only then (EAGAIN otherwise). Leases are for the file's owner
 * on file systems that have them: false when it cannot tell.
 */
static bool no_writer(const struct follow_file *f)
{
	if (fcntl(f->fd, F_SETLEASE, F_RDLCK) < 0)
		return false;
	(void)fcntl(f->fd, F_SETLEASE, F_UNLCK);
	return true;
}

int follow_run(struct follow_file *f, size_t n, int ifd, bool done_already)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t left = n;

	/*
	 * The watches are older than this look: a file with no writer now
	 * has had its last close already (its job is over, however it
	 * ended), one with a writer will say IN_CLOSE_WRITE.
	 */
	for (size_t i = 0; i < n; i++) {
		f[i].done = done_already || no_writer(&f[i]);
		drain(&f[i]);
		if (f[i].done)
			left--;
	}
	while (left > 0) {
		struct pollfd p = { .fd = ifd, .events = POLLIN };
		ssize_t len;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		len = read(ifd, ev, sizeof(ev));
		if (len < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (len <= 0)
			return len < 0 ? -errno : -EIO;
		for (char *p2 = ev; p2 < ev + len;) {
			const struct inotify_event *e = (const void *)p2;

			/* Events were lost, a close among them maybe: look. */
			for (size_t i = 0; (e->mask & IN_Q_OVERFLOW) && i < n; i++) {
				drain(&f[i]);
				if (!f[i].done && no_writer(&f[i])) {
					f[i].done = true;
					left--;
				}
			}

			for (size_t i = 0; i < n; i++) {
				if (e->wd != f[i].wd)
					continue;
				drain(&f[i]);
				if ((e->mask & IN_CLOSE_WRITE) && !f[i].done) {
					f[i].done = true;
					left--;
				}
			}
			p2 += sizeof(*e) + e->len;
		}
	}
	return 0;
}
