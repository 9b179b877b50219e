/* SPDX-License-Identifier: MIT */
/* platform.h: the platform interface: what src/unix/ (and src/win/) implement and the shared code calls. */

#ifndef BGRUN_PLATFORM_H
#define BGRUN_PLATFORM_H

#include "bgrun/event.h"
#include "bgrun/spawn.h"
#include "common/common.h"

#include <signal.h>
#include <sys/types.h>
#include <time.h>

/* The platform's private types: struct bgrun__os_proc, struct bgrun__watch. */
#if defined(_WIN32)
#include "win/os.h"
#else
#include "unix/os.h"
#endif

/*
 * One launch, fully resolved from the options: the exact argv and envp
 * to execute and the stdio wiring. In the synchronous path the strings are
 * borrowed from the caller; for a queued launch everything lives in one
 * block owned by the request (arena).
 */
struct bgrun__req {
	const char *file;        /* the program to find (argv[0] or the shell) */
	char **argv;             /* NULL-terminated */
	char **envp;             /* NULL-terminated */
	const char *cwd;         /* NULL: the caller's */
	struct bgrun_stdio in, out, err;
	const bgrun_os_fd_t *pass_fds;
	size_t n_pass_fds;
	bool shell;              /* argv is the platform's shell words, then the command */
	bool detach;
	bool new_pgroup;
	void *arena;             /* owns everything above when non-NULL */
	/*
	 * A queued launch cannot borrow the caller's descriptors past the
	 * call: it owns duplicates of in/out/err.fd (kind FD) and of pass_fds.
	 */
	bool owns_fds;
};

/*
 * What a successful platform launch produced. Shared code reads pid and
 * the start times and copies the struct; os is the platform's alone.
 * Start from BGRUN__PROC_INIT: bgrun__platform_close() must be harmless
 * on a proc that was never launched.
 */
struct bgrun__proc {
	bgrun_pid_t pid;
	struct bgrun__os_proc os;
	int64_t start_realtime_ns;
	int64_t start_mono_ns;
};
#define BGRUN__PROC_INIT { .os = BGRUN__OS_PROC_INIT }

/*
 * unix/spawn.c: launch req; on failure, *failure gets the stage
 * and nothing is left behind.
 */
int bgrun__platform_spawn(const struct bgrun__req *req,
			  struct bgrun__proc *ret_proc,
			  struct bgrun_failure *failure);
/* The program req would execute, as bgrun_spawn_resolve. */
int bgrun__platform_resolve(const struct bgrun__req *req, char **ret_path,
			    struct bgrun_failure *failure);
/*
 * unix/proc.c: reaps proc if it has ended: 1 and *ret_status filled; 0 if still running
 * (only with nohang); -errno on error (-ECHILD: reaped by someone else).
 */
int bgrun__platform_reap(struct bgrun__proc *proc, bool nohang,
			 struct bgrun_status *ret_status);
/* unix/proc.c: waits up to timeout_ms (< 0: forever) for proc to be reapable. */
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
/*
 * user.c: the name of user uid, or NULL: through NSS (user-nss.c), or in
 * the statically linked programs from /etc/passwd alone (user-passwd.c
 * says why).
 */
const char *bgrun__user_name(int64_t uid);
/* len random bytes: the platform's generator, else a unique mix. */
void bgrun__random_bytes(unsigned char *buf, size_t len);
/* The start time of process pid (opaque units), or BGRUN_NULL if none. */
int64_t bgrun__proc_starttime(int64_t pid);
/*
 * When the live process pid started, on CLOCK_REALTIME in ns (to within
 * the platform's tick: 10 ms on Linux), or BGRUN_NULL if there is none,
 * it has ended (a zombie) or the platform cannot tell.
 */
int64_t bgrun__proc_start_realtime(int64_t pid);
/* Whether a `running` row with these fields has lost its supervisor. */
bool bgrun__supervisor_gone(const char *boot_id, int64_t supervisor_pid,
			    int64_t supervisor_start);
/*
 * The C library's calendar conversions under one name (timegm and
 * localtime_r, or the Windows C runtime's _mkgmtime and localtime_s):
 * bgrun__timegm gives (time_t)-1 on failure, bgrun__localtime NULL.
 */
time_t bgrun__timegm(struct tm *tm);
struct tm *bgrun__localtime(const time_t *t, struct tm *ret_tm);

