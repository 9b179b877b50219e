/* SPDX-License-Identifier: MIT */
/* jobs-ctl.c: `bgrun kill` and `bgrun wait`: signalling jobs through their supervisors, waiting for their ends on pidfds (jobs.c says why). */

#include "jobs.h"
#include "starter.h"
#include "verbs.h"
#include "bgrun/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- bgrun kill ---- */

static const char kill_help[] =
	"Usage: bgrun kill [-s SIGNAL] [--db=PATH] ID...\n"
	"Send SIGNAL (default TERM) to each running job's process group,\n"
	"through the job's supervisor, which records the job's end as any\n"
	"other (signaled, if the signal ends it). ID: see 'bgrun --help'.\n"
	"\n"
	"  -s, --signal=SIGNAL  a name (TERM, SIGKILL, USR1...) or a number\n"
	"      --db=PATH        the event log (default: as bgrun records)\n"
	"  -h, --help           display this help and exit\n"
	"\n"
	"Exit status: 0 every job was signalled, 1 some ID names no running\n"
	"job (said; the others are signalled), 2 usage error, 125 the log\n"
	"cannot be read.\n";

/* A signal's number from its name (TERM, SIGTERM) or number; -1: none. */
static int parse_signal(const char *s)
{
	char *end;
	long n;

	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		n = strtol(s, &end, 10);
		return errno == 0 && *end == '\0' && n >= 1 && n <= SIGRTMAX
			       ? (int)n
			       : -1;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);

		if (abbrev != NULL && strcasecmp(s, abbrev) == 0)
			return sig;
	}
	return -1;
}

int jobs_signal(int fd, int sig)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = STARTER_KILL_SIGNAL;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = sig;
	if (syscall(SYS_pidfd_send_signal, fd, STARTER_KILL_SIGNAL, &si, 0) < 0)
		return -errno;
	return 0;
}

/* Asks j's supervisor to send sig to the job: 0, or -errno. */
static int kill_job(const struct job *j, int sig)
{
	int fd = jobs_open_supervisor(j), r;

	if (fd < 0)
		return fd;
	r = jobs_signal(fd, sig);
	(void)close(fd);
	return r;
}

int jobs_kill_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "signal", required_argument, NULL, 's' },
		{ "db", required_argument, NULL, OPT_DB },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bgrun_store *store = NULL;
	struct job j = { .fd = -1 };
	const char *db = NULL;
	char name[32];
	int opt, sig = SIGTERM, status = EXIT_SUCCESS;

	verb_getopt(argv, name, sizeof(name));
	while ((opt = getopt_long(argc, argv, "+s:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sig = parse_signal(optarg);
			if (sig < 0)
				verb_usage("kill", "invalid signal '%s'",
					   cli_printable(optarg));
			break;
		case OPT_DB:
			db = verb_db_arg("kill", optarg);
			break;
		case 'h':
			verb_help(kill_help);
		default:
			verb_hint("kill");
		}
	}
	if (optind >= argc)
		verb_usage("kill", "missing job id");
	if (jobs_open_log(db, &store) < 0)
		return EXIT_CANCELED;
	for (int i = optind; i < argc; i++) {
		int r = jobs_find(&store, argv[i], &j);

		if (r < 0) {
			status = EXIT_CANCELED;
			break;
		}
		if (r > 0) {
			status = EXIT_FAILURE;
			continue;
		}
		if (!job_running(&j) || j.supervisor_pid == BGRUN_NULL) {
			jobs_not_running("kill", argv[i], &j);
			status = EXIT_FAILURE;
			continue;
		}
		r = kill_job(&j, sig);
		if (r == -ESRCH) {
			/* It ended between the read and the signal. */
			cli_msg("kill: job %s is not running (it has just ended)",
				cli_printable(argv[i]));
			status = EXIT_FAILURE;
		} else if (r < 0) {
			cli_msg("kill: cannot signal job %s: %s",
				cli_printable(argv[i]), bgrun_strerror(r));
			status = EXIT_FAILURE;
		}
	}
	job_clear(&j);
	bgrun_store_close(store);
	return status;
}

/* ---- bgrun wait ---- */

static const char wait_help[] =
	"Usage: bgrun wait [--timeout=DUR] [--db=PATH] ID...\n"
	"Wait until every job ID has ended (at once for one that has), then\n"
	"exit with the status of the last one, as 'bgrun -w' does: its exit\n"
	"code, 128+N for signal N, 124 if it was ended by its --timeout.\n"
	"ID: see 'bgrun --help'.\n"
	"\n"
	"      --timeout=DUR  give up after DUR (10s, 5m, 1h): exit 124\n"
	"      --db=PATH      the event log (default: as bgrun records)\n"
	"  -h, --help         display this help and exit\n"
	"\n"
	"Exit status: the last job's, as above; 124 on --timeout; 125 an ID\n"
	"names no job, a job is lost (its supervisor vanished) or did not\n"
	"start, or the log cannot be read; 2 usage error.\n";

