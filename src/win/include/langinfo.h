/* SPDX-License-Identifier: MIT */
/* langinfo.h: nl_langinfo(CODESET) for the Windows build (src/win/include/ is on the log tool's include path only). */

#ifndef BGRUN_WIN_LANGINFO_H
#define BGRUN_WIN_LANGINFO_H

/*
 * bgrun's programs on Windows write UTF-8 whatever the console's code
 * page (launcher/win-main.c puts the standard streams in binary mode):
 * the one codeset asked about is UTF-8.
 */
#define CODESET 14
static inline const char *nl_langinfo(int item)
{
	return item == CODESET ? "UTF-8" : "";
}

#endif /* BGRUN_WIN_LANGINFO_H */
