// SPDX-License-Identifier: GPL-2.0
/*
 * The shim libraries as the project calls them: this binary links Debian's
 * libxenctrl/libxenforeignmemory/libxenevtchn/libxencall and runs with
 * LD_LIBRARY_PATH at xensim's, so every call below goes through the
 * simulator exactly as the recorder's will.
 */
#define XC_WANT_COMPAT_MAP_FOREIGN_API
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <xencall.h>
#include <xenctrl.h>
#include <xenevtchn.h>
#include <xenforeignmemory.h>
#include <xenstore.h>
#include <xen/trace.h>
#include <xen/hvm/hvm_op.h>

#include "tlib.h"

/* room for a few hundred ms of the basic host's records */
#define PAGES	64

static struct tlib_sim host;
static struct tlib_truth truth_at_start;

static int setup(void **state)
{
	if (tlib_sim_start(&host, tlib_conf_path("basic.conf")))
		return -1;
	setenv("XENSIM_HOST", host.dir, 1);
	setenv("XENSIM_DOMID", "0", 1);
	/* the header part of the truth is written at start */
	return tlib_truth_load(host.dir, &truth_at_start);
}

static int teardown(void **state)
{
	int ret = tlib_sim_stop(&host);

	tlib_truth_free(&truth_at_start);
	tlib_sim_cleanup(&host);
	return ret;
}

static void test_no_host(void **state)
{
	unsetenv("XENSIM_HOST");
	assert_null(xc_interface_open(NULL, NULL, 0));
	assert_null(xenevtchn_open(NULL, 0));
	setenv("XENSIM_HOST", host.dir, 1);
	setenv("XENSIM_DOMID", "99", 1);	/* no such domain */
	assert_null(xc_interface_open(NULL, NULL, 0));
	assert_int_equal(errno, ESRCH);
	setenv("XENSIM_DOMID", "0", 1);
}

static void test_physinfo(void **state)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xc_physinfo_t pi;
	xc_cpumap_t map;

	assert_non_null(xch);
	assert_int_equal(xc_physinfo(xch, &pi), 0);
	assert_int_equal(pi.nr_cpus, 2);
	assert_int_equal(pi.max_cpu_id, 1);
	assert_int_equal(pi.cpu_khz, truth_at_start.cpu_khz);
	assert_int_equal(xc_get_max_cpus(xch), 2);
	assert_int_equal(xc_get_cpumap_size(xch), 1);
	map = xc_cpumap_alloc(xch);
	assert_non_null(map);
	xc_cpumap_setcpu(1, map);
	assert_true(xc_cpumap_testcpu(1, map));
	assert_false(xc_cpumap_testcpu(0, map));
	free(map);
	assert_int_equal(xc_interface_close(xch), 0);
}

static void test_domains(void **state)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xc_domaininfo_t info[8];
	uint32_t mode, khz, inc;
	uint64_t ns;
	xc_vcpuinfo_t vi;

	assert_non_null(xch);
	assert_int_equal(xc_domain_getinfolist(xch, 0, 8, info), 3);
	assert_int_equal(info[0].domain, 0);
	assert_int_equal(info[1].domain, 1);
	assert_int_equal(info[2].domain, 2);
	assert_false(info[0].flags & XEN_DOMINF_hvm_guest);
	assert_true(info[1].flags & XEN_DOMINF_hvm_guest);	/* HVM */
	assert_true(info[2].flags & XEN_DOMINF_hvm_guest);	/* PVH too */
	assert_int_equal(info[1].nr_online_vcpus, 2);
	assert_int_equal(info[1].max_vcpu_id, 1);
	assert_int_equal(xc_domain_getinfolist(xch, 1, 1, info), 1);
	assert_int_equal(info[0].domain, 1);
	assert_int_equal(xc_domain_getinfolist(xch, 3, 8, info), 0);

	assert_int_equal(xc_domain_get_tsc_info(xch, 1, &mode, &ns, &khz, &inc), 0);
	assert_int_equal(mode, 0);
	assert_int_equal(khz, truth_at_start.cpu_khz);	/* identity ratio */
	assert_int_equal(inc, 0);
	assert_int_equal(xc_domain_get_tsc_info(xch, 7, &mode, &ns, &khz, &inc), -1);

	/* on one of the two pCPUs (vCPUs migrate) */
	assert_int_equal(xc_vcpu_getinfo(xch, 1, 1, &vi), 0);
	assert_int_equal(vi.online, 1);
	assert_true(vi.cpu < 2);
	assert_int_equal(xc_vcpu_getinfo(xch, 1, 5, &vi), -1);
	xc_interface_close(xch);
}

