// SPDX-License-Identifier: GPL-2.0
/*
 * The stock xentrace (Debian's /usr/lib/xen-4.17/bin/xentrace, unmodified)
 * against xensim through the shim libraries, checked with our own reader of
 * its output, with the stock xenalyze, and against the simulator's ground
 * truth:
 *  - at a drainable rate: every record written is in the file, nothing
 *    lost, every vCPU's runstate records chain as Xen's do (wakes from
 *    another pCPU included), and xenalyze's per-vCPU running count and
 *    average cycles equal the ground truth exactly;
 *  - at a stress rate: the LOST records in the file add up to the
 *    simulator's drops, less those that Xen's disable forgets;
 *  - xenalyze's re-read of a pCPU's last window, which the xenalyze runs
 *    here and in tests/analyze leave to a new capture, is recognised.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tlib.h"

/* One host per test, stopped and removed even when the test fails. */
static struct tlib_sim sim;

static int cleanup(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

#define XENTRACE	"/usr/lib/xen-4.17/bin/xentrace"
#define MAXV		64

/* A runstate change record: dom << 16 | vcpu, from and to states. */
struct rsrec {
	uint64_t tsc;
	uint32_t key;
	unsigned int from, to;
};

struct filestats {
	uint64_t records[64], lost[64], lost_recs[64], fillers[64];
	uint64_t first_tsc[64], last_tsc[64];
	uint64_t vmexits;
	unsigned int windows;
	int ncpus;
	struct rsrec *rs;
	size_t nrs, caprs;
};

/* Read a xentrace file as xenalyze must: windows of per-CPU records. */
static void read_xentrace(const char *path, struct filestats *fs)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;
	size_t pos = 0;

	memset(fs, 0, sizeof(*fs));
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len ? len : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), (size_t)len);
	fclose(f);
	while (pos < (size_t)len) {
		uint32_t h, cpu, win;
		size_t end;

		assert_true(pos + 12 <= (size_t)len);
		memcpy(&h, buf + pos, 4);
		memcpy(&cpu, buf + pos + 4, 4);
		memcpy(&win, buf + pos + 8, 4);
		assert_int_equal(h, 0x2001f003);	/* cpu_change, 2 words */
		assert_true(cpu < 64);
		if ((int)cpu + 1 > fs->ncpus)
			fs->ncpus = cpu + 1;
		pos += 12;
		end = pos + win;
		assert_true(end <= (size_t)len);
		fs->windows++;
		while (pos < end) {
			uint32_t ev, n, w[9];
			unsigned int sz;

			memcpy(&h, buf + pos, 4);
			sz = 4 + (h >> 31 ? 8 : 0) + 4 * ((h >> 28) & 7);
			assert_true(pos + sz <= end);
			memcpy(w, buf + pos + 4, sz - 4);
			ev = h & 0x0fffffff;
			n = (h >> 28) & 7;
			if (h >> 31) {
				uint64_t tsc = w[0] | (uint64_t)w[1] << 32;

				/* per-CPU time never goes back */
				assert_true(tsc >= fs->last_tsc[cpu]);
				if (!fs->first_tsc[cpu])
					fs->first_tsc[cpu] = tsc;
				fs->last_tsc[cpu] = tsc;
			}
			if (ev == 0x0001f002) {
				fs->fillers[cpu]++;
			} else if (ev == 0x0001f001) {
				assert_int_equal(sz, 28);
				assert_int_equal(n, 4);
				fs->lost[cpu] += w[2];
				fs->lost_recs[cpu]++;
			} else {
				fs->records[cpu]++;
				fs->vmexits += ev == 0x00081102;
				if ((ev & 0x0ffff00f) == 0x00021001 && h >> 31 && n >= 1) {
					if (fs->nrs == fs->caprs) {
						fs->caprs = fs->caprs ? 2 * fs->caprs : 1024;
						fs->rs = realloc(fs->rs, fs->caprs * sizeof(*fs->rs));
						assert_non_null(fs->rs);
					}
					fs->rs[fs->nrs++] = (struct rsrec){
						w[0] | (uint64_t)w[1] << 32, w[2],
						(ev >> 8) & 0xf, (ev >> 4) & 0xf };
				}
			}
			pos += sz;
		}
	}
	free(buf);
}

