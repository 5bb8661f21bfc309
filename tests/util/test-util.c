// SPDX-License-Identifier: GPL-2.0
/*
 * util: the thread's last error (tcx_fail(), tcx_error()), tcx_parse_uint()
 * and its length-bounded twin, tcx_json_str(), the clock helpers, page
 * buffers faulted in ahead (tcx_pages_alloc(), tcx_mem_populate()).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "tcx-util.h"

#define SENTINEL 4242ul

static int parse(const char *s, unsigned long max, unsigned long *v)
{
	*v = SENTINEL;
	return tcx_parse_uint(s, max, v);
}

static void test_parse_ok(void **state)
{
	unsigned long v;

	assert_int_equal(parse("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse("7", 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse("10", 10, &v), 0);	/* max itself */
	assert_int_equal(v, 10);
	assert_int_equal(parse("65535", 65535, &v), 0);
	assert_int_equal(v, 65535);
	/* leading zeros: decimal, not octal */
	assert_int_equal(parse("010", 100, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(parse("0000000000000000000000007", 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse("4294967295", 0xffffffffUL, &v), 0);
	assert_int_equal(v, 0xffffffffUL);
}

static void test_parse_bad(void **state)
{
	static const char *const bad[] = {
		"", "+1", "-1", "-0", "12x", "x12", " 1", "1 ", "1\n", "0x10",
		"1.5", "1e3", "1,2", "\t7",
	};
	unsigned long v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], ULONG_MAX, &v), -EINVAL);
		assert_int_equal(v, SENTINEL);
	}
	assert_int_equal(parse(NULL, ULONG_MAX, &v), -EINVAL);
	assert_int_equal(v, SENTINEL);
}

static void test_parse_range(void **state)
{
	char buf[32];
	unsigned long v;

	assert_int_equal(parse("11", 10, &v), -ERANGE);
	assert_int_equal(v, SENTINEL);
	assert_int_equal(parse("65536", 65535, &v), -ERANGE);
	assert_int_equal(parse("1", 0, &v), -ERANGE);
	assert_int_equal(parse("0", 0, &v), 0);
	assert_int_equal(v, 0);

	/* ULONG_MAX fits; one more does not */
	snprintf(buf, sizeof(buf), "%lu", ULONG_MAX);
	assert_int_equal(parse(buf, ULONG_MAX, &v), 0);
	assert_true(v == ULONG_MAX);
	buf[strlen(buf) - 1]++;
	assert_int_equal(parse(buf, ULONG_MAX, &v), -ERANGE);
	assert_int_equal(v, SENTINEL);
	assert_int_equal(parse("99999999999999999999999999", ULONG_MAX, &v), -ERANGE);
	/* too big and not a number: not a number */
	assert_int_equal(parse("99999999999999999999999999x", ULONG_MAX, &v), -EINVAL);
}

