/* SPDX-License-Identifier: MIT */
/* sinkpath.c: where the sink daemon's socket is and the rule for its directory (libbgrun only: public calls, exported once). */

#include "platform.h"
#include "bgrun/sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int bgrun_sink_default_socket(char **ret_path)
{
	const char *env = getenv("BGRUN_SOCKET"),
		   *xdg = getenv("XDG_RUNTIME_DIR");
	char *path;
	int r;

	if (env != NULL && env[0] != '\0')
		r = asprintf(&path, "%s", env);
	else if (xdg != NULL && xdg[0] == '/')
		r = asprintf(&path, "%s/bgrun/sink.sock", xdg);
	else if (getuid() == 0)
		/*
		 * Anyone may make /tmp/bgrun-0 first, and the daemon then
		 * (rightly) refuses it; in /run only root makes directories.
		 */
		r = asprintf(&path, "/run/bgrun/sink.sock");
	else
		r = asprintf(&path, "/tmp/bgrun-%u/sink.sock",
			     (unsigned)getuid());
	if (r < 0)
		return -ENOMEM;
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		free(path);
		return -ENAMETOOLONG;
	}
	*ret_path = path;
	return 0;
}

/*
 * Owner-only, not merely "nobody else may write": the daemon makes the
 * directory 0700 and refuses to serve from a looser one, so a client
 * accepting, say, 0755 would only trust a directory no daemon of ours
 * uses. Here for both: the client before it connects, the daemon before
 * it binds.
 */
int bgrun_sink_check_dir(const char *dir)
{
	struct stat st;

	if (dir == NULL)
		return -EINVAL;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		return -EPERM;
	return 0;
}
