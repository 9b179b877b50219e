/* SPDX-License-Identifier: MIT */
/* clone-http.h: the launcher's HTTP source for `bgrun clone URL DEST` (clone-http.c, built with libcurl). */

#ifndef BGRUN_CLONE_HTTP_H
#define BGRUN_CLONE_HTTP_H

#include <stdbool.h>

struct clone_http;

/* How to talk to the server (every field borrowed). */
struct clone_http_opts {
	long timeout;          /* seconds without data before giving up */
	bool insecure;         /* --insecure: no TLS certificate check */
	const char *cacert;    /* --cacert: the CA bundle, or NULL: libcurl's */
	bool no_clonebundles;  /* --no-clonebundles: ignore the manifest */
};

/*
 * Asks the server at url (borrowed) for its capabilities, then starts the
 * stream clone's transfer on a thread (either gives up after o->timeout
 * seconds without data; o must outlive h): *ret_fd is the read end of a pipe
 * carrying the stream bundle (give it to bgrun_clone as bundle_fd). On
 * failure returns -errno and, if ret_err is not NULL, a malloc'd one-line
 * message in *ret_err.
 */
int clone_http_start(const char *url, const struct clone_http_opts *o,
		     int *ret_fd, struct clone_http **ret_h, char **ret_err);
/*
 * Closes fd (consumed), waits for the transfer, frees h. Returns 0, or
 * -EPROTO with the transfer's error in *ret_err (malloc'd): the reason a
 * clone that failed on a cut bundle failed. Accepts NULL.
 */
int clone_http_finish(struct clone_http *h, int fd, char **ret_err);
/* The clonebundles entry being fetched, or NULL (the server's getbundle). */
const char *clone_http_bundle_url(const struct clone_http *h);
/* Whether the server is read with the legacy stream_out (no bundle2 stream). */
bool clone_http_legacy(const struct clone_http *h);
/*
 * Fetches the server's bookmarks into dest/.hg/bookmarks (in_store:
 * .hg/store/bookmarks, for bookmarksinstore). 0, or -errno with a
 * malloc'd one-line message in *ret_err.
 */
int clone_http_bookmarks(const char *url, const struct clone_http_opts *o,
			 const char *dest, bool in_store, char **ret_err);
/* Writes dest/.hg/hgrc with [paths] default = url, as `hg clone` does. */
int clone_http_write_hgrc(const char *dest, const char *url);

/*
 * WHY A MODULE: libcurl brings some thirty libraries (TLS, Kerberos,
 * LDAP, SSH, IDN...). Linked into bgrun-full they were loaded by every
 * run of it, used or not: by the recorder of every logged launch and by
 * every job verb (bgrun ps, logs, wait...), 535 page faults and 19.5 ms
 * of CPU per start on a virtual machine where a page fault costs about
 * 30 us, against 93 and 3.6 ms without them (perf stat -r 50
 * bgrun-full --version). So the functions above live in
 * bgrun-clone-http.so (clone-http.c), beside bgrun-full, loaded by the
 * first call that needs it (clone-http-load.c holds the functions
 * clone.c calls). The module exports this table only.
 */
struct clone_http_api {
	int (*start)(const char *url, const struct clone_http_opts *o,
		     int *ret_fd, struct clone_http **ret_h, char **ret_err);
	int (*finish)(struct clone_http *h, int fd, char **ret_err);
	const char *(*bundle_url)(const struct clone_http *h);
	bool (*legacy)(const struct clone_http *h);
	int (*bookmarks)(const char *url, const struct clone_http_opts *o,
			 const char *dest, bool in_store, char **ret_err);
	int (*write_hgrc)(const char *dest, const char *url);
};

/* The table's symbol in the module, and the module's file name. */
#define CLONE_HTTP_API_SYMBOL "bgrun_clone_http_api"
#define CLONE_HTTP_MODULE "bgrun-clone-http.so"

#endif /* BGRUN_CLONE_HTTP_H */
