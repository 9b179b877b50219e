/* SPDX-License-Identifier: MIT */
/* spawn.c: the runbgcommand primitive on CreateProcessW; the only place that starts processes on Windows. */

#include "win.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * As on POSIX, everything that can fail in a way the caller wants to
 * hear about is done here before the process exists: the working
 * directory is checked, the program is found (the child's PATH and
 * PATHEXT), the standard handles are opened. CreateProcessW then gets
 * the program's full path (no search of its own), the exact command
 * line, a UTF-16 environment block and a handle list
 * (PROC_THREAD_ATTRIBUTE_HANDLE_LIST), so that the child inherits the
 * handles named and nothing else, whatever else is inheritable in the
 * caller. The process is created suspended, put in a job object of its
 * own (its tree, for bgrun_child_kill) and resumed.
 *
 * The handles made here are inheritable from their creation: another
 * thread of the caller that calls CreateProcess with bInheritHandles and
 * no handle list in the meantime would inherit them too (as with any
 * Windows library that spawns); the library's own launches never do.
 */

/* A growing UTF-8 buffer. */
struct buf {
	char *p;
	size_t len, size;
	int error;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->error != 0)
		return;
	if (b->len + n + 1 > b->size) {
		size_t size = b->size ? b->size : 256;
		char *p;

		while (b->len + n + 1 > size)
			size *= 2;
		p = realloc(b->p, size);
		if (p == NULL) {
			b->error = -ENOMEM;
			return;
		}
		b->p = p;
		b->size = size;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

static void buf_repeat(struct buf *b, char c, size_t n)
{
	while (n-- > 0)
		buf_addc(b, c);
}

/*
 * One argument (not the first) by the rules the C runtime (and
 * CommandLineToArgvW) parse it back with: as it is when it has no
 * space, tab, newline, vertical tab or quote and is not empty; else in
 * quotes, where a quote is \" and the backslashes before a quote or
 * before the closing quote are doubled (elsewhere backslashes are
 * literal).
 */
static void quote_arg(struct buf *b, const char *a)
{
	if (a[0] != '\0' && strpbrk(a, " \t\n\v\"") == NULL) {
		buf_add(b, a, strlen(a));
		return;
	}
	buf_addc(b, '"');
	for (const char *p = a;; p++) {
		size_t n = 0;

		while (*p == '\\') {
			p++;
			n++;
		}
		if (*p == '\0') {
			buf_repeat(b, '\\', 2 * n);
			break;
		}
		if (*p == '"') {
			buf_repeat(b, '\\', 2 * n + 1);
			buf_addc(b, '"');
		} else {
			buf_repeat(b, '\\', n);
			buf_addc(b, *p);
		}
	}
	buf_addc(b, '"');
}

/*
 * The program name is parsed differently: up to the next quote when it
 * starts with one, else up to white space, backslashes literal. So it
 * cannot hold a quote.
 */
static int quote_argv0(struct buf *b, const char *a)
{
	if (strchr(a, '"') != NULL)
		return -EINVAL;
	if (a[0] == '\0' || strpbrk(a, " \t\n\v") != NULL) {
		buf_addc(b, '"');
		buf_add(b, a, strlen(a));
		buf_addc(b, '"');
	} else {
		buf_add(b, a, strlen(a));
	}
	return 0;
}

/*
 * An argument that cmd.exe reads before the program does: quoted for the
 * program as above, then each character cmd.exe treats specially
 * (quotes included, so that cmd.exe never sees a quoted region) escaped
 * with a caret, which cmd.exe removes. A %NAME% then never expands:
 * cmd.exe sees the name "NAME^", which is not set, and keeps it as it is.
 * A line break cannot be passed through cmd.exe at all: -EINVAL.
 */
static void quote_arg_cmd(struct buf *b, const char *a)
{
	struct buf q = { 0 };

	/* cmd.exe ends its command line at a line break: no way to pass one. */
	if (strpbrk(a, "\r\n") != NULL) {
		b->error = -EINVAL;
		return;
	}
	quote_arg(&q, a);
	if (q.error != 0) {
		b->error = q.error;
		return;
	}
	for (size_t i = 0; i < q.len; i++) {
		if (strchr("()%!^\"<>&|", q.p[i]) != NULL)
			buf_addc(b, '^');
		buf_addc(b, q.p[i]);
	}
	free(q.p);
}

/* Whether path names a batch file, which CreateProcessW runs with cmd.exe. */
static bool is_batch(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && (_stricmp(path + n - 4, ".bat") == 0 ||
			  _stricmp(path + n - 4, ".cmd") == 0);
}

/* The number of the platform's shell words before the command (env.c). */
static size_t shell_words(void)
{
	return bgrun__vec_len(bgrun__os_shell_argv());
}

/*
 * The command line. Plain: each argv string quoted for the program.
 * Shell: `cmd.exe /d /s /c "COMMAND ARGS"`: with /s cmd.exe drops the
 * first and the last quote and runs what is between as it is, so the
 * command is passed verbatim; argv[1...], if given, follow it quoted
 * for the program and escaped for cmd.exe. A batch file: through
 * cmd.exe the same way, its path quoted and its arguments escaped,
 * rather than letting CreateProcessW start cmd.exe with arguments that
 * cmd.exe would interpret.
 */
static int command_line(const struct bgrun__req *req, const char *path,
			const char *comspec, WCHAR **ret)
{
	struct buf b = { 0 };
	size_t i = 1;
	int r = 0;

	if (req->shell) {
		size_t k = shell_words();

		for (size_t j = 0; j < k && r == 0; j++) {
			if (j > 0)
				buf_addc(&b, ' ');
			r = j == 0 ? quote_argv0(&b, req->argv[0])
				   : (quote_arg(&b, req->argv[j]), 0);
		}
		buf_add(&b, " \"", 2);
		buf_add(&b, req->argv[k], strlen(req->argv[k]));
		for (i = k + 2; req->argv[i - 1] != NULL && req->argv[i] != NULL; i++) {
			buf_addc(&b, ' ');
			quote_arg_cmd(&b, req->argv[i]);
		}
		buf_addc(&b, '"');
	} else if (is_batch(path)) {
		r = quote_argv0(&b, comspec);
		buf_add(&b, " /d /s /c \"\"", 12);
		buf_add(&b, path, strlen(path));
		buf_addc(&b, '"');
		for (; r == 0 && req->argv[i] != NULL; i++) {
			buf_addc(&b, ' ');
			quote_arg_cmd(&b, req->argv[i]);
		}
		buf_addc(&b, '"');
	} else {
		r = quote_argv0(&b, req->argv[0]);
		for (; r == 0 && req->argv[i] != NULL; i++) {
			buf_addc(&b, ' ');
			quote_arg(&b, req->argv[i]);
		}
	}
	if (r == 0)
		r = b.error;
	if (r == 0)
		r = bgrun__win_utf16(b.p != NULL ? b.p : "", ret);
	if (r == -EILSEQ)
		r = -EINVAL;
	/* CreateProcessW's limit, the terminating NUL included. */
	if (r == 0 && wcslen(*ret) >= 32767) {
		free(*ret);
		r = -E2BIG;
	}
	free(b.p);
	return r;
}

/* NAME=VALUE... as CREATE_UNICODE_ENVIRONMENT wants it: NUL-separated, NUL-ended. */
static int env_block(char **envp, WCHAR **ret)
{
	size_t total = 0, used = 0;
	WCHAR *block;

	for (size_t i = 0; envp[i] != NULL; i++) {
		int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS,
					    envp[i], -1, NULL, 0);

		if (n <= 0)
			return -EILSEQ;
		total += (size_t)n;
	}
	/* An empty block is two NULs. */
	block = malloc((total + 2) * sizeof(*block));
	if (block == NULL)
		return -ENOMEM;
	for (size_t i = 0; envp[i] != NULL; i++)
		used += (size_t)MultiByteToWideChar(CP_UTF8, 0, envp[i], -1,
						    block + used,
						    (int)(total - used));
	block[used++] = L'\0';
	if (used == 1)
		block[used++] = L'\0';
	*ret = block;
	return 0;
}

