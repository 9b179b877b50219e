/* SPDX-License-Identifier: MIT */
/* sinkconn.c: the sink client's way to its daemon on Windows: the named pipe \\.\pipe\bgrun-sink-SID, whose server must run as the calling user, read and written overlapped. */

/*
 * The pipe's name carries the user's SID (its string form), not the
 * user's name: two accounts of one name (a local and a domain one) are
 * two users. What keeps another user's process from posing as the
 * daemon is not the name, which anyone may create first, but the check
 * made here on every connection: the pipe's server process, by
 * GetNamedPipeServerProcessId, runs with a token whose user SID is ours.
 * (A process id can be reused once its process has exited; the server
 * holds its end of the pipe open, so the process that owns the id now
 * is the one that serves it.) The daemon makes the same check of each
 * client, and gives its pipe a DACL that lets only its own user in
 * (logsink/serve-pipe.c).
 *
 * The exchange reads while it writes (as POSIX's non-blocking socket
 * does), so that the daemon, which stops reading a client that does not
 * read its acks, and the client can never wait on each other: one
 * overlapped read is kept pending into a buffer of the connection's,
 * and a write goes from a copy of the caller's bytes, so nothing the
 * caller owns is used once a step returns.
 */

#include "win.h"
#include "bgrun/sink.h"

#include <sddl.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIPE_PREFIX "\\\\.\\pipe\\"
#define BUF_SIZE 65536
/* How long a connect waits for a free instance of a busy pipe. */
#define BUSY_WAIT_MS 2000

struct bgrun__win_sinkconn {
	HANDLE pipe;
	OVERLAPPED rov, wov;    /* their events: manual-reset */
	bool reading, writing;  /* an overlapped read, write pending */
	size_t rlen, roff;      /* bytes read and not yet given out */
	uint8_t rbuf[BUF_SIZE];
	uint8_t wbuf[BUF_SIZE];
};

