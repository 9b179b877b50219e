/* SPDX-License-Identifier: MIT */
/* when.c: durations and points in time as people type them on a command line (include/bgrun/util.h). */

#include "bgrun.h"
#include "common/common.h"
#include "platform.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NS_PER_S INT64_C(1000000000)

/* The units of a duration, by their whole names ("m" is minutes: no months here). */
static const struct {
	const char *name;
	int64_t ns;
} units[] = {
	{ "ns", 1 },
	{ "nsec", 1 },
	{ "us", 1000 },
	{ "usec", 1000 },
	{ "ms", 1000000 },
	{ "msec", 1000000 },
	{ "s", NS_PER_S },
	{ "sec", NS_PER_S },
	{ "secs", NS_PER_S },
	{ "second", NS_PER_S },
	{ "seconds", NS_PER_S },
	{ "m", 60 * NS_PER_S },
	{ "min", 60 * NS_PER_S },
	{ "mins", 60 * NS_PER_S },
	{ "minute", 60 * NS_PER_S },
	{ "minutes", 60 * NS_PER_S },
	{ "h", 3600 * NS_PER_S },
	{ "hr", 3600 * NS_PER_S },
	{ "hrs", 3600 * NS_PER_S },
	{ "hour", 3600 * NS_PER_S },
	{ "hours", 3600 * NS_PER_S },
	{ "d", 86400 * NS_PER_S },
	{ "day", 86400 * NS_PER_S },
	{ "days", 86400 * NS_PER_S },
	{ "w", 7 * 86400 * NS_PER_S },
	{ "week", 7 * 86400 * NS_PER_S },
	{ "weeks", 7 * 86400 * NS_PER_S },
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* The unit named by the n letters at p, or 0. */
static int64_t unit_ns(const char *p, size_t n)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && memcmp(units[i].name, p, n) == 0)
			return units[i].ns;
	return 0;
}

/*
 * One number at *p: its whole part and up to 9 digits of its fraction
 * (more are cut). -EINVAL if none is there, -ERANGE past INT64_MAX.
 */
static int number(const char **p, int64_t *ret_whole, int64_t *ret_frac,
		  int64_t *ret_scale)
{
	const char *s = *p;
	int64_t whole = 0, frac = 0, scale = 1;
	bool any = false;

	for (; is_digit(*s); s++, any = true)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, *s - '0', &whole))
			return -ERANGE;
	if (*s == '.') {
		for (s++; is_digit(*s); s++, any = true) {
			if (scale < NS_PER_S) {
				frac = frac * 10 + (*s - '0');
				scale *= 10;
			}
		}
	}
	if (!any)
		return -EINVAL;
	*p = s;
	*ret_whole = whole;
	*ret_frac = frac;
	*ret_scale = scale;
	return 0;
}

int bgrun_parse_duration_flags(const char *text, unsigned flags,
			       int64_t *ret_ns)
{
	const char *p = text;
	int64_t total = 0;
	bool first = true;
	int r;

	if (text == NULL || (flags & ~BGRUN_DURATION_UNIT))
		return -EINVAL;
	do {
		int64_t whole, frac, scale, unit, term;
		const char *name;

		r = number(&p, &whole, &frac, &scale);
		if (r < 0)
			return r;
		p = skip_spaces(p);
		for (name = p; is_lower(*p); p++)
			;
		if (p == name) {
			/* A bare number: seconds, where that is allowed. */
			if (*p != '\0' || !first)
				return -EINVAL;
			if (flags & BGRUN_DURATION_UNIT)
				return -EDOM;
			unit = NS_PER_S;
		} else {
			unit = unit_ns(name, (size_t)(p - name));
			if (unit == 0)
				return -EINVAL;
		}
		/* frac / scale of a unit: exact in 128 bits. */
		if (__builtin_mul_overflow(whole, unit, &term) ||
		    __builtin_add_overflow(term,
					   (int64_t)((__int128)frac * unit / scale),
					   &term) ||
		    __builtin_add_overflow(total, term, &total))
			return -ERANGE;
		p = skip_spaces(p);
		first = false;
	} while (*p != '\0');
	*ret_ns = total;
	return 0;
}

