// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen analyze against xenalyze --summary on the same records and
 * against the ground truth of the capture's producer:
 *  - synthetic captures (xtgen): every vCPU's running count and average
 *    cycles, runnable and blocked cycles, HVM exit counts and average
 *    cycles per reason, PV hypercalls per op equal xenalyze's; run time
 *    equals the generator's; lost records equal what it wrote;
 *  - a window cut in two adds up to the whole;
 *  - the SVG, rendered by rsvg-convert, has its bars where the figures say;
 *  - xensim with the stock xentrace (suite analyze only): the same
 *    agreement with xenalyze, and running counts and cycles equal to what
 *    the simulator's truth says xenalyze must print.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <png.h>

#include "analyze.h"
#include "tlib.h"
#include "xtgen.h"

#define MAXV		64
#define MAXE		32

static char tmpdir[256];

/* ---- xenalyze --summary, the parts compared ---- */

struct xa_exit {
	char name[64];
	uint64_t count, avg;
};

struct xa_vcpu {
	uint32_t dom, vcpu;
	uint64_t cnt[ANA_NSTATES], avg[ANA_NSTATES];
	bool has[ANA_NSTATES];
	struct xa_exit exits[MAXE];
	unsigned int nexits;
	uint64_t hcalls[ANA_NHCALL];
};

static unsigned int xa_parse(const char *path, struct xa_vcpu *out)
{
	static const char *const st[] = { "running", "runnable", "blocked", "offline" };
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned int nv = 0, dom = 0, vc;
	struct xa_vcpu *cur = NULL;
	bool in_exits = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned long long a, b;
		unsigned int op;
		double d, p;

		if (sscanf(line, "|-- Domain %u --|", &dom) == 1) {
			cur = NULL;
			continue;
		}
		if (sscanf(line, "-- v%u --", &vc) == 1) {
			assert_true(nv < MAXV);
			cur = &out[nv++];
			memset(cur, 0, sizeof(*cur));
			cur->dom = dom;
			cur->vcpu = vc;
			in_exits = false;
			continue;
		}
		if (!cur)
			continue;
		if (!strncmp(line, "Exit reasons:", 13)) {
			in_exits = true;
			continue;
		}
		if (in_exits && line[0] == ' ' && line[1] != ' ' &&
		    sscanf(line, " %63[A-Z_0-9] %llu %lfs %lf%% %llu cyc", name, &a, &d, &p,
			   &b) == 5) {
			assert_true(cur->nexits < MAXE);
			snprintf(cur->exits[cur->nexits].name, 64, "%s", name);
			cur->exits[cur->nexits].count = a;
			cur->exits[cur->nexits++].avg = b;
			continue;
		}
		if (in_exits && line[0] != ' ')
			in_exits = false;
		if (sscanf(line, " %63[a-z_] [%u]: %llu", name, &op, &a) == 3 && op < ANA_NHCALL) {
			cur->hcalls[op] = a;
			continue;
		}
		if (sscanf(line, " %63[a-z]: %llu %lfs %llu", name, &a, &d, &b) == 4) {
			for (int s = 0; s < ANA_NSTATES; s++) {
				if (!strcmp(name, st[s]) && !cur->has[s]) {
					cur->cnt[s] = a;
					cur->avg[s] = b;
					cur->has[s] = true;
				}
			}
		}
	}
	fclose(f);
	return nv;
}

static const struct ana_vcpu *find_vcpu(const struct ana_result *r, uint32_t dom, uint32_t vcpu)
{
	for (unsigned int i = 0; i < r->nvcpus; i++)
		if (r->vcpus[i].dom == dom && r->vcpus[i].vcpu == vcpu)
			return &r->vcpus[i];
	return NULL;
}

/*
 * Every figure xenalyze prints for a vCPU that analyze also computes:
 * counts exactly, averages as xenalyze's integer division of the same
 * total; runnable and blocked totals within xenalyze's truncation.
 */
