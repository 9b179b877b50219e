/* SPDX-License-Identifier: MIT */
/* win-tests.c: the primitive's behavioural cases on Windows (run under wine in CI), one meson test per case of tests/win/cases.def. */

/*
 * win-tests CASE runs one case: exit 0 (passed), 1 (failed, one line on
 * stderr) or 77 (skipped, with the reason; under wine only where wine
 * does not emulate what the case checks). win-tests --list lists them.
 * The child is win-helper.exe beside this program.
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "bgrun.h"
#include "bgrun/test-control.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGKILL_ 9
#define DEADLINE_MS 60000

#include "win-tests.h"

const char *case_name;

void t_exit(int code, const char *file, int line, const char *fmt, ...)
{
	const char *base = strrchr(file, '/');
	va_list ap;

	base = base != NULL ? base + 1 : file;
	if (strrchr(base, '\\') != NULL)
		base = strrchr(base, '\\') + 1;
	fprintf(stderr, "%s:%d: %s: %s", base, line, case_name,
		code == 77 ? "skipped: " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	ExitProcess((UINT)code);
}

/* Whether we run under wine (it exports wine_get_version from ntdll). */
const char *wine_version(void)
{
	HMODULE nt = GetModuleHandleW(L"ntdll.dll");
	const char *(*get)(void) = NULL;
	FARPROC f = nt != NULL ? GetProcAddress(nt, "wine_get_version") : NULL;

	if (f == NULL)
		return NULL;
	memcpy(&get, &f, sizeof(get));
	return get();
}

char *dup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		FAIL("out of memory");
	va_end(ap);
	return s;
}

char helper[MAX_PATH * 3];
char tmpdir[MAX_PATH * 3];

static void utf8_of(const WCHAR *w, char *out, size_t size)
{
	if (WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)size, NULL, NULL) <= 0)
		FAIL("path not convertible");
}

WCHAR *wide(const char *s)
{
	int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
	WCHAR *w = malloc((size_t)n * sizeof(WCHAR));

	MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
	return w;
}

/* The helper's path and a fresh directory of this case's. */
static void setup(void)
{
	WCHAR w[MAX_PATH], t[MAX_PATH];
	DWORD n = GetModuleFileNameW(NULL, w, MAX_PATH);
	WCHAR *slash = wcsrchr(w, L'\\');

	if (n == 0 || slash == NULL)
		FAIL("GetModuleFileNameW");
	wcscpy(slash + 1, L"win-helper.exe");
	utf8_of(w, helper, sizeof(helper));
	GetTempPathW(MAX_PATH, t);
	/* Wine reuses pids soon: a name taken is tried again with another. */
	for (unsigned i = 0;; i++) {
		_snwprintf(w, MAX_PATH, L"%lsbgrun-win-tests-%hs-%lu-%llu-%u", t,
			   case_name, (unsigned long)GetCurrentProcessId(),
			   (unsigned long long)GetTickCount64(), i);
		w[MAX_PATH - 1] = 0;
		if (CreateDirectoryW(w, NULL))
			break;
		if (GetLastError() != ERROR_ALREADY_EXISTS || i > 1000)
			FAIL("CreateDirectoryW: %lu", (unsigned long)GetLastError());
	}
	utf8_of(w, tmpdir, sizeof(tmpdir));
}

/* Removes a directory tree (best effort: after a case passed). */
static void rmtree(const WCHAR *dir)
{
	WCHAR pat[MAX_PATH * 2], sub[MAX_PATH * 2];
	WIN32_FIND_DATAW fd;
	HANDLE h;

	_snwprintf(pat, MAX_PATH * 2, L"%ls\\*", dir);
	h = FindFirstFileW(pat, &fd);
	if (h != INVALID_HANDLE_VALUE) {
		do {
			if (wcscmp(fd.cFileName, L".") == 0 ||
			    wcscmp(fd.cFileName, L"..") == 0)
				continue;
			_snwprintf(sub, MAX_PATH * 2, L"%ls\\%ls", dir, fd.cFileName);
			if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
				rmtree(sub);
			else
				(void)DeleteFileW(sub);
		} while (FindNextFileW(h, &fd));
		FindClose(h);
	}
	(void)RemoveDirectoryW(dir);
}

char *tmp_path(const char *name)
{
	return dup_printf("%s\\%s", tmpdir, name);
}

/* A whole file, NUL-terminated; *ret_len its length. NULL if absent. */
char *slurp(const char *path, size_t *ret_len)
{
	WCHAR *w = wide(path);
	HANDLE h = CreateFileW(w, GENERIC_READ,
			       FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, 0, NULL);
	size_t len = 0, size = 4096;
	char *buf = malloc(size);
	DWORD n;

	free(w);
	if (h == INVALID_HANDLE_VALUE) {
		free(buf);
		return NULL;
	}
	while (ReadFile(h, buf + len, (DWORD)(size - len - 1), &n, NULL) && n > 0) {
		len += n;
		if (size - len < 2)
			buf = realloc(buf, size *= 2);
	}
	CloseHandle(h);
	buf[len] = '\0';
	if (ret_len != NULL)
		*ret_len = len;
	return buf;
}

void spit(const char *path, const char *text)
{
	WCHAR *w = wide(path);
	HANDLE h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
	DWORD n;

	free(w);
	if (h == INVALID_HANDLE_VALUE ||
	    !WriteFile(h, text, (DWORD)strlen(text), &n, NULL))
		FAIL("cannot write %s", path);
	CloseHandle(h);
}

