// SPDX-License-Identifier: GPL-2.0
/*
 * record -A: one guest's time sync. The protocols go out in TRACE_REQ; the
 * one the agent picks gets its own stream and a thread that samples (at
 * the start, every interval, at the end) while the guest's thread keeps
 * the pages flowing. After each sample the solve so far goes into the
 * live file (a kill keeps it); the full solve and its TIME_SHIFT come
 * after the guest file is finished, so a failed sync never costs data.
 */
#include <cpuid.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xenctrl.h>

#include "tmsg.h"
#include "tsync.h"

#define TSC_MODE_ALWAYS_EMULATE	1	/* xen/include/asm-x86/time.h */

#include "rec-guest-local.h"
#include "tcx-util.h"

void rec_guest_tnote(struct rec_guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->tnote[0])
		return;		/* the first reason is the one that counts */
	va_start(ap, fmt);
	vsnprintf(g->tnote, sizeof(g->tnote), fmt, ap);
	va_end(ap);
}

/* The protocols of --tsync (all without one), or "none". */
int rec_guest_parse_protos(struct rec_guest *g, const char *spec)
{
	int n = tsync_parse_offer(spec, g->offer, MAX_PROTOS);

	g->noffer = n > 0 ? (uint32_t)n : 0;
	if (n < 0)
		return tcx_fail(n, "--tsync %s: %s", spec, tcx_error());
	return 0;
}

static void drop_offer(struct rec_guest *g, const char *name)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < g->noffer; i++)
		if (strcmp(g->offer[i], name))
			g->offer[j++] = g->offer[i];
	g->noffer = j;
}

static bool offered(const struct rec_guest *g, const char *name)
{
	for (uint32_t i = 0; i < g->noffer; i++)
		if (!strcmp(g->offer[i], name))
			return true;
	return false;
}

/* libxenctrl's messages stay out of the recorder's output: we say why. */
static void quiet_vmessage(struct xentoollog_logger *l, xentoollog_level level, int errnoval,
			   const char *context, const char *format, va_list al)
{
}

static void quiet_destroy(struct xentoollog_logger *l)
{
}

static struct xentoollog_logger quiet_log = {
	.vmessage = quiet_vmessage,
	.destroy = quiet_destroy,
};

/* dom0 runs on the host's CPUs: its CPUID vendor is the host's. */
static enum tsync_vendor host_vendor(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid(0, &a, &b, &c, &d) &&
	    ((b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) ||	/* AuthenticAMD */
	     (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975)))	/* HygonGenuine */
		return TSYNC_AMD;
	return TSYNC_INTEL;
}

/*
 * What protocol xen needs of the domain: Xen's TSC rate, the domain's
 * (tsc_mode, gtsc_khz), HVM/PVH or PV; from that its scaling and whether
 * its TSC is emulated. 0, or -errno with tcx_error() set.
 */
static int xen_clock(struct rec_guest *g, uint32_t cpu_khz)
{
	xc_interface *xch = xc_interface_open(&quiet_log, &quiet_log, 0);
	xc_domaininfo_t di;
	xc_physinfo_t pi;
	uint32_t mode, gkhz, inc;
	uint64_t elapsed;
	bool hvm;
	int ret = 0;

	if (!xch) {
		return tcx_fail(-ENODEV, "no Xen control interface (%s)", strerror(errno));
	}
	if (!cpu_khz) {
		if (xc_physinfo(xch, &pi)) {
			ret = tcx_fail(-EIO, "xc_physinfo: %s", strerror(errno));
			goto out;
		}
		cpu_khz = pi.cpu_khz;
	}
	if (xc_domain_getinfolist(xch, g->sp.domid, 1, &di) != 1 || di.domain != g->sp.domid) {
		ret = tcx_fail(-ENOENT, "domain %u: no domain information", g->sp.domid);
		goto out;
	}
	if (xc_domain_get_tsc_info(xch, g->sp.domid, &mode, &elapsed, &gkhz, &inc)) {
		ret = tcx_fail(-EIO, "domain %u: xc_domain_get_tsc_info: %s", g->sp.domid,
			 strerror(errno));
		goto out;
	}
	if (!cpu_khz) {
		ret = tcx_fail(-EIO, "Xen gives no TSC rate");
		goto out;
	}
	hvm = di.flags & XEN_DOMINF_hvm_guest;
	g->cpu_khz = cpu_khz;
	g->incarnation = inc;
	g->pv = !hvm;
	/* always_emulate, or a rate the host cannot scale to: RDTSC exits */
	g->vtsc = mode == TSC_MODE_ALWAYS_EMULATE;
	g->scale = (struct tsync_scale){ .ratio = 1, .frac = 0 };
	if (hvm && tsync_xen_ratio(cpu_khz, gkhz, host_vendor(), true, &g->scale) == -ERANGE) {
		g->vtsc = true;
		g->scale = (struct tsync_scale){ .ratio = 1, .frac = 0 };
	}
	if (!hvm && gkhz && gkhz != cpu_khz)
		g->vtsc = true;
	if (g->vtsc)
		g->pv = false;	/* its offset is measured, never assumed */
out:
	xc_interface_close(xch);
	return ret;
}