static void compare_xenalyze(const struct ana_result *r, const char *sum, unsigned int min_exits)
{
	struct xa_vcpu *xa = calloc(MAXV, sizeof(*xa));
	unsigned int nv, compared = 0, exits = 0;

	assert_non_null(xa);
	nv = xa_parse(sum, xa);
	assert_true(nv > 0);
	for (unsigned int i = 0; i < nv; i++) {
		const struct xa_vcpu *x = &xa[i];
		const struct ana_vcpu *v = find_vcpu(r, x->dom, x->vcpu);

		if (!x->has[ANA_RUNNING])
			continue;
		assert_non_null(v);
		print_message("# d%uv%u running %lu x %lu cyc: analyze %lu x %lu\n", x->dom,
			      x->vcpu, (unsigned long)x->cnt[0], (unsigned long)x->avg[0],
			      (unsigned long)v->runs,
			      (unsigned long)(v->runs ? v->state_cycles[0] / v->runs : 0));
		assert_int_equal(v->runs, x->cnt[ANA_RUNNING]);
		assert_int_equal(v->state_cycles[ANA_RUNNING] / v->runs, x->avg[ANA_RUNNING]);
		for (int s = ANA_RUNNABLE; s <= ANA_BLOCKED; s++) {
			uint64_t lo = x->cnt[s] * x->avg[s], hi = x->cnt[s] * (x->avg[s] + 1);

			if (!x->has[s])
				continue;
			print_message("#   state %d: xenalyze %lu x %lu, analyze %lu cycles in %lu\n",
				      s, (unsigned long)x->cnt[s], (unsigned long)x->avg[s],
				      (unsigned long)v->state_cycles[s],
				      (unsigned long)v->state_count[s]);
			assert_int_equal(v->state_count[s], x->cnt[s]);
			assert_true(v->state_cycles[s] >= lo && v->state_cycles[s] < hi);
		}
		for (unsigned int k = 0; k < x->nexits; k++) {
			const struct ana_exit *e = NULL;

			for (unsigned int j = 0; j < v->nexits; j++) {
				const char *n = ana_exit_name(v->exits[j].isa, v->exits[j].reason);

				if (n && !strcmp(n, x->exits[k].name))
					e = &v->exits[j];
			}
			print_message("#   exit %s: xenalyze %lu x %lu, analyze %lu x %lu\n",
				      x->exits[k].name, (unsigned long)x->exits[k].count,
				      (unsigned long)x->exits[k].avg,
				      (unsigned long)(e ? e->entered : 0),
				      (unsigned long)(e && e->entered ? e->cycles / e->entered : 0));
			assert_non_null(e);
			assert_int_equal(e->entered, x->exits[k].count);
			assert_int_equal(e->cycles / e->entered, x->exits[k].avg);
			exits += e->entered;
		}
		for (unsigned int op = 0; op < ANA_NHCALL; op++)
			assert_int_equal(v->hcalls[op], x->hcalls[op]);
		compared++;
	}
	assert_true(compared >= 4);
	assert_true(exits >= min_exits);
	free(xa);
}

static void convert(const char *bin, uint64_t hz, const char *dat)
{
	assert_int_equal(tlib_sh("%s convert -q %s -o %s --cpu-hz %lu", tlib_tcx(), bin, dat,
				 (unsigned long)hz), 0);
}

static void gen(const struct xtgen_params *p, const char *path, struct xtgen_truth *t)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(xtgen_write(p, f, t), 0);
	assert_int_equal(fclose(f), 0);
}

/* ---- synthetic captures ---- */

