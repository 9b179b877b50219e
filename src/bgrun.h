/* SPDX-License-Identifier: MIT */
/* bgrun.h: the public interface of libbgrun, the runbgcommand primitive. */

#ifndef BGRUN_H
#define BGRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BGRUN_VERSION "0.1.0"

/*
 * CONVENTIONS
 *
 * Every function returning int returns >= 0 on success and -errno on
 * failure (libuv style). bgrun_strerror() turns such a value into a
 * message. Output parameters are named ret_* and are left untouched on
 * failure. The library never prints, never logs, never calls fork(), never
 * installs a signal handler and never changes the caller's signal mask,
 * signal dispositions or working directory.
 *
 * THREAD SAFETY: every function may be called from any thread at any time.
 * A struct bgrun_child is used by one thread at a time (the caller's
 * concern), except that bgrun_child_free() may race with nothing.
 */

/* What to connect a child's standard descriptor to. */
enum bgrun_stdio_kind {
	BGRUN_STDIO_NULL = 0, /* /dev/null (the default for all three) */
	BGRUN_STDIO_INHERIT,  /* the caller's own descriptor 0, 1 or 2 */
	BGRUN_STDIO_FD,       /* .fd, a descriptor of the caller (borrowed) */
	BGRUN_STDIO_FILE,     /* .path, opened by the library (stdin: read) */
	BGRUN_STDIO_BYTES,    /* .bytes/.len, stdin only: fed from memory */
	BGRUN_STDIO_STDOUT,   /* stderr only: the same open file as stdout */
};

