/* SPDX-License-Identifier: MIT */
/* bgrun/sink.h: the sink client: record events through the daemon, the store, or the spool. */

#ifndef BGRUN_SINK_H
#define BGRUN_SINK_H

#include "bgrun/common.h"
#include "bgrun/event.h"
#include "bgrun/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ===================================================================
 * THE SINK CLIENT (src/sink/)
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
 * $XDG_RUNTIME_DIR/bgrun/sink.sock, else /tmp/bgrun-UID/sink.sock
 * (for root /run/bgrun/sink.sock: no other user can make it first). A
 * daemon is used only if the directory holding its socket belongs to
 * the user alone (bgrun_sink_check_dir), the process listening runs
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
BGRUN_EXTERN int bgrun_sink_default_socket(char **ret_path);

/*
 * Whether dir (borrowed) may hold the daemon's socket: a directory (not
 * a symbolic link) owned by the effective uid, with no permission at all
 * for group or others (mode 0700 or less). 0; -ENOENT (missing),
 * -ENOTDIR, -EPERM (not the user's alone), or another -errno of lstat.
 * The client uses no daemon whose socket's directory fails this, and
 * `logsink serve` serves from no such directory: one rule for both.
 */
BGRUN_EXTERN int bgrun_sink_check_dir(const char *dir);

/*
 * Makes a sink that is not open yet (see CONVENTIONS in bgrun.h):
 * -ENOMEM is its only failure, and *ret_sink is untouched then. Free it
 * with bgrun_sink_close, open or not. A put on a sink that is not open is
 * -EINVAL. (libbgrun, as the calls below that need no store.)
 */
BGRUN_EXTERN int bgrun_sink_new(struct bgrun_sink **ret_sink);

/*
 * Opens sink (made by bgrun_sink_new, not open) with opts (NULL: the
 * defaults). Nothing is connected or opened yet: that happens at the
 * first put. -EINVAL (a bad mode, $BGRUN_SINK or timeout), -ENOMEM; on
 * failure bgrun_sink_errmsg(sink) says why and the sink is left as
 * bgrun_sink_new made it.
 */
BGRUN_EXTERN int bgrun_sink_open(struct bgrun_sink *sink,
				 const struct bgrun_sink_opts *opts);

/*
 * Opens now what the first put would otherwise open on its way: the
 * daemon's connection (starting the daemon for BGRUN_SINK_AUTO), else,
 * unless the mode is DAEMON, the embedded store (replaying the spool).
 * Nothing is written or spooled. A program that records an event at its
 * end (Mercurial's commandfinish) calls it early, in another thread, so
 * that the put itself only sends or inserts. Returns
 * BGRUN_SINK_VIA_DAEMON or BGRUN_SINK_VIA_STORE, the path the next put
 * will try first, or -errno with bgrun_sink_errmsg() set; a put after a
 * failure tries every path again, as always.
 */
BGRUN_EXTERN int bgrun_sink_connect(struct bgrun_sink *sink);

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
BGRUN_EXTERN int bgrun_sink_put(struct bgrun_sink *sink, const struct bgrun_event *ev);

/*
 * Records n events (borrowed), pipelined to the daemon without waiting
 * for each ack. Each event is stored on its own (not all-or-none as with
 * bgrun_store_put_batch), by the path that works for it. Returns the
 * last path used (VIA_STORE if any went there) when all were stored,
 * else the first failure, as bgrun_sink_put.
 */
BGRUN_EXTERN int bgrun_sink_put_batch(struct bgrun_sink *sink,
			 const struct bgrun_event *evs, size_t n);

/*
 * Records one event (borrowed) through the daemon alone, for a program
 * that must start fast and so does not link the store (SQLite): never
 * the embedded store nor the spool. The sink's connection is made (AUTO
 * may start the daemon) and kept as for bgrun_sink_put; an EMBEDDED sink
 * gives -ENOTCONN at once. Returns BGRUN_SINK_VIA_DAEMON once the event
 * is committed, else -errno, bgrun_sink_errmsg() explaining: the caller
 * then takes the other paths, e.g. by handing the event to
 * bgrun_sink_put in a program that links the store (same id: never a
 * second row). In libbgrun: this function and the sink object's calls
 * (new, open, errmsg, spooled, close) never reference the store, so a
 * program linking only libbgrun does not load libsqlite3.
 */
BGRUN_EXTERN int bgrun_sink_put_daemon(struct bgrun_sink *sink,
				       const struct bgrun_event *ev);

/*
 * bgrun_sink_connect's first half, in libbgrun (no store, no SQLite):
 * connects to the daemon now (starting one for BGRUN_SINK_AUTO) unless
 * the sink is connected already, so that a later bgrun_sink_put_daemon
 * only sends and waits for the ack. BGRUN_SINK_VIA_DAEMON, or -errno
 * with bgrun_sink_errmsg() set (-ENOTCONN at once for an EMBEDDED sink);
 * the caller may then take the store's path (bgrun_sink_connect).
 */
