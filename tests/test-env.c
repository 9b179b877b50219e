/* SPDX-License-Identifier: MIT */
/* test-env.c: the child's environment, working directory and session. */

#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks that the child's environment is want, in any order. */
static void expect_env(const struct report *rep, char **want)
{
	char **got = report_get_all(rep, "env");
	size_t n = test_strv_len(want), m = test_strv_len(got);

	qsort(want, n, sizeof(char *), cmp_str);
	qsort(got, m, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n || i < m; i++) {
		if (i >= m)
			FAIL("the child lacks %.80s", want[i]);
		if (i >= n)
			FAIL("the child has an extra %.80s", got[i]);
		ASSERT_STR_EQ(got[i], want[i]);
	}
	test_strv_free(got);
}

/* A malloc'd copy of environ without the variables named in drop. */
static char **environ_without(const char *const *drop, size_t extra)
{
	size_t n = test_strv_len(environ), k = 0;
	char **v = test_malloc((n + extra + 1) * sizeof(char *));

	for (size_t i = 0; i < n; i++) {
		bool keep = true;

		for (size_t j = 0; drop != NULL && drop[j] != NULL; j++) {
			size_t len = strlen(drop[j]);

			if (strncmp(environ[i], drop[j], len) == 0 &&
			    environ[i][len] == '=')
				keep = false;
		}
		if (keep)
			v[k++] = test_strdup(environ[i]);
	}
	v[k] = NULL;
	return v;
}

static void strv_push(char **v, const char *s)
{
	size_t n = test_strv_len(v);

	v[n] = test_strdup(s);
	v[n + 1] = NULL;
}

void test_env_inherit(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;
	char **want;

	/* The caller's environ at the time of the call, exactly. */
	ASSERT_SYS(setenv("BGRUN_TEST_INHERIT", "spaces and\na line=x", 1));
	ASSERT_SYS(unsetenv("BGRUN_TEST_GONE"));
	test_run_report(&opts, NULL, &rep);
	want = environ_without(NULL, 0);
	expect_env(&rep, want);
	test_strv_free(want);
	report_free(&rep);

	ASSERT_SYS(setenv("BGRUN_TEST_LATER", "1", 1));
	ASSERT_SYS(unsetenv("BGRUN_TEST_INHERIT"));
	test_run_report(&opts, NULL, &rep);
	want = environ_without(NULL, 0);
	expect_env(&rep, want);
	test_strv_free(want);
	report_free(&rep);
}

void test_env_set_unset(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *names[] = { "BGRUN_A", "BGRUN_B", "BGRUN_C", "BGRUN_E",
				NULL };
	const char *set[] = { "BGRUN_A=changed", "BGRUN_C=new=value",
			      "BGRUN_E=set then unset", "BGRUN_EMPTY=", NULL };
	const char *unset[] = { "BGRUN_B", "BGRUN_E", "BGRUN_NEVER_SET", NULL };
	struct report rep;
	char **want;

	ASSERT_SYS(setenv("BGRUN_A", "1", 1));
	ASSERT_SYS(setenv("BGRUN_B", "2", 1));
	ASSERT_SYS(setenv("BGRUN_D", "kept", 1));
	opts.env_set = set;
	opts.env_unset = unset;
	test_run_report(&opts, NULL, &rep);
	/* Replaced once (no duplicate), added, removed; the rest as is. */
	want = environ_without(names, 3);
	strv_push(want, "BGRUN_A=changed");
	strv_push(want, "BGRUN_C=new=value");
	strv_push(want, "BGRUN_EMPTY=");
	expect_env(&rep, want);
	test_strv_free(want);
	report_free(&rep);
	/* The caller's own environment is untouched. */
	ASSERT_STR_EQ(getenv("BGRUN_A"), "1");
	ASSERT_STR_EQ(getenv("BGRUN_B"), "2");
	ASSERT(getenv("BGRUN_C") == NULL);
}

void test_env_exact(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *env[] = { "X=1", "Y=two words", "EMPTY=", "NL=a\nb",
			      "PATH=/nonexistent-bgrun-dir", NULL };
	struct report rep;
	char *want1[] = { "X=1", "Y=two words", "EMPTY=", "NL=a\nb",
			  "PATH=/nonexistent-bgrun-dir", NULL };
	char *want2[] = { "X=1", "Y=2", "W=new", NULL };

	ASSERT_SYS(setenv("BGRUN_TEST_NOT_PASSED", "1", 1));
	opts.env = env;
	test_run_report(&opts, NULL, &rep);
	expect_env(&rep, want1);
	report_free(&rep);

	/* env_set and env_unset apply on top of the exact list. */
	const char *env2[] = { "X=1", "Y=two", "Z=3", NULL };
	const char *set[] = { "Y=2", "W=new", NULL };
	const char *unset[] = { "Z", NULL };
	opts.env = env2;
	opts.env_set = set;
	opts.env_unset = unset;
	test_run_report(&opts, NULL, &rep);
	expect_env(&rep, want2);
	report_free(&rep);
}

