// SPDX-License-Identifier: GPL-2.0
/*
 * tdat-check: reads tdat-gen's files through the PUBLIC libtracecmd API
 * (what KernelShark uses) and compares with gen-seq.h. One TAP line per
 * check, unnumbered ("ok - ..."): the driving script numbers them.
 *
 *   tdat-check seq FILE N NCPU [LOST]       events, order, payloads, CPUs, lost
 *   tdat-check comm FILE PID COMM           the cmdline of PID ("-": none)
 *   tdat-check hostguest HOST GUEST OUT     vCPU maps, TIME_SHIFT + TSC2NSEC to
 *                                           the ns; OUT gets "file ns" lines
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace-cmd/trace-cmd.h>

#include "gen-seq.h"

static int failures;

static void tap(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures += !ok;
}

struct rec {
	int		file;
	int		cpu;
	uint64_t	ts;
	uint64_t	val;
	int		type;
	int		pid;
	int		size;
	int		missed;
};

struct ctx {
	struct tracecmd_input	**h;
	int			nh;
	struct rec		*r;
	int			n, max;
};

static int collect(struct tracecmd_input *handle, struct tep_record *record, int cpu, void *data)
{
	struct ctx *c = data;
	struct tep_handle *tep = tracecmd_get_tep(handle);
	struct rec *r;
	int i;

	(void)cpu;
	if (c->n == c->max)
		return 0;
	r = &c->r[c->n++];
	memset(r, 0, sizeof(*r));
	for (i = 0; i < c->nh; i++)
		if (c->h[i] == handle)
			r->file = i;
	r->cpu = record->cpu;
	r->ts = record->ts;
	r->size = record->size;
	r->type = tep_data_type(tep, record);
	r->pid = tep_data_pid(tep, record);
	r->missed = record->missed_events;
	if (record->size >= 16)
		memcpy(&r->val, (char *)record->data + 8, 8);
	return 0;
}

/* The cmdlines the reader took: @pid is named @comm ("-": not named). */
static int check_comm(const char *file, int pid, const char *comm)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);
	const char *got;
	bool named;

	tap(h != NULL, "tracecmd_open %s", file);
	if (!h)
		return 1;
	named = tep_is_pid_registered(tracecmd_get_tep(h), pid);
	got = tep_data_comm_from_pid(tracecmd_get_tep(h), pid);
	if (!strcmp(comm, "-"))
		tap(!named, "pid %d has no cmdline (got %s)", pid, got);
	else
		tap(named && !strcmp(got, comm), "pid %d is named %s (got %s)", pid, comm, got);
	tracecmd_close(h);
	return failures ? 1 : 0;
}

static int check_seq(const char *file, int n, int ncpu, int lost)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);
	struct ctx c = { &h, 1, NULL, 0, n + 10 };
	int i, bad = -1, cpus;

	tap(h != NULL, "tracecmd_open %s", file);
	if (!h)
		return 1;
	cpus = tep_get_cpus(tracecmd_get_tep(h));
	tap(cpus == ncpu, "tep_get_cpus %d == %d (KernelShark's CPU count)", cpus, ncpu);
	c.r = calloc(c.max, sizeof(*c.r));
	tracecmd_iterate_events(h, NULL, 0, collect, &c);
	tap(c.n == n, "%d events read, %d written", c.n, n);
	for (i = 0; i < c.n && i < n && bad < 0; i++) {
		struct rec *r = &c.r[i];

		if (r->ts != seq_ts(i) || r->cpu != seq_cpu(i, ncpu) || r->val != (uint64_t)i ||
		    r->type != SEQ_ID || r->pid != SEQ_PID ||
		    r->size != (int)((seq_len(i) + 3) & ~3u))
			bad = i;
	}
	if (bad >= 0)
		tap(0, "event %d: ts %llu cpu %d val %llu size %d, want ts %llu cpu %d size %u", bad,
		    (unsigned long long)c.r[bad].ts, c.r[bad].cpu, (unsigned long long)c.r[bad].val,
		    c.r[bad].size, (unsigned long long)seq_ts(bad), seq_cpu(bad, ncpu),
		    (seq_len(bad) + 3) & ~3u);
	else
		tap(1, "every event in time order with its CPU, timestamp, size and payload");
	if (lost && n > SEQ_LOST_AT)
		tap(c.r[SEQ_LOST_AT].missed == SEQ_LOST, "event %d reports %d lost events (got %d)",
		    SEQ_LOST_AT, SEQ_LOST, c.r[SEQ_LOST_AT].missed);
	free(c.r);
	tracecmd_close(h);
	return failures != 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->file != y->file)
		return x->file - y->file;
	return x->val < y->val ? -1 : x->val > y->val;
}

