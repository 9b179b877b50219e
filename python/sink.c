/* SPDX-License-Identifier: MIT */
/* sink.c: bgrun.Sink and bgrun.log(): events recorded in-process, through the daemon (libbgrun), else the store or the spool (libbgrun-store, loaded then). */

#include "pybgrun.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * A put tries the daemon with libbgrun alone (bgrun_sink_put_daemon), and
 * only when that fails hands the event to libbgrun-store's
 * bgrun_sink_put, which tries the daemon once more, then the store, then
 * the spool (the same event id: never a second row). So a process whose
 * daemon answers never loads SQLite (storeapi.c says what that saves).
 *
 * The sink lives in a core that the Python object and each thread of
 * ours working on it (connect-ahead, send) hold a reference to: the last
 * one to let go closes the sink. So dropping the object never waits for
 * a thread, and a thread never touches a freed object.
 */
struct sinkcore {
	struct bgrun_sink *sink; /* NULL once closed */
	/*
	 * THREAD SAFETY: a sink serves one thread at a time (sink.h): this
	 * lock is held around every call on it.
	 */
	PyThread_type_lock lock;
	bool daemon_only; /* mode 'daemon': connecting never opens the store */
	pid_t pid;        /* the process that made it (see bg_atfork_child) */
	uint64_t serial;  /* names its failures in bg.failed */
	int via;          /* lock: the last stored put's or send's BGRUN_SINK_VIA_*, or 0 */
	bool reports;     /* bg.lock: flush() returned a lost event: the program says them */
	int refs;         /* bg.lock */
	int sending;      /* bg.lock: sends under way in threads */
	/*
	 * lock: events posted to the daemon (bgrun_sink_post) since the last
	 * settle; bg.lock: whether bg.posted holds the core (and a reference).
	 */
	uint64_t posted;
	bool fell_back;     /* lock: a settle put an event another way */
	bool listed;
	struct sinkcore *next_posted; /* bg.lock */
};

typedef struct {
	PyObject_HEAD
	struct sinkcore *core;
} SinkObject;

/* Posts of a sink after which the next one settles them first. */
#define SETTLE_EVERY 64

/* A send that was not stored, until flush() takes it or the process exits. */
#define FAILED_MAX 256
struct send_failure {
	struct send_failure *next;
	uint64_t serial;
	int error;
	bool spooled;
	bool quiet; /* its sink's program reports failures itself: not said at exit */
	char id[BGRUN_EVENT_ID_MAX + 1];
	char msg[640];
};

/*
 * Our threads, all sinks together. THREAD SAFETY: bg.lock guards every
 * field, and each core's refs and sending; cond is signalled when a
 * thread is done.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running;
	uint64_t serial;
	/* At most FAILED_MAX kept (a server with a broken sink); the rest counted. */
	struct send_failure *failed, **tail;
	int n_failed;
	uint64_t n_dropped;
	bool atexit_set;
	/* The cores with posts to settle at exit, each holding a reference. */
	struct sinkcore *posted;
} bg = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.tail = &bg.failed,
};

/*
 * In a forked child our threads are gone and the parent's cores are the
 * parent's: nothing runs, nothing of theirs is waited for or closed.
 */
static void bg_atfork_child(void)
{
	(void)pthread_mutex_init(&bg.lock, NULL);
	(void)pthread_cond_init(&bg.cond, NULL);
	bg.running = 0;
	bg.failed = NULL;
	bg.tail = &bg.failed;
	bg.n_failed = 0;
	bg.n_dropped = 0;
	/* The parent's posts are the parent's to settle (its connection). */
	bg.posted = NULL;
}

/*
 * A fork waits for our threads first (at most FORK_WAIT_S): one may be
 * inside SQLite with the log's locks taken, and the child would inherit
 * SQLite's record of them (its unix VFS keeps the locks of each file per
 * process): a connection the child opens to the same log then waits on
 * locks no process holds, with the log's write lock taken, while the
 * parent's thread waits behind it. Our threads never take the GIL, so a
 * thread that forks holding it does not stop them. The bound is the
 * store's own lock bound: past it, the fork goes on as before. (The
 * store's checkpoint thread, which runs after a send has returned, is
 * waited for by libbgrun-store itself: src/store/store-checkpoint.c,
 * "Fork safety".)
 */
#define FORK_WAIT_S 10

static void bg_atfork_prepare(void)
{
	struct timespec until;

	(void)clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FORK_WAIT_S;
	pthread_mutex_lock(&bg.lock);
	while (bg.running > 0)
		if (pthread_cond_timedwait(&bg.cond, &bg.lock, &until) == ETIMEDOUT)
			break;
}

static void bg_atfork_parent(void)
{
	pthread_mutex_unlock(&bg.lock);
}

static void bg_atfork_once(void)
{
	(void)pthread_atfork(bg_atfork_prepare, bg_atfork_parent, bg_atfork_child);
}

static struct sinkcore *core_new(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct sinkcore *c = calloc(1, sizeof(*c));

	(void)pthread_once(&once, bg_atfork_once);
	if (c == NULL)
		return NULL;
	c->lock = PyThread_allocate_lock();
	if (c->lock == NULL) {
		free(c);
		return NULL;
	}
	c->pid = getpid();
	c->refs = 1;
	pthread_mutex_lock(&bg.lock);
	c->serial = ++bg.serial;
	pthread_mutex_unlock(&bg.lock);
	return c;
}