/*
 * The handles this process has open, counted by asking about each
 * possible value below 0x4000 (handle values are multiples of 4): wine's
 * GetProcessHandleCount always says 0, and this small a program's handles
 * stay well below that.
 */
static int count_handles(void)
{
	DWORD flags;
	int n = 0;

	for (uintptr_t v = 4; v < 0x4000; v += 4)
		n += GetHandleInformation((HANDLE)v, &flags) != 0;
	return n;
}

/*
 * What an EIO stands for: the Windows error the library had no errno
 * for, so that a failure under wine says what wine said.
 */
const char *win_detail(int r)
{
	static char buf[64];
	int e = bgrun__test_control(BGRUN__TEST_WIN_LAST_UNMAPPED);

	if (r != -EIO || e <= 0)
		return "";
	snprintf(buf, sizeof(buf), " (Windows error %d)", e);
	return buf;
}

/*
 * Under wine, on a loaded machine, a new process now and then dies
 * inside wine's own start-up, before any of its code runs: CreateProcessW
 * then fails with ERROR_INTERNAL_ERROR (wine's NtCreateUserProcess when
 * the child never reported its start). That is wine's, not the launch's:
 * such a launch is tried again, at most WINE_RETRIES times, and said on
 * stderr. On Windows, and for any other error, a failure is a failure.
 */
#define WINE_RETRIES 3

static bool wine_start_flake(int r, int *tries)
{
	if (r != -EIO || wine_version() == NULL || *tries >= WINE_RETRIES ||
	    bgrun__test_control(BGRUN__TEST_WIN_LAST_UNMAPPED) !=
		    ERROR_INTERNAL_ERROR)
		return false;
	++*tries;
	fprintf(stderr, "note: wine failed to start a child "
		"(ERROR_INTERNAL_ERROR); launching it again (%d of %d)\n",
		*tries, WINE_RETRIES);
	return true;
}

/* bgrun_spawn, failing the case with the stage and the error. */
int spawn_or_fail(struct bgrun_spawn_opts *o, struct bgrun_child **ret)
{
	struct bgrun_failure f = { BGRUN_STAGE_NONE, 0 };
	int r, tries = 0;

	o->failure = &f;
	do
		r = bgrun_spawn(o, ret);
	while (r < 0 && wine_start_flake(r, &tries));
	o->failure = NULL;
	if (r < 0)
		FAIL("bgrun_spawn: %s%s (stage %d)", bgrun_strerror(r),
		     win_detail(r), (int)f.stage);
	return r;
}

/* Launches opts with a handle, waits for it; returns its exit code. */
int run(struct bgrun_spawn_opts *o, struct bgrun_status *ret)
{
	struct bgrun_child *c = NULL;
	struct bgrun_status st;
	int r, tries = 0;

	for (;;) {
		(void)spawn_or_fail(o, &c);
		r = bgrun_child_wait(c, DEADLINE_MS, &st);
		/* Without ensurestart, a failed start is the wait's. */
		if (r >= 0 || !wine_start_flake(r, &tries))
			break;
		bgrun_child_free(c);
		c = NULL;
	}
	if (r < 0)
		FAIL("bgrun_child_wait: %s%s", bgrun_strerror(r),
		     win_detail(r));
	bgrun_child_free(c);
	if (ret != NULL)
		*ret = st;
	if (!st.exited)
		FAIL("the child did not exit (signal %d)", st.signal);
	return st.exit_code;
}

/* Splits a NUL-separated file into a vector. */
static char **split0(char *buf, size_t len, size_t *ret_n)
{
	size_t n = 0;
	char **v;

	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	v = calloc(n + 1, sizeof(*v));
	n = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		v[n++] = buf + i;
	*ret_n = n;
	return v;
}

/* The arguments no quoting may lose. */
const char *const awkward[] = {
	"",
	" ",
	"two words",
	"\"",
	"\"\"",
	"a\"b",
	"\\",
	"\\\\",
	"trailing\\",
	"trailing space\\",
	"\\\"",
	"a\\\\\"b c",
	"\\\\server\\share\\dir\\file.txt",
	"\\\\?\\C:\\very\\long",
	"C:\\Program Files\\x\\",
	"tab\there",
	"new\nline",
	"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	"%PATH%",
	"%NOPE%x",
	"&|<>^",
	"a&b|c<d>e^f",
	"(paren) !bang!",
	"*?",
	"-",
	"/c",
	"'single'",
	NULL
};

/* Checks the helper's args file against exp (after helper args OUT). */
void check_args(const char *out, const char *const *exp, size_t first)
{
	size_t len, n, nexp = 0;
	char *buf = slurp(out, &len), **v;

	if (buf == NULL)
		FAIL("the helper wrote no %s", out);
	v = split0(buf, len, &n);
	while (exp[nexp] != NULL)
		nexp++;
	ASSERT_INT(n, ==, first + nexp);
	for (size_t i = 0; i < nexp; i++)
		if (strcmp(v[first + i], exp[i]) != 0)
			FAIL("argument %d: got \"%s\", want \"%s\"", (int)i,
			     v[first + i], exp[i]);
}

static void case_argv_awkward(void)
{
	char *out = tmp_path("args");
	const char *argv[64] = { helper, "args", out };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	size_t k = 3;

	for (size_t i = 0; awkward[i] != NULL; i++)
		argv[k++] = awkward[i];
	argv[k] = NULL;
	o.argv = argv;
	/* 3: the C runtime and CommandLineToArgvW disagreed. */
	ASSERT_INT(run(&o, NULL), ==, 0);
	check_args(out, awkward, 3);
}

