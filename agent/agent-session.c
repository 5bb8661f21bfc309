// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: TRACE_REQ -> checks -> TRACE_RESP, the metadata as SEND_DATA
 * and FIN_DATA, per-CPU page streams, and on CLOSE: stop, drain,
 * CLOSE_RESP, restore tracefs. One session at a time; a session that fails
 * is logged, answered with NOT_SUPP and a reason where the peer can still
 * hear it, and the agent serves the next one.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs.h>

#include "agent-internal.h"
#include "tcx-util.h"
#include "tsync.h"

#define REQ_WAIT_MS	30000	/* a connected peer sends TRACE_REQ at once */
#define CLOSE_POLL_MS	200	/* how often the CLOSE wait checks for signals */
#define AUTH_WAIT_MS	TMSG_WAIT_MS	/* the host's PROOF follows at once */
#define TOKEN_MS	2000	/* a new stream's token: its first bytes */

volatile sig_atomic_t agent_stop;

struct session {
	const struct agent_config *cfg;
	struct tmsg_transport *ctl;
	const char *peer_host;
	unsigned int seq;
	FILE *log;
	struct tmsg *m;
	struct agent_trace tr;
	struct agent_stream *streams;
	struct tmsg_auth auth;	/* TCP with a secret: the session's keys */
	atomic_int stop;
	uint64_t trace_id;
	bool xen;		/* vchan streams, not TCP */
	unsigned int domid;	/* Xen: ours */
	/* time sync (tsync/): the protocol chosen and its stream */
	const char *tsync_proto;
	struct tmsg_transport *tsync_vchan;
	int tsync_lfd;
	unsigned int tsync_port;
	volatile int tsync_stop;
	pthread_t tsync_th;
	bool tsync_started;
	unsigned int tsync_refused;	/* tsync connections turned away */
};

static void refuse(struct session *s, const char *why)
{
	fprintf(s->log, "agent: session %u refused: %s\n", s->seq, why);
	if (!tmsg_make_not_supp(s->m, why))
		tmsg_send(s->ctl, s->m);
}

/*
 * The challenge-response (protocol/tmsg-auth.c) of a host that offers it;
 * a host that does not is refused, or with --insecure served as before
 * (stock trace-cmd: no secret, no tokens).
 */
static int authenticate(struct session *s, const struct tmsg_trace_req *req)
{
	char why[TMSG_MAX_REASON];
	int ret;

	if (req->auth_nonce) {
		ret = tmsg_agent_auth(s->ctl, s->m, req, &s->auth, AUTH_WAIT_MS);
		if (ret == -ECONNABORTED) {
			/* the host said why it gives up: nothing to answer */
			fprintf(s->log, "agent: session %u: %s\n", s->seq, tcx_error());
		} else if (ret == -EACCES) {
			fprintf(s->log, "agent: session %u: %s\n", s->seq, tcx_error());
			refuse(s, "wrong secret");
		} else if (ret) {
			snprintf(why, sizeof(why), "authentication: %s", tcx_error());
			refuse(s, why);
		}
		return ret;
	}
	if (req->auth_version) {
		snprintf(why, sizeof(why), "authentication version %u is not "
			 "supported (this agent speaks %d)", req->auth_version,
			 TMSG_AUTH_VERSION);
		refuse(s, why);
		return -EACCES;
	}
	if (req->plain_secret) {
		refuse(s, "the host sent its secret in clear (an older "
		       "trace-cmd-xen record): this agent takes challenge-response only");
		return -EACCES;
	}
	if (!s->cfg->insecure) {
		refuse(s, "this agent requires a secret (trace-cmd-xen record --secret-file)");
		return -EACCES;
	}
	return 0;
}

