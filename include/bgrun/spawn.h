/* SPDX-License-Identifier: MIT */
/* bgrun/spawn.h: the runbgcommand primitive: launch a command detached, with or without ensurestart (libbgrun). */

#ifndef BGRUN_SPAWN_H
#define BGRUN_SPAWN_H

#include "bgrun/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to connect a child's standard descriptor to. */
enum bgrun_stdio_kind {
	BGRUN_STDIO_NULL = 0, /* /dev/null (the default for all three; one
			       * read-write /dev/null, as daemon(3), for
			       * those that are) */
	BGRUN_STDIO_INHERIT,  /* the caller's own descriptor 0, 1 or 2 */
	BGRUN_STDIO_FD,       /* .fd, a descriptor of the caller (borrowed) */
	BGRUN_STDIO_FILE,     /* .path, opened by the library (stdin: read);
				 never waits for a FIFO's other end: -ENXIO
				 for an output FIFO no process reads */
	BGRUN_STDIO_BYTES,    /* .bytes/.len, stdin only: fed from memory */
	BGRUN_STDIO_STDOUT,   /* stderr only: the same open file as stdout */
};

struct bgrun_stdio {
	enum bgrun_stdio_kind kind;
	bgrun_os_fd_t fd;  /* BGRUN_STDIO_FD: borrowed, never closed */
	const char *path;  /* BGRUN_STDIO_FILE: relative to the caller's cwd */
	bool append;       /* BGRUN_STDIO_FILE: O_APPEND instead of O_TRUNC */
	const void *bytes; /* BGRUN_STDIO_BYTES: copied before return */
	size_t len;
};

/* Which step of a launch failed (see struct bgrun_failure). */
enum bgrun_stage {
	BGRUN_STAGE_NONE = 0,
	BGRUN_STAGE_ARGS,   /* invalid options (EINVAL) */
	BGRUN_STAGE_SETUP,  /* the library's own resources (ENOMEM, EMFILE...) */
	BGRUN_STAGE_CWD,    /* opening the working directory */
	BGRUN_STAGE_STDIN,  /* preparing stdin */
	BGRUN_STAGE_STDOUT, /* opening stdout */
	BGRUN_STAGE_STDERR, /* opening stderr */
	BGRUN_STAGE_EXEC,   /* finding or executing the program */
};

/* Filled, when the caller provides it, with where a launch failed. */
struct bgrun_failure {
	enum bgrun_stage stage;
	int error; /* the same -errno the call (or the start callback) got */
};

struct bgrun_child;

/*
 * Called exactly once per launch with ensurestart off, from a library
 * thread, when the outcome of the launch is known: pid > 0 on success,
 * -errno on failure. It must not block for long: launches queued behind it
 * wait. `failure` is valid only during the call.
 */
typedef void (*bgrun_start_cb)(void *data, bgrun_pid_t pid_or_error,
			       const struct bgrun_failure *failure);

/*
 * What to launch and how. Plain data: start from BGRUN_SPAWN_OPTS_INIT and
 * set what differs. Everything pointed to is borrowed for the duration of
 * the call only; the library copies what it keeps.
 */
struct bgrun_spawn_opts {
	/*
	 * The command. argv[0] names the program: with a '/' it is a path
	 * (relative to .cwd when set), otherwise it is searched in the PATH
	 * of the child's environment (like execvpe(3); "/bin:/usr/bin" when
	 * that has no PATH), in the caller, before spawning. Each string is
	 * passed byte for byte (empty strings and newlines included).
	 */
	const char *const *argv;
	/*
	 * When set, the command is SHELL run by the platform's shell
	 * (bgrun/unix.h says which); argv, if also set, becomes the
	 * script's $0, $1, ... (argv[0] is then only $0).
	 */
	const char *shell;

	/*
	 * Environment. env == NULL: the caller's environment at the time of the
	 * call. Otherwise exactly the list in env (NAME=VALUE strings).
	 * Then env_set (NAME=VALUE, replacing or adding) and env_unset (NAME)
	 * are applied on top, in that order. Strings that are not NAME=VALUE
	 * in env_set, or contain '=' in env_unset, are EINVAL.
	 */
	const char *const *env;
	const char *const *env_set;
	const char *const *env_unset;

	/* Working directory of the child; NULL: the caller's. */
	const char *cwd;

	/* Standard descriptors; all default to /dev/null. */
	struct bgrun_stdio in, out, err;