static void test_parse_n(void **state)
{
	unsigned long v = SENTINEL;

	/* a field of "12:34", not NUL-terminated where it ends */
	assert_int_equal(tcx_parse_uintn("12:34", 2, 100, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(tcx_parse_uintn("12:34", 3, 100, &v), -EINVAL);
	assert_int_equal(tcx_parse_uintn("12:34" + 3, 2, 100, &v), 0);
	assert_int_equal(v, 34);
	v = SENTINEL;
	assert_int_equal(tcx_parse_uintn("12", 0, 100, &v), -EINVAL);
	assert_int_equal(tcx_parse_uintn("123", 3, 100, &v), -ERANGE);
	assert_int_equal(tcx_parse_uintn("+1", 2, 100, &v), -EINVAL);
	/* an embedded NUL within @n is not a digit */
	assert_int_equal(tcx_parse_uintn("1\0002", 3, 100, &v), -EINVAL);
	assert_int_equal(v, SENTINEL);
}

/* What tcx_json_str() writes for @s. */
static char *json(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	tcx_json_str(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect_json(const char *s, const char *want)
{
	char *got = json(s);

	assert_string_equal(got, want);
	free(got);
}

/* Sizes: K, M, G are powers of 1024; the unit's "B"/"iB" is optional. */
static void test_parse_size(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "16K", 16384 }, { "16k", 16384 },
		{ "64M", 64ull << 20 }, { "64MiB", 64ull << 20 }, { "64MB", 64ull << 20 },
		{ "2G", 2ull << 30 }, { "17179869183G", 17179869183ull << 30 },
	};
	static const char *const bad[] = {
		"", "K", "-1", " 1", "1 ", "1T", "1KK", "1Ki", "1iB", "0x10", "1.5M", "1B",
	};
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(tcx_parse_size(ok[i].s, UINT64_MAX, &v), 0);
		assert_true(v == ok[i].v);
	}
	v = 7;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (tcx_parse_size(bad[i], UINT64_MAX, &v) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_true(v == 7);
	}
	assert_int_equal(tcx_parse_size("4G", 1ull << 32, &v), 0);
	assert_int_equal(tcx_parse_size("4097M", 1ull << 32, &v), -ERANGE);
	assert_int_equal(tcx_parse_size("17179869184G", UINT64_MAX, &v), -ERANGE);
	assert_int_equal(tcx_parse_size("99999999999999999999", UINT64_MAX, &v), -ERANGE);
}

static void test_json(void **state)
{
	expect_json("", "\"\"");
	expect_json(NULL, "\"\"");
	expect_json("plain text", "\"plain text\"");
	expect_json("a\"b", "\"a\\\"b\"");
	expect_json("a\\b", "\"a\\\\b\"");
	expect_json("/", "\"/\"");
	expect_json("tab\there", "\"tab\\u0009here\"");
	expect_json("l1\nl2\r", "\"l1\\u000al2\\u000d\"");
	expect_json("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
	expect_json(" ~", "\" ~\"");
	/* UTF-8 passes through */
	expect_json("d\xc3\xa9j\xc3\xa0", "\"d\xc3\xa9j\xc3\xa0\"");
}

static void test_clock(void **state)
{
	uint64_t a = tcx_now_ns(), b = tcx_now_ns();
	struct timespec ts;
	uint64_t raw;

	assert_true(a > 0);
	assert_true(b >= a);
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	raw = tcx_clock_ns(CLOCK_MONOTONIC_RAW);
	assert_true(raw >= (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	assert_int_equal(tcx_clock_ns((clockid_t)-42), 0);	/* no such clock */
}

/* The return value is @err, whatever it is; the message is formatted. */
static void test_fail_return(void **state)
{
	assert_int_equal(tcx_fail(-EINVAL, "bad %s %d", "thing", 42), -EINVAL);
	assert_string_equal(tcx_error(), "bad thing 42");
	assert_int_equal(tcx_fail(-ENOSPC, "full"), -ENOSPC);
	assert_string_equal(tcx_error(), "full");
	assert_int_equal(tcx_fail(0, "zero"), 0);
	assert_int_equal(tcx_fail(7, "a count"), 7);
	assert_string_equal(tcx_error(), "a count");
}

/* Adding context: tcx_error() as an argument of the next tcx_fail(). */
static void test_fail_copy(void **state)
{
	tcx_fail(-ENOENT, "no such file");
	assert_int_equal(tcx_fail(-ENOENT, "%s: %s", "/a/b", tcx_error()), -ENOENT);
	assert_string_equal(tcx_error(), "/a/b: no such file");
	tcx_fail(-EIO, "%s (%s)", tcx_error(), tcx_error());
	assert_string_equal(tcx_error(), "/a/b: no such file (/a/b: no such file)");
	/* the message alone, and the message before other text */
	tcx_fail(-EIO, "%s", tcx_error());
	assert_string_equal(tcx_error(), "/a/b: no such file (/a/b: no such file)");
	tcx_fail(-EIO, "x");
	tcx_fail(-EIO, "%s%s%s", tcx_error(), tcx_error(), tcx_error());
	assert_string_equal(tcx_error(), "xxx");
}

/* Control characters and DEL become '?'; other bytes stay. */
static void test_fail_sanitise(void **state)
{
	tcx_fail(-EBADMSG, "peer said \"%s\"", "a\nb\rc\td\x1b[31m\x7f\x01");
	assert_string_equal(tcx_error(), "peer said \"a?b?c?d?[31m??\"");
	tcx_fail(-EBADMSG, "d\xc3\xa9j\xc3\xa0 ~");
	assert_string_equal(tcx_error(), "d\xc3\xa9j\xc3\xa0 ~");
}

/* Longer messages are truncated, NUL-terminated. */
static void test_fail_long(void **state)
{
	char big[3 * TCX_ERROR_MAX];

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(tcx_fail(-E2BIG, "%s", big), -E2BIG);
	assert_int_equal(strlen(tcx_error()), TCX_ERROR_MAX - 1);
	tcx_fail(-E2BIG, "ctx: %s", tcx_error());
	assert_int_equal(strlen(tcx_error()), TCX_ERROR_MAX - 1);
	assert_memory_equal(tcx_error(), "ctx: yyy", 8);
}

struct fail_thread {
	pthread_barrier_t	*bar;
	int			id;
	char			before[64];	/* tcx_error() before any failure */
	char			after[64];	/* and after the other thread's */
};

static void *fail_thread(void *arg)
{
	struct fail_thread *t = arg;

	snprintf(t->before, sizeof(t->before), "%s", tcx_error());
	pthread_barrier_wait(t->bar);
	tcx_fail(-EINVAL, "thread %d", t->id);
	pthread_barrier_wait(t->bar);	/* both have failed */
	snprintf(t->after, sizeof(t->after), "%s", tcx_error());
	return NULL;
}

/* Each thread has its own last error; a new thread starts with none. */
static void test_fail_threads(void **state)
{
	pthread_barrier_t bar;
	struct fail_thread t[2] = { { &bar, 1 }, { &bar, 2 } };
	pthread_t th[2];

	tcx_fail(-EPERM, "main thread");
	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fail_thread, &t[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	assert_string_equal(t[0].before, "no error");
	assert_string_equal(t[1].before, "no error");
	assert_string_equal(t[0].after, "thread 1");
	assert_string_equal(t[1].after, "thread 2");
	assert_string_equal(tcx_error(), "main thread");
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/* Faults taken touching one byte of each page of [p, p + len). */
static long touch(uint8_t *p, size_t len, uint8_t v)
{
	long before = minflt();

	for (size_t i = 0; i < len; i += 4096)
		p[i] = v;
	return minflt() - before;
}

/*
 * Touching a populated range takes (nearly) no fault, where the same
 * length unpopulated takes one a page; the rest is zero and usable. The
 * slack is for a sanitizer's shadow memory, which faults in as it is read.
 */
static void check_pages(size_t len, size_t populate, bool huge)
{
	uint8_t *p = tcx_pages_alloc(len, populate, huge);
	uint8_t *cold = tcx_pages_alloc(len, 0, false);
	size_t pop = populate < len ? populate : len;
	long pages = (long)((pop + 4095) / 4096);

	assert_non_null(p);
	assert_non_null(cold);
	assert_int_equal((uintptr_t)p & 4095, 0);
	if (huge && len >= (2u << 20))
		assert_int_equal((uintptr_t)p & ((2u << 20) - 1), 0);
	if (pages >= 16) {
		assert_true(touch(p, pop, 1) <= pages / 4);
		assert_true(touch(cold, pop, 1) >= pages);
	} else {
		touch(p, pop, 1);
	}
	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], i < pop && !(i % 4096) ? 1 : 0);
	/* a later range of 16 pages, populated on its own */
	if (len >= pop + 18 * 4096) {
		tcx_pages_populate(p, pop + 4096 + 100, 15 * 4096);
		assert_true(touch(p + pop + 4096, 16 * 4096, 2) <= 4);
	}
	memset(p, 0x5a, len);
	tcx_pages_free(p, len);
	tcx_pages_free(cold, len);
}

/* MADV_POPULATE_WRITE came with Linux 5.14: older kernels fault as they go */
static bool madvise_cannot_populate(void)
{
	uint8_t *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool can;

	assert_true(probe != MAP_FAILED);
	can = !madvise(probe, 4096, 23);
	munmap(probe, 4096);
	return !can;
}

static void test_pages(void **state)
{
	(void)state;
	if (madvise_cannot_populate())
		skip();
	check_pages(4096, 4096, false);
	check_pages(100000, 65536, false);
	check_pages(512 << 10, 0, false);
	check_pages(4u << 20, 2u << 20, true);
	check_pages(3u << 20, 1u << 20, true);
	check_pages(1u << 20, 8u << 20, true);	/* under 2 MiB: small pages */
	errno = 0;
	assert_null(tcx_pages_alloc(0, 0, false));
	assert_int_equal(errno, EINVAL);
	tcx_pages_free(NULL, 4096);
}

/*
 * A block at any alignment (as malloc() gives): every page it spans, the
 * partial ones at its ends included, is in after one call, where the same
 * block in a fresh mapping not populated takes a fault a page.
 */
static void test_mem_populate(void **state)
{
	size_t len = (1u << 20) + 100, map = len + 4 * 4096;
	long pages = (long)((len + 3 + 4095) / 4096);
	uint8_t *m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *cold = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *p;

	(void)state;
	if (madvise_cannot_populate())
		skip();
	assert_true(m != MAP_FAILED && cold != MAP_FAILED);
	/* one fault a page in the control, whatever the THP setting */
	(void)madvise(m, map, MADV_NOHUGEPAGE);
	(void)madvise(cold, map, MADV_NOHUGEPAGE);
	/* 3 bytes into a page: both ends are partial pages */
	p = m + 4096 + 3;
	tcx_mem_populate(p, len);
	assert_true(touch(m + 4096, len + 3, 1) <= pages / 4);
	assert_true(touch(cold + 4096, len + 3, 1) >= pages);
	/* the pages around it were not asked for */
	assert_true(touch(m, 1, 1) == 1);
	tcx_mem_populate(p, 0);		/* nothing, and no crash */
	munmap(m, map);
	munmap(cold, map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_parse_n),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_fail_return),
		cmocka_unit_test(test_fail_copy),
		cmocka_unit_test(test_fail_sanitise),
		cmocka_unit_test(test_fail_long),
		cmocka_unit_test(test_fail_threads),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_mem_populate),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