static void core_ref(struct sinkcore *c, bool send)
{
	pthread_mutex_lock(&bg.lock);
	c->refs++;
	bg.running++;
	if (send)
		c->sending++;
	pthread_mutex_unlock(&bg.lock);
}

/* The object's reference (thread: false), or a thread's when it is done. */
static void core_unref(struct sinkcore *c, bool thread, bool send)
{
	int refs;

	if (c == NULL)
		return;
	pthread_mutex_lock(&bg.lock);
	refs = --c->refs;
	if (thread)
		bg.running--;
	if (send)
		c->sending--;
	if (thread)
		(void)pthread_cond_broadcast(&bg.cond);
	pthread_mutex_unlock(&bg.lock);
	if (refs > 0)
		return;
	/* A parent's sink in a forked child: its lock may be held, its store is not ours. */
	if (c->pid != getpid())
		return;
	bgrun_sink_close(c->sink);
	PyThread_free_lock(c->lock);
	free(c);
}

/* Waits (no GIL) until no send of c is under way; not for a parent's core. */
static void core_wait_sends(struct sinkcore *c)
{
	pthread_mutex_lock(&bg.lock);
	while (c->sending > 0 && c->pid == getpid())
		(void)pthread_cond_wait(&bg.cond, &bg.lock);
	pthread_mutex_unlock(&bg.lock);
}

/* A thread of ours: detached, with every signal blocked (they are the program's). */
static int start_thread(void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int r;

	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, &attr, fn, arg);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	return -r;
}

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
	struct sinkcore *core;
	struct bgrun_sink *s;
	bool daemon_only;
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
	/* As bgrun_sink_open reads it (an invalid one fails there). */
	if (mode == NULL || o.mode == BGRUN_SINK_ENV) {
		const char *env = getenv("BGRUN_SINK");

		daemon_only = env != NULL && strcmp(env, "daemon") == 0;
	} else {
		daemon_only = o.mode == BGRUN_SINK_DAEMON;
	}
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
	core = core_new();
	if (core == NULL) {
		bgrun_sink_close(s);
		PyErr_NoMemory();
		r = -1;
		goto out;
	}
	core->sink = s;
	core->daemon_only = daemon_only;
	/* __init__ again: the old core goes when its threads are done. */
	core_unref(self->core, false, false);
	self->core = core;
	r = 0;
out:
	Py_DECREF(keep);
	return r;
}

static void sink_dealloc(SinkObject *self)
{
	/* Threads still at work keep the core: the last one closes it. */
	core_unref(self->core, false, false);
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

/*
 * An option's value as logtoprocess puts it in the hook's environment
 * (procutil.shellenviron): None and False '0', True '1', bytes as they
 * are, anything else as pycompat.bytestr makes it (str(), in ASCII).
 */
static const char *hg_optvalue(PyObject *keep, PyObject *v)
{
	PyObject *b, *s;

	if (v == Py_None || v == Py_False)
		return "0";
	if (v == Py_True)
		return "1";
	if (PyBytes_Check(v))
		return text_field(keep, v, "options");
	/*
	 * An int, a float or a str (the return code, the duration) has no
	 * __bytes__, so str() at once: asking it for one raises and clears
	 * an AttributeError, its message formatted first.
	 */
	if (!PyLong_CheckExact(v) && !PyFloat_CheckExact(v) &&
	    !PyUnicode_CheckExact(v) &&
	    (PyByteArray_Check(v) || PyObject_HasAttrString(v, "__bytes__"))) {
		b = PyObject_Bytes(v);
	} else {
		s = PyObject_Str(v);
		if (s == NULL)
			return NULL;
		b = PyUnicode_AsASCIIString(s);
		Py_DECREF(s);
	}
	if (b == NULL)
		return NULL;
	if (strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b)) {
		PyErr_SetString(PyExc_ValueError, "options: embedded NUL byte");
		Py_DECREF(b);
		return NULL;
	}
	return pyb_keep_bytes(keep, b);
}

/*
 * options={...}: NAME, VALUE pairs for the store's json_object(), values
 * as text. hg: a ui.log logger's opts, named as pycompat.sysstr names
 * them (bytes read as Latin-1), valued as hg_optvalue says.
 */
static int options_field(PyObject *keep, struct pyb_strv *kv, PyObject *map, bool hg)
{
	PyObject *items = PyMapping_Items(map);
	int r = -1;

	if (items == NULL)
		return -1;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
		PyObject *k = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 0);
		PyObject *v = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1), *s = NULL;
		const char *ks, *vs;

		if (hg && PyBytes_Check(k)) {
			s = PyUnicode_DecodeLatin1(PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), NULL);
			if (s == NULL)
				goto out;
			k = s;
		}
		ks = text_field(keep, k, "options");
		Py_CLEAR(s);
		if (ks == NULL)
			goto out;
		if (hg) {
			vs = hg_optvalue(keep, v);
		} else {
			if (!PyUnicode_Check(v) && !PyBytes_Check(v)) {
				s = PyObject_Str(v);
				if (s == NULL)
					goto out;
				v = s;
			}
			vs = text_field(keep, v, "options");
			Py_XDECREF(s);
		}
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
		if (options_field(p->keep, &p->kv, v, false) < 0)
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

/*
 * One put, with the GIL released and the sink's lock held: the daemon
 * first, else libbgrun-store's whole path. *no_store is set (to why)
 * when that library could not be loaded: the event is then neither
 * stored nor spooled.
 */
