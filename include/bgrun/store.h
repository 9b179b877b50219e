/* SPDX-License-Identifier: MIT */
/* bgrun/store.h: the event store: an SQLite database of events, written and queried (libbgrun-store). */

#ifndef BGRUN_STORE_H
#define BGRUN_STORE_H

#include "bgrun/common.h"
#include "bgrun/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * THE STORE (src/store/)
 *
 * An SQLite database in WAL mode, schema versioned by PRAGMA user_version
 * and marked by PRAGMA application_id 0x62677275 ("bgru"). Any number of
 * processes may open it at once, for reading and writing. Write
 * transactions of all processes are serialised by an advisory lock
 * (flock) on the file <db>-lock beside the database, so concurrent writers
 * wait for each other instead of failing with SQLITE_BUSY (and so that
 * SQLite 3.40's WAL-reset race cannot happen between them: checkpoints
 * are taken under the same lock). Waiters are served in the order they
 * came (a ticket queue in the lock file), and no wait is unbounded: after
 * $BGRUN_LOCK_TIMEOUT seconds (default 10), for instance behind a writer
 * that was stopped while it held the lock, a write fails with -ETIMEDOUT.
 *
 * Errors, beyond the usual -ENOMEM, -EIO, -ENOSPC, -EACCES:
 *   -EBADMSG  the file is not a bgrun store: not SQLite at all, corrupt,
 *             or an SQLite database of another application
 *   -EPROTO   a bgrun store of a schema version this library cannot use
 *             (newer, or older when opened read-only)
 *   -EROFS    a write on a store opened BGRUN_STORE_READONLY
 *   -EBUSY    another program (not using the lock) held the database
 *             longer than the busy timeout (10 s)
 *   -ETIMEDOUT another writer held the lock longer than the lock timeout
 *   -EINVAL   an invalid argument or event
 * After a failure bgrun_store_errmsg() gives a one-line explanation,
 * a failed bgrun_store_open included.
 *
 * THREAD SAFETY: a store is used by one thread at a time (open one per
 * thread, or lock around it). A store must not be used by a process
 * fork()ed after it was opened: the child opens its own. A writer that
 * stays open has its WAL checkpointed by a thread of the library's; a
 * fork() waits for a checkpoint of that thread under way (its wait for
 * the lock is at most 200 ms), so that the child's own store does not
 * inherit SQLite's half-made state of it.
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
BGRUN_EXTERN int bgrun_store_default_path(char **ret_path);

/*
 * Makes a store that is not open yet (see CONVENTIONS in bgrun.h):
 * -ENOMEM is its only failure, and *ret_store is untouched then. Open it
 * with bgrun_store_open or bgrun_store_open_scratch; free it with
 * bgrun_store_close, open or not. Any other call on a store that is not
 * open is -EINVAL.
 */
BGRUN_EXTERN int bgrun_store_new(struct bgrun_store **ret_store);

/*
 * Opens store (made by bgrun_store_new, not open) on the database at
 * path (borrowed).
 *
 * Read-write (flags 0): creates missing parent directories (mode 0700)
 * and the database (0600) and its lock file (0600), brings the schema up
 * to date (each migration step in its own transaction) and puts it in WAL
 * mode. A database whose application_id is not ours is refused unless it
 * is empty (application_id 0 and no tables). A path that is a symbolic
 * link is refused (-ELOOP), as SQLite refuses one for the -wal and -shm
 * files: a link to any file (an empty one) would make it a database.
 *
 * BGRUN_STORE_READONLY: opens with SQLITE_OPEN_READONLY and never writes:
 * it creates neither the database nor directories nor the lock file; a
 * missing file (or a database nothing was ever written to) is -ENOENT.
 * (SQLite itself creates the -wal and -shm files beside a WAL database
 * for any reader, when it can. Where it cannot, in a directory the caller
 * may not write or on a read-only file system (a snapshot, a backup), the
 * file is read as immutable if no writer is active: no -wal file.)
 *
 * On failure the store is left as bgrun_store_new made it (it may be
 * opened again, or closed), and bgrun_store_errmsg(store) is a one-line
 * message naming the path, fit to print after the program's name.
 */
BGRUN_EXTERN int bgrun_store_open(struct bgrun_store *store, const char *path,
				  unsigned flags);

/* Closes the store (open or not) and frees it; accepts NULL. */
BGRUN_EXTERN void bgrun_store_close(struct bgrun_store *store);

/*
 * A one-line message about the last failed call on store ("" if none).
 * Valid until the next call on the store.
 */
BGRUN_EXTERN const char *bgrun_store_errmsg(const struct bgrun_store *store);

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
BGRUN_EXTERN int bgrun_store_put(struct bgrun_store *store, const struct bgrun_event *ev);