/* argv[0] is the name given, the program is what PATH gives. */
static void case_argv0(void)
{
	char *out = tmp_path("args");
	const char *bad[] = { "a\"b", "args", out, NULL };
	struct bgrun_failure f = { 0 };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	size_t len, n;
	char *buf, **v;

	/* The program is found through PATH, argv[0] is only a name. */
	o.argv = bad;
	o.failure = &f;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOENT);
	{
		char *copy = strdup(helper), *slash = strrchr(copy, '\\');
		const char *set[2];

		*slash = '\0';
		set[0] = dup_printf("PATH=%s", copy);
		set[1] = NULL;
		o.env_set = set;
		o.argv = (const char *[]){ "win-helper", "args", out, NULL };
		ASSERT_INT(run(&o, NULL), ==, 0);
		buf = slurp(out, &len);
		v = split0(buf, len, &n);
		ASSERT_STR(v[0], "win-helper");
	}
}

static void case_shell_plain(void)
{
	char *out = tmp_path("out.txt");
	char *cmd = dup_printf("echo hello& echo %%BGRUN_T%%>\"%s\"", out);
	const char *set[] = { "BGRUN_T=from env", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *got;

	o.shell = cmd;
	o.env_set = set;
	ASSERT_INT(run(&o, NULL), ==, 0);
	got = slurp(out, NULL);
	ASSERT(got != NULL);
	ASSERT_STR(got, "from env\r\n");
}

/* argv after a shell command: escaped for cmd.exe, received exactly. */
static void case_shell_args(void)
{
	char *out = tmp_path("args");
	char *cmd = dup_printf("\"%s\" args \"%s\"", helper, out);
	const char *argv[64] = { "$0" };
	const char *exp[64];
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure f = { 0 };
	size_t k = 1, e = 0;

	for (size_t i = 0; awkward[i] != NULL; i++) {
		/* A line break: below; %NAME%: shell_percent. */
		if (strpbrk(awkward[i], "\n%") != NULL)
			continue;
		argv[k++] = awkward[i];
		exp[e++] = awkward[i];
	}
	argv[k] = NULL;
	exp[e] = NULL;
	o.shell = cmd;
	o.argv = argv;
	ASSERT_INT(run(&o, NULL), ==, 0);
	check_args(out, exp, 3);
	/* A line break cannot go through cmd.exe: refused, not mangled. */
	o.argv = (const char *[]){ "$0", "new\nline", NULL };
	o.failure = &f;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -EINVAL);
}

/*
 * %NAME% in an argument after a shell command stays as it is: the
 * caret before each % makes cmd.exe look up a name that ends in a
 * caret, which is not set, and then drop the carets.
 */
static void case_shell_percent(void)
{
	char *out = tmp_path("args");
	char *cmd = dup_printf("\"%s\" args \"%s\"", helper, out);
	const char *argv[] = { "$0", "%PATH%", "%NOPE%x", "100%", "%%", NULL };
	const char *wine = wine_version();
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;

	if (wine != NULL)
		SKIP("wine %s's cmd.exe removes carets before it expands "
		     "%%NAME%% (Windows' cmd.exe expands first)", wine);
	o.shell = cmd;
	o.argv = argv;
	ASSERT_INT(run(&o, NULL), ==, 0);
	check_args(out, argv + 1, 3);
}

static void case_path_pathext(void)
{
	char *dir = strdup(helper), *out = tmp_path("args");
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *path;
	const char *set[3];

	*strrchr(dir, '\\') = '\0';
	/* "Path", not "PATH": the names are one on Windows. */
	set[0] = dup_printf("Path=C:\\nowhere;\"%s\"", dir);
	set[1] = "PATHEXT=.COM;.EXE";
	set[2] = NULL;
	o.env_set = set;
	o.argv = (const char *[]){ "WIN-HELPER", "args", out, NULL };
	ASSERT_INT(bgrun_spawn_resolve(&o, &path), ==, 0);
	ASSERT(_stricmp(path, helper) == 0);
	ASSERT_INT(run(&o, NULL), ==, 0);
	/* Without .EXE in PATHEXT there is no such program. */
	set[1] = "PATHEXT=.COM";
	ASSERT_INT(bgrun_spawn_resolve(&o, &path), ==, -ENOENT);
	/* Nor in the working directory, which PATH does not name. */
	set[0] = "PATH=C:\\nowhere";
	set[1] = NULL;
	o.cwd = dir;
	ASSERT_INT(bgrun_spawn_resolve(&o, &path), ==, -ENOENT);
	/* A relative path is the child's cwd's. */
	o.argv = (const char *[]){ ".\\win-helper.exe", "args", out, NULL };
	ASSERT_INT(run(&o, NULL), ==, 0);
}

static char **read_env(const char *out, size_t *n)
{
	size_t len;
	char *buf = slurp(out, &len);

	if (buf == NULL)
		FAIL("no environment written");
	return split0(buf, len, n);
}

static int env_count(char **v, size_t n, const char *name)
{
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(name);

		if (_strnicmp(v[i], name, len) == 0 && v[i][len] == '=')
			k++;
	}
	return k;
}

static const char *env_val(char **v, size_t n, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (_strnicmp(v[i], name, len) == 0 && v[i][len] == '=')
			return v[i] + len + 1;
	return NULL;
}

