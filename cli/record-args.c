// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen's command line in trace-cmd record's grammar: what comes
 * before the first -A is dom0's (the host's), what follows each -A is that
 * guest's, the recording's own options (and Xen's knobs, --xen-*) go
 * anywhere. A guest's options become the words its agent is sent.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "recorder.h"
#include "cli.h"
#include "tcx-util.h"
#include "tmsg.h"
#include "tsync.h"

#define OWN_INSTANCE "trace-cmd-xen records its own instance"

const struct cli_rec_opt cli_rec_opts[] = {
	/* trace-cmd record's, as trace-cmd takes them */
	{ "-e", CLI_REC_BOTH, NULL },
	{ "-f", CLI_REC_BOTH, NULL },
	{ "-v", CLI_REC_BOTH, NULL },
	{ "-p", CLI_REC_BOTH, NULL },
	{ "-l", CLI_REC_BOTH, NULL },
	{ "-n", CLI_REC_BOTH, NULL },
	{ "-g", CLI_REC_BOTH, NULL },
	{ "--max-graph-depth", CLI_REC_BOTH, NULL },
	{ "-T", CLI_REC_BOTH, NULL },
	{ "-s", CLI_REC_BOTH, NULL },
	{ "-m", CLI_REC_BOTH, NULL },
	{ "-b", CLI_REC_BOTH, NULL },
	{ "-C", CLI_REC_BOTH, "only x86-tsc: the hypervisor's, dom0's and the guests' "
	  "files share that one clock, which any other would break" },
	{ "--verbose", CLI_REC_BOTH, NULL },
	{ "-M", CLI_REC_DOM0, "a guest's agent takes no CPU mask; Xen's event classes "
	  "are --xen-events" },
	{ "-P", CLI_REC_DOM0, "a guest's tasks are not dom0's: give it before the first -A" },
	{ "-F", CLI_REC_DOM0, "the command runs in dom0: give it before the first -A" },
	{ "-c", CLI_REC_DOM0, "with -F or -P, in dom0; Xen's pCPUs are --xen-cpus" },
	{ "-A", CLI_REC_GLOBAL, NULL },
	{ "--name", CLI_REC_GUEST, NULL },
	{ "-o", CLI_REC_GLOBAL, NULL },
	{ "-q", CLI_REC_GLOBAL, NULL },
	{ "--quiet", CLI_REC_GLOBAL, NULL },
	{ "--tsync-interval", CLI_REC_GLOBAL, NULL },
	{ "--tsc2nsec", CLI_REC_GLOBAL, NULL },
	{ "-a", CLI_REC_REFUSED, OWN_INSTANCE ", not every instance: use the stock "
	  "trace-cmd record -a (without --xen)" },
	{ "--func-stack", CLI_REC_REFUSED, "not passed to the agents: use -T for stack "
	  "traces of events" },
	{ "--no-filter", CLI_REC_REFUSED, OWN_INSTANCE " and filters out nothing of its "
	  "own: leave it out" },
	{ "-R", CLI_REC_REFUSED, "event triggers are not set: use -f filters" },
	{ "--user", CLI_REC_REFUSED, "the command runs as you: run it with "
	  "`-- runuser -u USER -- COMMAND`" },
	{ "-d", CLI_REC_REFUSED, OWN_INSTANCE " and never turns the global function tracer "
	  "on: leave it out" },
	{ "-D", CLI_REC_REFUSED, OWN_INSTANCE " and never touches global tracing files: "
	  "leave it out" },
	{ "-O", CLI_REC_REFUSED, "trace options are not set: -T sets stacktrace" },
	{ "-r", CLI_REC_REFUSED, "the recorder's priority is not set: run it under "
	  "`chrt -f PRIO`" },
	{ "-B", CLI_REC_REFUSED, "dom0 records one instance of trace-cmd-xen's own: use "
	  "-e, -p ... before the first -A" },
	{ "-k", CLI_REC_REFUSED, "dom0's instance is removed at the end: nothing to keep" },
	{ "-i", CLI_REC_REFUSED, "a missing event is dom0's error, and a guest lacking "
	  "one is left out alone: leave it out" },
	{ "-N", CLI_REC_REFUSED, "use -A HOST:PORT (a TCP agent)" },
	{ "-V", CLI_REC_REFUSED, "use -A CID:PORT (a vsock agent)" },
	{ "-t", CLI_REC_REFUSED, "goes with -N: use -A HOST:PORT" },
	{ "--date", CLI_REC_REFUSED, "the files share the x86-tsc clock with TSC2NSEC: "
	  "leave it out" },
	{ "--cmdlines-size", CLI_REC_REFUSED, "dom0's file names every task from /proc: "
	  "leave it out" },
	{ "--module", CLI_REC_REFUSED, "use -l with the module's functions" },
	{ "--proc-map", CLI_REC_REFUSED, "memory maps are not recorded" },
	{ "--profile", CLI_REC_REFUSED, "profiling is not done: use the stock trace-cmd "
	  "record --profile (without --xen)" },
	{ "-G", CLI_REC_REFUSED, "goes with --profile, which is not done" },
	{ "-H", CLI_REC_REFUSED, "goes with --profile, which is not done" },
	{ "-S", CLI_REC_REFUSED, "goes with --profile, which is not done; Xen's trace "
	  "buffer pages are --xen-pages" },
	{ "--temp", CLI_REC_REFUSED, "the files are written in place (staged beside "
	  "them): leave it out" },
	{ "--ts-offset", CLI_REC_REFUSED, "the files share one clock and time sync finds "
	  "the guests' offsets: leave it out" },
	{ "--stderr", CLI_REC_REFUSED, "trace-cmd-xen's messages go to stderr already" },
	{ "--poll", CLI_REC_REFUSED, "the buffers are polled already: -s sets how often" },
	{ "--file-version", CLI_REC_REFUSED, "the files are version 7 (the agents are "
	  "asked for 6): use trace-cmd convert --file-version" },
	{ "--compression", CLI_REC_REFUSED, "the files are not compressed: use "
	  "trace-cmd convert --compression" },
	{ "--proxy", CLI_REC_REFUSED, "use -A with the guest's domain name or id "
	  "(libxenvchan)" },
	/* ours */
	{ "--xen", CLI_REC_GLOBAL, NULL, true },
	{ "--xen-events", CLI_REC_GLOBAL, NULL, true },
	{ "--xen-cpus", CLI_REC_GLOBAL, NULL, true },
	{ "--xen-pages", CLI_REC_GLOBAL, NULL, true },
	{ "--no-dom0", CLI_REC_GLOBAL, NULL, true },
	{ "--tsync", CLI_REC_GLOBAL, NULL, true },
	{ "--secret-file", CLI_REC_GLOBAL, NULL, true },
	{ "--guest-open-timeout", CLI_REC_GLOBAL, NULL, true },
	{ "--guest-stop-timeout", CLI_REC_GLOBAL, NULL, true },
	{ "--guest-max-cpus", CLI_REC_GLOBAL, NULL, true },
	{ "--guest-max-meta", CLI_REC_GLOBAL, NULL, true },
	{ "--guest-max-bytes", CLI_REC_GLOBAL, NULL, true },
	{ "--duration", CLI_REC_GLOBAL, NULL, true },
	{ "--raw", CLI_REC_GLOBAL, NULL, true },
	{ "--summary-json", CLI_REC_GLOBAL, NULL, true },
	{ "--session", CLI_REC_GLOBAL, NULL, true },
	{ "--repeat", CLI_REC_GLOBAL, NULL, true },
	{ "--fail-on-loss", CLI_REC_GLOBAL, NULL, true },
	{ "-h", CLI_REC_GLOBAL, NULL, true },
	{ "--help", CLI_REC_GLOBAL, NULL, true },
	{ NULL, 0, NULL, false },
};

/* Long options' values for getopt_long() (short ones are themselves). */
enum {
	O_XEN = 256, O_NO_DOM0, O_DURATION, O_RAW, O_SUMMARY, O_TSYNC, O_TSYNC_IVL,
	O_SECRET, O_OPEN_TO, O_STOP_TO, O_MAX_CPUS, O_MAX_META, O_MAX_BYTES,
	O_XEN_EVENTS, O_XEN_CPUS, O_XEN_PAGES, O_NAME, O_VERBOSE, O_GRAPH_DEPTH,
	O_TSC2NSEC, O_SESSION, O_REPEAT, O_FAIL_LOSS, O_REFUSED,
};

static const struct option longopts[] = {
	{ "xen", no_argument, NULL, O_XEN },
	{ "no-dom0", no_argument, NULL, O_NO_DOM0 },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "raw", required_argument, NULL, O_RAW },
	{ "summary-json", required_argument, NULL, O_SUMMARY },
	{ "tsync", required_argument, NULL, O_TSYNC },
	{ "tsync-interval", required_argument, NULL, O_TSYNC_IVL },
	{ "secret-file", required_argument, NULL, O_SECRET },
	{ "guest-open-timeout", required_argument, NULL, O_OPEN_TO },
	{ "guest-stop-timeout", required_argument, NULL, O_STOP_TO },
	{ "guest-max-cpus", required_argument, NULL, O_MAX_CPUS },
	{ "guest-max-meta", required_argument, NULL, O_MAX_META },
	{ "guest-max-bytes", required_argument, NULL, O_MAX_BYTES },
	{ "xen-events", required_argument, NULL, O_XEN_EVENTS },
	{ "xen-cpus", required_argument, NULL, O_XEN_CPUS },
	{ "xen-pages", required_argument, NULL, O_XEN_PAGES },
	{ "name", required_argument, NULL, O_NAME },
	{ "verbose", optional_argument, NULL, O_VERBOSE },
	{ "max-graph-depth", required_argument, NULL, O_GRAPH_DEPTH },
	{ "tsc2nsec", no_argument, NULL, O_TSC2NSEC },
	{ "session", required_argument, NULL, O_SESSION },
	{ "repeat", required_argument, NULL, O_REPEAT },
	{ "fail-on-loss", no_argument, NULL, O_FAIL_LOSS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	/* trace-cmd's that we refuse: known, so not "unknown" */
	{ "func-stack", no_argument, NULL, O_REFUSED },
	{ "no-filter", no_argument, NULL, O_REFUSED },
	{ "user", required_argument, NULL, O_REFUSED },
	{ "date", no_argument, NULL, O_REFUSED },
	{ "cmdlines-size", required_argument, NULL, O_REFUSED },
	{ "module", required_argument, NULL, O_REFUSED },
	{ "proc-map", no_argument, NULL, O_REFUSED },
	{ "profile", no_argument, NULL, O_REFUSED },
	{ "temp", required_argument, NULL, O_REFUSED },
	{ "ts-offset", required_argument, NULL, O_REFUSED },
	{ "stderr", no_argument, NULL, O_REFUSED },
	{ "poll", no_argument, NULL, O_REFUSED },
	{ "file-version", required_argument, NULL, O_REFUSED },
	{ "compression", required_argument, NULL, O_REFUSED },
	{ "proxy", required_argument, NULL, O_REFUSED },
	{ NULL, 0, NULL, 0 },
};

/* '+': stop at the command; ':': missing values reported as ':' */
static const char shortopts[] = "+:e:f:vp:l:n:g:Ts:m:b:C:M:P:FcA:o:qh"
				"aR:dDO:r:B:kiN:V:tGH:S";

static int err(struct cli_rec_args *a, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int err(struct cli_rec_args *a, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
	return ret;
}

static const struct cli_rec_opt *find_opt(const char *name)
{
	for (const struct cli_rec_opt *o = cli_rec_opts; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* Grow @*list by one: a slot, or NULL (out of memory). */
static void *grow(void *list, int n, size_t size)
{
	return realloc(list, (size_t)(n + 1) * size);
}

static int add_str(const char ***list, int *n, const char *s)
{
	const char **nl = grow(*list, *n, sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	*list = nl;
	nl[(*n)++] = s;
	return 0;
}

/* A guest's option as its agent gets it: "-e" "sched", or one word. */
static int add_words(struct cli_rec_inst *in, const char *opt, const char *val)
{
	int ret = add_str(&in->words, &in->nwords, opt);

	if (!ret && val)
		ret = add_str(&in->words, &in->nwords, val);
	return ret;
}

static int new_inst(struct cli_rec_args *a, const char *spec)
{
	struct cli_rec_inst *ni = grow(a->inst, a->ninst, sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	a->inst = ni;
	memset(&ni[a->ninst], 0, sizeof(*ni));
	ni[a->ninst].spec = spec;
	ni[a->ninst].ft.verbose = -1;
	a->ninst++;
	return 0;
}

/* Seconds > 0 (--duration, the guests' deadlines). */
static int seconds(struct cli_rec_args *a, const char *opt, const char *arg, double *v)
{
	char *end;

	*v = strtod(arg, &end);
	if (*end || end == arg || !(*v > 0))
		return err(a, CLI_EXIT_USAGE, "%s %s: seconds > 0", opt, arg);
	return CLI_EXIT_OK;
}

static int deadline_ms(struct cli_rec_args *a, const char *opt, const char *arg, int *ms)
{
	double v;
	int ret = seconds(a, opt, arg, &v);

	if (ret)
		return ret;
	if (v > 86400)
		return err(a, CLI_EXIT_USAGE, "%s %s: at most 86400 seconds", opt, arg);
	*ms = (int)(v * 1000 + 0.5);
	if (!*ms)
		*ms = 1;
	return CLI_EXIT_OK;
}

/* trace-cmd's --tsync-interval: ms; negative: no time sync; 0: start and end. */
static int tsync_interval(struct cli_rec_args *a, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || end == arg || v > 86400000 || v < -86400000)
		return err(a, CLI_EXIT_USAGE, "--tsync-interval %s: milliseconds (0: at the "
			   "start and the end only; negative: no time sync), at most 86400000",
			   arg);
	a->o.tsync_interval_ms = (int)(v < 0 ? -1 : v);
	return CLI_EXIT_OK;
}

static int uint_arg(struct cli_rec_args *a, const char *opt, const char *arg,
		    unsigned long max, unsigned long *v, const char *what)
{
	if (tcx_parse_uint(arg, max, v) || !*v)
		return err(a, CLI_EXIT_USAGE, "%s %s: %s, 1..%lu", opt, arg, what, max);
	return CLI_EXIT_OK;
}

static const char *const level_names[] = {
	"none", "critical", "error", "warning", "info", "debug", "all",
};

/* trace-cmd's levels, by name or number. */
static int verbose_level(const char *s)
{
	const char *const *names = level_names;
	unsigned long v;

	if (!s)
		return 4;
	for (int i = 0; i < 7; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!tcx_parse_uint(s, 6, &v) && (v || !strcmp(s, "0")))
		return (int)v;
	return -1;
}

/* -M: a hex CPU mask, as tracing_cpumask takes it (commas allowed). */
static int cpu_mask(struct cli_rec_args *a, struct cli_rec_inst *in, const char *arg)
{
	const char *p = arg;
	uint32_t classes;
	bool digit = false;

	if (!strncasecmp(p, "0x", 2))
		p += 2;
	for (; *p; p++) {
		if (*p == ',')
			continue;
		if (!strchr("0123456789abcdefABCDEF", *p))
			break;
		digit = true;
	}
	if (!*p && digit) {
		in->ft.cpumask = arg[0] == '0' && (arg[1] == 'x' || arg[1] == 'X') ? arg + 2 : arg;
		return CLI_EXIT_OK;
	}
	if (!rec_parse_evt_mask(arg, &classes))
		return err(a, CLI_EXIT_USAGE, "-M %s: -M is trace-cmd's CPU mask (hex) for "
			   "dom0's ftrace; Xen's event classes are --xen-events %s", arg, arg);
	return err(a, CLI_EXIT_USAGE, "-M %s: not a hex CPU mask (dom0's ftrace; Xen's "
		   "pCPUs are --xen-cpus, its event classes --xen-events)", arg);
}

/* Xen's knobs: --xen-events, --xen-cpus, --xen-pages. */
static int xen_knob(struct cli_rec_args *a, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case O_XEN_PAGES:
		if (tcx_parse_uint(arg, 65535, &v) || !v)
			return err(a, CLI_EXIT_USAGE, "--xen-pages %s: pages per pCPU, 1..65535",
				   arg);
		a->o.pages = v;
		return CLI_EXIT_OK;
	case O_XEN_EVENTS:
		if (rec_parse_evt_mask(arg, &a->o.evt_mask))
			return err(a, CLI_EXIT_USAGE, "--xen-events %s: unknown class or mask "
				   "(sched, hvm, pv, mem, hw, gen, dom0op, shadow, guest, all, "
				   "or hex)", arg);
		return CLI_EXIT_OK;
	default:
		if (rec_parse_cpu_mask(arg, a->cpumap, sizeof(a->cpumap)))
			return err(a, CLI_EXIT_USAGE, "--xen-cpus %s: not a pCPU list or mask "
				   "(all, 0x3, 0-3,5)", arg);
		a->o.cpumap = a->cpumap;
		return CLI_EXIT_OK;
	}
}

/* The guests' budget: --guest-*. */
static int guest_limit(struct cli_rec_args *a, int c, const char *arg)
{
	struct rec_record_opts *o = &a->o;
	unsigned long n;
	uint64_t v;

	switch (c) {
	case O_OPEN_TO:
		return deadline_ms(a, "--guest-open-timeout", arg, &o->guest_open_ms);
	case O_STOP_TO:
		return deadline_ms(a, "--guest-stop-timeout", arg, &o->guest_stop_ms);
	case O_MAX_CPUS:
		if (tcx_parse_uint(arg, TMSG_MAX_CPUS, &n) || !n)
			return err(a, CLI_EXIT_USAGE, "--guest-max-cpus %s: CPUs, 1..%d", arg,
				   TMSG_MAX_CPUS);
		o->guest_max_cpus = (unsigned int)n;
		return CLI_EXIT_OK;
	case O_MAX_META:
		if (tcx_parse_size(arg, 1ull << 32, &v) || v < 4096)
			return err(a, CLI_EXIT_USAGE, "--guest-max-meta %s: bytes (K, M, G "
				   "allowed), 4K..4G", arg);
		o->guest_max_meta = (size_t)v;
		return CLI_EXIT_OK;
	default:
		if (tcx_parse_size(arg, UINT64_MAX, &v) || !v)
			return err(a, CLI_EXIT_USAGE, "--guest-max-bytes %s: bytes (K, M, G "
				   "allowed), at least 1", arg);
		o->guest_max_bytes = v;
		return CLI_EXIT_OK;
	}
}

/* The recording's own options, anywhere on the line. */
static int global_opt(struct cli_rec_args *a, int c, const char *arg)
{
	const char *names[8];
	size_t len;
	int ret;

	switch (c) {
	case O_XEN:
		a->xen = true;
		return CLI_EXIT_OK;
	case O_NO_DOM0:
		a->o.no_dom0 = true;
		return CLI_EXIT_OK;
	case O_DURATION:
		return seconds(a, "--duration", arg, &a->o.duration);
	case O_RAW:
		a->o.raw = arg;
		return CLI_EXIT_OK;
	case O_SUMMARY:
		a->o.summary_json = arg;
		a->summary_set = true;
		return CLI_EXIT_OK;
	case O_SESSION:
		if (!*arg)
			return err(a, CLI_EXIT_USAGE, "--session: a directory name, not \"\"");
		a->session = arg;
		return CLI_EXIT_OK;
	case O_REPEAT: {
		char *end;
		long n;

		errno = 0;
		n = strtol(arg, &end, 10);
		if (errno || end == arg || *end || n < 1 || n > 10000)
			return err(a, CLI_EXIT_USAGE, "--repeat %s: runs, 1..10000", arg);
		a->repeat = (int)n;
		return CLI_EXIT_OK;
	}
	case O_FAIL_LOSS:
		a->fail_on_loss = true;
		a->o.fail_on_loss = true;
		return CLI_EXIT_OK;
	case O_TSYNC:
		if (tsync_parse_offer(arg, names, 8) < 0)
			return err(a, CLI_EXIT_USAGE, "--tsync %s: %s", arg, tcx_error());
		a->o.tsync = arg;
		return CLI_EXIT_OK;
	case O_TSYNC_IVL:
		return tsync_interval(a, arg);
	case O_SECRET:
		ret = cli_read_secret(arg, a->secret, &len);
		if (ret)
			return err(a, CLI_EXIT_USAGE, "--secret-file: %s", tcx_error());
		a->o.secret = a->secret;
		a->o.secret_len = len;
		return CLI_EXIT_OK;
	case O_XEN_EVENTS:
	case O_XEN_CPUS:
	case O_XEN_PAGES:
		return xen_knob(a, c, arg);
	case O_TSC2NSEC:
		return CLI_EXIT_OK;	/* every file has TSC2NSEC */
	case 'o':
		a->o.output = arg;
		a->output_set = true;
		return CLI_EXIT_OK;
	case 'q':
		a->o.quiet = true;
		return CLI_EXIT_OK;
	default:
		return guest_limit(a, c, arg);
	}
}

/* The option as the agent is sent it (a literal: the words outlive the parse). */
static const char *word_of(int c)
{
	switch (c) {
	case 'e': return "-e";
	case 'f': return "-f";
	case 'v': return "-v";
	case 'p': return "-p";
	case 'l': return "-l";
	case 'n': return "-n";
	case 'g': return "-g";
	case 'T': return "-T";
	case 's': return "-s";
	case 'm': return "-m";
	case 'b': return "-b";
	default: return "--max-graph-depth";
	}
}

/* What trace-cmd's -e ... -T do, for dom0 (ft) and a guest (its words). */
static int ftrace_opt(struct cli_rec_args *a, struct cli_rec_inst *in, int c,
		      const char *opt, const char *arg)
{
	struct rec_ftrace_opts *ft = &in->ft;
	bool guest = in->spec != NULL;
	unsigned long v;
	int ret = 0, lvl;

	switch (c) {
	case 'e': {
		struct rec_event_sel *ne = grow(in->ev, ft->nr_events, sizeof(*ne));

		if (!ne)
			return CLI_EXIT_FAIL;
		in->ev = ne;
		ne[ft->nr_events++] = (struct rec_event_sel){ .event = arg,
							      .exclude = in->exclude };
		ft->events = ne;
		in->filtered = false;
		break;
	}
	case 'f':
		if (!ft->nr_events || in->filtered || in->exclude)
			return err(a, CLI_EXIT_USAGE, "-f %s: a filter goes right after the -e "
				   "it is for (one -f per -e, not after -v)", arg);
		in->ev[ft->nr_events - 1].filter = arg;
		in->filtered = true;
		break;
	case 'v':
		in->exclude = true;
		break;
	case 'p':
		ft->tracer = arg;
		break;
	case 'l':
		ret = add_str(&in->funcs, &ft->nr_funcs, arg);
		ft->funcs = in->funcs;
		break;
	case 'n':
		ret = add_str(&in->notrace, &ft->nr_notrace, arg);
		ft->notrace = in->notrace;
		break;
	case 'g':
		ret = add_str(&in->graph, &ft->nr_graph, arg);
		ft->graph = in->graph;
		break;
	case O_GRAPH_DEPTH:
		ret = uint_arg(a, opt, arg, 1u << 20, &v, "a call depth");
		ft->max_graph_depth = (unsigned int)v;
		if (ret)
			return ret;
		break;
	case 'T':
		ft->stacktrace = true;
		break;
	case 's':
		ret = uint_arg(a, opt, arg, 60000000, &v, "microseconds between reads");
		ft->sleep_us = v;
		if (ret)
			return ret;
		break;
	case 'm':
		ret = uint_arg(a, opt, arg, 1ul << 30, &v, "KiB per CPU");
		ft->max_kb = v;
		if (ret)
			return ret;
		break;
	case 'b':
		ret = uint_arg(a, opt, arg, guest ? 262144 : 1u << 30, &v, "KiB per CPU");
		ft->buffer_kb = (unsigned int)v;
		if (ret)
			return ret;
		break;
	case 'C':
		if (strcmp(arg, "x86-tsc"))
			return err(a, CLI_EXIT_USAGE, "-C %s: only x86-tsc: the hypervisor's, "
				   "dom0's and the guests' files share that clock, and with %s "
				   "they could no longer", arg, arg);
		return CLI_EXIT_OK;	/* the agents are sent -C x86-tsc always */
	case O_VERBOSE:
		lvl = verbose_level(arg);
		if (lvl < 0)
			return err(a, CLI_EXIT_USAGE, "--verbose=%s: none, critical, error, "
				   "warning, info, debug, all, or 0..6", arg);
		ft->verbose = lvl;
		break;
	}
	if (ret)
		return CLI_EXIT_FAIL;
	if (!guest)
		return CLI_EXIT_OK;
	/* the guest's agent gets the option as trace-cmd sends it */
	if (c == O_VERBOSE) {
		snprintf(in->verbose_word, sizeof(in->verbose_word), "--verbose=%s",
			 level_names[lvl]);
		ret = add_words(in, in->verbose_word, NULL);
	} else {
		ret = add_words(in, word_of(c), arg);
	}
	return ret ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* -M, -P, -F, -c: dom0's alone. */
static int dom0_opt(struct cli_rec_args *a, struct cli_rec_inst *in, int c,
		    const char *opt, const char *arg)
{
	struct rec_ftrace_opts *ft = &in->ft;
	unsigned long v;
	int *np;

	if (in->spec)
		return err(a, CLI_EXIT_USAGE, "%s after -A %s: %s", opt, in->spec,
			   find_opt(opt)->why);
	switch (c) {
	case 'M':
		return cpu_mask(a, in, arg);
	case 'P':
		if (tcx_parse_uint(arg, 1u << 22, &v) || !v)
			return err(a, CLI_EXIT_USAGE, "-P %s: a process id", arg);
		np = grow(in->pids, ft->nr_pids, sizeof(*np));
		if (!np)
			return CLI_EXIT_FAIL;
		in->pids = np;
		np[ft->nr_pids++] = (int)v;
		ft->pids = np;
		return CLI_EXIT_OK;
	case 'F':
		ft->filter_command = true;
		return CLI_EXIT_OK;
	default:
		ft->children = true;
		return CLI_EXIT_OK;
	}
}

static int refused(struct cli_rec_args *a, const char *opt)
{
	const struct cli_rec_opt *o = find_opt(opt);

	return err(a, CLI_EXIT_USAGE, "%s: trace-cmd's, not taken by trace-cmd-xen record "
		   "--xen: %s", opt, o && o->why ? o->why : "not supported");
}

/* The option's name as the user gave it: "-e", "--max-graph-depth". */
static const char *opt_name(char *buf, size_t size, int c, int longidx)
{
	if (longidx >= 0)
		snprintf(buf, size, "--%s", longopts[longidx].name);
	else
		snprintf(buf, size, "-%c", c);
	return buf;
}

static int take(struct cli_rec_args *a, int c, int longidx)
{
	struct cli_rec_inst *in = &a->inst[a->ninst - 1];
	char opt[48];

	opt_name(opt, sizeof(opt), c, longidx);
	switch (c) {
	case 'A':
		if (new_inst(a, optarg))
			return CLI_EXIT_FAIL;
		return CLI_EXIT_OK;
	case O_NAME:
		if (!in->spec)
			return err(a, CLI_EXIT_USAGE, "--name %s: names a guest: give it after "
				   "its -A", optarg);
		if (in->name)
			return err(a, CLI_EXIT_USAGE, "--name %s: -A %s is named %s already",
				   optarg, in->spec, in->name);
		in->name = optarg;
		return CLI_EXIT_OK;
	case 'e': case 'f': case 'v': case 'p': case 'l': case 'n': case 'g':
	case 'T': case 's': case 'm': case 'b': case 'C': case O_GRAPH_DEPTH:
	case O_VERBOSE:
		return ftrace_opt(a, in, c, opt, optarg);
	case 'M': case 'P': case 'F': case 'c':
		return dom0_opt(a, in, c, opt, optarg);
	case O_REFUSED:
	case 'a': case 'R': case 'd': case 'D': case 'O': case 'r': case 'B':
	case 'k': case 'i': case 'N': case 'V': case 't': case 'G': case 'H': case 'S':
		return refused(a, opt);
	default:
		return global_opt(a, c, optarg);
	}
}

/* After the options: what each instance's settings mean together. */
static int check(struct cli_rec_args *a, bool command)
{
	const struct rec_ftrace_opts *d = &a->inst[0].ft;

	if (!a->xen)
		return err(a, CLI_EXIT_USAGE, "--xen is required: trace-cmd-xen records a Xen "
			   "host (the stock trace-cmd record does the rest)");
	if (d->filter_command && !command)
		return err(a, CLI_EXIT_USAGE, "-F: filters the command's events, but no "
			   "command was given");
	if (d->children && !d->filter_command && !d->nr_pids)
		return err(a, CLI_EXIT_USAGE, "-c: traces the children of -F's command or -P's "
			   "processes, and neither was given (Xen's pCPUs are --xen-cpus)");
	if (a->o.no_dom0 && (d->nr_events || d->tracer || d->filter_command || d->nr_pids))
		return err(a, CLI_EXIT_USAGE, "--no-dom0 records no dom0 ftrace: its options "
			   "(before the first -A) would go unused");
	if (a->repeat > 1 && !a->session)
		return err(a, CLI_EXIT_USAGE, "--repeat %d: needs --session DIR (each run is "
			   "DIR/run-N)", a->repeat);
	if (a->repeat > 1 && !command)
		return err(a, CLI_EXIT_USAGE, "--repeat %d: repeats a command, and none was "
			   "given", a->repeat);
	if (a->session && a->output_set)
		return err(a, CLI_EXIT_USAGE, "-o: a session's files are DIR/trace.dat, "
			   "DIR/trace-dom0.dat...: leave -o out with --session");
	if (a->session && a->summary_set)
		return err(a, CLI_EXIT_USAGE, "--summary-json: a session writes "
			   "DIR/summary.json: leave it out with --session");
	for (int i = 1; i < a->ninst; i++) {
		const struct cli_rec_inst *g = &a->inst[i];

		if (g->exclude && !g->ft.nr_events)
			return err(a, CLI_EXIT_USAGE, "-A %s -v: no -e after it", g->spec);
	}
	return CLI_EXIT_OK;
}

int cli_rec_parse(struct cli_rec_args *a, int argc, char **argv)
{
	int c, longidx, ret = CLI_EXIT_OK;

	memset(a, 0, sizeof(*a));
	a->o.output = "trace.dat";
	a->o.log = stderr;
	a->o.argv = argv;
	a->o.argc = argc;
	a->repeat = 1;
	if (new_inst(a, NULL))
		return err(a, CLI_EXIT_FAIL, "out of memory");
	optind = 0;	/* glibc: start afresh, whatever an earlier parse left */
	opterr = 0;
	while (ret == CLI_EXIT_OK) {
		longidx = -1;
		c = getopt_long(argc, argv, shortopts, longopts, &longidx);
		if (c == -1)
			break;
		if (c == 'h') {
			a->help = true;
			return CLI_EXIT_OK;
		}
		if (c == '?') {
			if (optopt && optopt < 256)
				return err(a, CLI_EXIT_USAGE, "unknown option -%c", optopt);
			return err(a, CLI_EXIT_USAGE, "unknown option %s", argv[optind - 1]);
		}
		if (c == ':') {
			if (optopt && optopt < 256)
				return err(a, CLI_EXIT_USAGE, "-%c needs a value", optopt);
			return err(a, CLI_EXIT_USAGE, "%s needs a value", argv[optind - 1]);
		}
		ret = take(a, c, longidx);
	}
	if (ret == CLI_EXIT_FAIL && !a->err[0])
		err(a, ret, "out of memory");
	if (ret)
		return ret;
	if (optind < argc)
		a->o.command = argv + optind;
	ret = check(a, a->o.command != NULL);
	if (ret)
		return ret;

	a->o.dom0 = &a->inst[0].ft;
	a->o.nr_guests = a->ninst - 1;
	if (!a->o.nr_guests)
		return CLI_EXIT_OK;
	a->specs = calloc((size_t)a->o.nr_guests, sizeof(*a->specs));
	a->gargs = calloc((size_t)a->o.nr_guests, sizeof(*a->gargs));
	if (!a->specs || !a->gargs)
		return err(a, CLI_EXIT_FAIL, "out of memory");
	for (int i = 0; i < a->o.nr_guests; i++) {
		const struct cli_rec_inst *g = &a->inst[i + 1];

		a->specs[i] = g->spec;
		a->gargs[i] = (struct rec_guest_args){ .name = g->name, .argv = g->words,
						       .argc = g->nwords };
	}
	a->o.guests = a->specs;
	a->o.guest_args = a->gargs;
	return CLI_EXIT_OK;
}

void cli_rec_args_free(struct cli_rec_args *a)
{
	for (int i = 0; i < a->ninst; i++) {
		struct cli_rec_inst *in = &a->inst[i];

		free(in->ev);
		free(in->funcs);
		free(in->notrace);
		free(in->graph);
		free(in->pids);
		free(in->words);
	}
	free(a->inst);
	free(a->specs);
	free(a->gargs);
	a->inst = NULL;
	a->specs = NULL;
	a->gargs = NULL;
	a->ninst = 0;
	explicit_bzero(a->secret, sizeof(a->secret));
}
