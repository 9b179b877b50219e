/* SPDX-License-Identifier: MIT */
/* env.c: what a launch request takes from the Windows platform: the caller's environment in UTF-8, names compared without case, cmd.exe as the shell. */

#include "win.h"

#include <stdlib.h>
#include <string.h>

/*
 * The environment block in UTF-8, one per thread: the C runtime's
 * narrow environment is in the ANSI code page, which cannot say every
 * name or value. The vector handed out stays valid until this thread
 * asks again, which covers the borrowing of a request: a queued launch
 * copies it in the calling thread.
 */
static __thread char **env_cache;

const char *const *bgrun__os_environ(void)
{
	static const char *const empty[] = { NULL };
	WCHAR *block = GetEnvironmentStringsW(), *p;
	size_t n = 0, bytes = 0;
	char **v, *pos;

	if (block == NULL)
		return empty;
	for (p = block; *p != L'\0'; p += wcslen(p) + 1) {
		n++;
		bytes += (size_t)WideCharToMultiByte(CP_UTF8, 0, p, -1, NULL, 0,
						     NULL, NULL);
	}
	v = malloc((n + 1) * sizeof(*v) + bytes);
	if (v == NULL) {
		(void)FreeEnvironmentStringsW(block);
		return empty;
	}
	pos = (char *)(v + n + 1);
	n = 0;
	for (p = block; *p != L'\0'; p += wcslen(p) + 1) {
		int len = WideCharToMultiByte(CP_UTF8, 0, p, -1, pos,
					      (int)bytes, NULL, NULL);

		v[n++] = pos;
		pos += len;
		bytes -= (size_t)len;
	}
	v[n] = NULL;
	(void)FreeEnvironmentStringsW(block);
	free(env_cache);
	env_cache = v;
	return (const char *const *)v;
}

/*
 * Windows compares variable names without case (Path and PATH are one
 * variable): ASCII letters folded here, any other character through
 * CompareStringOrdinal's case folding.
 */
bool bgrun__os_env_name_eq(const char *a, const char *b, size_t len)
{
	size_t i;
	bool ascii = true;

	for (i = 0; i < len && a[i] != '\0' && b[i] != '\0'; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];

		if (x >= 0x80 || y >= 0x80) {
			ascii = false;
			break;
		}
		if (x >= 'A' && x <= 'Z')
			x |= 0x20;
		if (y >= 'A' && y <= 'Z')
			y |= 0x20;
		if (x != y)
			return false;
	}
	if (ascii)
		return i == len || a[i] == b[i];
	{
		size_t la = strnlen(a, len), lb = strnlen(b, len);
		int na = MultiByteToWideChar(CP_UTF8, 0, a, (int)la, NULL, 0);
		int nb = MultiByteToWideChar(CP_UTF8, 0, b, (int)lb, NULL, 0);
		WCHAR *wa = malloc(((size_t)na + (size_t)nb + 2) * sizeof(WCHAR)), *wb;
		bool eq;

		if (wa == NULL)
			return la == lb && memcmp(a, b, la) == 0;
		wb = wa + na + 1;
		(void)MultiByteToWideChar(CP_UTF8, 0, a, (int)la, wa, na);
		(void)MultiByteToWideChar(CP_UTF8, 0, b, (int)lb, wb, nb);
		eq = CompareStringOrdinal(wa, na, wb, nb, TRUE) == CSTR_EQUAL;
		free(wa);
		return eq;
	}
}

static char shell_path[MAX_PATH * 3 + 16];
static const char *shell_argv[] = { shell_path, "/d", "/s", "/c", NULL };

static BOOL CALLBACK find_shell(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
	WCHAR dir[MAX_PATH];
	UINT n = GetSystemDirectoryW(dir, MAX_PATH);

	(void)once;
	(void)param;
	(void)ctx;
	if (n == 0 || n >= MAX_PATH ||
	    WideCharToMultiByte(CP_UTF8, 0, dir, (int)n, shell_path,
				sizeof(shell_path) - 16, NULL, NULL) <= 0)
		strcpy(shell_path, "C:\\Windows\\System32");
	strcat(shell_path, "\\cmd.exe");
	return TRUE;
}

/* The system's cmd.exe (not %ComSpec%, which the caller's environment may change). */
const char *const *bgrun__os_shell_argv(void)
{
	static INIT_ONCE once = INIT_ONCE_STATIC_INIT;

	(void)InitOnceExecuteOnce(&once, find_shell, NULL, NULL);
	return shell_argv;
}

/* No fork on Windows: no hook to install. */
void bgrun__init_once(void)
{
}