/*
 * Writes n events in one transaction (all or none): the same rules as
 * bgrun_store_put for each. Returns the number of rows inserted or
 * changed.
 */
BGRUN_EXTERN int bgrun_store_put_batch(struct bgrun_store *store,
			  const struct bgrun_event *evs, size_t n);

/*
 * PREPARED EVENTS: a write in two steps, for a program with a writer
 * thread (the sink daemon). bgrun_store_prepare() does all the per-event
 * work that needs no database file (checks, argv's and the options' JSON,
 * the display string, UTF-8 repair) and may run on another thread, on a
 * store of its own: a scratch store (bgrun_store_open_scratch), an
 * in-memory connection that takes no writes. bgrun_store_put_prepared()
 * is then only the SQL writes. bgrun_store_put_batch() is the same two
 * steps on one thread.
 */
struct bgrun_store_prepared;

/*
 * Opens store (made by bgrun_store_new, not open) without a file, for
 * bgrun_store_prepare() only; failures as for bgrun_store_open.
 */
BGRUN_EXTERN int bgrun_store_open_scratch(struct bgrun_store *store);

/*
 * Checks ev and makes *ret_prepared, which points to ev (borrowed: ev must
 * outlive it). -EINVAL for an event the store refuses, the reason in
 * bgrun_store_errmsg(store); -ENOMEM.
 */
BGRUN_EXTERN int bgrun_store_prepare(struct bgrun_store *store,
				     const struct bgrun_event *ev,
				     struct bgrun_store_prepared **ret_prepared);

/* Frees a prepared event; accepts NULL. */
BGRUN_EXTERN void bgrun_store_prepared_free(struct bgrun_store_prepared *p);

/*
 * Writes n prepared events in one transaction, all or none, by the rules
 * of bgrun_store_put. Returns the number of rows inserted or changed.
 */
BGRUN_EXTERN int bgrun_store_put_prepared(
	struct bgrun_store *store,
	struct bgrun_store_prepared *const *preps, size_t n);

/*
 * Lost rows. A `running` row is lost when its supervisor is gone and its
 * command with it. The supervisor is gone when the row's boot_id differs
 * from the current boot's, or no process supervisor_pid exists (or it is
 * a zombie), or its start time differs from supervisor_start. The command
 * is gone when no live process pid exists that started within 5 seconds
 * of start_ns (so a command whose supervisor was killed is `running` for
 * as long as it runs). (A row of this boot without supervisor_pid cannot
 * be judged and stays running; so does every row of this boot when /proc
 * is unreadable.) Queries report such rows as `lost` while the stored row
 * stays `running`; bgrun_store_mark_lost() stores `lost` in them and sets
 * *ret_count (optional) to how many.
 */
BGRUN_EXTERN int bgrun_store_mark_lost(struct bgrun_store *store, int64_t *ret_count);

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
	const char *host;     /* the event's host */
	const char *id_part;  /* ids containing this (bgrun/event.h IDS FOR PEOPLE) */
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
BGRUN_EXTERN int bgrun_store_query(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_row_cb cb, void *data);

/*
 * Calls cb once for the event whose id is id_or_part or, failing that,
 * the only one whose id contains it (see IDS FOR PEOPLE in
 * bgrun/event.h). -ENOENT: none; -EEXIST: several ids contain it (query
 * with id_part to list them); -EINVAL: not a possible part of an id.
 * bgrun_store_errmsg() then says so, in the words logsink uses.
 */
BGRUN_EXTERN int bgrun_store_get(struct bgrun_store *store, const char *id_or_part,
		    bgrun_store_row_cb cb, void *data);

