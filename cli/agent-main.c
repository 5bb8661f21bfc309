// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen-agent: `trace-cmd-xen agent` on its own, for guests. It
 * links the agent and what it stands on (vchan, xenstore, xencall,
 * tracefs) and none of dom0's libraries (libxenctrl, libxenforeignmemory),
 * which a guest has no use for.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "trace-cmd-xen-%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	/* the options start at argv[1], as after `trace-cmd-xen agent` */
	return cmd_agent(argc, argv);
}