/* TRACE_REQ, the secret, the allow-list. */
static int read_request(struct session *s, struct agent_record_opts *o)
{
	struct tmsg_trace_req req;
	char why[TMSG_MAX_REASON];
	int ret;

	/* In slices, so that a signal is not kept waiting by a silent peer. */
	for (int waited = 0;; waited += CLOSE_POLL_MS) {
		ret = tmsg_recv(s->ctl, s->m, CLOSE_POLL_MS);
		if (ret != -ETIMEDOUT || agent_stop || waited >= REQ_WAIT_MS)
			break;
	}
	if (ret) {
		fprintf(s->log, "agent: %s\n", tcx_error());
		return ret;
	}
	if (s->m->cmd != TMSG_TRACE_REQ) {
		/* TRACE_PROXY included: we are never a proxy's agent */
		snprintf(why, sizeof(why), "%s is not supported here; expected TRACE_REQ",
			 tmsg_cmd_name(s->m->cmd));
		refuse(s, why);
		return -EPROTO;
	}
	ret = tmsg_parse_trace_req(s->m, &req);
	if (ret) {
		snprintf(why, sizeof(why), "%s", tcx_error());
		refuse(s, why);
		return ret;
	}
	/* Over vchan the rings are granted to the peer domain alone. */
	if (!s->xen && s->cfg->secret_len) {
		ret = authenticate(s, &req);
		if (ret) {
			tmsg_trace_req_free(&req);
			return ret;
		}
	}
	ret = agent_parse_record_args((int)req.argc, req.argv, o);
	if (ret)
		snprintf(why, sizeof(why), "%s", tcx_error());
	/*
	 * Time sync only on the x86-tsc clock: our stamps are TSC reads (and,
	 * for "xen", the hypervisor's records are host TSC). Otherwise none,
	 * as before: the host then writes no TIME_SHIFT.
	 */
	if (!ret && !strcmp(o->clock, "x86-tsc"))
		s->tsync_proto = tsync_pick(req.protos, req.nr_protos, s->xen);
	for (uint32_t i = 0; i < req.argc; i++) {
		fputs(i ? " " : "agent: peer asks for: ", s->log);
		/* the peer's bytes, shown without control characters */
		for (const char *c = req.argv[i]; *c; c++)
			fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c,
			      s->log);
	}
	if (req.argc)
		fputc('\n', s->log);
	tmsg_trace_req_free(&req);
	if (!ret && o->file_version != 6) {
		snprintf(why, sizeof(why),
			 "--file-version %d is not supported yet (use 6)",
			 o->file_version);
		ret = -EOPNOTSUPP;
	}
	if (ret)
		refuse(s, why);
	return ret;
}

static void close_listeners(struct session *s)
{
	for (int c = 0; c < s->tr.ncpus; c++) {
		if (s->streams[c].lfd >= 0)
			close(s->streams[c].lfd);
		s->streams[c].lfd = -1;
	}
}

/* Xen: stream @port is a vchan we serve; pages flow to the peer. */
static int open_vchan_stream(struct session *s, struct agent_stream *st,
			     unsigned int port)
{
	size_t ring = (size_t)(s->cfg->ring_kb ? s->cfg->ring_kb : 1024) * 1024;
	char path[TMSG_VCHAN_PATH_MAX + 1];
	int ret;

	if (ring > TMSG_VCHAN_RING_MAX)
		ring = TMSG_VCHAN_RING_MAX;
	ret = tmsg_vchan_path(path, sizeof(path), s->domid, port);
	if (!ret) {
		/* little comes back from the host on a data stream */
		st->vchan = tmsg_vchan_server(s->cfg->peer_domid, path, 0, ring);
		if (!st->vchan)
			ret = -EIO;
	}
	if (ret)
		fprintf(s->log, "agent: %s\n", tcx_error());
	st->port = port;
	return ret;
}

