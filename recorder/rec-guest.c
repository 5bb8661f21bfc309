// SPDX-License-Identifier: GPL-2.0
/*
 * record -A: the host's side of a guest agent session, as trace-cmd's
 * `record -A` runs it, into a guest file written by tdat.
 *
 * The agent sends its metadata as a version 6 trace.dat without data. We
 * do not store those bytes and append the pages at the end (trace-cmd's
 * way: per-CPU temp files, assembled after CLOSE). We parse the metadata
 * and give it to a tdat writer (header page, formats, kallsyms, printk,
 * cmdlines, options), then hand every page to tdat_write_page() as it
 * arrives. So the guest file is a valid trace.dat from the first page on:
 * a guest, an agent or a recorder that dies mid-capture leaves a file
 * readable up to its last batch, nothing is copied twice, and memory stays
 * one read buffer per CPU plus tdat's batch, whatever the capture's length.
 * It also means the guest file can be version 7 while the agent sends 6.
 *
 * One thread per guest drains its per-CPU streams (poll over all of them
 * and the control stream); the record command's own loop is not slowed
 * down by guests, and a guest that stalls or dies stalls only its thread.
 *
 * Time sync (tsync_host): the protocols go out in TRACE_REQ; the one the
 * agent picks gets its own stream and, for a guest that chose one, a
 * second thread that samples (start, every interval, end) while the
 * drain thread keeps the pages flowing (protocol xen's markers arrive in
 * those pages while the agent answers). Pages go to tsync_host_page() on
 * the drain thread, hypervisor records to tsync_host_record() on the
 * record command's thread; the solve and the TIME_SHIFT come after the
 * guest file is finished, so a failed sync never costs recorded data.
 *
 * This file opens and closes the session; rec-guest-meta.c writes the
 * metadata into the file, rec-guest-stream.c is the guest's thread,
 * rec-guest-tsync.c its time sync (shared state: rec-guest-local.h).
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xenctrl.h>
#include <xenstore.h>

#include "rec-guest-local.h"
#include "tcx-util.h"
#include "tdat.h"
#include "tmsg.h"
#include "tsync.h"

/* ---- the -A argument ---- */

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* tcx_parse_uintn() into the unsigned int fields of a spec (max fits) */
static int parse_u32(const char *s, size_t n, unsigned long max, unsigned int *out)
{
	unsigned long v;
	int ret = tcx_parse_uintn(s, n, max, &v);

	if (!ret)
		*out = (unsigned int)v;
	return ret;
}

/* A file name part: letters, digits, '.', '_', '-', '@', ':'; no "..". */
static void safe_name(char *dst, size_t len, const char *src, size_t n)
{
	size_t i;

	if (n >= len)
		n = len - 1;
	for (i = 0; i < n; i++) {
		char c = src[i];

		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			 c == '-' || c == ':' ? c : '_';
	}
	dst[i] = 0;
	if (dst[0] == '.')
		dst[0] = '_';
}

