/* SPDX-License-Identifier: MIT */
/* compat.h: the few POSIX names the shared store and log-tool code uses that the Windows C runtime lacks or spells otherwise (force-included by src/win/meson.build in the Windows build only). */

#ifndef BGRUN_WIN_COMPAT_H
#define BGRUN_WIN_COMPAT_H

/*
 * git's compat/mingw.h idea: the shared files keep their POSIX calls,
 * and this header gives each one its Windows meaning, rather than an
 * #ifdef _WIN32 at every call. Only what maps honestly is here; what has
 * no Windows meaning is a platform function (src/platform.h) instead.
 */

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <wchar.h>

/*
 * The C runtime's handles are inheritable unless opened _O_NOINHERIT;
 * the library's launches inherit only the handles they name
 * (PROC_THREAD_ATTRIBUTE_HANDLE_LIST), but other code in the caller's
 * process may launch with bInheritHandles: close-on-exec is "not
 * inherited" here.
 */
#ifndef O_CLOEXEC
#define O_CLOEXEC _O_NOINHERIT
#endif
/* No controlling terminals on Windows. */
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
/*
 * _open has no way to refuse a symbolic link (a reparse point): the
 * refusal is made on the path before it is opened instead. lstat is
 * stat, but a reparse point (a symbolic link, a junction, whatever it
 * leads to, or nothing) is said to be a link, S_IFLNK, which the C
 * runtime lacks, as POSIX's lstat says of a link: so the store refuses a
 * log that is one, in POSIX's words.
 */
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#define BGRUN__WIN_S_IFLNK 0xA000
#undef S_ISLNK
#define S_ISLNK(m) (((m) & S_IFMT) == BGRUN__WIN_S_IFLNK)
int bgrun__win_lstat(const char *path, struct stat *st);
#define lstat bgrun__win_lstat

/*
 * The C runtime has no ESHUTDOWN (the daemon refusing a connection as it
 * stops): the nearest it has, "connection aborted".
 */
#include <errno.h>
#ifndef ESHUTDOWN
#define ESHUTDOWN ECONNABORTED
#endif

/*
 * Windows has no signal masks (winpthreads' pthread_sigmask does
 * nothing): a thread started with every signal blocked (the daemon's
 * writer) is simply a thread. sigfillset fills the set it ignores.
 */
#ifndef _POSIX
typedef _sigset_t sigset_t;
#endif
static inline int bgrun__win_sigfillset(sigset_t *set)
{
	*set = (sigset_t)~(sigset_t)0;
	return 0;
}
#define sigfillset bgrun__win_sigfillset

/* FlushFileBuffers: data and metadata (there is no data-only flush). */
static inline int fdatasync(int fd)
{
	return _commit(fd);
}

/* The absolute path, as realpath(path, NULL) gives it (links unresolved). */
static inline char *realpath(const char *path, char *resolved)
{
	return _fullpath(resolved, path, resolved != NULL ? _MAX_PATH : 0);
}

/* The C runtime's localtime_s, argument order and result as POSIX's. */
static inline struct tm *bgrun__win_localtime_r(const time_t *t, struct tm *tm)
{
	return localtime_s(tm, t) == 0 ? tm : NULL;
}
#define localtime_r bgrun__win_localtime_r

/*
 * The signal's name without "SIG", by Linux's numbers: Windows has no
 * signals, but a log written on Linux may be read here.
 */
const char *bgrun__win_sigabbrev_np(int sig);
#define sigabbrev_np bgrun__win_sigabbrev_np
/* Columns of a character on a terminal: 0, 1 or 2 (-1: not printable). */
int bgrun__win_wcwidth(wchar_t c);
#define wcwidth bgrun__win_wcwidth

char *bgrun__win_strndup(const char *s, size_t n);
#define strndup bgrun__win_strndup
ssize_t bgrun__win_getline(char **line, size_t *size, FILE *f);
#define getline bgrun__win_getline
int bgrun__win_setenv(const char *name, const char *value, int overwrite);
#define setenv bgrun__win_setenv

/*
 * open_memstream: a stream on a temporary file (deleted on close) that
 * fclose reads back into *ret_buf, NUL-terminated, and *ret_len, as
 * POSIX says the buffer is after fclose. (The buffer is not kept up to
 * date at each fflush: its users here read it after fclose only.)
 */
FILE *bgrun__win_open_memstream(char **ret_buf, size_t *ret_len);
int bgrun__win_fclose(FILE *f);
#define open_memstream bgrun__win_open_memstream
#define fclose bgrun__win_fclose

/*
 * A program's main, renamed (-Dmain=bgrun_cli_main) so that
 * launcher/win-main.c's wmain calls it with UTF-8 arguments.
 */
int bgrun_cli_main(int argc, char **argv);

#endif /* BGRUN_WIN_COMPAT_H */