struct bgrun_stdio {
	enum bgrun_stdio_kind kind;
	int fd;            /* BGRUN_STDIO_FD: borrowed, never closed */
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
typedef void (*bgrun_start_cb)(void *data, pid_t pid_or_error,
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
	 * When set, the command is `/bin/sh -c SHELL`; argv, if also set,
	 * becomes the script's $0, $1, ... (argv[0] is then only $0).
	 */
	const char *shell;

	/*
	 * Environment. env == NULL: the caller's environ at the time of the
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
	const int *pass_fds;
	size_t n_pass_fds;
	/*
	 * ensurestart (default true): bgrun_spawn() returns only once the
	 * program has been executed, and any failure is its return value.
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

/* How a child ended, as wait4(2) told it. */
struct bgrun_status {
	pid_t pid;
	bool exited;       /* exited normally: exit_code is valid */
	int exit_code;     /* 0..255, the full status byte */
	bool signaled;     /* killed by a signal: signal is valid */
	int signal;        /* the signal number, never folded into exit_code */
	bool core_dumped;
	int64_t start_realtime_ns; /* CLOCK_REALTIME just before spawning */
	int64_t end_realtime_ns;   /* CLOCK_REALTIME when it was reaped */
	int64_t duration_ns;       /* CLOCK_MONOTONIC, spawn to reap */
	struct rusage rusage;      /* the child's resource use (wait4) */
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
 * If the caller sets SIGCHLD to SIG_IGN (or SA_NOCLDWAIT), the kernel reaps
 * children itself and no status can be collected (bgrun_child_wait gives
 * -ECHILD). A caller that reaps with waitpid(-1) steals statuses likewise.
 */
int bgrun_spawn(const struct bgrun_spawn_opts *opts,
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
int bgrun_spawn_resolve(const struct bgrun_spawn_opts *opts, char **ret_path);

/*
 * With ensurestart off: waits until the launch has happened and returns
 * its pid, or its -errno (and, if ret_failure, where it failed). With
 * ensurestart on it returns the pid at once.
 */
pid_t bgrun_child_started(struct bgrun_child *child,
			  struct bgrun_failure *ret_failure);

/* The pid, or 0 while an ensurestart-off launch is still queued. */
pid_t bgrun_child_pid(const struct bgrun_child *child);

/*
 * Waits for the child to end and fills *ret_status. Can be called again
 * afterwards; it returns the same status. Fails with the launch's -errno
 * if the launch failed, -ECHILD if the status was taken by someone else.
 * timeout_ms < 0 waits forever; 0 polls; on expiry returns -ETIMEDOUT.
 */
int bgrun_child_wait(struct bgrun_child *child, int timeout_ms,
		     struct bgrun_status *ret_status);

/*
 * Sends sig to the child (through its pidfd where available, so never to a
 * recycled pid). -ESRCH once it has been reaped.
 */
int bgrun_child_kill(struct bgrun_child *child, int sig);

/*
 * Releases the handle. A child still running (or not yet launched) is
 * handed to the library, which reaps it. Accepts NULL.
 */
void bgrun_child_free(struct bgrun_child *child);

/*
 * Waits until every launch queued with ensurestart off has been performed
 * and its callback has returned. A program that exits right after queueing
 * launches calls this first, or they may never happen.
 */
void bgrun_spawn_flush(void);

/* The number of children the library is still to reap (for tests). */
int bgrun_reaper_pending(void);

/* A message for a -errno value from this library (never NULL). */
const char *bgrun_strerror(int error);

/* A short name for a stage ("exec", "stdout", ...). */
const char *bgrun_stage_name(enum bgrun_stage stage);

/*
 * Parses a duration: a decimal number with an optional unit, ns, us, ms,
 * s (the default), m, h or d ("1.5s", "250ms", "10m", "3d"). -EINVAL for
 * anything else, including negative values; -ERANGE past about 292 years.
 */
int bgrun_parse_duration(const char *text, int64_t *ret_ns);

/*
 * ===================================================================
 * EVENTS AND THE STORE (src/event.c, src/store*.c)
 * ===================================================================
 *
 * One event type describes everything that gets recorded: bgrun's own
 * launches, Mercurial's logtoprocess events (commandfinish, command,
 * commandexception, uiblocked, develwarn, ...), clone hooks. The store is
 * an SQLite database holding one row per event id.
 *
 * Unknown integers are BGRUN_NULL and unknown strings NULL; both are
 * stored as SQL NULL, never as a sentinel value.
 */
#define BGRUN_NULL INT64_MIN

/* The values of struct bgrun_event.result. */
#define BGRUN_RESULT_RUNNING "running"
#define BGRUN_RESULT_SUCCESS "success"      /* exited with code 0 */
#define BGRUN_RESULT_FAILED "failed"        /* exited with another code */
#define BGRUN_RESULT_SIGNALED "signaled"    /* killed by a signal */
#define BGRUN_RESULT_TIMEOUT "timeout"      /* killed by its supervisor */
#define BGRUN_RESULT_SPAWN_FAILED "spawn_failed"
#define BGRUN_RESULT_LOST "lost"            /* its supervisor vanished */

/* The longest event id (a UUID's 36 characters). */
#define BGRUN_EVENT_ID_MAX 36

/*
 * One event. Every pointer is borrowed: the struct owns nothing but id.
 * Text fields hold UTF-8; the store replaces the bytes of any field that
 * is not valid UTF-8 by \xNN escapes, except argv, which is kept exactly.
 */
struct bgrun_event {
	/*
	 * Unique id made by the client before the first write (a UUID v7 by
	 * bgrun_event_init), so that a retried write updates the same row
	 * instead of adding one. 1 to 36 characters of [0-9A-Za-z._-].
	 */
	char id[BGRUN_EVENT_ID_MAX + 1];
	const char *event;   /* required: "commandfinish", "exthook", ... */
	const char *source;  /* "bgrun", "hg", "clone-hook", ... */
	const char *host;
	int64_t uid;
	const char *user;
	const char *boot_id; /* /proc/sys/kernel/random/boot_id */
	int64_t pid;         /* the command's */
	/*
	 * The process that watches the command (a bgrun supervisor: its
	 * parent) and its start time (bgrun_proc_starttime()): with boot_id
	 * they tell whether a `running` row's watcher still exists, even
	 * after pid reuse.
	 */
	int64_t supervisor_pid;
	int64_t supervisor_start;
	/* The exact bytes of the command, NULL-terminated; NULL: unknown. */
	const char *const *argv;
	/*
	 * For people: NULL is made from argv at write time, each argument
	 * shell-quoted like Mercurial's procutil.shellquote, non-printable
	 * and invalid bytes shown as \xNN.
	 */
	const char *display;
	const char *cwd;
	const char *tag;
	int64_t start_ns;    /* CLOCK_REALTIME, ns since the epoch */
	int64_t end_ns;      /* CLOCK_REALTIME, ns since the epoch */
	int64_t duration_ns; /* CLOCK_MONOTONIC difference */
	int64_t exit_code;   /* 0..255, or BGRUN_NULL if it did not exit */
	int64_t signal;      /* the signal that killed it, or BGRUN_NULL */
	int64_t core_dumped; /* 0, 1 or BGRUN_NULL */
	const char *result;  /* BGRUN_RESULT_* or NULL (not a command) */
	/* Resource use of the command (wait4's rusage). */
	int64_t user_cpu_ns;
	int64_t sys_cpu_ns;
	int64_t max_rss_kb;
	int64_t minor_faults;
	int64_t major_faults;
	int64_t in_blocks;
	int64_t out_blocks;
	int64_t vol_ctxsw;
	int64_t invol_ctxsw;
	const char *stdout_path;
	const char *stderr_path;
	const char *message;
	/* A JSON object (text); anything else makes the write -EINVAL. */
	const char *options_json;
	/*
	 * The options as NAME, VALUE, NAME, VALUE..., NULL (borrowed), for a
	 * writer without a JSON library: when options_json is NULL, the
	 * store makes the object from them with SQLite's json_object(), each
	 * value a string. An odd count makes the write -EINVAL.
	 */
	const char *const *options_kv;
};

/*
 * Fills *ev for a new event: every integer BGRUN_NULL, every string NULL,
 * then a new id (bgrun_event_new_id), event and source
 * (borrowed), host (uname), uid and user (getuid, getpwuid_r) and boot_id.
 * host, user and boot_id point into storage of the library that lives
 * until the process exits and never changes; the id lives in the struct,
 * so a copy of the struct is a copy of the event. Never fails: what it
 * cannot learn stays unknown.
 */
void bgrun_event_init(struct bgrun_event *ev, const char *event,
		      const char *source);

/*
 * The length of the valid UTF-8 sequence at s[0..n) (1 for ASCII), or 0 if
 * the bytes there are not valid UTF-8 (overlongs and surrogates included);
 * *ret_cp (optional) gets its code point.
 */
size_t bgrun_utf8_decode(const char *s, size_t n, uint32_t *ret_cp);

/*
 * Writes a new unique event id, as bgrun_event_init does: a UUID v7 (RFC
 * 9562), the time in milliseconds first, then 74 bits from getrandom, so
 * that ids sort by time and stores index them at their end. Its first
 * characters are shared by everything made in the same minute or so: show
 * people its end (logsink does), which is random.
 */
void bgrun_event_new_id(char id[BGRUN_EVENT_ID_MAX + 1]);

/*
 * Records how a command ended: pid, exit_code or signal (the other stays
 * BGRUN_NULL), core_dumped, result (success, failed or signaled), start,
 * end and duration, and the rusage fields. Other fields are untouched (a
 * supervisor that killed the command on a timeout sets result itself).
 */
void bgrun_event_set_status(struct bgrun_event *ev,
			    const struct bgrun_status *st);

/*
 * The start time of process pid (field 22 of /proc/PID/stat, clock ticks
 * since boot), or BGRUN_NULL if there is no such process.
 */
int64_t bgrun_proc_starttime(pid_t pid);

/*
 * The display string of argv, as described at struct bgrun_event.display:
 * *ret_display is malloc'd (the caller frees it). -ENOMEM, -EINVAL (argv
 * NULL).
 */
int bgrun_argv_display(const char *const *argv, char **ret_display);

/*
 * THE STORE
 *
 * An SQLite database in WAL mode, schema versioned by PRAGMA user_version
 * and marked by PRAGMA application_id 0x62677275 ("bgru"). Any number of
 * processes may open it at once, for reading and writing. Write
 * transactions of all processes are serialised by an advisory lock
 * (flock) on the file <db>-lock beside the database, so concurrent writers
 * wait for each other instead of failing with SQLITE_BUSY (and so that
 * SQLite 3.40's WAL-reset race cannot happen between them).
 *
 * Errors, beyond the usual -ENOMEM, -EIO, -ENOSPC, -EACCES:
 *   -EBADMSG  the file is not a bgrun store: not SQLite at all, corrupt,
 *             or an SQLite database of another application
 *   -EPROTO   a bgrun store of a schema version this library cannot use
 *             (newer, or older when opened read-only)
 *   -EROFS    a write on a store opened BGRUN_STORE_READONLY
 *   -EBUSY    another program (not using the lock) held the database
 *             longer than the busy timeout (10 s)
 *   -EINVAL   an invalid argument or event
 * After a failure bgrun_store_errmsg() gives a one-line explanation.
 *
 * THREAD SAFETY: a store is used by one thread at a time (open one per
 * thread, or lock around it). A store must not be used by a process
 * fork()ed after it was opened: the child opens its own.
 */
struct bgrun_store;

#define BGRUN_STORE_READONLY 0x1u /* read only: never write anything */

/*
 * The default database path: $BGRUN_DB, else
 * $XDG_STATE_HOME/bgrun/events.db, else $HOME/.local/state/bgrun/events.db
 * (relative XDG_STATE_HOME values are ignored, as the spec says).
 * *ret_path is malloc'd. -ENOENT when neither XDG_STATE_HOME nor HOME is
 * set.
 */
int bgrun_store_default_path(char **ret_path);

/*
 * Opens the store at path (borrowed).
 *
 * Read-write (flags 0): creates missing parent directories (mode 0700)
 * and the database (0600) and its lock file (0600), brings the schema up
 * to date (each migration step in its own transaction) and puts it in WAL
 * mode. A database whose application_id is not ours is refused unless it
 * is empty (application_id 0 and no tables).
 *
 * BGRUN_STORE_READONLY: opens with SQLITE_OPEN_READONLY and never writes:
 * it creates neither the database nor directories nor the lock file; a
 * missing file (or a database nothing was ever written to) is -ENOENT.
 * (SQLite itself creates the -wal and -shm files beside a WAL database
 * for any reader, when it can. Where it cannot, in a directory the caller
 * may not write, the file is read as immutable if no writer is active.)
 *
 * On failure, if ret_errmsg is not NULL, *ret_errmsg receives a malloc'd
 * one-line message naming the path, fit to print after the program's name
 * (the caller frees it; NULL if even that allocation failed). This is the
 * one output parameter written on failure only.
 */
int bgrun_store_open(const char *path, unsigned flags,
		     struct bgrun_store **ret_store, char **ret_errmsg);

/* Closes the store; accepts NULL. */
void bgrun_store_close(struct bgrun_store *store);

/*
 * A one-line message about the last failed call on store ("" if none).
 * Valid until the next call on the store.
 */
const char *bgrun_store_errmsg(const struct bgrun_store *store);

/*
 * Writes an event: inserts it, or updates the row with the same id. An
 * update happens only when the stored row is `running` (any new values
 * replace it; fields the new event leaves unknown keep their stored
 * value), or when it is `lost` and the new event has a final result. So a
 * supervisor's `running` row becomes its final row, a retried final write
 * changes nothing, and a late `running` write never overwrites a final
 * row. The row is committed (WAL, synchronous=NORMAL: durable across a
 * crash of the process, not necessarily of the machine) when this
 * returns. Returns 1 if the row was inserted or changed, 0 if not.
 */
int bgrun_store_put(struct bgrun_store *store, const struct bgrun_event *ev);

/*
 * Writes n events in one transaction (all or none): the same rules as
 * bgrun_store_put for each. Returns the number of rows inserted or
 * changed.
 */
int bgrun_store_put_batch(struct bgrun_store *store,
			  const struct bgrun_event *evs, size_t n);

/*
 * Lost rows. A `running` row is lost when its supervisor is gone: its
 * boot_id differs from the current boot's, or no process supervisor_pid
 * exists (or it is a zombie), or its start time differs from
 * supervisor_start. (A row of this boot without supervisor_pid cannot be
 * judged and stays running; so does every row of this boot when /proc is
 * unreadable.) Queries report such rows as `lost` while the stored row
 * stays `running`; bgrun_store_mark_lost() stores `lost` in them and sets
 * *ret_count (optional) to how many.
 */
int bgrun_store_mark_lost(struct bgrun_store *store, int64_t *ret_count);

/*
 * What to read. Plain data: start from BGRUN_QUERY_INIT. An event's time
 * is its start_ns, or the time it was first recorded when start_ns is
 * unknown. Strings are borrowed; NULL means no condition.
 */
struct bgrun_query {
	int64_t since_ns;     /* time >= since_ns; BGRUN_NULL: no bound */
	int64_t until_ns;     /* time < until_ns; BGRUN_NULL: no bound */
	bool failed;          /* result other than success and running */
	const char *result;   /* this result ("lost" as reported) */
	const char *cmd_glob; /* display GLOB cmd_glob (case-sensitive) */
	const char *tag;
	const char *cwd;
	const char *source;
	const char *event;
	int64_t limit;        /* at most this many rows; 0: all */
};

#define BGRUN_QUERY_INIT { .since_ns = BGRUN_NULL, .until_ns = BGRUN_NULL }

/* A row as read back: valid only during the callback. */
struct bgrun_event_row {
	/*
	 * The event. ev.argv is decoded to its exact bytes; ev.result is the
	 * result as reported, `lost` for a lost `running` row.
	 */
	struct bgrun_event ev;
	size_t argc;               /* the number of strings in ev.argv */
	const char *stored_result; /* the result column as stored */
	int64_t recorded_ns;       /* when the row was first written */
	int64_t time_ns;           /* start_ns, else recorded_ns */
	/*
	 * The whole row as one JSON object made by SQLite: a key per column
	 * (argv as its JSON array, options_json under "options"), result as
	 * reported.
	 */
	const char *json;
};

/*
 * Called for each row; returning non-zero stops the read, and that value
 * becomes the return value of the call that invoked it. A callback must
 * not use the same store (open another one if it needs to).
 */
typedef int (*bgrun_store_row_cb)(void *data,
				  const struct bgrun_event_row *row);

/*
 * Calls cb for each event matching query (all conditions together),
 * newest first (by time, then the latest written first). Returns 0 when
 * all were given.
 */
int bgrun_store_query(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_row_cb cb, void *data);

/*
 * Calls cb once for the event whose id is id_or_prefix or, failing that,
 * the only one whose id starts or ends with it (the end of a UUID v7 is
 * its random part). -ENOENT: none; -EEXIST: it matches several events;
 * -EINVAL: not a possible part of an id.
 */
int bgrun_store_get(struct bgrun_store *store, const char *id_or_prefix,
		    bgrun_store_row_cb cb, void *data);

/* Per-command statistics (durations in ns, BGRUN_NULL if none known). */
struct bgrun_stats_row {
	const char *display; /* the command (NULL: events without one) */
	int64_t runs;        /* finished runs (not running) */
	int64_t failures;    /* finished with a result other than success */
	int64_t p50_ns;      /* median duration (nearest rank) */
	int64_t p95_ns;      /* 95th percentile duration (nearest rank) */
	int64_t max_ns;
};

typedef int (*bgrun_store_stats_cb)(void *data,
				    const struct bgrun_stats_row *row);

/*
 * Calls cb once per display string among the events matching query
 * (limit ignored), in display order. Percentiles use the nearest-rank
 * method over the runs with a known duration.
 */
int bgrun_store_stats(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_stats_cb cb, void *data);

/*
 * Marks lost rows (as bgrun_store_mark_lost), then deletes every event
 * whose time is before older_than_ns, except rows still running, in one
 * transaction. *ret_deleted (optional) gets the number deleted.
 */
int bgrun_store_prune(struct bgrun_store *store, int64_t older_than_ns,
		      int64_t *ret_deleted);

/*
 * ===================================================================
 * THE SINK CLIENT (src/client.c, src/spool.c)
 * ===================================================================
 *
 * How programs record events: through the sink daemon (`logsink serve`)
 * when its socket answers, else straight into the store ("embedded"),
 * with the same outcome either way: when a put succeeds, the event is
 * committed in the store under its id, by the rules of bgrun_store_put
 * (so a retry, by whichever path, never adds a second row). The daemon
 * acknowledges an event only after the transaction holding it committed.
 *
 * An event is never dropped silently: when neither path works it is
 * written to the spool, the directory <db>.spool/ beside the database
 * (one file per event, written atomically: a temporary file, fsync,
 * rename), the put fails, and bgrun_sink_spooled() says it was kept. The
 * daemon (when it starts, and every 30 s) and the next embedded writer
 * store what the spool holds (bgrun_sink_replay).
 *
 * The daemon's socket is $BGRUN_SOCKET, else
 * $XDG_RUNTIME_DIR/bgrun/sink.sock, else /tmp/bgrun-UID/sink.sock. A
 * daemon is used only if the directory holding its socket belongs to
 * the user and nobody else may write to it, the process listening runs
 * as the user or as root (its kernel credentials are checked), and it
 * writes the same database (same device and inode) as the sink would.
 *
 * The wire protocol is docs/protocol.md. Nothing here prints, installs a
 * signal handler (writes use MSG_NOSIGNAL) or forks (the daemon is
 * started with bgrun_spawn).
 *
 * THREAD SAFETY: a sink is used by one thread at a time; open one per
 * thread that records events.
 */
struct bgrun_sink;

enum bgrun_sink_mode {
	/*
	 * From $BGRUN_SINK: "auto", "embedded" or "daemon" as below; unset
	 * or empty: BGRUN_SINK_TRY. Any other value makes open -EINVAL.
	 */
	BGRUN_SINK_ENV = 0,
	BGRUN_SINK_TRY,      /* the daemon if its socket answers, else embedded */
	/*
	 * As TRY, but when no daemon answers, one is started first
	 * (`logsink --db DB serve --socket PATH --exit-idle 10m`, detached,
	 * with bgrun_spawn) and waited for (at most timeout_ms).
	 */
	BGRUN_SINK_AUTO,
	BGRUN_SINK_EMBEDDED, /* the store only, never the daemon */
	BGRUN_SINK_DAEMON,   /* the daemon only: else the spool */
};

/* Plain data: start from BGRUN_SINK_OPTS_INIT. Strings are copied. */
struct bgrun_sink_opts {
	enum bgrun_sink_mode mode;
	const char *db;      /* the store; NULL: bgrun_store_default_path() */
	const char *socket;  /* NULL: bgrun_sink_default_socket() */
	/* BGRUN_SINK_AUTO's program: NULL: $BGRUN_LOGSINK, else logsink in PATH. */
	const char *logsink;
	/* The longest wait for the daemon (an ack, a start); 0: 30 s. */
	int timeout_ms;
};

#define BGRUN_SINK_OPTS_INIT { .mode = BGRUN_SINK_ENV }

/* What a successful put returns: the path the events took. */
#define BGRUN_SINK_VIA_DAEMON 1
#define BGRUN_SINK_VIA_STORE 2

/*
 * The daemon's socket path, as described above; *ret_path is malloc'd.
 * -ENAMETOOLONG if it does not fit in sockaddr_un's sun_path (107 bytes).
 */
int bgrun_sink_default_socket(char **ret_path);

/*
 * Makes a sink. Nothing is connected or opened yet: that happens at the
 * first put. -EINVAL (a bad mode or $BGRUN_SINK), -ENOMEM.
 */
int bgrun_sink_open(const struct bgrun_sink_opts *opts,
		    struct bgrun_sink **ret_sink);

/*
 * Records one event (borrowed). Blocks until it is committed: through
 * the daemon (a connection is kept for the next puts, and re-made once
 * if it broke), else, unless the mode is DAEMON, through the embedded
 * store (opened once, kept open; the spool is replayed when it opens).
 * Returns BGRUN_SINK_VIA_DAEMON or BGRUN_SINK_VIA_STORE; -EINVAL for an
 * event the store (the daemon's or the embedded one) refuses: not
 * spooled, it never could be stored; another -errno when no path worked,
 * the event then being in the spool if bgrun_sink_spooled() says so (one
 * that no store could judge may be spooled, and is set aside as *.bad
 * when replayed). bgrun_sink_errmsg() explains.
 */
int bgrun_sink_put(struct bgrun_sink *sink, const struct bgrun_event *ev);

/*
 * Records n events (borrowed), pipelined to the daemon without waiting
 * for each ack. Each event is stored on its own (not all-or-none as with
 * bgrun_store_put_batch), by the path that works for it. Returns the
 * last path used (VIA_STORE if any went there) when all were stored,
 * else the first failure, as bgrun_sink_put.
 */
int bgrun_sink_put_batch(struct bgrun_sink *sink,
			 const struct bgrun_event *evs, size_t n);

/*
 * Records one event through the daemon alone, for a program that must
 * start fast and so does not link the store (SQLite): no sink object, no
 * embedded store, no spool; opts (NULL: the defaults) as for
 * bgrun_sink_open, $BGRUN_SINK included: AUTO may start the daemon,
 * EMBEDDED gives -ENOTCONN at once, a bad mode -EINVAL. Returns
 * BGRUN_SINK_VIA_DAEMON once the event is committed, else -errno with a
 * line in errmsg (size bytes, may be NULL): the caller then takes the
 * other paths, e.g. by handing the event to bgrun_sink_put in a program
 * that links the store (same id: never a second row). In libbgrun, this
 * function and what it uses never reference the store, so a program
 * linking only it does not load libsqlite3.
 */
int bgrun_sink_put_daemon(const struct bgrun_sink_opts *opts,
			  const struct bgrun_event *ev, char *errmsg,
			  size_t size);

/* Whether the last failed put left its (valid) events in the spool. */
bool bgrun_sink_spooled(const struct bgrun_sink *sink);

/* One line about the last failure ("" if none); valid until the next call. */
const char *bgrun_sink_errmsg(const struct bgrun_sink *sink);

/* Closes the connection and the store, frees the sink; accepts NULL. */
void bgrun_sink_close(struct bgrun_sink *sink);

/*
 * The spool directory of the database db: "<db>.spool"; *ret_path is
 * malloc'd.
 */
int bgrun_sink_spool_dir(const char *db, char **ret_path);

/*
 * Stores the events of db's spool into store (opened on db, read-write),
 * in batches, deleting each file once its event is committed. A file that
 * is not a valid event, or an event the store refuses, is renamed to
 * NAME.bad and left for people to look at. Safe against other replays of
 * the same spool (an event stored twice is one row). *ret_count
 * (optional) gets how many events were stored. A missing spool is 0.
 */
int bgrun_sink_replay(struct bgrun_store *store, const char *db,
		      int64_t *ret_count);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_H */
