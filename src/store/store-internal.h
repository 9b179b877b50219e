/* SPDX-License-Identifier: MIT */
/* store-internal.h: private declarations of the event model and the store. */

#ifndef BGRUN_STORE_INTERNAL_H
#define BGRUN_STORE_INTERNAL_H

#include "bgrun/store.h"
#include "bgrun/filters.h"
#include "bgrun/sink.h"
#include "bgrun/wire.h"
#include "common/common.h"
#include "event-fields.h"
#include "platform.h"
#include "store-test.h"

#include <sqlite3.h>

/* PRAGMA application_id of a bgrun store: "bgru". */
#define BGRUN__STORE_APP_ID 0x62677275
/* The schema version this library writes (PRAGMA user_version). */
#define BGRUN__STORE_VERSION 3
/* How long SQLite waits for a program that does not take our lock. */
#define BGRUN__STORE_BUSY_MS 10000
/* How long a writer waits for our lock ($BGRUN_LOCK_TIMEOUT overrides). */
#define BGRUN__STORE_LOCK_MS 10000
/*
 * WAL pages after which the store of the writer that committed has its
 * thread checkpoint (see bgrun__store_checkpoint and store-checkpoint.c's
 * checkpointer; SQLite's automatic checkpoint is off). A write dirties
 * about 7 pages (the row and its indexes), so that is every 70 events or
 * so, and the WAL stays near 2 MiB. Every writer waits while a
 * checkpoint holds the lock, so a checkpoint must be short rather than
 * rare: measured with bench/sink-bench (8 and 32 writer processes, and
 * the daemon), 500 pages against 1000, once the thread's checkpoints
 * worked (docs/benchmarks.md, "The checkpointer that never
 * checkpointed"): p99 at 32 writers 3.4 to 4.3 ms against 4.3 to 5.8,
 * the events per second the same or more; one writer alone pays more
 * (p99 1.0 to 1.7 ms against 0.5 to 0.7). Earlier, 4000 had given a
 * higher p99 than 1000.
 */
#ifndef BGRUN__STORE_CHECKPOINT_PAGES /* -D for a bench's comparison */
#define BGRUN__STORE_CHECKPOINT_PAGES 500
#endif
/*
 * The WAL pages at which the writer that committed checkpoints in line,
 * not through its thread, which has fallen behind (store-checkpoint.c's
 * bgrun__store_checkpoint_soon): the WAL's bound, about 8 MiB.
 */
#define BGRUN__STORE_CHECKPOINT_INLINE_PAGES (4 * BGRUN__STORE_CHECKPOINT_PAGES)
/*
 * The WAL a closing writer leaves for the next opener, in pages: below
 * it the last connection closes without a checkpoint (the WAL, flushed,
 * holds its commits), at or above it the close checkpoints and truncates
 * the WAL. The -wal and -shm files stay (SQLITE_FCNTL_PERSIST_WAL). The
 * next process to open rebuilds the WAL index by reading what is left,
 * so this bounds that read (32 pages: 128 KiB, about four events' worth
 * of a single writer). A short-lived writer (`logsink send`, one event)
 * used to pay a checkpoint on every close: the WAL's header sync, the
 * database's sync, and the -wal and -shm files made and unlinked each
 * time (bench/sink-bench --only hook, README).
 */
#ifndef BGRUN__STORE_CLOSE_CHECKPOINT_PAGES /* -D for a bench's comparison */
#define BGRUN__STORE_CLOSE_CHECKPOINT_PAGES 32
#endif
/* The WAL's file is cut back to this after a checkpoint reset it. */
#define BGRUN__STORE_WAL_LIMIT_BYTES "4194304"
/* How long that writer waits for the lock to checkpoint. */
#define BGRUN__STORE_CHECKPOINT_WAIT_MS 200
/*
 * The page cache of a read-write connection, in KiB (as a negative
 * cache_size; SQLite's default is 2000). A writer touches the right edges
 * of the table and its indexes (ids are time-ordered, UUID v7), but one
 * transaction of the sink daemon (up to 2048 events) dirties about 250
 * pages, which must fit: a spilled cache writes to the WAL mid-transaction.
 * Measured with bench/sink-bench: 2, 4 and 8 MiB give the same events/s;
 * memory is only taken as pages are used.
 */
#define BGRUN__STORE_CACHE_KIB "-4096"

