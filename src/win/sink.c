/* SPDX-License-Identifier: MIT */
/* sink.c: the sink's files in the Windows build: the spool (write, count, replay) and the dropped-events count; the sink itself is src/sink/'s, as on POSIX. */

/*
 * The spool beside the database (DB.spool\, one file per event, the
 * same EVENT frame and names as POSIX's src/sink/spool.c, so a log and
 * its spool can move between systems), and the dropped-events file for
 * what even the spool could not take. The sink client (src/sink/client.c,
 * client-daemon.c, daemon.c: the daemon on its named pipe, else the
 * store, else the spool) calls bgrun__spool_write and bgrun__dropped_note
 * (platform.h) here; the store's first open replays the spool
 * (bgrun_sink_replay), so the next writer that succeeds drains what the
 * failed ones left. One replay runs at a time, in a few passes, as on
 * POSIX; the lock it holds is on the file .replay-lock in the spool
 * (bgrun__file_trylock: a byte-range lock, which a directory cannot
 * take, where POSIX flocks the directory).
 *
 * Written on Win32 calls rather than src/sink/'s openat/renameat/
 * scandir, which the C runtime lacks: CreateFileW with CREATE_NEW for
 * the temporary file, FlushFileBuffers, MoveFileExW with
 * MOVEFILE_WRITE_THROUGH for the rename (NTFS has no directory fsync;
 * write-through is its equivalent). Why events wait is kept beside them
 * in the file .reason, the same line as POSIX's (src/sink/reason.c), the
 * database file named by its volume and file index and its last write.
 *
 * The dropped-events file is %LOCALAPPDATA%\bgrun\dropped ($XDG_RUNTIME_DIR
 * \bgrun\dropped when that is set, as on POSIX): the socket argument of
 * bgrun/sink.h names a pipe on Windows, which has no directory.
 */

#include "win.h"
#include "common/common.h"
#include "sink/sink-internal.h"
#include "bgrun/sink.h"
#include "bgrun/store.h"
#include "bgrun/wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Events stored per transaction when replaying, as src/sink/replay.c. */
#define REPLAY_BATCH 256
/* A temporary file this old was left by a writer that died (as replay.c). */
#define STALE_TMP_100NS (3600 * INT64_C(10000000))
/* Passes of one replay at most, as src/sink/replay.c. */
#define REPLAY_PASSES 4
/* The replays' lock in the spool (replay_lock). */
#define REPLAY_LOCK ".replay-lock"

/* dir\name (or dir\*name), in UTF-16, malloc'd. */
static int join_w(const char *dir, const char *name, WCHAR **ret)
{
	char *s;
	int r;

	if (asprintf(&s, "%s\\%s", dir, name) < 0)
		return -ENOMEM;
	r = bgrun__win_utf16(s, ret);
	free(s);
	return r;
}

/*
 * The spool itself, not what a reparse point (a symbolic link or a
 * junction) there leads to: a replay would never look there.
 */
static int check_spool_dir(const char *dir)
{
	WCHAR *w;
	DWORD attr;
	int r;

	r = bgrun__win_utf16(dir, &w);
	if (r < 0)
		return r;
	attr = GetFileAttributesW(w);
	free(w);
	if (attr == INVALID_FILE_ATTRIBUTES)
		return bgrun__win_errno(GetLastError());
	if (attr & FILE_ATTRIBUTE_REPARSE_POINT)
		return -ELOOP;
	if (!(attr & FILE_ATTRIBUTE_DIRECTORY))
		return -ENOTDIR;
	return 0;
}