/* The exit status for j's recorded end, or -1 after saying why none. */
static int job_status(const char *id, const struct job *j)
{
	if (j->result != NULL && strcmp(j->result, BGRUN_RESULT_TIMEOUT) == 0)
		return 124;
	if (j->signal != BGRUN_NULL)
		return 128 + (int)j->signal;
	if (j->exit_code != BGRUN_NULL)
		return (int)j->exit_code;
	if (j->result != NULL && strcmp(j->result, BGRUN_RESULT_LOST) == 0)
		cli_msg("wait: job %s is lost: its supervisor is gone",
			cli_printable(id));
	else if (job_running(j))
		cli_msg("wait: job %s has ended, but its end is not in the log",
			cli_printable(id));
	else if (j->result != NULL &&
		 strcmp(j->result, BGRUN_RESULT_SPAWN_FAILED) == 0)
		cli_msg("wait: job %s did not start", cli_printable(id));
	else
		cli_msg("wait: event %s is not a job", cli_printable(id));
	return -1;
}

int jobs_wait_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "db", required_argument, NULL, OPT_DB },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bgrun_store *store = NULL;
	struct pollfd *p = NULL;
	struct job *jobs = NULL;
	const char *db = NULL;
	int64_t timeout_ns = -1, deadline = 0;
	char name[32];
	int opt, n, waiting = 0, status = EXIT_CANCELED;

	verb_getopt(argv, name, sizeof(name));
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_TIMEOUT:
			if (bgrun_parse_duration(optarg, &timeout_ns) < 0)
				verb_usage("wait", "invalid duration '%s' for --timeout: "
					   BGRUN_DURATION_EXPECTED,
					   cli_printable(optarg));
			break;
		case OPT_DB:
			db = verb_db_arg("wait", optarg);
			break;
		case 'h':
			verb_help(wait_help);
		default:
			verb_hint("wait");
		}
	}
	if (optind >= argc)
		verb_usage("wait", "missing job id");
	if (timeout_ns >= 0) {
		deadline = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) + timeout_ns;
		/* A row not there yet is waited for no longer than that. */
		jobs_set_deadline(deadline > 0 ? deadline : 1);
	}
	n = argc - optind;
	jobs = calloc((size_t)n, sizeof(*jobs));
	p = calloc((size_t)n, sizeof(*p));
	if (jobs == NULL || p == NULL) {
		cli_msg("%s", strerror(ENOMEM));
		goto out;
	}
	for (int i = 0; i < n; i++)
		jobs[i].fd = -1;
	if (jobs_open_log(db, &store) < 0)
		goto out;

	/* Every id first: a mistyped one is said before any waiting. */
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		if (jobs_find(&store, argv[optind + i], j) != 0)
			goto out;
		if (!job_running(j))
			continue;
		if (j->supervisor_pid == BGRUN_NULL) {
			jobs_not_running("wait", argv[optind + i], j);
			goto out;
		}
		j->fd = jobs_open_supervisor(j);
		if (j->fd == -ESRCH) {
			j->fd = -1; /* ended since: its end is read below */
		} else if (j->fd < 0) {
			cli_msg("wait: cannot watch job %s: %s",
				cli_printable(argv[optind + i]),
				bgrun_strerror(j->fd));
			j->fd = -1;
			goto out;
		}
	}

	/* A pidfd is readable once its process has exited. */
	for (;;) {
		int64_t left = -1;
		int ms = -1, r;

		waiting = 0;
		for (int i = 0; i < n; i++)
			if (jobs[i].fd >= 0)
				p[waiting++] = (struct pollfd){ .fd = jobs[i].fd,
								.events = POLLIN };
		if (waiting == 0)
			break;
		if (timeout_ns >= 0) {
			left = deadline - bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
			if (left <= 0) {
				status = 124;
				goto out;
			}
			/* Rounded up: never woken just before the deadline. */
			ms = left / 1000000 >= INT_MAX ? INT_MAX
						       : (int)((left + 999999) / 1000000);
		}
		r = poll(p, (nfds_t)waiting, ms);
		if (r < 0 && errno != EINTR) {
			cli_msg("wait: %s", strerror(errno));
			goto out;
		}
		for (int i = 0, k = 0; r > 0 && i < n; i++) {
			if (jobs[i].fd < 0)
				continue;
			if (p[k++].revents != 0) {
				(void)close(jobs[i].fd);
				jobs[i].fd = -1;
			}
		}
	}

	/* Every supervisor has exited: each end is in the log. */
	for (int i = 0; i < n; i++) {
		const char *id = argv[optind + i];

		if (jobs_find(&store, jobs[i].id, &jobs[i]) != 0)
			goto out;
		status = job_status(id, &jobs[i]);
		if (status < 0) {
			status = EXIT_CANCELED;
			goto out;
		}
	}
out:
	for (int i = 0; jobs != NULL && i < n; i++)
		job_clear(&jobs[i]);
	free(jobs);
	free(p);
	bgrun_store_close(store);
	return status;
}
