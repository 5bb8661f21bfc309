// SPDX-License-Identifier: GPL-2.0
/*
 * Local tracing for one session: a tracefs instance of our own, or the top
 * one, idle, for a tracer only it offers (agent_top_choose()), configured
 * from the allowed options, and the trace.dat metadata that describes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracefs.h>

#include "agent-internal.h"
#include "tcx-util.h"
#include "tdat.h"

#define INSTANCE_PREFIX	"tcx-agent-"

void agent_cleanup_stale(FILE *log)
{
	tdat_remove_stale_instances(INSTANCE_PREFIX, log, "agent");
}

bool agent_is_tracefs(const char *dir)
{
	struct statfs st;

	return !statfs(dir, &st) && st.f_type == TRACEFS_MAGIC;
}

/*
 * The next session's instance, made while the agent waits for it: creating
 * an instance makes the kernel build a directory per event (Linux before
 * 6.6), which took a guest 9-24 s under QEMU TCG on a loaded host, while
 * the host waits 30 s for TRACE_RESP. Made with tracing off and nothing
 * enabled; agent_trace_setup() takes it, session @seq, as it would have
 * made it.
 */
static struct tracefs_instance *spare;
static unsigned int spare_seq;

void agent_trace_prepare(unsigned int seq, const char *tracing_dir)
{
	char name[64];

	if (spare || (tracing_dir && !agent_is_tracefs(tracing_dir)))
		return;
	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d-%u", (int)getpid(), seq);
	spare = tracefs_instance_create(name);
	if (!spare)
		return;		/* the session tries again, and says why */
	tracefs_trace_off(spare);
	/* the clock our recorder asks for: a clock change resets the buffers
	 * (an RCU grace period, slow in a starved guest) */
	tracefs_instance_file_write(spare, "trace_clock", "x86-tsc");
	spare_seq = seq;
}

void agent_trace_unprepare(void)
{
	if (!spare)
		return;
	tracefs_instance_destroy(spare);
	tracefs_instance_free(spare);
	spare = NULL;
}

int agent_trace_setup(struct agent_trace *tr, const struct agent_record_opts *o,
		      unsigned int seq, const char *tracing_dir)
{
	char name[64];

	memset(tr, 0, sizeof(*tr));
	tr->page_size = (uint32_t)getpagesize();
	tr->version = o->file_version;
	if (tracing_dir && !agent_is_tracefs(tracing_dir))
		return agent_sim_setup(tr, tracing_dir, o);

	if (spare && spare_seq != seq)
		agent_trace_unprepare();
	if (spare) {
		tr->inst = spare;
		spare = NULL;
	} else {
		snprintf(name, sizeof(name), INSTANCE_PREFIX "%d-%u", (int)getpid(), seq);
		tr->inst = tracefs_instance_create(name);
		if (!tr->inst) {
			int e = errno ? errno : EIO;

			return tcx_fail(-e, "cannot create tracefs instance %s: %s",
					name, strerror(e));
		}
	}
	if (agent_top_choose(tr, o))
		goto fail;
	/* from here on, tr->inst NULL is the top instance to libtracefs */
	tracefs_trace_off(tr->inst);
	{
		/* the clock asked for, or the kernel's default: the spare
		 * instance may have another; written only if it differs */
		const char *want = o->clock[0] ? o->clock : "local";
		char *cur = tracefs_get_clock(tr->inst);
		bool same = cur && !strcmp(cur, want);

		free(cur);
		if (!same && tracefs_instance_file_write(tr->inst, "trace_clock", want) < 0) {
			tcx_fail(-EINVAL, "clock \"%s\" is not available", want);
			goto fail;
		}
	}
	if (agent_buffer_kb(o) &&
	    tracefs_instance_set_buffer_size(tr->inst, agent_buffer_kb(o), -1) < 0) {
		tcx_fail(-EINVAL, "cannot set a %u KiB buffer%s", agent_buffer_kb(o),
			 o->max_kb ? " (-m)" : "");
		goto fail;
	}
	for (int i = 0; i < o->nr_events; i++) {
		if (o->exclude[i])
			continue;	/* agent_apply(), in order */
		if (tdat_enable_event(tr->inst, o->events[i]) < 0) {
			tcx_fail(-EINVAL, "no event matches \"%s\"",
				 o->events[i]);
			goto fail;
		}
	}
	if (!agent_opts_enabled(o) &&
	    tdat_enable_event(tr->inst, AGENT_DEFAULT_EVENT) < 0) {
		tcx_fail(-EINVAL, "cannot enable " AGENT_DEFAULT_EVENT);
		goto fail;
	}
	if (agent_apply(tr, o))
		goto fail;
	tr->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	return 0;
fail:
	{
		/* the reason survives the teardown's writes */
		char why[512];

		snprintf(why, sizeof(why), "%s", tcx_error());
		agent_trace_teardown(tr);
		return tcx_fail(-EINVAL, "%s", why);
	}
}

