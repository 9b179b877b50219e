/* SPDX-License-Identifier: MIT */
/* jobs.h: what the job verbs (jobs.c, jobs-ctl.c, restart.c: bgrun-full) share: a job read from the log by id, its supervisor, the verbs' options. */

#ifndef BGRUN_JOBS_H
#define BGRUN_JOBS_H

#include "cli.h"

#include <stdbool.h>
#include <stdint.h>

/* What a verb keeps of a job's row (the callback's row is borrowed). */
struct job {
	char id[BGRUN_EVENT_ID_MAX + 1];
	char *result;        /* as reported: `lost` for a vanished supervisor */
	char *display;
	char *cwd, *tag, *out, *err;
	char *options;       /* the options object (JSON), or NULL */
	char **argv;         /* NULL-terminated; NULL: unknown */
	int64_t pid, supervisor_pid, supervisor_start;
	int64_t exit_code, signal;
	int fd;              /* wait: the supervisor's pidfd, or -1 */
};

/* Frees what j holds and makes it empty ({ .fd = -1 }). */
void job_clear(struct job *j);

/*
 * The string member key of j's options, decoded, into *ret_value
 * (malloc'd): 0; 1 when there is none; -errno (-EINVAL: not a string).
 */
int job_option(const struct job *j, const char *key, char **ret_value);

/* Whether j's row says running (as reported: not lost). */
bool job_running(const struct job *j);

/*
 * Opens the log (db, else the default path) read-only: 0 with *ret_store
 * NULL when there is no log yet at the default path, or -errno after
 * saying why.
 */
int jobs_open_log(const char *db, struct bgrun_store **ret_store);

/*
 * Reads the job id names (bgrun/event.h IDS FOR PEOPLE) into *j: 0, or 1
 * after saying why there is none (not an id, no such event, several:
 * listed), or -1 when the log cannot be read (said). A whole id not in
 * the log yet is waited for (jobs.c: await_row), *store opened if it was
 * NULL.
 */
int jobs_find(struct bgrun_store **store, const char *id, struct job *j);

/* Ends jobs_find's wait for a whole id at mono_ns (CLOCK_MONOTONIC) if sooner. */
void jobs_set_deadline(int64_t mono_ns);

/*
 * Says, for verb, why job j (typed as id) cannot be signalled or waited
 * for: not running, or a running row without a supervisor.
 */
void jobs_not_running(const char *verb, const char *id, const struct job *j);

/*
 * A pidfd on j's supervisor, checked to be the process the row names
 * (its start time, read after the open): the descriptor, -ESRCH when it
 * is gone, or another -errno.
 */
int jobs_open_supervisor(const struct job *j);

/*
 * jobs-ctl.c: asks the supervisor whose pidfd is fd (borrowed) to send
 * sig to its job's process group (starter.h): 0, or -errno (-ESRCH: it
 * has exited).
 */
int jobs_signal(int fd, int sig);

/* The verbs' long options without a short form. */
enum {
	OPT_DB = 256,
	OPT_JSON,
	OPT_TIMEOUT,
	OPT_PRINT_ID,
	OPT_CURRENT_ENV,
	OPT_KILL_AFTER,
};

/* Prepares getopt for a verb (argv[0] its name): messages say "bgrun VERB". */
void verb_getopt(char **argv, char *name, size_t size);

/* --db's argument, or a usage error for an empty one. */
const char *verb_db_arg(const char *verb, const char *arg);

/* A usage error of verb: the message, "Try 'bgrun VERB --help'.", exit 2. */
BGRUN__PRINTF(2, 3) __attribute__((noreturn))
void verb_usage(const char *verb, const char *fmt, ...);

/* The hint alone, after getopt's own message: exit 2. */
__attribute__((noreturn))
void verb_hint(const char *verb);

/* A verb's help on stdout: exit 0 (125 on a write error). */
__attribute__((noreturn))
void verb_help(const char *text);

#endif /* BGRUN_JOBS_H */