static int cmp_rs(const void *a, const void *b)
{
	const struct rsrec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/*
 * Every vCPU's runstate records, in time order over all pCPUs, chain as
 * Xen's do: each leaves the state the one before entered (a wake from
 * another pCPU included). Two records of one vCPU with the same TSC may
 * be in either order. Needs a file that lost nothing.
 */
static void check_runstate_chain(struct filestats *fs)
{
	size_t breaks = 0;

	qsort(fs->rs, fs->nrs, sizeof(*fs->rs), cmp_rs);
	for (size_t i = 1; i < fs->nrs; i++) {
		struct rsrec *a = &fs->rs[i - 1], *b = &fs->rs[i];

		if (a->key != b->key || b->from == a->to)
			continue;
		if (i + 1 < fs->nrs && fs->rs[i + 1].key == b->key &&
		    fs->rs[i + 1].tsc == b->tsc && fs->rs[i + 1].from == a->to) {
			struct rsrec x = *b;

			*b = fs->rs[i + 1];
			fs->rs[i + 1] = x;
			continue;
		}
		if (breaks++ < 5)
			print_message("# d%uv%u: %u->%u at %lu, then %u->%u at %lu\n",
				      a->key >> 16, a->key & 0xffff, a->from, a->to,
				      (unsigned long)a->tsc, b->from, b->to,
				      (unsigned long)b->tsc);
	}
	print_message("# %zu runstate records, %zu out of chain\n", fs->nrs, breaks);
	free(fs->rs);
	fs->rs = NULL;
	assert_true(fs->nrs > 100);
	assert_int_equal(breaks, 0);
}

struct vrun {
	uint32_t key;		/* dom << 16 | vcpu */
	uint64_t count, cycles;
	char secs[32];		/* xenalyze: total seconds, as printed */
};

struct bound {
	uint64_t tsc;
	char kind;		/* S start, C continue, E end */
	unsigned int pcpu;
};

static int cmp_bound(const void *a, const void *b)
{
	const struct bound *x = a, *y = b;

	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/*
 * What xenalyze's summary must say, from the ground truth alone: running
 * periods are cut at every runstate record of the vCPU that reached the
 * file (changes and CONTINUE_RUNNING), a vCPU first seen continuing starts
 * at its pCPU's first TSC, one still running at the end stops at its
 * pCPU's last TSC (xenalyze's "LOST" at end of file), and zero-length
 * periods do not count.
 */
static unsigned int expected_runs(const struct tlib_truth *t, struct vrun *out)
{
	unsigned int nv = 0;
	struct bound *b = malloc((2 * t->nrun + t->ncont + 1) * sizeof(*b));

	assert_non_null(b);
	for (size_t i = 0; i < t->nrun; i++) {
		uint32_t key = t->run[i].dom << 16 | t->run[i].vcpu;
		unsigned int k;

		for (k = 0; k < nv && out[k].key != key; k++)
			;
		if (k == nv) {
			assert_true(nv < MAXV);
			out[nv++] = (struct vrun){ .key = key };
		}
	}
	for (unsigned int k = 0; k < nv; k++) {
		size_t n = 0;
		uint64_t start = 0;
		bool running = false;

		for (size_t i = 0; i < t->nrun; i++) {
			const struct tlib_truth_run *r = &t->run[i];

			if ((r->dom << 16 | r->vcpu) != out[k].key)
				continue;
			if (r->ws)
				b[n++] = (struct bound){ r->start, 'S', r->pcpu };
			if (r->we)
				b[n++] = (struct bound){ r->end, 'E', r->pcpu };
		}
		for (size_t i = 0; i < t->ncont; i++) {
			const struct tlib_truth_cont *c = &t->cont[i];

			if ((c->dom << 16 | c->vcpu) == out[k].key && c->w)
				b[n++] = (struct bound){ c->tsc, 'C', c->pcpu };
		}
		qsort(b, n, sizeof(*b), cmp_bound);
		for (size_t i = 0; i < n; i++) {
			if (running && b[i].tsc > start) {
				out[k].count++;
				out[k].cycles += b[i].tsc - start;
			}
			if (!running && b[i].kind == 'C')
				start = t->st[b[i].pcpu].first_tsc;
			else
				start = b[i].tsc;
			if (running || b[i].kind != 'E')
				running = b[i].kind != 'E';
		}
		if (running && n && t->st[b[n - 1].pcpu].last_tsc > start) {
			out[k].count++;
			out[k].cycles += t->st[b[n - 1].pcpu].last_tsc - start;
		}
	}
	free(b);
	return nv;
}

/* Sum of the "Exit reasons:" counts of every vCPU in `xenalyze -s`. */
static uint64_t xenalyze_exits(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool in = false;
	uint64_t sum = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned long long n;

		if (!strncmp(line, "Exit reasons:", 13)) {
			in = true;
			continue;
		}
		if (in && sscanf(line, " %63[A-Z_] %llu", name, &n) == 2 &&
		    line[0] == ' ' && line[1] != ' ')
			sum += n;
		else if (in && line[0] != ' ')
			in = false;
	}
	fclose(f);
	return sum;
}

/* Per-vCPU "running: COUNT SECS AVG" lines of `xenalyze -s`. */
static unsigned int xenalyze_runs(const char *path, struct vrun *out)
{
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned int nv = 0, dom = 0, vcpu = 0;
	bool in_vcpu = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long cnt, avg;
		double secs;

		if (sscanf(line, "|-- Domain %u --|", &dom) == 1) {
			in_vcpu = false;
		} else if (sscanf(line, "-- v%u --", &vcpu) == 1) {
			in_vcpu = true;
		} else if (in_vcpu &&
			   sscanf(line, " running: %llu %lfs %llu", &cnt, &secs,
				  &avg) == 3) {
			assert_true(nv < MAXV);
			out[nv].key = dom << 16 | vcpu;
			out[nv].count = cnt;
			out[nv].cycles = avg;	/* xenalyze prints cycles/count */
			snprintf(out[nv].secs, sizeof(out[nv].secs), "%.2f", secs);
			nv++;
			in_vcpu = false;
		}
	}
	fclose(f);
	return nv;
}

