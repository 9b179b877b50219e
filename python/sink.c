/* SPDX-License-Identifier: MIT */
/* sink.c: bgrun.Sink and bgrun.log(): events recorded in-process through bgrun_sink_put (daemon, store, spool). */

#include "pybgrun.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	PyObject_HEAD
	struct bgrun_sink *sink;
	/* THREAD SAFETY: a sink serves one thread at a time (sink.h). */
	PyThread_type_lock lock;
	int via; /* the last successful put's BGRUN_SINK_VIA_*, or 0 */
} SinkObject;

static const struct {
	const char *name;
	enum bgrun_sink_mode mode;
} modes[] = {
	{ "env", BGRUN_SINK_ENV },
	{ "try", BGRUN_SINK_TRY },
	{ "auto", BGRUN_SINK_AUTO },
	{ "embedded", BGRUN_SINK_EMBEDDED },
	{ "daemon", BGRUN_SINK_DAEMON },
};

static int sink_init(SinkObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "db", "socket", "mode", "logsink", "timeout", NULL };
	PyObject *db = Py_None, *sock = Py_None, *logsink = Py_None, *keep;
	const char *mode = NULL;
	double timeout = 0;
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *s;
	size_t i;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OzOd:Sink", kwlist, &db,
			&sock, &mode, &logsink, &timeout))
		return -1;
	for (i = 0; mode != NULL && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(mode, modes[i].name) == 0)
			break;
	if (mode != NULL && i == sizeof(modes) / sizeof(modes[0])) {
		PyErr_Format(PyExc_ValueError,
			     "mode: env, try, auto, embedded or daemon, not '%s'", mode);
		return -1;
	}
	if (mode != NULL)
		o.mode = modes[i].mode;
	if (timeout < 0 || timeout > INT_MAX / 1000) {
		PyErr_SetString(PyExc_ValueError, "timeout: out of range");
		return -1;
	}
	o.timeout_ms = (int)(timeout * 1000);
	keep = PyList_New(0);
	if (keep == NULL)
		return -1;
	r = -1;
	if ((db != Py_None && (o.db = pyb_fsbytes(keep, db, "db")) == NULL) ||
	    (sock != Py_None && (o.socket = pyb_fsbytes(keep, sock, "socket")) == NULL) ||
	    (logsink != Py_None && (o.logsink = pyb_fsbytes(keep, logsink, "logsink")) == NULL))
		goto out;
	/* Opening connects to nothing yet (the first put does): no GIL release. */
	if (bgrun_sink_new(&s) < 0) {
		PyErr_NoMemory();
		goto out;
	}
	r = bgrun_sink_open(s, &o);
	if (r < 0) {
		if (r == -EINVAL)
			PyErr_SetString(PyExc_ValueError, bgrun_sink_errmsg(s));
		else {
			errno = -r;
			PyErr_SetFromErrno(PyExc_OSError);
		}
		bgrun_sink_close(s);
		r = -1;
		goto out;
	}
	bgrun_sink_close(self->sink);
	self->sink = s;
	if (self->lock == NULL && (self->lock = PyThread_allocate_lock()) == NULL) {
		PyErr_NoMemory();
		r = -1;
		goto out;
	}
	r = 0;
out:
	Py_DECREF(keep);
	return r;
}

static void sink_dealloc(SinkObject *self)
{
	/* A connect() of another thread may still run: wait for it. */
	if (self->lock != NULL) {
		Py_BEGIN_ALLOW_THREADS
		(void)PyThread_acquire_lock(self->lock, WAIT_LOCK);
		PyThread_release_lock(self->lock);
		Py_END_ALLOW_THREADS
	}
	bgrun_sink_close(self->sink);
	if (self->lock != NULL)
		PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A text field: str as UTF-8 (surrogateescape gives back os.fsdecode'd bytes), or bytes. */
static const char *text_field(PyObject *keep, PyObject *v, const char *name)
{
	PyObject *b;

	if (PyUnicode_Check(v))
		b = PyUnicode_AsEncodedString(v, "utf-8", "surrogateescape");
	else if (PyBytes_Check(v))
		b = Py_NewRef(v);
	else {
		PyErr_Format(PyExc_TypeError, "%s: str or bytes expected, not %.100s",
			     name, Py_TYPE(v)->tp_name);
		return NULL;
	}
	if (b == NULL)
		return NULL;
	if (strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b)) {
		PyErr_Format(PyExc_ValueError, "%s: embedded NUL byte", name);
		Py_DECREF(b);
		return NULL;
	}
	return pyb_keep_bytes(keep, b);
}

/* options={...}: NAME, VALUE pairs for the store's json_object(), values as text. */
static int options_field(PyObject *keep, struct pyb_strv *kv, PyObject *map)
{
	PyObject *items = PyMapping_Items(map);
	int r = -1;

	if (items == NULL)
		return -1;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
		PyObject *k = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 0);
		PyObject *v = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1), *s = NULL;
		const char *ks, *vs;

		ks = text_field(keep, k, "options");
		if (ks == NULL)
			goto out;
		if (!PyUnicode_Check(v) && !PyBytes_Check(v)) {
			s = PyObject_Str(v);
			if (s == NULL)
				goto out;
			v = s;
		}
		vs = text_field(keep, v, "options");
		Py_XDECREF(s);
		if (vs == NULL)
			goto out;
		if (pyb_strv_add(kv, ks) < 0 || pyb_strv_add(kv, vs) < 0)
			goto out;
	}
	r = 0;