	/*
	 * detach (default true): the child leads a new session
	 * (POSIX_SPAWN_SETSID), has no controlling terminal and outlives the
	 * caller. false: it stays in the caller's session and process group.
	 */
	bool detach;
	/*
	 * new_pgroup (default false): when not detached, the child leads a new
	 * process group (POSIX_SPAWN_SETPGROUP), so that a supervisor can
	 * signal it and everything it starts with killpg() without signalling
	 * itself. Ignored when detached (a session leader leads its group).
	 */
	bool new_pgroup;
	/*
	 * Extra descriptors of the caller (borrowed) that the child receives
	 * as 3, 4, ... in this order, without close-on-exec. Every other
	 * descriptor above 2 is closed in the child.
	 */
	const bgrun_os_fd_t *pass_fds;
	size_t n_pass_fds;
	/*
	 * ensurestart (default true): bgrun_spawn() returns only once the
	 * program has been executed (on Windows: bgrun/win.h says what that
	 * means there), and any failure is its return value.
	 * false: the launch is queued to a library thread and bgrun_spawn()
	 * returns at once; the outcome is delivered to on_start and/or
	 * through the child handle. With neither (no on_start and a NULL
	 * ret_child) it is EINVAL: an error would have nowhere to go.
	 */
	bool ensurestart;
	bgrun_start_cb on_start;
	void *on_start_data;

	/* Optional: where a failure happened (written on failure only). */
	struct bgrun_failure *failure;
};

#define BGRUN_SPAWN_OPTS_INIT { .detach = true, .ensurestart = true }

/*
 * A child's resource use, in the library's own units (as uv_rusage_t is
 * libuv's): on POSIX from wait4(2)'s struct rusage; on Windows from
 * what the system keeps of the process (bgrun/win.h), with BGRUN_NULL
 * where Windows has no such figure.
 */
struct bgrun_rusage {
	int64_t user_cpu_ns;
	int64_t sys_cpu_ns;
	int64_t max_rss_kb;   /* peak resident set (Windows: peak working set) */
	int64_t minor_faults;
	int64_t major_faults; /* Windows: page faults (all of them) */
	int64_t in_blocks;    /* Windows: read operations */
	int64_t out_blocks;   /* Windows: write operations */
	int64_t vol_ctxsw;    /* Windows: BGRUN_NULL */
	int64_t invol_ctxsw;  /* Windows: BGRUN_NULL */
};

/* How a child ended, as wait4(2) told it (Windows: bgrun/win.h). */
struct bgrun_status {
	bgrun_pid_t pid;
	bool exited;       /* exited normally: exit_code is valid */
	int exit_code;     /* 0..255, the full status byte */
	bool signaled;     /* killed by a signal: signal is valid */
	int signal;        /* the signal number, never folded into exit_code */
	bool core_dumped;
	int64_t start_realtime_ns; /* CLOCK_REALTIME just before spawning */
	int64_t end_realtime_ns;   /* CLOCK_REALTIME when it was reaped */
	int64_t duration_ns;       /* CLOCK_MONOTONIC, spawn to reap */
	struct bgrun_rusage rusage; /* the child's resource use */
};

/*
 * Launches a command as described by opts.
 *
 * ret_child == NULL: the library owns the child and reaps it when it exits
 * (no zombie, no SIGCHLD handler). With ensurestart the return value is the
 * pid; without, it is 0 and the outcome goes to on_start.
 *
 * ret_child != NULL: *ret_child receives a handle the caller owns and must
 * release with bgrun_child_free(). While the handle lives, the child is not
 * reaped by the library, so bgrun_child_wait() can collect its status.
 * With ensurestart the return value is the pid; without, it is 0 and
 * bgrun_child_started() gives the outcome.
 *
 * Failures with ensurestart: -ENOENT (program not found), -EACCES (found,
 * not executable, or a file/directory not accessible), -ENOEXEC (not an
 * executable format), -E2BIG, -ENOTDIR, -EINVAL (bad options), -ENOMEM,
 * -EMFILE ...; opts->failure says which step. Nothing is left behind: no
 * process, no descriptor.
 *
 * The child always starts with descriptors 0, 1, 2 (and pass_fds) only, an empty signal
 * mask and every signal at its default disposition, whatever the caller's
 * state. Cost: one posix_spawn (clone(CLONE_VM|CLONE_VFORK) in glibc),
 * independent of the caller's memory size.
 *
 * The library keeps descriptors of its own, all close-on-exec and above 2:
 * the reaper's (its wait set, its wake-up and a process descriptor per
 * child it waits for, where the platform has them) and, from the first
 * launch, one on /dev/null that the children's /dev/null streams are
 * dup2'd from. A caller that closes descriptors it did not open gives no
 * file of its own to a child: each launch checks that this one is still
 * /dev/null, and opens it in the child if not.
 *
 * If the caller sets SIGCHLD to SIG_IGN (or SA_NOCLDWAIT), the kernel reaps
 * children itself and no status can be collected (bgrun_child_wait gives
 * -ECHILD). A caller that reaps with waitpid(-1) steals statuses likewise.
 */
