/* SPDX-License-Identifier: MIT */
/* logsink.c: the logsink command: global options, the verb table, opening the log. */

#include "logsink.h"
#include "sink-verbs.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The verbs; each parses its own options after the verb. `serve` and
 * `send` are the sink's (sink-verbs.h).
 */
static const struct lsink_verb verbs[] = {
	{ "query", "ls", "list events, newest first", lsink_query_main },
	{ "show", NULL, "everything about one event", lsink_show_main },
	{ "stats", NULL, "runs, failures and durations per command",
	  lsink_stats_main },
	{ "prune", NULL, "delete old events", lsink_prune_main },
	{ "mark-lost", NULL,
	  "record as lost the running events whose supervisor vanished",
	  lsink_mark_lost_main },
	{ "status", NULL,
	  "where the log is, whether it can be written, spool and drops",
	  lsink_status_main },
	{ "pg-init", NULL,
	  "create the fleet table in PostgreSQL (done by serve --forward too)",
	  lsink_pg_init_main },
	{ "serve", NULL, "run the sink daemon (events in, acks after commit)",
	  lsink_serve_main },
	{ "send", NULL, "record one event (or Mercurial's logtoprocess event)",
	  lsink_send_main },
};

static const char usage_head[] =
	"Usage: logsink [--db=PATH] COMMAND [OPTION]... [ARG]...\n"
	"Read the event log that bgrun writes: one event per launched command.\n"
	"\n"
	"Commands:\n";

static const char usage_tail[] =
	"\n"
	"Options (before or after COMMAND):\n"
	"      --db=PATH  the event log (default: $BGRUN_DB, else\n"
	"                 $XDG_STATE_HOME/bgrun/events.db, else\n"
	"                 ~/.local/state/bgrun/events.db)\n"
	"  -h, --help     display this help and exit ('logsink COMMAND --help':\n"
	"                 the options of COMMAND)\n"
	"      --version  output version information and exit\n"
	"\n"
	"query, show and stats only read the log and never create it. Where\n"
	"no log exists yet (nothing was recorded) they answer as for an empty\n"
	"log; so do prune and mark-lost. A --db that names no file is an error.\n"
	"\n"
	"\n"
	"BGRUN_NOW, if set, is a TIME used as now (for tests: see 'logsink query\n"
	"--help' for TIME).\n"
	"\n"
	"Exit status: 0 done, 1 failure (an unreadable log, no such event),\n"
	"2 usage error.\n";

