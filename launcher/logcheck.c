/* SPDX-License-Identifier: MIT */
/* logcheck.c: before a logged launch, whether its record can be written, said in one line (and --strict-log). */

/*
 * The recorder writes the record after bgrun has exited, its stderr
 * /dev/null: a log that cannot be written must be said here or nowhere.
 * What can be known without opening the database (bgrun links no SQLite)
 * is asked of bgrun_sink_check_log: a read-only or full file system, a
 * directory or file we may not write, a file that is not an SQLite
 * database; and, for BGRUN_SINK=daemon, whether a daemon answers. The
 * recorder still tries (the next writer may fix things) and keeps what
 * it cannot write in the spool, or counts it as dropped (logsink status).
 */

#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* $BGRUN_STRICT_LOG (or [log] strict): a boolean as Mercurial spells one. */
static bool strict_env(void)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	const char *s = getenv("BGRUN_STRICT_LOG");

	for (size_t i = 0; s != NULL && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcasecmp(s, yes[i]) == 0)
			return true;
	return false;
}

/* BGRUN_SINK=daemon: whether something accepts on the socket. */
static int daemon_missing(char *why, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *mode = getenv("BGRUN_SINK");
	char *sock = NULL;
	int fd, r = 0;

	if (mode == NULL || strcmp(mode, "daemon") != 0)
		return 0;
	if (bgrun_sink_default_socket(&sock) < 0)
		return 0; /* the recorder will say nothing better */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		(void)snprintf(why, size,
			       "no logsink daemon answers on %s (BGRUN_SINK=daemon)",
			       sock);
		r = -errno;
	}
	if (fd >= 0)
		(void)close(fd);
	free(sock);
	return r;
}

/* Whether cli_check_log said something: said once is enough. */
static bool said;

int cli_check_log(const struct cli *c, const char *id)
{
	char why[600] = "", spool_why[600] = "", *path = NULL;
	const char *db = c->db;
	bool strict = c->strict_log || strict_env();
	int r;

	if (db == NULL) {
		if (bgrun_store_default_path(&path) < 0)
			path = NULL;
		db = path;
	}
	r = bgrun_sink_check_log(db, why, sizeof(why));
	if (r >= 0)
		r = daemon_missing(why, sizeof(why));
	if (r >= 0) {
		free(path);
		return 0;
	}
	said = true;
	if (strict) {
		cli_msg("%s: not launched (--strict-log)", cli_printable(why));
	} else if (db != NULL && bgrun_sink_check_spool(db, spool_why,
							sizeof(spool_why)) >= 0) {
		cli_msg("%s: event %s cannot be recorded now; it waits in the "
			"spool %s.spool", cli_printable(why), id,
			cli_printable(db));
	} else {
		/* The spool's reason, unless it is the log's (the same disk). */
		bool other = spool_why[0] != '\0' && strcmp(spool_why, why) != 0 &&
			     strstr(why, "file system") == NULL;

		cli_msg("%s: event %s cannot be recorded, nor kept in the "
			"spool%s%s%s", cli_printable(why), id, other ? " (" : "",
			other ? cli_printable(spool_why) : "", other ? ")" : "");
	}
	free(path);
	return strict ? EXIT_CANCELED : 0;
}

/*
 * What only the write itself finds (a page damaged past the header, a
 * lock held past its bound by a stopped writer) shows after it: the
 * recorder kept the event in the spool with its reason, or dropped it.
 */
void cli_check_record(const struct cli *c, const char *id)
{
	char why[600], *path = NULL;
	const char *db = c->db;
	int fate;

	if (said)
		return;
	if (db == NULL) {
		if (bgrun_store_default_path(&path) < 0)
			return;
		db = path;
	}
	fate = bgrun_sink_event_fate(db, NULL, id);
	if (fate == BGRUN_SINK_KEPT) {
		if (bgrun_sink_spool_reason(db, why, sizeof(why)) >= 0 &&
		    why[0] == '\0')
			(void)snprintf(why, sizeof(why), "%s: not stored", db);
		cli_msg("%s: event %s was not recorded; it waits in the spool "
			"%s.spool", cli_printable(why), id, cli_printable(db));
	} else if (fate == BGRUN_SINK_DROPPED) {
		cli_msg("%s: event %s was not recorded, nor kept in the spool "
			"(dropped: see logsink status)", cli_printable(db), id);
	}
	free(path);
}
