// SPDX-License-Identifier: GPL-2.0
/*
 * A simulated guest kernel: a directory shaped like tracefs, with
 * events/<system>/<event>/format, events/header_page, per_cpu/cpuN/
 * trace_pipe_raw fed by the simulator, and maybe trace_clock. There is no
 * instance: the agent writes the control files the directory has (enable,
 * filter, current_tracer, ...; agent-apply.c, which writes them back at the
 * end), and the names it uses come from listing the directory, never from
 * the peer.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent-internal.h"
#include "tcx-util.h"

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Highest N of per_cpu/cpuN with a trace_pipe_raw, plus one. */
static int count_cpus(const char *dir)
{
	char path[4096];
	struct dirent *d;
	DIR *pd;
	int n = 0;

	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	pd = opendir(path);
	if (!pd)
		return 0;
	while ((d = readdir(pd))) {
		char *end;
		long cpu;

		if (strncmp(d->d_name, "cpu", 3))
			continue;
		cpu = strtol(d->d_name + 3, &end, 10);
		if (*end || cpu < 0 || cpu >= TMSG_MAX_CPUS)
			continue;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%ld/trace_pipe_raw",
			 dir, cpu);
		if (!access(path, R_OK) && cpu + 1 > n)
			n = (int)cpu + 1;
	}
	closedir(pd);
	return n;
}

static int add_match(struct agent_trace *tr, const char *sys, const char *ev)
{
	struct agent_event *e;

	for (int i = 0; i < tr->nr_events; i++)
		if (!strcmp(tr->events[i].system, sys) &&
		    !strcmp(tr->events[i].name, ev))
			return 0;
	e = realloc(tr->events, (tr->nr_events + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	tr->events = e;
	e += tr->nr_events++;
	snprintf(e->system, sizeof(e->system), "%s", sys);
	snprintf(e->name, sizeof(e->name), "%s", ev);
	return 0;
}

/* Add every event whose system matches @sp and name @ep; count them. */
static int match_events(struct agent_trace *tr, const char *sp, const char *ep,
			int *found)
{
	char path[4096];
	struct dirent *s, *e;
	DIR *sd, *ed;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/events", tr->sim_dir);
	sd = opendir(path);
	if (!sd)
		return -ENOENT;
	while (!ret && (s = readdir(sd))) {
		if (s->d_name[0] == '.' || strlen(s->d_name) >= 64 ||
		    fnmatch(sp, s->d_name, 0))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", tr->sim_dir,
			 s->d_name);
		ed = is_dir(path) ? opendir(path) : NULL;
		while (ed && !ret && (e = readdir(ed))) {
			if (e->d_name[0] == '.' || strlen(e->d_name) >= 64 ||
			    fnmatch(ep, e->d_name, 0))
				continue;
			snprintf(path, sizeof(path), "%s/events/%s/%s/format",
				 tr->sim_dir, s->d_name, e->d_name);
			if (access(path, R_OK))
				continue;
			ret = add_match(tr, s->d_name, e->d_name);
			++*found;
		}
		if (ed)
			closedir(ed);
	}
	closedir(sd);
	return ret;
}

/* trace-cmd's -e: "sys:event", or a name as a system, else as an event. */
static int add_event(struct agent_trace *tr, const char *ev)
{
	const char *colon = strchr(ev, ':');
	char sys[64], name[64];
	int found = 0, ret;

	if (colon) {
		snprintf(sys, sizeof(sys), "%.*s", (int)(colon - ev), ev);
		snprintf(name, sizeof(name), "%s", colon + 1);
		ret = match_events(tr, sys, name, &found);
	} else {
		ret = match_events(tr, ev, "*", &found);
		if (!ret && !found)
			ret = match_events(tr, "*", ev, &found);
	}
	return ret ? ret : found ? 0 : -ENOENT;
}

/* The clock in trace_clock: the bracketed one, or the only word. */
static bool sim_clock(const char *dir, char *clock, size_t len)
{
	char path[4096], buf[256], *b, *e;
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace_clock", dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	b = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!b)
		return false;
	buf[strcspn(buf, "\n")] = 0;
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (b && e) {
		*e = 0;
		b++;
	} else {
		b = buf;
	}
	if (strlen(b) >= len)
		return false;
	memcpy(clock, b, strlen(b) + 1);
	return true;
}

int agent_sim_setup(struct agent_trace *tr, const char *dir,
		    const struct agent_record_opts *o)
{
	char clock[64];

	tr->sim_dir = strdup(dir);
	if (!tr->sim_dir)
		return tcx_fail(-ENOMEM, "out of memory");
	tr->ncpus = count_cpus(dir);
	if (!tr->ncpus) {
		tcx_fail(-EINVAL, "%s has no per_cpu/cpuN/trace_pipe_raw", dir);
		goto fail;
	}
	/* Its clock is what the simulator stamps with; we cannot change it. */
	if (o->clock[0] && sim_clock(dir, clock, sizeof(clock)) &&
	    strcmp(clock, o->clock)) {
		tcx_fail(-EINVAL, "this guest traces with clock \"%s\", not \"%s\"",
			 clock, o->clock);
		goto fail;
	}
	for (int i = 0; i < o->nr_events; i++) {
		if (o->exclude[i])
			continue;	/* agent_apply() drops them, in order */
		if (add_event(tr, o->events[i])) {
			tcx_fail(-EINVAL, "no event matches \"%s\"",
				 o->events[i]);
			goto fail;
		}
	}
	if (!agent_opts_enabled(o) && add_event(tr, AGENT_DEFAULT_EVENT)) {
		tcx_fail(-EINVAL, "no " AGENT_DEFAULT_EVENT " in %s", dir);
		goto fail;
	}
	if (agent_apply(tr, o))
		goto fail;
	if (!tr->nr_events) {
		tcx_fail(-EINVAL, "-v excluded every event -e matched");
		goto fail;
	}
	return 0;
fail:
	{
		char why[512];

		snprintf(why, sizeof(why), "%s", tcx_error());
		agent_trace_teardown(tr);
		return tcx_fail(-EINVAL, "%s", why);
	}
}