static int put_locked(struct bgrun_sink *s, const struct bgrun_event *ev,
		      const char **no_store)
{
	const struct pyb_store_api *api;
	int r = bgrun_sink_put_daemon(s, ev);

	/* -EINVAL: an event no store would take (or a sink not open). */
	if (r >= 0 || r == -EINVAL)
		return r;
	api = pyb_store_api(no_store);
	return api != NULL ? api->sink_put(s, ev) : r;
}

/* The one line saying why a put failed (the sink's lock held). */
static void failure_text(struct bgrun_sink *s, const char *no_store, char *buf, size_t size)
{
	if (no_store != NULL)
		(void)snprintf(buf, size, "%s; and the event store's library could "
			       "not be loaded: %s (not kept)", bgrun_sink_errmsg(s), no_store);
	else
		(void)snprintf(buf, size, "%s", bgrun_sink_errmsg(s));
}

static PyObject *make_sink_error(int r, const char *text, bool spooled, const char *id)
{
	PyObject *exc, *msg;

	msg = PyUnicode_DecodeUTF8(text, strlen(text), "replace");
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
	return exc;
}

static void raise_sink_error(int r, const char *text, bool spooled, const char *id)
{
	PyObject *exc = make_sink_error(r, text, spooled, id);

	if (exc != NULL) {
		PyErr_SetObject(pyb_sink_error, exc);
		Py_DECREF(exc);
	}
}

static struct sinkcore *core_of(SinkObject *self)
{
	if (self->core == NULL) {
		PyErr_SetString(PyExc_ValueError, "the sink is not initialised");
		return NULL;
	}
	/*
	 * Its connection and store are the parent's (and a thread of the
	 * parent's may have held its lock at the fork, which would then
	 * never be let go of here).
	 */
	if (self->core->pid != getpid()) {
		PyErr_SetString(PyExc_ValueError,
				"the sink was made by the parent process: make one in this one");
		return NULL;
	}
	return self->core;
}

/* The event of put() or send(), its strings kept in p; NULL: an error set. */
/*
 * A struct put for an event called ev_name (kept alive by its keep list,
 * which the caller made), initialised as put() (named: the user and the
 * boot filled in) or send() leaves it, in the caller's working directory.
 */
static struct put *new_put(PyObject *keep, PyObject *event, bool named)
{
	const char *ev_name;
	struct put *p;

	/* PATH_MAX of cwd: not on the stack of a thread that may be small. */
	p = PyMem_Calloc(1, sizeof(*p));
	if (p == NULL) {
		Py_DECREF(keep);
		PyErr_NoMemory();
		return NULL;
	}
	p->keep = keep;
	ev_name = text_field(p->keep, event, "event");
	if (ev_name == NULL) {
		Py_DECREF(keep);
		PyMem_Free(p);
		return NULL;
	}
	/*
	 * send() leaves the user and the boot id to the daemon (it knows
	 * them better); the other paths fill them in when they take the
	 * event (bgrun_event_complete).
	 */
	if (named)
		bgrun_event_init(&p->ev, ev_name, "python");
	else
		bgrun_event_init_lean(&p->ev, ev_name, "python");
	/* As `logsink send`: the writer's working directory. */
	if (getcwd(p->cwd, sizeof(p->cwd)) != NULL)
		p->ev.cwd = p->cwd;
	return p;
}

static struct put *make_event(PyObject *args, PyObject *kw, const char *format,
			      bool named)
{
	PyObject *event, *key, *value, *keep;
	Py_ssize_t pos = 0;
	struct put *p;

	if (!PyArg_ParseTuple(args, format, &event))
		return NULL;
	if ((keep = PyList_New(0)) == NULL || (p = new_put(keep, event, named)) == NULL)
		return NULL;
	while (kw != NULL && PyDict_Next(kw, &pos, &key, &value))
		if (put_field(p, key, value) < 0)
			goto fail;
	return p;
fail:
	pyb_strv_free(&p->argv);
	pyb_strv_free(&p->kv);
	Py_XDECREF(p->keep);
	PyMem_Free(p);
	return NULL;
}

static void free_event(struct put *p)
{
	pyb_strv_free(&p->argv);
	pyb_strv_free(&p->kv);
	Py_XDECREF(p->keep);
	PyMem_Free(p);
}

/* put() of an event made: its id, or NULL with an exception set. */
/*
 * One put with c's lock held, as put_locked: the path it took is kept as
 * c's via; for a failure, text gets why and *spooled whether the event
 * is in the spool (text stays "" when the sink is closed: -EBADF).
 */
static int core_put(struct sinkcore *c, const struct bgrun_event *ev,
		    char *text, size_t size, bool *spooled)
{
	const char *no_store = NULL;
	int r;

	if (c->sink == NULL)
		return -EBADF;
	r = put_locked(c->sink, ev, &no_store);
	if (r > 0) {
		__atomic_store_n(&c->via, r, __ATOMIC_RELAXED);
		return r;
	}
	failure_text(c->sink, no_store, text, size);
	*spooled = no_store == NULL && bgrun_sink_spooled(c->sink);
	return r;
}

