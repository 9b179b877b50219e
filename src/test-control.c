/* SPDX-License-Identifier: MIT */
/* test-control.c: bgrun__test_control, the tests' one way in (include/bgrun/test-control.h). */

/*
 * The one file of src/ that reaches into several folders: like SQLite's
 * sqlite3_test_control it exists to let tests see what no public call
 * shows. It is built into the tests' archive only.
 */
#include "bgrun/test-control.h"
#include "clone/clone-internal.h"
#include "event-fields.h"
#include "sink/sink-internal.h"
#include "spawn/spawn-internal.h"
#include "store/store-test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

static int store_path(int how, const char *p, size_t n, char **ret,
		      size_t *ret_len)
{
	switch (how) {
	case BGRUN__TEST_PATH_ENCODEDIR:
		return bgrun__encodedir(p, n, ret, ret_len);
	case BGRUN__TEST_PATH_DECODEDIR:
		return bgrun__decodedir(p, n, ret, ret_len);
	case BGRUN__TEST_PATH_HYBRID:
		return bgrun__hgpath_encode(p, n, true, ret, ret_len);
	case BGRUN__TEST_PATH_HYBRID_NODOT:
		return bgrun__hgpath_encode(p, n, false, ret, ret_len);
	}
	return -EINVAL;
}

static int filelock_op(int how, void **lockp, int fd, int64_t timeout_ns)
{
	struct bgrun__filelock *l = *lockp;

	switch (how) {
	case BGRUN__TEST_LOCK_NEW:
		l = malloc(sizeof(*l));
		if (l == NULL)
			return -ENOMEM;
		bgrun__filelock_init(l, fd);
		*lockp = l;
		return 0;
	case BGRUN__TEST_LOCK_TOTAL:
		return bgrun__filelock_acquire(l, timeout_ns,
					       BGRUN__FILELOCK_TOTAL);
	case BGRUN__TEST_LOCK_STILL:
		return bgrun__filelock_acquire(l, timeout_ns,
					       BGRUN__FILELOCK_STILL);
	case BGRUN__TEST_LOCK_STALL:
		l->stall_ns = timeout_ns;
		return 0;
	case BGRUN__TEST_LOCK_RELEASE:
		bgrun__filelock_release(l);
		return 0;
	case BGRUN__TEST_LOCK_FREE:
		bgrun__filelock_destroy(l);
		free(l);
		*lockp = NULL;
		return 0;
	}
	return -EINVAL;
}

static int closer(unsigned threads, size_t queue, int (*close_fn)(int),
		  const int *fds, size_t n, int *ret_first)
{
	struct bgrun__closer *c;
	int r, first = -1;

	r = bgrun__closer_start(threads, queue, close_fn, &c);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (bgrun__closer_submit(c, fds[i]) < 0 && first < 0)
			first = (int)i;
	*ret_first = first;
	return bgrun__closer_finish(c);
}

static int bundle_list(const void *data, size_t len, FILE *out)
{
	struct bgrun__bundle b;
	struct bgrun__entry e;
	char q[256];
	const void *p;
	size_t n;
	int r;

	bgrun__bundle_open_mem(&b, data, len);
	r = bgrun__bundle_header(&b);
	if (r == 0)
		fprintf(out, "%llu files, %llu bytes, requirements %s\n",
			(unsigned long long)b.file_count,
			(unsigned long long)b.byte_count, b.requirements);
	while (r == 0 && (r = bgrun__bundle_next(&b, &e)) > 0) {
		bgrun__quote(q, sizeof(q), e.name, e.name_len);
		fprintf(out, "%llu %s %llu\n", (unsigned long long)e.offset, q,
			(unsigned long long)e.size);
		while ((r = bgrun__bundle_data(&b, 4096, &p, &n)) > 0)
			;
	}
	if (r < 0)
		fprintf(out, "error %d: offset %llu: %s\n", r,
			(unsigned long long)b.err_offset, b.err);
	bgrun__bundle_close(&b);
	return r < 0 ? r : 0;
}

static int event_field(size_t i, const char **ret_name,
		       const char **ret_column, const char **ret_sql)
{
#define FIELD(name, kind, column, sql, tag) { #name, #column, sql },
	static const struct {
		const char *name, *column, *sql;
	} fields[] = { BGRUN__EVENT_FIELDS(FIELD) };
#undef FIELD

	if (i >= sizeof(fields) / sizeof(fields[0]))
		return -ENOENT;
	*ret_name = fields[i].name;
	*ret_column = fields[i].column;
	*ret_sql = fields[i].sql;
	return 0;
}

int bgrun__test_control(int op, ...)
{
	va_list ap;
	int r = -EINVAL;

	va_start(ap, op);
	switch (op) {
	case BGRUN__TEST_REAPER_PENDING:
		r = bgrun__reaper_pending();
		break;
	case BGRUN__TEST_SPOOL_WRITE: {
		const char *db = va_arg(ap, const char *);
		const struct bgrun_event *ev =
			va_arg(ap, const struct bgrun_event *);

		r = bgrun__spool_write(db, ev);
		break;
	}
	case BGRUN__TEST_FILELOCK_OP: {
		int how = va_arg(ap, int);
		void **lockp = va_arg(ap, void **);
		int fd = va_arg(ap, int);
		int64_t timeout_ns = va_arg(ap, int64_t);

		r = filelock_op(how, lockp, fd, timeout_ns);
		break;
	}
	case BGRUN__TEST_STORE_CHECKPOINT_HOOK:
		bgrun__store_set_checkpoint_hook(va_arg(ap, void (*)(void)));
		r = 0;
		break;
	case BGRUN__TEST_REPLAY_HOOK:
		bgrun__replay_set_hook(va_arg(ap, void (*)(int)));
		r = 0;
		break;
	case BGRUN__TEST_CLONE_CLOSE_FN:
		bgrun__clone_close_fn = va_arg(ap, int (*)(int));
		r = 0;
		break;
	case BGRUN__TEST_STORE_PATH: {
		int how = va_arg(ap, int);
		const char *p = va_arg(ap, const char *);
		size_t n = va_arg(ap, size_t);
		char **ret = va_arg(ap, char **);
		size_t *ret_len = va_arg(ap, size_t *);

		r = store_path(how, p, n, ret, ret_len);
		break;
	}
	case BGRUN__TEST_SHA1: {
		const void *data = va_arg(ap, const void *);
		size_t len = va_arg(ap, size_t);
		unsigned char *out = va_arg(ap, unsigned char *);

		bgrun__sha1(data, len, out);
		r = 0;
		break;
	}
	case BGRUN__TEST_CLOSER: {
		unsigned threads = va_arg(ap, unsigned);
		size_t queue = va_arg(ap, size_t);
		int (*fn)(int) = va_arg(ap, int (*)(int));
		const int *fds = va_arg(ap, const int *);
		size_t n = va_arg(ap, size_t);
		int *ret_first = va_arg(ap, int *);

		r = closer(threads, queue, fn, fds, n, ret_first);
		break;
	}
	case BGRUN__TEST_BUNDLE_LIST: {
		const void *data = va_arg(ap, const void *);
		size_t len = va_arg(ap, size_t);
		FILE *out = va_arg(ap, FILE *);

		r = bundle_list(data, len, out);
		break;
	}
	case BGRUN__TEST_EVENT_FIELD: {
		size_t i = va_arg(ap, size_t);
		const char **name = va_arg(ap, const char **);
		const char **column = va_arg(ap, const char **);
		const char **sql = va_arg(ap, const char **);

		r = event_field(i, name, column, sql);
		break;
	}
	}
	va_end(ap);
	return r;
}
