/* SPDX-License-Identifier: MIT */
/* sink-internal.h: what the sink client's files share (src/sink/ only). */

#ifndef BGRUN_SINK_INTERNAL_H
#define BGRUN_SINK_INTERNAL_H

#include "bgrun/sink.h"
#include "bgrun/wire.h"
#include "common/common.h"
#include "platform.h"

#include <limits.h>

/* An event's fate so far in a batch's status[]; else BGRUN_SINK_VIA_*, -errno. */
#define BGRUN__SINK_PENDING INT_MIN

struct bgrun_sink {
	enum bgrun_sink_mode mode;
	char *db;       /* NULL: no database path could be found */
	char *socket;   /* NULL: no socket path could be found */
	char *logsink;  /* NULL: "logsink" in PATH */
	int timeout_ms;
	struct bgrun__sinkconn conn; /* the daemon connection */
	bool started;   /* AUTO: a daemon was started (once per sink) */
	bool replayed;  /* the spool was replayed into store */
	bool spooled;
	uint32_t next_seq;
	bool open;      /* bgrun_sink_open succeeded */
	struct bgrun_store *store;
	/*
	 * bgrun_store_close, set by the code that opened store (libbgrun-store):
	 * so the sink object itself lives in libbgrun, whose daemon path
	 * (bgrun_sink_put_daemon) must never reference the store.
	 */
	void (*close_store)(struct bgrun_store *store);
	/*
	 * A HELLO sent ahead (bgrun_sink_preconnect) whose answer is not read
	 * yet: the next use of the connection reads and checks it first.
	 */
	bool hello_pending;
	/*
	 * Events posted (bgrun_sink_post) and not settled yet: their frames
	 * back to back in posted, each one's place and fate in posts.
	 */
	struct bgrun__sink_post *posts;
	size_t n_posts, cap_posts;
	size_t posts_waiting; /* posts still BGRUN__SINK_PENDING */
	struct bgrun_wire_buf posted;
	struct bgrun_wire_buf out;
	size_t out_sent;
	uint8_t *in;
	size_t in_len, in_cap;
	char errmsg[512];
};

/* An event posted to the daemon (bgrun_sink_post), until settled. */
struct bgrun__sink_post {
	uint32_t seq;
	int status;    /* BGRUN__SINK_PENDING, BGRUN_SINK_VIA_DAEMON or -errno */
	size_t off, len; /* its frame in sink->posted */
	char *why;     /* malloc'd: the daemon's word on a failure, or NULL */
};

/* Events on their way: the caller's, and what became of each. */
struct bgrun__sink_batch {
	const struct bgrun_event *evs;
	int *status;
	size_t n;
	uint32_t base;    /* evs[i] was sent as seq base + i */
	size_t waiting;   /* frames sent and not answered */
};

/* client-daemon.c */
/*
 * Connects to the daemon anew, whatever the mode (never starting one),
 * fills *status from its HELLO, and disconnects: 0, or -errno.
 */
int bgrun__sink_daemon_hello(struct bgrun_sink *sink,
			     struct bgrun_sink_daemon_status *status);
/* Records a one-line message as the sink's; returns error. */
BGRUN__PRINTF(3, 4)
int bgrun__sink_fail(struct bgrun_sink *sink, int error, const char *fmt, ...);
/*
 * What each put does first: clears the message and the spooled flag;
 * -EINVAL (with a message) when the sink is not open.
 */
int bgrun__sink_enter(struct bgrun_sink *sink);
/* Drops the daemon connection (if any) and what was buffered for it. */
void bgrun__sink_disconnect(struct bgrun_sink *sink);

/* client-daemon.c */
/*
 * Fills a new sink from opts (mode, timeout, paths; nothing opened):
 * 0, -EINVAL (a bad mode, $BGRUN_SINK or timeout) or -ENOMEM, with a
 * message. Release it with bgrun__sink_release either way.
 */
int bgrun__sink_init(struct bgrun_sink *sink,
		     const struct bgrun_sink_opts *opts);
/*
 * Frees what bgrun__sink_init and the daemon path hold (not the store)
 * and makes the sink as bgrun_sink_new left it, the store and message
 * aside.
 */
