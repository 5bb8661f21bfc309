// SPDX-License-Identifier: GPL-2.0
/* The host description parser and the TSC arithmetic (docs/xensim.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tcx-util.h"
#include "xsim.h"

static void test_parse(void **state)
{
	static const char text[] =
		"# comment\n"
		"[host]\n"
		"pcpus = 4\n"
		"cpu_khz = 3000000   # 3 GHz\n"
		"vendor = amd\n"
		"migrate = no\n"
		"\n"
		"[domain Domain-0]\n"
		"domid = 0\n"
		"type = pvh\n"
		"vcpus = 2\n"
		"[domain g]\n"
		"domid = 7\n"
		"type = hvm\n"
		"vcpus = 3\n"
		"gtsc_khz = 1500000\n"
		"tsc_offset = -5, 10\n"
		"profile = busy\n"
		"rate = 12345\n";
	struct xsim_conf c;

	assert_int_equal(xsim_conf_parse(text, &c), 0);
	assert_int_equal(c.pcpus, 4);
	assert_int_equal(c.cpu_khz, 3000000);
	assert_int_equal(c.vendor, XSIM_AMD);
	assert_false(c.migrate);
	assert_int_equal(c.ndoms, 2);
	assert_string_equal(c.dom[0].name, "Domain-0");
	assert_int_equal(c.dom[0].type, XSIM_PVH);
	assert_int_equal(c.dom[1].domid, 7);
	assert_int_equal(c.dom[1].vcpus, 3);
	assert_int_equal(c.dom[1].profile, XSIM_BUSY);
	assert_int_equal(c.dom[1].rate, 12345);
	assert_true(c.dom[1].offset_set);
	assert_int_equal(c.dom[1].tsc_offset[0], -5);
	assert_int_equal(c.dom[1].tsc_offset[1], 10);
	assert_int_equal(c.dom[1].tsc_offset[2], 10);	/* the last repeats */
	/* AMD: 32 fraction bits; 1.5 / 3 GHz = 0.5 */
	assert_int_equal(xsim_frac_bits(c.vendor), 32);
	assert_int_equal(xsim_tsc_ratio(&c, &c.dom[1]), 1ull << 31);
	assert_int_equal(xsim_tsc_ratio(&c, &c.dom[0]), 1ull << 32);
}

/* The vendor dom0 reads from /proc/cpuinfo, independently of CPUID here. */
static enum xsim_vendor cpuinfo_vendor(void)
{
	char line[256];
	enum xsim_vendor v = XSIM_INTEL;
	FILE *f = fopen("/proc/cpuinfo", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "vendor_id", 9))
			continue;
		if (strstr(line, "AuthenticAMD") || strstr(line, "HygonGenuine"))
			v = XSIM_AMD;
		break;
	}
	fclose(f);
	return v;
}

static void test_vendor_auto(void **state)
{
	struct xsim_conf c;

	/* Absent and "auto" both follow this machine, which plays dom0. */
	assert_int_equal(xsim_conf_parse("[domain a]\n", &c), 0);
	assert_int_equal(c.vendor, cpuinfo_vendor());
	assert_int_equal(xsim_conf_parse("[host]\nvendor = auto\n[domain a]\n",
					 &c), 0);
	assert_int_equal(c.vendor, cpuinfo_vendor());
	assert_int_equal(xsim_conf_parse("[host]\nvendor = intel\n[domain a]\n",
					 &c), 0);
	assert_int_equal(c.vendor, XSIM_INTEL);
	assert_int_equal(xsim_conf_parse("[host]\nvendor = via\n[domain a]\n",
					 &c), -EINVAL);
}

static void test_errors(void **state)
{
	struct xsim_conf c;

	assert_int_equal(xsim_conf_parse("[host]\npcpus = 0\n", &c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "line 2"));
	assert_int_equal(xsim_conf_parse("[host]\nbogus = 1\n[domain a]\n",
					 &c), -EINVAL);
	/* no dom0 */
	assert_int_equal(xsim_conf_parse("[domain a]\ndomid = 3\n", &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain a]\n[domain b]\ndomid = 0\n",
					 &c), -EINVAL);	/* dup */
	/* HVM dom0 */
	assert_int_equal(xsim_conf_parse("[domain a]\ntype = hvm\n", &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain a]\n[domain b]\nvcpus = 99\n",
					 &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain a]\nfoo\n", &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain a]\n", &c), 0);
	/* a file that cannot be opened: the -errno of fopen */
	assert_int_equal(xsim_conf_load("/nonexistent/xensim.conf", &c), -ENOENT);
	assert_non_null(strstr(tcx_error(), "/nonexistent/xensim.conf"));
}

/* offset_change and drift_ppm: parsed, in time order, HVM/PVH only */
static void test_clock_keys(void **state)
{
	struct xsim_conf c;

	(void)state;
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = pvh\nvcpus = 2\n"
					 "offset_change = 1.5:-7,9\noffset_change = 2.000001:42\n"
					 "drift_ppm = -12\n", &c), 0);
	assert_int_equal(c.dom[1].nchanges, 2);
	assert_int_equal(c.dom[1].change[0].at_us, 1500000);
	assert_int_equal(c.dom[1].change[0].offset[0], -7);
	assert_int_equal(c.dom[1].change[0].offset[1], 9);
	assert_int_equal(c.dom[1].change[1].at_us, 2000001);
	assert_int_equal(c.dom[1].change[1].offset[1], 42);	/* one for all */
	assert_int_equal(c.dom[1].drift_ppm, -12);
	/* out of order, no colon, too many decimals, a PV domain, out of range */
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = hvm\n"
					 "offset_change = 2:1\noffset_change = 1:2\n",
					 &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = hvm\n"
					 "offset_change = 5\n", &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = hvm\n"
					 "offset_change = 0.0000001:5\n", &c), -EINVAL);
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = pv\n"
					 "drift_ppm = 3\n", &c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "PV"));
	assert_int_equal(xsim_conf_parse("[domain d0]\n[domain g]\ntype = hvm\n"
					 "drift_ppm = 100001\n", &c), -EINVAL);
}

static void test_guest_tsc(void **state)
{
	/* Intel identity: host + offset */
	assert_int_equal(xsim_guest_tsc(1000, 1ull << 48, 48, -400), 600);
	/* half speed, 48 bits, no 64-bit overflow for large hosts */
	assert_int_equal(xsim_guest_tsc(1ull << 62, 1ull << 47, 48, 0),
			 1ull << 61);
	assert_int_equal(xsim_guest_tsc(3, 1ull << 31, 32, 0), 1);	/* floor */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_vendor_auto),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_clock_keys),
		cmocka_unit_test(test_guest_tsc),
	};

	return cmocka_run_group_tests_name("xensim host description", tests,
					   NULL, NULL);
}