int rec_guest_parse_spec(const char *spec, struct rec_guest_spec *out)
{
	const char *at, *colon, *host = spec, *port = NULL;
	size_t hlen, slen;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec)
		return tcx_fail(-EINVAL, "-A: empty guest");
	slen = strlen(spec);
	if (slen > 255)
		return tcx_fail(-EINVAL, "-A: guest \"%.40s...\" is too long", spec);
	at = strrchr(spec, '@');
	if (at) {
		/* name@cid[:port]: vsock with a name, as trace-cmd */
		const char *c = at + 1, *p = strchr(c, ':');
		size_t clen = p ? (size_t)(p - c) : strlen(c);

		out->kind = REC_GUEST_VSOCK;
		out->port = TMSG_AGENT_PORT;
		if (at == spec || parse_u32(c, clen, 0xffffffffUL, &out->cid) ||
		    (p && parse_u32(p + 1, strlen(p + 1), 0xffffffffUL, &out->port)))
			return tcx_fail(-EINVAL,
				    "-A %s: expected name@cid[:port]", spec);
		safe_name(out->name, sizeof(out->name), spec, (size_t)(at - spec));
		return 0;
	}
	if (spec[0] == '[') {
		/* [v6 address][:port] */
		const char *end = strchr(spec, ']');

		if (!end || end == spec + 1 || (end[1] && end[1] != ':'))
			return tcx_fail(-EINVAL, "-A %s: expected [address]:port", spec);
		host = spec + 1;
		hlen = (size_t)(end - host);
		port = end[1] ? end + 2 : NULL;
	} else {
		colon = strrchr(spec, ':');
		/* two colons and no brackets: a bare IPv6 address */
		if (colon && strchr(spec, ':') != colon && !all_digits(colon + 1, strlen(colon + 1)))
			colon = NULL;
		hlen = colon ? (size_t)(colon - spec) : slen;
		port = colon ? colon + 1 : NULL;
	}
	if (!port && all_digits(host, hlen) && host == spec) {
		/* a bare number: a Xen domain id */
		out->kind = REC_GUEST_XEN;
		out->by_domid = true;
		if (parse_u32(host, hlen, 0x7fef, &out->domid))
			return tcx_fail(-EINVAL, "-A %s: not a domain id", spec);
		snprintf(out->name, sizeof(out->name), "%s", spec);
		return 0;
	}
	if (!port && host == spec && !memchr(host, '.', hlen) && !memchr(host, ':', hlen)) {
		/* a bare name: a Xen domain by name */
		out->kind = REC_GUEST_XEN;
		safe_name(out->name, sizeof(out->name), spec, slen);
		snprintf(out->xen_name, sizeof(out->xen_name), "%s", spec);
		return 0;
	}
	out->port = TMSG_AGENT_PORT;
	if (port && parse_u32(port, strlen(port), 65535, &out->port))
		return tcx_fail(-EINVAL, "-A %s: bad port \"%s\"", spec, port);
	if (hlen == 0 || hlen >= sizeof(out->host))
		return tcx_fail(-EINVAL, "-A %s: no host", spec);
	if (all_digits(host, hlen)) {
		/* cid:port, as trace-cmd */
		out->kind = REC_GUEST_VSOCK;
		if (parse_u32(host, hlen, 0xffffffffUL, &out->cid))
			return tcx_fail(-EINVAL, "-A %s: bad cid", spec);
		snprintf(out->name, sizeof(out->name), "%.*s", (int)hlen, host);
		return 0;
	}
	if (!out->port)
		return tcx_fail(-EINVAL, "-A %s: port 0", spec);
	out->kind = REC_GUEST_TCP;
	memcpy(out->host, host, hlen);
	out->host[hlen] = 0;
	/* trace-cmd names a network guest by its address */
	safe_name(out->name, sizeof(out->name), host, hlen);
	return 0;
}

bool rec_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return true;
	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

bool rec_stage_wanted(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT;
	return S_ISREG(st.st_mode);
}

char *rec_stage_path(const char *path)
{
	size_t len = strlen(path) + 32;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%s.%d.tmp", path, (int)getpid());
	return p;
}

char *rec_guest_file_path(const char *output, const char *name)
{
	const char *slash = strrchr(output, '/');
	const char *base = slash ? slash + 1 : output;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - output) : strlen(output);
	size_t len = strlen(output) + strlen(name) + 2;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%.*s-%s%s", (int)stem, output, name, output + stem);
	return p;
}

/* ---- finding the agent ---- */

/* The value of xenstore node @path, NUL-terminated, or NULL. */
/* Domain @id's name: -ENOENT without one, the parse error for a hostile one. */
static int xs_name(struct xs_handle *xs, unsigned int id, char *buf, size_t len)
{
	char path[64];
	unsigned int n = 0;
	char *v;
	int ret;

	snprintf(path, sizeof(path), "/local/domain/%u/name", id);
	v = xs_read(xs, XBT_NULL, path, &n);
	if (!v)
		return -ENOENT;
	ret = tmsg_xs_parse_text(v, n, buf, len);
	free(v);
	return ret;
}

static int xen_resolve(struct rec_guest_spec *sp)
{
	struct xs_handle *xs = xs_open(0);
	char name[sizeof(sp->xen_name)];
	int ret = 0;

	if (!xs)
		return tcx_fail(-EIO, "-A %s: cannot open xenstore (%s): "
			    "is this dom0 of a Xen host?", sp->name, strerror(errno));
	if (sp->by_domid) {
		ret = xs_name(xs, sp->domid, name, sizeof(name));
		if (ret == -ENOENT) {
			ret = tcx_fail(-ENOENT, "-A %u: no domain %u is running "
				   "(xenstore has no /local/domain/%u)", sp->domid,
				   sp->domid, sp->domid);
		} else {
			/* a name not fit to show keeps the number as the file's name */
			if (!ret && name[0])
				safe_name(sp->name, sizeof(sp->name), name, strlen(name));
			ret = 0;
		}
	} else {
		unsigned int n = 0;
		char **dir = xs_directory(xs, XBT_NULL, "/local/domain", &n);
		bool found = false;

		for (unsigned int i = 0; dir && i < n && !found; i++) {
			unsigned int id;

			if (tmsg_xs_parse_id(dir[i], (unsigned int)strlen(dir[i]),
					     TMSG_XS_DOMID_MAX, &id))
				continue;
			if (!xs_name(xs, id, name, sizeof(name)) && !strcmp(name, sp->xen_name)) {
				sp->domid = id;
				found = true;
			}
		}
		free(dir);
		if (!found)
			ret = tcx_fail(-ENOENT, "-A %s: no running domain is named "
				   "\"%s\" (see xl list)", sp->xen_name, sp->xen_name);
	}
	xs_close(xs);
	return ret;
}

