/* SPDX-License-Identifier: MIT */
/* format.c: how logsink writes values: durations, times, exit statuses, escaped text, CSV. */

#include "logsink.h"

#include <langinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

void lsink_fmt_duration(char *buf, size_t size, int64_t ns)
{
	long long s;

	if (ns == BGRUN_NULL || ns < 0) {
		(void)snprintf(buf, size, "-");
		return;
	}
	s = (long long)(ns / 1000000000);
	if (ns < 1000000)
		(void)snprintf(buf, size, "%lldus", (long long)(ns / 1000));
	else if (ns < 1000000000)
		(void)snprintf(buf, size, "%lldms", (long long)(ns / 1000000));
	else if (s < 60)
		/* Tenths cut, not rounded: 59.97 s is never "60.0s". */
		(void)snprintf(buf, size, "%lld.%llds", s,
			       (long long)(ns / 100000000 % 10));
	else if (s < 3600)
		(void)snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		(void)snprintf(buf, size, "%lldh%02lldm", s / 3600,
			       s / 60 % 60);
	else
		(void)snprintf(buf, size, "%lldd%02lldh", s / 86400,
			       s / 3600 % 24);
}

/* Seconds and nanoseconds of ns, the nanoseconds always >= 0. */
static void split_ns(int64_t ns, time_t *ret_secs, long *ret_frac)
{
	int64_t secs = ns / 1000000000, frac = ns % 1000000000;

	if (frac < 0) {
		secs--;
		frac += 1000000000;
	}
	*ret_secs = (time_t)secs;
	*ret_frac = (long)frac;
}

void lsink_fmt_time(char *buf, size_t size, int64_t ns, int frac_digits)
{
	char zone[16];
	struct tm tm;
	time_t secs;
	long frac;
	size_t n;

	if (ns == BGRUN_NULL) {
		(void)snprintf(buf, size, "-");
		return;
	}
	split_ns(ns, &secs, &frac);
	if (localtime_r(&secs, &tm) == NULL ||
	    (n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm)) == 0) {
		(void)snprintf(buf, size, "%lld ns", (long long)ns);
		return;
	}
	if (frac_digits <= 0)
		return;
	if (frac_digits > 9)
		frac_digits = 9;
	for (int i = frac_digits; i < 9; i++)
		frac /= 10;
	if (strftime(zone, sizeof(zone), "%z", &tm) == 0)
		zone[0] = '\0';
	(void)snprintf(buf + n, size - n, ".%0*ld %s", frac_digits, frac, zone);
}

