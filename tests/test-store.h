/* SPDX-License-Identifier: MIT */
/* test-store.h: store-tests' runner, cases and helpers, shared by its case files. */

#ifndef BGRUN_TEST_STORE_H
#define BGRUN_TEST_STORE_H

#include "bgrun.h"
#include "test.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* store-tests' main: its helper modes (writer, exit), then the case. */
int t_main(int argc, char **argv, const struct t_case *cases, size_t n);

/* The cases: the STORE lines of tests/cases.def. */
#define UNIT(name)
#define STORE(name) void case_##name(void);
#define SINK(name)
#include "cases.def"
#undef UNIT
#undef STORE
#undef SINK

/* Files and directories. */
char *t_tmpdir(void); /* removed at exit */
char *t_path(const char *dir, const char *name);
BGRUN__PRINTF(1, 2)
char *t_printf(const char *fmt, ...);
char *t_read_file(const char *path);
void t_write_file(const char *path, const void *data, size_t len);
int t_count_entries(const char *dir); /* recursive, without . and .. */
mode_t t_umask(void);

/*
 * bgrun_store_new and bgrun_store_open, printing the message to stderr
 * on failure (*ret untouched then).
 */
int t_open(const char *path, unsigned flags, struct bgrun_store **ret);
/*
 * Asserts that opening path fails with error and gives a one-line
 * message: returns it, malloc'd.
 */
char *t_open_error(const char *path, unsigned flags, int error);

/* Direct SQLite access, to look behind the library's back. */
sqlite3 *t_sql_open(const char *path);    /* read-only */
sqlite3 *t_sql_open_rw(const char *path); /* creates */
void t_sql_exec(sqlite3 *db, const char *sql);
/* The first column of the first row; ?1 bound to param if not NULL. */
int64_t t_sql_int(sqlite3 *db, const char *sql, const char *param);
const char *t_sql_text(sqlite3 *db, const char *sql); /* static buffer */
/* json_extract(json, path) as text (static buffer; NULL for null). */
const char *t_json_text(sqlite3 *db, const char *json, const char *path);
/* Checks which columns of the row are SQL NULL: bare or full_event's. */
void t_check_nulls(sqlite3 *db, const char *id, bool bare);

/* Rows collected by t_collect (deep copies). */
#define T_MAX_ROWS 256
struct t_rows {
	size_t n;     /* rows seen (only the first T_MAX_ROWS are kept) */
	int stop_at;  /* t_collect returns 7 at this row number (1-based) */
	struct bgrun_event ev[T_MAX_ROWS];
	size_t argc[T_MAX_ROWS];
	char *stored_result[T_MAX_ROWS];
	char *json[T_MAX_ROWS];
	int64_t recorded_ns[T_MAX_ROWS];
	int64_t time_ns[T_MAX_ROWS];
};
int t_collect(void *data, const struct bgrun_event_row *row);
void t_rows_free(struct t_rows *rows);
/* bgrun_store_get of id into rows (freed first), which must find one. */
void t_get(struct bgrun_store *s, const char *id, struct t_rows *rows);
void check_argv(const char *const *a, const char *const *b);

/*
 * Runs `store-tests exit` with a handle, reads its start time, reaps it:
 * its pid and start time now name no process.
 */
void t_spawn_exited(pid_t *ret_pid, int64_t *ret_start,
		    struct bgrun_status *ret_status);

#endif /* BGRUN_TEST_STORE_H */
