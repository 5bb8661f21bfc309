// SPDX-License-Identifier: GPL-2.0
/*
 * The trace.dat sink: decoded records in (a rec_emit_fn), tdat events out.
 * It keeps the vCPU model, writes every record as its catalogue event,
 * adds sched_switch at each change of vCPU, kvm_entry/kvm_exit around guest
 * intervals that have no VMENTRY/VMEXIT records, turns LOST_RECORDS into
 * missed-event marks, and remembers the (domain, vCPU) pairs for cmdlines
 * and GUEST options. convert and the live recorder both write through it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdint.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* ---- a set of (dom << 16 | vcpu) keys ---- */

struct vset {
	uint32_t	*keys;	/* key + 1, 0 = empty */
	size_t		n, cap;
};

static int vset_add(struct vset *s, uint32_t dom, uint32_t vcpu)
{
	uint32_t key;
	size_t h;

	if (dom >= REC_DOMID_IDLE || vcpu > 0xffff)
		return 0;
	key = ((dom << 16) | vcpu) + 1;
	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		uint32_t *nk = calloc(ncap, sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->keys[i])
				continue;
			h = (s->keys[i] * 0x9e3779b1u) & (ncap - 1);
			while (nk[h])
				h = (h + 1) & (ncap - 1);
			nk[h] = s->keys[i];
		}
		free(s->keys);
		s->keys = nk;
		s->cap = ncap;
	}
	h = (key * 0x9e3779b1u) & (s->cap - 1);
	while (s->keys[h]) {
		if (s->keys[h] == key)
			return 0;
		h = (h + 1) & (s->cap - 1);
	}
	s->keys[h] = key;
	s->n++;
	return 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The keys sorted (dom, vcpu), as pid - 1 values. */