/* The time sync stream: a vchan after the CPUs', or a TCP listener. */
static int tsync_open(struct session *s, unsigned int next)
{
	char path[TMSG_VCHAN_PATH_MAX + 1];
	int ret;

	s->tsync_lfd = -1;
	if (s->xen) {
		s->tsync_port = (unsigned int)s->tr.ncpus + 1;
		ret = tmsg_vchan_path(path, sizeof(path), s->domid, s->tsync_port);
		if (!ret) {
			s->tsync_vchan = tmsg_vchan_server(s->cfg->peer_domid, path,
							   64 * 1024, 64 * 1024);
			if (!s->tsync_vchan)
				ret = -EIO;
		}
	} else {
		s->tsync_lfd = tmsg_tcp_listen_search(next, &s->tsync_port);
		ret = s->tsync_lfd < 0 ? s->tsync_lfd : 0;
	}
	if (ret)
		fprintf(s->log, "agent: no time sync stream: %s\n", tcx_error());
	return ret;
}

/* The host's end of the time sync stream, once it is there. */
static struct tmsg_transport *tsync_connect(struct session *s)
{
	struct sockaddr_storage peer;
	struct tmsg_transport *t;

	if (s->tsync_vchan) {
		t = s->tsync_vchan;
		while (!s->tsync_stop) {
			int ret = tmsg_vchan_wait_client(t, CLOSE_POLL_MS);

			if (ret < 0)
				return NULL;
			if (ret) {
				s->tsync_vchan = NULL;	/* ours now */
				return t;
			}
		}
		return NULL;
	}
	while (!s->tsync_stop) {
		int fd = tmsg_accept(s->tsync_lfd, CLOSE_POLL_MS, &peer, NULL);

		if (fd == -ETIMEDOUT)
			continue;
		if (fd < 0)
			return NULL;
		if (s->peer_host && !tmsg_addr_matches(&peer, s->peer_host)) {
			s->tsync_refused++;
			close(fd);
			continue;
		}
		t = tmsg_fd_transport(fd, "tsync");
		if (t && s->auth.done &&
		    tmsg_auth_check_token(t, &s->auth, TMSG_AUTH_TSYNC, TOKEN_MS)) {
			s->tsync_refused++;
			fprintf(s->log, "agent: session %u: refused a time sync "
				"connection: %s\n", s->seq, tcx_error());
			tmsg_close(t);
			continue;
		}
		return t;
	}
	return NULL;
}

static void *tsync_main(void *arg)
{
	struct session *s = arg;
	struct tmsg_transport *t = tsync_connect(s);
	char *marker = NULL, *dir = NULL;
	int ret;

	if (!t)
		return NULL;
	if (!s->tr.sim_dir) {
		/* our instance's, or the top one's (inst NULL) */
		dir = tracefs_instance_get_dir(s->tr.inst);
		if (dir && asprintf(&marker, "%s/trace_marker", dir) < 0)
			marker = NULL;
		tracefs_put_tracing_file(dir);
	} else if (asprintf(&marker, "%s/trace_marker", s->tr.sim_dir) < 0) {
		marker = NULL;
	}
	{
		struct tsync_agent_opts o = {
			.proto = s->tsync_proto, .marker_path = marker,
			.hvmop = s->xen, .ncpu = s->tr.ncpus, .stop = &s->tsync_stop,
			.log = s->log,
		};

		ret = tsync_agent_serve(t, &o);
	}
	if (ret)
		fprintf(s->log, "agent: time sync (%s): %s\n", s->tsync_proto,
			strerror(-ret));
	free(marker);
	tmsg_close(t);
	return NULL;
}

static void tsync_start(struct session *s)
{
	if (s->tsync_proto && !pthread_create(&s->tsync_th, NULL, tsync_main, s)) {
		s->tsync_started = true;
		fprintf(s->log, "agent: session %u: time sync %s\n", s->seq, s->tsync_proto);
	}
}

static void tsync_end(struct session *s)
{
	s->tsync_stop = 1;
	if (s->tsync_started)
		pthread_join(s->tsync_th, NULL);
	s->tsync_started = false;
	tmsg_close(s->tsync_vchan);
	s->tsync_vchan = NULL;
	if (s->tsync_lfd >= 0)
		close(s->tsync_lfd);
	s->tsync_lfd = -1;
}