void test_env_empty(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *env[] = { NULL };
	char *want[] = { NULL };
	struct report rep;

	opts.env = env;
	test_run_report(&opts, NULL, &rep);
	expect_env(&rep, want);
	report_free(&rep);
}

void test_env_invalid(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *bad_set[] = { "GOOD=1", "NOEQUALS", NULL };
	const char *bad_unset[] = { "GOOD", "A=B", NULL };

	opts.argv = argv;
	opts.env_set = bad_set;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
	opts.env_set = NULL;
	opts.env_unset = bad_unset;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
}

/*
 * bgrun_spawn_command gives what bgrun_spawn would execute: the child
 * sees exactly its environment, and its argv has the shell's words in
 * front. Its blocks are the caller's: they outlive the options.
 */
void test_env_command(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *set[] = { "BGRUN_CMD_A=new", "BGRUN_CMD_B=x", "BGRUN_CMD_A=last",
			      NULL };
	const char *unset[] = { "BGRUN_CMD_B", "BGRUN_CMD_GONE", NULL };
	const char *argv[] = { "zero", "one", NULL };
	const char *self_argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *bad[] = { "NOEQUALS", NULL };
	char **cmd_argv = NULL, **envp = NULL;
	char *canary = (char *)"untouched";
	struct report rep;
	size_t n = 0;

	ASSERT_SYS(setenv("BGRUN_CMD_A", "old", 1));
	ASSERT_SYS(setenv("BGRUN_CMD_GONE", "1", 1));
	ASSERT_SYS(setenv("BGRUN_CMD_KEEP", "1", 1));
	opts.argv = self_argv;
	opts.env_set = set;
	opts.env_unset = unset;
	ASSERT_OK(bgrun_spawn_command(&opts, NULL, &cmd_argv, &envp));
	test_run_report(&opts, NULL, &rep);
	expect_env(&rep, envp);
	report_free(&rep);
	/* A copy: what the caller changes afterwards is not in it. */
	ASSERT_SYS(setenv("BGRUN_CMD_KEEP", "changed", 1));
	for (size_t i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], "BGRUN_CMD_", 10) == 0) {
			ASSERT(strcmp(envp[i], "BGRUN_CMD_A=last") == 0 ||
			       strcmp(envp[i], "BGRUN_CMD_KEEP=1") == 0);
			n++;
		}
	ASSERT_EQ(n, 2);
	ASSERT_STR_EQ(cmd_argv[0], test_self());
	ASSERT_STR_EQ(cmd_argv[3], "0");
	ASSERT(cmd_argv[4] == NULL);
	free(cmd_argv);
	free(envp);

	opts = (struct bgrun_spawn_opts)BGRUN_SPAWN_OPTS_INIT;
	opts.shell = "exit 0";
	opts.argv = argv;
	ASSERT_OK(bgrun_spawn_command(&opts, NULL, &cmd_argv, &envp));
	ASSERT_STR_EQ(cmd_argv[0], "/bin/sh");
	ASSERT_STR_EQ(cmd_argv[1], "-c");
	ASSERT_STR_EQ(cmd_argv[2], "exit 0");
	ASSERT_STR_EQ(cmd_argv[3], "zero");
	ASSERT_STR_EQ(cmd_argv[4], "one");
	ASSERT(cmd_argv[5] == NULL);
	free(cmd_argv);
	free(envp);

	/* With ret_path: the program bgrun_spawn_resolve finds, or its failure. */
	{
		char *path = NULL, *resolved = NULL;
		const char *missing[] = { "bgrun-no-such-program", NULL };

		ASSERT_OK(bgrun_spawn_resolve(&opts, &resolved));
		ASSERT_OK(bgrun_spawn_command(&opts, &path, &cmd_argv, &envp));
		ASSERT_STR_EQ(path, resolved);
		free(path);
		free(resolved);
		free(cmd_argv);
		free(envp);
		opts.shell = NULL;
		opts.argv = missing;
		path = &canary[0];
		ASSERT_EQ(bgrun_spawn_command(&opts, &path, &cmd_argv, &envp),
			  -ENOENT);
		ASSERT(path == &canary[0]);
		opts.shell = "exit 0";
		opts.argv = argv;
	}

	/* Refused as bgrun_spawn refuses it; the outputs are untouched. */
	opts.env_set = bad;
	cmd_argv = envp = &canary;
	ASSERT_EQ(bgrun_spawn_command(&opts, NULL, &cmd_argv, &envp), -EINVAL);
	ASSERT(cmd_argv == &canary && envp == &canary);
}