void lsink_fmt_iso(char *buf, size_t size, int64_t ns)
{
	char zone[16];
	struct tm tm;
	time_t secs;
	long frac;
	size_t n;

	if (ns == BGRUN_NULL) {
		(void)snprintf(buf, size, "%s", "");
		return;
	}
	split_ns(ns, &secs, &frac);
	if (localtime_r(&secs, &tm) == NULL ||
	    (n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0 ||
	    strftime(zone, sizeof(zone), "%z", &tm) != 5) {
		(void)snprintf(buf, size, "%lld", (long long)ns);
		return;
	}
	/* %z is +hhmm; ISO 8601's extended format wants +hh:mm. */
	(void)snprintf(buf + n, size - n, ".%03ld%.3s:%s", frac / 1000000, zone,
		       zone + 3);
}

bool lsink_signal_name(int64_t signal, char *buf, size_t size)
{
	const char *abbrev = NULL;

	if (signal > 0 && signal < 128)
		abbrev = sigabbrev_np((int)signal);
	if (abbrev == NULL)
		return false;
	(void)snprintf(buf, size, "SIG%s", abbrev);
	return true;
}

void lsink_fmt_status(char *buf, size_t size, int64_t exit_code,
		      int64_t signal)
{
	char name[32];

	if (signal != BGRUN_NULL) {
		/* Names that fit the table's column; the rare longer: a number. */
		if (lsink_signal_name(signal, name, sizeof(name)) &&
		    strlen(name) <= LSINK_STATUS_WIDTH)
			(void)snprintf(buf, size, "%s", name);
		else
			(void)snprintf(buf, size, "sig %lld", (long long)signal);
	} else if (exit_code != BGRUN_NULL) {
		(void)snprintf(buf, size, "%lld", (long long)exit_code);
	} else {
		(void)snprintf(buf, size, "-");
	}
}

/* The length of the valid UTF-8 sequence at s[0..n) and its code point, or 0. */
int lsink_put_escaped(FILE *f, const char *s, size_t n, unsigned flags,
		      int max_cols, bool *ret_cut)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[64];
	int cols = 0, w;
	size_t len, i;
	uint32_t cp;

	if (ret_cut != NULL)
		*ret_cut = false;
	for (i = 0; i < n; i += len) {
		const char *out = esc;

		len = 1;
		esc[0] = '\0';
		if (u[i] == '\n')
			(void)snprintf(esc, sizeof(esc), "\\n");
		else if (u[i] == '\t')
			(void)snprintf(esc, sizeof(esc), "\\t");
		else if (u[i] == '\r')
			(void)snprintf(esc, sizeof(esc), "\\r");
		else if (u[i] == '\\' && (flags & LSINK_ESC_BACKSLASH))
			(void)snprintf(esc, sizeof(esc), "\\\\");
		else if (u[i] < 0x20 || u[i] == 0x7f)
			(void)snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
		else if (u[i] < 0x80)
			out = NULL;
		else if ((len = bgrun_utf8_decode(s + i, n - i, &cp)) == 0) {
			len = 1;
			(void)snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
		} else if (cp < 0xa0) {
			/* C1 controls: some terminals obey them. */
			for (size_t k = 0; k < len; k++)
				(void)snprintf(esc + 4 * k, sizeof(esc) - 4 * k,
					       "\\x%02x", u[i + k]);
		} else {
			out = NULL;
		}
		if (out != NULL) {
			w = (int)strlen(out);
		} else {
			w = len == 1 ? 1 : wcwidth((wchar_t)cp);
			if (w < 0)
				w = 1;
		}
		if (max_cols >= 0 && cols + w > max_cols) {
			if (ret_cut != NULL)
				*ret_cut = true;
			break;
		}
		if (f != NULL && out != NULL)
			(void)fputs(out, f);
		else if (f != NULL)
			(void)fwrite(s + i, 1, len, f);
		cols += w;
	}
	return cols;
}

void lsink_put_cell(FILE *f, const char *s, int max_cols)
{
	/* "…" where the terminal speaks UTF-8, else three dots. */
	bool utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	int ellipsis = utf8 ? 1 : 3;
	size_t n;

	if (s == NULL)
		s = "-";
	n = strlen(s);
	if (max_cols < 0 ||
	    lsink_put_escaped(NULL, s, n, 0, max_cols + 1, NULL) <= max_cols) {
		(void)lsink_put_escaped(f, s, n, 0, -1, NULL);
		return;
	}
	if (max_cols < ellipsis) {
		(void)lsink_put_escaped(f, s, n, 0, max_cols, NULL);
		return;
	}
	(void)lsink_put_escaped(f, s, n, 0, max_cols - ellipsis, NULL);
	(void)fputs(utf8 ? "\xe2\x80\xa6" : "...", f);
}

/*
 * A control character other than tab, CR and LF (ESC starts a terminal's
 * escape sequences) is written as \xNN, as in the table, and the field
 * quoted: a CSV file is looked at with cat and less too. --json keeps
 * the exact text.
 */
static bool csv_control(unsigned char c)
{
	return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f;
}

void lsink_put_csv(FILE *f, const char *s)
{
	bool plain = true;

	if (s == NULL)
		return;
	for (const char *p = s; *p != '\0' && plain; p++)
		plain = strchr(",\"\r\n", *p) == NULL &&
			!csv_control((unsigned char)*p);
	if (plain) {
		(void)fputs(s, f);
		return;
	}
	(void)putc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			(void)putc('"', f);
		if (csv_control((unsigned char)*s))
			(void)fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			(void)putc(*s, f);
	}
	(void)putc('"', f);
}

int lsink_terminal_width(void)
{
	struct winsize ws;
	const char *columns;
	int n;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	columns = getenv("COLUMNS");
	n = columns != NULL ? atoi(columns) : 0;
	return n > 0 ? n : 80;
}
