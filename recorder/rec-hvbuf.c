// SPDX-License-Identifier: GPL-2.0
/*
 * The hypervisor's trace buffers, consumed from dom0 as Xen's protocol
 * requires (as xentrace does, tools/xentrace/xentrace.c in Xen): claim VIRQ_TBUF first (one consumer
 * per host), set the masks, enable, map t_info and every pCPU buffer, then
 * per pCPU read prod and cons once, a read barrier, hand out the window
 * (two pieces when it wraps), a full barrier and cons = prod.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xenctrl.h>
#include <xenevtchn.h>
#include <xenforeignmemory.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"

#define PAGE		4096u
#define TRC_ALL_MASK	0x0ffff000u	/* Xen's default event mask */

struct pcpu_buf {
	struct t_buf	*buf;		/* NULL: no buffer (offline at allocation) */
	uint8_t		*data;
	uint32_t	size;		/* X: data bytes */
};

struct rec_hvbuf {
	xc_interface		*xch;
	xenforeignmemory_handle	*fmem;
	xenevtchn_handle	*xce;
	xenevtchn_port_or_error_t port;
	void			*tinfo;
	size_t			tinfo_pages;
	struct pcpu_buf		*cpu;
	int			ncpus;
	unsigned int		pages;
	uint32_t		cpu_khz;
	bool			enabled;
	bool			masked;	/* we changed the masks */
	xc_domaininfo_t		*dominfo;	/* rec_hvbuf_domains()' slice */
	uint64_t		bytes;
};

/* tcx_fail() with errno (EIO if none) as the error. */
__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	int e = errno;
	char buf[TCX_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return tcx_fail(e ? -e : -EIO, "%s", buf);
}

/* Why a privileged call failed, in the user's terms. */
static const char *why(int e)
{
	switch (e) {
	case EPERM:
	case EACCES:
		return "permission denied: run as root in dom0";
	case ENOSYS:
	case EOPNOTSUPP:
		return "trace buffers are compiled out of this hypervisor (CONFIG_TRACEBUFFER=n)";
	default:
		return strerror(e);
	}
}

/* dom0 says so in /proc/xen/capabilities; a guest's file is empty. */
static int check_dom0(void)
{
	char buf[128] = "";
	FILE *f = fopen("/proc/xen/capabilities", "r");

	if (!f)
		return 0;	/* no xenfs (or the simulator): the calls will tell */
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (!strstr(buf, "control_d")) {
		errno = EPERM;
		return fail("not dom0: /proc/xen/capabilities lacks control_d "
			    "(record --xen runs in dom0; guests use 'agent --xen')");
	}
	return 0;
}

static int map_buffers(struct rec_hvbuf *h, unsigned long mfn, unsigned long tsize)
{
	const struct t_info *ti;
	const uint32_t *words;
	xen_pfn_t *pfns;

	h->tinfo_pages = (tsize + PAGE - 1) / PAGE;
	pfns = calloc(h->tinfo_pages > 65535 ? h->tinfo_pages : 65535, sizeof(*pfns));
	if (!pfns)
		return fail("out of memory");
	for (size_t i = 0; i < h->tinfo_pages; i++)
		pfns[i] = mfn + i;
	h->tinfo = xenforeignmemory_map(h->fmem, DOMID_XEN, PROT_READ, h->tinfo_pages,
					pfns, NULL);
	if (!h->tinfo) {
		free(pfns);
		h->tinfo_pages = 0;
		return fail("cannot map the trace buffer index: %s", why(errno));
	}
	ti = h->tinfo;
	words = h->tinfo;
	h->pages = ti->tbuf_size;
	for (int c = 0; c < h->ncpus; c++) {
		uint16_t off = ti->mfn_offset[c];
		void *p;

		if (!off)
			continue;
		if ((off + (size_t)h->pages) * 4 > h->tinfo_pages * PAGE) {
			free(pfns);
			errno = EPROTO;
			return fail("pCPU %d: MFN list beyond t_info", c);
		}
		for (unsigned int i = 0; i < h->pages; i++)
			pfns[i] = words[off + i];
		p = xenforeignmemory_map(h->fmem, DOMID_XEN, PROT_READ | PROT_WRITE,
					 h->pages, pfns, NULL);
		if (!p) {
			free(pfns);
			return fail("cannot map pCPU %d's trace buffer: %s", c,
				    why(errno));
		}
		h->cpu[c].buf = p;
		h->cpu[c].data = (uint8_t *)p + sizeof(struct t_buf);
		h->cpu[c].size = h->pages * PAGE - sizeof(struct t_buf);
	}
	free(pfns);
	return 0;
}

