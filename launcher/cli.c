/* SPDX-License-Identifier: MIT */
/* cli.c: the bgrun command line: options, messages, exit codes. */

#include "cli.h"
#include "verbs.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Long options without a short form. */
enum {
	OPT_CLEAR_ENV = 256,
	OPT_NO_ENSURESTART,
	OPT_PRINT_PID,
	OPT_VERSION,
	OPT_NO_LOG,
	OPT_TAG,
	OPT_TIMEOUT,
	OPT_KILL_AFTER,
	OPT_PRINT_ID,
	OPT_DB,
	OPT_STRICT_LOG,
	OPT_ON_EXIT,
	OPT_NO_ON_EXIT,
	OPT_NO_OUTPUT,
	OPT_SPLIT_OUTPUT,
	OPT_MAX_OUTPUT,
	OPT_NO_KEEP_ENV,
};

static const struct option longopts[] = {
	{ "stdout", required_argument, NULL, 'o' },
	{ "stderr", required_argument, NULL, 'e' },
	{ "append", no_argument, NULL, 'a' },
	{ "cwd", required_argument, NULL, 'C' },
	{ "env", required_argument, NULL, 'E' },
	{ "unset", required_argument, NULL, 'u' },
	{ "clear-env", no_argument, NULL, OPT_CLEAR_ENV },
	{ "stdin", required_argument, NULL, 'i' },
	{ "shell", no_argument, NULL, 's' },
	{ "wait", no_argument, NULL, 'w' },
	{ "no-ensurestart", no_argument, NULL, OPT_NO_ENSURESTART },
	{ "print-pid", no_argument, NULL, OPT_PRINT_PID },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "no-log", no_argument, NULL, OPT_NO_LOG },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "print-id", no_argument, NULL, OPT_PRINT_ID },
	{ "db", required_argument, NULL, OPT_DB },
	{ "strict-log", no_argument, NULL, OPT_STRICT_LOG },
	{ "on-exit", required_argument, NULL, OPT_ON_EXIT },
	{ "no-on-exit", no_argument, NULL, OPT_NO_ON_EXIT },
	{ "no-output", no_argument, NULL, OPT_NO_OUTPUT },
	{ "split-output", no_argument, NULL, OPT_SPLIT_OUTPUT },
	{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
	{ "no-keep-env", no_argument, NULL, OPT_NO_KEEP_ENV },
	{ NULL, 0, NULL, 0 },
};

