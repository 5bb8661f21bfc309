// SPDX-License-Identifier: GPL-2.0
/*
 * dom0's own ftrace, recorded beside the hypervisor: a tracefs instance of
 * ours (never the top instance's settings, nothing global such as
 * ftrace_enabled or set_ftrace_filter, which these kernels deny) on the
 * x86-tsc clock, whose per-CPU raw ring-buffer pages go as they are into
 * trace-dom0.dat through tdat_write_page().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracefs.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"

#define INSTANCE_PREFIX	"tcx-record-"

struct rec_dom0 {
	struct tracefs_instance	*inst;
	struct tdat_writer	*w;
	int			ncpus;
	int			*fd;		/* per CPU trace_pipe_raw, non-blocking */
	uint8_t			*page;
	uint32_t		page_size;
	uint64_t		pages;
	unsigned long		max_kb;		/* -m: the buffer's size, read at the stop */
	bool			stopped;	/* tracing off: -m's pages may be read */
	uint64_t		*overrun;	/* per CPU, -m: events the ring overwrote */
	uint64_t		*cpu_pages;	/* per CPU: pages into the file */
	FILE			*log;
	unsigned long		old_depth;	/* max_graph_depth + 1 to put back (0: none) */
	int			err;		/* the first write error: sticky */
	char			errmsg[TCX_ERROR_MAX];
};

void rec_dom0_cleanup_stale(FILE *log)
{
	tdat_remove_stale_instances(INSTANCE_PREFIX, log, "trace-cmd-xen record");
}

/* Every task of dom0 now, and what the kernel remembers of earlier ones. */
static void add_cmdlines(struct tdat_writer *w, const pid_t *extra, int nextra)
{
	char path[64], comm[32];
	struct dirent *e;
	DIR *dir;

	tdat_add_saved_cmdlines(w);
	dir = opendir("/proc");
	while (dir && (e = readdir(dir))) {
		int pid = atoi(e->d_name);
		DIR *tdir;
		struct dirent *t;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		tdir = opendir(path);
		while (tdir && (t = readdir(tdir))) {
			int tid = atoi(t->d_name);
			FILE *f;

			if (tid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f)) {
				comm[strcspn(comm, "\n")] = 0;
				tdat_add_cmdline(w, tid, comm);
			}
			fclose(f);
		}
		if (tdir)
			closedir(tdir);
	}
	if (dir)
		closedir(dir);
	for (int i = 0; i < nextra; i++)
		tdat_add_cmdline(w, extra[i], "command");
}

/* ---- trace-cmd record's options on our instance ---- */

/*
 * A file of the instance (or the top one's, @inst NULL) written or
 * appended; a write the kernel denies says so and names the file.
 */
static int inst_write(struct tracefs_instance *inst, const char *file, const char *val,
		      bool append, const char *opt)
{
	int r;

	if (!tracefs_file_exists(inst, file))
		return tcx_fail(-ENOENT, "dom0: %s needs the tracefs file %s, which this "
				"kernel does not have", opt, file);
	errno = 0;
	r = append ? tracefs_instance_file_append(inst, file, val)
		   : tracefs_instance_file_write(inst, file, val);
	if (r >= 0)
		return 0;
	r = errno ? errno : EIO;
	if (r == EPERM || r == EACCES)
		return tcx_fail(-r, "dom0: %s needs to write \"%s\" to the tracefs file %s, "
				"which the kernel denies (%s)", opt, val, file, strerror(r));
	return tcx_fail(-r, "dom0: %s: writing \"%s\" to the tracefs file %s: %s", opt,
			val, file, strerror(r));
}

struct ev_match {
	struct tracefs_instance	*inst;
	const struct rec_event_sel *sel;
	int			n;
};

/* One event an -e names: its filter, or (after -v) off. */
static int apply_event(struct ev_match *m, const char *sys, const char *ev)
{
	const char *file = m->sel->exclude ? "enable" : "filter";
	const char *val = m->sel->exclude ? "0" : m->sel->filter;

	m->n++;
	if (tracefs_event_file_write(m->inst, sys, ev, file, val) >= 0)
		return 0;
	if (m->sel->exclude)
		return tcx_fail(-EIO, "dom0: -v -e %s: cannot turn %s:%s off", m->sel->event,
				sys, ev);
	return tcx_fail(-EINVAL, "dom0: -e %s -f '%s': the kernel refuses the filter for "
			"%s:%s (see its events/%s/%s/format)", m->sel->event, val, sys, ev,
			sys, ev);
}