int rec_hvbuf_open(struct rec_hvbuf **out, const struct rec_hvbuf_opts *o)
{
	struct rec_hvbuf *h;
	xc_physinfo_t pi;
	unsigned long mfn = 0, tsize = 0;
	int ret;

	*out = NULL;
	ret = check_dom0();
	if (ret)
		return ret;
	h = calloc(1, sizeof(*h));
	if (!h)
		return tcx_fail(-ENOMEM, "out of memory");
	h->port = -1;
	errno = 0;
	h->xch = xc_interface_open(NULL, NULL, 0);
	if (!h->xch) {
		ret = fail("cannot open the Xen control interface (%s): "
			   "not running on Xen, or not dom0, or not root", why(errno));
		goto out;
	}
	if (xc_physinfo(h->xch, &pi)) {
		ret = fail("xc_physinfo: %s%s", why(errno),
			   errno == EPERM ? " (not dom0?)" : "");
		goto out;
	}
	h->ncpus = pi.max_cpu_id + 1;
	h->cpu_khz = pi.cpu_khz;
	if (h->ncpus < 1 || h->ncpus > REC_MAX_CPUS) {
		errno = ERANGE;
		ret = fail("xc_physinfo: %d pCPUs", h->ncpus);
		goto out;
	}
	h->cpu = calloc(h->ncpus, sizeof(*h->cpu));
	h->fmem = xenforeignmemory_open(NULL, 0);
	h->xce = xenevtchn_open(NULL, 0);
	if (!h->cpu || !h->fmem || !h->xce) {
		ret = fail("cannot open the Xen foreign-memory or event-channel "
			   "device: %s", why(errno));
		goto out;
	}
	/* Claim the consumer's VIRQ before touching anything shared. */
	h->port = xenevtchn_bind_virq(h->xce, VIRQ_TBUF);
	if (h->port < 0) {
		if (errno == EEXIST || errno == EBUSY)
			ret = fail("another trace consumer (xentrace?) is already "
				   "bound to VIRQ_TBUF on this host: one consumer per host; "
				   "stop it first");
		else
			ret = fail("cannot bind VIRQ_TBUF: %s", why(errno));
		goto out;
	}
	if (xc_tbuf_set_evt_mask(h->xch, o->evt_mask ? o->evt_mask : TRC_ALL_MASK)) {
		ret = fail("cannot set the event mask: %s", why(errno));
		goto out;
	}
	h->masked = true;
	if (o->cpumap) {
		xc_cpumap_t map = xc_cpumap_alloc(h->xch);

		if (!map) {
			ret = fail("out of memory");
			goto out;
		}
		for (int c = 0; c < h->ncpus && c < REC_MAX_CPUS; c++)
			if (o->cpumap[c / 8] & (1u << (c % 8)))
				xc_cpumap_setcpu(c, map);
		ret = xc_tbuf_set_cpu_mask(h->xch, map);
		free(map);
		if (ret) {
			ret = fail("cannot set the pCPU mask: %s", why(errno));
			goto out;
		}
	}
	if (xc_tbuf_enable(h->xch, o->pages ? o->pages : REC_HV_DEFAULT_PAGES, &mfn, &tsize)) {
		ret = fail("cannot enable the trace buffers: %s", why(errno));
		goto out;
	}
	h->enabled = true;
	if (!mfn || !tsize) {
		errno = ENODEV;
		ret = fail("the hypervisor gave no trace buffer index");
		goto out;
	}
	ret = map_buffers(h, mfn, tsize);
	if (ret)
		goto out;
	if (o->discard)
		for (int c = 0; c < h->ncpus; c++)
			if (h->cpu[c].buf)
				__atomic_store_n(&h->cpu[c].buf->cons,
						 __atomic_load_n(&h->cpu[c].buf->prod,
								 __ATOMIC_ACQUIRE),
						 __ATOMIC_SEQ_CST);
	*out = h;
	return 0;
out:
	rec_hvbuf_close(h);
	return ret;
}

int rec_hvbuf_set_evt_mask(struct rec_hvbuf *h, uint32_t mask)
{
	return xc_tbuf_set_evt_mask(h->xch, mask) ? -errno : 0;
}

int rec_hvbuf_ncpus(const struct rec_hvbuf *h)
{
	return h->ncpus;
}

bool rec_hvbuf_has_cpu(const struct rec_hvbuf *h, int cpu)
{
	return cpu >= 0 && cpu < h->ncpus && h->cpu[cpu].buf;
}

unsigned int rec_hvbuf_pages(const struct rec_hvbuf *h)
{
	return h->pages;
}

void rec_hvbuf_xen_version(const struct rec_hvbuf *h, char *buf, size_t len)
{
	xen_extraversion_t extra = "";
	int v = h && h->xch ? xc_version(h->xch, XENVER_version, NULL) : -1;

	buf[0] = 0;
	if (v < 0)
		return;
	if (xc_version(h->xch, XENVER_extraversion, &extra) < 0)
		extra[0] = 0;
	extra[sizeof(extra) - 1] = 0;
	snprintf(buf, len, "%d.%d%s", v >> 16, v & 0xffff, extra);
}

