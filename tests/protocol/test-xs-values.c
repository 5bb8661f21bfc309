// SPDX-License-Identifier: GPL-2.0
/*
 * The xenstore values dom0 and the agent read (tmsg_xs_parse_text(),
 * tmsg_xs_parse_id()): valid ones, and what a guest may write instead.
 * Each value is given as xs_read() hands it over, bytes and a length, in
 * an exact-size heap copy without a terminator, so a read past the length
 * is an ASan error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmsg.h"
#include "tcx-util.h"

/* @n bytes of @s, unterminated, on the heap. */
static char *val(const char *s, unsigned int n)
{
	char *v = malloc(n ? n : 1);

	assert_non_null(v);
	memcpy(v, s, n);
	return v;
}

static int text(const char *s, unsigned int n, char *buf, size_t len)
{
	char *v = val(s, n);
	int ret = tmsg_xs_parse_text(v, n, buf, len);

	free(v);
	return ret;
}

static int id(const char *s, unsigned int n, unsigned int max, unsigned int *out)
{
	char *v = val(s, n);
	int ret = tmsg_xs_parse_id(v, n, max, out);

	free(v);
	return ret;
}

static void test_text_valid(void **state)
{
	char buf[16];

	(void)state;
	assert_int_equal(text("ready", 5, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ready");
	assert_int_equal(text("", 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* exactly what fits with its NUL */
	assert_int_equal(text("0123456789abcde", 15, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0123456789abcde");
	assert_int_equal(text("xen vchan tsync", 15, buf, sizeof(buf)), 0);
}

static void test_text_hostile(void **state)
{
	char buf[16];

	(void)state;
	/* too long: refused, never cut to something else */
	assert_int_equal(text("0123456789abcdef", 16, buf, sizeof(buf)), -EMSGSIZE);
	assert_string_equal(buf, "");
	assert_non_null(strstr(tcx_error(), "16 bytes"));
	/* an embedded NUL: "ready" would pass a string compare */
	assert_int_equal(text("ready\0junk", 10, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(buf, "");
	assert_int_equal(text("\0", 1, buf, sizeof(buf)), -EINVAL);
	/* control bytes: the value is shown on terminals and in logs */
	assert_int_equal(text("web\n1", 5, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(text("a\x1b[2J", 5, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(text("del\x7f", 4, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(tmsg_xs_parse_text("x", 1, buf, 0), -EINVAL);
	/* bytes above 0x7f are text (UTF-8 names) */
	assert_int_equal(text("caf\xc3\xa9", 5, buf, sizeof(buf)), 0);
}

static void test_id_valid(void **state)
{
	unsigned int v = 0;

	(void)state;
	assert_int_equal(id("0", 1, TMSG_XS_DOMID_MAX, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(id("32751", 5, TMSG_XS_DOMID_MAX, &v), 0);
	assert_int_equal(v, 0x7fef);
	assert_int_equal(id("007", 3, TMSG_XS_DOMID_MAX, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(id("2147483647", 10, TMSG_XS_PORT_MAX, &v), 0);
	assert_int_equal(v, 0x7fffffffu);
}

static void test_id_hostile(void **state)
{
	unsigned int v = 99;

	(void)state;
	assert_int_equal(id("", 0, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	assert_int_equal(id("12a", 3, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	assert_int_equal(id("-1", 2, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	assert_int_equal(id(" 1", 2, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	assert_int_equal(id("1 ", 2, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	assert_int_equal(id("0x10", 4, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	/* "1" and then a NUL: not domain 1 */
	assert_int_equal(id("1\0" "5", 3, TMSG_XS_DOMID_MAX, &v), -EINVAL);
	/* reserved domain ids and numbers past 32 bits */
	assert_int_equal(id("32752", 5, TMSG_XS_DOMID_MAX, &v), -ERANGE);
	assert_int_equal(id("2147483648", 10, TMSG_XS_PORT_MAX, &v), -ERANGE);
	assert_int_equal(id("99999999999999999999999", 23, TMSG_XS_PORT_MAX, &v), -ERANGE);
	assert_int_equal(v, 99);
	assert_non_null(strstr(tcx_error(), "not a number"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_valid),
		cmocka_unit_test(test_text_hostile),
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_id_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
