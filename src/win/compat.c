/* SPDX-License-Identifier: MIT */
/* compat.c: the POSIX calls of compat.h that the Windows C runtime does not have, written out. */

#include "compat.h"
#include "sys/ioctl.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

/* compat.h renames fclose; this file calls the C runtime's. */
#undef fclose

int bgrun__win_lstat(const char *path, struct stat *st)
{
	WCHAR w[MAX_PATH * 2];
	DWORD attr;
	int r;

	if (MultiByteToWideChar(CP_UTF8, 0, path, -1, w, MAX_PATH * 2) <= 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	attr = GetFileAttributesW(w);
	r = stat(path, st);
	if (attr == INVALID_FILE_ATTRIBUTES ||
	    !(attr & FILE_ATTRIBUTE_REPARSE_POINT))
		return r;
	/* A link that leads nowhere is still there, as lstat(2) says. */
	if (r < 0)
		memset(st, 0, sizeof(*st));
	st->st_mode = (st->st_mode & ~S_IFMT) | BGRUN__WIN_S_IFLNK;
	return 0;
}

char *bgrun__win_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = malloc(len + 1);

	if (d == NULL)
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

/* As POSIX getline: the line with its '\n', -1 at the end or on error. */
ssize_t bgrun__win_getline(char **line, size_t *size, FILE *f)
{
	size_t n = 0;
	int c;

	if (line == NULL || size == NULL) {
		errno = EINVAL;
		return -1;
	}
	while ((c = getc(f)) != EOF) {
		if (*line == NULL || n + 2 > *size) {
			size_t want = *size < 128 ? 128 : *size * 2;
			char *p;

			if (want > (size_t)SSIZE_MAX) {
				errno = EOVERFLOW;
				return -1;
			}
			p = realloc(*line, want);
			if (p == NULL)
				return -1;
			*line = p;
			*size = want;
		}
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0)
		return -1;
	(*line)[n] = '\0';
	return (ssize_t)n;
}

/*
 * _putenv_s changes the C runtime's copy and the process's (what
 * children get); an empty value would remove the name there, which
 * POSIX setenv never does, so it is refused rather than misread.
 */
int bgrun__win_setenv(const char *name, const char *value, int overwrite)
{
	if (name == NULL || name[0] == '\0' || strchr(name, '=') != NULL ||
	    value == NULL || value[0] == '\0') {
		errno = EINVAL;
		return -1;
	}
	if (!overwrite && getenv(name) != NULL)
		return 0;
	if (_putenv_s(name, value) != 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* The open memory streams: few at a time (a plot's series, a message). */
static struct memstream {
	FILE *f;
	char **buf;
	size_t *len;
} memstreams[64];
static pthread_mutex_t memstreams_lock = PTHREAD_MUTEX_INITIALIZER;

FILE *bgrun__win_open_memstream(char **ret_buf, size_t *ret_len)
{
	WCHAR dir[MAX_PATH + 1], name[MAX_PATH + 1];
	struct memstream *m = NULL;
	HANDLE h;
	FILE *f;
	int fd;

	if (GetTempPathW(MAX_PATH + 1, dir) == 0 ||
	    GetTempFileNameW(dir, L"bgr", 0, name) == 0) {
		errno = EIO;
		return NULL;
	}
	h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL,
			CREATE_ALWAYS,
			FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE,
			NULL);
	if (h == INVALID_HANDLE_VALUE) {
		(void)DeleteFileW(name);
		errno = EIO;
		return NULL;
	}
	fd = _open_osfhandle((intptr_t)h, _O_RDWR | _O_BINARY | _O_NOINHERIT);
	if (fd < 0) {
		(void)CloseHandle(h);
		return NULL;
	}
	f = _fdopen(fd, "w+b");
	if (f == NULL) {
		(void)_close(fd);
		return NULL;
	}
	(void)pthread_mutex_lock(&memstreams_lock);
	for (size_t i = 0; i < sizeof(memstreams) / sizeof(memstreams[0]); i++)
		if (memstreams[i].f == NULL) {
			m = &memstreams[i];
			*m = (struct memstream){ f, ret_buf, ret_len };
			break;
		}
	(void)pthread_mutex_unlock(&memstreams_lock);
	if (m == NULL) {
		(void)fclose(f);
		errno = EMFILE;
		return NULL;
	}
	*ret_buf = NULL;
	*ret_len = 0;
	return f;
}

/* What the stream holds, into the caller's buffer: 0, or -1 and errno. */
static int memstream_read(FILE *f, char **ret_buf, size_t *ret_len)
{
	long n;
	char *buf;

	if (fflush(f) != 0 || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		return -1;
	buf = malloc((size_t)n + 1);
	if (buf == NULL)
		return -1;
	if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		errno = EIO;
		return -1;
	}
	buf[n] = '\0';
	*ret_buf = buf;
	*ret_len = (size_t)n;
	return 0;
}

int bgrun__win_fclose(FILE *f)
{
	struct memstream m = { NULL, NULL, NULL };
	int r = 0;

	(void)pthread_mutex_lock(&memstreams_lock);
	for (size_t i = 0; f != NULL &&
			   i < sizeof(memstreams) / sizeof(memstreams[0]); i++)
		if (memstreams[i].f == f) {
			m = memstreams[i];
			memstreams[i].f = NULL;
			break;
		}
	(void)pthread_mutex_unlock(&memstreams_lock);
	if (m.f != NULL)
		r = memstream_read(f, m.buf, m.len);
	if (fclose(f) != 0)
		r = -1;
	return r;
}

int bgrun__win_console_size(int fd, struct winsize *ret_ws)
{
	CONSOLE_SCREEN_BUFFER_INFO info;
	HANDLE h = (HANDLE)_get_osfhandle(fd);

	if (h == INVALID_HANDLE_VALUE || !GetConsoleScreenBufferInfo(h, &info)) {
		errno = ENOTTY;
		return -1;
	}
	*ret_ws = (struct winsize){
		.ws_row = (unsigned short)(info.srWindow.Bottom -
					   info.srWindow.Top + 1),
		.ws_col = (unsigned short)(info.srWindow.Right -
					   info.srWindow.Left + 1),
	};
	return 0;
}

const char *bgrun__win_sigabbrev_np(int sig)
{
	static const char *const names[] = {
		[1] = "HUP", [2] = "INT", [3] = "QUIT", [4] = "ILL",
		[5] = "TRAP", [6] = "ABRT", [7] = "BUS", [8] = "FPE",
		[9] = "KILL", [10] = "USR1", [11] = "SEGV", [12] = "USR2",
		[13] = "PIPE", [14] = "ALRM", [15] = "TERM", [16] = "STKFLT",
		[17] = "CHLD", [18] = "CONT", [19] = "STOP", [20] = "TSTP",
		[21] = "TTIN", [22] = "TTOU", [23] = "URG", [24] = "XCPU",
		[25] = "XFSZ", [26] = "VTALRM", [27] = "PROF", [28] = "WINCH",
		[29] = "IO", [30] = "PWR", [31] = "SYS",
	};

	if (sig <= 0 || (size_t)sig >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[sig];
}

/*
 * wchar_t is UTF-16 here, but the callers pass a whole code point. The
 * wide ranges are the main East Asian blocks (Unicode's EastAsianWidth
 * W and F), the zero-width ones the combining marks; enough to cut a
 * table to the terminal's width.
 */
int bgrun__win_wcwidth(wchar_t c)
{
	uint32_t cp = (uint32_t)c;

	if (cp == 0)
		return 0;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return -1;
	if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f))
		return 0;
	if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
	    (cp >= 0xffe0 && cp <= 0xffe6))
		return 2;
	return 1;
}
