// SPDX-License-Identifier: GPL-2.0
/*
 * Guests with our agent, ready for a host. Its own file: only the tests
 * that link the message layer (tmsg_xs_lookup()) pull it in.
 */
#include <signal.h>
#include <time.h>

#include "tlib.h"
#include "tmsg.h"

bool tlib_agent_ready(unsigned int domid, struct tmsg_xs_agent *a)
{
	struct timespec d = { 0, 10 * 1000 * 1000 };
	struct tmsg_xs_agent x = { 0 };

	for (int t = 0; t < 500 && !x.ready; t++) {
		if (tmsg_xs_lookup(domid, &x))
			x.ready = false;
		nanosleep(&d, NULL);
	}
	if (a)
		*a = x;
	return x.ready;
}

pid_t tlib_sim_guest(const struct tlib_sim *h, unsigned int domid, const char *events,
		     struct tmsg_xs_agent *a)
{
	pid_t pid;

	if (events && tlib_sim_boot(h, domid, events))
		return -1;
	pid = tlib_sim_agent(h, domid);
	if (pid < 0)
		return -1;
	if (!tlib_agent_ready(domid, a)) {
		tlib_kill(pid, SIGKILL);
		return -1;
	}
	return pid;
}
