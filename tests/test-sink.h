/* SPDX-License-Identifier: MIT */
/* test-sink.h: sink-tests' runner, cases and helpers (daemons, raw connections, counting rows). */

#ifndef BGRUN_TEST_SINK_H
#define BGRUN_TEST_SINK_H

#include "bgrun.h"
#include "test.h"
#include "bgrun/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* The logsink program under test (argv[2]). */
extern const char *t_logsink;

/* A new directory under /tmp (short: socket paths must fit), removed at exit. */
const char *t_tmpdir(void);
/* dir/name, valid until exit. */
const char *t_path(const char *dir, const char *name);
int64_t t_now_ms(void);

/* A daemon under test, started as `logsink --db DB serve --socket SOCK
 * --ready-fd=3 ARGS...`, its stderr in LOG. */
struct t_daemon {
	struct bgrun_child *child;
	pid_t pid;
	char db[256], sock[108], log[256];
};
/* Starts it and waits until it listens; FAIL if it does not. */
void t_daemon_start(struct t_daemon *d, const char *db, const char *sock,
		    const char *const *args);
/* Like t_daemon_start, but expects a refusal: its exit code, its message. */
int t_daemon_refused(const char *db, const char *sock, const char *const *args,
		     char *msg, size_t size);
/* A daemon to SIGKILL at exit if the case fails before it stops it. */
void t_track(pid_t pid);
/* Whether pid runs (a zombie does not). */
bool t_pid_alive(pid_t pid);
/* Once it is known gone (its pid may then be reused). */
void t_untrack(pid_t pid);
/* Sends sig (unless 0) and waits: the exit code, or 128 + signal. */
int t_daemon_stop(struct t_daemon *d, int sig);

/* A blocking connection to sock (FAIL if none). */
int t_connect(const char *sock);
void t_send(int fd, const void *data, size_t len);
/* Reads one frame within timeout_ms: 1 (decoded into *m), 0 on EOF. */
int t_read_frame(int fd, int timeout_ms, struct bgrun_wire_msg *m);

/* An event with a fresh id: commandfinish from source "test", exit code i. */
void t_event(struct bgrun_event *ev, int64_t i);

/* The integer the query gives on db (read only; -1 if the table is missing). */
int64_t t_db_int(const char *db, const char *sql);
/* Polls t_db_int(db, sql) until it equals want or timeout_ms passes. */
int64_t t_db_wait(const char *db, const char *sql, int64_t want, int timeout_ms);
/* Whether the row with this id exists exactly once. */
bool t_db_has(const char *db, const char *id);
/* How many of the n ids are in db exactly once (one connection for all). */
size_t t_db_present(const char *db, const char (*ids)[BGRUN_EVENT_ID_MAX + 1],
		    size_t n);
/* The number of files in dir whose names end with suffix. */
int t_count_files(const char *dir, const char *suffix);
/* Polls t_count_files until it is want or timeout_ms passes. */
int t_wait_files(const char *dir, const char *suffix, int want, int timeout_ms);

/* The cases: the SINK lines of tests/cases.def. */
#define UNIT(name)
#define STORE(name)
#define SINK(name) void case_##name(void);
#include "cases.def"
#undef UNIT
#undef STORE
#undef SINK

#endif /* BGRUN_TEST_SINK_H */
