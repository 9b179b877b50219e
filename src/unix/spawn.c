/* SPDX-License-Identifier: MIT */
/* spawn.c: the runbgcommand primitive on posix_spawn; the only place that starts processes. */

#include "platform.h"
#include "sigall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if HAVE_PIDFD_OPEN
#include <sys/pidfd.h>
#endif

/*
 * Why posix_spawn: glibc implements it with clone(CLONE_VM|CLONE_VFORK), so
 * no page table is copied (the cost does not grow with the caller's
 * memory), the child runs only glibc's own code between clone and execve,
 * and exec failures come back synchronously with the child already reaped.
 * Everything that can fail in a way the caller wants to hear about (opening
 * files, the working directory, finding the program) is done here, in the
 * parent, before spawning; the file actions left for the child are dup2,
 * fchdir and closefrom, which cannot fail on valid descriptors, and the
 * opening of /dev/null where the library's own descriptor on it cannot
 * serve (shared_actions). A program given by its path is left to execve
 * when nothing is opened before it (check_first).
 */

#define DEFAULT_PATH "/bin:/usr/bin"

/*
 * The descriptors the parent prepared for the child, closed after spawn.
 * Every one of them is numbered `low` or above, where low = 3 + the
 * number of pass_fds: the dup2 actions onto 0, 1, 2, 3, ... can then never
 * overwrite a source that is still to be used (a caller whose own 0, 1 or
 * 2 are closed would otherwise hand us those numbers).
 */
struct wiring {
	int low;
	int fd[3];     /* source for 0, 1, 2; -1: none (see connect_stdio) */
	int *pass;     /* sources for 3, 4, ... (n_pass of them) */
	size_t n_pass;
	int cwd_fd;    /* O_PATH directory or -1 */
};

static void wiring_close(struct wiring *w)
{
	for (int i = 0; i < 3; i++)
		if (w->fd[i] >= 0)
			(void)close(w->fd[i]);
	for (size_t i = 0; i < w->n_pass; i++)
		if (w->pass[i] >= 0)
			(void)close(w->pass[i]);
	free(w->pass);
	if (w->cwd_fd >= 0)
		(void)close(w->cwd_fd);
}

static int open_high(const char *path, int flags, mode_t mode, int low)
{
	int fd;

	do
		fd = open(path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	return bgrun__fd_high(fd, low);
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * stdin bytes live in an anonymous file (a memfd, else an unlinked
 * temporary file), never in a pipe: the caller never blocks, whatever the
 * size, and the child can even seek it (Mercurial's stdin_bytes does the
 * same with a temporary file).
 */
static int bytes_file(const void *bytes, size_t len, int low)
{
	int fd = -1, r;

#if HAVE_MEMFD_CREATE
	fd = memfd_create("bgrun-stdin", MFD_CLOEXEC);
	if (fd < 0)
		fd = -errno;
#endif
	if (fd < 0) {
		const char *dir = getenv("TMPDIR");

		if (dir == NULL || dir[0] == '\0')
			dir = "/tmp";
		fd = open_high(dir, O_TMPFILE | O_RDWR, 0600, low);
		if (fd < 0) {
			char tmpl[PATH_MAX];

			if (snprintf(tmpl, sizeof(tmpl), "%s/bgrun-stdin-XXXXXX",
				     dir) >= (int)sizeof(tmpl))
				return -ENAMETOOLONG;
			fd = mkostemp(tmpl, O_CLOEXEC);
			if (fd < 0)
				return -errno;
			(void)unlink(tmpl);
		}
	}
	fd = bgrun__fd_high(fd, low);
	if (fd < 0)
		return fd;
	r = write_all(fd, bytes, len);
	if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0) {
		(void)close(fd);
		return r;
	}
	return fd;
}

static int dup_high(int fd, int low)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, low);

	return h < 0 ? -errno : h;
}

/*
 * Prepares the source descriptor for the child's `target` (0, 1 or 2) from
 * *s: *ret_fd is a descriptor of ours, or -1 when the file actions need
 * none (/dev/null is opened by the child, stderr joins stdout there).
 */
