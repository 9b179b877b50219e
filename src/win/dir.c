/* SPDX-License-Identifier: MIT */
/* dir.c: the files of a tree being built, relative to a directory held by its \\?\ path (Windows, CreateFileW). */

/*
 * Windows has no openat: a directory is its full path, made absolute
 * once (GetFullPathNameW, which also turns '/' into '\') and given the
 * \\?\ prefix, and names are appended to it. With the prefix the wide
 * calls take paths of up to 32767 characters (no MAX_PATH, whatever the
 * system's LongPathsEnabled says) and take each name as it is: no
 * device names (a file may be called "aux"), no trimming of trailing
 * dots and spaces. The store names Mercurial gives are escaped against
 * all of that anyway (store._auxencode), so the tree is the one hg
 * writes on Windows.
 *
 * Every file is opened with FILE_SHARE_DELETE too, so that it can be
 * renamed or removed while open, as on POSIX; and no handle is
 * inheritable (a launch passes only the handles it names).
 */

#include "win.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)

/* A missing parent is ENOENT, as on POSIX. */
static int win_error(void)
{
	DWORD e = GetLastError();

	if (e == ERROR_DIRECTORY)
		return -ENOTDIR;
	if (e == ERROR_DIR_NOT_EMPTY)
		return -ENOTEMPTY;
	if (e == ERROR_NOT_SAME_DEVICE)
		return -EXDEV;
	return bgrun__win_errno(e);
}

/* d's path, '\', then name with '/' as '\', malloc'd: 0 or -errno. */
static int join(const struct bgrun__dir *d, const char *name, WCHAR **ret)
{
	WCHAR *w, *p;
	size_t n;
	int r;

	r = bgrun__win_utf16(name, &w);
	if (r < 0)
		return r;
	n = wcslen(w);
	p = malloc((d->len + 1 + n + 1) * sizeof(*p));
	if (p == NULL) {
		free(w);
		return -ENOMEM;
	}
	memcpy(p, d->path, d->len * sizeof(*p));
	p[d->len] = L'\\';
	for (size_t i = 0; i < n; i++)
		p[d->len + 1 + i] = w[i] == L'/' ? L'\\' : w[i];
	p[d->len + 1 + n] = L'\0';
	free(w);
	*ret = p;
	return 0;
}

/* path (UTF-8, any form) as an absolute \\?\ path without a trailing '\'. */
static int long_path(const char *path, WCHAR **ret, size_t *ret_len)
{
	WCHAR *w, *full, *out;
	DWORD n;
	size_t len, pre;
	int r;

	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		return r;
	if (wcsncmp(w, L"\\\\?\\", 4) == 0) {
		/* Already in the form: taken as it is. */
		full = w;
		len = wcslen(w);
		w = NULL;
	} else {
		n = GetFullPathNameW(w, 0, NULL, NULL);
		full = n > 0 ? malloc(n * sizeof(*full)) : NULL;
		if (n == 0 || full == NULL ||
		    (n = GetFullPathNameW(w, n, full, NULL)) == 0) {
			r = n == 0 ? win_error() : -ENOMEM;
			free(full);
			free(w);
			return r;
		}
		len = n;
	}
	free(w);
	/* \\server\share\x -> \\?\UNC\server\share\x; C:\x -> \\?\C:\x. */
	if (wcsncmp(full, L"\\\\?\\", 4) == 0)
		pre = 0;
	else if (full[0] == L'\\' && full[1] == L'\\')
		pre = 8;
	else
		pre = 4;
	out = malloc((pre + len + 1) * sizeof(*out));
	if (out == NULL) {
		free(full);
		return -ENOMEM;
	}
	if (pre == 8) {
		memcpy(out, L"\\\\?\\UNC", 7 * sizeof(*out));
		memcpy(out + 7, full + 1, len * sizeof(*out)); /* keeps one '\' */
		len = 7 + len - 1;
	} else {
		memcpy(out, L"\\\\?\\", pre * sizeof(*out));
		memcpy(out + pre, full, len * sizeof(*out));
		len += pre;
	}
	out[len] = L'\0';
	free(full);
	while (len > 0 && out[len - 1] == L'\\')
		out[--len] = L'\0';
	*ret = out;
	*ret_len = len;
	return 0;
}

