/* SPDX-License-Identifier: MIT */
/* bgrun/event.h: the event model: one record per command finish or Mercurial log event (libbgrun). */

#ifndef BGRUN_EVENT_H
#define BGRUN_EVENT_H

#include "bgrun/common.h"
#include "bgrun/spawn.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * EVENTS (src/event/)
 *
 * One event type describes everything that gets recorded: bgrun's own
 * launches, Mercurial's logtoprocess events (commandfinish, command,
 * commandexception, uiblocked, develwarn, ...), clone hooks. The store is
 * an SQLite database holding one row per event id.
 *
 * Unknown integers are BGRUN_NULL and unknown strings NULL; both are
 * stored as SQL NULL, never as a sentinel value.
 */

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
	const char *boot_id; /* this boot's id (bgrun/unix.h says where from) */
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
BGRUN_EXTERN void bgrun_event_init(struct bgrun_event *ev, const char *event,
		      const char *source);

/*
 * bgrun_event_init without what a local receiver knows better and the
 * sender pays most for: user and boot_id stay NULL (uid is set). No
 * getpwuid_r runs (its first call in a process reads the NSS
 * configuration and the password database: 0.1 ms or more) and no file
 * is read (the boot id: 10 to 30 µs). For an event handed to the daemon
 * (bgrun_sink_post), which names the sender's user from the
 * connection's credentials and fills in the boot it shares with the
 * sender; an event that may go anywhere else is completed first
 * (bgrun_event_complete).
 */
BGRUN_EXTERN void bgrun_event_init_lean(struct bgrun_event *ev, const char *event,
			   const char *source);

/*
 * Fills in what bgrun_event_init_lean left out, where still NULL: user
 * (bgrun_user_name of ev->uid) and boot_id (this boot's, bgrun_boot_id).
 */
BGRUN_EXTERN void bgrun_event_complete(struct bgrun_event *ev);

/*
 * This boot's id (bgrun/unix.h says where it comes from), read once, in
 * storage that lives until the process exits; NULL if it cannot be
 * learnt.
 */
BGRUN_EXTERN const char *bgrun_boot_id(void);

/*
 * The length of the valid UTF-8 sequence at s[0..n) (1 for ASCII), or 0 if
 * the bytes there are not valid UTF-8 (overlongs and surrogates included);
 * *ret_cp (optional) gets its code point.
 */
BGRUN_EXTERN size_t bgrun_utf8_decode(const char *s, size_t n, uint32_t *ret_cp);

/*
 * Writes a new unique event id, as bgrun_event_init does: a UUID v7 (RFC
 * 9562), the time in milliseconds first, then 74 bits from getrandom, so
 * that ids sort by time and stores index them at their end. Its first
 * characters are shared by everything made in the same minute or so: show
 * people its end (logsink does), which is random.
 */
BGRUN_EXTERN void bgrun_event_new_id(char id[BGRUN_EVENT_ID_MAX + 1]);

/*
 * Records how a command ended: pid, exit_code or signal (the other stays
 * BGRUN_NULL), core_dumped, result (success, failed or signaled), start,
 * end and duration, and the rusage fields. Other fields are untouched (a
 * supervisor that killed the command on a timeout sets result itself).
 */
BGRUN_EXTERN void bgrun_event_set_status(struct bgrun_event *ev,
			    const struct bgrun_status *st);

/*
 * The name of user uid (getpwuid_r, looked up once per uid), in storage
 * that lives until the process exits; NULL if the uid has no name or it
 * cannot be learned. bgrun_event_init names the caller's user with it; a
 * receiver of events names the sender's user with it when the sender
 * could not (logsink's daemon, for its statically linked front).
 */
BGRUN_EXTERN const char *bgrun_user_name(int64_t uid);

/*
 * The start time of process pid (in the platform's units: bgrun/unix.h),
 * or BGRUN_NULL if there is no such process.
 */
BGRUN_EXTERN int64_t bgrun_proc_starttime(bgrun_pid_t pid);

/*
 * The display string of argv, as described at struct bgrun_event.display:
 * *ret_display is malloc'd (the caller frees it). -ENOMEM, -EINVAL (argv
 * NULL). It is here because it defines that field (the store makes a
 * missing display with it); a program may call it to show a command the
 * same way.
 */
BGRUN_EXTERN int bgrun_argv_display(const char *const *argv, char **ret_display);

/*
 * Whether id (n bytes) is a possible event id: 1 to BGRUN_EVENT_ID_MAX
 * characters of [0-9A-Za-z._-].
 */
BGRUN_EXTERN bool bgrun_event_id_valid(const char *id, size_t n);

/*
 * IDS FOR PEOPLE. An event's short id, what tables show, is the last
 * BGRUN_EVENT_SHORT_ID characters of its id (all of a shorter id): the
 * random end of a UUID v7, whose start is its time and is shared by the
 * events of the same minute. Wherever an event id is typed (logsink show,
 * bgrun's verbs), the full id names its event, and so does any part of
 * it that no other event's id contains: the short id as shown, a few of
 * its characters, or any other piece of the id. A part that several ids
 * contain is ambiguous, and the programs list those events.
 */
#define BGRUN_EVENT_SHORT_ID 8

/* The short id of id (borrowed): a pointer into it. */
BGRUN_EXTERN const char *bgrun_event_short_id(const char *id);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_EVENT_H */
