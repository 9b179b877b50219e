/* SPDX-License-Identifier: MIT */
/* platform.h: the platform interface: what src/unix/ (and src/win/) implement and the shared code calls. */

#ifndef BGRUN_PLATFORM_H
#define BGRUN_PLATFORM_H

#include "bgrun/spawn.h"
#include "common/common.h"

#include <sys/types.h>

/*
 * One launch, fully resolved from the options: the exact argv and envp
 * to execute and the stdio wiring. In the synchronous path the strings are
 * borrowed from the caller; for a queued launch everything lives in one
 * block owned by the request (arena).
 */
struct bgrun__req {
	const char *file;        /* the program to find (argv[0] or /bin/sh) */
	char **argv;             /* NULL-terminated */
	char **envp;             /* NULL-terminated */
	const char *cwd;         /* NULL: the caller's */
	struct bgrun_stdio in, out, err;
	const int *pass_fds;
	size_t n_pass_fds;
	bool detach;
	bool new_pgroup;
	void *arena;             /* owns everything above when non-NULL */
	/*
	 * A queued launch cannot borrow the caller's descriptors past the
	 * call: it owns duplicates of in/out/err.fd (kind FD) and of pass_fds.
	 */
	bool owns_fds;
};

/* What a successful platform launch produced. */
struct bgrun__proc {
	pid_t pid;
	int pidfd;                /* -1 when pidfds are unavailable */
	int64_t start_realtime_ns;
	int64_t start_mono_ns;
};

/*
 * PLATFORM (spawn-posix.c): launch req; on failure, *failure gets the stage
 * and nothing is left behind.
 */
int bgrun__platform_spawn(const struct bgrun__req *req,
			  struct bgrun__proc *ret_proc,
			  struct bgrun_failure *failure);
/* The program req would execute, as bgrun_spawn_resolve. */
int bgrun__platform_resolve(const struct bgrun__req *req, char **ret_path,
			    struct bgrun_failure *failure);
/*
 * Reaps proc if it has ended: 1 and *ret_status filled; 0 if still running
 * (only with nohang); -errno on error (-ECHILD: reaped by someone else).
 */
int bgrun__platform_reap(struct bgrun__proc *proc, bool nohang,
			 struct bgrun_status *ret_status);
/* Waits up to timeout_ms (< 0: forever) for proc to be reapable. */
int bgrun__platform_wait_ready(const struct bgrun__proc *proc, int timeout_ms);
int bgrun__platform_kill(const struct bgrun__proc *proc, int sig);
void bgrun__platform_close(struct bgrun__proc *proc);

/*
 * procinfo.c: facts about this machine and its processes. Strings live
 * until the process exits and never change; NULL when unknown.
 */
const char *bgrun__boot_id(void);
const char *bgrun__host_name(void);
int64_t bgrun__user_id(void);
const char *bgrun__user_name(int64_t uid);
/* len random bytes: the platform's generator, else a unique mix. */
void bgrun__random_bytes(unsigned char *buf, size_t len);
/* The start time of process pid (opaque units), or BGRUN_NULL if none. */
int64_t bgrun__proc_starttime(int64_t pid);
/* Whether a `running` row with these fields has lost its supervisor. */
bool bgrun__supervisor_gone(const char *boot_id, int64_t supervisor_pid,
			    int64_t supervisor_start);

/*
 * Moves a descriptor of the library's own (consumed, even on error) to
 * `low` or above, close-on-exec: a caller that closed its 0, 1 or 2 must
 * never find a library descriptor there.
 */
int bgrun__fd_high(int fd, int low);

/* Writes all len bytes of buf to fd, retrying on EINTR: 0 or -errno. */
int bgrun__fd_write_all(int fd, const void *buf, size_t len);

/*
 * fs.c: mkdir -p: makes path and its missing parents, each new one with
 * mode (less the umask). 0 when path is a directory at the end, else
 * -errno (-ENOTDIR: path or a parent is not a directory).
 */
int bgrun__mkdir_p(const char *path, unsigned mode);

/* The running program's path, not terminated: its length or -errno. */
ssize_t bgrun__self_path(char *buf, size_t size);

/*
 * atfork.c: fork safety. A caller may fork() (we never do): prepare takes
 * each module's lock so no state is half-updated; the parent releases
 * them; the child releases them and forgets the threads and children it
 * inherited images of. bgrun__init_once installs the hooks (the POSIX
 * platform with pthread_atfork; a platform without fork has none).
 */
void bgrun__init_once(void);

#endif /* BGRUN_PLATFORM_H */
