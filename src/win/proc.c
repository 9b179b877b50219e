/* SPDX-License-Identifier: MIT */
/* proc.c: waiting for, reaping and ending a launched child on Windows (its process handle and its job). */

#include "win.h"

#include <errno.h>
#include <psapi.h>
#include <stdlib.h>
#include <time.h>

static int64_t filetime_ns(const FILETIME *ft)
{
	return (int64_t)((((uint64_t)ft->dwHighDateTime << 32) |
			  ft->dwLowDateTime) * 100);
}

/* What Windows keeps of an ended process; BGRUN_NULL where it has nothing. */
static void rusage_from(struct bgrun_rusage *out, HANDLE h)
{
	FILETIME created, exited, kernel, user;
	PROCESS_MEMORY_COUNTERS mem;
	IO_COUNTERS io;

	out->user_cpu_ns = out->sys_cpu_ns = BGRUN_NULL;
	out->max_rss_kb = out->minor_faults = out->major_faults = BGRUN_NULL;
	out->in_blocks = out->out_blocks = BGRUN_NULL;
	out->vol_ctxsw = out->invol_ctxsw = BGRUN_NULL;
	if (GetProcessTimes(h, &created, &exited, &kernel, &user)) {
		out->user_cpu_ns = filetime_ns(&user);
		out->sys_cpu_ns = filetime_ns(&kernel);
	}
	if (GetProcessMemoryInfo(h, &mem, sizeof(mem))) {
		out->max_rss_kb = (int64_t)(mem.PeakWorkingSetSize / 1024);
		out->major_faults = mem.PageFaultCount;
	}
	if (GetProcessIoCounters(h, &io)) {
		out->in_blocks = (int64_t)io.ReadOperationCount;
		out->out_blocks = (int64_t)io.WriteOperationCount;
	}
}

int bgrun__platform_reap(struct bgrun__proc *proc, bool nohang,
			 struct bgrun_status *ret_status)
{
	struct bgrun_status st = { .pid = proc->pid };
	struct bgrun__win_proc *p = proc->os.p;
	DWORD w, code;
	LONG killed;

	if (p == NULL)
		return -ECHILD;
	w = WaitForSingleObject(p->process, nohang ? 0 : INFINITE);
	if (w == WAIT_TIMEOUT)
		return 0;
	if (w != WAIT_OBJECT_0 || !GetExitCodeProcess(p->process, &code))
		return bgrun__win_errno(GetLastError());
	rusage_from(&st.rusage, p->process);
	st.end_realtime_ns = bgrun__now_ns(CLOCK_REALTIME);
	st.duration_ns = bgrun__now_ns(CLOCK_MONOTONIC) - proc->start_mono_ns;
	st.start_realtime_ns = proc->start_realtime_ns;
	killed = p->killed;
	if (killed != 0 && code == BGRUN__WIN_KILL_CODE) {
		st.signaled = true;
		st.signal = (int)killed;
	} else {
		st.exited = true;
		st.exit_code = (int)code;
	}
	*ret_status = st;
	return 1;
}

int bgrun__platform_wait_ready(const struct bgrun__proc *proc, int timeout_ms)
{
	DWORD w;

	if (proc->os.p == NULL)
		return -ECHILD;
	w = WaitForSingleObject(proc->os.p->process,
				timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
	if (w == WAIT_OBJECT_0)
		return 1;
	if (w == WAIT_TIMEOUT)
		return 0;
	return bgrun__win_errno(GetLastError());
}

/*
 * Any signal but 0 ends the child's whole tree at once (its job, else
 * the process alone): Windows has no signals to deliver. The status then
 * says signaled, with sig. An ended child that is not reaped yet is
 * still there to kill, as a zombie is on POSIX: 0, and its status stays
 * its own exit.
 */
int bgrun__platform_kill(const struct bgrun__proc *proc, int sig)
{
	struct bgrun__win_proc *p = proc->os.p;

	if (p == NULL)
		return -ESRCH;
	if (sig < 0)
		return -EINVAL;
	if (WaitForSingleObject(p->process, 0) == WAIT_OBJECT_0 || sig == 0)
		return 0;
	(void)InterlockedCompareExchange(&p->killed, sig, 0);
	if (p->job != NULL && TerminateJobObject(p->job, BGRUN__WIN_KILL_CODE))
		return 0;
	if (TerminateProcess(p->process, BGRUN__WIN_KILL_CODE))
		return 0;
	/* It ended meanwhile: TerminateProcess refuses an ended process. */
	if (WaitForSingleObject(p->process, 0) == WAIT_OBJECT_0)
		return 0;
	return bgrun__win_errno(GetLastError());
}

void bgrun__platform_close(struct bgrun__proc *proc)
{
	struct bgrun__win_proc *p = proc->os.p;

	if (p == NULL)
		return;
	(void)CloseHandle(p->process);
	if (p->job != NULL)
		(void)CloseHandle(p->job);
	free(p);
	proc->os.p = NULL;
}
