/* SPDX-License-Identifier: MIT */
/* logsink.h: private declarations shared by the files of the logsink command. */

#ifndef LSINK_H
#define LSINK_H

#include "bgrun.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Exit codes: 0 done, 1 a failure (no such event, unreadable log), 2 usage. */
enum {
	LSINK_EXIT_FAILURE = 1,
	LSINK_EXIT_USAGE = 2,
};

/* Long options shared by every verb (values above any short option). */
enum {
	LSINK_OPT_DB = 256,
	LSINK_OPT_VERSION,
	LSINK_OPT_FIRST_VERB, /* the verbs number theirs from here */
};

/* The struct option entries every verb has (no terminator). */
#define LSINK_COMMON_OPTIONS \
	{ "db", required_argument, NULL, LSINK_OPT_DB }, \
	{ "help", no_argument, NULL, 'h' }

/* Their help lines. */
#define LSINK_COMMON_HELP \
	"      --db=PATH      the event log (see 'logsink --help')\n" \
	"  -h, --help         display this help and exit\n"

/*
 * A verb: `logsink NAME ...`. run() gets the verb's arguments (argv[0] is
 * the verb's name) and the database path given before the verb (NULL:
 * none), and returns the exit code.
 */
struct lsink_verb {
	const char *name;
	const char *alias;   /* another name, or NULL */
	const char *summary; /* one line for `logsink --help` */
	int (*run)(int argc, char **argv, const char *db);
};

/* msg.c: messages, usage errors, help; logsink.c: opening the store. */

/* "logsink: MESSAGE" on stderr, one line. */
BGRUN__PRINTF(1, 2)
void lsink_msg(const char *fmt, ...);

/* A usage error: the message, "Try 'logsink --help'.", exit 2. */
BGRUN__PRINTF(1, 2) __attribute__((noreturn))
void lsink_usage(const char *fmt, ...);

/* After getopt has printed its own message: the hint, exit 2. */
__attribute__((noreturn))
void lsink_usage_hint(void);

/* Prints text (a verb's help) on stdout and exits 0 (1 on a write error). */
__attribute__((noreturn))
void lsink_help(const char *text);

/*
 * Prepares getopt for a verb's arguments: errors are reported as
 * "logsink VERB: ..." (argv[0] is changed to say so).
 */
void lsink_getopt_init(char **argv);

/* lsink_open() flags. */
#define LSINK_OPEN_READONLY 0x1u   /* never create nor write anything */
/*
 * No log yet at the default path ($BGRUN_DB, XDG...), or a database
 * never written to: success with *ret_store NULL (an empty log).
 */
#define LSINK_OPEN_MISSING_OK 0x2u

/*
 * Opens the store at db (NULL: the default path). Read-only verbs never
 * create anything; the others require an existing file too. On failure
 * prints one line and returns -errno.
 */
int lsink_open(const char *db, unsigned flags, struct bgrun_store **ret_store);

/*
 * Why the store at path could not be opened (error, and the store's
 * message), in the words every verb uses ("'PATH': not a bgrun event
 * database"), into buf.
 */
void lsink_open_error_text(char *buf, size_t size, const char *path,
			   int error, const char *errmsg);

/* Reports a failed store call in one line: "logsink: WHAT: REASON". */
void lsink_store_error(struct bgrun_store *store, int error, const char *what);

/*
 * s with control characters and invalid UTF-8 escaped, for messages that
 * must stay on one line. Valid until the fourth call after.
 */
const char *lsink_printable(const char *s);

/* Flushes stdout: 0, or LSINK_EXIT_FAILURE after saying why. */
int lsink_flush_stdout(void);

/* filter.c: the options that choose events, shared by query and stats. */

enum lsink_format {
	LSINK_FORMAT_AUTO = 0, /* a table; truncated when stdout is a tty */
	LSINK_FORMAT_TABLE,
	LSINK_FORMAT_JSON,
	LSINK_FORMAT_CSV,
};