static void test_xtgen_vs_xenalyze(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	char *bin = tlib_path(tmpdir, "x.bin"), *dat = tlib_path(tmpdir, "x.dat");
	char *sum = tlib_path(tmpdir, "x.sum");
	struct ana_result *r;

	assert_non_null(t);
	xtgen_defaults(&p);
	p.ncpus = 2;
	p.epochs = 200;
	gen(&p, bin, t);
	convert(bin, 2400000000ull, dat);
	r = ana_run(dat, NULL);
	assert_non_null(r);
	/* the frequency, from the file's TSC2NSEC */
	assert_int_equal(r->cpu_hz, 2400000000ull);
	assert_true(r->hz_from_file);
	assert_int_equal(tlib_xenalyze(bin, r->cpu_hz, sum, false), 0);
	compare_xenalyze(r, sum, 1000);
	/* run time per vCPU as the generator scheduled it */
	for (int d = 0; d < p.ndoms; d++) {
		for (int v = 0; v < p.nvcpus; v++) {
			const struct ana_vcpu *a = find_vcpu(r, d, v);

			assert_non_null(a);
			assert_int_equal(a->state_cycles[ANA_RUNNING], t->run_ticks[d][v]);
		}
	}
	/* busy + idle of every pCPU is the run time of the vCPUs on it */
	{
		uint64_t runs = 0, pc = 0;

		for (unsigned int i = 0; i < r->nvcpus; i++)
			runs += r->vcpus[i].state_cycles[ANA_RUNNING];
		for (unsigned int c = 0; c < r->npcpus; c++)
			pc += r->pcpus[c].busy + r->pcpus[c].idle;
		assert_int_equal(runs, pc);
	}
	assert_int_equal(r->lost, 0);
	assert_false(r->lossy);
	ana_free(r);
	free(t);
}

static void test_lost(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	char *bin = tlib_path(tmpdir, "l.bin"), *dat = tlib_path(tmpdir, "l.dat");
	char *out = tlib_path(tmpdir, "l.txt");
	struct ana_result *r;
	uint64_t recs = 0;

	assert_non_null(t);
	xtgen_defaults(&p);
	p.epochs = 60;
	p.lost_every = 7;
	gen(&p, bin, t);
	assert_true(t->lost > 0);
	convert(bin, 2400000000ull, dat);
	r = ana_run(dat, NULL);
	assert_non_null(r);
	print_message("# lost %lu in %lu records; analyze %lu\n", (unsigned long)t->lost,
		      (unsigned long)t->lost_records, (unsigned long)r->lost);
	assert_int_equal(r->lost, t->lost);
	for (unsigned int c = 0; c < r->npcpus; c++)
		recs += r->pcpus[c].lost_recs;
	assert_int_equal(recs, t->lost_records);
	assert_true(r->lossy);
	ana_free(r);
	/* the CLI flags the figures as lower bounds */
	assert_int_equal(tlib_sh("%s analyze %s > %s 2>&1", tlib_tcx(), dat, out), 0);
	assert_true(tlib_file_has(out, "lower bound"));
	free(t);
}

/* Two windows that meet add up to the whole trace. */
static void test_window(void **state)
{
	char *dat = tlib_path(tmpdir, "x.dat");
	struct ana_opts a = { 0 }, b = { 0 };
	struct ana_result *w, *r1, *r2;
	uint64_t half;

	w = ana_run(dat, NULL);
	assert_non_null(w);
	half = ana_ns(w, (w->last_tsc - w->first_tsc) / 2);
	a.to_ns = half;
	b.from_ns = half;
	r1 = ana_run(dat, &a);
	r2 = ana_run(dat, &b);
	assert_non_null(r1);
	assert_non_null(r2);
	assert_int_equal(r1->win_end, r2->win_start);
	assert_int_equal(r1->nvcpus, w->nvcpus);
	for (unsigned int i = 0; i < w->nvcpus; i++) {
		const struct ana_vcpu *x = &w->vcpus[i];
		const struct ana_vcpu *p = find_vcpu(r1, x->dom, x->vcpu);
		const struct ana_vcpu *q = find_vcpu(r2, x->dom, x->vcpu);

		assert_non_null(p);
		assert_non_null(q);
		for (int s = 0; s < ANA_NSTATES; s++)
			assert_int_equal(p->state_cycles[s] + q->state_cycles[s],
					 x->state_cycles[s]);
		/* a run across the cut counts in both halves */
		assert_true(p->runs + q->runs >= x->runs && p->runs + q->runs <= x->runs + 1);
		assert_true(p->runs > 0 && q->runs > 0);
	}
	/* and the CLI takes the same window in its own units */
	{
		char out[1 << 16];

		assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze --json --to %luns %s",
					      tlib_tcx(), (unsigned long)half, dat), 0);
		assert_int_equal(tlib_json_num(out, "end_tsc"), (int64_t)r1->win_end);
		assert_int_not_equal(tlib_sh("%s analyze --from 2s --to 1s %s 2>/dev/null",
					     tlib_tcx(), dat), 0);
		assert_int_not_equal(tlib_sh("%s analyze --from 1x %s 2>/dev/null", tlib_tcx(),
					     dat), 0);
	}
	ana_free(w);
	ana_free(r1);
	ana_free(r2);
}

