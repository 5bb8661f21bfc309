// SPDX-License-Identifier: GPL-2.0
/*
 * KernelShark's host/guest (KVM combo) view on a converted file, headless
 * through libkshark: a converted xentrace capture (host) and a guest file
 * of domain 1 written here with tdat (TRACEID = the id convert derives,
 * identity TIME_SHIFT). libkshark must pair them and find kvm_entry and
 * kvm_exit under each vCPU's pseudo pid, on a stream with the pCPU count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libkshark.h>
#include <libkshark-tepdata.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"
#include "xtgen.h"

static char tmpdir[] = "/tmp/tcx-kshark-XXXXXX";

/* The guest: domain 1's own trace, one CPU per vCPU, in host TSC. */
static void write_guest(const char *path, const struct xtgen_truth *t, uint32_t mult,
			uint32_t shift)
{
	struct tdat_params tp = { .version = 7, .max_cpus = 2, .cpus = 2, .clock = "x86-tsc" };
	struct tdat_writer *w = tdat_open(path, &tp);
	const struct rec_event *sw = rec_event_at(0);
	uint64_t ts[2] = { t->first_tsc, t->last_tsc };
	int64_t off[2] = { 0, 0 }, scale[2] = { 1, 1 }, frac[2] = { 0, 0 };
	struct tdat_time_shift_cpu cpus[2];
	uint8_t b[REC_MAX_PAYLOAD];
	char text[4096];

	assert_non_null(w);
	assert_string_equal(sw->name, "sched_switch");
	assert_true(rec_event_format(sw, text, sizeof(text)) > 0);
	assert_int_equal(tdat_add_event_format(w, "sched", text), 0);
	assert_int_equal(tdat_add_cmdline(w, 1234, "bash"), 0);
	assert_int_equal(tdat_set_traceid(w, rec_guest_traceid(1)), 0);
	assert_int_equal(tdat_set_tsc2nsec(w, mult, shift, 0), 0);
	for (int c = 0; c < 2; c++)
		cpus[c] = (struct tdat_time_shift_cpu){ 2, ts, off, scale, frac };
	assert_int_equal(tdat_set_time_shift(w, 0x58454e484f535400ull, 0, 2, cpus), 0);
	assert_int_equal(tdat_start_data(w), 0);
	for (int c = 0; c < 2; c++) {
		for (uint64_t k = 1; k < 20; k++) {
			uint64_t at = t->first_tsc + (t->last_tsc - t->first_tsc) * k / 20;

			rec_encode_sched_switch(b, k & 1 ? 0 : 1234, k & 1 ? "swapper" : "bash", 1,
						k & 1 ? 1234 : 0, k & 1 ? "bash" : "swapper");
			assert_int_equal(tdat_write_event(w, c, at, b, REC_SCHED_SWITCH_SIZE), 0);
		}
	}
	assert_int_equal(tdat_close(w), 0);
}

static void test_combo(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct rec_convert_summary sum;
	struct kshark_context *ctx = NULL;
	struct kshark_host_guest_map *map = NULL;
	struct kshark_entry **rows = NULL;
	char in[256], host[256], guest[256];
	struct rec_convert_opts o = { .input = in, .output = host, .hz = 2400000000ull };
	int sd_host, sd_guest, n, found = -1;
	uint64_t entries[2] = { 0 }, exits[2] = { 0 };
	ssize_t nrows;
	FILE *f;

	xtgen_defaults(&p);
	p.ncpus = 2;
	p.ndoms = 2;
	p.epochs = 8;
	snprintf(in, sizeof(in), "%s/host.bin", tmpdir);
	snprintf(host, sizeof(host), "%s/host.dat", tmpdir);
	snprintf(guest, sizeof(guest), "%s/guest.dat", tmpdir);
	f = fopen(in, "w");
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	fclose(f);
	assert_int_equal(rec_convert(&o, &sum), 0);
	write_guest(guest, t, sum.mult, sum.shift);

	assert_true(kshark_instance(&ctx));
	sd_host = kshark_open(ctx, host);
	sd_guest = kshark_open(ctx, guest);
	assert_true(sd_host >= 0);
	assert_true(sd_guest >= 0);
	/* CPU plots need the pCPU count */
	assert_int_equal(kshark_get_data_stream(ctx, sd_host)->n_cpus, 2);
	/* the combo plugin loads only if both events exist in the host */
	assert_true(kshark_find_event_id(kshark_get_data_stream(ctx, sd_host), "kvm/kvm_entry") >= 0);
	assert_true(kshark_find_event_id(kshark_get_data_stream(ctx, sd_host), "kvm/kvm_exit") >= 0);

	n = kshark_tracecmd_get_hostguest_mapping(&map);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		if (map[i].guest_id == sd_guest && map[i].host_id == sd_host)
			found = i;
	assert_true(found >= 0);
	assert_string_equal(map[found].guest_name, "d1");
	assert_int_equal(map[found].vcpu_count, 2);
	for (int v = 0; v < 2; v++)
		assert_int_equal(map[found].cpu_pid[v], (1 << 16 | v) + 1);

	/* entries the combo view draws: kvm_entry/kvm_exit of each vCPU's pid */
	nrows = kshark_load_entries(ctx, sd_host, &rows);
	assert_true(nrows > 0);
	for (ssize_t i = 0; i < nrows; i++) {
		char *name = kshark_get_event_name(rows[i]);

		for (int v = 0; v < 2; v++) {
			if (rows[i]->pid != map[found].cpu_pid[v] || !name)
				continue;
			if (!strcmp(name, "kvm/kvm_entry"))
				entries[v]++;
			else if (!strcmp(name, "kvm/kvm_exit"))
				exits[v]++;
		}
		free(name);
		free(rows[i]);
	}
	free(rows);
	for (int v = 0; v < 2; v++) {
		assert_true(entries[v] > 0);
		assert_true(exits[v] > 0);
	}
	kshark_tracecmd_free_hostguest_map(map, n);
	kshark_close_all(ctx);
	kshark_free(ctx);
	rec_convert_summary_free(&sum);
	free(t);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_combo),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
