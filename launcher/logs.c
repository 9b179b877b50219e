/* SPDX-License-Identifier: MIT */
/* logs.c: `bgrun logs [-f] ID`: a job's kept output, printed or followed to the job's end (bgrun-full). */

#include "cli.h"
#include "output.h"
#include "verbs.h"
#include "bgrun/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char logs_help[] =
	"Usage: bgrun logs [-f] [--db=PATH] ID\n"
	"Print the output a logged launch kept (stdout and stderr merged, as\n"
	"the command wrote them; with --split-output, its stdout here on stdout\n"
	"and its stderr on stderr). ID is the event id, or any part of it that\n"
	"no other id contains.\n"
	"\n"
	"  -f, --follow   print what is written as it is written, until the job\n"
	"                 ends; then exit with its status (128+N for signal N,\n"
	"                 124 for its --timeout, 125 if no end was recorded)\n"
	"      --db=PATH  the event log (default $BGRUN_DB, else the state\n"
	"                 directory's)\n"
	"  -h, --help     display this help and exit\n";

static const struct option logs_options[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "db", required_argument, NULL, 'D' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What logs needs of the event's row. */
struct job {
	bool found, kept, running, lost, spawn_failed;
	char id[BGRUN_EVENT_ID_MAX + 1];
	char *out, *err;
	int status; /* the exit code its end means, or -1 */
};

static void job_clear(struct job *j)
{
	free(j->out);
	free(j->err);
	*j = (struct job){ .status = -1 };
}

/* The status, as bgrun -w gives it: code, 128+N, 124 on timeout. */
static int row_status(const struct bgrun_event *ev)
{
	if (ev->result == NULL)
		return -1;
	if (strcmp(ev->result, BGRUN_RESULT_TIMEOUT) == 0)
		return 124;
	if (strcmp(ev->result, BGRUN_RESULT_SIGNALED) == 0 &&
	    ev->signal != BGRUN_NULL)
		return 128 + (int)ev->signal;
	if ((strcmp(ev->result, BGRUN_RESULT_SUCCESS) == 0 ||
	     strcmp(ev->result, BGRUN_RESULT_FAILED) == 0) &&
	    ev->exit_code != BGRUN_NULL)
		return (int)ev->exit_code;
	return -1;
}

static int take_row(void *data, const struct bgrun_event_row *row)
{
	struct job *j = data;
	const struct bgrun_event *ev = &row->ev;
	const char *o = ev->options_json;

	job_clear(j);
	j->found = true;
	(void)snprintf(j->id, sizeof(j->id), "%s", ev->id);
	/* Only bgrun's own files (output.c), never a user's -o FILE. */
	j->kept = o != NULL && strstr(o, "\"output\":\"kept\"") != NULL;
	if (j->kept && ev->stdout_path != NULL)
		j->out = strdup(ev->stdout_path);
	if (j->kept && ev->stderr_path != NULL)
		j->err = strdup(ev->stderr_path);
	j->running = ev->result != NULL &&
		     strcmp(ev->result, BGRUN_RESULT_RUNNING) == 0;
	j->lost = ev->result != NULL &&
		  strcmp(ev->result, BGRUN_RESULT_LOST) == 0;
	j->spawn_failed = ev->result != NULL &&
			  strcmp(ev->result, BGRUN_RESULT_SPAWN_FAILED) == 0;
	j->status = row_status(ev);
	return 0;
}

/* Reads the row for id into *j: 0, or -errno (said, but -ENOENT). */
static int read_job(const char *db, const char *id, struct job *j)
{
	struct bgrun_store *store = NULL;
	int r = bgrun_store_new(&store);

	if (r >= 0)
		r = bgrun_store_open(store, db, BGRUN_STORE_READONLY);
	if (r >= 0)
		r = bgrun_store_get(store, id, take_row, j);
	if (r < 0 && r != -ENOENT)
		cli_msg("%s", store != NULL && bgrun_store_errmsg(store)[0]
				      ? bgrun_store_errmsg(store)
				      : bgrun_strerror(r));
	bgrun_store_close(store);
	return r;
}

/*
 * A whole id whose row is not written yet (its recorder starts after
 * bgrun has returned): its files, if bgrun made them, are enough to
 * follow; the row is there by the time the last writer closes them.
 */
static bool files_of_id(const char *id, struct job *j)
{
	static const enum bgrun_output_file which[] = {
		BGRUN_OUTPUT_LOG, BGRUN_OUTPUT_OUT, BGRUN_OUTPUT_ERR
	};
	char *dir = NULL, *p;

	if (!bgrun_event_id_valid(id, strlen(id)) ||
	    strlen(id) < BGRUN_EVENT_ID_MAX || bgrun_output_default_dir(&dir) < 0)
		return false;
	for (size_t i = 0; i < 3; i++) {
		if (bgrun_output_path(dir, id, which[i], &p) < 0)
			break;
		if (access(p, R_OK) != 0) {
			free(p);
			continue;
		}
		if (i == 0 || i == 1) {
			free(j->out);
			j->out = p;
		} else {
			free(j->err);
			j->err = p;
		}
		if (i == 0)
			break;
	}
	free(dir);
	j->kept = j->out != NULL || j->err != NULL;
	(void)snprintf(j->id, sizeof(j->id), "%s", id);
	return j->kept;
}

int logs_main(int argc, char **argv)
{
	struct job j = { .status = -1 };
	struct follow_file f[2];
	const char *db = NULL, *id;
	char *dbpath = NULL;
	bool follow = false;
	size_t n = 0;
	int opt, r, ifd = -1, status = EXIT_SUCCESS;

	/* getopt says "bgrun: invalid option", as cli_msg says the rest. */
	argv[0] = (char *)"bgrun";
	while ((opt = getopt_long(argc, argv, "+fh", logs_options, NULL)) != -1) {
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'D':
			db = optarg;
			break;
		case 'h':
			(void)fputs(logs_help, stdout);
			return cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS;
		default:
			(void)fputs("Try 'bgrun logs --help'.\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc || optind + 1 < argc) {
		cli_msg(optind >= argc ? "logs: missing event id"
				       : "logs: extra operand '%s'",
			optind < argc ? cli_printable(argv[optind + 1]) : "");
		(void)fputs("Try 'bgrun logs --help'.\n", stderr);
		return EXIT_USAGE;
	}
	id = argv[optind];
	if (db == NULL) {
		if (bgrun_store_default_path(&dbpath) < 0) {
			cli_msg("logs: no event log: set BGRUN_DB or HOME");
			return EXIT_CANCELED;
		}
		db = dbpath;
	}
	r = read_job(db, id, &j);
	if (r == -ENOENT && !files_of_id(id, &j)) {
		cli_msg("logs: no event '%s'", cli_printable(id));
		status = EXIT_CANCELED;
		goto out;
	} else if (r < 0 && r != -ENOENT) {
		if (r == -EEXIST)
			cli_msg("logs: event id '%s' is ambiguous: several ids "
				"contain it (logsink query --id=%s lists them)",
				cli_printable(id), cli_printable(id));
		else if (r == -EINVAL)
			cli_msg("logs: '%s' is not an event id", cli_printable(id));
		status = EXIT_CANCELED;
		goto out;
	}
	if (!j.kept) {
		cli_msg("logs: event %s kept no output (--no-output, -o, --no-log, "
			"or launched before bgrun kept output)", j.id);
		status = EXIT_CANCELED;
		goto out;
	}
	if (j.out != NULL)
		f[n++] = (struct follow_file){ .path = j.out, .out = 1 };
	if (j.err != NULL && (j.out == NULL || strcmp(j.out, j.err) != 0))
		f[n++] = (struct follow_file){ .path = j.err,
					       .out = j.out != NULL ? 2 : 1 };
	if (follow_open(f, n, &ifd) < 0) {
		status = EXIT_CANCELED;
		goto out;
	}
	if (follow) {
		/*
		 * The watches are made: now the row says whether the job is
		 * over. If not, its last writer's close is yet to come.
		 */
		struct job now = { .status = -1 };

		if (read_job(db, j.id, &now) == 0) {
			job_clear(&j);
			j = now;
		}
		r = follow_run(f, n, ifd, j.found && !j.running);
		if (r < 0)
			cli_msg("logs: cannot follow: %s", bgrun_strerror(r));
		now = (struct job){ .status = -1 };
		if (read_job(db, j.id, &now) == 0) {
			job_clear(&j);
			j = now;
		}
		if (j.status >= 0) {
			status = j.status;
		} else {
			cli_msg("logs: event %s: %s", j.id,
				j.spawn_failed ? "the command could not be started"
				: j.lost ? "its supervisor is gone; no end was recorded"
					 : "no end was recorded");
			status = EXIT_CANCELED;
		}
	} else {
		r = follow_run(f, n, ifd, true);
	}
	follow_close(f, n, ifd);
	if (f[0].out_broken || (n > 1 && f[1].out_broken)) {
		cli_msg("logs: write error");
		if (!follow)
			status = EXIT_CANCELED;
	}
out:
	job_clear(&j);
	free(dbpath);
	return status;
}
