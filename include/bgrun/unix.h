/* SPDX-License-Identifier: MIT */
/* bgrun/unix.h: the POSIX face of the platform types (included by bgrun/common.h). */

#ifndef BGRUN_UNIX_H
#define BGRUN_UNIX_H

#include <sys/types.h>

/* A process id: pid_t. */
typedef pid_t bgrun_pid_t;
/* An open file of the caller's: a file descriptor. */
typedef int bgrun_os_fd_t;
/* No descriptor. */
#define BGRUN_OS_FD_NONE (-1)

#endif /* BGRUN_UNIX_H */
