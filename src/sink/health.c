/* SPDX-License-Identifier: MIT */
/* health.c: whether the log can be written, what waits in its spool, what was dropped: asked without SQLite (libbgrun). */

#include "sink-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Less free space than this and a write is expected to fail. */
#define MIN_FREE_BYTES (64 * 1024)

/* The file system of path: read-only, or (nearly) full. */
static int check_fs(const char *path, char *why, size_t size)
{
	struct statvfs sv;

	if (statvfs(path, &sv) < 0)
		return 0; /* no verdict: let the write say */
	if (sv.f_flag & ST_RDONLY)
		return bgrun__say(why, size, -EROFS, "%s is on a read-only file system",
			   path);
	if ((unsigned long long)sv.f_bavail * sv.f_frsize < MIN_FREE_BYTES)
		return bgrun__say(why, size, -ENOSPC,
			   "the file system of %s is full (%llu KiB free)", path,
			   (unsigned long long)sv.f_bavail * sv.f_frsize / 1024);
	return 0;
}

/* The nearest directory above path that exists (malloc'd), or NULL. */
static char *existing_dir(const char *path)
{
	char *dir = strdup(path), *slash;
	struct stat st;

	while (dir != NULL) {
		slash = strrchr(dir, '/');
		if (slash == NULL) {
			free(dir);
			return strdup(".");
		}
		if (slash == dir) {
			dir[1] = '\0';
			return dir;
		}
		*slash = '\0';
		if (stat(dir, &st) == 0)
			return dir;
	}
	return NULL;
}

/* Whether a file could be made in the directory of path (or above). */
static int check_dir_of(const char *path, char *why, size_t size)
{
	char *dir = existing_dir(path);
	int r;

	if (dir == NULL)
		return -ENOMEM;
	r = check_fs(dir, why, size);
	if (r >= 0 && access(dir, W_OK | X_OK) < 0)
		r = bgrun__say(why, size, -errno, "cannot write in %s: %s", dir,
			strerror(errno));
	free(dir);
	return r;
}

/*
 * The reason kept in db's spool (sink-internal.h): its -errno and
 * message (why), whether db is still the file it was met on (*ret_same),
 * or 0 if there is none.
 */
static int read_reason(const char *db, char *why, size_t size, bool *ret_same)
{
	const char *said;
	char *dir = NULL, line[1024];
	int error, fd, r;
	ssize_t n;

	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return 0;
	fd = openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return 0;
	r = openat(fd, BGRUN__SPOOL_REASON, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
						    O_NONBLOCK);
	(void)close(fd);
	if (r < 0)
		return 0;
	fd = r;
	n = read(fd, line, sizeof(line) - 1);
	(void)close(fd);
	if (n <= 0)
		return 0;
	line[n] = '\0';
	error = bgrun__reason_judge(db, line, &said, ret_same);
	return error == 0 ? 0 : bgrun__say(why, size, error, "%s", said);
}

int bgrun_sink_spool_reason(const char *db, char *why, size_t size)
{
	int64_t waiting = 0;
	bool same;

	if (why != NULL && size > 0)
		why[0] = '\0';
	if (db == NULL || bgrun_sink_spool_count(db, &waiting, NULL) < 0 ||
	    waiting == 0)
		return 0;
	return read_reason(db, why, size, &same);
}

