/* SPDX-License-Identifier: MIT */
/* client.c: the sink client: the daemon when its socket answers, else the embedded store, else the spool. */


#include "sink-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int open_store(struct bgrun_sink *sink)
{
	struct bgrun_store *store;
	int r;

	if (sink->store != NULL)
		return 0;
	if (sink->db == NULL)
		return bgrun__sink_fail(sink, -ENOENT,
					"no event log: set BGRUN_DB, "
					"XDG_STATE_HOME or HOME");
	r = bgrun_store_new(&store);
	if (r < 0)
		return bgrun__sink_fail(sink, r, "out of memory");
	r = bgrun_store_open(store, sink->db, 0);
	if (r < 0) {
		(void)bgrun__sink_fail(sink, r, "%s", bgrun_store_errmsg(store));
		bgrun_store_close(store);
		return r;
	}
	sink->store = store;
	sink->close_store = bgrun_store_close;
	if (!sink->replayed) {
		sink->replayed = true;
		(void)bgrun_sink_replay(sink->store, sink->db, NULL);
	}
	return 0;
}

int bgrun_sink_connect(struct bgrun_sink *sink)
{
	int r;

	if (sink == NULL)
		return -EINVAL;
	sink->spooled = false;
	sink->errmsg[0] = '\0';
	if (sink->mode != BGRUN_SINK_EMBEDDED) {
		r = bgrun__sink_connect_daemon(sink);
		if (r >= 0)
			return BGRUN_SINK_VIA_DAEMON;
		if (sink->mode == BGRUN_SINK_DAEMON)
			return r;
	}
	r = open_store(sink);
	if (r < 0)
		return r;
	sink->errmsg[0] = '\0';
	return BGRUN_SINK_VIA_STORE;
}

static int via_store(struct bgrun_sink *sink, struct bgrun__sink_batch *b)
{
	struct bgrun_event *evs;
	size_t *idx, k = 0;
	int r;

	r = open_store(sink);
	if (r < 0)
		return r;
	evs = malloc(b->n * sizeof(*evs));
	idx = malloc(b->n * sizeof(*idx));
	if (evs == NULL || idx == NULL) {
		r = bgrun__sink_fail(sink, -ENOMEM, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (b->status[i] == BGRUN__SINK_PENDING) {
			evs[k] = b->evs[i];
			idx[k++] = i;
		}
	}
	r = bgrun_store_put_batch(sink->store, evs, k);
	if (r >= 0) {
		for (size_t j = 0; j < k; j++)
			b->status[idx[j]] = BGRUN_SINK_VIA_STORE;
		goto cleanup;
	}
	if (r != -EINVAL) {
		/* The store itself fails: the events go to the spool. */
		r = bgrun__sink_fail(sink, r, "%s",
				     bgrun_store_errmsg(sink->store));
		goto cleanup;
	}
	/* All or none: find which ones are refused, and store the others. */
	for (size_t j = 0; j < k; j++) {
		r = k == 1 ? r : bgrun_store_put(sink->store, &evs[j]);
		if (r >= 0)
			b->status[idx[j]] = BGRUN_SINK_VIA_STORE;
		else if (r == -EINVAL)
			b->status[idx[j]] = bgrun__sink_fail(
				sink, r, "%s", bgrun_store_errmsg(sink->store));
		else
			(void)bgrun__sink_fail(sink, r, "%s",
					       bgrun_store_errmsg(sink->store));
	}
	r = 0;
cleanup:
	free(evs);
	free(idx);
	return r;
}

static int deliver(struct bgrun_sink *sink, const struct bgrun_event *evs,
		   size_t n)
{
	struct bgrun__sink_batch b = { .evs = evs, .n = n };
	char why[sizeof(sink->errmsg)] = "";
	int r = 0, first = 0, via = 0, spool_error = 0;

	sink->spooled = false;
	sink->errmsg[0] = '\0';
	b.status = malloc(n * sizeof(*b.status));
	if (b.status == NULL)
		return bgrun__sink_fail(sink, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		b.status[i] = BGRUN__SINK_PENDING;
	if (sink->mode != BGRUN_SINK_EMBEDDED)
		r = bgrun__sink_via_daemon(sink, &b);
	if (r < 0 && sink->mode == BGRUN_SINK_DAEMON)
		first = r;
	if (bgrun__sink_pending(&b) && sink->mode != BGRUN_SINK_DAEMON) {
		r = via_store(sink, &b);
		if (r < 0 || bgrun__sink_pending(&b))
			first = r < 0 ? r : -EIO;
	}
	(void)snprintf(why, sizeof(why), "%s", sink->errmsg);
	for (size_t i = 0; i < n; i++) {
		if (b.status[i] == BGRUN__SINK_PENDING) {
			/* The last resort, kept for the daemon or the next writer. */
			r = sink->db != NULL
				    ? bgrun__spool_write(sink->db, &evs[i])
				    : -ENOENT;
			if (r >= 0) {
				sink->spooled = true;
			} else {
				if (spool_error == 0)
					spool_error = r;
				/* Lost: counted, as journald counts. */
				(void)bgrun__dropped_note(sink->socket, sink->db,
							  &evs[i], r);
			}
			if (first == 0)
				first = -EIO;
		} else if (b.status[i] < 0 && first == 0) {
			first = b.status[i];
		} else if (b.status[i] > via) {
			via = b.status[i];
		}
	}
	free(b.status);
	if (sink->spooled)
		(void)bgrun__spool_note_reason(sink->db, first,
					       why[0] ? why : NULL);
	if (spool_error != 0)
		return bgrun__sink_fail(
			sink, first, "%s; and not kept in the spool: %s "
			"(dropped, counted by logsink status)",
			why[0] ? why : "not stored",
			spool_error == -ELOOP ? "the spool is a symbolic link"
					      : strerror(-spool_error));
	if (sink->spooled)
		return bgrun__sink_fail(sink, first,
					"%s; kept in the spool %s.spool",
					why[0] ? why : "not stored", sink->db);
	if (first < 0) {
		sink->spooled = false;
		return bgrun__sink_fail(sink, first, "%s", why);
	}
	sink->errmsg[0] = '\0';
	return via;
}

int bgrun_sink_put(struct bgrun_sink *sink, const struct bgrun_event *ev)
{
	int r;

	if (sink == NULL || ev == NULL)
		return -EINVAL;
	r = bgrun__sink_enter(sink);
	return r < 0 ? r : deliver(sink, ev, 1);
}

int bgrun_sink_put_batch(struct bgrun_sink *sink,
			 const struct bgrun_event *evs, size_t n)
{
	int r;

	if (sink == NULL || (evs == NULL && n > 0))
		return -EINVAL;
	r = bgrun__sink_enter(sink);
	if (r < 0)
		return r;
	if (n == 0)
		return sink->mode == BGRUN_SINK_EMBEDDED
			       ? BGRUN_SINK_VIA_STORE
			       : BGRUN_SINK_VIA_DAEMON;
	return deliver(sink, evs, n);
}