static const char usage_text[] =
	"Usage: bgrun [OPTION]... [--] COMMAND [ARG]...\n"
	"  or:  bgrun VERB [OPTION]... [ID]...   (the verbs are listed below)\n"
	"Launch COMMAND detached (in a new session) and return at once.\n"
	"Its stdin is /dev/null unless redirected; its stdout and stderr are\n"
	"kept in the event's output file (see 'bgrun logs'), or /dev/null\n"
	"with --no-log or --no-output.\n"
	"\n"
	"  -o, --stdout=FILE     write the command's stdout to FILE ('-': bgrun's)\n"
	"  -e, --stderr=FILE     write its stderr to FILE (joined if FILE is stdout's)\n"
	"  -a, --append          append to the output files instead of truncating\n"
	"  -i, --stdin=FILE      read stdin from FILE ('-': bgrun's own stdin)\n"
	"  -C, --cwd=DIR         run the command in DIR\n"
	"  -E, --env=NAME=VALUE  set a variable (repeatable)\n"
	"  -u, --unset=NAME      remove a variable (repeatable, applied last)\n"
	"      --clear-env       start from an empty environment\n"
	"  -s, --shell           COMMAND is a /bin/sh script; ARGs are its $0, $1...\n"
	"  -w, --wait            do not detach: wait, exit with the command's status\n"
	"      --no-ensurestart  queue the launch, then wait for its outcome\n"
	"      --print-pid       print the command's pid on stdout\n"
	"\n"
	"Unless --no-log, a supervisor waits for COMMAND and records its finish\n"
	"(exit code or signal, duration, resource use) in the event log\n"
	"($BGRUN_DB, else $XDG_STATE_HOME/bgrun/events.db); see 'logsink query'.\n"
	"      --no-log          launch COMMAND alone, record nothing\n"
	"      --tag=TEXT        record TEXT with the event\n"
	"      --timeout=DUR     send SIGTERM to COMMAND after DUR (10s, 5m, 1h)\n"
	"      --kill-after=DUR  then SIGKILL if still running DUR later\n"
	"      --print-id        print the event id on stdout\n"
	"      --db=PATH         the event log database\n"
	"      --strict-log      do not launch when the log cannot be written\n"
	"                        (also $BGRUN_STRICT_LOG=1, [log] strict = true);\n"
	"                        else bgrun says so\n"
	"                        and the record waits in DB.spool if it can\n"
	"      --on-exit=CMD     when COMMAND ends (its end recorded), run the\n"
	"                        /bin/sh script CMD (repeatable; itself a job,\n"
	"                        source on-exit) with BGRUN_ID, BGRUN_RESULT,\n"
	"                        BGRUN_EXIT_CODE, BGRUN_SIGNAL, BGRUN_DURATION_MS,\n"
	"                        BGRUN_COMMAND, BGRUN_TAG, BGRUN_OUTPUT set\n"
	"      --no-on-exit      not the configuration's [on-exit] commands\n"
	"      --no-output       do not keep the output ($BGRUN_OUTPUT=none)\n"
	"      --split-output    keep stdout and stderr apart ($BGRUN_OUTPUT=split)\n"
	"      --max-output=SIZE keep at most the last SIZE bytes (512K, 16M, 1G;\n"
	"                        0: no cap; default 16M, $BGRUN_MAX_OUTPUT)\n"
	"      --no-keep-env     do not keep the command's environment for\n"
	"                        'bgrun restart' ($BGRUN_KEEP_ENV=no)\n"
	"\n"
	"bgrun logs ID prints a job's kept output; -f follows it until the job\n"
	"ends and exits with the job's status.\n"
	"  -h, --help            display this help and exit\n"
	"      --version         output version information and exit\n"
	"\n"
	"Exit status: 0 launched (with --wait: the command's status, 128+N for\n"
	"signal N, 124 if --timeout ended it, 137 if --kill-after did), 2 usage error, 125 bgrun failed (or, --strict-log, the log\n"
	"cannot be written: nothing launched), 126 COMMAND not executable,\n"
	"127 COMMAND not found.\n";

/*
 * s with its control characters escaped, so that every message stays on
 * one line. Valid until the fourth call after it.
 */
const char *cli_printable(const char *s)
{
	static char *ring[4];
	static unsigned int next;
	char *buf = malloc(4 * strlen(s) + 1), *q = buf;

	if (buf == NULL)
		return "(out of memory)";
	free(ring[next % 4]);
	ring[next++ % 4] = buf;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n' || *p == '\t') {
			*q++ = '\\';
			*q++ = *p == '\n' ? 'n' : 't';
		} else if (*p < 0x20 || *p == 0x7f)
			q += sprintf(q, "\\x%02x", *p);
		else
			*q++ = (char)*p;
	}
	*q = '\0';
	return buf;
}

/* Prints "bgrun: MESSAGE" on stderr, as one line. */
BGRUN__PRINTF(1, 0)
static void vmsg(const char *fmt, va_list ap)
{
	char line[8192];

	(void)vsnprintf(line, sizeof(line), fmt, ap);
	(void)fprintf(stderr, "bgrun: %s\n", line);
}

void cli_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

static const char try_help[] = "Try 'bgrun --help'.\n";

/* A usage error: the reason, the hint, exit status 2. */
BGRUN__PRINTF(1, 2) __attribute__((noreturn))
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	(void)fputs(try_help, stderr);
	exit(EXIT_USAGE);
}

/*
 * What getopt_long found wrong with arg ('?' or ':' in opt), said as
 * glibc's getopt says it, in every build: bgrun itself is built against
 * musl when it can be (launcher/meson.build), whose getopt words it
 * otherwise, and bgrun-full, which parses the same options, against
 * glibc.
 */
