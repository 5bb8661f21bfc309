// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen: the session. One thread: it waits on VIRQ_TBUF (or the
 * poll timeout, or a signal), drains every pCPU buffer into the same
 * stream and sink as convert (so the events, pseudo tasks and GUEST
 * options are convert's), optionally into a xentrace-format copy, moves
 * dom0's ftrace pages into trace-dom0.dat, and keeps count of domains.
 *
 * Time: Xen stamps records with the host TSC and dom0 (PV) traces with
 * x86-tsc, the same counter; one TSC2NSEC from xc_physinfo's cpu_khz,
 * refined with (rdtsc, CLOCK_MONOTONIC_RAW) pairs at start and end, goes
 * into both files.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <xenstore.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tsync.h"
#include "tdat.h"
#include "tmsg.h"

#define MAX_DOMS	1024
#define REFRESH_NS	1000000000ull	/* domain list and status line */
#define HV_BATCH_TOTAL	(32u << 20)	/* hv_batch_bytes() */
#define HV_BATCH_MAX	(2u << 20)
#define HV_BATCH_MIN	(512u << 10)
#define POLL_MS		1000		/* what is staged below the drain's threshold: with the refresh */
#define BACKLOG_NOW	(64u << 10)	/* staged bytes the loop decodes without sleeping */
#define DOM0_READ_NS	200000000ull	/* dom0's pages, unless the stop drains them */
/* Xen's trace classes with every subclass (public/trace.h) */
#define CLS_SCHED	0x0002f000u
#define CLS_HVM		0x0008f000u
#define CLS_PV		0x0020f000u
#define CLS_GUEST	0x0800f000u
#define CONSUME_NS	100000000ull	/* decoding per turn of the loop: the clock and
					 * signals are looked at in between */

struct dom {
	uint32_t	dom;
	uint32_t	nvcpus;
	char		name[64];
	bool		named;		/* from xenstore, not the d<N> stand-in */
	bool		at_start;
	bool		gone;
	bool		hvm;
};

struct clockpair {
	uint64_t	tsc;
	uint64_t	ns;
};

/* A pCPU's vCPU as the tap last saw it, and the number of its stretch there. */
struct cpu_run {
	uint32_t	dom, vcpu;
	bool		known;
	uint64_t	id;
};

struct session {
	const struct rec_record_opts	*o;
	struct rec_hvbuf		*hv;
	struct rec_hvdrain		*dr;
	struct rec_dom0			*d0;
	struct tdat_writer		*w;
	struct rec_sink			*sink;
	struct rec_stream		*s;
	struct xs_handle		*xs;
	char				*dom0_path;
	/* the names written until the run has started (rec_stage_path()) */
	char				*out_tmp, *dom0_tmp, *raw_tmp;
	const char			**taken;	/* the files this run writes */
	int				ntaken;
	int				rawfd;
	uint64_t			raw_bytes;
	int				ncpus;
	struct dom			*doms;	/* grown as domains appear: dom0 pays for the host it has */
	int				doms_cap;
	int				ndoms;
	struct clockpair		c0, c1;
	uint64_t			hz;
	uint32_t			mult, shift;
	bool				has_d0;
	bool				hv_direct;	/* trace.dat's pages, at its close */
	struct tdat_stats		d0st;	/* dom0's file, at its close */
	unsigned long			d0_max_kb;	/* -m, at its close */
	uint64_t			d0_overwritten;	/* -m: by design, not lost */
	char				d0_kept[512];	/* -m: pages kept per CPU */
	int				err;
	char				errmsg[512];
	pid_t				child;
	int				status;
	int				wstatus;	/* waitpid()'s, once reaped */
	bool				reaped;
	/* the summary JSON's context */
	char				start_iso[64];
	char				xen_ver[64];	/* "" if unknown */
	struct utsname			uts;
	bool				has_uts;
	bool				at_end_ran;
	int				at_end_ret;
	char				at_end_why[512];
	/* -A: the guests' agents, and their summaries once closed */
	struct rec_guest		**g;
	struct rec_guest_summary	*gsum;
	int				ng;
	int				nrefused;	/* guests left out: an event missing */
	bool				gclosed;
	struct rec_guest_summary	gfail;	/* the guest whose open failed */
	bool				has_gfail;
	bool				stop_cut;	/* a signal cut the guests' stop short */
	/* what was started, for the cleanup */
	bool				d0_tried;
	bool				started;
	uint64_t			setup_ns;	/* the guests' opens, all of them */
	int				gofd;		/* the held command's pipe */
	struct cpu_run			*runs;	/* per pCPU, for the time sync */
	uint64_t			nruns;
	/* status line */
	uint64_t			last_records;
	uint64_t			last_status_ns;
	uint64_t			next_d0_ns;
};

static int sigpipe[2] = { -1, -1 };
static volatile sig_atomic_t stop_sig;
static volatile sig_atomic_t nr_sigs;	/* a second one cuts the guests' stop short */

static void on_signal(int sig)
{
	int e = errno;
	char c = (char)sig;

	if (sig != SIGCHLD) {
		stop_sig = sig;
		nr_sigs++;
	}
	if (write(sigpipe[1], &c, 1) < 0) {
		/* the pipe is full: a wakeup is pending anyway */
	}
	errno = e;
}

/* The tightest of a few (rdtsc, CLOCK_MONOTONIC_RAW) brackets. */
static struct clockpair clock_pair(void)
{
	struct clockpair best = { 0, 0 };
	uint64_t width = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t t1 = __rdtsc();
		uint64_t ns = tcx_clock_ns(CLOCK_MONOTONIC_RAW);
		uint64_t t2 = __rdtsc();

		if (t2 - t1 < width) {
			width = t2 - t1;
			best.tsc = t1 + (t2 - t1) / 2;
			best.ns = ns;
		}
	}
	return best;
}

__attribute__((format(printf, 3, 4)))
static void fail(struct session *ss, int err, const char *fmt, ...)
{
	va_list ap;

	if (ss->err)
		return;
	ss->err = err;
	va_start(ap, fmt);
	vsnprintf(ss->errmsg, sizeof(ss->errmsg), fmt, ap);
	va_end(ap);
}

static void note(const struct session *ss, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(const struct session *ss, const char *fmt, ...)
{
	va_list ap;

	if (!ss->o->log)
		return;
	fprintf(ss->o->log, "trace-cmd-xen record: ");
	va_start(ap, fmt);
	vfprintf(ss->o->log, fmt, ap);
	va_end(ap);
	fputc('\n', ss->o->log);
}

/* ---- option parsing ---- */

static const struct {
	const char	*name;
	uint32_t	mask;
} classes[] = {
	{ "all", 0x0ffff000 }, { "gen", 0x0001f000 }, { "sched", 0x0002f000 },
	{ "dom0op", 0x0004f000 }, { "hvm", 0x0008f000 }, { "mem", 0x0010f000 },
	{ "pv", 0x0020f000 }, { "shadow", 0x0040f000 }, { "hw", 0x0080f000 },
	{ "guest", 0x0800f000 },
};

int rec_parse_evt_mask(const char *s, uint32_t *mask)
{
	char buf[256], *save = NULL, *tok;
	uint32_t m = 0;

	if (!s || !*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2) ||
	    strspn(s, "0123456789abcdefABCDEF") == strlen(s)) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(s, &end, 16);
		if (errno || *end || !v || v > UINT32_MAX)
			return -EINVAL;
		*mask = (uint32_t)v;
		return 0;
	}
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",+", &save); tok; tok = strtok_r(NULL, ",+", &save)) {
		size_t i;

		for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
			if (!strcasecmp(tok, classes[i].name))
				break;
		if (i == sizeof(classes) / sizeof(classes[0]))
			return -EINVAL;
		m |= classes[i].mask;
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

int rec_parse_cpu_mask(const char *s, uint8_t *map, size_t bytes)
{
	const char *p = s;

	memset(map, 0, bytes);
	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "all")) {
		memset(map, 0xff, bytes);
		return 0;
	}
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2)) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(s + 2, &end, 16);
		if (errno || *end || !v)
			return -EINVAL;
		for (unsigned int c = 0; c < 64 && c / 8 < bytes; c++)
			if (v >> c & 1)
				map[c / 8] |= 1u << (c % 8);
		return 0;
	}
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -EINVAL;
			p = end;
		}
		if ((size_t)b >= bytes * 8)
			return -ERANGE;
		for (long c = a; c <= b; c++)
			map[c / 8] |= 1u << (c % 8);
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

char *rec_dom0_path(const char *output)
{
	const char *slash = strrchr(output, '/');
	const char *dot = strrchr(slash ? slash + 1 : output, '.');
	size_t stem = dot && dot != (slash ? slash + 1 : output) ? (size_t)(dot - output)
								 : strlen(output);
	char *p = malloc(strlen(output) + 6);

	if (p)
		sprintf(p, "%.*s-dom0%s", (int)stem, output, output + stem);
	return p;
}

/* ---- domains ---- */

