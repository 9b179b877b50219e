/* SPDX-License-Identifier: MIT */
/* clone.c: `bgrun clone BUNDLE DEST`: apply a stream clone bundle, show progress, record it, fire the hooks. */

#include "clone-cli.h"
#include "bgrun.h"
#ifdef BGRUN_HAVE_CURL
#include "clone-http.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#include <io.h>
#endif

enum {
	OPT_CLOSE_THREADS = 256,
	OPT_CLOSE_THRESHOLD,
	OPT_WRITE_THREADS,
	OPT_CHUNK_SIZE,
	OPT_COPY_FILE_RANGE,
	OPT_HOOK,
	OPT_CONFIG,
	OPT_DB,
	OPT_NO_LOG,
	OPT_TIMEOUT,
	OPT_UPDATE,
	OPT_WAIT,
	OPT_INSECURE,
	OPT_CACERT,
	OPT_NO_CLONEBUNDLES,
	OPT_CLEANUP,
};

static const struct option longopts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "close-threads", required_argument, NULL, OPT_CLOSE_THREADS },
	{ "close-threshold", required_argument, NULL, OPT_CLOSE_THRESHOLD },
	{ "write-threads", required_argument, NULL, OPT_WRITE_THREADS },
	{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
	{ "copy-file-range", no_argument, NULL, OPT_COPY_FILE_RANGE },
	{ "hook", required_argument, NULL, OPT_HOOK },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "db", required_argument, NULL, OPT_DB },
	{ "no-log", no_argument, NULL, OPT_NO_LOG },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "update", optional_argument, NULL, OPT_UPDATE },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "cacert", required_argument, NULL, OPT_CACERT },
	{ "no-clonebundles", no_argument, NULL, OPT_NO_CLONEBUNDLES },
	{ "cleanup", no_argument, NULL, OPT_CLEANUP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char usage_text[] =
	"Usage: bgrun clone [OPTION]... BUNDLE|URL DEST\n"
	"  or:  bgrun clone --cleanup [DEST]\n"
	"Apply a Mercurial stream clone bundle to a new repository DEST, as\n"
	"'hg clone --stream -U' would make it: v1 (hg debugcreatestreamclonebundle)\n"
	"or v2 (hg bundle -a -t 'none-v2;stream=v2', what clonebundles serve).\n"
	"URL, http:// or https://, is a Mercurial server: a bundle2 stream clone\n"
	"is asked of it and applied while it downloads; DEST/.hg/hgrc names it.\n"
	"BUNDLE '-' is standard input. DEST must not exist or be empty; it appears\n"
	"complete or not at all.\n"
	"\n"
	"  -v, --verbose           say what happens (progress lines, settings, hooks)\n"
	"  -q, --quiet             no summary line\n"
	"      --close-threads=N   threads closing files in the background (default\n"
	"                          4, none behind writer threads; 0: close on the\n"
	"                          writing thread)\n"
	"      --close-threshold=N use them, and the writers, from N files on\n"
	"                          (default 2048)\n"
	"      --write-threads=N   threads creating and writing the files (default 2;\n"
	"                          0: all on the thread reading the bundle)\n"
	"      --chunk-size=SIZE   bundle read and file write size (default 1M)\n"
	"      --copy-file-range   copy file bytes in the kernel (BUNDLE a regular file)\n"
	"      --hook=CMD          shell command run in DEST after a successful clone\n"
	"                          (repeatable; named post-clone.cli1, .cli2...)\n"
	"      --config=FILE       hgrc-like file whose [hooks] post-clone[.NAME] run\n"
	"                          after success, fail-clone[.NAME] after a failure\n"
	"                          (read after the user's bgrun configuration file)\n"
	"      --db=PATH           the event log (default as for bgrun)\n"
	"      --no-log            record nothing; hooks are launched unsupervised\n"
	"  -U, --update[=REV]      run 'hg update' (to REV) in DEST as the hook\n"
	"                          post-clone.update, detached and logged\n"
	"      --wait              wait for the post-clone hooks to finish\n"
	"      --timeout=SECONDS   URL: give up after SECONDS without data (default 60)\n"
	"      --insecure          URL: do not verify the server's TLS certificate\n"
	"      --cacert=FILE       URL: the CA certificates to verify it with\n"
	"      --no-clonebundles   URL: ignore the server's clonebundles manifest\n"
	"      --cleanup           only remove what killed clones left where a clone\n"
	"                          to DEST (default: here) builds, and record them\n"
	"  -h, --help              display this help and exit\n"
	"\n"
	"Hooks run detached, with no terminal (stdio on /dev/null), through bgrun's\n"
	"supervisor (their finish is logged with source clone-hook and the hook's\n"
	"name as tag), with the environment plus HG_HOOKTYPE, HG_HOOKNAME,\n"
	"HG_SOURCE, HG_DEST, HG_FILES, HG_BYTES, HG_SECONDS, HG_REQUIREMENTS,\n"
	"HG_RESULT, BGRUN_CLONE_ID (the clone's event id) and, on failure, HG_ERROR.\n"
	"\n"
	"A clone killed outright (kill -9, a crash, a reboot) leaves its temporary\n"
	"directory .DEST.clone-XXXXXX; the next clone into the same directory, or\n"
	"--cleanup, removes it once its owner is gone, says so, and records the\n"
	"killed clone (event clone, result lost, under the id it had).\n"
	"\n"
	"Exit status: 0 cloned (even if a hook could not start), 1 the clone failed,\n"
	"2 usage error, 3 (with --wait) cloned but a post-clone hook failed or\n"
	"could not start, 128+N interrupted by signal N.\n";

struct clone_cli {
	const char *bundle, *dest, *db;
	bool verbose, quiet, log, wait, cleanup;
	long timeout;      /* URL: seconds without data before giving up */
	bool insecure, no_clonebundles;
	const char *cacert;
	struct hooks hooks;
	unsigned int n_cli_hooks;
	struct bgrun_clone_opts opts;
	char **argv;       /* for the event: "bgrun" "clone" ARGS... */
	/* Progress display. */
	bool tty;
	int64_t start_ns, last_ns;  /* last_ns: the last progress shown */
	bool announced, shown;
};

/* The environment of the hooks: NAME=VALUE strings, NULL-terminated. */
struct hook_env {
	char *v[16];
	size_t n;
};

BGRUN__PRINTF(2, 3)
static void env_add(struct hook_env *e, const char *fmt, ...)
{
	va_list ap;

	if (e->n + 1 >= sizeof(e->v) / sizeof(e->v[0]))
		return;
	va_start(ap, fmt);
	if (vasprintf(&e->v[e->n], fmt, ap) >= 0)
		e->n++;
	else
		e->v[e->n] = NULL;
	va_end(ap);
}

static void env_free(struct hook_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
}

static volatile sig_atomic_t cancel_signal;

static void on_signal(int sig)
{
	cancel_signal = sig;
}

__attribute__((noreturn))
static void usage_error(const char *msg, const char *arg)
{
	cli_msg("clone: %s%s%s", msg, arg ? ": " : "", arg ? cli_printable(arg) : "");
	(void)fputs("Try 'bgrun clone --help'.\n", stderr);
	exit(EXIT_USAGE);
}

/* A byte size: digits and an optional K, M or G (binary). */
static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno != 0 || s[0] == '-')
		usage_error("invalid size for --chunk-size", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end != '\0' || v < 512 || v > ((size_t)1 << 30))
		usage_error("invalid size for --chunk-size (512 to 1G)", s);
	return (size_t)v;
}

