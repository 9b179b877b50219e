/* SPDX-License-Identifier: MIT */
/* replay.c: the spool's events stored, by the next writer that has the store (libbgrun-store). */

#include "sink-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
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

struct spooled {
	char *name;
	struct bgrun_wire_msg msg;
	bool ok; /* msg holds a decoded event */
};

/* Reads and decodes one file: 0, -ENOENT (taken by another replay), -EBADMSG. */
static int read_event(int dfd, const char *name,
		      struct bgrun_wire_msg *ret_msg)
{
	struct bgrun_wire_msg m;
	uint8_t *data = NULL;
	struct stat st;
	size_t used = 0, size;
	int fd, r;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EBADMSG;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)BGRUN_WIRE_HEADER ||
	    st.st_size >
		    (off_t)(BGRUN_WIRE_LEN_SIZE + BGRUN_WIRE_MAX_FRAME)) {
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
	    bgrun_wire_frame_size(data, used, BGRUN_WIRE_MAX_FRAME, &size) ==
		    1 &&
	    size == used && bgrun_wire_decode(data, size, &m, NULL) == 0) {
		if (m.type == BGRUN_WIRE_EVENT) {
			*ret_msg = m;
			r = 0;
		} else {
			bgrun_wire_msg_release(&m);
		}
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

/*
 * A DIR of its own on dfd, read from the start: a dup shares dfd's
 * position, which the last reading left at the end.
 */
static DIR *open_dir_at(int dfd)
{
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *dir;

	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (dir == NULL) {
		(void)close(fd);
		return NULL;
	}
	rewinddir(dir);
	return dir;
}

/* Whether the spool holds no event to replay. */
static bool spool_empty(int dfd)
{
	struct dirent *d;
	bool empty = true;
	DIR *dir = open_dir_at(dfd);

	if (dir == NULL)
		return false;
	while (empty && (d = readdir(dir)) != NULL)
		empty = !wanted(d);
	(void)closedir(dir);
	return empty;
}

/* Temporary files of writers that died long ago are removed. */
static void remove_stale(int dfd)
{
	int64_t now = bgrun__now_ns(CLOCK_REALTIME);
	struct dirent *d;
	struct stat st;
	DIR *dir = open_dir_at(dfd);

	if (dir == NULL)
		return;
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

/* One pass over what the spool holds now: 0, or -errno of the first failure. */
static int replay_pass(struct bgrun_store *store, const char *dir, int dfd,
		       int64_t *count)
{
	struct dirent **list = NULL;
	struct spooled *s = NULL;
	int n, r = 0;

	n = scandir(dir, &list, wanted, alphasort);
	if (n < 0)
		return -errno;
	if (n > 0)
		s = calloc(REPLAY_BATCH, sizeof(*s));
	if (n > 0 && s == NULL)
		r = -ENOMEM;
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
			r = replay_chunk(store, dfd, s, k, count);
		for (size_t i = 0; i < k; i++) {
			bgrun_wire_msg_release(&s[i].msg);
			s[i].ok = false;
		}
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(s);
	return r;
}

static void (*_Atomic replay_hook)(int where);

void bgrun__replay_set_hook(void (*fn)(int where))
{
	atomic_store(&replay_hook, fn);
}

static void call_hook(int where)
{
	void (*hook)(int) = atomic_load(&replay_hook);

	if (hook != NULL)
		hook(where);
}

/*
 * The spool is empty: the reason why events were kept is past. But a
 * writer may be spooling now, its event first, then its reason, and a
 * reason unlinked after its event came would leave that event waiting
 * with no word of why. So the reason is set aside, the spool looked at
 * again, and the reason put back if an event came meanwhile; link(2)
 * puts it back only where no newer reason was written since. A reason
 * left aside by a replay that died is removed as the spool's other
 * temporary files are (remove_stale).
 */
static void drop_reason(int dfd)
{
	static _Atomic unsigned counter;
	char aside[64];

	call_hook(BGRUN__REPLAY_EMPTIED);
	(void)snprintf(aside, sizeof(aside), ".tmp-reason-gone-%d-%u",
		       (int)getpid(), counter++);
	if (renameat(dfd, BGRUN__SPOOL_REASON, dfd, aside) < 0)
		return;
	if (!spool_empty(dfd) &&
	    linkat(dfd, aside, dfd, BGRUN__SPOOL_REASON, 0) < 0 &&
	    errno != EEXIST)
		/* No hard links here: back, over a newer one if any. */
		(void)renameat(dfd, aside, dfd, BGRUN__SPOOL_REASON);
	(void)unlinkat(dfd, aside, 0);
}

/*
 * One replay at a time: it holds a flock on the spool's directory, and
 * the others return at once, since it stores what they would. Without
 * it, every writer that opens the store while something waits in the
 * spool reads every file and stores the same events again, under the
 * store's lock: a burst of writers on a loaded machine then queues long
 * enough for more of them to time out and spool, which makes the next
 * replays longer still. What is spooled while the replay runs is seen
 * by its next pass; a few passes at most, so that writers spooling
 * without end do not keep one replay going for ever.
 */
#define REPLAY_PASSES 4

int bgrun_sink_replay(struct bgrun_store *store, const char *db,
		      int64_t *ret_count)
{
	char *dir = NULL;
	int64_t count = 0;
	bool empty = false;
	int dfd = -1, r;

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
	r = bgrun__file_trylock(dfd);
	if (r == -EWOULDBLOCK) {
		/* Another replay is at work: it stores them. */
		if (ret_count != NULL)
			*ret_count = 0;
		r = 0;
		goto cleanup;
	}
	/* No locks on this file system: each replay does it all, as before. */
	r = 0;
	remove_stale(dfd);
	for (int pass = 0; pass < REPLAY_PASSES && r >= 0 && !empty; pass++) {
		r = replay_pass(store, dir, dfd, &count);
		call_hook(BGRUN__REPLAY_PASSED);
		empty = r >= 0 && spool_empty(dfd);
	}
	if (empty)
		drop_reason(dfd);
	if (r >= 0 && ret_count != NULL)
		*ret_count = count;
cleanup:
	if (dfd >= 0)
		(void)close(dfd);
	free(dir);
	return r;
}
