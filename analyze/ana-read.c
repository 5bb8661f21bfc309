// SPDX-License-Identifier: GPL-2.0
/*
 * analyze: one pass over a hypervisor trace.dat.
 *
 * libtracecmd opens the file, parses the formats and says where each CPU's
 * pages lie (its first record, and ana_tc.read_at() for which CPU owns a
 * page). The pages themselves are then read (a buffer of 256 KiB per pCPU)
 * and walked here: libtracecmd hands out times already converted to ns by the
 * file's TSC2NSEC, which loses the cycle xenalyze counts in, and its
 * per-record allocation and lookups cost more than the analysis. The
 * pCPUs' streams are merged by TSC (a vCPU's wake and its run are on
 * different pCPUs), and each event is dispatched on its type through a
 * table built once from the formats.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze-internal.h"
#include "tcx-util.h"

#define TYPE_PADDING		29
#define TYPE_TIME_EXTEND	30
#define TYPE_TIME_STAMP		31
#define COMMIT_MASK		((1u << 27) - 1)
#define MAX_TYPES		65536

#define CHUNK			(256 << 10)

/* One pCPU's pages, read a chunk at a time, and the walk's position. */
struct stream {
	int fd;
	uint64_t off, end_off;		/* file: next chunk to read, end of this CPU's pages */
	uint8_t *buf;			/* the chunk */
	const uint8_t *page, *bend;	/* current page in it, end of what it holds */
	const uint8_t *data;		/* current page's data */
	uint32_t commit, pos;
	uint64_t ts;			/* time reached in the page */
	/* the event under the cursor */
	uint64_t ev_ts;
	const uint8_t *ev;
	uint32_t ev_len;
	bool done;
};

struct reader {
	struct ana_result *r;
	struct ana_vstate *vs;
	unsigned int cap_vcpus;
	/* open addressing: key + 1 -> index + 1 */
	uint32_t *hkeys, *hvals;
	unsigned int hsize;

	size_t psize, chunk;
	int long_size;
	uint8_t kind[MAX_TYPES];
	struct ana_field pid, rs_dom, rs_vcpu, rs_old, rs_new, cr_dom, cr_vcpu;
	struct ana_field ex_reason, ex_isa, ex_xen, lost_count, hc_eax, hc64_eax, hc2_op;

	/* exit reasons: isa << 11 | reason -> compact index + 1 */
	uint16_t *reason_idx;
	/* per pCPU: a vCPU ran or was switched there (xenalyze's start of day) */
	bool *sched_seen;
};

static inline uint64_t get_field(const uint8_t *ev, uint32_t len, const struct ana_field *f)
{
	if (f->off < 0 || (uint32_t)(f->off + f->size) > len)
		return 0;
	switch (f->size) {
	case 1:
		return ev[f->off];
	case 2: {
		uint16_t v;

		memcpy(&v, ev + f->off, 2);
		return v;
	}
	case 4: {
		uint32_t v;

		memcpy(&v, ev + f->off, 4);
		return v;
	}
	case 8: {
		uint64_t v;

		memcpy(&v, ev + f->off, 8);
		return v;
	}
	}
	return 0;
}

static int page_open(struct reader *rd, struct stream *s)
{
	uint64_t flags = 0;

	memcpy(&s->ts, s->page, 8);
	if (rd->long_size == 8) {
		memcpy(&flags, s->page + 8, 8);
	} else {
		uint32_t f32;

		memcpy(&f32, s->page + 8, 4);
		flags = f32;
	}
	s->data = s->page + 8 + rd->long_size;
	s->commit = flags & COMMIT_MASK;
	if (s->commit > rd->psize - 8 - rd->long_size)
		return tcx_fail(-EBADMSG, "a page's commit (%u) beyond the page", s->commit);
	s->pos = 0;
	return 0;
}

