/* SPDX-License-Identifier: MIT */
/* serve-socket.c: the daemon's POSIX half: the socket (its directory, the one-daemon lock, binding it, or taking systemd's), SO_PEERCRED, SIGTERM for --stop, --detach. */

#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The first descriptor systemd passes (sd_listen_fds(3)). */
#define LISTEN_FDS_START 3

/* Whether dir is below $XDG_RUNTIME_DIR, where directories may be made. */
static bool in_runtime_dir(const char *dir)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	size_t n;

	if (rt == NULL || rt[0] != '/')
		return false;
	n = strlen(rt);
	while (n > 1 && rt[n - 1] == '/')
		n--;
	return strncmp(dir, rt, n) == 0 && dir[n] == '/';
}

/*
 * The directory of the socket: made 0700 if missing, but its parents only
 * below $XDG_RUNTIME_DIR (a mistyped --socket must not leave a tree of
 * directories elsewhere); it must be ours alone.
 */
static int prepare_dir(struct lsink_serve *s)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat st;
	int r;

	(void)snprintf(dir, sizeof(dir), "%s", s->socket);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return 0; /* the current directory: the user chose it */
	*slash = '\0';
	if (dir[0] == '\0')
		return lsink_serve_fail(s, "'%s': a socket in / is refused",
				    lsink_printable(s->socket));
	if (in_runtime_dir(dir))
		r = bgrun_mkdir_p(dir, 0700);
	else
		r = mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : -errno;
	if (r == -ENOENT)
		return lsink_serve_fail(s, "cannot create '%s': its parent "
				    "directory does not exist",
				    lsink_printable(dir));
	if (r < 0 && r != -ENOTDIR)
		return lsink_serve_fail(s, "cannot create '%s': %s",
				    lsink_printable(dir), bgrun_strerror(r));
	/* The clients' own rule: never serve where they would not connect. */
	r = bgrun_sink_check_dir(dir);
	if (r < 0 && r != -EPERM && r != -ENOTDIR)
		return lsink_serve_fail(s, "'%s': %s", lsink_printable(dir),
				    bgrun_strerror(r));
	if (r < 0 && lstat(dir, &st) < 0)
		return lsink_serve_fail(s, "'%s': %s", lsink_printable(dir),
				    strerror(errno));
	if (r < 0)
		return lsink_serve_fail(
			s,
			"'%s' must be a directory of yours with "
			"mode 0700 (it is %s, mode %04o, owner uid %u): "
			"%s, or set BGRUN_SOCKET or XDG_RUNTIME_DIR elsewhere",
			lsink_printable(dir),
			S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
			(unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			st.st_uid == geteuid() && S_ISDIR(st.st_mode)
				? "chmod 0700 it"
				: "have it removed");
	return 0;
}

/* One daemon per socket: an flock on SOCKET.lock, held while we live. */
static int take_lock(struct lsink_serve *s)
{
	char path[PATH_MAX], pid[32] = "";
	ssize_t n = 0;

	(void)snprintf(path, sizeof(path), "%s.lock", s->socket);
	s->lock_fd =
		open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->lock_fd < 0)
		return lsink_serve_fail(s, "cannot open '%s': %s",
				    lsink_printable(path), strerror(errno));
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		n = pread(s->lock_fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return lsink_serve_fail(s,
				    "another logsink serve%s%s%s is already "
				    "serving '%s'",
				    pid[0] ? " (pid " : "", pid,
				    pid[0] ? ")" : "",
				    lsink_printable(s->socket));
	}
	/* Only informative: who holds the lock, for the message above. */
	(void)snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(s->lock_fd, 0) == 0)
		n = pwrite(s->lock_fd, pid, strlen(pid), 0);
	(void)n;
	return 0;
}

