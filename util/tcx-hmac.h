/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-256 (FIPS 180-2) and HMAC-SHA-256 (RFC 2104), libc only: the agent's
 * and the recorder's challenge-response (protocol/tmsg-auth.c) needs them,
 * and the agent may link nothing beyond libc here.
 */
#ifndef TCX_HMAC_H
#define TCX_HMAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCX_SHA256_LEN		32
#define TCX_SHA256_BLOCK	64

/**
 * struct tcx_sha256 - a SHA-256 computation in progress
 * @h:     the chaining state
 * @bytes: bytes hashed so far
 * @buf:   the block being filled
 * @used:  bytes of @buf filled
 */
struct tcx_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t buf[TCX_SHA256_BLOCK];
	size_t used;
};

/**
 * tcx_sha256_init - start a SHA-256 computation
 * @c: the state
 */
void tcx_sha256_init(struct tcx_sha256 *c);

/**
 * tcx_sha256_update - hash @len more bytes
 * @c:    the state
 * @data: the bytes (may be NULL when @len is 0)
 * @len:  how many
 */
void tcx_sha256_update(struct tcx_sha256 *c, const void *data, size_t len);

/**
 * tcx_sha256_final - finish: the digest into @out, then wipe @c
 * @c:   the state
 * @out: TCX_SHA256_LEN bytes
 */
void tcx_sha256_final(struct tcx_sha256 *c, uint8_t out[TCX_SHA256_LEN]);

/**
 * tcx_sha256 - the SHA-256 digest of @len bytes
 * @data: the bytes
 * @len:  how many
 * @out:  TCX_SHA256_LEN bytes
 */
void tcx_sha256(const void *data, size_t len, uint8_t out[TCX_SHA256_LEN]);

/**
 * struct tcx_hmac - an HMAC-SHA-256 computation in progress
 * @inner: the hash of (key ^ ipad) and the message so far
 * @outer: the hash of (key ^ opad), finished by tcx_hmac_final()
 */
struct tcx_hmac {
	struct tcx_sha256 inner;
	struct tcx_sha256 outer;
};

/**
 * tcx_hmac_init - start an HMAC-SHA-256 with @key (any length; longer
 * than a block it is hashed first, as RFC 2104 says)
 * @h:       the state
 * @key:     the key
 * @key_len: its length
 */
void tcx_hmac_init(struct tcx_hmac *h, const void *key, size_t key_len);

/**
 * tcx_hmac_update - authenticate @len more bytes
 * @h:    the state
 * @data: the bytes
 * @len:  how many
 */
void tcx_hmac_update(struct tcx_hmac *h, const void *data, size_t len);

/**
 * tcx_hmac_final - finish: the MAC into @out, then wipe @h
 * @h:   the state
 * @out: TCX_SHA256_LEN bytes
 */
void tcx_hmac_final(struct tcx_hmac *h, uint8_t out[TCX_SHA256_LEN]);

/**
 * tcx_hmac_sha256 - the HMAC-SHA-256 of @len bytes under @key
 * @key:     the key
 * @key_len: its length
 * @data:    the message
 * @len:     its length
 * @out:     TCX_SHA256_LEN bytes
 */
void tcx_hmac_sha256(const void *key, size_t key_len, const void *data,
		     size_t len, uint8_t out[TCX_SHA256_LEN]);

/**
 * tcx_mem_equal - compare @len bytes in time that does not depend on
 * their contents (for MACs and tokens)
 * @a: the first buffer
 * @b: the second
 * @len: bytes to compare
 *
 * Returns true if they are equal.
 */
bool tcx_mem_equal(const void *a, const void *b, size_t len);

#endif /* TCX_HMAC_H */
