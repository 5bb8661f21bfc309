// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the matcher (tsync_match_feed()): an arbitrary
 * sequence of hypervisor records, 16 bytes each, drawn mostly from the
 * events it reads, for four domains; then the solver on the rounds found,
 * with guest marks around each trap. Beyond no crash and no UB: marks are
 * of the watched domain, a trap's entry never before its exit when the
 * records came in TSC order, and the solution brackets the true offset 0.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-tsync-check.h"

#define REC	16
#define DOM	1

static const uint32_t events[] = {
	TSYNC_TRC_VMENTRY, TSYNC_TRC_VMEXIT, TSYNC_TRC_VMEXIT64, TSYNC_TRC_SVM_EXIT,
	TSYNC_TRC_SVM_EXIT64, TSYNC_TRC_VMEXIT | TSYNC_TRC_NESTEDFLAG, TSYNC_TRC_LOST,
	TSYNC_TRC_CPUID, TSYNC_TRC_VMMCALL, TSYNC_TRC_RDTSC, TSYNC_TRC_PV_HCALL_V2,
	TSYNC_TRC_PV_FAULT64, TSYNC_TRC_GUEST | TSYNC_GUEST_EVENT, TSYNC_TRC_GUEST,
};
#define NEV	(sizeof(events) / sizeof(events[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tsync_match *m = tsync_match_new(data && size && data[0] & 1 ? UINT32_MAX : DOM);
	const struct tsync_hmark *hm;
	const struct tsync_vpair *vp;
	struct tsync_gmark *g;
	struct tsync_hmark *h;
	bool ordered = true;
	uint64_t tsc = 1000;
	size_t nh, nv, ng = 0;

	if (!m)
		abort();
	for (size_t off = 1; off + REC <= size; off += REC) {
		const uint8_t *p = data + off;
		struct tsync_hvrec r = { 0 };
		uint16_t step;

		r.event = p[0] < 2 * NEV ? events[p[0] % NEV] : (uint32_t)p[0] << 20 | p[1];
		r.has_tsc = p[1] & 1;
		r.known = !(p[1] & 2);
		r.run = (p[1] >> 2) & 3;
		memcpy(&step, p + 2, 2);
		if (p[1] & 0x80) {
			tsc -= step < tsc ? step : 0;	/* out of order */
			ordered = false;
		} else {
			tsc += step;
		}
		r.tsc = tsc;
		r.dom = p[4] & 3;
		r.vcpu = p[5] & 3;
		r.nr = p[6] % 8;
		/* the marker's leaf, a small round number, then raw words */
		r.w[0] = p[7] & 1 ? TSYNC_CPUID_LEAF : p[7];
		r.w[1] = p[8] & 15;
		memcpy(&r.w[2], p + 9, 4);
		memcpy(&r.w[3], p + 12, 4);
		r.w[4] = p[8];
		if (tsync_match_feed(m, &r) < 0)
			break;
	}
	nh = tsync_match_marks(m, &hm);
	nv = tsync_match_vpairs(m, &vp);
	if (nh > TSYNC_MARKS_MAX || nv > TSYNC_MARKS_MAX)
		abort();
	for (size_t i = 0; i < nh; i++)
		if ((data[0] & 1 ? false : hm[i].dom != DOM) ||
		    (ordered && hm[i].h_entry < hm[i].h_exit))
			abort();
	for (size_t i = 0; i < nv; i++)
		if ((data[0] & 1 ? false : vp[i].dom != DOM) ||
		    (ordered && vp[i].h_entry < vp[i].h_exit))
			abort();
	/*
	 * A guest whose clock is the host's: its marks just around each trap,
	 * for the first trap of each round number (a guest never repeats one).
	 */
	g = calloc(nh ? nh : 1, sizeof(*g));
	h = calloc(nh ? nh : 1, sizeof(*h));
	if (!g || !h)
		abort();
	for (size_t i = 0; i < nh; i++) {
		bool dup = false;

		for (size_t j = 0; j < ng && !dup; j++)
			dup = h[j].seq == hm[i].seq && h[j].vcpu == hm[i].vcpu;
		if (dup)
			continue;
		h[ng] = hm[i];
		g[ng++] = (struct tsync_gmark){ .seq = hm[i].seq, .vcpu = hm[i].vcpu,
						.a = hm[i].h_exit - 1, .b = hm[i].h_entry + 1 };
	}
	if (ordered && ng && !(data[0] & 1)) {
		struct tsync_solve_opts o = { .nvcpu = 4, .keep_first = true,
						.scale = { .ratio = 1 } };
		struct tsync_solution s;

		memset(&s, 0, sizeof(s));
		if (tsync_solve(&o, g, ng, h, ng, &s) == 0) {
			check_solution(&s, 4);
			for (uint32_t e = 0; e < s.nepochs; e++)
				if (s.epochs[e].lo > 0 || s.epochs[e].hi < 0)
					abort();
		}
		tsync_solution_free(&s);
	}
	free(g);
	free(h);
	tsync_match_free(m);
	return 0;
}
