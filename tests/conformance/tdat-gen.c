// SPDX-License-Identifier: GPL-2.0
/*
 * tdat-gen: writes the conformance files with the tdat writer.
 *
 *   tdat-gen plain FILE VERSION N NCPU    the gen-seq.h sequence, local clock
 *   tdat-gen host FILE VERSION            Xen-style host: pCPUs, vCPU tasks, GUEST
 *   tdat-gen guest FILE VERSION [noshift] guest: TRACEID, TIME_SHIFT (v7: appended
 *                                         after close, as trace-cmd does)
 *   tdat-gen tshift FILE 7                append the guest's TIME_SHIFT to any v7
 *                                         file (one written by trace-cmd too)
 *   tdat-gen crash FILE VERSION N M [NCPU [REGION]]
 *                                         N events flushed, M more, then SIGKILL
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcx-util.h"
#include "tdat.h"
#include "gen-seq.h"

#define COMMON \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char fmt_seq[] =
	"name: xen_seq\nID: 5001\nformat:\n" COMMON
	"\tfield:u64 val;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"val=%llu\", REC->val\n";

static const char fmt_switch[] =
	"name: sched_switch\nID: 316\nformat:\n" COMMON
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", "
	"REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1)) ? "
	"__print_flags(REC->prev_state & ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1), \"|\", "
	"{ 0x0001, \"S\" }, { 0x0002, \"D\" }) : \"R\", REC->prev_state & (((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) ? \"+\" : \"\", "
	"REC->next_comm, REC->next_pid, REC->next_prio\n";

static const char fmt_entry[] =
	"name: kvm_entry\nID: 400\nformat:\n" COMMON
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"vcpu %u, rip 0x%lx\", REC->vcpu_id, REC->rip\n";

static const char fmt_exit[] =
	"name: kvm_exit\nID: 401\nformat:\n" COMMON
	"\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:u64 info1;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 info2;\toffset:40;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"reason %u rip 0x%lx\", REC->exit_reason, REC->guest_rip\n";

static struct tdat_writer *w;

static void die(const char *what)
{
	fprintf(stderr, "tdat-gen: %s: %s\n", what, tcx_error());
	exit(1);
}

static void ck(int ret, const char *what)
{
	if (ret < 0)
		die(what);
}

static void hdr(uint8_t *p, uint16_t id, int32_t pid)
{
	memcpy(p, &id, 2);
	p[2] = p[3] = 0;
	memcpy(p + 4, &pid, 4);
}

static void seq_event(int i, int ncpu)
{
	uint8_t p[256] = {0};
	uint64_t v = i;

	hdr(p, SEQ_ID, SEQ_PID);
	memcpy(p + 8, &v, 8);
	ck(tdat_write_event(w, seq_cpu(i, ncpu), seq_ts(i), p, seq_len(i)), "event");
}

static void create(const char *path, int version, int cpus, const char *clock, uint64_t region)
{
	struct tdat_params pa = { .version = version, .max_cpus = 64, .cpus = cpus,
				  .clock = clock, .region_size = region };

	w = tdat_open(path, &pa);
	if (!w)
		die(path);
}

static int gen_plain(const char *path, int version, int n, int ncpu, uint64_t region)
{
	int i;

	create(path, version, ncpu, NULL, region);
	ck(tdat_add_event_format(w, SEQ_SYSTEM, fmt_seq), "format");
	ck(tdat_add_cmdline(w, SEQ_PID, SEQ_COMM), "cmdline");
	ck(tdat_set_traceid(w, 0xfeedull), "traceid");
	for (i = 0; i < ncpu; i++)
		ck(tdat_add_cpustat(w, i, "entries: 1\noverrun: 0\n"), "cpustat");
	ck(tdat_start_data(w), "start");
	for (i = 0; i < n; i++) {
		if (i == SEQ_LOST_AT)
			ck(tdat_mark_missed(w, seq_cpu(i, ncpu), SEQ_LOST), "missed");
		seq_event(i, ncpu);
	}
	ck(tdat_close(w), "close");
	return 0;
}

static int gen_crash(const char *path, int version, int n, int m, int ncpu, uint64_t region)
{
	int i;

	create(path, version, ncpu, NULL, region);
	ck(tdat_add_event_format(w, SEQ_SYSTEM, fmt_seq), "format");
	ck(tdat_add_cmdline(w, SEQ_PID, SEQ_COMM), "cmdline");
	ck(tdat_start_data(w), "start");
	for (i = 0; i < n; i++)
		seq_event(i, ncpu);
	ck(tdat_flush(w), "flush");
	/* fewer than a batch: these stay in memory and die with us */
	for (; i < n + m; i++)
		seq_event(i, ncpu);
	fflush(NULL);
	raise(SIGKILL);
	return 1;
}

/*
 * Version 7, the cmdline given after tdat_start_data(): written at close
 * after the data; with @kill, the writer dies after a flush instead.
 */
static int gen_latecmd(const char *path, int n, bool kill)
{
	int i;

	create(path, 7, 2, NULL, 4096);
	ck(tdat_add_event_format(w, SEQ_SYSTEM, fmt_seq), "format");
	ck(tdat_start_data(w), "start");
	for (i = 0; i < n; i++)
		seq_event(i, 2);
	ck(tdat_add_cmdline(w, SEQ_PID, SEQ_COMM), "late cmdline");
	ck(tdat_add_guest(w, "guest1", HG_GUEST_ID, 1, (uint32_t[]){ SEQ_PID }), "late guest");
	if (kill) {
		ck(tdat_flush(w), "flush");
		fflush(NULL);
		raise(SIGKILL);
	}
	ck(tdat_close(w), "close");
	return 0;
}