/* The next chunk of @s's pages; 0 at their end, 1, or -errno. */
static int refill(struct reader *rd, struct stream *s)
{
	size_t n = s->end_off - s->off < rd->chunk ? s->end_off - s->off : rd->chunk;
	size_t got = 0;

	if (!n)
		return 0;
	while (got < n) {
		ssize_t k = pread(s->fd, s->buf + got, n - got, s->off + got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return tcx_fail(k < 0 ? -errno : -EBADMSG, "reading at offset %llu: %s",
					(unsigned long long)(s->off + got),
					k < 0 ? strerror(errno) : "the file ends early");
		got += k;
	}
	s->off += n;
	s->page = s->buf;
	s->bend = s->buf + n;
	return 1;
}

/* Move @s to its next event; s->done at the end of its pages. */
static int stream_next(struct reader *rd, struct stream *s)
{
	for (;;) {
		uint32_t h, type, delta, arg = 0, hlen = 4, len;

		if (s->pos >= s->commit) {
			s->page += rd->psize;
			if (s->page >= s->bend) {
				int ret = refill(rd, s);

				if (ret <= 0) {
					s->done = true;
					return ret;
				}
			}
			if (page_open(rd, s))
				return -EBADMSG;
			continue;
		}
		if (s->commit - s->pos < 4)
			return tcx_fail(-EBADMSG, "an event header cut by its page's commit");
		memcpy(&h, s->data + s->pos, 4);
		type = h & 31;
		delta = h >> 5;
		if (type == 0 || type >= TYPE_PADDING) {
			if (s->commit - s->pos < 8)
				return tcx_fail(-EBADMSG, "an event cut by its page's commit");
			memcpy(&arg, s->data + s->pos + 4, 4);
		}
		switch (type) {
		case TYPE_PADDING:
			s->ts += delta;
			len = arg;
			break;
		case TYPE_TIME_EXTEND:
			s->ts += ((uint64_t)arg << 27) + delta;
			hlen = 8;
			len = 0;
			break;
		case TYPE_TIME_STAMP:
			s->ts = (((uint64_t)arg << 27) + delta) | (s->ts & ~((1ull << 59) - 1));
			hlen = 8;
			len = 0;
			break;
		case 0:
			if (arg < 4)
				return tcx_fail(-EBADMSG, "an event of length %u", arg);
			hlen = 8;
			len = (arg - 4 + 3) & ~3u;
			s->ts += delta;
			break;
		default:
			len = 4 * type;
			s->ts += delta;
			break;
		}
		if ((uint64_t)hlen + len > s->commit - s->pos)
			return tcx_fail(-EBADMSG, "an event runs past its page's commit");
		if (type < TYPE_PADDING) {
			s->ev = s->data + s->pos + hlen;
			s->ev_len = len;
			s->ev_ts = s->ts;
			s->pos += hlen + len;
			return 1;
		}
		s->pos += hlen + len;
	}
}

static int resolve(struct tep_handle *tep, const char *sys, const char *name,
		   const char *f1, struct ana_field *o1, const char *f2, struct ana_field *o2,
		   int *id)
{
	struct tep_event *e = tep_find_event_by_name(tep, sys, name);
	struct tep_format_field *f;

	*id = -1;
	if (!e)
		return 0;
	*id = e->id;
	if (f1) {
		f = tep_find_field(e, f1);
		if (!f)
			return tcx_fail(-EINVAL, "%s/%s has no field %s", sys, name, f1);
		o1->off = f->offset;
		o1->size = f->size;
	}
	if (f2) {
		f = tep_find_field(e, f2);
		if (!f)
			return tcx_fail(-EINVAL, "%s/%s has no field %s", sys, name, f2);
		o2->off = f->offset;
		o2->size = f->size;
	}
	return 0;
}

static void set_kind(struct reader *rd, int id, enum ana_kind k)
{
	if (id >= 0 && id < MAX_TYPES)
		rd->kind[id] = k;
}

/* The event types analyze follows, and where their fields are. */
static int resolve_events(struct reader *rd, struct tep_handle *tep)
{
	int id, ret = 0;
	struct tep_event *e;
	struct tep_format_field *f;

	rd->rs_old.off = rd->rs_new.off = -1;
	ret |= resolve(tep, "xen", "runstate_change", "dom", &rd->rs_dom, "vcpu", &rd->rs_vcpu,
		       &id);
	if (id < 0)
		return tcx_fail(-EINVAL, "no xen/runstate_change event: not a hypervisor trace "
				"(one of trace-cmd-xen record --xen or convert)");
	set_kind(rd, id, ANA_K_RUNSTATE);
	ret |= resolve(tep, "xen", "runstate_change", "old_state", &rd->rs_old, "new_state",
		       &rd->rs_new, &id);
	ret |= resolve(tep, "xen", "continue_running", "dom", &rd->cr_dom, "vcpu", &rd->cr_vcpu,
		       &id);
	set_kind(rd, id, ANA_K_CONTINUE);
	ret |= resolve(tep, "kvm", "kvm_exit", "exit_reason", &rd->ex_reason, "isa", &rd->ex_isa,
		       &id);
	set_kind(rd, id, ANA_K_EXIT);
	ret |= resolve(tep, "kvm", "kvm_exit", "xen_event", &rd->ex_xen, NULL, NULL, &id);
	ret |= resolve(tep, "kvm", "kvm_entry", NULL, NULL, NULL, NULL, &id);
	set_kind(rd, id, ANA_K_ENTRY);
	ret |= resolve(tep, "xen", "lost_records", "count", &rd->lost_count, NULL, NULL, &id);
	set_kind(rd, id, ANA_K_LOST);
	ret |= resolve(tep, "xen", "pv_hypercall", "eax", &rd->hc_eax, NULL, NULL, &id);
	set_kind(rd, id, ANA_K_HCALL);
	ret |= resolve(tep, "xen", "pv_hypercall64", "eax", &rd->hc64_eax, NULL, NULL, &id);
	set_kind(rd, id, ANA_K_HCALL64);
	ret |= resolve(tep, "xen", "pv_hypercall_v2", "op", &rd->hc2_op, NULL, NULL, &id);
	set_kind(rd, id, ANA_K_HCALL2);
	if (ret)
		return -EINVAL;
	e = tep_find_event_by_name(tep, "xen", "runstate_change");
	f = e ? tep_find_common_field(e, "common_pid") : NULL;
	if (!f)
		return tcx_fail(-EINVAL, "xen/runstate_change has no common_pid");
	rd->pid.off = f->offset;
	rd->pid.size = f->size;
	return 0;
}

static uint32_t hash32(uint32_t k)
{
	k ^= k >> 16;
	k *= 0x45d9f3b;
	k ^= k >> 16;
	return k;
}

static int grow_hash(struct reader *rd)
{
	unsigned int n = rd->hsize ? rd->hsize * 2 : 256;
	uint32_t *k = calloc(n, sizeof(*k)), *v = calloc(n, sizeof(*v));

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < rd->hsize; i++) {
		unsigned int j;

		if (!rd->hkeys[i])
			continue;
		for (j = hash32(rd->hkeys[i]) & (n - 1); k[j]; j = (j + 1) & (n - 1))
			;
		k[j] = rd->hkeys[i];
		v[j] = rd->hvals[i];
	}
	free(rd->hkeys);
	free(rd->hvals);
	rd->hkeys = k;
	rd->hvals = v;
	rd->hsize = n;
	return 0;
}