void bgrun__sink_release(struct bgrun_sink *sink);
/* Whether some event of b is still BGRUN__SINK_PENDING. */
bool bgrun__sink_pending(const struct bgrun__sink_batch *b);
/*
 * Sends the pending events of b to the daemon (connecting, or starting it
 * for BGRUN_SINK_AUTO, first) and marks those acked or refused. 0, or the
 * -errno of a connection that could not be made or broke twice.
 */
int bgrun__sink_via_daemon(struct bgrun_sink *sink,
			   struct bgrun__sink_batch *b);
/*
 * Connects to the daemon (starting it first for BGRUN_SINK_AUTO) unless
 * connected already: 0, or the -errno of the connection (errmsg set).
 */
int bgrun__sink_connect_daemon(struct bgrun_sink *sink);
/*
 * bgrun_sink_preconnect, bgrun_sink_post and bgrun_sink_settle (sink.h)
 * once the sink is checked: the same returns.
 */
int bgrun__sink_preconnect(struct bgrun_sink *sink);
int bgrun__sink_post(struct bgrun_sink *sink, const struct bgrun_event *ev);
int bgrun__sink_settle(struct bgrun_sink *sink, bgrun_sink_unsettled_fn fn,
		       void *ctx);

/*
 * spool.c (POSIX; src/win/sink.c on Windows): bgrun__spool_write,
 * bgrun__spool_note_reason, bgrun__dropped_note are declared in
 * platform.h. A spool file is a temporary file (O_EXCL, 0600), fsync,
 * rename to a unique name ending in ".ev", fsync of the directory; the
 * spool (0700) and missing parents (0700) are created.
 *
 * Why what waits in a spool is there: the file BGRUN__SPOOL_REASON in
 * it, one line "ERRNO<TAB>DEV<TAB>INO<TAB>MTIME_NS<TAB>MESSAGE", the
 * error the last writer that spooled met and the database file it met it
 * on (stat(2) of db then: a reason holds only for that same file). Made
 * by bgrun__spool_note_reason when an event was spooled; removed by the
 * replay that empties the spool, unless an event came meanwhile
 * (replay.c: drop_reason); read by bgrun_sink_spool_reason and
 * bgrun_sink_check_log.
 */
#define BGRUN__SPOOL_REASON ".reason"
/*
 * Which database file a reason was met on: POSIX's st_dev, st_ino and
 * st_mtim in ns; Windows' volume serial number, file index and last
 * write time in 100 ns units. Compared only on the system that wrote it.
 */
struct bgrun__log_id {
	unsigned long long dev, ino;
	long long mtime;
};
/* db's (src/sink/spool.c; src/win/sink.c): all zeros (ino 0) when it
 * cannot be looked at. */
void bgrun__log_id_of(const char *db, struct bgrun__log_id *ret);
static inline bool bgrun__log_id_same(const struct bgrun__log_id *a,
				      const struct bgrun__log_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->mtime == b->mtime;
}
/* reason.c: the reason's line for error (-errno) and why (NULL: the
 * errno's text), in *ret_line (malloc'd, ending in its one '\n'); its
 * length, or -ENOMEM. */
int bgrun__reason_format(char **ret_line, int error,
			 const struct bgrun__log_id *id, const char *why);
/* A line read back (changed in place: its end cut): the -errno, with
 * *ret_why (in line) set and whether db is still the file the line names
 * (*ret_same); 0 if it is not a reason's line. */
int bgrun__reason_judge(const char *db, char *line, const char **ret_why,
			bool *ret_same);
/* Tests (test-control.c): fn, or NULL, is called by every replay after
 * each pass and, when it found the spool empty, before it removes the
 * reason; process-wide. */
enum { BGRUN__REPLAY_PASSED, BGRUN__REPLAY_EMPTIED };
void bgrun__replay_set_hook(void (*fn)(int where));
/* The file counting dropped events: the directory of socket, "dropped". */
int bgrun__dropped_path(const char *socket, char **ret_path);

#endif /* BGRUN_SINK_INTERNAL_H */
