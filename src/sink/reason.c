/* SPDX-License-Identifier: MIT */
/* reason.c: the line of a spool's reason file, made and read the same way on POSIX and Windows (sink-internal.h: BGRUN__SPOOL_REASON). */

#include "sink-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bgrun__reason_format(char **ret_line, int error,
			 const struct bgrun__log_id *id, const char *why)
{
	char *line = NULL;
	int n;

	n = asprintf(&line, "%d\t%llu\t%llu\t%lld\t%s\n", -error, id->dev,
		     id->ino, id->mtime,
		     why != NULL && why[0] != '\0' ? why : strerror(-error));
	if (n < 0)
		return -ENOMEM;
	/* One line: a message's own line breaks become spaces. */
	for (char *p = line; p < line + n - 1; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	*ret_line = line;
	return n;
}

static int reason_parse(char *line, struct bgrun__log_id *ret_id,
			const char **ret_why)
{
	int error, used = 0;

	line[strcspn(line, "\r\n")] = '\0';
	if (sscanf(line, "%d\t%llu\t%llu\t%lld\t%n", &error, &ret_id->dev,
		   &ret_id->ino, &ret_id->mtime, &used) != 4 ||
	    used == 0 || error <= 0)
		return 0;
	*ret_why = line + used;
	return -error;
}

int bgrun__reason_judge(const char *db, char *line, const char **ret_why,
			bool *ret_same)
{
	struct bgrun__log_id id, now;
	int error = reason_parse(line, &id, ret_why);

	if (error == 0)
		return 0;
	bgrun__log_id_of(db, &now);
	*ret_same = now.ino != 0 && bgrun__log_id_same(&now, &id);
	return error;
}