/* Data streams (TCP ports from 1500 upward, or vchans), then TRACE_RESP. */
static int respond(struct session *s)
{
	struct tmsg_trace_resp resp = { 0 };
	unsigned int next = TMSG_DATA_PORT_START;
	uint32_t *ports;
	int ret;

	s->streams = calloc(s->tr.ncpus, sizeof(*s->streams));
	ports = calloc(s->tr.ncpus, sizeof(*ports));
	if (!s->streams || !ports) {
		free(ports);
		return -ENOMEM;
	}
	for (int c = 0; c < s->tr.ncpus; c++)
		s->streams[c].lfd = -1;
	for (int c = 0; c < s->tr.ncpus; c++) {
		struct agent_stream *st = &s->streams[c];

		if (s->xen) {
			ret = open_vchan_stream(s, st, (unsigned int)c + 1);
			if (ret) {
				refuse(s, "cannot create the data vchans");
				free(ports);
				return ret;
			}
			ports[c] = st->port;
			continue;
		}
		st->lfd = tmsg_tcp_listen_search(next, &st->port);
		if (st->lfd < 0) {
			ret = st->lfd;
			fprintf(s->log, "agent: %s\n", tcx_error());
			refuse(s, "no free data port");
			free(ports);
			return ret;
		}
		ports[c] = st->port;
		next = st->port + 1;
	}
	resp.cpus = (uint32_t)s->tr.ncpus;
	resp.page_size = s->tr.page_size;
	resp.trace_id = s->trace_id;
	resp.ports = ports;
	/* the time sync stream: vchan N+1, or the next TCP port; "" if none */
	if (s->tsync_proto && !tsync_open(s, next)) {
		snprintf(resp.tsync_proto, sizeof(resp.tsync_proto), "%s", s->tsync_proto);
		resp.tsync_port = s->tsync_port;
	} else {
		s->tsync_proto = NULL;
	}
	ret = tmsg_make_trace_resp(s->m, &resp);
	if (!ret)
		ret = tmsg_send(s->ctl, s->m);
	free(ports);
	if (ret)
		fprintf(s->log, "agent: %s\n", tcx_error());
	return ret;
}

static int start_streams(struct session *s)
{
	int ret = 0;

	for (int c = 0; c < s->tr.ncpus && !ret; c++) {
		struct agent_stream *st = &s->streams[c];

		st->cpu = c;
		st->raw_path = agent_trace_raw_path(&s->tr, c);
		st->peer_host = s->peer_host;
		st->page_size = s->tr.page_size;
		st->stop = &s->stop;
		st->log = s->log;
		st->auth = s->auth.done ? &s->auth : NULL;
		st->token_ms = TOKEN_MS;
		st->nap_us = s->tr.sleep_us;
		st->late_partial = s->tr.sim_dir != NULL;
		st->hold = s->tr.max_kb != 0;
		ret = st->raw_path ? agent_stream_start(st) : -ENOMEM;
	}
	return ret;
}

/* -m: the events @cpu's ring overwrote, from per_cpu/cpuN/stats "overrun:". */
static unsigned long long cpu_overrun(struct session *s, int cpu)
{
	char file[48], *text, *p;
	unsigned long long n = 0;

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	text = agent_trace_read(&s->tr, file);
	p = text ? strstr(text, "overrun:") : NULL;
	if (p)
		n = strtoull(p + 8, NULL, 10);
	free(text);
	return n;
}

