// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen agent: serve trace-cmd's agent protocol on this machine.
 * --xen: over libxenvchan to dom0 (needs Xen or the simulator's libraries);
 * -N: over TCP, as trace-cmd's `agent -N`.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "cli.h"
#include "tcx-util.h"
#include "tmsg.h"

/* Declared here until cli.h lists it with the other subcommands. */
int cmd_agent(int argc, char **argv);

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen agent --xen [--domid N] [--tracing-dir DIR] [-D]\n"
		"       trace-cmd-xen agent -N HOST [-p PORT] (--secret-file FILE | --insecure)\n"
		"                           [--tracing-dir DIR] [-D]\n\n"
		"Serve trace-cmd's agent protocol, one session at a time, recording\n"
		"this machine's ftrace in a tracefs instance of its own: over vchan to\n"
		"dom0 in a Xen guest (--xen), or over TCP to HOST only (-N). The host\n"
		"may ask for events (-e), buffer size (-b), clock (-C) and\n"
		"--file-version; any other record option is refused.\n\n"
		"  --xen               serve dom0 over libxenvchan, advertised in xenstore\n"
		"  --domid N           our domain id (default: read from xenstore)\n"
		"  --tracing-dir DIR   trace there: another tracefs mount, or a\n"
		"                      simulated guest kernel (a directory shaped\n"
		"                      like tracefs, read as it is)\n"
		"  -N HOST             the only host allowed to connect\n"
		"  -p PORT             control port (default %d)\n"
		"  --secret-file FILE  the host must prove it knows the secret in FILE\n"
		"                      (16+ bytes, mode 600; trace-cmd-xen record --secret-file)\n"
		"  --insecure          also accept hosts without it (stock trace-cmd)\n"
		"  -D                  run as a daemon (messages still go to stderr)\n"
		"  -h, --help          this text\n",
		TMSG_AGENT_PORT);
}

/* Where libxenstore looks for xenstore, in the order it tries them. */
#define XENSTORED_SOCKET "/var/run/xenstored/socket"

static bool xenstore_reachable(void)
{
	static const char *const paths[] = {
		XENSTORED_SOCKET, "/dev/xen/xenbus", "/proc/xen/xenbus",
	};

	if (getenv("XENSTORED_PATH"))
		return true;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], F_OK))
			return true;
	return false;
}

/* A mistake on the command line: what is wrong, then the usage. */
__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_err("agent", "%s", msg);
	usage(stderr);
	return CLI_EXIT_USAGE;
}

int cmd_agent(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "secret-file", required_argument, NULL, 's' },
		{ "insecure", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "xen", no_argument, NULL, 'x' },
		{ "domid", required_argument, NULL, 'd' },
		{ "tracing-dir", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t secret[CLI_SECRET_MAX + 1];
	struct agent_config cfg = { .port = TMSG_AGENT_PORT,
				    .domid = AGENT_DOMID_SELF };
	unsigned long port, id;
	bool xen = false, daemonize = false;
	char *dir = NULL;
	char *end;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "N:p:Dh", longopts, NULL)) != -1) {
		switch (c) {
		case 'N':
			cfg.peer_host = optarg;
			break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || !port || port > 65535) {
				cli_err("agent", "-p: bad port '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			cfg.port = (unsigned int)port;
			break;
		case 's':
			ret = cli_read_secret(optarg, secret, &cfg.secret_len);
			if (ret) {
				cli_err("agent", "--secret-file: %s", tcx_error());
				return CLI_EXIT_USAGE;
			}
			cfg.secret = secret;
			break;
		case 'i':
			cfg.insecure = true;
			break;
		case 't':
			cfg.tracing_dir = optarg;
			break;
		case 'x':
			xen = true;
			break;
		case 'd':
			id = strtoul(optarg, &end, 10);
			if (*end || !*optarg || id >= 0x7ff0) {
				cli_err("agent", "--domid: bad domain id '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			cfg.domid = (unsigned int)id;
			break;
		case 'D':
			daemonize = true;
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (xen && cfg.peer_host)
		return usage_error("--xen (vchan to dom0) and -N %s (TCP) exclude each other",
				   cfg.peer_host);
	if (!xen && !cfg.peer_host)
		return usage_error("--xen (in a Xen guest) or -N HOST (over TCP) is missing");
	if (!xen && !cfg.secret_len && !cfg.insecure)
		return usage_error("-N %s: --secret-file FILE (hosts must know its secret) or "
				   "--insecure (any process on %s may connect, as with the "
				   "stock trace-cmd) is missing", cfg.peer_host, cfg.peer_host);
	if (daemonize) {
		/* it changes to "/": keep a relative --tracing-dir valid */
		if (cfg.tracing_dir) {
			dir = realpath(cfg.tracing_dir, NULL);
			if (!dir) {
				cli_err("agent", "--tracing-dir %s: %s",
					cfg.tracing_dir, strerror(errno));
				return CLI_EXIT_USAGE;
			}
			cfg.tracing_dir = dir;
		}
		if (daemon(0, 1)) {
			cli_err("agent", "-D: %s", strerror(errno));
			free(dir);
			return CLI_EXIT_FAIL;
		}
	}
	ret = xen ? agent_serve_xen(&cfg) : agent_serve_tcp(&cfg);
	free(dir);
	if (ret && xen && !xenstore_reachable())
		cli_err("agent", "--xen: this is not a Xen guest, or its xenstore is "
			"not reachable: none of /dev/xen/xenbus, /proc/xen/xenbus, "
			XENSTORED_SOCKET " exists (outside Xen, use -N HOST over TCP)");
	return ret ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