static void test_guest_is_not_privileged(void **state)
{
	xc_interface *xch;
	xc_domaininfo_t info[4];
	unsigned long mfn, size;
	uint32_t mode, khz, inc;
	uint64_t ns;

	setenv("XENSIM_DOMID", "1", 1);
	xch = xc_interface_open(NULL, NULL, 0);
	assert_non_null(xch);
	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(xc_domain_getinfolist(xch, 0, 4, info), -1);
	assert_int_equal(errno, EPERM);
	/* its own TSC parameters, yes; another domain's, no */
	assert_int_equal(xc_domain_get_tsc_info(xch, 1, &mode, &ns, &khz, &inc), 0);
	assert_int_equal(xc_domain_get_tsc_info(xch, 2, &mode, &ns, &khz, &inc), -1);
	xc_interface_close(xch);
	setenv("XENSIM_DOMID", "0", 1);
}

/* Enable, map t_info and the buffers as xentrace does, see records. */
static void test_tbuf_map(void **state)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xenforeignmemory_handle *fmem = xenforeignmemory_open(NULL, 0);
	unsigned long mfn = 0, size = 0, pages = 0;
	const struct t_info *ti;
	const uint32_t *words;
	xen_pfn_t pfns[PAGES];
	struct t_buf *buf[2];
	int err[PAGES];

	assert_non_null(xch);
	assert_non_null(fmem);
	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), 0);
	assert_int_not_equal(mfn, 0);
	assert_int_equal(size, 4096);	/* t_info bytes, not the buffer */
	assert_int_equal(xc_tbuf_get_size(xch, &pages), 0);
	assert_int_equal(pages, PAGES);
	/* one-shot size */
	assert_int_equal(xc_tbuf_set_size(xch, PAGES * 2), -1);
	assert_int_equal(errno, EINVAL);

	/* t_info is read-only */
	assert_null(xc_map_foreign_range(xch, DOMID_XEN, size,
					 PROT_READ | PROT_WRITE, mfn));
	assert_int_equal(errno, EPERM);
	/* only DOMID_XEN's pages are Xen's */
	assert_null(xc_map_foreign_range(xch, 1, size, PROT_READ, mfn));
	ti = xc_map_foreign_range(xch, DOMID_XEN, size, PROT_READ, mfn);
	assert_non_null(ti);
	words = (const uint32_t *)ti;
	assert_int_equal(ti->tbuf_size, PAGES);
	assert_int_equal(ti->mfn_offset[0], 129);
	assert_int_equal(ti->mfn_offset[1], 129 + PAGES);
	assert_int_equal(ti->mfn_offset[2], 0);

	for (int c = 0; c < 2; c++) {
		for (int i = 0; i < PAGES; i++)
			pfns[i] = words[ti->mfn_offset[c] + i];
		buf[c] = xenforeignmemory_map(fmem, DOMID_XEN,
					      PROT_READ | PROT_WRITE, PAGES,
					      pfns, err);
		assert_non_null(buf[c]);
		assert_int_equal(err[0], 0);
	}
	/* an MFN outside Xen's shared pages is refused */
	pfns[0] = 1;
	assert_null(xenforeignmemory_map(fmem, DOMID_XEN, PROT_READ, 1, pfns,
					 err));

	/* the producers are running: prod moves and records parse */
	for (int tries = 0; tries < 200 && buf[0]->prod == buf[0]->cons; tries++)
		usleep(10000);
	assert_int_not_equal(buf[0]->prod, buf[0]->cons);
	{
		const uint32_t *rec = (const uint32_t *)(buf[0] + 1);
		uint32_t ev = rec[buf[0]->cons / 4 % ((PAGES * 4096 - 8) / 4)];

		/* a scheduler, HVM or PV record (class bits one-hot) */
		assert_true((ev & 0x0fffffff) >> 16 != 0);
	}
	assert_int_equal(xenforeignmemory_unmap(fmem, buf[0], PAGES), 0);
	assert_int_equal(xenforeignmemory_unmap(fmem, buf[1], PAGES), 0);
	munmap((void *)ti, size);
	xenforeignmemory_close(fmem);
	xc_interface_close(xch);
}

