/* SPDX-License-Identifier: MIT */
/* win-launch.c: bgrun's logged launch in the Windows build: starts bgrun-supervise.exe (win-supervise.c) and reads its report. */

/*
 * What launch.c and bgrun.c's launch_supervised do on POSIX, with one
 * supervisor instead of the chain (win-supervise.c says why): bgrun
 * chooses the event id, starts the supervisor through the primitive
 * with its own options (--_supervise=ID) and bgrun's as they came, gives
 * it the write end of a pipe as its descriptor 3 (the primitive passes
 * it in the C runtime's descriptor block), and, with ensurestart or -w,
 * reads the one line that says whether COMMAND was started. The
 * supervisor starts in our working directory with our environment, so
 * that COMMAND's relative paths, -C and BGRUN_DB mean what they mean
 * here.
 *
 * Before launching, whether the log can be written is checked by
 * opening it for writing (check_log): logcheck.c's way, which opens
 * nothing, rests on the sink's health checks, not in this build. A
 * record the supervisor cannot store goes to the spool beside the log
 * (src/win/sink.c's files), else is counted as dropped; the supervisor says which
 * on our stderr when we wait (-w), and `logsink query` warns of what
 * waits in the spool.
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "cli.h"
#include "starter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUPERVISOR "bgrun-supervise.exe"

/* bgrun-supervise.exe beside this program, in UTF-8 (static). */
static const char *supervisor_path(void)
{
	static char path[MAX_PATH * 3];
	WCHAR w[MAX_PATH + sizeof(SUPERVISOR)];
	DWORD n = GetModuleFileNameW(NULL, w, MAX_PATH);
	WCHAR *slash;

	if (n == 0 || n >= MAX_PATH)
		return NULL;
	slash = wcsrchr(w, L'\\');
	(void)swprintf(slash != NULL ? slash + 1 : w, sizeof(SUPERVISOR),
		       L"%hs", SUPERVISOR);
	if (WideCharToMultiByte(CP_UTF8, 0, w, -1, path, sizeof(path), NULL,
				NULL) <= 0)
		return NULL;
	return path;
}

/*
 * The supervisor's line: "ok PID" (the pid), "error ERRNO STAGE"
 * (-errno, *failure filled), or 0 if it ended without a word.
 */
static bgrun_pid_t read_report(HANDLE h, struct bgrun_failure *failure)
{
	char line[128];
	size_t len = 0;
	long a, b;
	DWORD n;

	while (len < sizeof(line) - 1 && memchr(line, '\n', len) == NULL &&
	       ReadFile(h, line + len, (DWORD)(sizeof(line) - 1 - len), &n,
			NULL) && n > 0)
		len += n;
	line[len] = '\0';
	if (sscanf(line, STARTER_REPORT_OK " %ld", &a) == 1 && a > 0)
		return (bgrun_pid_t)a;
	if (sscanf(line, STARTER_REPORT_ERROR " %ld %ld", &a, &b) == 2 &&
	    a > 0) {
		failure->stage = (enum bgrun_stage)b;
		failure->error = (int)-a;
		return (bgrun_pid_t)-a;
	}
	return 0;
}

/* $BGRUN_STRICT_LOG, as logcheck.c reads it (Mercurial's booleans). */
static bool strict_env(void)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	const char *s = getenv("BGRUN_STRICT_LOG");

	for (size_t i = 0; s != NULL && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (_stricmp(s, yes[i]) == 0)
			return true;
	return false;
}

/*
 * Whether event id's record can be written: the log opened for writing
 * (made if missing, as the supervisor would) and closed. 0 to launch;
 * EXIT_CANCELED (said why) with --strict-log or $BGRUN_STRICT_LOG.
 */
static int check_log(const struct cli *c, const char *id)
{
	bool strict = c->strict_log || strict_env();
	struct bgrun_store *store = NULL;
	char *path = NULL;
	const char *db = c->db;
	int r;

	if (db == NULL) {
		r = bgrun_store_default_path(&path);
		if (r < 0) {
			cli_msg("no event log: set BGRUN_DB or LOCALAPPDATA: "
				"event %s cannot be recorded%s", id,
				strict ? "; not launched (--strict-log)" : "");
			return strict ? EXIT_CANCELED : 0;
		}
		db = path;
	}
	r = bgrun_store_new(&store);
	if (r >= 0)
		r = bgrun_store_open(store, db, 0);
	if (r < 0 && strict)
		cli_msg("%s: event %s cannot be recorded; not launched "
			"(--strict-log)",
			store != NULL && bgrun_store_errmsg(store)[0]
				? cli_printable(bgrun_store_errmsg(store))
				: bgrun_strerror(r), id);
	else if (r < 0)
		cli_msg("%s: event %s cannot be recorded; it goes to the spool "
			"%s.spool if that can be written",
			store != NULL && bgrun_store_errmsg(store)[0]
				? cli_printable(bgrun_store_errmsg(store))
				: bgrun_strerror(r), id, cli_printable(db));
	bgrun_store_close(store);
	free(path);
	return r < 0 && strict ? EXIT_CANCELED : 0;
}

static int print_line(const char *s)
{
	(void)printf("%s\n", s);
	return cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS;
}

