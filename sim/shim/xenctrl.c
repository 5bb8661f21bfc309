// SPDX-License-Identifier: GPL-2.0
/*
 * libxenctrl.so.4.17 on xensim: the calls xentrace and the project make.
 * Anything else is not exported, so a program needing it fails to load
 * instead of misbehaving.
 */
#define XC_WANT_COMPAT_MAP_FOREIGN_API
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xenctrl.h>

#include "xsim-client.h"
#include "xsim.h"

struct xc_interface_core {
	struct xsim_conn conn;
	unsigned int pcpus;
};

xc_interface *xc_interface_open(xentoollog_logger *logger,
				xentoollog_logger *dombuild_logger,
				unsigned open_flags)
{
	xc_interface *xch = calloc(1, sizeof(*xch));
	struct xsim_msg m = { .op = XSIM_OP_PHYSINFO };

	if (!xch)
		return NULL;
	if (xsim_conn_open(&xch->conn, XSIM_KIND_CTRL))
		goto fail;
	if (xsim_call(&xch->conn, &m, NULL, 0, NULL, 0) < 0) {
		xsim_conn_close(&xch->conn);
		goto fail;
	}
	xch->pcpus = m.a[0];
	return xch;
fail:
	free(xch);
	return NULL;
}

int xc_interface_close(xc_interface *xch)
{
	if (!xch)
		return 0;
	xsim_conn_close(&xch->conn);
	free(xch);
	return 0;
}

int xc_physinfo(xc_interface *xch, xc_physinfo_t *info)
{
	struct xsim_msg m = { .op = XSIM_OP_PHYSINFO };

	if (xsim_call(&xch->conn, &m, NULL, 0, NULL, 0) < 0)
		return -1;
	memset(info, 0, sizeof(*info));
	info->threads_per_core = 1;
	info->cores_per_socket = m.a[0];
	info->nr_cpus = m.a[0];
	info->max_cpu_id = m.a[0] - 1;
	info->nr_nodes = 1;
	info->max_node_id = 0;
	info->cpu_khz = m.a[1];
	info->capabilities = XEN_SYSCTL_PHYSCAP_hvm | XEN_SYSCTL_PHYSCAP_pv |
			     XEN_SYSCTL_PHYSCAP_hap;
	info->total_pages = 1u << 20;
	info->free_pages = 1u << 18;
	info->max_mfn = info->total_pages - 1;
	return 0;
}

int xc_get_max_cpus(xc_interface *xch)
{
	return xch->pcpus;
}

int xc_get_max_nodes(xc_interface *xch)
{
	return 1;
}

int xc_get_cpumap_size(xc_interface *xch)
{
	return (xc_get_max_cpus(xch) + 7) / 8;
}

xc_cpumap_t xc_cpumap_alloc(xc_interface *xch)
{
	int sz = xc_get_cpumap_size(xch);

	return sz > 0 ? calloc(1, sz) : NULL;
}

void xc_cpumap_clearcpu(int cpu, xc_cpumap_t map)
{
	map[cpu / 8] &= ~(1u << (cpu % 8));
}

void xc_cpumap_setcpu(int cpu, xc_cpumap_t map)
{
	map[cpu / 8] |= 1u << (cpu % 8);
}

int xc_cpumap_testcpu(int cpu, xc_cpumap_t map)
{
	return (map[cpu / 8] >> (cpu % 8)) & 1;
}

static int tbuf_op(xc_interface *xch, unsigned int cmd, uint64_t val,
		   const void *data, uint32_t len, struct xsim_msg *out)
{
	struct xsim_msg m = { .op = XSIM_OP_TBUF };
	int ret;

	m.a[0] = cmd;
	m.a[1] = val;
	ret = xsim_call(&xch->conn, &m, data, len, NULL, 0);
	if (out)
		*out = m;
	return ret < 0 ? -1 : 0;
}

int xc_tbuf_set_size(xc_interface *xch, unsigned long size)
{
	return tbuf_op(xch, XEN_SYSCTL_TBUFOP_set_size, size, NULL, 0, NULL);
}

int xc_tbuf_enable(xc_interface *xch, unsigned long pages,
		   unsigned long *mfn, unsigned long *size)
{
	struct xsim_msg m;

	/* As libxc: the size is one-shot, so its error is not fatal. */
	(void)xc_tbuf_set_size(xch, pages);
	if (tbuf_op(xch, XEN_SYSCTL_TBUFOP_enable, 0, NULL, 0, NULL))
		return -1;
	if (!tbuf_op(xch, XEN_SYSCTL_TBUFOP_get_info, 0, NULL, 0, &m)) {
		*mfn = m.a[1];
		*size = m.a[2];
	}
	return 0;
}

int xc_tbuf_disable(xc_interface *xch)
{
	return tbuf_op(xch, XEN_SYSCTL_TBUFOP_disable, 0, NULL, 0, NULL);
}

int xc_tbuf_get_size(xc_interface *xch, unsigned long *size)
{
	struct xsim_msg m;
	const struct t_info_hdr { uint16_t tbuf_size; } *ti;
	int rc = -1;

	if (tbuf_op(xch, XEN_SYSCTL_TBUFOP_get_info, 0, NULL, 0, &m))
		return -1;
	if (!m.a[1]) {
		errno = EINVAL;
		return -1;
	}
	ti = xc_map_foreign_range(xch, DOMID_XEN, m.a[2], PROT_READ, m.a[1]);
	if (!ti)
		return -1;
	/* libxc returns pages here, whatever its comment says */
	if (ti->tbuf_size) {
		*size = ti->tbuf_size;
		rc = 0;
	}
	munmap((void *)ti, m.a[2]);
	return rc;
}