/* 0 if p is a directory (not a link to one), else -errno. */
static int is_dir(const WCHAR *p)
{
	DWORD a = GetFileAttributesW(p);

	if (a == INVALID_FILE_ATTRIBUTES)
		return win_error();
	if (a & FILE_ATTRIBUTE_REPARSE_POINT)
		return -ELOOP;
	return a & FILE_ATTRIBUTE_DIRECTORY ? 0 : -ENOTDIR;
}

int bgrun__dir_open(const char *path, struct bgrun__dir *ret)
{
	WCHAR *p, *probe;
	size_t len;
	DWORD a;
	int r;

	r = long_path(path, &p, &len);
	if (r < 0)
		return r;
	/* A drive's root ("\\?\C:") is asked about as "\\?\C:\". */
	probe = malloc((len + 2) * sizeof(*probe));
	if (probe == NULL) {
		free(p);
		return -ENOMEM;
	}
	memcpy(probe, p, len * sizeof(*p));
	probe[len] = L'\\';
	probe[len + 1] = L'\0';
	a = GetFileAttributesW(probe);
	r = a == INVALID_FILE_ATTRIBUTES ? win_error()
	    : a & FILE_ATTRIBUTE_DIRECTORY ? 0 : -ENOTDIR;
	free(probe);
	if (r < 0) {
		free(p);
		return r;
	}
	ret->path = p;
	ret->len = len;
	return 0;
}

int bgrun__dir_open_at(const struct bgrun__dir *d, const char *name,
		       struct bgrun__dir *ret)
{
	WCHAR *p;
	int r;

	r = join(d, name, &p);
	if (r < 0)
		return r;
	r = is_dir(p);
	if (r < 0) {
		free(p);
		return r;
	}
	ret->path = p;
	ret->len = wcslen(p);
	return 0;
}

void bgrun__dir_close(struct bgrun__dir *d)
{
	free(d->path);
	d->path = NULL;
	d->len = 0;
}

int bgrun__dir_mkdir(const struct bgrun__dir *d, const char *name)
{
	WCHAR *p;
	int r;

	r = join(d, name, &p);
	if (r < 0)
		return r;
	r = CreateDirectoryW(p, NULL) ? 0 : win_error();
	free(p);
	return r;
}

/* CreateFileW with our sharing, never inheritable. */
static int open_path(const WCHAR *p, DWORD access, DWORD how, DWORD flags,
		     bgrun_os_fd_t *ret)
{
	HANDLE h = CreateFileW(p, access, SHARE_ALL, NULL, how, flags, NULL);
	int r;

	if (h == INVALID_HANDLE_VALUE) {
		r = win_error();
		/* A directory of that name: it exists, as POSIX says. */
		if (r == -EACCES && how == CREATE_NEW &&
		    GetFileAttributesW(p) != INVALID_FILE_ATTRIBUTES)
			r = -EEXIST;
		return r;
	}
	*ret = h;
	return 0;
}

int bgrun__dir_create(const struct bgrun__dir *d, const char *name,
		      bgrun_os_fd_t *ret)
{
	WCHAR *p;
	int r;

	r = join(d, name, &p);
	if (r < 0)
		return r;
	r = open_path(p, GENERIC_READ | GENERIC_WRITE, CREATE_NEW,
		      FILE_ATTRIBUTE_NORMAL, ret);
	free(p);
	return r;
}

int bgrun__dir_open_file(const struct bgrun__dir *d, const char *name,
			 bgrun_os_fd_t *ret)
{
	WCHAR *p;
	int r;

	r = join(d, name, &p);
	if (r < 0)
		return r;
	/* The link itself if it is one: never followed. */
	r = open_path(p, GENERIC_READ, OPEN_EXISTING,
		      FILE_FLAG_OPEN_REPARSE_POINT, ret);
	free(p);
	return r;
}

int bgrun__dir_unlink(const struct bgrun__dir *d, const char *name,
		      bool dir)
{
	WCHAR *p;
	int r;

	r = join(d, name, &p);
	if (r < 0)
		return r;
	r = (dir ? RemoveDirectoryW(p) : DeleteFileW(p)) ? 0 : win_error();
	free(p);
	return r;
}

