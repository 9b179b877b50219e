/* SPDX-License-Identifier: MIT */
/* store.c: bgrun.query() and bgrun.stats(): reading the event store, as `logsink query` and `logsink stats` do. */

#include "pybgrun.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The query's conditions, from the keyword arguments both functions take. */
struct pyquery {
	struct bgrun_query q;
	const char *db;
	PyObject *keep;
};

static int opt_str(PyObject *keep, PyObject *v, const char **dst, const char *name)
{
	if (v == Py_None)
		return 0;
	*dst = pyb_fsbytes(keep, v, name);
	return *dst == NULL ? -1 : 0;
}

static int opt_time(PyObject *v, int64_t *dst)
{
	double d;

	if (v == Py_None)
		return 0;
	d = PyFloat_AsDouble(v);
	if (d == -1.0 && PyErr_Occurred())
		return -1;
	*dst = (int64_t)(d * 1e9);
	return 0;
}

static int parse_query(PyObject *args, PyObject *kw, const char *fname, struct pyquery *pq)
{
	static char *kwlist[] = { "db", "source", "event", "cwd", "tag", "result",
		"cmd_glob", "failed", "since", "until", "limit", NULL };
	PyObject *db = Py_None, *source = Py_None, *event = Py_None, *cwd = Py_None;
	PyObject *tag = Py_None, *result = Py_None, *glob = Py_None;
	PyObject *since = Py_None, *until = Py_None;
	int failed = 0;
	long long limit = 0;
	char fmt[64];

	*pq = (struct pyquery){ .q = BGRUN_QUERY_INIT };
	(void)snprintf(fmt, sizeof(fmt), "|O$OOOOOOpOOL:%s", fname);
	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &db, &source, &event,
			&cwd, &tag, &result, &glob, &failed, &since, &until, &limit))
		return -1;
	pq->keep = PyList_New(0);
	if (pq->keep == NULL)
		return -1;
	if (opt_str(pq->keep, db, &pq->db, "db") < 0 ||
	    opt_str(pq->keep, source, &pq->q.source, "source") < 0 ||
	    opt_str(pq->keep, event, &pq->q.event, "event") < 0 ||
	    opt_str(pq->keep, cwd, &pq->q.cwd, "cwd") < 0 ||
	    opt_str(pq->keep, tag, &pq->q.tag, "tag") < 0 ||
	    opt_str(pq->keep, result, &pq->q.result, "result") < 0 ||
	    opt_str(pq->keep, glob, &pq->q.cmd_glob, "cmd_glob") < 0 ||
	    opt_time(since, &pq->q.since_ns) < 0 || opt_time(until, &pq->q.until_ns) < 0)
		return -1;
	if (limit < 0) {
		PyErr_SetString(PyExc_ValueError, "limit: 0 (all) or more");
		return -1;
	}
	pq->q.failed = failed;
	pq->q.limit = limit;
	return 0;
}

/* Opens the store read-only, GIL released; raises on failure. */
static struct bgrun_store *open_store(const struct pyb_store_api *api, const char *db)
{
	struct bgrun_store *store = NULL;
	char *path = NULL;
	int r;

	if (db == NULL && (r = bgrun_store_default_path(&path)) < 0) {
		errno = -r;
		PyErr_SetFromErrno(PyExc_OSError);
		return NULL;
	}
	if (api->store_new(&store) < 0) {
		free(path);
		PyErr_NoMemory();
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	r = api->store_open(store, db ? db : path, BGRUN_STORE_READONLY);
	Py_END_ALLOW_THREADS
	if (r < 0) {
		PyObject *exc = PyObject_CallFunction(PyExc_OSError, "is", -r,
						      api->store_errmsg(store));

		if (exc != NULL) {
			PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
			Py_DECREF(exc);
		}
		api->store_close(store);
		store = NULL;
	}
	free(path);
	return store;
}

/*
 * Rows are gathered as C strings while the GIL is released (the callback
 * runs inside SQLite's step), then made into Python objects.
 */
struct gather {
	char **v;
	size_t n, cap;
	int64_t *nums; /* stats: 5 per row */
};

static int gather_push(struct gather *g, const char *s)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		char **v = realloc(g->v, cap * sizeof(*v));
		int64_t *nums = realloc(g->nums, cap * 5 * sizeof(*nums));