out:
	Py_DECREF(items);
	return r;
}

static int int_field(PyObject *v, int64_t *ret, const char *name)
{
	long long x;

	if (v == Py_None) {
		*ret = BGRUN_NULL;
		return 0;
	}
	if (!PyLong_Check(v)) {
		PyErr_Format(PyExc_TypeError, "%s: int or None expected, not %.100s",
			     name, Py_TYPE(v)->tp_name);
		return -1;
	}
	x = PyLong_AsLongLong(v);
	if (x == -1 && PyErr_Occurred())
		return -1;
	if (x == BGRUN_NULL) {
		PyErr_Format(PyExc_ValueError, "%s: out of range", name);
		return -1;
	}
	*ret = x;
	return 0;
}

/* Seconds (a float, as time.time() and hg's durations) to nanoseconds. */
static int secs_field(PyObject *v, int64_t *ret, const char *name)
{
	double d;

	if (v == Py_None) {
		*ret = BGRUN_NULL;
		return 0;
	}
	d = PyFloat_AsDouble(v);
	if (d == -1.0 && PyErr_Occurred())
		return -1;
	if (!(d > -9.2e9 && d < 9.2e9)) {
		PyErr_Format(PyExc_ValueError, "%s: out of range", name);
		return -1;
	}
	*ret = (int64_t)(d * 1e9);
	return 0;
}

struct put {
	struct bgrun_event ev;
	struct pyb_strv argv, kv;
	PyObject *keep;
	char cwd[PATH_MAX];
};

static int put_field(struct put *p, PyObject *key, PyObject *v)
{
	const char *name = PyUnicode_AsUTF8(key);
	const struct bgrun_wire_field *f;
	char *base = (char *)&p->ev;

	if (name == NULL)
		return -1;
	if (strcmp(name, "options") == 0) {
		if (PyUnicode_Check(v)) {
			p->ev.options_json = text_field(p->keep, v, name);
			return p->ev.options_json == NULL ? -1 : 0;
		}
		if (v == Py_None)
			return 0;
		if (options_field(p->keep, &p->kv, v) < 0)
			return -1;
		p->ev.options_kv = p->kv.v;
		return 0;
	}
	if (strcmp(name, "duration") == 0)
		return secs_field(v, &p->ev.duration_ns, name);
	if (strcmp(name, "start_time") == 0)
		return secs_field(v, &p->ev.start_ns, name);
	if (strcmp(name, "end_time") == 0)
		return secs_field(v, &p->ev.end_ns, name);
	f = bgrun_wire_field_by_name(name);
	if (f == NULL || strcmp(name, "options_kv") == 0) {
		PyErr_Format(PyExc_TypeError, "no event field is called '%s'", name);
		return -1;
	}
	switch (f->kind) {
	case BGRUN_WIRE_STR: {
		const char **dst = (const char **)(void *)(base + f->offset);

		if (v == Py_None) {
			*dst = NULL;
			return 0;
		}
		*dst = text_field(p->keep, v, name);
		return *dst == NULL ? -1 : 0;
	}
	case BGRUN_WIRE_INT:
		return int_field(v, (int64_t *)(void *)(base + f->offset), name);
	case BGRUN_WIRE_ARGV:
		if (v == Py_None) {
			p->ev.argv = NULL;
			return 0;
		}
		if (PyUnicode_Check(v) || PyBytes_Check(v)) {
			PyErr_SetString(PyExc_TypeError, "argv: a sequence of str or bytes expected");
			return -1;
		}
		if (pyb_strv_from_seq(&p->argv, p->keep, v, "argv") < 0)
			return -1;
		p->ev.argv = p->argv.v;
		return 0;
	case BGRUN_WIRE_ID: {
		Py_ssize_t n;
		const char *id = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &n) : NULL;

		if (id == NULL || !bgrun_event_id_valid(id, (size_t)n)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError,
					"id: 1 to 36 characters of [0-9A-Za-z._-]");
			return -1;
		}
		memcpy(p->ev.id, id, (size_t)n + 1);
		return 0;
	}
	}
	PyErr_Format(PyExc_TypeError, "no event field is called '%s'", name);
	return -1;
}

