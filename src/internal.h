/* SPDX-License-Identifier: MIT */
/* internal.h: declarations shared by libbgrun's own files, never installed. */

#ifndef BGRUN_INTERNAL_H
#define BGRUN_INTERNAL_H

#include "bgrun.h"
#include "config.h"

#include <pthread.h>

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

/* Builds req from opts, borrowing strings (deep == false) or copying them. */
int bgrun__req_build(const struct bgrun_spawn_opts *opts, bool deep,
		     struct bgrun__req *ret_req);
void bgrun__req_release(struct bgrun__req *req);

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

/* reap.c: the library's reaper for children nobody else waits for. */
void bgrun__reaper_adopt(struct bgrun__proc *proc); /* consumes proc */

/* async.c: the spawner thread for ensurestart off. */
int bgrun__async_submit(const struct bgrun_spawn_opts *opts,
			struct bgrun_child *child);

/* child.c: the caller's handle. */
struct bgrun_child *bgrun__child_new(void);
void bgrun__child_set_started(struct bgrun_child *child,
			      const struct bgrun__proc *proc);
void bgrun__child_set_failed(struct bgrun_child *child, int error,
			     const struct bgrun_failure *failure);
void bgrun__child_ref(struct bgrun_child *child);
void bgrun__child_unref(struct bgrun_child *child);

/*
 * Moves a descriptor of the library's own (consumed, even on error) to
 * `low` or above, close-on-exec: a caller that closed its 0, 1 or 2 must
 * never find a library descriptor there.
 */
int bgrun__fd_high(int fd, int low);

/*
 * A helper program of ours: NAME beside this program (self, NULL: read
 * from /proc/self/exe) when there is one there, as in a build tree;
 * else the installed path. In buf (size bytes) or installed.
 */
const char *bgrun__helper_path(const char *self, const char *name,
			       const char *installed, char *buf, size_t size);

/* Clocks, in nanoseconds. */
int64_t bgrun__now_ns(int clock_id);

/* The length of a NULL-terminated vector (0 for a NULL one). */
static inline size_t bgrun__vec_len(const char *const *v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

/*
 * pthread_atfork handlers: a caller may fork() (we never do). Prepare takes
 * the module's lock so no state is half-updated; the parent releases it;
 * the child releases it and forgets the threads and children it inherited
 * images of, which do not exist or are not its own there.
 */
enum bgrun__fork_phase {
	BGRUN__FORK_PREPARE,
	BGRUN__FORK_PARENT,
	BGRUN__FORK_CHILD,
};
void bgrun__reaper_atfork(enum bgrun__fork_phase phase);
void bgrun__async_atfork(enum bgrun__fork_phase phase);
void bgrun__init_once(void);

/* Creates a thread with every signal blocked (caller's mask restored). */
int bgrun__thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg);

#endif /* BGRUN_INTERNAL_H */
