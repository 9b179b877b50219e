/* SPDX-License-Identifier: MIT */
/* front.c: the `logsink` program users run: `send` straight to the daemon, everything else by the full logsink. */

/*
 * Why a front: Mercurial's logtoprocess runs `logsink send --from-hg-env`
 * once per event, so its start-up is paid every time. The full logsink
 * (logsink-full: the log's reader, the daemon, the embedded store) loads
 * libsqlite3 and libuv before main; this program links neither (libbgrun's
 * daemon client, bgrun_sink_put_daemon, never references the store), so
 * it starts as fast as a C program can here. It records a `send` through
 * the daemon when one answers; for anything else (another verb, --help,
 * no daemon, BGRUN_SINK=embedded, a refusal) it executes logsink-full
 * with the same arguments, plus, after a `send` it tried, the event's id
 * (--field id=ID): a retry of the same event, never a second row.
 *
 * Where it is linked statically (meson.build: LSINK_FRONT_STORE), the
 * store and SQLite are linked in too, and `send` is all done here, the
 * embedded store included: a static program maps nothing at start, and
 * pays only for the pages it uses. Executing logsink-full for the
 * embedded store cost a second program start with six shared libraries
 * (about 2 ms of CPU per event here).
 */

#include "send.h"
#include "sink-verbs.h"
#include "bgrun/config.h"
#include "bgrun/event.h"
#include "bgrun/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs logsink-full with argv, and --field id=ID when id is not empty. */
__attribute__((noreturn))
static void run_full(int argc, char **argv, const char *id)
{
	char path[PATH_MAX], field[BGRUN_EVENT_ID_MAX + 8];
	char **v = calloc((size_t)argc + 3, sizeof(*v));
	const char *full = bgrun_helper_path(NULL, "logsink-full",
					      LOGSINK_FULL_PATH, path,
					      sizeof(path));

	if (v == NULL) {
		lsink_msg("out of memory");
		exit(LSINK_EXIT_FAILURE);
	}
	memcpy(v, argv, (size_t)argc * sizeof(*v));
	if (id[0] != '\0') {
		(void)snprintf(field, sizeof(field), "id=%s", id);
		v[argc++] = (char *)"--field";
		v[argc++] = field;
	}
	(void)execv(full, v);
	lsink_msg("cannot run %s: %s", full, strerror(errno));
	exit(LSINK_EXIT_FAILURE);
}

/* A copy of argv that getopt may permute and send.c may write into. */
static char **copy_args(int argc, char **argv)
{
	char **v = calloc((size_t)argc + 1, sizeof(*v));

	for (int i = 0; v != NULL && i < argc; i++) {
		v[i] = strdup(argv[i]);
		if (v[i] == NULL) {
			while (i-- > 0)
				free(v[i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

static void free_args(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/*
 * `send` through the daemon: its exit status, or -1 to hand it to
 * logsink-full (with *id set once the event has one).
 */
static int send_to_daemon(int argc, char **argv, const char *db,
			  char id[BGRUN_EVENT_ID_MAX + 1])
{
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink = NULL;
	char **owned, **args;
	struct lsink_send s;
	int status = -1;

	/* getopt permutes args and replaces args[0]: free owned instead. */
	owned = copy_args(argc, argv);
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (owned == NULL || args == NULL) {
		free_args(owned);
		free(args);
		return -1;
	}
	memcpy(args, owned, (size_t)argc * sizeof(*args));
	status = lsink_send_prepare(argc, args, db, &s);
	if (status != 0)
		goto out;
	/* $BGRUN_SINK=embedded, or a mistake, is logsink-full's to handle. */
	so.db = s.db;
	so.socket = s.socket;
	if (bgrun_sink_new(&sink) >= 0 && bgrun_sink_open(sink, &so) >= 0 &&
	    bgrun_sink_put_daemon(sink, &s.ev) >= 0) {
		status = lsink_send_done(&s);
	} else {
		strcpy(id, s.ev.id);
		status = -1;
	}
out:
	bgrun_sink_close(sink);
	lsink_send_release(&s);
	free_args(owned);
	free(args);
	return status;
}

int main(int argc, char **argv)
{
	char id[BGRUN_EVENT_ID_MAX + 1] = "";
	const char *db = NULL;
	struct bgrun_config *config = NULL;
	int i = 1, status;

	/* The user's [log] and [sink] keys, as logsink-full reads them. */
	if (bgrun_config_new(&config) == 0 &&
	    bgrun_config_read_user(config) < 0) {
		(void)fprintf(stderr, "logsink: %s\n", bgrun_config_errmsg(config));
		return 2;
	}
	bgrun_config_free(config);
	/* --db before the verb, as logsink-full takes it; else not ours. */
	while (i < argc) {
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
			db = argv[i + 1];
			i += 2;
		} else if (strncmp(argv[i], "--db=", 5) == 0) {
			db = argv[i] + 5;
			i++;
		} else {
			break;
		}
	}
	if (i < argc && strcmp(argv[i], "send") == 0) {
#ifdef LSINK_FRONT_STORE
		/*
		 * Linked statically with the store: `send` is done here
		 * whatever the sink, as logsink-full would, but for a user
		 * that only a directory service names (src/unix/user-passwd.c):
		 * the daemon names them, else logsink-full, which asks NSS.
		 */
		if (bgrun_user_name((int64_t)getuid()) != NULL)
			return lsink_send_main(argc - i, argv + i, db);
#endif
		status = send_to_daemon(argc - i, argv + i, db, id);
		if (status >= 0)
			return status;
	}
	run_full(argc, argv, id);
}