static uint64_t stop_streams(struct session *s, unsigned int *refused)
{
	uint64_t pages = 0;

	atomic_store(&s->stop, 1);
	for (int c = 0; s->streams && c < s->tr.ncpus; c++) {
		bool held = s->streams[c].started && s->streams[c].hold;

		agent_stream_join(&s->streams[c]);
		pages += s->streams[c].pages;
		if (held)
			fprintf(s->log, "agent: cpu%d: -m %u KiB: sent the newest %llu "
				"pages; %llu older events overwritten by design\n", c,
				s->tr.max_kb, (unsigned long long)s->streams[c].pages,
				cpu_overrun(s, c));
		s->streams[c].hold = false;
		*refused += s->streams[c].refused;
		s->streams[c].refused = 0;
		free((char *)s->streams[c].raw_path);
		s->streams[c].raw_path = NULL;
	}
	return pages;
}

/* The metadata made before TRACE_RESP (see run_session), sent after it. */
static int send_metadata(struct session *s, const uint8_t *meta, size_t len)
{
	int ret = tmsg_send_data(s->ctl, meta, len);

	if (!ret)
		ret = tmsg_send_cmd(s->ctl, TMSG_FIN_DATA);
	if (ret)
		fprintf(s->log, "agent: %s\n", tcx_error());
	return ret;
}

/* Until CLOSE, the peer's disappearance, or a signal. */
static int wait_close(struct session *s)
{
	int unexpected = 0;

	while (!agent_stop) {
		int ret = tmsg_recv(s->ctl, s->m, CLOSE_POLL_MS);

		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			fprintf(s->log, "agent: %s\n", tcx_error());
			return ret;
		}
		if (s->m->cmd == TMSG_CLOSE)
			return 0;
		if (++unexpected > 8)
			return -EPROTO;
		if (s->m->cmd != TMSG_NOT_SUPP)
			tmsg_send_cmd(s->ctl, TMSG_NOT_SUPP);
	}
	return -EINTR;
}

static int run_session(struct session *s)
{
	struct agent_record_opts o;
	char why[TMSG_MAX_REASON];
	uint8_t *meta = NULL;
	size_t meta_len = 0;
	unsigned int refused = 0;
	uint64_t pages;
	double t0, t1, t2;
	int ret;

	ret = read_request(s, &o);
	if (ret)
		return ret;
	t0 = tcx_now_ns() / 1e9;
	ret = agent_trace_setup(&s->tr, &o, s->seq, s->cfg->tracing_dir);
	if (ret) {
		snprintf(why, sizeof(why), "%s", tcx_error());
		refuse(s, why);
		return ret;
	}
	s->trace_id = tcx_unique_id();
	t1 = tcx_now_ns() / 1e9;
	/*
	 * The metadata is made before TRACE_RESP: a host (trace-cmd's, ours)
	 * waits 5 s for the first SEND_DATA after TRACE_RESP, but longer for
	 * TRACE_RESP itself, and reading formats, cmdlines and the symbols into
	 * a trace.dat can take longer than 5 s in a busy guest (real Xen under
	 * TCG on a loaded host). It is in tracing's state once set up, and
	 * tracing starts only after it is sent.
	 */
	ret = agent_trace_metadata(&s->tr, s->trace_id, &meta, &meta_len);
	if (ret) {
		fprintf(s->log, "agent: metadata: %s\n", tcx_error());
		refuse(s, "cannot make the metadata");
		return ret;
	}
	t2 = tcx_now_ns() / 1e9;
	fprintf(s->log, "agent: session %u: instance set up in %.1f s, metadata "
		"(%zu bytes) made in %.1f s\n", s->seq, t1 - t0, meta_len, t2 - t1);
	ret = respond(s);
	/* trace-cmd's host runs its first ptp round before it reads the
	 * metadata: the time sync stream must be served from now on */
	if (!ret)
		tsync_start(s);
	if (!ret)
		ret = start_streams(s);
	if (!ret)
		ret = send_metadata(s, meta, meta_len);
	free(meta);
	meta = NULL;
	if (!ret)
		ret = agent_trace_on(&s->tr, true) ? -EIO : 0;
	if (!ret) {
		fprintf(s->log, "agent: session %u: tracing %d CPUs%s\n", s->seq,
			s->tr.ncpus, s->tr.top ? " in the top instance (its "
			"files are written back at the end)" : "");
		ret = wait_close(s);
	}
	tsync_end(s);
	agent_trace_on(&s->tr, false);
	pages = stop_streams(s, &refused);
	refused += s->tsync_refused;
	if (!ret) {
		ret = tmsg_send_cmd(s->ctl, TMSG_CLOSE_RESP);
		if (ret)
			fprintf(s->log, "agent: %s\n", tcx_error());
	}
	if (refused)
		fprintf(s->log, "agent: session %u: %u stream connections refused\n",
			s->seq, refused);
	fprintf(s->log, "agent: session %u: %llu pages sent%s\n", s->seq,
		(unsigned long long)pages, ret ? " (session failed)" : "");
	return ret;
}

