/* SPDX-License-Identifier: MIT */
/* test-exec.c: what runs: argv bytes, shell mode, PATH search, exec errors. */

#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "bgrun-test-prog"

/* Checks that the report's argv is exactly want (NULL-terminated). */
static void expect_args(const struct report *rep, const char *const *want)
{
	char **got = report_get_all(rep, "arg");
	size_t n = test_strv_len((char *const *)want);

	ASSERT_EQ(report_get_int(rep, "argc"), n);
	ASSERT_EQ(test_strv_len(got), n);
	for (size_t i = 0; i < n; i++)
		ASSERT_STR_EQ(got[i], want[i]);
	test_strv_free(got);
}

/* dir/name as a symbolic link to this program. */
static char *link_self(const char *dir, const char *name)
{
	char *path = test_path(dir, name);

	ASSERT_SYS(symlink(test_self(), path));
	return path;
}

/* A shell word: 'text', with each ' written as '\''. */
static char *sh_quote(const char *s)
{
	char *q = test_malloc(strlen(s) * 4 + 3), *p = q;

	*p++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *s;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

void test_argv_bytes(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	char all[256];
	struct report rep;

	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	const char *argv[] = {
		test_self(), "helper", "report", rpath,
		"", "two words", "line\nbreak", " lead and trail ", "\t",
		"\xff\xfe not utf-8 \xc3\x28 \x80", all, "", "-", "--", "*",
		"$HOME", "'\"\\", "=", "a=b", NULL,
	};

	opts.argv = argv;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	report_free(&rep);
	free(rpath);
}

void test_argv_relative_cwd(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	char *sub = test_path(dir, "sub");
	struct report rep;

	free(link_self(dir, PROG));
	ASSERT_SYS(mkdir(sub, 0755));
	free(link_self(sub, PROG));
	if (access("./" PROG, F_OK) == 0 || access("sub/" PROG, F_OK) == 0)
		SKIP("the current directory holds %s", PROG);

	/* A program path with a '/' is relative to .cwd, not to ours. */
	const char *argv1[] = { "./" PROG, "helper", "report", rpath, NULL };
	opts.argv = argv1;
	opts.cwd = dir;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv1);
	report_free(&rep);
	ASSERT_SYS(unlink(rpath));

	const char *argv2[] = { "sub/" PROG, "helper", "report", rpath, NULL };
	opts.argv = argv2;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv2);
	report_free(&rep);
	free(sub);
	free(rpath);
}

static void skip_without_sh(void)
{
	if (access("/bin/sh", X_OK) != 0)
		SKIP("no /bin/sh");
}

void test_shell_plain(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	char *qself = sh_quote(test_self()), *qpath = sh_quote(rpath);
	char *script;
	struct report rep;

	skip_without_sh();
	/* Shell syntax (a variable, quotes) proves that /bin/sh ran it. */
	script = test_printf("X='from the shell'; exec %s helper report %s "
			     "\"$X\" \"$#\"", qself, qpath);
	opts.shell = script;
	test_run_report(&opts, rpath, &rep);
	const char *want[] = { test_self(), "helper", "report", rpath,
			       "from the shell", "0", NULL };
	expect_args(&rep, want);
	report_free(&rep);
	free(script);
	free(qpath);
	free(qself);
	free(rpath);
}

void test_shell_args(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	struct report rep;

	skip_without_sh();
	/* argv[0] is $0 (here the program the script runs), then $1, $2. */
	const char *argv[] = { test_self(), rpath, "two words\nand a line",
			       "", NULL };
	opts.shell = "exec \"$0\" helper report \"$1\" \"$2\" \"$3\" \"$#\"";
	opts.argv = argv;
	test_run_report(&opts, rpath, &rep);
	const char *want[] = { test_self(), "helper", "report", rpath,
			       "two words\nand a line", "", "3", NULL };
	expect_args(&rep, want);
	report_free(&rep);
	free(rpath);
}

/* Fails (skips) if the caller's own PATH could find name. */
static void expect_not_in_caller_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy = test_strdup(path != NULL ? path : ""), *save = NULL;

	for (char *d = strtok_r(copy, ":", &save); d != NULL;
	     d = strtok_r(NULL, ":", &save)) {
		char *p = test_path(d, name);

		if (access(p, F_OK) == 0)
			SKIP("%s exists in the caller's PATH", p);
		free(p);
	}
	free(copy);
}