__attribute__((noreturn))
static void option_error(int opt, const char *arg)
{
	size_t len;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
		if (opt == ':')
			usage_error("option requires an argument -- '%c'", optopt);
		usage_error("invalid option -- '%c'", optopt);
	}
	len = strcspn(arg, "=");
	if (opt == ':')
		usage_error("option '%.*s' requires an argument", (int)len, arg);
	if (optopt != 0)
		usage_error("option '%.*s' doesn't allow an argument", (int)len,
			    arg);
	/* Unknown, or the start of more than one (each is listed). */
	char list[1024] = "";
	size_t used = 0;
	int n = 0;

	for (const struct option *o = longopts; o->name != NULL; o++)
		if (strncmp(o->name, arg + 2, len - 2) == 0 && used < sizeof(list)) {
			int w = snprintf(list + used, sizeof(list) - used,
					 " '--%s'", o->name);

			used += w > 0 ? (size_t)w : 0;
			n++;
		}
	if (n > 1)
		usage_error("option '%.*s' is ambiguous; possibilities:%s",
			    (int)len, arg, list);
	usage_error("unrecognized option '%s'", arg);
}

/* Flushes stdout; a write error (a full disk, a closed pipe) is ours. */
int cli_flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_msg("write error: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The supervisor reads $BGRUN_SINK when the command ends, its stderr long
 * gone: a wrong value is said now, before anything is launched. (Opening
 * a sink connects nothing: it reads the environment and copies paths.)
 */
#if BGRUN_CLI_LOG
static void check_sink(void)
{
	struct bgrun_sink *sink = NULL;

	if (bgrun_sink_new(&sink) < 0)
		return;
	if (bgrun_sink_open(sink, NULL) < 0) {
		cli_msg("%s", bgrun_sink_errmsg(sink));
		bgrun_sink_close(sink);
		exit(EXIT_CANCELED);
	}
	bgrun_sink_close(sink);
}
#endif

/*
 * A size as people type it: a decimal number of bytes, or with K, M, G
 * or T (powers of 1024, "KiB" and "KB" alike). -1 for anything else.
 */
static int64_t parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long n;
	int shift = 0;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end != '\0') {
		u = strchr(units, end[0] & ~0x20);
		if (end[0] == '\0' || u == NULL)
			return -1;
		shift = 10 * (int)(u - units + 1);
		end++;
		if ((end[0] == 'i' && (end[1] == 'B' || end[1] == 'b')))
			end += 2;
		else if (end[0] == 'B' || end[0] == 'b')
			end++;
		if (*end != '\0')
			return -1;
	}
	if (n > (unsigned long long)(INT64_MAX >> shift))
		return -1;
	return (int64_t)(n << shift);
}

#define SIZE_EXPECTED "expected bytes, or a number and K, M, G (512K, 16M)"

/* A boolean as Mercurial spells one: 1, 0, or -1 for anything else. */
static int parse_bool(const char *s)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}

/*
 * $BGRUN_OUTPUT, $BGRUN_MAX_OUTPUT and $BGRUN_KEEP_ENV ([output] in the
 * file): the defaults.
 */
static void output_defaults(struct cli *c)
{
	const char *mode = getenv("BGRUN_OUTPUT");
	const char *max = getenv("BGRUN_MAX_OUTPUT");
	const char *keep = getenv("BGRUN_KEEP_ENV");
	int b = 1;

	c->max_output = CLI_MAX_OUTPUT_DEFAULT;
	if (mode == NULL || mode[0] == '\0' || strcmp(mode, "merged") == 0)
		c->capture = CLI_CAPTURE_MERGED;
	else if (strcmp(mode, "split") == 0)
		c->capture = CLI_CAPTURE_SPLIT;
	else if (strcmp(mode, "none") == 0)
		c->capture = CLI_CAPTURE_NONE;
	else
		usage_error("invalid BGRUN_OUTPUT '%s' ([output] capture): "
			    "expected merged, split or none",
			    cli_printable(mode));
	if (max != NULL && max[0] != '\0' &&
	    (c->max_output = parse_size(max)) < 0)
		usage_error("invalid size '%s' for BGRUN_MAX_OUTPUT ([output] "
			    "max-size): " SIZE_EXPECTED, cli_printable(max));
	if (keep != NULL && keep[0] != '\0' && (b = parse_bool(keep)) < 0)
		usage_error("invalid BGRUN_KEEP_ENV '%s' ([output] keep-env): "
			    "expected yes or no", cli_printable(keep));
	c->keep_env = b != 0;
}