/*
 * Moves a descriptor of the library's own (consumed, even on error) to
 * `low` or above, close-on-exec: a caller that closed its 0, 1 or 2 must
 * never find a library descriptor there.
 */
int bgrun__fd_high(int fd, int low);

/* Writes all len bytes of buf to fd, retrying on EINTR: 0 or -errno. */
int bgrun__fd_write_all(bgrun_os_fd_t fd, const void *buf, size_t len);

/*
 * fd.c: the caller's open files as a queued launch holds them: a
 * duplicate of the library's own (not inherited by other launches);
 * closing one; whether a value can never be an open file; the caller's
 * own standard file i (0, 1, 2), -EBADF when it has none.
 */
int bgrun__os_fd_dup(bgrun_os_fd_t fd, bgrun_os_fd_t *ret);
void bgrun__os_fd_close(bgrun_os_fd_t fd);
bool bgrun__os_fd_bad(bgrun_os_fd_t fd);
int bgrun__os_std_fd(int i, bgrun_os_fd_t *ret);

/*
 * fs.c: mkdir -p: makes path and its missing parents, each new one with
 * mode (less the umask). 0 when path is a directory at the end, else
 * -errno (-ENOTDIR: path or a parent is not a directory).
 */
int bgrun__mkdir_p(const char *path, unsigned mode);

/*
 * dir.c: the files of a tree being built (the clone pipeline), named
 * relative to a directory: struct bgrun__dir (os.h) is a descriptor on
 * POSIX (openat and its kin) and a full \\?\ path on Windows, where a
 * path may then be up to 32767 characters long and names are taken as
 * they are (no device names, no trimming of dots and spaces). A name
 * is a relative path with '/' between components and no "." or ".."
 * component. Files are bgrun_os_fd_t, opened not inheritable; a file
 * opened here may be renamed or removed while open (Windows:
 * FILE_SHARE_DELETE). Every call returns 0 or -errno unless it says;
 * -EEXIST for what exists, -ENOENT for a missing parent, -ENOTDIR where
 * a file stands in for a directory.
 */
/* Opens the directory path; -ENOTDIR if it is something else. */
int bgrun__dir_open(const char *path, struct bgrun__dir *ret);
/* Opens the directory name in d, never through a symbolic link. */
int bgrun__dir_open_at(const struct bgrun__dir *d, const char *name,
		       struct bgrun__dir *ret);
/* Closes d and makes it BGRUN__DIR_INIT; accepts a closed one. */
void bgrun__dir_close(struct bgrun__dir *d);
int bgrun__dir_mkdir(const struct bgrun__dir *d, const char *name);
/* Creates the file name in d, which must not exist, for reading and writing. */
int bgrun__dir_create(const struct bgrun__dir *d, const char *name,
		      bgrun_os_fd_t *ret);
/* Opens the existing file name in d for reading and locking. */
int bgrun__dir_open_file(const struct bgrun__dir *d, const char *name,
			 bgrun_os_fd_t *ret);
/* Removes the file (or, with is_dir, the empty directory) name. */
int bgrun__dir_unlink(const struct bgrun__dir *d, const char *name,
		      bool is_dir);
/*
 * Renames from to to, both in d: with replace, over an empty directory
 * to; without, -EEXIST if to exists.
 */
int bgrun__dir_rename(const struct bgrun__dir *d, const char *from,
		      const char *to, bool replace);
/*
 * Calls cb for each entry of d but "." and ".." (name borrowed for the
 * call) until cb returns non-zero, which is returned; 0 at the end.
 */
int bgrun__dir_list(const struct bgrun__dir *d,
		    int (*cb)(void *data, const char *name), void *data);
/*
 * Whether name in d is a directory (not a link to one) that the
 * calling user owns (Windows: any directory; who may touch it is its
 * ACL's business).
 */
bool bgrun__dir_is_own_dir(const struct bgrun__dir *d, const char *name);
/* Removes name (a tree we made) in d, everything in it first; errors ignored. */
void bgrun__dir_remove_tree(const struct bgrun__dir *d, const char *name);
/* Opens the file path for reading. */
int bgrun__file_open_read(const char *path, bgrun_os_fd_t *ret);
/*
 * Closes a file written: 0 or -errno (the file is closed either way;
 * on POSIX, EINTR is no error: close(2) released the descriptor).
 */