static int bind_socket(struct lsink_serve *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, r;

	/* libuv 1.44 would truncate a long path silently: check it here. */
	if (strlen(s->socket) >= sizeof(sa.sun_path))
		return lsink_serve_fail(s,
				    "socket path too long (%zu bytes, at most "
				    "%zu): '%s'",
				    strlen(s->socket), sizeof(sa.sun_path) - 1,
				    lsink_printable(s->socket));
	strcpy(sa.sun_path, s->socket);
	if (prepare_dir(s) < 0 || take_lock(s) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return lsink_serve_fail(s, "socket: %s", strerror(errno));
	if (lstat(s->socket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			(void)close(fd);
			return lsink_serve_fail(s,
					    "'%s' exists and is not a socket",
					    lsink_printable(s->socket));
		}
		/* We hold the lock: a socket that answers is not ours. */
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		if (r == 0 || errno == EAGAIN) {
			(void)close(fd);
			return lsink_serve_fail(s,
					    "something already listens on '%s'",
					    lsink_printable(s->socket));
		}
		(void)close(fd);
		(void)unlink(s->socket); /* stale: its daemon is gone */
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd < 0)
			return lsink_serve_fail(s, "socket: %s", strerror(errno));
	}
	old = umask(0177); /* born 0600: never a moment more open */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	(void)umask(old);
	if (r < 0 || chmod(s->socket, 0600) < 0 || listen(fd, 256) < 0 ||
	    stat(s->socket, &st) < 0) {
		r = errno;
		(void)close(fd);
		return lsink_serve_fail(s, "cannot listen on '%s': %s",
				    lsink_printable(s->socket), strerror(r));
	}
	s->sock_ino = st.st_ino;
	s->listen_fd = fd;
	return 0;
}

/* systemd socket activation: LISTEN_PID is us, LISTEN_FDS >= 1. */
static int activated_socket(struct lsink_serve *s)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	int type = 0, listening = 0;
	socklen_t ilen = sizeof(int);

	if (pid == NULL || fds == NULL || atol(pid) != (long)getpid() ||
	    atoi(fds) < 1)
		return 0;
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
	if (getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type, &ilen) <
		    0 ||
	    type != SOCK_STREAM ||
	    getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_ACCEPTCONN, &listening,
		       &ilen) < 0 ||
	    !listening ||
	    getsockname(LISTEN_FDS_START, (struct sockaddr *)&sa, &len) < 0 ||
	    sa.sun_family != AF_UNIX)
		return lsink_serve_fail(s,
				    "LISTEN_FDS: descriptor %d is not a "
				    "listening Unix stream socket",
				    LISTEN_FDS_START);
	(void)fcntl(LISTEN_FDS_START, F_SETFD, FD_CLOEXEC);
	free(s->socket);
	s->socket = strndup(sa.sun_path,
			    len - offsetof(struct sockaddr_un, sun_path));
	if (s->socket == NULL)
		return lsink_serve_fail(s, "out of memory");
	s->listen_fd = LISTEN_FDS_START;
	s->activated = true;
	return 1;
}

int lsink_serve_listen(struct lsink_serve *s)
{
	int r;

	/* A client that vanishes must not kill us: EPIPE is enough. */
	(void)signal(SIGPIPE, SIG_IGN);
	s->srv.uid = geteuid();
	r = activated_socket(s);
	return r < 0 || (r == 0 && bind_socket(s) < 0) ? -1 : 0;
}

int lsink_serve_listen_start(struct lsink_serve *s)
{
	struct lsink_server *srv = &s->srv;
	int r;

	if ((r = uv_pipe_init(&srv->loop, &srv->listener, 0)) < 0 ||
	    (r = uv_pipe_open(&srv->listener, s->listen_fd)) < 0 ||
	    (r = uv_listen((uv_stream_t *)&srv->listener, 256,
			   lsink_conn_accept)) < 0)
		return lsink_serve_fail(s, "listening on '%s': %s",
				    lsink_printable(s->socket), uv_strerror(r));
	s->listen_fd = -1; /* the listener's now */
	return 0;
}

/* SIGTERM and SIGINT are all there is: serve.c's uv_signal handles. */
int lsink_serve_stoppers_start(struct lsink_serve *s)
{
	(void)s;
	return 0;
}

void lsink_serve_stoppers_end(struct lsink_server *srv)
{
	(void)srv;
}

void lsink_serve_unlisten(struct lsink_serve *s)
{
	struct stat st;

	if (s->listen_fd >= 0)
		(void)close(s->listen_fd);
	s->listen_fd = -1;
	/* Our socket only: a successor may have bound the path already. */
	if (!s->activated && s->sock_ino != 0 && stat(s->socket, &st) == 0 &&
	    st.st_ino == s->sock_ino)
		(void)unlink(s->socket);
	s->sock_ino = 0;
	if (s->lock_fd >= 0)
		(void)close(s->lock_fd);
	s->lock_fd = -1;
}

