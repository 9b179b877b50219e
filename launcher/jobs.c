/* SPDX-License-Identifier: MIT */
/* jobs.c: the job verbs' common part (a job read from the log by id, its supervisor, the options) and `bgrun ps`. */

/*
 * A job is a logged launch: its event's row says `running` while its
 * supervisor (bgrun-start, start.c) waits for COMMAND, and the finish once
 * COMMAND has ended; the supervisor exits only after that is committed
 * (start.c: finish_recorder). So:
 *
 * - kill asks the supervisor to signal COMMAND's process group (a queued
 *   STARTER_KILL_SIGNAL carrying the signal: starter.h), instead of
 *   signalling COMMAND itself: the supervisor reaps COMMAND, so the finish
 *   is recorded `signaled` as for any other end, and the group is the one
 *   the supervisor leads COMMAND in, which it cannot lose to pid reuse.
 * - wait waits for the supervisor's exit on a pidfd, one per job, all in
 *   one poll(): the kernel wakes us when it exits, which is when the
 *   finish is in the log; nothing is polled in a loop, and no write to the
 *   log by anyone else wakes us (as watching the WAL with inotify would).
 *   Then it reads the finish.
 *
 * A supervisor is named in the row by pid and start time (bgrun/event.h):
 * a pid is used only after its process's start time was checked against
 * the row's, through a pidfd opened before the check, so that a recycled
 * pid is never signalled nor waited for.
 */

#include "jobs.h"
#include "verbs.h"
#include "bgrun/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

void job_clear(struct job *j)
{
	free(j->result);
	free(j->display);
	free(j->cwd);
	free(j->tag);
	free(j->out);
	free(j->err);
	free(j->options);
	for (size_t i = 0; j->argv != NULL && j->argv[i] != NULL; i++)
		free(j->argv[i]);
	free(j->argv);
	if (j->fd >= 0)
		(void)close(j->fd);
	*j = (struct job){ .fd = -1 };
}

/* strdup of NULL is NULL; *failed says whether memory ran out. */
static char *dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*failed = true;
	return d;
}

static int copy_row(void *data, const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;
	struct job *j = data;
	bool failed = false;

	job_clear(j);
	(void)snprintf(j->id, sizeof(j->id), "%s", ev->id);
	j->result = dup_or_null(ev->result, &failed);
	j->display = dup_or_null(ev->display, &failed);
	j->cwd = dup_or_null(ev->cwd, &failed);
	j->tag = dup_or_null(ev->tag, &failed);
	j->out = dup_or_null(ev->stdout_path, &failed);
	j->err = dup_or_null(ev->stderr_path, &failed);
	j->options = dup_or_null(ev->options_json, &failed);
	if (ev->argv != NULL) {
		j->argv = calloc(row->argc + 1, sizeof(*j->argv));
		if (j->argv == NULL)
			failed = true;
		for (size_t i = 0; j->argv != NULL && i < row->argc; i++)
			j->argv[i] = dup_or_null(ev->argv[i], &failed);
	}
	j->pid = ev->pid;
	j->supervisor_pid = ev->supervisor_pid;
	j->supervisor_start = ev->supervisor_start;
	j->exit_code = ev->exit_code;
	j->signal = ev->signal;
	return failed ? -ENOMEM : 0;
}

/* The log's path, once jobs_open_log has chosen it (for await_row). */
static char *log_path;

/*
 * The log, read-only; *ret_store NULL when there is none yet. quiet: a
 * missing file is no message (await_row tries again).
 */
static int open_log_as(const char *db, struct bgrun_store **ret_store,
		       bool quiet)
{
	struct bgrun_store *store = NULL;
	int r;

	*ret_store = NULL;
	if (log_path == NULL) {
		r = db != NULL ? ((log_path = strdup(db)) != NULL ? 0 : -ENOMEM)
			       : bgrun_store_default_path(&log_path);
		if (r < 0) {
			cli_msg("cannot find the event log: %s", bgrun_strerror(r));
			return r;
		}
	}
	r = bgrun_store_new(&store);
	if (r < 0) {
		cli_msg("%s", bgrun_strerror(r));
		return r;
	}
	r = bgrun_store_open(store, log_path, BGRUN_STORE_READONLY);
	if (r == -ENOENT && (db == NULL || quiet)) {
		/* Nothing was ever recorded: no job at all. */
		r = 0;
		goto out;
	}
	if (r < 0) {
		cli_msg("%s", cli_printable(bgrun_store_errmsg(store)));
		goto out;
	}
	*ret_store = store;
	store = NULL;
out:
	bgrun_store_close(store);
	return r;
}

