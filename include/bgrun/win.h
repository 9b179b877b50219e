/* SPDX-License-Identifier: MIT */
/* bgrun/win.h: the Windows face of the platform types (included by bgrun/common.h). */

#ifndef BGRUN_WIN_H
#define BGRUN_WIN_H

#include <stdint.h>

/* A process id: a DWORD, as GetProcessId gives it (never 0 for a process). */
typedef int64_t bgrun_pid_t;
/* An open file of the caller's: a HANDLE (void *), not a C runtime descriptor. */
typedef void *bgrun_os_fd_t;
/* No handle (INVALID_HANDLE_VALUE). */
#define BGRUN_OS_FD_NONE ((void *)(intptr_t)-1)

#endif /* BGRUN_WIN_H */
