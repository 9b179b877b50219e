/* SPDX-License-Identifier: MIT */
/* conv.c: Python arguments to the C strings and stdio descriptions libbgrun borrows. */

#include "pybgrun.h"

#include <string.h>

void pyb_strv_free(struct pyb_strv *s)
{
	PyMem_Free(s->v);
	PyMem_Free(s->buf);
	*s = (struct pyb_strv){ 0 };
}

/* Keeps one slot free for the terminating NULL. */
int pyb_strv_add(struct pyb_strv *s, const char *str)
{
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		const char **v = PyMem_Realloc(s->v, cap * sizeof(*v));

		if (v == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

int pyb_strv_push(struct pyb_strv *s, PyObject *keep, PyObject *b)
{
	if (PyList_Append(keep, b) < 0)
		return -1;
	return pyb_strv_add(s, PyBytes_AS_STRING(b));
}

const char *pyb_keep_bytes(PyObject *keep, PyObject *b)
{
	/* keep holds the only reference the caller needs: the bytes live as long as it does. */
	if (PyList_Append(keep, b) < 0) {
		Py_DECREF(b);
		return NULL;
	}
	Py_DECREF(b);
	return PyBytes_AS_STRING(b);
}

const char *pyb_fsbytes(PyObject *keep, PyObject *obj, const char *what)
{
	PyObject *b = NULL;

	/* The common case (hg's bytes) without a conversion's calls. */
	if (PyBytes_CheckExact(obj) &&
	    strlen(PyBytes_AS_STRING(obj)) == (size_t)PyBytes_GET_SIZE(obj))
		return PyList_Append(keep, obj) < 0 ? NULL : PyBytes_AS_STRING(obj);
	/* PyUnicode_FSConverter takes str, bytes and os.PathLike, refuses NUL. */
	if (!PyUnicode_FSConverter(obj, &b)) {
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "%s: expected str, bytes or os.PathLike, not %.100s",
				     what, Py_TYPE(obj)->tp_name);
		}
		return NULL;
	}
	return pyb_keep_bytes(keep, b);
}

int pyb_strv_from_seq(struct pyb_strv *s, PyObject *keep, PyObject *seq,
		      const char *what)
{
	PyObject *fast = PySequence_Fast(seq, what);
	Py_ssize_t n;

	if (fast == NULL)
		return -1;
	n = PySequence_Fast_GET_SIZE(fast);
	for (Py_ssize_t i = 0; i < n; i++) {
		const char *str = pyb_fsbytes(keep, PySequence_Fast_GET_ITEM(fast, i), what);

		if (str == NULL || pyb_strv_add(s, str) < 0) {
			Py_DECREF(fast);
			return -1;
		}
	}
	Py_DECREF(fast);
	/* An empty list is still a vector: { NULL }. */
	if (s->v == NULL && pyb_strv_add(s, "") == 0)
		s->n = 0, s->v[0] = NULL;
	return s->v == NULL ? -1 : 0;
}

/* Exact bytes without a NUL, borrowed; else os.fsencode's conversion, kept. */
static const char *env_bytes(PyObject *keep, PyObject *obj, const char *what,
			     size_t *ret_len)
{
	const char *str;

	if (PyBytes_CheckExact(obj)) {
		str = PyBytes_AS_STRING(obj);
		*ret_len = (size_t)PyBytes_GET_SIZE(obj);
		if (strlen(str) == *ret_len)
			return str;
		PyErr_Format(PyExc_ValueError, "%s: embedded null byte", what);
		return NULL;
	}
	str = pyb_fsbytes(keep, obj, what);
	if (str != NULL)
		*ret_len = strlen(str);
	return str;
}

/*
 * The strings are copied into one buffer (s->buf), not made into a bytes
 * object each: a caller such as hg passes its whole environment, tens of
 * variables, on every launch.
 */
