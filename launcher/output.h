/* SPDX-License-Identifier: MIT */
/* output.h: a logged launch's kept output (output.c) and following it (follow.c). */

#ifndef BGRUN_OUTPUT_H
#define BGRUN_OUTPUT_H

#include "cli.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The files a launch keeps its command's output in: path[0] stdout's,
 * path[1] stderr's (NULL: that stream is not kept; the same name twice
 * when merged, one open file), fd[] our descriptors of them, which the
 * spawn borrows (-1 when none, or the merged stderr's).
 */
struct capture {
	char *dir;
	char *path[2];
	int fd[2];
	int64_t max_output; /* bytes; 0: no cap */
	/*
	 * DIR/ID.env, the name for COMMAND's environment (bgrun-start writes
	 * it: start.c, keep_env); NULL with --no-keep-env.
	 */
	char *env_path;
};

void capture_init(struct capture *cap);

/*
 * For the streams c leaves to the log (not redirected, capture not none):
 * creates DIR/ID.log (merged) or ID.out and ID.err in the output directory
 * (bgrun_output_default_dir), mode 0600, and points opts's streams at
 * them. A failure is said in one line and leaves those streams /dev/null:
 * the launch goes on, as it does when the log cannot be written. Unless
 * --no-keep-env, DIR/ID.env too (empty; launch.c fills it), whose failure
 * is said likewise and leaves the environment unkept.
 */
void capture_open(const struct cli *c, const char *id,
		  struct bgrun_spawn_opts *opts, struct capture *cap);

/* Closes our descriptors (once the supervisor has its own). */
void capture_close_fds(struct capture *cap);

/* Closes and removes the files (nothing was launched); paths forgotten. */
void capture_discard(struct capture *cap);

/* Closes and removes the environment's file alone (it was not written). */
void capture_discard_env(struct capture *cap);

void capture_free(struct capture *cap);

/*
 * follow.c. A file being followed: its output goes to out (a descriptor
 * of ours) from offset off on.
 */
struct follow_file {
	const char *path;
	int fd;    /* ours, read-only; -1: not open */
	int out;   /* where its bytes go (1 or 2) */
	off_t off;
	int wd;    /* its inotify watch */
	bool done; /* its last writer has closed it */
	bool out_broken; /* out failed (EPIPE): reading goes on, no copy */
	int64_t dropped; /* bytes the cap dropped before off, when seen */
};

/*
 * Opens the files and watches them with inotify (IN_MODIFY and
 * IN_CLOSE_WRITE) on *ret_ifd: to be done before anything that may make
 * their last writer close them, so that the end cannot be missed.
 * 0, or -errno (said in one line, naming the path).
 */
int follow_open(struct follow_file *f, size_t n, int *ret_ifd);

/*
 * Copies what the files hold past their offsets (skipping what the cap
 * dropped: a hole at the file's start), then, unless done_already, waits
 * until each file's last writer has closed it, copying as it grows; a
 * signal (EINTR) does not stop it. 0, or -errno if inotify failed.
 */
int follow_run(struct follow_file *f, size_t n, int ifd, bool done_already);

void follow_close(struct follow_file *f, size_t n, int ifd);

#endif /* BGRUN_OUTPUT_H */