static uint32_t *vset_sorted(const struct vset *s)
{
	uint32_t *v = malloc((s->n + 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->cap; i++)
		if (s->keys[i])
			v[k++] = s->keys[i] - 1;
	qsort(v, k, sizeof(*v), cmp_u32);
	return v;
}

/* ---- the sink ---- */

/*
 * Per pCPU: the running vCPU's pid, as the vCPU model says (cached), and
 * a kvm_entry held back since the last switch-in until the pCPU's next
 * record says whether the vCPU logs its own VMENTRY.
 */
struct cur {
	int		pid;
	uint32_t	noted;		/* note_vcpus()' last key here: in the set */
	bool		pend;
	int		pend_pid;
	uint32_t	pend_vcpu;
	uint64_t	pend_ts;
};

#define LCACHE_SIZE	256

struct rec_sink {
	struct tdat_writer	*w;
	struct rec_sink_opts	o;
	struct rec_vcpus	*vm;
	struct vset		tasks;
	bool			*in_guest;	/* per pCPU: after a kvm_entry */
	struct cur		*cur;		/* per pCPU, refreshed by SCHED records */
	bool			hold;		/* an error or a tap: not the fast path */
	/* catalogue entries by Xen id: most captures use a few dozen ids */
	struct lent {
		uint32_t		ev;
		uint16_t		id;	/* e's */
		uint16_t		size;
		uint8_t			enc;
		uint8_t			cls;
		uint8_t			lim;	/* emit_plain() takes nr < lim */
		uint8_t			raw_lim;	/* rec_sink_emit_raw()'s: 0 when not small */
		uint8_t			rlen;	/* the page's payload: 8 + size, rounded to 4 */
		const struct rec_event	*e;
	} lcache[LCACHE_SIZE];
	struct rec_sink_stats	st;
	int			err;		/* the first error of an emit */
	char			errmsg[TCX_ERROR_MAX];
	/* domains recorded through their agents: their GUEST entry's identity */
	struct named {
		uint32_t	dom;
		uint64_t	traceid;
		char		name[64];
	}			*named;
	size_t			nnamed;
};

int rec_sink_add_formats(struct tdat_writer *w)
{
	char text[4096];

	for (int i = 0; i < rec_events_count(); i++) {
		const struct rec_event *e = rec_event_at(i);
		int ret = rec_event_format(e, text, sizeof(text));

		if (ret < 0)
			return ret;
		ret = tdat_add_event_format(w, e->system, text);
		if (ret < 0)
			return ret;
	}
	return tdat_add_cmdline(w, 0, "<idle>");
}

struct rec_sink *rec_sink_new(struct tdat_writer *w, const struct rec_sink_opts *o)
{
	struct rec_sink *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->w = w;
	k->o = *o;
	if (k->o.ncpus < 1 || k->o.ncpus > REC_MAX_CPUS)
		k->o.ncpus = REC_MAX_CPUS;
	k->hold = k->o.tap != NULL;
	k->vm = rec_vcpus_new(k->o.ncpus, k->o.use_switch);
	k->in_guest = calloc(k->o.ncpus, sizeof(*k->in_guest));
	k->cur = calloc(k->o.ncpus, sizeof(*k->cur));
	/* ids are 28 bits: an all-ones key never matches */
	memset(k->lcache, 0xff, sizeof(k->lcache));
	if (!k->vm || !k->in_guest || !k->cur) {
		rec_sink_free(k);
		errno = ENOMEM;
		return NULL;
	}
	return k;
}

void rec_sink_free(struct rec_sink *k)
{
	if (!k)
		return;
	rec_vcpus_free(k->vm);
	free(k->in_guest);
	free(k->cur);
	free(k->tasks.keys);
	free(k->named);
	free(k);
}

int rec_sink_name_guest(struct rec_sink *k, uint32_t dom, const char *name, uint64_t traceid)
{
	struct named *n = realloc(k->named, (k->nnamed + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	k->named = n;
	n += k->nnamed++;
	n->dom = dom;
	n->traceid = traceid;
	snprintf(n->name, sizeof(n->name), "%s", name);
	return 0;
}

int rec_sink_note_vcpu(struct rec_sink *k, uint32_t dom, uint32_t vcpu)
{
	int ret = vset_add(&k->tasks, dom, vcpu);

	return ret < 0 ? ret : 0;
}

/* Keep the first error (and the thread's message) for rec_sink_error(). */
static void fail(struct rec_sink *k, int err)
{
	if (k->err)
		return;
	k->err = err;
	k->hold = true;
	snprintf(k->errmsg, sizeof(k->errmsg), "%s", tcx_error());
}

static void put(struct rec_sink *k, int cpu, uint64_t ts, const void *p, size_t len)
{
	int ret;

	if (k->err)
		return;
	ret = tdat_write_event(k->w, cpu, ts, p, len);
	if (ret < 0) {
		fail(k, ret);
		return;
	}
	k->st.events++;
}

/*
 * The kvm_entry of a vCPU switched in on @cpu: an HVM vCPU logs its own
 * VMENTRY, and its HVM records (interrupt injection...) come first, so an
 * HVM record next on the pCPU drops the synthesized one; any other record
 * (PV, HVM tracing off) writes it, at the switch's time, before itself.
 * Only the pCPU's own order decides: the same file whether the records
 * come merged across pCPUs or not.
 */
static void resolve_entry(struct rec_sink *k, int cpu, bool hvm)
{
	struct cur *c = &k->cur[cpu];
	uint8_t b[REC_MAX_PAYLOAD];

	c->pend = false;
	if (hvm)
		return;
	put(k, cpu, c->pend_ts, b, rec_encode_kvm_entry(b, c->pend_pid, c->pend_vcpu));
	k->in_guest[cpu] = true;
}

static void do_switch(struct rec_sink *k, const struct rec_record *r, const struct rec_switch *sw)
{
	uint8_t b[REC_MAX_PAYLOAD];
	char pc[16], nc[16];
	int prev = rec_vcpu_pid(sw->prev_dom, sw->prev_vcpu);
	int next = rec_vcpu_pid(sw->next_dom, sw->next_vcpu);
	int cpu = r->cpu;

	if (k->in_guest[cpu] && prev) {
		/* KernelShark's combo view needs every guest interval closed. */
		put(k, cpu, r->tsc, b, rec_encode_kvm_exit_state(b, prev, sw->prev_vcpu & 0xffff,
								 sw->prev_state));
	}
	k->in_guest[cpu] = false;
	rec_vcpu_comm(sw->prev_dom, sw->prev_vcpu, pc);
	rec_vcpu_comm(sw->next_dom, sw->next_vcpu, nc);
	put(k, cpu, r->tsc, b, rec_encode_sched_switch(b, prev, pc, sw->prev_state, next, nc));
	k->st.switches++;
	if (next) {
		/* written by resolve_entry() unless a VMENTRY follows */
		k->cur[cpu].pend = true;
		k->cur[cpu].pend_pid = next;
		k->cur[cpu].pend_vcpu = sw->next_vcpu & 0xffff;
		k->cur[cpu].pend_ts = r->tsc;
	}
	if (vset_add(&k->tasks, sw->next_dom, sw->next_vcpu) < 0)
		fail(k, tcx_fail(-ENOMEM, "out of memory for the vCPUs"));
}

/* Every (domain, vCPU) a record names gets a cmdline and a GUEST entry. */
/* @r's pCPU is valid: a pCPU's records name the vCPU it runs again and again. */
static void note_vcpus(struct rec_sink *k, const struct rec_record *r)
{
	uint32_t dom[2], vcpu[2], *noted = &k->cur[r->cpu].noted;
	int n = rec_record_vcpus(r, dom, vcpu);

	for (int i = 0; i < n; i++) {
		uint32_t key = ((dom[i] << 16) | vcpu[i]) + 1;

		/* what the set never takes (the idle domain) is not noted either */
		if (dom[i] >= REC_DOMID_IDLE || vcpu[i] > 0xffff || key == *noted)
			continue;
		if (vset_add(&k->tasks, dom[i], vcpu[i]) < 0) {
			fail(k, tcx_fail(-ENOMEM, "out of memory for the vCPUs"));
			continue;
		}
		*noted = key;
	}
}

/*
 * The records emit_plain() writes, by the words they may have (lim: one
 * more, 0 for none): those of the encodings whose size the entry tells,
 * which no sink state but in_guest follows. LOST_RECORDS, scheduler and
 * xen/unknown records take the general path.
 */
static uint8_t plain_lim(const struct rec_event *e, uint32_t ev, enum rec_class cls)
{
	if (ev == TRC_LOST_RECORDS || cls == REC_CLASS_SCHED || e->xen_id == 0xffffffff)
		return 0;
	switch (e->enc) {
	case REC_ENC_WORDS:
		/* at most the 7 words a record has: r->nr is not clamped there */
		if (e->size < 4)
			return 0;
		return (e->size - 4) / 4 < 7 ? (e->size - 4) / 4 + 1 : 8;
	case REC_ENC_VMENTRY:
		return 1;
	case REC_ENC_VMEXIT:
		return 4;
	default:
		return 0;
	}
}

/* The catalogue entry of id @ev, from the cache. */
static inline const struct lent *lookup(struct rec_sink *k, uint32_t ev)
{
	unsigned int h = (ev ^ (ev >> 8) ^ (ev >> 16)) & (LCACHE_SIZE - 1);
	struct lent *l = &k->lcache[h];

	if (unlikely(l->ev != ev)) {
		l->ev = ev;
		l->cls = rec_event_class(ev);
		l->e = rec_event_lookup(ev);
		l->id = l->e->id;
		l->size = l->e->size;
		l->enc = l->e->enc;
		l->lim = plain_lim(l->e, ev, l->cls);
		l->rlen = (8 + l->size + 3) & ~3u;
		l->raw_lim = 8 + l->size <= TDAT_SMALL_MAX ? l->lim : 0;
	}
	return l;
}

/* A payload that did not fit the page's room, or had no known size. */
static void put_buffered(struct rec_sink *k, const struct rec_event **ep,
			 const struct rec_record *r, int pid, int isa)
{
	uint8_t b[REC_MAX_PAYLOAD];
	size_t len = rec_event_encode(*ep, r, pid, isa, b);

	if (!len) {
		*ep = rec_event_lookup(0xffffffff);
		len = rec_event_encode(*ep, r, pid, 0, b);
	}
	/* also where tdat_reserve() failed: this gives its error */
	put(k, r->cpu, r->tsc, b, len);
}

/* The isa of a VMX-numbered exit (0: from the id), switching to SVM when seen. */
static inline int exit_isa(struct rec_sink *k, uint32_t event, unsigned int nr, uint32_t reason)
{
	if ((event & 0xff) != 0x02)
		return 0;
	/* VMX exit reasons stay below 0x60; AMD's interrupt, I/O, NPF... do not */
	if (!k->o.svm && k->o.svm_auto && nr && reason >= 0x60) {
		k->o.svm = true;
		k->st.svm_switched = true;
	}
	if (k->o.svm)
		return 2;
	k->st.vmx_before_svm++;
	return 0;
}

/* The record and the vCPU its pCPU runs, to the tap, once written. */
static __attribute__((noinline)) void tap(struct rec_sink *k, const struct rec_record *r)
{
	uint32_t dom, vcpu;
	bool known = rec_vcpus_current(k->vm, r->cpu, &dom, &vcpu);

	k->o.tap(k->o.tap_ctx, r, known, dom, vcpu);
}

/* Everything emit_plain() does not take. */
static __attribute__((noinline)) void emit_general(struct rec_sink *k,
						   const struct rec_record *r,
						   const struct lent *l)
{
	enum rec_class cls = l->cls;
	const struct rec_event *e = l->e;
	struct rec_switch sw;
	uint32_t dom, vcpu;
	int pid, isa = 0, ret;
	size_t len;
	void *p;

	if (unlikely(k->err || r->cpu >= k->o.ncpus))
		return;
	if (unlikely(k->cur[r->cpu].pend))
		resolve_entry(k, r->cpu, cls == REC_CLASS_HVM);
	k->st.classes[cls]++;
	pid = k->cur[r->cpu].pid;

	if (unlikely(r->event == TRC_LOST_RECORDS && r->nr >= 1)) {
		ret = tdat_mark_missed(k->w, r->cpu, r->w[0]);
		if (ret < 0) {
			fail(k, ret);
			return;
		}
	}
	if (e->enc == REC_ENC_VMEXIT)
		isa = exit_isa(k, r->event, r->nr, r->w[0]);
	/* most records: encoded straight into the page, no copy */
	len = rec_event_encode_size(e, r);
	p = likely(len) ? tdat_reserve(k->w, r->cpu, r->tsc, len) : NULL;
	if (likely(p)) {
		rec_event_encode(e, r, pid, isa, p);
		k->st.events++;
	} else {
		put_buffered(k, &e, r, pid, isa);
	}
	if (unlikely(e->xen_id == 0xffffffff))	/* the xen/unknown entry */
		k->st.unknown++;
	if (e->enc == REC_ENC_VMENTRY) {
		k->in_guest[r->cpu] = true;
	} else if (e->enc == REC_ENC_VMEXIT) {
		k->in_guest[r->cpu] = false;
	}
	/* only scheduler records move vCPUs; they (and LOST_RECORDS) name tasks */
	if (cls == REC_CLASS_SCHED || r->event == TRC_LOST_RECORDS) {
		note_vcpus(k, r);
		if (cls == REC_CLASS_SCHED) {
			if (rec_vcpus_update(k->vm, r, &sw))
				do_switch(k, r, &sw);
			if (rec_vcpus_current(k->vm, r->cpu, &dom, &vcpu))
				k->cur[r->cpu].pid = rec_vcpu_pid(dom, vcpu);
			else
				k->cur[r->cpu].pid = 0;
		}
	}
	if (k->o.tap)
		tap(k, r);
}

/*
 * A plain record's payload at @p, and where its pCPU is: in the guest
 * after a VMENTRY, out of it after a VMEXIT. @isa: exit_isa()'s for a
 * VMEXIT, or -1 to ask it here.
 */
static inline void encode_plain(struct rec_sink *k, unsigned int cpu, uint8_t *p,
				const struct lent *l, int pid, int isa, uint32_t event,
				const void *words, unsigned int nr, bool wide)
{
	switch (l->enc) {
	case REC_ENC_WORDS:
		if (wide && l->size <= 32)
			rec_encode_words_wide(p, l->id, pid, words, nr);
		else
			rec_encode_words(p, l->id, l->size, pid, words, nr);
		break;
	case REC_ENC_VMENTRY:
		rec_encode_vmentry(p, l->id, pid, event);
		k->in_guest[cpu] = true;
		break;
	default:
		if (isa < 0)
			isa = exit_isa(k, event, nr, rec_word(words, 0));
		rec_encode_vmexit(p, l->id, pid, isa, event, words, nr);
		k->in_guest[cpu] = false;
		break;
	}
}

/*
 * Most records: a payload of known size straight into the page, the
 * encoding picked once. The same bytes and counters as emit_general();
 * the caller taps.
 */
static inline void emit_plain(struct rec_sink *k, const struct rec_record *r,
			      const struct lent *l, unsigned int cpu)
{
	/* read once: the page stores below may alias anything */
	unsigned int enc = l->enc;
	int pid = k->cur[cpu].pid, isa = 0;
	const struct rec_event *e = l->e;
	uint8_t *p;

	k->st.classes[l->cls]++;
	if (enc == REC_ENC_VMEXIT)
		isa = exit_isa(k, r->event, r->nr, r->w[0]);
	p = tdat_reserve(k->w, cpu, r->tsc, 8 + l->size);
	if (likely(p)) {
		encode_plain(k, cpu, p, l, pid, isa, r->event, r->w, r->nr, false);
		k->st.events++;
		return;
	}
	put_buffered(k, &e, r, pid, isa);
	if (enc == REC_ENC_VMENTRY)
		k->in_guest[cpu] = true;
	else if (enc == REC_ENC_VMEXIT)
		k->in_guest[cpu] = false;
}

/* With a tap: still emit_plain() where it can, then the tap. */
static __attribute__((noinline)) void emit_tapped(struct rec_sink *k, const struct rec_record *r,
						  const struct lent *l)
{
	unsigned int cpu = r->cpu;

	if (r->nr < l->lim && !k->err && cpu < (unsigned int)k->o.ncpus && !k->cur[cpu].pend) {
		emit_plain(k, r, l, cpu);
		tap(k, r);
	} else {
		emit_general(k, r, l);
	}
}

static inline __attribute__((always_inline)) void emit(struct rec_sink *k,
							 const struct rec_record *r)
{
	const struct lent *l = lookup(k, r->event);
	unsigned int cpu = r->cpu;

	if (likely(r->nr < l->lim && !k->hold && cpu < (unsigned int)k->o.ncpus &&
		   !k->cur[cpu].pend))
		emit_plain(k, r, l, cpu);
	else if (k->o.tap)
		emit_tapped(k, r, l);
	else
		emit_general(k, r, l);
}

void rec_sink_emit(void *sink, const struct rec_record *r)
{
	emit(sink, r);
}

/*
 * emit_plain() into a run of the pCPU's page: false when the page has no
 * room (or the event must take tdat_reserve()'s slow path), nothing done.
 */
static inline bool emit_run(struct rec_sink *k, struct tdat_run *run, const struct rec_record *r,
			    const struct lent *l, unsigned int cpu)
{
	uint8_t *p = tdat_run_reserve(run, r->tsc, 8 + l->size);

	if (unlikely(!p))
		return false;
	k->st.classes[l->cls]++;
	encode_plain(k, cpu, p, l, k->cur[cpu].pid, -1, r->event, r->w, r->nr, false);
	return true;
}

/*
 * What emit_plain() takes goes into a run of its pCPU's page
 * (tdat_run_reserve(), inline); anything else ends the run first.
 */
void rec_sink_emit_batch(void *sink, const struct rec_record *r, unsigned int n)
{
	struct rec_sink *k = sink;
	const struct rec_record *end = r + n;
	struct tdat_run run = { 0 };
	int run_cpu = -1;

	for (; r < end; r++) {
		const struct lent *l = lookup(k, r->event);
		unsigned int cpu = r->cpu;

		if (unlikely(r->nr >= l->lim || k->err || cpu >= (unsigned int)k->o.ncpus ||
			     k->cur[cpu].pend)) {
			if (run_cpu >= 0)
				tdat_run_end(k->w, run_cpu, &run);
			run_cpu = -1;
			emit(k, r);
			continue;
		}
		if ((int)cpu != run_cpu) {
			if (run_cpu >= 0)
				tdat_run_end(k->w, run_cpu, &run);
			tdat_run_begin(k->w, cpu, &run);
			run_cpu = cpu;
		}
		if (likely(emit_run(k, &run, r, l, cpu))) {
			k->st.events++;
		} else {
			/* a new page: tdat_reserve()'s */
			tdat_run_end(k->w, cpu, &run);
			emit_plain(k, r, l, cpu);
			tdat_run_begin(k->w, cpu, &run);
		}
		if (unlikely(k->o.tap))
			tap(k, r);
	}
	if (run_cpu >= 0)
		tdat_run_end(k->w, run_cpu, &run);
}

/* A run kept in registers: tdat sees only copies, so page stores need no reload of it. */
static inline void run_open(struct rec_sink *k, int cpu, struct tdat_run *run)
{
	struct tdat_run t;

	tdat_run_begin(k->w, cpu, &t);
	*run = t;
}

static inline void run_close(struct rec_sink *k, int cpu, const struct tdat_run *run)
{
	struct tdat_run t = *run;

	tdat_run_end(k->w, cpu, &t);
}

/*
 * How far ahead the lane asks for cache lines: of the staged records (the
 * drain thread wrote them on the other core, and each record's header says
 * where the next starts, so the loads wait on each other) and of the page
 * being filled. At 800 000 and 1 600 000 exits/s per vCPU this took about
 * a tenth off record's CPU per record (768 and 512 did better than 384
 * and 256).
 */
#define LANE_AHEAD_IN	768
#define LANE_AHEAD_OUT	512

/* A hint only: never a fault, so it may point past the window or the page. */
#define ahead(p, dist, rw)	__builtin_prefetch((const void *)((uintptr_t)(p) + (dist)), (rw))

/*
 * The fast lane: one pCPU's plain records, from the window's bytes into
 * its page, then to the tap if there is one (@tapped: a constant in each
 * of its two copies, so the untapped one carries no tap test). Nothing it
 * takes touches the vCPU model, so the pCPU's pid and pending entry hold
 * for the whole call; after an error every record goes the other way.
 */
static __attribute__((always_inline)) inline size_t
raw_lane(struct rec_sink *k, int cpu, const uint8_t *p, size_t len, struct rec_time *t,
	 const bool tapped)
{
	uint64_t cur = t->cur_tsc, cur0 = t->cur_tsc;
	uint64_t no_tsc = 0, taken = 0, slow = 0;
	bool has_cur = t->has_cur, stop = false;
	const uint8_t *q = p, *last;
	struct tdat_run run;
	int pid;

	if (len < REC_DECODE_FAST_READ)
		return 0;
	/* the last record start from which the lane may read its bytes */
	last = p + len - REC_DECODE_FAST_READ;
	pid = k->cur[cpu].pid;
	run_open(k, cpu, &run);
	while (q <= last) {
		uint32_t hdr, ev, lo, hi;
		const struct lent *l;
		const uint8_t *w;
		unsigned int nr;
		uint64_t ts;
		uint8_t *e;

		ahead(q, LANE_AHEAD_IN, 0);
		memcpy(&hdr, q, 4);
		ev = hdr & 0x0fffffff;
		nr = (hdr >> 28) & 7;
		/* fillers and LOST_RECORDS are the stream's */
		if ((ev & 0x0ffff000) == TRC_GEN)
			break;
		l = lookup(k, ev);
		if (nr >= l->raw_lim)
			break;
		w = q + 4;
		if (hdr >> 31) {
			memcpy(&lo, w, 4);
			memcpy(&hi, w + 4, 4);
			ts = lo | (uint64_t)hi << 32;
			if (ts < cur)
				break;	/* skew: the stream's */
			cur = ts;
			has_cur = true;
			w += 8;
		} else {
			/* before the pCPU's first TSC: the stream's time rules */
			if (unlikely(!has_cur))
				break;
			ts = cur;
			no_tsc++;
		}
		e = tdat_run_reserve_rounded(&run, ts, l->rlen);
		if (likely(e)) {
			ahead(e, LANE_AHEAD_OUT, 1);
			k->st.classes[l->cls]++;
			/* the page's room past the event takes the wide stores */
			encode_plain(k, cpu, e, l, pid, -1, ev, w, nr,
				     (size_t)(run.end - e) >= REC_WORDS_WIDE);
		}
		if (unlikely(!e) || tapped) {
			struct rec_record r;

			rec_decode_fast(q, cpu, &r);
			r.tsc = ts;
			if (!e) {
				/* a new page: tdat_reserve()'s, which counts it */
				run_close(k, cpu, &run);
				emit_plain(k, &r, l, cpu);
				run_open(k, cpu, &run);
				stop = k->err != 0;
				slow++;
			}
			if (tapped)
				tap(k, &r);
		}
		taken++;
		q = w + 4 * nr;
		/* written or failed, it is counted; after a failure the rest goes the other way */
		if (unlikely(stop))
			break;
	}
	run_close(k, cpu, &run);
	k->st.events += taken - slow;
	/* the times taken never go back: the first record's is the least, cur the last */
	if (taken) {
		uint64_t ts0 = cur0;
		uint32_t hdr, lo, hi;

		memcpy(&hdr, p, 4);
		if (hdr >> 31) {
			memcpy(&lo, p + 4, 4);
			memcpy(&hi, p + 8, 4);
			ts0 = lo | (uint64_t)hi << 32;
		}
		if (ts0 < t->first_tsc)
			t->first_tsc = ts0;
		if (cur > t->last_tsc)
			t->last_tsc = cur;
	}
	t->cur_tsc = cur;
	t->has_cur = has_cur;
	t->records += taken;
	t->no_tsc += no_tsc;
	return (size_t)(q - p);
}

size_t rec_sink_emit_raw(void *sink, int cpu, const uint8_t *p, size_t len, struct rec_time *t)
{
	struct rec_sink *k = sink;

	if (k->err || (unsigned int)cpu >= (unsigned int)k->o.ncpus || k->cur[cpu].pend)
		return 0;
	return k->o.tap ? raw_lane(k, cpu, p, len, t, true) : raw_lane(k, cpu, p, len, t, false);
}

int rec_sink_add_cmdlines(struct rec_sink *k)
{
	uint32_t *v = vset_sorted(&k->tasks);
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < k->tasks.n && !ret; i++) {
		char comm[16];

		rec_vcpu_comm(v[i] >> 16, v[i] & 0xffff, comm);
		ret = tdat_add_cmdline(k->w, rec_vcpu_pid(v[i] >> 16, v[i] & 0xffff), comm);
	}
	free(v);
	return ret;
}

int rec_sink_add_guests(struct rec_sink *k)
{
	uint32_t *v = vset_sorted(&k->tasks);
	size_t i = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	while (i < k->tasks.n) {
		uint32_t dom = v[i] >> 16, nv = 0;
		const struct named *nm = NULL;
		uint32_t *pids;
		char name[16];
		size_t j = i;

		while (j < k->tasks.n && (v[j] >> 16) == dom) {
			if ((v[j] & 0xffff) + 1 > nv)
				nv = (v[j] & 0xffff) + 1;
			j++;
		}
		/* indexed by vCPU id: vCPUs never seen still get their pid */
		pids = malloc(nv * sizeof(*pids));
		if (!pids) {
			ret = -ENOMEM;
			break;
		}
		for (uint32_t n = 0; n < nv; n++)
			pids[n] = rec_vcpu_pid(dom, n);
		for (size_t m = 0; m < k->nnamed && !nm; m++)
			if (k->named[m].dom == dom)
				nm = &k->named[m];
		snprintf(name, sizeof(name), "d%u", dom);
		ret = tdat_add_guest(k->w, nm ? nm->name : name,
				     nm ? nm->traceid : rec_guest_traceid(dom), nv, pids);
		free(pids);
		if (ret < 0)
			break;
		i = j;
	}
	free(v);
	return ret;
}

int rec_sink_domains(const struct rec_sink *k, struct rec_domain_summary **out,
		     uint32_t *ndomains, uint32_t *nvcpus)
{
	uint32_t *v = vset_sorted(&k->tasks);
	struct rec_domain_summary *d;
	uint32_t n = 0;

	if (!v)
		return -ENOMEM;
	d = calloc(k->tasks.n + 1, sizeof(*d));
	if (!d) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k->tasks.n; i++) {
		uint32_t dom = v[i] >> 16, vc = v[i] & 0xffff;

		if (!n || d[n - 1].dom != dom)
			d[n++].dom = dom;
		d[n - 1].nvcpus++;
		if (vc > d[n - 1].max_vcpu)
			d[n - 1].max_vcpu = vc;
	}
	free(v);
	*out = d;
	*ndomains = n;
	*nvcpus = k->tasks.n;
	return 0;
}

int rec_sink_vcpus(const struct rec_sink *k, uint32_t **out, size_t *n)
{
	*out = vset_sorted(&k->tasks);
	*n = k->tasks.n;
	return *out ? 0 : -ENOMEM;
}

void rec_sink_get_stats(const struct rec_sink *k, struct rec_sink_stats *st)
{
	*st = k->st;
}

int rec_sink_error(const struct rec_sink *k)
{
	if (!k->err)
		return 0;
	return tcx_fail(k->err, "%s", k->errmsg);
}