int win_launch_logged(const struct cli *c, char **argv)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_child *child = NULL;
	char id[BGRUN_EVENT_ID_MAX + 1], opt[64], buf[32];
	const char *sup = supervisor_path(), **v = NULL;
	HANDLE rd = NULL, wr = NULL;
	int status = EXIT_SUCCESS;
	size_t n = 0;
	bgrun_pid_t r;

	if (sup == NULL) {
		cli_msg("cannot find %s beside bgrun", SUPERVISOR);
		return EXIT_CANCELED;
	}
	/* The event id is chosen here, so --print-id needs no round trip. */
	bgrun_event_new_id(id);
	status = check_log(c, id);
	if (status != EXIT_SUCCESS)
		return status;
	(void)snprintf(opt, sizeof(opt), "--_supervise=%s", id);
	while (argv[n] != NULL)
		n++;
	v = calloc(n + 2, sizeof(*v));
	if (v == NULL || !CreatePipe(&rd, &wr, NULL, 0)) {
		cli_msg("cannot start the supervisor: %s",
			bgrun_strerror(v == NULL ? -ENOMEM : -EMFILE));
		status = EXIT_CANCELED;
		goto out;
	}
	v[0] = sup;
	v[1] = opt;
	for (size_t i = 1; i < n; i++)
		v[i + 1] = argv[i];
	opts.argv = v;
	/*
	 * COMMAND's streams are the supervisor's to open (cli_spawn_opts
	 * there); it needs ours only for what COMMAND takes from us (-i -)
	 * and, while we wait, our stderr for what it has to say.
	 */
	if (c->in_path != NULL && strcmp(c->in_path, "-") == 0)
		opts.in.kind = BGRUN_STDIO_INHERIT;
	if (c->wait)
		opts.err.kind = BGRUN_STDIO_INHERIT;
	opts.detach = !c->wait;
	opts.ensurestart = true;
	opts.pass_fds = &wr;
	opts.n_pass_fds = 1;
	opts.failure = &failure;
	r = bgrun_spawn(&opts, &child);
	CloseHandle(wr);
	if (r < 0) {
		cli_msg("cannot start the supervisor %s: %s", cli_printable(sup),
			bgrun_strerror(r));
		status = EXIT_CANCELED;
		goto out;
	}
	if (c->print_id)
		status = print_line(id);
	if (!c->ensurestart && !c->wait)
		goto out;

	failure = (struct bgrun_failure){ .stage = BGRUN_STAGE_NONE };
	r = read_report(rd, &failure);
	if (r < 0) {
		status = cli_report_failure(c, r, &failure);
		/* The supervisor has recorded the failure; -w waits for that. */
		if (c->wait) {
			struct bgrun_status st;

			(void)bgrun_child_wait(child, -1, &st);
		}
		goto out;
	} else if (r == 0) {
		cli_msg("the supervisor of %s exited without a report",
			cli_printable(c->cmd[0]));
		status = EXIT_CANCELED;
		goto out;
	} else if (c->print_pid && status == EXIT_SUCCESS) {
		(void)snprintf(buf, sizeof(buf), "%ld", (long)r);
		status = print_line(buf);
	}
	if (c->wait) {
		struct bgrun_status st;
		int w = bgrun_child_wait(child, -1, &st);

		if (w < 0) {
			cli_msg("cannot wait for the supervisor: %s",
				bgrun_strerror(w));
			status = EXIT_CANCELED;
		} else if (status == EXIT_SUCCESS) {
			/* Its exit code is COMMAND's (win-supervise.c). */
			status = cli_status_code(&st);
		}
	}
out:
	/* It outlives us: nothing of ours waits for it. */
	bgrun_child_disown(child);
	if (rd != NULL)
		CloseHandle(rd);
	free(v);
	return status;
}

bgrun_pid_t win_launch_hook(const char *id, const char *tag, const char *cwd,
			    const char *db, const char *cmd,
			    const char *const *env_set,
			    struct bgrun_child **ret_child,
			    struct bgrun_failure *failure)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child = NULL;
	const char *sup = supervisor_path(), *v[16];
	HANDLE rd = NULL, wr = NULL;
	char opt[64];
	size_t n = 0;
	bgrun_pid_t r;

	if (sup == NULL) {
		cli_msg("cannot find %s beside bgrun", SUPERVISOR);
		return -1;
	}
	if (!CreatePipe(&rd, &wr, NULL, 0)) {
		cli_msg("cannot start the supervisor: %s", bgrun_strerror(-EMFILE));
		return -1;
	}
	(void)snprintf(opt, sizeof(opt), "--_supervise=%s", id);
	v[n++] = sup;
	v[n++] = opt;
	v[n++] = "--tag";
	v[n++] = tag;
	if (cwd != NULL) {
		v[n++] = "-C";
		v[n++] = cwd;
	}
	if (db != NULL) {
		v[n++] = "--db";
		v[n++] = db;
	}
	v[n++] = "-s";
	v[n++] = "--";
	v[n++] = cmd;
	v[n] = NULL;
	opts.argv = v;
	opts.env_set = env_set;
	/* A hook waited for says what it has to say on our stderr. */
	if (ret_child != NULL)
		opts.err.kind = BGRUN_STDIO_INHERIT;
	opts.detach = ret_child == NULL;
	opts.ensurestart = true;
	opts.pass_fds = &wr;
	opts.n_pass_fds = 1;
	opts.failure = failure;
	r = bgrun_spawn(&opts, &child);
	CloseHandle(wr);
	if (r < 0) {
		cli_msg("cannot start the supervisor %s: %s", cli_printable(sup),
			bgrun_strerror(r));
		CloseHandle(rd);
		return -1;
	}
	*failure = (struct bgrun_failure){ .stage = BGRUN_STAGE_NONE };
	r = read_report(rd, failure);
	CloseHandle(rd);
	if (ret_child != NULL && r > 0)
		*ret_child = child;
	else
		bgrun_child_disown(child);
	return r;
}