static const struct option global_options[] = {
	{ "db", required_argument, NULL, LSINK_OPT_DB },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, LSINK_OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

void lsink_open_error_text(char *buf, size_t size, const char *path,
			   int error, const char *errmsg)
{
	struct stat st;

	switch (error) {
	case -ENOENT:
		if (stat(path, &st) < 0) {
			(void)snprintf(buf, size, "cannot open '%s': %s",
				       lsink_printable(path), strerror(errno));
			return;
		}
		/* There, but nothing was ever written to it. */
		(void)snprintf(buf, size,
			       "'%s': an empty database (no events recorded yet)",
			       lsink_printable(path));
		return;
	case -EBADMSG:
		(void)snprintf(buf, size, "'%s': not a bgrun event database",
			       lsink_printable(path));
		return;
	case -EPROTO:
		/* The store says which schema version and what to do. */
		if (errmsg != NULL) {
			(void)snprintf(buf, size, "%s", lsink_printable(errmsg));
			return;
		}
		break;
	default:
		break;
	}
	(void)snprintf(buf, size, "cannot open '%s': %s", lsink_printable(path),
		       bgrun_strerror(error));
}

/* The message for a store that cannot be opened, from what went wrong. */
static void open_error(const char *path, int error, const char *errmsg)
{
	char line[1024];

	lsink_open_error_text(line, sizeof(line), path, error, errmsg);
	lsink_msg("%s", line);
}

int lsink_open(const char *db, unsigned flags, struct bgrun_store **ret_store)
{
	bool readonly = (flags & LSINK_OPEN_READONLY) != 0;
	bool given = db != NULL, missing;
	struct bgrun_store *store = NULL;
	char *path = NULL;
	struct stat st;
	int r;

	if (db == NULL) {
		r = bgrun_store_default_path(&path);
		if (r == -ENOENT) {
			lsink_msg("no event log: set BGRUN_DB, XDG_STATE_HOME or HOME, or use --db");
			return r;
		}
		if (r < 0) {
			lsink_msg("%s", bgrun_strerror(r));
			return r;
		}
		db = path;
	}
	missing = stat(db, &st) < 0;
	r = missing ? -errno : 0;
	/*
	 * No log yet where the log is kept: nothing was recorded, which is
	 * an empty answer, not an error. A --db naming no file is a mistake.
	 */
	if (r == -ENOENT && !given && (flags & LSINK_OPEN_MISSING_OK)) {
		*ret_store = NULL;
		r = 0;
		goto out;
	}
	/*
	 * Writing verbs work on an existing log only: a mistyped --db must
	 * not leave a new database (and its directories) behind.
	 */
	if (!readonly && missing) {
		open_error(db, r, NULL);
		goto out;
	}
	r = bgrun_store_new(&store);
	if (r < 0) {
		open_error(db, r, NULL);
		goto out;
	}
	r = bgrun_store_open(store, db, readonly ? BGRUN_STORE_READONLY : 0);
	if (r < 0) {
		/* A database nothing was written to yet: empty too. */
		if (r == -ENOENT && !missing && (flags & LSINK_OPEN_MISSING_OK)) {
			bgrun_store_close(store);
			*ret_store = NULL;
			r = 0;
			goto out;
		}
		open_error(db, r, bgrun_store_errmsg(store));
		bgrun_store_close(store);
		goto out;
	}
	*ret_store = store;
	if (readonly)
		lsink_warn_pending(db);
out:
	free(path);
	return r;
}

void lsink_warn_pending(const char *db)
{
	int64_t waiting = 0, dropped = 0;

	if (bgrun_sink_spool_count(db, &waiting, NULL) == 0 && waiting > 0)
		lsink_msg("%lld events wait in the spool %s.spool and are not "
			  "shown (the next writer that works stores them; "
			  "see 'logsink status')", (long long)waiting,
			  lsink_printable(db));
	if (bgrun_sink_dropped_count(NULL, db, &dropped) == 0 && dropped > 0)
		lsink_msg("%lld events could not be recorded at all since the "
			  "machine started (see 'logsink status')",
			  (long long)dropped);
}

void lsink_store_error(struct bgrun_store *store, int error, const char *what)
{
	const char *why = bgrun_store_errmsg(store);

	if (why == NULL || why[0] == '\0')
		why = bgrun_strerror(error);
	lsink_msg("%s: %s", what, lsink_printable(why));
}

__attribute__((noreturn))
static void help(void)
{
	(void)fputs(usage_head, stdout);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		char names[64];

		(void)snprintf(names, sizeof(names), "%s%s%s", verbs[i].name,
			       verbs[i].alias != NULL ? ", " : "",
			       verbs[i].alias != NULL ? verbs[i].alias : "");
		(void)printf("  %-14s %s\n", names, verbs[i].summary);
	}
	lsink_help(usage_tail);
}

struct bgrun_config *lsink_config;

/* The user's configuration: a broken one is a usage error, said once. */
static void read_config(void)
{
	if (bgrun_config_new(&lsink_config) < 0) {
		lsink_config = NULL;
		return;
	}
	if (bgrun_config_read_user(lsink_config) < 0) {
		(void)fprintf(stderr, "logsink: %s\n",
			      bgrun_config_errmsg(lsink_config));
		exit(LSINK_EXIT_USAGE);
	}
}

int main(int argc, char **argv)
{
	const char *db = NULL;
	int opt;

	/* For the width of characters when a table is cut to the terminal. */
	(void)setlocale(LC_CTYPE, "");
	argv[0] = (char *)"logsink";
	read_config();
	/* '+': stop at the verb; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+h", global_options, NULL)) != -1) {
		switch (opt) {
		case LSINK_OPT_DB:
			db = optarg;
			break;
		case 'h':
			help();
		case LSINK_OPT_VERSION:
			(void)printf("logsink %s\n", BGRUN_VERSION);
			return lsink_flush_stdout() != 0 ? LSINK_EXIT_FAILURE
							 : EXIT_SUCCESS;
		default:
			lsink_usage_hint();
		}
	}
	if (optind >= argc)
		lsink_usage("missing command (query, show, stats, status, prune, mark-lost)");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		const struct lsink_verb *v = &verbs[i];

		if (strcmp(argv[optind], v->name) == 0 ||
		    (v->alias != NULL && strcmp(argv[optind], v->alias) == 0)) {
			argv[optind] = (char *)v->name;
			return v->run(argc - optind, argv + optind, db);
		}
	}
	lsink_usage("unknown command '%s'", lsink_printable(argv[optind]));
}