/*
 * SIGTERM, then the wait: the daemon lets its lock on SOCKET.lock go as
 * it finishes, then exits; the process itself is waited for too (a pidfd
 * of it, taken before the signal: the pid cannot be another's by then),
 * so that a caller told it stopped finds it gone.
 */
int lsink_serve_stop_pid(const char *path, int64_t pid, int wait_ms,
			 char *err, size_t size)
{
	char *lock = NULL;
	int fd, pidfd = -1, r = -1, waited = 0;

	if (asprintf(&lock, "%s.lock", path) < 0) {
		(void)snprintf(err, size, "out of memory");
		return -1;
	}
	fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(lock);
#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
	if (kill((pid_t)pid, SIGTERM) < 0) {
		(void)snprintf(err, size, "cannot stop the daemon (pid %lld): %s",
			       (long long)pid, strerror(errno));
		goto out;
	}
	/* Wait, with a deadline: a daemon draining a full queue takes a while. */
	for (; fd >= 0; waited += 10) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			break;
		if (waited >= wait_ms)
			goto late;
		(void)nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int n;

		do
			n = poll(&p, 1, wait_ms > waited ? wait_ms - waited : 0);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			goto late;
	}
	r = 0;
	goto out;
late:
	(void)snprintf(err, size, "the daemon (pid %lld) did not exit within %d s",
		       (long long)pid, wait_ms / 1000);
out:
	if (fd >= 0)
		(void)close(fd);
	if (pidfd >= 0)
		(void)close(pidfd);
	return r;
}

bool lsink_serve_ready_fd_ok(int fd)
{
	return fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

int lsink_serve_file_identity(const char *path, int64_t *ret_dev,
			      int64_t *ret_ino)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*ret_dev = (int64_t)st.st_dev;
	*ret_ino = (int64_t)st.st_ino;
	return 0;
}

int lsink_conn_peer(struct lsink_server *srv, uv_pipe_t *pipe,
		    struct lsink_peer *ret)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	ret->uid = cred.uid;
	ret->pid = cred.pid;
	ret->allowed = (int64_t)cred.uid == srv->uid ||
		       (cred.uid == 0 && srv->lim.allow_root);
	(void)snprintf(ret->who, sizeof(ret->who), "uid %u (pid %d)",
		       (unsigned)cred.uid, (int)cred.pid);
	return 0;
}

/* --detach: ourselves again, --foreground, through the primitive. */
int lsink_serve_detach(int argc, char **argv, const char *db)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char **args = calloc((size_t)argc + 6, sizeof(*args));
	char exe[PATH_MAX], line[1100];
	size_t n = 0, used = 0;
	ssize_t len;
	int p[2] = { -1, -1 }, status = LSINK_EXIT_FAILURE;
	pid_t pid;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (args == NULL || len <= 0 || pipe2(p, O_CLOEXEC) < 0) {
		lsink_msg("cannot detach: %s",
			  strerror(errno ? errno : ENOMEM));
		goto cleanup;
	}
	exe[len] = '\0';
	args[n++] = exe;
	if (db != NULL) {
		args[n++] = "--db";
		args[n++] = db;
	}
	args[n++] = "serve";
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--detach") != 0)
			args[n++] = argv[i];
	args[n++] = "--foreground";
	args[n++] = "--ready-fd=3";
	o.argv = args;
	o.pass_fds = &p[1];
	o.n_pass_fds = 1;
	pid = bgrun_spawn(&o, NULL);
	(void)close(p[1]);
	if (pid < 0) {
		lsink_msg("cannot start '%s': %s", exe, bgrun_strerror(pid));
		goto cleanup;
	}
	/* Its word when it listens, or why it cannot; EOF if it died. */
	while (used < sizeof(line) - 1) {
		len = read(p[0], line + used, sizeof(line) - 1 - used);
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0)
			break;
		used += (size_t)len;
	}
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (strncmp(line, "READY ", 6) == 0) {
		(void)printf("%s\n", line + 6);
		status = lsink_flush_stdout();
	} else if (strncmp(line, "ERROR ", 6) == 0) {
		/* It said why on its stderr too, which is not ours. */
		(void)fprintf(stderr, "logsink: %s\n", line + 6);
	} else {
		lsink_msg("the daemon exited before listening");
	}
cleanup:
	if (p[0] >= 0)
		(void)close(p[0]);
	free(args);
	return status;
}