/* A whole session on a connected control transport; always cleans up. */
static int serve_one(const struct agent_config *cfg, struct tmsg_transport *ctl,
		     const char *peer_host, unsigned int seq, bool xen,
		     unsigned int domid)
{
	struct session s = {
		.cfg = cfg, .ctl = ctl, .peer_host = peer_host, .seq = seq,
		.log = cfg->log ? cfg->log : stderr, .xen = xen, .domid = domid,
		.tsync_lfd = -1,
		.auth = { .secret = cfg->secret, .secret_len = cfg->secret_len },
	};
	unsigned int refused = 0;
	int ret;

	s.m = malloc(sizeof(*s.m));
	if (!s.m)
		return -ENOMEM;
	ret = run_session(&s);
	tsync_end(&s);
	stop_streams(&s, &refused);
	tmsg_auth_wipe(&s.auth);
	if (s.streams)
		close_listeners(&s);
	free(s.streams);
	agent_trace_teardown(&s.tr);
	free(s.m);
	return ret;
}

static void on_signal(int sig)
{
	agent_stop = 1;
}

static int setup_process(const struct agent_config *cfg, FILE *log)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cfg->tracing_dir) {
		char dir[4096];

		/* libtracefs copies it, but takes a char * */
		snprintf(dir, sizeof(dir), "%s", cfg->tracing_dir);
		if (access(dir, R_OK | X_OK) || tracefs_set_tracing_dir(dir) < 0) {
			fprintf(log, "agent: --tracing-dir %s: %s\n",
				cfg->tracing_dir, strerror(errno));
			return -EINVAL;
		}
		if (!agent_is_tracefs(cfg->tracing_dir)) {
			fprintf(log, "agent: %s is not tracefs: reading it as a "
				"simulated kernel\n", cfg->tracing_dir);
			return 0;
		}
	}
	agent_cleanup_stale(log);
	/* seconds in a slow guest: not while a host waits for the metadata */
	agent_kallsyms_prime();
	return 0;
}

