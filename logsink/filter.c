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
	"TIME is a duration ago (90s, 10m, 2h, 3d) or an ISO 8601 date and time:\n"
	"2026-11-29, 2026-11-29T10:00, '2026-11-29 10:00:00', local time unless\n"
	"followed by Z or an offset (+01:00). An event's time is when it started.\n";

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

/* Exactly n decimal digits at *p: their value, and *p moves past them. */
static bool digits(const char **p, int n, int *ret_value)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret_value = v;
	return true;
}

static int days_in_month(int year, int month)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/*
 * The offset of "Z", "+HH:MM", "+HHMM" or "+HH" (or '-') at p, in
 * seconds east of UTC. Returns false if p holds something else.
 */
static bool parse_offset(const char *p, long *ret_offset)
{
	int sign, hh, mm = 0;

	if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
		*ret_offset = 0;
		return true;
	}
	if (*p != '+' && *p != '-')
		return false;
	sign = *p++ == '-' ? -1 : 1;
	if (!digits(&p, 2, &hh))
		return false;
	if (*p == ':')
		p++;
	if (*p != '\0' && !digits(&p, 2, &mm))
		return false;
	if (*p != '\0' || hh > 23 || mm > 59)
		return false;
	*ret_offset = sign * (hh * 3600L + mm * 60L);
	return true;
}

/* An ISO 8601 date and optional time; see lsink_parse_time(). */
static int parse_iso(const char *text, int64_t *ret_ns)
{
	const char *p = text;
	struct tm tm = { 0 };
	int year, month, day, hour = 0, min = 0, sec = 0;
	int64_t frac_ns = 0, scale = 100000000;
	long offset = 0;
	bool zoned = false;
	time_t secs;

	if (!digits(&p, 4, &year) || *p++ != '-' || !digits(&p, 2, &month) ||
	    *p++ != '-' || !digits(&p, 2, &day))
		return -EINVAL;
	if (month < 1 || month > 12 || day < 1 ||
	    day > days_in_month(year, month))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &hour) || *p++ != ':' || !digits(&p, 2, &min))
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return -EINVAL;
			if (*p == '.' || *p == ',') {
				if (p[1] < '0' || p[1] > '9')
					return -EINVAL;
				for (p++; *p >= '0' && *p <= '9'; p++) {
					frac_ns += (*p - '0') * scale;
					scale /= 10;
				}
			}
		}
		if (hour > 23 || min > 59 || sec > 59)
			return -EINVAL;
		if (*p != '\0') {
			if (!parse_offset(p, &offset))
				return -EINVAL;
			zoned = true;
		}
	} else if (*p != '\0') {
		return -EINVAL;
	}
	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	if (zoned) {
		secs = timegm(&tm) - offset;
	} else {
		/* Local time; the C library knows whether DST applies. */
		tm.tm_isdst = -1;
		secs = mktime(&tm);
	}
	if (secs > INT64_MAX / 1000000000 - 1 ||
	    secs < INT64_MIN / 1000000000 + 1)
		return -ERANGE;
	*ret_ns = (int64_t)secs * 1000000000 + frac_ns;
	return 0;
}

int lsink_parse_time(const char *text, int64_t now_ns, int64_t *ret_ns)
{
	int64_t ago;
	int r;

	r = bgrun_parse_duration(text, &ago);
	if (r == 0) {
		*ret_ns = now_ns - ago;
		return 0;
	}
	if (r == -ERANGE)
		return r;
	return parse_iso(text, ret_ns);
}

/* A time option's value, or a usage error. */
static int64_t time_arg(const char *option, const char *arg)
{
	int64_t ns;
	int r;

	r = lsink_parse_time(arg, bgrun_clock_ns(BGRUN_CLOCK_REALTIME), &ns);
	if (r == -ERANGE)
		lsink_usage("time '%s' for --%s is out of range",
			    lsink_printable(arg), option);
	if (r < 0)
		lsink_usage("invalid time '%s' for --%s: expected a duration ago "
			    "(10m, 2h, 3d) or a date (2026-11-29T10:00)",
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
