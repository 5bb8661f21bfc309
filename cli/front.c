// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd: the front installed ahead of the stock trace-cmd in PATH.
 * It execs trace-cmd-xen (next to itself) for what only we do, and the
 * stock trace-cmd with the same argv for everything else: a plain execv,
 * so pid, stdio, exit status and signals are the exec'd program's.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcx-util.h"

#ifndef TCX_STOCK_TRACE_CMD
#define TCX_STOCK_TRACE_CMD "/usr/bin/trace-cmd"
#endif

struct front_cmd {
	const char *name;
	/*
	 * the short options, ':' after one with an argument: record --xen
	 * takes trace-cmd record's grammar, so one list serves both
	 */
	const char *shortopts;
	/* long options that take an argument (as the next word), either side's */
	const char *const *argopts;
	/* long options that only we know: any of them routes to trace-cmd-xen */
	const char *const *ours;
};

static const char *const record_argopts[] = {
	"ts-offset", "max-graph-depth", "cmdlines-size", "user", "module",
	"tsync-interval", "name", "compression", "file-version", "proxy",
	"temp", "subbuf-size", "duration", "raw", "summary-json", "tsync",
	"secret-file", "guest-open-timeout", "guest-stop-timeout",
	"guest-max-cpus", "guest-max-meta", "guest-max-bytes", "xen-events",
	"xen-cpus", "xen-pages", "session", "repeat", NULL
};
static const char *const agent_argopts[] = {
	"secret-file", "domid", "tracing-dir", NULL
};
static const char *const convert_argopts[] = {
	"compression", "file-version", "cpu-hz", "summary-json", "jobs", NULL
};
static const char *const xen_only[] = { "xen", NULL };
static const char *const record_ours[] = {
	"xen", "xen-events", "xen-cpus", "xen-pages", "session", "repeat",
	"fail-on-loss", NULL
};
static const char *const agent_ours[] = {
	"xen", "secret-file", "insecure", "domid", "tracing-dir", NULL
};

static const struct front_cmd cmds[] = {
	{ "record", "hae:f:FA:p:C:dDGo:O:s:r:V:vg:l:n:P:N:tb:R:B:kiTm:M:H:qcS",
	  record_argopts, record_ours },
	{ "agent", "hp:DN:P:", agent_argopts, agent_ours },
	{ "convert", "hi:o:qj:", convert_argopts, xen_only },
};

static bool listed(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && !strncmp(*list, name, len))
			return true;
	return false;
}

/* Does this subcommand's option list (up to "--" or a non-option) need us? */
static bool wants_ours(const struct front_cmd *c, int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--") || a[0] != '-' || !a[1])
			return false;
		if (a[1] == '-') {
			size_t len = strcspn(a + 2, "=");

			if (listed(c->ours, a + 2, len))
				return true;
			if (!a[2 + len] && listed(c->argopts, a + 2, len))
				i++;
			continue;
		}
		/* a cluster: -qe sched, -esched */
		for (const char *p = a + 1; *p; p++) {
			const char *o = strchr(c->shortopts, *p);

			if (o && *p != ':' && o[1] == ':') {
				if (!p[1])
					i++;
				break;
			}
		}
	}
	return false;
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* @prog (trace-cmd-xen...) next to our own binary, whatever PATH says */
static int ours_path(char *buf, size_t size, const char *prog)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return tcx_fail(-errno, "/proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	if ((size_t)snprintf(buf, size, "%s/%s", self, prog) >= size)
		return tcx_fail(-ENAMETOOLONG, "%s: path too long", self);
	return 0;
}

int main(int argc, char **argv)
{
	static char name[] = "trace-cmd";
	char path[PATH_MAX];

	if (argc >= 2) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (strcmp(argv[1], cmds[i].name) ||
			    !wants_ours(&cmds[i], argc, argv))
				continue;
			/*
			 * a guest has trace-cmd-xen-agent (its package) and
			 * maybe no trace-cmd-xen: that one first, without
			 * the word "agent"
			 */
			if (!strcmp(argv[1], "agent") &&
			    !ours_path(path, sizeof(path), "trace-cmd-xen-agent") &&
			    !access(path, X_OK)) {
				argv[1] = path;
				execv(path, argv + 1);
			}
			if (ours_path(path, sizeof(path), "trace-cmd-xen")) {
				fprintf(stderr, "trace-cmd: %s\n", tcx_error());
				return 1;
			}
			argv[0] = path;
			execv(path, argv);
			tcx_fail(-errno, "%s: %s", path, strerror(errno));
			fprintf(stderr, "trace-cmd: %s\n", tcx_error());
			return 127;
		}
	}
	if (same_file("/proc/self/exe", TCX_STOCK_TRACE_CMD)) {
		tcx_fail(-ELOOP, "this front is installed as " TCX_STOCK_TRACE_CMD
			 ", where the stock trace-cmd it runs should be: install "
			 "trace-cmd-xen to another prefix (e.g. /usr/local), or "
			 "reconfigure with -Dstock_trace_cmd=PATH");
		fprintf(stderr, "trace-cmd: %s\n", tcx_error());
		return 1;
	}
	argv[0] = name;
	execv(TCX_STOCK_TRACE_CMD, argv);
	tcx_fail(-errno, "%s: %s (the stock trace-cmd, set at build time by "
		 "-Dstock_trace_cmd)", TCX_STOCK_TRACE_CMD, strerror(errno));
	fprintf(stderr, "trace-cmd: %s\n", tcx_error());
	return 127;
}