int jobs_open_log(const char *db, struct bgrun_store **ret_store)
{
	return open_log_as(db, ret_store, false);
}

/*
 * How long a full id that is not in the log yet is waited for: bgrun
 * returns once COMMAND runs, and its recorder writes the `running` row
 * just after (start.c), so `bgrun wait $(bgrun --print-id CMD)` would
 * otherwise often find nothing. The bound is the log's lock timeout's
 * default: a recorder waits that long at most for its turn to write.
 */
#define AWAIT_ROW_NS (10 * 1000000000LL)

/* An earlier end for that wait (`bgrun wait --timeout`), or 0. */
static int64_t await_until;

void jobs_set_deadline(int64_t mono_ns)
{
	await_until = mono_ns;
}

/*
 * Waits for the row of id (a whole id) to appear in the log, *store
 * opened when it was not: 0 with *j filled, -ENOENT when it did not
 * come in time, another -errno. Every commit writes the database's
 * directory's -wal file (or the database, or makes it): inotify on the
 * directory wakes us for each, and the row is looked for again.
 */
static int await_row(struct bgrun_store **store, const char *id,
		     struct job *j)
{
	int64_t deadline = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) + AWAIT_ROW_NS;
	char *dir = log_path != NULL ? strdup(log_path) : NULL, *slash;
	int fd = -1, r = -ENOENT;

	if (await_until > 0 && await_until < deadline)
		deadline = await_until;
	if (dir == NULL)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		strcpy(dir, ".");
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0 || inotify_add_watch(fd, dir, IN_MODIFY | IN_CREATE |
						  IN_MOVED_TO) < 0) {
		r = -ENOENT; /* no directory yet, or no inotify: not there */
		goto out;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[4096];
		int64_t left;

		/* After the watch is set: no commit can fall between. */
		if (*store == NULL && open_log_as(log_path, store, true) < 0)
			goto out;
		r = *store != NULL ? bgrun_store_get(*store, id, copy_row, j)
				   : -ENOENT;
		if (r != -ENOENT)
			goto out;
		left = deadline - bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		if (left <= 0)
			goto out;
		if (poll(&p, 1, (int)((left + 999999) / 1000000)) < 0 &&
		    errno != EINTR)
			goto out;
		while (read(fd, buf, sizeof(buf)) > 0)
			;
	}
out:
	if (fd >= 0)
		(void)close(fd);
	free(dir);
	return r;
}

/* One candidate of an ambiguous id, on stderr. */
static int print_candidate(void *data, const struct bgrun_event_row *row)
{
	int *left = data;

	if ((*left)-- > 0)
		cli_msg("  %s  %s  %s", bgrun_event_short_id(row->ev.id),
			row->ev.id,
			cli_printable(row->ev.display != NULL ? row->ev.display
							      : row->ev.event));
	return 0;
}

/*
 * Reads the job id names into *j: 0, or 1 after saying why there is no
 * such job (none, several: listed, not an id), or -1 when the log
 * cannot be read (said).
 */
int jobs_find(struct bgrun_store **store, const char *id,
		    struct job *j)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	int r, left = 10;

	if (!bgrun_event_id_valid(id, strlen(id))) {
		cli_msg("'%s' is not a job id", cli_printable(id));
		return 1;
	}
	r = *store != NULL ? bgrun_store_get(*store, id, copy_row, j) : -ENOENT;
	/* A whole id, as --print-id gives it: maybe launched just now. */
	if (r == -ENOENT && strlen(id) == BGRUN_EVENT_ID_MAX)
		r = await_row(store, id, j);
	switch (r) {
	case 0:
		return 0;
	case -ENOENT:
		cli_msg("no job '%s'", cli_printable(id));
		return 1;
	case -EEXIST:
		cli_msg("job id '%s' is ambiguous; the jobs whose ids contain it:",
			cli_printable(id));
		q.id_part = id;
		(void)bgrun_store_query(*store, &q, print_candidate, &left);
		if (left < 0)
			cli_msg("  and %d more", -left);
		return 1;
	default:
		cli_msg("cannot read the event log: %s",
			cli_printable(*store != NULL ? bgrun_store_errmsg(*store)
						     : bgrun_strerror(r)));
		return -1;
	}
}

