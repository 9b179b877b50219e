/* SPDX-License-Identifier: MIT */
/* pybgrun.h: what the files of the Python module `bgrun` share (python/ only). */

#ifndef PYBGRUN_H
#define PYBGRUN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <bgrun.h>

/*
 * The module's Python face is bgrun.pyi; this is its C inside. Every call
 * into libbgrun that can block (a launch, a wait, a put) runs with the
 * GIL released: whatever it reads was copied into C memory, or into
 * bytes objects kept alive in a `keep` list, before the release.
 */

/* The special values of stdin/stdout/stderr (subprocess's, plus INHERIT). */
#define PYB_STDOUT (-2)
#define PYB_DEVNULL (-3)
#define PYB_INHERIT (-4)
#define PYB_PIPE (-1)

/* The module's exception types and Python types (module.c, spawn.c, sink.c). */
extern PyObject *pyb_spawn_error;
extern PyObject *pyb_sink_error;
extern PyTypeObject pyb_child_type;
extern PyTypeObject pyb_sink_type;
extern PyTypeObject *pyb_status_type; /* made at first use: pyb_status_types_ensure */
extern PyTypeObject *pyb_rusage_type;
/* The module (borrowed), to which the types made at first use are added. */
extern PyObject *pyb_module;
int pyb_status_types_ensure(void);

/* --- conv.c: Python objects to the C strings libbgrun borrows --- */

/*
 * A NULL-terminated vector of strings pointing into bytes objects held by
 * a `keep` list; v is PyMem_Malloc'd (release with pyb_strv_free).
 */
struct pyb_strv {
	const char **v;
	size_t n, cap;
	char *buf; /* PyMem_Malloc'd strings v points into, or NULL */
};
void pyb_strv_free(struct pyb_strv *s);
/* Appends str (borrowed: it must outlive the vector). */
int pyb_strv_add(struct pyb_strv *s, const char *str);
/* Appends the bytes of b (a bytes object, which keep takes a reference to). */
int pyb_strv_push(struct pyb_strv *s, PyObject *keep, PyObject *b);

/*
 * Appends b (a new reference to a bytes object, taken over: released on
 * failure too) to keep; returns its bytes, or NULL with an exception set.
 */
const char *pyb_keep_bytes(PyObject *keep, PyObject *b);
/*
 * A path-like or string argument as bytes (os.fsencode's rules, no NUL
 * inside): a new reference appended to keep; returns its bytes or NULL
 * with an exception set.
 */
const char *pyb_fsbytes(PyObject *keep, PyObject *obj, const char *what);
/* A sequence of path-like strings: argv, env_unset. */
int pyb_strv_from_seq(struct pyb_strv *s, PyObject *keep, PyObject *seq,
		      const char *what);
/*
 * A mapping NAME -> VALUE as NAME=VALUE strings, copied into s->buf.
 * Names must be non-empty and hold no '=' (ValueError, as subprocess
 * says).
 */
int pyb_strv_from_env(struct pyb_strv *s, PyObject *keep, PyObject *map,
		      const char *what);

/*
 * stdin/stdout/stderr: None (/dev/null), DEVNULL, INHERIT, STDOUT (stderr
 * only), an int descriptor, an object with fileno(), a path (str or
 * os.PathLike; stdout/stderr also bytes) when paths are allowed, or for
 * stdin bytes-like data. which: 0, 1, 2.
 */
int pyb_stdio_from(struct bgrun_stdio *io, PyObject *keep, PyObject *obj,
		   int which, bool allow_paths, bool append);

/* --- module.c --- */

/* Raises the SpawnError subclass for -error at failure's stage. */
PyObject *pyb_raise_spawn(int error, const struct bgrun_failure *failure,
			  const char *program);
/* The same error as an exception object (a new reference), not raised. */
PyObject *pyb_spawn_exception(int error, enum bgrun_stage stage,
			      const char *program);

/* Launches that failed with ensurestart off and no handle (spawn.c). */
void pyb_failures_record(const char *program, int error,
			 const struct bgrun_failure *failure);
PyObject *pyb_failures_take(void);

/* --- storeapi.c: libbgrun-store, loaded on first use --- */

/* What the module calls in libbgrun-store (the functions of that name). */
struct pyb_store_api {
	__typeof__(bgrun_sink_put) *sink_put;
	__typeof__(bgrun_sink_connect) *sink_connect;
	__typeof__(bgrun_store_new) *store_new;
	__typeof__(bgrun_store_open) *store_open;
	__typeof__(bgrun_store_close) *store_close;
	__typeof__(bgrun_store_errmsg) *store_errmsg;
	__typeof__(bgrun_store_query) *store_query;
	__typeof__(bgrun_store_stats) *store_stats;
};
/*
 * Loads the library the first time (from any thread, GIL or not); the
 * API, or NULL with *why (optional) saying why not, for good.
 */
const struct pyb_store_api *pyb_store_api(const char **why);
/* The same with the GIL held: NULL with ImportError set. */
const struct pyb_store_api *pyb_store_api_or_raise(void);

/* --- spawn.c, sink.c, store.c: the module functions --- */
PyObject *pyb_spawn(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyb_runbgcommand(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyb_flush(PyObject *self, PyObject *unused);
PyObject *pyb_log(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyb_query(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyb_stats(PyObject *self, PyObject *args, PyObject *kw);
int pyb_spawn_types_init(PyObject *module);
int pyb_sink_types_init(PyObject *module);

#endif /* PYBGRUN_H */
