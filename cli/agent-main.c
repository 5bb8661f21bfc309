// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen-agent: `trace-cmd-xen agent` on its own, for guests. It
 * links the agent and what it stands on (vchan, xenstore, xencall,
 * tracefs) and none of dom0's libraries (libxenctrl, libxenforeignmemory),
 * which a guest has no use for.
 */
#include "cli.h"

int main(int argc, char **argv)
{
	cli_set_program("trace-cmd-xen-");
	/* the options start at argv[1], as after `trace-cmd-xen agent` */
	return cmd_agent(argc, argv);
}
