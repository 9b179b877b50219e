/* SPDX-License-Identifier: MIT */
/* bgrun/win.h: the Windows face of the platform types (included by bgrun/common.h), and what the interface means on Windows. */

#ifndef BGRUN_WIN_H
#define BGRUN_WIN_H

#include <stdint.h>

/*
 * What the Windows platform (src/win/, CreateProcessW) means where the
 * other headers speak of the platform's, or of POSIX:
 * - strings: UTF-8 everywhere in the interface (argv, env, paths),
 *   UTF-16 to Windows; a string that is not UTF-8 is EINVAL;
 * - argv (bgrun_spawn_opts.argv): joined into one command line that the
 *   C runtime and CommandLineToArgvW split back into exactly these
 *   strings (quotes, backslashes, tabs, newlines and empty strings
 *   included); argv[0], parsed by other rules, cannot hold a quote
 *   (EINVAL); the line is at most 32766 UTF-16 units (else E2BIG);
 * - program search: a name with a '\' or '/' or a drive is a path
 *   (relative to .cwd when set); any other name is searched in the
 *   child's PATH only (';'-separated, quotes around an entry dropped;
 *   the system and Windows directories when there is no PATH), never
 *   implicitly in the working directory; in each place the name as it is
 *   when it has an extension, then with each extension of PATHEXT
 *   (".COM;.EXE;.BAT;.CMD" when unset); a directory there is EACCES, a
 *   file that is no program ENOEXEC. A .bat or .cmd file runs through
 *   cmd.exe as for .shell below, its arguments escaped for cmd.exe's
 *   command line (what the batch file then does with %* or %1 is
 *   cmd.exe's parsing again, which no quoting by the caller controls);
 * - shell (bgrun_spawn_opts.shell): the system directory's cmd.exe, as
 *   `cmd.exe /d /s /c "SHELL ARGS"`: SHELL is passed to cmd.exe as it is;
 *   argv[1...], if given, follow it, each quoted for a program's C
 *   runtime and every character cmd.exe treats specially escaped with a
 *   caret (argv[0] is not passed); cmd.exe cannot be given a line
 *   break (EINVAL);
 * - caller's environment (bgrun_spawn_opts.env): the process's
 *   environment block (GetEnvironmentStringsW), as it is at the call;
 *   variable names compare without case (PATH and Path are one
 *   variable: env_set "Path=..." replaces PATH);
 * - stdio: BGRUN_STDIO_NULL is NUL; BGRUN_STDIO_FD is a HANDLE
 *   (bgrun_os_fd_t), duplicated for the child; BGRUN_STDIO_FILE opens
 *   with every sharing mode, appending with FILE_APPEND_DATA only (each
 *   write at the end); BGRUN_STDIO_BYTES is a temporary file opened with
 *   FILE_FLAG_DELETE_ON_CLOSE, written whole before the launch (gone
 *   with the child's last handle); BGRUN_STDIO_INHERIT is the caller's
 *   GetStdHandle (NUL when it has none);
 * - handles: the child inherits its three standard handles and
 *   pass_fds, nothing else (PROC_THREAD_ATTRIBUTE_HANDLE_LIST), whatever
 *   else of the caller is inheritable; pass_fds (at most 64) become C
 *   runtime descriptors 3, 4, ... of the child (msvcrt's and the UCRT's
 *   STARTUPINFO.lpReserved2 block); a program that does not use the C
 *   runtime finds them as handles only;
 * - detach (default true): DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP,
 *   no console, and CREATE_BREAKAWAY_FROM_JOB when the caller runs in a
 *   job that allows it (so that a job ending the caller's processes
 *   with it does not end the child); new_pgroup:
 *   CREATE_NEW_PROCESS_GROUP (its only Windows use: console Ctrl-Break
 *   events);
 * - ensurestart on: "the program has been executed" means that
 *   CreateProcessW succeeded: the program file was found, opened and
 *   mapped as an executable image (so ENOENT, EACCES and ENOEXEC come
 *   back synchronously), the process object and its first thread exist,
 *   the process is in its job, and that thread has been resumed: it is
 *   runnable. It does not mean that the loader has run: a missing DLL
 *   is the child's exit status (0xC0000135), as it would be on Windows
 *   for any launcher. ensurestart off: the same, done by the library's
 *   spawner thread;
 * - status (bgrun_status): exited with exit_code the whole 32-bit exit
 *   code (GetExitCodeProcess, as an int: 0xC0000005 is negative), not
 *   only 0..255; signaled only when bgrun_child_kill ended it, with the
 *   signal it was given; core_dumped never;
 * - rusage: user_cpu_ns and sys_cpu_ns from GetProcessTimes, max_rss_kb
 *   the peak working set and major_faults the page faults (all of them)
 *   from GetProcessMemoryInfo, in_blocks and out_blocks the read and
 *   write operations from GetProcessIoCounters; minor_faults, vol_ctxsw
 *   and invol_ctxsw are BGRUN_NULL (Windows has no such figures);
 * - process descriptor (bgrun_child_kill): the process handle, never a
 *   pid, and the child's own job object: any signal but 0 ends the
 *   child's whole tree at once (TerminateJobObject; TerminateProcess
 *   alone when no job could be made); 0 checks the child is there;
 * - reaping: a thread-pool wait on each child's process handle
 *   (RegisterWaitForSingleObject), no thread of the library's own and
 *   no polling; there are no zombies, only handles, which it closes;
 * - boot id: none (NULL); user id: none (BGRUN_NULL: a user is a SID);
 *   process start time: its creation time in 100 ns units since 1601.
 */

/* A process id: a DWORD, as GetProcessId gives it (never 0 for a process). */
typedef int64_t bgrun_pid_t;
/* An open file of the caller's: a HANDLE (void *), not a C runtime descriptor. */
typedef void *bgrun_os_fd_t;
/* No handle (INVALID_HANDLE_VALUE). */
#define BGRUN_OS_FD_NONE ((void *)(intptr_t)-1)

#endif /* BGRUN_WIN_H */
