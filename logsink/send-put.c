/* SPDX-License-Identifier: MIT */
/* send-put.c: `logsink send` in the full logsink: the daemon, else the embedded store, else the spool. */

#include "send.h"
#include "sink-verbs.h"

#include <errno.h>

int lsink_send_main(int argc, char **argv, const char *db)
{
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink = NULL;
	struct lsink_send s;
	int r, status;

	status = lsink_send_prepare(argc, argv, db, &s);
	if (status != 0)
		goto out;
	status = LSINK_EXIT_FAILURE;
	so.db = s.db;
	so.socket = s.socket;
	r = bgrun_sink_new(&sink);
	if (r < 0) {
		lsink_msg("%s", bgrun_strerror(r));
		goto out;
	}
	r = bgrun_sink_open(sink, &so);
	if (r < 0) {
		lsink_msg("%s", lsink_printable(bgrun_sink_errmsg(sink)));
		goto out;
	}
	r = bgrun_sink_put(sink, &s.ev);
	if (r == -EINVAL) {
		/* The store's reason, which names the event. */
		lsink_msg("%s", lsink_printable(bgrun_sink_errmsg(sink)));
		goto out;
	}
	if (r < 0) {
		lsink_msg("event %s not recorded: %s", s.ev.id,
			  lsink_printable(bgrun_sink_errmsg(sink)));
		goto out;
	}
	status = lsink_send_done(&s);
out:
	bgrun_sink_close(sink);
	lsink_send_release(&s);
	return status;
}
