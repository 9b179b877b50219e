/* SPDX-License-Identifier: MIT */
/* spool.c: the sink's last resort: events kept one per file beside the database, and their replay. */

#include "internal.h"
#include "sink-internal.h"
#include "wire.h"

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

/* Events stored per transaction when replaying. */
#define REPLAY_BATCH 256
/* A temporary file this old was left by a writer that died. */
#define STALE_TMP_NS (3600 * INT64_C(1000000000))

int bgrun_sink_spool_dir(const char *db, char **ret_path)
{
	char *path;

	if (db == NULL)
		return -EINVAL;
	if (asprintf(&path, "%s.spool", db) < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

/* mkdir -p, each new directory 0700. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			int r = -errno;

			*p = c;
			return r;
		}
		*p = c;
		if (c == '\0')
			return 0;
	}
}

static int write_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int bgrun__spool_write(const char *db, const struct bgrun_event *ev)
{
	static _Atomic unsigned counter;
	struct bgrun__wire_buf b = { 0 };
	char *dir = NULL, *tmp = NULL, *name = NULL;
	unsigned k = counter++;
	int fd = -1, dfd = -1, r;

	r = bgrun__wire_put_event(&b, 0, ev);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		goto cleanup;
	r = make_dirs(dir);
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
	r = write_all(fd, b.data, b.len);
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
	bgrun__wire_buf_free(&b);
	free(dir);
	free(tmp);
	free(name);
	return r < 0 ? r : 0;
}

/* ---- replay ---- */

struct spooled {
	char *name;
	struct bgrun__wire_msg msg;
	bool ok; /* msg holds a decoded event */
};

/* Reads and decodes one file: 0, -ENOENT (taken by another replay), -EBADMSG. */
static int read_event(int dfd, const char *name,
		      struct bgrun__wire_msg *ret_msg)
{
	uint8_t *data = NULL;
	struct stat st;
	size_t used = 0, size;
	int fd, r;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EBADMSG;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)BGRUN__WIRE_HEADER ||
	    st.st_size >
		    (off_t)(BGRUN__WIRE_LEN_SIZE + BGRUN__WIRE_MAX_FRAME)) {
		r = -EBADMSG;
		goto cleanup;
	}
	data = malloc((size_t)st.st_size);
	if (data == NULL) {
		r = -ENOMEM;
		goto cleanup;
	}
	while (used < (size_t)st.st_size) {
		ssize_t n = read(fd, data + used, (size_t)st.st_size - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	r = -EBADMSG;
	if (used == (size_t)st.st_size &&
	    bgrun__wire_frame_size(data, used, BGRUN__WIRE_MAX_FRAME, &size) ==
		    1 &&
	    size == used &&
	    bgrun__wire_decode(data, size, ret_msg, NULL) == 0) {
		if (ret_msg->type == BGRUN__WIRE_EVENT)
			r = 0;
		else
			bgrun__wire_msg_release(ret_msg);
	}
cleanup:
	free(data);
	(void)close(fd);
	return r;
}

/* Sets a file aside for people to look at: NAME.bad, never replayed. */
static void set_aside(int dfd, const char *name)
{
	char bad[NAME_MAX + 1];

	if ((size_t)snprintf(bad, sizeof(bad), "%s.bad", name) < sizeof(bad))
		(void)renameat(dfd, name, dfd, bad);
}

static int wanted(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 3 &&
	       strcmp(d->d_name + n - 3, ".ev") == 0;
}

/* Temporary files of writers that died long ago are removed. */
static void remove_stale(int dfd)
{
	int64_t now = bgrun__now_ns(CLOCK_REALTIME);
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (dir == NULL) {
		(void)close(fd);
		return;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strncmp(d->d_name, ".tmp-", 5) != 0 ||
		    fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (now - ((int64_t)st.st_mtim.tv_sec * 1000000000 +
			   st.st_mtim.tv_nsec) > STALE_TMP_NS)
			(void)unlinkat(dfd, d->d_name, 0);
	}
	(void)closedir(dir);
}

/* Stores one chunk; the files of stored events are deleted. */
static int replay_chunk(struct bgrun_store *store, int dfd, struct spooled *s,
			size_t n, int64_t *count)
{
	struct bgrun_event *evs;
	size_t k = 0;
	int r;

	evs = calloc(n, sizeof(*evs));
	if (evs == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (s[i].ok)
			evs[k++] = s[i].msg.ev;
	r = bgrun_store_put_batch(store, evs, k);
	if (r >= 0) {
		for (size_t i = 0; i < n; i++)
			if (s[i].ok)
				(void)unlinkat(dfd, s[i].name, 0);
		*count += (int64_t)k;
	} else if (r == -EINVAL) {
		/* One by one: the refused ones are set aside. */
		r = 0;
		for (size_t i = 0; i < n && r >= 0; i++) {
			if (!s[i].ok)
				continue;
			r = bgrun_store_put(store, &s[i].msg.ev);
			if (r == -EINVAL) {
				set_aside(dfd, s[i].name);
				r = 0;
			} else if (r >= 0) {
				(void)unlinkat(dfd, s[i].name, 0);
				(*count)++;
			}
		}
	}
	free(evs);
	return r < 0 ? r : 0;
}

int bgrun_sink_replay(struct bgrun_store *store, const char *db,
		      int64_t *ret_count)
{
	struct dirent **list = NULL;
	struct spooled *s = NULL;
	char *dir = NULL;
	int64_t count = 0;
	int dfd = -1, n = 0, r;

	if (store == NULL || db == NULL)
		return -EINVAL;
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = errno == ENOENT ? 0 : -errno;
		goto cleanup;
	}
	remove_stale(dfd);
	n = scandir(dir, &list, wanted, alphasort);
	if (n < 0) {
		r = -errno;
		n = 0;
		goto cleanup;
	}
	s = calloc(REPLAY_BATCH, sizeof(*s));
	if (s == NULL) {
		r = -ENOMEM;
		goto cleanup;
	}
	for (int done = 0; done < n && r >= 0;) {
		size_t k = 0;

		for (; done < n && k < REPLAY_BATCH; done++) {
			const char *name = list[done]->d_name;
			int e = read_event(dfd, name, &s[k].msg);

			if (e == -EBADMSG)
				set_aside(dfd, name);
			if (e == -ENOMEM) {
				r = e;
				break;
			}
			if (e < 0)
				continue;
			s[k].name = list[done]->d_name;
			s[k++].ok = true;
		}
		if (r >= 0 && k > 0)
			r = replay_chunk(store, dfd, s, k, &count);
		for (size_t i = 0; i < k; i++) {
			bgrun__wire_msg_release(&s[i].msg);
			s[i].ok = false;
		}
	}
	if (r >= 0 && ret_count != NULL)
		*ret_count = count;
cleanup:
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(s);
	if (dfd >= 0)
		(void)close(dfd);
	free(dir);
	return r;
}
