/* SPDX-License-Identifier: MIT */
/* fork.c: fork hooks for the store's library, which has threads of its own but not libbgrun's atfork.c. */

#include "platform.h"

#include <pthread.h>

int bgrun__fork_hooks(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void))
{
	return -pthread_atfork(prepare, parent, child);
}