/* The index of vCPU @key (dom << 16 | vcpu), added if new; -1 out of memory. */
static int vcpu_of(struct reader *rd, uint32_t key)
{
	struct ana_result *r = rd->r;
	unsigned int j, idx;

	if (rd->hsize) {
		for (j = hash32(key + 1) & (rd->hsize - 1); rd->hkeys[j];
		     j = (j + 1) & (rd->hsize - 1))
			if (rd->hkeys[j] == key + 1)
				return rd->hvals[j] - 1;
	}
	if ((r->nvcpus + 1) * 2 > rd->hsize) {
		if (grow_hash(rd))
			return -1;
		return vcpu_of(rd, key);
	}
	if (r->nvcpus == rd->cap_vcpus) {
		unsigned int n = rd->cap_vcpus ? rd->cap_vcpus * 2 : 32;
		struct ana_vcpu *v = realloc(r->vcpus, n * sizeof(*v));
		struct ana_vstate *s;

		if (!v)
			return -1;
		r->vcpus = v;
		s = realloc(rd->vs, n * sizeof(*s));
		if (!s)
			return -1;
		rd->vs = s;
		rd->cap_vcpus = n;
	}
	idx = r->nvcpus;
	memset(&r->vcpus[idx], 0, sizeof(r->vcpus[idx]));
	r->vcpus[idx].dom = key >> 16;
	r->vcpus[idx].vcpu = key & 0xffff;
	r->vcpus[idx].wake_hist = calloc(ANA_HIST, sizeof(uint64_t));
	if (!r->vcpus[idx].wake_hist)
		return -1;
	rd->vs[idx] = (struct ana_vstate){ .key = key, .state = -1, .run_pcpu = -1,
					   .last_pcpu = -1 };
	r->nvcpus++;
	for (j = hash32(key + 1) & (rd->hsize - 1); rd->hkeys[j]; j = (j + 1) & (rd->hsize - 1))
		;
	rd->hkeys[j] = key + 1;
	rd->hvals[j] = idx + 1;
	return idx;
}

unsigned int ana_hist_index(uint64_t x)
{
	unsigned int e;

	if (x < 128)
		return x;
	e = 63 - __builtin_clzll(x);
	return 128 + (e - 7) * 64 + ((x >> (e - 6)) & 63);
}

uint64_t ana_hist_value(unsigned int i)
{
	unsigned int e, m;
	uint64_t lo, w;

	if (i < 128)
		return i;
	e = (i - 128) / 64 + 7;
	m = (i - 128) % 64;
	w = 1ull << (e - 6);
	lo = (64ull + m) << (e - 6);
	return lo + w / 2;
}

static void dom_on_pcpu(struct ana_pcpu *p, uint32_t dom, uint64_t c)
{
	unsigned int i;

	for (i = 0; i < p->ndoms; i++) {
		if (p->doms[i].dom == dom) {
			p->doms[i].cycles += c;
			return;
		}
	}
	if (!(p->ndoms & (p->ndoms - 1)) || !p->ndoms) {
		unsigned int n = p->ndoms ? p->ndoms * 2 : 4;
		struct ana_dom_time *d = realloc(p->doms, n * sizeof(*d));

		if (!d)
			return;	/* a domain less in the list, no wrong figure */
		p->doms = d;
	}
	p->doms[p->ndoms++] = (struct ana_dom_time){ dom, c };
}