static void case_env_exact(void)
{
	char *out = tmp_path("env");
	const char *env[] = { "A=1", "Path=C:\\x", "UNI\xc3\xa9=\xe2\x82\xac", "B=", NULL };
	const char *set[] = { "a=2", "NEW=v=w", NULL };
	const char *unset[] = { "PATH", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	size_t n;
	char **v;

	o.argv = (const char *[]){ helper, "env", out, NULL };
	o.env = env;
	o.env_set = set;
	o.env_unset = unset;
	ASSERT_INT(run(&o, NULL), ==, 0);
	v = read_env(out, &n);
	/* Wine may add variables of its own; ours are exactly these. */
	ASSERT_INT(env_count(v, n, "A"), ==, 1);
	ASSERT_STR(env_val(v, n, "A"), "2");
	ASSERT_INT(env_count(v, n, "PATH"), ==, 0);
	ASSERT_STR(env_val(v, n, "NEW"), "v=w");
	ASSERT_STR(env_val(v, n, "B"), "");
	ASSERT_STR(env_val(v, n, "UNI\xc3\xa9"), "\xe2\x82\xac");
}

static void case_env_inherit(void)
{
	char *out = tmp_path("env");
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	const char *set[] = { "bgrun_t2=set", NULL };
	size_t n;
	char **v;

	SetEnvironmentVariableW(L"BGRUN_T1", L"caf\u00e9");
	SetEnvironmentVariableW(L"BGRUN_T2", L"old");
	o.argv = (const char *[]){ helper, "env", out, NULL };
	o.env_set = set;
	ASSERT_INT(run(&o, NULL), ==, 0);
	v = read_env(out, &n);
	ASSERT_STR(env_val(v, n, "BGRUN_T1"), "caf\xc3\xa9");
	ASSERT_INT(env_count(v, n, "BGRUN_T2"), ==, 1);
	ASSERT_STR(env_val(v, n, "BGRUN_T2"), "set");
}

static void case_cwd_set(void)
{
	char *out = tmp_path("cwd");
	char *dir = tmp_path("sub dir \xc3\xa9");
	WCHAR *w = wide(dir);
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure f = { 0 };
	char *got;

	ASSERT(CreateDirectoryW(w, NULL));
	o.argv = (const char *[]){ helper, "cwd", out, NULL };
	o.cwd = dir;
	ASSERT_INT(run(&o, NULL), ==, 0);
	got = slurp(out, NULL);
	ASSERT(got != NULL);
	ASSERT(_stricmp(got, dir) == 0);
	o.cwd = tmp_path("missing");
	o.failure = &f;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOENT);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_CWD);
	o.cwd = out;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOTDIR);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_CWD);
}

static void case_exec_failures(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure f = { 0 };
	char *bad = tmp_path("bad.exe"), *big, *out = tmp_path("out");
	const char *none[] = { "bgrun-no-such-program", NULL };

	o.failure = &f;
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	o.argv = none;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOENT);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_EXEC);
	/* Found nothing: the output file was never opened. */
	ASSERT(slurp(out, NULL) == NULL);
	o.argv = (const char *[]){ tmpdir, NULL };
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -EACCES);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_EXEC);
	spit(bad, "this is not a program\n");
	o.argv = (const char *[]){ bad, NULL };
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOEXEC);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_EXEC);
	big = malloc(40000);
	memset(big, 'x', 39999);
	big[39999] = '\0';
	o.argv = (const char *[]){ helper, big, NULL };
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -E2BIG);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_EXEC);
	o.argv = NULL;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -EINVAL);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_ARGS);
}

static void case_stdin_kinds(void)
{
	char *out = tmp_path("out"), *in = tmp_path("in"), *got, *big;
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	size_t len, n = 3 << 20;

	/* A temporary directory of this case's own (GetTempPathW reads TMP). */
	{
		WCHAR *t = wide(dup_printf("%s\\", tmpdir));

		WCHAR tp[MAX_PATH];

		ASSERT(SetEnvironmentVariableW(L"TMP", t));
		/* Else the check below would look in the wrong place. */
		ASSERT(GetTempPathW(MAX_PATH, tp) > 0 && _wcsicmp(tp, t) == 0);
	}
	o.argv = (const char *[]){ helper, "cat", NULL };
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	/* NUL: an empty stdin. */
	ASSERT_INT(run(&o, NULL), ==, 0);
	got = slurp(out, &len);
	ASSERT(got != NULL && len == 0);
	/* Bytes, more than any pipe holds: the caller never blocks. */
	big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7 + i / 251);
	o.in.kind = BGRUN_STDIO_BYTES;
	o.in.bytes = big;
	o.in.len = n;
	ASSERT_INT(run(&o, NULL), ==, 0);
	got = slurp(out, &len);
	ASSERT_INT(len, ==, n);
	ASSERT(memcmp(got, big, n) == 0);
	/* A file. */
	spit(in, "from a file\n");
	o.in.kind = BGRUN_STDIO_FILE;
	o.in.path = in;
	ASSERT_INT(run(&o, NULL), ==, 0);
	ASSERT_STR(slurp(out, NULL), "from a file\n");
	/* A pipe of ours (the read end), written and closed here. */
	{
		HANDLE r, w;
		DWORD done;

		ASSERT(CreatePipe(&r, &w, NULL, 0));
		ASSERT(WriteFile(w, "piped", 5, &done, NULL));
		CloseHandle(w);
		o.in.kind = BGRUN_STDIO_FD;
		o.in.fd = r;
		ASSERT_INT(run(&o, NULL), ==, 0);
		CloseHandle(r);
		ASSERT_STR(slurp(out, NULL), "piped");
	}
	/* The temporary file behind the bytes is gone. */
	{
		WIN32_FIND_DATAW fd;
		WCHAR t[MAX_PATH], pat[MAX_PATH + 32];
		HANDLE h;

		GetTempPathW(MAX_PATH, t);
		_snwprintf(pat, MAX_PATH + 32, L"%lsbgrun-stdin-*", t);
		h = FindFirstFileW(pat, &fd);
		if (h != INVALID_HANDLE_VALUE)
			FAIL("a bgrun-stdin temporary file is left behind");
	}
}