int bgrun__file_close(bgrun_os_fd_t fd);
/*
 * Whether fd is a regular file (a file that can be read at offsets),
 * then its size and the current offset.
 */
int bgrun__file_info(bgrun_os_fd_t fd, bool *ret_regular,
		     uint64_t *ret_size, uint64_t *ret_offset);
/*
 * Reads into iov (n buffers) at offset off, or (off < 0) at the
 * current position: how many bytes (0 at the end) or -errno. -EINTR
 * means: look at the cancel flag, then call again; with cancel, a read
 * that could block (a pipe) waits a slice of time at most, then gives
 * -EINTR.
 */
ssize_t bgrun__file_readv(bgrun_os_fd_t fd, const struct iovec *iov, int n,
			  int64_t off, const volatile sig_atomic_t *cancel);
/*
 * Copies up to len bytes at *in_off of in to the end of out within the
 * kernel (copy_file_range): how many, moving *in_off; -EXDEV, -EINVAL,
 * -ENOSYS or -EOPNOTSUPP when it cannot between these files (then copy
 * by hand; Windows: always -ENOSYS).
 */
ssize_t bgrun__file_copy_range(bgrun_os_fd_t in, uint64_t *in_off,
			       bgrun_os_fd_t out, size_t len);
/*
 * An exclusive lock on fd that lasts while it is open (flock;
 * on Windows a byte-range lock far past any data, so that reading is never
 * blocked): 0, -EWOULDBLOCK when another holds it, -ENOLCK where the
 * file system has no locks.
 */
int bgrun__file_trylock(bgrun_os_fd_t fd);
/* Whether the file open as fd has been removed (no name left). */
bool bgrun__file_removed(bgrun_os_fd_t fd);
/* Whether the file fd belongs to the calling user (Windows: always, as for directories). */
bool bgrun__file_is_own(bgrun_os_fd_t fd);
/* The calling process's id. */
int64_t bgrun__self_pid(void);

/*
 * filelock.c: a write lock shared by processes through a file (the
 * store's <db>-lock): flock(2) on fd excludes, a ticket queue in the
 * file's first page orders the waiters, and every wait is bounded. init
 * maps the page (without it, on a file system that cannot map, the lock
 * is flock alone, polled); fd stays the caller's. acquire: 0, -ETIMEDOUT
 * after timeout_ns, or -errno of flock; the bound is the whole wait
 * (TOTAL) or the time the lock has not changed hands (STILL: a long queue
 * that moves is waited out; a stopped holder is not). On Windows
 * (src/win/filelock.c): a lock on one byte of the file, polled up to the
 * bound (the whole wait: no queue to watch move).
 */
enum bgrun__filelock_bound { BGRUN__FILELOCK_TOTAL, BGRUN__FILELOCK_STILL };
struct bgrun__filelock {
	int fd;
	void *map;        /* the queue's page, or NULL */
	void *boxes;      /* the mailboxes after it, or NULL */
	uint32_t ticket;  /* ours, while waiting or holding */
	bool held;
	int64_t stall_ns; /* 0: the queue's default (tests set their own) */
};
void bgrun__filelock_init(struct bgrun__filelock *l, int fd);
int bgrun__filelock_acquire(struct bgrun__filelock *l, int64_t timeout_ns,
			    enum bgrun__filelock_bound bound);
void bgrun__filelock_release(struct bgrun__filelock *l);
/*
 * Group commit. A waiter may leave its work (bytes: for the store, an
 * event's frame) in its ticket's mailbox in the lock file while it
 * waits; the holder may take the work of those behind it, do it in its
 * own turn and give each its result, and they then return without ever
 * holding the lock. acquire_mail is acquire, but for `mail`: make()
 * writes the work into buf (at most size bytes) and returns its length,
 * or 0 to leave none; it is called only if the waiter has to wait.
 * Returns 0 with the lock held (no mail outstanding: the caller does
 * its work), 1 when a holder did the work (mail->result is its result),
 * or -errno as acquire. take (holder only): the work left behind it, at
 * most max, which is the holder's to do until settle; the pointers stay
 * valid until then. settle, before release: results[i] >= 0 is the
 * result of done work; < 0 gives it back (its waiter does it itself in
 * its turn, and meets the error first-hand). Without mailboxes (no map,
 * Windows) take finds nothing and acquire_mail is acquire.
 */