/* The user SID of process's token, malloc'd: 0 or -errno. */
static int process_sid(HANDLE process, PSID *ret)
{
	union {
		TOKEN_USER user;
		uint8_t bytes[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} info;
	HANDLE token;
	DWORD len = 0, sid_len;
	PSID sid;
	BOOL ok;

	if (!OpenProcessToken(process, TOKEN_QUERY, &token))
		return bgrun__win_errno(GetLastError());
	ok = GetTokenInformation(token, TokenUser, &info, sizeof(info), &len);
	(void)CloseHandle(token);
	if (!ok)
		return bgrun__win_errno(GetLastError());
	sid_len = GetLengthSid(info.user.User.Sid);
	sid = malloc(sid_len);
	if (sid == NULL)
		return -ENOMEM;
	if (!CopySid(sid_len, sid, info.user.User.Sid)) {
		free(sid);
		return -EINVAL;
	}
	*ret = sid;
	return 0;
}

/* The SID's string form (S-1-5-...), malloc'd UTF-8: 0 or -errno. */
static int sid_string(PSID sid, char **ret)
{
	WCHAR *w;
	int r;

	if (!ConvertSidToStringSidW(sid, &w))
		return bgrun__win_errno(GetLastError());
	r = bgrun__win_utf8(w, -1, ret);
	(void)LocalFree(w);
	return r;
}

int bgrun_sink_default_socket(char **ret_path)
{
	const char *env = getenv("BGRUN_SOCKET");
	char *path, *s;
	PSID sid;
	int r;

	if (ret_path == NULL)
		return -EINVAL;
	if (env != NULL && env[0] != '\0') {
		/* Only a pipe: a file of that name would never be the daemon. */
		if (_strnicmp(env, PIPE_PREFIX, strlen(PIPE_PREFIX)) != 0)
			return -EINVAL;
		path = strdup(env);
		if (path == NULL)
			return -ENOMEM;
		*ret_path = path;
		return 0;
	}
	r = process_sid(GetCurrentProcess(), &sid);
	if (r < 0)
		return r;
	r = sid_string(sid, &s);
	free(sid);
	if (r < 0)
		return r;
	r = asprintf(&path, PIPE_PREFIX "bgrun-sink-%s", s);
	free(s);
	if (r < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

/* A pipe has no directory: who may open it is its DACL's business. */
int bgrun_sink_check_dir(const char *dir)
{
	(void)dir;
	return -ENOSYS;
}

/* Whether the process at the server end of pipe runs as the calling user. */
static int check_server(HANDLE pipe, const char *address, char *err,
			size_t size)
{
	PSID ours = NULL, theirs = NULL;
	HANDLE process;
	ULONG pid = 0;
	char *who = NULL;
	int r;

	if (!GetNamedPipeServerProcessId(pipe, &pid)) {
		r = bgrun__win_errno(GetLastError());
		(void)snprintf(err, size, "%s: whose pipe: %s", address,
			       strerror(-r));
		return r;
	}
	process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
	if (process == NULL) {
		r = bgrun__win_errno(GetLastError());
		(void)snprintf(err, size,
			       "%s: its server (pid %lu) cannot be looked at "
			       "(%s): not used",
			       address, (unsigned long)pid, strerror(-r));
		return r == -EACCES ? -EPERM : r;
	}
	r = process_sid(process, &theirs);
	(void)CloseHandle(process);
	if (r >= 0)
		r = process_sid(GetCurrentProcess(), &ours);
	if (r < 0) {
		(void)snprintf(err, size, "%s: the server's user: %s", address,
			       strerror(-r));
		goto out;
	}
	if (!EqualSid(ours, theirs)) {
		(void)sid_string(theirs, &who);
		(void)snprintf(err, size,
			       "%s: the daemon (pid %lu) runs as %s: not used",
			       address, (unsigned long)pid,
			       who != NULL ? who : "another user");
		r = -EPERM;
	}
out:
	free(who);
	free(ours);
	free(theirs);
	return r;
}

int bgrun__sinkconn_open(const char *address, struct bgrun__sinkconn *ret,
			 char *err, size_t size)
{
	struct bgrun__win_sinkconn *c;
	HANDLE h = INVALID_HANDLE_VALUE;
	WCHAR *w;
	int r;

	if (_strnicmp(address, PIPE_PREFIX, strlen(PIPE_PREFIX)) != 0) {
		(void)snprintf(err, size, "%s: not a pipe name (\\\\.\\pipe\\...)",
			       address);
		return -EINVAL;
	}
	r = bgrun__win_utf16(address, &w);
	if (r < 0) {
		(void)snprintf(err, size, "%s: %s", address, strerror(-r));
		return r;
	}
	/*
	 * SECURITY_IDENTIFICATION: the daemon may learn who we are, never
	 * act as us. Busy (every instance taken): one bounded wait for a
	 * free one, as a full backlog is on POSIX.
	 */
	for (int attempt = 0; attempt < 2; attempt++) {
		h = CreateFileW(w, GENERIC_READ | GENERIC_WRITE, 0, NULL,
				OPEN_EXISTING,
				FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT |
					SECURITY_IDENTIFICATION,
				NULL);
		if (h != INVALID_HANDLE_VALUE ||
		    GetLastError() != ERROR_PIPE_BUSY || attempt > 0)
			break;
		(void)WaitNamedPipeW(w, BUSY_WAIT_MS);
	}
	free(w);
	if (h == INVALID_HANDLE_VALUE) {
		DWORD e = GetLastError();

		r = e == ERROR_PIPE_BUSY ? -EAGAIN : bgrun__win_errno(e);
		(void)snprintf(err, size, "%s: %s", address,
			       e == ERROR_PIPE_BUSY ? "every instance is busy"
						    : strerror(-r));
		return r;
	}
	r = check_server(h, address, err, size);
	if (r < 0)
		goto fail;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		r = -ENOMEM;
		(void)snprintf(err, size, "out of memory");
		goto fail;
	}
	c->pipe = h;
	c->rov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
	c->wov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (c->rov.hEvent == NULL || c->wov.hEvent == NULL) {
		r = bgrun__win_errno(GetLastError());
		(void)snprintf(err, size, "CreateEvent: %s", strerror(-r));
		if (c->rov.hEvent != NULL)
			(void)CloseHandle(c->rov.hEvent);
		if (c->wov.hEvent != NULL)
			(void)CloseHandle(c->wov.hEvent);
		free(c);
		goto fail;
	}
	ret->p = c;
	return 0;
fail:
	(void)CloseHandle(h);
	return r;
}

bool bgrun__sinkconn_is_open(const struct bgrun__sinkconn *c)
{
	return c->p != NULL;
}

/* Starts the pending read unless one is pending or bytes wait: 0 or -errno. */
static int start_read(struct bgrun__win_sinkconn *c)
{
	if (c->reading || c->rlen > c->roff)
		return 0;
	c->rlen = c->roff = 0;
	if (!ReadFile(c->pipe, c->rbuf, sizeof(c->rbuf), NULL, &c->rov)) {
		DWORD e = GetLastError();

		if (e == ERROR_BROKEN_PIPE || e == ERROR_PIPE_NOT_CONNECTED)
			return -ECONNRESET;
		if (e != ERROR_IO_PENDING)
			return bgrun__win_errno(e);
	}
	/* Done at once or not: its completion is looked at the same way. */
	c->reading = true;
	return 0;
}

/* Collects a completed read or write (when its event is set): 0 or -errno. */
static int finish(struct bgrun__win_sinkconn *c, bool read)
{
	OVERLAPPED *ov = read ? &c->rov : &c->wov;
	DWORD n = 0;

	/* The event stays set after its operation: look only while one is out. */
	if (!(read ? c->reading : c->writing) ||
	    WaitForSingleObject(ov->hEvent, 0) != WAIT_OBJECT_0)
		return 0;
	if (read)
		c->reading = false;
	else
		c->writing = false;
	if (!GetOverlappedResult(c->pipe, ov, &n, FALSE)) {
		DWORD e = GetLastError();

		if (e == ERROR_BROKEN_PIPE || e == ERROR_PIPE_NOT_CONNECTED)
			return -ECONNRESET;
		return bgrun__win_errno(e);
	}
	if (read)
		c->rlen = n;
	return 0;
}

int bgrun__sinkconn_step(struct bgrun__sinkconn *conn, const void *out,
			 size_t out_len, size_t *ret_sent, void *in,
			 size_t in_cap, size_t *ret_got, int timeout_ms)
{
	struct bgrun__win_sinkconn *c = conn->p;
	HANDLE events[2];
	DWORD n = 0, wait;
	size_t sent = 0, got;
	int r;

	*ret_sent = *ret_got = 0;
	r = finish(c, false);
	if (r < 0)
		return r;
	if (out_len > 0 && !c->writing) {
		sent = out_len < sizeof(c->wbuf) ? out_len : sizeof(c->wbuf);
		memcpy(c->wbuf, out, sent);
		if (!WriteFile(c->pipe, c->wbuf, (DWORD)sent, NULL, &c->wov) &&
		    GetLastError() != ERROR_IO_PENDING) {
			DWORD e = GetLastError();

			return e == ERROR_BROKEN_PIPE || e == ERROR_NO_DATA
				       ? -ECONNRESET
				       : bgrun__win_errno(e);
		}
		/* Ours now: the step has taken them, whenever they go out. */
		c->writing = true;
	}
	r = start_read(c);
	if (r < 0)
		return r;
	if (c->reading) {
		events[n++] = c->rov.hEvent;
		if (c->writing)
			events[n++] = c->wov.hEvent;
		/* Bytes just taken are progress: look, but do not wait. */
		wait = WaitForMultipleObjects(n, events, FALSE,
					      sent > 0	       ? 0
					      : timeout_ms < 0 ? INFINITE
							       : (DWORD)timeout_ms);
		if (wait == WAIT_FAILED)
			return bgrun__win_errno(GetLastError());
		r = finish(c, true);
		if (r >= 0)
			r = finish(c, false);
		if (r < 0)
			return r;
	}
	got = c->rlen - c->roff;
	if (got > in_cap)
		got = in_cap;
	memcpy(in, c->rbuf + c->roff, got);
	c->roff += got;
	*ret_sent = sent;
	*ret_got = got;
	return 0;
}

void bgrun__sinkconn_close(struct bgrun__sinkconn *conn)
{
	struct bgrun__win_sinkconn *c = conn->p;
	DWORD n;

	if (c == NULL)
		return;
	/* The buffers must outlive what the system still writes into them. */
	if (c->reading || c->writing) {
		(void)CancelIoEx(c->pipe, NULL);
		if (c->reading)
			(void)GetOverlappedResult(c->pipe, &c->rov, &n, TRUE);
		if (c->writing)
			(void)GetOverlappedResult(c->pipe, &c->wov, &n, TRUE);
	}
	(void)CloseHandle(c->pipe);
	(void)CloseHandle(c->rov.hEvent);
	(void)CloseHandle(c->wov.hEvent);
	free(c);
	conn->p = NULL;
}

int bgrun__sinkconn_start(const char *const *argv, int timeout_ms, char *line,
			  size_t size)
{
	(void)argv;
	(void)timeout_ms;
	(void)snprintf(line, size,
		       "the Windows build does not start a daemon "
		       "(BGRUN_SINK=auto is try there): run logsink serve");
	return -ENOSYS;
}

int bgrun__file_identity(const char *path, int64_t *ret_dev, int64_t *ret_ino)
{
	BY_HANDLE_FILE_INFORMATION info;
	WCHAR *w;
	HANDLE h;
	BOOL ok;
	int r;

	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		return r;
	h = CreateFileW(w, 0,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return bgrun__win_errno(GetLastError());
	ok = GetFileInformationByHandle(h, &info);
	r = ok ? 0 : bgrun__win_errno(GetLastError());
	(void)CloseHandle(h);
	if (r < 0)
		return r;
	*ret_dev = (int64_t)info.dwVolumeSerialNumber;
	*ret_ino = (int64_t)(((uint64_t)info.nFileIndexHigh << 32) |
			     info.nFileIndexLow);
	return 0;
}
