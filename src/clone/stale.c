/* SPDX-License-Identifier: MIT */
/* stale.c: who owns a clone's temporary directory, and the removal of those whose owner is gone. */

/*
 * A clone killed with SIGKILL (or by a crash, or a power cut) cannot
 * remove its temporary directory, which may hold most of a repository,
 * nor record how it ended. So each clone has an owner file beside its
 * temporary, TMP.owner for the directory TMP (".NAME.clone-XXXXXX"),
 * naming the process (pid, its start time, the boot id), the clone's id
 * and start and the destination, and locked by the clone
 * (bgrun__file_trylock: flock, or a byte-range lock on Windows) from
 * before the directory exists until after the clone's end is recorded
 * (bgrun_clone_close): every moment a kill can fall in leaves an owner
 * file to judge. A later clone into the same directory, or
 * bgrun_clone_cleanup, takes the owner file when both say its owner is
 * gone: the lock is free (the kernel dropped it with the owner's last
 * descriptor) and the recorded process no longer runs (another boot, or
 * no process with that pid and start time: bgrun__supervisor_gone, the
 * rule for `running` rows). It then removes the temporary if there is
 * one, and tells what the clone had reached (enum bgrun_clone_left): its
 * temporary, its rename into place (the line "renaming", written just
 * before it, and "failed" after a rename that failed), or nothing.
 *
 * The lock also makes two sweepers agree: the one holding it removes,
 * the other passes; the holder removes the file before it lets go, and
 * a sweeper that gets the lock of a file already removed passes too.
 * The clone takes the lock right after it creates the file (O_EXCL) and
 * before it writes it. A sweeper that gets the lock of an empty owner
 * file removes it: its clone was killed before it wrote it, or is
 * between its creation and its lock, and then finds the lock taken or
 * (once it has it) the file removed, and starts again under another
 * name; so a clone never goes on with an owner file a sweeper took. On
 * a file system without locks an empty owner file is left alone.
 */

#include "clone-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OWNER_MAX 8192

/* The owner file of tmpname: "TMPNAME.owner" in ret (BGRUN__CLONE_NAME_MAX). */
static bool owner_of(const char *tmpname, char *ret)
{
	int n = snprintf(ret, BGRUN__CLONE_NAME_MAX, "%s%s", tmpname,
			 BGRUN__CLONE_OWNER_SUFFIX);

	return n > 0 && n < BGRUN__CLONE_NAME_MAX;
}

