/* SPDX-License-Identifier: MIT */
/* spawn-latency-mech.c: the caller side of spawn-latency: its heap, and one timed launch per mechanism. */

#include "spawn-latency.h"

#include "bgrun.h"
#include "bgrun/test-control.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

extern char **environ;

const struct sl_mech_info sl_mechs[SL_NMECH] = {
	[SL_BGRUN_SPAWN] = { "bgrun_spawn", true },
	[SL_POSIX_SPAWN] = { "posix_spawn", false },
	[SL_POSIX_SPAWN_SETSID] = { "posix_spawn_setsid", false },
	[SL_FORK_EXEC] = { "fork_exec", true },
	[SL_HG55_DOUBLE_FORK] = { "hg55_double_fork", true },
	[SL_HG6_SH_BG] = { "hg6_sh_bg", true },
	[SL_HG6_SH_BG_FORK] = { "hg6_sh_bg_fork", true },
	[SL_UV_SPAWN] = { "uv_spawn", false },
	[SL_PART_SIGNALS] = { "part_signals", false },
	[SL_PART_NULL_OPEN] = { "part_null_open", false },
	[SL_PART_NULL_DUP] = { "part_null_dup", false },
	[SL_PART_CLOSEFROM] = { "part_closefrom", false },
	[SL_PART_PIDFD] = { "part_pidfd", false },
};

struct sl_cell {
	enum sl_mech mech;
	bool ensurestart;
	char *argv[2];  /* { cmd, NULL }, owned */
	char *script;   /* hg6_sh_bg*: "( 'cmd' ) &", owned */

	/* bgrun_spawn, ensurestart off: the start callback's outcome. */
	sem_t started;
	bool started_ready;
	int start_result;
	bool settle_given_up;

	/* hg55_double_fork, ensurestart off: Mercurial's waitpid thread. */
	pthread_t reaper;
	bool reaper_running;
	sem_t reap_go, reap_done;
	pid_t reap_pid;   /* <= 0 tells the thread to stop */
	int reap_result;  /* the wait status, or -errno */

	/* the --parts mechanisms */
	struct sl_part *part;

	/* uv_spawn */
	uv_loop_t loop;
	bool loop_ready;
	uv_process_t proc;
};

int sl_become_subreaper(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) < 0 && errno == EINTR)
		;
}

/* waitpid() retried on EINTR: the status, or -errno. */
static int wait_pid(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return status;
}

/*
 * The orphans of the double fork and of `sh -c '( cmd ) &'` are
 * reparented to us (we are a subreaper); collect them all so the next run
 * starts from a quiet machine. Only called from cells whose mechanisms
 * have no other children in flight.
 */
static void reap_orphans(void)
{
	for (;;) {
		if (waitpid(-1, NULL, 0) > 0)
			continue;
		if (errno != EINTR)
			return; /* ECHILD: nothing left */
	}
}

/*
 * The parent's half of the close-on-exec pipe trick (Python's subprocess,
 * libuv): EOF means the child executed; an int means exec failed with it.
 * Returns 0 or -errno.
 */
static int wait_exec_pipe(int fd)
{
	int err = 0;
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(err)) {
		n = read(fd, (char *)&err + got, sizeof(err) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got == 0)
		return 0;
	return err > 0 ? -err : -ENOEXEC;
}

/* ASYNC-SIGNAL-SAFE: runs in a fork()ed or vfork()ed child of a threaded process. */
static _Noreturn void exec_or_report(const char *path, char *const argv[], int errfd)
{
	int err;

	(void)execv(path, argv);
	err = errno;
	if (errfd >= 0)
		(void)!write(errfd, &err, sizeof(err));
	_exit(127);
}

/* ASYNC-SIGNAL-SAFE: the middle child of Mercurial <= 5.5's runbgcommand. */
static _Noreturn void hg55_middle(const struct sl_cell *c)
{
	int p[2];
	pid_t pid;

	(void)setsid();
	/* It ran subprocess.Popen, which waits for the exec like this. */
	if (pipe2(p, O_CLOEXEC) < 0)
		_exit(126);
	pid = fork();
	if (pid < 0)
		_exit(126);
	if (pid == 0)
		exec_or_report(c->argv[0], c->argv, p[1]);
	(void)close(p[1]);
	_exit(wait_exec_pipe(p[0]) < 0 ? 127 : 0);
}

