/* SPDX-License-Identifier: MIT */
/* spawn-internal.h: what the primitive's files share (src/spawn/ only). */

#ifndef BGRUN_SPAWN_INTERNAL_H
#define BGRUN_SPAWN_INTERNAL_H

#include "bgrun/spawn.h"
#include "common/common.h"
#include "platform.h"

#include <pthread.h>

/* Builds req from opts, borrowing strings (deep == false) or copying them. */
int bgrun__req_build(const struct bgrun_spawn_opts *opts, bool deep,
		     struct bgrun__req *ret_req);
void bgrun__req_release(struct bgrun__req *req);
/* A NULL-terminated vector and its strings in one malloc'd block, or NULL. */
char **bgrun__vec_copy(char **v);

/* reap.c: the library's reaper for children nobody else waits for. */
void bgrun__reaper_adopt(struct bgrun__proc *proc); /* consumes proc */
/* The number of children the reaper still has (bgrun__test_control). */
int bgrun__reaper_pending(void);

/* async.c: the spawner thread for ensurestart off. */
int bgrun__async_submit(const struct bgrun_spawn_opts *opts,
			struct bgrun_child *child);

/* child.c: the caller's handle. */
struct bgrun_child *bgrun__child_new(void);
void bgrun__child_set_started(struct bgrun_child *child,
			      const struct bgrun__proc *proc);
void bgrun__child_set_failed(struct bgrun_child *child, int error,
			     const struct bgrun_failure *failure);
void bgrun__child_ref(struct bgrun_child *child);
void bgrun__child_unref(struct bgrun_child *child);

#endif /* BGRUN_SPAWN_INTERNAL_H */