static const char *env_get(char **envp, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; envp[i] != NULL; i++)
		if (bgrun__os_env_name_eq(envp[i], name, len) &&
		    envp[i][len] == '=')
			return envp[i] + len + 1;
	return NULL;
}

static bool is_sep(char c)
{
	return c == '\\' || c == '/';
}

/* C:\..., \\server\..., \\?\..., or \... (the current drive's root). */
static bool is_absolute(const char *p)
{
	return is_sep(p[0]) ||
	       (((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z') && p[1] == ':' &&
		is_sep(p[2]));
}

/*
 * Does path (UTF-8) name a file we can try to execute? 0 if it is a
 * file; -EACCES if it is a directory; else why not (-ENOENT...).
 */
static int check_program(const char *path)
{
	WCHAR *w;
	DWORD attr;
	int r;

	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		return r;
	attr = GetFileAttributesW(w);
	r = attr == INVALID_FILE_ATTRIBUTES ? bgrun__win_errno(GetLastError())
	    : (attr & FILE_ATTRIBUTE_DIRECTORY) ? -EACCES
						  : 0;
	free(w);
	return r;
}

/* dir\name (dir may be NULL or empty: name alone), malloc'd. */
static char *join(const char *dir, size_t dlen, const char *name,
		  const char *ext)
{
	struct buf b = { 0 };

	if (dir != NULL && dlen > 0) {
		buf_add(&b, dir, dlen);
		if (!is_sep(dir[dlen - 1]))
			buf_addc(&b, '\\');
	}
	buf_add(&b, name, strlen(name));
	if (ext != NULL)
		buf_add(&b, ext, strlen(ext));
	if (b.error != 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/*
 * name tried in dir (relative to cwd unless absolute): as it is when it
 * has an extension, then with each extension of PATHEXT, then, without
 * an extension, as it is. 0 and *ret_path (malloc'd), or -ENOENT,
 * -EACCES (only directories by that name), or another error that stops
 * the search.
 */
static int try_dir(const char *cwd, const char *dir, size_t dlen,
		   const char *name, const char *pathext, char **ret_path)
{
	const char *base = name, *p;
	bool has_ext, eacces = false;
	char *full_dir = NULL;
	int r = -ENOENT;

	for (p = name; *p != '\0'; p++)
		if (is_sep(*p))
			base = p + 1;
	has_ext = strchr(base, '.') != NULL;
	/* A relative directory (or program path) is the child's cwd's. */
	if (cwd != NULL && (dir != NULL ? !is_absolute(dir) : !is_absolute(name))) {
		full_dir = dir != NULL ? join(cwd, strlen(cwd), dir, NULL)
				       : strdup(cwd);
		if (full_dir == NULL)
			return -ENOMEM;
		dir = full_dir;
		dlen = strlen(full_dir);
	}
	for (int pass = 0; pass < 3; pass++) {
		const char *e = pathext, *end;

		if ((pass == 0 && !has_ext) || (pass == 2 && has_ext))
			continue;
		do {
			char ext[32], *cand;

			end = strchr(e, ';');
			if (end == NULL)
				end = e + strlen(e);
			if (pass == 1) {
				size_t n = (size_t)(end - e);

				if (n == 0 || n >= sizeof(ext))
					goto next;
				memcpy(ext, e, n);
				ext[n] = '\0';
			}
			cand = join(dir, dlen, name, pass == 1 ? ext : NULL);
			if (cand == NULL) {
				r = -ENOMEM;
				goto out;
			}
			r = check_program(cand);
			if (r == 0) {
				*ret_path = cand;
				goto out;
			}
			free(cand);
			if (r == -EACCES)
				eacces = true;
			else if (r != -ENOENT && r != -ENOTDIR &&
				 r != -ENAMETOOLONG && r != -EINVAL)
				goto out;
next:
			e = *end == ';' ? end + 1 : end;
		} while (pass == 1 && *e != '\0');
	}
	r = eacces ? -EACCES : -ENOENT;
out:
	free(full_dir);
	return r;
}

/*
 * The program: a name with a separator or a drive is a path (relative
 * to cwd); any other is searched in the child's PATH (entries separated
 * by ';', quotes around an entry dropped; the system and Windows
 * directories when there is no PATH), never in the working directory
 * unless PATH says so, unlike CreateProcessW's own search.
 */
static int find_program(const char *file, char **envp, const char *cwd,
			char **ret_path)
{
	const char *path = env_get(envp, "PATH");
	const char *pathext = env_get(envp, "PATHEXT");
	char defpath[2 * MAX_PATH + 2];
	bool eacces = false;
	int r;

	if (pathext == NULL || pathext[0] == '\0')
		pathext = ".COM;.EXE;.BAT;.CMD";
	if (file[0] == '\0')
		return -ENOENT;
	if (strpbrk(file, "\\/") != NULL || file[1] == ':')
		return try_dir(cwd, NULL, 0, file, pathext, ret_path);
	if (path == NULL) {
		UINT n = GetSystemDirectoryA(defpath, MAX_PATH);

		if (n == 0 || n >= MAX_PATH)
			return -ENOENT;
		defpath[n++] = ';';
		if (GetWindowsDirectoryA(defpath + n, MAX_PATH) == 0)
			defpath[n - 1] = '\0';
		path = defpath;
	}
	for (const char *p = path; *p != '\0';) {
		const char *end = strchr(p, ';');
		size_t n;

		if (end == NULL)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
			p++;
			n -= 2;
		}
		if (n > 0) {
			char *dir = malloc(n + 1);

			if (dir == NULL)
				return -ENOMEM;
			memcpy(dir, p, n);
			dir[n] = '\0';
			r = try_dir(cwd, dir, n, file, pathext, ret_path);
			free(dir);
			if (r == 0)
				return 0;
			if (r == -EACCES)
				eacces = true;
			else if (r != -ENOENT)
				return r;
		}
		p = *end == ';' ? end + 1 : end;
	}
	return eacces ? -EACCES : -ENOENT;
}

static int fail(struct bgrun_failure *failure, enum bgrun_stage stage, int r)
{
	if (failure != NULL) {
		failure->stage = stage;
		failure->error = r;
	}
	return r;
}

/* The working directory (checked to be one) and the program. */
static int resolve(const struct bgrun__req *req, char **ret_path,
		   struct bgrun_failure *failure)
{
	int r;

	if (req->cwd != NULL) {
		WCHAR *w;
		DWORD attr;

		r = bgrun__win_utf16(req->cwd, &w);
		if (r < 0)
			return fail(failure, BGRUN_STAGE_CWD, r);
		attr = GetFileAttributesW(w);
		free(w);
		if (attr == INVALID_FILE_ATTRIBUTES)
			return fail(failure, BGRUN_STAGE_CWD,
				    bgrun__win_errno(GetLastError()));
		if (!(attr & FILE_ATTRIBUTE_DIRECTORY))
			return fail(failure, BGRUN_STAGE_CWD, -ENOTDIR);
	}
	r = find_program(req->file, req->envp, req->cwd, ret_path);
	return r < 0 ? fail(failure, BGRUN_STAGE_EXEC, r) : 0;
}

int bgrun__platform_resolve(const struct bgrun__req *req, char **ret_path,
			    struct bgrun_failure *failure)
{
	return resolve(req, ret_path, failure);
}

/* --- the standard handles --- */

static SECURITY_ATTRIBUTES inheritable = {
	.nLength = sizeof(SECURITY_ATTRIBUTES),
	.bInheritHandle = TRUE,
};

static int open_file(const char *path, DWORD access, DWORD disposition,
		     DWORD flags, HANDLE *ret)
{
	WCHAR *w;
	HANDLE h;
	int r;

	r = bgrun__win_utf16(path, &w);
	if (r < 0)
		return r;
	h = CreateFileW(w, access,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			&inheritable, disposition, flags, NULL);
	r = h == INVALID_HANDLE_VALUE ? bgrun__win_errno(GetLastError()) : 0;
	free(w);
	if (r == 0)
		*ret = h;
	return r;
}

static int dup_inheritable(HANDLE h, HANDLE *ret)
{
	if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), ret,
			     0, TRUE, DUPLICATE_SAME_ACCESS))
		return bgrun__win_errno(GetLastError());
	return 0;
}