static void dom_name(struct session *ss, struct dom *d)
{
	char path[64];
	unsigned int len = 0;
	char *v = NULL;

	if (ss->xs) {
		snprintf(path, sizeof(path), "/local/domain/%u/name", d->dom);
		v = xs_read(ss->xs, XBT_NULL, path, &len);
	}
	/* the toolstack's, yet shown and compared: checked all the same */
	d->named = v && len && !tmsg_xs_parse_text(v, len, d->name, sizeof(d->name));
	if (!d->named) {
		if (d->dom == 0)
			snprintf(d->name, sizeof(d->name), "Domain-0");
		else
			snprintf(d->name, sizeof(d->name), "d%u", d->dom);
	}
	free(v);
}

/* Room for one more domain; false when there is no memory for it. */
static bool grow_doms(struct session *ss)
{
	int cap = ss->doms_cap ? 2 * ss->doms_cap : 16;
	struct dom *d;

	if (ss->ndoms < ss->doms_cap)
		return true;
	d = realloc(ss->doms, cap * sizeof(*d));
	if (!d) {
		fail(ss, -ENOMEM, "out of memory");
		return false;
	}
	memset(d + ss->doms_cap, 0, (cap - ss->doms_cap) * sizeof(*d));
	ss->doms = d;
	ss->doms_cap = cap;
	return true;
}

/* The domain list now: new ones are added (and their vCPUs noted). */
static void refresh_domains(struct session *ss, bool first)
{
	struct rec_hvdom *list = calloc(MAX_DOMS, sizeof(*list));
	int n;

	if (!list)
		return;
	n = rec_hvbuf_domains(ss->hv, list, MAX_DOMS);
	for (int i = 0; i < ss->ndoms; i++) {
		bool alive = false;

		for (int j = 0; j < n; j++)
			alive |= list[j].dom == ss->doms[i].dom && !list[j].dying;
		if (!alive && !ss->doms[i].gone && n >= 0) {
			ss->doms[i].gone = true;
			if (!first)
				note(ss, "domain %u (%s) went away", ss->doms[i].dom,
				     ss->doms[i].name);
		}
	}
	for (int j = 0; j < n; j++) {
		struct dom *d = NULL;

		if (list[j].dying)
			continue;
		for (int i = 0; i < ss->ndoms; i++)
			if (ss->doms[i].dom == list[j].dom && !ss->doms[i].gone)
				d = &ss->doms[i];
		if (d) {
			if (list[j].nvcpus > d->nvcpus)
				d->nvcpus = list[j].nvcpus;
			/* seen while the toolstack was still creating it: its name comes later */
			if (!d->named) {
				dom_name(ss, d);
				if (d->named)
					note(ss, "domain %u is %s", d->dom, d->name);
			}
		} else if (ss->ndoms < MAX_DOMS && grow_doms(ss)) {
			d = &ss->doms[ss->ndoms++];
			d->dom = list[j].dom;
			d->nvcpus = list[j].nvcpus;
			d->hvm = list[j].hvm;
			d->at_start = first;
			dom_name(ss, d);
			if (!first)
				note(ss, "domain %u (%s) appeared, %u vCPU%s", d->dom, d->name,
				     d->nvcpus, d->nvcpus == 1 ? "" : "s");
		} else {
			continue;
		}
		for (uint32_t v = 0; v < d->nvcpus; v++)
			if (rec_sink_note_vcpu(ss->sink, d->dom, v) < 0)
				fail(ss, -ENOMEM, "out of memory");
	}
	free(list);
}

/* ---- the hypervisor stream ---- */

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n) {
		ssize_t r = writev(fd, iov, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n && (size_t)r >= iov->iov_len) {
			r -= iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= r;
		}
	}
	return 0;
}

/* Staged windows (hvdrain.c): xentrace's format into --raw, records into the stream. */
static int on_win_start(void *ctx, int cpu, uint64_t bytes)
{
	struct session *ss = ctx;
	/* xentrace's window: a cpu_change record, then the ring bytes */
	uint32_t hdr[3] = { TRC_TRACE_CPU_CHANGE | (2u << TRACE_EXTRA_SHIFT), (uint32_t)cpu,
			    (uint32_t)bytes };
	struct iovec iov = { hdr, sizeof(hdr) };
	int ret;

	if (ss->rawfd < 0 || ss->err)
		return 0;
	ret = write_all(ss->rawfd, &iov, 1);
	if (ret < 0)
		fail(ss, ret, "%s: %s", ss->o->raw, strerror(-ret));
	else
		ss->raw_bytes += sizeof(hdr);
	return 0;
}

static int on_win_data(void *ctx, int cpu, const void *p, size_t len)
{
	struct session *ss = ctx;
	struct iovec iov = { (void *)p, len };
	int ret;

	if (ss->rawfd >= 0 && !ss->err) {
		ret = write_all(ss->rawfd, &iov, 1);
		if (ret < 0)
			fail(ss, ret, "%s: %s", ss->o->raw, strerror(-ret));
		else
			ss->raw_bytes += len;
	}
	rec_stream_feed(ss->s, cpu, p, len);
	return 0;
}

static int on_win_end(void *ctx, int cpu)
{
	struct session *ss = ctx;

	rec_stream_end_window(ss->s, cpu);
	return 0;
}

static const struct rec_hvdrain_ops drain_ops = {
	.window = on_win_start,
	.data = on_win_data,
	.end = on_win_end,
};

static void check_sink(struct session *ss)
{
	int ret = rec_sink_error(ss->sink);

	if (ret)
		fail(ss, ret, "%s: %s", ss->o->output, tcx_error());
}

/* @ret: rec_hvdrain_error() or rec_hvdrain_stop() (-EPROTO: the drain thread's, in tcx_error()) */
static void check_drain(struct session *ss, int ret)
{
	if (ret == -EPROTO)
		fail(ss, ret, "%s", tcx_error());
	else if (ret < 0)
		fail(ss, ret, "draining the hypervisor's buffers: %s", strerror(-ret));
}

/* What the drain thread staged, then what dom0 has. */
static void drain(struct session *ss)
{
	int ret;

	check_drain(ss, rec_hvdrain_error(ss->dr));
	if (!ss->err)
		rec_hvdrain_consume_for(ss->dr, &drain_ops, ss, CONSUME_NS);
	check_sink(ss);
	/* a read takes what the kernel has, a partial page too: not too often */
	if (ss->d0 && !ss->err && tcx_clock_ns(CLOCK_MONOTONIC) >= ss->next_d0_ns) {
		ss->next_d0_ns = tcx_clock_ns(CLOCK_MONOTONIC) +
				 (ss->o->dom0 && ss->o->dom0->sleep_us ?
				  ss->o->dom0->sleep_us * 1000ull : DOM0_READ_NS);
		ret = rec_dom0_drain(ss->d0);
		if (ret < 0)
			fail(ss, ret, "%s: %s", ss->dom0_path, tcx_error());
	}
}

/* ---- guests (-A) ---- */

/* time sync with the guests: their markers are in the hypervisor's records */
static bool guests_sync(const struct rec_record_opts *o)
{
	const char *names[8];

	/* the command line checked the offer; "none" offers nothing, and a
	 * negative --tsync-interval turns time sync off */
	return o->nr_guests && o->tsync_interval_ms >= 0 &&
	       tsync_parse_offer(o->tsync, names, 8) > 0;
}

/*
 * The stretch of @r's vCPU on its pCPU: a new one when the pCPU's vCPU
 * changes or leaves (runstate running->x). The stream is per pCPU, so a
 * vCPU's records on two pCPUs may come in either order; the matcher only
 * closes a bracket within one stretch, whose records are all in order.
 */
