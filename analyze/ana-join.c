// SPDX-License-Identifier: GPL-2.0
/*
 * analyze: guest tasks joined to what the hypervisor did to their vCPUs.
 *
 * Both sides are read through libtracecmd, in ns: it applies the host's
 * TSC2NSEC and each guest file's TIME_SHIFT, so guest and host records
 * share one time line. The host's runstate records give each vCPU a list
 * of (time, state) segments and its kvm_exit -> kvm_entry spans; each guest
 * task's runs and waits are then cut against the segments of its vCPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-internal.h"
#include "tcx-util.h"

#define JSTATE_UNKNOWN	(-1)

struct seg {
	uint64_t t;
	int state;
};

struct span {
	uint64_t a, b;
};

/* One vCPU of the host: its runstate segments and its exits, in time order. */
struct jvcpu {
	uint32_t key;	/* dom << 16 | vcpu */
	struct seg *segs;
	size_t nsegs, capsegs;
	struct span *exits;
	size_t nexits, capexits;
	uint64_t exit_open;	/* 0: none */
};

struct jctx {
	struct jvcpu *v;
	size_t nv, capv;
	uint64_t t0, end;	/* host's first and last record */
	uint64_t wa, wb;	/* the window */
	struct ana_join *j;
	size_t captasks;
};

static void *grow(void *p, size_t *cap, size_t n, size_t sz)
{
	size_t c;
	void *q;

	if (n < *cap)
		return p;
	c = *cap ? *cap * 2 : 16;
	q = realloc(p, c * sz);
	if (q)
		*cap = c;
	return q;
}

static struct jvcpu *jvcpu_of(struct jctx *x, uint32_t key, bool add)
{
	struct jvcpu *v;

	for (size_t i = 0; i < x->nv; i++)
		if (x->v[i].key == key)
			return &x->v[i];
	if (!add)
		return NULL;
	v = grow(x->v, &x->capv, x->nv, sizeof(*v));
	if (!v)
		return NULL;
	x->v = v;
	v = &x->v[x->nv++];
	memset(v, 0, sizeof(*v));
	v->key = key;
	return v;
}

static unsigned long long fval(struct tep_event *e, struct tep_record *r, const char *name)
{
	unsigned long long val = 0;

	tep_get_any_field_val(NULL, e, name, r, &val, 0);
	return val;
}

static int host_record(struct jctx *x, struct tep_event *e, struct tep_record *r)
{
	struct jvcpu *v;
	uint32_t key;

	if (!strcmp(e->name, "runstate_change")) {
		key = (uint32_t)fval(e, r, "dom") << 16 | (uint32_t)(fval(e, r, "vcpu") & 0xffff);
		v = jvcpu_of(x, key, true);
		if (!v)
			return -ENOMEM;
		struct seg *s = grow(v->segs, &v->capsegs, v->nsegs, sizeof(*s));

		if (!s)
			return -ENOMEM;
		v->segs = s;
		s[v->nsegs++] = (struct seg){ r->ts, (int)fval(e, r, "new_state") };
		/* an exit still open when its vCPU leaves the pCPU ends there */
		if (fval(e, r, "new_state") != ANA_RUNNING && v->exit_open)
			goto close;
		return 0;
	}
	if (strcmp(e->name, "kvm_exit") && strcmp(e->name, "kvm_entry"))
		return 0;
	{
		int pid = tep_data_pid(e->tep, r);

		if (pid <= 0)
			return 0;
		v = jvcpu_of(x, (uint32_t)pid - 1, true);
		if (!v)
			return -ENOMEM;
	}
	if (!strcmp(e->name, "kvm_exit")) {
		/* synthesized exits (xen_event 0) only name why a vCPU left */
		if (fval(e, r, "xen_event"))
			v->exit_open = r->ts ? r->ts : 1;
		return 0;
	}
	if (!v->exit_open)
		return 0;
close:
	{
		struct span *s = grow(v->exits, &v->capexits, v->nexits, sizeof(*s));

		if (!s)
			return -ENOMEM;
		v->exits = s;
		s[v->nexits++] = (struct span){ v->exit_open, r->ts };
		v->exit_open = 0;
	}
	return 0;
}

static uint64_t overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t lo = a > c ? a : c, hi = b < d ? b : d;

	return hi > lo ? hi - lo : 0;
}

