/* SPDX-License-Identifier: MIT */
/* spawn-latency.c (Windows): the launch latency of the mechanisms Windows has: bgrun_spawn on/off, CreateProcessW, cmd /c start /b, uv_spawn. */

/*
 * spawn-latency [--runs N] [--quick]
 *
 * Each mechanism launches this program with --child (it exits at once),
 * N times (default 200; --quick: 20), after 3 unmeasured runs; the timed
 * part is what the caller waits for before it may go on:
 *   bgrun_spawn on   bgrun_spawn with ensurestart (CreateProcessW done)
 *   bgrun_spawn off  bgrun_spawn without (the launch queued)
 *   CreateProcessW   a bare CreateProcessW, DETACHED_PROCESS, nothing
 *                    inherited: the floor
 *   cmd /c start /b  CreateProcessW of cmd.exe running `start /b CHILD`,
 *                    until cmd.exe has exited (the child then started)
 *   uv_spawn         libuv's uv_spawn, UV_PROCESS_DETACHED
 * Then, untimed, the child is waited for, so that runs never pile up.
 * Prints p50 and p90 in ms and each p50 against CreateProcessW's. Under
 * wine the figures are wine's emulation, not Windows' (README).
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "bgrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

enum mech { M_BGRUN_ON, M_BGRUN_OFF, M_CREATEPROCESS, M_CMD_START, M_UV, M_N };

static const char *const names[M_N] = {
	"bgrun_spawn on", "bgrun_spawn off", "CreateProcessW",
	"cmd /c start /b", "uv_spawn",
};

static char self[MAX_PATH * 3];
static WCHAR self_w[MAX_PATH];
static LARGE_INTEGER freq;

static double now_ms(void)
{
	LARGE_INTEGER c;

	QueryPerformanceCounter(&c);
	return (double)c.QuadPart * 1000.0 / (double)freq.QuadPart;
}

static void die(const char *what, long err)
{
	fprintf(stderr, "spawn-latency: %s: %ld\n", what, err);
	exit(1);
}

static void wait_handle(HANDLE h)
{
	WaitForSingleObject(h, INFINITE);
	CloseHandle(h);
}

static void uv_exited(uv_process_t *p, int64_t status, int sig)
{
	(void)status;
	(void)sig;
	uv_close((uv_handle_t *)p, NULL);
}

static double run_once(enum mech m)
{
	const char *argv[] = { self, "--child", NULL };
	double t0, t1;

	switch (m) {
	case M_BGRUN_ON:
	case M_BGRUN_OFF: {
		struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
		struct bgrun_child *c;
		struct bgrun_status st;
		int r;

		o.argv = argv;
		o.ensurestart = m == M_BGRUN_ON;
		t0 = now_ms();
		r = bgrun_spawn(&o, &c);
		t1 = now_ms();
		if (r < 0)
			die("bgrun_spawn", r);
		if (bgrun_child_started(c, NULL) < 0 ||
		    bgrun_child_wait(c, -1, &st) < 0)
			die("bgrun child", 0);
		bgrun_child_free(c);
		return t1 - t0;
	}
	case M_CREATEPROCESS:
	case M_CMD_START: {
		STARTUPINFOW si = { .cb = sizeof(si) };
		PROCESS_INFORMATION pi;
		WCHAR cmd[MAX_PATH * 2 + 64], sys[MAX_PATH], app[MAX_PATH + 16];

		if (m == M_CREATEPROCESS) {
			_snwprintf(cmd, sizeof(cmd) / sizeof(cmd[0]),
				   L"\"%ls\" --child", self_w);
			wcscpy(app, self_w);
		} else {
			GetSystemDirectoryW(sys, MAX_PATH);
			_snwprintf(app, sizeof(app) / sizeof(app[0]),
				   L"%ls\\cmd.exe", sys);
			_snwprintf(cmd, sizeof(cmd) / sizeof(cmd[0]),
				   L"cmd.exe /d /c start \"\" /b \"%ls\" --child",
				   self_w);
		}
		t0 = now_ms();
		if (!CreateProcessW(app, cmd, NULL, NULL, FALSE,
				    DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP,
				    NULL, NULL, &si, &pi))
			die("CreateProcessW", (long)GetLastError());
		CloseHandle(pi.hThread);
		if (m == M_CMD_START)
			WaitForSingleObject(pi.hProcess, INFINITE);
		t1 = now_ms();
		wait_handle(pi.hProcess);
		return t1 - t0;
	}
	case M_UV: {
		uv_loop_t loop;
		uv_process_t proc;
		uv_process_options_t o = { 0 };
		int r;

		uv_loop_init(&loop);
		o.file = self;
		o.args = (char **)argv;
		o.exit_cb = uv_exited;
		o.flags = UV_PROCESS_DETACHED | UV_PROCESS_WINDOWS_HIDE;
		t0 = now_ms();
		r = uv_spawn(&loop, &proc, &o);
		t1 = now_ms();
		if (r < 0)
			die("uv_spawn", r);
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		return t1 - t0;
	}
	default:
		return 0;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *s, int n, double q)
{
	int i = (int)(q * (n - 1) + 0.5);

	return s[i];
}

int main(int argc, char **argv)
{
	double p50[M_N], p90[M_N], *s;
	const char *wine = NULL;
	int runs = 200;

	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			runs = 20;
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: spawn-latency [--runs N] [--quick]\n");
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;
	QueryPerformanceFrequency(&freq);
	GetModuleFileNameW(NULL, self_w, MAX_PATH);
	WideCharToMultiByte(CP_UTF8, 0, self_w, -1, self, sizeof(self), NULL, NULL);
	{
		FARPROC f = GetProcAddress(GetModuleHandleW(L"ntdll.dll"),
					   "wine_get_version");
		const char *(*get)(void);

		if (f != NULL) {
			memcpy(&get, &f, sizeof(get));
			wine = get();
		}
	}
	s = malloc((size_t)runs * sizeof(*s));
	for (int m = 0; m < M_N; m++) {
		for (int i = 0; i < 3; i++)
			(void)run_once((enum mech)m);
		for (int i = 0; i < runs; i++)
			s[i] = run_once((enum mech)m);
		qsort(s, (size_t)runs, sizeof(*s), cmp);
		p50[m] = pct(s, runs, 0.5);
		p90[m] = pct(s, runs, 0.9);
	}
	printf("spawn-latency (Windows%s%s%s), %d runs each, ms\n",
	       wine ? ", under wine " : "", wine ? wine : "",
	       wine ? ": an emulation, not Windows' figures" : "", runs);
	printf("%-18s %9s %9s %12s\n", "mechanism", "p50", "p90",
	       "p50/CreateP");
	for (int m = 0; m < M_N; m++)
		printf("%-18s %9.3f %9.3f %12.2f\n", names[m], p50[m], p90[m],
		       p50[m] / p50[M_CREATEPROCESS]);
	free(s);
	return 0;
}
