/* SPDX-License-Identifier: MIT */
/* bgrun/unix.h: the POSIX face of the platform types (included by bgrun/common.h). */

#ifndef BGRUN_UNIX_H
#define BGRUN_UNIX_H

#include <sys/types.h>

/*
 * What the POSIX platform means where the other headers speak of the
 * platform's:
 * - shell (bgrun_spawn_opts.shell): `/bin/sh -c SHELL`;
 * - caller's environment (bgrun_spawn_opts.env): environ, as it is at
 *   the call; variable names are bytes (PATH and Path are two names);
 * - process descriptor (bgrun_child_kill): a pidfd (pidfd_open, Linux
 *   5.3), else the pid;
 * - boot id (bgrun_event.boot_id): /proc/sys/kernel/random/boot_id;
 * - process start time (bgrun_proc_starttime): field 22 of
 *   /proc/PID/stat, in clock ticks since boot.
 */

/* A process id: pid_t. */
typedef pid_t bgrun_pid_t;
/* An open file of the caller's: a file descriptor. */
typedef int bgrun_os_fd_t;
/* No descriptor. */
#define BGRUN_OS_FD_NONE (-1)

#endif /* BGRUN_UNIX_H */
