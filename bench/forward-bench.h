/* SPDX-License-Identifier: MIT */
/* forward-bench.h: what forward-bench.c and forward-acks.c share: the server, the daemons. */

#ifndef FORWARD_BENCH_H
#define FORWARD_BENCH_H

#include "bgrun.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* The options: logsink to run, the server, where the stores go. */
extern const char *logsink, *conninfo, *base_dir;

__attribute__((noreturn)) BGRUN__PRINTF(1, 2)
void die(const char *fmt, ...);
/* CLOCK_MONOTONIC, ns. */
int64_t now_ns(void);
/* A connection to conninfo (or dies). */
PGconn *pg_connect(void);
/* The integer sql gives, or -1 (a table not made yet). */
int64_t pg_int(PGconn *c, const char *sql);

struct daemon {
	struct bgrun_child *child;
	char db[512], sock[300], log[600];
};

/*
 * The daemon of simulated host i (store dir/hI.db, socket dir/hI.sock),
 * forwarding (--forward-host=bench-I, --forward-batch, the --serve-arg
 * options) or not; returns once it listens.
 */
void daemon_start(struct daemon *d, const char *dir, int i, bool fw);
/* SIGTERM, and waits for it. */
void daemon_stop(struct daemon *d);

/* forward-bench --acks (forward-acks.c): rounds, events, clients, window. */
int run_acks(int rounds, long events, int clients, int window);

#endif /* FORWARD_BENCH_H */
