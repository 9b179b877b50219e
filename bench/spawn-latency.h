/* SPDX-License-Identifier: MIT */
/* spawn-latency.h: the caller's heap and the launch mechanisms that bench/spawn-latency times. */

#ifndef SPAWN_LATENCY_H
#define SPAWN_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mechanisms, in the order they are measured and printed. */
enum sl_mech {
	SL_BGRUN_SPAWN = 0,
	SL_POSIX_SPAWN,
	SL_POSIX_SPAWN_SETSID, /* the same, the child in a new session */
	SL_FORK_EXEC,
	SL_HG55_DOUBLE_FORK,
	SL_HG6_SH_BG,      /* hg 6 on a Python that vforks (>= 3.10, Debian 12's 3.11) */
	SL_HG6_SH_BG_FORK, /* hg 6 on a Python that forks (<= 3.9) */
	SL_UV_SPAWN,
	/*
	 * --parts only: posix_spawn with the setsid floor and what the
	 * library adds to it, one piece at a time (spawn-latency-parts.c).
	 */
	SL_PART_SIGNALS,
	SL_PART_NULL_OPEN,
	SL_PART_NULL_DUP,
	SL_PART_CLOSEFROM,
	SL_PART_PIDFD,
	SL_NMECH,
};

struct sl_mech_info {
	const char *name; /* as written in the CSV */
	bool has_off;     /* whether ensurestart=off means something */
};

extern const struct sl_mech_info sl_mechs[SL_NMECH];

/* One (mechanism, ensurestart) cell being measured. */
struct sl_cell;

/*
 * Prepares a cell: cmd is the program to launch (borrowed; it must outlive
 * the cell). Returns 0 or -errno; *ret_what names what failed.
 */
int sl_cell_new(enum sl_mech mech, bool ensurestart, const char *cmd,
		struct sl_cell **ret_cell, const char **ret_what);

/*
 * One launch: the timed part goes to *ret_ns; then, untimed, everything it
 * started is reaped so that runs never pile up. Returns 0 or -errno (a
 * command that could not be executed is -ENOEXEC at the least); *ret_what
 * names what failed.
 */
int sl_cell_run(struct sl_cell *cell, int64_t *ret_ns, const char **ret_what);

/* Releases a cell (accepts NULL). */
void sl_cell_free(struct sl_cell *cell);

/* The --parts mechanisms, the cells of which delegate to these. */
struct sl_part;
bool sl_is_part(enum sl_mech mech);
int sl_part_new(enum sl_mech mech, const char *cmd, struct sl_part **ret_part,
		const char **ret_what);
int sl_part_run(struct sl_part *part, int64_t *ret_ns, const char **ret_what);
void sl_part_free(struct sl_part *part);

/*
 * Makes this process the reaper of its orphaned descendants (the double
 * fork and sh & mechanisms leave the command's process behind), so they can
 * be collected between runs. Returns 0 or -errno.
 */
int sl_become_subreaper(void);

/*
 * The caller's heap, one anonymous mapping grown in place or moved
 * (never shrunk), every 4 KiB page touched. thp: MADV_HUGEPAGE instead of
 * MADV_NOHUGEPAGE.
 */
struct sl_heap {
	char *base;
	size_t len;
};

int sl_heap_grow(struct sl_heap *h, size_t len, bool thp); /* 0 or -errno */
void sl_heap_free(struct sl_heap *h);
/* AnonHugePages of this process in MB (what --thp got), or -1. */
long sl_anon_huge_mb(void);

#endif /* SPAWN_LATENCY_H */
