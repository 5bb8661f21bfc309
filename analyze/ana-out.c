// SPDX-License-Identifier: GPL-2.0
/* analyze's output: aligned text tables, JSON, SVG. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze-internal.h"
#include "tcx-util.h"

static const char *const state_names[ANA_NSTATES] = {
	"running", "runnable", "blocked", "offline"
};

static double secs(const struct ana_result *r, uint64_t c)
{
	return (double)c / (double)r->cpu_hz;
}

static double us(const struct ana_result *r, uint64_t c)
{
	return (double)c * 1e6 / (double)r->cpu_hz;
}

static uint64_t span(const struct ana_result *r)
{
	return r->win_end > r->win_start ? r->win_end - r->win_start : 0;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* One domain's exits by reason, summed over its vCPUs [first, end). */
struct dom_exits {
	struct ana_exit *e;
	unsigned int n;
};

static int cmp_exit(const void *a, const void *b)
{
	const struct ana_exit *x = a, *y = b;

	if (x->entered != y->entered)
		return x->entered < y->entered ? 1 : -1;
	if (x->isa != y->isa)
		return x->isa < y->isa ? -1 : 1;
	return (x->reason > y->reason) - (x->reason < y->reason);
}

static int sum_exits(const struct ana_result *r, unsigned int first, unsigned int end,
		     struct dom_exits *d)
{
	unsigned int cap = 0;

	d->e = NULL;
	d->n = 0;
	for (unsigned int i = first; i < end; i++) {
		for (unsigned int k = 0; k < r->vcpus[i].nexits; k++) {
			const struct ana_exit *x = &r->vcpus[i].exits[k];
			unsigned int j;

			for (j = 0; j < d->n; j++)
				if (d->e[j].isa == x->isa && d->e[j].reason == x->reason)
					break;
			if (j == d->n) {
				if (d->n == cap) {
					struct ana_exit *n;

					cap = cap ? cap * 2 : 16;
					n = realloc(d->e, cap * sizeof(*n));
					if (!n) {
						free(d->e);
						return -ENOMEM;
					}
					d->e = n;
				}
				d->e[d->n++] = (struct ana_exit){ .isa = x->isa,
								  .reason = x->reason };
			}
			d->e[j].count += x->count;
			d->e[j].entered += x->entered;
			d->e[j].cycles += x->cycles;
			if (x->max > d->e[j].max)
				d->e[j].max = x->max;
		}
	}
	if (d->n)
		qsort(d->e, d->n, sizeof(*d->e), cmp_exit);
	return 0;
}

/* The end of the domain starting at vCPU @i. */
static unsigned int dom_end(const struct ana_result *r, unsigned int i)
{
	unsigned int j = i;

	while (j < r->nvcpus && r->vcpus[j].dom == r->vcpus[i].dom)
		j++;
	return j;
}

static void reason_label(char *buf, size_t len, const struct ana_exit *e)
{
	const char *n = ana_exit_name(e->isa, e->reason);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "%s_%u", e->isa == 2 ? "SVM" : "VMX", e->reason);
}

static void text_exits(const struct ana_result *r, FILE *f, const struct ana_exit *e,
		       unsigned int n, const char *who)
{
	for (unsigned int k = 0; k < n; k++) {
		char name[40];

		reason_label(name, sizeof(name), &e[k]);
		fprintf(f, "%-8s %-22s %10" PRIu64 " %10" PRIu64 " %12.3f %12.3f %12.6f\n", who,
			name, e[k].entered, e[k].count - e[k].entered,
			e[k].entered ? us(r, e[k].cycles / e[k].entered) : 0.0, us(r, e[k].max),
			secs(r, e[k].cycles));
	}
}

static void text_hcalls(FILE *f, const uint64_t *hc, const char *who)
{
	for (unsigned int op = 0; op <= ANA_NHCALL; op++) {
		const char *n = op < ANA_NHCALL ? ana_hcall_name(op) : "(other)";
		char buf[32];

		if (!hc[op])
			continue;
		if (!n) {
			snprintf(buf, sizeof(buf), "op_%u", op);
			n = buf;
		}
		fprintf(f, "%-8s %-28s %4u %12" PRIu64 "\n", who, n, op, hc[op]);
	}
}