/* ---- the SVG ---- */

struct png {
	unsigned int w, h;
	png_bytep *rows;
};

static bool png_load(const char *path, struct png *p)
{
	FILE *f = fopen(path, "rb");
	png_structp ps;
	png_infop pi;

	if (!f)
		return false;
	ps = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	pi = png_create_info_struct(ps);
	if (setjmp(png_jmpbuf(ps))) {
		fclose(f);
		return false;
	}
	png_init_io(ps, f);
	png_read_png(ps, pi, PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_PACKING |
			     PNG_TRANSFORM_EXPAND, NULL);
	p->w = png_get_image_width(ps, pi);
	p->h = png_get_image_height(ps, pi);
	assert_true(png_get_channels(ps, pi) >= 3);
	{
		png_bytep *rows = png_get_rows(ps, pi);
		size_t rb = png_get_rowbytes(ps, pi);

		p->rows = calloc(p->h, sizeof(*p->rows));
		for (unsigned int y = 0; y < p->h; y++) {
			p->rows[y] = malloc(rb);
			memcpy(p->rows[y], rows[y], rb);
		}
		/* keep 4 bytes per pixel whatever the channels */
		if (png_get_channels(ps, pi) == 3) {
			for (unsigned int y = 0; y < p->h; y++) {
				png_bytep n = malloc(p->w * 4);

				for (unsigned int x = 0; x < p->w; x++) {
					memcpy(n + 4 * x, p->rows[y] + 3 * x, 3);
					n[4 * x + 3] = 255;
				}
				free(p->rows[y]);
				p->rows[y] = n;
			}
		}
	}
	png_destroy_read_struct(&ps, &pi, NULL);
	fclose(f);
	return true;
}

static uint32_t pixel(const struct png *p, unsigned int x, unsigned int y)
{
	const png_byte *px = p->rows[y] + 4 * x;

	return (uint32_t)px[0] << 16 | px[1] << 8 | px[2];
}

static void test_svg(void **state)
{
	/* the runstate colours docs/analyze.md gives, in state order */
	static const uint32_t fill[ANA_NSTATES] = { 0x2ca02c, 0xff7f0e, 0x7f7f7f, 0x000000 };
	char *dat = tlib_path(tmpdir, "x.dat"), *svg = tlib_path(tmpdir, "x.svg");
	char *png = tlib_path(tmpdir, "x.png");
	struct ana_result *r;
	struct png img;
	unsigned int checked = 0;

	r = ana_run(dat, NULL);
	assert_non_null(r);
	assert_int_equal(ana_write_svg(r, svg), 0);
	assert_int_equal(tlib_sh("rsvg-convert -b white -o %s %s", png, svg), 0);
	assert_true(png_load(png, &img));
	assert_int_equal(img.w, 960);
	/* row i's bar: y 50 + 22 i .. + 16, x 120 .. 840 for the whole window */
	for (unsigned int i = 0; i < r->nvcpus; i++) {
		const struct ana_vcpu *v = &r->vcpus[i];
		double x = 120, w = (double)(r->win_end - r->win_start);
		unsigned int y = 50 + 22 * i + 8;

		for (int s = 0; s < ANA_NSTATES; s++) {
			double bw = 720.0 * (double)v->state_cycles[s] / w;

			/* the middle of every bar wider than 4 pixels has its colour */
			if (bw > 4) {
				uint32_t got = pixel(&img, (unsigned int)(x + bw / 2), y);

				if (got != fill[s])
					print_message("# d%uv%u state %d at x %u: %06x, want %06x\n",
						      v->dom, v->vcpu, s, (unsigned int)(x + bw / 2),
						      got, fill[s]);
				assert_int_equal(got, fill[s]);
				checked++;
			}
			x += bw;
		}
		/* past the bars: the white background */
		if (x < 836)
			assert_int_equal(pixel(&img, 838, y), 0xffffff);
	}
	assert_true(checked >= r->nvcpus);
	for (unsigned int y = 0; y < img.h; y++)
		free(img.rows[y]);
	free(img.rows);
	ana_free(r);
}

