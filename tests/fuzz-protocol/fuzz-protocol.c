// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the message parser: the input is a byte stream from
 * a peer. It goes through tmsg_recv() (over an in-memory transport, so the
 * read loop and header checks run as in a session) and every message that
 * decodes goes through its tmsg_parse_*(). What parses must build again and
 * parse to the same fields; anything else is a bug and aborts. A TRACE_REQ
 * that offers the challenge-response also runs the agent's side of it, so
 * the next message is read and judged as the host's PROOF.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "tcx-util.h"
#include "tmsg.h"

struct mem_transport {
	struct tmsg_transport t;
	const uint8_t *p;
	size_t left;
};

static ssize_t mem_read(struct tmsg_transport *t, void *buf, size_t len)
{
	struct mem_transport *m = (struct mem_transport *)t;

	if (len > m->left)
		len = m->left;
	memcpy(buf, m->p, len);
	m->p += len;
	m->left -= len;
	return len;	/* 0 at the end: the peer closed */
}

static ssize_t mem_write(struct tmsg_transport *t, const void *buf, size_t len)
{
	return len;	/* NOT_SUPP replies go nowhere */
}

static int mem_wait(struct tmsg_transport *t, short events, int timeout_ms)
{
	return 1;
}

static int mem_fd(struct tmsg_transport *t)
{
	return -1;
}

static void mem_close(struct tmsg_transport *t)
{
}

static const struct tmsg_transport_ops mem_ops = {
	mem_read, mem_write, mem_wait, mem_fd, mem_close,
};

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* What the agent's allow-list lets through is a name, never a path. */
static void check_allow_list(const struct tmsg_trace_req *r)
{
	struct agent_record_opts o;

	if (agent_parse_record_args((int)r->argc, r->argv, &o)) {
		/* a refusal's text goes back to the peer: printable only */
		for (const char *c = tcx_error(); *c; c++)
			CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
		return;
	}
	CHECK(o.nr_events <= AGENT_MAX_EVENTS);
	for (int i = 0; i < o.nr_events; i++)
		CHECK(!strchr(o.events[i], '/') && !strchr(o.events[i], '.'));
	CHECK(!strchr(o.clock, '/') && !strchr(o.clock, '.'));
	CHECK(o.buffer_kb <= AGENT_MAX_BUFFER_KB);
	CHECK(o.file_version == 6 || o.file_version == 7);
}

static void check_req(const struct tmsg *m)
{
	static struct tmsg again;
	struct tmsg_trace_req a, b;

	if (tmsg_parse_trace_req(m, &a))
		return;
	check_allow_list(&a);
	CHECK(tmsg_make_trace_req(&again, &a) == 0);
	CHECK(tmsg_parse_trace_req(&again, &b) == 0);
	CHECK(a.flags == b.flags && a.trace_id == b.trace_id);
	CHECK(a.proxy == b.proxy && a.cpus == b.cpus);
	CHECK(a.argc == b.argc && a.nr_protos == b.nr_protos);
	for (uint32_t i = 0; i < a.argc; i++)
		CHECK(!strcmp(a.argv[i], b.argv[i]));
	for (uint32_t i = 0; i < a.nr_protos; i++)
		CHECK(!strcmp(a.protos[i], b.protos[i]));
	/* AUTH goes out only with a nonce; the retired SECRET never */
	CHECK(!!a.auth_nonce == !!b.auth_nonce && !b.plain_secret);
	CHECK(!a.auth_nonce || (b.auth_version == TMSG_AUTH_VERSION &&
				!memcmp(a.auth_nonce, b.auth_nonce, TMSG_AUTH_NONCE)));
	CHECK(a.auth_nonce || a.auth_version != TMSG_AUTH_VERSION);
	tmsg_trace_req_free(&a);
	tmsg_trace_req_free(&b);
}

/* The agent's side of the exchange: the fuzz input is the host. */
static void check_agent_auth(struct tmsg_transport *t, const struct tmsg *m)
{
	static const uint8_t secret[] = "fuzzing-secret-of-16+";
	struct tmsg_auth a = { .secret = secret, .secret_len = sizeof(secret) - 1 };
	struct tmsg_trace_req r;
	int ret;

	if (tmsg_parse_trace_req(m, &r))
		return;
	if (r.auth_nonce) {
		ret = tmsg_agent_auth(t, m, &r, &a, 0);
		/* a proof made without the secret is never right */
		CHECK(ret != 0 && !a.done);
	}
	tmsg_trace_req_free(&r);
}