static void case_stdout_kinds(void)
{
	char *out = tmp_path("out"), *err = tmp_path("err");
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure f = { 0 };

	o.argv = (const char *[]){ helper, "echo", "one", NULL };
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	o.err.kind = BGRUN_STDIO_FILE;
	o.err.path = err;
	spit(out, "previous contents, longer than one");
	ASSERT_INT(run(&o, NULL), ==, 0);
	ASSERT_STR(slurp(out, NULL), "one");
	ASSERT_STR(slurp(err, NULL), "err:one");
	o.out.append = true;
	o.argv = (const char *[]){ helper, "echo", "two", NULL };
	ASSERT_INT(run(&o, NULL), ==, 0);
	ASSERT_STR(slurp(out, NULL), "onetwo");
	/* stderr joined to stdout, appending. */
	o.err.kind = BGRUN_STDIO_STDOUT;
	ASSERT_INT(run(&o, NULL), ==, 0);
	ASSERT_STR(slurp(out, NULL), "onetwotwoerr:two");
	/* A pipe of ours. */
	{
		HANDLE r, w;
		char buf[64];
		DWORD n, total = 0;

		ASSERT(CreatePipe(&r, &w, NULL, 0));
		o.out.kind = BGRUN_STDIO_FD;
		o.out.fd = w;
		o.err.kind = BGRUN_STDIO_NULL;
		ASSERT_INT(run(&o, NULL), ==, 0);
		CloseHandle(w);
		while (ReadFile(r, buf + total, sizeof(buf) - 1 - total, &n, NULL) && n > 0)
			total += n;
		buf[total] = '\0';
		CloseHandle(r);
		ASSERT_STR(buf, "two");
	}
	/* Cannot open stdout: that stage, nothing started. */
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = tmp_path("missing\\out");
	o.failure = &f;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOENT);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_STDOUT);
	o.out.kind = BGRUN_STDIO_NULL;
	o.err.kind = BGRUN_STDIO_FILE;
	o.err.path = tmp_path("missing\\err");
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -ENOENT);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_STDERR);
}

/* An inheritable handle of the caller's that the child must not get. */
static void case_no_handle_leak(void)
{
	SECURITY_ATTRIBUTES sa = { sizeof(sa), NULL, TRUE };
	char *path = tmp_path("leak"), *val;
	WCHAR *w = wide(path);
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
			       &sa, CREATE_ALWAYS, 0, NULL);
	int before, after;

	ASSERT(h != INVALID_HANDLE_VALUE);
	val = dup_printf("%llx", (unsigned long long)(uintptr_t)h);
	o.argv = (const char *[]){ helper, "handle", val, path, NULL };
	/* The check can fail: a plain inheriting CreateProcess gives it. */
	{
		STARTUPINFOW si = { .cb = sizeof(si) };
		PROCESS_INFORMATION pi;
		WCHAR *hw = wide(helper);
		WCHAR cmd[2048];
		DWORD code;

		_snwprintf(cmd, 2048, L"\"%ls\" handle %hs \"%ls\"", hw, val, w);
		ASSERT(CreateProcessW(hw, cmd, NULL, NULL, TRUE, 0, NULL, NULL,
				      &si, &pi));
		WaitForSingleObject(pi.hProcess, INFINITE);
		GetExitCodeProcess(pi.hProcess, &code);
		CloseHandle(pi.hProcess);
		CloseHandle(pi.hThread);
		ASSERT_INT(code, ==, 1);
	}
	ASSERT_INT(run(&o, NULL), ==, 0);
	/* And the library keeps no handle of its own per launch. */
	/*
	 * Each kind of stdin, queued launches (which hold duplicates of the
	 * caller's handles until they ran) and not; counted after a first
	 * round, which starts the spawner thread and the thread pool (their
	 * handles stay).
	 */
	before = 0;
	for (int i = 0; i < 48; i++) {
		if (i == 24) {
			before = count_handles();
			ASSERT_INT(before, >, 0);
		}
		HANDLE rd = NULL, wr = NULL;

		o.argv = (const char *[]){ helper, "exit", "0", NULL };
		o.in.kind = i % 3 == 0 ? BGRUN_STDIO_BYTES
			    : i % 3 == 1 ? BGRUN_STDIO_NULL : BGRUN_STDIO_FD;
		o.in.bytes = "x";
		o.in.len = 1;
		if (o.in.kind == BGRUN_STDIO_FD) {
			ASSERT(CreatePipe(&rd, &wr, NULL, 0));
			o.in.fd = rd;
		}
		o.ensurestart = i % 2 == 0;
		ASSERT_INT(run(&o, NULL), ==, 0);
		if (rd != NULL) {
			CloseHandle(rd);
			CloseHandle(wr);
		}
	}
	after = count_handles();
	/*
	 * Wine's thread pool may add a wait thread (and its handles) under
	 * load; a handle kept per launch would be 24 or more.
	 */
	ASSERT_INT(after, <=, before + 4);
	CloseHandle(h);
}