static uint64_t run_of(struct session *ss, const struct rec_record *r, bool known,
		       uint32_t dom, uint32_t vcpu)
{
	struct cpu_run *p = &ss->runs[r->cpu];
	bool leaves = (r->event & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE &&
		      !((r->event >> 8) & 0xf);

	if (leaves || known != p->known || (known && (dom != p->dom || vcpu != p->vcpu)))
		*p = (struct cpu_run){ .dom = dom, .vcpu = vcpu, .known = known,
				       .id = ++ss->nruns };
	return p->id;
}

/* Records the matcher reads: HVM, PV and guest classes, and LOST_RECORDS. */
static bool sync_class(uint32_t event)
{
	uint32_t cls = event & 0x0fff0000;

	return cls == (CLS_HVM & 0x0fff0000) || cls == (CLS_PV & 0x0fff0000) ||
	       cls == (CLS_GUEST & 0x0fff0000);
}

/*
 * The sink's tap: every hypervisor record, for the guests' time sync. Each
 * guest gets its own vCPUs' records, and LOST_RECORDS (it drops every open
 * bracket, whoever ran); the rest would only be skipped after its lock.
 */
static void tap(void *ctx, const struct rec_record *r, bool known, uint32_t dom,
		uint32_t vcpu)
{
	struct session *ss = ctx;
	bool lost = r->event == TRC_LOST_RECORDS;
	uint64_t run = run_of(ss, r, known, dom, vcpu);

	if (!lost && (!known || !sync_class(r->event)))
		return;
	for (int i = 0; i < ss->ng; i++)
		if (lost || rec_guest_domid(ss->g[i]) == (int)dom)
			rec_guest_hv_record(ss->g[i], r, known, dom, vcpu, run);
}

/*
 * The agent an -A reaches, as a key: a Xen guest by its domid (a name
 * looked up among the domains), a network agent by its address. -1 when
 * it cannot be told here (a bad spec, an unknown name): rec_guest_open()
 * says why, in its turn.
 */
static int guest_key(const struct session *ss, const char *spec, struct rec_guest_spec *sp)
{
	if (rec_guest_parse_spec(spec, sp))
		return -1;
	if (sp->kind != REC_GUEST_XEN || sp->by_domid)
		return 0;
	for (int i = 0; i < ss->ndoms; i++) {
		if (!ss->doms[i].gone && !strcmp(ss->doms[i].name, sp->xen_name)) {
			sp->domid = ss->doms[i].dom;
			return 0;
		}
	}
	return -1;
}

/*
 * Of the classes -A adds to a --xen-events mask, those the guests need: HVM exits
 * for an HVM/PVH guest's markers, PV traps for a PV guest's (a PV dom0
 * makes many of those: not traced without a PV guest), GUEST (HVMOP) for
 * both; a network guest or an unknown name may be either.
 */
static void narrow_mask(struct session *ss, uint32_t user, uint32_t mask)
{
	uint32_t need = CLS_SCHED;

	if (guests_sync(ss->o)) {
		need |= CLS_GUEST;
		for (int i = 0; i < ss->o->nr_guests; i++) {
			struct rec_guest_spec sp;
			const struct dom *d = NULL;

			if (!guest_key(ss, ss->o->guests[i], &sp) && sp.kind == REC_GUEST_XEN)
				for (int j = 0; j < ss->ndoms; j++)
					if (!ss->doms[j].gone && ss->doms[j].dom == sp.domid)
						d = &ss->doms[j];
			need |= !d ? CLS_HVM | CLS_PV : d->hvm ? CLS_HVM : CLS_PV;
		}
	}
	if ((mask & ~(user | need)) && !rec_hvbuf_set_evt_mask(ss->hv, user | need))
		mask = user | need;
	if (mask != user)
		note(ss, "--xen-events %#x: adding %#x for the guests (vCPU runs%s)", user, mask & ~user,
		     mask & ~(user | CLS_SCHED) ? " and time sync" : "");
}

/*
 * Each guest once, checked before any is opened: a second session to the
 * agent of the first would wait for it (5 s of retries) and fail as if
 * the agent were dead.
 */
static int check_guests_once(const struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	struct rec_guest_spec *sp = calloc((size_t)o->nr_guests, sizeof(*sp));
	bool *ok = calloc((size_t)o->nr_guests, sizeof(*ok));
	int ret = 0;

	if (!sp || !ok) {
		free(sp);
		free(ok);
		return tcx_fail(-ENOMEM, "out of memory");
	}
	for (int i = 0; !ret && i < o->nr_guests; i++) {
		ok[i] = !guest_key(ss, o->guests[i], &sp[i]);
		for (int j = 0; ok[i] && j < i; j++) {
			const struct rec_guest_spec *a = &sp[i], *b = &sp[j];
			bool same;

			if (!ok[j] || a->kind != b->kind)
				continue;
			if (a->kind == REC_GUEST_XEN)
				same = a->domid == b->domid;
			else if (a->kind == REC_GUEST_TCP)
				same = a->port == b->port && !strcasecmp(a->host, b->host);
			else
				same = a->port == b->port && a->cid == b->cid;
			if (!same)
				continue;
			if (a->kind == REC_GUEST_XEN)
				ret = tcx_fail(-EEXIST, "-A %s: the same guest as -A %s (domain %u): "
					       "record each guest once", o->guests[i], o->guests[j],
					       a->domid);
			else
				ret = tcx_fail(-EEXIST, "-A %s: the same agent as -A %s: record "
					       "each guest once", o->guests[i], o->guests[j]);
			break;
		}
	}
	free(sp);
	free(ok);
	return ret;
}

/* The guest that failed to open, in the summary JSON. */
static void open_failed(struct session *ss, const char *spec, int err)
{
	struct rec_guest_summary *s = &ss->gfail;
	struct rec_guest_spec sp;

	memset(s, 0, sizeof(*s));
	if (!rec_guest_parse_spec(spec, &sp)) {
		s->kind = sp.kind;
		s->domid = sp.domid;
	}
	snprintf(s->name, sizeof(s->name), "%s", spec);
	snprintf(s->note, sizeof(s->note), "%s", tcx_error());
	if (err == -ETIMEDOUT)
		snprintf(s->abandoned, sizeof(s->abandoned), "open");
	s->error = err;
	s->tsync_bound_ns = -1;
	s->tsync_first_s = -1;
	ss->has_gfail = true;
}

/* One guest's open, in a thread of its own. */
struct opener {
	struct rec_guest_opts go;
	struct rec_guest *g;
	int ret;
	char err[TCX_ERROR_MAX];
	pthread_t th;
	bool joinable;
};

static void *open_one(void *arg)
{
	struct opener *op = arg;

	op->ret = rec_guest_open(&op->g, &op->go);
	if (op->ret)
		snprintf(op->err, sizeof(op->err), "%s", tcx_error());
	return NULL;
}

/* Every guest at once; each open ends by its own deadline (rec_guest_open). */
static void open_all(struct opener *op, int n)
{
	sigset_t all, old;

	/* the signals stay with the record command's own thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < n; i++)
		op[i].joinable = n > 1 && !pthread_create(&op[i].th, NULL, open_one, &op[i]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < n; i++)
		if (!op[i].joinable)
			open_one(&op[i]);	/* no thread: here, in turn */
	for (int i = 0; i < n; i++)
		if (op[i].joinable)
			pthread_join(op[i].th, NULL);
}

/* Two guests that resolved to one file: refused, as a file of the run's own. */
static int distinct_guest_files(const struct opener *op, int n, const char *const *spec)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; op[i].g && j < i; j++)
			if (op[j].g && rec_same_file(rec_guest_output(op[i].g),
						     rec_guest_output(op[j].g)))
				return tcx_fail(-EEXIST, "-A %s: guest %s: its file %s is that of "
						"-A %s: record each guest once", spec[i],
						rec_guest_name(op[i].g), rec_guest_output(op[i].g),
						spec[j]);
	return 0;
}

/*
 * Every -A at once, once the hypervisor traces: the agents start tracing
 * as they send their metadata. Each guest's open runs in its own thread to
 * its own absolute deadline, so a slow or hostile guest delays the
 * recording's start by at most its --guest-open-timeout, and the others'
 * handshakes and time sync setup go on meanwhile. A guest that cannot be
 * opened ends the recording before it starts, but for one whose agent
 * lacks an event it was given: that guest alone is left out.
 */
static int open_guests(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	uint64_t t0 = tcx_now_ns();
	struct opener *op;
	int ret = check_guests_once(ss), bad = -1;

	if (ret)
		return ret;
	ss->g = calloc((size_t)o->nr_guests, sizeof(*ss->g));
	ss->gsum = calloc((size_t)o->nr_guests, sizeof(*ss->gsum));
	if (!ss->g || !ss->gsum)
		return tcx_fail(-ENOMEM, "out of memory");
	ss->taken = calloc((size_t)o->nr_guests + 3, sizeof(*ss->taken));
	op = calloc((size_t)o->nr_guests, sizeof(*op));
	if (!ss->taken || !op) {
		free(op);
		return tcx_fail(-ENOMEM, "out of memory");
	}
	ss->taken[ss->ntaken++] = o->output;
	if (ss->dom0_path)
		ss->taken[ss->ntaken++] = ss->dom0_path;
	if (o->raw)
		ss->taken[ss->ntaken++] = o->raw;
	for (int i = 0; i < o->nr_guests; i++) {
		const struct rec_guest_args *ga = o->guest_args ? &o->guest_args[i] : NULL;

		op[i].go = (struct rec_guest_opts){
			.spec = o->guests[i], .output = o->output,
			.name = ga ? ga->name : NULL,
			.extra_args = ga ? ga->argv : NULL, .nr_extra_args = ga ? ga->argc : 0,
			.host_traceid = REC_HOST_TRACEID,
			.mult = ss->mult, .shift = ss->shift,
			.tsync = o->tsync_interval_ms < 0 ? "none" : o->tsync,
			.tsync_interval = o->tsync_interval_ms > 0 ? o->tsync_interval_ms / 1e3 : 0,
			.cpu_khz = rec_hvbuf_cpu_khz(ss->hv),
			.secret = o->secret, .secret_len = o->secret_len, .log = o->log,
			/* the run's own files; the guests' among themselves below */
			.taken = ss->taken, .ntaken = ss->ntaken,
			.open_timeout_ms = o->guest_open_ms, .max_cpus = o->guest_max_cpus,
			/* one knob for the stop: the guests' common deadline */
			.close_timeout_ms = o->guest_stop_ms > 0 ? o->guest_stop_ms :
					    REC_GUEST_STOP_MS,
			.max_meta = o->guest_max_meta, .max_bytes = o->guest_max_bytes,
			.stage = true,
		};
	}
	open_all(op, o->nr_guests);
	/* the opened ones are the session's, closed with it whatever failed */
	for (int i = 0; i < o->nr_guests; i++) {
		if (op[i].g) {
			ss->g[ss->ng++] = op[i].g;
			ss->taken[ss->ntaken++] = rec_guest_output(op[i].g);
		} else if (op[i].ret == -ENOMSG) {
			/* its agent lacks an event: this guest alone is left out */
			note(ss, "-A %s: %s; recording without it", o->guests[i], op[i].err);
			ss->nrefused++;
		} else if (bad < 0) {
			bad = i;	/* the first -A that failed is the one reported */
		}
	}
	ss->setup_ns = tcx_now_ns() - t0;
	if (bad >= 0) {
		tcx_fail(op[bad].ret, "%s", op[bad].err);
		open_failed(ss, o->guests[bad], op[bad].ret);
		ret = tcx_fail(op[bad].ret, "-A %s: %s", o->guests[bad], op[bad].err);
	}
	if (!ret)
		ret = distinct_guest_files(op, o->nr_guests, o->guests);
	free(op);
	for (int i = 0; !ret && i < ss->ng; i++) {
		struct rec_guest *g = ss->g[i];
		int dom = rec_guest_domid(g);

		if (dom < 0)
			continue;
		/* every vCPU gets its pseudo task, run or not, under the guest's name */
		for (int c = 0; !ret && c < rec_guest_cpus(g); c++)
			ret = rec_sink_note_vcpu(ss->sink, (uint32_t)dom, (uint32_t)c);
		if (!ret)
			ret = rec_sink_name_guest(ss->sink, (uint32_t)dom, rec_guest_name(g),
						  rec_guest_id(g));
		if (ret)
			return tcx_fail(ret, "guest %s: %s", rec_guest_name(g), strerror(-ret));
	}
	return ret;
}

