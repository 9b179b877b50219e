/* SPDX-License-Identifier: MIT */
/* restart.c: `bgrun restart ID`: an ended job's command launched again, as a new job linked to it. */

#include "jobs.h"
#include "output.h"
#include "verbs.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- bgrun restart ---- */

static const char restart_help[] =
	"Usage: bgrun restart [--print-id] [--db=PATH] ID\n"
	"Launch the command of job ID again (it must have ended; 'bgrun kill'\n"
	"a running one first) as a new job: the same arguments, working\n"
	"directory, tag and output files (appended to if they were), with the\n"
	"environment of this call\n"
	"(the log does not keep environments: they hold secrets). The new\n"
	"job's event says which one it restarts (options.restart_of).\n"
	"\n"
	"      --print-id  print the new job's id on stdout\n"
	"      --db=PATH   the event log (default: as bgrun records)\n"
	"  -h, --help      display this help and exit\n"
	"\n"
	"Exit status: 0 launched, 1 ID names no job that ended, 2 usage error,\n"
	"125 bgrun failed, 126 the command is not executable, 127 not found.\n";

/* Whether path is one of the files bgrun keeps for job id (output.c). */
static bool kept_file(const char *path, const char *id)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(id);

	base = base != NULL ? base + 1 : path;
	return strncmp(base, id, n) == 0 &&
	       (strcmp(base + n, ".log") == 0 || strcmp(base + n, ".out") == 0 ||
		strcmp(base + n, ".err") == 0);
}

int jobs_restart_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "print-id", no_argument, NULL, OPT_PRINT_ID },
		{ "db", required_argument, NULL, OPT_DB },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	struct bgrun_store *store = NULL;
	struct job j = { .fd = -1 };
	struct bgrun_spawn_opts cmd;
	struct sup_launch l = { .cmd = &cmd, .ensurestart = true };
	struct cli c;
	struct capture cap;
	char newid[BGRUN_EVENT_ID_MAX + 1], name[32];
	const char *db = NULL, **args = NULL;
	bool print_id = false, parsed = false;
	int opt, report_fd = -1, error = 0, status = EXIT_CANCELED;
	size_t k = 0, n;
	pid_t pid;

	capture_init(&cap);
	verb_getopt(argv, name, sizeof(name));
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_PRINT_ID:
			print_id = true;
			break;
		case OPT_DB:
			db = verb_db_arg("restart", optarg);
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
	if (job_running(&j)) {
		cli_msg("restart: job %s is still running: 'bgrun kill' it first",
			cli_printable(argv[optind]));
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
	 * bgrun's command line for it, as the recorder parses it: the
	 * recorded argv is the final one (a -s script is already sh -c ...),
	 * so it is given after "--" as it is.
	 */
	n = vec_len((const char *const *)j.argv);
	args = calloc(n + 16, sizeof(*args));
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
	/*
	 * The recorder's options are SQLite's json_object() of strings: a
	 * quote inside a value is escaped (\"), so this text is a member.
	 */
	if (j.options != NULL && strstr(j.options, "\"append\":\"1\"") != NULL)
		args[k++] = "-a";
	if (db != NULL) {
		args[k++] = "--db";
		args[k++] = db;
	}
	args[k++] = "--";
	memcpy(&args[k], j.argv, n * sizeof(*args));
	k += n;
	args[k] = NULL;
	/* getopt has read our own options: a fresh start for bgrun's. */
	optind = 0;
	cli_parse(&c, (int)k, (char **)args);
	parsed = true;

	bgrun_event_new_id(newid);
	status = cli_check_log(&c, newid);
	if (status != EXIT_SUCCESS)
		goto out;
	cli_spawn_opts(&c, &cmd);
	/* The new job keeps its output as a launch does (output.c). */
	capture_open(&c, newid, &cmd, &cap);
	l.out_capture = cap.path[0];
	l.err_capture = cap.path[1];
	l.max_output = cap.max_output;
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
	job_clear(&j);
	bgrun_store_close(store);
	return status;
}
