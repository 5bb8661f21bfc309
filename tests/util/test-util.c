// SPDX-License-Identifier: GPL-2.0
/*
 * util: tcx_parse_uint() and its length-bounded twin, tcx_json_str(),
 * the clock helpers.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_parse_n),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_clock),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