/* Per-command statistics (durations in ns, BGRUN_NULL if none known). */
struct bgrun_stats_row {
	/*
	 * The group's key: the command (bgrun_store_stats), or what
	 * bgrun_store_stats_by groups by; NULL for events without one.
	 */
	const char *display;
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
BGRUN_EXTERN int bgrun_store_stats(struct bgrun_store *store,
		      const struct bgrun_query *query,
		      bgrun_store_stats_cb cb, void *data);

/* What bgrun_store_stats_by groups events by. */
enum bgrun_stats_key {
	BGRUN_STATS_COMMAND = 0, /* the command as shown (display) */
	BGRUN_STATS_ARGV0,       /* the program, argv[0] as given */
	BGRUN_STATS_TAG,
	BGRUN_STATS_HOST,
	BGRUN_STATS_DAY,         /* the local day it started, "2026-12-01" */
	BGRUN_STATS_N_KEYS       /* how many there are (not a key) */
};

/* bgrun_store_stats() with rows per key instead of per command, in key order. */
BGRUN_EXTERN int bgrun_store_stats_by(struct bgrun_store *store,
				      const struct bgrun_query *query,
				      enum bgrun_stats_key key,
				      bgrun_store_stats_cb cb, void *data);

/* What bgrun_store_prune_with deletes. Plain data: start from BGRUN_PRUNE_INIT. */
struct bgrun_prune {
	/* Events whose time is before this go; BGRUN_NULL: of any age. */
	int64_t older_than_ns;
	/*
	 * But the newest `keep` finished events of each command (of each
	 * event name, for events without a command) stay; 0: none is kept
	 * for that reason.
	 */
	int64_t keep;
	/* Count what would go, and change nothing. */
	bool dry_run;
};

#define BGRUN_PRUNE_INIT { .older_than_ns = BGRUN_NULL }

struct bgrun_prune_result {
	int64_t deleted;     /* events deleted (dry run: that would be) */
	/*
	 * How much smaller the database file is; for a dry run, what the
	 * deleted rows' pages hold, about what a prune would give back.
	 */
	int64_t freed_bytes;
	/*
	 * The deleted events' kept output (bgrun's files, options "output"
	 * "kept", named ID.log, ID.out or ID.err) and kept environment
	 * (options "env_file", named ID.env): files removed (dry run: that
	 * would be) and the space they took.
	 */
	int64_t output_files;
	int64_t output_bytes;
};

/*
 * Marks lost rows (as bgrun_store_mark_lost), then deletes the events
 * that how chooses, never a running one, in one transaction, removes the
 * output files bgrun kept for them (once the deletion is committed), then gives
 * the freed pages back to the file system (incremental vacuum; a file
 * made before stores had auto_vacuum is rebuilt once, by VACUUM) and
 * checkpoints the WAL, so that the file is smaller when this returns.
 * -EINVAL if how sets neither an age nor a number to keep. *ret_result
 * (optional) says how many went and how many bytes were freed.
 */
BGRUN_EXTERN int bgrun_store_prune_with(struct bgrun_store *store,
					const struct bgrun_prune *how,
					struct bgrun_prune_result *ret_result);

/* bgrun_store_prune_with() by age alone: *ret_deleted (optional). */
BGRUN_EXTERN int bgrun_store_prune(struct bgrun_store *store, int64_t older_than_ns,
		      int64_t *ret_deleted);

/*
 * CHANGES, for a reader that follows the store (the sink daemon's
 * forwarding to PostgreSQL). Every write that inserts or changes a row,
 * and marking a row lost, gives the row the next number of a counter that
 * only grows (pruning takes no number back): its change number. The rows
 * whose number is above N are then exactly what changed since a reader had
 * read up to N, each once and in its latest state. Writes are serialised,
 * so numbers are committed in order: a reader never finds a smaller
 * number appear after a larger one.
 */
struct bgrun_store_change {
	int64_t seq;         /* the row's change number (> 0) */
	int64_t recorded_ns; /* when the row was first written; never changes */
	int64_t time_ns;     /* start_ns, else recorded_ns */
	/*
	 * The row as stored: ev.result is the stored result (never made
	 * `lost` in passing: marking it lost is a change of its own), and
	 * ev.argv is NULL: argv_json has it, the JSON array the store keeps
	 * (an argument that is not UTF-8 as {"hex": "..."}), NULL if unknown.
	 * ev.options_json is the stored options object, or NULL.
	 */
	struct bgrun_event ev;
	const char *argv_json;
};

/* As bgrun_store_row_cb: valid during the call; non-zero stops. */
typedef int (*bgrun_store_change_cb)(void *data,
				     const struct bgrun_store_change *change);

/*
 * Calls cb for each row whose change number is above after_seq, in the
 * order of the numbers, at most limit rows (0: all), all read from one
 * snapshot of the store. Returns 0 when all were given, else the
 * callback's value or -errno.
 */
BGRUN_EXTERN int bgrun_store_changes(struct bgrun_store *store,
				     int64_t after_seq, int64_t limit,
				     bgrun_store_change_cb cb, void *data);

/*
 * The number of the latest change (0: none yet) into *ret_seq. A write
 * that changes nothing takes no number, so a reader that read up to it
 * has read every change; only pruning the latest changed row leaves it
 * above every row's number.
 */
BGRUN_EXTERN int bgrun_store_last_change(struct bgrun_store *store,
					 int64_t *ret_seq);

/*
 * Cursors: named change numbers kept in the store, for readers of
 * changes to say how far they got (a forwarding target each), committed
 * when bgrun_store_cursor_set returns. name is borrowed, any non-empty
 * text. *ret_seq is 0 for a cursor never set.
 */
BGRUN_EXTERN int bgrun_store_cursor_get(struct bgrun_store *store,
					const char *name, int64_t *ret_seq);
BGRUN_EXTERN int bgrun_store_cursor_set(struct bgrun_store *store,
					const char *name, int64_t seq);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_STORE_H */