/*
 * stdin bytes: a temporary file that disappears with its last handle
 * (FILE_FLAG_DELETE_ON_CLOSE), written whole and rewound: as on POSIX
 * the caller never blocks whatever the size, no thread feeds a pipe,
 * and the child may seek it.
 */
static int bytes_file(const void *bytes, size_t len, HANDLE *ret)
{
	WCHAR dir[MAX_PATH + 1], name[MAX_PATH + 16];
	const char *p = bytes;
	HANDLE h = INVALID_HANDLE_VALUE;
	DWORD n;

	n = GetTempPathW(MAX_PATH + 1, dir);
	if (n == 0 || n > MAX_PATH)
		return -ENOENT;
	for (int tries = 0; tries < 100 && h == INVALID_HANDLE_VALUE; tries++) {
		unsigned char rnd[8];

		bgrun__random_bytes(rnd, sizeof(rnd));
		(void)_snwprintf(name, sizeof(name) / sizeof(name[0]),
				 L"%lsbgrun-stdin-%02x%02x%02x%02x%02x%02x%02x%02x",
				 dir, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
				 rnd[5], rnd[6], rnd[7]);
		name[sizeof(name) / sizeof(name[0]) - 1] = L'\0';
		h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE,
				FILE_SHARE_READ | FILE_SHARE_WRITE |
					FILE_SHARE_DELETE,
				&inheritable, CREATE_NEW,
				FILE_ATTRIBUTE_TEMPORARY |
					FILE_FLAG_DELETE_ON_CLOSE,
				NULL);
		if (h == INVALID_HANDLE_VALUE &&
		    GetLastError() != ERROR_FILE_EXISTS)
			return bgrun__win_errno(GetLastError());
	}
	if (h == INVALID_HANDLE_VALUE)
		return -EEXIST;
	while (len > 0) {
		DWORD chunk = len > 0x40000000 ? 0x40000000 : (DWORD)len, done;

		if (!WriteFile(h, p, chunk, &done, NULL) || done == 0) {
			int r = bgrun__win_errno(GetLastError());

			(void)CloseHandle(h);
			return r < 0 ? r : -EIO;
		}
		p += done;
		len -= done;
	}
	if (SetFilePointer(h, 0, NULL, FILE_BEGIN) == INVALID_SET_FILE_POINTER) {
		int r = bgrun__win_errno(GetLastError());

		(void)CloseHandle(h);
		return r;
	}
	*ret = h;
	return 0;
}