static int xen_connect(struct rec_guest *g, int timeout_ms)
{
	struct tmsg_xs_agent a;
	char path[TMSG_VCHAN_PATH_MAX + 1];
	uint64_t end;
	int ret;

	ret = xen_resolve(&g->sp);
	if (ret)
		return ret;
	ret = tmsg_xs_lookup(g->sp.domid, &a);
	if (ret == -ENOENT)
		return tcx_fail(-ENOENT, "guest %s (domain %u) runs no agent: "
			    "start `trace-cmd-xen agent --xen` in it", g->sp.name, g->sp.domid);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	if (!a.ready)
		return tcx_fail(-ENOTCONN, "guest %s (domain %u): its agent is "
			    "not ready (stopped, or still starting)", g->sp.name, g->sp.domid);
	ret = tmsg_vchan_path(path, sizeof(path), g->sp.domid, a.port);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	/* Between two sessions the agent makes its control vchan anew. */
	end = tcx_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (!(g->ctl = tmsg_vchan_client(g->sp.domid, path))) {
		if (tcx_now_ns() >= end)
			return tcx_fail(-ECONNREFUSED, "guest %s (domain %u): the "
				    "agent advertised in xenstore does not answer on %s (%s): "
				    "is it still running, or serving another recorder?", g->sp.name, g->sp.domid, path,
				    tcx_error());
		usleep(50 * 1000);
	}
	return 0;
}

static int net_connect(struct rec_guest *g, int timeout_ms)
{
	char port[16], name[64];
	int fd;

	snprintf(port, sizeof(port), "%u", g->sp.port);
	if (g->sp.kind == REC_GUEST_VSOCK) {
		fd = tmsg_vsock_connect(g->sp.cid, g->sp.port);
		snprintf(name, sizeof(name), "vsock %u:%u", g->sp.cid, g->sp.port);
	} else {
		fd = tmsg_tcp_connect(g->sp.host, port, timeout_ms);
		snprintf(name, sizeof(name), "tcp %.40s:%u", g->sp.host, g->sp.port);
	}
	if (fd < 0)
		return tcx_fail(fd, "guest %s: cannot connect to its agent: %s",
			    g->sp.name, tcx_error());
	g->ctl = tmsg_fd_transport(fd, name);
	if (!g->ctl)
		return tcx_fail(-ENOMEM, "out of memory");
	return 0;
}

static int open_streams(struct rec_guest *g, const struct tmsg_trace_resp *r,
			struct tmsg_transport **t)
{
	if (g->sp.kind == REC_GUEST_XEN)
		return tmsg_host_open_streams(NULL, g->sp.domid, r, t);
	if (g->sp.kind == REC_GUEST_TCP && tmsg_host_open_streams(g->sp.host, 0, r, t))
		return -EIO;
	for (uint32_t c = 0; g->sp.kind == REC_GUEST_VSOCK && c < r->cpus; c++) {
		char name[64];
		int fd = tmsg_vsock_connect(g->sp.cid, r->ports[c]);

		snprintf(name, sizeof(name), "vsock %u:%u cpu%u", g->sp.cid, r->ports[c], c);
		t[c] = fd < 0 ? NULL : tmsg_fd_transport(fd, name);
		if (!t[c]) {
			while (c--) {
				tmsg_close(t[c]);
				t[c] = NULL;
			}
			return -EIO;
		}
	}
	/* an authenticated session: each stream opens with its CPU's token */
	for (uint32_t c = 0; g->auth.done && c < r->cpus; c++) {
		if (tmsg_auth_send_token(t[c], &g->auth, c)) {
			for (c = 0; c < r->cpus; c++) {
				tmsg_close(t[c]);
				t[c] = NULL;
			}
			return -EIO;
		}
	}
	return 0;
}

/* ---- the public functions ---- */

