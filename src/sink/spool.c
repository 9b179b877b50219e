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
	/*
	 * The spool itself, not what a symbolic link there points to: a
	 * replay opens it O_NOFOLLOW and would never store what was
	 * written through one. Refused here too, the event then dropped.
	 */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = errno == ELOOP || errno == ENOTDIR ? -ELOOP : -errno;
		goto cleanup;
	}
	/* Names sort by time; pid and counter make them unique. */
	if (asprintf(&tmp, ".tmp-%d-%u-%s", (int)getpid(), k, ev->id) < 0 ||
	    asprintf(&name, "%019lld-%d-%u-%s.ev",
		     (long long)bgrun__now_ns(CLOCK_REALTIME), (int)getpid(), k,
		     ev->id) < 0) {
		r = -ENOMEM;
		goto cleanup;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
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
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		goto cleanup;
	}
	/* The rename itself must survive a crash. */
	(void)fsync(dfd);
cleanup:
	if (dfd >= 0)
		(void)close(dfd);
	bgrun_wire_buf_free(&b);
	free(dir);
	free(tmp);
	free(name);
	return r < 0 ? r : 0;
}

void bgrun__log_id_of(const char *db, struct bgrun__log_id *ret)
{
	struct stat st;

	*ret = (struct bgrun__log_id){ 0 };
	if (stat(db, &st) == 0)
		*ret = (struct bgrun__log_id){
			.dev = (unsigned long long)st.st_dev,
			.ino = (unsigned long long)st.st_ino,
			.mtime = (long long)st.st_mtim.tv_sec * 1000000000 +
				 st.st_mtim.tv_nsec,
		};
}

/*
 * The reason is advice, not data: no fsync. Written whole (a temporary
 * file renamed over it), so that a reader never sees half a line; a
 * temporary left by a writer that died is removed as the spool's others
 * are (replay.c: remove_stale).
 */
int bgrun__spool_note_reason(const char *db, int error, const char *why)
{
	char *dir = NULL, *tmp = NULL, *line = NULL;
	struct bgrun__log_id id;
	int fd = -1, dfd = -1, n, r;

	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		goto out;
	}
	/* Which file failed: a reason holds only while it is the same. */
	bgrun__log_id_of(db, &id);
	n = bgrun__reason_format(&line, error, &id, why);
	if (n < 0 || asprintf(&tmp, ".tmp-reason-%d", (int)getpid()) < 0) {
		r = -ENOMEM;
		goto out;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				      O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = bgrun__fd_write_all(fd, line, (size_t)n);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && renameat(dfd, tmp, dfd, BGRUN__SPOOL_REASON) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dfd, tmp, 0);
out:
	if (dfd >= 0)
		(void)close(dfd);
	free(dir);
	free(tmp);
	free(line);
	return r < 0 ? r : 0;
}

int bgrun__dropped_path(const char *socket, char **ret_path)
{
	const char *slash = socket != NULL ? strrchr(socket, '/') : NULL;
	char *path;

	if (slash == NULL)
		return -ENOENT;
	if (asprintf(&path, "%.*s/dropped", (int)(slash - socket), socket) < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

/*
 * The line is written with one write(2) on an O_APPEND file, so lines
 * of concurrent writers never mix. The directory is the socket's (made
 * 0700 if missing, as the daemon makes it), on $XDG_RUNTIME_DIR when
 * there is one: a tmpfs, which still takes a line when the disk of the
 * log is full or read-only, and forgets at reboot as journald's count
 * does.
 */
int bgrun__dropped_note(const char *socket, const char *db,
			const struct bgrun_event *ev, int error)
{
	char *path = NULL, *dir = NULL, *line = NULL;
	int fd = -1, n, r;

	r = bgrun__dropped_path(socket, &path);
	if (r < 0)
		return r;
	dir = strndup(path, (size_t)(strrchr(path, '/') - path));
	if (dir == NULL) {
		r = -ENOMEM;
		goto out;
	}
	(void)bgrun__mkdir_p(dir, 0700);
	r = bgrun_sink_check_dir(dir);
	if (r < 0)
		goto out;
	/* TIME_NS, id, errno, database: tab-separated, the path last. */
	n = asprintf(&line, "%lld\t%s\t%d\t%s\n",
		     (long long)bgrun__now_ns(CLOCK_REALTIME), ev->id, -error,
		     db != NULL ? db : "");
	if (n < 0) {
		r = -ENOMEM;
		goto out;
	}
	/* One line per event: a newline in the path would make two. */
	for (char *p = line; p < line + n - 1; p++)
		if (*p == '\n')
			*p = '?';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
			      O_NOCTTY, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = bgrun__fd_write_all(fd, line, (size_t)n);
out:
	if (fd >= 0)
		(void)close(fd);
	free(line);
	free(dir);
	free(path);
	return r;
}