static void scratch(const struct tlib_sim *host, const char *name,
		    char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", host->tmp, name);
}

static void drainable(const char *conf, unsigned int min_migrations, unsigned int min_vcpus)
{
	struct tlib_truth t;
	struct filestats fs;
	struct vrun exp[MAXV], got[MAXV];
	char out[512], sum[512];
	unsigned int ne, ng, compared = 0;

	/* 1 MiB per pCPU: over a second of slack on a loaded machine */
	assert_int_equal(tlib_sim_xentrace(&sim, tlib_conf_path(conf), "256", "2", &t), 0);
	scratch(&sim, "trace.bin", out, sizeof(out));
	scratch(&sim, "xenalyze.sum", sum, sizeof(sum));

	/* every record the simulator wrote is in the file, nothing lost */
	read_xentrace(out, &fs);
	check_runstate_chain(&fs);
	assert_int_equal(fs.ncpus, t.pcpus);
	for (unsigned int c = 0; c < t.pcpus; c++) {
		assert_true(t.st[c].written > 1000);
		assert_int_equal(fs.records[c], t.st[c].written);
		assert_int_equal(t.st[c].dropped, 0);
		assert_int_equal(fs.lost[c], 0);
		assert_int_equal(fs.first_tsc[c], t.st[c].first_tsc);
		assert_int_equal(fs.last_tsc[c], t.st[c].last_tsc);
	}

	/* xenalyze's run times equal the ground truth */
	ne = expected_runs(&t, exp);
	ng = xenalyze_runs(sum, got);
	for (unsigned int i = 0; i < ne; i++) {
		unsigned int j;

		if (!exp[i].count)
			continue;	/* never seen running: not listed */
		for (j = 0; j < ng && got[j].key != exp[i].key; j++)
			;
		assert_true(j < ng);
		print_message("# d%uv%u running %lu periods, %lu cycles: xenalyze %lu x avg %lu\n",
			      exp[i].key >> 16, exp[i].key & 0xffff,
			      (unsigned long)exp[i].count,
			      (unsigned long)exp[i].cycles,
			      (unsigned long)got[j].count,
			      (unsigned long)got[j].cycles);
		assert_int_equal(got[j].count, exp[i].count);
		/* integer average, as xenalyze prints it */
		assert_int_equal(got[j].cycles, exp[i].cycles / exp[i].count);
		/* and total seconds, cycles / cpu_hz to two decimals */
		{
			char want[32];

			snprintf(want, sizeof(want), "%.2f",
				 (double)exp[i].cycles / (t.cpu_khz * 1000.0));
			assert_string_equal(got[j].secs, want);
		}
		compared++;
	}
	assert_true(compared >= min_vcpus);
	/* vCPUs moved between pCPUs while traced */
	print_message("# %d migrations\n", tlib_truth_count(sim.dir, "migrate "));
	assert_true(tlib_truth_count(sim.dir, "migrate ") >= (int)min_migrations);
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

static void test_drainable_rate(void **state)
{
	drainable("basic.conf", 0, 5);	/* dom0 x2, guest1 x2, guest2, idle */
}

static void test_drainable_migrating(void **state)
{
	drainable("migrate.conf", 50, 5);
}

/* A PV dom0 that never blocks against a guest whose vCPUs wake each other */
static void test_drainable_rival(void **state)
{
	drainable("rival.conf", 0, 4);	/* never idle */
}

static void test_stress_lost(void **state)
{
	struct tlib_truth t;
	struct filestats fs;
	char out[512], sum[512];
	uint64_t dropped = 0, reported = 0;

	/* 2-page buffers, 1 s; xenalyze still parses the file */
	assert_int_equal(tlib_sim_xentrace(&sim, tlib_conf_path("stress.conf"), "2", "1", &t), 0);
	scratch(&sim, "trace.bin", out, sizeof(out));
	scratch(&sim, "xenalyze.sum", sum, sizeof(sum));
	read_xentrace(out, &fs);
	free(fs.rs);
	for (unsigned int c = 0; c < t.pcpus; c++) {
		const struct tlib_truth_stats *s = &t.st[c];

		print_message("# pcpu %u: written %lu dropped %lu; file: %lu records, LOST %lu in %lu records; forgotten at disable %lu\n",
			      c, (unsigned long)s->written,
			      (unsigned long)s->dropped,
			      (unsigned long)fs.records[c],
			      (unsigned long)fs.lost[c],
			      (unsigned long)fs.lost_recs[c],
			      (unsigned long)(s->lost_cleared + s->lost_pending));
		assert_int_equal(fs.records[c], s->written);
		assert_int_equal(fs.lost[c], s->lost_reported);
		assert_int_equal(s->dropped, s->lost_reported + s->lost_cleared +
					     s->lost_pending);
		dropped += s->dropped;
		reported += fs.lost[c];
	}
	/* the stress rate really is beyond the consumer */
	assert_true(reported > 0);
	assert_true(reported * 2 > dropped);

	/*
	 * Each exit is counted once: stamps follow real time on every pCPU,
	 * as Xen's do (a pCPU far behind the others makes xenalyze re-read
	 * windows). The few before a vCPU is known are not listed.
	 */
	{
		uint64_t n = xenalyze_exits(sum);

		print_message("# xenalyze counts %lu exits of %lu VMEXIT records\n",
			      (unsigned long)n, (unsigned long)fs.vmexits);
		assert_true(n <= fs.vmexits);
		assert_true(n * 100 >= fs.vmexits * 95);
	}
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

/* One consumer per host: a second xentrace cannot bind VIRQ_TBUF. */
static void test_second_xentrace_fails(void **state)
{
	char out1[512], out2[512], err[512], line[256];
	pid_t first;
	FILE *f;
	bool said = false;

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	scratch(&sim, "one.bin", out1, sizeof(out1));
	scratch(&sim, "two.bin", out2, sizeof(out2));
	scratch(&sim, "two.err", err, sizeof(err));
	{
		char *argv[] = { XENTRACE, "-T", "2", out1, NULL };

		first = tlib_sim_spawn(&sim, argv, -1, NULL, "/dev/null");
		assert_true(first > 0);
	}
	usleep(700 * 1000);
	{
		char *argv[] = { XENTRACE, "-T", "1", out2, NULL };

		assert_int_equal(tlib_sim_run(&sim, argv, NULL, err), 1);
	}
	f = fopen(err, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		said |= strstr(line, "failed to bind to VIRQ port") != NULL;
	fclose(f);
	assert_true(said);
	assert_int_equal(tlib_wait(first), 0);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	tlib_sim_cleanup(&sim);
}

/* ---- xenalyze's re-read of a pCPU's last window ---- */

struct win {
	size_t		off;	/* the records, past the window's header */
	size_t		len;
	uint32_t	cpu;
};

/* The first record boundary of @w at or past @num/@den of its bytes. */
static size_t boundary(const uint8_t *buf, const struct win *w, size_t num, size_t den)
{
	size_t pos = 0;

	while (pos < w->len * num / den) {
		uint32_t h;

		memcpy(&h, buf + w->off + pos, 4);
		pos += 4 + (h >> 31 ? 8 : 0) + 4 * ((h >> 28) & 7);
	}
	return pos;
}

static void put_window(FILE *f, uint32_t cpu, const uint8_t *p, size_t n)
{
	uint32_t h[3] = { 0x2001f003, cpu, (uint32_t)n };

	assert_int_equal(fwrite(h, 4, 3, f), 3);
	assert_int_equal(fwrite(p, 1, n, f), n);
}

/*
 * The capture cut at pCPU 0's last window (@l0), pCPU 1's window before it
 * (@p1) split in two: its first half in place, its third quarter in place
 * or, with @moved, after @l0. Either way each pCPU's records stay in order.
 */
static void rearrange(const uint8_t *buf, const struct win *w, int l0, int p1, bool moved,
		      const char *path)
{
	size_t half = boundary(buf, &w[p1], 1, 2), quarter3 = boundary(buf, &w[p1], 3, 4);
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	for (int i = 0; i <= l0; i++) {
		if (i != p1) {
			put_window(f, w[i].cpu, buf + w[i].off, w[i].len);
			continue;
		}
		put_window(f, 1, buf + w[i].off, half);
		if (!moved)
			put_window(f, 1, buf + w[i].off + half, quarter3 - half);
	}
	if (moved)
		put_window(f, 1, buf + w[p1].off + half, quarter3 - half);
	assert_int_equal(fclose(f), 0);
}

/*
 * What tlib_xenalyze() leaves to a new capture is xenalyze's own defect: a
 * pCPU whose records all end before the other's last window is finished at
 * the end of the file, then found again and replayed. The same records
 * read once through when that pCPU's last window comes first.
 */
static void test_xenalyze_reread(void **state)
{
	char out[512], in[512], moved[512], sum[512];
	struct win w[4096];
	unsigned int n = 0;
	int l0 = -1, p1 = -1;
	struct tlib_truth t;
	uint8_t *buf;
	size_t len, pos = 0;

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	scratch(&sim, "trace.bin", out, sizeof(out));
	scratch(&sim, "in-place.bin", in, sizeof(in));
	scratch(&sim, "moved.bin", moved, sizeof(moved));
	scratch(&sim, "xenalyze.sum", sum, sizeof(sum));
	{
		char *argv[] = { XENTRACE, "-S", "256", "-T", "1", out, NULL };

		assert_int_equal(tlib_sim_run(&sim, argv, NULL, "/dev/null"), 0);
	}
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
	buf = (uint8_t *)tlib_slurp(out, &len);
	assert_non_null(buf);
	while (pos + 12 <= len && n < 4096) {
		uint32_t h[3];

		memcpy(h, buf + pos, 12);
		w[n] = (struct win){ pos + 12, h[2], h[1] };
		pos += 12 + h[2];
		n++;
	}
	assert_int_equal(pos, len);
	for (unsigned int i = 0; i < n; i++)
		if (w[i].cpu == 0)
			l0 = i;
	for (int i = 0; i < l0; i++)
		if (w[i].cpu == 1)
			p1 = i;
	assert_true(l0 >= 0 && p1 >= 0);
	print_message("# %u windows; pCPU 0's last is #%d, pCPU 1's before it #%d\n", n, l0, p1);
	rearrange(buf, w, l0, p1, false, in);
	rearrange(buf, w, l0, p1, true, moved);
	free(buf);
	assert_int_equal(tlib_xenalyze(in, (uint64_t)t.cpu_khz * 1000, sum, false), 0);
	/* without leave to retry (a retry line here would count as one) */
	assert_int_equal(tlib_xenalyze(moved, (uint64_t)t.cpu_khz * 1000, sum, false), -1);
	assert_int_equal(tlib_xenalyze_reread(tlib_path(sim.tmp, "xenalyze.sum.err")), 1);
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_drainable_rate, cleanup),
		cmocka_unit_test_teardown(test_drainable_migrating, cleanup),
		cmocka_unit_test_teardown(test_drainable_rival, cleanup),
		cmocka_unit_test_teardown(test_stress_lost, cleanup),
		cmocka_unit_test_teardown(test_second_xentrace_fails, cleanup),
		cmocka_unit_test_teardown(test_xenalyze_reread, cleanup),
	};

	return cmocka_run_group_tests_name("stock xentrace on xensim", tests,
					   NULL, NULL);
}
