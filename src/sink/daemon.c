/* SPDX-License-Identifier: MIT */
/* daemon.c: the sink's public calls that need no store: the socket path, one event through the daemon (libbgrun). */

#include "sink-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int bgrun_sink_put_daemon(const struct bgrun_sink_opts *opts,
			  const struct bgrun_event *ev, char *errmsg,
			  size_t size)
{
	struct bgrun_sink_opts defaults = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink sink = { .fd = -1 };
	int status = BGRUN__SINK_PENDING, r;
	struct bgrun__sink_batch b = { .evs = ev, .status = &status, .n = 1 };

	r = bgrun__sink_init(&sink, opts != NULL ? opts : &defaults);
	if (r == -EINVAL)
		r = bgrun__sink_fail(&sink, r, "BGRUN_SINK must be auto, "
				     "embedded or daemon");
	else if (r >= 0 && sink.mode == BGRUN_SINK_EMBEDDED)
		r = bgrun__sink_fail(&sink, -ENOTCONN,
				     "BGRUN_SINK=embedded: not the daemon");
	if (r >= 0)
		r = bgrun__sink_via_daemon(&sink, &b);
	if (r >= 0)
		r = status == BGRUN__SINK_PENDING ? -EAGAIN : status;
	if (r < 0 && errmsg != NULL && size > 0)
		(void)snprintf(errmsg, size, "%s", sink.errmsg);
	bgrun__sink_release(&sink);
	return r;
}
int bgrun_sink_spool_dir(const char *db, char **ret_path)
{
	char *path;

	if (db == NULL)
		return -EINVAL;
	if (asprintf(&path, "%s.spool", db) < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