static unsigned long parse_count(const char *s, const char *opt,
				 unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || s[0] == '-' || v > max) {
		char what[64];

		(void)snprintf(what, sizeof(what), "invalid number for --%s", opt);
		usage_error(what, s);
	}
	return v;
}

/*
 * --update[=REV]: `hg update [-r REV]` in DEST, a post-clone hook like
 * the others (detached, logged, in the hooks' order), named
 * post-clone.update. The shell runs it, as every hook; REV is quoted.
 */
static int update_hook(struct clone_cli *cc, const char *rev)
{
	char *cmd, *q;
	size_t i, j;
	int r;

	if (rev == NULL || rev[0] == '\0')
		return hooks_set(&cc->hooks, "post-clone.update", "hg update");
	q = malloc(4 * strlen(rev) + 3);
	if (q == NULL)
		return -ENOMEM;
	j = 0;
	q[j++] = '\'';
	for (i = 0; rev[i] != '\0'; i++) {
		if (rev[i] == '\'') {
			memcpy(q + j, "'\\''", 4);
			j += 4;
		} else {
			q[j++] = rev[i];
		}
	}
	q[j++] = '\'';
	q[j] = '\0';
	r = asprintf(&cmd, "hg update -r %s", q);
	free(q);
	if (r < 0)
		return -ENOMEM;
	r = hooks_set(&cc->hooks, "post-clone.update", cmd);
	free(cmd);
	return r;
}

