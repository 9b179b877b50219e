/* SPDX-License-Identifier: MIT */
/* module.c: the Python module `bgrun`: its exceptions, the record of failed background launches, its init. */

#include "pybgrun.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

PyObject *pyb_spawn_error;
PyObject *pyb_sink_error;

/*
 * SpawnError's subclasses by errno, each also the builtin OSError
 * subclass Python itself would pick (FileNotFoundError for ENOENT...), so
 * `except FileNotFoundError` catches a missing program as it does with
 * subprocess.
 */
static const struct {
	int error;
	const char *name;
	PyObject **base;
} spawn_kinds[] = {
	{ ENOENT, "bgrun.SpawnFileNotFoundError", &PyExc_FileNotFoundError },
	{ EACCES, "bgrun.SpawnPermissionError", &PyExc_PermissionError },
	{ EPERM, "bgrun.SpawnPermissionError", &PyExc_PermissionError },
	{ ENOTDIR, "bgrun.SpawnNotADirectoryError", &PyExc_NotADirectoryError },
	{ EISDIR, "bgrun.SpawnIsADirectoryError", &PyExc_IsADirectoryError },
	{ ETIMEDOUT, "bgrun.SpawnTimeoutError", &PyExc_TimeoutError },
	{ ECHILD, "bgrun.SpawnChildProcessError", &PyExc_ChildProcessError },
	{ ESRCH, "bgrun.SpawnProcessLookupError", &PyExc_ProcessLookupError },
};
#define N_KINDS (sizeof(spawn_kinds) / sizeof(spawn_kinds[0]))
static PyObject *spawn_kind_types[N_KINDS];

PyObject *pyb_module;

/*
 * The SpawnError subclasses and the Status types are made at their first
 * use (an error, a wait, the module's __getattr__ or __dir__), not at
 * import: hg imports the module for every command, and making a class
 * costs a few microseconds each. 0, or -1 with an exception set.
 */
static int ensure_kinds(void)
{
	if (spawn_kind_types[N_KINDS - 1] != NULL)
		return 0;
	for (size_t i = 0; i < N_KINDS; i++) {
		PyObject *bases;

		if (spawn_kind_types[i] != NULL)
			continue;
		/* EACCES and EPERM share one type. */
		if (i > 0 && strcmp(spawn_kinds[i].name, spawn_kinds[i - 1].name) == 0) {
			spawn_kind_types[i] = spawn_kind_types[i - 1];
			continue;
		}
		bases = PyTuple_Pack(2, pyb_spawn_error, *spawn_kinds[i].base);
		if (bases == NULL)
			return -1;
		spawn_kind_types[i] = PyErr_NewException(spawn_kinds[i].name, bases, NULL);
		Py_DECREF(bases);
		if (spawn_kind_types[i] == NULL ||
		    PyModule_AddObjectRef(pyb_module, strchr(spawn_kinds[i].name, '.') + 1,
					  spawn_kind_types[i]) < 0)
			return -1;
	}
	return 0;
}

static int ensure_lazy(void)
{
	return ensure_kinds() < 0 || pyb_status_types_ensure() < 0 ? -1 : 0;
}

/* Whether name is one of the attributes made at first use. */
static bool lazy_name(const char *name)
{
	if (strcmp(name, "Status") == 0 || strcmp(name, "Rusage") == 0)
		return true;
	for (size_t i = 0; i < N_KINDS; i++)
		if (strcmp(name, strchr(spawn_kinds[i].name, '.') + 1) == 0)
			return true;
	return false;
}

/*
 * PEP 562: the lazy attributes, made when first asked for. Only those:
 * the import machinery itself asks for names a module may lack
 * (__path__, __file__...), which must not make them.
 */