static PyObject *put_event(SinkObject *self, struct sinkcore *c, struct put *p)
{
	char text[640] = "";
	bool spooled = false;
	int r;

	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	r = core_put(c, &p->ev, text, sizeof(text), &spooled);
	PyThread_release_lock(c->lock);
	Py_END_ALLOW_THREADS
	if (r == -EBADF && text[0] == '\0') {
		PyErr_SetString(PyExc_ValueError, "the sink is closed");
		return NULL;
	}
	if (r < 0) {
		raise_sink_error(r, text, spooled, p->ev.id);
		return NULL;
	}
	return PyUnicode_FromString(p->ev.id);
}

static PyObject *sink_put(SinkObject *self, PyObject *args, PyObject *kw)
{
	struct sinkcore *c = core_of(self);
	PyObject *result;
	struct put *p;

	if (c == NULL || (p = make_event(args, kw, "U:put", true)) == NULL)
		return NULL;
	result = put_event(self, c, p);
	free_event(p);
	return result;
}

/* --- send(): the put in a thread of ours, waited for at exit --- */

struct send_job {
	struct sinkcore *core;
	struct bgrun_wire_buf frame; /* the event, encoded: a copy of its own */
};

/*
 * At exit(), after Python's finalisation (hg's takes milliseconds: the
 * ack has come by then), and never in a process that ends with _exit():
 * the sends still under way are waited for, and those that no path
 * stored are reported, once, on stderr (the interpreter is gone).
 */
static void settle_all(void);

static void bg_atexit(void)
{
	struct send_failure *f;
	int lost = 0;

	settle_all();
	pthread_mutex_lock(&bg.lock);
	while (bg.running > 0)
		(void)pthread_cond_wait(&bg.cond, &bg.lock);
	for (f = bg.failed; f != NULL; f = f->next)
		lost += !f->spooled && !f->quiet;
	for (f = bg.failed; f != NULL && lost > 0; f = f->next) {
		if (f->spooled || f->quiet)
			continue;
		(void)fprintf(stderr, "bgrun: event not recorded: %s (event %s%s)\n",
			      f->msg, f->id, lost > 1 || bg.n_dropped > 0 ? ", and more" : "");
		break;
	}
	if (lost == 0 && bg.n_dropped > 0)
		(void)fprintf(stderr, "bgrun: %llu events not recorded or spooled "
			      "(their failures were not kept)\n",
			      (unsigned long long)bg.n_dropped);
	pthread_mutex_unlock(&bg.lock);
}

/*
 * A failure of c's that no path stored (c's lock held): kept for flush()
 * or the report at exit; counted when it cannot be kept.
 */
static void keep_failure(struct sinkcore *c, int error, const char *id,
			 const char *text, bool spooled)
{
	struct send_failure *f = calloc(1, sizeof(*f));

	if (f != NULL) {
		f->serial = c->serial;
		f->error = error;
		f->spooled = spooled;
		(void)snprintf(f->id, sizeof(f->id), "%s", id);
		(void)snprintf(f->msg, sizeof(f->msg), "%s", text);
	}
	pthread_mutex_lock(&bg.lock);
	if (f != NULL && bg.n_failed < FAILED_MAX) {
		f->quiet = c->reports;
		*bg.tail = f;
		bg.tail = &f->next;
		bg.n_failed++;
		f = NULL;
	} else {
		bg.n_dropped++;
	}
	pthread_mutex_unlock(&bg.lock);
	free(f);
}

/* A put of ev with c's lock held; a failure is kept (keep_failure). */
static void put_or_keep(struct sinkcore *c, struct bgrun_event *ev)
{
	char text[640] = "";
	bool spooled = false;
	int r;

	bgrun_event_complete(ev);
	r = core_put(c, ev, text, sizeof(text), &spooled);
	if (r == -EBADF && text[0] == '\0')
		keep_failure(c, r, ev->id, "the sink was closed", false);
	else if (r < 0)
		keep_failure(c, r, ev->id, text, spooled);
}

static void *send_main(void *arg)
{
	struct send_job *job = arg;
	struct sinkcore *c = job->core;
	struct bgrun_wire_msg m = { 0 };
	size_t size = 0;
	int r;

	r = bgrun_wire_frame_size(job->frame.data, job->frame.len,
				  BGRUN_WIRE_MAX_FRAME, &size);
	if (r > 0)
		r = bgrun_wire_decode(job->frame.data, size, &m, NULL);
	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	if (r >= 0)
		put_or_keep(c, &m.ev);
	else
		keep_failure(c, r, "?", "the event could not be read back", false);
	PyThread_release_lock(c->lock);
	bgrun_wire_msg_release(&m);
	bgrun_wire_buf_free(&job->frame);
	free(job);
	core_unref(c, true, true);
	return NULL;
}

/* bgrun_sink_settle's: a posted event the daemon did not commit (c's lock held). */
static void on_unsettled(void *ctx, const struct bgrun_event *ev, int error,
			 const char *why)
{
	struct sinkcore *c = ctx;
	struct bgrun_event e;

	if (ev == NULL || error == -EINVAL) {
		/* Refused as invalid: no store would take it either. */
		keep_failure(c, error, ev != NULL ? ev->id : "?", why, false);
		return;
	}
	/* The other paths, as a put: the same id, never a second row. */
	e = *ev;
	put_or_keep(c, &e);
	c->fell_back = true;
}

/* core_settle's work, c's lock held (c stays listed). */
static void core_settle_locked(struct sinkcore *c)
{
	int n;

	if (c->sink == NULL || c->posted == 0)
		return;
	c->fell_back = false;
	n = bgrun_sink_settle(c->sink, on_unsettled, c);
	if (n >= 0 && (uint64_t)n < c->posted && !c->fell_back)
		__atomic_store_n(&c->via, BGRUN_SINK_VIA_DAEMON, __ATOMIC_RELAXED);
	c->posted = 0;
}