static void parse(struct clone_cli *cc, int argc, char **argv)
{
	char *err = NULL, *user = NULL, name[64];
	int opt;

	cc->opts = (struct bgrun_clone_opts)BGRUN_CLONE_OPTS_INIT;
	/* Recorded in both builds (on Windows its hooks by bgrun-supervise.exe). */
	cc->log = true;
	cc->timeout = 60;
	/* The user's configuration's [hooks] first, as hg reads its hgrc. */
	if (bgrun_config_default_path(&user) == 0 &&
	    hooks_load(&cc->hooks, user, true, &err) < 0) {
		cli_msg("clone: %s", err != NULL ? err : strerror(ENOMEM));
		exit(EXIT_USAGE);
	}
	free(user);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+vqhU", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			cc->verbose = true;
			break;
		case 'q':
			cc->quiet = true;
			break;
		case OPT_CLOSE_THREADS:
			cc->opts.close_threads = (int)parse_count(optarg,
							"close-threads", 64);
			break;
		case OPT_CLOSE_THRESHOLD:
			cc->opts.close_threshold = parse_count(optarg,
							"close-threshold", ULONG_MAX);
			if (cc->opts.close_threshold == 0)
				cc->opts.close_threshold = 1;
			break;
		case OPT_WRITE_THREADS:
			cc->opts.write_threads = (int)parse_count(optarg,
							"write-threads", 64);
			break;
		case OPT_CHUNK_SIZE:
			cc->opts.chunk_size = parse_size(optarg);
			break;
		case OPT_COPY_FILE_RANGE:
			cc->opts.copy_file_range = true;
			break;
		case OPT_HOOK:
			(void)snprintf(name, sizeof(name), "post-clone.cli%u",
				       ++cc->n_cli_hooks);
			if (hooks_set(&cc->hooks, name, optarg) < 0) {
				cli_msg("clone: %s", strerror(ENOMEM));
				exit(1);
			}
			break;
		case OPT_CONFIG:
			if (hooks_load(&cc->hooks, optarg, false, &err) < 0) {
				cli_msg("clone: %s", err != NULL ? err : strerror(ENOMEM));
				free(err);
				exit(1);
			}
			break;
		case OPT_DB:
			cc->db = optarg;
			break;
		case OPT_NO_LOG:
			cc->log = false;
			break;
		case OPT_CLEANUP:
			cc->cleanup = true;
			break;
		case OPT_TIMEOUT:
			cc->timeout = (long)parse_count(optarg, "timeout", 86400);
			if (cc->timeout == 0)
				usage_error("--timeout must be at least 1", NULL);
			break;
		case 'U':
		case OPT_UPDATE:
			if (update_hook(cc, optarg) < 0) {
				cli_msg("clone: %s", strerror(ENOMEM));
				exit(1);
			}
			break;
		case OPT_WAIT:
			cc->wait = true;
			break;
		case OPT_INSECURE:
			cc->insecure = true;
			break;
		case OPT_CACERT:
			if (optarg[0] == '\0')
				usage_error("empty --cacert", NULL);
			cc->cacert = optarg;
			break;
		case OPT_NO_CLONEBUNDLES:
			cc->no_clonebundles = true;
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			exit(cli_flush_stdout() < 0 ? EXIT_CANCELED : EXIT_SUCCESS);
		default:
			(void)fputs("Try 'bgrun clone --help'.\n", stderr);
			exit(EXIT_USAGE);
		}
	}
	if (cc->cleanup) {
		if (argc - optind > 1)
			usage_error("too many arguments", NULL);
		cc->dest = argc - optind == 1 ? argv[optind] : NULL;
		if (cc->dest != NULL && cc->dest[0] == '\0')
			usage_error("empty DEST", NULL);
		return;
	}
	if (argc - optind != 2)
		usage_error(argc - optind < 2 ? "missing BUNDLE or DEST"
					      : "too many arguments", NULL);
	cc->bundle = argv[optind];
	cc->dest = argv[optind + 1];
	if (cc->dest[0] == '\0')
		usage_error("empty DEST", NULL);
}

