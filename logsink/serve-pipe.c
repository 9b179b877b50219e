/* SPDX-License-Identifier: MIT */
/* serve-pipe.c: the daemon's Windows half: the named pipe (owner-only DACL, one daemon per pipe), each client process's user, the stop event for --stop. */

/*
 * libuv makes the pipe's instances (uv_pipe_bind, then more as clients
 * come) with CreateNamedPipeW and no security attributes: the default
 * DACL of a pipe lets Everyone read it. libuv asks for WRITE_DAC on the
 * first instance (for its uv_pipe_chmod), so the DACL is replaced there,
 * before uv_listen, with one that lets our user alone in. The instances
 * made later have it too: a named pipe's security is the pipe's, not an
 * instance's (the test reads it back through six connections, past
 * libuv's first four instances; shown under wine, not on Windows). That
 * leaves the moment between the bind and the new DACL, and an
 * administrator's process, which the DACL does not stop: every client is
 * also checked (lsink_conn_peer), as SO_PEERCRED is used on POSIX, by the
 * user SID of its process's token.
 *
 * One daemon per pipe: a named mutex (Local\bgrun-sink-lock-NAME),
 * which exists while a daemon holds it and goes with the daemon's last
 * handle, a crash included, as the POSIX daemon's flock does.
 * FILE_FLAG_FIRST_PIPE_INSTANCE (libuv's bind) refuses a second server
 * of the pipe on Windows; wine does not enforce it, the mutex holds there
 * too.
 *
 * Windows has no SIGTERM to send: `serve --stop` sets the daemon's stop
 * event (Local\bgrun-sink-stop-PID, owner-only), which a thread of the
 * daemon waits on and passes to the loop as the signal would.
 */

#include "serve.h"

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIPE_PREFIX "\\\\.\\pipe\\"
/* Every right of any object: the owner-only ACE of a pipe, a mutex, an event. */
#define ALL_RIGHTS (STANDARD_RIGHTS_ALL | SPECIFIC_RIGHTS_ALL)

struct pipe_state {
	PSID sid;            /* our user's */
	PACL acl;            /* one ACE: ALL_RIGHTS for sid */
	SECURITY_DESCRIPTOR sd;
	SECURITY_ATTRIBUTES sa;
	HANDLE lock;         /* the named mutex */
	HANDLE stop_event;   /* set by serve --stop */
	HANDLE quit_event;   /* set by lsink_serve_stoppers_end */
	HANDLE thread;       /* waits on both */
	uv_async_t *stop;
};

/* The user SID of process's token, malloc'd, or NULL. */
static PSID process_sid(HANDLE process)
{
	union {
		TOKEN_USER user;
		BYTE bytes[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} info;
	HANDLE token;
	DWORD len = 0, n;
	PSID sid = NULL;
	BOOL ok;

	if (!OpenProcessToken(process, TOKEN_QUERY, &token))
		return NULL;
	ok = GetTokenInformation(token, TokenUser, &info, sizeof(info), &len);
	(void)CloseHandle(token);
	if (!ok)
		return NULL;
	n = GetLengthSid(info.user.User.Sid);
	sid = malloc(n);
	if (sid != NULL && !CopySid(n, sid, info.user.User.Sid)) {
		free(sid);
		sid = NULL;
	}
	return sid;
}

/* sid as S-1-5-..., into buf. */
static void sid_text(PSID sid, char *buf, size_t size)
{
	char *s = NULL;

	if (sid != NULL && ConvertSidToStringSidA(sid, &s)) {
		(void)snprintf(buf, size, "%s", s);
		(void)LocalFree(s);
	} else {
		(void)snprintf(buf, size, "an unknown user");
	}
}

static const char *win_error(DWORD e, char *buf, size_t size)
{
	DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM |
					 FORMAT_MESSAGE_IGNORE_INSERTS,
				 NULL, e, 0, buf, (DWORD)size, NULL);

	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
			 buf[n - 1] == '.'))
		buf[--n] = '\0';
	if (n == 0)
		(void)snprintf(buf, size, "error %lu", (unsigned long)e);
	return buf;
}

