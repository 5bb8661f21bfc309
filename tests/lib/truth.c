// SPDX-License-Identifier: GPL-2.0
/* The simulator's ground truth: what it produced, wrote, dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlib.h"

static uint64_t kv(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : 0;
}

static int add_run(struct tlib_truth *t, size_t *cap, const struct tlib_truth_run *r)
{
	if (t->nrun == *cap) {
		void *n;

		*cap = *cap ? 2 * *cap : 1024;
		n = realloc(t->run, *cap * sizeof(*r));
		if (!n)
			return -1;
		t->run = n;
	}
	t->run[t->nrun++] = *r;
	return 0;
}

int tlib_truth_load(const char *dir, struct tlib_truth *t)
{
	char path[512], line[512];
	size_t cap_run = 0, cap_cont = 0;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/truth", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "host ", 5)) {
			t->pcpus = kv(line, "pcpus");
			t->cpu_khz = kv(line, "cpu_khz");
		} else if (!strncmp(line, "stats ", 6)) {
			unsigned int p = kv(line, "pcpu");
			struct tlib_truth_stats *s;

			if (p >= 64)
				continue;
			s = &t->st[p];
			s->written = kv(line, "written");
			s->dropped = kv(line, "dropped");
			s->lost_reported = kv(line, "lost_reported");
			s->lost_cleared = kv(line, "lost_cleared");
			s->lost_pending = kv(line, "lost_pending");
			s->virqs = kv(line, "virqs");
			s->first_tsc = kv(line, "first_tsc");
			s->last_tsc = kv(line, "last_tsc");
		} else if (!strncmp(line, "run ", 4)) {
			struct tlib_truth_run r;
			int ws, we;
			unsigned long s, e;

			if (sscanf(line, "run %u %u %u %lu %lu %d %d", &r.dom,
				   &r.vcpu, &r.pcpu, &s, &e, &ws, &we) != 7)
				continue;
			r.start = s;
			r.end = e;
			r.ws = ws;
			r.we = we;
			if (add_run(t, &cap_run, &r))
				goto fail;
		} else if (!strncmp(line, "open ", 5)) {
			struct tlib_truth_run r = { .end = 0, .we = false };
			unsigned long st;
			int ws;

			if (sscanf(line, "open %u %u %u %lu %d", &r.dom, &r.vcpu,
				   &r.pcpu, &st, &ws) != 5)
				continue;
			r.start = st;
			r.ws = ws;
			if (add_run(t, &cap_run, &r))
				goto fail;
		} else if (!strncmp(line, "cont ", 5)) {
			struct tlib_truth_cont c;
			unsigned long ts;
			int w;

			if (sscanf(line, "cont %u %u %u %lu %d", &c.dom, &c.vcpu,
				   &c.pcpu, &ts, &w) != 5)
				continue;
			c.tsc = ts;
			c.w = w;
			if (t->ncont == cap_cont) {
				void *n;

				cap_cont = cap_cont ? 2 * cap_cont : 1024;
				n = realloc(t->cont, cap_cont * sizeof(c));
				if (!n)
					goto fail;
				t->cont = n;
			}
			t->cont[t->ncont++] = c;
		}
	}
	fclose(f);
	return t->pcpus ? 0 : -1;
fail:
	fclose(f);
	tlib_truth_free(t);
	return -1;
}

void tlib_truth_free(struct tlib_truth *t)
{
	free(t->run);
	free(t->cont);
	t->run = NULL;
	t->cont = NULL;
}

int tlib_truth_count(const char *dir, const char *prefix)
{
	char path[512], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/truth", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, prefix, strlen(prefix));
	fclose(f);
	return n;
}

int tlib_truth_gstats(const char *dir, unsigned int dom, struct tlib_gstats *g)
{
	char path[512], line[512], pat[48];
	uint64_t dropped[TLIB_MAXVCPU] = { 0 };
	int ret = 0;
	FILE *f;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/truth", dir);
	snprintf(pat, sizeof(pat), "gstats domid=%u ", dom);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int d, v;
		unsigned long long ev, pg, dr;

		if (strncmp(line, pat, strlen(pat)))
			continue;
		if (sscanf(line, "gstats domid=%u vcpu=%u events=%llu pages=%llu "
			   "dropped_pages=%llu", &d, &v, &ev, &pg, &dr) != 5 ||
		    v >= TLIB_MAXVCPU) {
			ret = -1;
			break;
		}
		g->events[v] = ev;
		g->pages[v] = pg;
		/* counters so far: the last line of a vCPU counts */
		dropped[v] = dr;
		if (v + 1 > g->vcpus)
			g->vcpus = v + 1;
	}
	fclose(f);
	for (unsigned int v = 0; v < g->vcpus; v++)
		g->dropped += dropped[v];
	return ret;
}
