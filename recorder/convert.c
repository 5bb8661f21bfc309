// SPDX-License-Identifier: GPL-2.0
/*
 * convert: a xentrace capture through the stream, the catalogue and the
 * vCPU model into a trace.dat written by tdat.
 *
 * A seekable input is read twice: a quick unordered scan first finds the
 * pCPUs and the (domain, vCPU) pairs, because cmdlines (and, in version 6,
 * options) must be written before the data. A pipe is read once; its
 * tasks are then named by sched_switch only, and GUEST options are added
 * after the data (version 7).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdint.h>
#include <xen/trace.h>

#include "recorder.h"
#include "tdat.h"

#define HOST_TRACEID	0x58454e484f535400ull	/* "XENHOST\0" */

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

/* ---- the conversion ---- */

struct conv {
	const struct rec_convert_opts	*o;
	struct rec_convert_summary	*sum;
	struct tdat_writer		*w;
	struct rec_vcpus		*vm;
	struct vset			tasks;
	int				max_cpu;	/* scan: highest pCPU */
	bool				has_runstate;	/* scan: runstate records seen */
	bool				has_switch;	/* scan: SWITCH records seen */
	bool				*has_data;	/* scan: pCPUs with data */
	int				ncpus;
	bool				*in_guest;	/* per pCPU: after a kvm_entry */
	uint8_t				hvm_dom[32768 / 8];	/* domains seen in VMENTRY */
	int				err;
	char				errmsg[512];
};