/* ---- xensim and the stock xentrace ---- */

static struct tlib_sim sim;

static int sim_cleanup(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

struct bnd {
	uint64_t tsc;
	char kind;
	unsigned int pcpu;
};

static int cmp_bnd(const void *a, const void *b)
{
	const struct bnd *x = a, *y = b;

	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/*
 * What xenalyze must print for vCPU @key from the simulator's truth alone:
 * periods cut at every runstate record written (changes, CONTINUE_RUNNING),
 * one first seen continuing starts at its pCPU's first TSC, one running at
 * the end stops at its pCPU's last, empty ones do not count.
 */
static void truth_runs(const struct tlib_truth *t, uint32_t key, uint64_t *count,
		       uint64_t *cycles)
{
	struct bnd *b = malloc((2 * t->nrun + t->ncont + 1) * sizeof(*b));
	size_t n = 0;
	uint64_t start = 0;
	bool running = false;

	assert_non_null(b);
	*count = *cycles = 0;
	for (size_t i = 0; i < t->nrun; i++) {
		const struct tlib_truth_run *r = &t->run[i];

		if ((r->dom << 16 | r->vcpu) != key)
			continue;
		if (r->ws)
			b[n++] = (struct bnd){ r->start, 'S', r->pcpu };
		if (r->we)
			b[n++] = (struct bnd){ r->end, 'E', r->pcpu };
	}
	for (size_t i = 0; i < t->ncont; i++)
		if ((t->cont[i].dom << 16 | t->cont[i].vcpu) == key && t->cont[i].w)
			b[n++] = (struct bnd){ t->cont[i].tsc, 'C', t->cont[i].pcpu };
	qsort(b, n, sizeof(*b), cmp_bnd);
	for (size_t i = 0; i < n; i++) {
		if (running && b[i].tsc > start) {
			(*count)++;
			*cycles += b[i].tsc - start;
		}
		start = !running && b[i].kind == 'C' ? t->st[b[i].pcpu].first_tsc : b[i].tsc;
		running = b[i].kind != 'E';
	}
	if (running && n && t->st[b[n - 1].pcpu].last_tsc > start) {
		(*count)++;
		*cycles += t->st[b[n - 1].pcpu].last_tsc - start;
	}
	free(b);
}

static void xensim_case(const char *conf, unsigned int min_migr)
{
	char *bin, *dat, *sum;
	struct tlib_truth t;
	struct ana_result *r;
	uint64_t hz, migr = 0;
	unsigned int compared = 0;

	assert_int_equal(tlib_sim_xentrace(&sim, tlib_conf_path(conf), "256", "2", &t), 0);
	bin = tlib_path(sim.tmp, "trace.bin");
	dat = tlib_path(sim.tmp, "trace.dat");
	sum = tlib_path(sim.tmp, "xenalyze.sum");
	hz = (uint64_t)t.cpu_khz * 1000;
	convert(bin, hz, dat);
	r = ana_run(dat, NULL);
	assert_non_null(r);
	print_message("# cpu_khz %u; analyze found %lu Hz in the file\n", t.cpu_khz,
		      (unsigned long)r->cpu_hz);
	assert_int_equal(r->cpu_hz, hz);
	compare_xenalyze(r, sum, 10);
	for (unsigned int i = 0; i < r->nvcpus; i++) {
		const struct ana_vcpu *v = &r->vcpus[i];
		uint64_t n, c;

		truth_runs(&t, v->dom << 16 | v->vcpu, &n, &c);
		if (!n)
			continue;
		assert_int_equal(v->runs, n);
		assert_int_equal(v->state_cycles[ANA_RUNNING], c);
		migr += v->migrations;
		compared++;
	}
	assert_true(compared >= 5);
	for (unsigned int c = 0; c < t.pcpus; c++)
		assert_int_equal(r->pcpus[c].lost, 0);
	print_message("# %lu migrations; the simulator made %d\n", (unsigned long)migr,
		      tlib_truth_count(sim.dir, "migrate "));
	assert_true(migr >= min_migr);
	assert_true(migr <= (uint64_t)tlib_truth_count(sim.dir, "migrate ") * 2 + 50);
	ana_free(r);
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

static void test_xensim_basic(void **state)
{
	xensim_case("basic.conf", 0);
}

static void test_xensim_migrate(void **state)
{
	xensim_case("migrate.conf", 50);
}

/* ---- the command line ---- */

static void test_cli(void **state)
{
	char out[1 << 16];
	char *dat = tlib_path(tmpdir, "x.dat");

	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze -h", tlib_tcx()), 0);
	assert_non_null(strstr(out, "--per-vcpu"));
	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze --per-vcpu %s", tlib_tcx(),
				      dat), 0);
	assert_non_null(strstr(out, "d1v0     IO_INSTRUCTION"));
	assert_non_null(strstr(out, "sched_op"));
	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze --json %s", tlib_tcx(), dat),
			 0);
	assert_int_equal(tlib_json_num(out, "cpu_hz"), 2400000000);
	/* bad input names what is wrong */
	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze /nonexistent 2>&1",
				      tlib_tcx()) >> 8, 1);
	assert_non_null(strstr(out, "/nonexistent"));
	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze 2>&1", tlib_tcx()) >> 8, 2);
	assert_int_equal(tlib_capture(out, sizeof(out), "%s analyze --cpu-hz 0 %s 2>&1",
				      tlib_tcx(), dat) >> 8, 2);
}