static int write_file(const WCHAR *path, const void *data, size_t len)
{
	HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_NEW,
			       FILE_ATTRIBUTE_NORMAL, NULL);
	DWORD n;
	int r = 0;

	if (h == INVALID_HANDLE_VALUE)
		return bgrun__win_errno(GetLastError());
	if (!WriteFile(h, data, (DWORD)len, &n, NULL))
		r = bgrun__win_errno(GetLastError());
	else if (n != (DWORD)len)
		r = -EIO;
	if (r >= 0 && !FlushFileBuffers(h))
		r = bgrun__win_errno(GetLastError());
	if (!CloseHandle(h) && r >= 0)
		r = bgrun__win_errno(GetLastError());
	return r;
}

/* One event into db's spool, as src/sink/spool.c writes it. */
int bgrun__spool_write(const char *db, const struct bgrun_event *ev)
{
	static volatile LONG counter;
	struct bgrun_wire_buf b = { 0 };
	char *dir = NULL, tmp[128], name[160];
	WCHAR *wtmp = NULL, *wname = NULL;
	unsigned k = (unsigned)InterlockedIncrement(&counter);
	unsigned long pid = GetCurrentProcessId();
	int r;

	r = bgrun_wire_put_event(&b, 0, ev);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		goto out;
	r = bgrun__mkdir_p(dir, 0700);
	if (r >= 0)
		r = check_spool_dir(dir);
	if (r < 0)
		goto out;
	/* Names sort by time; pid and counter make them unique. */
	(void)snprintf(tmp, sizeof(tmp), ".tmp-%lu-%u-%s", pid, k, ev->id);
	(void)snprintf(name, sizeof(name), "%019lld-%lu-%u-%s.ev",
		       (long long)bgrun__now_ns(CLOCK_REALTIME), pid, k, ev->id);
	r = join_w(dir, tmp, &wtmp);
	if (r >= 0)
		r = join_w(dir, name, &wname);
	if (r < 0)
		goto out;
	r = write_file(wtmp, b.data, b.len);
	if (r >= 0 && !MoveFileExW(wtmp, wname, MOVEFILE_WRITE_THROUGH))
		r = bgrun__win_errno(GetLastError());
	if (r < 0)
		(void)DeleteFileW(wtmp);
out:
	bgrun_wire_buf_free(&b);
	free(dir);
	free(wtmp);
	free(wname);
	return r < 0 ? r : 0;
}

int bgrun_sink_dropped_path(const char *socket, char **ret_path)
{
	(void)socket;
	if (ret_path == NULL)
		return -EINVAL;
	return bgrun__user_path("XDG_RUNTIME_DIR", NULL, "bgrun/dropped",
				ret_path);
}