int bgrun_parse_duration(const char *text, int64_t *ret_ns)
{
	return bgrun_parse_duration_flags(text, 0, ret_ns);
}

/* Exactly n decimal digits at *p: their value, and *p moves past them. */
static bool digits(const char **p, int n, int *ret_value)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
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

/* Seconds since the epoch as ns, or -ERANGE. */
static int secs_to_ns(time_t secs, int64_t frac_ns, int64_t *ret_ns)
{
	if (secs > INT64_MAX / NS_PER_S - 1 || secs < INT64_MIN / NS_PER_S + 1)
		return -ERANGE;
	*ret_ns = (int64_t)secs * NS_PER_S + frac_ns;
	return 0;
}

/*
 * A time of day at p, "HH:MM", "HH:MM:SS" or "HH:MM:SS.frac", then
 * optionally a UTC offset, into tm (and *ret_frac_ns, *ret_offset,
 * *ret_zoned). false for anything else.
 */
static bool parse_clock(const char *p, struct tm *tm, int64_t *ret_frac_ns,
			long *ret_offset, bool *ret_zoned)
{
	int hour, min, sec = 0;
	int64_t frac_ns = 0, scale = 100000000;

	if (!digits(&p, 2, &hour) || *p++ != ':' || !digits(&p, 2, &min))
		return false;
	if (*p == ':') {
		p++;
		if (!digits(&p, 2, &sec))
			return false;
		if (*p == '.' || *p == ',') {
			if (!is_digit(p[1]))
				return false;
			for (p++; is_digit(*p); p++) {
				frac_ns += (*p - '0') * scale;
				scale /= 10;
			}
		}
	}
	if (hour > 23 || min > 59 || sec > 59)
		return false;
	*ret_zoned = false;
	if (*p != '\0') {
		if (!parse_offset(p, ret_offset))
			return false;
		*ret_zoned = true;
	}
	tm->tm_hour = hour;
	tm->tm_min = min;
	tm->tm_sec = sec;
	*ret_frac_ns = frac_ns;
	return true;
}

/* tm (a local time unless zoned) as ns since the epoch. */
static int tm_to_ns(struct tm *tm, int64_t frac_ns, bool zoned, long offset,
		    int64_t *ret_ns)
{
	time_t secs;

	if (zoned) {
		secs = bgrun__timegm(tm) - offset;
	} else {
		/* Local time; the C library knows whether DST applies. */
		tm->tm_isdst = -1;
		secs = mktime(tm);
	}
	return secs_to_ns(secs, frac_ns, ret_ns);
}

/*
 * A date, "YYYY-MM-DD" or "YYYYMMDD", then optionally 'T' or a space and
 * a time of day (parse_clock). -EINVAL if it is not one.
 */
static int parse_date(const char *text, int64_t *ret_ns)
{
	const char *p = text;
	struct tm tm = { 0 };
	int year, month, day;
	int64_t frac_ns = 0;
	long offset = 0;
	bool zoned = false;

	if (!digits(&p, 4, &year))
		return -EINVAL;
	if (*p == '-') {
		p++;
		if (!digits(&p, 2, &month) || *p++ != '-' || !digits(&p, 2, &day))
			return -EINVAL;
	} else if (!digits(&p, 2, &month) || !digits(&p, 2, &day)) {
		return -EINVAL;
	}
	if (month < 1 || month > 12 || day < 1 ||
	    day > days_in_month(year, month))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		if (!parse_clock(p + 1, &tm, &frac_ns, &offset, &zoned))
			return -EINVAL;
	} else if (*p != '\0') {
		return -EINVAL;
	}
	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	return tm_to_ns(&tm, frac_ns, zoned, offset, ret_ns);
}