/*
 * Waits (no GIL) for the daemon's answers to c's posts; those it did not
 * commit go to the other paths, or are kept as failures.
 */
static void core_settle(struct sinkcore *c)
{
	struct sinkcore **pp;
	bool listed;

	pthread_mutex_lock(&bg.lock);
	listed = c->listed;
	for (pp = &bg.posted; listed && *pp != NULL; pp = &(*pp)->next_posted) {
		if (*pp == c) {
			*pp = c->next_posted;
			break;
		}
	}
	c->listed = false;
	pthread_mutex_unlock(&bg.lock);
	if (!listed)
		return;
	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	core_settle_locked(c);
	PyThread_release_lock(c->lock);
	core_unref(c, false, false);
}

/* Every core's posts, at exit. */
static void settle_all(void)
{
	struct sinkcore *c;

	for (;;) {
		pthread_mutex_lock(&bg.lock);
		c = bg.posted;
		pthread_mutex_unlock(&bg.lock);
		if (c == NULL)
			return;
		core_settle(c);
	}
}

/*
 * The event to the daemon without a thread (bgrun_sink_post), GIL
 * released: 0 once posted (c then listed for the settle at exit), or
 * -errno (not posted: the caller takes the thread's way).
 */
static int post_event(struct sinkcore *c, const struct bgrun_event *ev)
{
	int r;

	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	/*
	 * A long-lived poster (hg serve) settles as it goes: what the daemon
	 * did not commit goes the other ways now, not at exit, and no more
	 * than this many frames are kept.
	 */
	if (c->posted >= SETTLE_EVERY)
		core_settle_locked(c);
	r = c->sink == NULL ? -EBADF : bgrun_sink_post(c->sink, ev);
	if (r == 0)
		c->posted++;
	PyThread_release_lock(c->lock);
	if (r < 0)
		return r;
	pthread_mutex_lock(&bg.lock);
	if (!c->listed) {
		c->listed = true;
		c->refs++;
		c->next_posted = bg.posted;
		bg.posted = c;
	}
	pthread_mutex_unlock(&bg.lock);
	return 0;
}

/* send() of an event made (which it frees): its id, or NULL with an exception set. */
static PyObject *send_event(SinkObject *self, struct sinkcore *c, struct put *p)
{
	struct send_job *job = NULL;
	PyObject *result;
	int r;

	if (c->sink == NULL) {
		PyErr_SetString(PyExc_ValueError, "the sink is closed");
		free_event(p);
		return NULL;
	}
	pthread_mutex_lock(&bg.lock);
	if (!bg.atexit_set)
		bg.atexit_set = atexit(bg_atexit) == 0;
	r = bg.atexit_set ? 0 : -ENOMEM;
	pthread_mutex_unlock(&bg.lock);
	/*
	 * The daemon first, with no thread: the frame is written, its ack
	 * read later (the next post, flush(), close, or exit).
	 */
	if (r >= 0) {
		Py_BEGIN_ALLOW_THREADS
		r = post_event(c, &p->ev);
		Py_END_ALLOW_THREADS
		if (r >= 0) {
			result = PyUnicode_FromString(p->ev.id);
			free_event(p);
			return result;
		}
		/* Not posted (no daemon): the thread's way, which says. */
		r = 0;
	}
	job = r < 0 ? NULL : calloc(1, sizeof(*job));
	r = job == NULL ? -ENOMEM : bgrun_wire_put_event(&job->frame, 1, &p->ev);
	if (r >= 0) {
		job->core = c;
		core_ref(c, true);
		r = start_thread(send_main, job);
		if (r < 0)
			core_unref(c, true, true);
	}
	if (r < 0) {
		/* No thread (or an event no frame holds): put() here, which says. */
		if (job != NULL)
			bgrun_wire_buf_free(&job->frame);
		free(job);
		bgrun_event_complete(&p->ev);
		result = put_event(self, c, p);
	} else {
		result = PyUnicode_FromString(p->ev.id);
	}
	free_event(p);
	return result;
}

static PyObject *sink_send(SinkObject *self, PyObject *args, PyObject *kw)
{
	struct sinkcore *c = core_of(self);
	struct put *p;

	if (c == NULL || (p = make_event(args, kw, "U:send", false)) == NULL)
		return NULL;
	return send_event(self, c, p);
}

/* --- hglog(): Mercurial's ui.log event, as the extension records it --- */

/* logtoprocess truncates MSG1 to this (an environment variable's limit). */
#define HG_MSG_MAX 100000

/* opts[name] (a bytes key, as ui.log's byteskwargs makes), or NULL: borrowed. */
static PyObject *hg_opt(PyObject *keep, PyObject *opts, const char *name)
{
	PyObject *key = PyBytes_FromString(name), *v;

	if (key == NULL)
		return NULL;
	if (PyDict_Check(opts)) {
		v = PyDict_GetItemWithError(opts, key);
		Py_DECREF(key);
		return v;
	}
	v = PyObject_GetItem(opts, key);
	Py_DECREF(key);
	if (v == NULL) {
		if (PyErr_ExceptionMatches(PyExc_KeyError))
			PyErr_Clear();
		return NULL;
	}
	/* A mapping's own value: kept alive with the event's texts. */
	if (PyList_Append(keep, v) < 0) {
		Py_DECREF(v);
		return NULL;
	}
	Py_DECREF(v);
	return v;
}

