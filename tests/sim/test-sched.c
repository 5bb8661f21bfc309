// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated scheduler's placement: a pCPU must not idle while a vCPU
 * that never blocks waits on another (docs/xensim.md, "Host and
 * scheduler"). A benchmark on such a host otherwise measures half the
 * load it asked for in some runs and all of it in others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <xen/xen.h>

#include "tlib.h"

static struct tlib_sim sim;
static struct tlib_truth truth;

static int cleanup(void **state)
{
	tlib_truth_free(&truth);
	tlib_sim_cleanup(&sim);
	return 0;
}

static void test_idle_pcpu_takes_waiting_vcpu(void **state)
{
	struct timespec d = { 0, 300 * 1000 * 1000 };
	int on[2] = { -1, -1 };

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("steal.conf")), 0);
	while (nanosleep(&d, &d))
		;
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(tlib_truth_load(sim.dir, &truth), 0);
	assert_int_equal(truth.pcpus, 2);
	/* the intervals still open at the stop: what each pCPU ran then */
	for (size_t i = 0; i < truth.nrun; i++) {
		const struct tlib_truth_run *r = &truth.run[i];

		if (!r->end && r->pcpu < 2)
			on[r->pcpu] = (int)r->dom;
	}
	print_message("# at the stop: pCPU 0 runs dom %d, pCPU 1 dom %d; %d migrations\n",
		      on[0], on[1], tlib_truth_count(sim.dir, "migrate "));
	/*
	 * Two busy vCPUs never leave a pCPU idle: each on its own, or (when
	 * dom0 took pCPU 0 first and is preempted by one of them before its
	 * burst ends) dom0 sharing pCPU 0 with one. Without the move, both
	 * wait on pCPU 1 and pCPU 0 idles once dom0 blocks.
	 */
	assert_true(on[0] >= 0 && on[0] != DOMID_IDLE);
	assert_true(on[1] >= 0 && on[1] != DOMID_IDLE);
	assert_true(on[0] == 1 || on[0] == 3 || on[1] == 1 || on[1] == 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_idle_pcpu_takes_waiting_vcpu, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