/*
 * Whether the domain was restored or migrated since xen_clock(): its
 * offset may have jumped (the solve's epochs show where), say so.
 */
static void xen_incarnation(struct rec_guest *g, char *buf, size_t len)
{
	xc_interface *xch = xc_interface_open(&quiet_log, &quiet_log, 0);
	uint32_t mode, gkhz, inc;
	uint64_t elapsed;

	buf[0] = 0;
	if (!xch)
		return;
	if (!xc_domain_get_tsc_info(xch, g->sp.domid, &mode, &elapsed, &gkhz, &inc) &&
	    inc != g->incarnation)
		snprintf(buf, len, "; the domain was restored or migrated during the "
			 "capture (incarnation %u -> %u)", g->incarnation, inc);
	xc_interface_close(xch);
}

/* The agent's time sync stream: vchan tsync_port, or its TCP/vsock port. */
static struct tmsg_transport *tsync_connect(struct rec_guest *g, uint32_t port, int timeout_ms)
{
	struct tmsg_transport *t;
	char name[80];
	int fd;

	if (g->sp.kind == REC_GUEST_XEN) {
		char path[TMSG_VCHAN_PATH_MAX + 1];
		uint64_t end = tcx_now_ns() + (uint64_t)timeout_ms * 1000000ull;

		if (tmsg_vchan_path(path, sizeof(path), g->sp.domid, port))
			return NULL;
		while (!(t = tmsg_vchan_client(g->sp.domid, path)) && tcx_now_ns() < end)
			usleep(20 * 1000);
		return t;
	}
	if (g->sp.kind == REC_GUEST_VSOCK) {
		fd = tmsg_vsock_connect(g->sp.cid, port);
		snprintf(name, sizeof(name), "vsock %u:%u tsync", g->sp.cid, port);
	} else {
		char pstr[16];

		snprintf(pstr, sizeof(pstr), "%u", port);
		fd = tmsg_tcp_connect(g->sp.host, pstr, timeout_ms);
		snprintf(name, sizeof(name), "tcp %.40s:%u tsync", g->sp.host, port);
	}
	if (fd < 0)
		return NULL;
	t = tmsg_fd_transport(fd, name);
	/* an authenticated session: the stream opens with its token */
	if (t && g->auth.done && tmsg_auth_send_token(t, &g->auth, TMSG_AUTH_TSYNC)) {
		tmsg_close(t);
		t = NULL;
	}
	return t;
}

static void tsync_sample(struct rec_guest *g, const char *when)
{
	int ret;

	if (!g->tsh || g->tbroken)
		return;
	ret = tsync_host_sample(g->tsh);
	pthread_mutex_lock(&g->lock);
	if (ret) {
		g->tbroken = true;
		rec_guest_tnote(g, "the %s sample failed (%s): no more samples", when,
		      ret == -ETIMEDOUT ? "no answer" : strerror(-ret));
	} else {
		if (!g->sum.tsync_samples++)
			g->sum.tsync_first_s = (tcx_now_ns() - g->open_t0) / 1e9;
	}
	pthread_mutex_unlock(&g->lock);
}

/*
 * What time sync knows so far becomes the file's TIME_SHIFT now, so that a
 * recorder killed outright leaves the guest's file on the host's clock up
 * to this sample. On this thread: the solve never holds up the record
 * loop. Nothing to solve yet (xen before its records) is no failure.
 */
