/* SPDX-License-Identifier: MIT */
/* sink-internal.h: declarations shared by the sink client's files (client.c, spool.c). */

#ifndef BGRUN_SINK_INTERNAL_H
#define BGRUN_SINK_INTERNAL_H

#include "bgrun.h"

/*
 * Writes ev into db's spool as one file holding its EVENT frame: a
 * temporary file (O_EXCL, 0600), fsync, rename to a unique name ending in
 * ".ev", fsync of the directory. The spool (0700) and missing parents
 * (0700) are created. -EINVAL for an event that cannot be encoded.
 */
int bgrun__spool_write(const char *db, const struct bgrun_event *ev);

/*
 * Whether dir is fit to hold the daemon's socket for us: a directory
 * (not a symbolic link) owned by our uid that nobody else may write to.
 * 0, -ENOENT (missing), -EPERM (it is not), or another -errno.
 */
int bgrun__sink_check_dir(const char *dir);

#endif /* BGRUN_SINK_INTERNAL_H */
