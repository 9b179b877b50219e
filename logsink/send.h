/* SPDX-License-Identifier: MIT */
/* send.h: `logsink send`'s event, shared by the full logsink (send-put.c) and the lean front (front.c). */

#ifndef LSINK_SEND_H
#define LSINK_SEND_H

#include "logsink.h"

#include <limits.h>

/* One `logsink send`: its event and what the event borrows. */
struct lsink_send {
	struct bgrun_event ev;
	const char *db;     /* --db, or the one before the verb; NULL: default */
	const char *socket; /* --socket, or NULL */
	bool print_id;
	const char **argv;  /* --field argv=..., NULL-terminated */
	size_t argc;
	char **kv;          /* OPT_* names (ours) and values, for options_kv */
	char *display, *message;
	char cwd[PATH_MAX];
};

/*
 * Parses `send`'s arguments (argv[0] is "send") into *s and makes its
 * event (a new id). 0, or LSINK_EXIT_FAILURE after a message; usage
 * errors exit 2. Release *s with lsink_send_release either way.
 */
int lsink_send_prepare(int argc, char **argv, const char *db,
		       struct lsink_send *s);
/* Once the event is recorded: its id if asked; the exit status. */
int lsink_send_done(const struct lsink_send *s);
void lsink_send_release(struct lsink_send *s);

#endif /* LSINK_SEND_H */