int bgrun__clone_own(const struct bgrun__dir *parent, const char *tmpname,
		     const char *id, const char *dest, int64_t start_ns,
		     bgrun_os_fd_t *ret_fd)
{
	const char *boot = bgrun__boot_id();
	int64_t pid = bgrun__self_pid(), start = bgrun__proc_starttime(pid);
	char name[BGRUN__CLONE_NAME_MAX];
	bgrun_os_fd_t fd;
	char *text = NULL;
	int n, r;

	if (!owner_of(tmpname, name))
		return -ENAMETOOLONG;
	/* Made before the file exists: the window before the lock is short. */
	n = asprintf(&text,
		     "bgrun clone temporary directory\n"
		     "pid %" PRId64 "\nstart %" PRId64 "\nboot %s\n"
		     "id %s\nstarted %" PRId64 "\ndest %s\n",
		     pid, start, boot != NULL ? boot : "",
		     id != NULL ? id : "", start_ns, dest);
	if (n < 0)
		return -ENOMEM;
	r = bgrun__dir_create(parent, name, &fd);
	if (r < 0) {
		free(text);
		return r;
	}
	r = bgrun__file_trylock(fd);
	/* A file system without locks still has the pid and boot id. */
	if (r == -ENOLCK)
		r = 0;
	/*
	 * A sweeper has it, or had it and removed it as empty: start again
	 * under another name (the name is no longer ours in the second case).
	 */
	if (r == -EWOULDBLOCK || (r == 0 && bgrun__file_removed(fd))) {
		free(text);
		if (r == -EWOULDBLOCK)
			(void)bgrun__dir_unlink(parent, name, false);
		(void)bgrun__file_close(fd);
		return -EEXIST;
	}
	if (r == 0)
		r = bgrun__fd_write_all(fd, text, (size_t)n);
	free(text);
	if (r < 0) {
		(void)bgrun__dir_unlink(parent, name, false);
		(void)bgrun__file_close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int bgrun__clone_own_phase(bgrun_os_fd_t fd, const char *phase)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s\n", phase);

	return bgrun__fd_write_all(fd, line, (size_t)n);
}

void bgrun__clone_disown(const struct bgrun__dir *parent, const char *tmpname,
			 bgrun_os_fd_t fd)
{
	char name[BGRUN__CLONE_NAME_MAX];

	/* The file goes first, with the lock held (see above). */
	if (owner_of(tmpname, name))
		(void)bgrun__dir_unlink(parent, name, false);
	(void)bgrun__file_close(fd);
}

/*
 * Whether name has the form of an owner file, ".NAME.clone-XXXXXX.owner":
 * then its temporary's name, in ret (BGRUN__CLONE_NAME_MAX).
 */
static bool owner_name(const char *name, char *ret)
{
	size_t sl = strlen(BGRUN__CLONE_OWNER_SUFFIX), len = strlen(name);

	if (len < sl || len - sl >= BGRUN__CLONE_NAME_MAX ||
	    strcmp(name + len - sl, BGRUN__CLONE_OWNER_SUFFIX) != 0)
		return false;
	len -= sl;
	if (len < 1 + 1 + 7 + 6 || name[0] != '.' ||
	    memcmp(name + len - 13, ".clone-", 7) != 0)
		return false;
	for (size_t i = len - 6; i < len; i++)
		if (bgrun__hex_value((unsigned char)name[i]) < 0)
			return false;
	memcpy(ret, name, len);
	ret[len] = '\0';
	return true;
}

/* What an owner file says: each "KEY VALUE" line, cut in place. */
struct owner {
	char *pid, *start, *boot, *id, *started, *dest;
	const char *phase; /* the last of "renaming" or "failed", or NULL */
};

static void parse_owner(char *text, struct owner *o)
{
	static const char *const keys[] = { "pid", "start", "boot",
					    "id", "started", "dest" };
	char **slot[] = { &o->pid, &o->start, &o->boot,
			  &o->id, &o->started, &o->dest };

	*o = (struct owner){ 0 };
	for (char *line = text, *nl; line != NULL && *line != '\0';
	     line = nl != NULL ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (strcmp(line, "renaming") == 0 || strcmp(line, "failed") == 0)
			o->phase = line;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t kl = strlen(keys[i]);

			if (strncmp(line, keys[i], kl) == 0 && line[kl] == ' ')
				*slot[i] = line + kl + 1;
		}
	}
}

static int64_t number(const char *s)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return BGRUN_NULL;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno != 0 || *end != '\0' ? BGRUN_NULL : (int64_t)v;
}

/*
 * Looks at the owner file name (of the temporary tmpname) in parent_dir:
 * 1 taken (and cb told), 0 left (in use, not ours, not complete), or
 * -errno.
 */