int bgrun__dir_rename(const struct bgrun__dir *d, const char *from,
		      const char *to, bool replace)
{
	WCHAR *f = NULL, *t = NULL;
	DWORD a;
	int r;

	r = join(d, from, &f);
	if (r == 0)
		r = join(d, to, &t);
	if (r < 0)
		goto out;
	/*
	 * MoveFileExW replaces a file but never a directory: an empty one
	 * is removed first (so this is two steps, where POSIX has one).
	 */
	a = GetFileAttributesW(t);
	if (replace && a != INVALID_FILE_ATTRIBUTES &&
	    (a & FILE_ATTRIBUTE_DIRECTORY) && !RemoveDirectoryW(t)) {
		r = win_error();
		goto out;
	}
	if (!MoveFileExW(f, t, replace ? MOVEFILE_REPLACE_EXISTING : 0))
		r = win_error();
out:
	free(t);
	free(f);
	return r;
}

/* Calls cb for each entry of the directory path p. */
static int list_path(const WCHAR *p, size_t len,
		     int (*cb)(void *data, const char *name,
			       const WIN32_FIND_DATAW *fd),
		     void *data)
{
	WIN32_FIND_DATAW fd;
	WCHAR *pat = malloc((len + 3) * sizeof(*pat));
	HANDLE h;
	int r = 0;

	if (pat == NULL)
		return -ENOMEM;
	memcpy(pat, p, len * sizeof(*p));
	memcpy(pat + len, L"\\*", 3 * sizeof(*pat));
	h = FindFirstFileExW(pat, FindExInfoBasic, &fd, FindExSearchNameMatch,
			     NULL, FIND_FIRST_EX_LARGE_FETCH);
	free(pat);
	if (h == INVALID_HANDLE_VALUE)
		return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : win_error();
	do {
		char *name;

		if (wcscmp(fd.cFileName, L".") == 0 ||
		    wcscmp(fd.cFileName, L"..") == 0)
			continue;
		r = bgrun__win_utf8(fd.cFileName, -1, &name);
		if (r < 0)
			break;
		r = cb(data, name, &fd);
		free(name);
		if (r != 0)
			break;
	} while (FindNextFileW(h, &fd));
	if (r == 0 && GetLastError() != ERROR_NO_MORE_FILES)
		r = win_error();
	(void)FindClose(h);
	return r;
}

struct list_cb {
	int (*cb)(void *data, const char *name);
	void *data;
};

static int list_one(void *data, const char *name, const WIN32_FIND_DATAW *fd)
{
	struct list_cb *l = data;

	(void)fd;
	return l->cb(l->data, name);
}

int bgrun__dir_list(const struct bgrun__dir *d,
		    int (*cb)(void *data, const char *name), void *data)
{
	struct list_cb l = { cb, data };

	return list_path(d->path, d->len, list_one, &l);
}

bool bgrun__dir_is_own_dir(const struct bgrun__dir *d, const char *name)
{
	WCHAR *p;
	bool yes;

	if (join(d, name, &p) < 0)
		return false;
	yes = is_dir(p) == 0;
	free(p);
	return yes;
}

static void remove_path(const WCHAR *p);