static PyObject *module_getattr(PyObject *self, PyObject *name)
{
	const char *s = PyUnicode_AsUTF8(name);
	PyObject *v;

	if (s == NULL)
		return NULL;
	if (lazy_name(s)) {
		if (ensure_lazy() < 0)
			return NULL;
		v = PyDict_GetItemWithError(PyModule_GetDict(self), name);
		if (v != NULL)
			return Py_NewRef(v);
		if (PyErr_Occurred())
			return NULL;
	}
	PyErr_Format(PyExc_AttributeError, "module 'bgrun' has no attribute '%U'", name);
	return NULL;
}

static PyObject *module_dir(PyObject *self, PyObject *unused)
{
	if (ensure_lazy() < 0)
		return NULL;
	return PyDict_Keys(PyModule_GetDict(self));
}

PyObject *pyb_spawn_exception(int error, enum bgrun_stage stage,
			      const char *program)
{
	PyObject *type = pyb_spawn_error, *exc, *msg, *st;
	int e = error < 0 ? -error : error;

	if (ensure_kinds() < 0)
		return NULL;
	for (size_t i = 0; i < N_KINDS; i++)
		if (spawn_kinds[i].error == e)
			type = spawn_kind_types[i];
	msg = PyUnicode_FromFormat("%s: %s", bgrun_stage_name(stage), strerror(e));
	if (msg == NULL)
		return NULL;
	if (program != NULL) {
		/* As subprocess's: the program as str (os.fsdecode). */
		PyObject *name = PyUnicode_DecodeFSDefault(program);

		exc = name ? PyObject_CallFunction(type, "iOO", e, msg, name) : NULL;
		Py_XDECREF(name);
	} else {
		exc = PyObject_CallFunction(type, "iO", e, msg);
	}
	Py_DECREF(msg);
	if (exc == NULL)
		return NULL;
	st = PyUnicode_FromString(bgrun_stage_name(stage));
	if (st == NULL || PyObject_SetAttrString(exc, "stage", st) < 0) {
		Py_XDECREF(st);
		Py_DECREF(exc);
		return NULL;
	}
	Py_DECREF(st);
	return exc;
}

PyObject *pyb_raise_spawn(int error, const struct bgrun_failure *failure,
			  const char *program)
{
	enum bgrun_stage stage = failure ? failure->stage : BGRUN_STAGE_NONE;
	PyObject *exc = pyb_spawn_exception(error, stage, program);

	if (exc != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/*
 * THREAD SAFETY: failed fire-and-forget launches are recorded by
 * libbgrun's spawner thread, which never takes the GIL (so that it cannot
 * wait on Python), and taken by flush() in a Python thread: a plain mutex.
 * The last FAILURES_MAX are kept; the rest are counted.
 */
#define FAILURES_MAX 64
static struct {
	pthread_mutex_t lock;
	struct {
		char program[256];
		int error;
		enum bgrun_stage stage;
	} v[FAILURES_MAX];
	size_t n;
	uint64_t dropped;
} failures = { .lock = PTHREAD_MUTEX_INITIALIZER };

void pyb_failures_record(const char *program, int error,
			 const struct bgrun_failure *failure)
{
	pthread_mutex_lock(&failures.lock);
	if (failures.n == FAILURES_MAX) {
		memmove(&failures.v[0], &failures.v[1],
			(FAILURES_MAX - 1) * sizeof(failures.v[0]));
		failures.n--;
		failures.dropped++;
	}
	(void)snprintf(failures.v[failures.n].program,
		       sizeof(failures.v[0].program), "%s", program ? program : "");
	failures.v[failures.n].error = error;
	failures.v[failures.n].stage = failure ? failure->stage : BGRUN_STAGE_NONE;
	failures.n++;
	pthread_mutex_unlock(&failures.lock);
}

PyObject *pyb_failures_take(void)
{
	PyObject *list = PyList_New(0);
	size_t n;
	uint64_t dropped;
	__typeof__(failures.v[0]) *copy;

	if (list == NULL)
		return NULL;
	copy = PyMem_Malloc(sizeof(failures.v));
	if (copy == NULL) {
		Py_DECREF(list);
		return PyErr_NoMemory();
	}
	pthread_mutex_lock(&failures.lock);
	n = failures.n;
	dropped = failures.dropped;
	memcpy(copy, failures.v, n * sizeof(copy[0]));
	failures.n = 0;
	failures.dropped = 0;
	pthread_mutex_unlock(&failures.lock);
	for (size_t i = 0; i < n; i++) {
		PyObject *e = pyb_spawn_exception(copy[i].error, copy[i].stage,
						  copy[i].program);

		if (e == NULL || PyList_Append(list, e) < 0) {
			Py_XDECREF(e);
			Py_CLEAR(list);
			break;
		}
		Py_DECREF(e);
	}
	PyMem_Free(copy);
	if (list != NULL && dropped > 0) {
		/* Older ones were not kept: say how many, as a warning. */
		if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
				     "bgrun: %llu older failed launches were not kept",
				     (unsigned long long)dropped) < 0)
			Py_CLEAR(list);
	}
	return list;
}

