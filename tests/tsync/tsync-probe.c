// SPDX-License-Identifier: GPL-2.0
/*
 * Protocol xen on a real Xen, in two halves (tests/xen/scenarios/tsync-pvh):
 *
 *   tsync-probe guest ROUNDS      in the guest: marker rounds (cpuid, and
 *				   HVMOP where privcmd allows; a PV guest's
 *				   page faults) on every CPU,
 *				   twice, 1 s apart, in the top tracefs
 *				   buffer on x86-tsc; then its pages are read
 *				   back and every round printed on the console
 *				   as "@@ GMARK seq cpu a b"
 *   tsync-probe solve RAW LOG DOM NVCPU [pv|vtsc]
 *				   on the host: the hypervisor's side from
 *				   the xentrace capture RAW, the guest's from
 *				   its console LOG; prints TAP lines. vtsc:
 *				   the guest's TSC is emulated: the map comes
 *				   from the RDTSC records, and the marker
 *				   rounds check it
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder-internal.h"
#include "tsync-internal.h"

#define TR	"/sys/kernel/tracing"

static int put(const char *file, const char *text)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), TR "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	ret = write(fd, text, strlen(text)) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

static int print_id(void)
{
	char line[256];
	int id = -1;
	FILE *f = fopen(TR "/events/ftrace/print/format", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "ID: ", 4))
			id = atoi(line + 4);
	if (f)
		fclose(f);
	return id;
}

static int guest(int rounds)
{
	struct tsync_guest_opts o = { .marker_path = TR "/trace_marker", .hvmop = true,
				      .pv_faults = -1, .log = stderr };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct tsync_gcollect *c = tsync_gcollect_new();
	const struct tsync_gmark *m;
	struct tsync_guest *g;
	int id = print_id(), n = 0;
	size_t nm;

	if (!c || id < 0 || put("trace_clock", "x86-tsc") || put("buffer_size_kb", "1024") ||
	    put("trace", "") || put("tracing_on", "1")) {
		fprintf(stderr, "tsync-probe: tracefs setup failed (print id %d)\n", id);
		return 1;
	}
	if (tsync_guest_open(&g, &o)) {
		fprintf(stderr, "tsync-probe: cannot open the marker file\n");
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		n += tsync_guest_rounds(g, (int)ncpu, rounds);
		if (!k)
			sleep(1);
	}
	printf("@@ GINFO rounds %d cpus %ld hvmop %s\n", n, ncpu,
	       tsync_guest_hvmop_ok(g) ? "yes" : "no");
	tsync_guest_close(g);
	put("tracing_on", "0");
	for (long cpu = 0; cpu < ncpu; cpu++) {
		char path[256];
		uint8_t page[4096];
		int fd;

		snprintf(path, sizeof(path), TR "/per_cpu/cpu%ld/trace_pipe_raw", cpu);
		fd = open(path, O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			continue;
		while (read(fd, page, sizeof(page)) == (ssize_t)sizeof(page))
			tsync_gcollect_page(c, page, sizeof(page), 8, (uint32_t)cpu, (uint16_t)id);
		close(fd);
	}
	nm = tsync_gcollect_marks(c, &m, NULL, NULL);
	for (size_t i = 0; i < nm; i++)
		printf("@@ GMARK %u %u %llu %llu\n", m[i].seq, m[i].vcpu,
		       (unsigned long long)m[i].a, (unsigned long long)m[i].b);
	printf("@@ GMARKS %zu\n", nm);
	fflush(stdout);
	tsync_gcollect_free(c);
	return nm ? 0 : 1;
}

struct hv {
	struct rec_vcpus	*v;
	struct tsync_match	*m;
};

static void emit(void *ctx, const struct rec_record *r)
{
	struct hv *h = ctx;
	struct rec_switch sw;
	struct tsync_hvrec t = { .tsc = r->tsc, .has_tsc = r->flags & REC_F_TSC,
				 .event = r->event, .nr = r->nr };

	rec_vcpus_update(h->v, r, &sw);
	t.known = rec_vcpus_current(h->v, r->cpu, &t.dom, &t.vcpu);
	memcpy(t.w, r->w, sizeof(t.w));
	tsync_match_feed(h->m, &t);
}

/* The RDTSC map against the marker rounds: a before the exit, b after the entry. */
static void check_vtsc(const struct tsync_match *mt, const struct tsync_gmark *g, size_t ng,
		       uint32_t nvcpu)
{
	struct tsync_solve_opts o = { .nvcpu = nvcpu, .g_start = 1, .g_end = UINT64_MAX / 4,
				      .scale = { .ratio = 1ull << 32, .frac = 32 } };
	const struct tsync_vpair *vp;
	const struct tsync_hmark *hm;
	size_t nv = tsync_match_vpairs(mt, &vp), nh = tsync_match_marks(mt, &hm);
	size_t ok = 0, checked = 0;
	struct tsync_solution sol;
	int64_t worst = 0;

	printf("%s - emulated RDTSC pairs in the capture: %zu\n", nv ? "ok" : "not ok", nv);
	if (!nv || tsync_solve_vtsc(&o, vp, nv, &sol)) {
		printf("not ok - the RDTSC map\n");
		return;
	}
	printf("# vtsc map: %u points per vCPU, bound %llu ticks\n", sol.count,
	       (unsigned long long)sol.bound);
	for (size_t i = 0; i < ng; i++)
		for (size_t j = 0; j < nh; j++) {
			int64_t ea, eb;

			if (hm[j].seq != g[i].seq || hm[j].vcpu != g[i].vcpu)
				continue;
			/* how far a lands after the exit, b before the entry */
			ea = (int64_t)(tsync_apply(&sol, g[i].vcpu, g[i].a) - hm[j].h_exit);
			eb = (int64_t)(hm[j].h_entry - tsync_apply(&sol, g[i].vcpu, g[i].b));
			checked++;
			ok += ea <= (int64_t)sol.bound && eb <= (int64_t)sol.bound;
			if (ea > worst)
				worst = ea;
			if (eb > worst)
				worst = eb;
		}
	printf("%s - marker rounds inside their trap through the RDTSC map, within its bound: "
	       "%zu of %zu (worst %lld ticks outside)\n",
	       checked && ok * 10 >= checked * 9 ? "ok" : "not ok", ok, checked,
	       (long long)worst);
	tsync_solution_free(&sol);
}