/* VIRQ_TBUF: one binding per host, delivered at half full, masked until
 * unmasked. Tracing is on from test_tbuf_map; nobody consumes. */
static void test_virq(void **state)
{
	xenevtchn_handle *a = xenevtchn_open(NULL, 0);
	xenevtchn_handle *b = xenevtchn_open(NULL, 0);
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xenforeignmemory_handle *fmem = xenforeignmemory_open(NULL, 0);
	unsigned long mfn, size;
	const struct t_info *ti;
	struct t_buf *buf[2];
	struct pollfd pfd;
	int port;

	assert_non_null(a);
	assert_non_null(b);
	port = xenevtchn_bind_virq(a, VIRQ_TBUF);
	assert_true(port > 0);
	assert_int_equal(xenevtchn_bind_virq(b, VIRQ_TBUF), -1);
	assert_int_equal(errno, EEXIST);

	/* empty both buffers so the next crossing of half full is fresh */
	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), 0);
	ti = xc_map_foreign_range(xch, DOMID_XEN, size, PROT_READ, mfn);
	assert_non_null(ti);
	for (int c = 0; c < 2; c++) {
		xen_pfn_t pfns[PAGES];

		for (int i = 0; i < PAGES; i++)
			pfns[i] = ((const uint32_t *)ti)[ti->mfn_offset[c] + i];
		buf[c] = xenforeignmemory_map(fmem, DOMID_XEN,
					      PROT_READ | PROT_WRITE, PAGES,
					      pfns, NULL);
		assert_non_null(buf[c]);
		buf[c]->cons = buf[c]->prod;
	}

	pfd = (struct pollfd){ .fd = xenevtchn_fd(a), .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(xenevtchn_pending(a), port);
	/* still masked: no second delivery, even after another crossing */
	for (int c = 0; c < 2; c++)
		buf[c]->cons = buf[c]->prod;
	usleep(300 * 1000);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	/* unmask: the crossing that happened meanwhile is delivered */
	assert_int_equal(xenevtchn_unmask(a, port), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(xenevtchn_pending(a), port);
	assert_int_equal(xenevtchn_unmask(a, port), 0);

	/* closing the owner frees VIRQ_TBUF for another consumer */
	xenevtchn_close(a);
	usleep(100 * 1000);
	assert_true(xenevtchn_bind_virq(b, VIRQ_TBUF) > 0);
	xenevtchn_close(b);
	munmap(buf[0], PAGES * 4096);
	munmap(buf[1], PAGES * 4096);
	munmap((void *)ti, size);
	xenforeignmemory_close(fmem);
	xc_interface_close(xch);
}

static void test_disable(void **state)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xenforeignmemory_handle *fmem = xenforeignmemory_open(NULL, 0);
	unsigned long mfn, size;
	const struct t_info *ti;
	struct t_buf *b;
	xen_pfn_t pfns[PAGES];
	uint32_t prod;

	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), 0);
	ti = xc_map_foreign_range(xch, DOMID_XEN, size, PROT_READ, mfn);
	assert_non_null(ti);
	for (int i = 0; i < PAGES; i++)
		pfns[i] = ((const uint32_t *)ti)[ti->mfn_offset[0] + i];
	b = xenforeignmemory_map(fmem, DOMID_XEN, PROT_READ | PROT_WRITE,
				 PAGES, pfns, NULL);
	assert_non_null(b);
	b->cons = b->prod;
	assert_int_equal(xc_tbuf_disable(xch), 0);
	prod = b->prod;
	usleep(200 * 1000);
	assert_int_equal(b->prod, prod);	/* nothing new, data kept */
	/* event mask: only scheduler records once re-enabled */
	assert_int_equal(xc_tbuf_set_evt_mask(xch, TRC_SCHED), 0);
	b->cons = b->prod;
	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), 0);
	usleep(50 * 1000);
	assert_int_equal(xc_tbuf_disable(xch), 0);
	{
		uint32_t x = PAGES * 4096 - 8, pos = b->cons % x;
		uint32_t used = (b->prod + 2 * x - b->cons) % (2 * x);
		const uint8_t *data = (const uint8_t *)(b + 1);
		unsigned int n = 0;

		/* by bytes used: a full ring has pos == end */
		while (used) {
			uint32_t h, sz;

			memcpy(&h, data + pos, 4);
			sz = 4 + (h >> 31 ? 8 : 0) + 4 * ((h >> 28) & 7);
			if ((h & 0x0fffffff) != TRC_TRACE_WRAP_BUFFER &&
			    (h & 0x0fffffff) != TRC_LOST_RECORDS) {
				assert_int_equal((h & 0x0fffffff) >> 16, 0x2);
				n++;
			}
			assert_true(sz <= used);
			used -= sz;
			pos = (pos + sz) % x;
		}
		assert_true(n > 0);
	}
	xc_tbuf_set_evt_mask(xch, TRC_ALL);
	munmap(b, PAGES * 4096);
	munmap((void *)ti, size);
	xenforeignmemory_close(fmem);
	xc_interface_close(xch);
}

