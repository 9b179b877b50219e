/* SPDX-License-Identifier: MIT */
/* sigall.h: the sigset of every signal, for posix_spawn's sigdefault (src/unix/spawn.c; bgrun sends bgrun-start the same set as data, launcher/starter.h). */

#ifndef BGRUN_SIGALL_H
#define BGRUN_SIGALL_H

#include <signal.h>

/*
 * Every signal, including those the C library reserves for itself (glibc:
 * SIGCANCEL and SIGSETXID, 32 and 33; musl: 32 to 34), which sigfillset()
 * and sigaddset() leave out. Why they matter: posix_spawn, glibc's and
 * musl's alike, blocks all signals around clone, and its child sets each
 * reserved signal that is blocked and not in the sigdefault set to
 * SIG_IGN; an ignored disposition survives execve, so the program would
 * start with them ignored. With their bits in the set (written directly,
 * sigaddset refuses them) the child resets them to SIG_DFL like every
 * other signal.
 */
static inline void bgrun__sigset_all(sigset_t *set)
{
	unsigned long *word = (unsigned long *)set;
	const unsigned bits = 8 * sizeof(*word);

	(void)sigfillset(set);
	for (int sig = 1; sig < SIGRTMIN; sig++)
		if (sigismember(set, sig) != 1 &&
		    (unsigned)(sig - 1) / bits < sizeof(*set) / sizeof(*word))
			word[(sig - 1) / bits] |= 1UL << ((sig - 1) % bits);
}

#endif /* BGRUN_SIGALL_H */