/* A running period [a, b) of @v on @pcpu, clipped to the window. */
static void period(struct reader *rd, struct ana_vcpu *v, uint64_t a, uint64_t b, int pcpu)
{
	struct ana_result *r = rd->r;
	uint64_t c;

	if (a < r->win_start)
		a = r->win_start;
	if (b > r->win_end)
		b = r->win_end;
	if (b <= a)
		return;
	c = b - a;
	v->runs++;
	v->state_count[ANA_RUNNING]++;
	v->state_cycles[ANA_RUNNING] += c;
	if (c > v->run_max)
		v->run_max = c;
	if (pcpu >= 0 && (unsigned int)pcpu < r->npcpus) {
		struct ana_pcpu *p = &r->pcpus[pcpu];

		if (v->dom == ANA_IDLE_DOM) {
			p->idle += c;
		} else {
			p->busy += c;
			dom_on_pcpu(p, v->dom, c);
		}
	}
}

static void bound(struct reader *rd, int vi, uint64_t t, int pcpu, enum ana_bound kind)
{
	struct ana_vstate *s = &rd->vs[vi];

	if (s->running && t > s->run_start)
		period(rd, &rd->r->vcpus[vi], s->run_start, t, s->run_pcpu);
	/* first seen continuing: xenalyze starts it at its pCPU's first record */
	if (!s->running && kind == ANA_B_CONT)
		s->run_start = rd->r->pcpus[pcpu].first_tsc;
	else
		s->run_start = t;
	s->run_pcpu = pcpu;
	s->running = kind != ANA_B_END;
}

static uint64_t clip_len(const struct ana_result *r, uint64_t a, uint64_t b)
{
	if (a < r->win_start)
		a = r->win_start;
	if (b > r->win_end)
		b = r->win_end;
	return b > a ? b - a : 0;
}

static bool in_window(const struct ana_result *r, uint64_t t)
{
	return t >= r->win_start && t < r->win_end;
}

static void close_exit(struct ana_vstate *s, uint64_t t)
{
	struct ana_exit *e = s->pending;
	uint64_t c;

	if (!e)
		return;
	c = t - s->pending_tsc;
	e->entered++;
	e->cycles += c;
	if (c > e->max)
		e->max = c;
	s->pending = NULL;
}

static void charge(struct ana_vcpu *v, int state, uint64_t c)
{
	if (!c)
		return;
	v->state_cycles[state] += c;
	v->state_count[state]++;
}

static void runstate(struct reader *rd, int vi, uint64_t t, int pcpu, int old, int new)
{
	struct ana_vstate *s = &rd->vs[vi];
	struct ana_vcpu *v = &rd->r->vcpus[vi];

	if (new >= ANA_NSTATES || old >= ANA_NSTATES)
		return;
	/* as xenalyze, runstates count from the vCPU's first run on */
	if (s->state > ANA_RUNNING && s->seen_run)
		charge(v, s->state, clip_len(rd->r, s->state_tsc, t));
	if (new == ANA_RUNNING)
		s->seen_run = true;
	s->state = new;
	s->state_tsc = t;
	if (new == ANA_RUNNING) {
		/* an exit pending while descheduled ends when the vCPU runs again */
		close_exit(s, t);
		bound(rd, vi, t, pcpu, ANA_B_START);
		if (s->last_pcpu >= 0 && s->last_pcpu != pcpu && in_window(rd->r, t))
			v->migrations++;
		s->last_pcpu = pcpu;
		if (s->wake_tsc) {
			if (in_window(rd->r, t)) {
				uint64_t lat = t - s->wake_tsc;

				v->wakes++;
				v->wake_hist[ana_hist_index(lat)]++;
				if (lat > v->wake_max)
					v->wake_max = lat;
			}
			s->wake_tsc = 0;
		}
	} else if (old == ANA_RUNNING) {
		bound(rd, vi, t, pcpu, ANA_B_END);
	}
	/* xenalyze ends a pending exit when its vCPU is preempted or woken */
	if (new == ANA_RUNNABLE)
		close_exit(s, t);
	if (new == ANA_RUNNABLE && (old == ANA_BLOCKED || old == ANA_OFFLINE))
		s->wake_tsc = t ? t : 1;
	else if (new != ANA_RUNNING)
		s->wake_tsc = 0;
}

static struct ana_exit *exit_of(struct reader *rd, int vi, uint32_t isa, uint32_t reason)
{
	struct ana_vcpu *v = &rd->r->vcpus[vi];
	struct ana_vstate *s = &rd->vs[vi];

	for (unsigned int i = 0; i < v->nexits; i++)
		if (v->exits[i].reason == reason && v->exits[i].isa == isa)
			return &v->exits[i];
	if (v->nexits == s->cap_exits) {
		unsigned int n = s->cap_exits ? s->cap_exits * 2 : 8;
		struct ana_exit *e = realloc(v->exits, n * sizeof(*e));

		if (!e)
			return NULL;
		/* a pending pointer into the old array moves with it */
		if (s->pending)
			s->pending = e + (s->pending - v->exits);
		v->exits = e;
		s->cap_exits = n;
	}
	v->exits[v->nexits] = (struct ana_exit){ .isa = isa, .reason = reason };
	return &v->exits[v->nexits++];
}