PyObject *pyb_flush(PyObject *self, PyObject *unused)
{
	Py_BEGIN_ALLOW_THREADS
	bgrun_spawn_flush();
	Py_END_ALLOW_THREADS
	return pyb_failures_take();
}

/*
 * At interpreter exit, before finalisation: queued launches happen (a
 * short-lived program would otherwise lose them), on_start callbacks run
 * while Python can still run them, and failures nobody collected are
 * printed, one line each, instead of vanishing.
 */
static PyObject *atexit_flush(PyObject *self, PyObject *unused)
{
	PyObject *list = pyb_flush(self, NULL);

	if (list == NULL) {
		PyErr_WriteUnraisable(self);
		Py_RETURN_NONE;
	}
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
		PyObject *s = PyObject_Str(PyList_GET_ITEM(list, i));

		if (s != NULL)
			PySys_FormatStderr("bgrun: background launch failed: %S\n", s);
		Py_XDECREF(s);
		PyErr_Clear();
	}
	Py_DECREF(list);
	Py_RETURN_NONE;
}

static PyObject *version(PyObject *self, PyObject *unused)
{
	return PyUnicode_FromString(BGRUN_VERSION);
}

PyDoc_STRVAR(spawn_doc,
"spawn(argv_or_script, *, shell=False, env=None, env_set=None, env_unset=None,\n"
"      cwd=None, stdin=None, stdout=None, stderr=None, append=False,\n"
"      ensurestart=True, detach=True, on_start=None) -> Child\n"
"\n"
"Launches a command with libbgrun's primitive (posix_spawn: the cost does\n"
"not grow with the caller's memory). argv_or_script is a sequence of\n"
"str/bytes/os.PathLike (argv[0] searched in the child's PATH), or one\n"
"such string; with shell=True it is a script for /bin/sh -c.\n"
"\n"
"env: None (this process's environment) or a mapping giving exactly the\n"
"child's; env_set (mapping) and env_unset (names) apply on top. cwd: the\n"
"child's working directory. stdin: None or DEVNULL (/dev/null), INHERIT,\n"
"a descriptor, an object with fileno(), a path (str or os.PathLike), or\n"
"bytes-like data fed to it. stdout, stderr: the same without data, paths\n"
"may be bytes, opened truncated (append=True: appended); stderr may be\n"
"STDOUT. PIPE is refused. Every other descriptor is closed in the child.\n"
"\n"
"detach (default): the child leads a new session and outlives us.\n"
"ensurestart (default): returns once the program was executed; a failure\n"
"raises SpawnError (an OSError: errno, strerror, filename, stage). With\n"
"ensurestart=False the launch is queued and spawn() returns at once:\n"
"on_start(pid_or_error), if given, is called from a library thread with\n"
"the pid or the SpawnError, and Child.pid waits for the outcome.\n"
"\n"
"The Child must be kept to wait for the child; when it is dropped the\n"
"library reaps the child: never a zombie. The GIL is released while the\n"
"launch blocks.");

