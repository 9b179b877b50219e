/* SPDX-License-Identifier: MIT */
/* bgrun.h: the public interface of libbgrun, the runbgcommand primitive, and of libbgrun-store. */

#ifndef BGRUN_H
#define BGRUN_H

/*
 * CONVENTIONS
 *
 * Every function returning int returns >= 0 on success and -errno on
 * failure (libuv style); bgrun_strerror() turns such a value into a
 * message. Output parameters are named ret_* and are left untouched on
 * failure; the one kind written on failure, where a launch failed
 * (struct bgrun_failure *failure), is not named ret_*. The libraries
 * never print, never log, never call fork(), never install a signal
 * handler and never change the caller's signal mask, signal
 * dispositions or working directory.
 *
 * Error text. A failure worth a sentence (a path, an offset, the reason
 * SQLite or the daemon gave) is read from the object it happened on:
 * bgrun_store_errmsg(), bgrun_sink_errmsg(), bgrun_clone_errmsg() give
 * one line about the last failed call on that object ("" after a
 * success), valid until the next call on it; they accept NULL. No
 * function hands out a malloc'd message or writes one into a buffer of
 * the caller's. (The frame decoder, a pure function with no object,
 * points an optional *why at a static reason instead.)
 *
 * Objects are made in two steps, so that even a failed open can say why
 * while ret_* stays untouched:
 *   bgrun_X_new(&ret_x)   allocates; -ENOMEM is its only failure (there is
 *                         nothing to explain), and *ret_x is then untouched;
 *   bgrun_X_open(x, ...)  the step that can fail for a reason (the store's
 *                         file, the sink's options); on failure x is left
 *                         as bgrun_X_new made it, its message set: it may
 *                         be opened again, or closed;
 *   bgrun_X_close(x)      frees it, open or not; accepts NULL.
 * (sqlite3_open returns a handle even on failure for the same reason, but
 * writes it through its output parameter; here the handle exists first.)
 * The clone pipeline is one call: bgrun_clone(clone, ...) on an object
 * from bgrun_clone_new, which holds the message of its last failure.
 *
 * The spawn primitive is the one part without text: a launch that fails
 * in the child reports a struct bgrun_failure (which step, which errno),
 * plain data that crosses a process boundary, and programs word it.
 *
 * THREAD SAFETY: every function may be called from any thread at any time.
 * An object (a struct bgrun_child, a store, a sink) is used by one thread
 * at a time, the caller's concern, except where its header says more.
 *
 * LIBRARIES
 *
 *   libbgrun        (pkg-config bgrun)        needs threads only:
 *     bgrun/spawn.h   the primitive
 *     bgrun/event.h   the event model
 *     bgrun/wire.h    the sink protocol's frames
 *     bgrun/sink.h    the sink object (new, open, errmsg, spooled,
 *                     close), bgrun_sink_connect_daemon and
 *                     bgrun_sink_put_daemon,
 *                     bgrun_sink_default_socket, bgrun_sink_spool_dir,
 *                     bgrun_sink_check_dir
 *     bgrun/util.h    conveniences for command-line programs
 *     bgrun/config.h  configuration files (Mercurial's syntax)
 *   libbgrun-store  (pkg-config bgrun-store)  needs SQLite:
 *     bgrun/store.h   the SQLite event store
 *     bgrun/filters.h the query filters as a table, with their SQL in
 *                     SQLite's and PostgreSQL's words (header only)
 *     bgrun/sink.h    bgrun_sink_put, _put_batch (daemon, else store,
 *                     else spool), bgrun_sink_replay
 *     bgrun/clone.h   the clone pipeline
 *
 * Each header includes what it needs; this one includes them all.
 */

#include "bgrun/common.h"
#include "bgrun/spawn.h"
#include "bgrun/event.h"
#include "bgrun/wire.h"
#include "bgrun/store.h"
#include "bgrun/filters.h"
#include "bgrun/sink.h"
#include "bgrun/clone.h"
#include "bgrun/util.h"
#include "bgrun/config.h"

#endif /* BGRUN_H */