int bgrun_sink_check_log(const char *db, char *why, size_t size)
{
	char reason[600];
	int64_t waiting = 0;
	bool same = false;
	static const char magic[16] = "SQLite format 3";
	char head[16];
	struct stat st;
	ssize_t n;
	int fd, r;

	if (why != NULL && size > 0)
		why[0] = '\0';
	if (db == NULL || db[0] == '\0')
		return bgrun__say(why, size, -ENOENT,
			   "no event log: set BGRUN_DB, XDG_STATE_HOME or HOME");
	if (lstat(db, &st) < 0) {
		if (errno != ENOENT)
			return bgrun__say(why, size, -errno, "%s: %s", db,
				   strerror(errno));
		/* Made at the first write: the directory must allow it. */
		return check_dir_of(db, why, size);
	}
	r = check_fs(db, why, size);
	if (r < 0)
		return r;
	/* -wal, -shm and -lock are made beside it. */
	r = check_dir_of(db, why, size);
	if (r < 0)
		return r;
	if (access(db, R_OK | W_OK) < 0)
		return bgrun__say(why, size, -errno, "%s: %s", db, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return bgrun__say(why, size, -ELOOP,
			   "%s is a symbolic link (refused for writing)", db);
	if (!S_ISREG(st.st_mode))
		return bgrun__say(why, size, -EBADMSG, "%s is not a regular file", db);
	if (st.st_size == 0)
		return 0; /* made, not written yet: the store will set it up */
	fd = open(db, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return bgrun__say(why, size, -errno, "%s: %s", db, strerror(errno));
	n = read(fd, head, sizeof(head));
	(void)close(fd);
	if (n != (ssize_t)sizeof(head) || memcmp(head, magic, sizeof(head)) != 0)
		return bgrun__say(why, size, -EBADMSG, "%s is not an SQLite database",
			   db);
	/*
	 * Damage past the header shows only to SQLite, at a write: the
	 * writer that met it left its reason in the spool. It holds while
	 * the file is the same one, unchanged (a repair, a restored copy
	 * or a new file makes it void), and events wait.
	 */
	if (read_reason(db, reason, sizeof(reason), &same) == -EBADMSG && same &&
	    bgrun_sink_spool_count(db, &waiting, NULL) >= 0 && waiting > 0)
		return bgrun__say(why, size, -EBADMSG, "%s (the last write failed)",
			   reason);
	return 0;
}


int bgrun_sink_check_spool(const char *db, char *why, size_t size)
{
	char *dir = NULL;
	struct stat st;
	int r;

	if (why != NULL && size > 0)
		why[0] = '\0';
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
		r = bgrun__say(why, size, -ELOOP, "%s is a symbolic link", dir);
	} else if (stat(dir, &st) == 0) {
		r = check_fs(dir, why, size);
		if (r >= 0 && access(dir, W_OK | X_OK) < 0)
			r = bgrun__say(why, size, -errno, "cannot write in %s: %s", dir,
				strerror(errno));
	} else {
		r = check_dir_of(dir, why, size);
	}
	free(dir);
	return r;
}

/* The event id in a spool file's name, TIME-PID-N-ID.ev[.bad]. */
static const char *spooled_id(const char *name)
{
	for (int dashes = 0; dashes < 3 && name != NULL; dashes++) {
		name = strchr(name, '-');
		name = name != NULL ? name + 1 : NULL;
	}
	return name;
}

static int cmp_name_id(const void *a, const void *b)
{
	const char *x = spooled_id(*(char *const *)a);
	const char *y = spooled_id(*(char *const *)b);

	return strcmp(x != NULL ? x : "", y != NULL ? y : "");
}

/* How many different events the names hold (a write of each is a file). */
static int64_t distinct_events(char **names, size_t n)
{
	int64_t count = 0;

	if (n == 0)
		return 0;
	qsort(names, n, sizeof(*names), cmp_name_id);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || cmp_name_id(&names[i], &names[i - 1]) != 0)
			count++;
	return count;
}