/* Map CPU @c's buffer (tracing already set up by earlier tests). */
static struct t_buf *map_buf(xc_interface *xch, xenforeignmemory_handle *fmem,
			     int c)
{
	unsigned long mfn, size;
	const struct t_info *ti;
	xen_pfn_t pfns[PAGES];
	struct t_buf *b;

	assert_int_equal(xc_tbuf_enable(xch, PAGES, &mfn, &size), 0);
	ti = xc_map_foreign_range(xch, DOMID_XEN, size, PROT_READ, mfn);
	assert_non_null(ti);
	for (int i = 0; i < PAGES; i++)
		pfns[i] = ((const uint32_t *)ti)[ti->mfn_offset[c] + i];
	b = xenforeignmemory_map(fmem, DOMID_XEN, PROT_READ | PROT_WRITE,
				 PAGES, pfns, NULL);
	assert_non_null(b);
	munmap((void *)ti, size);
	return b;
}

/*
 * HVMOP_xentrace from a guest lands in the hypervisor buffer of the pCPU
 * running one of its vCPUs: VMEXIT(VMCALL) [T], VMMCALL(hvm_op), GUEST
 * (no TSC) with the payload, VMENTRY [T], back to back.
 */
/* Everything written since the last call, in order, per CPU (as xentrace). */
struct window {
	uint8_t bytes[2][1 << 22];
	uint32_t len[2];
};

static void take(struct t_buf *b[2], struct window *w)
{
	for (int c = 0; c < 2; c++) {
		uint32_t x = PAGES * 4096 - 8, prod = b[c]->prod;
		uint32_t used = (prod + 2 * x - b[c]->cons) % (2 * x);
		uint32_t pos = b[c]->cons % x;
		const uint8_t *data = (const uint8_t *)(b[c] + 1);

		for (uint32_t k = 0; k < used; k++) {
			assert_true(w->len[c] < sizeof(w->bytes[c]));
			w->bytes[c][w->len[c]++] = data[(pos + k) % x];
		}
		b[c]->cons = prod;
	}
}

static void discard(struct t_buf *b[2])
{
	for (int c = 0; c < 2; c++)
		b[c]->cons = b[c]->prod;
}

static void hcall(xencall_handle *xcall, xen_hvm_xentrace_t *tr, int expect)
{
	assert_int_equal(xencall2(xcall, __HYPERVISOR_hvm_op, HVMOP_xentrace,
				  (uintptr_t)tr), expect);
}

/*
 * HVMOP_xentrace lands in the hypervisor buffer of the pCPU running one of
 * the caller's vCPUs: from HVM guest1 VMEXIT(VMCALL) [T], VMMCALL(hvm_op),
 * GUEST (no TSC), EMUL_LAPIC_PIC_INTR [T], VMENTRY [T]; from PV dom0
 * HYPERCALL_V2(hvm_op) [T], GUEST. The test drains around each call, as a
 * consumer would, so the guests' other exits cannot crowd the records out.
 */