static void scan_emit(void *ctx, const struct rec_record *r)
{
	struct conv *c = ctx;
	uint32_t dom[2], vcpu[2];
	int n = rec_record_vcpus(r, dom, vcpu);

	for (int i = 0; i < n; i++)
		if (vset_add(&c->tasks, dom[i], vcpu[i]) < 0)
			c->err = -ENOMEM;
	if (r->cpu > c->max_cpu)
		c->max_cpu = r->cpu;
	if ((r->event & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE)
		c->has_runstate = true;
	else if (r->event == TRC_SCHED_SWITCH)
		c->has_switch = true;
}

static void put(struct conv *c, int cpu, uint64_t ts, const void *p, size_t len)
{
	int ret;

	if (c->err)
		return;
	ret = tdat_write_event(c->w, cpu, ts, p, len);
	if (ret < 0) {
		c->err = ret;
		snprintf(c->errmsg, sizeof(c->errmsg), "%s: %s", c->o->output, tdat_error(c->w));
		return;
	}
	c->sum->events++;
}

static void do_switch(struct conv *c, const struct rec_record *r, const struct rec_switch *sw)
{
	uint8_t b[REC_MAX_PAYLOAD];
	char pc[16], nc[16];
	int prev = rec_vcpu_pid(sw->prev_dom, sw->prev_vcpu);
	int next = rec_vcpu_pid(sw->next_dom, sw->next_vcpu);
	int cpu = r->cpu;

	if (c->in_guest[cpu] && prev) {
		/* KernelShark's combo view needs every guest interval closed. */
		put(c, cpu, r->tsc, b, rec_encode_kvm_exit(b, prev, sw->prev_vcpu & 0xffff));
	}
	c->in_guest[cpu] = false;
	rec_vcpu_comm(sw->prev_dom, sw->prev_vcpu, pc);
	rec_vcpu_comm(sw->next_dom, sw->next_vcpu, nc);
	put(c, cpu, r->tsc, b, rec_encode_sched_switch(b, prev, pc, sw->prev_state, next, nc));
	c->sum->switches++;
	if (next && sw->next_dom < 32768 &&
	    !(c->hvm_dom[sw->next_dom / 8] & (1 << (sw->next_dom % 8)))) {
		/* no VMENTRY will come (PV, or HVM tracing off): synthesize */
		put(c, cpu, r->tsc, b, rec_encode_kvm_entry(b, next, sw->next_vcpu & 0xffff));
		c->in_guest[cpu] = true;
	}
	if (vset_add(&c->tasks, sw->next_dom, sw->next_vcpu) < 0)
		c->err = -ENOMEM;
}

static void conv_emit(void *ctx, const struct rec_record *r)
{
	struct conv *c = ctx;
	const struct rec_event *e = rec_event_lookup(r->event);
	uint8_t b[REC_MAX_PAYLOAD];
	struct rec_switch sw;
	uint32_t dom = 0, vcpu = 0;
	int pid = 0, isa = 0;
	size_t len;

	if (c->err)
		return;
	c->sum->classes[rec_event_class(r->event)]++;
	if (r->cpu >= c->ncpus)
		return;		/* cannot happen: the stream bounds pCPUs */
	if (rec_vcpus_current(c->vm, r->cpu, &dom, &vcpu))
		pid = rec_vcpu_pid(dom, vcpu);

	if (r->event == TRC_LOST_RECORDS && r->nr >= 1 && tdat_mark_missed(c->w, r->cpu, r->w[0]) < 0) {
		c->err = -EIO;
		snprintf(c->errmsg, sizeof(c->errmsg), "%s: %s", c->o->output, tdat_error(c->w));
		return;
	}
	if (e->enc == REC_ENC_VMEXIT && c->o->svm && (r->event & 0xff) == 0x02)
		isa = 2;
	len = rec_event_encode(e, r, pid, isa, b);
	if (!len) {
		e = rec_event_lookup(0xffffffff);
		len = rec_event_encode(e, r, pid, 0, b);
	}
	if (e->xen_id == 0xffffffff)	/* the xen/unknown entry */
		c->sum->unknown++;
	put(c, r->cpu, r->tsc, b, len);
	if (e->enc == REC_ENC_VMENTRY) {
		c->in_guest[r->cpu] = true;
		if (pid && dom < 32768)
			c->hvm_dom[dom / 8] |= 1 << (dom % 8);
	} else if (e->enc == REC_ENC_VMEXIT) {
		c->in_guest[r->cpu] = false;
	}
	/* only scheduler records move vCPUs */
	if (rec_event_class(r->event) == REC_CLASS_SCHED && rec_vcpus_update(c->vm, r, &sw))
		do_switch(c, r, &sw);
}

static void progress(void *ctx, uint64_t bytes)
{
	struct conv *c = ctx;

	fprintf(c->o->log, "\rtrace-cmd-xen convert: %" PRIu64 " MiB read, %" PRIu64 " events",
		bytes >> 20, c->sum->events);
	fflush(c->o->log);
}

static int add_guests(struct conv *c)
{
	uint32_t *v = vset_sorted(&c->tasks);
	size_t i = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	while (i < c->tasks.n) {
		uint32_t dom = v[i] >> 16, nv = 0;
		uint32_t *pids;
		char name[16];
		size_t j = i;

		while (j < c->tasks.n && (v[j] >> 16) == dom) {
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
		for (uint32_t k = 0; k < nv; k++)
			pids[k] = rec_vcpu_pid(dom, k);
		snprintf(name, sizeof(name), "d%u", dom);
		ret = tdat_add_guest(c->w, name, rec_guest_traceid(dom), nv, pids);
		free(pids);
		if (ret < 0)
			break;
		i = j;
	}
	free(v);
	return ret;
}

static int add_cmdlines(struct conv *c)
{
	uint32_t *v = vset_sorted(&c->tasks);
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < c->tasks.n && !ret; i++) {
		char comm[16];

		rec_vcpu_comm(v[i] >> 16, v[i] & 0xffff, comm);
		ret = tdat_add_cmdline(c->w, rec_vcpu_pid(v[i] >> 16, v[i] & 0xffff), comm);
	}
	free(v);
	return ret;
}

static int fill_domains(struct conv *c)
{
	struct rec_convert_summary *s = c->sum;
	uint32_t *v = vset_sorted(&c->tasks);

	if (!v)
		return -ENOMEM;
	s->domains = calloc(c->tasks.n + 1, sizeof(*s->domains));
	if (!s->domains) {
		free(v);
		return -ENOMEM;
	}
	s->nvcpus = c->tasks.n;
	for (size_t i = 0; i < c->tasks.n; i++) {
		uint32_t dom = v[i] >> 16, vc = v[i] & 0xffff;
		struct rec_domain_summary *d;

		if (!s->ndomains || s->domains[s->ndomains - 1].dom != dom)
			s->domains[s->ndomains++].dom = dom;
		d = &s->domains[s->ndomains - 1];
		d->nvcpus++;
		if (vc > d->max_vcpu)
			d->max_vcpu = vc;
	}
	free(v);
	return 0;
}

static int scan(struct conv *c, int fd)
{
	/* GEN for LOST_RECORDS, SCHED for everything naming a vCPU */
	struct rec_stream_params p = { .unordered = true, .class_mask = 0x003 };
	struct rec_stream *s = rec_stream_new(&p, scan_emit, c);
	struct rec_stream_stats st;
	struct rec_read_result res;
	int ret;

	if (!s)
		return -ENOMEM;
	ret = rec_read_xentrace(fd, s, &res, NULL, NULL);
	rec_stream_get_stats(s, &st);
	/* every pCPU with data, whatever its records' classes */
	if (st.max_cpu > c->max_cpu)
		c->max_cpu = st.max_cpu;
	c->has_data = calloc(c->max_cpu + 1, sizeof(*c->has_data));
	if (!c->has_data)
		c->err = -ENOMEM;
	for (int i = 0; c->has_data && i <= c->max_cpu; i++)
		c->has_data[i] = rec_stream_has_data(s, i);
	if (ret != -EBADMSG && ret < 0)
		snprintf(c->errmsg, sizeof(c->errmsg), "%.200s: %.256s", c->o->input, res.msg);
	else
		ret = 0;
	rec_stream_finish(s);
	rec_stream_free(s);
	if (!ret && c->err)
		ret = c->err;
	return ret;
}

static int add_formats(struct conv *c)
{
	char text[4096];

	for (int i = 0; i < rec_events_count(); i++) {
		const struct rec_event *e = rec_event_at(i);
		int ret = rec_event_format(e, text, sizeof(text));

		if (ret < 0)
			return ret;
		ret = tdat_add_event_format(c->w, e->system, text);
		if (ret < 0)
			return ret;
	}
	return 0;
}

__attribute__((format(printf, 2, 3)))
static void warn(const struct rec_convert_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log)
		return;
	fprintf(o->log, "trace-cmd-xen convert: warning: ");
	va_start(ap, fmt);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fputc('\n', o->log);
}

