/* SPDX-License-Identifier: MIT */
/* util.c: small helpers shared by the library: clocks, threads, messages. */

#include "common/common.h"
#include "platform.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t bgrun__now_ns(int clock_id)
{
	struct timespec ts;

	(void)clock_gettime(clock_id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The library's threads must never run the caller's signal handlers nor
 * take a process-directed signal meant for the caller's threads, so they
 * start with every signal blocked. The creating thread's mask is restored
 * before returning.
 */
static int thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg,
			int detach)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int r;

	(void)sigfillset(&all);
	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	(void)pthread_attr_setdetachstate(&attr, detach);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(ret_thread, &attr, fn, arg);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	return -r;
}

int bgrun__thread_start(pthread_t *ret_thread, void *(*fn)(void *), void *arg)
{
	return thread_start(ret_thread, fn, arg, PTHREAD_CREATE_DETACHED);
}

int bgrun__thread_start_joinable(pthread_t *ret_thread, void *(*fn)(void *),
				 void *arg)
{
	return thread_start(ret_thread, fn, arg, PTHREAD_CREATE_JOINABLE);
}

int bgrun__user_path(const char *xdg_var, const char *home_dir,
		     const char *leaf, char **ret_path)
{
	const char *xdg = getenv(xdg_var), *home = getenv("HOME");
	char *path;
	int n;

	if (xdg != NULL && xdg[0] == '/')
		n = asprintf(&path, "%s/%s", xdg, leaf);
	else if (home != NULL && home[0] != '\0')
		n = asprintf(&path, "%s/%s/%s", home, home_dir, leaf);
	else
		return -ENOENT;
	if (n < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}