static int solve(const char *raw, const char *log, uint32_t dom, uint32_t nvcpu, bool pv,
		 bool vtsc)
{
	struct tsync_gmark *g = calloc(100000, sizeof(*g));
	struct tsync_solve_opts o = { .nvcpu = nvcpu, .pv = pv,
				      .scale = { .ratio = 1ull << 32, .frac = 32 } };
	struct hv h = { .v = rec_vcpus_new(64, false), .m = tsync_match_new(dom) };
	struct rec_stream *s = rec_stream_new(NULL, emit, &h);
	const struct tsync_hmark *hm;
	struct tsync_solution sol;
	struct rec_read_result rr;
	char line[512];
	size_t ng = 0, nh, kinds[3] = { 0 };
	FILE *f = fopen(log, "r");
	int fd = open(raw, O_RDONLY), ret;

	if (!g || !h.v || !h.m || !s || !f || fd < 0) {
		printf("not ok - open %s and %s\n", raw, log);
		if (f)
			fclose(f);
		if (fd >= 0)
			close(fd);
		tsync_match_free(h.m);
		rec_vcpus_free(h.v);
		rec_stream_free(s);
		free(g);
		return 1;
	}
	while (fgets(line, sizeof(line), f) && ng < 100000) {
		const char *p = strstr(line, "@@ GMARK ");
		unsigned long long a, b;
		unsigned int seq, cpu;

		if (p && sscanf(p, "@@ GMARK %u %u %llu %llu", &seq, &cpu, &a, &b) == 4)
			g[ng++] = (struct tsync_gmark){ .seq = seq, .vcpu = cpu, .a = a, .b = b };
		if ((p = strstr(line, "@@ GINFO")))
			printf("# guest: %s", p + 3);
	}
	fclose(f);
	rec_read_xentrace(fd, s, &rr, NULL, NULL);
	rec_stream_finish(s);
	close(fd);
	nh = tsync_match_marks(h.m, &hm);
	for (size_t i = 0; i < nh; i++)
		kinds[hm[i].kind]++;
	printf("%s - the guest's rounds in its trace: %zu\n", ng ? "ok" : "not ok", ng);
	printf("%s - the traps in the hypervisor's capture: %zu cpuid, %zu hvmop, %zu pv\n",
	       nh ? "ok" : "not ok", kinds[0], kinds[1], kinds[2]);
	if (vtsc) {
		check_vtsc(h.m, g, ng, nvcpu);
		tsync_match_free(h.m);
		rec_vcpus_free(h.v);
		rec_stream_free(s);
		free(g);
		return 0;
	}
	ret = tsync_solve(&o, g, ng, hm, nh, &sol);
	if (ret) {
		printf("not ok - solve: %s\n", strerror(-ret));
		tsync_match_free(h.m);
		rec_vcpus_free(h.v);
		rec_stream_free(s);
		free(g);
		return 1;
	}
	tsync_summary_line(&sol, "xen", NULL, line, sizeof(line));
	printf("# %s\n", line);
	for (uint32_t i = 0; i < sol.nepochs; i++)
		printf("# vcpu %u: off in [%lld, %lld] (%u rounds)\n", sol.epochs[i].vcpu,
		       (long long)sol.epochs[i].lo, (long long)sol.epochs[i].hi,
		       sol.epochs[i].rounds);
	printf("%s - every vCPU's rounds share one offset (%u epochs, %u vCPUs)\n",
	       sol.nepochs == nvcpu ? "ok" : "not ok", sol.nepochs, nvcpu);
	printf("%s - most rounds matched (%u used, %u unmatched)\n",
	       sol.rounds_used >= 10 && sol.rounds_used > sol.rounds_unmatched ? "ok" : "not ok",
	       sol.rounds_used, sol.rounds_unmatched);
	if (pv)
		printf("%s - PV: offset 0 confirmed\n", sol.pv_confirmed ? "ok" : "not ok");
	tsync_solution_free(&sol);
	tsync_match_free(h.m);
	rec_vcpus_free(h.v);
	rec_stream_free(s);
	free(g);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "guest"))
		return guest(atoi(argv[2]));
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "solve"))
		return solve(argv[2], argv[3], (uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5]),
			     argc == 7 && !strcmp(argv[6], "pv"),
			     argc == 7 && !strcmp(argv[6], "vtsc"));
	fprintf(stderr, "usage: tsync-probe guest ROUNDS | solve RAW LOG DOM NVCPU [pv|vtsc]\n");
	return 2;
}