/* Seconds >= 0 to ns as Python's round() makes them (ties to even). */
static int hg_round_ns(double secs, int64_t *ret)
{
	double x = secs * 1e9, frac;
	int64_t n;

	if (!(x < 9.2e18)) {
		PyErr_SetString(PyExc_ValueError, "duration: out of range");
		return -1;
	}
	n = (int64_t)x;
	frac = x - (double)n;
	if (frac > 0.5 || (frac == 0.5 && (n & 1) != 0))
		n++;
	*ret = n;
	return 0;
}

/* commandfinish's fields: the return code, the duration, the command's name. */
static int hg_finish(struct put *p, PyObject *opts)
{
	PyObject *code, *duration, *canonical, *display;
	struct timespec now;
	int64_t end;
	int t;

	clock_gettime(CLOCK_REALTIME, &now);
	end = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	p->ev.end_ns = end;
	if ((code = hg_opt(p->keep, opts, "return_code")) == NULL && PyErr_Occurred())
		return -1;
	if (code != NULL && PyLong_Check(code)) {
		if (int_field(code, &p->ev.exit_code, "exit_code") < 0)
			return -1;
		p->ev.result = p->ev.exit_code == 0 ? BGRUN_RESULT_SUCCESS : BGRUN_RESULT_FAILED;
	}
	if ((duration = hg_opt(p->keep, opts, "duration")) == NULL && PyErr_Occurred())
		return -1;
	if (duration != NULL && PyFloat_Check(duration) && PyFloat_AS_DOUBLE(duration) >= 0) {
		if (hg_round_ns(PyFloat_AS_DOUBLE(duration), &p->ev.duration_ns) < 0)
			return -1;
		p->ev.start_ns = end - p->ev.duration_ns;
	}
	if ((canonical = hg_opt(p->keep, opts, "canonical_command")) == NULL && PyErr_Occurred())
		return -1;
	if (canonical == NULL || (t = PyObject_IsTrue(canonical)) == 0)
		return 0;
	if (t < 0)
		return -1;
	if (!PyBytes_Check(canonical)) {
		PyErr_Format(PyExc_TypeError, "canonical_command: bytes expected, not %.100s",
			     Py_TYPE(canonical)->tp_name);
		return -1;
	}
	display = PyBytes_FromFormat("hg %s", PyBytes_AS_STRING(canonical));
	if (display == NULL)
		return -1;
	if (PyBytes_GET_SIZE(display) != 3 + PyBytes_GET_SIZE(canonical)) {
		PyErr_SetString(PyExc_ValueError, "canonical_command: embedded NUL byte");
		Py_DECREF(display);
		return -1;
	}
	p->ev.display = pyb_keep_bytes(p->keep, display);
	return p->ev.display == NULL ? -1 : 0;
}

static PyObject *sink_hglog(SinkObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "event", "msg", "opts", "put", NULL };
	struct sinkcore *c = core_of(self);
	PyObject *event, *msg, *opts, *keep, *name = NULL, *result;
	const char *text;
	struct put *p;
	Py_ssize_t n;
	int put = 0;

	if (c == NULL || !PyArg_ParseTupleAndKeywords(args, kw, "OSO|$p:hglog", kwlist,
						      &event, &msg, &opts, &put))
		return NULL;
	if (PyBytes_Check(event)) {
		name = PyUnicode_DecodeLatin1(PyBytes_AS_STRING(event), PyBytes_GET_SIZE(event), NULL);
		if (name == NULL)
			return NULL;
		event = name;
	}
	keep = PyList_New(0);
	p = keep == NULL ? NULL : new_put(keep, event, put);
	Py_XDECREF(name);
	if (p == NULL)
		return NULL;
	p->ev.source = "hg";
	p->ev.pid = getpid();
	/* As logtoprocess's MSG1, without the message's last newline. */
	n = PyBytes_GET_SIZE(msg);
	if (n > HG_MSG_MAX) {
		static const char mark[] = " (truncated)";
		PyObject *cut = PyBytes_FromStringAndSize(NULL, HG_MSG_MAX + sizeof(mark) - 1);

		if (cut != NULL) {
			memcpy(PyBytes_AS_STRING(cut), PyBytes_AS_STRING(msg), HG_MSG_MAX);
			memcpy(PyBytes_AS_STRING(cut) + HG_MSG_MAX, mark, sizeof(mark) - 1);
		}
		msg = cut;
	} else if (n > 0 && PyBytes_AS_STRING(msg)[n - 1] == '\n') {
		msg = PyBytes_FromStringAndSize(PyBytes_AS_STRING(msg), n - 1);
	} else {
		msg = Py_NewRef(msg);
	}
	if (msg == NULL)
		goto fail;
	text = pyb_keep_bytes(p->keep, msg);
	if (text == NULL)
		goto fail;
	if (strlen(text) != (size_t)PyBytes_GET_SIZE(msg)) {
		PyErr_SetString(PyExc_ValueError, "message: embedded NUL byte");
		goto fail;
	}
	p->ev.message = text;
	if (options_field(p->keep, &p->kv, opts, true) < 0)
		goto fail;
	p->ev.options_kv = p->kv.v;
	if (strcmp(p->ev.event, "commandfinish") == 0 && hg_finish(p, opts) < 0)
		goto fail;
	if (!put)
		return send_event(self, c, p);
	result = put_event(self, c, p);
	free_event(p);
	return result;
