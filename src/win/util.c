/* SPDX-License-Identifier: MIT */
/* util.c: the Windows side of the library's small helpers: clocks, threads, UTF-8 <-> UTF-16, Windows errors as -errno. */

#include "win.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * CLOCK_MONOTONIC is QueryPerformanceCounter (what winpthreads'
 * clock_gettime uses too, read here without its rounding) and
 * CLOCK_REALTIME the precise system time.
 */
int64_t bgrun__now_ns(int clock_id)
{
	if (clock_id == CLOCK_MONOTONIC) {
		static LARGE_INTEGER freq;
		LARGE_INTEGER c;

		if (freq.QuadPart == 0)
			(void)QueryPerformanceFrequency(&freq);
		(void)QueryPerformanceCounter(&c);
		return (int64_t)(c.QuadPart / freq.QuadPart) * 1000000000 +
		       (int64_t)(c.QuadPart % freq.QuadPart) * 1000000000 /
			       freq.QuadPart;
	}
	{
		FILETIME ft;

		GetSystemTimePreciseAsFileTime(&ft);
		return bgrun__win_filetime_unix_ns(&ft);
	}
}

int64_t bgrun__win_filetime_unix_ns(const FILETIME *ft)
{
	int64_t t = (int64_t)(((uint64_t)ft->dwHighDateTime << 32) |
			      ft->dwLowDateTime);

	return (t - INT64_C(116444736000000000)) * 100;
}

/* No signals to block on Windows: a thread, nothing else. */
static int thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg,
			int detach)
{
	pthread_attr_t attr;
	int r;

	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	(void)pthread_attr_setdetachstate(&attr, detach);
	r = pthread_create(ret_thread, &attr, fn, arg);
	(void)pthread_attr_destroy(&attr);
	return -r;
}

int bgrun__thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg)
{
	return thread_start(ret_thread, fn, arg, PTHREAD_CREATE_DETACHED);
}

int bgrun__thread_start_joinable(pthread_t *ret_thread, void *(*fn)(void *),
				 void *arg)
{
	return thread_start(ret_thread, fn, arg, PTHREAD_CREATE_JOINABLE);
}

int bgrun__fork_hooks(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void))
{
	(void)prepare;
	(void)parent;
	(void)child;
	return 0;
}

int bgrun__win_utf16(const char *s, WCHAR **ret)
{
	int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
	WCHAR *w;

	if (n <= 0)
		return -EILSEQ;
	w = malloc((size_t)n * sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	(void)MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
	*ret = w;
	return 0;
}

int bgrun__win_utf8(const WCHAR *s, int n, char **ret)
{
	int len = n == 0 ? 0 : WideCharToMultiByte(CP_UTF8, 0, s, n, NULL, 0, NULL, NULL);
	char *u;

	if (n != 0 && len <= 0)
		return -EILSEQ;
	u = malloc((size_t)len + 1);
	if (u == NULL)
		return -ENOMEM;
	if (len > 0)
		(void)WideCharToMultiByte(CP_UTF8, 0, s, n, u, len, NULL, NULL);
	u[len] = '\0';
	*ret = u;
	return 0;
}

volatile LONG bgrun__win_last_unmapped;

int bgrun__win_errno(DWORD error)
{
	switch (error) {
	case ERROR_SUCCESS:
		return 0;
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
	case ERROR_BAD_NETPATH:
	case ERROR_BAD_NET_NAME:
	case ERROR_MOD_NOT_FOUND:
		return -ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
		return -EACCES;
	case ERROR_BAD_EXE_FORMAT:
	case ERROR_BAD_FORMAT:
	case ERROR_EXE_MACHINE_TYPE_MISMATCH:
	case ERROR_EXE_MARKED_INVALID:
	case ERROR_INVALID_EXE_SIGNATURE:
		return -ENOEXEC;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_COMMITMENT_LIMIT:
		return -ENOMEM;
	case ERROR_TOO_MANY_OPEN_FILES:
		return -EMFILE;
	case ERROR_FILENAME_EXCED_RANGE:
	case ERROR_BUFFER_OVERFLOW:
		return -ENAMETOOLONG;
	case ERROR_DIRECTORY:
		return -ENOTDIR;
	case ERROR_FILE_EXISTS:
	case ERROR_ALREADY_EXISTS:
		return -EEXIST;
	case ERROR_INVALID_HANDLE:
		return -EBADF;
	case ERROR_INVALID_PARAMETER:
	case ERROR_INVALID_NAME:
		return -EINVAL;
	case ERROR_BROKEN_PIPE:
	case ERROR_NO_DATA:
		return -EPIPE;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL:
		return -ENOSPC;
	case ERROR_WRITE_PROTECT:
		return -EROFS;
	case ERROR_NOT_SUPPORTED:
	case ERROR_CALL_NOT_IMPLEMENTED:
		return -ENOSYS;
	case ERROR_WAIT_NO_CHILDREN:
		return -ECHILD;
	default:
		(void)InterlockedExchange(&bgrun__win_last_unmapped,
					  (LONG)error);
		return -EIO;
	}
}

/*
 * A per-user file on Windows: $XDG_VAR/leaf when that is set to an
 * absolute path (as on POSIX, for tests and for users who want it),
 * else %LOCALAPPDATA%\leaf (leaf begins with "bgrun/"); home_dir, the
 * POSIX fallback under $HOME, has no Windows meaning.
 */
int bgrun__user_path(const char *xdg_var, const char *home_dir,
		     const char *leaf, char **ret_path)
{
	const char *xdg = getenv(xdg_var), *base = getenv("LOCALAPPDATA");
	char *path;
	int n;

	(void)home_dir;
	if (xdg != NULL && (xdg[0] == '/' || xdg[0] == '\\' ||
			    (xdg[0] != '\0' && xdg[1] == ':')))
		base = xdg;
	else if (base == NULL || base[0] == '\0')
		return -ENOENT;
	n = asprintf(&path, "%s\\%s", base, leaf);
	if (n < 0)
		return -ENOMEM;
	for (char *p = path; *p != '\0'; p++)
		if (*p == '/')
			*p = '\\';
	*ret_path = path;
	return 0;
}
