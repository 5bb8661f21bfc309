// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen: trace-cmd's grammar for Xen hosts. This file only
 * dispatches to the subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct tcx_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct tcx_cmd commands[] = {
	{ "convert", cmd_convert, "turn a xentrace capture into a trace.dat" },
	{ "record", cmd_record, "record the Xen hypervisor, dom0 and guests (--xen, -A), in dom0" },
	{ "analyze", cmd_analyze, "summarize a hypervisor trace.dat as xenalyze --summary does" },
	{ "agent", cmd_agent, "serve trace-cmd's agent protocol (--xen over vchan, or -N HOST over TCP)" },
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: trace-cmd-xen COMMAND [OPTIONS]\n\n"
		   "Trace a Xen host, its dom0 and its guests on one clock,\n"
		   "into files that trace-cmd and KernelShark read.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < NR_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'trace-cmd-xen COMMAND -h' for the options of one command.\n"
		   "  -h, --help     this text\n"
		   "  --version      the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("trace-cmd-xen version %s\n", TCX_VERSION);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);

	fprintf(stderr, "trace-cmd-xen: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