BGRUN_EXTERN int bgrun_sink_connect_daemon(struct bgrun_sink *sink);

/*
 * Connects to the daemon without waiting for its answer, in libbgrun
 * (no thread, no store): the connection is made and the HELLO written;
 * the next call that uses the connection reads the answer and checks it
 * (the daemon's database: -EXDEV then). For a program that records an
 * event at its end (Mercurial's commandfinish): called early, it costs a
 * connect and a write. Never starts a daemon. BGRUN_SINK_VIA_DAEMON
 * (also when connected already), or -errno with bgrun_sink_errmsg() set:
 * -ENOENT or -ECONNREFUSED when no daemon serves the socket (the caller
 * may then take bgrun_sink_connect, which starts one for AUTO or opens
 * the store), -ENOTCONN at once for an EMBEDDED sink.
 */
BGRUN_EXTERN int bgrun_sink_preconnect(struct bgrun_sink *sink);

/*
 * Hands one event (borrowed; its frame is copied) to the daemon without
 * waiting for its commit, in libbgrun: 0 once the whole frame is written
 * to the connection, which is made first as for bgrun_sink_put_daemon
 * (a HELLO sent ahead is answered by then). -errno when it was not
 * posted, bgrun_sink_errmsg() saying why (-ENOTCONN for an EMBEDDED
 * sink, -EINVAL for an event that cannot be encoded, the connection's
 * -errno): the caller records it another way (bgrun_sink_put). Answers
 * that came meanwhile for earlier posts are taken in as they come.
 * Every posted event is settled (bgrun_sink_settle) before the sink is
 * closed: bgrun_sink_close reads no answer, and an event the daemon did
 * not commit would then be lost without a word.
 */
BGRUN_EXTERN int bgrun_sink_post(struct bgrun_sink *sink, const struct bgrun_event *ev);

/*
 * What bgrun_sink_settle gives back, for each posted event the daemon did
 * not commit: the event (decoded; valid during the call), error -EINVAL
 * for one the daemon refused as invalid (no store would take it), else
 * why it is not known to be committed (-EIO: the daemon's store failed
 * it; -ECONNRESET: the connection broke before the answer; -ETIMEDOUT:
 * none came in time; a refusal's -errno), and a one-line why.
 */
typedef void (*bgrun_sink_unsettled_fn)(void *ctx, const struct bgrun_event *ev,
					int error, const char *why);

/*
 * Waits, up to the sink's timeout, for the daemon's answers to the
 * events posted and not settled yet, then calls fn (if not NULL) for
 * each one the daemon did not commit, oldest first, and forgets them
 * all. Returns how many went to fn (0: every posted event is committed),
 * or -EINVAL for a NULL sink. An event given back may still have been
 * committed (a broken connection, a late answer): put again, it keeps its
 * id, so the store never holds it twice.
 */
BGRUN_EXTERN int bgrun_sink_settle(struct bgrun_sink *sink, bgrun_sink_unsettled_fn fn,
				   void *ctx);

/* What the daemon says of itself (bgrun_sink_daemon_status). */
struct bgrun_sink_daemon_status {
	int64_t pid;
	int64_t started_ns; /* when it started (realtime); BGRUN_NULL: not said */
	int64_t events;     /* events it committed since; BGRUN_NULL: not said */
	int64_t queued;     /* events waiting for its writer; BGRUN_NULL: not said */
	char db[4097];      /* the database it writes ("" if not said) */
};

/*
 * Asks the daemon of sink's socket how it is, on a connection of its
 * own (never starting one, whatever the mode): the daemon answers a
 * HELLO with its pid, start time, committed events and queue depth
 * (docs/protocol.md). The same checks as for a put apply (the socket's
 * directory, the daemon's uid, the database it writes: -EXDEV when it is
 * not sink's). -ENOENT or -ECONNREFUSED: no daemon serves the socket.
 * *ret_status is untouched on failure; bgrun_sink_errmsg() explains.
 */
BGRUN_EXTERN int bgrun_sink_daemon_status(struct bgrun_sink *sink,
					  struct bgrun_sink_daemon_status *ret_status);

/* Whether the last failed put left its (valid) events in the spool. */
BGRUN_EXTERN bool bgrun_sink_spooled(const struct bgrun_sink *sink);

/*
 * One line about the last failed call on sink ("" if none), a failed
 * bgrun_sink_open included; valid until the next call. Accepts NULL.
 */
BGRUN_EXTERN const char *bgrun_sink_errmsg(const struct bgrun_sink *sink);

