// SPDX-License-Identifier: GPL-2.0
/*
 * The allow-list of record options a peer may send in TRACE_REQ ARGS.
 * trace-cmd's agent runs whatever `record` options the host sends, as
 * root; ours applies only events, buffer size, clock and file version, and
 * checks every value so that no peer input becomes a path or a regex.
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

static int add_event(struct agent_record_opts *o, const char *ev)
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
	snprintf(o->events[o->nr_events++], sizeof(o->events[0]), "%s", ev);
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

	memset(o, 0, sizeof(*o));
	o->file_version = 6;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val;
		int ret;

		if (is_opt(a, "-e")) {
			val = value_of(argc, argv, &i, "-e");
			if (!val)
				return tcx_fail(-EINVAL, "%s needs an event", a);
			ret = add_event(o, val);
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
				      "(allowed: -e, -b, -C, --file-version, --compression none)", a);
		} else {
			return tcx_fail(-EPERM,
				      "the agent runs no commands (got \"%.64s\")", a);
		}
		if (ret)
			return ret;
	}
	return 0;
}