/* The vCPU of a task's pid: ((dom << 16) | vcpu) + 1; -1 for idle or none. */
static int vcpu_of_pid(struct reader *rd, const uint8_t *ev, uint32_t len)
{
	int32_t pid = (int32_t)get_field(ev, len, &rd->pid);

	if (pid <= 0)
		return -1;
	return vcpu_of(rd, (uint32_t)pid - 1);
}

static int dispatch(struct reader *rd, int cpu, const uint8_t *ev, uint32_t len, uint64_t t)
{
	struct ana_result *r = rd->r;
	uint16_t type;
	int vi;

	if (len < 8)
		return 0;
	memcpy(&type, ev, 2);
	switch (rd->kind[type]) {
	case ANA_K_NONE:
		return 0;
	case ANA_K_RUNSTATE: {
		uint32_t key = (uint32_t)get_field(ev, len, &rd->rs_dom) << 16 |
			       (uint32_t)get_field(ev, len, &rd->rs_vcpu);

		uint64_t old = get_field(ev, len, &rd->rs_old);
		uint64_t new = get_field(ev, len, &rd->rs_new);

		vi = vcpu_of(rd, key);
		if (vi < 0)
			return -ENOMEM;
		if (old == ANA_RUNNING || new == ANA_RUNNING)
			rd->sched_seen[cpu] = true;
		runstate(rd, vi, t, cpu, old, new);
		return 0;
	}
	case ANA_K_CONTINUE: {
		uint32_t key = (uint32_t)get_field(ev, len, &rd->cr_dom) << 16 |
			       (uint32_t)get_field(ev, len, &rd->cr_vcpu);

		vi = vcpu_of(rd, key);
		if (vi < 0)
			return -ENOMEM;
		/*
		 * As xenalyze: a vCPU never seen to run whose first record is
		 * a continue, on a pCPU with no switch yet, was running since
		 * the capture began; its runstates count from here on.
		 */
		if (!rd->vs[vi].seen_run && !rd->sched_seen[cpu]) {
			rd->vs[vi].seen_run = true;
			rd->vs[vi].state = ANA_RUNNING;
			rd->vs[vi].state_tsc = t;
			rd->vs[vi].last_pcpu = cpu;
		}
		rd->sched_seen[cpu] = true;
		bound(rd, vi, t, cpu, ANA_B_CONT);
		return 0;
	}
	case ANA_K_EXIT:
		/* synthesized exits (xen_event 0) are not Xen's */
		if (!get_field(ev, len, &rd->ex_xen))
			return 0;
		vi = vcpu_of_pid(rd, ev, len);
		if (vi < 0)
			return 0;
		rd->vs[vi].pending = NULL;
		if (in_window(r, t)) {
			struct ana_exit *e = exit_of(rd, vi, get_field(ev, len, &rd->ex_isa),
						     get_field(ev, len, &rd->ex_reason));

			if (!e)
				return -ENOMEM;
			e->count++;
			rd->vs[vi].pending = e;
			rd->vs[vi].pending_tsc = t;
		}
		return 0;
	case ANA_K_ENTRY:
		vi = vcpu_of_pid(rd, ev, len);
		if (vi >= 0)
			close_exit(&rd->vs[vi], t);
		return 0;
	case ANA_K_LOST:
		r->pcpus[cpu].lost += get_field(ev, len, &rd->lost_count);
		r->pcpus[cpu].lost_recs++;
		r->lost += get_field(ev, len, &rd->lost_count);
		if (t < r->win_end)
			r->lossy = true;
		return 0;
	case ANA_K_HCALL:
	case ANA_K_HCALL64:
	case ANA_K_HCALL2: {
		const struct ana_field *fo = rd->kind[type] == ANA_K_HCALL ? &rd->hc_eax :
			rd->kind[type] == ANA_K_HCALL64 ? &rd->hc64_eax : &rd->hc2_op;
		uint64_t op = get_field(ev, len, fo);

		if (!in_window(r, t))
			return 0;
		vi = vcpu_of_pid(rd, ev, len);
		if (vi < 0)
			return 0;
		r->vcpus[vi].hcalls[op < ANA_NHCALL ? op : ANA_NHCALL]++;
		return 0;
	}
	}
	return 0;
}

/* Whether the page at file offset @off belongs to @cpu (libtracecmd says). */
static bool page_of_cpu(struct tracecmd_input *h, uint64_t off, int cpu)
{
	struct tep_record *rec;
	int c = -1;

	rec = ana_tc.read_at(h, off, &c);
	if (!rec)
		return false;
	ana_tc.free_record(rec);
	return c == cpu;
}

struct cpu_span {
	uint64_t first_off, npages;
	uint64_t first_ns;
	bool present;
};