static int connect_stdio(const struct bgrun_stdio *s, int target, int low,
			 int *ret_fd)
{
	int fd;

	*ret_fd = -1;
	switch (s->kind) {
	case BGRUN_STDIO_NULL:
	case BGRUN_STDIO_STDOUT:
		return 0;
	case BGRUN_STDIO_INHERIT:
		/* A closed descriptor of the caller becomes /dev/null. */
		if (fcntl(target, F_GETFD) < 0)
			return 0;
		fd = dup_high(target, low);
		break;
	case BGRUN_STDIO_FD:
		fd = dup_high(s->fd, low);
		break;
	case BGRUN_STDIO_FILE:
		/*
		 * O_NONBLOCK, so that a FIFO never blocks the launch: for
		 * writing one no process reads fails with ENXIO, for reading
		 * one opens at once (the child reads what writers write, and
		 * EOF while none has it open). Then cleared: the child's
		 * descriptor blocks as it would have.
		 */
		if (target == 0)
			fd = open_high(s->path, O_RDONLY | O_NONBLOCK, 0, low);
		else
			fd = open_high(s->path,
				       O_WRONLY | O_CREAT | O_NONBLOCK |
					       (s->append ? O_APPEND : O_TRUNC),
				       0666, low);
		if (fd >= 0 && fcntl(fd, F_SETFL,
				     fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
			int e = -errno;

			(void)close(fd);
			fd = e;
		}
		break;
	case BGRUN_STDIO_BYTES:
		if (s->len == 0)
			return 0;
		fd = bytes_file(s->bytes, s->len, low);
		break;
	default:
		return -EINVAL;
	}
	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

static const char *env_get(char **envp, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=')
			return envp[i] + len + 1;
	return NULL;
}

/*
 * Can `path` (relative to cwd_fd) be executed? 0 if it is a regular file
 * we may execute; -EACCES if it exists but is not; else the stat error.
 * The exec itself can still fail (ENOEXEC, E2BIG), but checking first
 * spares the caller's output files from being opened (and truncated) for
 * a program that cannot run.
 */
static int check_program(int cwd_fd, const char *path)
{
	struct stat st;

	if (fstatat(cwd_fd, path, &st, 0) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) ||
	    faccessat(cwd_fd, path, X_OK, AT_EACCESS) < 0)
		return -EACCES;
	return 0;
}

/*
 * execvpe(3)'s search, done in the parent with the child's PATH and
 * relative to the child's working directory: the first regular executable
 * file wins; a candidate that exists but cannot be executed makes the
 * result EACCES if nothing better is found; errors that mean "not here" go
 * on to the next entry, any other error stops the search.
 */
static int find_program(const char *file, char **envp, int cwd_fd,
			bool check, char *buf, size_t size, const char **ret_path)
{
	const char *path, *p, *end;
	bool eacces = false;
	size_t flen = strlen(file);
	int r;

	if (flen == 0)
		return -ENOENT;
	if (strchr(file, '/') != NULL) {
		r = check ? check_program(cwd_fd, file) : 0;
		if (r < 0)
			return r;
		*ret_path = file;
		return 0;
	}
	path = env_get(envp, "PATH");
	if (path == NULL)
		path = DEFAULT_PATH;
	for (p = path;; p = end + 1) {
		size_t dlen;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		/*
		 * An empty entry means the working directory, as in execvp;
		 * spell it "." so that the result stays a path for execve.
		 */
		if (dlen == 0) {
			p = ".";
			dlen = 1;
		}
		if (dlen + 1 + flen + 1 > size)
			goto next;
		memcpy(buf, p, dlen);
		buf[dlen] = '/';
		memcpy(buf + dlen + 1, file, flen + 1);
		r = check_program(cwd_fd, buf);
		if (r == 0) {
			*ret_path = buf;
			return 0;
		}
		if (r == -EACCES)
			eacces = true;
		else if (r != -ENOENT && r != -ENOTDIR && r != -ENAMETOOLONG &&
			 r != -ELOOP && r != -ESTALE && r != -ENODEV &&
			 r != -ETIMEDOUT)
			return r;
next:
		if (*end == '\0')
			break;
	}
	return eacces ? -EACCES : -ENOENT;
}

/* Closes every descriptor >= low in the child: closefrom, or a list. */
static int add_closefrom(posix_spawn_file_actions_t *fa, int low)
{
#if HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP
	return -posix_spawn_file_actions_addclosefrom_np(fa, low);
#else
	/*
	 * Fallback: close what is open now. A descriptor another thread opens
	 * between this scan and the spawn is not in the list; the library's
	 * own descriptors are close-on-exec, so only such a caller's
	 * descriptor without O_CLOEXEC could slip through.
	 */
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int r = 0;

	if (d == NULL) {
		struct rlimit rl;
		long max = 1024;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY)
			max = (long)rl.rlim_cur;
		for (long fd = low; fd < max && r == 0; fd++)
			r = -posix_spawn_file_actions_addclose(fa, (int)fd);
		return r;
	}
	while (r == 0 && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd >= low && fd != dirfd(d))
			r = -posix_spawn_file_actions_addclose(fa, fd);
	}
	(void)closedir(d);
	return r;