static void guest_free(struct rec_guest *g)
{
	if (!g)
		return;
	for (int c = 0; g->st && c < g->cpus; c++) {
		tmsg_close(g->st[c].t);
		free(g->st[c].buf);
	}
	free(g->st);
	tmsg_auth_wipe(&g->auth);
	tmsg_close(g->ctl);
	tsync_host_free(g->tsh);
	tmsg_close(g->tst);
	if (g->w)
		tdat_close(g->w);
	if (g->wakefd >= 0)
		close(g->wakefd);
	pthread_cond_destroy(&g->tcond);
	pthread_mutex_destroy(&g->tlock);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* TRACE_REQ: the allow-listed options, our trace id, the protocols; the
 * challenge-response with a secret (which never goes out itself). */
static int request(struct rec_guest *g, const struct rec_guest_opts *o,
		   struct tmsg_trace_resp *resp)
{
	const char **argv = calloc((size_t)o->nr_events * 2 + (size_t)o->nr_extra_args + 8,
				   sizeof(*argv));
	struct tmsg_trace_req req = { 0 };
	char bkb[16], why[TMSG_MAX_REASON];
	int argc = 0, ret;

	if (!argv)
		return tcx_fail(-ENOMEM, "out of memory");
	/* the one clock, the one version we parse (the file we write may
	 * still be 7), then the guest's own options as trace-cmd sends them */
	argv[argc++] = "-C";
	argv[argc++] = o->clock && *o->clock ? o->clock : "x86-tsc";
	argv[argc++] = "--file-version";
	argv[argc++] = "6";
	for (int i = 0; i < o->nr_events; i++) {
		argv[argc++] = "-e";
		argv[argc++] = o->events[i];
	}
	if (o->buffer_kb) {
		snprintf(bkb, sizeof(bkb), "%u", o->buffer_kb);
		argv[argc++] = "-b";
		argv[argc++] = bkb;
	}
	for (int i = 0; i < o->nr_extra_args; i++)
		argv[argc++] = o->extra_args[i];
	req.argc = (uint32_t)argc;
	req.argv = argv;
	req.nr_protos = g->noffer;
	req.protos = g->noffer ? g->offer : NULL;
	req.trace_id = o->host_traceid;
	if (!req.trace_id)
		req.trace_id = tcx_unique_id();
	g->host_traceid = req.trace_id;
	/*
	 * over vchan the rings are granted to dom0 alone: no secret needed;
	 * the answer comes by the open's deadline (the transport's cutoff):
	 * setting a function tracer up can take a guest minutes under emulation
	 */
	g->auth.secret = o->secret;
	g->auth.secret_len = o->secret_len;
	ret = tmsg_host_request_auth(g->ctl, &req, g->sp.kind != REC_GUEST_XEN &&
				     o->secret_len ? &g->auth : NULL, resp,
				     -1, why, sizeof(why));
	free(argv);
	/* a guest without an event is refused alone (-ENOMSG): the others record */
	if (ret == -EPERM && strstr(why, "no event"))
		return tcx_fail(-ENOMSG, "guest %s lacks an event it was given: the agent "
				"refused the session: %s", g->sp.name, why);
	if (ret == -EPERM)
		return tcx_fail(ret, "guest %s: the agent refused the session%s%s",
			    g->sp.name, why[0] ? ": " : "", why);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	return 0;
}

/* A new session's state, before anything is connected. */
static struct rec_guest *guest_new(const struct rec_guest_opts *o)
{
	struct rec_guest *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->wakefd = -1;
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->tlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->tcond, &ca);
	pthread_condattr_destroy(&ca);
	g->log = o->log;
	g->open_t0 = tcx_now_ns();
	g->sum.tsync_first_s = -1;
	g->close_ms = o->close_timeout_ms > 0 ? o->close_timeout_ms : CLOSE_MS;
	g->open_by = tcx_now_ns() + (uint64_t)(o->open_timeout_ms > 0 ? o->open_timeout_ms :
					       REC_GUEST_OPEN_MS) * 1000000ull;
	g->max_meta = o->max_meta ? o->max_meta : REC_GUEST_MAX_META;
	g->max_bytes = o->max_bytes;
	g->interval = o->tsync_interval > 0 ? o->tsync_interval : 0;
	g->mult = o->mult;
	g->shift = o->shift;
	g->cpu_khz = o->cpu_khz;
	return g;
}

