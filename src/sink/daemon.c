/* SPDX-License-Identifier: MIT */
/* daemon.c: the sink's public calls that need no store: the sink object, one event through the daemon (libbgrun). */

#include "sink-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * bgrun_sink_default_socket and bgrun_sink_check_dir depend on what the
 * daemon listens on: the platform's sinkconn.c has them.
 */

int bgrun_sink_new(struct bgrun_sink **ret_sink)
{
	struct bgrun_sink *sink = calloc(1, sizeof(*sink));

	if (sink == NULL)
		return -ENOMEM;
	sink->conn = (struct bgrun__sinkconn)BGRUN__SINKCONN_INIT;
	*ret_sink = sink;
	return 0;
}

int bgrun_sink_open(struct bgrun_sink *sink, const struct bgrun_sink_opts *opts)
{
	struct bgrun_sink_opts defaults = BGRUN_SINK_OPTS_INIT;
	int r;

	if (sink == NULL)
		return -EINVAL;
	sink->errmsg[0] = '\0';
	if (sink->open)
		return bgrun__sink_fail(sink, -EINVAL, "the sink is open already");
	r = bgrun__sink_init(sink, opts != NULL ? opts : &defaults);
	if (r < 0) {
		char msg[sizeof(sink->errmsg)];

		memcpy(msg, sink->errmsg, sizeof(msg));
		bgrun__sink_release(sink);
		memcpy(sink->errmsg, msg, sizeof(msg));
		return r;
	}
	sink->open = true;
	return 0;
}

/* What the daemon's calls check first: 0, or the failure, said. */
static int enter_daemon(struct bgrun_sink *sink)
{
	int r;

	if (sink == NULL)
		return -EINVAL;
	r = bgrun__sink_enter(sink);
	if (r < 0)
		return r;
	if (sink->mode == BGRUN_SINK_EMBEDDED)
		return bgrun__sink_fail(sink, -ENOTCONN,
					"BGRUN_SINK=embedded: not the daemon");
	return 0;
}

int bgrun_sink_put_daemon(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	int status = BGRUN__SINK_PENDING, r;
	struct bgrun__sink_batch b = { .evs = ev, .status = &status, .n = 1 };

	if (ev == NULL)
		return -EINVAL;
	r = enter_daemon(sink);
	if (r < 0)
		return r;
	r = bgrun__sink_via_daemon(sink, &b);
	if (r >= 0 && status == BGRUN__SINK_PENDING)
		r = bgrun__sink_fail(sink, -EAGAIN, "%s",
				     sink->errmsg[0] != '\0'
					     ? sink->errmsg
					     : "not stored by the daemon");
	return r < 0 ? r : status;
}

/* The daemon's connection, made by how once the sink is checked. */
static int connect_with(struct bgrun_sink *sink,
			int (*how)(struct bgrun_sink *sink))
{
	int r = enter_daemon(sink);

	if (r >= 0)
		r = how(sink);
	return r < 0 ? r : BGRUN_SINK_VIA_DAEMON;
}

int bgrun_sink_connect_daemon(struct bgrun_sink *sink)
{
	return connect_with(sink, bgrun__sink_connect_daemon);
}

int bgrun_sink_preconnect(struct bgrun_sink *sink)
{
	return connect_with(sink, bgrun__sink_preconnect);
}

int bgrun_sink_post(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	int r = ev == NULL ? -EINVAL : enter_daemon(sink);

	return r < 0 ? r : bgrun__sink_post(sink, ev);
}

int bgrun_sink_settle(struct bgrun_sink *sink, bgrun_sink_unsettled_fn fn,
		      void *ctx)
{
	if (sink == NULL)
		return -EINVAL;
	sink->errmsg[0] = '\0';
	return bgrun__sink_settle(sink, fn, ctx);
}

int bgrun_sink_daemon_status(struct bgrun_sink *sink,
			     struct bgrun_sink_daemon_status *ret_status)
{
	struct bgrun_sink_daemon_status st = {
		.pid = BGRUN_NULL, .started_ns = BGRUN_NULL,
		.events = BGRUN_NULL, .queued = BGRUN_NULL,
	};
	int r;

	if (sink == NULL || ret_status == NULL)
		return -EINVAL;
	r = bgrun__sink_enter(sink);
	if (r < 0)
		return r;
	r = bgrun__sink_daemon_hello(sink, &st);
	if (r < 0)
		return r;
	*ret_status = st;
	return 0;
}

bool bgrun_sink_spooled(const struct bgrun_sink *sink)
{
	return sink != NULL && sink->spooled;
}

const char *bgrun_sink_errmsg(const struct bgrun_sink *sink)
{
	return sink != NULL ? sink->errmsg : "";
}

void bgrun_sink_close(struct bgrun_sink *sink)
{
	if (sink == NULL)
		return;
	bgrun__sink_release(sink);
	if (sink->store != NULL)
		sink->close_store(sink->store);
	free(sink);
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