		if (v != NULL)
			g->v = v;
		if (nums != NULL)
			g->nums = nums;
		if (v == NULL || nums == NULL)
			return -ENOMEM;
		g->cap = cap;
	}
	g->v[g->n] = s ? strdup(s) : NULL;
	if (s != NULL && g->v[g->n] == NULL)
		return -ENOMEM;
	g->n++;
	return 0;
}

static void gather_free(struct gather *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	free(g->nums);
}

static int row_cb(void *data, const struct bgrun_event_row *row)
{
	return gather_push(data, row->json);
}

static int stats_cb(void *data, const struct bgrun_stats_row *row)
{
	struct gather *g = data;
	int r = gather_push(g, row->display);

	if (r == 0) {
		int64_t *n = &g->nums[(g->n - 1) * 5];

		n[0] = row->runs;
		n[1] = row->failures;
		n[2] = row->p50_ns;
		n[3] = row->p95_ns;
		n[4] = row->max_ns;
	}
	return r;
}

static PyObject *store_error(const struct pyb_store_api *api, struct bgrun_store *store, int r)
{
	PyObject *exc = PyObject_CallFunction(PyExc_OSError, "is", -r, api->store_errmsg(store));

	if (exc != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/*
 * query() and stats(): parses the arguments into pq (its keep list is the
 * caller's to release, also on failure) and gathers the rows into g with
 * the GIL released; 0, or -1 with an exception set.
 */
static int gather_rows(PyObject *args, PyObject *kw, bool stats,
		       struct pyquery *pq, struct gather *g)
{
	const struct pyb_store_api *api;
	struct bgrun_store *store;
	int r;

	if (parse_query(args, kw, stats ? "stats" : "query", pq) < 0 ||
	    (api = pyb_store_api_or_raise()) == NULL ||
	    (store = open_store(api, pq->db)) == NULL)
		return -1;
	Py_BEGIN_ALLOW_THREADS
	if (stats)
		r = api->store_stats(store, &pq->q, stats_cb, g);
	else
		r = api->store_query(store, &pq->q, row_cb, g);
	Py_END_ALLOW_THREADS
	if (r < 0)
		store_error(api, store, r);
	api->store_close(store);
	return r < 0 ? -1 : 0;
}

PyObject *pyb_query(PyObject *self, PyObject *args, PyObject *kw)
{
	struct gather g = { 0 };
	struct pyquery pq;
	PyObject *loads = NULL, *list = NULL;

	if (gather_rows(args, kw, false, &pq, &g) < 0)
		goto out;
	loads = PyImport_ImportModule("json");
	if (loads == NULL)
		goto out;
	Py_SETREF(loads, PyObject_GetAttrString(loads, "loads"));
	list = loads ? PyList_New(0) : NULL;
	for (size_t i = 0; list != NULL && i < g.n; i++) {
		PyObject *row = PyObject_CallFunction(loads, "s", g.v[i]);

		if (row == NULL || PyList_Append(list, row) < 0)
			Py_CLEAR(list);
		Py_XDECREF(row);
	}
out:
	Py_XDECREF(loads);
	Py_XDECREF(pq.keep);
	gather_free(&g);
	return list;
}

PyObject *pyb_stats(PyObject *self, PyObject *args, PyObject *kw)
{
	struct gather g = { 0 };
	struct pyquery pq;
	PyObject *list = NULL;

	if (gather_rows(args, kw, true, &pq, &g) < 0)
		goto out;
	list = PyList_New(0);
	for (size_t i = 0; list != NULL && i < g.n; i++) {
		int64_t *n = &g.nums[i * 5];
		PyObject *row = Py_BuildValue("{s:z,s:L,s:L,s:N,s:N,s:N}", "display", g.v[i],
			"runs", (long long)n[0], "failures", (long long)n[1],
			"p50_ns", n[2] == BGRUN_NULL ? Py_NewRef(Py_None) : PyLong_FromLongLong(n[2]),
			"p95_ns", n[3] == BGRUN_NULL ? Py_NewRef(Py_None) : PyLong_FromLongLong(n[3]),
			"max_ns", n[4] == BGRUN_NULL ? Py_NewRef(Py_None) : PyLong_FromLongLong(n[4]));

		if (row == NULL || PyList_Append(list, row) < 0)
			Py_CLEAR(list);
		Py_XDECREF(row);
	}
out:
	Py_XDECREF(pq.keep);
	gather_free(&g);
	return list;
}