void test_opts_invalid(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	const char *empty[] = { NULL };

	/* No command at all. */
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
	opts.argv = empty;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);

	/* Stdio kinds where they make no sense. */
	opts.argv = argv;
	opts.in.kind = BGRUN_STDIO_STDOUT;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
	opts.in.kind = BGRUN_STDIO_NULL;
	opts.out.kind = BGRUN_STDIO_BYTES;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
	opts.out.kind = BGRUN_STDIO_STDOUT;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);
	opts.out.kind = BGRUN_STDIO_NULL;
	opts.err.kind = BGRUN_STDIO_FILE;
	opts.err.path = NULL;
	test_expect_spawn_error(&opts, -EINVAL, BGRUN_STAGE_ARGS);

	/* Not a descriptor at all. */
	opts.err.kind = BGRUN_STDIO_NULL;
	opts.in.kind = BGRUN_STDIO_FD;
	opts.in.fd = -1;
	test_expect_spawn_error(&opts, -EBADF, BGRUN_STAGE_ARGS);
}

void test_cwd_set(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *real = test_realpath(dir);
	char *before = test_realpath("."), *after;
	struct report rep;

	opts.cwd = dir;
	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "cwd"), real);
	report_free(&rep);
	/* The caller's own cwd does not move. */
	after = test_realpath(".");
	ASSERT_STR_EQ(after, before);

	/* Without .cwd: the caller's. */
	opts.cwd = NULL;
	test_run_report(&opts, NULL, &rep);
	ASSERT_STR_EQ(report_get(&rep, "cwd"), before);
	report_free(&rep);
	free(after);
	free(before);
	free(real);
}

void test_cwd_missing(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	const char *dir = test_tmpdir();
	char *missing = test_path(dir, "missing");
	char *file = test_path(dir, "file");
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };

	opts.argv = argv;
	opts.cwd = missing;
	test_expect_spawn_error(&opts, -ENOENT, BGRUN_STAGE_CWD);
	test_write_file(file, "", 0, 0644);
	opts.cwd = file;
	test_expect_spawn_error(&opts, -ENOTDIR, BGRUN_STAGE_CWD);
	free(file);
	free(missing);
}

void test_detach_default(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;
	long long pid;

	test_run_report(&opts, NULL, &rep);
	pid = report_get_int(&rep, "pid");
	/* A new session and process group, led by the child. */
	ASSERT_EQ(report_get_int(&rep, "sid"), pid);
	ASSERT_EQ(report_get_int(&rep, "pgid"), pid);
	ASSERT_INT(report_get_int(&rep, "sid"), !=, getsid(0));
	ASSERT_EQ(report_get_int(&rep, "ppid"), getpid());
	report_free(&rep);
}

void test_detach_off(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;

	opts.detach = false;
	test_run_report(&opts, NULL, &rep);
	ASSERT_EQ(report_get_int(&rep, "sid"), getsid(0));
	ASSERT_EQ(report_get_int(&rep, "pgid"), getpgrp());
	ASSERT_EQ(report_get_int(&rep, "ppid"), getpid());
	report_free(&rep);
}

void test_new_pgroup(void)
{
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct report rep;
	long long pid;

	/* Not detached: our session, a group of its own. */
	opts.detach = false;
	opts.new_pgroup = true;
	test_run_report(&opts, NULL, &rep);
	pid = report_get_int(&rep, "pid");
	ASSERT_EQ(report_get_int(&rep, "pgid"), pid);
	ASSERT_EQ(report_get_int(&rep, "sid"), getsid(0));
	ASSERT_INT(report_get_int(&rep, "pgid"), !=, getpgrp());
	report_free(&rep);

	/* Detached: ignored, the session leader leads its group anyway. */
	opts.detach = true;
	test_run_report(&opts, NULL, &rep);
	pid = report_get_int(&rep, "pid");
	ASSERT_EQ(report_get_int(&rep, "sid"), pid);
	ASSERT_EQ(report_get_int(&rep, "pgid"), pid);
	report_free(&rep);
}