/* getopt values of the filter and format options. */
enum {
	LSINK_OPT_SINCE = LSINK_OPT_FIRST_VERB,
	LSINK_OPT_UNTIL,
	LSINK_OPT_FAILED,
	LSINK_OPT_RESULT,
	LSINK_OPT_CMD,
	LSINK_OPT_TAG,
	LSINK_OPT_CWD,
	LSINK_OPT_SOURCE,
	LSINK_OPT_EVENT,
	LSINK_OPT_LIMIT,
	LSINK_OPT_TABLE,
	LSINK_OPT_JSON,
	LSINK_OPT_CSV,
	LSINK_OPT_OLDER_THAN,
	LSINK_OPT_HOST,
	LSINK_OPT_BY,
	LSINK_OPT_LAST,
};

/* The struct option entries of the filters (no terminator), and their count. */
#define LSINK_FILTER_OPTIONS \
	{ "since", required_argument, NULL, LSINK_OPT_SINCE }, \
	{ "until", required_argument, NULL, LSINK_OPT_UNTIL }, \
	{ "failed", no_argument, NULL, LSINK_OPT_FAILED }, \
	{ "result", required_argument, NULL, LSINK_OPT_RESULT }, \
	{ "cmd", required_argument, NULL, LSINK_OPT_CMD }, \
	{ "tag", required_argument, NULL, LSINK_OPT_TAG }, \
	{ "cwd", required_argument, NULL, LSINK_OPT_CWD }, \
	{ "source", required_argument, NULL, LSINK_OPT_SOURCE }, \
	{ "event", required_argument, NULL, LSINK_OPT_EVENT }, \
	{ "host", required_argument, NULL, LSINK_OPT_HOST }

/* --limit's argument: a positive number, or a usage error (exit 2). */
int64_t lsink_limit_arg(const char *arg);

/* The help lines of the filters. */
extern const char lsink_filter_help[];

/*
 * The user's configuration (bgrun/config.h), read once at the start;
 * NULL if there is none to read. Its [serve] keys are serve's defaults.
 */
extern struct bgrun_config *lsink_config;

/*
 * Applies filter option opt (a LSINK_OPT_* value) with its argument to q,
 * or exits with a usage error for a bad value. Returns false if opt is
 * not a filter option.
 */
bool lsink_filter_option(struct bgrun_query *q, int opt, const char *arg);

/* Sets *format from a format option; a second, different one is a usage error. */
bool lsink_format_option(enum lsink_format *format, int opt);

/*
 * Now, for the time options and prune: $BGRUN_NOW if set (any TIME; for
 * tests, so that "today" is known), else the clock. Read once.
 */
int64_t lsink_now_ns(void);

/* What a valid TIME looks like, for messages. */
#define LSINK_TIME_EXPECTED \
	"expected a date (2026-12-01 10:00), a duration ago (2h, 1h30m, " \
	"'2 hours ago'), @EPOCH, now, today or yesterday"

/* Whether result is one of the BGRUN_RESULT_* values. */
bool lsink_known_result(const char *result);

/* format.c: turning values into text. */

/* A duration for people: "850us", "12ms", "3.2s", "4m05s", "2h07m", "3d04h"; "-" if unknown. */
void lsink_fmt_duration(char *buf, size_t size, int64_t ns);

/* Local time "YYYY-MM-DD HH:MM:SS" (frac_digits > 0: with that many decimals, and the UTC offset). */
void lsink_fmt_time(char *buf, size_t size, int64_t ns, int frac_digits);

/* ISO 8601 with milliseconds and the local offset: "2026-11-29T10:00:00.123+01:00". */
void lsink_fmt_iso(char *buf, size_t size, int64_t ns);

/* The width of the table's exit/signal column. */
#define LSINK_STATUS_WIDTH 7

/*
 * How a command ended: "0", "3", "SIGKILL", or "sig 40" for a signal
 * without a name that fits LSINK_STATUS_WIDTH; "-" if neither is known.
 */
void lsink_fmt_status(char *buf, size_t size, int64_t exit_code, int64_t signal);

/* A signal's name ("SIGKILL") into buf; false if it has none. */
bool lsink_signal_name(int64_t signal, char *buf, size_t size);

/* lsink_put_escaped() flag: write the backslash as \\ (unambiguous). */
#define LSINK_ESC_BACKSLASH 0x1u