/* Every event @sel->event names, as tdat_enable_event() matches it. */
static int each_event(struct ev_match *m)
{
	const char *spec = m->sel->event, *colon = strchr(spec, ':');
	char **systems = tracefs_event_systems(NULL);
	char sys_pat[160], ev_pat[160];
	bool by_sys = false;
	int ret = 0;

	if (colon) {
		snprintf(sys_pat, sizeof(sys_pat), "%.*s", (int)(colon - spec), spec);
		snprintf(ev_pat, sizeof(ev_pat), "%s", colon + 1);
	} else {
		/* a system's name first, else an event's in any system */
		for (int i = 0; systems && systems[i] && !by_sys; i++)
			by_sys = !fnmatch(spec, systems[i], 0);
		snprintf(sys_pat, sizeof(sys_pat), "%s", by_sys ? spec : "*");
		snprintf(ev_pat, sizeof(ev_pat), "%s", by_sys ? "*" : spec);
	}
	for (int i = 0; !ret && systems && systems[i]; i++) {
		char **evs;

		if (fnmatch(sys_pat, systems[i], 0))
			continue;
		evs = tracefs_system_events(NULL, systems[i]);
		for (int j = 0; !ret && evs && evs[j]; j++)
			if (!fnmatch(ev_pat, evs[j], 0))
				ret = apply_event(m, systems[i], evs[j]);
		tracefs_list_free(evs);
	}
	tracefs_list_free(systems);
	return ret;
}

/* -e in order: on (with a filter) or, after -v, off. */
static int set_events(struct tracefs_instance *inst, const struct rec_ftrace_opts *ft)
{
	for (int i = 0; ft && i < ft->nr_events; i++) {
		const struct rec_event_sel *e = &ft->events[i];
		struct ev_match m = { .inst = inst, .sel = e };
		int ret;

		if (!e->exclude && tdat_enable_event(inst, e->event) < 0)
			return tcx_fail(-EINVAL, "dom0: no event matches \"%s\" "
					"(see /sys/kernel/tracing/available_events)", e->event);
		if (!e->exclude && !e->filter)
			continue;
		ret = each_event(&m);
		if (ret)
			return ret;
		if (!m.n)
			return tcx_fail(-EINVAL, "dom0: no event matches \"%s\" (see "
					"/sys/kernel/tracing/available_events)", e->event);
	}
	if ((!ft || !ft->nr_events) && tdat_enable_event(inst, REC_DOM0_DEFAULT_EVENT) < 0)
		return tcx_fail(-EINVAL, "dom0: cannot enable " REC_DOM0_DEFAULT_EVENT);
	return 0;
}

static int append_list(struct tracefs_instance *inst, const char *file, const char *opt,
		       const char *const *list, int n)
{
	char what[80];

	for (int i = 0; i < n; i++) {
		int ret;

		snprintf(what, sizeof(what), "%s %s", opt, list[i]);
		ret = inst_write(inst, file, list[i], true, what);
		if (ret)
			return ret;
	}
	return 0;
}

/* Function tracers need the global ftrace switch, which we never turn on. */
static int check_ftrace_enabled(const char *opt)
{
	FILE *f = fopen("/proc/sys/kernel/ftrace_enabled", "r");
	int v = 1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 1;
		fclose(f);
	}
	if (!v)
		return tcx_fail(-EPERM, "dom0: %s needs function tracing, which the global "
				"/proc/sys/kernel/ftrace_enabled turns off (0); trace-cmd-xen "
				"does not change it", opt);
	return 0;
}

