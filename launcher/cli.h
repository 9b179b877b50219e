/* SPDX-License-Identifier: MIT */
/* cli.h: what the bgrun command line asked for, shared by the launcher and its supervisor. */

#ifndef BGRUN_CLI_H
#define BGRUN_CLI_H

#include "bgrun.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The POSIX logged mode (the supervisor chain, bgrun-full, the sink);
 * the Windows build has not that (-DBGRUN_CLI_LOG=0): its logged mode,
 * a clone hook's included, is win-launch.c's.
 */
#ifndef BGRUN_CLI_LOG
#define BGRUN_CLI_LOG 1
#endif

/* The length of a NULL-terminated vector (0 for a NULL one). */
static inline size_t vec_len(const char *const *v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

/* Exit codes, as coreutils env(1) and timeout(1) use them. */
enum {
	EXIT_USAGE = 2,
	EXIT_CANCELED = 125,    /* bgrun's own failure */
	EXIT_CANNOT_INVOKE = 126,
	EXIT_ENOENT = 127,
};

/* What a logged launch keeps of the output the user did not redirect. */
enum cli_capture {
	CLI_CAPTURE_MERGED = 0, /* stdout and stderr in one file, ID.log */
	CLI_CAPTURE_SPLIT,      /* ID.out and ID.err */
	CLI_CAPTURE_NONE,       /* /dev/null, as with --no-log */
};

/* The default cap on a job's kept output (--max-output, [output] max-size). */
#define CLI_MAX_OUTPUT_DEFAULT ((int64_t)16 << 20)

struct cli {
	const char *out_path;  /* "-": bgrun's own stdout */
	const char *err_path;
	const char *in_path;   /* "-": bgrun's own stdin */
	const char *cwd;
	const char **env_set;  /* NULL-terminated, sized for argc entries */
	const char **env_unset;
	size_t n_set, n_unset;
	bool append, clear_env, shell, wait, ensurestart, print_pid;
	/* Logging (a supervisor records the command's finish). */
	bool log, print_id, strict_log;
	const char *tag;
	const char *db;
	/* --on-exit commands (NULL-terminated), and --no-on-exit. */
	const char **on_exit;
	size_t n_on_exit;
	bool no_on_exit;
	int64_t timeout_ns;    /* 0: none */
	int64_t kill_after_ns; /* 0: SIGKILL never follows SIGTERM */
	/* Output capture (logged launches only; output.c). */
	enum cli_capture capture;
	int64_t max_output;    /* bytes kept per file at most; 0: no cap */
	/* Keep COMMAND's environment in ID.env (--no-keep-env: not). */
	bool keep_env;
	char **cmd;            /* COMMAND [ARGS...], NULL-terminated */
};

/* Parses argv into *c, or exits with a message (2: usage, 0: --help). */
void cli_parse(struct cli *c, int argc, char **argv);
void cli_free(struct cli *c);

/* The spawn options for the command (pointers into c; static storage). */
void cli_spawn_opts(const struct cli *c, struct bgrun_spawn_opts *opts);

/* Prints one line for a failed launch and returns the exit code. */
int cli_report_failure(const struct cli *c, int error,
		       const struct bgrun_failure *failure);

/*
 * logcheck.c: before a logged launch, one line on stderr if its record
 * (event id) cannot be written, and where it will be kept; 0 to launch,
 * or EXIT_CANCELED (said why) for --strict-log or $BGRUN_STRICT_LOG.
 */
int cli_check_log(const struct cli *c, const char *id);
/*
 * After a waited launch (the recorder has exited): one line on stderr
 * if event id was not stored, why and where it was kept, unless
 * cli_check_log said so already.
 */
void cli_check_record(const struct cli *c, const char *id);

/* The exit code for a finished command: its code, or 128+N for signal N. */
int cli_status_code(const struct bgrun_status *st);

/* "bgrun: MESSAGE" on stderr, one line. */
BGRUN__PRINTF(1, 2)
void cli_msg(const char *fmt, ...);

/* Flushes stdout: 0, or -1 after saying why. */
int cli_flush_stdout(void);

/* s with control characters escaped; valid until the fourth call after. */
const char *cli_printable(const char *s);

/*
 * supervise.c: bgrun-full's recorder role, given its whole argv: its own
 * options first (--_supervise=ID and the others launch.c and start.c
 * give it, which only it parses), then bgrun's as the user gave them.
 */
int supervise_main(int argc, char **argv);

/* launch.c: how to start a supervisor. */
struct sup_launch {
	/* COMMAND's launch, as --no-log would make it (borrowed). */
	const struct bgrun_spawn_opts *cmd;
	/* bgrun's options for the recorder and COMMAND (NULL-terminated). */
	const char *const *args;
	/* The event's source (NULL: "bgrun"). */
	const char *source;
	/* Wait for the record of a failure to launch COMMAND (ensurestart). */
	bool ensurestart;
	/*
	 * The caller exits as soon as it has read the report: the recorder
	 * is started once it has (starter.h: STARTER_AWAIT_EXIT).
	 */
	bool exits_after_report;
	/* SIGTERM after timeout_ns (0: never), SIGKILL kill_after_ns later. */
	int64_t timeout_ns, kill_after_ns;
	/*
	 * What this launch is to another job, in its event's options:
	 * link_key "restart_of" (jobs.c) or "on_exit_of" (onexit.c), and
	 * that job's event id; NULL: nothing.
	 */
	const char *link_key, *link_id;
	/*
	 * The kept output (output.c): the files of COMMAND's stdout and
	 * stderr (NULL: not kept; the same name when merged), in cmd's out
	 * and err as descriptors, and the cap on each in bytes (0: none).
	 */
	const char *out_capture, *err_capture;
	int64_t max_output;
	/*
	 * The file COMMAND's final environment is to be kept in (output.c:
	 * ID.env), NULL: none. Named to bgrun-start through the recorder's
	 * --_env, which writes it once it has reported (start.c: keep_env),
	 * its entries each ended by a NUL.
	 */
	const char *env_file;
};

/* What launch_supervisor did. */
enum sup_started {
	SUP_STARTED,     /* it runs; read its report */
	SUP_CMD_FAILED,  /* COMMAND cannot start (failure says why); recorded */
	SUP_NOT_STARTED, /* no supervisor: already said why */
};

/*
 * Starts a supervisor for event id: bgrun-start, exec'd through the
 * primitive with COMMAND's working directory and standard streams, which
 * launches COMMAND, reports, and has `bgrun-full --_supervise` record it. What can be
 * known without starting anything (the working directory, the program,
 * the streams) is checked here first: a failure there is COMMAND's
 * (*failure and *ret_error filled), recorded by a supervisor started only
 * for that. Once started, *ret_report_fd is the read end of the pipe on
 * which it reports (the caller reads it with launch_read_report and
 * closes it) and, when ret_child is not NULL, *ret_child a handle on it.
 */
enum sup_started launch_supervisor(const char *id, const struct sup_launch *l,
				   struct bgrun_child **ret_child,
				   int *ret_report_fd, int *ret_error,
				   struct bgrun_failure *failure);

/*
 * Reads the supervisor's one-line report from fd: "ok PID" or
 * "error ERRNO STAGE". Returns the pid, -errno with *failure filled, or
 * 0 if the supervisor went away without a word.
 */
bgrun_pid_t launch_read_report(int fd, struct bgrun_failure *failure);

/*
 * win-launch.c: the Windows build's logged launch (BGRUN_CLI_LOG 0):
 * bgrun-supervise.exe (win-supervise.c) instead of the POSIX chain;
 * argv is bgrun's own, as for launch_supervised. Returns bgrun's exit
 * code.
 */
int win_launch_logged(const struct cli *c, char **argv);
/*
 * win-launch.c: a clone hook's logged launch on Windows (as clone-hooks.c
 * does with launch_supervisor on POSIX): bgrun-supervise.exe records
 * event id for `cmd /c CMD` run in cwd (NULL: ours) with env_set added,
 * tagged tag, in db (NULL: the default). Returns the hook's pid once it
 * started, -errno (*failure filled) if it could not, 0 if the supervisor
 * said nothing, or -1 after saying that the supervisor did not start.
 * With ret_child, a handle on the supervisor (it exits with the hook's
 * status); without, it is disowned.
 */
bgrun_pid_t win_launch_hook(const char *id, const char *tag, const char *cwd,
			    const char *db, const char *cmd,
			    const char *const *env_set,
			    struct bgrun_child **ret_child,
			    struct bgrun_failure *failure);

/*
 * onexit.c: the recorder, once ev (a job's final row) is recorded, starts
 * its exit notifications (--on-exit, the configuration's [on-exit]).
 */
void on_exit_run(const struct cli *c, const struct bgrun_event *ev);

/* clone.c: `bgrun clone ...` (argv[0] is "clone"). */
int clone_main(int argc, char **argv);

#endif /* BGRUN_CLI_H */
