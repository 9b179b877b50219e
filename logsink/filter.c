/* SPDX-License-Identifier: MIT */
/* filter.c: the options that choose events (times, results, commands) and the output format. */

#include "logsink.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char lsink_filter_help[] =
	"      --since=TIME   events at or after TIME\n"
	"      --until=TIME   events before TIME\n"
	"      --failed       events that did not succeed (and are not running)\n"
	"      --result=R     events with result R: running, success, failed,\n"
	"                     signaled, timeout, spawn_failed or lost\n"
	"      --cmd=GLOB     commands matching GLOB (as shown, case-sensitive;\n"
	"                     '*' matches anything, use '*word*' for a part)\n"
	"      --tag=TAG      events recorded with bgrun --tag=TAG\n"
	"      --cwd=DIR      commands run in DIR (resolved like bgrun does)\n"
	"      --source=S     events of source S (bgrun, hg...)\n"
	"      --event=E      events named E (commandfinish...)\n"
	"      --host=NAME    events of host NAME (of a fleet, with --db\n"
	"                     postgresql://...)\n"
	"\n"
	"TIME is one of (local time, as TZ says, unless an offset is given):\n"
	"  now, today, yesterday      (a day's start; 'yesterday 18:00')\n"
	"  a time of today            10:00, 10:00:30\n"
	"  a duration ago             10m, 1h30m, 1w, '2 hours ago', -2h\n"
	"  @EPOCH                     seconds since 1970 (UTC): @1764583200\n"
	"  a date                     2026-12-01, 20261201 (its start)\n"
	"  a date and time            '2026-12-01 10:00', 2026-12-01T10:00:00,\n"
	"                             2026-12-01T10:00Z, ...T10:00+01:00\n"
	"A number without a unit is never seconds: 20261201 is a date, 90 an\n"
	"error. An event's time is when it started.\n";

bool lsink_known_result(const char *result)
{
	static const char *const results[] = {
		BGRUN_RESULT_RUNNING, BGRUN_RESULT_SUCCESS,
		BGRUN_RESULT_FAILED,  BGRUN_RESULT_SIGNALED,
		BGRUN_RESULT_TIMEOUT, BGRUN_RESULT_SPAWN_FAILED,
		BGRUN_RESULT_LOST,
	};

	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		if (strcmp(result, results[i]) == 0)
			return true;
	return false;
}

int64_t lsink_now_ns(void)
{
	static int64_t now = BGRUN_NULL;
	const char *fixed;
	int64_t clock;

	if (now != BGRUN_NULL)
		return now;
	clock = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
	fixed = getenv("BGRUN_NOW");
	if (fixed == NULL || fixed[0] == '\0')
		now = clock;
	else if (bgrun_parse_time(fixed, clock, &now) < 0)
		lsink_usage("invalid time '%s' in BGRUN_NOW", lsink_printable(fixed));
	return now;
}

/* A time option's value, or a usage error. */
static int64_t time_arg(const char *option, const char *arg)
{
	int64_t ns;
	int r;

	r = bgrun_parse_time(arg, lsink_now_ns(), &ns);
	if (r == -ERANGE)
		lsink_usage("invalid time '%s' for --%s: out of range",
			    lsink_printable(arg), option);
	if (r == -EDOM)
		lsink_usage("invalid time '%s' for --%s: a number needs a unit "
			    "('%ss' ago, or '@%s' for seconds since 1970)",
			    lsink_printable(arg), option, lsink_printable(arg),
			    lsink_printable(arg));
	if (r < 0)
		lsink_usage("invalid time '%s' for --%s: " LSINK_TIME_EXPECTED,
			    lsink_printable(arg), option);
	return ns;
}

bool lsink_filter_option(struct bgrun_query *q, int opt, const char *arg)
{
	/* The resolved --cwd, for the life of the process. */
	static char cwd[PATH_MAX];

	switch (opt) {
	case LSINK_OPT_SINCE:
		q->since_ns = time_arg("since", arg);
		return true;
	case LSINK_OPT_UNTIL:
		q->until_ns = time_arg("until", arg);
		return true;
	case LSINK_OPT_FAILED:
		q->failed = true;
		return true;
	case LSINK_OPT_RESULT:
		if (!lsink_known_result(arg))
			lsink_usage("invalid result '%s': expected running, "
				    "success, failed, signaled, timeout, "
				    "spawn_failed or lost",
				    lsink_printable(arg));
		q->result = arg;
		return true;
	case LSINK_OPT_CMD:
		q->cmd_glob = arg;
		return true;
	case LSINK_OPT_TAG:
		q->tag = arg;
		return true;
	case LSINK_OPT_CWD:
		/* bgrun records the real path of the directory: match it. */
		q->cwd = realpath(arg, cwd) != NULL ? cwd : arg;
		return true;
	case LSINK_OPT_SOURCE:
		q->source = arg;
		return true;
	case LSINK_OPT_EVENT:
		q->event = arg;
		return true;
	case LSINK_OPT_HOST:
		q->host = arg;
		return true;
	}
	return false;
}

bool lsink_format_option(enum lsink_format *format, int opt)
{
	static const char *const names[] = {
		[LSINK_FORMAT_TABLE] = "--table",
		[LSINK_FORMAT_JSON] = "--json",
		[LSINK_FORMAT_CSV] = "--csv",
	};
	enum lsink_format f;

	switch (opt) {
	case LSINK_OPT_TABLE:
		f = LSINK_FORMAT_TABLE;
		break;
	case LSINK_OPT_JSON:
		f = LSINK_FORMAT_JSON;
		break;
	case LSINK_OPT_CSV:
		f = LSINK_FORMAT_CSV;
		break;
	default:
		return false;
	}
	if (*format != LSINK_FORMAT_AUTO && *format != f)
		lsink_usage("%s and %s cannot be used together", names[*format],
			    names[f]);
	*format = f;
	return true;
}

int64_t lsink_limit_arg(const char *arg)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 ||
	    n <= 0)
		lsink_usage("invalid limit '%s': expected a positive number",
			    lsink_printable(arg));
	return n;
}
