/* SPDX-License-Identifier: MIT */
/* fs.c: directories and the program's own path (Windows, UTF-8 in, UTF-16 to the system). */

#include "win.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * mkdir -p with either separator. The prefixes that are a drive
 * ("C:") or a server and share ("\\server\share") are never made.
 * mode has no Windows meaning: a new directory gets its parent's
 * inherited ACL.
 */
int bgrun__mkdir_p(const char *path, unsigned mode)
{
	WCHAR *w;
	DWORD attr;
	size_t n, start = 0;
	int r;

	(void)mode;
	if (path == NULL || path[0] == '\0')
		return -EINVAL;
	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		return r;
	n = wcslen(w);
	if (n >= 2 && w[1] == L':')
		start = 2;
	else if (n >= 2 && (w[0] == L'\\' || w[0] == L'/') &&
		 (w[1] == L'\\' || w[1] == L'/')) {
		/* \\server\share\ or \\?\C:\ : skip two components. */
		int seps = 0;

		for (start = 2; start < n && seps < 2; start++)
			if (w[start] == L'\\' || w[start] == L'/')
				seps++;
	}
	for (size_t i = start + 1; i <= n; i++) {
		WCHAR c = w[i];

		if (c != L'\\' && c != L'/' && c != L'\0')
			continue;
		if (w[i - 1] == L'\\' || w[i - 1] == L'/')
			continue;
		w[i] = L'\0';
		if (!CreateDirectoryW(w, NULL) &&
		    GetLastError() != ERROR_ALREADY_EXISTS &&
		    GetLastError() != ERROR_ACCESS_DENIED) {
			r = bgrun__win_errno(GetLastError());
			break;
		}
		w[i] = c;
	}
	if (r == 0) {
		attr = GetFileAttributesW(w);
		if (attr == INVALID_FILE_ATTRIBUTES)
			r = bgrun__win_errno(GetLastError());
		else if (!(attr & FILE_ATTRIBUTE_DIRECTORY))
			r = -ENOTDIR;
	}
	free(w);
	return r;
}

ssize_t bgrun__self_path(char *buf, size_t size)
{
	WCHAR w[32768];
	DWORD n = GetModuleFileNameW(NULL, w, sizeof(w) / sizeof(w[0]));
	int len;

	if (n == 0 || n >= sizeof(w) / sizeof(w[0]))
		return -ENAMETOOLONG;
	len = WideCharToMultiByte(CP_UTF8, 0, w, (int)n, buf, (int)size, NULL,
				  NULL);
	if (len <= 0)
		return -ENAMETOOLONG;
	return len;
}