static void *hg55_reaper_main(void *arg)
{
	struct sl_cell *c = arg;

	for (;;) {
		sem_wait_intr(&c->reap_go);
		if (c->reap_pid <= 0)
			break;
		c->reap_result = wait_pid(c->reap_pid);
		(void)sem_post(&c->reap_done);
	}
	return NULL;
}

static void bgrun_started(void *data, pid_t pid_or_error,
			  const struct bgrun_failure *failure)
{
	struct sl_cell *c = data;

	c->start_result = pid_or_error < 0 ? pid_or_error : 0;
	(void)sem_post(&c->started);
}

/*
 * With a NULL ret_child the library reaps; wait (untimed) until it has, so
 * that children do not pile up and steal CPU from the next run. Polling is
 * fine here: this is not the measured part.
 */
static void bgrun_settle(struct sl_cell *c)
{
	struct timespec nap = { 0, 20 * 1000 };
	int64_t deadline = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) + 2000000000;

	while (!c->settle_given_up && bgrun__test_control(BGRUN__TEST_REAPER_PENDING) > 0) {
		if (bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr, "spawn-latency: warning: the reaper still has "
				"%d children after 2 s; no longer waiting for them\n",
				bgrun__test_control(BGRUN__TEST_REAPER_PENDING));
			c->settle_given_up = true;
			break;
		}
		(void)nanosleep(&nap, NULL);
	}
}

static void uv_exited(uv_process_t *proc, int64_t exit_status, int term_signal)
{
	uv_close((uv_handle_t *)proc, NULL);
}

/* "( 'cmd' ) &", with the path quoted for sh. */
static char *sh_bg_script(const char *cmd)
{
	size_t len = strlen(cmd), i, j = 0;
	char *s = malloc(4 * len + 16);

	if (s == NULL)
		return NULL;
	s[j++] = '(';
	s[j++] = ' ';
	s[j++] = '\'';
	for (i = 0; i < len; i++) {
		if (cmd[i] == '\'') {
			memcpy(s + j, "'\\''", 4);
			j += 4;
		} else {
			s[j++] = cmd[i];
		}
	}
	memcpy(s + j, "' ) &", 6);
	return s;
}

int sl_cell_new(enum sl_mech mech, bool ensurestart, const char *cmd,
		struct sl_cell **ret_cell, const char **ret_what)
{
	struct sl_cell *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto nomem;
	c->mech = mech;
	c->ensurestart = ensurestart;
	c->argv[0] = strdup(cmd);
	if (c->argv[0] == NULL)
		goto nomem;
	if (mech == SL_HG6_SH_BG || mech == SL_HG6_SH_BG_FORK) {
		c->script = sh_bg_script(cmd);
		if (c->script == NULL)
			goto nomem;
	}
	if (mech == SL_BGRUN_SPAWN && !ensurestart) {
		(void)sem_init(&c->started, 0, 0);
		c->started_ready = true;
	}
	if (mech == SL_HG55_DOUBLE_FORK && !ensurestart) {
		(void)sem_init(&c->reap_go, 0, 0);
		(void)sem_init(&c->reap_done, 0, 0);
		r = pthread_create(&c->reaper, NULL, hg55_reaper_main, c);
		if (r != 0) {
			*ret_what = "pthread_create";
			sl_cell_free(c);
			return -r;
		}
		c->reaper_running = true;
	}
	if (sl_is_part(mech)) {
		r = sl_part_new(mech, c->argv[0], &c->part, ret_what);
		if (r < 0) {
			sl_cell_free(c);
			return r;
		}
	}
	if (mech == SL_UV_SPAWN) {
		r = uv_loop_init(&c->loop);
		if (r < 0) {
			*ret_what = "uv_loop_init";
			sl_cell_free(c);
			return r;
		}
		c->loop_ready = true;
	}
	*ret_cell = c;
	return 0;

nomem:
	sl_cell_free(c);
	*ret_what = "malloc";
	return -ENOMEM;
}