static int set_tracer(struct rec_dom0 *d, const struct rec_ftrace_opts *ft)
{
	char opt[80], *avail;
	bool found = false;
	int ret;

	snprintf(opt, sizeof(opt), "-p %s", ft->tracer);
	avail = tracefs_instance_file_read(d->inst, "available_tracers", NULL);
	for (char *save = NULL, *t = avail ? strtok_r(avail, " \n", &save) : NULL; t;
	     t = strtok_r(NULL, " \n", &save))
		found |= !strcmp(t, ft->tracer);
	if (!found) {
		ret = tcx_fail(-EINVAL, "dom0: %s: no such tracer in this kernel "
			       "(available_tracers: %s)", opt, avail ? avail : "none");
		free(avail);
		return ret;
	}
	free(avail);
	if (strcmp(ft->tracer, "nop")) {
		ret = check_ftrace_enabled(opt);
		if (ret)
			return ret;
	}
	return inst_write(d->inst, "current_tracer", ft->tracer, false, opt);
}

/* --max-graph-depth: the top instance's, put back at the end. */
static int set_graph_depth(struct rec_dom0 *d, unsigned int depth)
{
	char val[16], *old;
	int ret;

	old = tracefs_instance_file_read(NULL, "max_graph_depth", NULL);
	snprintf(val, sizeof(val), "%u", depth);
	ret = inst_write(NULL, "max_graph_depth", val, false, "--max-graph-depth");
	if (!ret && old)
		d->old_depth = strtoul(old, NULL, 10) + 1;
	free(old);
	return ret;
}

static int set_pids(struct rec_dom0 *d, const struct rec_ftrace_opts *ft,
		    const struct rec_dom0_opts *o)
{
	char pid[16];
	int ret = 0;

	for (int i = 0; !ret && i < ft->nr_pids + (ft->filter_command ? o->npids : 0); i++) {
		int p = i < ft->nr_pids ? ft->pids[i] : o->pids[i - ft->nr_pids];

		snprintf(pid, sizeof(pid), "%d", p);
		ret = inst_write(d->inst, "set_event_pid", pid, true, i < ft->nr_pids ? "-P" : "-F");
		if (!ret && ft->tracer && strcmp(ft->tracer, "nop"))
			ret = inst_write(d->inst, "set_ftrace_pid", pid, true,
					 i < ft->nr_pids ? "-P" : "-F");
	}
	if (!ret && ft->children)
		ret = inst_write(d->inst, "options/event-fork", "1", false, "-c");
	if (!ret && ft->children && ft->tracer && strcmp(ft->tracer, "nop"))
		ret = inst_write(d->inst, "options/function-fork", "1", false, "-c");
	return ret;
}

/* Everything trace-cmd record's options ask of dom0's instance. */
static int set_ftrace(struct rec_dom0 *d, const struct rec_dom0_opts *o)
{
	const struct rec_ftrace_opts *ft = o->ft;
	int ret;

	if (ft && ft->verbose >= 0)
		tracefs_set_loglevel((enum tep_loglevel)ft->verbose);
	if (ft && ft->max_kb) {
		/* -m: the kernel's ring keeps the newest KiB, read at the stop */
		if (ft->buffer_kb && ft->buffer_kb != ft->max_kb && d->log)
			fprintf(d->log, "dom0: -b %u ignored: -m %lu sets the buffer size\n",
				ft->buffer_kb, ft->max_kb);
		if (tracefs_instance_set_buffer_size(d->inst, ft->max_kb, -1) < 0)
			return tcx_fail(-EINVAL, "dom0: cannot set a %lu KiB buffer (-m)",
					ft->max_kb);
	} else if (ft && ft->buffer_kb &&
		   tracefs_instance_set_buffer_size(d->inst, ft->buffer_kb, -1) < 0) {
		return tcx_fail(-EINVAL, "dom0: cannot set a %u KiB buffer (-b)", ft->buffer_kb);
	}
	ret = set_events(d->inst, ft);
	if (ret || !ft)
		return ret;
	if (ft->cpumask)
		ret = inst_write(d->inst, "tracing_cpumask", ft->cpumask, false, "-M");
	if (!ret && ft->stacktrace)
		ret = inst_write(d->inst, "options/stacktrace", "1", false, "-T");
	if (!ret && ft->nr_funcs)
		ret = append_list(d->inst, "set_ftrace_filter", "-l", ft->funcs, ft->nr_funcs);
	if (!ret && ft->nr_notrace)
		ret = append_list(d->inst, "set_ftrace_notrace", "-n", ft->notrace,
				  ft->nr_notrace);
	if (!ret && ft->nr_graph)
		ret = append_list(d->inst, "set_graph_function", "-g", ft->graph, ft->nr_graph);
	if (!ret && ft->max_graph_depth)
		ret = set_graph_depth(d, ft->max_graph_depth);
	if (!ret)
		ret = set_pids(d, ft, o);
	if (!ret && ft->tracer)
		ret = set_tracer(d, ft);
	return ret;
}