static void human(char *out, size_t size, double bytes)
{
	if (bytes >= 1e9)
		(void)snprintf(out, size, "%.2f GB", bytes / 1e9);
	else
		(void)snprintf(out, size, "%.1f MB", bytes / 1e6);
}

/*
 * The progress callback: at most ten times a second on a terminal
 * (files, bytes, throughput, ETA, on one line redrawn in place), once a
 * second as plain lines with -v, nothing otherwise.
 */
static void progress(void *data, const struct bgrun_clone_progress *p)
{
	struct clone_cli *cc = data;
	int64_t now = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	double secs, rate, eta;
	char done[32], total[32];

	if (!cc->announced) {
		cc->announced = true;
		if (cc->verbose) {
			human(total, sizeof(total), (double)p->bytes_total);
			cli_msg("clone: %s: %" PRIu64 " files, %s", cli_printable(cc->bundle),
				p->files_total, total);
		}
	}
	if (!cc->tty && !cc->verbose)
		return;
	if (cc->shown && now - cc->last_ns < (cc->tty ? 100000000 : 1000000000))
		return;
	cc->shown = true;
	cc->last_ns = now;
	secs = (double)(now - cc->start_ns) / 1e9;
	rate = secs > 0 ? (double)p->bytes_done / secs : 0;
	eta = rate > 0 ? (double)(p->bytes_total - p->bytes_done) / rate : 0;
	human(done, sizeof(done), (double)p->bytes_done);
	human(total, sizeof(total), (double)p->bytes_total);
	(void)fprintf(stderr, "%s%" PRIu64 "/%" PRIu64 " files, %s/%s, %.1f MB/s, ETA %.0f s%s",
		      cc->tty ? "\r" : "bgrun: clone: ", p->files_done,
		      p->files_total, done, total, rate / 1e6, eta,
		      cc->tty ? "\033[K" : "\n");
}

#if defined(_WIN32)
/*
 * Windows: DEST made absolute by the C runtime (_fullpath: a drive, or
 * a server and share, and '\\' between components); bgrun's standard
 * input as the handle the clone reads.
 */
static char *absolute(const char *path)
{
	char *out = _fullpath(NULL, path, 0);

	return out != NULL ? out : strdup(path);
}

static bgrun_os_fd_t stdin_fd(void)
{
	intptr_t h = _get_osfhandle(0);

	return h == -1 ? BGRUN_OS_FD_NONE : (bgrun_os_fd_t)h;
}
#else
/* DEST as an absolute path (it need not exist). */
static char *absolute(const char *path)
{
	char here[PATH_MAX], *out;

	if (path[0] == '/')
		return strdup(path);
	if (getcwd(here, sizeof(here)) == NULL)
		return strdup(path);
	return asprintf(&out, "%s/%s", here, path) < 0 ? NULL : out;
}