#endif
}

static int add_fd_actions(posix_spawn_file_actions_t *fa,
			  const struct bgrun__req *req, const struct wiring *w)
{
	const struct bgrun_stdio *s[3] = { &req->in, &req->out, &req->err };
	int null_stream = -1, r = 0; /* the child's stream opened on /dev/null */

	/*
	 * The streams without a source of ours are /dev/null, opened once in
	 * the child (read-write, as daemon(3) does) and dup2'd to the others:
	 * a dup2 costs far less than a path lookup, and the caller waits for
	 * the child's actions.
	 */
	for (int i = 0; i < 3 && r == 0; i++) {
		if (w->fd[i] >= 0) {
			r = posix_spawn_file_actions_adddup2(fa, w->fd[i], i);
		} else if (s[i]->kind == BGRUN_STDIO_STDOUT) {
			r = posix_spawn_file_actions_adddup2(fa, 1, 2);
		} else if (null_stream >= 0) {
			r = posix_spawn_file_actions_adddup2(fa, null_stream, i);
		} else {
			r = posix_spawn_file_actions_addopen(fa, i, "/dev/null",
							     O_RDWR, 0);
			null_stream = i;
		}
	}
	for (size_t i = 0; i < w->n_pass && r == 0; i++)
		r = posix_spawn_file_actions_adddup2(fa, w->pass[i], 3 + (int)i);
	if (r != 0)
		return -r;
	return add_closefrom(fa, w->low);
}

#if !HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDFCHDIR_NP && \
	!HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCHDIR_NP
/*
 * Fallback without a chdir file action: a shell changes directory, then
 * execs the program. bash's `exec -a` keeps the caller's argv[0]; a system
 * without bash gets /bin/sh, and the program's path as its argv[0].
 */
#define CHDIR_SCRIPT_BASH \
	"cd -- \"$1\" || exit 126; a=$2 p=$3; shift 3; exec -a \"$a\" \"$p\" \"$@\""
#define CHDIR_SCRIPT_SH "cd -- \"$1\" || exit 126; p=$3; shift 3; exec \"$p\" \"$@\""
#endif

#if HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP
/*
 * The file actions of a launch with its stdio on /dev/null, no descriptor
 * passed and no working directory, the usual background launch, are
 * always the same: they are built once. Each action glibc adds checks
 * its descriptor against RLIMIT_NOFILE, a system call, and allocates.
 *
 * They dup2 a /dev/null of ours, opened once (read-write, close-on-exec,
 * above 2), onto 0, 1 and 2: the child then does three dup2 where it
 * would close 0, look the path up and open it (6 us of the caller's
 * wait in spawn-latency --parts, docs/benchmarks.md). A caller may close
 * descriptors it did not open, and a file of its own may then get that
 * number: so each launch first checks, with one fstat, that the number
 * is still this /dev/null (the same device and inode), and otherwise
 * builds its actions as if there were none shared, opening /dev/null in
 * the child.
 * THREAD SAFETY: built under pthread_once, then only read (posix_spawn
 * takes its actions const); a forked child inherits them built, and the
 * descriptor with them.
 */
static pthread_once_t null_fa_once = PTHREAD_ONCE_INIT;
static posix_spawn_file_actions_t null_fa;
static bool null_fa_ready;
static int null_fd = -1;     /* the descriptor null_fa dup2s, or -1 */
static dev_t null_dev;
static ino_t null_ino;

/* Our /dev/null for null_fa (its identity kept for null_fd_ours), or -1. */
static int open_null(void)
{
	struct stat st;
	int fd = open_high("/dev/null", O_RDWR, 0, 3);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
		(void)close(fd);
		return -1;
	}
	null_dev = st.st_dev;
	null_ino = st.st_ino;
	return fd;
}

static void null_fa_init(void)
{
	static const struct bgrun__req req; /* every stdio kind NULL */
	/* Without a /dev/null to keep (a chroot without it?), the child opens it. */
	int fd = open_null();
	const struct wiring w = { .low = 3, .fd = { fd, fd, fd }, .cwd_fd = -1 };

	if (posix_spawn_file_actions_init(&null_fa) != 0)
		goto fail;
	if (add_fd_actions(&null_fa, &req, &w) < 0) {
		(void)posix_spawn_file_actions_destroy(&null_fa);
		goto fail;
	}
	null_fd = fd;
	null_fa_ready = true;
	return;
fail:
	if (fd >= 0)
		(void)close(fd);
}

