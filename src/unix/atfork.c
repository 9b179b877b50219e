/* SPDX-License-Identifier: MIT */
/* atfork.c: the library's fork-safety hooks on POSIX: pthread_atfork handlers for the reaper and the spawner thread. */

#include "platform.h"

#include <pthread.h>

static void atfork_prepare(void)
{
	bgrun__async_atfork(BGRUN__FORK_PREPARE);
	bgrun__reaper_atfork(BGRUN__FORK_PREPARE);
}

static void atfork_parent(void)
{
	bgrun__reaper_atfork(BGRUN__FORK_PARENT);
	bgrun__async_atfork(BGRUN__FORK_PARENT);
}

static void atfork_child(void)
{
	bgrun__reaper_atfork(BGRUN__FORK_CHILD);
	bgrun__async_atfork(BGRUN__FORK_CHILD);
}

static void init(void)
{
	(void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void bgrun__init_once(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)pthread_once(&once, init);
}



