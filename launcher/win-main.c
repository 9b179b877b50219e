/* SPDX-License-Identifier: MIT */
/* win-main.c: bgrun's entry point on Windows: the arguments as UTF-16 from the system, in UTF-8 to the rest of bgrun. */

/*
 * The C runtime's narrow argv is in the ANSI code page, which cannot say
 * every argument: wmain gets them as the system has them, and they are
 * converted once. Standard output and error stay byte streams (binary
 * mode): bgrun's messages are UTF-8, as on POSIX.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef BGRUN_PROGRAM_NAME
#define BGRUN_PROGRAM_NAME "bgrun"
#endif

int bgrun_cli_main(int argc, char **argv);
int wmain(int argc, wchar_t **wargv);

int wmain(int argc, wchar_t **wargv)
{
	char **argv = calloc((size_t)argc + 1, sizeof(*argv));

	if (argv == NULL)
		return 125;
	for (int i = 0; i < argc; i++) {
		int n = WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1, NULL, 0,
					    NULL, NULL);

		argv[i] = malloc(n > 0 ? (size_t)n : 1);
		if (argv[i] == NULL)
			return 125;
		argv[i][0] = '\0';
		if (n > 0)
			(void)WideCharToMultiByte(CP_UTF8, 0, wargv[i], -1,
						  argv[i], n, NULL, NULL);
	}
	/*
	 * The C runtime's getopt names the program by the runtime's own
	 * argv[0] (the full path) in its messages: bgrun's say "bgrun"
	 * (logsink's "logsink": BGRUN_PROGRAM_NAME).
	 */
	__argv[0] = (char *)BGRUN_PROGRAM_NAME;
	(void)_setmode(_fileno(stdout), _O_BINARY);
	(void)_setmode(_fileno(stderr), _O_BINARY);
	return bgrun_cli_main(argc, argv);
}