/* @cpu's first record: its page, and its time as libtracecmd gives it. */
static void cpu_first(struct tracecmd_input *h, int cpu, size_t psize, struct cpu_span *sp)
{
	struct tep_record *rec = ana_tc.read_cpu_first(h, cpu);

	memset(sp, 0, sizeof(*sp));
	if (!rec)
		return;
	sp->first_off = rec->offset & ~((uint64_t)psize - 1);
	sp->first_ns = rec->ts;
	sp->present = true;
	ana_tc.free_record(rec);
}

/*
 * How many pages @cpu has, none past @limit (the next CPU's first page, or
 * the end of the file). Each ana_tc.read_at() faults in the file around
 * the page it reads (up to a 2 MB folio of the page cache), and the pages
 * it reads stay mapped until libtracecmd is closed. So the search goes
 * back from @limit, doubling its step: the pages it reads lie within about
 * twice the distance from this CPU's last page to @limit (the metadata
 * after the last CPU, nothing when another CPU's data follows), not across
 * the CPU's data, and memory stays flat in the file's size.
 */
static void cpu_pages(struct tracecmd_input *h, int cpu, size_t psize, uint64_t limit,
		      struct cpu_span *sp)
{
	/* page lo known to be ours (the first one), page hi not (or at @limit) */
	uint64_t lo = 0, hi = (limit - sp->first_off) / psize, step = 1;

	while (step < hi - lo) {
		uint64_t p = hi - step;

		if (page_of_cpu(h, sp->first_off + p * psize, cpu)) {
			lo = p;
			break;
		}
		hi = p;
		step *= 2;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (page_of_cpu(h, sp->first_off + mid * psize, cpu))
			lo = mid;
		else
			hi = mid;
	}
	sp->npages = lo + 1;
}