/* Whether null_fa's descriptor is still the /dev/null it opened. */
static bool null_fd_ours(void)
{
	struct stat st;

	return null_fd < 0 ||
	       (fstat(null_fd, &st) == 0 && st.st_dev == null_dev &&
		st.st_ino == null_ino);
}
#endif

/* The shared actions for w, if it is the all-/dev/null case; else NULL. */
static const posix_spawn_file_actions_t *shared_actions(const struct wiring *w)
{
#if HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP
	if (w->cwd_fd >= 0 || w->n_pass > 0 || w->low != 3 || w->fd[0] >= 0 ||
	    w->fd[1] >= 0 || w->fd[2] >= 0)
		return NULL;
	(void)pthread_once(&null_fa_once, null_fa_init);
	return null_fa_ready && null_fd_ours() ? &null_fa : NULL;
#else
	/* Without closefrom, the list of what to close changes every time. */
	(void)w;
	return NULL;
#endif
}

static int do_spawn(const struct bgrun__req *req, const struct wiring *w,
		    const char *path, pid_t *ret_pid)
{
	const posix_spawn_file_actions_t *shared = shared_actions(w);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t set;
	char **argv = req->argv;
	int r;

	r = posix_spawn_file_actions_init(&fa);
	if (r != 0)
		return -r;
	r = posix_spawnattr_init(&attr);
	if (r != 0) {
		(void)posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	if (w->cwd_fd >= 0) {
#if HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDFCHDIR_NP
		r = -posix_spawn_file_actions_addfchdir_np(&fa, w->cwd_fd);
#elif HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCHDIR_NP
		r = -posix_spawn_file_actions_addchdir_np(&fa, req->cwd);
#else
		bool bash = access("/bin/bash", X_OK) == 0;
		size_t n = 0;

		while (req->argv[n] != NULL)
			n++;
		/* sh -c SCRIPT NAME DIR ARGV0 PATH ARGV[1..] NULL */
		argv = malloc((n + 7) * sizeof(*argv));
		if (argv == NULL) {
			r = -ENOMEM;
		} else {
			argv[0] = (char *)(bash ? "/bin/bash" : "/bin/sh");
			argv[1] = (char *)"-c";
			argv[2] = (char *)(bash ? CHDIR_SCRIPT_BASH : CHDIR_SCRIPT_SH);
			argv[3] = (char *)"bgrun-cd";
			argv[4] = (char *)req->cwd;
			argv[5] = req->argv[0];
			argv[6] = (char *)path;
			for (size_t i = 1; i <= n; i++)
				argv[6 + i] = req->argv[i];
			path = argv[0];
		}
#endif
	}
	if (r == 0 && shared == NULL)
		r = add_fd_actions(&fa, req, w);
	/*
	 * The child starts with an empty mask and every signal at its
	 * default, whatever the calling thread blocks or the process ignores
	 * (ignored dispositions survive execve, handlers do not).
	 */
	(void)sigemptyset(&set);
	if (r == 0)
		r = -posix_spawnattr_setsigmask(&attr, &set);
	bgrun__sigset_all(&set);
	if (r == 0)
		r = -posix_spawnattr_setsigdefault(&attr, &set);
	if (r == 0)
		r = -posix_spawnattr_setflags(
			&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				       (req->detach ? POSIX_SPAWN_SETSID
						    : req->new_pgroup
							      ? POSIX_SPAWN_SETPGROUP
							      : 0));
	if (r == 0)
		r = -posix_spawn(ret_pid, path, shared != NULL ? shared : &fa,
				 &attr, argv, req->envp);
	if (argv != req->argv)
		free(argv);
	(void)posix_spawnattr_destroy(&attr);
	(void)posix_spawn_file_actions_destroy(&fa);
	return r;
}

/* A pidfd for a child of ours (not reaped, so its pid is its own), or -1. */
static int open_pidfd(pid_t pid)
{
	int fd = -1;

#if HAVE_PIDFD_OPEN
	fd = pidfd_open(pid, 0);
	if (fd >= 0)
		fd = bgrun__fd_high(fd, 3);
#endif
	return fd < 0 ? -1 : fd;
}

static int fail(struct bgrun_failure *failure, enum bgrun_stage stage, int r)
{
	if (failure != NULL) {
		failure->stage = stage;
		failure->error = r;
	}
	return r;
}

/*
 * Whether a program given by its path must be checked before the launch,
 * rather than left to execve: when the launch opens a file by name (an
 * output file is created or truncated, so a program that cannot run must
 * be found out before the damage; and its error comes first, whatever the
 * files), and when a shell changes directory for the child (the shell
 * would turn execve's error into an exit status).
 */
static bool check_first(const struct bgrun__req *req)
{
#if !HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDFCHDIR_NP && \
	!HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCHDIR_NP
	if (req->cwd != NULL)
		return true;
#endif
	return req->in.kind == BGRUN_STDIO_FILE ||
	       req->out.kind == BGRUN_STDIO_FILE ||
	       req->err.kind == BGRUN_STDIO_FILE;
}

/*
 * What every launch checks before touching the caller's files: the
 * working directory (opened into w->cwd_fd) and the program (*ret_path,
 * in buf or req->file). A path with a slash is checked only when `check`:
 * otherwise execve reports the same errors (ENOENT, EACCES for a
 * directory or a file without execute permission, ENOTDIR, ELOOP...), at
 * the same stage, for two system calls less on the caller's clock.
 */
static int resolve(const struct bgrun__req *req, struct wiring *w, bool check,
		   char *buf, size_t size, const char **ret_path,
		   struct bgrun_failure *failure)
{
	int r;

	if (req->cwd != NULL) {
		w->cwd_fd = open_high(req->cwd, O_PATH | O_DIRECTORY, 0, w->low);
		if (w->cwd_fd < 0)
			return fail(failure, BGRUN_STAGE_CWD, w->cwd_fd);
		/* fchdir needs search permission, which O_PATH did not check. */
		if (faccessat(w->cwd_fd, ".", X_OK, AT_EACCESS) < 0)
			return fail(failure, BGRUN_STAGE_CWD, -errno);
	}
	r = find_program(req->file, req->envp,
			 w->cwd_fd >= 0 ? w->cwd_fd : AT_FDCWD, check, buf,
			 size, ret_path);
	return r < 0 ? fail(failure, BGRUN_STAGE_EXEC, r) : 0;
}

int bgrun__platform_resolve(const struct bgrun__req *req, char **ret_path,
			    struct bgrun_failure *failure)
{
	struct wiring w = { .low = 3, .fd = { -1, -1, -1 }, .cwd_fd = -1 };
	char buf[PATH_MAX], *copy;
	const char *path = NULL;
	int r;

	r = resolve(req, &w, true, buf, sizeof(buf), &path, failure);
	wiring_close(&w);
	if (r < 0)
		return r;
	copy = strdup(path);
	if (copy == NULL)
		return fail(failure, BGRUN_STAGE_SETUP, -ENOMEM);
	*ret_path = copy;
	return 0;
}

int bgrun__platform_spawn(const struct bgrun__req *req,
			  struct bgrun__proc *ret_proc,
			  struct bgrun_failure *failure)
{
	const struct bgrun_stdio *s[3] = { &req->in, &req->out, &req->err };
	static const enum bgrun_stage stages[3] = {
		BGRUN_STAGE_STDIN, BGRUN_STAGE_STDOUT, BGRUN_STAGE_STDERR
	};
	struct wiring w = { .low = 3 + (int)req->n_pass_fds,
			    .fd = { -1, -1, -1 },
			    .cwd_fd = -1 };
	struct bgrun__proc proc = BGRUN__PROC_INIT;
	char buf[PATH_MAX];
	const char *path = NULL;
	int r;

	r = resolve(req, &w, check_first(req), buf, sizeof(buf), &path,
		    failure);
	if (r < 0)
		goto out;
	for (int i = 0; i < 3; i++) {
		r = connect_stdio(s[i], i, w.low, &w.fd[i]);
		if (r < 0) {
			r = fail(failure, stages[i], r);
			goto out;
		}
	}
	if (req->n_pass_fds > 0) {
		w.pass = malloc(req->n_pass_fds * sizeof(*w.pass));
		if (w.pass == NULL) {
			r = fail(failure, BGRUN_STAGE_SETUP, -ENOMEM);
			goto out;
		}
		for (; w.n_pass < req->n_pass_fds; w.n_pass++) {
			w.pass[w.n_pass] = dup_high(req->pass_fds[w.n_pass], w.low);
			if (w.pass[w.n_pass] < 0) {
				r = fail(failure, BGRUN_STAGE_SETUP,
					 w.pass[w.n_pass]);
				goto out;
			}
		}
	}
	proc.start_realtime_ns = bgrun__now_ns(CLOCK_REALTIME);
	proc.start_mono_ns = bgrun__now_ns(CLOCK_MONOTONIC);
	r = do_spawn(req, &w, path, &proc.pid);
	if (r < 0) {
		r = fail(failure, BGRUN_STAGE_EXEC, r);
		goto out;
	}
	proc.os.pidfd = open_pidfd(proc.pid);
	*ret_proc = proc;
	r = 0;
out:
	wiring_close(&w);
	return r;
}