PyDoc_STRVAR(runbgcommand_doc,
"runbgcommand(cmd, env, shell=False, stdout=None, stderr=None,\n"
"             ensurestart=True, record_wait=None, stdin_bytes=None) -> None\n"
"\n"
"Mercurial's procutil.runbgcommand (hg 6.3) on libbgrun's primitive, with\n"
"the same signature and the same observable child: cmd is bytes or a list\n"
"of bytes (shell=True: a script for /bin/sh -c), env the child's whole\n"
"environment (bytes or str; None: ours), stdout/stderr None (/dev/null),\n"
"a descriptor or a file object, stdin_bytes data fed to stdin, every\n"
"other descriptor closed.\n"
"\n"
"Where it differs from hg 6.3, on purpose: no shell unless shell=True (hg\n"
"runs `/bin/sh -c '( CMD ) &'`); with ensurestart=True an exec failure\n"
"raises SpawnError (hg's shell swallowed it); with ensurestart=False the\n"
"call only queues the launch and a failure is recorded, returned by\n"
"flush() (and printed at exit if nobody took it); children are reaped,\n"
"never left as zombies.\n"
"\n"
"record_wait, as in hg: the child is then not detached (it stays in our\n"
"session), the launch is confirmed, and record_wait is called with a\n"
"function that waits for the child and returns its exit code (-N for\n"
"signal N, as Popen.wait); if the launch fails, record_wait(255) is\n"
"called before the error is raised.");

PyDoc_STRVAR(flush_doc,
"flush() -> list[SpawnError]\n"
"\n"
"Waits (GIL released) until every launch queued with ensurestart=False\n"
"has happened and its on_start callback returned, then returns the\n"
"failures of launches that had no Child and no on_start (runbgcommand's),\n"
"oldest first, and forgets them. Called at interpreter exit too.");

PyDoc_STRVAR(log_doc,
"log(event, **fields) -> str\n"
"\n"
"Records one event through the sink as `logsink send` does, in-process:\n"
"through the daemon when it answers, else into the store, else into the\n"
"spool; returns the event's id. Uses a module-wide Sink() (the\n"
"environment's BGRUN_DB, BGRUN_SOCKET, BGRUN_SINK). See Sink.put for the\n"
"fields. Raises SinkError (an OSError, with .spooled) if not stored.");

PyDoc_STRVAR(query_doc,
"query(db=None, *, source=None, event=None, cwd=None, tag=None, result=None,\n"
"      cmd_glob=None, failed=False, since=None, until=None, limit=0) -> list[dict]\n"
"\n"
"The events matching every condition given, newest first, as `logsink\n"
"query` reads them: each a dict of the row's columns (argv as its JSON\n"
"array, options as an object, result as reported: `lost` for a running\n"
"row whose supervisor vanished). db: None for the default store. since,\n"
"until: time.time() values. The store is opened read-only (never made);\n"
"a missing one is FileNotFoundError. The GIL is released while it reads.");

PyDoc_STRVAR(stats_doc,
"stats(db=None, *, <the conditions of query()>) -> list[dict]\n"
"\n"
"Per command (display) among the matching events, as `logsink stats`:\n"
"display, runs, failures, p50_ns, p95_ns, max_ns (nearest rank; None\n"
"when no duration is known). limit is ignored.");