void test_path_child_env(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	char *bin1 = test_path(dir, "bin1"), *bin2 = test_path(dir, "bin2");
	char *bad, *env_path, *env_path2;
	struct report rep;

	ASSERT_SYS(mkdir(bin1, 0755));
	ASSERT_SYS(mkdir(bin2, 0755));
	free(link_self(bin2, PROG));
	expect_not_in_caller_path(PROG);
	const char *argv[] = { PROG, "helper", "report", rpath, NULL };
	opts.argv = argv;

	/* Found through the child's PATH (env_set), not the caller's. */
	env_path = test_printf("PATH=%s", bin2);
	const char *set[] = { env_path, NULL };
	opts.env_set = set;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	report_free(&rep);
	ASSERT_SYS(unlink(rpath));

	/*
	 * Like execvpe: a missing directory and a non-executable file of the
	 * same name earlier in PATH are passed over.
	 */
	bad = test_path(bin1, PROG);
	test_write_file(bad, "#!/bad\n", 7, 0644);
	env_path2 = test_printf("PATH=/nonexistent-bgrun-dir:%s:%s", bin1,
				bin2);
	const char *env[] = { "X=1", env_path2, NULL };
	opts.env_set = NULL;
	opts.env = env;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	report_free(&rep);
	ASSERT_SYS(unlink(rpath));

	/* With .cwd too: argv[0] stays the name, not the path found. */
	opts.cwd = bin1;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	report_free(&rep);
	free(env_path2);
	free(env_path);
	free(bad);
	free(bin2);
	free(bin1);
	free(rpath);
}

void test_path_default(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	const char *dir = test_tmpdir();
	char *caller_path;

	/* Without PATH in the child's env: "/bin:/usr/bin", not ours. */
	free(link_self(dir, PROG));
	caller_path = test_printf("%s:%s", dir, getenv("PATH") ? getenv("PATH")
				  : "/bin:/usr/bin");
	ASSERT_SYS(setenv("PATH", caller_path, 1));
	const char *argv[] = { PROG, "helper", "exit", "0", NULL };
	const char *unset[] = { "PATH", NULL };
	opts.argv = argv;
	opts.env_unset = unset;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_EXEC);

	/* The positive half needs a program from /bin or /usr/bin. */
	if (access("/bin/true", X_OK) != 0 &&
	    access("/usr/bin/true", X_OK) != 0)
		SKIP("no /bin/true nor /usr/bin/true");
	const char *argv_true[] = { "true", NULL };
	opts.argv = argv_true;
	ASSERT_INT(bgrun_spawn(&opts, &child), >, 0);
	test_wait_exit(child, 0);
	bgrun_child_free(child);
	free(caller_path);
}

void test_path_relative_entry(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *rpath = test_path(dir, "report");
	char *bin = test_path(dir, "rel-bin"), *real;
	struct report rep;

	ASSERT_SYS(mkdir(bin, 0755));
	free(link_self(bin, PROG));
	if (access("rel-bin/" PROG, F_OK) == 0)
		SKIP("the current directory holds rel-bin/%s", PROG);
	/* A relative PATH entry is resolved against the child's cwd. */
	const char *argv[] = { PROG, "helper", "report", rpath, NULL };
	const char *set[] = { "PATH=/nonexistent-bgrun-dir:rel-bin", NULL };
	opts.argv = argv;
	opts.env_set = set;
	opts.cwd = dir;
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	real = test_realpath(dir);
	ASSERT_STR_EQ(report_get(&rep, "cwd"), real);
	report_free(&rep);
	ASSERT_SYS(unlink(rpath));

	/* An empty entry (here the last) is the child's cwd itself. */
	const char *set2[] = { "PATH=/nonexistent-bgrun-dir:", NULL };
	opts.env_set = set2;
	opts.cwd = bin;
	if (access(PROG, F_OK) == 0)
		SKIP("the current directory holds %s", PROG);
	test_run_report(&opts, rpath, &rep);
	expect_args(&rep, argv);
	report_free(&rep);
	free(real);
	free(bin);
	free(rpath);
}

void test_exec_enoent(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *env_path = test_printf("PATH=%s", dir);
	char *file = test_path(dir, "file"), *under_file;
	const char *set[] = { env_path, NULL };

	/* Searched in PATH and not found. */
	const char *argv1[] = { "bgrun-test-missing", "helper", "exit", "0",
				NULL };
	opts.argv = argv1;
	opts.env_set = set;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_EXEC);

	/* A path that does not exist. */
	const char *argv2[] = { "/nonexistent-bgrun-dir/prog", NULL };
	opts.argv = argv2;
	opts.env_set = NULL;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_EXEC);

	/* A path through a regular file. */
	test_write_file(file, "x", 1, 0755);
	under_file = test_path(file, "prog");
	const char *argv3[] = { under_file, NULL };
	opts.argv = argv3;
	test_expect_spawn_error(&opts, -ENOTDIR, BGRUN_STAGE_EXEC);
	free(under_file);
	free(file);
	free(env_path);
}

