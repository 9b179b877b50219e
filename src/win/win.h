/* SPDX-License-Identifier: MIT */
/* win.h: what the Windows platform's files share (src/win/ only): conversions, error mapping, the process record. */

#ifndef BGRUN_WIN_INTERNAL_H
#define BGRUN_WIN_INTERNAL_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "platform.h"

#include <stdint.h>

/*
 * A launched child: shared by every copy of its struct bgrun__proc (the
 * copies move ownership, never share it: one owner closes it).
 */
struct bgrun__win_proc {
	HANDLE process;
	HANDLE job;          /* the child's own job (its tree), or NULL */
	volatile LONG killed; /* the signal bgrun_child_kill terminated it with */
};

/* The exit code the library terminates a killed tree with. */
#define BGRUN__WIN_KILL_CODE 0x4b494c4cu /* "KILL" */

/* UTF-8 -> UTF-16, malloc'd and NUL-terminated: 0 or -errno (-EILSEQ). */
int bgrun__win_utf16(const char *s, WCHAR **ret);
/* UTF-16 (n units, or -1: NUL-terminated) -> malloc'd UTF-8: 0 or -errno. */
int bgrun__win_utf8(const WCHAR *s, int n, char **ret);
/* A Windows error code as -errno. */
int bgrun__win_errno(DWORD error);
/* The last error bgrun__win_errno had no errno for (tests read it). */
extern volatile LONG bgrun__win_last_unmapped;
/* 100 ns FILETIME units since 1601 -> ns since 1970. */
int64_t bgrun__win_filetime_unix_ns(const FILETIME *ft);

#endif /* BGRUN_WIN_INTERNAL_H */