char *agent_trace_raw_path(struct agent_trace *tr, int cpu)
{
	char *dir = tr->inst ? tracefs_instance_get_dir(tr->inst) : NULL;
	char *p = NULL;

	if (asprintf(&p, "%s/per_cpu/cpu%d/trace_pipe_raw",
		     tr->inst ? dir : tr->sim_dir ? tr->sim_dir :
		     tracefs_tracing_dir(), cpu) < 0)
		p = NULL;
	tracefs_put_tracing_file(dir);
	return p;
}

void agent_trace_teardown(struct agent_trace *tr)
{
	free(tr->events);
	tr->events = NULL;
	if (tr->inst) {
		tracefs_trace_off(tr->inst);
		/* Destroying the instance drops its buffers, events, clock,
		 * tracer and options. */
		tracefs_instance_destroy(tr->inst);
		tracefs_instance_free(tr->inst);
		tr->inst = NULL;
	}
	/* then the global files (the top instance's, a simulated kernel's) */
	agent_apply_restore(tr);
	free(tr->sim_dir);
	tr->sim_dir = NULL;
}

int agent_trace_on(struct agent_trace *tr, bool on)
{
	if (tr->sim_dir)
		return 0;	/* a simulated kernel runs on its own */
	return on ? tracefs_trace_on(tr->inst) : tracefs_trace_off(tr->inst);
}

/* Formats of every event enabled (the instance's set_event, or the
 * events matched in a simulated kernel) and the ftrace system's. */
static int add_formats(struct agent_trace *tr, struct tdat_writer *w)
{
	int n = 0;

	if (!tr->sim_dir)
		return tdat_add_instance_formats(w, tr->inst) < 0 ? -ENOENT : 0;
	tdat_add_ftrace_formats(w);
	for (int i = 0; i < tr->nr_events; i++)
		n += !tdat_add_tracefs_format(w, tr->events[i].system, tr->events[i].name);
	return n ? 0 : -ENOENT;
}

/* A whole file whose size stat() does not tell (proc, tracefs). */
static char *read_whole(const char *path, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || !buf)
		goto fail;
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			if (cap >= (64u << 20))	/* no symbol table is this big */
				goto fail;
			nb = realloc(buf, cap * 2);
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
	}
	if (r < 0)
		goto fail;
	close(fd);
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/*
 * /proc/kallsyms and tracefs' printk_formats, kept between sessions while
 * the loaded modules stay the same (a module brings symbols and
 * trace_printk formats). Reading them takes the kernel seconds in a slow
 * guest (kallsyms 2-5 s in a PV or PVH guest under QEMU TCG; printk_formats
 * was the slowest read of a whole session on a 6.x host, about 0.5 s under
 * strace), while a host waits 5 s for the first metadata message
 * (trace-cmd's MSG_WAIT_MSEC) and 30 s for TRACE_RESP: the agent reads them
 * when it starts (agent_kallsyms_prime) and again only when a module came
 * or went.
 */
struct cached {
	char *text, *mods;
	size_t len;
};
static struct cached ksyms, pfmts;

/* Name, size, state and address of every module: what moves symbols
 * (not the use counts, which change as devices are opened). */
static char *module_key(void)
{
	size_t len, cap, n = 0;
	char *text = read_whole("/proc/modules", &len), *key, *save = NULL, *line;

	if (!text)
		return strdup("");	/* no modules (or no /proc/modules) */
	cap = 2 * len + 64;
	key = malloc(cap);
	if (!key) {
		free(text);
		return NULL;
	}
	text[len] = 0;		/* read_whole leaves room after the bytes */
	key[0] = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[6] = { 0 }, *fs = NULL;
		int i = 0, w;

		for (char *t = strtok_r(line, " ", &fs); t && i < 6;
		     t = strtok_r(NULL, " ", &fs))
			f[i++] = t;
		w = snprintf(key + n, cap - n, "%s %s %s %s\n", f[0] ? f[0] : "",
			     f[1] ? f[1] : "", f[4] ? f[4] : "", f[5] ? f[5] : "");
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
	free(text);
	return key;
}