int bgrun_sink_spool_count(const char *db, int64_t *ret_waiting,
			   int64_t *ret_bad)
{
	char **names[2] = { NULL, NULL }, *dir = NULL;
	size_t n[2] = { 0, 0 }, cap[2] = { 0, 0 };
	struct dirent *d;
	DIR *dp;
	int r = 0;

	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	dp = opendir(dir);
	free(dir);
	if (dp == NULL && errno != ENOENT)
		return -errno;
	while (dp != NULL && (d = readdir(dp)) != NULL) {
		size_t len = strlen(d->d_name);
		int k;

		if (d->d_name[0] == '.')
			continue;
		if (len > 3 && strcmp(d->d_name + len - 3, ".ev") == 0)
			k = 0;
		else if (len > 7 && strcmp(d->d_name + len - 7, ".ev.bad") == 0)
			k = 1;
		else
			continue;
		if (n[k] == cap[k]) {
			char **grown;

			cap[k] = cap[k] ? 2 * cap[k] : 64;
			grown = realloc(names[k], cap[k] * sizeof(*grown));
			if (grown == NULL) {
				r = -ENOMEM;
				goto out;
			}
			names[k] = grown;
		}
		names[k][n[k]] = strdup(d->d_name);
		if (names[k][n[k]] == NULL) {
			r = -ENOMEM;
			goto out;
		}
		n[k]++;
	}
	/* Events, not files: the recorder's two writes of one are one. */
	if (ret_waiting != NULL)
		*ret_waiting = distinct_events(names[0], n[0]);
	if (ret_bad != NULL)
		*ret_bad = distinct_events(names[1], n[1]);
out:
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < n[k]; i++)
			free(names[k][i]);
		free(names[k]);
	}
	if (dp != NULL)
		(void)closedir(dp);
	return r;
}

int bgrun_sink_dropped_path(const char *socket, char **ret_path)
{
	char *def = NULL;
	int r;

	if (socket == NULL) {
		r = bgrun_sink_default_socket(&def);
		if (r < 0)
			return r;
		socket = def;
	}
	r = bgrun__dropped_path(socket, ret_path);
	free(def);
	return r;
}

int bgrun_sink_dropped_count(const char *socket, const char *db,
			     int64_t *ret_count)
{
	char *path = NULL;
	FILE *f;
	int r;

	if (db == NULL)
		return -EINVAL;
	r = bgrun_sink_dropped_path(socket, &path);
	if (r < 0)
		return r;
	f = fopen(path, "re");
	free(path);
	if (f == NULL) {
		if (errno != ENOENT)
			return -errno;
		*ret_count = 0;
		return 0;
	}
	r = bgrun__dropped_count_file(f, db, ret_count);
	(void)fclose(f);
	return r;
}

int bgrun_sink_event_fate(const char *db, const char *socket, const char *id)
{
	char *dir = NULL, *path = NULL, *line = NULL;
	size_t cap = 0, idlen;
	struct dirent *d;
	int r = 0;
	FILE *f;
	DIR *dp;

	if (db == NULL || id == NULL || id[0] == '\0')
		return -EINVAL;
	idlen = strlen(id);
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	dp = opendir(dir);
	free(dir);
	r = 0;
	while (dp != NULL && r == 0 && (d = readdir(dp)) != NULL) {
		const char *name = spooled_id(d->d_name);

		if (d->d_name[0] != '.' && name != NULL &&
		    strncmp(name, id, idlen) == 0 && strcmp(name + idlen, ".ev") == 0)
			r = BGRUN_SINK_KEPT;
	}
	if (dp != NULL)
		(void)closedir(dp);
	if (r != 0)
		return r;
	if (bgrun_sink_dropped_path(socket, &path) < 0)
		return 0;
	f = fopen(path, "re");
	free(path);
	/* TIME_NS \t ID \t ERRNO \t DB \n (bgrun_sink_dropped_count). */
	while (f != NULL && r == 0 && getline(&line, &cap, f) > 0) {
		const char *p = strchr(line, '\t'), *q;

		if (p == NULL || strncmp(p + 1, id, idlen) != 0 ||
		    p[1 + idlen] != '\t')
			continue;
		q = strchr(p + 2 + idlen, '\t');
		if (q != NULL && strncmp(q + 1, db, strlen(db)) == 0 &&
		    (q[1 + strlen(db)] == '\n' || q[1 + strlen(db)] == '\0'))
			r = BGRUN_SINK_DROPPED;
	}
	free(line);
	if (f != NULL)
		(void)fclose(f);
	return r;
}
