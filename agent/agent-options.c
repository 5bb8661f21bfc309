// SPDX-License-Identifier: GPL-2.0
/*
 * The allow-list of record options a peer may send in TRACE_REQ ARGS.
 * trace-cmd's agent runs whatever `record` options the host sends, as
 * root; ours takes only the options below and checks every value: nothing
 * from the peer becomes a path, a regex or a command. Filters go to the
 * kernel's parser as text (printable, bounded); tracers come from a fixed
 * list; function names from a strict character set (no "!", no ":cmd").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "tcx-util.h"

/*
 * The refusals quote the peer's text, which goes back to it and into logs:
 * tcx_fail() turns control bytes into '?'.
 */

/* Names of systems and events: letters, digits, '_' and the glob '*'. */
static bool name_ok(const char *s, size_t n)
{
	if (!n || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || s[i] == '*' ||
		      (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

static int add_event(struct agent_record_opts *o, const char *ev, bool exclude)
{
	const char *colon = strchr(ev, ':');
	bool ok;

	if (colon)
		ok = name_ok(ev, colon - ev) &&
		     name_ok(colon + 1, strlen(colon + 1));
	else
		ok = name_ok(ev, strlen(ev));
	if (!ok)
		return tcx_fail(-EINVAL,
			      "event \"%.64s\" is not a system or event name", ev);
	if (o->nr_events >= AGENT_MAX_EVENTS)
		return tcx_fail(-EINVAL, "more than %d events", AGENT_MAX_EVENTS);
	o->exclude[o->nr_events] = exclude;
	snprintf(o->events[o->nr_events++], sizeof(o->events[0]), "%s", ev);
	return 0;
}

int agent_opts_enabled(const struct agent_record_opts *o)
{
	int n = 0;

	for (int i = 0; i < o->nr_events; i++)
		n += !o->exclude[i];
	return n;
}

/* -f: the filter of the last -e; the kernel parses it. Printable ASCII
 * only: no control bytes, no newline (one write, one filter). */
static int set_filter(struct agent_record_opts *o, const char *f)
{
	size_t n = strlen(f);

	if (!o->nr_events || o->exclude[o->nr_events - 1])
		return tcx_fail(-EINVAL, "-f \"%.64s\" must follow an -e EVENT it filters",
				f);
	if (!n || n >= AGENT_MAX_FILTER)
		return tcx_fail(-EINVAL, "-f: a filter of 1..%d bytes (got %zu)",
				AGENT_MAX_FILTER - 1, n);
	for (size_t i = 0; i < n; i++)
		if (f[i] < 0x20 || f[i] > 0x7e)
			return tcx_fail(-EINVAL, "-f \"%.64s\": byte %zu is not "
					"printable ASCII", f, i);
	memcpy(o->filters[o->nr_events - 1], f, n + 1);
	return 0;
}

/* Tracers a peer may ask for: ftrace's function tracers and the latency
 * tracers, all confined to our instance (not mmiotrace, hwlat, osnoise or
 * timerlat, which act on the whole machine). */
static const char *const tracers[] = {
	"nop", "function", "function_graph", "irqsoff", "preemptoff",
	"preemptirqsoff", "wakeup", "wakeup_rt", "wakeup_dl",
};

static int set_tracer(struct agent_record_opts *o, const char *t)
{
	for (size_t i = 0; i < sizeof(tracers) / sizeof(tracers[0]); i++)
		if (!strcmp(t, tracers[i])) {
			snprintf(o->tracer, sizeof(o->tracer), "%s", t);
			return 0;
		}
	return tcx_fail(-EINVAL, "-p: tracer \"%.32s\" is not allowed (allowed: "
			"nop, function, function_graph, irqsoff, preemptoff, "
			"preemptirqsoff, wakeup, wakeup_rt, wakeup_dl)", t);
}

static const char *const func_opt[] = { "-l", "-n", "-g" };

/* -l, -n, -g: a symbol name or glob: letters, digits, '_', '.', '*'; never
 * set_ftrace_filter's "!" or its ":command" forms. */
static int add_func(struct agent_record_opts *o, enum agent_func_list l,
		    const char *f)
{
	size_t n = strlen(f);
	bool ok = n && n < AGENT_FUNC_LEN;

	for (size_t i = 0; ok && i < n; i++)
		ok = f[i] == '_' || f[i] == '.' || f[i] == '*' ||
		     (f[i] >= 'a' && f[i] <= 'z') || (f[i] >= 'A' && f[i] <= 'Z') ||
		     (f[i] >= '0' && f[i] <= '9');
	if (!ok)
		return tcx_fail(-EINVAL, "%s \"%.64s\" is not a function name or "
				"glob (letters, digits, '_', '.', '*'; at most %d)",
				func_opt[l], f, AGENT_FUNC_LEN - 1);
	if (o->nr_funcs[l] >= AGENT_MAX_FUNCS)
		return tcx_fail(-EINVAL, "more than %d %s functions", AGENT_MAX_FUNCS,
				func_opt[l]);
	memcpy(o->funcs[l][o->nr_funcs[l]++], f, n + 1);
	return 0;
}

/* --verbose: a level 0..6 or libtracefs' name of one; alone, "info"; the
 * next word is the level if it is one (the stock trace-cmd's form) */
static int set_verbose(struct agent_record_opts *o, const char *v)
{
	static const char *const names[] = {
		"none", "crit", "err", "warn", "info", "debug", "all",
	};
	unsigned long n;

	if (!v) {
		o->verbose = 4;
		return 0;
	}
	for (int i = 0; i <= AGENT_MAX_VERBOSE; i++)
		if (!strcmp(v, names[i])) {
			o->verbose = i;
			return 0;
		}
	if (tcx_parse_uint(v, AGENT_MAX_VERBOSE, &n))
		return tcx_fail(-EINVAL, "--verbose takes 0..6 or none, crit, err, "
				"warn, info, debug, all (got \"%.32s\")", v);
	o->verbose = (int)n;
	return 0;
}

static int set_clock(struct agent_record_opts *o, const char *c)
{
	size_t n = strlen(c);

	if (!n || n >= sizeof(o->clock))
		return tcx_fail(-EINVAL, "clock \"%.32s\" is invalid", c);
	for (size_t i = 0; i < n; i++)
		if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') ||
		      c[i] == '-' || c[i] == '_'))
			return tcx_fail(-EINVAL,
				      "clock \"%.32s\" is invalid", c);
	memcpy(o->clock, c, n + 1);
	return 0;
}

/* The value of option @opt: joined (-eX, --opt=X) or the next argument. */
static const char *value_of(int argc, const char *const *argv, int *i,
			    const char *opt)
{
	const char *a = argv[*i];
	size_t n = strlen(opt);

	if (a[n] == '=' && opt[1] == '-')
		return a + n + 1;
	if (a[n] && opt[1] != '-')
		return a + n;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static bool is_opt(const char *a, const char *opt)
{
	size_t n = strlen(opt);

	if (strncmp(a, opt, n))
		return false;
	/* short options may be joined with their value, long ones by '=' */
	return !a[n] || opt[1] != '-' || a[n] == '=';
}

int agent_parse_record_args(int argc, const char *const *argv,
			    struct agent_record_opts *o)
{
	unsigned long v;

	bool exclude = false;

	memset(o, 0, sizeof(*o));
	o->file_version = 6;
	o->graph_depth = -1;
	o->verbose = -1;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val;
		int ret = 0;

		if (exclude && !is_opt(a, "-e"))
			return tcx_fail(-EINVAL, "-v must be followed by -e EVENT "
					"(got \"%.64s\")", a);
		if (is_opt(a, "-e")) {
			val = value_of(argc, argv, &i, "-e");
			if (!val)
				return tcx_fail(-EINVAL, "%s needs an event", a);
			ret = add_event(o, val, exclude);
			exclude = false;
		} else if (!strcmp(a, "-v")) {
			exclude = true;
		} else if (is_opt(a, "-f")) {
			val = value_of(argc, argv, &i, "-f");
			if (!val)
				return tcx_fail(-EINVAL, "-f needs a filter");
			ret = set_filter(o, val);
		} else if (is_opt(a, "-p")) {
			val = value_of(argc, argv, &i, "-p");
			if (!val)
				return tcx_fail(-EINVAL, "-p needs a tracer");
			ret = set_tracer(o, val);
		} else if (is_opt(a, "-l") || is_opt(a, "-n") || is_opt(a, "-g")) {
			enum agent_func_list l = a[1] == 'l' ? AGENT_FUNC_FILTER :
						 a[1] == 'n' ? AGENT_FUNC_NOTRACE :
						 AGENT_FUNC_GRAPH;

			val = value_of(argc, argv, &i, func_opt[l]);
			if (!val)
				return tcx_fail(-EINVAL, "%s needs a function", func_opt[l]);
			ret = add_func(o, l, val);
		} else if (is_opt(a, "--max-graph-depth")) {
			val = value_of(argc, argv, &i, "--max-graph-depth");
			if (!val || tcx_parse_uint(val, AGENT_MAX_GRAPH_DEPTH, &v))
				return tcx_fail(-EINVAL,
					      "--max-graph-depth takes 0..%d (got \"%.32s\")",
					      AGENT_MAX_GRAPH_DEPTH, val ? val : "");
			o->graph_depth = (int)v;
		} else if (!strcmp(a, "-T")) {
			o->stacktrace = true;
		} else if (is_opt(a, "-s")) {
			val = value_of(argc, argv, &i, "-s");
			if (!val || tcx_parse_uint(val, AGENT_MAX_SLEEP_US, &v) || !v)
				return tcx_fail(-EINVAL,
					      "-s takes microseconds, 1..%d (got \"%.32s\")",
					      AGENT_MAX_SLEEP_US, val ? val : "");
			o->sleep_us = (unsigned int)v;
		} else if (is_opt(a, "-m")) {
			val = value_of(argc, argv, &i, "-m");
			if (!val || tcx_parse_uint(val, AGENT_MAX_BUFFER_KB, &v) || !v)
				return tcx_fail(-EINVAL,
					      "-m takes a size in KiB per CPU, 1..262144 (got \"%.32s\")",
					      val ? val : "");
			o->max_kb = (unsigned int)v;
		} else if (!strncmp(a, "--verbose=", 10)) {
			ret = set_verbose(o, a + 10);
		} else if (!strcmp(a, "--verbose")) {
			/* trace-cmd sends --verbose=2 as two words */
			ret = set_verbose(o, NULL);
			if (!ret && i + 1 < argc && !set_verbose(o, argv[i + 1]))
				i++;
			else
				o->verbose = 4;
		} else if (is_opt(a, "-b")) {
			val = value_of(argc, argv, &i, "-b");
			if (!val || tcx_parse_uint(val, AGENT_MAX_BUFFER_KB, &v) || !v)
				return tcx_fail(-EINVAL,
					      "-b takes a size in KiB, 1..262144 (got \"%.32s\")",
					      val ? val : "");
			o->buffer_kb = (unsigned int)v;
			ret = 0;
		} else if (is_opt(a, "-C")) {
			val = value_of(argc, argv, &i, "-C");
			if (!val)
				return tcx_fail(-EINVAL, "%s needs a clock", a);
			ret = set_clock(o, val);
		} else if (is_opt(a, "--file-version")) {
			val = value_of(argc, argv, &i, "--file-version");
			if (!val || tcx_parse_uint(val, 7, &v) || v < 6)
				return tcx_fail(-EINVAL,
					      "--file-version takes 6 or 7 (got \"%.32s\")",
					      val ? val : "");
			o->file_version = (int)v;
			ret = 0;
		} else if (is_opt(a, "--compression")) {
			/* what we send is never compressed: only "none" */
			val = value_of(argc, argv, &i, "--compression");
			if (!val || strcmp(val, "none"))
				return tcx_fail(-EINVAL,
					      "--compression: only \"none\" (got \"%.32s\")",
					      val ? val : "");
			ret = 0;
		} else if (a[0] == '-') {
			return tcx_fail(-EPERM,
				      "option \"%.64s\" is not allowed by this agent "
				      "(allowed: -e, -f, -v, -p, -l, -n, -g, --max-graph-depth, "
				      "-T, -s, -m, -b, -C, --file-version, --verbose, "
				      "--compression none)", a);
		} else {
			return tcx_fail(-EPERM,
				      "the agent runs no commands (got \"%.64s\")", a);
		}
		if (ret)
			return ret;
	}
	if (exclude)
		return tcx_fail(-EINVAL, "-v must be followed by -e EVENT");
	return 0;
}