int ana_print_text(const struct ana_result *r, FILE *f, bool per_vcpu)
{
	uint64_t w = span(r);
	bool any_exit = false, any_hc = false;

	fprintf(f, "trace-cmd-xen analyze: %s\n", r->file);
	fprintf(f, "window   %.9f .. %.9f s after the first record (%.9f s; TSC %" PRIu64
		" .. %" PRIu64 " at %" PRIu64 " Hz%s)\n",
		secs(r, r->win_start - r->first_tsc), secs(r, r->win_end - r->first_tsc),
		secs(r, w), r->win_start, r->win_end, r->cpu_hz,
		r->hz_from_file ? ", from the file" : "");
	fprintf(f, "records  %" PRIu64 " read\n", r->records);
	fprintf(f, "lost     %" PRIu64 " records lost by Xen\n", r->lost);
	if (r->lossy)
		fprintf(f, "WARNING: Xen lost records before the window's end: every count and "
			"time below is a lower bound\n");

	fprintf(f, "\nvCPUs (times in s, share of the window; runs, wake latency in us)\n");
	fprintf(f, "%-12s %10s %6s %10s %6s %10s %6s %10s %6s %8s %10s %10s %8s %9s %9s %9s %5s\n",
		"vcpu", "running", "%", "runnable", "%", "blocked", "%", "offline", "%", "runs",
		"mean run", "max run", "wakes", "wake p50", "wake p99", "wake max", "migr");
	for (unsigned int i = 0; i < r->nvcpus; i++) {
		const struct ana_vcpu *v = &r->vcpus[i];
		char name[24];

		snprintf(name, sizeof(name), "d%uv%u", v->dom, v->vcpu);
		fprintf(f, "%-12s", name);
		for (int s = 0; s < ANA_NSTATES; s++)
			fprintf(f, " %10.6f %6.2f", secs(r, v->state_cycles[s]),
				pct(v->state_cycles[s], w));
		fprintf(f, " %8" PRIu64 " %10.3f %10.3f %8" PRIu64 " %9.3f %9.3f %9.3f %5" PRIu64
			"\n", v->runs, v->runs ? us(r, v->state_cycles[0] / v->runs) : 0.0,
			us(r, v->run_max), v->wakes, us(r, ana_percentile(v, 50)),
			us(r, ana_percentile(v, 99)), us(r, v->wake_max), v->migrations);
		any_exit |= v->nexits > 0;
		for (unsigned int k = 0; k <= ANA_NHCALL; k++)
			any_hc |= v->hcalls[k] > 0;
	}

	fprintf(f, "\npCPUs (s, share of the window)\n");
	fprintf(f, "%-6s %10s %6s %10s %6s %10s %8s  %s\n", "pcpu", "busy", "%", "idle", "%",
		"lost", "lost_rec", "domains (s)");
	for (unsigned int c = 0; c < r->npcpus; c++) {
		const struct ana_pcpu *p = &r->pcpus[c];

		if (!p->present)
			continue;
		fprintf(f, "%-6u %10.6f %6.2f %10.6f %6.2f %10" PRIu64 " %8" PRIu64 " ", c,
			secs(r, p->busy), pct(p->busy, w), secs(r, p->idle), pct(p->idle, w),
			p->lost, p->lost_recs);
		for (unsigned int d = 0; d < p->ndoms; d++)
			fprintf(f, " d%u:%.6f", p->doms[d].dom, secs(r, p->doms[d].cycles));
		fprintf(f, "\n");
	}

	if (any_exit) {
		fprintf(f, "\nHVM exits (count: exits handled; open: not handled by the window's "
			"end; exit to entry or preemption in us, total in s)\n");
		fprintf(f, "%-8s %-22s %10s %10s %12s %12s %12s\n", per_vcpu ? "vcpu" : "domain",
			"reason", "count", "open", "mean", "max", "total");
		for (unsigned int i = 0; i < r->nvcpus; i = dom_end(r, i)) {
			unsigned int end = dom_end(r, i);
			char who[24];

			if (per_vcpu) {
				for (unsigned int j = i; j < end; j++) {
					snprintf(who, sizeof(who), "d%uv%u", r->vcpus[j].dom,
						 r->vcpus[j].vcpu);
					text_exits(r, f, r->vcpus[j].exits, r->vcpus[j].nexits, who);
				}
			} else {
				struct dom_exits d;

				if (sum_exits(r, i, end, &d))
					return -ENOMEM;
				snprintf(who, sizeof(who), "d%u", r->vcpus[i].dom);
				text_exits(r, f, d.e, d.n, who);
				free(d.e);
			}
		}
	}
	if (any_hc) {
		fprintf(f, "\nPV hypercalls\n");
		fprintf(f, "%-8s %-28s %4s %12s\n", per_vcpu ? "vcpu" : "domain", "hypercall", "op",
			"count");
		for (unsigned int i = 0; i < r->nvcpus; i = dom_end(r, i)) {
			unsigned int end = dom_end(r, i);
			uint64_t hc[ANA_NHCALL + 1] = { 0 };
			char who[24];

			for (unsigned int j = i; j < end; j++) {
				if (per_vcpu) {
					snprintf(who, sizeof(who), "d%uv%u", r->vcpus[j].dom,
						 r->vcpus[j].vcpu);
					text_hcalls(f, r->vcpus[j].hcalls, who);
				}
				for (unsigned int k = 0; k <= ANA_NHCALL; k++)
					hc[k] += r->vcpus[j].hcalls[k];
			}
			if (!per_vcpu) {
				snprintf(who, sizeof(who), "d%u", r->vcpus[i].dom);
				text_hcalls(f, hc, who);
			}
		}
	}
	return ferror(f) ? -EIO : 0;
}

