/* SPDX-License-Identifier: MIT */
/* spawn.c: bgrun.spawn(), bgrun.Child, bgrun.Status and bgrun.runbgcommand() on bgrun_spawn(). */

#include "pybgrun.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

PyTypeObject *pyb_status_type;
PyTypeObject *pyb_rusage_type;

/* --- Status and Rusage: struct sequences, like os.stat_result --- */

static PyStructSequence_Field status_fields[] = {
	{ "pid", "the child's process id" },
	{ "returncode", "exit_code if it exited, else -signal (Popen's convention)" },
	{ "exit_code", "0..255 if it exited, else None" },
	{ "signal", "the signal that killed it, else None" },
	{ "core_dumped", "whether it dumped core" },
	{ "duration", "seconds from spawning to reaping (monotonic clock)" },
	{ "start_time", "time.time() just before spawning" },
	{ "end_time", "time.time() when it was reaped" },
	{ "rusage", "its resource use: a bgrun.Rusage" },
	{ NULL, NULL },
};
static PyStructSequence_Desc status_desc = {
	"bgrun.Status", "How a child ended, as wait4(2) told it.", status_fields, 9,
};

static PyStructSequence_Field rusage_fields[] = {
	{ "user_cpu", "user CPU seconds" },
	{ "sys_cpu", "system CPU seconds" },
	{ "max_rss_kb", "peak resident set, KiB" },
	{ "minor_faults", NULL },
	{ "major_faults", NULL },
	{ "in_blocks", NULL },
	{ "out_blocks", NULL },
	{ "vol_ctxsw", "voluntary context switches" },
	{ "invol_ctxsw", "involuntary context switches" },
	{ NULL, NULL },
};
static PyStructSequence_Desc rusage_desc = {
	"bgrun.Rusage", "A child's resource use (wait4's struct rusage); None: unknown.",
	rusage_fields, 9,
};

static PyObject *int_or_none(int64_t v)
{
	if (v == BGRUN_NULL)
		Py_RETURN_NONE;
	return PyLong_FromLongLong(v);
}

static PyObject *secs_or_none(int64_t ns)
{
	if (ns == BGRUN_NULL)
		Py_RETURN_NONE;
	return PyFloat_FromDouble((double)ns / 1e9);
}

int pyb_status_types_ensure(void)
{
	if (pyb_status_type != NULL)
		return 0;
	if (pyb_rusage_type == NULL &&
	    ((pyb_rusage_type = PyStructSequence_NewType(&rusage_desc)) == NULL ||
	     PyModule_AddObjectRef(pyb_module, "Rusage", (PyObject *)pyb_rusage_type) < 0))
		return -1;
	if ((pyb_status_type = PyStructSequence_NewType(&status_desc)) == NULL ||
	    PyModule_AddObjectRef(pyb_module, "Status", (PyObject *)pyb_status_type) < 0) {
		Py_CLEAR(pyb_status_type);
		return -1;
	}
	return 0;
}

static PyObject *make_status(const struct bgrun_status *st)
{
	const struct bgrun_rusage *ru = &st->rusage;
	PyObject *s, *r;
	int64_t vals[] = { ru->max_rss_kb, ru->minor_faults, ru->major_faults,
			   ru->in_blocks, ru->out_blocks, ru->vol_ctxsw,
			   ru->invol_ctxsw };

	if (pyb_status_types_ensure() < 0)
		return NULL;
	r = PyStructSequence_New(pyb_rusage_type);
	if (r == NULL)
		return NULL;
	PyStructSequence_SET_ITEM(r, 0, secs_or_none(ru->user_cpu_ns));
	PyStructSequence_SET_ITEM(r, 1, secs_or_none(ru->sys_cpu_ns));
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		PyStructSequence_SET_ITEM(r, 2 + i, int_or_none(vals[i]));
	s = PyStructSequence_New(pyb_status_type);
	if (s == NULL) {
		Py_DECREF(r);
		return NULL;
	}
	PyStructSequence_SET_ITEM(s, 0, PyLong_FromLong((long)st->pid));
	PyStructSequence_SET_ITEM(s, 1, PyLong_FromLong(st->exited ? st->exit_code
							 : -st->signal));
	PyStructSequence_SET_ITEM(s, 2, st->exited ? PyLong_FromLong(st->exit_code)
					  : Py_NewRef(Py_None));
	PyStructSequence_SET_ITEM(s, 3, st->signaled ? PyLong_FromLong(st->signal)
					  : Py_NewRef(Py_None));
	PyStructSequence_SET_ITEM(s, 4, PyBool_FromLong(st->core_dumped));
	PyStructSequence_SET_ITEM(s, 5, secs_or_none(st->duration_ns));
	PyStructSequence_SET_ITEM(s, 6, secs_or_none(st->start_realtime_ns));
	PyStructSequence_SET_ITEM(s, 7, secs_or_none(st->end_realtime_ns));
	PyStructSequence_SET_ITEM(s, 8, r);
	if (PyErr_Occurred()) {
		Py_DECREF(s);
		return NULL;
	}
	return s;
}