/*
 * CLOSE to every guest at once, then wait for each: the hypervisor still
 * traces. While the session runs (@consume), its records keep flowing
 * through the tap: the guests' last time sync samples wait for their
 * markers, and a slow decoder must not starve them.
 */
/* Every guest's waits end now: the second Ctrl-C. */
static void cut_guests(struct session *ss)
{
	uint64_t now = tcx_now_ns();

	for (int i = 0; i < ss->ng; i++)
		rec_guest_set_deadline(ss->g[i], now);
	if (!ss->stop_cut)
		note(ss, "signal %d again: the guests' stop is cut short", (int)stop_sig);
	ss->stop_cut = true;
}

/*
 * One deadline for all the guests together, whatever they do: at it, the
 * guests still stopping are abandoned (their files end at their last
 * whole page). A signal during the stop cuts it short.
 */
static void stop_guests(struct session *ss, bool consume)
{
	int ms = ss->o->guest_stop_ms > 0 ? ss->o->guest_stop_ms : REC_GUEST_STOP_MS;
	uint64_t by = tcx_now_ns() + (uint64_t)ms * 1000000ull;
	sig_atomic_t sigs = nr_sigs;

	for (int i = 0; i < ss->ng; i++) {
		rec_guest_request_stop(ss->g[i]);
		rec_guest_set_deadline(ss->g[i], by);
	}
	while (consume && !ss->err && tcx_now_ns() < by) {
		struct pollfd p[2] = {
			{ .fd = rec_hvdrain_fd(ss->dr), .events = POLLIN },
			{ .fd = sigpipe[0], .events = POLLIN },
		};
		bool all = true;
		char buf[64];

		for (int i = 0; all && i < ss->ng; i++)
			all = rec_guest_stopped(ss->g[i]);
		if (all)
			break;
		if (nr_sigs != sigs) {
			cut_guests(ss);
			sigs = nr_sigs;
		}
		poll(p, 2, rec_hvdrain_backlog(ss->dr) ? 0 : 20);
		while (read(sigpipe[0], buf, sizeof(buf)) > 0)
			;
		drain(ss);
	}
	for (int i = 0; i < ss->ng; i++) {
		int ret = rec_guest_stop(ss->g[i]);

		if (ret < 0)
			fail(ss, ret, "%s: %s", rec_guest_output(ss->g[i]), strerror(-ret));
	}
}

/* Finish the guest files: TSC2NSEC of the capture, then summaries. */
static void close_guests(struct session *ss, bool keep)
{
	for (int i = 0; i < ss->ng; i++) {
		int ret;

		if (keep)
			rec_guest_set_tsc2nsec(ss->g[i], ss->mult, ss->shift);
		/* not started: still staged, the guest's file goes with it */
		ret = rec_guest_close(ss->g[i], &ss->gsum[i]);
		ss->g[i] = NULL;
		if (keep && ret < 0)
			fail(ss, ret, "%s: %s", ss->gsum[i].path, strerror(-ret));
	}
	ss->gclosed = true;
}

/* ---- status and summary ---- */

static void human(char *buf, size_t len, uint64_t b)
{
	if (b >= 10ull << 30)
		snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
	else if (b >= 10ull << 20)
		snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
	else
		snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
}

static void status_line(struct session *ss, uint64_t now_ns)
{
	struct rec_stream_stats st;
	struct tdat_stats ds = { 0 }, hs = { 0 };
	char hb[32], db[32];
	double dt = (now_ns - ss->last_status_ns) / 1e9;

	rec_stream_get_stats(ss->s, &st);
	tdat_get_stats(ss->w, -1, &hs);
	if (ss->d0)
		rec_dom0_stats(ss->d0, &ds);
	human(hb, sizeof(hb), hs.bytes);
	human(db, sizeof(db), ds.bytes);
	fprintf(stderr, "\rxen: %.0f rec/s, %s, %" PRIu64 " lost", dt > 0 ?
		(st.records - ss->last_records) / dt : 0.0, hb, st.lost);
	if (ss->d0)
		fprintf(stderr, " | dom0: %" PRIu64 " pages, %s, %" PRIu64 " lost", ds.pages,
			db, ds.missed);
	if (ss->ng) {
		struct rec_guest_summary gs;
		uint64_t pages = 0, lost = 0;

		for (int i = 0; i < ss->ng; i++) {
			rec_guest_stats(ss->g[i], &gs);
			pages += gs.pages;
			lost += gs.missed;
		}
		fprintf(stderr, " | %d guest%s: %" PRIu64 " pages, %" PRIu64 " lost", ss->ng,
			ss->ng == 1 ? "" : "s", pages, lost);
	}
	fprintf(stderr, "   ");
	fflush(stderr);
	ss->last_records = st.records;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return path && !stat(path, &st) ? (uint64_t)st.st_size : 0;
}

static double span_s(const struct session *ss)
{
	return (ss->c1.ns - ss->c0.ns) / 1e9;
}

/* dom0's missed events, less those -m's ring overwrote by design. */
static uint64_t dom0_lost(const struct session *ss)
{
	uint64_t m = ss->d0st.missed;

	return m > ss->d0_overwritten ? m - ss->d0_overwritten : 0;
}

static void summary(const struct session *ss, FILE *f)
{
	struct rec_stream_stats st;
	struct rec_sink_stats ks;
	const struct tdat_stats *ds = &ss->d0st;

	rec_stream_get_stats(ss->s, &st);
	rec_sink_get_stats(ss->sink, &ks);
	fprintf(f, "hypervisor  %s: %" PRIu64 " records, %" PRIu64 " events (%" PRIu64
		" sched_switch), %" PRIu64 " lost by Xen, %" PRIu64 " bytes\n",
		ss->o->output, st.records, ks.events, ks.switches, st.lost,
		file_size(ss->o->output));
	if (ss->has_d0) {
		fprintf(f, "dom0        %s: %" PRIu64 " pages, %" PRIu64 " lost, %" PRIu64
			" bytes\n", ss->dom0_path, ds->pages, dom0_lost(ss), file_size(ss->dom0_path));
		if (ss->d0_max_kb)
			fprintf(f, "dom0        -m %lu KiB: kept the newest pages per CPU (%s); "
				"%" PRIu64 " older events overwritten by design (not lost)\n",
				ss->d0_max_kb, ss->d0_kept, ss->d0_overwritten);
	}
	for (int i = 0; ss->gclosed && i < ss->ng; i++)
		rec_guest_summary_print(&ss->gsum[i], f);
	if (ss->rawfd >= 0)
		fprintf(f, "raw         %s: %" PRIu64 " bytes (xentrace format)\n", ss->o->raw,
			ss->raw_bytes);
	fprintf(f, "domains    ");
	for (int i = 0; i < ss->ndoms; i++)
		fprintf(f, " %u:%s (%u vCPU%s%s%s)", ss->doms[i].dom, ss->doms[i].name,
			ss->doms[i].nvcpus, ss->doms[i].nvcpus == 1 ? "" : "s",
			ss->doms[i].at_start ? "" : ", new", ss->doms[i].gone ? ", gone" : "");
	fprintf(f, "\nclock       TSC %" PRIu64 " Hz, %u pCPUs, %.3f s\n", ss->hz, ss->ncpus,
		span_s(ss));
	fprintf(f, "view with   trace-cmd report -i %s%s%s", ss->o->output,
		ss->has_d0 ? " -i " : "", ss->has_d0 ? ss->dom0_path : "");
	for (int i = 0; ss->gclosed && i < ss->ng; i++)
		fprintf(f, " -i %s", ss->gsum[i].path);
	fputc('\n', f);
}