static void json_time(const struct ana_result *r, FILE *f, const char *key, uint64_t c,
		      bool last)
{
	fprintf(f, "\"%s\": {\"cycles\": %" PRIu64 ", \"ns\": %" PRIu64 ", \"pct\": %.4f}%s",
		key, c, ana_ns(r, c), pct(c, span(r)), last ? "" : ", ");
}

static void json_exits(const struct ana_result *r, FILE *f, const struct ana_exit *e,
		       unsigned int n)
{
	fprintf(f, "[");
	for (unsigned int k = 0; k < n; k++) {
		char name[40];

		reason_label(name, sizeof(name), &e[k]);
		fprintf(f, "%s{\"isa\": \"%s\", \"reason\": %u, \"name\": \"%s\", \"count\": %"
			PRIu64 ", \"open\": %" PRIu64 ", \"cycles\": %" PRIu64 ", \"ns\": %"
			PRIu64 ", \"mean_cycles\": %" PRIu64 ", \"max_cycles\": %" PRIu64 "}",
			k ? ", " : "", e[k].isa == 2 ? "svm" : "vmx", e[k].reason, name,
			e[k].entered, e[k].count - e[k].entered, e[k].cycles, ana_ns(r, e[k].cycles),
			e[k].entered ? e[k].cycles / e[k].entered : 0, e[k].max);
	}
	fprintf(f, "]");
}