/* Named objects of the daemon: Local\bgrun-sink-WHAT-REST, REST without backslashes. */
static int object_name(const char *what, const char *rest, WCHAR *w,
		       size_t size)
{
	char name[MAX_PATH];
	int n;

	n = snprintf(name, sizeof(name), "Local\\bgrun-sink-%s-%s", what, rest);
	if (n < 0 || (size_t)n >= sizeof(name))
		return -ENAMETOOLONG;
	for (char *p = name + strlen("Local\\"); *p != '\0'; p++)
		if (*p == '\\')
			*p = '!';
	return MultiByteToWideChar(CP_UTF8, 0, name, -1, w, (int)size) > 0
		       ? 0
		       : -EILSEQ;
}

static struct pipe_state *state_new(struct lsink_serve *s)
{
	struct pipe_state *st = calloc(1, sizeof(*st));
	DWORD size;

	if (st == NULL)
		return NULL;
	s->srv.platform = st;
	st->sid = process_sid(GetCurrentProcess());
	if (st->sid == NULL)
		return NULL;
	size = sizeof(ACL) + sizeof(ACCESS_ALLOWED_ACE) + GetLengthSid(st->sid);
	st->acl = malloc(size);
	if (st->acl == NULL || !InitializeAcl(st->acl, size, ACL_REVISION) ||
	    !AddAccessAllowedAce(st->acl, ACL_REVISION, ALL_RIGHTS, st->sid) ||
	    !InitializeSecurityDescriptor(&st->sd,
					  SECURITY_DESCRIPTOR_REVISION) ||
	    !SetSecurityDescriptorDacl(&st->sd, TRUE, st->acl, FALSE))
		return NULL;
	st->sa = (SECURITY_ATTRIBUTES){ sizeof(st->sa), &st->sd, FALSE };
	return st;
}

int lsink_serve_listen(struct lsink_serve *s)
{
	struct pipe_state *st;
	WCHAR name[MAX_PATH];
	char why[256];
	DWORD e;

	s->srv.uid = BGRUN_NULL;
	if (_strnicmp(s->socket, PIPE_PREFIX, strlen(PIPE_PREFIX)) != 0 ||
	    s->socket[strlen(PIPE_PREFIX)] == '\0')
		return lsink_serve_fail(s,
					"'%s': not a pipe name: the Windows "
					"build listens on \\\\.\\pipe\\NAME",
					lsink_printable(s->socket));
	st = state_new(s);
	if (st == NULL)
		return lsink_serve_fail(s, "cannot make an owner-only "
					   "security descriptor: %s",
					win_error(GetLastError(), why,
						  sizeof(why)));
	if (object_name("lock", s->socket + strlen(PIPE_PREFIX), name,
			MAX_PATH) < 0)
		return lsink_serve_fail(s, "'%s': the pipe name is too long",
					lsink_printable(s->socket));
	st->lock = CreateMutexW(&st->sa, FALSE, name);
	e = GetLastError();
	if (st->lock == NULL && e == ERROR_ACCESS_DENIED)
		return lsink_serve_fail(s,
					"another user's program holds the lock "
					"of '%s': not served",
					lsink_printable(s->socket));
	if (st->lock == NULL)
		return lsink_serve_fail(s, "cannot create the lock of '%s': %s",
					lsink_printable(s->socket),
					win_error(e, why, sizeof(why)));
	if (e == ERROR_ALREADY_EXISTS) {
		(void)CloseHandle(st->lock);
		st->lock = NULL;
		return lsink_serve_fail(s,
					"another logsink serve is already "
					"serving '%s'",
					lsink_printable(s->socket));
	}
	return 0;
}