/*
 * The handle the child gets as standard handle `target` (0, 1, 2), ours
 * (inheritable, closed after the launch); NULL for stderr joined to
 * stdout (the same handle is then given twice).
 */
static int connect_stdio(const struct bgrun_stdio *s, int target, HANDLE *ret)
{
	static const DWORD std[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
				      STD_ERROR_HANDLE };
	HANDLE h;

	*ret = NULL;
	switch (s->kind) {
	case BGRUN_STDIO_STDOUT:
		return 0;
	case BGRUN_STDIO_NULL:
		break;
	case BGRUN_STDIO_INHERIT:
		/* The caller without one: NUL, as a closed descriptor on POSIX. */
		h = GetStdHandle(std[target]);
		if (h == NULL || h == INVALID_HANDLE_VALUE)
			break;
		return dup_inheritable(h, ret);
	case BGRUN_STDIO_FD:
		return dup_inheritable(s->fd, ret);
	case BGRUN_STDIO_FILE:
		if (target == 0)
			return open_file(s->path, GENERIC_READ, OPEN_EXISTING,
					 FILE_ATTRIBUTE_NORMAL, ret);
		/*
		 * Append: FILE_APPEND_DATA without FILE_WRITE_DATA, so that
		 * every write goes to the end, as O_APPEND.
		 */
		if (s->append)
			return open_file(s->path,
					 FILE_APPEND_DATA | FILE_READ_ATTRIBUTES |
						 SYNCHRONIZE,
					 OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, ret);
		return open_file(s->path, GENERIC_WRITE, CREATE_ALWAYS,
				 FILE_ATTRIBUTE_NORMAL, ret);
	case BGRUN_STDIO_BYTES:
		if (s->len == 0)
			break;
		return bytes_file(s->bytes, s->len, ret);
	default:
		return -EINVAL;
	}
	return open_file("NUL", target == 0 ? GENERIC_READ : GENERIC_WRITE,
			 OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, ret);
}

