/* SPDX-License-Identifier: MIT */
/* public.c: libbgrun's small public calls: error and stage names, clocks, whole writes, mkdir -p, default paths (include/bgrun/util.h). */

#include "bgrun.h"
#include "common/common.h"
#include "platform.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *bgrun_strerror(int error)
{
	if (error >= 0)
		return "Success";
	return strerror(-error);
}

const char *bgrun_stage_name(enum bgrun_stage stage)
{
	switch (stage) {
	case BGRUN_STAGE_NONE:
		return "none";
	case BGRUN_STAGE_ARGS:
		return "arguments";
	case BGRUN_STAGE_SETUP:
		return "setup";
	case BGRUN_STAGE_CWD:
		return "cwd";
	case BGRUN_STAGE_STDIN:
		return "stdin";
	case BGRUN_STAGE_STDOUT:
		return "stdout";
	case BGRUN_STAGE_STDERR:
		return "stderr";
	case BGRUN_STAGE_EXEC:
		return "exec";
	}
	return "unknown";
}

/* In libbgrun: programs that never open the store use it. */
int bgrun_store_default_path(char **ret_path)
{
	const char *db = getenv("BGRUN_DB");
	char *path;

	if (db == NULL || db[0] == '\0')
		return bgrun__user_path("XDG_STATE_HOME", ".local/state",
					"bgrun/events.db", ret_path);
	path = strdup(db);
	if (path == NULL)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

int bgrun_output_default_dir(char **ret_path)
{
	const char *dir = getenv("BGRUN_OUTPUT_DIR");
	char *path;

	if (dir == NULL || dir[0] == '\0')
		return bgrun__user_path("XDG_STATE_HOME", ".local/state",
					"bgrun/output", ret_path);
	path = strdup(dir);
	if (path == NULL)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

static const char *const output_suffix[] = {
	[BGRUN_OUTPUT_LOG] = ".log",
	[BGRUN_OUTPUT_OUT] = ".out",
	[BGRUN_OUTPUT_ERR] = ".err",
	[BGRUN_OUTPUT_ENV] = ".env",
};
#define N_OUTPUT_SUFFIX (sizeof(output_suffix) / sizeof(output_suffix[0]))

/* An event id as the files' names take it: no separator, no "..". */
static bool output_id_ok(const char *id)
{
	if (id == NULL || id[0] == '\0')
		return false;
	for (const char *p = id; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || *p == '-'))
			return false;
	return true;
}

int bgrun_output_path(const char *dir, const char *id,
		      enum bgrun_output_file which, char **ret_path)
{
	char *path;
	int n;

	if (!output_id_ok(id) || (unsigned)which >= N_OUTPUT_SUFFIX)
		return -EINVAL;
	n = dir != NULL ? asprintf(&path, "%s/%s%s", dir, id,
				   output_suffix[which])
			: asprintf(&path, "%s%s", id, output_suffix[which]);
	if (n < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

int bgrun_output_file_of(const char *path, const char *id)
{
	const char *base = path;
	size_t n;

	if (path == NULL || !output_id_ok(id))
		return -1;
	for (const char *p = path; *p != '\0'; p++)
		if (strchr(BGRUN__PATH_SEPS, *p) != NULL)
			base = p + 1;
	n = strlen(id);
	if (strncmp(base, id, n) != 0)
		return -1;
	for (size_t i = 0; i < N_OUTPUT_SUFFIX; i++)
		if (strcmp(base + n, output_suffix[i]) == 0)
			return (int)i;
	return -1;
}

const char *bgrun_helper_path(const char *self, const char *name,
			      const char *installed, char *buf, size_t size)
{
	char here[PATH_MAX];
	const char *slash;
	ssize_t n;

	if (self == NULL) {
		n = bgrun__self_path(here, sizeof(here));
		here[n > 0 ? n : 0] = '\0';
		self = here;
	}
	slash = strrchr(self, '/');
	if (slash != NULL &&
	    snprintf(buf, size, "%.*s/%s", (int)(slash - self), self, name) <
		    (int)size &&
	    access(buf, X_OK) == 0)
		return buf;
	return installed;
}

int bgrun_write_all(bgrun_os_fd_t fd, const void *buf, size_t len)
{
	return bgrun__fd_write_all(fd, buf, len);
}

int bgrun_mkdir_p(const char *path, unsigned mode)
{
	return bgrun__mkdir_p(path, mode);
}

int64_t bgrun_clock_ns(enum bgrun_clock clock)
{
	return bgrun__now_ns(clock == BGRUN_CLOCK_MONOTONIC ? CLOCK_MONOTONIC
							   : CLOCK_REALTIME);
}