void sl_cell_free(struct sl_cell *c)
{
	if (c == NULL)
		return;
	if (c->reaper_running) {
		c->reap_pid = 0;
		(void)sem_post(&c->reap_go);
		(void)pthread_join(c->reaper, NULL);
	}
	if (c->mech == SL_HG55_DOUBLE_FORK && !c->ensurestart) {
		(void)sem_destroy(&c->reap_go);
		(void)sem_destroy(&c->reap_done);
	}
	if (c->started_ready)
		(void)sem_destroy(&c->started);
	if (c->loop_ready) {
		(void)uv_run(&c->loop, UV_RUN_DEFAULT);
		(void)uv_loop_close(&c->loop);
	}
	sl_part_free(c->part);
	free(c->script);
	free(c->argv[0]);
	free(c);
}

/*
 * The caller's heap: one private anonymous mapping, grown with mremap() and
 * touched one byte per 4 KiB page, so every page is present and has its own
 * page table entry for fork() to copy (unless --thp).
 */
int sl_heap_grow(struct sl_heap *h, size_t len, bool thp)
{
	void *p;
	size_t off;

	if (len <= h->len)
		return 0;
	if (h->base == NULL)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		p = mremap(h->base, h->len, len, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return -errno;
	h->base = p;
	/* Not fatal: a kernel without THP has only small pages anyway. */
	(void)madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#ifdef MADV_POPULATE_WRITE
	/*
	 * Faulting the new pages in with one call (Linux >= 5.14) is several
	 * times faster than one fault per page on virtual machines with
	 * costly faults; the touch loop below then only confirms each page
	 * (and does all the work on older kernels, where this fails).
	 */
	(void)madvise((char *)p + h->len, len - h->len, MADV_POPULATE_WRITE);
#endif
	for (off = h->len; off < len; off += 4096)
		((volatile char *)p)[off] = 1;
	h->len = len;
	return 0;
}

long sl_anon_huge_mb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	char line[256];
	long kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	(void)fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

void sl_heap_free(struct sl_heap *h)
{
	if (h->base != NULL)
		(void)munmap(h->base, h->len);
	h->base = NULL;
	h->len = 0;
}

static int run_bgrun(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	int64_t t0, t1;
	int r;

	o.argv = (const char *const *)c->argv;
	if (!c->ensurestart) {
		o.ensurestart = false;
		o.on_start = bgrun_started;
		o.on_start_data = c;
	}
	*ret_what = "bgrun_spawn";
	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	r = bgrun_spawn(&o, NULL);
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	if (r < 0)
		return r;
	if (!c->ensurestart) {
		sem_wait_intr(&c->started);
		if (c->start_result < 0) {
			*ret_what = "bgrun_spawn (start callback)";
			return c->start_result;
		}
	}
	bgrun_settle(c);
	*ret_ns = t1 - t0;
	return 0;
}

/*
 * posix_spawn with nothing else (the floor), or with POSIX_SPAWN_SETSID
 * alone: the floor for a launch in a new session, as every detached
 * launch is (setsid() moves the child to a new scheduler autogroup, which
 * a loaded machine makes wait for a CPU while the caller waits for it).
 */
static int run_posix_spawn(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	posix_spawnattr_t attr, *a = NULL;
	int64_t t0, t1;
	pid_t pid;
	int r;

	*ret_what = "posix_spawn";
	if (c->mech == SL_POSIX_SPAWN_SETSID) {
		r = posix_spawnattr_init(&attr);
		if (r == 0)
			r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
		if (r != 0)
			return -r;
		a = &attr;
	}
	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	r = posix_spawn(&pid, c->argv[0], NULL, a, c->argv, environ);
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	if (a != NULL)
		(void)posix_spawnattr_destroy(a);
	if (r != 0)
		return -r;
	r = wait_pid(pid);
	if (r < 0) {
		*ret_what = "waitpid";
		return r;
	}
	*ret_ns = t1 - t0;
	return 0;
}

/*
 * fork_exec and the hg6_sh_bg pair: a child that execs (after setsid() for
 * hg6_sh_bg*, which is Popen(start_new_session=True)); with ensurestart
 * the parent waits on a close-on-exec pipe for the exec, as Popen does.
 * hg6_sh_bg makes that child with vfork(), as Python >= 3.10's
 * _posixsubprocess does when there is no preexec_fn (Debian 12's 3.11):
 * the caller's heap is not copied, so what is left is the shell and its
 * subshell. hg6_sh_bg_fork and fork_exec use fork(), as Python <= 3.9
 * did: the copy of the page tables grows with the heap.
 */
static int run_fork(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	bool sh = c->mech == SL_HG6_SH_BG || c->mech == SL_HG6_SH_BG_FORK;
	bool use_vfork = c->mech == SL_HG6_SH_BG;
	bool use_pipe = sh || c->ensurestart;
	char *const sh_argv[] = { "sh", "-c", c->script, NULL };
	int64_t t0, t1;
	int p[2] = { -1, -1 };
	pid_t pid;
	int r, status;

	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	if (use_pipe && pipe2(p, O_CLOEXEC) < 0) {
		*ret_what = "pipe2";
		return -errno;
	}
	/* The vfork child only calls setsid, execv, write and _exit. */
	pid = use_vfork ? vfork() : fork();
	if (pid < 0) {
		r = -errno;
		if (use_pipe) {
			(void)close(p[0]);
			(void)close(p[1]);
		}
		*ret_what = "fork";
		return r;
	}
	if (pid == 0) {
		if (sh) {
			(void)setsid();
			exec_or_report("/bin/sh", sh_argv, p[1]);
		}
		exec_or_report(c->argv[0], c->argv, p[1]);
	}
	r = 0;
	if (use_pipe) {
		(void)close(p[1]);
		r = wait_exec_pipe(p[0]);
		(void)close(p[0]);
	}
	status = 0;
	if (r == 0 && sh && c->ensurestart)
		status = wait_pid(pid); /* Mercurial 6 waits for the shell */
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);

	if (!(sh && c->ensurestart))
		status = wait_pid(pid);
	if (sh)
		reap_orphans();
	*ret_what = sh ? "sh -c '( cmd ) &'" : "fork+exec";
	if (r < 0)
		return r;
	if (status < 0) {
		*ret_what = "waitpid";
		return status;
	}
	*ret_ns = t1 - t0;
	return 0;
}