static void check_auth(const struct tmsg *m)
{
	static struct tmsg again;
	struct tmsg_auth_msg a, b;

	if (tmsg_parse_auth(m, &a))
		return;
	CHECK(a.mac && (a.step == TMSG_AUTH_CHALLENGE) == !!a.nonce);
	CHECK(tmsg_make_auth(&again, a.step, a.nonce, a.mac) == 0);
	CHECK(tmsg_parse_auth(&again, &b) == 0);
	CHECK(a.step == b.step && !memcmp(a.mac, b.mac, TMSG_AUTH_MAC));
	CHECK(!a.nonce || !memcmp(a.nonce, b.nonce, TMSG_AUTH_NONCE));
}

static void check_resp(const struct tmsg *m)
{
	static struct tmsg again;
	struct tmsg_trace_resp a, b;

	if (tmsg_parse_trace_resp(m, &a))
		return;
	CHECK(tmsg_make_trace_resp(&again, &a) == 0);
	CHECK(tmsg_parse_trace_resp(&again, &b) == 0);
	CHECK(a.cpus == b.cpus && a.page_size == b.page_size);
	CHECK(a.trace_id == b.trace_id && a.tsync_port == b.tsync_port);
	CHECK(!strcmp(a.tsync_proto, b.tsync_proto));
	CHECK(!memcmp(a.ports, b.ports, a.cpus * sizeof(*a.ports)));
	tmsg_trace_resp_free(&a);
	tmsg_trace_resp_free(&b);
}

static void check_init(const struct tmsg *m)
{
	struct tmsg_tinit ti;
	struct tmsg_rinit ri;

	if (!tmsg_parse_tinit(m, &ti)) {
		for (uint32_t i = 0; i < ti.nr_opts; i++)
			CHECK(strlen(ti.opts[i]) < TMSG_MAX_DATA);
		tmsg_tinit_free(&ti);
	}
	if (!tmsg_parse_rinit(m, &ri)) {
		CHECK(ri.cpus >= 1 && ri.cpus <= TMSG_MAX_CPUS);
		tmsg_rinit_free(&ri);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tmsg m;
	struct mem_transport mt = {
		.t = { .ops = &mem_ops, .name = "fuzz", .io_timeout_ms = 0 },
		.p = data,
		.left = size,
	};
	struct tmsg_time_sync ts;
	uint8_t wire[TMSG_WIRE_MAX];

	/* The pure decoder first: it must agree with the header check. */
	if (size >= TMSG_HDR_SIZE) {
		uint32_t sz;
		ssize_t n = tmsg_decode(&m, data, size);

		if (tmsg_check_header(data, &sz))
			CHECK(n == -EBADMSG);
		else
			CHECK(n == -EAGAIN || n == (ssize_t)sz || n == -EBADMSG);
		if (n > 0)
			CHECK(tmsg_encode(&m, wire) <= TMSG_WIRE_MAX);
	}

	/* Then as a session would: message after message until an error. */
	while (tmsg_recv(&mt.t, &m, 0) == 0) {
		CHECK(m.cmd < TMSG_NR_CMDS || m.cmd == TMSG_AUTH);
		CHECK(TMSG_HDR_SIZE + m.fixed_len + m.len <= TMSG_MAX_LEN + TMSG_FIXED_MAX);
		switch (m.cmd) {
		case TMSG_TRACE_REQ:
		case TMSG_TRACE_PROXY:
			check_req(&m);
			check_agent_auth(&mt.t, &m);
			break;
		case TMSG_AUTH:
			check_auth(&m);
			break;
		case TMSG_TRACE_RESP:
			check_resp(&m);
			break;
		case TMSG_TINIT:
		case TMSG_RINIT:
			check_init(&m);
			break;
		case TMSG_NOT_SUPP: {
			char why[TMSG_MAX_REASON];

			if (!tmsg_parse_not_supp(&m, why, sizeof(why)))
				CHECK(strlen(why) < TMSG_MAX_REASON);
			break;
		}
		case TMSG_TIME_SYNC:
			if (!tmsg_parse_time_sync(&m, &ts))
				CHECK(strlen(ts.proto) < TMSG_PROTO_NAME_LEN);
			break;
		default:
			break;
		}
	}
	return 0;
}
