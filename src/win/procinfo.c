/* SPDX-License-Identifier: MIT */
/* procinfo.c: what Windows tells about this machine and its processes: host, random bytes, a process's creation time. */

#include "win.h"

#include <bcrypt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Windows has no boot id: unknown (NULL), as the events allow. */
const char *bgrun__boot_id(void)
{
	return NULL;
}

static char host[256 * 3];

static BOOL CALLBACK learn_host(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
	WCHAR w[256];
	DWORD n = sizeof(w) / sizeof(w[0]);

	(void)once;
	(void)param;
	(void)ctx;
	if (GetComputerNameExW(ComputerNameDnsHostname, w, &n) && n > 0)
		(void)WideCharToMultiByte(CP_UTF8, 0, w, (int)n + 1, host,
					  sizeof(host), NULL, NULL);
	return TRUE;
}

const char *bgrun__host_name(void)
{
	static INIT_ONCE once = INIT_ONCE_STATIC_INIT;

	(void)InitOnceExecuteOnce(&once, learn_host, NULL, NULL);
	return host[0] != '\0' ? host : NULL;
}

/* A user is a SID on Windows, not a number: unknown. */
int64_t bgrun__user_id(void)
{
	return BGRUN_NULL;
}

void bgrun__random_bytes(unsigned char *buf, size_t len)
{
	if (BCryptGenRandom(NULL, buf, (ULONG)len,
			    BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0)
		return;
	/* A unique mix rather than nothing: time, counter, pid, address. */
	for (size_t i = 0; i < len; i++) {
		static volatile LONG n;
		uint64_t x = (uint64_t)bgrun__now_ns(CLOCK_MONOTONIC) ^
			     ((uint64_t)GetCurrentProcessId() << 32) ^
			     (uint64_t)InterlockedIncrement(&n) * 0x9e3779b97f4a7c15u;

		buf[i] = (unsigned char)(x >> ((i % 8) * 8));
	}
}

/* The process's creation time, in 100 ns units since 1601. */
int64_t bgrun__proc_starttime(int64_t pid)
{
	FILETIME created, exited, kernel, user;
	HANDLE h;
	int64_t t = BGRUN_NULL;
	DWORD code;

	h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
	if (h == NULL)
		return BGRUN_NULL;
	/* An ended process whose handle someone keeps is no process. */
	if (GetExitCodeProcess(h, &code) && code == STILL_ACTIVE &&
	    GetProcessTimes(h, &created, &exited, &kernel, &user))
		t = (int64_t)(((uint64_t)created.dwHighDateTime << 32) |
			      created.dwLowDateTime);
	(void)CloseHandle(h);
	return t;
}

int64_t bgrun__proc_start_realtime(int64_t pid)
{
	/* A FILETIME: 100 ns units since 1601, 11644473600 s before 1970. */
	int64_t created = bgrun__proc_starttime(pid);

	if (created == BGRUN_NULL)
		return BGRUN_NULL;
	return (created - INT64_C(116444736000000000)) * 100;
}

bool bgrun__supervisor_gone(const char *boot_id, int64_t supervisor_pid,
			    int64_t supervisor_start)
{
	int64_t now;

	(void)boot_id;
	if (supervisor_pid <= 0 || supervisor_start == BGRUN_NULL)
		return false;
	now = bgrun__proc_starttime(supervisor_pid);
	return now == BGRUN_NULL || now != supervisor_start;
}

/* A user's name needs a SID (bgrun__user_id): unknown. */
const char *bgrun__user_name(int64_t uid)
{
	(void)uid;
	return NULL;
}

time_t bgrun__timegm(struct tm *tm)
{
	return _mkgmtime(tm);
}

struct tm *bgrun__localtime(const time_t *t, struct tm *ret_tm)
{
	return localtime_s(ret_tm, t) == 0 ? ret_tm : NULL;
}
