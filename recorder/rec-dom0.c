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
	if (o->buffer_kb && tracefs_instance_set_buffer_size(d->inst, o->buffer_kb, -1) < 0) {
		ret = tcx_fail(-EINVAL, "dom0: cannot set a %u KiB buffer", o->buffer_kb);
		goto fail;
	}
	for (int i = 0; i < o->nr_events; i++) {
		if (tdat_enable_event(d->inst, o->events[i]) < 0) {
			ret = tcx_fail(-EINVAL, "dom0: no event matches \"%s\" "
				    "(see /sys/kernel/tracing/available_events)", o->events[i]);
			goto fail;
		}
	}
	if (!o->nr_events && tdat_enable_event(d->inst, REC_DOM0_DEFAULT_EVENT) < 0) {
		ret = tcx_fail(-EINVAL, "dom0: cannot enable " REC_DOM0_DEFAULT_EVENT);
		goto fail;
	}

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
	if (!d->page || !d->fd) {
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
			n++;
		}
	}
	return n;
}

int rec_dom0_stop(struct rec_dom0 *d)
{
	int ret, n = 0;

	tracefs_trace_off(d->inst);
	/* a non-blocking read after trace off hands out the partial pages too */
	do {
		ret = rec_dom0_drain(d);
		n += ret > 0 ? ret : 0;
	} while (ret > 0);
	return ret < 0 ? ret : n;
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
	free(d->fd);
	free(d->page);
	free(d);
	return ret;
}
