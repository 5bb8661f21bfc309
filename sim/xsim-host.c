// SPDX-License-Identifier: GPL-2.0
/*
 * The running host: machine memory (a memfd shared with the shim libraries),
 * Xen's trace buffers in it, the guests' tracefs directories, xenstore, the
 * scheduler threads and the ground-truth log. serve.c answers the control
 * socket.
 */
/* sysctl.h is a tools-only header */
#define __XEN_TOOLS__ 1

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdint.h>
#include <xen/xen.h>

#include "xsim-internal.h"
#include "xsim-xs.h"

static void notify_cb(void *arg)
{
	struct xsim_host *h = arg;
	uint64_t one = 1;

	/* Xen defers the VIRQ to a tasklet; the serve loop is ours. */
	if (write(h->notify_fd, &one, sizeof(one)) < 0)
		return;
}

static char *path_in(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* The control socket @dir/ctl, listening. Returns its fd, or -errno. */
static int listen_on(const char *dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *p = path_in(dir, "ctl");
	int fd, ret;

	if (!p)
		return -ENOMEM;
	if (strlen(p) >= sizeof(a.sun_path)) {
		free(p);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, p);
	unlink(p);
	free(p);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static void truth_header(struct xsim_host *h)
{
	const struct xsim_conf *c = &h->conf;
	unsigned int frac = xsim_frac_bits(c->vendor);

	xsim_truth(h, "# xensim ground truth: host TSC ticks\n");
	xsim_truth(h, "host pcpus=%u cpu_khz=%u vendor=%s frac=%u t0=%lu\n",
		   c->pcpus, c->cpu_khz, c->vendor == XSIM_AMD ? "amd" : "intel",
		   frac, (unsigned long)h->t0);
	for (unsigned int i = 0; i < c->ndoms; i++) {
		const struct xsim_dom_conf *d = &c->dom[i];
		static const char *const types[] = { "pv", "pvh", "hvm" };

		xsim_truth(h, "domain domid=%u name=%s type=%s vcpus=%u tsc_mode=%u gtsc_khz=%u ratio=%lu drift_ppm=%d\n",
			   d->domid, d->name, types[d->type], d->vcpus,
			   d->tsc_mode, d->gtsc_khz ? d->gtsc_khz : c->cpu_khz,
			   (unsigned long)xsim_tsc_ratio(c, d), (int)d->drift_ppm);
	}
	for (unsigned int i = 0; i < h->nvcpus; i++) {
		const struct xsim_vcpu *v = &h->vcpu[i];
		const struct xsim_dom_conf *d = &c->dom[v->dom];

		xsim_truth(h, "vcpu domid=%u vcpu=%u pcpu=%u offset=%ld\n",
			   v->domid, v->id, v->pcpu,
			   (long)(d->type == XSIM_PV ? 0 : d->tsc_offset[v->id]));
	}
	/* the restores/migrations to come: new offsets, incarnation + 1 */
	for (unsigned int i = 0; i < c->ndoms; i++)
		for (unsigned int k = 0; k < c->dom[i].nchanges; k++)
			for (unsigned int v = 0; v < c->dom[i].vcpus; v++)
				xsim_truth(h, "offset_change domid=%u vcpu=%u at=%lu offset=%ld incarnation=%u\n",
					   c->dom[i].domid, v,
					   (unsigned long)h->dclk[i].change_tsc[k],
					   (long)c->dom[i].change[k].offset[v], k + 1);
	fflush(h->truth);
}

/* Guest TSC 0 at host start unless the file says otherwise (Xen: vCPU0). */
static void default_offsets(struct xsim_host *h)
{
	struct xsim_conf *c = &h->conf;

	for (unsigned int i = 0; i < c->ndoms; i++) {
		struct xsim_dom_conf *d = &c->dom[i];
		uint64_t g0;

		/* a PV guest reads the host TSC, whatever the file says */
		if (d->type == XSIM_PV)
			memset(d->tsc_offset, 0, sizeof(d->tsc_offset));
		if (d->offset_set || d->type == XSIM_PV)
			continue;
		g0 = xsim_guest_tsc(h->t0, xsim_tsc_ratio(c, d),
				    xsim_frac_bits(c->vendor), 0);
		for (unsigned int v = 0; v < XSIM_MAX_VCPUS; v++)
			d->tsc_offset[v] = -(int64_t)g0;
	}
}

/* Each domain's ratio, where its drift starts, when its offsets change. */
static void domain_clocks(struct xsim_host *h)
{
	const struct xsim_conf *c = &h->conf;
	unsigned int frac = xsim_frac_bits(c->vendor);

	for (unsigned int i = 0; i < c->ndoms; i++) {
		const struct xsim_dom_conf *d = &c->dom[i];

		h->dclk[i].ratio = xsim_tsc_ratio(c, d);
		h->dclk[i].s0 = xsim_guest_tsc(h->t0, h->dclk[i].ratio, frac, 0);
		for (unsigned int k = 0; k < d->nchanges; k++)
			h->dclk[i].change_tsc[k] = h->t0 +
				d->change[k].at_us * c->cpu_khz / 1000;
	}
}

uint64_t xsim_host_gtsc(const struct xsim_host *h, unsigned int dom,
			unsigned int vcpu, uint64_t host)
{
	const struct xsim_dom_conf *d = &h->conf.dom[dom];
	uint64_t s = xsim_guest_tsc(host, h->dclk[dom].ratio,
				    xsim_frac_bits(h->conf.vendor), 0);
	int64_t off = d->tsc_offset[vcpu];

	for (unsigned int k = 0; k < d->nchanges; k++)
		if (host >= h->dclk[dom].change_tsc[k])
			off = d->change[k].offset[vcpu];
	if (d->drift_ppm) {
		/* guest ticks since t0 times ppm / 10^6, truncated toward 0 */
		__int128 el = (int64_t)(s - h->dclk[dom].s0);

		off += (int64_t)(el * d->drift_ppm / 1000000);
	}
	return s + (uint64_t)off;
}

uint32_t xsim_host_incarnation(const struct xsim_host *h, unsigned int dom,
			       uint64_t host)
{
	uint32_t n = 0;

	for (unsigned int k = 0; k < h->conf.dom[dom].nchanges; k++)
		n += host >= h->dclk[dom].change_tsc[k];
	return n;
}

struct xsim_host *xsim_host_start(const struct xsim_conf *c, const char *dir)
{
	struct xsim_host *h = calloc(1, sizeof(*h));
	char *tp = NULL, pid[32];
	int err;

	if (!h)
		return NULL;
	h->conf = *c;
	h->memfd = h->notify_fd = h->listen_fd = h->done_fd = -1;
	pthread_mutex_init(&h->slock, NULL);
	pthread_mutex_init(&h->dlock, NULL);
	if (!h->conf.cpu_khz)
		h->conf.cpu_khz = xsim_measure_khz();
	h->dir = strdup(dir);
	if (!h->dir) {
		err = -ENOMEM;
		goto fail;
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		goto fail_errno;
	h->pool_base = xsim_tbuf_mem_pages(c->pcpus);
	h->mem_pages = h->pool_base + XSIM_GNT_POOL;
	h->memfd = memfd_create("xensim-machine-memory", MFD_CLOEXEC);
	if (h->memfd < 0 ||
	    ftruncate(h->memfd, (off_t)h->mem_pages * XSIM_PAGE_SIZE))
		goto fail_errno;
	h->mem = mmap(NULL, h->mem_pages * XSIM_PAGE_SIZE,
		      PROT_READ | PROT_WRITE, MAP_SHARED, h->memfd, 0);
	if (h->mem == MAP_FAILED) {
		h->mem = NULL;
		goto fail_errno;
	}
	h->tb = xsim_tbuf_new(c->pcpus, h->mem, notify_cb, h);
	if (!h->tb)
		goto fail_errno;
	h->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->notify_fd < 0)
		goto fail_errno;
	h->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->done_fd < 0)
		goto fail_errno;
	err = listen_on(dir);
	if (err < 0)
		goto fail;
	h->listen_fd = err;
	tp = path_in(dir, "truth");
	if (!tp) {
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * The guests' directories before the truth file: scripts take the
	 * truth's appearance as the sign that they exist.
	 */
	for (unsigned int i = 0; i < c->ndoms; i++) {
		/* dom0 traces this machine's real ftrace: no tracefs of its own */
		h->guest[i] = xsim_guest_new(h, i, c->dom[i].domid != 0);
		if (!h->guest[i])
			goto fail_errno;
	}
	h->truth = fopen(tp, "we");
	if (!h->truth)
		goto fail_errno;
	free(tp);
	tp = NULL;
	h->t0 = xsim_rdtsc();
	default_offsets(h);
	domain_clocks(h);
	h->xs = xsim_xs_new(&h->conf);
	if (!h->xs)
		goto fail_errno;
	if ((err = xsim_sched_start(h)))
		goto fail;
	truth_header(h);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if ((err = xsim_put_file(dir, "pid", pid)) ||
	    (err = xsim_put_file(dir, "ready", "1\n"))) {
		xsim_sched_stop(h);
		goto fail;
	}
	return h;
fail_errno:
	err = -errno;
fail:
	free(tp);
	if (h->truth)
		fclose(h->truth);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->notify_fd >= 0)
		close(h->notify_fd);
	if (h->done_fd >= 0)
		close(h->done_fd);
	for (unsigned int i = 0; i < XSIM_MAX_DOMAINS; i++)
		xsim_guest_free(h->guest[i]);
	xsim_xs_free(h->xs);
	xsim_tbuf_free(h->tb);
	if (h->mem)
		munmap(h->mem, h->mem_pages * XSIM_PAGE_SIZE);
	if (h->memfd >= 0)
		close(h->memfd);
	free(h->dir);
	free(h);
	errno = -err;
	return NULL;
}

void xsim_host_done(struct xsim_host *h, int client, uint32_t gen)
{
	uint64_t one = 1;

	pthread_mutex_lock(&h->dlock);
	if (h->ndone < sizeof(h->done) / sizeof(h->done[0])) {
		h->done[h->ndone].client = client;
		h->done[h->ndone].gen = gen;
		h->ndone++;
	}
	pthread_mutex_unlock(&h->dlock);
	if (write(h->done_fd, &one, sizeof(one)) < 0)
		return;
}

void xsim_host_stop(struct xsim_host *h)
{
	uint64_t end;
	char *p;

	if (!h)
		return;
	xsim_sched_stop(h);
	end = xsim_rdtsc();
	for (unsigned int i = 0; i < h->conf.pcpus; i++) {
		struct xsim_tbuf_stats st;

		xsim_tbuf_stats(h->tb, i, &st);
		xsim_truth(h, "stats pcpu=%u written=%lu dropped=%lu lost_reported=%lu lost_cleared=%lu lost_pending=%u lost_recs=%lu fillers=%lu virqs=%lu first_tsc=%lu last_tsc=%lu\n",
			   i, (unsigned long)st.written,
			   (unsigned long)st.dropped,
			   (unsigned long)st.lost_reported,
			   (unsigned long)st.lost_cleared,
			   xsim_tbuf_lost_pending(h->tb, i),
			   (unsigned long)st.lost_recs,
			   (unsigned long)st.fillers, (unsigned long)st.virqs,
			   (unsigned long)st.first_tsc,
			   (unsigned long)st.last_tsc);
	}
	for (unsigned int i = 0; i < h->conf.ndoms; i++) {
		if (!h->guest[i])
			continue;
		xsim_guest_tick(h->guest[i], true);
		xsim_guest_stats(h->guest[i]);
		xsim_guest_free(h->guest[i]);
		h->guest[i] = NULL;
	}
	xsim_truth(h, "end at=%lu\n", (unsigned long)end);
	fclose(h->truth);
	if ((p = path_in(h->dir, "ready"))) {
		unlink(p);
		free(p);
	}
	if ((p = path_in(h->dir, "ctl"))) {
		unlink(p);
		free(p);
	}
	close(h->listen_fd);
	close(h->notify_fd);
	close(h->done_fd);
	pthread_mutex_destroy(&h->dlock);
	xsim_xs_free(h->xs);
	xsim_tbuf_free(h->tb);
	munmap(h->mem, h->mem_pages * XSIM_PAGE_SIZE);
	close(h->memfd);
	pthread_mutex_destroy(&h->slock);
	free(h->dir);
	free(h);
}