/* Which file db is: its volume, its index there and its last write. */
void bgrun__log_id_of(const char *db, struct bgrun__log_id *ret)
{
	BY_HANDLE_FILE_INFORMATION info;
	WCHAR *w;
	HANDLE h;

	*ret = (struct bgrun__log_id){ 0 };
	if (bgrun__win_utf16(db, &w) < 0)
		return;
	h = CreateFileW(w, FILE_READ_ATTRIBUTES,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return;
	if (GetFileInformationByHandle(h, &info))
		*ret = (struct bgrun__log_id){
			.dev = info.dwVolumeSerialNumber,
			.ino = (unsigned long long)info.nFileIndexHigh << 32 |
			       info.nFileIndexLow,
			.mtime = (long long)((unsigned long long)
						     info.ftLastWriteTime
							     .dwHighDateTime
					     << 32 |
				     info.ftLastWriteTime.dwLowDateTime),
		};
	(void)CloseHandle(h);
}

/*
 * As src/sink/spool.c: written whole (a temporary file moved over the
 * last reason); a temporary left by a writer that died is removed as the
 * spool's others are (remove_stale).
 */
int bgrun__spool_note_reason(const char *db, int error, const char *why)
{
	char *dir = NULL, *line = NULL, tmp[64];
	WCHAR *wtmp = NULL, *wreason = NULL;
	struct bgrun__log_id id;
	int n, r;

	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	r = check_spool_dir(dir);
	if (r < 0)
		goto out;
	bgrun__log_id_of(db, &id);
	n = bgrun__reason_format(&line, error, &id, why);
	(void)snprintf(tmp, sizeof(tmp), ".tmp-reason-%lu",
		       (unsigned long)GetCurrentProcessId());
	r = n < 0 ? n : join_w(dir, tmp, &wtmp);
	if (r >= 0)
		r = join_w(dir, BGRUN__SPOOL_REASON, &wreason);
	if (r < 0)
		goto out;
	/* One that a writer of the same process id left behind goes first. */
	(void)DeleteFileW(wtmp);
	r = write_file(wtmp, line, (size_t)n);
	if (r >= 0 && !MoveFileExW(wtmp, wreason, MOVEFILE_REPLACE_EXISTING))
		r = bgrun__win_errno(GetLastError());
	if (r < 0)
		(void)DeleteFileW(wtmp);
out:
	free(dir);
	free(line);
	free(wtmp);
	free(wreason);
	return r < 0 ? r : 0;
}

/* One line "TIME_NS\tID\tERRNO\tDB\n" appended, as src/sink/spool.c does. */
int bgrun__dropped_note(const char *socket, const char *db,
			const struct bgrun_event *ev, int error)
{
	char *path = NULL, *line = NULL, *slash;
	WCHAR *w = NULL;
	HANDLE h;
	DWORD done;
	int n, r;

	r = bgrun_sink_dropped_path(socket, &path);
	if (r < 0)
		return r;
	slash = strrchr(path, '\\');
	if (slash != NULL) {
		*slash = '\0';
		(void)bgrun__mkdir_p(path, 0700);
		*slash = '\\';
	}
	n = asprintf(&line, "%lld\t%s\t%d\t%s\n",
		     (long long)bgrun__now_ns(CLOCK_REALTIME), ev->id, -error,
		     db);
	if (n < 0) {
		r = -ENOMEM;
		goto out;
	}
	for (char *p = line; p < line + n - 1; p++)
		if (*p == '\n')
			*p = '?';
	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		goto out;
	/* FILE_APPEND_DATA alone: each write lands at the end, whole. */
	h = CreateFileW(w, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE,
			NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		r = bgrun__win_errno(GetLastError());
		goto out;
	}
	if (!WriteFile(h, line, (DWORD)n, &done, NULL) || done != (DWORD)n)
		r = -EIO;
	(void)CloseHandle(h);
out:
	free(w);
	free(line);
	free(path);
	return r;
}

/* The names in dir ending in suffix (not beginning with '.'), UTF-8. */
static int list_dir(const char *dir, const char *suffix, char ***ret_names,
		    size_t *ret_n)
{
	WIN32_FIND_DATAW fd;
	char **names = NULL;
	size_t n = 0, cap = 0, slen = strlen(suffix);
	WCHAR *pattern = NULL;
	HANDLE h;
	int r;

	r = join_w(dir, "*", &pattern);
	if (r < 0)
		return r;
	h = FindFirstFileW(pattern, &fd);
	free(pattern);
	if (h == INVALID_HANDLE_VALUE) {
		r = bgrun__win_errno(GetLastError());
		if (r == -ENOENT) {
			*ret_names = NULL;
			*ret_n = 0;
			return 0;
		}
		return r;
	}
	do {
		char *name;
		size_t len;

		if (fd.cFileName[0] == L'.' ||
		    (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
			continue;
		r = bgrun__win_utf8(fd.cFileName, -1, &name);
		if (r < 0)
			break;
		len = strlen(name);
		if (len <= slen || strcmp(name + len - slen, suffix) != 0 ||
		    (strcmp(suffix, ".ev") == 0 && len > 7 &&
		     strcmp(name + len - 7, ".ev.bad") == 0)) {
			free(name);
			continue;
		}
		if (n == cap) {
			char **grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(names, cap * sizeof(*grown));
			if (grown == NULL) {
				free(name);
				r = -ENOMEM;
				break;
			}
			names = grown;
		}
		names[n++] = name;
	} while (FindNextFileW(h, &fd));
	(void)FindClose(h);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return r;
	}
	*ret_names = names;
	*ret_n = n;
	return 0;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The event id in a spool file's name, TIME-PID-N-ID.ev[.bad]. */
static const char *spooled_id(const char *name)
{
	for (int dashes = 0; dashes < 3 && name != NULL; dashes++) {
		name = strchr(name, '-');
		name = name != NULL ? name + 1 : NULL;
	}
	return name != NULL ? name : "";
}

static int cmp_name_id(const void *a, const void *b)
{
	return strcmp(spooled_id(*(char *const *)a),
		      spooled_id(*(char *const *)b));
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Events, not files: the supervisor's two writes of one are one. */
static int64_t distinct_events(char **names, size_t n)
{
	int64_t count = 0;

	qsort(names, n, sizeof(*names), cmp_name_id);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || cmp_name_id(&names[i], &names[i - 1]) != 0)
			count++;
	return count;
}

int bgrun_sink_spool_count(const char *db, int64_t *ret_waiting,
			   int64_t *ret_bad)
{
	static const char *const suffix[2] = { ".ev", ".ev.bad" };
	int64_t count[2] = { 0, 0 };
	char *dir = NULL;
	int r;

	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	for (int k = 0; k < 2 && r >= 0; k++) {
		char **names;
		size_t n;

		r = list_dir(dir, suffix[k], &names, &n);
		if (r < 0)
			break;
		count[k] = distinct_events(names, n);
		free_names(names, n);
	}
	free(dir);
	if (r < 0)
		return r;
	if (ret_waiting != NULL)
		*ret_waiting = count[0];
	if (ret_bad != NULL)
		*ret_bad = count[1];
	return 0;
}

int bgrun_sink_dropped_count(const char *socket, const char *db,
			     int64_t *ret_count)
{
	char *path = NULL;
	WCHAR *w = NULL;
	FILE *f;
	int r;

	if (db == NULL || ret_count == NULL)
		return -EINVAL;
	r = bgrun_sink_dropped_path(socket, &path);
	if (r >= 0)
		r = bgrun__win_utf16(path, &w);
	free(path);
	if (r == -ENOENT) {
		/* No per-user directory: nothing can have been noted there. */
		*ret_count = 0;
		return 0;
	}
	if (r < 0)
		return r;
	f = _wfopen(w, L"rb");
	free(w);
	if (f == NULL) {
		if (errno != ENOENT)
			return -errno;
		*ret_count = 0;
		return 0;
	}
	r = bgrun__dropped_count_file(f, db, ret_count);
	(void)fclose(f);
	return r;
}

/* Reads and decodes one file: 0, -ENOENT (taken by another replay), -EBADMSG. */
static int read_event(const WCHAR *path, struct bgrun_wire_msg *ret_msg)
{
	HANDLE h = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ, NULL,
			       OPEN_EXISTING,
			       FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT,
			       NULL);
	struct bgrun_wire_msg m;
	LARGE_INTEGER size;
	uint8_t *data = NULL;
	size_t frame;
	DWORD got = 0;
	int r = -EBADMSG;

	if (h == INVALID_HANDLE_VALUE)
		return bgrun__win_errno(GetLastError()) == -ENOENT ? -ENOENT
								  : -EBADMSG;
	if (!GetFileSizeEx(h, &size) || size.QuadPart < BGRUN_WIRE_HEADER ||
	    size.QuadPart > BGRUN_WIRE_LEN_SIZE + BGRUN_WIRE_MAX_FRAME)
		goto out;
	data = malloc((size_t)size.QuadPart);
	if (data == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (ReadFile(h, data, (DWORD)size.QuadPart, &got, NULL) &&
	    got == (DWORD)size.QuadPart &&
	    bgrun_wire_frame_size(data, got, BGRUN_WIRE_MAX_FRAME, &frame) == 1 &&
	    frame == got && bgrun_wire_decode(data, frame, &m, NULL) == 0) {
		if (m.type == BGRUN_WIRE_EVENT) {
			*ret_msg = m;
			r = 0;
		} else {
			bgrun_wire_msg_release(&m);
		}
	}
out:
	free(data);
	(void)CloseHandle(h);
	return r;
}

/* Sets a file aside for people to look at: NAME.bad, never replayed. */
static void set_aside(const WCHAR *path)
{
	size_t n = wcslen(path);
	WCHAR *bad = malloc((n + 5) * sizeof(*bad));

	if (bad == NULL)
		return;
	memcpy(bad, path, n * sizeof(*bad));
	memcpy(bad + n, L".bad", 5 * sizeof(*bad));
	(void)MoveFileExW(path, bad, MOVEFILE_WRITE_THROUGH);
	free(bad);
}

struct spooled {
	WCHAR *path;
	struct bgrun_wire_msg msg;
};

/* Stores one chunk; the files of stored events are deleted. */
static int replay_chunk(struct bgrun_store *store, struct spooled *s, size_t n,
			int64_t *count)
{
	struct bgrun_event *evs = calloc(n, sizeof(*evs));
	int r;

	if (evs == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		evs[i] = s[i].msg.ev;
	r = bgrun_store_put_batch(store, evs, n);
	if (r >= 0) {
		for (size_t i = 0; i < n; i++)
			(void)DeleteFileW(s[i].path);
		*count += (int64_t)n;
	} else if (r == -EINVAL) {
		/* One by one: the refused ones are set aside. */
		r = 0;
		for (size_t i = 0; i < n && r >= 0; i++) {
			r = bgrun_store_put(store, &s[i].msg.ev);
			if (r == -EINVAL) {
				set_aside(s[i].path);
				r = 0;
			} else if (r >= 0) {
				(void)DeleteFileW(s[i].path);
				(*count)++;
			}
		}
	}
	free(evs);
	return r < 0 ? r : 0;
}

/* Temporary files of writers that died long ago are removed, as on POSIX. */
static void remove_stale(const char *dir)
{
	WIN32_FIND_DATAW fd;
	ULARGE_INTEGER now, at;
	FILETIME ft;
	WCHAR *pattern;
	HANDLE h;

	if (join_w(dir, ".tmp-*", &pattern) < 0)
		return;
	h = FindFirstFileW(pattern, &fd);
	free(pattern);
	if (h == INVALID_HANDLE_VALUE)
		return;
	GetSystemTimeAsFileTime(&ft);
	now.LowPart = ft.dwLowDateTime;
	now.HighPart = ft.dwHighDateTime;
	do {
		char *name;
		WCHAR *path;

		at.LowPart = fd.ftLastWriteTime.dwLowDateTime;
		at.HighPart = fd.ftLastWriteTime.dwHighDateTime;
		if ((fd.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY |
					    FILE_ATTRIBUTE_REPARSE_POINT)) ||
		    now.QuadPart < at.QuadPart ||
		    (int64_t)(now.QuadPart - at.QuadPart) <= STALE_TMP_100NS ||
		    bgrun__win_utf8(fd.cFileName, -1, &name) < 0)
			continue;
		if (join_w(dir, name, &path) == 0) {
			(void)DeleteFileW(path);
			free(path);
		}
		free(name);
	} while (FindNextFileW(h, &fd));
	(void)FindClose(h);
}

/* Whether the spool holds no event to replay (an error: not known). */
static bool spool_empty(const char *dir)
{
	char **names;
	size_t n;

	if (list_dir(dir, ".ev", &names, &n) < 0)
		return false;
	free_names(names, n);
	return n == 0;
}

/* One pass over what the spool holds now: 0, or -errno of the first failure. */
static int replay_pass(struct bgrun_store *store, const char *dir,
		       struct spooled *s, int64_t *count)
{
	char **names = NULL;
	size_t n = 0;
	int r;

	r = list_dir(dir, ".ev", &names, &n);
	if (r < 0)
		return r;
	/* In the order they were written: the names begin with the time. */
	qsort(names, n, sizeof(*names), cmp_name);
	for (size_t done = 0; done < n && r >= 0;) {
		size_t k = 0;

		for (; done < n && k < REPLAY_BATCH && r >= 0; done++) {
			WCHAR *path;
			int e;

			r = join_w(dir, names[done], &path);
			if (r < 0)
				break;
			e = read_event(path, &s[k].msg);
			if (e == -EBADMSG)
				set_aside(path);
			if (e == -ENOMEM)
				r = e;
			if (e < 0) {
				free(path);
				continue;
			}
			s[k++].path = path;
		}
		if (r >= 0 && k > 0)
			r = replay_chunk(store, s, k, count);
		for (size_t i = 0; i < k; i++) {
			bgrun_wire_msg_release(&s[i].msg);
			free(s[i].path);
		}
	}
	free_names(names, n);
	return r;
}

/*
 * The replays' lock, taken: dir\.replay-lock, made if missing, opened
 * with every sharing and locked with bgrun__file_trylock, which a
 * directory cannot be (POSIX locks the directory itself). *ret holds it
 * until it is closed. The file itself, never what a reparse point there
 * leads to: a link to a file elsewhere would tie this spool's replays to
 * whatever else locks that file. Not an event: its name begins with '.',
 * which list_dir, and POSIX's scandir, skip. 0, -EWOULDBLOCK while
 * another replay holds it, else -errno (a read-only spool, no locks on
 * the file system, a link or a directory of that name).
 */
static int replay_lock(const char *dir, HANDLE *ret)
{
	BY_HANDLE_FILE_INFORMATION info;
	WCHAR *path;
	HANDLE h;
	int r;

	r = join_w(dir, REPLAY_LOCK, &path);
	if (r < 0)
		return r;
	/* GENERIC_READ is enough for LockFileEx, and for making the file. */
	h = CreateFileW(path, GENERIC_READ,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_ALWAYS,
			FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT,
			NULL);
	free(path);
	if (h == INVALID_HANDLE_VALUE)
		return bgrun__win_errno(GetLastError());
	if (!GetFileInformationByHandle(h, &info))
		r = bgrun__win_errno(GetLastError());
	else if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
		r = -ELOOP;
	else if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ||
		 GetFileType(h) != FILE_TYPE_DISK)
		r = -EBADMSG;
	else
		r = bgrun__file_trylock(h);
	if (r < 0) {
		(void)CloseHandle(h);
		return r;
	}
	*ret = h;
	return 0;
}

/* The tests' hook (sink-internal.h: bgrun__replay_set_hook), as POSIX's. */
static void (*volatile replay_hook)(int where);

void bgrun__replay_set_hook(void (*fn)(int where))
{
	(void)InterlockedExchangePointer((void *volatile *)&replay_hook,
					 (void *)fn);
}

/*
 * The spool is empty: its reason goes, unless an event came while it
 * went (src/sink/replay.c: drop_reason says why). Set aside, the spool
 * looked at again, and put back with a hard link, which never replaces
 * a newer reason; without hard links (FAT), moved back over any.
 */
static void drop_reason(const char *dir)
{
	static volatile LONG counter;
	WCHAR *reason = NULL, *aside = NULL;
	char name[64];

	(void)snprintf(name, sizeof(name), ".tmp-reason-gone-%lu-%u",
		       (unsigned long)GetCurrentProcessId(),
		       (unsigned)InterlockedIncrement(&counter));
	if (replay_hook != NULL)
		replay_hook(BGRUN__REPLAY_EMPTIED);
	if (join_w(dir, BGRUN__SPOOL_REASON, &reason) < 0 ||
	    join_w(dir, name, &aside) < 0 || !MoveFileExW(reason, aside, 0))
		goto out;
	if (!spool_empty(dir) && !CreateHardLinkW(reason, aside, NULL) &&
	    GetLastError() != ERROR_ALREADY_EXISTS &&
	    GetLastError() != ERROR_FILE_EXISTS)
		(void)MoveFileExW(aside, reason, MOVEFILE_REPLACE_EXISTING);
	(void)DeleteFileW(aside);
out:
	free(reason);
	free(aside);
}

/*
 * One replay at a time, as on POSIX (src/sink/replay.c says why): it
 * holds the replays' lock (replay_lock), and the others return at once,
 * since it stores what they would. What is spooled while the replay
 * runs is seen by its next pass; a few passes at most, so that writers
 * spooling without end do not keep one replay going for ever.
 */
int bgrun_sink_replay(struct bgrun_store *store, const char *db,
		      int64_t *ret_count)
{
	HANDLE lock = INVALID_HANDLE_VALUE;
	struct spooled *s = NULL;
	char *dir = NULL;
	int64_t count = 0;
	bool empty = false;
	int r;

	if (store == NULL || db == NULL)
		return -EINVAL;
	r = bgrun_sink_spool_dir(db, &dir);
	if (r < 0)
		return r;
	r = check_spool_dir(dir);
	if (r == -ENOENT) {
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	r = replay_lock(dir, &lock);
	if (r == -EWOULDBLOCK) {
		/* Another replay is at work: it stores them. */
		if (ret_count != NULL)
			*ret_count = 0;
		r = 0;
		goto out;
	}
	/*
	 * Held; or none to be had (a read-only spool, no locks on the file
	 * system, a link in its place): then each replay does it all, as
	 * before.
	 */
	r = 0;
	s = calloc(REPLAY_BATCH, sizeof(*s));
	if (s == NULL) {
		r = -ENOMEM;
		goto out;
	}
	remove_stale(dir);
	for (int pass = 0; pass < REPLAY_PASSES && r >= 0 && !empty; pass++) {
		r = replay_pass(store, dir, s, &count);
		if (replay_hook != NULL)
			replay_hook(BGRUN__REPLAY_PASSED);
		empty = r >= 0 && spool_empty(dir);
	}
	if (empty)
		drop_reason(dir);
	if (r >= 0 && ret_count != NULL)
		*ret_count = count;
out:
	/* Closing the handle releases the lock. */
	if (lock != INVALID_HANDLE_VALUE)
		(void)CloseHandle(lock);
	free(s);
	free(dir);
	return r;
}

/*
 * The reason kept in db's spool: its -errno and message (why), whether
 * db is still the file it was met on (*ret_same), or 0 if there is none.
 */
static int read_reason(const char *db, char *why, size_t size, bool *ret_same)
{
	const char *said;
	char *dir = NULL, line[1024];
	WCHAR *w = NULL;
	HANDLE h;
	DWORD n = 0;
	int error;

	if (bgrun_sink_spool_dir(db, &dir) < 0)
		return 0;
	error = join_w(dir, BGRUN__SPOOL_REASON, &w);
	free(dir);
	if (error < 0)
		return 0;
	h = CreateFileW(w, GENERIC_READ,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING,
			FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT,
			NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return 0;
	if (!ReadFile(h, line, sizeof(line) - 1, &n, NULL))
		n = 0;
	(void)CloseHandle(h);
	if (n == 0)
		return 0;
	line[n] = '\0';
	error = bgrun__reason_judge(db, line, &said, ret_same);
	return error == 0 ? 0 : bgrun__say(why, size, error, "%s", said);
}

/* As src/sink/health.c's. */
int bgrun_sink_spool_reason(const char *db, char *why, size_t size)
{
	int64_t waiting = 0;
	bool same;

	if (why != NULL && size > 0)
		why[0] = '\0';
	if (db == NULL || bgrun_sink_spool_count(db, &waiting, NULL) < 0 ||
	    waiting == 0)
		return 0;
	return read_reason(db, why, size, &same);
}

/*
 * As src/sink/health.c judges it, with what Windows tells: the file (a
 * regular file, not a reparse point, writable, beginning as an SQLite
 * database) or, when it does not exist yet, the nearest directory above
 * it. Free space and read-only volumes are left to the write to say.
 */
int bgrun_sink_check_log(const char *db, char *why, size_t size)
{
	static const char magic[16] = "SQLite format 3";
	char head[16], *dir, reason[600];
	int64_t waiting = 0;
	bool same = false;
	DWORD attr, got = 0;
	WCHAR *w;
	HANDLE h;
	int r;

	if (why != NULL && size > 0)
		why[0] = '\0';
	if (db == NULL || db[0] == '\0')
		return bgrun__say(why, size, -ENOENT,
			   "no event log: set BGRUN_DB or LOCALAPPDATA");
	r = bgrun__win_utf16(db, &w);
	if (r < 0)
		return bgrun__say(why, size, r, "%s: %s", db, bgrun_strerror(r));
	attr = GetFileAttributesW(w);
	if (attr == INVALID_FILE_ATTRIBUTES) {
		r = bgrun__win_errno(GetLastError());
		free(w);
		if (r != -ENOENT)
			return bgrun__say(why, size, r, "%s: %s", db, bgrun_strerror(r));
		/* Made at the first write: the nearest directory must be there. */
		dir = strdup(db);
		for (char *sep; dir != NULL;) {
			sep = strrchr(dir, '\\');
			if (strrchr(dir, '/') > sep)
				sep = strrchr(dir, '/');
			if (sep == NULL)
				break;
			*sep = '\0';
			if (bgrun__win_utf16(dir, &w) < 0)
				break;
			attr = GetFileAttributesW(w);
			free(w);
			if (attr == INVALID_FILE_ATTRIBUTES)
				continue;
			r = attr & FILE_ATTRIBUTE_DIRECTORY
				    ? 0
				    : bgrun__say(why, size, -ENOTDIR,
					  "%s is not a directory", dir);
			free(dir);
			return r;
		}
		free(dir);
		return 0;
	}
	if (attr & FILE_ATTRIBUTE_REPARSE_POINT) {
		free(w);
		return bgrun__say(why, size, -ELOOP,
			   "%s is a symbolic link (refused for writing)", db);
	}
	if (attr & FILE_ATTRIBUTE_DIRECTORY) {
		free(w);
		return bgrun__say(why, size, -EBADMSG, "%s is not a regular file", db);
	}
	if (attr & FILE_ATTRIBUTE_READONLY) {
		free(w);
		return bgrun__say(why, size, -EACCES, "%s: %s", db,
			   bgrun_strerror(-EACCES));
	}
	h = CreateFileW(w, GENERIC_READ,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE) {
		r = bgrun__win_errno(GetLastError());
		return bgrun__say(why, size, r, "%s: %s", db, bgrun_strerror(r));
	}
	if (!ReadFile(h, head, sizeof(head), &got, NULL))
		got = 0;
	(void)CloseHandle(h);
	if (got == 0)
		return 0; /* made, not written yet: the store will set it up */
	if (got != sizeof(head) || memcmp(head, magic, sizeof(head)) != 0)
		return bgrun__say(why, size, -EBADMSG, "%s is not an SQLite database",
			   db);
	/* Damage past the header: as src/sink/health.c. */
	if (read_reason(db, reason, sizeof(reason), &same) == -EBADMSG && same &&
	    bgrun_sink_spool_count(db, &waiting, NULL) >= 0 && waiting > 0)
		return bgrun__say(why, size, -EBADMSG, "%s (the last write failed)",
			   reason);
	return 0;
}