static void tsync_publish(struct rec_guest *g)
{
	struct tsync_solution sol;
	int ret;

	if (!g->tsh || !g->w || g->tbroken)
		return;
	memset(&sol, 0, sizeof(sol));
	ret = tsync_host_solve(g->tsh, &sol);
	if (!ret)
		ret = tsync_publish_time_shift(g->w, g->host_traceid, &sol);
	tsync_solution_free(&sol);
	if (ret && ret != -ENODATA && ret != -EOPNOTSUPP) {
		pthread_mutex_lock(&g->lock);
		rec_guest_tnote(g, "the TIME_SHIFT so far could not be written (%s)",
				strerror(-ret));
		pthread_mutex_unlock(&g->lock);
	}
}

/*
 * After TRACE_RESP: the stream of the protocol the agent chose, and for
 * ptp its first sample (a stock agent sends its metadata only after it).
 * Never fails the session: a problem is noted and the guest goes unsynced.
 */
void rec_guest_tsync_start(struct rec_guest *g, const struct tmsg_trace_resp *r, int timeout_ms)
{
	const char *proto = r->tsync_proto;
	int ret;

	if (!proto[0]) {
		if (g->noffer)
			rec_guest_tnote(g, "the agent chose no time sync protocol (offered %s%s%s)",
			      g->offer[0], g->noffer > 1 ? "," : "",
			      g->noffer > 1 ? g->offer[1] : "");
		return;
	}
	snprintf(g->sum.tsync_proto, sizeof(g->sum.tsync_proto), "%.15s", proto);
	if (!offered(g, proto)) {
		rec_guest_tnote(g, "the agent chose \"%.15s\", which was not offered", proto);
		return;
	}
	g->tst = tsync_connect(g, r->tsync_port, timeout_ms);
	if (!g->tst) {
		rec_guest_tnote(g, "cannot connect its time sync stream (port %u): %s", r->tsync_port,
		      tcx_error());
		return;
	}
	/* the first ptp sample is part of the open: its deadline too */
	tmsg_set_cutoff(g->tst, g->open_by);
	if (strcmp(proto, TSYNC_PTP_NAME))
		return;		/* xen: once the metadata is in (print id) */
	ret = tsync_host_new(&g->tsh, &(struct tsync_host_opts){
			.proto = TSYNC_PTP_NAME, .t = g->tst, .nvcpu = (uint32_t)g->cpus });
	if (ret) {
		g->tsh = NULL;
		rec_guest_tnote(g, "tsync_host_new: %s", strerror(-ret));
		return;
	}
	tsync_sample(g, "first");
}

/* xen, after the metadata: the guest's print id and long size are known. */
void rec_guest_tsync_xen_setup(struct rec_guest *g)
{
	struct tsync_host_opts ho = {
		.proto = TSYNC_XEN_NAME, .t = g->tst, .dom = g->sp.domid,
		.nvcpu = (uint32_t)g->cpus, .scale = g->scale, .pv = g->pv, .vtsc = g->vtsc,
		.print_id = g->print_id, .long_size = g->long_size,
	};
	int ret;

	if (!g->tst || g->tsh || strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME))
		return;
	if (!g->has_print) {
		rec_guest_tnote(g, "the guest's metadata has no ftrace/print format: its markers "
		      "cannot be read");
		return;
	}
	ret = tsync_host_new(&g->tsh, &ho);
	if (ret) {
		g->tsh = NULL;
		rec_guest_tnote(g, "tsync_host_new: %s", strerror(-ret));
		return;
	}
	g->xen_ok = true;
}

/*
 * The guest's tsync thread: xen's first sample, one every interval, the
 * last one when the stop is asked, STOP; then the drain thread may CLOSE.
 */
void *rec_guest_tsync_main(void *arg)
{
	struct rec_guest *g = arg;
	struct timespec next;
	uint64_t step = (uint64_t)(g->interval * 1e9);

	if (!strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME))
		tsync_sample(g, "first");
	tsync_publish(g);	/* ptp: the first sample, taken before the file */
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&g->tlock);
	while (!g->treq_stop) {
		if (!step) {
			pthread_cond_wait(&g->tcond, &g->tlock);
			continue;
		}
		next.tv_sec += (time_t)(step / 1000000000ull);
		next.tv_nsec += (long)(step % 1000000000ull);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!g->treq_stop &&
		       pthread_cond_timedwait(&g->tcond, &g->tlock, &next) != ETIMEDOUT)
			;
		if (g->treq_stop)
			break;
		pthread_mutex_unlock(&g->tlock);
		tsync_sample(g, "interval");
		tsync_publish(g);
		pthread_mutex_lock(&g->tlock);
	}
	pthread_mutex_unlock(&g->tlock);
	if (atomic_load(&g->gone))
		rec_guest_tnote(g, "the guest went away: no last sample");
	else
		tsync_sample(g, "last");
	tsync_publish(g);
	tsync_host_stop(g->tsh);
	/* now the session may end */
	{
		uint64_t one = 1;

		atomic_store(&g->stop, 1);
		if (write(g->wakefd, &one, sizeof(one)) < 0)
			one = 0;	/* full: a wakeup is pending anyway */
	}
	return NULL;
}