static void case_pass_fds(void)
{
	char *path = tmp_path("fd3");
	WCHAR *w = wide(path);
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ, NULL,
			       CREATE_ALWAYS, 0, NULL);
	bgrun_os_fd_t pass[1] = { h };

	ASSERT(h != INVALID_HANDLE_VALUE);
	o.argv = (const char *[]){ helper, "fd3", "third", NULL };
	o.pass_fds = pass;
	o.n_pass_fds = 1;
	ASSERT_INT(run(&o, NULL), ==, 0);
	CloseHandle(h);
	ASSERT_STR(slurp(path, NULL), "third");
}

static void case_ensurestart_on(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *c;
	struct bgrun_status st;
	HANDLE h;
	int pid;

	o.argv = (const char *[]){ helper, "sleep", NULL };
	pid = bgrun_spawn(&o, &c);
	ASSERT_INT(pid, >, 0);
	ASSERT_INT(bgrun_child_pid(c), ==, pid);
	ASSERT_INT(bgrun_child_started(c, NULL), ==, pid);
	/* It exists when bgrun_spawn returns: its pid opens. */
	h = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid);
	ASSERT(h != NULL);
	ASSERT_INT(WaitForSingleObject(h, 0), ==, WAIT_TIMEOUT);
	ASSERT_INT(bgrun_child_kill(c, SIGKILL_), ==, 0);
	ASSERT_INT(bgrun_child_wait(c, DEADLINE_MS, &st), ==, 0);
	ASSERT(st.signaled);
	ASSERT_INT(st.signal, ==, SIGKILL_);
	ASSERT_INT(WaitForSingleObject(h, 0), ==, WAIT_OBJECT_0);
	CloseHandle(h);
	ASSERT_INT(bgrun_child_kill(c, SIGKILL_), ==, -ESRCH);
	bgrun_child_free(c);
}

struct cb_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls;
	int64_t result;
	struct bgrun_failure failure;
};

static void on_start(void *data, bgrun_pid_t pid, const struct bgrun_failure *f)
{
	struct cb_state *s = data;

	pthread_mutex_lock(&s->lock);
	s->calls++;
	s->result = pid;
	s->failure = *f;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void case_ensurestart_off(void)
{
	struct cb_state s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure f = { 0 };
	struct bgrun_child *c;
	struct bgrun_status st;
	char *out = tmp_path("args");
	const char *argv[] = { helper, "args", out, "queued arg", NULL };

	o.ensurestart = false;
	o.argv = argv;
	/* Neither a callback nor a handle: an error would go nowhere. */
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, -EINVAL);
	/* The handle: the caller's buffers may change once it returned. */
	ASSERT_INT(bgrun_spawn(&o, &c), ==, 0);
	argv[3] = "changed";
	ASSERT_INT(bgrun_child_started(c, NULL), >, 0);
	ASSERT_INT(bgrun_child_wait(c, DEADLINE_MS, &st), ==, 0);
	ASSERT(st.exited && st.exit_code == 0);
	bgrun_child_free(c);
	check_args(out, (const char *[]){ "queued arg", NULL }, 3);
	/* The callback, with a failure. */
	o.argv = (const char *[]){ "bgrun-no-such-program", NULL };
	o.on_start = on_start;
	o.on_start_data = &s;
	ASSERT_INT(bgrun_spawn(&o, NULL), ==, 0);
	bgrun_spawn_flush();
	ASSERT_INT(s.calls, ==, 1);
	ASSERT_INT(s.result, ==, -ENOENT);
	ASSERT_INT(s.failure.stage, ==, BGRUN_STAGE_EXEC);
	/* A failure through the handle. */
	o.on_start = NULL;
	ASSERT_INT(bgrun_spawn(&o, &c), ==, 0);
	ASSERT_INT(bgrun_child_started(c, &f), ==, -ENOENT);
	ASSERT_INT(f.stage, ==, BGRUN_STAGE_EXEC);
	ASSERT_INT(bgrun_child_wait(c, 0, &st), ==, -ENOENT);
	bgrun_child_free(c);
}

static void case_wait_exit_code(void)
{
	static const char *const codes[] = { "0", "1", "42", "255", "256", "70000" };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_status st;

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		o.argv = (const char *[]){ helper, "exit", codes[i], NULL };
		ASSERT_INT(run(&o, &st), ==, atoi(codes[i]));
		ASSERT(!st.signaled);
		ASSERT_INT(st.pid, >, 0);
		ASSERT_INT(st.duration_ns, >, 0);
		ASSERT_INT(st.end_realtime_ns, >=, st.start_realtime_ns);
	}
}

static void case_wait_timeout(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *c;
	struct bgrun_status st, again;

	o.argv = (const char *[]){ helper, "sleep", NULL };
	ASSERT_INT(bgrun_spawn(&o, &c), >, 0);
	ASSERT_INT(bgrun_child_wait(c, 0, &st), ==, -ETIMEDOUT);
	ASSERT_INT(bgrun_child_wait(c, 10, &st), ==, -ETIMEDOUT);
	ASSERT_INT(bgrun_child_kill(c, 15), ==, 0);
	ASSERT_INT(bgrun_child_wait(c, -1, &st), ==, 0);
	ASSERT(st.signaled && st.signal == 15);
	ASSERT_INT(bgrun_child_wait(c, 0, &again), ==, 0);
	ASSERT_INT(again.signal, ==, 15);
	bgrun_child_free(c);
}