void cli_parse(struct cli *c, int argc, char **argv)
{
	bool output_opt = false;
	int64_t ns;
	int opt, r;

	*c = (struct cli){ .ensurestart = true, .log = true };

	/* Sized for the worst case: every argument an -E or a -u. */
	c->env_set = calloc((size_t)argc + 1, sizeof(*c->env_set));
	c->env_unset = calloc((size_t)argc + 1, sizeof(*c->env_unset));
	c->on_exit = calloc((size_t)argc + 1, sizeof(*c->on_exit));
	if (c->env_set == NULL || c->env_unset == NULL || c->on_exit == NULL) {
		cli_msg("%s", strerror(ENOMEM));
		exit(EXIT_CANCELED);
	}

	/*
	 * The leading '+' stops at COMMAND, so its options stay its own; the
	 * ':' and opterr = 0 leave the messages to option_error (the C
	 * libraries word their own differently). at: the argument being
	 * read, for them.
	 */
	argv[0] = (char *)"bgrun";
	output_defaults(c);
	opterr = 0;
	for (int at = optind;
	     (opt = getopt_long(argc, argv, "+:o:e:aC:E:u:i:swh", longopts,
				NULL)) != -1;
	     at = optind) {
		switch (opt) {
		case 'o':
		case 'e':
			/* The library takes "" for "no file" (EINVAL). */
			if (optarg[0] == '\0')
				usage_error("empty file name for -%c", opt);
			*(opt == 'o' ? &c->out_path : &c->err_path) = optarg;
			break;
		case 'a':
			c->append = true;
			break;
		case 'C':
			c->cwd = optarg;
			break;
		case 'E':
			if (optarg[0] == '=' || strchr(optarg, '=') == NULL)
				usage_error("invalid environment assignment '%s': expected NAME=VALUE",
					    cli_printable(optarg));
			c->env_set[c->n_set++] = optarg;
			break;
		case 'u':
			if (optarg[0] == '\0' || strchr(optarg, '=') != NULL)
				usage_error("invalid variable name '%s' for --unset",
					    cli_printable(optarg));
			c->env_unset[c->n_unset++] = optarg;
			break;
		case OPT_CLEAR_ENV:
			c->clear_env = true;
			break;
		case 'i':
			c->in_path = optarg;
			break;
		case 's':
			c->shell = true;
			break;
		case 'w':
			c->wait = true;
			break;
		case OPT_NO_ENSURESTART:
			c->ensurestart = false;
			break;
		case OPT_PRINT_PID:
			c->print_pid = true;
			break;
		case OPT_NO_LOG:
			c->log = false;
			break;
		case OPT_TAG:
			c->tag = optarg;
			break;
		case OPT_TIMEOUT:
		case OPT_KILL_AFTER:
			r = bgrun_parse_duration(optarg, &ns);
			if (r < 0 || ns == 0)
				usage_error("invalid duration '%s' for --%s: "
					    BGRUN_DURATION_EXPECTED,
					    cli_printable(optarg),
					    opt == OPT_TIMEOUT ? "timeout"
							       : "kill-after");
			*(opt == OPT_TIMEOUT ? &c->timeout_ns
					     : &c->kill_after_ns) = ns;
			break;
		case OPT_PRINT_ID:
			c->print_id = true;
			break;
		case OPT_DB:
			/* "" would be a relative nothing: ./.spool and worse. */
			if (optarg[0] == '\0')
				usage_error("empty file name for --db");
			c->db = optarg;
			break;
		case OPT_STRICT_LOG:
			c->strict_log = true;
			break;
		case OPT_ON_EXIT:
			if (optarg[0] == '\0')
				usage_error("empty command for --on-exit");
			c->on_exit[c->n_on_exit++] = optarg;
			break;
		case OPT_NO_ON_EXIT:
			c->no_on_exit = true;
			break;
		case OPT_NO_OUTPUT:
			c->capture = CLI_CAPTURE_NONE;
			break;
		case OPT_SPLIT_OUTPUT:
			c->capture = CLI_CAPTURE_SPLIT;
			output_opt = true;
			break;
		case OPT_NO_KEEP_ENV:
			c->keep_env = false;
			break;
		case OPT_MAX_OUTPUT:
			c->max_output = parse_size(optarg);
			if (c->max_output < 0)
				usage_error("invalid size '%s' for --max-output: "
					    SIZE_EXPECTED, cli_printable(optarg));
			output_opt = true;
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
#if BGRUN_CLI_LOG
			verbs_help(stdout);
#endif
			exit(cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS);
		case OPT_VERSION:
			(void)printf("bgrun %s\n", BGRUN_VERSION);
			exit(cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS);
		default:
			option_error(opt, argv[at]);
		}
	}
	if (optind >= argc)
		usage_error("missing command");
	c->cmd = &argv[optind];
#if BGRUN_CLI_LOG
	/* A verb is a reserved word (verbs.h), unless after "--". */
	if (verb_find(c->cmd[0]) != NULL && strcmp(argv[optind - 1], "--") != 0)
		usage_error("'%s' is a bgrun verb; to launch a program of that name: bgrun [OPTION]... -- %s ...",
			    c->cmd[0], c->cmd[0]);
#endif
	if (!c->log && (c->tag != NULL || c->timeout_ns > 0 || c->print_id ||
			c->strict_log || c->n_on_exit > 0))
		usage_error("--tag, --timeout, --print-id, --strict-log and --on-exit need the log; drop --no-log");
	if (!c->log && output_opt)
		usage_error("--split-output and --max-output need the log (it keeps the output); drop --no-log");
	if (c->kill_after_ns > 0 && c->timeout_ns == 0)
		usage_error("--kill-after needs --timeout");
#if !BGRUN_CLI_LOG
	/* The Windows supervisor (win-supervise.c) starts no notification. */
	if (c->n_on_exit > 0)
		usage_error("--on-exit is not in this build yet (the POSIX supervisor's)");
#endif
	if (c->log && c->print_pid && !c->ensurestart && !c->wait)
		usage_error("--print-pid needs the command started; drop --no-ensurestart");
#if BGRUN_CLI_LOG
	if (c->log)
		check_sink();
#endif
}