static void test_hvmop_xentrace(void **state)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xenforeignmemory_handle *fmem = xenforeignmemory_open(NULL, 0);
	struct window *w = calloc(1, sizeof(*w));
	xencall_handle *xcall;
	xen_hvm_xentrace_t *tr;
	struct t_buf *b[2];
	unsigned int found = 0, seen = 0, pv = 0;

	assert_non_null(xch);
	assert_non_null(fmem);
	assert_non_null(w);
	/* the PV call first, without the guests' HVM exits around it */
	assert_int_equal(xc_tbuf_set_evt_mask(xch, TRC_GUEST | TRC_PV), 0);
	for (int c = 0; c < 2; c++)
		b[c] = map_buf(xch, fmem, c);

	xcall = xencall_open(NULL, 0);
	tr = xencall_alloc_buffer(xcall, sizeof(*tr));
	assert_non_null(tr);
	tr->event = 0x123;
	tr->extra_bytes = 4;
	memcpy(tr->extra, "pv!!", 4);
	discard(b);
	hcall(xcall, tr, 0);
	take(b, w);
	xencall_free_buffer(xcall, tr);
	xencall_close(xcall);

	assert_int_equal(xc_tbuf_set_evt_mask(xch, TRC_HVM | TRC_GUEST), 0);
	setenv("XENSIM_DOMID", "1", 1);
	xcall = xencall_open(NULL, 0);
	setenv("XENSIM_DOMID", "0", 1);
	assert_non_null(xcall);
	tr = xencall_alloc_buffer(xcall, sizeof(*tr));
	tr->event = 0x1000;	/* beyond 12 bits */
	tr->extra_bytes = 4;
	hcall(xcall, tr, -1);
	assert_int_equal(errno, EINVAL);
	for (uint32_t i = 0; i < 5; i++) {
		tr->event = 0x5a;
		tr->extra_bytes = 8;
		memcpy(tr->extra, &i, 4);
		memcpy(tr->extra + 4, "tcx!", 4);
		discard(b);
		hcall(xcall, tr, 0);
		take(b, w);
	}
	xencall_free_buffer(xcall, tr);
	xencall_close(xcall);
	assert_int_equal(xc_tbuf_disable(xch), 0);

	for (int c = 0; c < 2; c++) {
		uint32_t hist[5] = { 0 }, words[5][10], pos = 0;
		const uint8_t *data = w->bytes[c];

		while (pos < w->len[c]) {
			uint32_t h, sz, ev;

			memcpy(&h, data + pos, 4);
			sz = 4 + (h >> 31 ? 8 : 0) + 4 * ((h >> 28) & 7);
			ev = h & 0x0fffffff;
			assert_true(pos + sz <= w->len[c]);
			if (ev != TRC_TRACE_WRAP_BUFFER) {
				memmove(hist, hist + 1, 4 * 4);
				memmove(words, words + 1, 4 * sizeof(words[0]));
				hist[4] = h;
				memcpy(words[4], data + pos + 4, sz - 4);
			}
			/* PV: HYPERCALL_V2(hvm_op) [T], GUEST */
			if (ev == (TRC_GUEST | 0x123)) {
				assert_int_equal(hist[3] & 0x0fffffff,
						 TRC_PV_HYPERCALL_V2);
				assert_int_equal(words[3][2], __HYPERVISOR_hvm_op);
				assert_memory_equal(words[4], "pv!!", 4);
				pv++;
			}
			if (ev == TRC_HVM_VMENTRY &&
			    (hist[2] & 0x0fffffff) == (TRC_GUEST | 0x5a)) {
				uint32_t seq;

				assert_int_equal(hist[0] & 0x0fffffff,
						 TRC_HVM_VMEXIT64);
				assert_true(hist[0] >> 31);
				assert_int_equal(words[0][2], 18);	/* VMCALL */
				assert_int_equal(hist[1] & 0x0fffffff,
						 TRC_HVM_VMMCALL);
				assert_int_equal(words[1][0], __HYPERVISOR_hvm_op);
				assert_false(hist[2] >> 31);	/* no TSC */
				assert_int_equal((hist[2] >> 28) & 7, 2);
				memcpy(&seq, words[2], 4);
				/* either pCPU, whichever ran a vCPU of d1 */
				assert_true(seq < 5 && !(seen & 1u << seq));
				seen |= 1u << seq;
				assert_memory_equal(words[2] + 1, "tcx!", 4);
				assert_int_equal(hist[3] & 0x0fffffff,
						 TRC_HVM_EMUL_LAPIC_PIC_INTR);
				assert_true(h >> 31);
				found++;
			}
			pos += sz;
		}
	}
	for (int c = 0; c < 2; c++)
		munmap(b[c], PAGES * 4096);
	assert_int_equal(found, 5);
	assert_int_equal(seen, 0x1f);
	assert_int_equal(pv, 1);
	xc_tbuf_set_evt_mask(xch, TRC_ALL);
	free(w);
	xenforeignmemory_close(fmem);
	xc_interface_close(xch);
}

