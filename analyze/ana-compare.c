// SPDX-License-Identifier: GPL-2.0
/*
 * analyze --compare: the figures of several results side by side, each
 * with its difference from the first (absolute and %), per vCPU.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "analyze.h"
#include "tcx-util.h"

enum { M_RUNNING, M_RUNNABLE, M_P50, M_P99, NR_M };

static const char *const mnames[NR_M] = { "running_ns", "runnable_ns", "wait_p50_ns",
					  "wait_p99_ns" };

static const struct ana_vcpu *find_vcpu(const struct ana_result *r, uint32_t dom,
					uint32_t vcpu)
{
	for (unsigned int i = 0; i < r->nvcpus; i++)
		if (r->vcpus[i].dom == dom && r->vcpus[i].vcpu == vcpu)
			return &r->vcpus[i];
	return NULL;
}

static uint64_t metric(const struct ana_result *r, const struct ana_vcpu *v, int m)
{
	if (!v)
		return 0;
	switch (m) {
	case M_RUNNING:
		return ana_ns(r, v->state_cycles[ANA_RUNNING]);
	case M_RUNNABLE:
		return ana_ns(r, v->state_cycles[ANA_RUNNABLE]);
	case M_P50:
		return v->wakes ? ana_ns(r, ana_percentile(v, 50)) : 0;
	default:
		return v->wakes ? ana_ns(r, ana_percentile(v, 99)) : 0;
	}
}

static uint64_t exit_count(const struct ana_vcpu *v, uint32_t isa, uint32_t reason)
{
	for (unsigned int i = 0; v && i < v->nexits; i++)
		if (v->exits[i].isa == isa && v->exits[i].reason == reason)
			return v->exits[i].count;
	return 0;
}

/* Has an earlier (dom, vcpu) row, or an earlier exit of it, been printed? */
static bool seen_vcpu(const struct ana_result *const *r, int k, unsigned int i)
{
	const struct ana_vcpu *v = &r[k]->vcpus[i];

	for (int j = 0; j < k; j++)
		if (find_vcpu(r[j], v->dom, v->vcpu))
			return true;
	return false;
}

static bool has_exit(const struct ana_vcpu *v, uint32_t isa, uint32_t reason)
{
	for (unsigned int i = 0; v && i < v->nexits; i++)
		if (v->exits[i].isa == isa && v->exits[i].reason == reason)
			return true;
	return false;
}

/* Was exit @e of result @k's vCPU printed already (an earlier result, an earlier slot)? */
static bool seen_exit(const struct ana_result *const *r, uint32_t dom, uint32_t vcpu, int k,
		      unsigned int e)
{
	const struct ana_vcpu *v = find_vcpu(r[k], dom, vcpu);
	const struct ana_exit *x = &v->exits[e];

	for (int j = 0; j < k; j++)
		if (has_exit(find_vcpu(r[j], dom, vcpu), x->isa, x->reason))
			return true;
	for (unsigned int f = 0; f < e; f++)
		if (v->exits[f].isa == x->isa && v->exits[f].reason == x->reason)
			return true;
	return false;
}

typedef void (*row_fn)(FILE *f, const char *name, const uint64_t *val, int n, bool first);

static void text_row(FILE *f, const char *name, const uint64_t *val, int n, bool first)
{
	fprintf(f, "  %-22s", name);
	for (int i = 0; i < n; i++) {
		fprintf(f, " %14" PRIu64, val[i]);
		if (i) {
			int64_t d = (int64_t)(val[i] - val[0]);

			fprintf(f, " %+14" PRId64, d);
			if (val[0])
				fprintf(f, " %+8.1f%%", 100.0 * (double)d / (double)val[0]);
			else
				fprintf(f, " %9s", "-");
		}
	}
	fputc('\n', f);
}

static void json_row(FILE *f, const char *name, const uint64_t *val, int n, bool first)
{
	fprintf(f, "%s\"%s\": {\"values\": [", first ? "" : ", ", name);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", val[i]);
	fprintf(f, "], \"diff\": [");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? ", " : "", (int64_t)(val[i] - val[0]));
	fprintf(f, "], \"pct\": [");
	for (int i = 0; i < n; i++) {
		if (val[0])
			fprintf(f, "%s%.4f", i ? ", " : "",
				100.0 * (double)(int64_t)(val[i] - val[0]) / (double)val[0]);
		else
			fprintf(f, "%snull", i ? ", " : "");
	}
	fprintf(f, "]}");
}

/* Every vCPU of every result (the idle domain aside), in the results' order. */
static int compare(const struct ana_result *const *r, int n, FILE *f, bool json)
{
	row_fn row = json ? json_row : text_row;
	uint64_t *val = calloc((size_t)n, sizeof(*val));
	bool firstv = true;

	if (!val)
		return -1;
	if (json) {
		fprintf(f, "{\"inputs\": [");
		for (int i = 0; i < n; i++) {
			fputs(i ? ", " : "", f);
			tcx_json_str(f, r[i]->file);
		}
		fprintf(f, "], \"vcpus\": [");
	} else {
		fprintf(f, "%-24s", "vCPU / figure");
		for (int i = 0; i < n; i++)
			fprintf(f, i ? " %14s %14s %9s" : " %14s", i ? "value" : "base",
				i ? "diff" : "", i ? "%" : "");
		fputc('\n', f);
		for (int i = 0; i < n; i++)
			fprintf(f, "# %d: %s\n", i, r[i]->file);
	}
	for (int k = 0; k < n; k++) {
		for (unsigned int i = 0; i < r[k]->nvcpus; i++) {
			const struct ana_vcpu *v = &r[k]->vcpus[i];
			bool firstm = true;

			if (v->dom == ANA_IDLE_DOM || seen_vcpu(r, k, i))
				continue;
			if (json)
				fprintf(f, "%s\n  {\"dom\": %u, \"vcpu\": %u, \"metrics\": {",
					firstv ? "" : ",", v->dom, v->vcpu);
			else
				fprintf(f, "d%uv%u\n", v->dom, v->vcpu);
			firstv = false;
			for (int m = 0; m < NR_M; m++) {
				for (int j = 0; j < n; j++)
					val[j] = metric(r[j], find_vcpu(r[j], v->dom, v->vcpu), m);
				row(f, mnames[m], val, n, m == 0);
			}
			if (json)
				fprintf(f, "}, \"exits\": {");
			for (int kk = 0; kk < n; kk++) {
				const struct ana_vcpu *w = find_vcpu(r[kk], v->dom, v->vcpu);

				for (unsigned int e = 0; w && e < w->nexits; e++) {
					const struct ana_exit *x = &w->exits[e];
					const char *nm = ana_exit_name(x->isa, x->reason);
					char name[64];

					if (seen_exit(r, v->dom, v->vcpu, kk, e))
						continue;
					snprintf(name, sizeof(name), "%s_%u_%s",
						 x->isa == 2 ? "svm" : "vmx", x->reason,
						 nm ? nm : "UNKNOWN");
					for (int j = 0; j < n; j++)
						val[j] = exit_count(find_vcpu(r[j], v->dom, v->vcpu),
								    x->isa, x->reason);
					row(f, name, val, n, firstm);
					firstm = false;
				}
			}
			if (json)
				fprintf(f, "}}");
		}
	}
	if (json)
		fprintf(f, "\n]}\n");
	free(val);
	return ferror(f) ? -1 : 0;
}

int ana_compare_print(const struct ana_result *const *r, int n, FILE *f, bool json)
{
	return compare(r, n, f, json);
}
