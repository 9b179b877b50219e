/* SPDX-License-Identifier: MIT */
/* store-test.h: what of the store test-control.c reaches, without SQLite's header. */

#ifndef BGRUN_STORE_TEST_H
#define BGRUN_STORE_TEST_H

/*
 * fn, or NULL for none, is called by every store's checkpointer thread
 * inside the part of its checkpoint that a fork() waits for
 * (store-checkpoint.c, "Fork safety"), so that a test can hold the
 * thread there.
 */
void bgrun__store_set_checkpoint_hook(void (*fn)(void));

#endif /* BGRUN_STORE_TEST_H */