/* The capture most cases read: xtgen's defaults on 2 pCPUs, 200 epochs. */
static int setup(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	char *bin, *dat;
	FILE *f;
	int ret;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tcx-analyze-XXXXXX");
	if (!t || !mkdtemp(tmpdir)) {
		free(t);
		return -1;
	}
	bin = tlib_path(tmpdir, "x.bin");
	dat = tlib_path(tmpdir, "x.dat");
	xtgen_defaults(&p);
	p.ncpus = 2;
	p.epochs = 200;
	f = fopen(bin, "w");
	ret = !f || xtgen_write(&p, f, t) || fclose(f) ? -1 : 0;
	free(t);
	if (!ret)
		ret = tlib_sh("%s convert -q %s -o %s --cpu-hz 2400000000", tlib_tcx(), bin,
			      dat) ? -1 : 0;
	return ret;
}

static int teardown(void **state)
{
	if (!getenv("TCX_KEEP"))
		tlib_rmtree(tmpdir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest svg[] = {
		cmocka_unit_test(test_svg),
	};
	const struct CMUnitTest fast[] = {
		cmocka_unit_test(test_xtgen_vs_xenalyze),
		cmocka_unit_test(test_lost),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_cli),
	};
	const struct CMUnitTest slow[] = {
		cmocka_unit_test_teardown(test_xensim_basic, sim_cleanup),
		cmocka_unit_test_teardown(test_xensim_migrate, sim_cleanup),
	};

	if (argc > 1 && !strcmp(argv[1], "svg")) {
		if (tlib_sh("command -v rsvg-convert >/dev/null 2>&1")) {
			printf("1..0 # SKIP rsvg-convert (librsvg2-bin) is not installed\n");
			return 0;
		}
		return cmocka_run_group_tests_name("analyze --svg", svg, setup, teardown);
	}
	if (argc > 1 && !strcmp(argv[1], "xensim"))
		return cmocka_run_group_tests_name("analyze on xensim", slow, NULL, NULL);
	return cmocka_run_group_tests_name("analyze", fast, setup, teardown);
}
