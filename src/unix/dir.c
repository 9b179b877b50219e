/* SPDX-License-Identifier: MIT */
/* dir.c: the files of a tree being built, relative to a directory descriptor (POSIX: openat and its kin). */

#include "platform.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int bgrun__dir_open(const char *path, struct bgrun__dir *ret)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ret->fd = fd;
	return 0;
}

int bgrun__dir_open_at(const struct bgrun__dir *d, const char *name,
		       struct bgrun__dir *ret)
{
	int fd = openat(d->fd, name, DIR_FLAGS);

	if (fd < 0)
		return -errno;
	ret->fd = fd;
	return 0;
}

void bgrun__dir_close(struct bgrun__dir *d)
{
	if (d->fd >= 0)
		(void)close(d->fd);
	d->fd = -1;
}

int bgrun__dir_mkdir(const struct bgrun__dir *d, const char *name)
{
	return mkdirat(d->fd, name, 0777) < 0 ? -errno : 0;
}

int bgrun__dir_create(const struct bgrun__dir *d, const char *name,
		      bgrun_os_fd_t *ret)
{
	int fd = openat(d->fd, name,
			O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);

	if (fd < 0)
		return -errno;
	*ret = fd;
	return 0;
}

int bgrun__dir_open_file(const struct bgrun__dir *d, const char *name,
			 bgrun_os_fd_t *ret)
{
	int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	*ret = fd;
	return 0;
}

int bgrun__dir_unlink(const struct bgrun__dir *d, const char *name,
		      bool is_dir)
{
	return unlinkat(d->fd, name, is_dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
}

int bgrun__dir_rename(const struct bgrun__dir *d, const char *from,
		      const char *to, bool replace)
{
	int r = -1;

	if (!replace) {
		r = renameat2(d->fd, from, d->fd, to, RENAME_NOREPLACE);
		if (r < 0 && errno != EINVAL && errno != ENOSYS)
			return -errno;
	}
	/* Over an empty directory (or where RENAME_NOREPLACE is missing). */
	if (r < 0 && renameat(d->fd, from, d->fd, to) < 0)
		return -errno;
	return 0;
}

int bgrun__dir_list(const struct bgrun__dir *d,
		    int (*cb)(void *data, const char *name), void *data)
{
	struct dirent *de;
	int fd, r = 0;
	DIR *dir;

	/* A descriptor of its own: readdir moves the offset it reads at. */
	fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (dir == NULL) {
		r = -errno;
		(void)close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = cb(data, de->d_name);
		if (r != 0)
			break;
	}
	if (r == 0 && errno != 0)
		r = -errno;
	(void)closedir(dir);
	return r;
}

bool bgrun__dir_is_own_dir(const struct bgrun__dir *d, const char *name)
{
	struct stat st;

	return fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

void bgrun__dir_remove_tree(const struct bgrun__dir *d, const char *name)
{
	int fd = openat(d->fd, name, DIR_FLAGS);
	struct bgrun__dir sub = { .fd = fd };
	struct dirent *de;
	DIR *dir;

	if (fd >= 0) {
		dir = fdopendir(fd);
		if (dir == NULL) {
			(void)close(fd);
		} else {
			while ((de = readdir(dir)) != NULL) {
				if (strcmp(de->d_name, ".") == 0 ||
				    strcmp(de->d_name, "..") == 0)
					continue;
				if (unlinkat(fd, de->d_name, 0) < 0 &&
				    (errno == EISDIR || errno == EPERM))
					bgrun__dir_remove_tree(&sub, de->d_name);
			}
			(void)closedir(dir);
		}
	}
	(void)unlinkat(d->fd, name, AT_REMOVEDIR);
}

int bgrun__file_open_read(const char *path, bgrun_os_fd_t *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	*ret = fd;
	return 0;
}

int bgrun__file_close(bgrun_os_fd_t fd)
{
	return close(fd) < 0 && errno != EINTR ? -errno : 0;
}

int bgrun__file_info(bgrun_os_fd_t fd, bool *ret_regular,
		     uint64_t *ret_size, uint64_t *ret_offset)
{
	struct stat st;
	off_t off = -1;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		off = lseek(fd, 0, SEEK_CUR);
	*ret_regular = off >= 0;
	*ret_size = off >= 0 ? (uint64_t)st.st_size : 0;
	*ret_offset = off >= 0 ? (uint64_t)off : 0;
	return 0;
}

ssize_t bgrun__file_readv(bgrun_os_fd_t fd, const struct iovec *iov, int n,
			  int64_t off, const volatile sig_atomic_t *cancel)
{
	ssize_t got;

	if (off >= 0) {
		got = preadv(fd, iov, n, (off_t)off);
	} else {
		/*
		 * A signal that sets the cancel flag just before a blocking
		 * read would not interrupt it: wait in slices, and let the
		 * caller look at the flag in between.
		 */
		if (cancel != NULL) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int k = poll(&p, 1, 200);

			if (k == 0 || (k < 0 && errno == EINTR))
				return -EINTR;
		}
		got = readv(fd, iov, n);
	}
	return got < 0 ? -errno : got;
}

ssize_t bgrun__file_copy_range(bgrun_os_fd_t in, uint64_t *in_off,
			       bgrun_os_fd_t out, size_t len)
{
	loff_t o = (loff_t)*in_off;
	ssize_t n;

	do
		n = copy_file_range(in, &o, out, NULL, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*in_off = (uint64_t)o;
	return n;
}

int bgrun__file_trylock(bgrun_os_fd_t fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK)
		return -EWOULDBLOCK;
	return errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL
		       ? -ENOLCK : -errno;
}

bool bgrun__file_removed(bgrun_os_fd_t fd)
{
	struct stat st;

	return fstat(fd, &st) < 0 || st.st_nlink == 0 || !S_ISREG(st.st_mode);
}

bool bgrun__file_is_own(bgrun_os_fd_t fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == geteuid();
}

int64_t bgrun__self_pid(void)
{
	return (int64_t)getpid();
}