int rec_convert(const struct rec_convert_opts *o, struct rec_convert_summary *sum,
		char *err, size_t errlen)
{
	struct conv c = { .o = o, .sum = sum, .max_cpu = -1 };
	struct tdat_params tp = { .clock = "x86-tsc" };
	struct rec_stream *s = NULL;
	struct stat st;
	bool rescan, is_stdin = !strcmp(o->input, "-");
	int fd, ret, rret;

	memset(sum, 0, sizeof(*sum));
	sum->hz = o->hz ? o->hz : REC_DEFAULT_HZ;
	if (rec_tsc2nsec(sum->hz, &sum->mult, &sum->shift)) {
		snprintf(err, errlen, "cannot convert %" PRIu64 " Hz", sum->hz);
		return -EINVAL;
	}
	fd = is_stdin ? 0 : open(o->input, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", o->input, strerror(errno));
		return -errno;
	}
	rescan = !fstat(fd, &st) && S_ISREG(st.st_mode);
	if (rescan) {
		ret = scan(&c, fd);
		if (ret < 0) {
			snprintf(err, errlen, "%s", c.errmsg[0] ? c.errmsg : strerror(-ret));
			goto out;
		}
		if (lseek(fd, 0, SEEK_SET) < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", o->input, strerror(errno));
			goto out;
		}
	}
	c.ncpus = rescan ? c.max_cpu + 1 : REC_MAX_CPUS;
	if (c.ncpus < 1)
		c.ncpus = 1;
	c.vm = rec_vcpus_new(c.ncpus, c.has_switch && !c.has_runstate);
	c.in_guest = calloc(c.ncpus, sizeof(*c.in_guest));
	if (!c.vm || !c.in_guest) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}

	tp.version = o->file_version ? o->file_version : 7;
	tp.max_cpus = c.ncpus;
	tp.cpus = rescan ? c.ncpus : 0;
	c.w = tdat_create(o->output, &tp);
	if (!c.w) {
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: %s", o->output, tdat_last_error());
		goto out;
	}
	ret = add_formats(&c);
	if (!ret)
		ret = tdat_add_cmdline(c.w, 0, "<idle>");
	if (!ret && rescan)
		ret = add_cmdlines(&c);
	if (!ret)
		ret = tdat_set_tsc2nsec(c.w, sum->mult, sum->shift, 0);
	if (!ret)
		ret = tdat_set_traceid(c.w, HOST_TRACEID);
	if (!ret)
		ret = tdat_set_uname(c.w, "Xen hypervisor xentrace");
	if (!ret && rescan)
		ret = add_guests(&c);
	if (!ret)
		ret = tdat_start_data(c.w);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", o->output, tdat_error(c.w));
		goto out;
	}

	s = rec_stream_new(&(struct rec_stream_params){ .max_cpus = c.ncpus }, conv_emit, &c);
	if (!s) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* Merge exactly: every pCPU with data holds the others back; from a
	 * pipe, any may come, so only the buffer bound lets records out. */
	for (int i = 0; i < c.ncpus; i++)
		if (!rescan || c.has_data[i])
			rec_stream_expect(s, i);
	rret = rec_read_xentrace(fd, s, &sum->read, o->progress ? progress : NULL, &c);
	rec_stream_finish(s);
	rec_stream_get_stats(s, &sum->stream);
	if (o->progress && sum->read.bytes >= (64u << 20))
		fputc('\n', o->log);
	if (c.err) {
		ret = c.err;
		snprintf(err, errlen, "%s", c.errmsg[0] ? c.errmsg : strerror(-ret));
		goto out;
	}
	if (rret < 0 && rret != -EBADMSG) {
		ret = rret;
		snprintf(err, errlen, "%s: %s", o->input, sum->read.msg);
		goto out;
	}
	if (!rescan && tp.version == 7) {
		ret = add_guests(&c);
		if (ret < 0) {
			snprintf(err, errlen, "%s: %s", o->output, tdat_error(c.w));
			goto out;
		}
	} else if (!rescan) {
		warn(o, "a version 6 file from a pipe gets no GUEST options");
	}
	if (!rescan)
		warn(o, "input read from a pipe: tasks are named by sched_switch only, "
		     "not in cmdlines");
	if (sum->read.truncated)
		warn(o, "%s: %s", o->input, sum->read.msg);
	if (sum->stream.cut_bytes)
		warn(o, "%s: %" PRIu64 " bytes of records cut at a window end were dropped",
		     o->input, sum->stream.cut_bytes);
	ret = tdat_close(c.w);
	c.w = NULL;
	if (ret < 0) {
		snprintf(err, errlen, "%s: closing failed", o->output);
		goto out;
	}
	ret = fill_domains(&c);
	sum->ncpus = sum->stream.max_cpu + 1;
	if (!ret && rret == -EBADMSG) {
		ret = rret;
		snprintf(err, errlen, "%s: %s (what came before is in %s)", o->input,
			 sum->read.msg, o->output);
	}