/*
 * The C runtime's way to give a child descriptors beyond 0, 1, 2
 * (STARTUPINFO.lpReserved2, read by msvcrt and the UCRT at start-up): a
 * count, one flag byte per descriptor, then the handles, unaligned.
 */
#define CRT_FOPEN 0x01
#define CRT_FPIPE 0x08
#define CRT_FDEV 0x40

static int crt_block(const HANDLE *h, size_t n, BYTE **ret, WORD *ret_size)
{
	size_t size = sizeof(int) + n + n * sizeof(HANDLE);
	unsigned char *b;
	int count = (int)n;

	if (size > 0xffff)
		return -E2BIG;
	b = malloc(size);
	if (b == NULL)
		return -ENOMEM;
	memcpy(b, &count, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		DWORD type = GetFileType(h[i]);
		unsigned char f = CRT_FOPEN;

		if (type == FILE_TYPE_CHAR)
			f |= CRT_FDEV;
		else if (type == FILE_TYPE_PIPE)
			f |= CRT_FPIPE;
		b[sizeof(int) + i] = f;
		memcpy(b + sizeof(int) + n + i * sizeof(HANDLE), &h[i],
		       sizeof(HANDLE));
	}
	*ret = b;
	*ret_size = (WORD)size;
	return 0;
}