static int check_hostguest(const char *host, const char *guest, const char *out)
{
	struct tracecmd_input *h[2];
	struct tracecmd_cpu_map *map;
	struct ctx c = { h, 2, NULL, 0, 2 * HG_EVENTS + 10 };
	struct rec *want;
	const char *name = NULL;
	const int *pids = NULL;
	int nvcpu = 0, i, ret, nwant = 0, bad = -1, sorted = 1;
	FILE *f;

	h[0] = tracecmd_open(host, 0);
	h[1] = tracecmd_open(guest, 0);
	tap(h[0] && h[1], "tracecmd_open host and guest");
	if (!h[0] || !h[1])
		return 1;
	tap(tracecmd_get_traceid(h[1]) == HG_GUEST_ID, "guest TRACEID");
	tap(tep_get_cpus(tracecmd_get_tep(h[0])) == 2 && tep_get_cpus(tracecmd_get_tep(h[1])) == HG_NVCPU,
	    "tep_get_cpus host %d guest %d", tep_get_cpus(tracecmd_get_tep(h[0])),
	    tep_get_cpus(tracecmd_get_tep(h[1])));
	ret = tracecmd_get_guest_cpumap(h[0], tracecmd_get_traceid(h[1]), &name, &nvcpu, &pids);
	tap(!ret && name && !strcmp(name, "guest1") && nvcpu == HG_NVCPU && pids &&
	    pids[0] == HG_PID(0) && pids[1] == HG_PID(1),
	    "tracecmd_get_guest_cpumap: %s, %d vCPUs, pids %d %d", name ? name : "-", nvcpu,
	    pids ? pids[0] : -1, pids && nvcpu > 1 ? pids[1] : -1);
	ret = tracecmd_map_vcpus(h, 2);
	tap(ret == 1, "tracecmd_map_vcpus maps %d guest", ret);
	map = tracecmd_map_find_by_host_pid(h[0], HG_PID(1));
	tap(map && tracecmd_map_get_guest(map) == h[1] &&
	    tracecmd_map_get_host_pid(map) == HG_PID(1), "host pid %d maps to the guest", HG_PID(1));
	map = tracecmd_get_cpu_map(h[1], 1);
	tap(map && tracecmd_map_get_host_pid(map) == HG_PID(1), "guest vCPU 1 maps to host pid %d",
	    HG_PID(1));

	c.r = calloc(c.max, sizeof(*c.r));
	want = calloc(c.max, sizeof(*want));
	tracecmd_iterate_events_multi(h, 2, collect, &c);
	tap(c.n == 2 * HG_EVENTS, "%d events from both files", c.n);
	/* what the reader must compute, from the generator's raw values */
	for (i = 0; i < HG_EVENTS; i++) {
		want[nwant++] = (struct rec){ .file = 0, .ts = hg_tsc2ns(hg_host_ts(i)) };
		want[nwant++] = (struct rec){
			.file = 1, .val = i,
			.ts = hg_tsc2ns(hg_expect_shift(hg_guest_ts(i), hg_guest_cpu(i))) };
	}
	for (i = 1; i < c.n; i++)
		sorted &= c.r[i - 1].ts <= c.r[i].ts;
	tap(sorted, "merged events come in corrected time order");
	for (i = 0; i < c.n; i++)
		if (c.r[i].file == 0)
			c.r[i].val = 0;
	qsort(want, nwant, sizeof(*want), cmp_rec);
	qsort(c.r, c.n, sizeof(*c.r), cmp_rec);
	for (i = 0; i < nwant && i < c.n && bad < 0; i++)
		if (want[i].ts != c.r[i].ts || want[i].file != c.r[i].file || want[i].val != c.r[i].val)
			bad = i;
	if (bad >= 0)
		tap(0, "event %d: file %d ts %llu val %llu, want file %d ts %llu val %llu", bad,
		    c.r[bad].file, (unsigned long long)c.r[bad].ts, (unsigned long long)c.r[bad].val,
		    want[bad].file, (unsigned long long)want[bad].ts, (unsigned long long)want[bad].val);
	else
		tap(c.n == nwant, "TIME_SHIFT (interpolated, scaled) and TSC2NSEC exact to the ns");
	f = fopen(out, "w");
	for (i = 0; f && i < nwant; i++)
		fprintf(f, "%d %llu\n", want[i].file, (unsigned long long)want[i].ts);
	if (f)
		fclose(f);
	free(c.r);
	free(want);
	tracecmd_close(h[1]);
	tracecmd_close(h[0]);
	return failures != 0;
}

int main(int argc, char **argv)
{
	/* every line out at once: a crash must not swallow earlier results */
	setvbuf(stdout, NULL, _IOLBF, 0);
	tracecmd_set_loglevel(TEP_LOG_WARNING);
	if (argc >= 5 && !strcmp(argv[1], "seq"))
		return check_seq(argv[2], atoi(argv[3]), atoi(argv[4]), argc > 5 && atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "comm"))
		return check_comm(argv[2], atoi(argv[3]), argv[4]);
	if (argc == 5 && !strcmp(argv[1], "hostguest"))
		return check_hostguest(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: tdat-check seq FILE N NCPU [LOST] | hostguest HOST GUEST OUT\n");
	return 2;
}
