/* SPDX-License-Identifier: MIT */
/* spawn-threads.c: library launches from many threads at once, then what is left: descriptors, children, zombies (for tests/stress/stress.sh). */

/*
 * Usage: spawn-threads THREADS LAUNCHES PROGRAM
 * Each of THREADS threads launches PROGRAM (an absolute path, no
 * arguments) LAUNCHES times with bgrun_spawn, alternating a waited handle
 * and a launch the library reaps itself. Once every handle is waited and
 * the library's own children are reaped (polled, with a deadline), prints
 * one line:
 *   spawns N failed F fds_before A fds_after B children C zombies Z
 * and exits 0 if nothing failed, no descriptor was left open and no child
 * is left, else 1.
 */

#include "bgrun.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *program;
static long launches;
static long failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	(void)closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/* Our children (any state) and those of them that are zombies. */
static void count_children(int *ret_children, int *ret_zombies)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int children = 0, zombies = 0;
	pid_t self = getpid();

	while (d != NULL && (de = readdir(d)) != NULL) {
		char path[300], buf[512], *p, state;
		long ppid;
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "re");
		if (f == NULL)
			continue;
		p = fgets(buf, sizeof(buf), f);
		(void)fclose(f);
		if (p == NULL || (p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 1, " %c %ld", &state, &ppid) != 2)
			continue;
		if (ppid != self)
			continue;
		children++;
		zombies += state == 'Z';
	}
	if (d != NULL)
		(void)closedir(d);
	*ret_children = children;
	*ret_zombies = zombies;
}

static void *worker(void *arg)
{
	const char *argv[] = { program, NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	long bad = 0;

	(void)arg;
	o.argv = argv;
	for (long i = 0; i < launches; i++) {
		struct bgrun_child *child = NULL;
		struct bgrun_status st;
		bool waited = i % 2 == 0;

		o.detach = i % 4 < 2;
		if (bgrun_spawn(&o, waited ? &child : NULL) < 0) {
			bad++;
			continue;
		}
		if (waited) {
			if (bgrun_child_wait(child, 30000, &st) < 0 || !st.exited)
				bad++;
			bgrun_child_free(child);
		}
	}
	(void)pthread_mutex_lock(&lock);
	failed += bad;
	(void)pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads, before, after, children = 0, zombies = 0;
	pthread_t *th;
	struct timespec ts;

	if (argc != 4 || (threads = atoi(argv[1])) <= 0 ||
	    (launches = atol(argv[2])) <= 0 || argv[3][0] != '/') {
		(void)fprintf(stderr, "usage: spawn-threads THREADS LAUNCHES /PROGRAM\n");
		return 2;
	}
	program = argv[3];
	th = calloc((size_t)threads, sizeof(*th));
	if (th == NULL)
		return 1;
	/*
	 * One launch of each kind first: what the library keeps for good
	 * (its reaper's descriptors) is not a leak.
	 */
	{
		long n = launches;

		launches = 4;
		(void)worker(NULL);
		launches = n;
		for (int tries = 0; tries < 3000; tries++) {
			count_children(&children, &zombies);
			if (children == 0)
				break;
			ts = (struct timespec){ 0, 10 * 1000 * 1000 };
			(void)nanosleep(&ts, NULL);
		}
	}
	before = count_fds();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < threads; i++)
		(void)pthread_join(th[i], NULL);
	/* The library reaps what it owns as it exits: wait for that, 30 s. */
	for (int tries = 0; tries < 3000; tries++) {
		count_children(&children, &zombies);
		if (children == 0)
			break;
		ts = (struct timespec){ 0, 10 * 1000 * 1000 };
		(void)nanosleep(&ts, NULL);
	}
	after = count_fds();
	(void)printf("spawns %ld failed %ld fds_before %d fds_after %d children %d zombies %d\n",
		     (long)threads * launches, failed, before, after, children,
		     zombies);
	free(th);
	return failed == 0 && after == before && children == 0 ? 0 : 1;
}