/*
 * Detached children should outlive the caller even when the caller runs
 * in a job that ends its processes with it (a CI runner, a service):
 * they break away from it when the job allows. The job's limits are not
 * read (QueryInformationJobObject on the caller's own job gives zeros
 * under wine): the first detached launch in a job tries, and a refusal
 * (ERROR_ACCESS_DENIED) is remembered, so later launches do not try.
 */
static volatile LONG breakaway; /* 0: not known yet, 1: no, 2: try */

static bool may_break_away(void)
{
	BOOL in_job = FALSE;
	LONG v = breakaway;

	if (v == 0) {
		v = IsProcessInJob(GetCurrentProcess(), NULL, &in_job) && in_job
			    ? 2 : 1;
		breakaway = v;
	}
	return v == 2;
}

static const char *comspec_path(void)
{
	const char *const *sh = bgrun__os_shell_argv();

	return sh[0];
}

struct launch {
	HANDLE std[3];
	HANDLE *pass;
	size_t n_pass;
	HANDLE list[64 + 3];
	size_t n_list;
};

static void launch_close(struct launch *l)
{
	for (int i = 0; i < 3; i++)
		if (l->std[i] != NULL)
			(void)CloseHandle(l->std[i]);
	for (size_t i = 0; i < l->n_pass; i++)
		(void)CloseHandle(l->pass[i]);
	free(l->pass);
}

