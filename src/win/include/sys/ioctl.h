/* SPDX-License-Identifier: MIT */
/* sys/ioctl.h: the terminal width query (TIOCGWINSZ) for the Windows build, on the console's screen buffer. */

#ifndef BGRUN_WIN_SYS_IOCTL_H
#define BGRUN_WIN_SYS_IOCTL_H

#include <errno.h>
#include <io.h>

#define TIOCGWINSZ 0x5413

struct winsize {
	unsigned short ws_row, ws_col, ws_xpixel, ws_ypixel;
};

/* Only TIOCGWINSZ: the console's window (compat.c); else -1, ENOTTY. */
int bgrun__win_console_size(int fd, struct winsize *ret_ws);
#define ioctl(fd, req, ws) \
	((req) == TIOCGWINSZ ? bgrun__win_console_size((fd), (ws)) \
			     : (errno = ENOTTY, -1))

#endif /* BGRUN_WIN_SYS_IOCTL_H */
