// SPDX-License-Identifier: GPL-2.0
/*
 * `trace-cmd-xen agent` for the tests, until cli/ registers the command:
 * cli/cmd-agent.c behind a main().
 */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

int cmd_agent(int argc, char **argv);

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "trace-cmd-xen %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	return cmd_agent(argc, argv);
}