/* @path's text, from @c when the modules are unchanged. */
static const char *cached_read(struct cached *c, const char *path, size_t *len)
{
	char *mods = module_key(), *text;
	size_t n;

	if (mods && c->text && c->mods && !strcmp(mods, c->mods)) {
		free(mods);
		*len = c->len;
		return c->text;
	}
	text = read_whole(path, &n);
	free(c->text);
	free(c->mods);
	c->text = text;
	c->mods = text ? mods : NULL;
	c->len = text ? n : 0;
	if (!text)
		free(mods);
	*len = c->len;
	return c->text;
}

/* The symbol table and the printk formats of the tracefs we trace. */
static const char *kallsyms(size_t *len)
{
	return cached_read(&ksyms, "/proc/kallsyms", len);
}

static const char *printk_formats(size_t *len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/printk_formats", tracefs_tracing_dir());
	return cached_read(&pfmts, path, len);
}

void agent_kallsyms_prime(void)
{
	size_t len;

	kallsyms(&len);
	printk_formats(&len);
}

/*
 * Kernel symbols and printk formats, as trace-cmd's agent sends them, so
 * that the host's report can name functions and print bprint events. A
 * simulated kernel has printk_formats and its own kallsyms at most.
 */
static void add_symbols(struct agent_trace *tr, struct tdat_writer *w)
{
	char path[4096];
	const char *syms;
	size_t len;
	char *text;

	if (!tr->sim_dir) {
		syms = kallsyms(&len);
		if (syms)
			tdat_set_kallsyms(w, syms, len);
		syms = printk_formats(&len);
		if (syms)
			tdat_set_printk(w, syms, len);
		return;
	}
	snprintf(path, sizeof(path), "%s/printk_formats", tr->sim_dir);
	text = read_whole(path, &len);
	if (text)
		tdat_set_printk(w, text, len);
	free(text);
	/* a simulated kernel's symbols: its tracing dir's kallsyms */
	snprintf(path, sizeof(path), "%s/kallsyms", tr->sim_dir);
	text = read_whole(path, &len);
	if (text && len)
		tdat_set_kallsyms(w, text, len);
	free(text);
}

int agent_trace_metadata(struct agent_trace *tr, uint64_t trace_id,
			 uint8_t **out, size_t *out_len)
{
	struct tdat_params par = {
		.version = tr->version,
		.page_size = tr->page_size,
		.max_cpus = tr->ncpus,
		.cpus = tr->ncpus,
	};
	struct tdat_writer *w = NULL;
	char path[64], *clock, *hp, uts[400];
	struct utsname u;
	struct stat st;
	uint8_t *buf = NULL;
	int fd, ret = -EIO;
	int hp_size;

	/* tdat patches its file in place: give it a memfd by path. */
	fd = memfd_create("tcx-agent-meta", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return tcx_fail(ret, "memfd: %s", strerror(-ret));
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	clock = tracefs_get_clock(tr->inst);
	/* a simulated guest without trace_clock stamps with its TSC */
	par.clock = clock ? clock : !tr->sim_dir ? "local" : "x86-tsc";
	w = tdat_open(path, &par);
	free(clock);
	if (!w) {
		ret = tcx_fail(errno ? -errno : -EIO, "trace.dat: %s", tcx_error());
		goto out;
	}
	hp = tracefs_event_file_read(NULL, NULL, "header_page", NULL, &hp_size);
	if (!hp)
		hp = tracefs_instance_file_read(NULL, "events/header_page", &hp_size);
	if (hp) {
		tdat_set_header_page(w, hp, hp_size);
		free(hp);
	}
	if (add_formats(tr, w)) {
		tcx_fail(ret, "no event formats could be read");
		goto out;
	}
	if (!tr->sim_dir)
		tdat_add_saved_cmdlines(w);
	add_symbols(tr, w);
	tdat_set_traceid(w, trace_id);
	if (!uname(&u)) {
		snprintf(uts, sizeof(uts), "%s %s %s %s", u.sysname, u.nodename,
			 u.release, u.machine);
		tdat_set_uname(w, uts);
	}
	ret = tdat_start_data(w);
	if (!ret)
		ret = tdat_close(w);
	else
		tdat_close(w);
	w = NULL;
	if (ret) {
		tcx_fail(ret, "trace.dat: %s", tcx_error());
		goto out;
	}
	if (fstat(fd, &st) < 0 || !(buf = malloc(st.st_size)) ||
	    pread(fd, buf, st.st_size, 0) != st.st_size) {
		ret = tcx_fail(-EIO, "reading the metadata back failed");
		goto out;
	}
	ret = agent_meta_length(buf, st.st_size, tr->version, out_len);
	if (ret) {
		tcx_fail(ret, "unexpected trace.dat layout");
		goto out;
	}
	*out = buf;
	buf = NULL;
out:
	if (w)
		tdat_close(w);
	free(buf);
	close(fd);
	return ret;
}
