/* SPDX-License-Identifier: MIT */
/* stale.c: who owns a clone's temporary directory, and the removal of those whose owner is gone. */

/*
 * A clone killed with SIGKILL (or by a crash, or a power cut) cannot
 * remove its temporary directory, which may hold most of a repository.
 * So each temporary holds an owner file, OWNER below, naming the process
 * (pid, its start time, the boot id), the clone's id and start and the
 * destination, and locked by the clone (bgrun__file_trylock: flock, or
 * a byte-range lock on Windows) from its creation until just before the rename
 * into place, when the file goes and then the lock. A later clone into the same directory, or
 * bgrun_clone_cleanup, removes a temporary when both say the owner is
 * gone: the lock is free (the kernel dropped it with the owner's last
 * descriptor) and the recorded process no longer runs (another boot, or
 * no process with that pid and start time: bgrun__supervisor_gone, the
 * rule for `running` rows). The lock also makes two sweepers agree: the
 * one holding it removes the directory, the other passes: the holder
 * removes the file before it lets go, and a sweeper that gets the lock
 * of a file already removed passes too.
 *
 * The owner file is written under another name and renamed once it is
 * complete and locked, so a sweeper never sees a half-written or unlocked
 * one. A temporary without an owner file (a clone of an older bgrun, or
 * one caught in the microseconds between mkdir and that rename, or
 * between the file's removal and the final rename) is left alone: it
 * cannot be told apart from one in use.
 */

#include "clone-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OWNER BGRUN__CLONE_OWNER
#define OWNER_NEW BGRUN__CLONE_OWNER ".new"
#define OWNER_MAX 8192

int bgrun__clone_own(const struct bgrun__dir *tmp, const char *id,
		     const char *dest, int64_t start_ns, bgrun_os_fd_t *ret_fd)
{
	const char *boot = bgrun__boot_id();
	int64_t pid = bgrun__self_pid(), start = bgrun__proc_starttime(pid);
	bgrun_os_fd_t fd;
	char *text = NULL;
	int n, r;

	n = asprintf(&text,
		     "bgrun clone temporary directory\n"
		     "pid %" PRId64 "\nstart %" PRId64 "\nboot %s\n"
		     "id %s\nstarted %" PRId64 "\ndest %s\n",
		     pid, start, boot != NULL ? boot : "",
		     id != NULL ? id : "", start_ns, dest);
	if (n < 0)
		return -ENOMEM;
	r = bgrun__dir_create(tmp, OWNER_NEW, &fd);
	if (r < 0) {
		free(text);
		return r;
	}
	r = bgrun__file_trylock(fd);
	/* A file system without locks still has the pid and boot id. */
	if (r == -ENOLCK)
		r = 0;
	if (r == 0)
		r = bgrun__fd_write_all(fd, text, (size_t)n);
	if (r == 0)
		r = bgrun__dir_rename(tmp, OWNER_NEW, OWNER, true);
	free(text);
	if (r < 0) {
		(void)bgrun__dir_unlink(tmp, OWNER_NEW, false);
		(void)bgrun__file_close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Whether name has the form make_tmp gives: ".NAME.clone-XXXXXX". */
static bool tmp_name(const char *name)
{
	size_t len = strlen(name);

	if (len < 1 + 1 + 7 + 6 || name[0] != '.' ||
	    memcmp(name + len - 13, ".clone-", 7) != 0)
		return false;
	for (size_t i = len - 6; i < len; i++)
		if (bgrun__hex_value((unsigned char)name[i]) < 0)
			return false;
	return true;
}

/* What an owner file says: each "KEY VALUE" line, cut in place. */
struct owner {
	char *pid, *start, *boot, *id, *started, *dest;
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
 * Looks at the temporary name in parent_dir: 1 removed (and cb told), 0
 * left (in use, not ours, no owner file), or -errno.
 */
static int sweep_one(const struct bgrun__dir *parent_dir, const char *parent,
		     const char *name, bgrun_clone_stale_cb cb, void *data)
{
	struct bgrun__dir d = BGRUN__DIR_INIT;
	struct bgrun_clone_stale s;
	char text[OWNER_MAX + 1], *path = NULL, *boot;
	struct iovec iov = { text, OWNER_MAX };
	bgrun_os_fd_t fd = BGRUN_OS_FD_NONE;
	struct owner o;
	int64_t pid, owner_start;
	ssize_t n;
	int r = 0;

	if (!bgrun__dir_is_own_dir(parent_dir, name) ||
	    bgrun__dir_open_at(parent_dir, name, &d) < 0)
		return 0;
	if (bgrun__dir_open_file(&d, OWNER, &fd) < 0)
		goto out;
	/* Held by its owner, or by another sweeper: not ours to judge. */
	if (bgrun__file_trylock(fd) == -EWOULDBLOCK)
		goto out;
	/* Another sweeper (or the owner, as it finished) removed it first. */
	if (bgrun__file_removed(fd))
		goto out;
	do
		n = bgrun__file_readv(fd, &iov, 1, 0, NULL);
	while (n == -EINTR);
	if (n <= 0)
		goto out;
	text[n] = '\0';
	if (strncmp(text, "bgrun clone temporary directory\n", 32) != 0)
		goto out;
	parse_owner(text + 32, &o);
	pid = number(o.pid);
	owner_start = number(o.start);
	boot = o.boot != NULL && o.boot[0] != '\0' ? o.boot : NULL;
	if (pid == BGRUN_NULL || pid <= 0 ||
	    !bgrun__supervisor_gone(boot, pid, owner_start))
		goto out;
	if ((strcmp(parent, ".") == 0 ? (path = strdup(name)) == NULL
				       : asprintf(&path, "%s/%s", parent, name) < 0)) {
		r = -ENOMEM;
		goto out;
	}
	/*
	 * The owner file goes first, with the lock held, then the lock: a
	 * sweeper waiting for it finds the file removed; and on Windows a
	 * directory with a file open inside it cannot be removed.
	 */
	(void)bgrun__dir_unlink(&d, OWNER, false);
	(void)bgrun__file_close(fd);
	fd = BGRUN_OS_FD_NONE;
	bgrun__dir_close(&d);
	bgrun__dir_remove_tree(parent_dir, name);
	s = (struct bgrun_clone_stale){
		.path = path,
		.dest = o.dest != NULL ? o.dest : "",
		.id = o.id != NULL ? o.id : "",
		.pid = pid,
		.boot_id = boot != NULL ? boot : "",
		.start_ns = number(o.started),
	};
	if (cb != NULL)
		cb(data, &s);
	r = 1;
out:
	free(path);
	if (!bgrun__os_fd_bad(fd))
		(void)bgrun__file_close(fd);
	bgrun__dir_close(&d);
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
	int r;

	if (!tmp_name(name))
		return 0;
	r = sweep_one(sw->parent_dir, sw->parent, name, sw->cb, sw->data);
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