static void list_add(struct launch *l, HANDLE h)
{
	for (size_t i = 0; i < l->n_list; i++)
		if (l->list[i] == h)
			return;
	l->list[l->n_list++] = h;
}

static int create(const struct bgrun__req *req, struct launch *l,
		  const WCHAR *app, WCHAR *cmdline, WCHAR *env,
		  const WCHAR *cwd, BYTE *crt, WORD crt_size,
		  PROCESS_INFORMATION *pi)
{
	STARTUPINFOEXW si;
	SIZE_T attr_size = 0;
	DWORD flags = CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT |
		      CREATE_SUSPENDED | CREATE_DEFAULT_ERROR_MODE;
	int r = 0;

	memset(&si, 0, sizeof(si));
	si.StartupInfo.cb = sizeof(si);
	si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
	si.StartupInfo.hStdInput = l->std[0];
	si.StartupInfo.hStdOutput = l->std[1];
	si.StartupInfo.hStdError = l->std[2] != NULL ? l->std[2] : l->std[1];
	si.StartupInfo.cbReserved2 = crt_size;
	si.StartupInfo.lpReserved2 = crt;
	if (req->detach)
		flags |= DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP;
	else if (req->new_pgroup)
		flags |= CREATE_NEW_PROCESS_GROUP;

	(void)InitializeProcThreadAttributeList(NULL, 1, 0, &attr_size);
	si.lpAttributeList = malloc(attr_size);
	if (si.lpAttributeList == NULL)
		return -ENOMEM;
	if (!InitializeProcThreadAttributeList(si.lpAttributeList, 1, 0,
					       &attr_size)) {
		free(si.lpAttributeList);
		return bgrun__win_errno(GetLastError());
	}
	if (!UpdateProcThreadAttribute(si.lpAttributeList, 0,
				       PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
				       l->list, l->n_list * sizeof(HANDLE),
				       NULL, NULL))
		r = bgrun__win_errno(GetLastError());
	if (r == 0 && req->detach && may_break_away()) {
		if (CreateProcessW(app, cmdline, NULL, NULL, TRUE,
				   flags | CREATE_BREAKAWAY_FROM_JOB, env, cwd,
				   &si.StartupInfo, pi))
			goto out;
		if (GetLastError() == ERROR_ACCESS_DENIED)
			breakaway = 1; /* the job does not allow it */
	}
	if (r == 0 && !CreateProcessW(app, cmdline, NULL, NULL, TRUE, flags,
				      env, cwd, &si.StartupInfo, pi))
		r = bgrun__win_errno(GetLastError());
out:
	DeleteProcThreadAttributeList(si.lpAttributeList);
	free(si.lpAttributeList);
	return r;
}

/*
 * The child's own job: bgrun_child_kill ends its whole tree with it.
 * No limit, no KILL_ON_JOB_CLOSE: a detached child outlives our handle.
 * A job that cannot be had (an old Windows without nested jobs, in a job
 * that forbids breakaway) is no error: kill then ends the process alone.
 */
static HANDLE own_job(HANDLE process)
{
	HANDLE job = CreateJobObjectW(NULL, NULL);

	if (job != NULL && !AssignProcessToJobObject(job, process)) {
		(void)CloseHandle(job);
		job = NULL;
	}
	return job;
}

int bgrun__platform_spawn(const struct bgrun__req *req,
			  struct bgrun__proc *ret_proc,
			  struct bgrun_failure *failure)
{
	const struct bgrun_stdio *s[3] = { &req->in, &req->out, &req->err };
	static const enum bgrun_stage stages[3] = {
		BGRUN_STAGE_STDIN, BGRUN_STAGE_STDOUT, BGRUN_STAGE_STDERR
	};
	struct launch l = { .std = { NULL, NULL, NULL } };
	struct bgrun__proc proc = BGRUN__PROC_INIT;
	struct bgrun__win_proc *wp = NULL;
	PROCESS_INFORMATION pi;
	WCHAR *app = NULL, *cmdline = NULL, *env = NULL, *cwd = NULL;
	BYTE *crt = NULL;
	WORD crt_size = 0;
	char *path = NULL;
	int r;