static int remove_one(void *data, const char *name, const WIN32_FIND_DATAW *fd)
{
	const WCHAR *dir = data;
	size_t dl = wcslen(dir), nl = wcslen(fd->cFileName);
	WCHAR *p = malloc((dl + 1 + nl + 1) * sizeof(*p));

	(void)name;
	if (p == NULL)
		return 0;
	memcpy(p, dir, dl * sizeof(*p));
	p[dl] = L'\\';
	memcpy(p + dl + 1, fd->cFileName, (nl + 1) * sizeof(*p));
	if ((fd->dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) &&
	    !(fd->dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
		remove_path(p);
	} else if (fd->dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
		(void)RemoveDirectoryW(p); /* a link: itself, not its target */
	} else {
		if (fd->dwFileAttributes & FILE_ATTRIBUTE_READONLY)
			(void)SetFileAttributesW(p, FILE_ATTRIBUTE_NORMAL);
		(void)DeleteFileW(p);
	}
	free(p);
	return 0;
}

static void remove_path(const WCHAR *p)
{
	(void)list_path(p, wcslen(p), remove_one, (void *)p);
	(void)RemoveDirectoryW(p);
}

void bgrun__dir_remove_tree(const struct bgrun__dir *d, const char *name)
{
	WCHAR *p;

	if (join(d, name, &p) < 0)
		return;
	if (is_dir(p) == 0)
		remove_path(p);
	else
		(void)RemoveDirectoryW(p);
	free(p);
}

int bgrun__file_open_read(const char *path, bgrun_os_fd_t *ret)
{
	WCHAR *p;
	size_t len;
	int r;

	r = long_path(path, &p, &len);
	if (r < 0)
		return r;
	r = open_path(p, GENERIC_READ, OPEN_EXISTING, FILE_FLAG_SEQUENTIAL_SCAN,
		      ret);
	free(p);
	return r;
}

/*
 * CloseHandle of a file just written is the slow call on NTFS (seed
 * 000: 1 to 10 ms), which is what the closer threads are for.
 */
int bgrun__file_close(bgrun_os_fd_t fd)
{
	return CloseHandle(fd) ? 0 : win_error();
}

int bgrun__file_info(bgrun_os_fd_t fd, bool *ret_regular,
		     uint64_t *ret_size, uint64_t *ret_offset)
{
	LARGE_INTEGER size, off, zero = { .QuadPart = 0 };

	SetLastError(ERROR_SUCCESS);
	if (GetFileType(fd) != FILE_TYPE_DISK) {
		if (GetLastError() != ERROR_SUCCESS)
			return win_error();
		*ret_regular = false;
		*ret_size = *ret_offset = 0;
		return 0;
	}
	if (!GetFileSizeEx(fd, &size) ||
	    !SetFilePointerEx(fd, zero, &off, FILE_CURRENT))
		return win_error();
	*ret_regular = true;
	*ret_size = (uint64_t)size.QuadPart;
	*ret_offset = (uint64_t)off.QuadPart;
	return 0;
}

/*
 * At an offset: ReadFile with the offset in an OVERLAPPED (on a handle
 * opened for synchronous reads, a positioned read). At the current
 * position (a pipe): ReadFile; its writer's end closing is the end.
 * The cancel flag is looked at between reads only: a read blocked on a
 * pipe waits for data (bgrun.h: cancel).
 */
ssize_t bgrun__file_readv(bgrun_os_fd_t fd, const struct iovec *iov, int n,
			  int64_t off, const volatile sig_atomic_t *cancel)
{
	size_t total = 0;

	(void)cancel;
	for (int i = 0; i < n; i++) {
		size_t len = iov[i].iov_len;
		DWORD chunk = len > 0x40000000 ? 0x40000000 : (DWORD)len, got = 0;
		OVERLAPPED ov = { 0 };
		BOOL ok;

		if (chunk == 0)
			continue;
		if (off >= 0) {
			uint64_t at = (uint64_t)off + total;

			ov.Offset = (DWORD)at;
			ov.OffsetHigh = (DWORD)(at >> 32);
			ok = ReadFile(fd, iov[i].iov_base, chunk, &got, &ov);
		} else {
			ok = ReadFile(fd, iov[i].iov_base, chunk, &got, NULL);
		}
		if (!ok) {
			DWORD e = GetLastError();

			if (e == ERROR_HANDLE_EOF || e == ERROR_BROKEN_PIPE)
				break;
			if (total > 0)
				break;
			return win_error();
		}
		total += got;
		/* Short: the end, or what a pipe has for now. */
		if (got < chunk || off < 0)
			break;
	}
	return (ssize_t)total;
}

ssize_t bgrun__file_copy_range(bgrun_os_fd_t in, uint64_t *in_off,
			       bgrun_os_fd_t out, size_t len)
{
	(void)in;
	(void)in_off;
	(void)out;
	(void)len;
	return -ENOSYS;
}

bool bgrun__file_removed(bgrun_os_fd_t fd)
{
	FILE_STANDARD_INFO si;

	if (!GetFileInformationByHandleEx(fd, FileStandardInfo, &si, sizeof(si)))
		return true;
	return si.DeletePending || si.NumberOfLinks == 0 || si.Directory;
}

bool bgrun__file_is_own(bgrun_os_fd_t fd)
{
	(void)fd;
	return true;
}

int64_t bgrun__self_pid(void)
{
	return (int64_t)GetCurrentProcessId();
}
