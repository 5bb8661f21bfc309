// SPDX-License-Identifier: GPL-2.0
/*
 * util: SHA-256 against the FIPS 180-2 examples, HMAC-SHA-256 against the
 * seven test cases of RFC 4231, incremental hashing across block edges,
 * and the constant-time comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcx-hmac.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void check_sha(const void *data, size_t len, const char *want)
{
	uint8_t d[TCX_SHA256_LEN];
	char h[2 * TCX_SHA256_LEN + 1];

	tcx_sha256(data, len, d);
	hex(d, sizeof(d), h);
	assert_string_equal(h, want);
}

/* FIPS 180-2 appendix B.1, B.2, B.3; and the empty message. */
static void test_sha256_fips(void **state)
{
	struct tcx_sha256 c;
	uint8_t d[TCX_SHA256_LEN], a[1000];
	char h[2 * TCX_SHA256_LEN + 1];

	check_sha("abc", 3,
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_sha("", 0,
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* one million 'a', in 1000 updates */
	memset(a, 'a', sizeof(a));
	tcx_sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		tcx_sha256_update(&c, a, sizeof(a));
	tcx_sha256_final(&c, d);
	hex(d, sizeof(d), h);
	assert_string_equal(h,
		"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every length up to three blocks, hashed whole and split at every byte. */
static void test_sha256_split(void **state)
{
	uint8_t msg[200], whole[TCX_SHA256_LEN], part[TCX_SHA256_LEN];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	for (size_t len = 0; len <= sizeof(msg); len++) {
		tcx_sha256(msg, len, whole);
		for (size_t cut = 0; cut <= len; cut += 13) {
			struct tcx_sha256 c;

			tcx_sha256_init(&c);
			tcx_sha256_update(&c, msg, cut);
			tcx_sha256_update(&c, NULL, 0);
			tcx_sha256_update(&c, msg + cut, len - cut);
			tcx_sha256_final(&c, part);
			assert_memory_equal(whole, part, sizeof(whole));
		}
	}
	/* 55, 56 and 64 bytes: where the padding needs a second block */
	check_sha("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 55,
		  "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	check_sha("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 56,
		  "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	check_sha("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 64,
		  "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

struct hmac_case {
	const uint8_t *key;
	size_t key_len;
	const char *data;
	size_t data_len;
	const char *mac;	/* hex; case 5 is truncated to 128 bits */
};

/* RFC 4231 section 4, test cases 1 to 7. */
static void test_hmac_rfc4231(void **state)
{
	uint8_t k0b[20], kaa[131], k25[25], dd[50], cd[50], k0c[20];
	static const char t6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char t7[] = "This is a test using a larger than block-size key "
		"and a larger than block-size data. The key needs to be hashed "
		"before being used by the HMAC algorithm.";

	memset(k0b, 0x0b, sizeof(k0b));
	memset(kaa, 0xaa, sizeof(kaa));
	memset(dd, 0xdd, sizeof(dd));
	memset(cd, 0xcd, sizeof(cd));
	memset(k0c, 0x0c, sizeof(k0c));
	for (int i = 0; i < 25; i++)
		k25[i] = (uint8_t)(i + 1);

	const struct hmac_case cases[] = {
		{ k0b, 20, "Hi There", 8,
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ (const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ kaa, 20, (const char *)dd, 50,
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ k25, 25, (const char *)cd, 50,
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ k0c, 20, "Test With Truncation", 20,
		  "a3b6167473100ee06e0c796c2955552b" },
		{ kaa, 131, t6, sizeof(t6) - 1,
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ kaa, 131, t7, sizeof(t7) - 1,
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hmac_case *c = &cases[i];
		uint8_t mac[TCX_SHA256_LEN], mac2[TCX_SHA256_LEN];
		char h[2 * TCX_SHA256_LEN + 1];
		struct tcx_hmac st;

		tcx_hmac_sha256(c->key, c->key_len, c->data, c->data_len, mac);
		hex(mac, sizeof(mac), h);
		h[strlen(c->mac)] = 0;
		assert_string_equal(h, c->mac);
		/* the same, fed in two pieces */
		tcx_hmac_init(&st, c->key, c->key_len);
		tcx_hmac_update(&st, c->data, c->data_len / 3);
		tcx_hmac_update(&st, c->data + c->data_len / 3,
				c->data_len - c->data_len / 3);
		tcx_hmac_final(&st, mac2);
		assert_memory_equal(mac, mac2, sizeof(mac));
	}
}

static void test_mem_equal(void **state)
{
	uint8_t a[32], b[32];

	memset(a, 0x5a, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(tcx_mem_equal(a, b, sizeof(a)));
	assert_true(tcx_mem_equal(a, b, 0));
	for (size_t i = 0; i < sizeof(a); i++) {
		b[i] ^= 0x01;
		assert_false(tcx_mem_equal(a, b, sizeof(a)));
		b[i] ^= 0x81;
		assert_false(tcx_mem_equal(a, b, sizeof(a)));
		b[i] ^= 0x80;
	}
	assert_true(tcx_mem_equal(a, b, sizeof(a)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_fips),
		cmocka_unit_test(test_sha256_split),
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_mem_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