/* --- Child --- */

typedef struct {
	PyObject_HEAD
	struct bgrun_child *child;
	/* Only one thread reaps a child (spawn.h): waits take turns. */
	PyThread_type_lock wait_lock;
	PyObject *program; /* bytes: argv[0] or /bin/sh, for error messages */
} ChildObject;

static void child_dealloc(ChildObject *self)
{
	/* A child still running is handed to the library's reaper. */
	bgrun_child_free(self->child);
	if (self->wait_lock != NULL)
		PyThread_free_lock(self->wait_lock);
	Py_XDECREF(self->program);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *child_new(struct bgrun_child *c, PyObject *program)
{
	ChildObject *self = PyObject_New(ChildObject, &pyb_child_type);

	if (self == NULL) {
		bgrun_child_free(c);
		return NULL;
	}
	self->child = c;
	self->program = Py_NewRef(program);
	self->wait_lock = PyThread_allocate_lock();
	if (self->wait_lock == NULL) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	return (PyObject *)self;
}

/* The launch's outcome, waited for with the GIL released: pid or -errno. */
static bgrun_pid_t child_started(ChildObject *self, struct bgrun_failure *f)
{
	bgrun_pid_t pid;

	Py_BEGIN_ALLOW_THREADS
	pid = bgrun_child_started(self->child, f);
	Py_END_ALLOW_THREADS
	return pid;
}

static PyObject *child_get_pid(ChildObject *self, void *closure)
{
	struct bgrun_failure f = { 0 };
	bgrun_pid_t pid = child_started(self, &f);

	if (pid < 0)
		return pyb_raise_spawn(pid, &f, PyBytes_AS_STRING(self->program));
	return PyLong_FromLong((long)pid);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Waits in slices of at most 100 ms so that a signal (Ctrl-C) is seen
 * between them, as time.sleep and Popen.wait see it. Returns 0 with *st,
 * or NULL-worthy -1 with an exception set.
 */
#define WAIT_SLICE_MS 100
static int child_wait_status(ChildObject *self, PyObject *timeout,
			     struct bgrun_status *st)
{
	int64_t deadline = -1;
	int r;

	if (timeout != NULL && timeout != Py_None) {
		double t = PyFloat_AsDouble(timeout);

		if (t == -1.0 && PyErr_Occurred())
			return -1;
		deadline = now_ns() + (int64_t)(t > 0 ? t * 1e9 : 0);
	}
	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(self->wait_lock, WAIT_LOCK);
	Py_END_ALLOW_THREADS
	for (;;) {
		int slice = WAIT_SLICE_MS;

		if (deadline >= 0) {
			int64_t left = (deadline - now_ns()) / 1000000;

			slice = left < 0 ? 0 : left < WAIT_SLICE_MS ? (int)left : WAIT_SLICE_MS;
		}
		Py_BEGIN_ALLOW_THREADS
		r = bgrun_child_wait(self->child, slice, st);
		Py_END_ALLOW_THREADS
		if (r != -ETIMEDOUT)
			break;
		if (deadline >= 0 && now_ns() >= deadline)
			break;
		if (PyErr_CheckSignals() < 0) {
			PyThread_release_lock(self->wait_lock);
			return -1;
		}
	}
	PyThread_release_lock(self->wait_lock);
	if (r == -ETIMEDOUT) {
		PyErr_Format(PyExc_TimeoutError, "bgrun: child %ld still running after %S seconds",
			     (long)bgrun_child_pid(self->child), timeout);
		return -1;
	}
	if (r < 0) {
		struct bgrun_failure f = { 0 };

		/* A failed launch answers with its own error and stage. */
		if (bgrun_child_started(self->child, &f) < 0) {
			pyb_raise_spawn(r, &f, PyBytes_AS_STRING(self->program));
			return -1;
		}
		errno = -r;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	return 0;
}

static PyObject *child_wait(ChildObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;
	struct bgrun_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout))
		return NULL;
	if (child_wait_status(self, timeout, &st) < 0)
		return NULL;
	return make_status(&st);
}

static PyObject *child_wait_returncode(ChildObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;
	struct bgrun_status st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait_returncode", kwlist, &timeout))
		return NULL;
	if (child_wait_status(self, timeout, &st) < 0)
		return NULL;
	return PyLong_FromLong(st.exited ? st.exit_code : -st.signal);
}

static PyObject *child_kill(ChildObject *self, PyObject *args)
{
	int sig = SIGTERM, r;

	if (!PyArg_ParseTuple(args, "|i:kill", &sig))
		return NULL;
	/* It waits for a queued launch to happen first. */
	Py_BEGIN_ALLOW_THREADS
	r = bgrun_child_kill(self->child, sig);
	Py_END_ALLOW_THREADS
	if (r < 0) {
		errno = -r;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	Py_RETURN_NONE;
}

static PyObject *child_repr(ChildObject *self)
{
	return PyUnicode_FromFormat("<bgrun.Child pid=%ld program=%R>",
				    (long)bgrun_child_pid(self->child), self->program);
}

static PyMethodDef child_methods[] = {
	{ "wait", (PyCFunction)(void (*)(void))child_wait, METH_VARARGS | METH_KEYWORDS,
	  "wait(timeout=None) -> Status\n\nWaits (GIL released) for the child to end and "
	  "reaps it; again later, gives the same Status. TimeoutError when timeout "
	  "(seconds) expires; SpawnError if the launch failed." },
	{ "wait_returncode", (PyCFunction)(void (*)(void))child_wait_returncode,
	  METH_VARARGS | METH_KEYWORDS,
	  "wait_returncode(timeout=None) -> int\n\nAs wait(), but gives Popen.wait()'s "
	  "return code: the exit code, or -N for signal N." },
	{ "kill", (PyCFunction)child_kill, METH_VARARGS,
	  "kill(sig=signal.SIGTERM) -> None\n\nSends sig through the child's pidfd (never "
	  "to a recycled pid). ProcessLookupError once it has been reaped." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef child_getset[] = {
	{ "pid", (getter)child_get_pid, NULL,
	  "The child's pid. With ensurestart=False it waits for the launch (GIL "
	  "released) and raises its SpawnError if it failed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pyb_child_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "bgrun.Child",
	.tp_basicsize = sizeof(ChildObject),
	.tp_dealloc = (destructor)child_dealloc,
	.tp_repr = (reprfunc)child_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A launched child, from spawn(). Dropping it hands the child to the\n"
		  "library, which reaps it: never a zombie.",
	.tp_methods = child_methods,
	.tp_getset = child_getset,
};

/* --- one launch's options, and what keeps their strings alive --- */

struct launch {
	struct bgrun_spawn_opts o;
	struct pyb_strv argv, env, env_set, env_unset;
	struct bgrun_failure failure;
	PyObject *keep;          /* list of bytes the strings point into */
	const char *prog;        /* argv[0] or /bin/sh, for error messages */
	PyObject *program;       /* the same as bytes, made when needed */
};

static int launch_init(struct launch *l)
{
	*l = (struct launch){ .o = BGRUN_SPAWN_OPTS_INIT };
	l->o.failure = &l->failure;
	l->keep = PyList_New(0);
	return l->keep == NULL ? -1 : 0;
}

static void launch_release(struct launch *l)
{
	pyb_strv_free(&l->argv);
	pyb_strv_free(&l->env);
	pyb_strv_free(&l->env_set);
	pyb_strv_free(&l->env_unset);
	Py_XDECREF(l->keep);
	Py_XDECREF(l->program);
}

/* The command: a script (shell) or argv (a sequence, or one string). */
static int launch_command(struct launch *l, PyObject *cmd, bool shell)
{
	if (shell) {
		l->o.shell = pyb_fsbytes(l->keep, cmd, "script");
		if (l->o.shell == NULL)
			return -1;
		l->prog = "/bin/sh";
		return 0;
	}
	/* A list first: no failed attribute lookup for the usual case. */
	if (!PyList_Check(cmd) && !PyTuple_Check(cmd) &&
	    (PyUnicode_Check(cmd) || PyBytes_Check(cmd) ||
	     PyObject_HasAttrString(cmd, "__fspath__"))) {
		const char *s = pyb_fsbytes(l->keep, cmd, "argv");

		if (s == NULL || pyb_strv_add(&l->argv, s) < 0)
			return -1;
	} else if (pyb_strv_from_seq(&l->argv, l->keep, cmd, "argv") < 0) {
		return -1;
	}
	if (l->argv.n == 0) {
		PyErr_SetString(PyExc_ValueError, "argv: empty command");
		return -1;
	}
	l->o.argv = l->argv.v;
	/* In a bytes object of keep: lives as long as the launch. */
	l->prog = l->argv.v[0];
	return 0;
}

/* The program as bytes (borrowed), made the first time; NULL: an error set. */
static PyObject *launch_program(struct launch *l)
{
	if (l->program == NULL)
		l->program = PyBytes_FromString(l->prog);
	return l->program;
}

static int launch_env(struct launch *l, PyObject *env, PyObject *set, PyObject *unset)
{
	if (env != Py_None) {
		if (pyb_strv_from_env(&l->env, l->keep, env, "env") < 0)
			return -1;
		l->o.env = l->env.v;
	}
	if (set != Py_None) {
		if (pyb_strv_from_env(&l->env_set, l->keep, set, "env_set") < 0)
			return -1;
		l->o.env_set = l->env_set.v;
	}
	if (unset != Py_None) {
		if (pyb_strv_from_seq(&l->env_unset, l->keep, unset, "env_unset") < 0)
			return -1;
		l->o.env_unset = l->env_unset.v;
	}
	return 0;
}

/* ensurestart=False with a Python on_start: called once, from a library thread. */
struct start_py {
	PyObject *callback;
	PyObject *program;
};

static void on_start_py(void *data, bgrun_pid_t pid, const struct bgrun_failure *f)
{
	struct start_py *d = data;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *arg, *r = NULL;

	if (pid > 0)
		arg = PyLong_FromLong((long)pid);
	else
		arg = pyb_spawn_exception(pid, f ? f->stage : BGRUN_STAGE_NONE,
					  PyBytes_AS_STRING(d->program));
	if (arg != NULL)
		r = PyObject_CallOneArg(d->callback, arg);
	if (r == NULL)
		PyErr_WriteUnraisable(d->callback);
	Py_XDECREF(r);
	Py_XDECREF(arg);
	Py_DECREF(d->callback);
	Py_DECREF(d->program);
	PyGILState_Release(g);
	PyMem_RawFree(d);
}

/* runbgcommand's fire-and-forget: failures are recorded, never lost. */
static void on_start_record(void *data, bgrun_pid_t pid, const struct bgrun_failure *f)
{
	if (pid < 0)
		pyb_failures_record(data, pid, f);
	free(data);
}

static int do_spawn(struct launch *l, struct bgrun_child **ret_child)
{
	int r;

	Py_BEGIN_ALLOW_THREADS
	r = bgrun_spawn(&l->o, ret_child);
	Py_END_ALLOW_THREADS
	if (r < 0)
		pyb_raise_spawn(r, &l->failure, l->prog);
	return r;
}

PyObject *pyb_spawn(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "argv_or_script", "shell", "env", "env_set",
		"env_unset", "cwd", "stdin", "stdout", "stderr", "append",
		"ensurestart", "detach", "on_start", NULL };
	PyObject *cmd, *env = Py_None, *env_set = Py_None, *env_unset = Py_None;
	PyObject *cwd = Py_None, *in = Py_None, *out = Py_None, *err = Py_None;
	PyObject *on_start = Py_None, *result = NULL;
	int shell = 0, append = 0, ensurestart = 1, detach = 1;
	struct bgrun_child *child = NULL;
	struct start_py *d = NULL;
	struct launch l;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pOOOOOOOpppO:spawn", kwlist,
			&cmd, &shell, &env, &env_set, &env_unset, &cwd, &in, &out,
			&err, &append, &ensurestart, &detach, &on_start))
		return NULL;
	if (on_start != Py_None && (!PyCallable_Check(on_start) || ensurestart)) {
		PyErr_SetString(PyExc_ValueError,
				"on_start: a callable, with ensurestart=False only");
		return NULL;
	}
	if (launch_init(&l) < 0)
		return NULL;
	if (launch_command(&l, cmd, shell) < 0 ||
	    launch_env(&l, env, env_set, env_unset) < 0 ||
	    pyb_stdio_from(&l.o.in, l.keep, in, 0, true, false) < 0 ||
	    pyb_stdio_from(&l.o.out, l.keep, out, 1, true, append) < 0 ||
	    pyb_stdio_from(&l.o.err, l.keep, err, 2, true, append) < 0)
		goto out;
	if (cwd != Py_None && (l.o.cwd = pyb_fsbytes(l.keep, cwd, "cwd")) == NULL)
		goto out;
	/* The Child keeps it: made before the launch, which cannot be undone. */
	if (launch_program(&l) == NULL)
		goto out;
	l.o.detach = detach;
	l.o.ensurestart = ensurestart;
	if (on_start != Py_None) {
		d = PyMem_RawMalloc(sizeof(*d));
		if (d == NULL) {
			PyErr_NoMemory();
			goto out;
		}
		d->callback = Py_NewRef(on_start);
		d->program = Py_NewRef(l.program);
		l.o.on_start = on_start_py;
		l.o.on_start_data = d;
	}
	if (do_spawn(&l, &child) < 0) {
		/* A call that fails never fires its callback. */
		if (d != NULL) {
			Py_DECREF(d->callback);
			Py_DECREF(d->program);
			PyMem_RawFree(d);
		}
		goto out;
	}
	result = child_new(child, l.program);
out:
	launch_release(&l);
	return result;
}

/*
 * hg 6.3's procutil.runbgcommand, argument for argument (its docstring
 * in module.c says where it differs). record_wait's paths follow hg's:
 * record_wait(255) before any error propagates, record_wait(wait) after
 * a confirmed launch that stays in our session.
 */
PyObject *pyb_runbgcommand(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "cmd", "env", "shell", "stdout", "stderr",
		"ensurestart", "record_wait", "stdin_bytes", NULL };
	PyObject *cmd, *env, *shell = Py_False, *out = Py_None, *err = Py_None;
	PyObject *ensure = Py_True, *record_wait = Py_None, *stdin_bytes = Py_None;
	PyObject *child = NULL, *wait = NULL, *r;
	struct bgrun_child *c = NULL;
	struct launch l;
	int sh, ensurestart;
	char *program = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOOOO:runbgcommand", kwlist,
			&cmd, &env, &shell, &out, &err, &ensure, &record_wait,
			&stdin_bytes))
		return NULL;
	if (launch_init(&l) < 0)
		return NULL;
	if ((sh = PyObject_IsTrue(shell)) < 0 ||
	    (ensurestart = PyObject_IsTrue(ensure)) < 0 ||
	    launch_command(&l, cmd, sh) < 0 ||
	    launch_env(&l, env, Py_None, Py_None) < 0 ||
	    pyb_stdio_from(&l.o.out, l.keep, out, 1, false, false) < 0 ||
	    pyb_stdio_from(&l.o.err, l.keep, err, 2, false, false) < 0)
		goto fail;
	if (stdin_bytes != Py_None) {
		if (!PyObject_CheckBuffer(stdin_bytes)) {
			PyErr_SetString(PyExc_TypeError, "stdin_bytes: bytes expected");
			goto fail;
		}
		if (pyb_stdio_from(&l.o.in, l.keep, stdin_bytes, 0, false, false) < 0)
			goto fail;
	}
	if (record_wait != Py_None) {
		/* As hg: not detached, and the launch is confirmed. */
		l.o.detach = false;
		if (launch_program(&l) == NULL || do_spawn(&l, &c) < 0)
			goto fail;
		child = child_new(c, l.program);
		if (child == NULL)
			goto fail;
		wait = PyObject_GetAttrString(child, "wait_returncode");
		Py_DECREF(child);
		if (wait == NULL)
			goto fail;
		r = PyObject_CallOneArg(record_wait, wait);
		Py_DECREF(wait);
		launch_release(&l);
		if (r == NULL)
			return NULL;
		Py_DECREF(r);
		Py_RETURN_NONE;
	}
	if (!ensurestart) {
		/* Queued: the spawner thread records a failure, without the GIL. */
		program = strdup(l.prog);
		if (program == NULL) {
			PyErr_NoMemory();
			goto fail;
		}
		l.o.ensurestart = false;
		l.o.on_start = on_start_record;
		l.o.on_start_data = program;
	}
	if (do_spawn(&l, NULL) < 0) {
		free(program);
		goto fail;
	}
	launch_release(&l);
	Py_RETURN_NONE;

fail:
	launch_release(&l);
	if (record_wait != Py_None) {
		PyObject *type, *value, *tb;

		/* Python 3.11: no PyErr_GetRaisedException yet. */
		PyErr_Fetch(&type, &value, &tb);
		r = PyObject_CallFunction(record_wait, "i", 255);
		if (r == NULL) {
			Py_XDECREF(type);
			Py_XDECREF(value);
			Py_XDECREF(tb);
			return NULL;
		}
		Py_DECREF(r);
		PyErr_Restore(type, value, tb);
	}
	return NULL;
}

int pyb_spawn_types_init(PyObject *m)
{
	/* Status and Rusage: pyb_status_types_ensure, at their first use. */
	if (PyType_Ready(&pyb_child_type) < 0)
		return -1;
	if (PyModule_AddObjectRef(m, "Child", (PyObject *)&pyb_child_type) < 0)
		return -1;
	return 0;
}
