/* SPDX-License-Identifier: MIT */
/* restart.c: `bgrun restart ID`: a job's command launched again as it was launched, as a new job linked to it; a running one stopped first. */

/*
 * What a launch was is in its event: the argv, working directory, tag
 * and output files are columns; the rest of what bgrun repeats is in the
 * options (supervise.c: describe), and the environment in the file the
 * options name (env_file: ID.env beside the kept output, written by
 * launch.c before the command started; never in the log, which is
 * forwarded to other machines). The new job is launched as bgrun would
 * be with the options those say, through the same parse (cli_parse), so
 * that what it does is what the command line would do.
 */

#include "jobs.h"
#include "output.h"
#include "verbs.h"
#include "bgrun/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- bgrun restart ---- */

static const char restart_help[] =
	"Usage: bgrun restart [--kill-after=DUR] [--current-env] [--print-id]\n"
	"                     [--db=PATH] ID\n"
	"Launch the command of job ID again, as it was launched, as a new job:\n"
	"the same arguments, environment, working directory, tag, standard\n"
	"input, --timeout and --kill-after, output settings and files\n"
	"(appended to if they were), and --on-exit commands. A job still\n"
	"running is stopped first, as 'bgrun kill' does it (SIGTERM to its\n"
	"process group, then SIGKILL if it has not ended DUR later), and the\n"
	"new one starts once its end is recorded. The new job's event says\n"
	"which one it restarts (options.restart_of).\n"
	"\n"
	"      --kill-after=DUR  SIGKILL a running job DUR after its SIGTERM\n"
	"                        (default 10s)\n"
	"      --current-env     the environment of this call instead of the\n"
	"                        job's (needed when the job's was not kept:\n"
	"                        bgrun --no-keep-env)\n"
	"      --print-id        print the new job's id on stdout\n"
	"      --db=PATH         the event log (default: as bgrun records)\n"
	"  -h, --help            display this help and exit\n"
	"\n"
	"Exit status: 0 launched, 1 ID names no job, its environment was not\n"
	"kept (without --current-env) or it could not be stopped, 2 usage\n"
	"error, 125 bgrun failed, 126 the command is not executable, 127 not\n"
	"found.\n";

/* A running job's SIGKILL after its SIGTERM (--kill-after), by default. */
#define STOP_KILL_AFTER_NS (10 * 1000000000LL)
/* How long the end of a job sent SIGKILL is waited for, at most. */
#define STOP_AFTER_KILL_NS (10 * 1000000000LL)

/* Whether path is one of the output files bgrun kept for job id. */
static bool kept_file(const char *path, const char *id)
{
	int which = bgrun_output_file_of(path, id);

	return which >= 0 && which != BGRUN_OUTPUT_ENV;
}

/* The strings restart makes for bgrun's command line, freed together. */
struct strings {
	char **v;
	size_t n, cap;
};

static char *keep(struct strings *s, char *str)
{
	if (str == NULL)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (v == NULL) {
			free(str);
			return NULL;
		}
		s->v = v;
		s->cap = cap;
	}
	return s->v[s->n++] = str;
}

