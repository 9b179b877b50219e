/* SPDX-License-Identifier: MIT */
/* stale.c: who owns a clone's temporary directory, and the removal of those whose owner is gone. */

/*
 * A clone killed with SIGKILL (or by a crash, or a power cut) cannot
 * remove its temporary directory, which may hold most of a repository.
 * So each temporary holds an owner file, OWNER below, naming the process
 * (pid, its start time, the boot id), the clone's id and start and the
 * destination, and locked by the clone (flock) from its creation until
 * the rename into place. A later clone into the same directory, or
 * bgrun_clone_cleanup, removes a temporary when both say the owner is
 * gone: the lock is free (the kernel dropped it with the owner's last
 * descriptor) and the recorded process no longer runs (another boot, or
 * no process with that pid and start time: bgrun__supervisor_gone, the
 * rule for `running` rows). The lock also makes two sweepers agree: the
 * one holding it removes the directory, the other passes.
 *
 * The owner file is written under another name and renamed once it is
 * complete and locked, so a sweeper never sees a half-written or unlocked
 * one. A temporary without an owner file (a clone of an older bgrun, or
 * one caught in the microseconds between mkdir and that rename, or
 * between the file's removal and the final rename) is left alone: it
 * cannot be told apart from one in use.
 */

#include "clone-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OWNER BGRUN__CLONE_OWNER
#define OWNER_NEW BGRUN__CLONE_OWNER ".new"
#define OWNER_MAX 8192

void bgrun__clone_remove_tree(int dirfd, const char *name)
{
	int fd = openat(dirfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd >= 0) {
		d = fdopendir(fd);
		if (d == NULL) {
			(void)close(fd);
		} else {
			while ((de = readdir(d)) != NULL) {
				if (strcmp(de->d_name, ".") == 0 ||
				    strcmp(de->d_name, "..") == 0)
					continue;
				if (unlinkat(fd, de->d_name, 0) < 0 &&
				    (errno == EISDIR || errno == EPERM))
					bgrun__clone_remove_tree(fd, de->d_name);
			}
			(void)closedir(d);
		}
	}
	(void)unlinkat(dirfd, name, AT_REMOVEDIR);
}

int bgrun__clone_own(int tmp_fd, const char *id, const char *dest,
		     int64_t start_ns, int *ret_fd)
{
	const char *boot = bgrun__boot_id();
	int64_t pid = (int64_t)getpid(), start = bgrun__proc_starttime(pid);
	char *text = NULL;
	int fd, n, r;

	n = asprintf(&text,
		     "bgrun clone temporary directory\n"
		     "pid %" PRId64 "\nstart %" PRId64 "\nboot %s\n"
		     "id %s\nstarted %" PRId64 "\ndest %s\n",
		     pid, start, boot != NULL ? boot : "",
		     id != NULL ? id : "", start_ns, dest);
	if (n < 0)
		return -ENOMEM;
	fd = openat(tmp_fd, OWNER_NEW,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0) {
		r = -errno;
		free(text);
		return r;
	}
	r = flock(fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
	/* A file system without locks still has the pid and boot id. */
	if (r == -ENOLCK || r == -EOPNOTSUPP || r == -EINVAL)
		r = 0;
	if (r == 0)
		r = bgrun__fd_write_all(fd, text, (size_t)n);
	if (r == 0 && renameat(tmp_fd, OWNER_NEW, tmp_fd, OWNER) < 0)
		r = -errno;
	free(text);
	if (r < 0) {
		(void)close(fd);
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
 * Looks at the temporary name in parent_fd: 1 removed (and cb told), 0
 * left (in use, not ours, no owner file), or -errno.
 */
static int sweep_one(int parent_fd, const char *parent, const char *name,
		     bgrun_clone_stale_cb cb, void *data)
{
	struct bgrun_clone_stale s;
	char text[OWNER_MAX + 1], *path = NULL, *boot;
	struct owner o;
	int64_t pid, owner_start;
	struct stat st;
	ssize_t n;
	int dfd = -1, fd = -1, r = 0;

	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return 0;
	dfd = openat(parent_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	fd = openat(dfd, OWNER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out;
	/* Held by its owner, or by another sweeper: not ours to judge. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		goto out;
	/* Another sweeper removed it while we waited for the lock. */
	if (fstat(fd, &st) < 0 || st.st_nlink == 0 || !S_ISREG(st.st_mode))
		goto out;
	n = pread(fd, text, OWNER_MAX, 0);
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
	(void)close(dfd);
	dfd = -1;
	bgrun__clone_remove_tree(parent_fd, name);
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
	if (fd >= 0)
		(void)close(fd);
	if (dfd >= 0)
		(void)close(dfd);
	return r;
}

int bgrun__clone_sweep(int parent_fd, const char *parent,
		       bgrun_clone_stale_cb cb, void *data)
{
	struct dirent *de;
	int fd, removed = 0, r = 0;
	DIR *d;

	fd = openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		r = -errno;
		(void)close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (!tmp_name(de->d_name))
			continue;
		r = sweep_one(parent_fd, parent, de->d_name, cb, data);
		if (r < 0)
			break;
		removed += r;
	}
	if (r == 0 && errno != 0)
		r = -errno;
	(void)closedir(d);
	return r < 0 ? r : removed;
}
