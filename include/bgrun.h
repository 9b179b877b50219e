/* SPDX-License-Identifier: MIT */
/* bgrun.h: the public interface of libbgrun, the runbgcommand primitive, and of libbgrun-store. */

#ifndef BGRUN_H
#define BGRUN_H

/*
 * CONVENTIONS
 *
 * Every function returning int returns >= 0 on success and -errno on
 * failure (libuv style). bgrun_strerror() turns such a value into a
 * message. Output parameters are named ret_* and are left untouched on
 * failure. An object that can fail to open (a store, a sink) can still
 * say why: its *_errmsg() function takes NULL and the object a failed
 * open returned through ret_* is never made, so constructors that can
 * fail after allocating keep their message in a buffer the caller
 * passes (see bgrun_store_open). The libraries never print, never log,
 * never call fork(), never install a signal handler and never change the
 * caller's signal mask, signal dispositions or working directory.
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
 *     bgrun/sink.h    bgrun_sink_put_daemon, bgrun_sink_default_socket,
 *                     bgrun_sink_spool_dir
 *     bgrun/util.h    conveniences for command-line programs
 *   libbgrun-store  (pkg-config bgrun-store)  needs SQLite:
 *     bgrun/store.h   the SQLite event store
 *     bgrun/sink.h    the sink object (daemon, else store, else spool)
 *     bgrun/clone.h   the clone pipeline
 *
 * Each header includes what it needs; this one includes them all.
 */

#include "bgrun/common.h"
#include "bgrun/spawn.h"
#include "bgrun/event.h"
#include "bgrun/wire.h"
#include "bgrun/store.h"
#include "bgrun/sink.h"
#include "bgrun/clone.h"
#include "bgrun/util.h"

#endif /* BGRUN_H */
