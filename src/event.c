/* SPDX-License-Identifier: MIT */
/* event.c: the event model: new events, exit statuses, display strings, liveness. */

#include "internal.h"
#include "store-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/*
 * Facts about this process's machine, learned once. They never change
 * while the process lives (a new boot is a new process), so pointers to
 * them can be handed out for good.
 */
static pthread_once_t facts_once = PTHREAD_ONCE_INIT;
static char fact_host[sizeof(((struct utsname *)0)->nodename)];
static char fact_boot_id[64];
static bool fact_proc_ok; /* /proc can tell whether a process exists */

/* User names, per uid, kept for the life of the process (few uids). */
struct user_name {
	struct user_name *next;
	uid_t uid;
	char *name; /* NULL: the uid has no name */
};
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static struct user_name *users;

static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;
	int fd;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	while (used + 1 < size) {
		n = read(fd, buf + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			(void)close(fd);
			return n;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	(void)close(fd);
	buf[used] = '\0';
	return (ssize_t)used;
}

static void learn_facts(void)
{
	struct utsname u;
	char stat[64];
	ssize_t n;

	if (uname(&u) == 0)
		(void)snprintf(fact_host, sizeof(fact_host), "%s", u.nodename);
	n = read_small_file("/proc/sys/kernel/random/boot_id", fact_boot_id,
			    sizeof(fact_boot_id));
	if (n < 0)
		fact_boot_id[0] = '\0';
	fact_boot_id[strcspn(fact_boot_id, "\n")] = '\0';
	fact_proc_ok = read_small_file("/proc/self/stat", stat,
				       sizeof(stat)) > 0;
}

const char *bgrun__boot_id(void)
{
	(void)pthread_once(&facts_once, learn_facts);
	return fact_boot_id[0] != '\0' ? fact_boot_id : NULL;
}

static const char *host_name(void)
{
	(void)pthread_once(&facts_once, learn_facts);
	return fact_host[0] != '\0' ? fact_host : NULL;
}

static char *lookup_user(uid_t uid)
{
	struct passwd pw, *found = NULL;
	size_t size = 4096;
	char *buf = NULL, *name = NULL, *grown;
	int r;

	for (;;) {
		grown = realloc(buf, size);
		if (grown == NULL)
			goto cleanup;
		buf = grown;
		r = getpwuid_r(uid, &pw, buf, size, &found);
		if (r == ERANGE && size < 1024 * 1024) {
			size *= 2;
			continue;
		}
		if (r == EINTR)
			continue;
		break;
	}
	if (r == 0 && found != NULL)
		name = strdup(found->pw_name);
cleanup:
	free(buf);
	return name;
}

static const char *user_name(uid_t uid)
{
	struct user_name *u;
	const char *name = NULL;

	(void)pthread_mutex_lock(&users_lock);
	for (u = users; u != NULL; u = u->next)
		if (u->uid == uid)
			break;
	if (u == NULL) {
		/*
		 * Looked up under the lock: rare (once per uid), and it keeps
		 * the list free of duplicates.
		 */
		u = calloc(1, sizeof(*u));
		if (u != NULL) {
			u->uid = uid;
			u->name = lookup_user(uid);
			u->next = users;
			users = u;
		}
	}
	if (u != NULL)
		name = u->name;
	(void)pthread_mutex_unlock(&users_lock);
	return name;
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* 16 random bytes: getrandom, else /dev/urandom, else a clock-based mix. */
static void random_bytes(unsigned char *buf, size_t len)
{
	static _Atomic uint64_t counter;
	uint64_t state, word;
	size_t used = 0;
	ssize_t n;
	int fd;

	while (used < len) {
		n = getrandom(buf + used, len - used, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	if (used == len)
		return;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (used < len) {
			n = read(fd, buf + used, len - used);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			used += (size_t)n;
		}
		(void)close(fd);
	}
	if (used == len)
		return;
	/* Unique per process and call, if not unpredictable. */
	state = (uint64_t)bgrun__now_ns(CLOCK_REALTIME) ^
		((uint64_t)getpid() << 32) ^ (counter++ << 48) ^
		(uint64_t)bgrun__now_ns(CLOCK_MONOTONIC);
	word = splitmix64(&state);
	for (; used < len; used++) {
		if (used % 8 == 0)
			word = splitmix64(&state);
		buf[used] = (unsigned char)(word >> (8 * (used % 8)));
	}
}

/*
 * A UUID v7 (RFC 9562): the Unix time in milliseconds in the first 48
 * bits, then 74 random bits. Why not v4: a store's id index then grows at
 * its end, as its time index does; with random ids every insert touched a
 * page of its own (the sink daemon wrote ~7 KB per event, and took 1.6 to
 * 2.5 times longer).
 */
void bgrun_event_new_id(char id[BGRUN_EVENT_ID_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t ms = (uint64_t)bgrun__now_ns(CLOCK_REALTIME) / 1000000;
	unsigned char b[16];
	size_t o = 0;

	random_bytes(b, sizeof(b));
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)(ms >> (8 * (5 - i)));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x70); /* version 7 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	for (size_t i = 0; i < sizeof(b); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			id[o++] = '-';
		id[o++] = hex[b[i] >> 4];
		id[o++] = hex[b[i] & 15];
	}
	id[o] = '\0';
}

void bgrun_event_init(struct bgrun_event *ev, const char *event,
		      const char *source)
{
	uid_t uid = getuid();

	memset(ev, 0, sizeof(*ev));
	ev->uid = ev->pid = ev->supervisor_pid = ev->supervisor_start =
		BGRUN_NULL;
	ev->start_ns = ev->end_ns = ev->duration_ns = BGRUN_NULL;
	ev->exit_code = ev->signal = ev->core_dumped = BGRUN_NULL;
	ev->user_cpu_ns = ev->sys_cpu_ns = ev->max_rss_kb = BGRUN_NULL;
	ev->minor_faults = ev->major_faults = BGRUN_NULL;
	ev->in_blocks = ev->out_blocks = BGRUN_NULL;
	ev->vol_ctxsw = ev->invol_ctxsw = BGRUN_NULL;
	bgrun_event_new_id(ev->id);
	ev->event = event;
	ev->source = source;
	ev->host = host_name();
	ev->uid = uid;
	ev->user = user_name(uid);
	ev->boot_id = bgrun__boot_id();
}

static int64_t timeval_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

void bgrun_event_set_status(struct bgrun_event *ev,
			    const struct bgrun_status *st)
{
	const struct rusage *ru = &st->rusage;

	ev->pid = st->pid;
	if (st->exited) {
		ev->exit_code = st->exit_code;
		ev->signal = BGRUN_NULL;
		ev->core_dumped = 0;
		ev->result = st->exit_code == 0 ? BGRUN_RESULT_SUCCESS
						: BGRUN_RESULT_FAILED;
	} else if (st->signaled) {
		ev->exit_code = BGRUN_NULL;
		ev->signal = st->signal;
		ev->core_dumped = st->core_dumped ? 1 : 0;
		ev->result = BGRUN_RESULT_SIGNALED;
	}
	ev->start_ns = st->start_realtime_ns;
	ev->end_ns = st->end_realtime_ns;
	ev->duration_ns = st->duration_ns;
	ev->user_cpu_ns = timeval_ns(&ru->ru_utime);
	ev->sys_cpu_ns = timeval_ns(&ru->ru_stime);
	ev->max_rss_kb = ru->ru_maxrss;
	ev->minor_faults = ru->ru_minflt;
	ev->major_faults = ru->ru_majflt;
	ev->in_blocks = ru->ru_inblock;
	ev->out_blocks = ru->ru_oublock;
	ev->vol_ctxsw = ru->ru_nvcsw;
	ev->invol_ctxsw = ru->ru_nivcsw;
}

/*
 * Fields 3 (state) and 22 (starttime) of /proc/PID/stat. The command name
 * (field 2) may hold spaces and parentheses, so fields are counted from
 * its last ')'. -ESRCH if there is no such process.
 */
static int read_proc_stat(pid_t pid, char *ret_state, int64_t *ret_start)
{
	char path[64], buf[1024], *p, *end;
	long long start;
	ssize_t n;

	if (pid <= 0)
		return -ESRCH;
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_small_file(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return -ESRCH;
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -EIO;
	p += 2; /* now at field 3 */
	*ret_state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -EIO;
		p++;
	}
	errno = 0;
	start = strtoll(p, &end, 10);
	if (errno != 0 || end == p)
		return -EIO;
	*ret_start = start;
	return 0;
}

int64_t bgrun_proc_starttime(pid_t pid)
{
	int64_t start;
	char state;

	if (read_proc_stat(pid, &state, &start) < 0)
		return BGRUN_NULL;
	return start;
}

bool bgrun__supervisor_gone(const char *boot_id, int64_t supervisor_pid,
			    int64_t supervisor_start)
{
	const char *current = bgrun__boot_id();
	int64_t start;
	char state;
	int r;

	if (boot_id != NULL && current != NULL && strcmp(boot_id, current) != 0)
		return true;
	if (supervisor_pid == BGRUN_NULL || supervisor_pid <= 0 ||
	    supervisor_pid > INT_MAX || !fact_proc_ok)
		return false;
	r = read_proc_stat((pid_t)supervisor_pid, &state, &start);
	if (r == -ESRCH)
		return true;
	if (r < 0)
		return false; /* cannot tell */
	if (state == 'Z' || state == 'X' || state == 'x')
		return true;
	return supervisor_start != BGRUN_NULL && start != supervisor_start;
}

size_t bgrun_utf8_decode(const char *str, size_t n, uint32_t *ret_cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	uint32_t cp;
	size_t len;

	if (n == 0)
		return 0;
	if (c < 0x80) {
		if (ret_cp != NULL)
			*ret_cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	/* The second byte's range excludes overlongs and surrogates. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (ret_cp != NULL)
		*ret_cp = cp;
	return len;
}

bool bgrun__utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;

	for (size_t i = 0; i < n; i += len) {
		/* Most text is ASCII: skip it without decoding. */
		if (u[i] < 0x80) {
			len = 1;
			continue;
		}
		len = bgrun_utf8_decode((const char *)u + i, n - i, NULL);
		if (len == 0)
			return false;
	}
	return true;
}

static char *put_hex(char *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

	*o++ = '\\';
	*o++ = 'x';
	*o++ = hex[c >> 4];
	*o++ = hex[c & 15];
	return o;
}

/*
 * Appends s to o, escaping as \xNN every byte that is not valid UTF-8 and,
 * when printable_only, every control character (C0, DEL and C1).
 */
static char *put_escaped(char *o, const char *s, size_t n, bool printable_only)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;

	for (size_t i = 0; i < n; i += len) {
		/* A run of printable ASCII is copied as it is. */
		for (len = 0; i + len < n && u[i + len] >= 0x20 &&
			      u[i + len] < 0x7f;
		     len++)
			;
		if (len > 0) {
			memcpy(o, u + i, len);
			o += len;
			continue;
		}
		len = bgrun_utf8_decode((const char *)u + i, n - i, NULL);
		if (len == 0) {
			o = put_hex(o, u[i]);
			len = 1;
		} else if (printable_only &&
			   ((len == 1 && (u[i] < 0x20 || u[i] == 0x7f)) ||
			    (len == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0))) {
			for (size_t k = 0; k < len; k++)
				o = put_hex(o, u[i + k]);
		} else {
			memcpy(o, u + i, len);
			o += len;
		}
	}
	return o;
}

int bgrun__utf8_sanitize(const char *s, char **ret_copy)
{
	size_t n = strlen(s);
	char *copy, *end;

	if (bgrun__utf8_valid(s, n)) {
		*ret_copy = NULL;
		return 0;
	}
	copy = malloc(4 * n + 1);
	if (copy == NULL)
		return -ENOMEM;
	end = put_escaped(copy, s, n, false);
	*end = '\0';
	*ret_copy = copy;
	return 0;
}

/* Mercurial's procutil.shellquote: quote unless only [a-zA-Z0-9._/+-]. */
static bool needs_quote(const char *s)
{
	if (*s == '\0')
		return true;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._/+-", *s) != NULL))
			return true;
	return false;
}

int bgrun_argv_display(const char *const *argv, char **ret_display)
{
	size_t size = 1;
	char *out, *o;

	if (argv == NULL)
		return -EINVAL;
	for (size_t i = 0; argv[i] != NULL; i++) {
		size_t n = strlen(argv[i]);

		/* Each byte becomes at most 4 ("\xNN" or '\''). */
		if (n > (SIZE_MAX - size) / 4 - 4)
			return -ENOMEM;
		size += 4 * n + 3;
	}
	out = malloc(size);
	if (out == NULL)
		return -ENOMEM;
	o = out;
	for (size_t i = 0; argv[i] != NULL; i++) {
		const char *a = argv[i], *q;

		if (i > 0)
			*o++ = ' ';
		if (!needs_quote(a)) {
			o = put_escaped(o, a, strlen(a), true);
			continue;
		}
		*o++ = '\'';
		while ((q = strchr(a, '\'')) != NULL) {
			o = put_escaped(o, a, (size_t)(q - a), true);
			memcpy(o, "'\\''", 4);
			o += 4;
			a = q + 1;
		}
		o = put_escaped(o, a, strlen(a), true);
		*o++ = '\'';
	}
	*o = '\0';
	*ret_display = out;
	return 0;
}