/* The -A argument, the agent reached, the protocols it may be offered, the file's path. */
static int connect_agent(struct rec_guest *g, const struct rec_guest_opts *o, int timeout)
{
	char *path;
	int ret;

	ret = rec_guest_parse_spec(o->spec, &g->sp);
	if (!ret && o->name &&
	    (!*o->name || strlen(o->name) >= sizeof(g->sp.name) || strchr(o->name, '/')))
		ret = tcx_fail(-EINVAL, "-A %s --name \"%s\": 1..%zu characters, no '/'",
			       o->spec, o->name, sizeof(g->sp.name) - 1);
	if (!ret)
		ret = rec_guest_parse_protos(g, o->tsync);
	if (!ret)
		ret = g->sp.kind == REC_GUEST_XEN ? xen_connect(g, timeout)
						  : net_connect(g, timeout);
	if (ret)
		return ret;
	/* --name: the file and the GUEST entry, once the domain is found */
	if (o->name)
		snprintf(g->sp.name, sizeof(g->sp.name), "%s", o->name);
	rec_guest_tsync_offer(g, o->cpu_khz);
	path = rec_guest_file_path(o->output, g->sp.name);
	if (!path || strlen(path) >= sizeof(g->path))
		ret = tcx_fail(-ENAMETOOLONG, "%s: output name too long", o->output);
	else
		snprintf(g->path, sizeof(g->path), "%s", path);
	free(path);
	g->staged = o->stage && rec_stage_wanted(g->path);
	path = g->staged ? rec_stage_path(g->path) : NULL;
	if (g->staged && !path)
		ret = tcx_fail(-ENOMEM, "out of memory");
	snprintf(g->wpath, sizeof(g->wpath), "%s", path ? path : g->path);
	free(path);
	for (int i = 0; !ret && i < o->ntaken; i++)
		if (rec_same_file(g->path, o->taken[i]))
			ret = tcx_fail(-EEXIST, "guest %s: its file %s is %s, which this run "
				       "writes already", g->sp.name, g->path, o->taken[i]);
	return ret;
}

/* A Xen domain's vCPU count (its highest vCPU id + 1), or 0 if Xen does not say. */
static unsigned int domain_vcpus(unsigned int domid)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	xc_domaininfo_t di;
	unsigned int n = 0;

	if (!xch)
		return 0;
	if (xc_domain_getinfolist(xch, domid, 1, &di) == 1 && di.domain == domid)
		n = di.max_vcpu_id + 1;
	xc_interface_close(xch);
	return n;
}

/*
 * Streams, buffers and grant mappings are per CPU: a guest gets as many as
 * it has, which Xen knows for its domain; a network agent, a fixed cap.
 */
static int check_cpus(struct rec_guest *g, uint32_t cpus, const struct rec_guest_opts *o)
{
	unsigned int max = o->max_cpus ? o->max_cpus : REC_GUEST_MAX_CPUS;

	if (g->sp.kind == REC_GUEST_XEN) {
		unsigned int n = domain_vcpus(g->sp.domid);

		if (n && cpus > n)
			return tcx_fail(-EPROTO, "guest %s: the agent claims %u CPUs, its "
					"domain %u has %u vCPUs: refusing the guest", g->sp.name,
					cpus, g->sp.domid, n);
		if (n)
			return 0;
	}
	if (cpus > max)
		return tcx_fail(-EPROTO, "guest %s: the agent claims %u CPUs, more than "
				"--guest-max-cpus %u: refusing the guest", g->sp.name, cpus, max);
	return 0;
}

/* TRACE_RESP's shape, then one stream and one read buffer per CPU. */
static int open_data(struct rec_guest *g, const struct rec_guest_opts *o,
		     const struct tmsg_trace_resp *resp, int timeout)
{
	struct tmsg_transport **ts;
	int ret;

	ret = check_cpus(g, resp->cpus, o);
	if (ret)
		return ret;
	g->cpus = (int)resp->cpus;
	g->page_size = resp->page_size;
	g->traceid = resp->trace_id;
	if (g->page_size < 4096 || g->page_size > PAGE_MAX)
		return tcx_fail(-EPROTO, "guest %s: page size %u not supported",
				g->sp.name, g->page_size);
	g->st = calloc((size_t)g->cpus, sizeof(*g->st));
	ts = calloc((size_t)g->cpus, sizeof(*ts));
	if (!g->st || !ts) {
		free(ts);
		return tcx_fail(-ENOMEM, "out of memory");
	}
	ret = open_streams(g, resp, ts);
	if (ret) {
		free(ts);
		return tcx_fail(-EIO, "guest %s: cannot open its data streams: %s",
				g->sp.name, tcx_error());
	}
	rec_guest_tsync_start(g, resp, timeout);
	for (int c = 0; c < g->cpus; c++) {
		g->st[c].t = ts[c];
		g->st[c].open = true;
		g->st[c].buf = malloc(READ_CHUNK + g->page_size);
		if (!g->st[c].buf)
			ret = -ENOMEM;
	}
	free(ts);
	return ret ? tcx_fail(ret, "out of memory") : 0;
}