static int run_hg55(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	int64_t t0, t1;
	pid_t pid;
	int status = 0;

	*ret_what = "fork";
	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		hg55_middle(c);
	if (c->ensurestart)
		status = wait_pid(pid);
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);

	if (!c->ensurestart) {
		c->reap_pid = pid;
		(void)sem_post(&c->reap_go);
		sem_wait_intr(&c->reap_done);
		status = c->reap_result;
	}
	reap_orphans();
	if (status < 0) {
		*ret_what = "waitpid";
		return status;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		*ret_what = "double fork (middle child failed)";
		return -ENOEXEC;
	}
	*ret_ns = t1 - t0;
	return 0;
}

static int run_uv(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	uv_process_options_t o;
	int64_t t0, t1;
	int r;

	memset(&o, 0, sizeof(o));
	o.file = c->argv[0];
	o.args = c->argv;
	o.flags = UV_PROCESS_DETACHED;
	o.exit_cb = uv_exited;
	*ret_what = "uv_spawn";
	t0 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	r = uv_spawn(&c->loop, &c->proc, &o);
	t1 = bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC);
	if (r < 0) {
		/* The handle is initialised even on failure. */
		uv_close((uv_handle_t *)&c->proc, NULL);
		(void)uv_run(&c->loop, UV_RUN_DEFAULT);
		return r;
	}
	/* Returns once exit_cb has closed the handle. */
	(void)uv_run(&c->loop, UV_RUN_DEFAULT);
	*ret_ns = t1 - t0;
	return 0;
}

int sl_cell_run(struct sl_cell *c, int64_t *ret_ns, const char **ret_what)
{
	switch (c->mech) {
	case SL_BGRUN_SPAWN:
		return run_bgrun(c, ret_ns, ret_what);
	case SL_POSIX_SPAWN:
	case SL_POSIX_SPAWN_SETSID:
		return run_posix_spawn(c, ret_ns, ret_what);
	case SL_FORK_EXEC:
	case SL_HG6_SH_BG:
	case SL_HG6_SH_BG_FORK:
		return run_fork(c, ret_ns, ret_what);
	case SL_HG55_DOUBLE_FORK:
		return run_hg55(c, ret_ns, ret_what);
	case SL_UV_SPAWN:
		return run_uv(c, ret_ns, ret_what);
	case SL_PART_SIGNALS:
	case SL_PART_NULL_OPEN:
	case SL_PART_NULL_DUP:
	case SL_PART_CLOSEFROM:
	case SL_PART_PIDFD:
		return sl_part_run(c->part, ret_ns, ret_what);
	case SL_NMECH:
		break;
	}
	*ret_what = "unknown mechanism";
	return -EINVAL;
}
