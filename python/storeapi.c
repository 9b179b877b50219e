/* SPDX-License-Identifier: MIT */
/* storeapi.c: libbgrun-store (and with it SQLite), loaded the first time the module needs the store, once per process. */

#include "pybgrun.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/*
 * Why not linked: loading libbgrun-store.so pulls in libsqlite3, whose
 * relocations and page faults cost a Python that merely imports the
 * module (hg, for every command, with the extension enabled) more than
 * the daemon's whole round trip. The sink's daemon path, the launches and
 * the sink object itself are libbgrun's; only the embedded store, the
 * spool's replay and the queries need this library.
 *
 * Found as the dynamic linker finds a library the module links: by its
 * soname, through the module's RUNPATH (the build tree), then the system
 * directories (where the package installs it).
 *
 * THREAD SAFETY: loaded under pthread_once, from any thread, without
 * the GIL (the sink's connect-ahead thread may be the first to need it);
 * then only read.
 */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct pyb_store_api api;
static bool loaded;
static char why[512];

#define SYM(field, name)                                                       \
	do {                                                                   \
		void *p_ = dlsym(h, name);                                     \
		if (p_ == NULL) {                                              \
			(void)snprintf(why, sizeof(why), "%s: no %s",          \
				       PYB_STORE_SONAME, name);                \
			return;                                                \
		}                                                              \
		/* POSIX: a data pointer from dlsym converts to a function's. */ \
		*(void **)(void *)&api.field = p_;                             \
	} while (0)

static void load(void)
{
	void *h = dlopen(PYB_STORE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		const char *e = dlerror();

		(void)snprintf(why, sizeof(why), "%s", e != NULL ? e : PYB_STORE_SONAME);
		return;
	}
	/* Never unloaded: the sinks keep pointers into it (close_store). */
	SYM(sink_put, "bgrun_sink_put");
	SYM(sink_connect, "bgrun_sink_connect");
	SYM(store_new, "bgrun_store_new");
	SYM(store_open, "bgrun_store_open");
	SYM(store_close, "bgrun_store_close");
	SYM(store_errmsg, "bgrun_store_errmsg");
	SYM(store_query, "bgrun_store_query");
	SYM(store_stats, "bgrun_store_stats");
	__atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
}

const struct pyb_store_api *pyb_store_api(const char **ret_why)
{
	(void)pthread_once(&once, load);
	if (!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) {
		if (ret_why != NULL)
			*ret_why = why;
		return NULL;
	}
	return &api;
}

const struct pyb_store_api *pyb_store_api_or_raise(void)
{
	const char *e = NULL;
	const struct pyb_store_api *a;

	Py_BEGIN_ALLOW_THREADS
	a = pyb_store_api(&e);
	Py_END_ALLOW_THREADS
	if (a == NULL)
		PyErr_Format(PyExc_ImportError, "bgrun: the event store's library: %s", e);
	return a;
}