/* The metadata, received whole, into the guest's new file. */
static int receive_metadata(struct rec_guest *g, const struct rec_guest_opts *o)
{
	struct meta_buf mb = { .max = g->max_meta };
	ssize_t got;
	int ret;

	/* the open's deadline caps it (the transport's cutoff) */
	got = tmsg_recv_data(g->ctl, rec_guest_meta_sink, &mb, -1, g->max_meta);
	if (got == -EFBIG)
		ret = tcx_fail(-EFBIG, "guest %s: its metadata is over %zu bytes "
			       "(--guest-max-meta): refusing the guest", g->sp.name, g->max_meta);
	else if (got < 0)
		ret = tcx_fail((int)got, "guest %s: receiving its metadata: %s",
			       g->sp.name, tcx_error());
	else
		ret = rec_guest_make_file(g, o, &mb);
	free(mb.b);
	return ret;
}

/* A thread that leaves every signal to the record command's own thread. */
static int spawn(pthread_t *th, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		pthread_setname_np(*th, name);	/* for top and perf */
	return -ret;
}

/* The summary's fixed part, then the guest's thread and its time sync thread. */
static int start_threads(struct rec_guest *g)
{
	int ret;

	g->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->wakefd < 0)
		return tcx_fail(-errno, "eventfd: %s", strerror(errno));
	snprintf(g->sum.name, sizeof(g->sum.name), "%s", g->sp.name);
	snprintf(g->sum.path, sizeof(g->sum.path), "%s", g->path);
	g->sum.kind = g->sp.kind;
	g->sum.domid = g->sp.domid;
	g->sum.cpus = g->cpus;
	g->sum.traceid = g->traceid;
	g->t0_ns = tcx_now_ns();
	ret = spawn(&g->th, rec_guest_drain_main, g, "tcx-guest");
	if (ret)
		return tcx_fail(ret, "cannot start a thread: %s", strerror(-ret));
	g->started = true;
	if (g->tsh) {
		ret = spawn(&g->tth, rec_guest_tsync_main, g, "tcx-tsync");
		if (ret)
			rec_guest_tnote(g, "cannot start its time sync thread: %s",
					strerror(-ret));
		g->tstarted = !ret;
	}
	return 0;
}

int rec_guest_open(struct rec_guest **out, const struct rec_guest_opts *o)
{
	int timeout = o->timeout_ms > 0 ? o->timeout_ms : CONNECT_MS;
	struct tmsg_trace_resp resp = { 0 };
	char msg[TCX_ERROR_MAX];
	struct rec_guest *g;
	int ret;

	*out = NULL;
	g = guest_new(o);
	if (!g)
		return tcx_fail(-ENOMEM, "out of memory");
	if (o->open_timeout_ms > 0 && timeout > o->open_timeout_ms)
		timeout = o->open_timeout_ms;
	ret = connect_agent(g, o, timeout);
	/* every wait of the open ends by its deadline, whatever the guest sends */
	tmsg_set_cutoff(g->ctl, g->open_by);
	if (!ret)
		ret = request(g, o, &resp);
	if (!ret)
		ret = open_data(g, o, &resp, timeout);
	if (!ret)
		ret = receive_metadata(g, o);
	if (!ret) {
		tmsg_set_cutoff(g->ctl, 0);
		tmsg_set_cutoff(g->tst, 0);
		rec_guest_tsync_xen_setup(g);
		ret = start_threads(g);
	}
	tmsg_trace_resp_free(&resp);
	if (!ret) {
		*out = g;
		return 0;
	}
	/* the cleanup may fail too: the message is the first failure's */
	if (ret == -ETIMEDOUT || tcx_now_ns() >= g->open_by) {
		const char *why = tcx_error();
		char who[80];

		/* named once */
		snprintf(who, sizeof(who), "guest %s: ", g->sp.name);
		if (!strncmp(why, who, strlen(who)))
			why += strlen(who);
		snprintf(msg, sizeof(msg), "%sabandoned: not open within %.1f s "
			 "(--guest-open-timeout): %s", who,
			 (o->open_timeout_ms > 0 ? o->open_timeout_ms : REC_GUEST_OPEN_MS) / 1e3,
			 why);
	} else
		snprintf(msg, sizeof(msg), "%s", tcx_error());
	if (tcx_now_ns() >= g->open_by)
		ret = -ETIMEDOUT;
	if (g->w) {
		tdat_close(g->w);
		g->w = NULL;
		unlink(g->wpath);	/* nothing recorded: no empty file left */
	}
	guest_free(g);
	return tcx_fail(ret, "%s", msg);
}

