// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated scheduler's placement: vCPUs that never block must not
 * stay queued on one pCPU while another is idle (docs/xensim.md, "Host
 * and scheduler"). A benchmark on such a host otherwise measures half the
 * load it asked for in some runs and all of it in others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "tlib.h"

static struct tlib_sim sim;

static int cleanup(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

static void test_idle_pcpu_takes_waiting_vcpu(void **state)
{
	struct timespec d = { 0, 300 * 1000 * 1000 };
	struct tlib_truth t;
	int on[2] = { -1, -1 };

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("steal.conf")), 0);
	while (nanosleep(&d, &d))
		;
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
	assert_int_equal(t.pcpus, 2);
	/* the intervals still open at the stop: what each pCPU ran then */
	for (size_t i = 0; i < t.nrun; i++) {
		const struct tlib_truth_run *r = &t.run[i];

		if (!r->end && r->pcpu < 2)
			on[r->pcpu] = (int)r->dom;
	}
	print_message("# at the stop: pCPU 0 runs dom %d, pCPU 1 dom %d; %d migrations\n",
		      on[0], on[1], tlib_truth_count(sim.dir, "migrate "));
	/* the two busy domains, one on each pCPU */
	assert_true((on[0] == 1 && on[1] == 3) || (on[0] == 3 && on[1] == 1));
	tlib_truth_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_idle_pcpu_takes_waiting_vcpu, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
