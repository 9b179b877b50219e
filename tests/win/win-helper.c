/* SPDX-License-Identifier: MIT */
/* win-helper.c: the program the Windows tests launch: it reports what it received (argv, environment, cwd, handles) and does small jobs. */

/*
 * win-helper MODE [ARGS...]
 *   args OUT        writes its argv (from wmain, UTF-8, each ended by a
 *                   NUL) to OUT; exits 3 if CommandLineToArgvW reads the
 *                   command line differently from the C runtime
 *   env OUT         writes its environment block (UTF-8, NUL-ended) to OUT
 *   cwd OUT         writes its working directory to OUT
 *   exit CODE       exits with CODE (decimal, any 32-bit value)
 *   cat             copies stdin to stdout
 *   echo TEXT       writes TEXT to stdout and "err:TEXT" to stderr
 *   sleep           waits until killed
 *   tree OUT        starts a `sleep` grandchild, writes its pid to OUT,
 *                   then sleeps
 *   handle VALUE PATH  exits 1 if handle VALUE (hex) is open here on the
 *                   file PATH (inherited), 0 if not
 *   fd3 TEXT        writes TEXT to C runtime descriptor 3
 *   spin MS         uses MS milliseconds of CPU, then exits 0
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <shellapi.h>

#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static char *utf8(const wchar_t *w)
{
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
	char *s = malloc((size_t)n);

	(void)WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
	return s;
}

static HANDLE create_out(const wchar_t *path)
{
	HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
			       FILE_ATTRIBUTE_NORMAL, NULL);

	if (h == INVALID_HANDLE_VALUE)
		exit(4);
	return h;
}

static void put(HANDLE h, const void *p, size_t n)
{
	DWORD done;

	while (n > 0) {
		if (!WriteFile(h, p, (DWORD)n, &done, NULL))
			exit(5);
		p = (const char *)p + done;
		n -= done;
	}
}

static void put_str0(HANDLE h, const wchar_t *w)
{
	char *s = utf8(w);

	put(h, s, strlen(s) + 1);
	free(s);
}

int wmain(int argc, wchar_t **argv);
int wmain(int argc, wchar_t **argv)
{
	const wchar_t *mode = argc > 1 ? argv[1] : L"";

	if (wcscmp(mode, L"args") == 0 && argc > 2) {
		int n;
		wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
		HANDLE h = create_out(argv[2]);

		for (int i = 0; i < argc; i++)
			put_str0(h, argv[i]);
		CloseHandle(h);
		if (w == NULL || n != argc)
			return 3;
		/* argv[0] is parsed by other rules by each: compared from 1. */
		for (int i = 1; i < argc; i++)
			if (wcscmp(w[i], argv[i]) != 0)
				return 3;
		return 0;
	}
	if (wcscmp(mode, L"env") == 0 && argc > 2) {
		wchar_t *block = GetEnvironmentStringsW();
		HANDLE h = create_out(argv[2]);

		for (wchar_t *p = block; *p != L'\0'; p += wcslen(p) + 1)
			put_str0(h, p);
		CloseHandle(h);
		return 0;
	}
	if (wcscmp(mode, L"cwd") == 0 && argc > 2) {
		wchar_t dir[32768];
		HANDLE h = create_out(argv[2]);

		GetCurrentDirectoryW(32768, dir);
		put_str0(h, dir);
		CloseHandle(h);
		return 0;
	}
	if (wcscmp(mode, L"exit") == 0 && argc > 2)
		ExitProcess((UINT)wcstoul(argv[2], NULL, 10));
	if (wcscmp(mode, L"cat") == 0) {
		HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
		HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
		char buf[65536];
		DWORD n;

		while (ReadFile(in, buf, sizeof(buf), &n, NULL) && n > 0)
			put(out, buf, n);
		return 0;
	}
	if (wcscmp(mode, L"echo") == 0 && argc > 2) {
		char *s = utf8(argv[2]);

		put(GetStdHandle(STD_OUTPUT_HANDLE), s, strlen(s));
		put(GetStdHandle(STD_ERROR_HANDLE), "err:", 4);
		put(GetStdHandle(STD_ERROR_HANDLE), s, strlen(s));
		return 0;
	}
	if (wcscmp(mode, L"sleep") == 0) {
		Sleep(INFINITE);
		return 0;
	}
	if (wcscmp(mode, L"tree") == 0 && argc > 2) {
		wchar_t self[MAX_PATH], cmd[MAX_PATH + 16];
		STARTUPINFOW si = { .cb = sizeof(si) };
		PROCESS_INFORMATION pi;
		char pid[32];
		HANDLE h;

		GetModuleFileNameW(NULL, self, MAX_PATH);
		_snwprintf(cmd, MAX_PATH + 16, L"\"%ls\" sleep", self);
		if (!CreateProcessW(self, cmd, NULL, NULL, FALSE, 0, NULL, NULL,
				    &si, &pi))
			return 6;
		snprintf(pid, sizeof(pid), "%lu", (unsigned long)pi.dwProcessId);
		h = create_out(argv[2]);
		put(h, pid, strlen(pid));
		CloseHandle(h);
		Sleep(INFINITE);
		return 0;
	}
	if (wcscmp(mode, L"handle") == 0 && argc > 3) {
		HANDLE h = (HANDLE)(uintptr_t)wcstoull(argv[2], NULL, 16), f;
		BY_HANDLE_FILE_INFORMATION a, b;

		if (!GetFileInformationByHandle(h, &a))
			return 0;
		f = CreateFileW(argv[3], 0,
				FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
				NULL, OPEN_EXISTING, 0, NULL);
		if (f == INVALID_HANDLE_VALUE || !GetFileInformationByHandle(f, &b))
			return 7;
		return a.dwVolumeSerialNumber == b.dwVolumeSerialNumber &&
		       a.nFileIndexHigh == b.nFileIndexHigh &&
		       a.nFileIndexLow == b.nFileIndexLow;
	}
	if (wcscmp(mode, L"fd3") == 0 && argc > 2) {
		char *s = utf8(argv[2]);

		if (_get_osfhandle(3) == -1)
			return 8;
		return _write(3, s, (unsigned)strlen(s)) == (int)strlen(s) ? 0 : 9;
	}
	if (wcscmp(mode, L"spin") == 0 && argc > 2) {
		ULONGLONG want = wcstoull(argv[2], NULL, 10) * 10000;
		volatile unsigned long x = 0;

		for (;;) {
			FILETIME c, e, k, u;

			for (int i = 0; i < 1000000; i++)
				x += (unsigned long)i;
			GetProcessTimes(GetCurrentProcess(), &c, &e, &k, &u);
			if ((((ULONGLONG)u.dwHighDateTime << 32) | u.dwLowDateTime) >= want)
				return 0;
		}
	}
	fprintf(stderr, "win-helper: unknown mode\n");
	return 2;
}
