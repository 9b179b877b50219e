/* SPDX-License-Identifier: MIT */
/* send.c: `logsink send`'s event, from arguments or from Mercurial's logtoprocess environment (no store: the lean front uses it too). */

#include "send.h"
#include "bgrun/wire.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum {
	OPT_EVENT = LSINK_OPT_FIRST_VERB,
	OPT_SOURCE,
	OPT_MESSAGE,
	OPT_FIELD,
	OPT_FROM_HG_ENV,
	OPT_SOCKET,
	OPT_PRINT_ID,
};

static const struct option options[] = {
	LSINK_COMMON_OPTIONS,
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "message", required_argument, NULL, OPT_MESSAGE },
	{ "field", required_argument, NULL, OPT_FIELD },
	{ "from-hg-env", no_argument, NULL, OPT_FROM_HG_ENV },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "print-id", no_argument, NULL, OPT_PRINT_ID },
	{ NULL, 0, NULL, 0 },
};

static const char help_text[] =
	"Usage: logsink [--db=PATH] send [OPTION]...\n"
	"Record one event: through the sink daemon if it runs, else straight\n"
	"into the log (BGRUN_SINK=auto|embedded|daemon chooses).\n"
	"\n"
	"      --event=NAME         the event's name (required unless --from-hg-env)\n"
	"      --source=NAME        where it comes from (default: logsink, or hg)\n"
	"      --message=TEXT       a message\n"
	"      --field=NAME=VALUE   any field of the event by its name: id, host,\n"
	"                           uid, user, pid, cwd, tag, display, start_ns,\n"
	"                           end_ns, duration_ns, exit_code, signal, result,\n"
	"                           options_json, ... (argv: once per argument)\n"
	"      --from-hg-env        from the environment Mercurial's logtoprocess\n"
	"                           extension gives its command: EVENT, HGPID, MSG1\n"
	"                           and OPT_* (kept as a JSON object); commandfinish\n"
	"                           also gives exit code, duration and command\n"
	"      --socket=PATH        the daemon's socket (default: as logsink serve)\n"
	"      --print-id           print the event's id\n" LSINK_COMMON_HELP
	"\n"
	"Arguments given with --from-hg-env override what the environment says.\n"
	"Exit status: 0 recorded; 1 not recorded (kept in the spool if it could\n"
	"be: the daemon or the next writer stores it); 2 usage error.\n";

/* What one --field (or --event, --source, --message) sets, in order. */
struct setting {
	const struct bgrun_wire_field *field;
	const char *value;
};

static bool parse_int(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == BGRUN_NULL)
		return false;
	*ret = v;
	return true;
}

static void apply(struct lsink_send *s, const struct setting *set)
{
	const struct bgrun_wire_field *f = set->field;
	char *base = (char *)&s->ev + f->offset;
	int64_t v;

	switch (f->kind) {
	case BGRUN_WIRE_ID:
		if (strlen(set->value) > BGRUN_EVENT_ID_MAX)
			lsink_usage("--field id: longer than %d characters",
				    BGRUN_EVENT_ID_MAX);
		strcpy(s->ev.id, set->value);
		break;
	case BGRUN_WIRE_STR:
		memcpy(base, &set->value, sizeof(set->value));
		break;
	case BGRUN_WIRE_INT:
		if (!parse_int(set->value, &v))
			lsink_usage("--field %s: not an integer: '%s'", f->name,
				    lsink_printable(set->value));
		memcpy(base, &v, sizeof(v));
		break;
	case BGRUN_WIRE_ARGV:
		s->argv[s->argc++] = set->value;
		s->ev.argv = s->argv;
		break;
	}
}

/*
 * OPT_* as NAME, VALUE pairs, names in lower case as Mercurial's keyword
 * arguments were: the store makes the JSON object of them with SQLite's
 * json_object() (never JSON written by hand, and no SQLite here).
 */