/* Closes the connection and the store, frees the sink (open or not); accepts NULL. */
BGRUN_EXTERN void bgrun_sink_close(struct bgrun_sink *sink);

/*
 * The spool directory of the database db: "<db>.spool"; *ret_path is
 * malloc'd.
 */
BGRUN_EXTERN int bgrun_sink_spool_dir(const char *db, char **ret_path);

/*
 * Whether the event log db (borrowed) can be written, judged without
 * opening it (no SQLite, a few system calls: for a launcher to say so
 * before it launches): the file, or the nearest directory above it when
 * it does not exist yet, must be writable, its file system neither
 * read-only nor full (under 64 KiB free), and a file with bytes in it
 * must begin as an SQLite database does. 0 if it looks writable; else
 * -EROFS, -ENOSPC, -EACCES, -EBADMSG (not an SQLite database), -ENOENT
 * (no path) or another -errno, and why (size bytes, optional) gets one
 * line saying what. A write may still fail where this passes (a corrupt
 * page, a lock held too long): the put says so then.
 */
BGRUN_EXTERN int bgrun_sink_check_log(const char *db, char *why, size_t size);

/*
 * (bgrun_sink_check_log, continued.) A write that failed because the
 * database is damaged past its header ("database disk image is
 * malformed") leaves its reason in the spool (bgrun_sink_spool_reason):
 * while events wait and the file is the same, unchanged, the check fails
 * with -EBADMSG and that message.
 */

/*
 * Why the events waiting in db's spool are there: the -errno the last
 * writer that kept one there met, and why (size bytes, optional) its
 * one-line message ("...: database disk image is malformed", "...-lock:
 * another writer has held the log's lock for over 10 s (stopped?)"); 0
 * when none waits or no reason was kept. The replay that empties the
 * spool forgets the reason.
 */
BGRUN_EXTERN int bgrun_sink_spool_reason(const char *db, char *why,
					 size_t size);

/* What bgrun_sink_event_fate returns for an event not stored. */
#define BGRUN_SINK_KEPT 1    /* it waits in db's spool */
#define BGRUN_SINK_DROPPED 2 /* it was counted as dropped */

/*
 * Whether the event id (borrowed) of the log db was kept in its spool or
 * dropped (socket: as for bgrun_sink_dropped_count, NULL: the default):
 * BGRUN_SINK_KEPT, BGRUN_SINK_DROPPED, 0 if neither (stored, or not
 * written at all), or -errno. No SQLite: for a launcher that waited for
 * its recorder, to say what became of the record.
 */
BGRUN_EXTERN int bgrun_sink_event_fate(const char *db, const char *socket,
				       const char *id);

/* The same judgement for db's spool (bgrun_sink_spool_dir), made or not. */
BGRUN_EXTERN int bgrun_sink_check_spool(const char *db, char *why,
					size_t size);

/*
 * How many events db's spool holds: waiting to be stored (*.ev) and set
 * aside (*.ev.bad), each event once however many of its writes are
 * there; either pointer may be NULL. A missing spool is 0.
 */
BGRUN_EXTERN int bgrun_sink_spool_count(const char *db, int64_t *ret_waiting,
					int64_t *ret_bad);

/*
 * DROPPED EVENTS. An event that could be neither stored nor spooled (the
 * disk of the log full, read-only...) is counted, as journald and rsyslog
 * count what they drop: one line "TIME_NS<TAB>ID<TAB>ERRNO<TAB>DB" is
 * appended to the file "dropped" in the socket's directory (socket: the
 * sink's socket path, NULL: bgrun_sink_default_socket), on
 * $XDG_RUNTIME_DIR when there is one: a tmpfs, which forgets at reboot.
 * bgrun_sink_dropped_path gives that file (malloc'd); dropped_count how
 * many of its lines are db's (a missing file is 0).
 */
BGRUN_EXTERN int bgrun_sink_dropped_path(const char *socket, char **ret_path);
BGRUN_EXTERN int bgrun_sink_dropped_count(const char *socket, const char *db,
					  int64_t *ret_count);

/*
 * Stores the events of db's spool into store (opened on db, read-write),
 * in batches, deleting each file once its event is committed. A file that
 * is not a valid event, or an event the store refuses, is renamed to
 * NAME.bad and left for people to look at. One replay of a spool runs at
 * a time (POSIX: a flock on its directory; Windows: a lock on the file
 * .replay-lock in it): while another runs, this returns 0 at once,
 * *ret_count 0, and that one stores what waits (where the file system
 * has no locks, or on Windows that file cannot be made, replays overlap,
 * and an event stored twice is one row). *ret_count (optional) gets how
 * many events were stored. A missing spool is 0.
 */
BGRUN_EXTERN int bgrun_sink_replay(struct bgrun_store *store, const char *db,
		      int64_t *ret_count);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_SINK_H */