BGRUN_EXTERN int bgrun_spawn(const struct bgrun_spawn_opts *opts,
		struct bgrun_child **ret_child);

/*
 * The program bgrun_spawn(opts) would execute, found the same way (with
 * the command's PATH, relative to its working directory), without
 * starting anything or opening its files: *ret_path is malloc'd, and a
 * relative path is relative to opts->cwd. Fails as bgrun_spawn would
 * before its own files are touched (-ENOENT, -EACCES, -EINVAL...), with
 * opts->failure filled (BGRUN_STAGE_ARGS, _CWD or _EXEC). For launchers
 * that interpose a program of their own: it can check, then exec, the
 * result.
 */
BGRUN_EXTERN int bgrun_spawn_resolve(const struct bgrun_spawn_opts *opts, char **ret_path);

/*
 * The argv and environment bgrun_spawn(opts) would give the command:
 * argv after the shell's words when opts->shell is set, and the
 * environment built from opts->env (or the caller's), env_set and
 * env_unset by the rules above. Each of *ret_argv and *ret_envp is one
 * malloc'd block, the NULL-terminated vector and its strings: free() it.
 * Fails with -EINVAL (options bgrun_spawn would refuse) or -ENOMEM, with
 * opts->failure filled. With ret_path not NULL, *ret_path also gets the
 * program, found and checked as bgrun_spawn_resolve does it (and failing
 * as it fails), from the same reading of the options. For launchers that
 * interpose a program of their own: that program can execute the command
 * exactly as the library would, without the library's rules.
 */
BGRUN_EXTERN int bgrun_spawn_command(const struct bgrun_spawn_opts *opts,
				     char **ret_path, char ***ret_argv,
				     char ***ret_envp);

/*
 * With ensurestart off: waits until the launch has happened and returns
 * its pid, or its -errno and, if failure is not NULL, where it failed in
 * *failure (written on failure only, as opts->failure). With ensurestart
 * on it returns the pid at once.
 */
BGRUN_EXTERN bgrun_pid_t bgrun_child_started(struct bgrun_child *child,
			  struct bgrun_failure *failure);

/* The pid, or 0 while an ensurestart-off launch is still queued. */
BGRUN_EXTERN bgrun_pid_t bgrun_child_pid(const struct bgrun_child *child);

/*
 * Waits for the child to end and fills *ret_status. Can be called again
 * afterwards; it returns the same status. Fails with the launch's -errno
 * if the launch failed, -ECHILD if the status was taken by someone else.
 * timeout_ms < 0 waits forever; 0 polls; on expiry returns -ETIMEDOUT.
 */
BGRUN_EXTERN int bgrun_child_wait(struct bgrun_child *child, int timeout_ms,
		     struct bgrun_status *ret_status);

/*
 * Sends sig to the child (through a process descriptor where the platform
 * has one, bgrun/unix.h, so never to a recycled pid). -ESRCH once it has
 * been reaped.
 */
BGRUN_EXTERN int bgrun_child_kill(struct bgrun_child *child, int sig);

/*
 * Releases the handle. A child still running (or not yet launched) is
 * handed to the library, which reaps it. Accepts NULL.
 */
BGRUN_EXTERN void bgrun_child_free(struct bgrun_child *child);

/*
 * Releases the handle without handing the child to the library: it stays
 * the caller's child, for the caller to reap (waitpid on its pid) or, once
 * the caller has exited, for init or the nearest subreaper. For a program
 * that exits right after its launches (a command-line launcher): it is
 * spared the library's reaper, a thread that would start for children it
 * could never reap, and that the process's exit would have to wait for.
 * A launch still queued (ensurestart off) is disowned once it happens.
 * Accepts NULL.
 */
BGRUN_EXTERN void bgrun_child_disown(struct bgrun_child *child);

/*
 * Waits until every launch queued with ensurestart off has been performed
 * and its callback has returned. A program that exits right after queueing
 * launches calls this first, or they may never happen.
 */
BGRUN_EXTERN void bgrun_spawn_flush(void);

/* A short name for a stage ("exec", "stdout", ...). */
BGRUN_EXTERN const char *bgrun_stage_name(enum bgrun_stage stage);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_SPAWN_H */