/* UTF-8 of code point c into *q (moved past it). */
static void put_utf8(char **q, unsigned long c)
{
	char *p = *q;

	if (c < 0x80) {
		*p++ = (char)c;
	} else if (c < 0x800) {
		*p++ = (char)(0xc0 | (c >> 6));
		*p++ = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		*p++ = (char)(0xe0 | (c >> 12));
		*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
		*p++ = (char)(0x80 | (c & 0x3f));
	} else {
		*p++ = (char)(0xf0 | (c >> 18));
		*p++ = (char)(0x80 | ((c >> 12) & 0x3f));
		*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
		*p++ = (char)(0x80 | (c & 0x3f));
	}
	*q = p;
}

static long hex4(const char *s)
{
	char buf[5], *end;
	long v;

	memcpy(buf, s, 4);
	buf[4] = '\0';
	for (int i = 0; i < 4; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') ||
		      ((buf[i] | 0x20) >= 'a' && (buf[i] | 0x20) <= 'f')))
			return -1;
	v = strtol(buf, &end, 16);
	return *end == '\0' ? v : -1;
}

/*
 * The recorder's options are SQLite's json_object() of strings: in a
 * value every quote is escaped, so a member's start ({"key":" or
 * ,"key":") cannot be met inside one.
 */
int job_option(const struct job *j, const char *key, char **ret_value)
{
	const char *json = j->options;
	size_t n = strlen(key);
	const char *p = json, *v = NULL;
	char *out, *q;

	for (; json != NULL && (p = strchr(p, '"')) != NULL; p++) {
		if (p > json && (p[-1] == '{' || p[-1] == ',') &&
		    strncmp(p + 1, key, n) == 0 && strncmp(p + 1 + n, "\":\"", 3) == 0) {
			v = p + n + 4;
			break;
		}
	}
	if (v == NULL)
		return 1;
	out = malloc(strlen(v) + 1);
	if (out == NULL)
		return -ENOMEM;
	for (q = out; *v != '"'; v++) {
		long c, lo;

		if (*v == '\0')
			goto bad;
		if (*v != '\\') {
			*q++ = *v;
			continue;
		}
		switch (*++v) {
		case '"': case '\\': case '/':
			*q++ = *v;
			break;
		case 'b': *q++ = '\b'; break;
		case 'f': *q++ = '\f'; break;
		case 'n': *q++ = '\n'; break;
		case 'r': *q++ = '\r'; break;
		case 't': *q++ = '\t'; break;
		case 'u':
			if (strlen(v + 1) < 4 || (c = hex4(v + 1)) < 0)
				goto bad;
			v += 4;
			if (c >= 0xd800 && c < 0xdc00 && strncmp(v + 1, "\\u", 2) == 0 &&
			    strlen(v + 3) >= 4 && (lo = hex4(v + 3)) >= 0xdc00 &&
			    lo < 0xe000) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
				v += 6;
			}
			if (c == 0)
				goto bad; /* no NUL in a C string */
			put_utf8(&q, (unsigned long)c);
			break;
		default:
			goto bad;
		}
	}
	*q = '\0';
	*ret_value = out;
	return 0;
bad:
	free(out);
	return -EINVAL;
}

bool job_running(const struct job *j)
{
	return j->result != NULL && strcmp(j->result, BGRUN_RESULT_RUNNING) == 0;
}

/* Says why job j cannot be signalled or waited for: not running. */
void jobs_not_running(const char *verb, const char *id, const struct job *j)
{
	if (job_running(j))
		/* A `running` row bgrun did not write: nothing watches it. */
		cli_msg("%s: event %s names no supervisor: not a bgrun job", verb,
			cli_printable(id));
	else if (j->result != NULL && strcmp(j->result, BGRUN_RESULT_LOST) == 0)
		cli_msg("%s: job %s is lost: its supervisor is gone", verb,
			cli_printable(id));
	else
		cli_msg("%s: job %s is not running (%s)", verb,
			cli_printable(id),
			j->result != NULL ? j->result : "not a launch");
}

/*
 * A pidfd on j's supervisor, checked to be the process the row names:
 * the descriptor, or -ESRCH when it is gone (or its pid is another
 * process's now), or another -errno.
 */
int jobs_open_supervisor(const struct job *j)
{
	int fd;

	if (j->supervisor_pid <= 0 || j->supervisor_pid > INT_MAX)
		return -ESRCH;
	fd = (int)syscall(SYS_pidfd_open, (pid_t)j->supervisor_pid, 0);
	if (fd < 0)
		return -errno;
	/* Checked after the open: the descriptor is that process's. */
	if (bgrun_proc_starttime((bgrun_pid_t)j->supervisor_pid) !=
	    j->supervisor_start) {
		(void)close(fd);
		return -ESRCH;
	}
	return fd;
}