static int cmp_vcpu(const void *a, const void *b)
{
	const struct ana_vcpu *x = a, *y = b;

	if (x->dom != y->dom)
		return x->dom < y->dom ? -1 : 1;
	return (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

static int cmp_domtime(const void *a, const void *b)
{
	const struct ana_dom_time *x = a, *y = b;

	return (x->dom > y->dom) - (x->dom < y->dom);
}

void ana_free(struct ana_result *r)
{
	if (!r)
		return;
	for (unsigned int i = 0; i < r->nvcpus; i++) {
		free(r->vcpus[i].wake_hist);
		free(r->vcpus[i].exits);
	}
	for (unsigned int i = 0; i < r->npcpus; i++)
		free(r->pcpus[i].doms);
	free(r->vcpus);
	free(r->pcpus);
	free(r->file);
	free(r);
}

/* The last event of a CPU's last page (at file offset @off): its raw TSC. */
static uint64_t last_ts(struct reader *rd, int fd, uint64_t off)
{
	uint8_t *pg = malloc(rd->psize);
	struct stream s = { .fd = fd, .buf = pg, .page = pg, .bend = pg + rd->psize };
	uint64_t t = 0;

	if (!pg)
		return 0;
	if (pread(fd, pg, rd->psize, off) != (ssize_t)rd->psize || page_open(rd, &s)) {
		free(pg);
		return 0;
	}
	t = s.ts;
	while (stream_next(rd, &s) == 1)
		t = s.ev_ts;
	free(pg);
	return t;
}

/* The ns time libtracecmd gives the last record of @cpu's last page. */
static bool last_ns(struct tracecmd_input *h, uint64_t page_off, size_t psize, int cpu,
		    uint64_t *ns)
{
	struct tep_record *rec = ana_tc.read_at(h, page_off, NULL);
	bool got = false;

	while (rec && rec->offset < page_off + psize) {
		*ns = rec->ts;
		got = true;
		ana_tc.free_record(rec);
		rec = ana_tc.read_data(h, cpu);
	}
	if (rec)
		ana_tc.free_record(rec);
	return got;
}

/*
 * The file header's page size (libtraceevent's is not set by libtracecmd):
 * magic (10 bytes), the version as a string, endianness, long size, u32
 * page size.
 */
static size_t header_page_size(const char *path)
{
	uint8_t h[32];
	uint32_t ps = 0;
	size_t n, i;
	FILE *f = fopen(path, "rb");

	if (!f)
		return 0;
	n = fread(h, 1, sizeof(h), f);
	fclose(f);
	if (n < 20 || memcmp(h, "\x17\x08\x44tracing", 10))
		return 0;
	for (i = 10; i < n && h[i]; i++)
		;
	if (i + 7 > n)
		return 0;
	memcpy(&ps, h + i + 3, 4);
	return ps;
}

struct ana_result *ana_run(const char *path, const struct ana_opts *opts)
{
	struct ana_opts none = { 0 };
	struct reader *rd = NULL;
	struct ana_result *r = NULL;
	struct tracecmd_input *h = NULL;
	struct stream *st = NULL;
	struct cpu_span *sp = NULL;
	struct stat sb;
	int fd = -1, ncpus = 0, ret = -EINVAL;
	uint64_t fsize = 0, hz;

	if (!opts)
		opts = &none;
	if (ana_tc_load())
		return NULL;
	ana_tc.set_loglevel(TEP_LOG_NONE);
	h = ana_tc.open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h) {
		tcx_fail(-EINVAL, "%s: not a trace.dat libtracecmd can read", path);
		goto out;
	}
	rd = calloc(1, sizeof(*rd));
	r = calloc(1, sizeof(*r));
	if (!rd || !r || !(r->file = strdup(path))) {
		tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}
	rd->r = r;
	{
		struct tep_handle *tep = ana_tc.get_tep(h);

		rd->psize = tep_get_page_size(tep);
		if (!rd->psize)
			rd->psize = header_page_size(path);
		rd->long_size = tep_get_header_page_size(tep);
		if (rd->long_size != 4 && rd->long_size != 8)
			rd->long_size = tep_get_long_size(tep) == 4 ? 4 : 8;
		if (tep_is_file_bigendian(tep) != tep_is_bigendian()) {
			tcx_fail(-ENOTSUP, "%s: written on a machine of the other byte order",
				 path);
			goto fail;
		}
		if (rd->psize < 64 || (rd->psize & (rd->psize - 1))) {
			tcx_fail(-EINVAL, "%s: page size %zu", path, rd->psize);
			goto fail;
		}
		if (resolve_events(rd, tep)) {
			tcx_fail(-EINVAL, "%s: %s", path, tcx_error());
			goto fail;
		}
		ncpus = tep_get_cpus(tep);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		tcx_fail(-errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	fsize = sb.st_size;
	if (ncpus <= 0 || !fsize) {
		tcx_fail(-EINVAL, "%s: no CPU data", path);
		goto fail;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	/* flat memory: each pCPU's pages go through a buffer of their own */
	rd->chunk = rd->psize > CHUNK ? rd->psize : CHUNK / rd->psize * rd->psize;
	r->npcpus = ncpus;
	r->pcpus = calloc(ncpus, sizeof(*r->pcpus));
	st = calloc(ncpus, sizeof(*st));
	sp = calloc(ncpus, sizeof(*sp));
	rd->sched_seen = calloc(ncpus, sizeof(*rd->sched_seen));
	if (!r->pcpus || !st || !sp || !rd->sched_seen) {
		tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}

	/* where each pCPU's pages are, its first and last TSC */
	r->first_tsc = UINT64_MAX;
	{
		uint64_t best_span = 0, hz_num = 0, hz_den = 0;

		for (int c = 0; c < ncpus; c++)
			cpu_first(h, c, rd->psize, &sp[c]);
		for (int c = 0; c < ncpus; c++) {
			struct stream *s = &st[c];
			uint64_t lns, limit = fsize;

			for (int o = 0; o < ncpus; o++)
				if (sp[o].present && sp[o].first_off > sp[c].first_off &&
				    sp[o].first_off < limit)
					limit = sp[o].first_off;
			s->done = true;
			if (sp[c].present)
				cpu_pages(h, c, rd->psize, limit, &sp[c]);
			if (!sp[c].present)
				continue;
			s->fd = fd;
			s->off = sp[c].first_off;
			s->end_off = s->off + sp[c].npages * rd->psize;
			s->buf = malloc(rd->chunk);
			if (!s->buf) {
				tcx_fail(-ENOMEM, "out of memory");
				goto fail;
			}
			s->done = false;
			if (refill(rd, s) <= 0 || page_open(rd, s) || (ret = stream_next(rd, s)) < 0) {
				tcx_fail(-EBADMSG, "%s: CPU %d: %s", path, c, tcx_error());
				goto fail;
			}
			if (s->done)
				continue;
			r->pcpus[c].present = true;
			r->pcpus[c].first_tsc = s->ev_ts;
			r->pcpus[c].last_tsc = last_ts(rd, fd, sp[c].first_off +
							       (sp[c].npages - 1) * rd->psize);
			if (r->pcpus[c].last_tsc < s->ev_ts)
				r->pcpus[c].last_tsc = s->ev_ts;
			if (s->ev_ts < r->first_tsc)
				r->first_tsc = s->ev_ts;
			if (r->pcpus[c].last_tsc > r->last_tsc)
				r->last_tsc = r->pcpus[c].last_tsc;
			/* the frequency from the file's own conversion, on its longest pCPU */
			if (!opts->cpu_hz &&
			    last_ns(h, sp[c].first_off + (sp[c].npages - 1) * rd->psize,
				    rd->psize, c, &lns) &&
			    lns > sp[c].first_ns &&
			    r->pcpus[c].last_tsc - s->ev_ts > best_span) {
				best_span = r->pcpus[c].last_tsc - s->ev_ts;
				hz_num = best_span;
				hz_den = lns - sp[c].first_ns;
			}
		}
		if (r->first_tsc == UINT64_MAX) {
			tcx_fail(-EINVAL, "%s: no records", path);
			goto fail;
		}
		if (opts->cpu_hz) {
			hz = opts->cpu_hz;
		} else if (hz_den >= 1000000) {
			/* to the kHz: the file's mult/shift rounding is far below that */
			hz = (uint64_t)((long double)hz_num * 1e9L / hz_den + 0.5L);
			hz = (hz + 500) / 1000 * 1000;
			r->hz_from_file = true;
		} else {
			hz = 2400000000ull;	/* xenalyze's default */
		}
		r->cpu_hz = hz;
	}
	/*
	 * libtracecmd is done: closing it now unmaps the file regions its
	 * page lookups faulted in (a few MB, whatever the file's size).
	 */
	ana_tc.close(h);
	h = NULL;
	r->win_start = r->first_tsc + (uint64_t)((long double)opts->from_ns * hz / 1e9L);
	r->win_end = opts->to_ns ?
		r->first_tsc + (uint64_t)((long double)opts->to_ns * hz / 1e9L) : UINT64_MAX;
	if (r->win_end <= r->win_start) {
		tcx_fail(-EINVAL, "the window ends before it starts (--from %llu ns, --to %llu ns)",
			 (unsigned long long)opts->from_ns, (unsigned long long)opts->to_ns);
		goto fail;
	}

	/* the merge: the pCPU whose next event is oldest goes first */
	for (;;) {
		int best = -1;
		uint64_t bt = UINT64_MAX, bt2 = UINT64_MAX;
		struct stream *s;

		for (int c = 0; c < ncpus; c++) {
			if (st[c].done)
				continue;
			if (st[c].ev_ts < bt) {
				bt2 = bt;
				bt = st[c].ev_ts;
				best = c;
			} else if (st[c].ev_ts < bt2) {
				bt2 = st[c].ev_ts;
			}
		}
		if (best < 0 || bt >= r->win_end)
			break;
		s = &st[best];
		/* drain this pCPU while it stays the oldest */
		do {
			r->pcpus[best].records++;
			r->records++;
			ret = dispatch(rd, best, s->ev, s->ev_len, s->ev_ts);
			if (ret) {
				tcx_fail(ret, "out of memory");
				goto fail;
			}
			ret = stream_next(rd, s);
			if (ret < 0) {
				tcx_fail(-EBADMSG, "%s: CPU %d: %s", path, best, tcx_error());
				goto fail;
			}
		} while (!s->done && s->ev_ts <= bt2 && s->ev_ts < r->win_end);
	}

	/* what was still running or waiting at the end */
	{
		uint64_t end = r->win_end < r->last_tsc ? r->win_end : r->last_tsc;
		bool cut = r->win_end < r->last_tsc;

		if (r->win_end == UINT64_MAX || r->win_end > r->last_tsc)
			r->win_end = r->last_tsc;
		if (r->win_start > r->win_end)
			r->win_start = r->win_end;
		for (unsigned int i = 0; i < r->nvcpus; i++) {
			struct ana_vstate *s = &rd->vs[i];

			if (s->running && s->run_pcpu >= 0 &&
			    r->pcpus[s->run_pcpu].last_tsc > s->run_start)
				period(rd, &r->vcpus[i], s->run_start,
				       r->pcpus[s->run_pcpu].last_tsc, s->run_pcpu);
			/*
			 * A state still open at the end of the file has no known
			 * end, and xenalyze leaves it out; one open at a --to cut
			 * ran at least to the cut.
			 */
			if (s->state > ANA_RUNNING && s->seen_run && cut)
				charge(&r->vcpus[i], s->state, clip_len(r, s->state_tsc, end));
		}
	}
	qsort(r->vcpus, r->nvcpus, sizeof(*r->vcpus), cmp_vcpu);
	for (unsigned int c = 0; c < r->npcpus; c++)
		if (r->pcpus[c].ndoms)
			qsort(r->pcpus[c].doms, r->pcpus[c].ndoms, sizeof(*r->pcpus[c].doms),
			      cmp_domtime);
	ret = 0;
	goto out;
fail:
	ana_free(r);
	r = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (h)
		ana_tc.close(h);
	if (rd) {
		free(rd->vs);
		free(rd->hkeys);
		free(rd->hvals);
		free(rd->reason_idx);
		free(rd->sched_seen);
		free(rd);
	}
	if (st)
		for (int c = 0; c < ncpus; c++)
			free(st[c].buf);
	free(st);
	free(sp);
	return r;
}

uint64_t ana_ns(const struct ana_result *r, uint64_t cycles)
{
	return (uint64_t)((long double)cycles * 1e9L / r->cpu_hz + 0.5L);
}

uint64_t ana_percentile(const struct ana_vcpu *v, double pct)
{
	uint64_t need, seen = 0;

	if (!v->wakes)
		return 0;
	need = (uint64_t)((long double)v->wakes * pct / 100.0L + 0.999999L);
	if (need < 1)
		need = 1;
	for (unsigned int i = 0; i < ANA_HIST; i++) {
		seen += v->wake_hist[i];
		if (seen >= need) {
			uint64_t x = ana_hist_value(i);

			return x > v->wake_max ? v->wake_max : x;
		}
	}
	return v->wake_max;
}