struct bgrun__filelock_mail {
	size_t (*make)(void *ctx, void *buf, size_t size);
	void *ctx;
	int32_t result;
};
struct bgrun__filelock_taken {
	uint32_t ticket;
	const void *data;
	size_t len;
};
int bgrun__filelock_acquire_mail(struct bgrun__filelock *l, int64_t timeout_ns,
				 enum bgrun__filelock_bound bound,
				 struct bgrun__filelock_mail *mail);
size_t bgrun__filelock_take(struct bgrun__filelock *l,
			    struct bgrun__filelock_taken *taken, size_t max);
void bgrun__filelock_settle(struct bgrun__filelock *l,
			    const struct bgrun__filelock_taken *taken,
			    const int32_t *results, size_t n);
/* Releases (if held) and unmaps; fd is left open. */
void bgrun__filelock_destroy(struct bgrun__filelock *l);
/*
 * A counter in the lock file, shared by every process that maps it (the
 * store counts its checkpoints there), or NULL (no map, Windows).
 */
_Atomic uint32_t *bgrun__filelock_counter(struct bgrun__filelock *l);
/*
 * Opens the existing file path for fdatasync (the store's WAL, flushed
 * before a checkpoint): the descriptor, or -1 with errno. Read-only on
 * POSIX; for writing on Windows, where FlushFileBuffers (_commit) fails
 * on a handle without write access.
 */
int bgrun__filelock_open_sync(const char *path);

/* The running program's path, not terminated: its length or -errno. */
ssize_t bgrun__self_path(char *buf, size_t size);

/*
 * env.c: what a request is made of on this platform. The caller's
 * environment (NAME=VALUE strings, borrowed: valid until the caller
 * changes its environment); whether two variable names, of which the
 * first len bytes are compared (stopping at a NUL, as strncmp does), are
 * the same name to this platform; and the argv that runs a command
 * line with the platform's shell, to which the command line is appended
 * (NULL-terminated, static).
 */
const char *const *bgrun__os_environ(void);
bool bgrun__os_env_name_eq(const char *a, const char *b, size_t len);
const char *const *bgrun__os_shell_argv(void);

/*
 * Fork safety. A caller may fork() (the library never does): before it,
 * each module's hook takes the module's lock so no state is half-updated
 * (PREPARE); after it the parent releases them (PARENT), and the child
 * releases them and forgets the threads and children it inherited images
 * of, which do not exist or are not its own there (CHILD).
 * bgrun__init_once installs the platform's hook, which calls the
 * modules' hooks below (atfork.c on POSIX; a platform without fork
 * installs none and never calls them).
 */
enum bgrun__fork_phase {
	BGRUN__FORK_PREPARE,
	BGRUN__FORK_PARENT,
	BGRUN__FORK_CHILD,
};
void bgrun__init_once(void);
void bgrun__async_atfork(enum bgrun__fork_phase phase);  /* spawn/async.c */
void bgrun__reaper_atfork(enum bgrun__fork_phase phase); /* spawn/reap.c */
/*
 * The same hooks for a module of the store's library, whose thread a
 * caller does not know of either (store/store-checkpoint.c, "Fork
 * safety"): 0, or -errno. A platform without fork has nothing to
 * install.
 */
int bgrun__fork_hooks(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void));

/*
 * watch.c: the exit watch, how the reaper (spawn/reap.c) learns that a
 * child it adopted may be reaped, without blocking a caller's thread and
 * without waiting for any child but its own. The platform runs the
 * watcher (POSIX: a thread of its own that waits on process descriptors,
 * and polls children without one) and calls
 * bgrun__reaper_ready(data) when the child watched with data may have
 * ended, a child that had ended before it was added included (at once,
 * or at the platform's next poll); a spurious call is harmless (the
 * reaper reaps with nohang).
 *
 * THREAD SAFETY: the reaper calls add and remove with its lock held, and
 * bgrun__reaper_ready takes that lock, so the platform calls it holding
 * no lock that add or remove take. A watch is removed only from within
 * bgrun__reaper_ready for that watch (or in a forked child, where the
 * watcher is gone), so the watcher may rely on a watch it is about to
 * report staying in place. w and proc stay in place while watched.
 */