/* After the file is finished: solve, append TIME_SHIFT, the summary. */
void rec_guest_tsync_finish(struct rec_guest *g, bool file_ok)
{
	struct tsync_solution sol;
	struct tsync_clock c = { .mult = g->mult, .shift = g->shift }, *cp = &c;
	bool xen = !strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME);
	char line[200] = "", moved[96] = "";
	int ret;

	g->sum.tsync_bound_ns = -1;
	if (!g->tsh) {
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no time sync: %s",
			 g->tnote[0] ? g->tnote : "none asked (the guest file keeps its "
			 "own clock)");
		return;
	}
	if (!file_ok) {
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note),
			 "no TIME_SHIFT: the guest file could not be finished");
		return;
	}
	if (!c.mult && (!g->cpu_khz || tsync_clock_init(&c, g->cpu_khz, NULL, 0)))
		cp = NULL;	/* the bound in ticks */
	if (xen)
		xen_incarnation(g, moved, sizeof(moved));
	memset(&sol, 0, sizeof(sol));
	ret = tsync_host_finish(g->tsh, &sol, line, sizeof(line), cp);
	if (ret) {
		const char *why = ret != -ENODATA ? strerror(-ret) : xen ?
			"no marker round of this domain was found in the hypervisor's "
			"records (the mask needs the HVM and GUEST classes; PV: GUEST "
			"and PV)" : "no sample went through";

		char refused[64] = "";

		g->sum.tsync_refused = sol.samples_refused;
		if (sol.samples_refused)
			snprintf(refused, sizeof(refused), " (%u refused: outside the host's "
				 "window, or absurd)", sol.samples_refused);
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no TIME_SHIFT: %s%s%s%s",
			 why, refused, g->tnote[0] ? "; " : "", g->tnote);
		tsync_solution_free(&sol);
		return;
	}
	g->sum.tsync_refused = sol.samples_refused;
	g->sum.tsync_rounds = xen ? sol.rounds_used : g->sum.tsync_samples;
	if (xen && sol.rounds_used && cp)
		g->sum.tsync_bound_ns = (int64_t)tsync_clock_ticks_to_ns(cp, tsync_bound_host(&sol));
	ret = tsync_write_time_shift(g->path, g->host_traceid, &sol);
	if (ret)
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no TIME_SHIFT: %s "
			 "(%s)", ret == -EOPNOTSUPP ? "a version 6 file takes no option "
			 "after its data" : strerror(-ret), line);
	else
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "%s%s%s%s", line,
			 moved, g->tnote[0] ? "; " : "", g->tnote);
	g->sum.tsync_shift = !ret;
	tsync_solution_free(&sol);
}

void rec_guest_hv_record(struct rec_guest *g, const struct rec_record *r, bool known,
			 uint32_t dom, uint32_t vcpu, uint64_t run)
{
	struct tsync_hvrec t;

	if (!g || !g->tsh || !g->xen_ok)
		return;
	t = (struct tsync_hvrec){ .tsc = r->tsc, .has_tsc = r->flags & REC_F_TSC,
				  .event = r->event, .nr = r->nr, .dom = dom, .vcpu = vcpu,
				  .known = known, .run = run };
	memcpy(t.w, r->w, sizeof(t.w));
	tsync_host_record(g->tsh, &t);
}
/* Protocol xen measures against the hypervisor's records of a domain. */
void rec_guest_tsync_offer(struct rec_guest *g, uint32_t cpu_khz)
{
	if (!offered(g, TSYNC_XEN_NAME))
		return;
	if (g->sp.kind != REC_GUEST_XEN) {
		drop_offer(g, TSYNC_XEN_NAME);
		if (!g->noffer)
			rec_guest_tnote(g, "protocol xen needs a Xen guest reached over vchan");
	} else if (xen_clock(g, cpu_khz)) {
		drop_offer(g, TSYNC_XEN_NAME);
		rec_guest_tnote(g, "xen not offered: %s", tcx_error());
	}
}