int rec_dom0_open(struct rec_dom0 **out, const struct rec_dom0_opts *o)
{
	struct tdat_params tp = { .clock = "x86-tsc" };
	struct rec_dom0 *d;
	struct utsname u;
	char name[64], uts[400], msg[TCX_ERROR_MAX], *hp, *dir = NULL;
	int hp_size, ret;

	*out = NULL;
	if (!tracefs_tracing_dir())
		return tcx_fail(-ENOENT, "dom0: tracefs is not mounted "
			     "(mount -t tracefs nodev /sys/kernel/tracing)");
	d = calloc(1, sizeof(*d));
	if (!d)
		return tcx_fail(-ENOMEM, "out of memory");
	d->page_size = (uint32_t)getpagesize();
	d->log = o->log;
	d->max_kb = o->ft ? o->ft->max_kb : 0;
	d->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d", (int)getpid());
	d->inst = tracefs_instance_create(name);
	if (!d->inst) {
		int e = errno ? errno : EIO;

		ret = tcx_fail(-e, "dom0: cannot create the tracefs instance %s: %s", name,
			       strerror(e));
		goto fail;
	}
	tracefs_trace_off(d->inst);
	if (tracefs_instance_file_write(d->inst, "trace_clock", "x86-tsc") < 0) {
		ret = tcx_fail(-EINVAL, "dom0: the x86-tsc trace clock is not "
			    "available: dom0's events cannot share the hypervisor's clock");
		goto fail;
	}
	ret = set_ftrace(d, o);
	if (ret)
		goto fail;

	tp.version = o->file_version ? o->file_version : 7;
	tp.page_size = d->page_size;
	tp.max_cpus = d->ncpus;
	tp.cpus = d->ncpus;
	d->w = tdat_open(o->path, &tp);
	if (!d->w) {
		ret = tcx_fail(errno ? -errno : -EIO, "%s: %s", o->path, tcx_error());
		goto fail;
	}
	hp = tracefs_event_file_read(NULL, NULL, "header_page", NULL, &hp_size);
	if (hp) {
		tdat_set_header_page(d->w, hp, hp_size);
		free(hp);
	}
	ret = tdat_add_instance_formats(d->w, d->inst);
	ret = ret < 0 ? ret : 0;
	if (ret) {
		ret = tcx_fail(ret, "dom0: no event format could be read");
		goto fail;
	}
	add_cmdlines(d->w, o->pids, o->npids);
	ret = tdat_set_traceid(d->w, o->traceid);
	if (!ret && o->mult)
		ret = tdat_set_tsc2nsec(d->w, o->mult, o->shift, 0);
	if (!ret && !uname(&u)) {
		snprintf(uts, sizeof(uts), "%s %s %s %s", u.sysname, u.nodename, u.release,
			 u.machine);
		ret = tdat_set_uname(d->w, uts);
	}
	if (!ret)
		ret = tdat_start_data(d->w);
	if (ret) {
		ret = tcx_fail(ret, "%s: %s", o->path, tcx_error());
		goto fail;
	}
	d->page = malloc(d->page_size);
	d->fd = calloc(d->ncpus, sizeof(*d->fd));
	d->cpu_pages = calloc(d->ncpus, sizeof(*d->cpu_pages));
	d->overrun = calloc(d->ncpus, sizeof(*d->overrun));
	if (!d->page || !d->fd || !d->cpu_pages || !d->overrun) {
		ret = tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}
	dir = tracefs_instance_get_dir(d->inst);
	for (int c = 0; c < d->ncpus; c++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", dir, c);
		d->fd[c] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	}
	tracefs_put_tracing_file(dir);
	*out = d;
	return 0;
fail:
	/* closing may fail too: the message is the first failure's */
	snprintf(msg, sizeof(msg), "%s", tcx_error());
	rec_dom0_close(d);
	return tcx_fail(ret, "%s", msg);
}