const char *rec_guest_name(const struct rec_guest *g)
{
	return g->sp.name;
}

const char *rec_guest_output(const struct rec_guest *g)
{
	return g->path;
}

uint64_t rec_guest_id(const struct rec_guest *g)
{
	return g->traceid;
}

int rec_guest_domid(const struct rec_guest *g)
{
	return g->sp.kind == REC_GUEST_XEN ? (int)g->sp.domid : -1;
}

int rec_guest_cpus(const struct rec_guest *g)
{
	return g->cpus;
}

int rec_guest_add_host_entry(const struct rec_guest *g, struct tdat_writer *host)
{
	uint32_t *pids = calloc((size_t)g->cpus, sizeof(*pids));
	int ret;

	if (!pids)
		return -ENOMEM;
	for (int c = 0; c < g->cpus; c++)
		/* Xen: the vCPU's pseudo task in the hypervisor file; the
		 * network has no such task: -1, as trace-cmd writes */
		pids[c] = g->sp.kind == REC_GUEST_XEN ?
			  (uint32_t)rec_vcpu_pid(g->sp.domid, (uint32_t)c) : UINT32_MAX;
	ret = tdat_add_guest(host, g->sp.name, g->traceid, (uint32_t)g->cpus, pids);
	free(pids);
	return ret;
}

void rec_guest_stats(struct rec_guest *g, struct rec_guest_summary *s)
{
	pthread_mutex_lock(&g->lock);
	*s = g->sum;
	pthread_mutex_unlock(&g->lock);
}

void rec_guest_request_stop(struct rec_guest *g)
{
	uint64_t one = 1;

	if (g->tstarted) {
		/* the last sample first; the tsync thread then lets CLOSE out */
		pthread_mutex_lock(&g->tlock);
		g->treq_stop = true;
		pthread_cond_signal(&g->tcond);
		pthread_mutex_unlock(&g->tlock);
		return;
	}
	atomic_store(&g->stop, 1);
	if (write(g->wakefd, &one, sizeof(one)) < 0)
		return;	/* the counter is full: a wakeup is pending anyway */
}

bool rec_guest_stopped(struct rec_guest *g)
{
	/* the drain thread ends after the tsync thread let CLOSE out */
	return !g->started || atomic_load(&g->done);
}

void rec_guest_set_deadline(struct rec_guest *g, uint64_t ns)
{
	uint64_t one = 1, cur = atomic_load(&g->cutoff);

	if (cur && ns && cur <= ns)
		return;
	atomic_store(&g->cutoff, ns);
	tmsg_set_cutoff(g->ctl, ns);
	tmsg_set_cutoff(g->tst, ns);
	/* the drain thread looks at the deadline on its next turn */
	if (g->wakefd >= 0 && write(g->wakefd, &one, sizeof(one)) < 0)
		return;	/* the counter is full: a wakeup is pending anyway */
}

int rec_guest_stop(struct rec_guest *g)
{
	if (!g->started)
		return 0;
	rec_guest_request_stop(g);
	if (g->tstarted) {
		pthread_join(g->tth, NULL);
		g->tstarted = false;
	}
	pthread_join(g->th, NULL);
	g->started = false;
	/* no sample after this; the solve waits for rec_guest_close() */
	tsync_host_stop(g->tsh);
	tmsg_close(g->tst);
	g->tst = NULL;
	/* the streams and the control are done with */
	for (int c = 0; c < g->cpus; c++) {
		tmsg_close(g->st[c].t);
		g->st[c].t = NULL;
	}
	tmsg_close(g->ctl);
	g->ctl = NULL;
	return g->sum.error;
}

int rec_guest_set_tsc2nsec(struct rec_guest *g, uint32_t mult, uint32_t shift)
{
	if (g->started)
		return -EBUSY;
	g->mult = mult;
	g->shift = shift;
	return tdat_set_tsc2nsec(g->w, mult, shift, 0);
}

int rec_guest_commit(struct rec_guest *g)
{
	if (!g->staged)
		return 0;
	if (rename(g->wpath, g->path))
		return tcx_fail(-errno, "%s: cannot rename it to %s: %s", g->wpath, g->path,
				strerror(errno));
	snprintf(g->wpath, sizeof(g->wpath), "%s", g->path);
	g->staged = false;
	return 0;
}