static PyMethodDef methods[] = {
	{ "spawn", (PyCFunction)(void (*)(void))pyb_spawn,
	  METH_VARARGS | METH_KEYWORDS, spawn_doc },
	{ "runbgcommand", (PyCFunction)(void (*)(void))pyb_runbgcommand,
	  METH_VARARGS | METH_KEYWORDS, runbgcommand_doc },
	{ "flush", pyb_flush, METH_NOARGS, flush_doc },
	{ "log", (PyCFunction)(void (*)(void))pyb_log,
	  METH_VARARGS | METH_KEYWORDS, log_doc },
	{ "query", (PyCFunction)(void (*)(void))pyb_query,
	  METH_VARARGS | METH_KEYWORDS, query_doc },
	{ "stats", (PyCFunction)(void (*)(void))pyb_stats,
	  METH_VARARGS | METH_KEYWORDS, stats_doc },
	{ "_atexit", atexit_flush, METH_NOARGS, NULL },
	{ "_libversion", version, METH_NOARGS, "libbgrun's version string." },
	{ "__getattr__", module_getattr, METH_O, NULL },
	{ "__dir__", module_dir, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyDoc_STRVAR(module_doc,
"bgrun: libbgrun's runbgcommand primitive and event sink for Python.\n"
"\n"
"spawn() launches a command detached, on posix_spawn, whatever this\n"
"process's size; runbgcommand() is Mercurial's procutil.runbgcommand on\n"
"it; log() and Sink record events (commandfinish...) in-process through\n"
"the sink daemon, the store or the spool; query() and stats() read the\n"
"store back. Importing it loads libbgrun alone: libbgrun-store, and\n"
"SQLite, only when the store is first needed (a put the daemon did not\n"
"take, query(), stats()). Every blocking call releases\n"
"the GIL. Errors are OSError subclasses: SpawnError (with .stage, the\n"
"step that failed: arguments, setup, cwd, stdin, stdout, stderr, exec)\n"
"and SinkError (with .spooled).");

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "bgrun", module_doc, -1, methods,
	NULL, NULL, NULL, NULL,
};

static int add_exceptions(PyObject *m)
{
	PyObject *dict;

	dict = Py_BuildValue("{s:s}", "__doc__",
		"A launch failed: errno, strerror, filename (the program) and\n"
		"stage (the step that failed: arguments, setup, cwd, stdin,\n"
		"stdout, stderr, exec).");
	if (dict == NULL)
		return -1;
	pyb_spawn_error = PyErr_NewException("bgrun.SpawnError", PyExc_OSError, dict);
	Py_DECREF(dict);
	if (pyb_spawn_error == NULL || PyModule_AddObjectRef(m, "SpawnError", pyb_spawn_error) < 0)
		return -1;
	/* Its subclasses: ensure_kinds. */
	dict = Py_BuildValue("{s:s}", "__doc__",
		"An event was not stored: errno, strerror (the sink's reason),\n"
		"spooled (True: kept in the spool, to be stored later) and\n"
		"event_id.");
	if (dict == NULL)
		return -1;
	pyb_sink_error = PyErr_NewException("bgrun.SinkError", PyExc_OSError, dict);
	Py_DECREF(dict);
	if (pyb_sink_error == NULL || PyModule_AddObjectRef(m, "SinkError", pyb_sink_error) < 0)
		return -1;
	return 0;
}

static int register_atexit(PyObject *m)
{
	PyObject *atexit = PyImport_ImportModule("atexit"), *fn, *r;

	if (atexit == NULL)
		return -1;
	fn = PyObject_GetAttrString(m, "_atexit");
	r = fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
	Py_XDECREF(fn);
	Py_DECREF(atexit);
	Py_XDECREF(r);
	return r == NULL ? -1 : 0;
}

/* The one symbol the module exports (-Wmissing-prototypes wants it declared). */
PyMODINIT_FUNC PyInit_bgrun(void);

PyMODINIT_FUNC PyInit_bgrun(void)
{
	PyObject *m = PyModule_Create(&moduledef);

	if (m == NULL)
		return NULL;
	/* Borrowed: a single-phase module lives as long as the process. */
	pyb_module = m;
	if (add_exceptions(m) < 0 || pyb_spawn_types_init(m) < 0 ||
	    pyb_sink_types_init(m) < 0 ||
	    PyModule_AddIntConstant(m, "STDOUT", PYB_STDOUT) < 0 ||
	    PyModule_AddIntConstant(m, "DEVNULL", PYB_DEVNULL) < 0 ||
	    PyModule_AddIntConstant(m, "INHERIT", PYB_INHERIT) < 0 ||
	    PyModule_AddIntConstant(m, "PIPE", PYB_PIPE) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", BGRUN_VERSION) < 0 ||
	    register_atexit(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