out:
	rec_stream_free(s);
	if (c.w)
		tdat_close(c.w);
	rec_vcpus_free(c.vm);
	free(c.in_guest);
	free(c.has_data);
	free(c.tasks.keys);
	if (!is_stdin)
		close(fd);
	return ret;
}

/* ---- summaries ---- */

static double span_s(const struct rec_convert_summary *s)
{
	if (s->stream.last_tsc <= s->stream.first_tsc)
		return 0;
	return (double)(s->stream.last_tsc - s->stream.first_tsc) / (double)s->hz;
}

void rec_convert_summary_print(const struct rec_convert_summary *s, FILE *f)
{
	fprintf(f, "records     %" PRIu64 " (", s->stream.records);
	for (int i = 0; i < REC_NR_CLASSES; i++)
		fprintf(f, "%s%s %" PRIu64, i ? ", " : "", rec_class_name(i), s->classes[i]);
	fprintf(f, ")\n");
	fprintf(f, "unknown     %" PRIu64 " records written as xen/unknown\n", s->unknown);
	fprintf(f, "events      %" PRIu64 " written, %" PRIu64 " of them sched_switch\n",
		s->events, s->switches);
	fprintf(f, "lost        %" PRIu64 " records lost by Xen (%" PRIu64 " LOST_RECORDS)\n",
		s->stream.lost, s->stream.lost_records);
	fprintf(f, "skew        %" PRIu64 " records older than their pCPU's previous one "
		"(max %" PRIu64 " ticks), %" PRIu64 " emitted late\n",
		s->stream.skew, s->stream.max_skew, s->stream.late);
	if (s->read.truncated || s->stream.cut_bytes)
		fprintf(f, "truncated   %" PRIu64 " bytes missing at the end, %" PRIu64
			" bytes of cut records\n", s->read.truncated, s->stream.cut_bytes);
	fprintf(f, "pCPUs       %d\n", s->stream.cpus);
	fprintf(f, "domains     %u:", s->ndomains);
	for (uint32_t i = 0; i < s->ndomains; i++)
		fprintf(f, " d%u (%u vCPU%s)", s->domains[i].dom, s->domains[i].nvcpus,
			s->domains[i].nvcpus == 1 ? "" : "s");
	fprintf(f, "\nvCPUs       %u\n", s->nvcpus);
	fprintf(f, "time span   %.9f s (TSC %" PRIu64 " .. %" PRIu64 " at %" PRIu64 " Hz)\n",
		span_s(s), s->stream.first_tsc, s->stream.last_tsc, s->hz);
}