	if (req->n_pass_fds > 64)
		return fail(failure, BGRUN_STAGE_ARGS, -E2BIG);
	r = resolve(req, &path, failure);
	if (r < 0)
		return r;
	r = command_line(req, path, comspec_path(), &cmdline);
	if (r == 0)
		r = env_block(req->envp, &env);
	if (r == 0)
		r = bgrun__win_utf16(is_batch(path) && !req->shell
				     ? comspec_path() : path, &app);
	if (r == 0 && req->cwd != NULL)
		r = bgrun__win_utf16(req->cwd, &cwd);
	wp = calloc(1, sizeof(*wp));
	if (r == 0 && wp == NULL)
		r = -ENOMEM;
	if (r == -EILSEQ) /* not UTF-8 */
		r = -EINVAL;
	if (r < 0) {
		r = fail(failure, r == -ENOMEM ? BGRUN_STAGE_SETUP
			 : r == -E2BIG ? BGRUN_STAGE_EXEC : BGRUN_STAGE_ARGS, r);
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		r = connect_stdio(s[i], i, &l.std[i]);
		if (r < 0) {
			r = fail(failure, stages[i], r);
			goto out;
		}
		if (l.std[i] != NULL)
			list_add(&l, l.std[i]);
	}
	if (req->n_pass_fds > 0) {
		HANDLE all[64 + 3];

		l.pass = calloc(req->n_pass_fds, sizeof(*l.pass));
		if (l.pass == NULL) {
			r = fail(failure, BGRUN_STAGE_SETUP, -ENOMEM);
			goto out;
		}
		for (; l.n_pass < req->n_pass_fds; l.n_pass++) {
			r = dup_inheritable(req->pass_fds[l.n_pass],
					    &l.pass[l.n_pass]);
			if (r < 0) {
				r = fail(failure, BGRUN_STAGE_SETUP, r);
				goto out;
			}
			list_add(&l, l.pass[l.n_pass]);
		}
		all[0] = l.std[0];
		all[1] = l.std[1];
		all[2] = l.std[2] != NULL ? l.std[2] : l.std[1];
		memcpy(all + 3, l.pass, l.n_pass * sizeof(HANDLE));
		r = crt_block(all, 3 + l.n_pass, &crt, &crt_size);
		if (r < 0) {
			r = fail(failure, BGRUN_STAGE_SETUP, r);
			goto out;
		}
	}
	proc.start_realtime_ns = bgrun__now_ns(CLOCK_REALTIME);
	proc.start_mono_ns = bgrun__now_ns(CLOCK_MONOTONIC);
	r = create(req, &l, app, cmdline, env, cwd, crt, crt_size, &pi);
	if (r < 0) {
		r = fail(failure, BGRUN_STAGE_EXEC, r);
		goto out;
	}
	wp->process = pi.hProcess;
	wp->job = own_job(pi.hProcess);
	if (ResumeThread(pi.hThread) == (DWORD)-1) {
		r = fail(failure, BGRUN_STAGE_SETUP,
			 bgrun__win_errno(GetLastError()));
		(void)TerminateProcess(pi.hProcess, BGRUN__WIN_KILL_CODE);
		(void)WaitForSingleObject(pi.hProcess, INFINITE);
		(void)CloseHandle(pi.hThread);
		(void)CloseHandle(pi.hProcess);
		if (wp->job != NULL)
			(void)CloseHandle(wp->job);
		goto out;
	}
	(void)CloseHandle(pi.hThread);
	proc.pid = (bgrun_pid_t)pi.dwProcessId;
	proc.os.p = wp;
	wp = NULL;
	*ret_proc = proc;
	r = 0;
out:
	launch_close(&l);
	free(wp);
	free(crt);
	free(cwd);
	free(app);
	free(env);
	free(cmdline);
	free(path);
	return r;
}
