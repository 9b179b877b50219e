/* SPDX-License-Identifier: MIT */
/* bench-sink.c: what sink-bench and forward-bench's --acks share (bench-sink.h). */

#include "bench-sink.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

void bench_make_event(struct bgrun_event *ev, int i)
{
	static const char *const argv[] = { "hg", "pull", "-u",
					    "https://example.org/repo", NULL };

	bgrun_event_init(ev, "commandfinish", "bgrun");
	ev->argv = argv;
	ev->cwd = "/home/user/src/repo";
	ev->pid = 10000 + i;
	ev->supervisor_pid = 9999;
	ev->start_ns = 1700000000000000000 + i;
	ev->end_ns = ev->start_ns + 12345678;
	ev->duration_ns = 12345678;
	ev->exit_code = i % 7 == 0;
	ev->core_dumped = 0;
	ev->result = ev->exit_code ? BGRUN_RESULT_FAILED : BGRUN_RESULT_SUCCESS;
	ev->user_cpu_ns = 4000000;
	ev->sys_cpu_ns = 1000000;
	ev->max_rss_kb = 20480;
	ev->minor_faults = 1200;
	ev->major_faults = 0;
	ev->in_blocks = ev->out_blocks = 0;
	ev->vol_ctxsw = 10;
	ev->invol_ctxsw = 2;
}

int bench_send_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0) {
		ssize_t k = send(fd, data, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		data += k;
		len -= (size_t)k;
	}
	return 0;
}

int bench_cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}