int agent_serve_tcp(const struct agent_config *cfg)
{
	FILE *log = cfg->log ? cfg->log : stderr;
	unsigned int bound;
	int lfd, served = 0;

	if (setup_process(cfg, log))
		return -EINVAL;
	if (!cfg->peer_host) {
		fprintf(log, "agent: TCP mode needs the peer's address (-N)\n");
		return -EINVAL;
	}
	if (!cfg->secret_len && !cfg->insecure) {
		fprintf(log, "agent: TCP has no authentication of its own: give a "
			"secret, or --insecure to accept any process on %s\n",
			cfg->peer_host);
		return -EINVAL;
	}
	lfd = tmsg_tcp_listen(NULL, cfg->port, &bound);
	if (lfd < 0) {
		fprintf(log, "agent: %s\n", tcx_error());
		return lfd;
	}
	fprintf(log, "agent: listening on port %u, accepting %s%s\n", bound,
		cfg->peer_host, cfg->insecure ? " (insecure: no secret needed)" : "");
	fflush(log);
	if (cfg->on_listen)
		cfg->on_listen(bound, cfg->on_listen_arg);

	while (!agent_stop && (!cfg->sessions || served < cfg->sessions)) {
		struct sockaddr_storage peer;
		struct tmsg_transport *ctl;
		char who[80], name[96];
		int fd;

		agent_trace_prepare((unsigned int)served + 1, cfg->tracing_dir);
		fd = tmsg_accept(lfd, CLOSE_POLL_MS, &peer, NULL);

		if (fd == -ETIMEDOUT)
			continue;
		if (fd < 0) {
			fprintf(log, "agent: %s\n", tcx_error());
			continue;
		}
		tmsg_addr_string(&peer, who, sizeof(who));
		if (!tmsg_addr_matches(&peer, cfg->peer_host)) {
			/* As trace-cmd's -N: only the named host. */
			fprintf(log, "agent: refused connection from %s\n", who);
			close(fd);
			continue;
		}
		snprintf(name, sizeof(name), "tcp %s", who);
		ctl = tmsg_fd_transport(fd, name);
		if (!ctl)
			continue;
		fprintf(log, "agent: session %d from %s\n", served + 1, who);
		serve_one(cfg, ctl, cfg->peer_host, (unsigned int)served + 1,
			  false, 0);
		tmsg_close(ctl);
		served++;
		fflush(log);
	}
	close(lfd);
	agent_trace_unprepare();
	return 0;
}

/* The capabilities we advertise in xenstore. */
#define XEN_CAPS	"trace-cmd-v3 pages-per-cpu allow-list"

int agent_serve_xen(const struct agent_config *cfg)
{
	FILE *log = cfg->log ? cfg->log : stderr;
	char path[TMSG_VCHAN_PATH_MAX + 1];
	unsigned int domid = cfg->domid;
	bool advertised = false;
	int served = 0, ret;

	if (setup_process(cfg, log))
		return -EINVAL;
	if (domid == AGENT_DOMID_SELF) {
		ret = tmsg_xs_self_domid(&domid);
		if (ret) {
			fprintf(log, "agent: %s\n", tcx_error());
			return ret;
		}
	}
	ret = tmsg_vchan_path(path, sizeof(path), domid, 0);
	if (ret) {
		fprintf(log, "agent: %s\n", tcx_error());
		return ret;
	}
	while (!agent_stop && (!cfg->sessions || served < cfg->sessions)) {
		/* A fresh control vchan per session: closing one removes
		 * its xenstore nodes, so the next client finds a new one. */
		struct tmsg_transport *ctl =
			tmsg_vchan_server(cfg->peer_domid, path, 64 * 1024,
					  64 * 1024);

		if (!ctl) {
			fprintf(log, "agent: %s\n", tcx_error());
			ret = -EIO;
			break;
		}
		/* before state=ready the first time: a session then starts at once */
		agent_trace_prepare((unsigned int)served + 1, cfg->tracing_dir);
		if (!advertised) {
			ret = tmsg_xs_advertise(domid, XEN_CAPS, 0);
			if (ret) {
				fprintf(log, "agent: %s\n", tcx_error());
				tmsg_close(ctl);
				break;
			}
			advertised = true;
			fprintf(log, "agent: serving domain %u at %s\n",
				cfg->peer_domid, path);
			fflush(log);
		}
		ret = 0;
		while (!agent_stop && !ret)
			ret = tmsg_vchan_wait_client(ctl, CLOSE_POLL_MS);
		if (ret == 1) {
			fprintf(log, "agent: session %d from domain %u\n",
				served + 1, cfg->peer_domid);
			serve_one(cfg, ctl, NULL, (unsigned int)served + 1,
				  true, domid);
			served++;
			ret = 0;
		} else if (ret < 0) {
			fprintf(log, "agent: %s\n", tcx_error());
			ret = 0;	/* a client that went away: serve anew */
		}
		tmsg_close(ctl);
		fflush(log);
	}
	if (advertised)
		tmsg_xs_withdraw(domid);
	agent_trace_unprepare();
	return ret;
}