static void tsc_common(void)
{
	ck(tdat_set_tsc2nsec(w, HG_TSC_MULT, HG_TSC_SHIFT, 0), "tsc2nsec");
	ck(tdat_set_uname(w, "Xen 4.17 simulated x86_64"), "uname");
}

static int gen_host(const char *path, int version)
{
	uint32_t pids[HG_NVCPU] = { HG_PID(0), HG_PID(1) };
	int i;

	create(path, version, 2, "x86-tsc", 0);
	ck(tdat_add_event_format(w, "sched", fmt_switch), "format");
	ck(tdat_add_event_format(w, "kvm", fmt_entry), "format");
	ck(tdat_add_event_format(w, "kvm", fmt_exit), "format");
	ck(tdat_add_cmdline(w, HG_PID(0), "d1v0"), "cmdline");
	ck(tdat_add_cmdline(w, HG_PID(1), "d1v1"), "cmdline");
	ck(tdat_set_traceid(w, HG_HOST_ID), "traceid");
	ck(tdat_add_guest(w, "guest1", HG_GUEST_ID, HG_NVCPU, pids), "guest");
	tsc_common();
	ck(tdat_start_data(w), "start");
	for (i = 0; i < HG_EVENTS; i++) {
		uint8_t p[64] = {0};
		int v = i & 1, pid = HG_PID(v);
		uint64_t rip = 0xffffffff81000000ull + i;

		if (i % 2 == 0) {
			uint32_t vcpu = v;

			hdr(p, 400, pid);
			memcpy(p + 8, &vcpu, 4);
			memcpy(p + 16, &rip, 8);
			ck(tdat_write_event(w, (i / 2) & 1, hg_host_ts(i), p, 24), "entry");
		} else {
			uint32_t reason = 1, isa = 1;

			hdr(p, 401, pid);
			memcpy(p + 8, &reason, 4);
			memcpy(p + 16, &rip, 8);
			memcpy(p + 24, &isa, 4);
			ck(tdat_write_event(w, (i / 2) & 1, hg_host_ts(i), p, 48), "exit");
		}
	}
	ck(tdat_close(w), "close");
	return 0;
}

static void fill_shift(struct tdat_time_shift_cpu *c)
{
	int v;

	for (v = 0; v < HG_NVCPU; v++)
		c[v] = (struct tdat_time_shift_cpu){ 2, hg_ts_t[v], hg_ts_off[v],
						     hg_ts_scale[v], hg_ts_frac[v] };
}

static int append_shift(const char *path)
{
	struct tdat_time_shift_cpu c[HG_NVCPU];
	struct tdat_appender *a;

	fill_shift(c);
	a = tdat_append_open(path);
	if (!a || tdat_append_time_shift(a, HG_HOST_ID, TDAT_TSHIFT_INTERPOLATE,
					 HG_NVCPU, c) || tdat_append_close(a)) {
		fprintf(stderr, "tdat-gen: append: %s\n", tcx_error());
		return 1;
	}
	return 0;
}

static int gen_guest(const char *path, int version, bool shift)
{
	struct tdat_time_shift_cpu c[HG_NVCPU];
	int i;

	fill_shift(c);
	create(path, version, HG_NVCPU, "x86-tsc", 0);
	ck(tdat_add_event_format(w, SEQ_SYSTEM, fmt_seq), "format");
	ck(tdat_add_cmdline(w, SEQ_PID, SEQ_COMM), "cmdline");
	ck(tdat_set_traceid(w, HG_GUEST_ID), "traceid");
	tsc_common();
	/* a version 6 file cannot take options after its data */
	if (version == 6 && shift)
		ck(tdat_set_time_shift(w, HG_HOST_ID, TDAT_TSHIFT_INTERPOLATE, HG_NVCPU, c), "tshift");
	ck(tdat_start_data(w), "start");
	for (i = 0; i < HG_EVENTS; i++) {
		uint8_t p[16] = {0};
		uint64_t v = i;

		hdr(p, SEQ_ID, SEQ_PID);
		memcpy(p + 8, &v, 8);
		ck(tdat_write_event(w, hg_guest_cpu(i), hg_guest_ts(i), p, 16), "event");
	}
	ck(tdat_close(w), "close");
	w = NULL;
	return version == 7 && shift ? append_shift(path) : 0;
}

int main(int argc, char **argv)
{
	int version;

	if (argc < 4)
		goto usage;
	version = atoi(argv[3]);
	if (!strcmp(argv[1], "plain") && argc >= 6)
		return gen_plain(argv[2], version, atoi(argv[4]), atoi(argv[5]),
				 argc > 6 ? strtoull(argv[6], NULL, 0) : 0);
	if (!strcmp(argv[1], "crash") && argc >= 6)
		return gen_crash(argv[2], version, atoi(argv[4]), atoi(argv[5]),
				 argc > 6 ? atoi(argv[6]) : 2,
				 argc > 7 ? strtoull(argv[7], NULL, 0) : 4096);
	if (!strcmp(argv[1], "latecmd") && argc >= 5)
		return gen_latecmd(argv[2], atoi(argv[4]), argc > 5 && !strcmp(argv[5], "kill"));
	if (!strcmp(argv[1], "host"))
		return gen_host(argv[2], version);
	if (!strcmp(argv[1], "guest"))
		return gen_guest(argv[2], version, !(argc > 4 && !strcmp(argv[4], "noshift")));
	if (!strcmp(argv[1], "tshift"))
		return append_shift(argv[2]);
usage:
	fprintf(stderr, "usage: tdat-gen plain|crash|latecmd|host|guest FILE VERSION [args]\n");
	return 2;
}