int xc_tbuf_set_cpu_mask(xc_interface *xch, xc_cpumap_t mask)
{
	return tbuf_op(xch, XEN_SYSCTL_TBUFOP_set_cpu_mask, xch->pcpus, mask,
		       xc_get_cpumap_size(xch), NULL);
}

int xc_tbuf_set_evt_mask(xc_interface *xch, uint32_t mask)
{
	return tbuf_op(xch, XEN_SYSCTL_TBUFOP_set_evt_mask, mask, NULL, 0,
		       NULL);
}

void *xc_map_foreign_pages(xc_interface *xch, uint32_t dom, int prot,
			   const xen_pfn_t *arr, int num)
{
	uint64_t *mfns;
	void *p;

	if (num <= 0) {
		errno = EINVAL;
		return NULL;
	}
	mfns = malloc(num * sizeof(*mfns));
	if (!mfns)
		return NULL;
	for (int i = 0; i < num; i++)
		mfns[i] = arr[i];
	p = xsim_map(&xch->conn, dom, prot, num, mfns, NULL);
	free(mfns);
	return p;
}

void *xc_map_foreign_range(xc_interface *xch, uint32_t dom, int size,
			   int prot, unsigned long mfn)
{
	int num = (size + XC_PAGE_SIZE - 1) >> XC_PAGE_SHIFT;
	xen_pfn_t *arr;
	void *p;

	if (num <= 0) {
		errno = EINVAL;
		return NULL;
	}
	arr = malloc(num * sizeof(*arr));
	if (!arr)
		return NULL;
	for (int i = 0; i < num; i++)
		arr[i] = mfn + i;
	p = xc_map_foreign_pages(xch, dom, prot, arr, num);
	free(arr);
	return p;
}

void *xc_map_foreign_bulk(xc_interface *xch, uint32_t dom, int prot,
			  const xen_pfn_t *arr, int *err, unsigned int num)
{
	uint64_t *mfns = malloc(num * sizeof(*mfns));
	void *p;

	if (!mfns)
		return NULL;
	for (unsigned int i = 0; i < num; i++)
		mfns[i] = arr[i];
	p = xsim_map(&xch->conn, dom, prot, num, mfns, err);
	free(mfns);
	return p;
}

int xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
			  unsigned int max_domains, xc_domaininfo_t *info)
{
	struct xsim_msg m = { .op = XSIM_OP_DOMINFO };
	struct xsim_wdom *w;
	int n;

	w = malloc(XSIM_MSG_MAX);
	if (!w)
		return -1;
	m.a[0] = first_domain;
	m.a[1] = max_domains;
	n = xsim_call(&xch->conn, &m, NULL, 0, w, XSIM_MSG_MAX);
	for (int i = 0; i < n; i++) {
		xc_domaininfo_t *d = &info[i];

		memset(d, 0, sizeof(*d));
		d->domain = w[i].domid;
		d->flags = w[i].running ? XEN_DOMINF_running : XEN_DOMINF_blocked;
		if (w[i].type != XSIM_PV)
			d->flags |= XEN_DOMINF_hvm_guest | XEN_DOMINF_hap;
		d->tot_pages = d->max_pages = 262144;
		d->cpu_time = w[i].cpu_time_ns;
		d->nr_online_vcpus = w[i].vcpus;
		d->max_vcpu_id = w[i].vcpus - 1;
		d->handle[0] = w[i].domid;
	}
	free(w);
	return n;
}

int xc_domain_get_tsc_info(xc_interface *xch, uint32_t domid,
			   uint32_t *tsc_mode, uint64_t *elapsed_nsec,
			   uint32_t *gtsc_khz, uint32_t *incarnation)
{
	struct xsim_msg m = { .op = XSIM_OP_TSCINFO };

	m.a[0] = domid;
	if (xsim_call(&xch->conn, &m, NULL, 0, NULL, 0) < 0)
		return -1;
	*tsc_mode = m.a[0];
	*elapsed_nsec = 0;
	*gtsc_khz = m.a[1];
	*incarnation = m.a[2];
	return 0;
}

int xc_vcpu_getinfo(xc_interface *xch, uint32_t domid, uint32_t vcpu,
		    xc_vcpuinfo_t *info)
{
	struct xsim_msg m = { .op = XSIM_OP_VCPUINFO };

	m.a[0] = domid;
	m.a[1] = vcpu;
	if (xsim_call(&xch->conn, &m, NULL, 0, NULL, 0) < 0)
		return -1;
	memset(info, 0, sizeof(*info));
	info->vcpu = vcpu;
	info->online = m.a[0];
	info->blocked = m.a[1];
	info->running = m.a[2];
	info->cpu_time = m.a[3];
	info->cpu = m.a[4];
	return 0;
}

/* The version the shim stands in for: 4.17, extra version "-xensim". */
int xc_version(xc_interface *xch, int cmd, void *arg)
{
	(void)xch;
	switch (cmd) {
	case XENVER_version:
		return (4 << 16) | 17;
	case XENVER_extraversion:
		snprintf(arg, sizeof(xen_extraversion_t), ".0-xensim");
		return 0;
	default:
		errno = ENOSYS;
		return -1;
	}
}
