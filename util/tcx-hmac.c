// SPDX-License-Identifier: GPL-2.0
/*
 * SHA-256 after FIPS 180-2 section 6.2, HMAC after RFC 2104. Written for
 * clarity, not speed: they hash a few hundred bytes per session.
 */
#include <string.h>

#include "tcx-hmac.h"

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned int n)
{
	return x >> n | x << (32 - n);
}

static void compress(uint32_t h[8], const uint8_t blk[TCX_SHA256_BLOCK])
{
	uint32_t w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 |
		       (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + k256[i] + w[i];
		uint32_t s0 = ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);

		memmove(v + 1, v, 7 * sizeof(*v));
		v[4] += t1;
		v[0] = t1 + s0 + maj;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void tcx_sha256_init(struct tcx_sha256 *c)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(c->h, iv, sizeof(iv));
	c->bytes = 0;
	c->used = 0;
}

void tcx_sha256_update(struct tcx_sha256 *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->bytes += len;
	while (len) {
		size_t n = TCX_SHA256_BLOCK - c->used;

		if (n > len)
			n = len;
		memcpy(c->buf + c->used, p, n);
		c->used += n;
		p += n;
		len -= n;
		if (c->used == TCX_SHA256_BLOCK) {
			compress(c->h, c->buf);
			c->used = 0;
		}
	}
}

void tcx_sha256_final(struct tcx_sha256 *c, uint8_t out[TCX_SHA256_LEN])
{
	uint64_t bits = c->bytes * 8;

	/* 0x80, zeros up to 56 mod 64, the length in bits, big-endian */
	c->buf[c->used++] = 0x80;
	if (c->used > TCX_SHA256_BLOCK - 8) {
		memset(c->buf + c->used, 0, TCX_SHA256_BLOCK - c->used);
		compress(c->h, c->buf);
		c->used = 0;
	}
	memset(c->buf + c->used, 0, TCX_SHA256_BLOCK - 8 - c->used);
	for (int i = 0; i < 8; i++)
		c->buf[TCX_SHA256_BLOCK - 1 - i] = (uint8_t)(bits >> (8 * i));
	compress(c->h, c->buf);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
	explicit_bzero(c, sizeof(*c));
}

void tcx_sha256(const void *data, size_t len, uint8_t out[TCX_SHA256_LEN])
{
	struct tcx_sha256 c;

	tcx_sha256_init(&c);
	tcx_sha256_update(&c, data, len);
	tcx_sha256_final(&c, out);
}

void tcx_hmac_init(struct tcx_hmac *h, const void *key, size_t key_len)
{
	uint8_t k[TCX_SHA256_BLOCK] = { 0 };

	if (key_len > TCX_SHA256_BLOCK)
		tcx_sha256(key, key_len, k);
	else if (key_len)
		memcpy(k, key, key_len);
	for (int i = 0; i < TCX_SHA256_BLOCK; i++)
		k[i] ^= 0x36;
	tcx_sha256_init(&h->inner);
	tcx_sha256_update(&h->inner, k, sizeof(k));
	for (int i = 0; i < TCX_SHA256_BLOCK; i++)
		k[i] ^= 0x36 ^ 0x5c;
	tcx_sha256_init(&h->outer);
	tcx_sha256_update(&h->outer, k, sizeof(k));
	explicit_bzero(k, sizeof(k));
}

void tcx_hmac_update(struct tcx_hmac *h, const void *data, size_t len)
{
	tcx_sha256_update(&h->inner, data, len);
}

void tcx_hmac_final(struct tcx_hmac *h, uint8_t out[TCX_SHA256_LEN])
{
	uint8_t ih[TCX_SHA256_LEN];

	tcx_sha256_final(&h->inner, ih);
	tcx_sha256_update(&h->outer, ih, sizeof(ih));
	tcx_sha256_final(&h->outer, out);
	explicit_bzero(ih, sizeof(ih));
	explicit_bzero(h, sizeof(*h));
}

void tcx_hmac_sha256(const void *key, size_t key_len, const void *data,
		     size_t len, uint8_t out[TCX_SHA256_LEN])
{
	struct tcx_hmac h;

	tcx_hmac_init(&h, key, key_len);
	tcx_hmac_update(&h, data, len);
	tcx_hmac_final(&h, out);
}

bool tcx_mem_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t diff = 0;

	for (size_t i = 0; i < len; i++)
		diff |= x[i] ^ y[i];
	return !diff;
}
