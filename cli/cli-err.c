// SPDX-License-Identifier: GPL-2.0
/*
 * Error messages of both programs: "trace-cmd-xen record: ..." from
 * trace-cmd-xen, "trace-cmd-xen-agent: ..." from the agent alone (the
 * prefix "trace-cmd-xen-" before the subcommand's name).
 */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

static const char *cli_prog = "trace-cmd-xen ";

void cli_set_program(const char *prefix)
{
	cli_prog = prefix;
}

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s: ", cli_prog, cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