const char *verb_db_arg(const char *verb, const char *arg)
{
	/* "" would be a relative nothing, as for bgrun --db. */
	if (arg[0] == '\0')
		verb_usage(verb, "empty file name for --db");
	return arg;
}

/* A usage error of a verb: the message, the hint, exit 2. */
void verb_usage(const char *verb, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cli_msg("%s: %s", verb, line);
	(void)fprintf(stderr, "Try 'bgrun %s --help'.\n", verb);
	exit(EXIT_USAGE);
}

/* After getopt's own message. */
void verb_hint(const char *verb)
{
	(void)fprintf(stderr, "Try 'bgrun %s --help'.\n", verb);
	exit(EXIT_USAGE);
}

void verb_help(const char *text)
{
	(void)fputs(text, stdout);
	exit(cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS);
}

/* getopt names itself "bgrun VERB" in its messages. */
void verb_getopt(char **argv, char *name, size_t size)
{
	(void)snprintf(name, size, "bgrun %s", argv[0]);
	argv[0] = name;
	optind = 1;
	opterr = 1;
}

/* ---- bgrun ps ---- */

static const char ps_help[] =
	"Usage: bgrun ps [--json] [--db=PATH]\n"
	"List the jobs that are running, newest first: their id (type it back\n"
	"to kill, wait, show or restart), pid, age, tag and command.\n"
	"\n"
	"      --json     one JSON object per line, each job's event as the log\n"
	"                 stores it (logsink query --json)\n"
	"      --db=PATH  the event log (default: as bgrun records)\n"
	"  -h, --help     display this help and exit\n";

/* An age for people: 42s, 3m05s, 2h07m, 3d04h. */
static void fmt_age(char *buf, size_t size, int64_t ns)
{
	int64_t s = ns > 0 ? ns / 1000000000 : 0;

	if (s < 60)
		(void)snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		(void)snprintf(buf, size, "%lldm%02llds", (long long)(s / 60),
			       (long long)(s % 60));
	else if (s < 86400)
		(void)snprintf(buf, size, "%lldh%02lldm", (long long)(s / 3600),
			       (long long)(s % 3600 / 60));
	else
		(void)snprintf(buf, size, "%lldd%02lldh", (long long)(s / 86400),
			       (long long)(s % 86400 / 3600));
}

struct ps {
	bool json;
	int64_t now;
};

static int ps_row(void *data, const struct bgrun_event_row *row)
{
	const struct bgrun_event *ev = &row->ev;
	const struct ps *ps = data;
	char age[32], pid[24];

	if (ps->json) {
		(void)printf("%s\n", row->json != NULL ? row->json : "null");
		return 0;
	}
	fmt_age(age, sizeof(age), ps->now - row->time_ns);
	if (ev->pid != BGRUN_NULL)
		(void)snprintf(pid, sizeof(pid), "%lld", (long long)ev->pid);
	else
		(void)snprintf(pid, sizeof(pid), "-");
	(void)printf("%-8s  %7s  %6s  %-10s  %s\n",
		     bgrun_event_short_id(ev->id), pid, age,
		     cli_printable(ev->tag != NULL ? ev->tag : "-"),
		     cli_printable(ev->display != NULL ? ev->display : "-"));
	return 0;
}

int jobs_ps_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "db", required_argument, NULL, OPT_DB },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct ps ps = { .json = false };
	struct bgrun_store *store = NULL;
	const char *db = NULL;
	char name[32];
	int opt, r, status = EXIT_SUCCESS;

	verb_getopt(argv, name, sizeof(name));
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_JSON:
			ps.json = true;
			break;
		case OPT_DB:
			db = verb_db_arg("ps", optarg);
			break;
		case 'h':
			verb_help(ps_help);
		default:
			verb_hint("ps");
		}
	}
	if (optind < argc)
		verb_usage("ps", "extra operand '%s'", cli_printable(argv[optind]));
	if (jobs_open_log(db, &store) < 0)
		return EXIT_CANCELED;
	if (!ps.json)
		(void)printf("%-8s  %7s  %6s  %-10s  %s\n", "ID", "PID", "AGE",
			     "TAG", "COMMAND");
	ps.now = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	q.result = BGRUN_RESULT_RUNNING;
	r = store != NULL ? bgrun_store_query(store, &q, ps_row, &ps) : 0;
	if (r < 0) {
		cli_msg("cannot read the event log: %s",
			cli_printable(bgrun_store_errmsg(store)));
		status = EXIT_CANCELED;
	}
	if (cli_flush_stdout() < 0)
		status = EXIT_CANCELED;
	bgrun_store_close(store);
	return status;
}
