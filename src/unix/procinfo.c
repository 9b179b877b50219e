/* SPDX-License-Identifier: MIT */
/* procinfo.c: what the platform tells about this machine and its processes: host, uid, boot id, a process's start time, random bytes (POSIX; /proc on Linux). */

#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/*
 * Facts about this process's machine, learned once. They never change
 * while the process lives (a new boot is a new process), so pointers to
 * them can be handed out for good.
 */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;
static char fact_host[sizeof(((struct utsname *)0)->nodename)];
static char fact_boot_id[64];
static bool fact_proc_ok; /* /proc can tell whether a process exists */

static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;
	int fd;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	while (used + 1 < size) {
		n = read(fd, buf + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			(void)close(fd);
			return n;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	(void)close(fd);
	buf[used] = '\0';
	return (ssize_t)used;
}

static void learn_host(void)
{
	struct utsname u;

	if (uname(&u) == 0)
		(void)snprintf(fact_host, sizeof(fact_host), "%s", u.nodename);
}

static void learn_boot_id(void)
{
	ssize_t n;

	n = read_small_file("/proc/sys/kernel/random/boot_id", fact_boot_id,
			    sizeof(fact_boot_id));
	if (n < 0)
		fact_boot_id[0] = '\0';
	fact_boot_id[strcspn(fact_boot_id, "\n")] = '\0';
}

/*
 * Whether /proc tells of processes. Each fact is learnt on its own, when
 * first asked for: a read of a /proc file costs 10 to 30 µs here, and an
 * event handed to the daemon needs only the host (bgrun_event_init_lean).
 */
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void learn_proc(void)
{
	char stat[64];

	fact_proc_ok = read_small_file("/proc/self/stat", stat,
				       sizeof(stat)) > 0;
}

static bool proc_ok(void)
{
	(void)pthread_once(&proc_once, learn_proc);
	return fact_proc_ok;
}

const char *bgrun__boot_id(void)
{
	(void)pthread_once(&boot_id_once, learn_boot_id);
	return fact_boot_id[0] != '\0' ? fact_boot_id : NULL;
}

const char *bgrun__host_name(void)
{
	(void)pthread_once(&host_once, learn_host);
	return fact_host[0] != '\0' ? fact_host : NULL;
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* 16 random bytes: getrandom, else /dev/urandom, else a clock-based mix. */
void bgrun__random_bytes(unsigned char *buf, size_t len)
{
	static _Atomic uint64_t counter;
	uint64_t state, word;
	size_t used = 0;
	ssize_t n;
	int fd;

	while (used < len) {
		n = getrandom(buf + used, len - used, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	if (used == len)
		return;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (used < len) {
			n = read(fd, buf + used, len - used);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			used += (size_t)n;
		}
		(void)close(fd);
	}
	if (used == len)
		return;
	/* Unique per process and call, if not unpredictable. */
	state = (uint64_t)bgrun__now_ns(CLOCK_REALTIME) ^
		((uint64_t)getpid() << 32) ^ (counter++ << 48) ^
		(uint64_t)bgrun__now_ns(CLOCK_MONOTONIC);
	word = splitmix64(&state);
	for (; used < len; used++) {
		if (used % 8 == 0)
			word = splitmix64(&state);
		buf[used] = (unsigned char)(word >> (8 * (used % 8)));
	}
}

/*
 * Fields 3 (state) and 22 (starttime) of /proc/PID/stat. The command name
 * (field 2) may hold spaces and parentheses, so fields are counted from
 * its last ')'. -ESRCH if there is no such process.
 */
static int read_proc_stat(pid_t pid, char *ret_state, int64_t *ret_start)
{
	char path[64], buf[1024], *p, *end;
	long long start;
	char state;
	ssize_t n;

	if (pid <= 0)
		return -ESRCH;
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_small_file(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return -ESRCH;
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -EIO;
	p += 2; /* now at field 3 */
	state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -EIO;
		p++;
	}
	errno = 0;
	start = strtoll(p, &end, 10);
	if (errno != 0 || end == p)
		return -EIO;
	*ret_state = state;
	*ret_start = start;
	return 0;
}

int64_t bgrun__proc_starttime(int64_t pid)
{
	int64_t start;
	char state;

	if (read_proc_stat(pid, &state, &start) < 0)
		return BGRUN_NULL;
	return start;
}

int64_t bgrun__proc_start_realtime(int64_t pid)
{
	static long hz;
	int64_t start, boot;
	char state;

	if (pid <= 0 || pid > INT_MAX || bgrun__boot_id() == NULL ||
	    !proc_ok() || read_proc_stat((pid_t)pid, &state, &start) < 0 ||
	    state == 'Z' || state == 'X' || state == 'x')
		return BGRUN_NULL;
	if (hz <= 0)
		hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		return BGRUN_NULL;
	/*
	 * starttime counts clock ticks since the boot on CLOCK_BOOTTIME; the
	 * boot's moment on CLOCK_REALTIME is the two clocks' difference now.
	 */
	boot = bgrun__now_ns(CLOCK_REALTIME) - bgrun__now_ns(CLOCK_BOOTTIME);
	return boot + start * (1000000000 / hz);
}

bool bgrun__supervisor_gone(const char *boot_id, int64_t supervisor_pid,
			    int64_t supervisor_start)
{
	const char *current = bgrun__boot_id();
	int64_t start;
	char state;
	int r;

	if (boot_id != NULL && current != NULL && strcmp(boot_id, current) != 0)
		return true;
	if (supervisor_pid == BGRUN_NULL || supervisor_pid <= 0 ||
	    supervisor_pid > INT_MAX || !proc_ok())
		return false;
	r = read_proc_stat((pid_t)supervisor_pid, &state, &start);
	if (r == -ESRCH)
		return true;
	if (r < 0)
		return false; /* cannot tell */
	if (state == 'Z' || state == 'X' || state == 'x')
		return true;
	return supervisor_start != BGRUN_NULL && start != supervisor_start;
}

int64_t bgrun__user_id(void)
{
	return (int64_t)getuid();
}

ssize_t bgrun__self_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	return n < 0 ? -errno : n;
}

time_t bgrun__timegm(struct tm *tm)
{
	return timegm(tm);
}

struct tm *bgrun__localtime(const time_t *t, struct tm *ret_tm)
{
	return localtime_r(t, ret_tm);
}