/*
 * The plain columns of the events table are the text and int fields of
 * event-fields.h, each named like its member of struct bgrun_event. The
 * others (id, argv, options, and the store's own recorded_ns and
 * time_ns) are handled by hand. Every statement lists the plain columns
 * in the table's order, so that a column's position is known:
 * BGRUN__ROW_PLAIN and BGRUN__UPSERT_PLAIN are where they start.
 */
/* Pieces of SQL made from the plain columns, for BGRUN__EVENT_FIELDS(). */
#define BGRUN__SQL_NAME(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, ", " #column)
#define BGRUN__SQL_JSON(name, kind, column, sql, tag) \
	BGRUN__IF_PLAIN(kind, ", '" #column "', " #column)

/*
 * A row as read back: id, recorded_ns, time_ns, argv, options, then the
 * plain columns from BGRUN__ROW_PLAIN, then the row as JSON.
 */
#define BGRUN__SQL_ROW \
	"SELECT id, recorded_ns, time_ns, argv, options" \
	BGRUN__EVENT_FIELDS(BGRUN__SQL_NAME) \
	", json_object('id', id" \
	BGRUN__EVENT_FIELDS(BGRUN__SQL_JSON) \
	", 'argv', json(argv), 'options', json(options)" \
	", 'recorded_ns', recorded_ns, 'time_ns', time_ns) FROM events"
#define BGRUN__ROW_PLAIN 5
#define BGRUN__ROW_JSON (BGRUN__ROW_PLAIN + BGRUN__N_COLUMNS)
/*
 * The parameters of the insert and the upsert: :id, :recorded_ns, :argv,
 * :options, then the plain columns from BGRUN__UPSERT_PLAIN, then
 * :changed_seq.
 */
#define BGRUN__UPSERT_PLAIN 5
#define BGRUN__UPSERT_SEQ (BGRUN__UPSERT_PLAIN + BGRUN__N_COLUMNS)

/* The plain columns, in the table's order (store.c). */
struct bgrun__column {
	const char *name;
	size_t offset;  /* in struct bgrun_event */
	bool text;      /* const char * (true) or int64_t (false) */
};
extern const struct bgrun__column bgrun__columns[BGRUN__N_COLUMNS];

/* Statements kept prepared for the life of the store. */
enum bgrun__stmt_id {
	BGRUN__STMT_BEGIN,
	BGRUN__STMT_COMMIT,
	BGRUN__STMT_ROLLBACK,
	BGRUN__STMT_ARGV_DECODE,
	BGRUN__STMT_OPTIONS_CHECK,
	BGRUN__STMT_OPTIONS_ADD,
	BGRUN__STMT_INSERT,
	BGRUN__STMT_UPSERT,
	BGRUN__STMT_JSON_LOST,
	BGRUN__STMT_GET_EXACT,
	BGRUN__STMT_GET_PART,
	BGRUN__STMT_RUNNING,
	BGRUN__STMT_MARK_LOST,
	BGRUN__STMT_SEQ_GET,
	BGRUN__STMT_SEQ_SET,
	BGRUN__STMT_CHANGES,
	BGRUN__STMT_CURSOR_GET,
	BGRUN__STMT_CURSOR_SET,
	BGRUN__N_STMTS
};

/* Arguments encoded per statement (store-write.c), one statement per count. */
#define BGRUN__ARGV_CHUNK 16

/* The query filters, one bit each (bgrun/filters.h, store-query.c). */
#define BGRUN__N_FILTERS BGRUN_QUERY_N_FILTERS
/* x rows and each stats key */
#define BGRUN__N_FILTER_STMTS ((unsigned)BGRUN__N_READS << BGRUN__N_FILTERS)

/* The most other writers' events one transaction takes (store-write.c). */
#define BGRUN__STORE_GROUP_MAX 63

struct bgrun_store {
	sqlite3 *db;
	char *path;
	int lock_fd;       /* <db>-lock; -1 when read-only */
	struct bgrun__filelock lock; /* on lock_fd */
	/* Other writers' events taken into this transaction, and each result. */
	struct bgrun__filelock_taken taken[BGRUN__STORE_GROUP_MAX];
	int32_t taken_result[BGRUN__STORE_GROUP_MAX];
	size_t n_taken;
	/* Its checkpointer thread (store-checkpoint.c), once needed. */
	struct bgrun__checkpointer *ckpt;
	bool ckpt_failed;   /* could not be started: checkpoint in line */
	bool ckpt_own;      /* this is the checkpointer's own store */
	int64_t lock_timeout_ns;
	int wal_frames;        /* in the WAL after our last commit */
	int checkpoint_frames; /* when to checkpoint (INT_MAX: never) */
	bool readonly;
	sqlite3_stmt *stmts[BGRUN__N_STMTS];
	sqlite3_stmt *argv_stmts[BGRUN__ARGV_CHUNK]; /* made lazily */
	sqlite3_stmt **filter_stmts; /* BGRUN__N_FILTER_STMTS, made lazily */
	char errmsg[512];
};

/* store.c */
int bgrun__store_stmt(struct bgrun_store *store, enum bgrun__stmt_id id,
		      sqlite3_stmt **ret_stmt);
int bgrun__store_prepare(struct bgrun_store *store, const char *sql,
			 sqlite3_stmt **ret_stmt);
/* Maps an SQLite result code to -errno (0 for OK, ROW and DONE). */
int bgrun__sqlite_errno(sqlite3 *db, int rc);
/*
 * Records "what: SQLite's message" as the store's message and returns
 * the -errno for rc.
 */
int bgrun__store_fail(struct bgrun_store *store, int rc, const char *what);
/* Records a message of our own and returns error. */
BGRUN__PRINTF(3, 4)
int bgrun__store_failf(struct bgrun_store *store, int error,
		       const char *fmt, ...);
/*
 * What each public call on the store does first: clears the message;
 * -EINVAL (with a message) when the store is not open.
 */
int bgrun__store_enter(struct bgrun_store *store);
/* Takes the write lock and begins an immediate transaction. */
int bgrun__store_begin(struct bgrun_store *store);
/*
 * bgrun__store_begin, but while it waits for the lock, mail's work may
 * be done by the holder (src/platform.h, group commit): 1 then, with
 * neither the lock nor a transaction, mail->result the holder's result.
 */
int bgrun__store_begin_mail(struct bgrun_store *store,
			    struct bgrun__filelock_mail *mail);
/* bgrun__store_enter, then bgrun__store_begin: a public call that writes. */
int bgrun__store_enter_write(struct bgrun_store *store);
/*
 * Commits (r >= 0) or rolls back, gives the events taken (store->taken)
 * their results (all given back if the transaction did not commit),
 * releases the lock, then checkpoints if the WAL has grown past
 * checkpoint_frames; returns r or error.
 */
int bgrun__store_end(struct bgrun_store *store, int r);
/* The write lock alone, for what cannot run in a transaction (VACUUM). */
int bgrun__store_lock(struct bgrun_store *store);
void bgrun__store_unlock(struct bgrun_store *store);
/* Opens store->path (name: NULL) or name on store->db, our settings applied. */
int bgrun__store_open_db(struct bgrun_store *store, const char *name,
			 int flags);
/*
 * Back to what bgrun_store_new made: after a failed open (the caller
 * keeps the message: closing may write its own), and before the store
 * is freed.
 */
void bgrun__store_release(struct bgrun_store *store);

/* store-checkpoint.c */
/*
 * A PASSIVE checkpoint, the WAL flushed first with no lock held; none if
 * the lock's counter is no longer seen (another checkpoint ran since).
 */
void bgrun__store_checkpoint(struct bgrun_store *store, uint32_t seen);
/*
 * After a commit that took the WAL past checkpoint_frames (seen: the
 * lock's counter read under that commit's lock): asks the store's
 * checkpointer thread, started on first use, or checkpoints in line.
 */
void bgrun__store_checkpoint_soon(struct bgrun_store *store, uint32_t seen);
/* fdatasync of the -wal file, with no lock held. */
void bgrun__store_flush_wal(struct bgrun_store *store);
/* SQLite's WAL hook: keeps store->wal_frames (data: the store). */
int bgrun__store_wal_hook(void *data, sqlite3 *db, const char *name,
			  int frames);
/*
 * Joins the store's checkpointer thread and closes its connection (never
 * the last one); nothing in a forked child, whose thread is the parent's.
 */
void bgrun__store_checkpointer_stop(struct bgrun_store *store);

/* store-schema.c */
/*
 * The first column of the first row of sql (a PRAGMA, a count), an
 * integer: 0, or -errno with the store's message (-EBADMSG for a file
 * that is not an SQLite database).
 */
int bgrun__store_query_int(struct bgrun_store *store, const char *sql,
			   int64_t *ret_value);
/*
 * What the file holds: *ret_version is our schema version, or 0 for a
 * database still empty. Anything else is -EBADMSG (not ours) or -EPROTO
 * (a newer schema).
 */
int bgrun__store_identify(struct bgrun_store *store, int64_t *ret_version);
/*
 * For a read-write store, with the file lock held: WAL mode, the missing
 * migrations (one transaction each), and the connection's settings.
 */
int bgrun__store_setup(struct bgrun_store *store, int64_t version);

/* store-query.c: the reads behind queries and statistics. */
/* Rows, or statistics by each enum bgrun_stats_key (READ_STATS + key). */
enum { BGRUN__READ_ROWS, BGRUN__READ_STATS,
       BGRUN__N_READS = BGRUN__READ_STATS + BGRUN_STATS_N_KEYS };
/* The kept statement for this kind of read and these filters, bound. */
int bgrun__store_filter_stmt(struct bgrun_store *store, unsigned kind,
			     const struct bgrun_query *q,
			     sqlite3_stmt **ret_stmt);
/*
 * Whether a `running` row is lost: its supervisor is gone (bgrun__
 * supervisor_gone), and so is its command (pid, started at start_ns).
 */
bool bgrun__row_lost(const char *boot_id, int64_t supervisor_pid,
		     int64_t supervisor_start, int64_t pid, int64_t start_ns);
/* The result to report: `lost` for a lost running row (bgrun__row_lost). */
const char *bgrun__reported_result(const char *stored, const char *boot_id,
				   int64_t supervisor_pid,
				   int64_t supervisor_start, int64_t pid,
				   int64_t start_ns);
/* Whether a reported result passes q's conditions that SQL cannot decide. */
bool bgrun__result_matches(const struct bgrun_query *q, const char *result);

static inline const char *bgrun__column_text(sqlite3_stmt *stmt, int i)
{
	return (const char *)sqlite3_column_text(stmt, i);
}

static inline int64_t bgrun__column_int(sqlite3_stmt *stmt, int i)
{
	if (sqlite3_column_type(stmt, i) == SQLITE_NULL)
		return BGRUN_NULL;
	return sqlite3_column_int64(stmt, i);
}

/*
 * Reads the event's column fields (bgrun__columns) from stmt, the first
 * at column first; text ones point into stmt's row.
 */
void bgrun__column_fields(sqlite3_stmt *stmt, int first,
			  struct bgrun_event *ev);

static inline void bgrun__release_stmt(sqlite3_stmt *stmt)
{
	(void)sqlite3_reset(stmt);
	(void)sqlite3_clear_bindings(stmt);
}

/* store-write.c: lost rows, for mark_lost and prune (in a transaction). */
int bgrun__store_mark_lost_locked(struct bgrun_store *store,
				  int64_t *ret_count);

/*
 * An event made ready for the upsert: checked, its JSON and display made,
 * its text fields made valid UTF-8. This is all the per-event work that
 * needs no database file, so that a program with a writer thread (the
 * sink daemon) can do it in another thread, on a scratch store of its
 * own (bgrun_store_open_scratch), and leave its writer the SQL writes.
 */
struct bgrun_store_prepared {
	const struct bgrun_event *ev;
	char *argv_json;          /* NULL: argv unknown */
	char *options_json;       /* made from options_kv, or NULL */
	char *display;            /* made from argv when ev->display is NULL */
	char **text;              /* NULL, or BGRUN__N_COLUMNS UTF-8-safe
				     copies of the text columns that need
				     one (NULL for the others) */
};

/*
 * Checks ev and makes *p (which must be zeroed; it points to ev, which
 * must outlive it). -EINVAL for an event the store refuses, with the
 * reason as the store's message; index names the event in it.
 */
int bgrun__event_prepare(struct bgrun_store *store,
			 const struct bgrun_event *ev, size_t index,
			 struct bgrun_store_prepared *p);
/* Frees what *p holds (not p itself) and zeroes it. */
void bgrun__prepared_release(struct bgrun_store_prepared *p);
/* Writes n prepared events in one transaction, all or none. */
int bgrun__store_put_prepared(struct bgrun_store *store,
			      const struct bgrun_store_prepared *const *preps,
			      size_t n);

#endif /* BGRUN_STORE_INTERNAL_H */