void cli_free(struct cli *c)
{
	free(c->env_set);
	free(c->env_unset);
	free(c->on_exit);
}

#if defined(_WIN32)
/*
 * Windows: the C runtime's stat has no inode (st_ino is 0), so only the
 * names can be compared, without case as the file system does.
 */
#define SHELL_NAME "cmd.exe"
#define PATH_SEPS "/\\:"
static bool same_file(const char *a, const char *b)
{
	return _stricmp(a, b) == 0;
}

/* "-" is bgrun's own stream; Windows has no /dev/stdout. */
static int stream_alias(const char *path, int own)
{
	return strcmp(path, "-") == 0 ? own : -1;
}
#else
#define SHELL_NAME "/bin/sh"
#define PATH_SEPS "/"
/* Whether two paths name one file: the same string, or the same inode. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, b) == 0)
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The descriptor of bgrun's that path names, or -1: "-" is bgrun's own
 * stream (own), /dev/stdout, /dev/stderr and /dev/fd/N its 1, 2 and N.
 * Those are given to the command as they are: opening /dev/stdout again
 * (O_TRUNC) would empty the file the caller redirected bgrun's stdout
 * to, and on a socket it fails.
 */
static int stream_alias(const char *path, int own)
{
	char *end;
	long n;

	if (strcmp(path, "-") == 0)
		return own;
	if (strcmp(path, "/dev/stdout") == 0)
		return 1;
	if (strcmp(path, "/dev/stderr") == 0)
		return 2;
	if (strncmp(path, "/dev/fd/", 8) != 0 || path[8] < '0' || path[8] > '9')
		return -1;
	n = strtol(path + 8, &end, 10);
	return *end == '\0' && n >= 0 && n <= 2 ? (int)n : -1;
}
#endif

/* An output stream as -o or -e names it (kind NULL: not named). */
static void output_stream(struct bgrun_stdio *s, const char *path, int own,
			  bool append)
{
	int fd;

	if (path == NULL)
		return;
	fd = stream_alias(path, own);
	if (fd == own) {
		s->kind = BGRUN_STDIO_INHERIT;
	} else if (fd >= 0) {
#if !defined(_WIN32)
		s->kind = BGRUN_STDIO_FD;
		s->fd = fd;
#endif
	} else {
		s->kind = BGRUN_STDIO_FILE;
		s->path = path;
		s->append = append;
	}
}

