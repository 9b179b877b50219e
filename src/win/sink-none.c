/* SPDX-License-Identifier: MIT */
/* sink-none.c: the sink's counts on Windows, where no spool or dropped-events file is made yet: both are always empty. */

/*
 * On Windows the logged launches write through the store alone
 * (src/win/supervise.c): an event that cannot be stored is said by the
 * supervisor and is not spooled, so a spool or a dropped-events file is
 * never there. These answer as bgrun/sink.h says for a missing one (0),
 * so that logsink's readers behave as on POSIX.
 */

#include "bgrun/sink.h"

#include <errno.h>
#include <stddef.h>

int bgrun_sink_spool_count(const char *db, int64_t *ret_waiting,
			   int64_t *ret_bad)
{
	if (db == NULL)
		return -EINVAL;
	if (ret_waiting != NULL)
		*ret_waiting = 0;
	if (ret_bad != NULL)
		*ret_bad = 0;
	return 0;
}

int bgrun_sink_dropped_count(const char *socket, const char *db,
			     int64_t *ret_count)
{
	(void)socket;
	if (db == NULL || ret_count == NULL)
		return -EINVAL;
	*ret_count = 0;
	return 0;
}