fail:
	free_event(p);
	return NULL;
}

static PyObject *sink_flush(SinkObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "wait", NULL };
	struct sinkcore *c = core_of(self);
	struct send_failure *mine = NULL, **tail = &mine, **pp, *f;
	PyObject *list;
	int wait = 1;

	if (c == NULL)
		return NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:flush", kwlist, &wait))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	if (wait) {
		core_wait_sends(c);
		core_settle(c);
	}
	pthread_mutex_lock(&bg.lock);
	for (pp = &bg.failed; *pp != NULL;) {
		f = *pp;
		if (f->serial != c->serial) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		f->next = NULL;
		*tail = f;
		tail = &f->next;
		bg.n_failed--;
		if (!f->spooled)
			c->reports = true;
	}
	bg.tail = pp;
	pthread_mutex_unlock(&bg.lock);
	Py_END_ALLOW_THREADS
	list = PyList_New(0);
	for (f = mine; f != NULL; f = mine) {
		PyObject *e = list != NULL ? make_sink_error(f->error, f->msg, f->spooled, f->id) : NULL;

		if (e == NULL || PyList_Append(list, e) < 0)
			Py_CLEAR(list);
		Py_XDECREF(e);
		mine = f->next;
		free(f);
	}
	return list;
}

/*
 * connect()'s work, with the GIL released and the sink's lock held: the
 * daemon (libbgrun), else, unless the mode is 'daemon', libbgrun-store's
 * bgrun_sink_connect (which opens the store). *no_store as for put_locked.
 */
static int connect_locked(struct sinkcore *c, const char **no_store)
{
	const struct pyb_store_api *api;
	int r = bgrun_sink_connect_daemon(c->sink);

	if (r >= 0 || r == -EINVAL || c->daemon_only)
		return r;
	api = pyb_store_api(no_store);
	return api != NULL ? api->sink_connect(c->sink) : r;
}

/*
 * connect(wait=False) when no daemon was greeted ahead (sink_connect):
 * a thread of our own, not a Python one, so that
 * nothing of it needs the GIL (a Python thread would take it to start,
 * and make the caller wait for it to say so). Nothing is reported: a put
 * after a failure tries every path again, and says.
 */
static void *ahead_main(void *arg)
{
	struct sinkcore *c = arg;
	struct bgrun_event warm;

	/*
	 * What the library learns once per process for every event (host,
	 * user name, boot id: a dozen system calls, getpwuid's among them),
	 * learnt here rather than at the put, on the caller's clock.
	 */
	bgrun_event_init(&warm, "warm", "warm");
	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	if (c->sink != NULL)
		(void)connect_locked(c, NULL);
	PyThread_release_lock(c->lock);
	core_unref(c, true, false);
	return NULL;
}

static PyObject *sink_connect(SinkObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "wait", NULL };
	struct sinkcore *c = core_of(self);
	const char *no_store = NULL;
	char why[640] = "";
	PyObject *exc;
	int r, wait = 1;

	if (c == NULL)
		return NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:connect", kwlist, &wait))
		return NULL;
	if (!wait) {
		/*
		 * A daemon that answers: connected and greeted here, no thread
		 * (a connect and a write; the answer is read by the send).
		 * Else the thread opens the store, or starts the daemon.
		 */
		r = -EBUSY;
		if (PyThread_acquire_lock(c->lock, NOWAIT_LOCK)) {
			r = c->sink == NULL ? -EBADF : bgrun_sink_preconnect(c->sink);
			PyThread_release_lock(c->lock);
		}
		if (r >= 0 || r == -EBADF || (c->daemon_only && r == -ENOTCONN))
			Py_RETURN_NONE;
		core_ref(c, false);
		if (start_thread(ahead_main, c) < 0)
			core_unref(c, true, false);
		Py_RETURN_NONE;
	}
	Py_BEGIN_ALLOW_THREADS
	(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
	r = c->sink == NULL ? -EBADF : connect_locked(c, &no_store);
	if (r < 0 && c->sink != NULL)
		failure_text(c->sink, no_store, why, sizeof(why));
	PyThread_release_lock(c->lock);
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
	struct sinkcore *c = self->core;
	struct bgrun_sink *s;

	if (c == NULL)
		Py_RETURN_NONE;
	/* Sends first: an event accepted is stored (or said lost) before. */
	Py_BEGIN_ALLOW_THREADS
	core_wait_sends(c);
	if (c->pid == getpid()) {
		core_settle(c);
		(void)PyThread_acquire_lock(c->lock, WAIT_LOCK);
		core_settle_locked(c); /* a send of another thread meanwhile */
	}
	Py_END_ALLOW_THREADS
	s = c->sink;
	c->sink = NULL;
	if (c->pid == getpid()) {
		bgrun_sink_close(s);
		PyThread_release_lock(c->lock);
	}
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
	/* An int written under the lock by whichever thread put last. */
	int via = self->core != NULL ? __atomic_load_n(&self->core->via, __ATOMIC_RELAXED) : 0;

	if (via == BGRUN_SINK_VIA_DAEMON)
		return PyUnicode_FromString("daemon");
	if (via == BGRUN_SINK_VIA_STORE)
		return PyUnicode_FromString("store");
	Py_RETURN_NONE;
}