/* The kill ends the whole tree: the grandchild too (the child's job). */
static void case_kill_tree(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *out = tmp_path("gpid"), *got = NULL;
	struct bgrun_child *c;
	struct bgrun_status st;
	HANDLE g;
	DWORD start = GetTickCount();

	o.argv = (const char *[]){ helper, "tree", out, NULL };
	ASSERT_INT(bgrun_spawn(&o, &c), >, 0);
	/* Wait for the grandchild's pid to be written. */
	while ((got = slurp(out, NULL)) == NULL || got[0] == '\0') {
		if (GetTickCount() - start > DEADLINE_MS)
			FAIL("no grandchild after %d ms", DEADLINE_MS);
		Sleep(5);
	}
	g = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)atol(got));
	ASSERT(g != NULL);
	ASSERT_INT(WaitForSingleObject(g, 0), ==, WAIT_TIMEOUT);
	ASSERT_INT(bgrun_child_kill(c, SIGKILL_), ==, 0);
	ASSERT_INT(bgrun_child_wait(c, DEADLINE_MS, &st), ==, 0);
	ASSERT(st.signaled);
	ASSERT_INT(WaitForSingleObject(g, DEADLINE_MS), ==, WAIT_OBJECT_0);
	CloseHandle(g);
	bgrun_child_free(c);
}

static void case_wait_rusage(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_status st;
	const char *wine = wine_version();

	o.argv = (const char *[]){ helper, "spin", "200", NULL };
	ASSERT_INT(run(&o, &st), ==, 0);
	ASSERT_INT(st.rusage.vol_ctxsw, ==, BGRUN_NULL);
	ASSERT_INT(st.rusage.invol_ctxsw, ==, BGRUN_NULL);
	ASSERT_INT(st.rusage.minor_faults, ==, BGRUN_NULL);
	/* The child measured 200 ms of its own user time before it exited. */
	if (wine != NULL && st.rusage.user_cpu_ns < 200 * 1000000LL)
		SKIP("wine %s gives no or partial times for another process "
		     "(GetProcessTimes: %lld ns of user time after it ended, "
		     "where the child counted 200 ms)", wine,
		     (long long)st.rusage.user_cpu_ns);
	ASSERT_INT(st.rusage.user_cpu_ns, >=, 200 * 1000000LL);
	ASSERT_INT(st.rusage.max_rss_kb, >, 0);
	ASSERT_INT(st.rusage.major_faults, >, 0);
	ASSERT_INT(st.duration_ns, >=, st.rusage.user_cpu_ns / 2);
}

/* Library-owned children are reaped: nothing pending, no handle kept. */
static void case_reaper(void)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	DWORD start;
	int before, after;

	o.argv = (const char *[]){ helper, "exit", "0", NULL };
	ASSERT_INT(run(&o, NULL), ==, 0); /* the first launch's one-time setup */
	before = count_handles();
	ASSERT_INT(before, >, 0);
	for (int i = 0; i < 80; i++)
		(void)spawn_or_fail(&o, NULL);
	start = GetTickCount();
	while (bgrun__test_control(BGRUN__TEST_REAPER_PENDING) > 0) {
		if (GetTickCount() - start > DEADLINE_MS)
			FAIL("%d children not reaped after %d ms",
			     bgrun__test_control(BGRUN__TEST_REAPER_PENDING),
			     DEADLINE_MS);
		Sleep(2);
	}
	after = count_handles();
	/*
	 * The thread pool's wait threads keep a few handles of theirs; 80
	 * children whose process or job handles stayed open would be 80
	 * or 160 more.
	 */
	ASSERT_INT(after, <=, before + 8);
}

#define STRESS_THREADS 8
#define STRESS_EACH 25

static void *stress_main(void *arg)
{
	intptr_t k = (intptr_t)arg;

	for (int i = 0; i < STRESS_EACH; i++) {
		struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
		char code[16];
		int want = (int)(k * 100 + i);

		snprintf(code, sizeof(code), "%d", want);
		o.argv = (const char *[]){ helper, "exit", code, NULL };
		o.ensurestart = (i % 3) != 0;
		o.in.kind = i % 2 ? BGRUN_STDIO_BYTES : BGRUN_STDIO_NULL;
		o.in.bytes = code;
		o.in.len = strlen(code);
		if (run(&o, NULL) != want)
			FAIL("thread %d, launch %d: wrong exit code", (int)k, i);
	}
	return NULL;
}