static bgrun_os_fd_t stdin_fd(void)
{
	return STDIN_FILENO;
}
#endif

/* Writes ev to the log (--db, or the default), or says why not. */
static void put_event(struct clone_cli *cc, const struct bgrun_event *ev)
{
	struct bgrun_store *store = NULL;
	char *path = NULL;
	int r;

	r = cc->db != NULL ? 0 : bgrun_store_default_path(&path);
	if (r >= 0)
		r = bgrun_store_new(&store);
	if (r < 0) {
		cli_msg("clone: cannot record the clone: %s", bgrun_strerror(r));
		goto out;
	}
	r = bgrun_store_open(store, cc->db != NULL ? cc->db : path, 0);
	if (r >= 0)
		r = bgrun_store_put(store, ev);
	if (r < 0)
		cli_msg("clone: cannot record the clone: %s",
			bgrun_store_errmsg(store));
out:
	bgrun_store_close(store);
	free(path);
}

/* Records the clone as an event (event "clone", source "bgrun"). */
static void record(struct clone_cli *cc, const char *id, int64_t start_ns,
		   int64_t duration_ns, bool ok, const char *message,
		   const struct bgrun_clone_result *res, const char *dest_abs)
{
	struct bgrun_event ev;
	char json[256];

	if (!cc->log)
		return;
	bgrun_event_init(&ev, "clone", "bgrun");
	(void)snprintf(ev.id, sizeof(ev.id), "%s", id);
	ev.pid = getpid();
	ev.argv = (const char *const *)cc->argv;
	ev.cwd = dest_abs;
	ev.start_ns = start_ns;
	ev.end_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	ev.duration_ns = duration_ns;
	ev.exit_code = ok ? 0 : 1;
	ev.result = ok ? BGRUN_RESULT_SUCCESS : BGRUN_RESULT_FAILED;
	ev.message = message;
	if (res != NULL) {
		(void)snprintf(json, sizeof(json),
			       "{\"files\":%" PRIu64 ",\"bytes\":%" PRIu64
			       ",\"close_threads\":%u,\"write_threads\":%u"
			       ",\"chunk_size\":%zu}",
			       res->files, res->bytes, res->close_threads,
			       res->write_threads, res->chunk_size);
		ev.options_json = json;
	}
	put_event(cc, &ev);
}

/* Whether id is one the store accepts (1 to 36 of [0-9A-Za-z._-]). */
static bool valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > BGRUN_EVENT_ID_MAX)
		return false;
	return strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz"
			  "ABCDEFGHIJKLMNOPQRSTUVWXYZ._-") == n;
}

/*
 * A killed clone was found (its temporary directory removed, or nothing
 * left of it but its owner file): says so, and records that clone, under
 * the id it had (it never recorded its end), as lost: nobody knows how
 * it ended, though one that had finished left a whole repository.
 */