static void strings_free(struct strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

/*
 * The environment kept in path for job id (launch.c: entries each ended
 * by a NUL), as a NULL-terminated vector into one block: *ret_env (free
 * it, and *ret_buf). 0, or -errno. Only event id's own file (ID.env) and
 * only a regular file of ours is read.
 */
#define ENV_MAX (64u << 20)
static int read_env(const char *path, const char *id, char ***ret_env,
		    char **ret_buf)
{
	struct stat sb;
	char *buf = NULL, **env = NULL;
	size_t len = 0, n = 0;
	int fd, r = 0;

	if (bgrun_output_file_of(path, id) != BGRUN_OUTPUT_ENV)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
	    (uint64_t)sb.st_size > ENV_MAX) {
		r = -EPERM;
		goto out;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (buf == NULL) {
		r = -ENOMEM;
		goto out;
	}
	while (len < (size_t)sb.st_size) {
		ssize_t k = read(fd, buf + len, (size_t)sb.st_size - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	/* Every entry ends with its NUL: a file cut short is refused. */
	if (len > 0 && buf[len - 1] != '\0') {
		r = -EILSEQ;
		goto out;
	}
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	env = calloc(n + 1, sizeof(*env));
	if (env == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0, k = 0; i < len; i += strlen(buf + i) + 1)
		env[k++] = buf + i;
	*ret_env = env;
	*ret_buf = buf;
	env = NULL;
	buf = NULL;
out:
	free(env);
	free(buf);
	(void)close(fd);
	return r;
}

/* Waits up to ns for the process of pidfd fd to exit: 1 it has, 0 not yet, -errno. */
static int await_exit(int fd, int64_t ns)
{
	int64_t deadline = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) + ns;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, left / 1000000 >= INT_MAX
					? INT_MAX
					: (int)((left + 999999) / 1000000));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Stops running job j (typed as id), as systemctl restart does: SIGTERM
 * to its process group through its supervisor, as `bgrun kill` sends
 * it, SIGKILL if it has not ended kill_after_ns later, and returns once
 * the supervisor has exited, which is once the job's end is in the log
 * (jobs.c). 0, or -1 after saying why.
 */
static int stop_job(const char *id, const struct job *j, int64_t kill_after_ns)
{
	int fd = jobs_open_supervisor(j), r;

	if (fd == -ESRCH)
		return 0; /* it has ended since it was read */
	if (fd < 0) {
		cli_msg("restart: cannot stop job %s: %s", cli_printable(id),
			bgrun_strerror(fd));
		return -1;
	}
	r = jobs_signal(fd, SIGTERM);
	if (r == 0)
		r = await_exit(fd, kill_after_ns);
	if (r == 0) {
		cli_msg("restart: job %s has not ended %.3gs after SIGTERM: "
			"sending SIGKILL", cli_printable(id),
			(double)kill_after_ns / 1e9);
		r = jobs_signal(fd, SIGKILL);
		if (r == 0)
			r = await_exit(fd, STOP_AFTER_KILL_NS);
		if (r == 0) {
			cli_msg("restart: job %s has not ended after SIGKILL; "
				"not restarted", cli_printable(id));
			r = -1;
		}
	}
	(void)close(fd);
	if (r == -ESRCH)
		return 0;
	if (r < 0 && r != -1)
		cli_msg("restart: cannot stop job %s: %s", cli_printable(id),
			bgrun_strerror(r));
	return r < 0 ? -1 : 0;
}

/*
 * Option key of job j, decoded and kept in str, or NULL: not there, or
 * (*failed set) out of memory or not a JSON string.
 */
static const char *opt(const struct job *j, const char *key,
		       struct strings *str, bool *failed)
{
	char *v = NULL;
	int r = job_option(j, key, &v);

	if (r < 0)
		*failed = true;
	if (r != 0)
		return NULL;
	if (keep(str, v) == NULL) {
		*failed = true;
		return NULL;
	}
	return v;
}

/* A string made as printf makes it, kept in str (NULL: out of memory). */
BGRUN__PRINTF(3, 4)
static const char *fmt(struct strings *str, bool *failed, const char *f, ...)
{
	char *v = NULL;
	va_list ap;
	int n;

	va_start(ap, f);
	n = vasprintf(&v, f, ap);
	va_end(ap);
	if (n < 0 || keep(str, v) == NULL) {
		*failed = true;
		return NULL;
	}
	return v;
}

/*
 * bgrun's options that repeat what job j's options say (supervise.c:
 * describe), into args from *k on, which has room for 2 * (16 + the
 * number of on_exit_N members); strings kept in str. 0, or -1 after
 * saying why.
 */
static int repeat_options(const struct job *j, const char **args, size_t *k,
			  struct strings *str)
{
	bool failed = false;
	const char *v;

	if (opt(j, "append", str, &failed) != NULL)
		args[(*k)++] = "-a";
	if ((v = opt(j, "stdin", str, &failed)) != NULL) {
		args[(*k)++] = "-i";
		args[(*k)++] = v;
	}
	/* Nanoseconds, which bgrun's durations take with their unit. */
	if ((v = opt(j, "timeout_ns", str, &failed)) != NULL)
		args[(*k)++] = fmt(str, &failed, "--timeout=%sns", v);
	if ((v = opt(j, "kill_after_ns", str, &failed)) != NULL)
		args[(*k)++] = fmt(str, &failed, "--kill-after=%sns", v);
	if ((v = opt(j, "capture", str, &failed)) != NULL) {
		if (strcmp(v, "split") == 0)
			args[(*k)++] = "--split-output";
		else if (strcmp(v, "none") == 0)
			args[(*k)++] = "--no-output";
	} else if (getenv("BGRUN_OUTPUT") != NULL &&
		   getenv("BGRUN_OUTPUT")[0] != '\0') {
		/*
		 * Merged (said by nothing, as the default is), whatever the
		 * default is now: bgrun has no option for it, and its
		 * recorder reads the same variable.
		 */
		if (setenv("BGRUN_OUTPUT", "merged", 1) < 0)
			failed = true;
	}
	if ((v = opt(j, "output_max", str, &failed)) != NULL)
		args[(*k)++] = fmt(str, &failed, "--max-output=%s", v);
	if ((v = opt(j, "keep_env", str, &failed)) != NULL &&
	    strcmp(v, "0") == 0)
		args[(*k)++] = "--no-keep-env";
	for (int i = 1;; i++) {
		char key[32];

		(void)snprintf(key, sizeof(key), "on_exit_%d", i);
		if ((v = opt(j, key, str, &failed)) == NULL)
			break;
		args[(*k)++] = fmt(str, &failed, "--on-exit=%s", v);
	}
	if (opt(j, "no_on_exit", str, &failed) != NULL)
		args[(*k)++] = "--no-on-exit";
	if (failed) {
		cli_msg("restart: cannot read the options of job %s: %s",
			j->id, strerror(ENOMEM));
		return -1;
	}
	return 0;
}

/* How many on_exit_N members the options of j have. */
static size_t count_on_exit(const struct job *j)
{
	size_t n = 0;

	for (const char *p = j->options; p != NULL &&
	     (p = strstr(p, ",\"on_exit_")) != NULL; p++)
		n++;
	return n;
}

int jobs_restart_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "print-id", no_argument, NULL, OPT_PRINT_ID },
		{ "db", required_argument, NULL, OPT_DB },
		{ "current-env", no_argument, NULL, OPT_CURRENT_ENV },
		{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_store *store = NULL;
	struct job j = { .fd = -1 };
	struct bgrun_spawn_opts cmd;
	struct sup_launch l = { .cmd = &cmd, .ensurestart = true };
	struct strings str = { .v = NULL };
	struct cli c;
	struct capture cap;
	char newid[BGRUN_EVENT_ID_MAX + 1], name[32];
	char **env = NULL, *env_buf = NULL;
	const char *db = NULL, **args = NULL, *env_file, *keep_env;
	bool print_id = false, parsed = false, current_env = false;
	bool failed = false;
	int opt_c, report_fd = -1, error = 0, status = EXIT_CANCELED, r;
	int64_t kill_after_ns = STOP_KILL_AFTER_NS;
	size_t k = 0, n;
	pid_t pid;

	capture_init(&cap);
	verb_getopt(argv, name, sizeof(name));
	while ((opt_c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt_c) {
		case OPT_PRINT_ID:
			print_id = true;
			break;
		case OPT_DB:
			db = verb_db_arg("restart", optarg);
			break;
		case OPT_CURRENT_ENV:
			current_env = true;
			break;
		case OPT_KILL_AFTER:
			if (bgrun_parse_duration(optarg, &kill_after_ns) < 0 ||
			    kill_after_ns == 0)
				verb_usage("restart", "invalid duration '%s' for --kill-after: "
					   BGRUN_DURATION_EXPECTED,
					   cli_printable(optarg));
			break;
		case 'h':
			verb_help(restart_help);
		default:
			verb_hint("restart");
		}
	}
	if (optind >= argc)
		verb_usage("restart", "missing job id");
	if (optind + 1 < argc)
		verb_usage("restart", "extra operand '%s'",
			   cli_printable(argv[optind + 1]));
	if (jobs_open_log(db, &store) < 0)
		goto out;
	switch (jobs_find(&store, argv[optind], &j)) {
	case 0:
		break;
	case 1:
		status = EXIT_FAILURE;
		goto out;
	default:
		goto out;
	}
	if (job_running(&j) && j.supervisor_pid == BGRUN_NULL) {
		jobs_not_running("restart", argv[optind], &j);
		status = EXIT_FAILURE;
		goto out;
	}
	if (j.argv == NULL || j.argv[0] == NULL || j.result == NULL) {
		cli_msg("restart: event %s is not a job (no command recorded)",
			cli_printable(argv[optind]));
		status = EXIT_FAILURE;
		goto out;
	}

	/*
	 * The environment first: a job that cannot be repeated is not
	 * stopped. Never the log's (it keeps none): the file beside the
	 * output, or this call's when asked.
	 */
	env_file = opt(&j, "env_file", &str, &failed);
	keep_env = opt(&j, "keep_env", &str, &failed);
	if (!current_env && env_file == NULL) {
		cli_msg("restart: the environment of job %s was not kept%s; "
			"--current-env runs it with this one",
			cli_printable(argv[optind]),
			keep_env != NULL && strcmp(keep_env, "0") == 0
				? " (--no-keep-env)" : "");
		status = EXIT_FAILURE;
		goto out;
	}
	if (!current_env &&
	    (r = read_env(env_file, j.id, &env, &env_buf)) < 0) {
		cli_msg("restart: cannot read the environment of job %s (%s): "
			"%s; --current-env runs it with this one",
			cli_printable(argv[optind]), cli_printable(env_file),
			bgrun_strerror(r));
		status = EXIT_FAILURE;
		goto out;
	}

	/*
	 * bgrun's command line for it, as the recorder parses it: the
	 * recorded argv is the final one (a -s script is already sh -c ...),
	 * so it is given after "--" as it is.
	 */
	n = vec_len((const char *const *)j.argv);
	args = calloc(n + 2 * (24 + count_on_exit(&j)), sizeof(*args));
	if (args == NULL) {
		cli_msg("%s", strerror(ENOMEM));
		goto out;
	}
	args[k++] = "bgrun";
	if (j.cwd != NULL) {
		args[k++] = "-C";
		args[k++] = j.cwd;
	}
	if (j.tag != NULL) {
		args[k++] = "--tag";
		args[k++] = j.tag;
	}
	/*
	 * A file bgrun kept for the old job (output.c: ID.log, ID.out,
	 * ID.err) is that job's, not one the user named: the new job keeps
	 * its own instead.
	 */
	if (j.out != NULL && !kept_file(j.out, j.id)) {
		args[k++] = "-o";
		args[k++] = j.out;
	}
	if (j.err != NULL && !kept_file(j.err, j.id)) {
		args[k++] = "-e";
		args[k++] = j.err;
	}
	if (repeat_options(&j, args, &k, &str) < 0)
		goto out;
	if (db != NULL) {
		args[k++] = "--db";
		args[k++] = db;
	}
	args[k++] = "--";
	memcpy(&args[k], j.argv, n * sizeof(*args));
	k += n;
	args[k] = NULL;

	/* Systemd's restart: the old one ends (recorded) before the new one. */
	if (job_running(&j) && stop_job(argv[optind], &j, kill_after_ns) < 0) {
		status = EXIT_FAILURE;
		goto out;
	}

	/* getopt has read our own options: a fresh start for bgrun's. */
	optind = 0;
	cli_parse(&c, (int)k, (char **)args);
	parsed = true;

	bgrun_event_new_id(newid);
	status = cli_check_log(&c, newid);
	if (status != EXIT_SUCCESS)
		goto out;
	cli_spawn_opts(&c, &cmd);
	/* The kept environment is the final one: nothing set or unset on it. */
	if (env != NULL) {
		cmd.env = (const char *const *)env;
		cmd.env_set = NULL;
		cmd.env_unset = NULL;
	}
	/* The new job keeps its output (and environment) as a launch does. */
	capture_open(&c, newid, &cmd, &cap);
	l.out_capture = cap.path[0];
	l.err_capture = cap.path[1];
	l.max_output = cap.max_output;
	l.env_file = cap.env_path;
	l.timeout_ns = c.timeout_ns;
	l.kill_after_ns = c.kill_after_ns;
	l.args = &args[1];
	l.link_key = "restart_of";
	l.link_id = j.id;
	switch (launch_supervisor(newid, &l, NULL, &report_fd, &error,
				  &failure)) {
	case SUP_STARTED:
		break;
	case SUP_CMD_FAILED:
		if (print_id)
			(void)printf("%s\n", newid);
		status = cli_report_failure(&c, error, &failure);
		goto out;
	default:
		capture_discard(&cap);
		status = EXIT_CANCELED;
		goto out;
	}
	capture_close_fds(&cap);
	pid = launch_read_report(report_fd, &failure);
	if (print_id)
		(void)printf("%s\n", newid);
	if (pid < 0)
		status = cli_report_failure(&c, pid, &failure);
	else if (pid == 0) {
		cli_msg("the supervisor of %s exited without a report",
			cli_printable(c.cmd[0]));
		status = EXIT_CANCELED;
	} else {
		status = EXIT_SUCCESS;
	}
	if (cli_flush_stdout() < 0)
		status = EXIT_CANCELED;
out:
	if (report_fd >= 0)
		(void)close(report_fd);
	capture_close_fds(&cap);
	capture_free(&cap);
	if (parsed)
		cli_free(&c);
	free(args);
	free(env);
	free(env_buf);
	strings_free(&str);
	job_clear(&j);
	bgrun_store_close(store);
	return status;
}