/*
 * Prints one line saying what failed and why, and returns the exit code:
 * only a failure to find or execute the program itself is 126 or 127.
 */
int cli_report_failure(const struct cli *c, int error,
		       const struct bgrun_failure *failure)
{
	const char *prog = c->shell ? SHELL_NAME : c->cmd[0];
	const char *name = cli_printable(prog);
	const char *why = bgrun_strerror(error);
	const char *path;

	switch (failure->stage) {
	case BGRUN_STAGE_EXEC:
		if (error == -ENOENT) {
			/* A name searched in PATH, or a path that is not there. */
			if (strpbrk(prog, PATH_SEPS) == NULL)
				cli_msg("%s: command not found", name);
			else
				cli_msg("%s: %s", name, why);
			return EXIT_ENOENT;
		}
		/* Resources bgrun lacks are not the command's fault: 125. */
		if (error == -E2BIG || error == -ENOMEM || error == -EMFILE ||
		    error == -ENFILE || error == -EAGAIN)
			break;
		cli_msg("%s: cannot execute: %s", name, why);
		return EXIT_CANNOT_INVOKE;
	case BGRUN_STAGE_CWD:
		cli_msg("cannot change directory to '%s': %s",
		    cli_printable(c->cwd != NULL ? c->cwd : "."), why);
		return EXIT_CANCELED;
	case BGRUN_STAGE_STDIN:
		if (c->in_path != NULL && strcmp(c->in_path, "-") == 0)
			cli_msg("cannot pass standard input to %s: %s", name, why);
		else
			cli_msg("cannot open '%s' for stdin: %s",
			    cli_printable(c->in_path != NULL ? c->in_path : "/dev/null"),
			    why);
		return EXIT_CANCELED;
	case BGRUN_STAGE_STDOUT:
	case BGRUN_STAGE_STDERR:
		path = failure->stage == BGRUN_STAGE_STDOUT ? c->out_path
							   : c->err_path;
		/* The library opens a FIFO without waiting for its reader. */
		if (error == -ENXIO)
			why = "a FIFO that no process reads";
		cli_msg("cannot open '%s' for %s: %s",
		    cli_printable(path != NULL ? path : "/dev/null"),
		    failure->stage == BGRUN_STAGE_STDOUT ? "stdout" : "stderr",
		    why);
		return EXIT_CANCELED;
	default:
		break;
	}
	cli_msg("cannot launch %s: %s", name, why);
	return EXIT_CANCELED;
}

/* The launch of COMMAND itself, as the options describe it. */
void cli_spawn_opts(const struct cli *c, struct bgrun_spawn_opts *opts)
{
	static const char *const no_env[] = { NULL };

	*opts = (struct bgrun_spawn_opts)BGRUN_SPAWN_OPTS_INIT;
	if (c->shell) {
		opts->shell = c->cmd[0];
		if (c->cmd[1] != NULL)
			opts->argv = (const char *const *)&c->cmd[1];
	} else {
		opts->argv = (const char *const *)c->cmd;
	}
	opts->env = c->clear_env ? no_env : NULL;
	opts->env_set = c->env_set;
	opts->env_unset = c->env_unset;
	opts->cwd = c->cwd;

	if (c->in_path != NULL && strcmp(c->in_path, "-") == 0) {
		opts->in.kind = BGRUN_STDIO_INHERIT;
	} else if (c->in_path != NULL) {
		opts->in.kind = BGRUN_STDIO_FILE;
		opts->in.path = c->in_path;
	}
	output_stream(&opts->out, c->out_path, 1, c->append);
	if (c->err_path != NULL && c->out_path != NULL &&
	    opts->out.kind == BGRUN_STDIO_FILE &&
	    stream_alias(c->err_path, 2) < 0 &&
	    same_file(c->out_path, c->err_path)) {
		/* Two opens would clobber each other; share one instead. */
		opts->err.kind = BGRUN_STDIO_STDOUT;
	} else {
		output_stream(&opts->err, c->err_path, 2, c->append);
	}
	opts->detach = !c->wait;
	opts->ensurestart = c->ensurestart;
}

int cli_status_code(const struct bgrun_status *st)
{
	return st->signaled ? 128 + st->signal : st->exit_code;
}