static char **next_event(struct xs_handle *xs, unsigned int *num)
{
	struct pollfd p = { .fd = xs_fileno(xs), .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return NULL;
	return xs_read_watch(xs, num);
}

/* xenstore: a libxl host's paths and permissions, guests' data/, watches. */
static void test_xenstore(void **state)
{
	struct xs_handle *d0, *g1;
	unsigned int n, len;
	char **v, *val;
	struct xs_permissions *perms, give[1] = { { 0, XS_PERM_NONE } };

	d0 = xs_open(0);
	assert_non_null(d0);
	v = xs_directory(d0, XBT_NULL, "/local/domain", &n);
	assert_non_null(v);
	assert_int_equal(n, 3);
	free(v);
	val = xs_read(d0, XBT_NULL, "/local/domain/1/name", &len);
	assert_non_null(val);
	assert_string_equal(val, "guest1");
	assert_int_equal(len, 6);
	free(val);
	val = xs_get_domain_path(d0, 2);
	assert_string_equal(val, "/local/domain/2");
	free(val);

	setenv("XENSIM_DOMID", "1", 1);
	g1 = xs_open(0);
	setenv("XENSIM_DOMID", "0", 1);
	assert_non_null(g1);
	/* its own home, relative paths; not other domains */
	val = xs_read(g1, XBT_NULL, "name", &len);
	assert_non_null(val);
	assert_string_equal(val, "guest1");
	free(val);
	assert_null(xs_directory(g1, XBT_NULL, "/local/domain", &n));
	assert_int_equal(errno, EACCES);
	assert_null(xs_read(g1, XBT_NULL, "/local/domain/2/name", &len));
	assert_int_equal(errno, EACCES);
	assert_false(xs_write(g1, XBT_NULL, "name", "evil", 4));
	assert_int_equal(errno, EACCES);

	/* dom0 watches the guest's data/; a new watch fires at once */
	assert_true(xs_watch(d0, "/local/domain/1/data", "tok"));
	v = next_event(d0, &n);
	assert_non_null(v);
	assert_string_equal(v[XS_WATCH_PATH], "/local/domain/1/data");
	assert_string_equal(v[XS_WATCH_TOKEN], "tok");
	free(v);
	assert_true(xs_write(g1, XBT_NULL, "data/tcx/state", "ready", 5));
	v = next_event(d0, &n);
	assert_non_null(v);
	assert_string_equal(v[XS_WATCH_PATH], "/local/domain/1/data/tcx/state");
	free(v);
	/* created by the guest: it owns it, and cannot give it away */
	perms = xs_get_permissions(d0, XBT_NULL, "/local/domain/1/data/tcx/state", &n);
	assert_non_null(perms);
	assert_int_equal(perms[0].id, 1);
	free(perms);
	assert_false(xs_set_permissions(g1, XBT_NULL, "data/tcx/state", give, 1));
	assert_int_equal(errno, EPERM);
	assert_true(xs_rm(g1, XBT_NULL, "data/tcx"));
	v = next_event(d0, &n);
	assert_non_null(v);
	assert_string_equal(v[XS_WATCH_PATH], "/local/domain/1/data/tcx");
	free(v);
	assert_null(xs_read(d0, XBT_NULL, "/local/domain/1/data/tcx/state", &len));
	assert_int_equal(errno, ENOENT);
	assert_true(xs_unwatch(d0, "/local/domain/1/data", "tok"));
	assert_true(xs_write(g1, XBT_NULL, "data/x", "1", 1));
	assert_null(xs_check_watch(d0));
	xs_close(g1);
	xs_close(d0);
}

static void test_xencall(void **state)
{
	xencall_handle *xc = xencall_open(NULL, 0);
	void *p;

	assert_non_null(xc);
	p = xencall_alloc_buffer(xc, 100);
	assert_non_null(p);
	memset(p, 0xab, 100);
	/* unmodelled hypercalls fail as unknown ones do on Xen */
	assert_int_equal(xencall1(xc, 17 /* xen_version */, 0), -1);
	assert_int_equal(errno, ENOSYS);
	xencall_free_buffer(xc, p);
	xencall_close(xc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_host),
		cmocka_unit_test(test_physinfo),
		cmocka_unit_test(test_domains),
		cmocka_unit_test(test_guest_is_not_privileged),
		cmocka_unit_test(test_tbuf_map),
		cmocka_unit_test(test_virq),
		cmocka_unit_test(test_disable),
		cmocka_unit_test(test_hvmop_xentrace),
		cmocka_unit_test(test_xenstore),
		cmocka_unit_test(test_xencall),
	};

	return cmocka_run_group_tests_name("xensim shim libraries", tests,
					   setup, teardown);
}