static PyObject *sink_error(SinkObject *self, int r, const char *id)
{
	PyObject *exc, *msg;
	bool spooled = bgrun_sink_spooled(self->sink);

	msg = PyUnicode_DecodeUTF8(bgrun_sink_errmsg(self->sink),
				   strlen(bgrun_sink_errmsg(self->sink)), "replace");
	if (msg == NULL)
		return NULL;
	exc = PyObject_CallFunction(pyb_sink_error, "iO", -r, msg);
	Py_DECREF(msg);
	if (exc == NULL)
		return NULL;
	if (PyObject_SetAttrString(exc, "spooled", spooled ? Py_True : Py_False) < 0 ||
	    (msg = PyUnicode_FromString(id)) == NULL) {
		Py_DECREF(exc);
		return NULL;
	}
	(void)PyObject_SetAttrString(exc, "event_id", msg);
	Py_DECREF(msg);
	PyErr_SetObject(pyb_sink_error, exc);
	Py_DECREF(exc);
	return NULL;
}

static PyObject *sink_put_impl(SinkObject *self, PyObject *args, PyObject *kw)
{
	PyObject *event, *key, *value, *result = NULL;
	struct put *p;
	const char *ev_name;
	Py_ssize_t pos = 0;
	int r;

	if (self->lock == NULL) {
		PyErr_SetString(PyExc_ValueError, "the sink is not initialised");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "U:put", &event))
		return NULL;
	/* PATH_MAX of cwd: not on the stack of a thread that may be small. */
	p = PyMem_Calloc(1, sizeof(*p));
	if (p == NULL)
		return PyErr_NoMemory();
	p->keep = PyList_New(0);
	if (p->keep == NULL)
		goto out;
	ev_name = text_field(p->keep, event, "event");
	if (ev_name == NULL)
		goto out;
	bgrun_event_init(&p->ev, ev_name, "python");
	/* As `logsink send`: the writer's working directory. */
	if (getcwd(p->cwd, sizeof(p->cwd)) != NULL)
		p->ev.cwd = p->cwd;
	while (kw != NULL && PyDict_Next(kw, &pos, &key, &value))
		if (put_field(p, key, value) < 0)
			goto out;
	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(self->lock, WAIT_LOCK);
	r = self->sink == NULL ? -EBADF : bgrun_sink_put(self->sink, &p->ev);
	Py_END_ALLOW_THREADS
	if (r == -EBADF && self->sink == NULL)
		PyErr_SetString(PyExc_ValueError, "the sink is closed");
	else if (r < 0)
		sink_error(self, r, p->ev.id);
	else {
		self->via = r;
		result = PyUnicode_FromString(p->ev.id);
	}
	PyThread_release_lock(self->lock);
out:
	pyb_strv_free(&p->argv);
	pyb_strv_free(&p->kv);
	Py_XDECREF(p->keep);
	PyMem_Free(p);
	return result;
}

static PyObject *sink_put(SinkObject *self, PyObject *args, PyObject *kw)
{
	return sink_put_impl(self, args, kw);
}

static PyObject *sink_connect(SinkObject *self, PyObject *unused)
{
	char why[512] = "";
	PyObject *exc;
	int r;

	if (self->lock == NULL) {
		PyErr_SetString(PyExc_ValueError, "the sink is not initialised");
		return NULL;
	}
	/*
	 * The lock is let go before the GIL is taken back, so that a
	 * connect() in a thread that outlives the interpreter never holds
	 * it (sink_dealloc waits for it).
	 */
	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(self->lock, WAIT_LOCK);
	r = self->sink == NULL ? -EBADF : bgrun_sink_connect(self->sink);
	if (r < 0 && self->sink != NULL)
		(void)snprintf(why, sizeof(why), "%s", bgrun_sink_errmsg(self->sink));
	PyThread_release_lock(self->lock);
	Py_END_ALLOW_THREADS
	if (r == -EBADF && why[0] == '\0') {
		PyErr_SetString(PyExc_ValueError, "the sink is closed");
		return NULL;
	}
	if (r < 0) {
		exc = PyObject_CallFunction(pyb_sink_error, "is", -r, why);
		if (exc == NULL)
			return NULL;
		(void)PyObject_SetAttrString(exc, "spooled", Py_False);
		PyErr_SetObject(pyb_sink_error, exc);
		Py_DECREF(exc);
		return NULL;
	}
	return PyUnicode_FromString(r == BGRUN_SINK_VIA_DAEMON ? "daemon" : "store");
}

