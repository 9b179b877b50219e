/* SPDX-License-Identifier: MIT */
/* test-threads.c: many threads launching at once, every kind of launch. */

#include "test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { N_THREADS = 8, N_LAUNCHES = 200, N_KINDS = 5 };

static struct test_start_rec rec = TEST_START_REC_INIT;

/*
 * Launch i of a thread is of kind i % N_KINDS:
 *   0  ensurestart on, no handle (the library reaps)
 *   1  ensurestart on, handle, waited for
 *   2  ensurestart off, handle, started and waited for
 *   3  ensurestart off, handle freed at once, on_start
 *   4  ensurestart off, no handle, on_start
 */
static void *worker(void *arg)
{
	const char *argv[] = { test_self(), "helper", "exit", "0", NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_child *child;
	int r;

	opts.argv = argv;
	opts.on_start_data = &rec;
	for (int i = 0; i < N_LAUNCHES; i++) {
		int kind = i % N_KINDS;

		opts.ensurestart = kind <= 1;
		opts.on_start = kind >= 3 ? test_start_cb : NULL;
		opts.detach = i % 2 == 0;
		child = NULL;
		r = bgrun_spawn(&opts, kind == 0 || kind == 4 ? NULL : &child);
		if (r < 0)
			FAIL("launch %d of kind %d: %s", i, kind,
			     bgrun_strerror(r));
		if (opts.ensurestart)
			ASSERT_INT(r, >, 0);
		else
			ASSERT_EQ(r, 0);
		switch (kind) {
		case 1:
			test_wait_exit(child, 0);
			break;
		case 2:
			ASSERT_INT(bgrun_child_started(child, NULL), >, 0);
			test_wait_exit(child, 0);
			break;
		}
		bgrun_child_free(child);
	}
	return arg;
}

void test_threads_stress(void)
{
	pthread_t threads[N_THREADS];
	struct test_start_seen seen;
	int fds, kids, expected = 0;

	test_warmup();
	fds = test_count_fds();
	kids = test_count_children(NULL, 0);
	for (int i = 0; i < N_THREADS; i++) {
		int r = pthread_create(&threads[i], NULL, worker, NULL);

		if (r != 0)
			FAIL("pthread_create: %s", strerror(r));
	}
	for (int i = 0; i < N_THREADS; i++)
		ASSERT_EQ(pthread_join(threads[i], NULL), 0);
	bgrun_spawn_flush();
	for (int i = 0; i < N_LAUNCHES; i++)
		expected += i % N_KINDS >= 3;
	expected *= N_THREADS;
	seen = test_start_seen(&rec);
	ASSERT_EQ(seen.calls, expected);
	ASSERT_EQ(seen.successes, expected);
	test_wait_reaped();
	ASSERT_EQ(test_count_children(NULL, 0), kids);
	ASSERT_EQ(test_count_fds(), fds);
}
