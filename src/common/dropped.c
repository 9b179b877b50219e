/* SPDX-License-Identifier: MIT */
/* dropped.c: counting the events a dropped-events file notes for one database (both builds' sinks). */

#include "common.h"

#include "bgrun/event.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

int bgrun__dropped_count_file(FILE *f, const char *db, int64_t *ret_count)
{
	char *line = NULL, (*ids)[BGRUN_EVENT_ID_MAX + 1] = NULL;
	size_t cap = 0, dblen = strlen(db), n_ids = 0, cap_ids = 0;
	int64_t count = 0;
	int r;

	/*
	 * TIME_NS \t ID \t ERRNO \t DB \n: the database is the last field.
	 * An event is counted once, however many of its writes (the
	 * recorder's `running`, then its finish) were dropped.
	 */
	while (getline(&line, &cap, f) > 0) {
		const char *p = line, *id = NULL;

		for (int tabs = 0; tabs < 3 && p != NULL; tabs++) {
			p = strchr(p, '\t');
			p = p != NULL ? p + 1 : NULL;
			if (tabs == 0)
				id = p;
		}
		if (p == NULL || id == NULL || strncmp(p, db, dblen) != 0 ||
		    (p[dblen] != '\n' && p[dblen] != '\0') ||
		    strcspn(id, "\t") > BGRUN_EVENT_ID_MAX)
			continue;
		if (n_ids == cap_ids) {
			char (*grown)[BGRUN_EVENT_ID_MAX + 1];

			cap_ids = cap_ids ? 2 * cap_ids : 64;
			grown = realloc(ids, cap_ids * sizeof(*ids));
			if (grown == NULL) {
				r = -ENOMEM;
				goto out;
			}
			ids = grown;
		}
		(void)snprintf(ids[n_ids++], sizeof(ids[0]), "%.*s",
			       (int)strcspn(id, "\t"), id);
	}
	if (n_ids > 0)
		qsort(ids, n_ids, sizeof(*ids), cmp_id);
	for (size_t i = 0; i < n_ids; i++)
		if (i == 0 || strcmp(ids[i], ids[i - 1]) != 0)
			count++;
	*ret_count = count;
	r = 0;
out:
	free(ids);
	free(line);
	return r;
}
