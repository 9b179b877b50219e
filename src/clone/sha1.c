/* SPDX-License-Identifier: MIT */
/* sha1.c: SHA-1 (FIPS 180-4), only for the dh/ names of Mercurial's hashed store paths. */

/*
 * Why our own: the store names hashed paths after the SHA-1 of the path,
 * glibc has no SHA-1, and a dependency on libcrypto or nettle for hashing
 * a few hundred bytes per long path is not worth its weight. This is a
 * plain reading of FIPS 180-4 section 6.1, written for clarity; it is not
 * used for anything that needs collision resistance.
 */

#include "clone-internal.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned int n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* FIPS 180-4 6.1.2: one 512-bit block. */
static void block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = load_be32(p + 4 * i);
	for (i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void bgrun__sha1(const void *data, size_t len, unsigned char out[20])
{
	static const uint32_t init[5] = { 0x67452301, 0xefcdab89, 0x98badcfe,
					  0x10325476, 0xc3d2e1f0 };
	const unsigned char *p = data;
	unsigned char last[128];
	uint64_t bits = (uint64_t)len * 8;
	uint32_t h[5];
	size_t rest, n;
	int i;

	memcpy(h, init, sizeof(h));
	for (; len >= 64; p += 64, len -= 64)
		block(h, p);
	/* FIPS 180-4 5.1.1: a 1 bit, zeros, then the length in bits. */
	rest = len;
	memset(last, 0, sizeof(last));
	memcpy(last, p, rest);
	last[rest] = 0x80;
	n = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		last[n - 1 - i] = (unsigned char)(bits >> (8 * i));
	block(h, last);
	if (n == 128)
		block(h, last + 64);
	for (i = 0; i < 20; i++)
		out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}