/* "today", "yesterday", "tomorrow", maybe followed by a time of day. */
static int parse_day_word(const char *text, int64_t now_ns, int64_t *ret_ns)
{
	static const struct {
		const char *word;
		int days;
	} words[] = { { "yesterday", -1 }, { "today", 0 }, { "tomorrow", 1 } };
	time_t now = (time_t)(now_ns / NS_PER_S - (now_ns % NS_PER_S < 0));
	struct tm tm;
	int64_t frac_ns = 0;
	long offset = 0;
	bool zoned = false;

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].word);

		if (strncasecmp(text, words[i].word, n) != 0 ||
		    (text[n] != '\0' && text[n] != ' '))
			continue;
		if (bgrun__localtime(&now, &tm) == NULL)
			return -ERANGE;
		tm.tm_mday += words[i].days; /* mktime normalises */
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		if (text[n] == ' ' &&
		    !parse_clock(skip_spaces(text + n), &tm, &frac_ns, &offset,
				 &zoned))
			return -EINVAL;
		/* An offset makes no sense on a local day: refused. */
		if (zoned)
			return -EINVAL;
		return tm_to_ns(&tm, frac_ns, false, 0, ret_ns);
	}
	return 1;
}

/* "@SECONDS" since the epoch, maybe with a fraction or a sign. */
static int parse_epoch(const char *text, int64_t *ret_ns)
{
	const char *p = text + 1;
	int64_t whole, frac, scale, ns;
	bool negative = *p == '-';
	int r;

	if (negative)
		p++;
	r = number(&p, &whole, &frac, &scale);
	if (r < 0)
		return r;
	if (*p != '\0')
		return -EINVAL;
	if (__builtin_mul_overflow(whole, NS_PER_S, &ns) ||
	    __builtin_add_overflow(ns, frac * (NS_PER_S / scale), &ns))
		return -ERANGE;
	*ret_ns = negative ? -ns : ns;
	return 0;
}

int bgrun_parse_time(const char *text, int64_t now_ns, int64_t *ret_ns)
{
	char rel[128];
	const char *p;
	int64_t ago;
	size_t n;
	bool signed_ = false;
	int sign = -1, r;

	if (text == NULL)
		return -EINVAL;
	if (strcasecmp(text, "now") == 0) {
		*ret_ns = now_ns;
		return 0;
	}
	r = parse_day_word(text, now_ns, ret_ns);
	if (r <= 0)
		return r;
	if (text[0] == '@')
		return parse_epoch(text, ret_ns);
	n = strspn(text, "0123456789");
	/* 2026-12-01..., or eight digits: a date, never a number of seconds. */
	if ((n == 4 && text[4] == '-') || n == 8)
		return parse_date(text, ret_ns);
	/* A time of day alone, as journalctl takes it: today's. */
	if (n == 2 && text[2] == ':') {
		if (snprintf(rel, sizeof(rel), "today %s", text) >= (int)sizeof(rel))
			return -EINVAL;
		r = parse_day_word(rel, now_ns, ret_ns);
		return r > 0 ? -EINVAL : r;
	}
	/* Else a duration: "-2h", "2h", "2h30m", "2 hours ago", "+1d" (ahead). */
	p = text;
	if (*p == '-' || *p == '+') {
		sign = *p == '+' ? 1 : -1;
		signed_ = true;
		p++;
	}
	n = strlen(p);
	if (!signed_ && n > 4 && strcmp(p + n - 4, " ago") == 0)
		n -= 4;
	if (n >= sizeof(rel))
		return -EINVAL;
	memcpy(rel, p, n);
	rel[n] = '\0';
	r = bgrun_parse_duration_flags(rel, BGRUN_DURATION_UNIT, &ago);
	if (r < 0)
		return r;
	if (sign < 0 ? __builtin_sub_overflow(now_ns, ago, ret_ns)
		     : __builtin_add_overflow(now_ns, ago, ret_ns))
		return -ERANGE;
	return 0;
}
