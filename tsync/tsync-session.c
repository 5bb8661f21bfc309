// SPDX-License-Identifier: GPL-2.0
/*
 * The time sync stream of an agent session: which protocol, and the
 * agent's loop for it. Protocol "xen" only asks the guest for marker
 * rounds; the measuring happens in dom0, from the two traces.
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcx-util.h"
#include "tmsg.h"
#include "tsync-internal.h"

#define POLL_MS		200

const char *tsync_pick(const char *const *offered, uint32_t n, bool xen_ok)
{
	const struct tsync_proto *p;

	for (size_t k = 0; (p = tsync_proto_at(k)); k++) {
		if (!(p->flags & TSYNC_ROLE_GUEST) ||
		    (!xen_ok && (p->flags & TSYNC_PROTO_XEN_GUEST)))
			continue;
		for (uint32_t i = 0; i < n; i++)
			if (offered[i] && !strcmp(offered[i], p->name))
				return p->name;
	}
	return NULL;
}

static int send_xen(struct tmsg_transport *t, uint32_t id, const uint32_t *w, int n)
{
	struct tmsg *m = malloc(sizeof(*m));
	uint32_t be[4] = { 0 };
	int ret;

	if (!m)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		be[i] = htobe32(w[i]);
	ret = tmsg_make_time_sync(m, TSYNC_XEN_NAME, id, be, (size_t)n * 4);
	if (!ret)
		ret = tmsg_send(t, m);
	free(m);
	return ret;
}

int tsync_xen_ask(struct tmsg_transport *t, uint32_t rounds, int timeout_ms,
		  struct tsync_xen_done *d)
{
	struct tmsg *m;
	struct tmsg_time_sync in;
	uint32_t w[4];
	int ret = send_xen(t, TSYNC_XEN_ROUNDS, &rounds, 1);

	if (ret)
		return ret;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	ret = tmsg_recv(t, m, timeout_ms);
	if (!ret && (m->cmd != TMSG_TIME_SYNC || tmsg_parse_time_sync(m, &in) ||
		     strncmp(in.proto, TSYNC_XEN_NAME, TMSG_PROTO_NAME_LEN) ||
		     in.msg_id != TSYNC_XEN_DONE || in.len < 16))
		ret = -EPROTO;
	if (!ret) {
		memcpy(w, in.payload, 16);
		d->rounds = be32toh(w[0]);
		d->flags = be32toh(w[1]);
		d->first = be32toh(w[2]);
		d->last = be32toh(w[3]);
	}
	free(m);
	return ret;
}

int tsync_xen_stop(struct tmsg_transport *t)
{
	return send_xen(t, TSYNC_XEN_STOP, NULL, 0);
}

static int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n > 0 ? (int)n : 1;
}

/* The next TIME_SYNC, in slices so that @stop is seen; 1 got one, 0 the end. */
static int next(struct tmsg_transport *t, struct tmsg *m, struct tmsg_time_sync *in,
		const volatile int *stop)
{
	for (;;) {
		int ret;

		tsync_quickack(t);
		ret = tmsg_recv(t, m, POLL_MS);

		if (ret == -ETIMEDOUT) {
			if (stop && *stop)
				return 0;
			continue;
		}
		if (ret == -ECONNRESET)
			return 0;
		if (ret)
			return ret;
		if (m->cmd != TMSG_TIME_SYNC || tmsg_parse_time_sync(m, in))
			return 0;	/* CLOSE or anything else ends the loop */
		return 1;
	}
}

static int serve_xen(struct tmsg_transport *t, struct tmsg *m, const struct tsync_agent_opts *o)
{
	struct tsync_guest_opts go = { .marker_path = o->marker_path, .hvmop = o->hvmop,
				       .pv_faults = -1, .log = o->log };
	struct tsync_guest *g = NULL;
	struct tmsg_time_sync in;
	int ret = tsync_guest_open(&g, &go);

	if (ret) {
		if (o->log)
			fprintf(o->log, "tsync: cannot open %s: %s\n", o->marker_path,
				strerror(-ret));
		return ret;
	}
	while ((ret = next(t, m, &in, o->stop)) == 1) {
		uint32_t w[4], n;

		if (strncmp(in.proto, TSYNC_XEN_NAME, TMSG_PROTO_NAME_LEN) ||
		    in.msg_id != TSYNC_XEN_ROUNDS || in.len < 4) {
			ret = 0;
			break;
		}
		memcpy(&n, in.payload, 4);
		n = be32toh(n);
		if (n > 1000)
			n = 1000;
		w[2] = tsync_guest_next_seq(g);
		w[0] = (uint32_t)tsync_guest_rounds(g, o->ncpu > 0 ? o->ncpu : online_cpus(),
						      (int)(n ? n : 1));
		w[1] = tsync_guest_hvmop_ok(g) ? TSYNC_XEN_F_HVMOP : 0;
		w[3] = tsync_guest_next_seq(g) - 1;
		ret = send_xen(t, TSYNC_XEN_DONE, w, 4);
		if (ret)
			break;
	}
	tsync_guest_close(g);
	return ret < 0 ? ret : 0;
}

static uint64_t tsc_clock(void *ctx)
{
	(void)ctx;
	return tsync_rdtsc();
}

/*
 * On xensim the agent runs on this machine, whose TSC is the simulated
 * host's: the guest's TSC (its trace stamps) comes from the simulator's
 * libxencall, which exports xensim_guest_rdtsc(). Xen's does not, so on Xen
 * the clock stays the bare instruction.
 */
static uint64_t (*sim_rdtsc)(void);
static pthread_once_t sim_once = PTHREAD_ONCE_INIT;