static int sweep_one(const struct bgrun__dir *parent_dir, const char *parent,
		     const char *name, const char *tmpname,
		     bgrun_clone_stale_cb cb, void *data)
{
	struct bgrun_clone_stale s;
	char text[OWNER_MAX + 1], *path = NULL, *boot;
	struct iovec iov = { text, OWNER_MAX };
	bgrun_os_fd_t fd = BGRUN_OS_FD_NONE;
	enum bgrun_clone_left left;
	struct owner o;
	int64_t pid, owner_start;
	ssize_t n;
	int r = 0, lock;

	if (bgrun__dir_open_file(parent_dir, name, &fd) < 0)
		return 0;
	/* Another user's: not ours to judge, nor to record. */
	if (!bgrun__file_is_own(fd))
		goto out;
	/* Held by its owner, or by another sweeper: not ours to judge. */
	lock = bgrun__file_trylock(fd);
	if (lock == -EWOULDBLOCK)
		goto out;
	/* Another sweeper (or the owner, as it finished) removed it first. */
	if (bgrun__file_removed(fd))
		goto out;
	do
		n = bgrun__file_readv(fd, &iov, 1, 0, NULL);
	while (n == -EINTR);
	if (n < 0)
		goto out;
	text[n] = '\0';
	if (n == 0 || strncmp(text, "bgrun clone temporary directory\n", 32) != 0) {
		/*
		 * Empty, with its lock ours: its clone was killed before it
		 * wrote it, or is between its creation and its lock, and will
		 * find the lock taken or the file removed, and try another
		 * name. Either way nothing was made: it goes, unrecorded.
		 */
		if (n == 0 && lock == 0)
			(void)bgrun__dir_unlink(parent_dir, name, false);
		goto out;
	}
	parse_owner(text + 32, &o);
	pid = number(o.pid);
	owner_start = number(o.start);
	boot = o.boot != NULL && o.boot[0] != '\0' ? o.boot : NULL;
	/* Not written to its end yet (no lock on this file system). */
	if (o.dest == NULL || pid == BGRUN_NULL || pid <= 0 ||
	    !bgrun__supervisor_gone(boot, pid, owner_start))
		goto out;
	if ((strcmp(parent, ".") == 0 ? (path = strdup(tmpname)) == NULL
				       : asprintf(&path, "%s/%s", parent, tmpname) < 0)) {
		r = -ENOMEM;
		goto out;
	}
	if (bgrun__dir_is_own_dir(parent_dir, tmpname))
		left = BGRUN_CLONE_LEFT_TEMPORARY;
	else if (o.phase != NULL && strcmp(o.phase, "renaming") == 0)
		left = BGRUN_CLONE_LEFT_FINISHED;
	else
		left = BGRUN_CLONE_LEFT_NOTHING;
	s = (struct bgrun_clone_stale){
		.path = path,
		.dest = o.dest,
		.id = o.id != NULL ? o.id : "",
		.pid = pid,
		.boot_id = boot != NULL ? boot : "",
		.start_ns = number(o.started),
		.left = left,
	};
	/*
	 * Told (and recorded) first, the owner file kept until then: a
	 * sweeper killed in between leaves it for the next one, which
	 * records the same clone under the same id (a lost row over a lost
	 * or a finished one changes nothing: bgrun_store_put).
	 */
	if (cb != NULL)
		cb(data, &s);
	if (left == BGRUN_CLONE_LEFT_TEMPORARY)
		bgrun__dir_remove_tree(parent_dir, tmpname);
	/*
	 * The owner file goes last, with the lock held, then the lock: a
	 * sweeper waiting for it finds the file removed.
	 */
	(void)bgrun__dir_unlink(parent_dir, name, false);
	(void)bgrun__file_close(fd);
	fd = BGRUN_OS_FD_NONE;
	r = 1;
out:
	free(path);
	if (!bgrun__os_fd_bad(fd))
		(void)bgrun__file_close(fd);
	return r;
}

struct sweep {
	const struct bgrun__dir *parent_dir;
	const char *parent;
	bgrun_clone_stale_cb cb;
	void *data;
	int removed;
};

static int sweep_entry(void *data, const char *name)
{
	struct sweep *sw = data;
	char tmpname[BGRUN__CLONE_NAME_MAX];
	int r;

	if (!owner_name(name, tmpname))
		return 0;
	r = sweep_one(sw->parent_dir, sw->parent, name, tmpname, sw->cb,
		      sw->data);
	if (r < 0)
		return r;
	sw->removed += r;
	return 0;
}

int bgrun__clone_sweep(const struct bgrun__dir *parent_dir, const char *parent,
		       bgrun_clone_stale_cb cb, void *data)
{
	struct sweep sw = { .parent_dir = parent_dir, .parent = parent,
			    .cb = cb, .data = data };
	int r;

	r = bgrun__dir_list(parent_dir, sweep_entry, &sw);
	return r < 0 ? r : sw.removed;
}