/* 0, or -errno if the watcher cannot run (nothing then watches it). */
int bgrun__watch_add(struct bgrun__watch *w, const struct bgrun__proc *proc,
		     void *data);
void bgrun__watch_remove(struct bgrun__watch *w);
/* Called by bgrun__reaper_atfork, inside the reaper's lock. */
void bgrun__watch_atfork(enum bgrun__fork_phase phase);
void bgrun__reaper_ready(void *data); /* spawn/reap.c */

/*
 * sinkconn.c: the sink client's way to its daemon (src/sink/client-daemon.c
 * has the frames): a Unix stream socket on POSIX, a named pipe on
 * Windows (\\.\pipe\bgrun-sink-SID). The public calls that depend
 * on it, bgrun_sink_default_socket and bgrun_sink_check_dir, are the
 * platform's too (POSIX: sinkpath.c, in libbgrun only).
 *
 * open connects to the daemon at address and checks who listens there:
 * on POSIX a socket whose directory is the user's alone
 * (bgrun_sink_check_dir) and a peer running as the effective uid or
 * root (SO_PEERCRED); on Windows a pipe whose server process runs as
 * the calling user (its token's user SID). 0, or -errno with a
 * one-line message in err (-ENOENT or -ECONNREFUSED: nobody listens).
 * Never blocks for long: a daemon too busy to accept is an error.
 */
int bgrun__sinkconn_open(const char *address, struct bgrun__sinkconn *ret,
			 char *err, size_t size);
bool bgrun__sinkconn_is_open(const struct bgrun__sinkconn *c);
/*
 * One step of an exchange: waits up to timeout_ms until the connection
 * can take some of out (when out_len > 0) or has bytes for in, then
 * writes what it can and reads what is there (at most in_cap). A step
 * may return having written without reading (the caller steps again).
 * 0 with *ret_sent and *ret_got (both 0 when the wait ended first or was
 * interrupted); -ECONNRESET when the daemon closed the connection;
 * another -errno. What out held is copied or written before the return:
 * the caller may change it afterwards.
 */
int bgrun__sinkconn_step(struct bgrun__sinkconn *c, const void *out,
			 size_t out_len, size_t *ret_sent, void *in,
			 size_t in_cap, size_t *ret_got, int timeout_ms);
/* Closes c (accepts a closed one) and makes it BGRUN__SINKCONN_INIT. */
void bgrun__sinkconn_close(struct bgrun__sinkconn *c);
/*
 * Starts a daemon (BGRUN_SINK_AUTO): argv (NULL-terminated, borrowed)
 * with "--ready-fd=N" appended for a pipe on which it says "READY PID"
 * or "ERROR MESSAGE"; its first line (up to size - 1 bytes, without the
 * newline) in line, waiting up to timeout_ms. 0 when one was read
 * (READY or not), else -errno with why in line. Windows: -ENOSYS (this
 * build does not start a daemon: BGRUN_SINK=auto is try there).
 */
int bgrun__sinkconn_start(const char *const *argv, int timeout_ms, char *line,
			  size_t size);
/*
 * Which file path is, as the daemon's HELLO says it (db_dev, db_ino):
 * st_dev and st_ino on POSIX; the volume serial number and the file
 * index on Windows (GetFileInformationByHandle). 0 or -errno.
 */
int bgrun__file_identity(const char *path, int64_t *ret_dev, int64_t *ret_ino);

/*
 * The spool's files, where events wait that neither the daemon nor the
 * store took (bgrun/sink.h, SPOOL): src/sink/spool.c on POSIX (openat
 * and its kin), src/win/sink.c on Windows.
 * bgrun__spool_write writes ev into db's spool as one file holding its
 * EVENT frame (-EINVAL for an event that cannot be encoded);
 * bgrun__spool_note_reason notes why (error, why: the one-line
 * message) beside what waits (BGRUN__SPOOL_REASON, the line of
 * src/sink/reason.c); bgrun__dropped_note counts ev as dropped
 * (error: why it could be neither stored nor spooled), see
 * bgrun_sink_dropped_count.
 */
int bgrun__spool_write(const char *db, const struct bgrun_event *ev);
int bgrun__spool_note_reason(const char *db, int error, const char *why);
int bgrun__dropped_note(const char *socket, const char *db,
			const struct bgrun_event *ev, int error);

#endif /* BGRUN_PLATFORM_H */
