/* SPDX-License-Identifier: MIT */
/* bench-sink.h: what sink-bench and forward-bench's --acks share: the event they send, a whole send, the sort of latencies. */

#ifndef BENCH_SINK_H
#define BENCH_SINK_H

#include "bgrun/event.h"

#include <stddef.h>
#include <stdint.h>

/* The event a bgrun supervisor records for a finished command, the i-th. */
void bench_make_event(struct bgrun_event *ev, int i);

/* All of data on the socket fd (EINTR retried): 0, or -errno. */
int bench_send_all(int fd, const uint8_t *data, size_t len);

/* qsort's comparison of int64_t. */
int bench_cmp64(const void *a, const void *b);

#endif /* BENCH_SINK_H */