void rec_convert_summary_json(const struct rec_convert_summary *s, FILE *f)
{
	fprintf(f, "{\n  \"records\": %" PRIu64 ",\n  \"classes\": {", s->stream.records);
	for (int i = 0; i < REC_NR_CLASSES; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", rec_class_name(i), s->classes[i]);
	fprintf(f, "},\n  \"unknown\": %" PRIu64 ",\n", s->unknown);
	fprintf(f, "  \"events\": %" PRIu64 ",\n  \"sched_switch\": %" PRIu64 ",\n",
		s->events, s->switches);
	fprintf(f, "  \"lost\": %" PRIu64 ",\n  \"lost_records\": %" PRIu64 ",\n",
		s->stream.lost, s->stream.lost_records);
	fprintf(f, "  \"skew\": %" PRIu64 ",\n  \"max_skew_ticks\": %" PRIu64
		",\n  \"late\": %" PRIu64 ",\n", s->stream.skew, s->stream.max_skew, s->stream.late);
	fprintf(f, "  \"no_tsc\": %" PRIu64 ",\n  \"fillers\": %" PRIu64 ",\n",
		s->stream.no_tsc, s->stream.fillers);
	fprintf(f, "  \"truncated_bytes\": %" PRIu64 ",\n  \"cut_bytes\": %" PRIu64 ",\n",
		s->read.truncated, s->stream.cut_bytes);
	fprintf(f, "  \"bytes\": %" PRIu64 ",\n  \"windows\": %" PRIu64 ",\n",
		s->read.bytes, s->read.windows);
	fprintf(f, "  \"pcpus\": %d,\n  \"domains\": [", s->stream.cpus);
	for (uint32_t i = 0; i < s->ndomains; i++)
		fprintf(f, "%s{\"dom\": %u, \"vcpus\": %u, \"max_vcpu\": %u, \"traceid\": %" PRIu64 "}",
			i ? ", " : "", s->domains[i].dom, s->domains[i].nvcpus,
			s->domains[i].max_vcpu, rec_guest_traceid(s->domains[i].dom));
	fprintf(f, "],\n  \"vcpus\": %u,\n", s->nvcpus);
	fprintf(f, "  \"first_tsc\": %" PRIu64 ",\n  \"last_tsc\": %" PRIu64 ",\n",
		s->stream.first_tsc, s->stream.last_tsc);
	fprintf(f, "  \"span_s\": %.9f,\n  \"hz\": %" PRIu64 ",\n  \"tsc2nsec_mult\": %u,\n"
		"  \"tsc2nsec_shift\": %u\n}\n", span_s(s), s->hz, s->mult, s->shift);
}

void rec_convert_summary_free(struct rec_convert_summary *s)
{
	free(s->domains);
	s->domains = NULL;
}