static void stale_found(void *data, const struct bgrun_clone_stale *s)
{
	static const char *const left[] = {
		[BGRUN_CLONE_LEFT_TEMPORARY] = "temporary",
		[BGRUN_CLONE_LEFT_FINISHED] = "finished",
		[BGRUN_CLONE_LEFT_NOTHING] = "nothing",
	};
	struct clone_cli *cc = data;
	const char *base = strrchr(s->path, '/'), *end, *by;
	char *dest = NULL, *abs = NULL, msg[1024];
	struct bgrun_event ev;
	const char *kv[9];
	unsigned int l = (unsigned int)s->left <= BGRUN_CLONE_LEFT_NOTHING
				 ? (unsigned int)s->left : BGRUN_CLONE_LEFT_NOTHING;

	by = cc->cleanup ? "bgrun clone --cleanup" : "a later clone";
	if (!cc->quiet && l == BGRUN_CLONE_LEFT_TEMPORARY)
		cli_msg("clone: removed %s, left by a killed clone (pid %" PRId64 ")",
			cli_printable(s->path), s->pid);
	else if (!cc->quiet && l == BGRUN_CLONE_LEFT_FINISHED)
		cli_msg("clone: %s: a clone (pid %" PRId64 ") finished it but was killed before it recorded its end",
			cli_printable(s->dest), s->pid);
	else if (!cc->quiet)
		cli_msg("clone: %s: a clone (pid %" PRId64 ") was killed before it recorded its end; it left nothing",
			cli_printable(s->dest), s->pid);
	if (!cc->log)
		return;
	/* DIR/.NAME.clone-XXXXXX: the clone was making DIR/NAME. */
	base = base != NULL ? base + 1 : s->path;
	end = strstr(base, ".clone-");
	if (base[0] == '.' && end != NULL &&
	    asprintf(&dest, "%.*s%.*s", (int)(base - s->path), s->path,
		     (int)(end - base - 1), base + 1) >= 0)
		abs = absolute(dest);
	bgrun_event_init(&ev, "clone", "bgrun");
	if (valid_id(s->id))
		(void)snprintf(ev.id, sizeof(ev.id), "%s", s->id);
	if (s->boot_id[0] != '\0')
		ev.boot_id = s->boot_id;
	ev.pid = s->pid;
	ev.cwd = abs != NULL ? abs : dest;
	ev.start_ns = s->start_ns;
	ev.result = BGRUN_RESULT_LOST;
	if (l == BGRUN_CLONE_LEFT_TEMPORARY)
		(void)snprintf(msg, sizeof(msg),
			       "killed before it finished: its temporary directory %s was removed by %s",
			       s->path, by);
	else if (l == BGRUN_CLONE_LEFT_FINISHED)
		(void)snprintf(msg, sizeof(msg),
			       "killed after it finished (the repository is whole), before it recorded its end; found by %s",
			       by);
	else
		(void)snprintf(msg, sizeof(msg),
			       "killed before its temporary directory, or after its failure; found by %s",
			       by);
	ev.message = msg;
	kv[0] = "temporary";
	kv[1] = s->path;
	kv[2] = "dest";
	kv[3] = s->dest;
	kv[4] = "removed_by";
	kv[5] = cc->cleanup ? "cleanup" : "clone";
	kv[6] = "left";
	kv[7] = left[l];
	kv[8] = NULL;
	ev.options_kv = kv;
	put_event(cc, &ev);
	free(abs);
	free(dest);
}

#ifdef SA_RESTART
static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	/* No SA_RESTART: a blocked read of the bundle returns EINTR. */
	(void)sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void)sigaction(sigs[i], &sa, NULL);
}
#else
/*
 * Windows: the C runtime's signal() for Ctrl+C and Ctrl+Break (SIGINT,
 * SIGBREAK, on a thread of their own) and SIGTERM; the clone looks at
 * the flag between reads and writes.
 */
static void install_signals(void)
{
	(void)signal(SIGINT, on_signal);
	(void)signal(SIGTERM, on_signal);
#ifdef SIGBREAK
	(void)signal(SIGBREAK, on_signal);
#endif
}
#endif

/* bgrun clone --cleanup [DEST]. */
static int cleanup(struct clone_cli *cc)
{
	struct bgrun_clone *clone = NULL;
	int r;

	r = bgrun_clone_new(&clone);
	if (r >= 0)
		r = bgrun_clone_cleanup(clone, cc->dest, stale_found, cc);
	if (r < 0) {
		cli_msg("clone: --cleanup: %s",
			cli_printable(clone != NULL ? bgrun_clone_errmsg(clone)
						    : bgrun_strerror(r)));
		bgrun_clone_close(clone);
		return 1;
	}
	if (cc->verbose)
		cli_msg("clone: --cleanup: %d killed clone%s found", r,
			r == 1 ? "" : "s");
	bgrun_clone_close(clone);
	return 0;
}