uint32_t rec_hvbuf_cpu_khz(const struct rec_hvbuf *h)
{
	return h->cpu_khz;
}

uint64_t rec_hvbuf_bytes(const struct rec_hvbuf *h)
{
	return h->bytes;
}

int rec_hvbuf_drain(struct rec_hvbuf *h, rec_window_fn fn, void *ctx)
{
	int ret = 0;

	for (int c = 0; c < h->ncpus; c++) {
		struct pcpu_buf *b = &h->cpu[c];
		uint32_t prod, cons, x2, used, start, first;

		if (!b->buf)
			continue;
		cons = __atomic_load_n(&b->buf->cons, __ATOMIC_RELAXED);
		prod = __atomic_load_n(&b->buf->prod, __ATOMIC_RELAXED);
		/* the records up to prod are visible once prod is */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (prod == cons)
			continue;
		x2 = 2 * b->size;
		used = prod >= cons ? prod - cons : prod + x2 - cons;
		if (prod >= x2 || cons >= x2 || (prod | cons) & 3 || used > b->size)
			/* Xen disables tracing on such counters: say so, touch nothing */
			return tcx_fail(-EPROTO, "the hypervisor's buffer counters are corrupt "
					"(pCPU %d: prod %u, cons %u in a %u-byte buffer): "
					"tracing stopped", c, prod, cons, b->size);
		start = cons % b->size;
		first = b->size - start < used ? b->size - start : used;
		ret = fn(ctx, c, b->data + start, first, b->data, used - first);
		/* done reading before Xen may reuse the space */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&b->buf->cons, prod, __ATOMIC_RELAXED);
		h->bytes += used;
		if (ret < 0)
			return ret;
	}
	return 0;
}

int rec_hvbuf_fd(const struct rec_hvbuf *h)
{
	return xenevtchn_fd(h->xce);
}

void rec_hvbuf_ack(struct rec_hvbuf *h)
{
	xenevtchn_port_or_error_t p = xenevtchn_pending(h->xce);

	if (p >= 0)
		xenevtchn_unmask(h->xce, p);
}

int rec_hvbuf_stop(struct rec_hvbuf *h)
{
	int ret = 0;

	if (h->enabled && xc_tbuf_disable(h->xch))
		ret = -errno;
	h->enabled = false;
	return ret;
}

/* Domains asked for per hypercall: the list is read in slices this long. */
#define DOM_SLICE	64

int rec_hvbuf_domains(struct rec_hvbuf *h, struct rec_hvdom *out, int max)
{
	uint32_t first = 0;
	int n = 0;

	/* kept: a refresh a second must not map and fault a new buffer each time */
	if (!h->dominfo) {
		h->dominfo = calloc(DOM_SLICE, sizeof(*h->dominfo));
		if (!h->dominfo)
			return -ENOMEM;
	}
	while (n < max) {
		int want = max - n < DOM_SLICE ? max - n : DOM_SLICE;
		int got = xc_domain_getinfolist(h->xch, first, want, h->dominfo);

		if (got < 0)
			return -errno;
		for (int i = 0; i < got; i++, n++) {
			const xc_domaininfo_t *info = &h->dominfo[i];

			out[n].dom = info->domain;
			out[n].nvcpus = info->max_vcpu_id + 1;
			out[n].hvm = !!(info->flags & XEN_DOMINF_hvm_guest);
			out[n].dying = !!(info->flags & (XEN_DOMINF_dying | XEN_DOMINF_shutdown));
		}
		if (got < want)
			break;
		first = h->dominfo[got - 1].domain + 1;
	}
	return n;
}

void rec_hvbuf_close(struct rec_hvbuf *h)
{
	if (!h)
		return;
	if (h->xch) {
		rec_hvbuf_stop(h);
		/* Xen's defaults: the mask before us cannot be read back */
		if (h->masked) {
			xc_cpumap_t map = xc_cpumap_alloc(h->xch);

			xc_tbuf_set_evt_mask(h->xch, TRC_ALL_MASK);
			if (map) {
				for (int c = 0; c < h->ncpus; c++)
					xc_cpumap_setcpu(c, map);
				xc_tbuf_set_cpu_mask(h->xch, map);
				free(map);
			}
		}
	}
	for (int c = 0; h->cpu && c < h->ncpus; c++)
		if (h->cpu[c].buf)
			xenforeignmemory_unmap(h->fmem, h->cpu[c].buf, h->pages);
	if (h->tinfo)
		xenforeignmemory_unmap(h->fmem, h->tinfo, h->tinfo_pages);
	if (h->port >= 0)
		xenevtchn_unbind(h->xce, h->port);
	if (h->xce)
		xenevtchn_close(h->xce);
	if (h->fmem)
		xenforeignmemory_close(h->fmem);
	if (h->xch)
		xc_interface_close(h->xch);
	free(h->dominfo);
	free(h->cpu);
	free(h);
}