int lsink_serve_listen_start(struct lsink_serve *s)
{
	struct lsink_server *srv = &s->srv;
	struct pipe_state *st = srv->platform;
	uv_os_fd_t h;
	DWORD e;
	char why[256];
	int r;

	r = uv_pipe_init(&srv->loop, &srv->listener, 0);
	if (r >= 0)
		r = uv_pipe_bind(&srv->listener, s->socket);
	if (r == UV_EADDRINUSE)
		return lsink_serve_fail(s,
					"something already serves '%s'",
					lsink_printable(s->socket));
	if (r >= 0)
		r = uv_fileno((uv_handle_t *)&srv->listener, &h);
	if (r < 0)
		return lsink_serve_fail(s, "cannot listen on '%s': %s",
					lsink_printable(s->socket),
					uv_strerror(r));
	/* PROTECTED: nothing inherited adds to it. */
	e = SetSecurityInfo(h, SE_KERNEL_OBJECT,
			    DACL_SECURITY_INFORMATION |
				    PROTECTED_DACL_SECURITY_INFORMATION,
			    NULL, NULL, st->acl, NULL);
	if (e != ERROR_SUCCESS)
		return lsink_serve_fail(s, "cannot make '%s' owner-only: %s",
					lsink_printable(s->socket),
					win_error(e, why, sizeof(why)));
	r = uv_listen((uv_stream_t *)&srv->listener, 256, lsink_conn_accept);
	if (r < 0)
		return lsink_serve_fail(s, "listening on '%s': %s",
					lsink_printable(s->socket),
					uv_strerror(r));
	return 0;
}

static DWORD WINAPI stop_thread(void *arg)
{
	struct pipe_state *st = arg;
	HANDLE h[2] = { st->stop_event, st->quit_event };

	/* uv_async_send is the one libuv call safe from any thread. */
	if (WaitForMultipleObjects(2, h, FALSE, INFINITE) == WAIT_OBJECT_0)
		(void)uv_async_send(st->stop);
	return 0;
}

int lsink_serve_stoppers_start(struct lsink_serve *s)
{
	struct pipe_state *st = s->srv.platform;
	WCHAR name[MAX_PATH];
	char pid[32], why[256];

	(void)snprintf(pid, sizeof(pid), "%lu",
		       (unsigned long)GetCurrentProcessId());
	(void)object_name("stop", pid, name, MAX_PATH);
	st->stop = &s->srv.stop;
	st->stop_event = CreateEventW(&st->sa, TRUE, FALSE, name);
	st->quit_event = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (st->stop_event == NULL || st->quit_event == NULL)
		return lsink_serve_fail(s, "cannot create the stop event: %s",
					win_error(GetLastError(), why,
						  sizeof(why)));
	st->thread = CreateThread(NULL, 0, stop_thread, st, 0, NULL);
	if (st->thread == NULL)
		return lsink_serve_fail(s, "cannot start the stop thread: %s",
					win_error(GetLastError(), why,
						  sizeof(why)));
	return 0;
}

void lsink_serve_stoppers_end(struct lsink_server *srv)
{
	struct pipe_state *st = srv->platform;

	if (st == NULL || st->thread == NULL)
		return;
	(void)SetEvent(st->quit_event);
	(void)WaitForSingleObject(st->thread, INFINITE);
	(void)CloseHandle(st->thread);
	st->thread = NULL;
}

void lsink_serve_unlisten(struct lsink_serve *s)
{
	struct pipe_state *st = s->srv.platform;

	if (st == NULL)
		return;
	lsink_serve_stoppers_end(&s->srv);
	if (st->quit_event != NULL)
		(void)CloseHandle(st->quit_event);
	if (st->stop_event != NULL)
		(void)CloseHandle(st->stop_event);
	/* Last: the next daemon may start once this one is gone. */
	if (st->lock != NULL)
		(void)CloseHandle(st->lock);
	free(st->acl);
	free(st->sid);
	free(st);
	s->srv.platform = NULL;
}

