/* SPDX-License-Identifier: MIT */
/* spool.c: the sink's last resort: events written one per file beside the database (private, in both libraries). */

#include "sink-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


int bgrun__spool_write(const char *db, const struct bgrun_event *ev)
{
	static _Atomic unsigned counter;
	struct bgrun_wire_buf b = { 0 };
	char *dir = NULL, *tmp = NULL, *name = NULL;
	unsigned k = counter++;
	int fd = -1, dfd = -1, r;

	r = bgrun_wire_put_event(&b, 0, ev);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		goto cleanup;
	r = bgrun__mkdir_p(dir, 0700);
	if (r < 0)
		goto cleanup;
	/* Names sort by time; pid and counter make them unique. */
	if (asprintf(&tmp, "%s/.tmp-%d-%u-%s", dir, (int)getpid(), k, ev->id) <
		    0 ||
	    asprintf(&name, "%s/%019lld-%d-%u-%s.ev", dir,
		     (long long)bgrun__now_ns(CLOCK_REALTIME), (int)getpid(), k,
		     ev->id) < 0) {
		r = -ENOMEM;
		goto cleanup;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		r = -errno;
		goto cleanup;
	}
	r = bgrun__fd_write_all(fd, b.data, b.len);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	fd = -1;
	if (r >= 0 && rename(tmp, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlink(tmp);
		goto cleanup;
	}
	/* The rename itself must survive a crash. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		(void)close(dfd);
	}
cleanup:
	bgrun_wire_buf_free(&b);
	free(dir);
	free(tmp);
	free(name);
	return r < 0 ? r : 0;
}