/* The first segment of @v that may overlap time @a (binary search). */
static size_t first_seg(const struct jvcpu *v, uint64_t a)
{
	size_t lo = 0, hi = v->nsegs;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->segs[mid].t <= a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The first exit of @v that may end after @a (exits are in time order). */
static size_t first_exit(const struct jvcpu *v, uint64_t a)
{
	size_t lo = 0, hi = v->nexits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->exits[mid].b <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [a, b) of vCPU @v by runstate: out[ANA_NSTATES] is the unknown part. */
static void split(const struct jctx *x, const struct jvcpu *v, uint64_t a, uint64_t b,
		  uint64_t out[ANA_NSTATES + 1])
{
	uint64_t known = 0;

	memset(out, 0, sizeof(uint64_t) * (ANA_NSTATES + 1));
	if (a < x->wa)
		a = x->wa;
	if (b > x->wb)
		b = x->wb;
	if (b <= a)
		return;
	for (size_t i = v && v->nsegs ? first_seg(v, a) : 0; v && i < v->nsegs; i++) {
		uint64_t e = i + 1 < v->nsegs ? v->segs[i + 1].t : x->end;
		uint64_t o;

		if (v->segs[i].t >= b)
			break;
		o = overlap(a, b, v->segs[i].t, e);
		if (o && v->segs[i].state >= 0 && v->segs[i].state < ANA_NSTATES) {
			out[v->segs[i].state] += o;
			known += o;
		}
	}
	out[ANA_NSTATES] = b - a - known;
}

static uint64_t exits_in(const struct jctx *x, const struct jvcpu *v, uint64_t a, uint64_t b)
{
	uint64_t sum = 0;

	if (a < x->wa)
		a = x->wa;
	if (b > x->wb)
		b = x->wb;
	for (size_t i = v ? first_exit(v, a) : 0; v && i < v->nexits && v->exits[i].a < b; i++)
		sum += overlap(a, b, v->exits[i].a, v->exits[i].b);
	return sum;
}

static struct ana_jtask *task_of(struct jctx *x, const char *guest, uint32_t dom, int pid,
				 const char *comm)
{
	struct ana_join *j = x->j;
	struct ana_jtask *t;

	for (unsigned int i = 0; i < j->ntasks; i++) {
		t = &j->tasks[i];
		if (t->dom == dom && t->pid == pid && !strcmp(t->guest, guest))
			goto found;
	}
	t = grow(j->tasks, &x->captasks, j->ntasks, sizeof(*t));
	if (!t)
		return NULL;
	j->tasks = t;
	t = &j->tasks[j->ntasks];
	memset(t, 0, sizeof(*t));
	t->guest = strdup(guest);
	if (!t->guest)
		return NULL;
	j->ntasks++;
	t->dom = dom;
	t->pid = pid;
found:
	if (comm && *comm)
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
	return t;
}

/* Per guest CPU while reading: who runs there since when. */
struct gcpu {
	int pid;
	uint64_t since;
	bool known;
};

struct wake {
	int pid;
	uint64_t t;
};

/* The CPUs of a file merged by time: one record read ahead per CPU. */
struct merge {
	struct tracecmd_input *h;
	struct tep_record **next;
	int ncpu;
};

static int merge_init(struct merge *m, struct tracecmd_input *h)
{
	m->h = h;
	m->ncpu = tep_get_cpus(ana_tc.get_tep(h));
	if (m->ncpu <= 0)
		m->ncpu = 1;
	m->next = calloc((size_t)m->ncpu, sizeof(*m->next));
	if (!m->next)
		return -ENOMEM;
	for (int c = 0; c < m->ncpu; c++)
		m->next[c] = ana_tc.read_data(h, c);
	return 0;
}

static struct tep_record *merge_next(struct merge *m, int *cpu)
{
	struct tep_record *r;
	int best = -1;

	for (int c = 0; c < m->ncpu; c++)
		if (m->next[c] && (best < 0 || m->next[c]->ts < m->next[best]->ts))
			best = c;
	if (best < 0)
		return NULL;
	r = m->next[best];
	m->next[best] = ana_tc.read_data(m->h, best);
	*cpu = best;
	return r;
}

static void merge_done(struct merge *m)
{
	for (int c = 0; m->next && c < m->ncpu; c++)
		if (m->next[c])
			ana_tc.free_record(m->next[c]);
	free(m->next);
	m->next = NULL;
}

static int read_guest(struct jctx *x, struct tracecmd_input *host, const char *path)
{
	struct tracecmd_input *g = ana_tc.open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	struct gcpu *gc = NULL;
	struct wake *wk = NULL;
	size_t nwk = 0, capwk = 0;
	const char *name = NULL;
	const int *pids = NULL;
	struct tep_record *r;
	int ncpu = 0, cpu, ret = 0;
	uint64_t sp[ANA_NSTATES + 1];
	struct merge m = { 0 };

	if (!g)
		return tcx_fail(-EINVAL, "%s: not a trace.dat libtracecmd can read", path);
	if (ana_tc.get_guest_cpumap(host, ana_tc.get_traceid(g), &name, &ncpu, &pids) ||
	    ncpu <= 0 || !name) {
		ret = tcx_fail(-EINVAL, "%s: the hypervisor trace has no GUEST entry for its "
			       "trace id %#" PRIx64 " (not a guest file of this recording)",
			       path, (uint64_t)ana_tc.get_traceid(g));
		goto out;
	}
	gc = calloc((size_t)ncpu, sizeof(*gc));
	if (!gc || merge_init(&m, g)) {
		ret = tcx_fail(-ENOMEM, "out of memory");
		goto out;
	}
	while ((r = merge_next(&m, &cpu))) {
		struct tep_event *e = tep_find_event_by_record(ana_tc.get_tep(g), r);
		uint32_t key, dom;
		struct jvcpu *v;

		if (!e || cpu < 0 || cpu >= ncpu || pids[cpu] <= 0 || strcmp(e->system, "sched"))
			goto next;
		key = (uint32_t)pids[cpu] - 1;
		dom = key >> 16;
		v = jvcpu_of(x, key, false);
		if (!strcmp(e->name, "sched_wakeup") || !strcmp(e->name, "sched_wakeup_new")) {
			int pid = (int)fval(e, r, "pid");
			size_t i;
			int k;

			/*
			 * A task woken while it still runs (it was about to sleep:
			 * the kernel's ttwu_runnable()) does not wait; kept, the
			 * wake would make its next wait start here.
			 */
			for (k = 0; k < ncpu && !(gc[k].known && gc[k].pid == pid); k++)
				;
			if (pid > 0 && k < ncpu)
				goto next;
			for (i = 0; i < nwk && wk[i].pid != pid; i++)
				;
			if (i == nwk) {
				struct wake *n = grow(wk, &capwk, nwk, sizeof(*n));

				if (!n) {
					ana_tc.free_record(r);
					ret = tcx_fail(-ENOMEM, "out of memory");
					goto out;
				}
				wk = n;
				wk[nwk++] = (struct wake){ pid, r->ts };
			} else if (!wk[i].t) {
				wk[i].t = r->ts;
			}
		} else if (!strcmp(e->name, "sched_switch")) {
			int prev = (int)fval(e, r, "prev_pid"), next = (int)fval(e, r, "next_pid");
			struct tep_format_field *fc;
			char pc[17] = "", nc[17] = "";
			struct ana_jtask *t;

			fc = tep_find_field(e, "prev_comm");
			if (fc && fc->offset + fc->size <= r->size)
				snprintf(pc, sizeof(pc), "%.*s", fc->size, (char *)r->data + fc->offset);
			fc = tep_find_field(e, "next_comm");
			if (fc && fc->offset + fc->size <= r->size)
				snprintf(nc, sizeof(nc), "%.*s", fc->size, (char *)r->data + fc->offset);
			if (prev > 0 && gc[cpu].known && gc[cpu].pid == prev) {
				t = task_of(x, name, dom, prev, pc);
				if (!t)
					goto oom;
				split(x, v, gc[cpu].since, r->ts, sp);
				t->on_pcpu += sp[ANA_RUNNING];
				t->preempted += sp[ANA_RUNNABLE];
				t->blocked += sp[ANA_BLOCKED] + sp[ANA_OFFLINE];
				t->unknown += sp[ANA_NSTATES];
				t->ran += sp[ANA_RUNNING] + sp[ANA_RUNNABLE] + sp[ANA_BLOCKED] +
					  sp[ANA_OFFLINE] + sp[ANA_NSTATES];
				t->in_exit += exits_in(x, v, gc[cpu].since, r->ts);
			}
			gc[cpu] = (struct gcpu){ next, r->ts, true };
			for (size_t i = 0; next > 0 && i < nwk; i++) {
				uint64_t w;

				if (wk[i].pid != next || !wk[i].t)
					continue;
				t = task_of(x, name, dom, next, nc);
				if (!t)
					goto oom;
				split(x, v, wk[i].t, r->ts, sp);
				w = sp[ANA_RUNNING] + sp[ANA_RUNNABLE] + sp[ANA_BLOCKED] +
				    sp[ANA_OFFLINE] + sp[ANA_NSTATES];
				/* a wait counts when it ends in the window */
				if (r->ts >= x->wa && r->ts < x->wb) {
					t->wakes++;
					t->wait += w;
					t->wait_guest += sp[ANA_RUNNING];
					t->wait_xen += sp[ANA_RUNNABLE];
					t->wait_other += w - sp[ANA_RUNNING] - sp[ANA_RUNNABLE];
					if (w > t->wait_max)
						t->wait_max = w;
				}
				wk[i].t = 0;
			}
		}
next:
		ana_tc.free_record(r);
		continue;
oom:
		ana_tc.free_record(r);
		ret = tcx_fail(-ENOMEM, "out of memory");
		goto out;
	}
out:
	merge_done(&m);
	free(gc);
	free(wk);
	ana_tc.close(g);
	return ret;
}

/*
 * The first ftrace print (trace_marker) record of @path after @after that
 * holds @text: its time in *@ts if earlier than what *@ts holds.
 */
static int find_marker(const char *path, const char *text, uint64_t after, uint64_t *ts)
{
	struct tracecmd_input *h = ana_tc.open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	struct merge m = { 0 };
	struct tep_record *r;
	int cpu;

	if (!h)
		return tcx_fail(-EINVAL, "%s: not a trace.dat libtracecmd can read", path);
	if (merge_init(&m, h)) {
		ana_tc.close(h);
		return tcx_fail(-ENOMEM, "out of memory");
	}
	while ((r = merge_next(&m, &cpu))) {
		struct tep_event *e = tep_find_event_by_record(ana_tc.get_tep(h), r);
		struct tep_format_field *f;
		bool hit = false;

		if (r->ts > after && r->ts < *ts && e && !strcmp(e->name, "print") &&
		    (f = tep_find_field(e, "buf"))) {
			int len = f->size ? f->size : r->size - f->offset;

			if (f->offset < r->size && len > 0 && f->offset + len <= r->size)
				hit = memmem((char *)r->data + f->offset, (size_t)len, text,
					     strlen(text)) != NULL;
		}
		if (hit)
			*ts = r->ts;
		ana_tc.free_record(r);
		if (hit)
			break;
	}
	merge_done(&m);
	ana_tc.close(h);
	return 0;
}

/* The window between the markers of @o, over the host and the guests. */
static int marker_window(struct jctx *x, const char *host, char *const *guests, int n,
			 const struct ana_opts *o)
{
	uint64_t a = UINT64_MAX, b = UINT64_MAX;

	for (int i = -1; i < n; i++)
		if (o->from_marker && find_marker(i < 0 ? host : guests[i], o->from_marker, 0, &a))
			return -1;
	if (o->from_marker && a == UINT64_MAX)
		return tcx_fail(-ENOENT, "no marker holding '%s' (--from-marker) in the files",
				o->from_marker);
	if (o->from_marker)
		x->wa = a;
	for (int i = -1; i < n; i++)
		if (o->to_marker && find_marker(i < 0 ? host : guests[i], o->to_marker,
						o->from_marker ? a : 0, &b))
			return -1;
	if (o->to_marker && b == UINT64_MAX)
		return tcx_fail(-ENOENT, "no marker holding '%s' (--to-marker)%s in the files",
				o->to_marker, o->from_marker ? " after the --from-marker" : "");
	if (o->to_marker)
		x->wb = b;
	x->j->from_ns = x->wa - x->t0;
	x->j->to_ns = x->wb == UINT64_MAX ? 0 : x->wb - x->t0;
	return 0;
}

static int cmp_task(const void *a, const void *b)
{
	const struct ana_jtask *x = a, *y = b;
	int c = strcmp(x->guest, y->guest);

	if (c)
		return c;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void ana_join_free(struct ana_join *j)
{
	if (!j)
		return;
	for (unsigned int i = 0; i < j->ntasks; i++)
		free(j->tasks[i].guest);
	free(j->tasks);
	free(j->host);
	free(j);
}

struct ana_join *ana_join_run(const char *host, char *const *guests, int nguests,
			      const struct ana_opts *opts)
{
	struct ana_opts none = { 0 };
	struct jctx x = { 0 };
	struct tracecmd_input *h;
	struct tep_record *r;
	bool first = true;
	int cpu, ret = 0;
	struct merge m = { 0 };

	if (!opts)
		opts = &none;
	if (ana_tc_load())
		return NULL;
	ana_tc.set_loglevel(TEP_LOG_NONE);
	h = ana_tc.open(host, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h) {
		tcx_fail(-EINVAL, "%s: not a trace.dat libtracecmd can read", host);
		return NULL;
	}
	if (!tep_find_event_by_name(ana_tc.get_tep(h), "xen", "runstate_change")) {
		tcx_fail(-EINVAL, "%s: no xen/runstate_change event: not a hypervisor trace "
			 "(give it first, the guest files after it)", host);
		ana_tc.close(h);
		return NULL;
	}
	x.j = calloc(1, sizeof(*x.j));
	if (!x.j || !(x.j->host = strdup(host))) {
		tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}
	if (merge_init(&m, h)) {
		tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}
	while ((r = merge_next(&m, &cpu))) {
		struct tep_event *e = tep_find_event_by_record(ana_tc.get_tep(h), r);

		if (first) {
			x.t0 = r->ts;
			first = false;
		}
		x.end = r->ts;
		ret = e ? host_record(&x, e, r) : 0;
		ana_tc.free_record(r);
		if (ret) {
			tcx_fail(ret, "out of memory");
			goto fail;
		}
	}
	if (first) {
		tcx_fail(-EINVAL, "%s: no records", host);
		goto fail;
	}
	x.j->from_ns = opts->from_ns;
	x.j->to_ns = opts->to_ns;
	x.wa = x.t0 + opts->from_ns;
	x.wb = opts->to_ns ? x.t0 + opts->to_ns : UINT64_MAX;
	if (x.wb <= x.wa) {
		tcx_fail(-EINVAL, "the window ends before it starts");
		goto fail;
	}
	if ((opts->from_marker || opts->to_marker) &&
	    marker_window(&x, host, guests, nguests, opts))
		goto fail;
	for (int i = 0; i < nguests; i++)
		if (read_guest(&x, h, guests[i]))
			goto fail;
	qsort(x.j->tasks, x.j->ntasks, sizeof(*x.j->tasks), cmp_task);
	goto out;
fail:
	ana_join_free(x.j);
	x.j = NULL;
out:
	for (size_t i = 0; i < x.nv; i++) {
		free(x.v[i].segs);
		free(x.v[i].exits);
	}
	free(x.v);
	merge_done(&m);
	ana_tc.close(h);
	return x.j;
}

int ana_join_print_text(const struct ana_join *j, FILE *f)
{
	fprintf(f, "Guest tasks joined with the hypervisor (ns; %u tasks)\n", j->ntasks);
	fprintf(f, "%-12s %-16s %7s %12s %12s %12s %12s %12s %6s %12s %12s %12s\n",
		"guest", "task", "pid", "ran", "on-pcpu", "preempted", "blocked", "in-exits",
		"wakes", "wait", "wait-guest", "wait-xen");
	for (unsigned int i = 0; i < j->ntasks; i++) {
		const struct ana_jtask *t = &j->tasks[i];

		fprintf(f, "%-12s %-16s %7d %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64
			" %12" PRIu64 " %6" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
			t->guest, t->comm[0] ? t->comm : "?", t->pid, t->ran, t->on_pcpu,
			t->preempted, t->blocked, t->in_exit, t->wakes, t->wait, t->wait_guest,
			t->wait_xen);
	}
	return ferror(f) ? -EIO : 0;
}

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int ana_join_print_json(const struct ana_join *j, FILE *f)
{
	fputs("{\"host\":", f);
	jstr(f, j->host);
	fprintf(f, ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"tasks\":[", j->from_ns,
		j->to_ns);
	for (unsigned int i = 0; i < j->ntasks; i++) {
		const struct ana_jtask *t = &j->tasks[i];

		fputs(i ? ",{\"guest\":" : "{\"guest\":", f);
		jstr(f, t->guest);
		fprintf(f, ",\"dom\":%u,\"pid\":%d,\"comm\":", t->dom, t->pid);
		jstr(f, t->comm);
		fprintf(f, ",\"ran_ns\":%" PRIu64 ",\"on_pcpu_ns\":%" PRIu64
			",\"preempted_ns\":%" PRIu64 ",\"blocked_ns\":%" PRIu64
			",\"unknown_ns\":%" PRIu64 ",\"in_exit_ns\":%" PRIu64
			",\"wakes\":%" PRIu64 ",\"wait_ns\":%" PRIu64 ",\"wait_guest_ns\":%" PRIu64
			",\"wait_xen_ns\":%" PRIu64 ",\"wait_other_ns\":%" PRIu64
			",\"wait_max_ns\":%" PRIu64 "}",
			t->ran, t->on_pcpu, t->preempted, t->blocked, t->unknown, t->in_exit,
			t->wakes, t->wait, t->wait_guest, t->wait_xen, t->wait_other, t->wait_max);
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}