int lsink_serve_stop_pid(const char *path, int64_t pid, int wait_ms,
			 char *err, size_t size)
{
	WCHAR name[MAX_PATH];
	char num[32], why[256];
	HANDLE process, ev;
	DWORD w;

	(void)path;
	process = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid);
	if (process == NULL) {
		(void)snprintf(err, size, "cannot stop the daemon (pid %lld): %s",
			       (long long)pid,
			       win_error(GetLastError(), why, sizeof(why)));
		return -1;
	}
	(void)snprintf(num, sizeof(num), "%lld", (long long)pid);
	(void)object_name("stop", num, name, MAX_PATH);
	ev = OpenEventW(EVENT_MODIFY_STATE, FALSE, name);
	if (ev == NULL || !SetEvent(ev)) {
		(void)snprintf(err, size,
			       "cannot stop the daemon (pid %lld): its stop "
			       "event: %s",
			       (long long)pid,
			       win_error(GetLastError(), why, sizeof(why)));
		if (ev != NULL)
			(void)CloseHandle(ev);
		(void)CloseHandle(process);
		return -1;
	}
	(void)CloseHandle(ev);
	/* A daemon draining a full queue takes a while. */
	w = WaitForSingleObject(process, (DWORD)wait_ms);
	(void)CloseHandle(process);
	if (w != WAIT_OBJECT_0) {
		(void)snprintf(err, size,
			       "the daemon (pid %lld) did not exit within %d s",
			       (long long)pid, wait_ms / 1000);
		return -1;
	}
	return 0;
}

int lsink_serve_detach(int argc, char **argv, const char *db)
{
	(void)argc;
	(void)argv;
	(void)db;
	lsink_msg("serve --detach: not available in the Windows build (run "
		  "it in the background: bgrun --no-log logsink serve)");
	return LSINK_EXIT_FAILURE;
}

bool lsink_serve_ready_fd_ok(int fd)
{
	intptr_t h = _get_osfhandle(fd);

	if (h == -1)
		return false;
	(void)SetHandleInformation((HANDLE)h, HANDLE_FLAG_INHERIT, 0);
	return true;
}

/* As the client's bgrun__file_identity (src/win/sinkconn.c): the volume and the file index. */
int lsink_serve_file_identity(const char *path, int64_t *ret_dev,
			      int64_t *ret_ino)
{
	BY_HANDLE_FILE_INFORMATION info;
	WCHAR w[MAX_PATH * 4];
	HANDLE h;
	BOOL ok;

	if (MultiByteToWideChar(CP_UTF8, 0, path, -1, w, MAX_PATH * 4) <= 0)
		return -EILSEQ;
	h = CreateFileW(w, 0,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return GetLastError() == ERROR_FILE_NOT_FOUND ? -ENOENT : -EIO;
	ok = GetFileInformationByHandle(h, &info);
	(void)CloseHandle(h);
	if (!ok)
		return -EIO;
	*ret_dev = (int64_t)info.dwVolumeSerialNumber;
	*ret_ino = (int64_t)(((uint64_t)info.nFileIndexHigh << 32) |
			     info.nFileIndexLow);
	return 0;
}

int lsink_conn_peer(struct lsink_server *srv, uv_pipe_t *pipe,
		    struct lsink_peer *ret)
{
	struct pipe_state *st = srv->platform;
	char sid[128], why[256];
	HANDLE process;
	ULONG pid = 0;
	uv_os_fd_t h;
	PSID theirs;

	if (uv_fileno((uv_handle_t *)pipe, &h) < 0 ||
	    !GetNamedPipeClientProcessId(h, &pid))
		return -EIO;
	ret->uid = BGRUN_NULL;
	ret->pid = pid;
	ret->allowed = false;
	/*
	 * The client holds its end open while we look: the process with
	 * that id now is the one connected (ids are reused only once a
	 * process and its handles are gone).
	 */
	process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
	if (process == NULL) {
		(void)snprintf(ret->who, sizeof(ret->who),
			       "pid %lu (its user cannot be read: %s)",
			       (unsigned long)pid,
			       win_error(GetLastError(), why, sizeof(why)));
		return 0;
	}
	theirs = process_sid(process);
	(void)CloseHandle(process);
	ret->allowed = theirs != NULL && EqualSid(theirs, st->sid);
	sid_text(theirs, sid, sizeof(sid));
	(void)snprintf(ret->who, sizeof(ret->who), "%s (pid %lu)", sid,
		       (unsigned long)pid);
	free(theirs);
	return 0;
}