static void case_threads_stress(void)
{
	pthread_t t[STRESS_THREADS];

	for (intptr_t i = 0; i < STRESS_THREADS; i++)
		ASSERT(pthread_create(&t[i], NULL, stress_main, (void *)i) == 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		pthread_join(t[i], NULL);
}

/*
 * A caller in a job that allows breakaway: a detached child leaves it
 * (it must outlive a job that ends the caller's processes), a child
 * that is not detached stays in it.
 */
static void case_detach_breakaway(void)
{
	JOBOBJECT_EXTENDED_LIMIT_INFORMATION info = { 0 };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *c;
	struct bgrun_status st;
	HANDLE job = CreateJobObjectW(NULL, NULL), h;
	BOOL in;
	int pid;

	ASSERT(job != NULL);
	info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_BREAKAWAY_OK;
	ASSERT(SetInformationJobObject(job, JobObjectExtendedLimitInformation,
				       &info, sizeof(info)));
	/* Before the first launch: the library learns it once. */
	ASSERT(AssignProcessToJobObject(job, GetCurrentProcess()));
	o.argv = (const char *[]){ helper, "sleep", NULL };
	for (int detach = 1; detach >= 0; detach--) {
		o.detach = detach;
		pid = bgrun_spawn(&o, &c);
		ASSERT_INT(pid, >, 0);
		h = OpenProcess(PROCESS_QUERY_INFORMATION, FALSE, (DWORD)pid);
		ASSERT(h != NULL);
		if (!IsProcessInJob(h, job, &in))
			FAIL("IsProcessInJob: %lu", (unsigned long)GetLastError());
		CloseHandle(h);
		ASSERT_INT(bgrun_child_kill(c, SIGKILL_), ==, 0);
		ASSERT_INT(bgrun_child_wait(c, DEADLINE_MS, &st), ==, 0);
		bgrun_child_free(c);
		if (detach && in)
			FAIL("a detached child stayed in the caller's job");
		if (!detach && !in)
			FAIL("a child that is not detached left the caller's job");
	}
}

/* --- bgrun.exe (src/win/meson.build builds it beside src/win/) --- */

char *bgrun_path(void)
{
	char *dir = strdup(helper);

	*strrchr(dir, '\\') = '\0';
	return dup_printf("%s\\..\\..\\src\\win\\bgrun.exe", dir);
}

/* Runs bgrun with args; its exit code, *ret_err what it said on stderr. */
int run_bgrun(const char *const *args, char **ret_err)
{
	const char *argv[96] = { NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *err = tmp_path("bgrun-stderr");
	size_t k = 0;
	int code;

	argv[k++] = bgrun_path();
	for (size_t i = 0; args[i] != NULL; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	o.argv = argv;
	o.err.kind = BGRUN_STDIO_FILE;
	o.err.path = err;
	code = run(&o, NULL);
	if (ret_err != NULL) {
		*ret_err = slurp(err, NULL);
		if (*ret_err == NULL)
			*ret_err = strdup("");
	}
	return code;
}

static void case_cli_exit_codes(void)
{
	char *err, *dir = tmpdir;

	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-w", helper,
					      "exit", "42", NULL }, &err), ==, 42);
	ASSERT_STR(err, "");
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "bgrun-no-such-program",
					      NULL }, &err), ==, 127);
	ASSERT_STR(err, "bgrun: bgrun-no-such-program: command not found\n");
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "C:\\no\\such.exe",
					      NULL }, &err), ==, 127);
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", dir, NULL }, &err), ==, 126);
	ASSERT(strstr(err, "cannot execute: Permission denied") != NULL);
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-C", "C:\\no\\such",
					      helper, NULL }, &err), ==, 125);
	ASSERT(strstr(err, "bgrun: cannot change directory to 'C:\\no\\such'") == err);
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", NULL }, &err), ==, 2);
	ASSERT_STR(err, "bgrun: missing command\nTry 'bgrun --help'.\n");
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-E", "novalue",
					      helper, NULL }, &err), ==, 2);
	ASSERT_INT(run_bgrun((const char *[]){ "--bogus", helper, NULL }, &err), ==, 2);
	/* getopt's own message, named "bgrun" as every other. */
	ASSERT(strncmp(err, "bgrun: ", 7) == 0 && strstr(err, "bogus") != NULL);
	ASSERT(strstr(err, "\nTry 'bgrun --help'.\n") != NULL);
	/* Shell mode, and its exit code through -w. */
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-w", "-s", "exit 3",
					      NULL }, &err), ==, 3);
}

static void case_cli_output_files(void)
{
	char *out = tmp_path("out"), *err = tmp_path("err"), *said;

	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-w", "-o", out, "-e", err,
					      helper, "echo", "hello", NULL }, &said), ==, 0);
	ASSERT_STR(slurp(out, NULL), "hello");
	ASSERT_STR(slurp(err, NULL), "err:hello");
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-w", "-a", "-o", out,
					      "-e", out, helper, "echo", "again", NULL },
			     &said), ==, 0);
	ASSERT_STR(slurp(out, NULL), "helloagainerr:again");
	/* Cannot open stdout: 125, nothing started. */
	ASSERT_INT(run_bgrun((const char *[]){ "--no-log", "-o", tmp_path("no\\out"),
					      helper, "exit", "0", NULL }, &said), ==, 125);
	ASSERT(strstr(said, "for stdout") != NULL);
}

/* The awkward arguments through bgrun.exe: two quotings, no loss. */
static void case_cli_awkward_args(void)
{
	char *out = tmp_path("args");
	const char *args[64] = { "--no-log", "-w", helper, "args", out };
	size_t k = 5;

	for (size_t i = 0; awkward[i] != NULL; i++)
		args[k++] = awkward[i];
	args[k] = NULL;
	ASSERT_INT(run_bgrun(args, NULL), ==, 0);
	check_args(out, awkward, 3);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
#define WIN(name) { #name, case_##name },
#include "cases.def"
#undef WIN
#define LOG(name) { #name, case_##name },
#include "log-cases.def"
#undef LOG
};

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	/* The logged mode's cases run this program as their writers. */
	if (argc >= 2 && strncmp(argv[1], "--log-", 6) == 0)
		return win_log_child(argc, argv);
	if (argc != 2) {
		fprintf(stderr, "usage: win-tests CASE | --list\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name) != 0)
			continue;
		case_name = cases[i].name;
		setup();
		cases[i].fn();
		rmtree(wide(tmpdir));
		return 0;
	}
	fprintf(stderr, "win-tests: unknown case '%s'\n", argv[1]);
	return 2;
}