static int options_kv(struct lsink_send *s)
{
	size_t n = 0, k = 0;

	for (char **e = environ; *e != NULL; e++)
		if (strncmp(*e, "OPT_", 4) == 0 && strchr(*e, '=') != NULL)
			n++;
	if (n == 0)
		return 0;
	s->kv = calloc(2 * n + 1, sizeof(*s->kv));
	if (s->kv == NULL)
		return -ENOMEM;
	for (char **e = environ; *e != NULL && k < 2 * n; e++) {
		const char *eq = strchr(*e, '=');
		char *key;

		if (strncmp(*e, "OPT_", 4) != 0 || eq == NULL)
			continue;
		key = strndup(*e + 4, (size_t)(eq - (*e + 4)));
		if (key == NULL)
			return -ENOMEM;
		for (char *c = key; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		s->kv[k++] = key;
		s->kv[k++] = (char *)eq + 1;
	}
	s->ev.options_kv = (const char *const *)s->kv;
	return 0;
}

/* Mercurial's logtoprocess: EVENT, HGPID, MSG1, OPT_*. */
static int from_hg_env(struct lsink_send *s)
{
	const char *event = getenv("EVENT"), *pid = getenv("HGPID");
	const char *msg = getenv("MSG1");
	int64_t v;

	if (event == NULL || event[0] == '\0') {
		lsink_msg("--from-hg-env: EVENT is not set (this is for "
			  "Mercurial's logtoprocess extension)");
		return -EINVAL;
	}
	s->ev.event = event;
	s->ev.source = "hg";
	if (pid != NULL && parse_int(pid, &v))
		s->ev.pid = v;
	if (msg != NULL) {
		/* ui.log() messages end with a newline: not part of the text. */
		size_t n = strlen(msg);

		if (n > 0 && msg[n - 1] == '\n') {
			s->message = strndup(msg, n - 1);
			if (s->message == NULL)
				return -ENOMEM;
			msg = s->message;
		}
		s->ev.message = msg;
	}
	if (options_kv(s) < 0)
		return -ENOMEM;
	if (strcmp(event, "commandfinish") == 0) {
		const char *code = getenv("OPT_RETURN_CODE");
		const char *duration = getenv("OPT_DURATION");
		const char *cmd = getenv("OPT_CANONICAL_COMMAND");
		char *end;
		double secs;

		s->ev.end_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
		if (code != NULL && parse_int(code, &v)) {
			s->ev.exit_code = v;
			s->ev.result = v == 0 ? BGRUN_RESULT_SUCCESS
					      : BGRUN_RESULT_FAILED;
		}
		/* Seconds as Python prints a float. */
		errno = 0;
		secs = duration != NULL ? strtod(duration, &end) : -1;
		if (duration != NULL && errno == 0 && end != duration &&
		    *end == '\0' && isfinite(secs) && secs >= 0 && secs < 9e9) {
			s->ev.duration_ns = (int64_t)llround(secs * 1e9);
			s->ev.start_ns = s->ev.end_ns - s->ev.duration_ns;
		}
		/* None reaches us as "0" (procutil.shellenviron). */
		if (cmd != NULL && cmd[0] != '\0' && strcmp(cmd, "0") != 0) {
			if (asprintf(&s->display, "hg %s", cmd) < 0)
				return -ENOMEM;
			s->ev.display = s->display;
		}
	}
	return 0;
}

int lsink_send_prepare(int argc, char **argv, const char *db,
		       struct lsink_send *s)
{
	struct setting *sets;
	size_t n_sets = 0;
	bool hg = false;
	int opt, status = LSINK_EXIT_FAILURE;

	*s = (struct lsink_send){ .db = db };
	sets = calloc((size_t)argc, sizeof(*sets));
	s->argv = calloc((size_t)argc + 1, sizeof(*s->argv));
	if (sets == NULL || s->argv == NULL) {
		lsink_msg("out of memory");
		goto out;
	}
	lsink_getopt_init(argv);
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		const char *eq;

		switch (opt) {
		case 'h':
			lsink_help(help_text);
		case LSINK_OPT_DB:
			s->db = optarg;
			break;
		case OPT_EVENT:
		case OPT_SOURCE:
		case OPT_MESSAGE:
			sets[n_sets].field = bgrun_wire_field_by_name(
				opt == OPT_EVENT    ? "event"
				: opt == OPT_SOURCE ? "source"
						    : "message");
			sets[n_sets++].value = optarg;
			break;
		case OPT_FIELD:
			eq = strchr(optarg, '=');
			if (eq == NULL)
				lsink_usage(
					"--field: NAME=VALUE expected: '%s'",
					lsink_printable(optarg));
			optarg[eq - optarg] = '\0';
			sets[n_sets].field = bgrun_wire_field_by_name(optarg);
			if (sets[n_sets].field == NULL)
				lsink_usage(
					"--field: no event field is called '%s'",
					lsink_printable(optarg));
			sets[n_sets++].value = eq + 1;
			break;
		case OPT_FROM_HG_ENV:
			hg = true;
			break;
		case OPT_SOCKET:
			s->socket = optarg;
			break;
		case OPT_PRINT_ID:
			s->print_id = true;
			break;
		default:
			lsink_usage_hint();
		}
	}
	if (optind < argc)
		lsink_usage("send: unexpected argument '%s'",
			    lsink_printable(argv[optind]));
	bgrun_event_init(&s->ev, NULL, "logsink");
	if (getcwd(s->cwd, sizeof(s->cwd)) != NULL)
		s->ev.cwd = s->cwd;
	if (hg && from_hg_env(s) < 0)
		goto out;
	for (size_t i = 0; i < n_sets; i++)
		apply(s, &sets[i]);
	if (s->ev.event == NULL || s->ev.event[0] == '\0')
		lsink_usage("send: --event is required");
	status = 0;
out:
	free(sets);
	return status;
}

int lsink_send_done(const struct lsink_send *s)
{
	if (s->print_id)
		(void)printf("%s\n", s->ev.id);
	return lsink_flush_stdout() != 0 ? LSINK_EXIT_FAILURE : 0;
}

void lsink_send_release(struct lsink_send *s)
{
	for (size_t i = 0; s->kv != NULL && s->kv[i] != NULL; i += 2)
		free(s->kv[i]);
	free(s->kv);
	free(s->display);
	free(s->message);
	free(s->argv);
}