/* Every limit and deadline a guest is held to, as in effect. */
static void limits_json(const struct rec_record_opts *o, FILE *f)
{
	fprintf(f, "  \"limits\": {\"guest_open_timeout_s\": %.3f, \"guest_stop_timeout_s\": %.3f"
		", \"guest_max_cpus\": %u, \"guest_max_meta\": %zu, \"guest_max_bytes\": %"
		PRIu64 "},\n",
		(o->guest_open_ms > 0 ? o->guest_open_ms : REC_GUEST_OPEN_MS) / 1e3,
		(o->guest_stop_ms > 0 ? o->guest_stop_ms : REC_GUEST_STOP_MS) / 1e3,
		o->guest_max_cpus ? o->guest_max_cpus : REC_GUEST_MAX_CPUS,
		o->guest_max_meta ? o->guest_max_meta : (size_t)REC_GUEST_MAX_META,
		o->guest_max_bytes);
}

/* @s as a JSON string, or null */
static void jstr(FILE *f, const char *s)
{
	if (s)
		tcx_json_str(f, s);
	else
		fputs("null", f);
}

/* The run's context: command lines, options in effect, host, Xen, session. */
static void context_json(const struct session *ss, FILE *f)
{
	const struct rec_record_opts *o = ss->o;

	fprintf(f, "  \"argv\": [");
	for (int i = 0; o->argv && i < o->argc; i++) {
		fputs(i ? ", " : "", f);
		tcx_json_str(f, o->argv[i]);
	}
	fprintf(f, "],\n  \"start_utc\": ");
	jstr(f, ss->start_iso[0] ? ss->start_iso : NULL);
	fprintf(f, ",\n  \"xen_version\": ");
	jstr(f, ss->xen_ver[0] ? ss->xen_ver : NULL);
	fprintf(f, ",\n  \"host\": {\"nodename\": ");
	jstr(f, ss->has_uts ? ss->uts.nodename : NULL);
	fprintf(f, ", \"release\": ");
	jstr(f, ss->has_uts ? ss->uts.release : NULL);
	fprintf(f, "},\n  \"command\": ");
	if (!o->command) {
		fprintf(f, "null");
	} else {
		fprintf(f, "{\"argv\": [");
		for (int i = 0; o->command[i]; i++) {
			fputs(i ? ", " : "", f);
			tcx_json_str(f, o->command[i]);
		}
		fprintf(f, "], \"exit_status\": ");
		if (ss->reaped && WIFEXITED(ss->wstatus))
			fprintf(f, "%d", WEXITSTATUS(ss->wstatus));
		else
			fprintf(f, "null");
		fprintf(f, ", \"signal\": ");
		if (ss->reaped && WIFSIGNALED(ss->wstatus))
			fprintf(f, "%d", WTERMSIG(ss->wstatus));
		else
			fprintf(f, "null");
		fputc('}', f);
	}
	fprintf(f, ",\n  \"options\": {\"output\": ");
	tcx_json_str(f, o->output);
	fprintf(f, ", \"raw\": ");
	jstr(f, o->raw);
	fprintf(f, ", \"no_dom0\": %s, \"duration_s\": %.3f, \"xen_pages\": %lu, "
		"\"xen_events\": \"0x%08x\", \"xen_cpus\": \"%s\", \"tsync\": ",
		o->no_dom0 ? "true" : "false", o->duration, o->pages, o->evt_mask,
		o->cpumap ? "mask" : "all");
	tcx_json_str(f, o->tsync ? o->tsync : "xen,ptp");
	fprintf(f, ", \"tsync_interval_ms\": %d, \"guests\": [", o->tsync_interval_ms);
	for (int i = 0; i < o->nr_guests; i++) {
		fputs(i ? ", " : "", f);
		tcx_json_str(f, o->guests[i]);
	}
	fprintf(f, "], \"quiet\": %s, \"fail_on_loss\": %s, \"session\": ",
		o->quiet ? "true" : "false", o->fail_on_loss ? "true" : "false");
	jstr(f, o->session);
	fprintf(f, ", \"run\": %d, \"repeat\": %d},\n", o->run > 0 ? o->run : 1,
		o->repeat > 0 ? o->repeat : 1);
	if (o->at_end) {
		fprintf(f, "  \"analysis\": {\"file\": ");
		tcx_json_str(f, o->at_end_file);
		fprintf(f, ", \"ok\": %s, \"error\": ", ss->at_end_ran && !ss->at_end_ret ?
			"true" : "false");
		jstr(f, !ss->at_end_ran ? "not run: the recording did not start" :
			     ss->at_end_ret ? ss->at_end_why : NULL);
		fprintf(f, "},\n");
	}
}

/* Everything lost: Xen's records, dom0's and the guests' missed events and bad pages. */
static void losses(const struct session *ss, struct rec_record_result *r)
{
	struct rec_stream_stats st = { 0 };

	if (ss->s)
		rec_stream_get_stats(ss->s, &st);
	r->lost_xen = st.lost;
	r->lost_dom0 = ss->has_d0 ? dom0_lost(ss) + ss->d0st.bad_pages : 0;
	r->lost_guests = 0;
	for (int i = 0; ss->gclosed && i < ss->ng; i++)
		r->lost_guests += ss->gsum[i].missed + ss->gsum[i].bad_pages;
}

/*
 * Written on failure too: what ran is in it (a start that failed has no
 * hypervisor section, and "started" is false), and "error" says why.
 */