static PyObject *sink_close(SinkObject *self, PyObject *unused)
{
	if (self->lock == NULL)
		Py_RETURN_NONE;
	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(self->lock, WAIT_LOCK);
	Py_END_ALLOW_THREADS
	bgrun_sink_close(self->sink);
	self->sink = NULL;
	PyThread_release_lock(self->lock);
	Py_RETURN_NONE;
}

static PyObject *sink_enter(SinkObject *self, PyObject *unused)
{
	return Py_NewRef(self);
}

static PyObject *sink_exit(SinkObject *self, PyObject *args)
{
	return sink_close(self, NULL);
}

static PyObject *sink_get_via(SinkObject *self, void *closure)
{
	if (self->via == BGRUN_SINK_VIA_DAEMON)
		return PyUnicode_FromString("daemon");
	if (self->via == BGRUN_SINK_VIA_STORE)
		return PyUnicode_FromString("store");
	Py_RETURN_NONE;
}

static PyMethodDef sink_methods[] = {
	{ "put", (PyCFunction)(void (*)(void))sink_put, METH_VARARGS | METH_KEYWORDS,
	  "put(event, **fields) -> str\n\n"
	  "Records one event and returns its id, once it is committed (GIL\n"
	  "released meanwhile). fields are struct bgrun_event's members by name:\n"
	  "text ones (source, message, cwd, display, tag, result, stdout_path...)\n"
	  "str or bytes, integer ones (pid, exit_code, signal, duration_ns,\n"
	  "start_ns...) int or None, argv a sequence of str/bytes kept byte for\n"
	  "byte, id a string of [0-9A-Za-z._-]. Also: options (a mapping, stored\n"
	  "as a JSON object of strings, or a str of JSON), duration, start_time,\n"
	  "end_time (float seconds). source defaults to 'python', cwd to ours.\n"
	  "SinkError if no path stored it (.spooled: kept in the spool)." },
	{ "connect", (PyCFunction)sink_connect, METH_NOARGS,
	  "connect() -> str\n\n"
	  "Opens now what the first put would open on its way: the daemon's\n"
	  "connection, else the store (bgrun_sink_connect). Nothing is written.\n"
	  "Returns 'daemon' or 'store', the path the next put tries first;\n"
	  "SinkError if none opens. Call it early, in another thread, when the\n"
	  "event comes at the end (the GIL is released meanwhile)." },
	{ "close", (PyCFunction)sink_close, METH_NOARGS,
	  "Closes the daemon connection and the store." },
	{ "__enter__", (PyCFunction)sink_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)sink_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef sink_getset[] = {
	{ "via", (getter)sink_get_via, NULL,
	  "How the last successful put went: 'daemon', 'store' or None.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pyb_sink_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "bgrun.Sink",
	.tp_basicsize = sizeof(SinkObject),
	.tp_dealloc = (destructor)sink_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Sink(db=None, *, socket=None, mode=None, logsink=None, timeout=0)\n\n"
		  "The sink client (bgrun/sink.h): events go to the daemon when its\n"
		  "socket answers, else into the store (embedded), else to the spool.\n"
		  "db: the store (None: $BGRUN_DB or the XDG state default); socket:\n"
		  "the daemon's (None: $BGRUN_SOCKET...); mode: 'env' (None:\n"
		  "$BGRUN_SINK), 'try', 'auto' (start the daemon if none answers),\n"
		  "'embedded', 'daemon'; timeout: seconds to wait for the daemon (0:\n"
		  "30 s). Nothing is opened until the first put. One thread at a time\n"
		  "uses it; others wait their turn.",
	.tp_methods = sink_methods,
	.tp_getset = sink_getset,
	.tp_init = (initproc)sink_init,
	.tp_new = PyType_GenericNew,
};

/* log()'s sink: made at its first use, kept for the process. */
static PyObject *default_sink;

PyObject *pyb_log(PyObject *self, PyObject *args, PyObject *kw)
{
	if (default_sink == NULL) {
		default_sink = PyObject_CallNoArgs((PyObject *)&pyb_sink_type);
		if (default_sink == NULL)
			return NULL;
	}
	return sink_put_impl((SinkObject *)default_sink, args, kw);
}

int pyb_sink_types_init(PyObject *m)
{
	if (PyType_Ready(&pyb_sink_type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, "Sink", (PyObject *)&pyb_sink_type);
}