int rec_dom0_start(struct rec_dom0 *d)
{
	if (tracefs_trace_on(d->inst) < 0)
		return tcx_fail(-EIO, "dom0: cannot turn tracing on");
	return 0;
}

int rec_dom0_drain(struct rec_dom0 *d)
{
	int n = 0;

	if (d->err)
		return tcx_fail(d->err, "%s", d->errmsg);
	/* -m: nothing is read while tracing, so that the ring overwrites */
	if (d->max_kb && !d->stopped)
		return 0;
	for (int c = 0; c < d->ncpus; c++) {
		/* a bounded number per call: one busy CPU cannot starve the rest */
		for (int i = 0; d->fd[c] >= 0 && i < 256; i++) {
			ssize_t r = read(d->fd[c], d->page, d->page_size);
			int ret;

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (r <= 0)
				break;
			if ((size_t)r < d->page_size)
				memset(d->page + r, 0, d->page_size - r);
			ret = tdat_write_page(d->w, c, d->page);
			if (ret == -EBADMSG || ret == -ERANGE)
				continue;	/* counted in bad_pages */
			if (ret < 0) {
				d->err = ret;
				snprintf(d->errmsg, sizeof(d->errmsg), "%s", tcx_error());
				return ret;
			}
			d->pages++;
			d->cpu_pages[c]++;
			n++;
		}
	}
	return n;
}

/* -m: what the kernel overwrote, from per_cpu/cpuN/stats "overrun:". */
static void read_overruns(struct rec_dom0 *d)
{
	for (int c = 0; c < d->ncpus; c++) {
		char file[48], *text, *p;

		snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", c);
		text = tracefs_instance_file_read(d->inst, file, NULL);
		p = text ? strstr(text, "overrun:") : NULL;
		if (p)
			d->overrun[c] = strtoull(p + 8, NULL, 10);
		free(text);
	}
}

int rec_dom0_stop(struct rec_dom0 *d)
{
	int ret, n = 0;

	tracefs_trace_off(d->inst);
	d->stopped = true;
	/* a non-blocking read after trace off hands out the partial pages too */
	do {
		ret = rec_dom0_drain(d);
		n += ret > 0 ? ret : 0;
	} while (ret > 0);
	if (d->max_kb)
		read_overruns(d);
	return ret < 0 ? ret : n;
}

uint64_t rec_dom0_overwritten(const struct rec_dom0 *d, int cpu, uint64_t *pages)
{
	uint64_t n = 0;

	if (pages)
		*pages = 0;
	if (!d || !d->max_kb)
		return 0;
	for (int c = 0; c < d->ncpus; c++) {
		if (cpu >= 0 && c != cpu)
			continue;
		n += d->overrun[c];
		if (pages)
			*pages += d->cpu_pages[c];
	}
	return n;
}

unsigned long rec_dom0_max_kb(const struct rec_dom0 *d)
{
	return d ? d->max_kb : 0;
}

int rec_dom0_ncpus(const struct rec_dom0 *d)
{
	return d ? d->ncpus : 0;
}

void rec_dom0_stats(const struct rec_dom0 *d, struct tdat_stats *st)
{
	tdat_get_stats(d->w, -1, st);
}

struct tdat_writer *rec_dom0_writer(struct rec_dom0 *d)
{
	return d->w;
}

int rec_dom0_close(struct rec_dom0 *d)
{
	int ret = 0;

	if (!d)
		return 0;
	for (int c = 0; d->fd && c < d->ncpus; c++)
		if (d->fd[c] >= 0)
			close(d->fd[c]);
	if (d->w)
		ret = tdat_close(d->w);
	if (d->inst) {
		tracefs_trace_off(d->inst);
		/* destroying the instance drops its buffers, events and clock */
		tracefs_instance_destroy(d->inst);
		tracefs_instance_free(d->inst);
	}
	if (d->old_depth) {
		char val[24];

		snprintf(val, sizeof(val), "%lu", d->old_depth - 1);
		tracefs_instance_file_write(NULL, "max_graph_depth", val);
	}
	free(d->cpu_pages);
	free(d->overrun);
	free(d->fd);
	free(d->page);
	free(d);
	return ret;
}
