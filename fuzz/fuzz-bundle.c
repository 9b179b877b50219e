/* SPDX-License-Identifier: MIT */
/* fuzz-bundle.c: libFuzzer target for the stream clone bundle reader (v1 and v2) and the store path encoding. */

/*
 * Each input is read twice, from memory in one piece and from a memfd
 * through a 512-byte buffer (the path of a regular-file bundle: pread,
 * refills, compaction; for a v2 bundle the payload's frames cut
 * differently), and both readings must agree on every entry and on the
 * error and its offset. Every accepted name must encode to a relative
 * store path of printable ASCII ("~xx" escapes) without an empty, "." or ".." component:
 * the property that keeps a clone inside its directory.
 */

#include "clone/clone-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The properties of an encoded store path. */
static void check_encoded(const char *enc, size_t len)
{
	const char *p = enc, *end = enc + len;

	assert(len > 0 && enc[0] != '/');
	assert(strlen(enc) == len);
	for (size_t i = 0; i < len; i++)
		assert(enc[i] >= 0x20 && enc[i] <= 0x7e &&
		       strchr("\\:*?\"<>|", enc[i]) == NULL);
	while (p <= end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = (size_t)((slash != NULL ? slash : end) - p);

		assert(n > 0);
		assert(!(n == 1 && p[0] == '.'));
		assert(!(n == 2 && p[0] == '.' && p[1] == '.'));
		if (slash == NULL)
			break;
		p = slash + 1;
	}
	/* Short enough for any file system, or hashed. */
	assert(len <= 120 || strncmp(enc, "dh/", 3) == 0);
}

/* One entry's name: decodedir, then both encodings. */
static void encode(const char *name, size_t len)
{
	char *path, *enc;
	size_t path_len, enc_len;

	if (bgrun__decodedir(name, len, &path, &path_len) < 0)
		return;
	for (int dot = 0; dot < 2; dot++) {
		if (bgrun__hgpath_encode(path, path_len, dot, &enc, &enc_len) < 0)
			continue;
		if (dot)
			check_encoded(enc, enc_len);
		free(enc);
	}
	free(path);
}

/* Reads the whole bundle; returns its error (0: valid). */
static int read_bundle(struct bgrun__bundle *b, bool first, uint64_t *ret_sum)
{
	struct bgrun__entry e;
	const void *p;
	size_t n;
	uint64_t sum = 0;
	int r;

	r = bgrun__bundle_header(b);
	while (r == 0 && (r = bgrun__bundle_next(b, &e)) > 0) {
		uint64_t got = 0;

		if (first)
			encode(e.name, e.name_len);
		while ((r = bgrun__bundle_data(b, 1000, &p, &n)) > 0) {
			assert(n > 0 && n <= 1000);
			got += n;
		}
		if (r < 0)
			break;
		assert(got == e.size);
		sum += got;
	}
	if (r == 0)
		assert(sum == b->byte_count && b->files_seen == b->file_count);
	*ret_sum = sum;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bgrun__bundle a, b;
	uint64_t sum_a, sum_b;
	int ra, rb, fd;

	bgrun__bundle_open_mem(&a, data, size);
	ra = read_bundle(&a, true, &sum_a);

	fd = memfd_create("bundle", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if ((size > 0 && write(fd, data, size) != (ssize_t)size) ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	if (bgrun__bundle_open_fd(&b, fd, 512) < 0)
		abort();
	rb = read_bundle(&b, false, &sum_b);
	/* Two readings of the same bytes agree. */
	assert(ra == rb && sum_a == sum_b);
	if (ra < 0) {
		assert(a.err_offset == b.err_offset);
		assert(strcmp(a.err, b.err) == 0);
		assert(memchr(a.err, '\n', strlen(a.err)) == NULL);
	}
	bgrun__bundle_close(&a);
	bgrun__bundle_close(&b);
	(void)close(fd);
	return 0;
}