static PyMethodDef sink_methods[] = {
	{ "send", (PyCFunction)(void (*)(void))sink_send, METH_VARARGS | METH_KEYWORDS,
	  "send(event, **fields) -> str\n\n"
	  "Records one event as put() does, but returns its id at once,\n"
	  "without waiting for the commit. With a daemon that answers, in this\n"
	  "thread and with no thread of the library's: the event's frame is\n"
	  "written (bgrun_sink_post) and the daemon's answer read later (by the\n"
	  "next send, flush(), close() or exit()); the daemon names the user\n"
	  "and the boot. Otherwise in a thread of the library's, as put(). An\n"
	  "event the daemon does not commit goes on to the store or the spool,\n"
	  "as with put(). flush() waits for this sink's sends and returns the\n"
	  "SinkError of each that was not stored; at exit() the sends still\n"
	  "under way are waited for, and one not stored nor spooled is\n"
	  "reported on stderr. A process that ends with os._exit() (a forked\n"
	  "child, a chg worker) must flush() first, or use put()." },
	{ "hglog", (PyCFunction)(void (*)(void))sink_hglog, METH_VARARGS | METH_KEYWORDS,
	  "hglog(event, msg, opts, *, put=False) -> str\n\n"
	  "Records one Mercurial ui.log event as send() (put=True: put()) would\n"
	  "with the fields hgext3rd/bgrun.py gives it, built here rather than in\n"
	  "Python (the handler runs once per hg command, all of it cold): event\n"
	  "and msg as a logger gets them (bytes), opts the logger's dict of\n"
	  "bytes keys. source 'hg', pid ours, message msg without its last\n"
	  "newline (cut at 100000 bytes and marked ' (truncated)', as\n"
	  "logtoprocess cuts it), options every opt as logtoprocess gives it to\n"
	  "its hook (None and False '0', True '1', others as bytes). For\n"
	  "commandfinish also end_ns (now), exit_code and result from\n"
	  "return_code, duration_ns and start_ns from duration (seconds),\n"
	  "display 'hg ' + canonical_command." },
	{ "flush", (PyCFunction)(void (*)(void))sink_flush, METH_VARARGS | METH_KEYWORDS,
	  "flush(*, wait=True) -> list[SinkError]\n\n"
	  "Waits (GIL released) until every send() of this sink is done, and\n"
	  "returns the failures of those not stored (.spooled: kept in the\n"
	  "spool), oldest first, forgetting them. wait=False: only the\n"
	  "failures of the sends done so far. Once it has returned an event\n"
	  "neither stored nor spooled, the program is taken to report them:\n"
	  "this sink's later ones are no longer said at exit (the library\n"
	  "counts them, as logsink status shows). The process keeps the first\n"
	  "256 failures not taken; the rest are counted, and said at exit." },
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
	{ "connect", (PyCFunction)(void (*)(void))sink_connect, METH_VARARGS | METH_KEYWORDS,
	  "connect(*, wait=True) -> str | None\n\n"
	  "Opens now what the first put would open on its way: the daemon's\n"
	  "connection, else (unless the mode is 'daemon') the store, loading\n"
	  "its library (bgrun_sink_connect). Nothing is written. Returns\n"
	  "'daemon' or 'store', the path the next put tries first; SinkError\n"
	  "if none opens. The GIL is released meanwhile.\n\n"
	  "wait=False: returns None at once. A daemon that answers is connected\n"
	  "to here, without waiting for its answer (bgrun_sink_preconnect: a\n"
	  "connect and a write, no thread); else it is done in a thread of the\n"
	  "library's (no Python thread, no GIL); a put meanwhile waits for it.\n"
	  "For an event that comes at the end (Mercurial's commandfinish):\n"
	  "the put then only sends, or inserts. A failure there is not\n"
	  "reported: the put tries every path again, and says." },
	{ "close", (PyCFunction)sink_close, METH_NOARGS,
	  "Closes the daemon connection and the store." },
	{ "__enter__", (PyCFunction)sink_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)sink_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef sink_getset[] = {
	{ "via", (getter)sink_get_via, NULL,
	  "How the last successful put (or send, once done) went: 'daemon',\n"
	  "'store' or None.", NULL },
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
		  "uses it; others wait their turn. Only libbgrun is loaded while the\n"
		  "daemon answers: libbgrun-store (SQLite) when the store is needed.",
	.tp_methods = sink_methods,
	.tp_getset = sink_getset,
	.tp_init = (initproc)sink_init,
	.tp_new = PyType_GenericNew,
};

/*
 * log()'s sink: made at its first use, kept for the process. A forked
 * child makes its own: the parent's connection and store are the
 * parent's (and a connect of another thread may have held its lock at
 * the fork); the inherited one is left unclosed and unused.
 */
static PyObject *default_sink;
static pid_t default_sink_pid;

PyObject *pyb_log(PyObject *self, PyObject *args, PyObject *kw)
{
	if (default_sink == NULL || default_sink_pid != getpid()) {
		default_sink = PyObject_CallNoArgs((PyObject *)&pyb_sink_type);
		if (default_sink == NULL)
			return NULL;
		default_sink_pid = getpid();
	}
	return sink_put((SinkObject *)default_sink, args, kw);
}

int pyb_sink_types_init(PyObject *m)
{
	if (PyType_Ready(&pyb_sink_type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, "Sink", (PyObject *)&pyb_sink_type);
}
