/* SPDX-License-Identifier: MIT */
/* status.c: `logsink status`: where the log is, whether it can be written, what waits in its spool, what was dropped, whether the daemon answers. */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char status_help[] =
	"Usage: logsink status [OPTION]...\n"
	"Say where the event log is and whether it can be written, how many\n"
	"events wait in its spool (DB.spool/: stored by the next writer that\n"
	"works, the daemon included) and why (what the writer that kept them\n"
	"there met), or were set aside there, how many could\n"
	"be kept nowhere (dropped: counted in the socket's directory until the\n"
	"machine restarts), and whether a daemon answers ($BGRUN_SOCKET: \"answers,\n"
	"pid N\", \"not running\", or \"not used:\" and why).\n"
	"\n"
	LSINK_COMMON_HELP
	"\n"
	"Exit status: 0 all is well, 1 something needs looking at (the log\n"
	"cannot be written, events wait or were dropped), 2 usage error.\n";

static const struct option status_options[] = {
	LSINK_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/*
 * Whether the daemon answers on sock, checked as every client checks it
 * (who listens, the database it writes): the line's text in line.
 */
static void daemon_line(const char *db, const char *sock, char *line,
			size_t size)
{
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink_daemon_status st;
	struct bgrun_sink *sink = NULL;
	int r;

	so.mode = BGRUN_SINK_DAEMON;
	so.db = db;
	so.socket = sock;
	r = bgrun_sink_new(&sink);
	if (r >= 0)
		r = bgrun_sink_open(sink, &so);
	if (r >= 0)
		r = bgrun_sink_daemon_status(sink, &st);
	if (r >= 0)
		(void)snprintf(line, size, "answers, pid %lld", (long long)st.pid);
	else if (r == -ENOENT || r == -ECONNREFUSED)
		(void)snprintf(line, size, "not running");
	else
		(void)snprintf(line, size, "not used: %s",
			       sink != NULL ? bgrun_sink_errmsg(sink)
					    : bgrun_strerror(r));
	bgrun_sink_close(sink);
}

int lsink_status_main(int argc, char **argv, const char *db)
{
	char why[512], line[640], *path = NULL, *sock = NULL, *dropped_at = NULL;
	int64_t waiting = 0, bad = 0, dropped = 0;
	int opt, r, status = EXIT_SUCCESS;

	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", status_options, NULL)) != -1) {
		switch (opt) {
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case 'h':
			lsink_help(status_help);
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("status takes no arguments");
	if (db == NULL) {
		r = bgrun_store_default_path(&path);
		if (r < 0) {
			lsink_msg("no event log: set BGRUN_DB, XDG_STATE_HOME or "
				  "HOME, or use --db");
			return LSINK_EXIT_FAILURE;
		}
		db = path;
	}
	(void)printf("log:      %s\n", lsink_printable(db));
	r = bgrun_sink_check_log(db, why, sizeof(why));
	if (r < 0) {
		(void)printf("writable: no: %s\n", lsink_printable(why));
		status = LSINK_EXIT_FAILURE;
	} else {
		(void)printf("writable: yes\n");
	}
	r = bgrun_sink_spool_count(db, &waiting, &bad);
	if (r < 0)
		(void)printf("spool:    %s.spool: cannot read: %s\n",
			     lsink_printable(db), strerror(-r));
	else
		(void)printf("spool:    %lld waiting, %lld set aside (%s.spool)\n",
			     (long long)waiting, (long long)bad,
			     lsink_printable(db));
	if (waiting > 0) {
		status = LSINK_EXIT_FAILURE;
		/* Why they wait: what the writer that kept them met. */
		if (bgrun_sink_spool_reason(db, why, sizeof(why)) < 0)
			(void)printf("reason:   %s\n", lsink_printable(why));
	}
	if (bgrun_sink_default_socket(&sock) < 0)
		sock = NULL;
	(void)bgrun_sink_dropped_path(sock, &dropped_at);
	r = bgrun_sink_dropped_count(sock, db, &dropped);
	if (r < 0)
		(void)printf("dropped:  unknown: %s\n", strerror(-r));
	else
		(void)printf("dropped:  %lld (%s)\n", (long long)dropped,
			     dropped_at != NULL ? lsink_printable(dropped_at)
						: "-");
	if (dropped > 0)
		status = LSINK_EXIT_FAILURE;
	if (sock == NULL) {
		(void)printf("daemon:   no socket path\n");
	} else {
		daemon_line(db, sock, line, sizeof(line));
		(void)printf("daemon:   %s (%s)\n", lsink_printable(line),
			     lsink_printable(sock));
	}
	free(path);
	free(sock);
	free(dropped_at);
	if (lsink_flush_stdout() != 0)
		return LSINK_EXIT_FAILURE;
	return status;
}
