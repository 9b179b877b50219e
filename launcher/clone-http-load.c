/* SPDX-License-Identifier: MIT */
/* clone-http-load.c: bgrun-full's side of `bgrun clone URL`: loads bgrun-clone-http.so on first use (clone-http.h says why) and calls into it. */

#include "clone-http.h"
#include "bgrun.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct clone_http_api *api;
static char why[PATH_MAX + 128];

/*
 * The module beside this program (as in the build tree) or installed,
 * loaded once. THREAD SAFETY: called on the main thread only (clone.c);
 * the module's own threads never call back here.
 */
static const struct clone_http_api *load(void)
{
	static bool tried;
	char buf[PATH_MAX];
	const char *path;
	void *h;

	if (tried)
		return api;
	tried = true;
	path = bgrun_helper_path(NULL, CLONE_HTTP_MODULE, BGRUN_CLONE_HTTP_PATH,
				 buf, sizeof(buf));
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		(void)snprintf(why, sizeof(why),
			       "cloning from a server is not available: %s",
			       dlerror());
	else if ((api = dlsym(h, CLONE_HTTP_API_SYMBOL)) == NULL)
		(void)snprintf(why, sizeof(why), "%s: no %s", path,
			       CLONE_HTTP_API_SYMBOL);
	return api;
}

/* -ENOTSUP with the reason, in *ret_err when asked for. */
static int unavailable(char **ret_err)
{
	if (ret_err != NULL)
		*ret_err = strdup(why);
	return -ENOTSUP;
}

int clone_http_start(const char *url, const struct clone_http_opts *o,
		     int *ret_fd, struct clone_http **ret_h, char **ret_err)
{
	if (load() == NULL)
		return unavailable(ret_err);
	return api->start(url, o, ret_fd, ret_h, ret_err);
}

/* The calls below are made on a transfer that started: the module is in. */
const char *clone_http_bundle_url(const struct clone_http *h)
{
	return api->bundle_url(h);
}

bool clone_http_legacy(const struct clone_http *h)
{
	return api->legacy(h);
}

int clone_http_finish(struct clone_http *h, int fd, char **ret_err)
{
	if (h == NULL)
		return 0;
	return api->finish(h, fd, ret_err);
}

int clone_http_bookmarks(const char *url, const struct clone_http_opts *o,
			 const char *dest, bool in_store, char **ret_err)
{
	if (load() == NULL)
		return unavailable(ret_err);
	return api->bookmarks(url, o, dest, in_store, ret_err);
}

int clone_http_write_hgrc(const char *dest, const char *url)
{
	if (load() == NULL)
		return -ENOTSUP;
	return api->write_hgrc(dest, url);
}