int rec_guest_close(struct rec_guest *g, struct rec_guest_summary *sum)
{
	int ret;

	if (!g)
		return 0;
	rec_guest_stop(g);
	ret = tdat_close(g->w);
	g->w = NULL;
	if (g->staged) {
		/* the run never started: no file of ours, an older one untouched */
		unlink(g->wpath);
		if (sum)
			*sum = g->sum;
		guest_free(g);
		return 0;
	}
	if (ret && !g->sum.error) {
		g->sum.error = ret;
		snprintf(g->sum.note, sizeof(g->sum.note), "%.160s: closing failed: %s",
			 g->path, strerror(-ret));
	}
	/* the data is safe on disk: now the solve and TIME_SHIFT */
	rec_guest_tsync_finish(g, !g->sum.error);
	ret = g->sum.error;
	if (sum)
		*sum = g->sum;
	guest_free(g);
	return ret;
}

void rec_guest_summary_print(const struct rec_guest_summary *s, FILE *f)
{
	fprintf(f, "guest %s", s->name);
	if (s->kind == REC_GUEST_XEN)
		fprintf(f, " (domain %u)", s->domid);
	fprintf(f, ": %s, %d CPU%s, %" PRIu64 " events in %" PRIu64 " pages "
		"(%.1f MiB received in %.1f s), %" PRIu64 " lost",
		s->path, s->cpus, s->cpus == 1 ? "" : "s", s->events, s->pages,
		(double)s->bytes / (1 << 20), s->seconds, s->missed);
	if (s->bad_pages)
		fprintf(f, ", %" PRIu64 " bad pages skipped", s->bad_pages);
	fputc('\n', f);
	if (s->options_dropped || s->header_page_differs)
		fprintf(f, "  metadata: %u option%s dropped%s\n", s->options_dropped,
			s->options_dropped == 1 ? "" : "s",
			s->header_page_differs ? ", its header page replaced by dom0's" : "");
	if (s->limit[0])
		fprintf(f, "  its stream ended at the --guest-%s limit\n", s->limit);
	if (s->error)
		fprintf(f, "  error: %s\n", s->note);
	else if (s->died)
		fprintf(f, "  %s: the file is valid and ends there%s\n", s->note,
			s->cut_bytes ? " (a page cut short was dropped)" : "");
	if (s->tsync_note[0])
		fprintf(f, "  %s\n", s->tsync_note);
}

void rec_guest_summary_json(const struct rec_guest_summary *s, FILE *f)
{
	fputs("{\"name\": ", f);
	tcx_json_str(f, s->name);
	fprintf(f, ", \"transport\": \"%s\", ",
		s->kind == REC_GUEST_XEN ? "vchan" : s->kind == REC_GUEST_TCP ? "tcp" : "vsock");
	if (s->kind == REC_GUEST_XEN)
		fprintf(f, "\"domid\": %u, ", s->domid);
	fputs("\"file\": ", f);
	tcx_json_str(f, s->path);
	fprintf(f, ", \"cpus\": %d, \"traceid\": %" PRIu64 ", \"events\": %" PRIu64
		", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"bad_pages\": %" PRIu64 ", \"cut_bytes\": %" PRIu64 ", \"seconds\": %.3f"
		", \"options_dropped\": %u, \"header_page_differs\": %s"
		", \"died\": %s, \"abandoned\": \"%s\", \"limit\": \"%s\", \"error\": %d"
		", \"note\": ",
		s->cpus, s->traceid, s->events, s->pages, s->bytes, s->missed, s->bad_pages,
		s->cut_bytes, s->seconds, s->options_dropped,
		s->header_page_differs ? "true" : "false", s->died ? "true" : "false",
		s->abandoned, s->limit, s->error);
	tcx_json_str(f, s->note);
	fputs(", \"tsync\": {\"protocol\": ", f);
	if (s->tsync_proto[0])
		tcx_json_str(f, s->tsync_proto);
	else
		fputs("null", f);
	fprintf(f, ", \"time_shift\": %s, \"samples\": %u, \"rounds\": %u, \"refused\": %u"
		", \"bound_ns\": ", s->tsync_shift ? "true" : "false", s->tsync_samples,
		s->tsync_rounds, s->tsync_refused);
	if (s->tsync_bound_ns >= 0)
		fprintf(f, "%" PRId64, s->tsync_bound_ns);
	else
		fputs("null", f);
	fputs(", \"first_sample_s\": ", f);
	if (s->tsync_first_s >= 0)
		fprintf(f, "%.6f", s->tsync_first_s);
	else
		fputs("null", f);
	fputs(", \"note\": ", f);
	tcx_json_str(f, s->tsync_note);
	fputs("}}", f);
}

