/* SPDX-License-Identifier: MIT */
/* starter.h: what bgrun (launch.c) and bgrun-start (start.c) say to each other on descriptor 3; no dependency, as start.c builds against musl alone. */

#ifndef BGRUN_STARTER_H
#define BGRUN_STARTER_H

#include <signal.h>

/*
 * bgrun-start is started with no arguments and one end of a socket pair
 * as its descriptor 3; bgrun keeps the other end. Every rule (COMMAND's
 * final argv and environment, the program's path, its signal state and
 * session) is bgrun's, applied through libbgrun; bgrun-start only applies
 * the data it reads, so that it needs no library (it is a static musl
 * program) and holds no copy of the library's rules. The data never
 * travels on a command line: no argv limit beyond COMMAND's own.
 *
 * 1. bgrun writes the plan, then shuts its end down for writing; bgrun-start
 *    reads to the end before it does anything. The plan is a sequence of
 *    NUL-terminated strings:
 *
 *      STARTER_PLAN_MAGIC
 *      FLAGS          "-", or letters: STARTER_SETSID (COMMAND leads a
 *                     new session), STARTER_SETPGROUP (a new process
 *                     group); either way COMMAND's group is signalled;
 *                     STARTER_AWAIT_EXIT: bgrun exits once it has the
 *                     report, and the recorder is started once it has
 *                     exited (not once its end of the channel is
 *                     closed, which comes earlier, inside its exit)
 *      SIGMASK        the signals COMMAND starts with blocked, and
 *      SIGDEFAULT     the signals it starts with at SIG_DFL: decimal
 *                     numbers joined by ',' ("" for none), those the C
 *                     library reserves included (start.c: sigset_from)
 *      TIMEOUT_NS     SIGTERM after it (0: never), then SIGKILL
 *      KILL_AFTER_NS  later (0: never)
 *      OUTPUT_MAX     the cap on each kept output file, in bytes (0: none)
 *      N OUTPUT...    the kept output (bgrun made the files: output.c):
 *                     a count, then "FD:PATH" for each of bgrun-start's
 *                     descriptors 1 and 2 that is one (a merged stderr
 *                     is not listed: it is stdout's open file). bgrun-start
 *                     keeps a descriptor of each until the finish is
 *                     recorded (its close is the job's end for readers)
 *                     and keeps each within OUTPUT_MAX (start.c: cap)
 *      PATH           the program to execute (relative: to the working
 *                     directory, which bgrun-start starts in)
 *      N ARGV...      COMMAND's argv: a decimal count, then the strings
 *      N ENV...       COMMAND's whole environment, likewise
 *      N REC...       the recorder's argv, likewise; REC[0] is its path.
 *                     bgrun-start inserts --_child=PID:REALTIME_NS:
 *                     MONOTONIC_NS (or, when COMMAND could not be
 *                     executed, --_failed=ERRNO:STAGE:REALTIME_NS:
 *                     MONOTONIC_NS) after REC[0], and starts it with its
 *                     own environment, which is bgrun's, and one end of
 *                     a socket pair it made as its descriptor 3 (the
 *                     recorder's proof of where it comes from).
 *
 * The exit status of bgrun-start is COMMAND's (128+N for signal N), or
 * STARTER_EXIT_TIMEOUT when the timeout ended it, as timeout(1) says it
 * (but 137 when it took the SIGKILL that follows, as timeout(1) too).
 *
 * 2. bgrun-start answers with one line, STARTER_REPORT_OK " PID\n" or
 *    STARTER_REPORT_ERROR " ERRNO STAGE\n" (STAGE a value of enum
 *    bgrun_stage), and closes its end.
 *
 * 3. While COMMAND runs, `bgrun kill` (jobs.c) asks bgrun-start to signal
 *    it: STARTER_KILL_SIGNAL, queued (si_code SI_QUEUE) with the signal to
 *    send as its value; bgrun-start sends that to COMMAND's process group
 *    (to COMMAND alone with --wait), as it forwards SIGTERM. A real-time
 *    signal, blocked in bgrun-start from its start: queued, never lost,
 *    and no default action can take bgrun-start down. SIGRTMAX is the
 *    kernel's _NSIG - 1 in glibc and musl alike.
 */

/* The descriptor of the channel, in bgrun-start. */
#define STARTER_FD 3

#define STARTER_PLAN_MAGIC "bgrun-start plan 2"
#define STARTER_SETSID 's'
#define STARTER_SETPGROUP 'g'
#define STARTER_AWAIT_EXIT 'x'

#define STARTER_KILL_SIGNAL (SIGRTMAX - 1)

#define STARTER_REPORT_OK "ok"
#define STARTER_REPORT_ERROR "error"

#define STARTER_EXIT_TIMEOUT 124

/* A plan larger than this is refused by bgrun-start (a sanity bound). */
#define STARTER_PLAN_MAX (64u << 20)

#endif /* BGRUN_STARTER_H */
