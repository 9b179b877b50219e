/* SPDX-License-Identifier: MIT */
/* clone-helper.c: the clone pipeline's internals, driven from test-clone.sh (path encoding, SHA-1, closer, failing closes). */

/*
 * Usage:
 *   clone-helper encode          NUL-separated store paths on stdin; for
 *                                each, writes encodedir, decodedir,
 *                                the dotencode store name and the plain
 *                                hybrid one, each followed by NUL
 *   clone-helper sha1            the hex SHA-1 of stdin
 *   clone-helper closer          the closer pool: every descriptor closed,
 *                                the first failure reported
 *   clone-helper failclose BUNDLE DEST N [CLOSERS WRITERS]
 *                                bgrun_clone whose Nth close fails (EIO),
 *                                with CLOSERS closer threads (default 2)
 *                                and WRITERS writer threads (default: the
 *                                library's), from the first file on;
 *                                prints the error
 *   clone-helper bundle FILE     reads FILE from memory as the fuzz target
 *                                does; prints each entry or the error
 * Exit status 0 when the mode did what it checks, 1 otherwise.
 */

#include "bgrun.h"
#include "bgrun/test-control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *read_all(FILE *f, size_t *ret_len)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);

	while (buf != NULL) {
		size_t n = fread(buf + len, 1, cap - len, f);

		len += n;
		if (n == 0)
			break;
		if (len == cap) {
			char *p = realloc(buf, cap *= 2);

			if (p == NULL)
				free(buf);
			buf = p;
		}
	}
	*ret_len = len;
	return buf;
}

static int put(const char *s, size_t len)
{
	return fwrite(s, 1, len, stdout) == len && putchar('\0') != EOF ? 0 : -1;
}

static int mode_encode(void)
{
	size_t len, n;
	char *in = read_all(stdin, &len), *p, *end, *out;
	int r = 0;

	if (in == NULL)
		return 1;
	for (p = in, end = in + len; p < end && r == 0; p += n + 1) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t out_len;

		n = nul != NULL ? (size_t)(nul - p) : (size_t)(end - p);
		r = bgrun__test_control(BGRUN__TEST_STORE_PATH,
					BGRUN__TEST_PATH_ENCODEDIR, p, n, &out,
					&out_len);
		if (r == 0) {
			r = put(out, out_len);
			free(out);
		}
		if (r == 0 && (r = bgrun__test_control(BGRUN__TEST_STORE_PATH,
						      BGRUN__TEST_PATH_DECODEDIR,
						      p, n, &out, &out_len)) == 0) {
			r = put(out, out_len);
			free(out);
		}
		for (int dot = 1; dot >= 0 && r == 0; dot--) {
			r = bgrun__test_control(
				BGRUN__TEST_STORE_PATH,
				dot ? BGRUN__TEST_PATH_HYBRID
				    : BGRUN__TEST_PATH_HYBRID_NODOT,
				p, n, &out, &out_len);
			if (r == 0) {
				r = put(out, out_len);
				free(out);
			}
		}
	}
	free(in);
	return r == 0 && fflush(stdout) == 0 ? 0 : 1;
}

static int mode_sha1(void)
{
	size_t len;
	char *in = read_all(stdin, &len);
	unsigned char d[20];

	if (in == NULL)
		return 1;
	(void)bgrun__test_control(BGRUN__TEST_SHA1, (const void *)in, len, d);
	for (int i = 0; i < 20; i++)
		printf("%02x", d[i]);
	printf("\n");
	free(in);
	return 0;
}

static int calls, fail_at;

static int failing_close(int fd)
{
	int r = close(fd);

	/* Several threads close (closers, writers): one count for all. */
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) == fail_at && r == 0) {
		errno = EIO;
		return -1;
	}
	return r;
}

/* Submits 200 descriptors to 3 threads with a queue of 4; the 50th fails. */
static int mode_closer(void)
{
	int fds[200], r, first = -1;

	fail_at = 50;
	for (int i = 0; i < 200; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			return 1;
	}
	r = bgrun__test_control(BGRUN__TEST_CLOSER, 3u, (size_t)4,
				failing_close, (const int *)fds, (size_t)200,
				&first);
	if (r != -EIO) {
		printf("closer: finish gave %d, want %d\n", r, -EIO);
		return 1;
	}
	for (int i = 0; i < 200; i++) {
		/* Another descriptor may reuse the number; none is open now. */
		if (fcntl(fds[i], F_GETFD) >= 0) {
			printf("closer: descriptor %d still open\n", fds[i]);
			return 1;
		}
	}
	printf("closer: %d closes, first error seen by submit #%d\n", calls,
	       first);
	return calls == 200 ? 0 : 1;
}

static int mode_failclose(const char *bundle, const char *dest, int n,
			  int closers, int writers)
{
	struct bgrun_clone_opts o = BGRUN_CLONE_OPTS_INIT;
	struct bgrun_clone *c;
	int r;

	if (bgrun_clone_new(&c) < 0)
		return 1;
	fail_at = n;
	o.bundle = bundle;
	o.dest = dest;
	o.close_threads = closers;
	o.write_threads = writers;
	o.close_threshold = 1;
	(void)bgrun__test_control(BGRUN__TEST_CLONE_CLOSE_FN, failing_close);
	r = bgrun_clone(c, &o, NULL);
	printf("%d %s\n", r, bgrun_clone_errmsg(c)[0] != '\0'
				     ? bgrun_clone_errmsg(c) : "(no message)");
	bgrun_clone_close(c);
	return r == -EIO ? 0 : 1;
}

static int mode_bundle(const char *path)
{
	size_t len;
	FILE *f = fopen(path, "rbe");
	char *data = f != NULL ? read_all(f, &len) : NULL;
	int r;

	if (f != NULL)
		(void)fclose(f);
	if (data == NULL)
		return 1;
	r = bgrun__test_control(BGRUN__TEST_BUNDLE_LIST, (const void *)data,
				len, stdout);
	free(data);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "encode") == 0)
		return mode_encode();
	if (argc == 2 && strcmp(argv[1], "sha1") == 0)
		return mode_sha1();
	if (argc == 2 && strcmp(argv[1], "closer") == 0)
		return mode_closer();
	if (argc == 5 && strcmp(argv[1], "failclose") == 0)
		return mode_failclose(argv[2], argv[3], atoi(argv[4]), 2, -1);
	if (argc == 7 && strcmp(argv[1], "failclose") == 0)
		return mode_failclose(argv[2], argv[3], atoi(argv[4]),
				      atoi(argv[5]), atoi(argv[6]));
	if (argc == 3 && strcmp(argv[1], "bundle") == 0)
		return mode_bundle(argv[2]);
	fprintf(stderr, "usage: clone-helper encode|sha1|closer|failclose B D N [C W]|bundle F\n");
	return 2;
}