int clone_main(int argc, char **argv)
{
	struct clone_cli cc = { 0 };
	struct bgrun_clone_result res;
	char id[BGRUN_EVENT_ID_MAX + 1], summary[256], size[32];
	struct bgrun_clone *clone = NULL;
	char *errmsg = NULL, *dest_abs = NULL;
	struct hook_env env = { .n = 0 };
#ifdef BGRUN_HAVE_CURL
	struct clone_http *http = NULL;
	struct clone_http_opts http_opts;
	int http_fd = -1;
#endif
	int64_t start_real;
	int r, status;

	cc.argv = calloc((size_t)argc + 2, sizeof(*cc.argv));
	if (cc.argv == NULL) {
		cli_msg("clone: %s", strerror(ENOMEM));
		return 1;
	}
	cc.argv[0] = (char *)"bgrun";
	memcpy(&cc.argv[1], argv, (size_t)argc * sizeof(*argv));
	parse(&cc, argc, argv);
	if (cc.cleanup) {
		status = cleanup(&cc);
		free(cc.argv);
		hooks_free(&cc.hooks);
		return status;
	}
	dest_abs = absolute(cc.dest);
	cc.tty = isatty(STDERR_FILENO) == 1;
	cc.opts.dest = cc.dest;
	if (strcmp(cc.bundle, "-") == 0) {
		cc.opts.bundle = "stdin";
		cc.opts.bundle_fd = stdin_fd();
	} else {
		cc.opts.bundle = cc.bundle;
	}
	cc.opts.progress = progress;
	cc.opts.progress_data = &cc;
	cc.opts.cancel = &cancel_signal;
	cc.opts.stale = stale_found;
	cc.opts.stale_data = &cc;
	install_signals();

	bgrun_event_new_id(id);
	start_real = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	cc.opts.id = id;
	cc.opts.start_ns = start_real;
	cc.start_ns = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	r = bgrun_clone_new(&clone);
	if (r >= 0 && (strncmp(cc.bundle, "http://", 7) == 0 ||
	    strncmp(cc.bundle, "https://", 8) == 0)) {
#ifdef BGRUN_HAVE_CURL
		http_opts = (struct clone_http_opts){
			.timeout = cc.timeout, .insecure = cc.insecure,
			.cacert = cc.cacert, .no_clonebundles = cc.no_clonebundles };
		r = clone_http_start(cc.bundle, &http_opts, &http_fd, &http,
				     &errmsg);
		cc.opts.bundle_fd = http_fd;
		if (r >= 0 && cc.verbose && clone_http_bundle_url(http) != NULL)
			cli_msg("clone: %s: using the clone bundle %s",
				cli_printable(cc.bundle),
				cli_printable(clone_http_bundle_url(http)));
		if (r >= 0 && cc.verbose && clone_http_legacy(http))
			cli_msg("clone: %s: no bundle2 stream offered: using the legacy stream_out",
				cli_printable(cc.bundle));
#else
		r = -EPROTONOSUPPORT;
		if (asprintf(&errmsg, BGRUN_CLI_LOG
			     ? "%s: cloning from a server needs libcurl (this bgrun was built without it)"
			     : "%s: cloning from a server is not supported in this build (Windows): clone from a bundle file",
			     cc.bundle) < 0)
			errmsg = NULL;
#endif
	}
	if (r >= 0) {
		r = bgrun_clone(clone, &cc.opts, &res);
		/* NULL if even that fails: then bgrun_strerror(r). */
		if (r < 0)
			errmsg = strdup(bgrun_clone_errmsg(clone));
	}
#ifdef BGRUN_HAVE_CURL
	if (http != NULL) {
		char *herr = NULL;

		/*
		 * A transfer that failed (timeout, HTTP error, not a bundle)
		 * explains a clone that failed on a cut bundle better.
		 */
		if (clone_http_finish(http, http_fd, &herr) < 0 && r < 0 &&
		    herr != NULL) {
			free(errmsg);
			errmsg = herr;
			herr = NULL;
		}
		free(herr);
		/*
		 * The clone is in place: what follows completes it as hg
		 * clone would, and a failure is reported (the repository is
		 * usable, only without bookmarks or a default path).
		 */
		if (r >= 0)
			r = clone_http_bookmarks(cc.bundle, &http_opts, cc.dest,
				strstr(res.requirements, "bookmarksinstore") != NULL,
				&errmsg);
		if (r >= 0 && (r = clone_http_write_hgrc(cc.dest, cc.bundle)) < 0 &&
		    asprintf(&errmsg, "%s/.hg/hgrc: %s", cc.dest, strerror(-r)) < 0)
			errmsg = NULL;
	}
#endif
	if (cc.tty && cc.shown)
		(void)fputs("\r\033[K", stderr);

	env_add(&env, "HG_SOURCE=%s", cc.bundle);
	env_add(&env, "HG_DEST=%s", dest_abs != NULL ? dest_abs : cc.dest);
	env_add(&env, "BGRUN_CLONE_ID=%s", id);
	if (r < 0) {
		const char *why = errmsg != NULL ? errmsg : bgrun_strerror(r);

		cli_msg("clone: %s", cli_printable(why));
		record(&cc, id, start_real, bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) - cc.start_ns, false, why,
		       NULL, dest_abs);
		env_add(&env, "HG_RESULT=1");
		env_add(&env, "HG_ERROR=%s", why);
		(void)hooks_run(&cc.hooks, &(struct hook_run){
			.type = "fail-clone", .env = (const char *const *)env.v,
			.db = cc.db,
			.log = cc.log, .verbose = cc.verbose });
		status = r == -ECANCELED && cancel_signal ? 128 + cancel_signal : 1;
		goto out;
	}
	human(size, sizeof(size), (double)res.bytes);
	(void)snprintf(summary, sizeof(summary), "%" PRIu64 " files, %s in %.2f s",
		       res.files, size, (double)res.duration_ns / 1e9);
	if (cc.verbose)
		cli_msg("clone: stream bundle v%u; requirements %s; %zu-byte chunks%s; %u closer threads; %u writer threads",
			res.bundle_version, res.requirements, res.chunk_size,
			cc.opts.copy_file_range ? ", copy_file_range" : "",
			res.close_threads, res.write_threads);
	record(&cc, id, start_real, res.duration_ns, true, summary, &res,
	       dest_abs);
	if (!cc.quiet) {
		(void)printf("%s (%.1f MB/s)\n", summary,
			     res.duration_ns > 0 ? (double)res.bytes * 1e3 /
							   (double)res.duration_ns
						 : 0.0);
		(void)cli_flush_stdout();
	}
	env_add(&env, "HG_FILES=%" PRIu64, res.files);
	env_add(&env, "HG_BYTES=%" PRIu64, res.bytes);
	env_add(&env, "HG_SECONDS=%.3f", (double)res.duration_ns / 1e9);
	env_add(&env, "HG_REQUIREMENTS=%s", res.requirements);
	env_add(&env, "HG_RESULT=0");
	/*
	 * A hook that cannot start is reported; the clone stands. With
	 * --wait, a hook that failed is the exit status's business too.
	 */
	status = hooks_run(&cc.hooks, &(struct hook_run){
		.type = "post-clone", .cwd = dest_abs != NULL ? dest_abs : cc.dest,
		.env = (const char *const *)env.v, .db = cc.db, .log = cc.log,
		.verbose = cc.verbose, .wait = cc.wait }) != 0 && cc.wait ? 3 : 0;
out:
	env_free(&env);
	free(errmsg);
	bgrun_clone_close(clone);
	free(dest_abs);
	free(cc.argv);
	hooks_free(&cc.hooks);
	return status;
}