static void find_sim_rdtsc(void)
{
	void *p = dlsym(RTLD_DEFAULT, "xensim_guest_rdtsc");

	/* POSIX: a function's address through void * */
	memcpy(&sim_rdtsc, &p, sizeof(p));
}

static uint64_t sim_clock(void *ctx)
{
	(void)ctx;
	return sim_rdtsc();
}

static int serve_ptp(struct tmsg_transport *t, struct tmsg *m, const struct tsync_agent_opts *o)
{
	struct tmsg_time_sync in;
	uint32_t series = 0;
	cpu_set_t old;
	bool saved = !sched_getaffinity(0, sizeof(old), &old);
	tsync_clock_fn clk = tsc_clock;
	int ret;

	pthread_once(&sim_once, find_sim_rdtsc);
	if (sim_rdtsc)
		clk = sim_clock;
	while ((ret = next(t, m, &in, o->stop)) == 1) {
		uint16_t cpu;
		cpu_set_t one;
		int64_t off, ts;

		if (strncmp(in.proto, TSYNC_NONE_NAME, TMSG_PROTO_NAME_LEN) ||
		    in.msg_id != TSYNC_NONE_PROBE || in.len < 2) {
			ret = 0;
			break;
		}
		memcpy(&cpu, in.payload, 2);
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		/* a CPU we cannot pin to still gets its round: the host waits */
		sched_setaffinity(0, sizeof(one), &one);
		ret = tsync_ptp_server(t, ++series, clk, NULL, &off, &ts, NULL);
		if (saved)
			sched_setaffinity(0, sizeof(old), &old);
		if (ret)
			break;
	}
	return ret < 0 ? ret : 0;
}

/* The loops get a message buffer each (too big for a thread's stack). */
static int serve(struct tmsg_transport *t, const struct tsync_agent_opts *o,
		 int (*loop)(struct tmsg_transport *, struct tmsg *,
			     const struct tsync_agent_opts *))
{
	struct tmsg *m = malloc(sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	ret = loop(t, m, o);
	free(m);
	return ret;
}

static int xen_serve(struct tmsg_transport *t, const struct tsync_agent_opts *o)
{
	if (!o->marker_path)
		return -EINVAL;
	return serve(t, o, serve_xen);
}

static int ptp_serve(struct tmsg_transport *t, const struct tsync_agent_opts *o)
{
	return serve(t, o, serve_ptp);
}

/*
 * Every protocol, in order of preference: xen measures (an error bound),
 * ptp estimates; "none" is trace-cmd's framing of ptp's rounds.
 */
static const struct tsync_proto protos[] = {
	{ TSYNC_XEN_NAME, TSYNC_ROLE_HOST | TSYNC_ROLE_GUEST | TSYNC_PROTO_XEN_GUEST,
	  xen_serve, tsync_xen_stop },
	{ TSYNC_PTP_NAME, TSYNC_ROLE_HOST | TSYNC_ROLE_GUEST, ptp_serve, tsync_none_stop },
	{ TSYNC_NONE_NAME, TSYNC_PROTO_DRIVER, NULL, NULL },
};

const struct tsync_proto *tsync_proto_at(size_t i)
{
	return i < sizeof(protos) / sizeof(protos[0]) ? &protos[i] : NULL;
}

const struct tsync_proto *tsync_proto_wire(const char *field, size_t len)
{
	size_t n = field ? strnlen(field, len) : 0;

	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (n && strlen(protos[i].name) == n && !memcmp(protos[i].name, field, n))
			return &protos[i];
	return NULL;
}

const struct tsync_proto *tsync_proto_find(const char *name)
{
	return name ? tsync_proto_wire(name, strlen(name)) : NULL;
}

/* A protocol the host can offer. */
static bool offerable(const struct tsync_proto *p)
{
	return p && (p->flags & TSYNC_ROLE_HOST) && !(p->flags & TSYNC_PROTO_DRIVER);
}

static int bad_offer(const char *tok, size_t n)
{
	const struct tsync_proto *p;
	char names[64] = "";
	size_t at = 0;

	for (size_t i = 0; (p = tsync_proto_at(i)); i++)
		if (offerable(p) && at < sizeof(names))
			at += (size_t)snprintf(names + at, sizeof(names) - at, "%s, ", p->name);
	return tcx_fail(-EINVAL, "\"%.*s\" is not a time sync protocol (%sor none alone)",
			(int)(n > 32 ? 32 : n), tok, names);
}

int tsync_parse_offer(const char *spec, const char **out, uint32_t max)
{
	const struct tsync_proto *p;
	uint32_t n = 0;

	if (!spec) {
		for (size_t i = 0; (p = tsync_proto_at(i)); i++)
			if (offerable(p) && n < max)
				out[n++] = p->name;
		return (int)n;
	}
	if (!strcmp(spec, TSYNC_NONE_NAME))
		return 0;
	for (const char *tok = spec;; tok++) {
		size_t len = strcspn(tok, ",");
		bool dup = false;

		p = tsync_proto_wire(tok, len);
		if (!len || !offerable(p))
			return bad_offer(tok, len);
		for (uint32_t i = 0; i < n; i++)
			dup |= out[i] == p->name;
		if (!dup && n < max)
			out[n++] = p->name;
		tok += len;
		if (!*tok)
			break;
	}
	return (int)n;
}

int tsync_agent_serve(struct tmsg_transport *t, const struct tsync_agent_opts *o)
{
	const struct tsync_proto *p;

	if (!t || !o || !o->proto)
		return -EINVAL;
	p = tsync_proto_find(o->proto);
	if (!p || !(p->flags & TSYNC_ROLE_GUEST) || !p->serve)
		return -EPROTONOSUPPORT;
	return p->serve(t, o);
}