void test_exec_eacces(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *env_path = test_printf("PATH=%s", dir);
	char *noexec = test_path(dir, "bgrun-test-noexec");
	char *subdir = test_path(dir, "bgrun-test-dir");
	const char *set[] = { env_path, NULL };

	/* Found in PATH, but not executable (even by root: no x bit). */
	test_write_file(noexec, "#!/bin/sh\nexit 0\n", 17, 0644);
	const char *argv1[] = { "bgrun-test-noexec", NULL };
	opts.argv = argv1;
	opts.env_set = set;
	test_expect_spawn_error(&opts, -EACCES, BGRUN_STAGE_EXEC);

	/* The same by path. */
	const char *argv2[] = { noexec, NULL };
	opts.argv = argv2;
	test_expect_spawn_error(&opts, -EACCES, BGRUN_STAGE_EXEC);

	/* A directory is no program either. */
	ASSERT_SYS(mkdir(subdir, 0755));
	const char *argv3[] = { subdir, NULL };
	opts.argv = argv3;
	test_expect_spawn_error(&opts, -EACCES, BGRUN_STAGE_EXEC);
	free(subdir);
	free(noexec);
	free(env_path);
}

void test_exec_enoexec(void)
{
	static const char garbage[] =
		"\x01\x02\x03\x04 bgrun garbage, no #! line \xff\xfe\n\x05";
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *env_path = test_printf("PATH=%s", dir);
	char *prog = test_path(dir, "bgrun-test-garbage");
	const char *set[] = { env_path, NULL };

	/* Executable, but in no format the kernel knows (no shell retry). */
	test_write_file(prog, garbage, sizeof(garbage) - 1, 0755);
	const char *argv1[] = { prog, "arg", NULL };
	opts.argv = argv1;
	test_expect_spawn_error(&opts, -ENOEXEC, BGRUN_STAGE_EXEC);

	const char *argv2[] = { "bgrun-test-garbage", NULL };
	opts.argv = argv2;
	opts.env_set = set;
	test_expect_spawn_error(&opts, -ENOEXEC, BGRUN_STAGE_EXEC);
	free(prog);
	free(env_path);
}

void test_exec_e2big(void)
{
	enum { N = 16384, LEN = 1024 }; /* 16 MiB: beyond any ARG_MAX */
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char **argv = test_malloc((N + 2) * sizeof(char *));
	char *arg = test_malloc(LEN), *huge = test_malloc(256 * 1024 + 1);

	memset(arg, 'a', LEN - 1);
	arg[LEN - 1] = '\0';
	argv[0] = test_self();
	for (int i = 1; i <= N; i++)
		argv[i] = arg;
	argv[N + 1] = NULL;
	opts.argv = argv;
	test_expect_spawn_error(&opts, -E2BIG, BGRUN_STAGE_EXEC);

	/* One string longer than the kernel's per-string limit (128 KiB). */
	memset(huge, 'b', 256 * 1024);
	huge[256 * 1024] = '\0';
	argv[1] = huge;
	argv[2] = NULL;
	test_expect_spawn_error(&opts, -E2BIG, BGRUN_STAGE_EXEC);
	free(huge);
	free(arg);
	free(argv);
}

/*
 * bgrun_spawn_resolve finds what bgrun_spawn would run (the child's PATH,
 * relative to its cwd) and fails at the same stage, opening nothing.
 */
void test_exec_resolve(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_failure failure = { .stage = BGRUN_STAGE_NONE };
	const char *dir = test_tmpdir();
	char *bin = test_path(dir, "bin"), *prog = test_path(bin, "prog");
	char *env_path = test_printf("PATH=/nonexistent-bgrun-dir:%s", bin);
	char *out = test_path(dir, "out"), *path = NULL;
	const char *set[] = { env_path, NULL };
	const char *argv1[] = { "prog", NULL };
	const char *argv2[] = { "./prog", NULL };
	const char *argv3[] = { "bgrun-test-missing", NULL };

	ASSERT_OK(mkdir(bin, 0755) < 0 ? -errno : 0);
	test_write_file(prog, "#!/bin/sh\n", 10, 0755);
	opts.failure = &failure;

	/* In the child's PATH (ours has no bin/). */
	opts.argv = argv1;
	opts.env_set = set;
	ASSERT_OK(bgrun_spawn_resolve(&opts, &path));
	ASSERT_STR_EQ(path, prog);
	free(path);

	/* Relative to the child's working directory, kept relative. */
	opts.argv = argv2;
	opts.env_set = NULL;
	opts.cwd = bin;
	ASSERT_OK(bgrun_spawn_resolve(&opts, &path));
	ASSERT_STR_EQ(path, "./prog");
	free(path);

	/* Not found: the stage bgrun_spawn gives; the stdout file untouched. */
	opts.argv = argv3;
	opts.out.kind = BGRUN_STDIO_FILE;
	opts.out.path = out;
	path = NULL;
	ASSERT_EQ(bgrun_spawn_resolve(&opts, &path), -ENOENT);
	ASSERT_EQ(failure.stage, BGRUN_STAGE_EXEC);
	ASSERT(path == NULL);
	ASSERT(access(out, F_OK) < 0);

	/* A working directory that is not there. */
	opts.argv = argv2;
	opts.cwd = "/nonexistent-bgrun-dir";
	ASSERT_EQ(bgrun_spawn_resolve(&opts, &path), -ENOENT);
	ASSERT_EQ(failure.stage, BGRUN_STAGE_CWD);
	free(env_path);
	free(out);
	free(prog);
	free(bin);
}
