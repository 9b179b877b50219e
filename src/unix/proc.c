/* SPDX-License-Identifier: MIT */
/* proc.c: waiting for, reaping and signalling a launched child on POSIX (pidfd where there is one). */

#include "platform.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if HAVE_PIDFD_SEND_SIGNAL
#include <sys/pidfd.h>
#endif

static int64_t timeval_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

static void rusage_from(struct bgrun_rusage *out, const struct rusage *ru)
{
	out->user_cpu_ns = timeval_ns(&ru->ru_utime);
	out->sys_cpu_ns = timeval_ns(&ru->ru_stime);
	out->max_rss_kb = ru->ru_maxrss;
	out->minor_faults = ru->ru_minflt;
	out->major_faults = ru->ru_majflt;
	out->in_blocks = ru->ru_inblock;
	out->out_blocks = ru->ru_oublock;
	out->vol_ctxsw = ru->ru_nvcsw;
	out->invol_ctxsw = ru->ru_nivcsw;
}

int bgrun__platform_reap(struct bgrun__proc *proc, bool nohang,
			 struct bgrun_status *ret_status)
{
	struct bgrun_status st = { .pid = proc->pid };
	struct rusage ru;
	int wstatus;
	pid_t r;

	do
		r = wait4(proc->pid, &wstatus, nohang ? WNOHANG : 0, &ru);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	rusage_from(&st.rusage, &ru);
	st.end_realtime_ns = bgrun__now_ns(CLOCK_REALTIME);
	st.duration_ns = bgrun__now_ns(CLOCK_MONOTONIC) - proc->start_mono_ns;
	st.start_realtime_ns = proc->start_realtime_ns;
	if (WIFEXITED(wstatus)) {
		st.exited = true;
		st.exit_code = WEXITSTATUS(wstatus);
	} else if (WIFSIGNALED(wstatus)) {
		st.signaled = true;
		st.signal = WTERMSIG(wstatus);
		st.core_dumped = WCOREDUMP(wstatus);
	}
	*ret_status = st;
	return 1;
}

int bgrun__platform_wait_ready(const struct bgrun__proc *proc, int timeout_ms)
{
	int64_t deadline = bgrun__now_ns(CLOCK_MONOTONIC) +
			   (int64_t)timeout_ms * 1000000;

	for (;;) {
		int left = -1, r;

		if (timeout_ms >= 0) {
			int64_t ns = deadline - bgrun__now_ns(CLOCK_MONOTONIC);

			left = ns > 0 ? (int)((ns + 999999) / 1000000) : 0;
		}
		if (proc->os.pidfd >= 0) {
			struct pollfd p = { .fd = proc->os.pidfd, .events = POLLIN };

			r = poll(&p, 1, left);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			return r > 0 ? 1 : 0;
		} else {
			/* No pidfd: peek with WNOWAIT, leaving it reapable. */
			siginfo_t si = { 0 };
			struct timespec ts = { 0, 1000000 };

			r = waitid(P_PID, (id_t)proc->pid, &si,
				   WEXITED | WNOWAIT | (left < 0 ? 0 : WNOHANG));
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (si.si_pid != 0)
				return 1;
			if (left == 0)
				return 0;
			(void)nanosleep(&ts, NULL);
		}
	}
}

int bgrun__platform_kill(const struct bgrun__proc *proc, int sig)
{
#if HAVE_PIDFD_SEND_SIGNAL
	if (proc->os.pidfd >= 0)
		return pidfd_send_signal(proc->os.pidfd, sig, NULL, 0) < 0 ? -errno
									: 0;
#endif
	return kill(proc->pid, sig) < 0 ? -errno : 0;
}

void bgrun__platform_close(struct bgrun__proc *proc)
{
	if (proc->os.pidfd >= 0)
		(void)close(proc->os.pidfd);
	proc->os.pidfd = -1;
}