/*
 * Writes s (n bytes) to f (NULL: only measures) with everything that could disturb a terminal or a
 * line-based reader escaped: control bytes (C0 and C1) as \n, \t, \r or
 * \xNN, bytes that are not valid UTF-8 as \xNN. Valid UTF-8 is kept.
 * Returns the number of terminal columns written, stopping before
 * max_cols would be passed (max_cols < 0: no limit), in which case
 * *ret_cut (optional) is set.
 */
int lsink_put_escaped(FILE *f, const char *s, size_t n, unsigned flags,
		      int max_cols, bool *ret_cut);

/*
 * Writes s (NULL: "-") escaped like lsink_put_escaped(); if it is wider
 * than max_cols columns (max_cols < 0: no limit), cut with an ellipsis.
 */
void lsink_put_cell(FILE *f, const char *s, int max_cols);

/* The end of a CSV record: CRLF, as RFC 4180 says (readers take LF too). */
#define LSINK_CSV_EOL "\r\n"

/* Writes one CSV field (RFC 4180): quoted if it holds a comma, a quote, CR or LF. */
void lsink_put_csv(FILE *f, const char *s);

/* The terminal's width in columns if stdout is a terminal, else 0. */
int lsink_terminal_width(void);

/* show.c: events by id (bgrun/event.h IDS FOR PEOPLE). */

/* The most candidates an ambiguous id lists. */
#define LSINK_CANDIDATES 10

/*
 * Says why bgrun_store_get (or lsink_pg_get) failed with error for id:
 * no such event, not an id, or, when it is ambiguous, the events whose
 * ids contain it (newest first, at most LSINK_CANDIDATES), one a line.
 */
void lsink_id_error(const char *db, struct bgrun_store *store, const char *id,
		    int error);

/*
 * What an event is, for a table's last column: its command, else its
 * name and message ("deploy: shipped v2"), else its name.
 */
const char *lsink_event_what(const struct bgrun_event *ev);

/*
 * plot.c: draws with gnuplot into file (a PNG) the duration of each
 * finished run matching q over time, one series per row of rows (the
 * first n, as stats shows them, grouped by key). 0, or -1 after saying why.
 */
int lsink_plot(struct bgrun_store *store, const struct bgrun_query *q,
	       enum bgrun_stats_key key, const char *file,
	       const struct bgrun_stats_row *rows, size_t n);

/* The verbs. */
int lsink_query_main(int argc, char **argv, const char *db);
int lsink_show_main(int argc, char **argv, const char *db);
int lsink_stats_main(int argc, char **argv, const char *db);
int lsink_prune_main(int argc, char **argv, const char *db);
int lsink_mark_lost_main(int argc, char **argv, const char *db);
/* status.c */
int lsink_status_main(int argc, char **argv, const char *db);
/*
 * After a read-only verb opened db (NULL: the default): one line on
 * stderr if events wait in its spool or were dropped.
 */
void lsink_warn_pending(const char *db);
/* pg-init.c (pg-none.c without libpq). */
int lsink_pg_init_main(int argc, char **argv, const char *db);

/*
 * pg-query.c (pg-none.c without libpq): the fleet table read like the
 * store (the row's argv is left NULL; its JSON has it). 0, or -errno after
 * saying why.
 */
/* Whether --db names a PostgreSQL database (postgresql:// or postgres://). */
static inline bool lsink_db_is_pg(const char *db)
{
	return db != NULL && (strncmp(db, "postgresql://", 13) == 0 ||
			      strncmp(db, "postgres://", 11) == 0);
}
int lsink_pg_query(const char *conninfo, const struct bgrun_query *q,
		   bgrun_store_row_cb cb, void *data);
/* As bgrun_store_get: -EINVAL, -ENOENT, -EEXIST (not said), -EIO (said). */
int lsink_pg_get(const char *conninfo, const char *id_or_part,
		 bgrun_store_row_cb cb, void *data);
/* One row per key (as its display), as bgrun_store_stats_by. */
int lsink_pg_stats(const char *conninfo, const struct bgrun_query *q,
		   enum bgrun_stats_key key, bgrun_store_stats_cb cb,
		   void *data);

#endif /* LSINK_H */