static void json_hcalls(FILE *f, const uint64_t *hc)
{
	bool first = true;

	fprintf(f, "[");
	for (unsigned int op = 0; op <= ANA_NHCALL; op++) {
		const char *n = op < ANA_NHCALL ? ana_hcall_name(op) : "(other)";

		if (!hc[op])
			continue;
		fprintf(f, "%s{\"op\": %u, \"name\": \"%s\", \"count\": %" PRIu64 "}",
			first ? "" : ", ", op, n ? n : "", hc[op]);
		first = false;
	}
	fprintf(f, "]");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

int ana_print_json(const struct ana_result *r, FILE *f, bool per_vcpu)
{
	fprintf(f, "{\"file\": ");
	json_str(f, r->file);
	fprintf(f, ", \"cpu_hz\": %" PRIu64 ", \"cpu_hz_from_file\": %s,\n", r->cpu_hz,
		r->hz_from_file ? "true" : "false");
	fprintf(f, " \"window\": {\"first_tsc\": %" PRIu64 ", \"last_tsc\": %" PRIu64
		", \"start_tsc\": %" PRIu64 ", \"end_tsc\": %" PRIu64 ", \"from_ns\": %" PRIu64
		", \"to_ns\": %" PRIu64 ", \"cycles\": %" PRIu64 "},\n",
		r->first_tsc, r->last_tsc, r->win_start, r->win_end,
		ana_ns(r, r->win_start - r->first_tsc), ana_ns(r, r->win_end - r->first_tsc),
		span(r));
	fprintf(f, " \"records\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lower_bounds\": %s,\n",
		r->records, r->lost, r->lossy ? "true" : "false");
	fprintf(f, " \"pcpus\": [");
	for (unsigned int c = 0, n = 0; c < r->npcpus; c++) {
		const struct ana_pcpu *p = &r->pcpus[c];

		if (!p->present)
			continue;
		fprintf(f, "%s\n  {\"pcpu\": %u, \"records\": %" PRIu64 ", \"first_tsc\": %" PRIu64
			", \"last_tsc\": %" PRIu64 ", ", n++ ? "," : "", c, p->records,
			p->first_tsc, p->last_tsc);
		json_time(r, f, "busy", p->busy, false);
		json_time(r, f, "idle", p->idle, false);
		fprintf(f, "\"lost\": %" PRIu64 ", \"lost_records\": %" PRIu64 ", \"domains\": [",
			p->lost, p->lost_recs);
		for (unsigned int d = 0; d < p->ndoms; d++)
			fprintf(f, "%s{\"dom\": %u, \"cycles\": %" PRIu64 "}", d ? ", " : "",
				p->doms[d].dom, p->doms[d].cycles);
		fprintf(f, "]}");
	}
	fprintf(f, "],\n \"domains\": [");
	for (unsigned int i = 0; i < r->nvcpus; i = dom_end(r, i)) {
		unsigned int end = dom_end(r, i);
		uint64_t hc[ANA_NHCALL + 1] = { 0 };
		struct dom_exits d;

		fprintf(f, "%s\n  {\"dom\": %u, \"idle\": %s, \"vcpus\": [", i ? "," : "",
			r->vcpus[i].dom, r->vcpus[i].dom == ANA_IDLE_DOM ? "true" : "false");
		for (unsigned int j = i; j < end; j++) {
			const struct ana_vcpu *v = &r->vcpus[j];

			fprintf(f, "%s\n   {\"vcpu\": %u, \"name\": \"d%uv%u\", ", j > i ? "," : "",
				v->vcpu, v->dom, v->vcpu);
			for (int s = 0; s < ANA_NSTATES; s++)
				json_time(r, f, state_names[s], v->state_cycles[s], false);
			fprintf(f, "\"periods\": {\"runnable\": %" PRIu64 ", \"blocked\": %" PRIu64
				", \"offline\": %" PRIu64 "}, ", v->state_count[ANA_RUNNABLE],
				v->state_count[ANA_BLOCKED], v->state_count[ANA_OFFLINE]);
			fprintf(f, "\"runs\": {\"count\": %" PRIu64 ", \"mean_cycles\": %" PRIu64
				", \"max_cycles\": %" PRIu64 "}, ", v->runs,
				v->runs ? v->state_cycles[0] / v->runs : 0, v->run_max);
			fprintf(f, "\"wake\": {\"count\": %" PRIu64 ", \"p50_cycles\": %" PRIu64
				", \"p99_cycles\": %" PRIu64 ", \"max_cycles\": %" PRIu64 "}, ",
				v->wakes, ana_percentile(v, 50), ana_percentile(v, 99), v->wake_max);
			fprintf(f, "\"migrations\": %" PRIu64, v->migrations);
			if (per_vcpu) {
				fprintf(f, ", \"exits\": ");
				json_exits(r, f, v->exits, v->nexits);
				fprintf(f, ", \"hypercalls\": ");
				json_hcalls(f, v->hcalls);
			}
			fprintf(f, "}");
			for (unsigned int k = 0; k <= ANA_NHCALL; k++)
				hc[k] += v->hcalls[k];
		}
		if (sum_exits(r, i, end, &d))
			return -ENOMEM;
		fprintf(f, "],\n   \"exits\": ");
		json_exits(r, f, d.e, d.n);
		free(d.e);
		fprintf(f, ",\n   \"hypercalls\": ");
		json_hcalls(f, hc);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- SVG ---- */

#define SVG_W		960
#define SVG_LABEL	120	/* bars start here */
#define SVG_BAR		720	/* bar width: the whole window */
#define SVG_ROW		22
#define SVG_BAR_H	16

/* Runstate colours, documented in docs/analyze.md (the tests read these pixels). */
static const char *const state_fill[ANA_NSTATES] = {
	"#2ca02c", "#ff7f0e", "#7f7f7f", "#000000"
};

static const char *const exit_fill[] = {
	"#1f77b4", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
	"#aec7e8", "#ffbb78", "#98df8a",
};

#define N_EXIT_FILL	(sizeof(exit_fill) / sizeof(exit_fill[0]))

int ana_write_svg(const struct ana_result *r, const char *path)
{
	FILE *f = fopen(path, "w");
	uint64_t w = span(r);
	unsigned int ndoms = 0, y, height;
	int ret = 0;

	if (!f)
		return tcx_fail(-errno, "%s: %s", path, strerror(errno));
	for (unsigned int i = 0; i < r->nvcpus; i = dom_end(r, i))
		ndoms++;
	height = 60 + r->nvcpus * SVG_ROW + 40 + ndoms * (SVG_ROW + 4 * 16) + 20;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" font-size=\"12\">\n",
		SVG_W, height, SVG_W, height);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#ffffff\"/>\n",
		SVG_W, height);
	fprintf(f, "<text x=\"10\" y=\"18\" font-size=\"14\">Runstates per vCPU, %.6f s "
		"window%s</text>\n", secs(r, w),
		r->lossy ? " (Xen lost records: lower bounds)" : "");
	for (int s = 0; s < ANA_NSTATES; s++) {
		fprintf(f, "<rect x=\"%d\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"38\">%s</text>\n", SVG_LABEL + s * 120, state_fill[s],
			SVG_LABEL + s * 120 + 16, state_names[s]);
	}
	y = 50;
	for (unsigned int i = 0; i < r->nvcpus; i++) {
		const struct ana_vcpu *v = &r->vcpus[i];
		double x = SVG_LABEL;

		fprintf(f, "<text x=\"10\" y=\"%u\">d%uv%u</text>\n", y + 12, v->dom, v->vcpu);
		fprintf(f, "<rect x=\"%d\" y=\"%u\" width=\"%d\" height=\"%d\" fill=\"none\" "
			"stroke=\"#cccccc\"/>\n", SVG_LABEL, y, SVG_BAR, SVG_BAR_H);
		for (int s = 0; s < ANA_NSTATES; s++) {
			double bw = w ? (double)SVG_BAR * (double)v->state_cycles[s] / (double)w : 0;

			if (x + bw > SVG_LABEL + SVG_BAR)
				bw = SVG_LABEL + SVG_BAR - x;
			if (bw <= 0)
				continue;
			fprintf(f, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
				"fill=\"%s\"><title>d%uv%u %s %.6f s (%.2f%%)</title></rect>\n",
				x, y, bw, SVG_BAR_H, state_fill[s], v->dom, v->vcpu, state_names[s],
				secs(r, v->state_cycles[s]), pct(v->state_cycles[s], w));
			x += bw;
		}
		y += SVG_ROW;
	}
	y += 20;
	fprintf(f, "<text x=\"10\" y=\"%u\" font-size=\"14\">HVM exits per domain, by reason "
		"(share of the exits)</text>\n", y);
	y += 14;
	for (unsigned int i = 0; i < r->nvcpus; i = dom_end(r, i)) {
		struct dom_exits d;
		uint64_t total = 0;
		double x = SVG_LABEL;

		if (sum_exits(r, i, dom_end(r, i), &d)) {
			ret = -ENOMEM;
			break;
		}
		for (unsigned int k = 0; k < d.n; k++)
			total += d.e[k].entered;
		if (!total) {
			free(d.e);
			continue;
		}
		fprintf(f, "<text x=\"10\" y=\"%u\">d%u (%" PRIu64 ")</text>\n", y + 12,
			r->vcpus[i].dom, total);
		for (unsigned int k = 0; k < d.n; k++) {
			double bw = (double)SVG_BAR * (double)d.e[k].entered / (double)total;
			const char *fill = exit_fill[k < N_EXIT_FILL ? k : N_EXIT_FILL - 1];
			char name[40];

			reason_label(name, sizeof(name), &d.e[k]);
			fprintf(f, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
				"fill=\"%s\"><title>%s %" PRIu64 "</title></rect>\n", x, y, bw,
				SVG_BAR_H, fill, name, d.e[k].entered);
			if (k < 4)
				fprintf(f, "<rect x=\"%d\" y=\"%u\" width=\"10\" height=\"10\" "
					"fill=\"%s\"/><text x=\"%d\" y=\"%u\">%s %" PRIu64
					" (%.1f%%)</text>\n", SVG_LABEL, y + SVG_BAR_H + 4 + k * 16,
					fill, SVG_LABEL + 14, y + SVG_BAR_H + 13 + k * 16, name,
					d.e[k].entered, pct(d.e[k].entered, total));
			x += bw;
		}
		free(d.e);
		y += SVG_ROW + 4 * 16;
	}
	fprintf(f, "</svg>\n");
	if (fclose(f) && !ret)
		ret = tcx_fail(-errno, "%s: %s", path, strerror(errno));
	return ret;
}