static void summary_json(const struct session *ss, FILE *f)
{
	struct rec_stream_stats st = { 0 };
	struct rec_sink_stats ks = { 0 };
	struct rec_hvdrain_stats dst = { 0 };
	const struct tdat_stats *ds = &ss->d0st;

	if (ss->s)
		rec_stream_get_stats(ss->s, &st);
	if (ss->sink)
		rec_sink_get_stats(ss->sink, &ks);
	struct rec_record_result lr = { 0 };

	losses(ss, &lr);
	fprintf(f, "{\n  \"started\": %s,\n  \"duration_s\": %.6f,\n",
		ss->started ? "true" : "false", ss->started ? span_s(ss) : 0.0);
	context_json(ss, f);
	fprintf(f, "  \"loss\": {\"xen\": %" PRIu64 ", \"dom0\": %" PRIu64 ", \"guests\": %"
		PRIu64 ", \"any\": %s},\n", lr.lost_xen, lr.lost_dom0, lr.lost_guests,
		lr.lost_xen || lr.lost_dom0 || lr.lost_guests ? "true" : "false");
	fprintf(f, "  \"hz\": %" PRIu64 ",\n  \"cpu_khz\": %u,\n  \"tsc2nsec_mult\": %u,\n"
		"  \"tsc2nsec_shift\": %u,\n", ss->hz, ss->hv ? rec_hvbuf_cpu_khz(ss->hv) : 0,
		ss->mult, ss->shift);
	fprintf(f, "  \"tsc_start\": %" PRIu64 ",\n  \"tsc_end\": %" PRIu64 ",\n", ss->c0.tsc,
		ss->c1.tsc);
	fprintf(f, "  \"pcpus\": %d,\n  \"tbuf_pages\": %u,\n", ss->ncpus,
		ss->hv ? rec_hvbuf_pages(ss->hv) : 0);
	fprintf(f, "  \"hypervisor\": {\"file\": ");
	tcx_json_str(f, ss->o->output);
	fprintf(f, ", \"size\": %" PRIu64 ", \"records\": %" PRIu64 ", \"events\": %" PRIu64
		", \"sched_switch\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_records\": %"
		PRIu64 ", \"late\": %" PRIu64 ", \"skew\": %" PRIu64 ", \"max_skew_ticks\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"direct\": %s, \"classes\": {",
		ss->started ? file_size(ss->o->output) : 0, st.records, ks.events, ks.switches,
		st.lost, st.lost_records, st.late, st.skew, st.max_skew,
		ss->hv ? rec_hvbuf_bytes(ss->hv) : 0, ss->hv_direct ? "true" : "false");
	for (int i = 0; i < REC_NR_CLASSES; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", rec_class_name(i), ks.classes[i]);
	if (ss->dr)
		rec_hvdrain_get_stats(ss->dr, &dst);
	fprintf(f, "}, \"drain\": {\"rounds\": %" PRIu64 ", \"virqs\": %" PRIu64
		", \"shortest_wait_ms\": %.3f, \"ring_kib\": %" PRIu64 "}},\n", dst.rounds,
		dst.virqs, dst.min_wait_ns / 1e6, dst.ring_bytes >> 10);
	if (ss->has_d0) {
		fprintf(f, "  \"dom0\": {\"file\": ");
		tcx_json_str(f, ss->dom0_path);
		fprintf(f, ", \"size\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"events\": %" PRIu64
			", \"lost\": %" PRIu64 ", \"bad_pages\": %" PRIu64 ", \"max_kb\": %lu"
			", \"overwritten\": %" PRIu64 "},\n",
			file_size(ss->dom0_path), ds->pages, ds->events, dom0_lost(ss),
			ds->bad_pages, ss->d0_max_kb, ss->d0_overwritten);
	}
	if (ss->rawfd >= 0) {
		fprintf(f, "  \"raw\": {\"file\": ");
		tcx_json_str(f, ss->o->raw);
		fprintf(f, ", \"size\": %" PRIu64 "},\n", ss->raw_bytes);
	}
	limits_json(ss->o, f);
	fprintf(f, "  \"guests\": [");
	for (int i = 0; ss->gclosed && i < ss->ng; i++) {
		fputs(i ? ",\n    " : "\n    ", f);
		rec_guest_summary_json(&ss->gsum[i], f);
	}
	if (ss->has_gfail) {
		fputs(ss->gclosed && ss->ng ? ",\n    " : "\n    ", f);
		rec_guest_summary_json(&ss->gfail, f);
	}
	fprintf(f, "%s],\n", ss->ng || ss->has_gfail ? "\n  " : "");
	fprintf(f, "  \"guests_stop_cut\": %s,\n", ss->stop_cut ? "true" : "false");
	fprintf(f, "  \"guests_setup_s\": %.6f,\n", ss->setup_ns / 1e9);
	fprintf(f, "  \"domains\": [");
	for (int i = 0; i < ss->ndoms; i++) {
		fprintf(f, "%s{\"dom\": %u, \"name\": ", i ? ", " : "", ss->doms[i].dom);
		tcx_json_str(f, ss->doms[i].name);
		fprintf(f, ", \"vcpus\": %u, \"hvm\": %s, \"at_start\": %s, \"gone\": %s, "
			"\"traceid\": %" PRIu64 "}", ss->doms[i].nvcpus,
			ss->doms[i].hvm ? "true" : "false", ss->doms[i].at_start ? "true" : "false",
			ss->doms[i].gone ? "true" : "false", rec_guest_traceid(ss->doms[i].dom));
	}
	fprintf(f, "],\n  \"error\": ");
	tcx_json_str(f, ss->errmsg);
	fprintf(f, "\n}\n");
}

/* ---- setup ---- */

/*
 * AMD hosts name pre-4.19 VMEXIT reasons as SVM. The vendor from CPUID
 * (dom0 sees the host's): reading /proc/cpuinfo for it cost 0.17 ms of a
 * session's setup, CPUID a few us.
 */
static bool host_is_amd(void)
{
	unsigned int max, b, c, d;
	char v[13];

	if (!__get_cpuid(0, &max, &b, &c, &d))
		return false;
	memcpy(v, &b, 4);
	memcpy(v + 4, &d, 4);
	memcpy(v + 8, &c, 4);
	v[12] = '\0';
	return !strcmp(v, "AuthenticAMD") || !strcmp(v, "HygonGenuine");
}

/* SWITCH drives the vCPU model when the mask has SCHED_VERBOSE but no runstates. */
static bool mask_uses_switch(uint32_t m)
{
	if (!m)
		return false;
	return (m & 0x00020000) && !((m >> 12) & 1) && ((m >> 12) & 8);
}

static int start_child(struct session *ss, int *gofd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	ss->child = fork();
	if (ss->child < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (!ss->child) {
		char c;
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(p[1]);
		/* start only once tracing runs; a closed pipe means give up */
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(ss->o->command[0], ss->o->command);
		fprintf(stderr, "trace-cmd-xen record: %s: %s\n", ss->o->command[0],
			strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*gofd = p[1];
	return 0;
}

static void reap(struct session *ss, bool wait)
{
	int st;

	if (ss->child <= 0)
		return;
	if (waitpid(ss->child, &st, wait ? 0 : WNOHANG) != ss->child)
		return;
	ss->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	ss->wstatus = st;
	ss->reaped = true;
	ss->child = 0;
}

/*
 * Bytes a pCPU's pages are written by: each direct write sleeps until the
 * disk has it, so fewer and larger (at 2.4 M records/s, 2 MiB took 5-10 %
 * less CPU than 512 KiB, and 512 KiB 8 % less than 128 KiB), within
 * HV_BATCH_TOTAL for the host, as the staging ring is.
 */
static uint32_t hv_batch_bytes(int ncpus)
{
	uint32_t b = ncpus > 0 ? HV_BATCH_TOTAL / (uint32_t)ncpus : HV_BATCH_MAX;

	if (b > HV_BATCH_MAX)
		b = HV_BATCH_MAX;
	if (b < HV_BATCH_MIN)
		b = HV_BATCH_MIN;
	return b & ~4095u;
}

static int setup_files(struct session *ss)
{
	struct tdat_params tp = { .version = 7, .clock = "x86-tsc", .direct = true };
	/* the tap costs a call per record: only when time sync reads them */
	struct rec_sink_opts so = { .svm = host_is_amd(),
				    .use_switch = mask_uses_switch(ss->o->evt_mask),
				    .tap = guests_sync(ss->o) ? tap : NULL, .tap_ctx = ss };
	int ret;

	tp.max_cpus = ss->ncpus;
	tp.cpus = ss->ncpus;
	tp.batch_bytes = hv_batch_bytes(ss->ncpus);
	if (so.tap) {
		ss->runs = calloc(ss->ncpus, sizeof(*ss->runs));
		if (!ss->runs)
			return tcx_fail(-ENOMEM, "out of memory");
	}
	ss->w = tdat_open(ss->out_tmp ? ss->out_tmp : ss->o->output, &tp);
	if (!ss->w)
		return tcx_fail(errno ? -errno : -EIO, "%s: %s", ss->o->output, tcx_error());
	so.ncpus = ss->ncpus;
	ss->sink = rec_sink_new(ss->w, &so);
	if (!ss->sink)
		return tcx_fail(-ENOMEM, "out of memory");
	refresh_domains(ss, true);
	ret = rec_sink_add_formats(ss->w);
	if (!ret)
		ret = rec_sink_add_cmdlines(ss->sink);
	if (!ret)
		ret = tdat_set_tsc2nsec(ss->w, ss->mult, ss->shift, 0);
	if (!ret)
		ret = tdat_set_traceid(ss->w, REC_HOST_TRACEID);
	if (!ret)
		ret = tdat_set_uname(ss->w, "Xen hypervisor record --xen");
	if (!ret)
		ret = tdat_start_data(ss->w);
	if (ret) {
		tcx_fail(ret, "%s: %s", ss->o->output, tcx_error());
		return ret;
	}
	/*
	 * Per pCPU, as convert: trace.dat's buffers are per CPU, the vCPU
	 * model is too, and time sync needs each vCPU's records in order
	 * only within one stretch on one pCPU (see run_of()). Records go
	 * from the staging ring to the sink with no queue and no merge.
	 */
	ss->s = rec_stream_new_batched(&(struct rec_stream_params){ .max_cpus = ss->ncpus,
								     .per_cpu = true },
				       rec_sink_emit_batch, ss->sink);
	if (!ss->s)
		return -ENOMEM;
	rec_stream_set_raw(ss->s, rec_sink_emit_raw, rec_sink_emit);
	return 0;
}

/* The refined TSC rate: the measured one if it agrees with Xen's within 0.1 %. */
static uint64_t refine_hz(struct session *ss)
{
	uint64_t khz_hz = (uint64_t)rec_hvbuf_cpu_khz(ss->hv) * 1000;
	uint64_t dns = ss->c1.ns - ss->c0.ns;
	double meas;

	if (dns < 1000000000ull || ss->c1.tsc <= ss->c0.tsc)
		return ss->hz;
	meas = (double)(ss->c1.tsc - ss->c0.tsc) * 1e9 / (double)dns;
	if (khz_hz && (meas < khz_hz * 0.999 || meas > khz_hz * 1.001)) {
		note(ss, "dom0 measured the TSC at %.0f Hz, Xen says %" PRIu64
		     " Hz: keeping Xen's", meas, khz_hz);
		return ss->hz;
	}
	return (uint64_t)(meas + 0.5);
}

/* Stop order: dom0 off, Xen off, drain both, finish the stream, options. */
static void finish(struct session *ss)
{
	uint64_t hz;
	int ret;

	if (ss->d0) {
		ret = rec_dom0_stop(ss->d0);
		if (ret < 0)
			fail(ss, ret, "%s: %s", ss->dom0_path, tcx_error());
	}
	stop_guests(ss, true);
	rec_hvbuf_stop(ss->hv);
	ss->c1 = clock_pair();
	check_drain(ss, rec_hvdrain_stop(ss->dr, &drain_ops, ss));
	rec_stream_finish(ss->s);
	check_sink(ss);
	/* a domain destroyed just before the stop is gone too */
	refresh_domains(ss, false);
	/* domains that came and went: their GUEST entries too */
	ret = rec_sink_add_guests(ss->sink);
	/* a network guest has no domain in this file: vCPUs map to -1 */
	for (int i = 0; !ret && i < ss->ng; i++)
		if (rec_guest_domid(ss->g[i]) < 0)
			ret = rec_guest_add_host_entry(ss->g[i], ss->w);
	hz = refine_hz(ss);
	if (hz != ss->hz && !rec_tsc2nsec(hz, &ss->mult, &ss->shift)) {
		ss->hz = hz;
		tdat_set_tsc2nsec(ss->w, ss->mult, ss->shift, 0);
		if (ss->d0)
			tdat_set_tsc2nsec(rec_dom0_writer(ss->d0), ss->mult, ss->shift, 0);
	}
	if (ret < 0)
		fail(ss, ret, "%s: %s", ss->o->output, tcx_error());
}

/* Refuse an unwritable output before touching the hypervisor; dom0's path, --raw. */
/* -o, dom0's file and --raw name three different files, or nothing starts. */
static int distinct_outputs(const struct rec_record_opts *o, const char *dom0)
{
	const char *name[3] = { "-o", "dom0's file", "--raw" };
	const char *path[3] = { o->output, dom0, o->raw };

	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (path[i] && path[j] && rec_same_file(path[i], path[j]))
				return tcx_fail(-EINVAL, "%s and %s are the same file (%s): "
						"each output needs its own", name[i], name[j],
						path[j]);
	return 0;
}

/* @path's stage name into @tmp, or NULL: no @path, or one not to stage. */
static int stage(const char *path, char **tmp)
{
	*tmp = NULL;
	if (!path || !rec_stage_wanted(path))
		return 0;
	*tmp = rec_stage_path(path);
	return *tmp ? 0 : -ENOMEM;
}

static int open_outputs(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	int fd, ret;

	if (!o->no_dom0) {
		ss->dom0_path = rec_dom0_path(o->output);
		if (!ss->dom0_path)
			return tcx_fail(-ENOMEM, "out of memory");
	}
	ret = distinct_outputs(o, ss->dom0_path);
	if (ret)
		return ret;
	/* an older file of each name stays whole until the run has started */
	ret = stage(o->output, &ss->out_tmp);
	if (!ret)
		ret = stage(ss->dom0_path, &ss->dom0_tmp);
	if (!ret)
		ret = stage(o->raw, &ss->raw_tmp);
	if (ret)
		return tcx_fail(ret, "out of memory");
	fd = open(ss->out_tmp ? ss->out_tmp : o->output, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		return tcx_fail(ret, "%s: %s", o->output, strerror(-ret));
	}
	close(fd);
	if (o->raw) {
		ss->rawfd = ss->raw_tmp ? open(ss->raw_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
				    : open(o->raw, O_WRONLY | O_CLOEXEC);
		if (ss->rawfd < 0) {
			ret = -errno;
			return tcx_fail(ret, "%s: %s", o->raw, strerror(-ret));
		}
	}
	return 0;
}

/* Xen's buffers on and drained, its clock, xenstore, then trace.dat's header. */
static int open_hv(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	struct rec_hvbuf_opts ho = { .pages = o->pages, .evt_mask = o->evt_mask,
				     .cpumap = o->cpumap };
	int ret;

	if (o->nr_guests && ho.evt_mask) {
		/* vCPU runs (sched) place guest events; the markers' classes
		 * until the guests' types are known (narrow_mask()) */
		ho.evt_mask |= CLS_SCHED;
		if (guests_sync(o))
			ho.evt_mask |= CLS_HVM | CLS_PV | CLS_GUEST;
	}
	/* the ring first: faulting it in takes milliseconds */
	ret = rec_hvdrain_open(&ss->dr, 0, o->poll_ms);
	if (ret)
		return ret;
	ret = rec_hvbuf_open(&ss->hv, &ho);
	if (ret)
		return ret;
	/*
	 * Xen's buffers are live: drain them now, not after the files are
	 * set up (milliseconds in which a busy pCPU fills its buffer)
	 */
	ret = rec_hvdrain_start(ss->dr, ss->hv);
	if (ret)
		return ret;
	ss->ncpus = rec_hvbuf_ncpus(ss->hv);
	if (o->pages && rec_hvbuf_pages(ss->hv) != o->pages)
		note(ss, "the trace buffers are %u pages per pCPU (Xen sets the size once "
		     "per boot, or clamps it), not %lu", rec_hvbuf_pages(ss->hv), o->pages);
	ss->hz = (uint64_t)rec_hvbuf_cpu_khz(ss->hv) * 1000;
	if (!ss->hz)
		ss->hz = REC_DEFAULT_HZ;
	rec_tsc2nsec(ss->hz, &ss->mult, &ss->shift);
	ss->xs = xs_open(XS_OPEN_READONLY);
	if (!ss->xs)
		note(ss, "no xenstore (%s): domains are named d<id>", strerror(errno));
	ret = setup_files(ss);
	if (!ret && o->nr_guests && o->evt_mask)
		narrow_mask(ss, o->evt_mask, ho.evt_mask);
	return ret;
}

/* -m: what dom0's ring kept and overwrote, for the summary. */
static void dom0_kept(struct session *ss)
{
	size_t len = 0;

	ss->d0_max_kb = rec_dom0_max_kb(ss->d0);
	ss->d0_overwritten = rec_dom0_overwritten(ss->d0, -1, NULL);
	ss->d0_kept[0] = '\0';
	for (int c = 0; ss->d0_max_kb && c < rec_dom0_ncpus(ss->d0); c++) {
		uint64_t pages;

		rec_dom0_overwritten(ss->d0, c, &pages);
		if (len < sizeof(ss->d0_kept))
			len += (size_t)snprintf(ss->d0_kept + len, sizeof(ss->d0_kept) - len,
						"%scpu%d %" PRIu64, c ? ", " : "", c, pages);
	}
}

static int start_dom0(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	struct rec_dom0_opts d0 = {
		.log = o->log ? o->log : stderr,
		.path = ss->dom0_tmp ? ss->dom0_tmp : ss->dom0_path, .ft = o->dom0,
		.traceid = rec_guest_traceid(0),
		.mult = ss->mult, .shift = ss->shift,
		.pids = &ss->child, .npids = ss->child > 0,
	};
	int ret;

	rec_dom0_cleanup_stale(o->log);
	ss->d0_tried = true;
	ret = rec_dom0_open(&ss->d0, &d0);
	if (!ret)
		rec_dom0_start(ss->d0);
	return ret;
}

/* The guests' agents, the command (held), dom0's ftrace (the drain runs already). */
static int start_sources(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	int ret;

	if (o->nr_guests) {
		ret = open_guests(ss);
		if (ret)
			return ret;
	}
	if (o->command) {
		ret = start_child(ss, &ss->gofd);
		if (ret)
			return tcx_fail(ret, "cannot start %s: %s", o->command[0], strerror(-ret));
	}
	return ss->dom0_path ? start_dom0(ss) : 0;
}

/* Let the command go: it waits for a byte on its pipe. */
static void release_child(struct session *ss)
{
	if (ss->gofd < 0)
		return;
	if (write(ss->gofd, "g", 1) != 1)
		note(ss, "cannot start the command");
	close(ss->gofd);
	ss->gofd = -1;
}

/* ms from @now to @due, at least 1 (0 when due) */
static int ms_until(uint64_t now, uint64_t due)
{
	return now >= due ? 0 : (int)((due - now + 999999) / 1000000);
}

/*
 * How long the loop may sleep: until the drain says a 32nd of its ring
 * is staged (its eventfd), a signal, or the next thing due: the end of
 * the duration, dom0's next read, the refresh, or the poll that takes
 * what is staged below the drain's threshold. Every wake-up costs dom0.
 */
static int loop_timeout(struct session *ss, uint64_t end_ns, uint64_t next_refresh,
			bool *over)
{
	int timeout = ss->o->poll_ms > 0 ? ss->o->poll_ms : POLL_MS;
	uint64_t now = tcx_clock_ns(CLOCK_MONOTONIC);
	int t;

	*over = end_ns && now >= end_ns;
	/* a decoder behind Xen goes on at once */
	if (rec_hvdrain_backlog(ss->dr) >= BACKLOG_NOW)
		return 0;
	if (end_ns && (t = ms_until(now, end_ns)) < timeout)
		timeout = t;
	if (ss->d0 && (t = ms_until(now, ss->next_d0_ns)) < timeout)
		timeout = t;
	if ((t = ms_until(now, next_refresh)) < timeout)
		timeout = t;
	return timeout;
}

/* Once a second: the domain list, trace.dat readable so far, the status line. */
static void refresh(struct session *ss, bool tty, uint64_t *next)
{
	uint64_t now = tcx_clock_ns(CLOCK_MONOTONIC);

	if (now < *next)
		return;
	refresh_domains(ss, false);
	tdat_flush(ss->w);
	if (tty)
		status_line(ss, now);
	ss->last_status_ns = now;
	*next = now + REFRESH_NS;
}

/* The run has started: every file takes its name, replacing an older one. */
static void commit_outputs(struct session *ss)
{
	const char *tmp[3] = { ss->out_tmp, ss->d0 ? ss->dom0_tmp : NULL, ss->raw_tmp };
	const char *path[3] = { ss->o->output, ss->dom0_path, ss->o->raw };

	for (int i = 0; i < 3; i++)
		if (tmp[i] && rename(tmp[i], path[i]))
			fail(ss, -errno, "%s: cannot rename it to %s: %s", tmp[i], path[i],
			     strerror(errno));
	for (int i = 0; i < ss->ng; i++)
		if (rec_guest_commit(ss->g[i]))
			fail(ss, -EIO, "%s", tcx_error());
}

/* Record until a signal, the duration, the command's end or an error. */
static void run(struct session *ss)
{
	const struct rec_record_opts *o = ss->o;
	bool tty = !o->quiet && isatty(2);
	uint64_t start_ns, next_refresh, end_ns = 0;

	ss->c0 = clock_pair();
	start_ns = tcx_clock_ns(CLOCK_MONOTONIC);
	next_refresh = start_ns + REFRESH_NS;
	ss->last_status_ns = start_ns;
	ss->started = true;
	commit_outputs(ss);
	if (o->duration > 0)
		end_ns = start_ns + (uint64_t)(o->duration * 1e9);
	release_child(ss);
	if (!o->quiet)
		note(ss, "recording %d pCPU%s%s%s%s; Ctrl-C stops", ss->ncpus,
		     ss->ncpus == 1 ? "" : "s", ss->d0 ? ", dom0 into " : "",
		     ss->d0 ? ss->dom0_path : "", ss->ng ? ", and the guests" : "");

	while (!stop_sig && !ss->err) {
		struct pollfd pfd[2] = {
			{ .fd = rec_hvdrain_fd(ss->dr), .events = POLLIN },
			{ .fd = sigpipe[0], .events = POLLIN },
		};
		bool over;
		int timeout = loop_timeout(ss, end_ns, next_refresh, &over);

		if (over)
			break;
		if (poll(pfd, 2, timeout) > 0) {
			char buf[64];

			if (pfd[1].revents & POLLIN)
				while (read(sigpipe[0], buf, sizeof(buf)) > 0)
					;
		}
		drain(ss);
		if (o->command) {
			reap(ss, false);
			if (!ss->child)
				break;
		}
		refresh(ss, tty, &next_refresh);
	}
	if (tty)
		fputc('\n', stderr);
	finish(ss);
	if (stop_sig && !o->quiet)
		note(ss, "stopped by signal %d", (int)stop_sig);
}

/* Close every file (each stays valid) and the agents; after a failure, the command goes too. */
static void close_outputs(struct session *ss, int ret)
{
	const struct rec_record_opts *o = ss->o;

	if (ss->gofd >= 0)
		close(ss->gofd);	/* the command never starts */
	if (ss->child > 0) {
		if (ret)
			kill(ss->child, SIGTERM);
		reap(ss, true);
	}
	if (ss->w) {
		int cret;

		ss->hv_direct = tdat_is_direct(ss->w);
		cret = tdat_close(ss->w);

		if (cret && !ss->err)
			fail(ss, cret, "%s: closing failed: %s", o->output, tcx_error());
	}
	if (ss->d0) {
		int cret;

		rec_dom0_stats(ss->d0, &ss->d0st);
		ss->has_d0 = true;
		dom0_kept(ss);
		cret = rec_dom0_close(ss->d0);
		ss->d0 = NULL;

		if (cret && !ss->err)
			fail(ss, cret, "%s: closing failed: %s", ss->dom0_path, tcx_error());
	}
	if (ss->g && !ss->gclosed) {
		if (!ss->started)	/* stop the agents that did start */
			stop_guests(ss, false);
		close_guests(ss, ss->started);
	}
	if (ss->rawfd >= 0 && close(ss->rawfd) && !ss->err)
		fail(ss, -errno, "%s: %s", o->raw, strerror(errno));
}

/* The summaries of a recording that ran; the session's error, if any, into tcx_error(). */
static int report(struct session *ss, int ret)
{
	const struct rec_record_opts *o = ss->o;

	if (!ret && ss->started && !o->quiet && o->log)
		summary(ss, o->log);
	if (ret && !ss->err)	/* the start's failure, for the JSON */
		fail(ss, ret, "%s", tcx_error());
	if (o->summary_json) {
		FILE *f = strcmp(o->summary_json, "-") ? fopen(o->summary_json, "w") : stdout;

		if (f) {
			summary_json(ss, f);
			if (f != stdout)
				fclose(f);
		} else if (!ss->err) {
			fail(ss, -errno, "%s: %s", o->summary_json, strerror(errno));
		}
	}
	if (!ret && ss->err) {
		ret = ss->err;
		if (ret == -ENOSPC)
			tcx_fail(ret, "disk full: %s; recording stopped, the files are "
				 "closed and valid up to that point", ss->errmsg);
		else
			tcx_fail(ret, "%s", ss->errmsg);
	}
	if (ret && !ss->started) {
		/* nothing was recorded: our files go, older ones were never touched */
		if (ss->out_tmp)
			unlink(ss->out_tmp);
		if (ss->d0_tried && ss->dom0_tmp)
			unlink(ss->dom0_tmp);
		if (ss->raw_tmp)
			unlink(ss->raw_tmp);
	}
	return ret;
}

static void free_session(struct session *ss)
{
	rec_hvdrain_close(ss->dr);
	rec_stream_free(ss->s);
	rec_sink_free(ss->sink);
	rec_hvbuf_close(ss->hv);
	if (ss->xs)
		xs_close(ss->xs);
	free(ss->g);
	free(ss->gsum);
	free(ss->runs);
	free(ss->dom0_path);
	free(ss->out_tmp);
	free(ss->dom0_tmp);
	free(ss->raw_tmp);
	free(ss->taken);
	free(ss->doms);
	free(ss);
}

/* The wall-clock start (ISO 8601 UTC, ms) and the host's names. */
static void start_context(struct session *ss)
{
	struct timespec ts;
	struct tm tm;
	char day[24];

	if (!clock_gettime(CLOCK_REALTIME, &ts) && gmtime_r(&ts.tv_sec, &tm) &&
	    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(ss->start_iso, sizeof(ss->start_iso), "%s.%03dZ", day,
			 (int)(ts.tv_nsec / 1000000));
	ss->has_uts = !uname(&ss->uts);
}

static void xen_version(struct session *ss)
{
	rec_hvbuf_xen_version(ss->hv, ss->xen_ver, sizeof(ss->xen_ver));
}

static const int sigs[4] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };

/* The signals stop the loop through a pipe it polls. */
static int catch_signals(struct sigaction old[4])
{
	struct sigaction sa = { .sa_handler = on_signal };

	stop_sig = 0;
	if (pipe2(sigpipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	return 0;
}

static void restore_signals(const struct sigaction old[4])
{
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	close(sigpipe[0]);
	close(sigpipe[1]);
	sigpipe[0] = sigpipe[1] = -1;
}

int rec_record(const struct rec_record_opts *o, int *status)
{
	struct session *ss = calloc(1, sizeof(*ss));
	struct sigaction old[4];
	char msg[TCX_ERROR_MAX];
	int ret;

	*status = 0;
	if (!ss)
		return tcx_fail(-ENOMEM, "out of memory");
	ss->o = o;
	ss->rawfd = -1;
	ss->gofd = -1;
	start_context(ss);
	ret = catch_signals(old);
	if (ret) {
		free(ss);
		return tcx_fail(ret, "cannot catch the signals: %s", strerror(-ret));
	}
	ret = open_outputs(ss);
	if (!ret)
		ret = open_hv(ss);
	if (!ret)
		xen_version(ss);
	if (!ret)
		ret = start_sources(ss);
	if (!ret)
		run(ss);
	else	/* closing may fail too: the message is the setup's */
		snprintf(msg, sizeof(msg), "%s", tcx_error());
	close_outputs(ss, ret);
	*status = ss->status;
	if (!ret && ss->started && o->at_end) {
		ss->at_end_ran = true;
		ss->at_end_ret = o->at_end(o->at_end_ctx, ss->at_end_why, sizeof(ss->at_end_why));
	}
	if (o->result) {
		memset(o->result, 0, sizeof(*o->result));
		losses(ss, o->result);
		o->result->exited = ss->reaped && WIFEXITED(ss->wstatus);
		o->result->exit_status = o->result->exited ? WEXITSTATUS(ss->wstatus) : 0;
		o->result->signaled = ss->reaped && WIFSIGNALED(ss->wstatus);
		o->result->signal = o->result->signaled ? WTERMSIG(ss->wstatus) : 0;
		o->result->interrupted = stop_sig != 0;
	}
	if (ret)
		tcx_fail(ret, "%s", msg);
	ret = report(ss, ret);
	free_session(ss);
	restore_signals(old);
	return ret;
}