int pyb_strv_from_env(struct pyb_strv *s, PyObject *keep, PyObject *map,
		      const char *what)
{
	PyObject *items = PyDict_Check(map) ? PyDict_Items(map) : PyMapping_Items(map);
	struct {
		const char *k, *v;
		size_t kl, vl;
	} *pairs = NULL;
	size_t total = 0;
	Py_ssize_t n;
	char *p;
	int r = -1;

	if (items == NULL)
		return -1;
	n = PyList_GET_SIZE(items);
	pairs = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(*pairs));
	if (pairs == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	/* The list holds the pairs: borrowed bytes live until the copy. */
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *kv = PyList_GET_ITEM(items, i);

		if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
			PyErr_Format(PyExc_TypeError, "%s: items must be pairs", what);
			goto out;
		}
		pairs[i].k = env_bytes(keep, PyTuple_GET_ITEM(kv, 0), what, &pairs[i].kl);
		if (pairs[i].k == NULL)
			goto out;
		pairs[i].v = env_bytes(keep, PyTuple_GET_ITEM(kv, 1), what, &pairs[i].vl);
		if (pairs[i].v == NULL)
			goto out;
		if (pairs[i].kl == 0 || memchr(pairs[i].k, '=', pairs[i].kl) != NULL) {
			PyErr_Format(PyExc_ValueError,
				     "%s: illegal environment variable name %R",
				     what, PyTuple_GET_ITEM(kv, 0));
			goto out;
		}
		total += pairs[i].kl + pairs[i].vl + 2;
	}
	PyMem_Free(s->buf);
	s->buf = p = PyMem_Malloc(total > 0 ? total : 1);
	if (p == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (pyb_strv_add(s, p) < 0)
			goto out;
		memcpy(p, pairs[i].k, pairs[i].kl);
		p += pairs[i].kl;
		*p++ = '=';
		memcpy(p, pairs[i].v, pairs[i].vl);
		p += pairs[i].vl;
		*p++ = '\0';
	}
	if (s->v == NULL && pyb_strv_add(s, "") == 0)
		s->n = 0, s->v[0] = NULL;
	r = s->v == NULL ? -1 : 0;
out:
	PyMem_Free(pairs);
	Py_DECREF(items);
	return r;
}

static const char *const stdio_names[] = { "stdin", "stdout", "stderr" };

/* A descriptor given as a number or by an object's fileno(). */
static int stdio_fd(struct bgrun_stdio *io, long fd, const char *what)
{
	if (fd < 0 || fd > INT32_MAX) {
		PyErr_Format(PyExc_ValueError, "%s: invalid descriptor %ld", what, fd);
		return -1;
	}
	io->kind = BGRUN_STDIO_FD;
	io->fd = (int)fd;
	return 0;
}

int pyb_stdio_from(struct bgrun_stdio *io, PyObject *keep, PyObject *obj,
		   int which, bool allow_paths, bool append)
{
	const char *what = stdio_names[which];
	long fd;

	*io = (struct bgrun_stdio){ .kind = BGRUN_STDIO_NULL };
	if (obj == Py_None)
		return 0;
	if (PyLong_Check(obj)) {
		fd = PyLong_AsLong(obj);
		if (fd == -1 && PyErr_Occurred())
			return -1;
		switch (fd) {
		case PYB_DEVNULL:
			return 0;
		case PYB_INHERIT:
			io->kind = BGRUN_STDIO_INHERIT;
			return 0;
		case PYB_STDOUT:
			if (which != 2)
				break;
			io->kind = BGRUN_STDIO_STDOUT;
			return 0;
		case PYB_PIPE:
			/* Nobody would read it: the caller does not wait. */
			PyErr_Format(PyExc_ValueError,
				     "%s: PIPE is not supported by a background launch", what);
			return -1;
		}
		return stdio_fd(io, fd, what);
	}
	if (which == 0 && PyObject_CheckBuffer(obj)) {
		/* Copied now: a bytearray could change while the GIL is released. */
		PyObject *b = PyBytes_FromObject(obj);

		if (b == NULL || (io->bytes = pyb_keep_bytes(keep, b)) == NULL)
			return -1;
		io->kind = BGRUN_STDIO_BYTES;
		io->len = (size_t)PyBytes_GET_SIZE(b);
		return 0;
	}
	if (allow_paths && (PyUnicode_Check(obj) || PyBytes_Check(obj) ||
			    PyObject_HasAttrString(obj, "__fspath__"))) {
		io->path = pyb_fsbytes(keep, obj, what);
		if (io->path == NULL)
			return -1;
		io->kind = BGRUN_STDIO_FILE;
		io->append = append;
		return 0;
	}
	if (PyObject_HasAttrString(obj, "fileno")) {
		PyObject *r = PyObject_CallMethod(obj, "fileno", NULL);

		if (r == NULL)
			return -1;
		fd = PyLong_AsLong(r);
		Py_DECREF(r);
		if (fd == -1 && PyErr_Occurred())
			return -1;
		return stdio_fd(io, fd, what);
	}
	PyErr_Format(PyExc_TypeError, "%s: unsupported value of type %.100s",
		     what, Py_TYPE(obj)->tp_name);
	return -1;
}
