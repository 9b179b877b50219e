/* SPDX-License-Identifier: MIT */
/* sinkconn.c: the sink client's way to its daemon on POSIX: the Unix socket, who listens there, a daemon started on demand (its path and directory rule: sinkpath.c). */

#include "platform.h"
#include "bgrun/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int bgrun__sinkconn_open(const char *address, struct bgrun__sinkconn *ret,
			 char *err, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	char *slash;
	int fd, r;

	if (strlen(address) >= sizeof(sa.sun_path)) {
		(void)snprintf(err, size, "%s: socket path too long", address);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, address);
	/* Its directory must be ours alone, or anyone could pose as it. */
	slash = strrchr(sa.sun_path, '/');
	if (slash != NULL) {
		*slash = '\0';
		r = bgrun_sink_check_dir(slash == sa.sun_path ? "/"
							      : sa.sun_path);
		*slash = '/';
		if (r == -EPERM || r == -ENOTDIR) {
			(void)snprintf(err, size,
				       "%s: the directory is not yours "
				       "alone: not used",
				       address);
			return r;
		}
		if (r < 0) {
			(void)snprintf(err, size, "%s: %s", address,
				       strerror(-r));
			return r;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		(void)snprintf(err, size, "socket: %s", strerror(-r));
		return r;
	}
	fd = bgrun__fd_high(fd, 3);
	if (fd < 0) {
		(void)snprintf(err, size, "socket: %s", strerror(-fd));
		return fd;
	}
	/* Non-blocking: a full backlog is EAGAIN, never an endless wait. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		(void)snprintf(err, size, "%s: %s", address, strerror(-r));
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		r = -errno;
		(void)snprintf(err, size, "SO_PEERCRED: %s", strerror(-r));
		goto fail;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		r = -EPERM;
		(void)snprintf(err, size,
			       "%s: the daemon runs as uid %u: not used",
			       address, (unsigned)cred.uid);
		goto fail;
	}
	ret->fd = fd;
	return 0;
fail:
	(void)close(fd);
	return r;
}

bool bgrun__sinkconn_is_open(const struct bgrun__sinkconn *c)
{
	return c->fd >= 0;
}

/*
 * The socket is non-blocking: acks are read while frames are written,
 * so neither side can wait on the other. What is to be sent is tried
 * before any poll: a socket with room (nearly always) takes it at once,
 * and the poll is left for the answer, one system call fewer a send.
 */
int bgrun__sinkconn_step(struct bgrun__sinkconn *c, const void *out,
			 size_t out_len, size_t *ret_sent, void *in,
			 size_t in_cap, size_t *ret_got, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int r;

	*ret_sent = *ret_got = 0;
	if (out_len > 0) {
		n = send(c->fd, out, out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			*ret_sent = (size_t)n;
			return 0;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		p.events |= POLLOUT;
	}
	r = poll(&p, 1, timeout_ms);
	if (r < 0 && errno != EINTR)
		return -errno;
	if (r <= 0)
		return 0;
	if (p.revents & POLLOUT) {
		n = send(c->fd, out, out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n > 0)
			*ret_sent = (size_t)n;
	}
	if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	n = recv(c->fd, in, in_cap, MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	*ret_got = (size_t)n;
	return 0;
}

void bgrun__sinkconn_close(struct bgrun__sinkconn *c)
{
	if (c->fd >= 0)
		(void)close(c->fd);
	c->fd = -1;
}

/* The daemon says it is ready (or why it is not) on a pipe: no polling of the socket. */
int bgrun__sinkconn_start(const char *const *argv, int timeout_ms, char *line,
			  size_t size)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char **args;
	size_t n = 0, used = 0;
	int p[2], r;
	pid_t pid;

	while (argv[n] != NULL)
		n++;
	args = calloc(n + 2, sizeof(*args));
	if (args == NULL) {
		(void)snprintf(line, size, "out of memory");
		return -ENOMEM;
	}
	memcpy(args, argv, n * sizeof(*args));
	args[n] = "--ready-fd=3";
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		(void)snprintf(line, size, "pipe: %s", strerror(-r));
		free(args);
		return r;
	}
	o.argv = args;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	pid = bgrun_spawn(&o, NULL);
	(void)close(p[1]);
	free(args);
	if (pid < 0) {
		(void)close(p[0]);
		(void)snprintf(line, size, "cannot start %s: %s", argv[0],
			       bgrun_strerror(pid));
		return pid;
	}
	/* "READY PID" or "ERROR MESSAGE", then the pipe closes. */
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t got;

		r = poll(&pf, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got = read(p[0], line + used, size - 1 - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
		if (used == size - 1)
			break;
	}
	(void)close(p[0]);
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (used == 0) {
		(void)snprintf(line, size, "no word from it");
		return -EIO;
	}
	return 0;
}

int bgrun__file_identity(const char *path, int64_t *ret_dev, int64_t *ret_ino)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*ret_dev = (int64_t)st.st_dev;
	*ret_ino = (int64_t)st.st_ino;
	return 0;
}
