// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the message layer: every command round trip, the bytes of
 * stock trace-cmd 3.1.6 (trace-cmd's lib/trace-cmd/trace-msg.c), and bad input:
 * truncated, oversized, out-of-order and unknown messages, malformed
 * parameters, a peer that stops reading, cmd_size growth and shrink.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcx-util.h"
#include "tmsg.h"

static uint8_t wire[TMSG_WIRE_MAX];

/* Encode, decode and encode again: the bytes must be identical. */
static size_t roundtrip(const struct tmsg *m, struct tmsg *out)
{
	uint8_t again[TMSG_WIRE_MAX];
	size_t n = tmsg_encode(m, wire);
	ssize_t used = tmsg_decode(out, wire, n);

	assert_int_equal(used, n);
	assert_int_equal(tmsg_encode(out, again), n);
	assert_memory_equal(again, wire, n);
	return n;
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* ---- framing ---- */

static void test_header_checks(void **state)
{
	uint8_t h[12];
	uint32_t size;

	be32(h, 12); be32(h + 4, TMSG_CLOSE); be32(h + 8, 0);
	assert_int_equal(tmsg_check_header(h, &size), 0);
	assert_int_equal(size, 12);

	be32(h, 11);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "size 11"));
	be32(h, 8193);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
	be32(h, 8192);
	assert_int_equal(tmsg_check_header(h, &size), 0);
	be32(h, 12); be32(h + 4, 12);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "unknown command 12"));
	be32(h + 4, 0xffffffff);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
	/* fixed part longer than the message */
	be32(h, 20); be32(h + 4, TMSG_TRACE_REQ); be32(h + 8, 16);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
	be32(h + 8, 0xfffffff0);
	assert_int_equal(tmsg_check_header(h, &size), -EBADMSG);
}

static void test_simple_cmds(void **state)
{
	static const uint32_t cmds[] = { TMSG_CLOSE, TMSG_FIN_DATA,
		TMSG_NOT_SUPP, TMSG_CLOSE_RESP, TMSG_CONT };
	struct tmsg *m = malloc(sizeof(*m)), *d = malloc(sizeof(*d));

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		assert_int_equal(tmsg_make(m, cmds[i]), 0);
		assert_int_equal(roundtrip(m, d), 12);
		assert_int_equal(d->cmd, cmds[i]);
		assert_int_equal(wire[3], 12);
		assert_int_equal(wire[7], cmds[i]);
	}
	assert_int_equal(tmsg_make(m, 12), -EINVAL);
	assert_string_equal(tmsg_cmd_name(TMSG_TRACE_PROXY), "TRACE_PROXY");
	assert_string_equal(tmsg_cmd_name(99), "UNKNOWN");

	/* NOT_SUPP with our reason text */
	char why[64];

	assert_int_equal(tmsg_make_not_supp(m, "option -p is not allowed"), 0);
	roundtrip(m, d);
	assert_int_equal(tmsg_parse_not_supp(d, why, sizeof(why)), 0);
	assert_string_equal(why, "option -p is not allowed");
	tmsg_make(m, TMSG_NOT_SUPP);
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	memcpy(m->payload, "a\nb", 4);
	m->len = 4;
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), -EBADMSG);
	memcpy(m->payload, "ab\0c\0", 5);
	m->len = 5;
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), -EBADMSG);

	/* A CLOSE with a payload is malformed. */
	uint8_t b[16] = { 0 };

	be32(b, 16); be32(b + 4, TMSG_CLOSE);
	assert_int_equal(tmsg_decode(d, b, 16), -EBADMSG);
	free(m);
	free(d);
}

static void test_truncated_decode(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg *d = malloc(sizeof(*d));
	size_t n;

	tmsg_make_data(m, "hello", 5);
	n = tmsg_encode(m, wire);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tmsg_decode(d, wire, i), -EAGAIN);
	assert_int_equal(tmsg_decode(d, wire, n), n);
	assert_int_equal(d->len, 5);
	free(m);
	free(d);
}

/* ---- commands ---- */

static void test_tinit_rinit(void **state)
{
	const char *opts[] = { "tcp" };
	uint32_t ports[] = { 1500, 1501, 4294967295u };
	struct tmsg *m = malloc(sizeof(*m)), *d = malloc(sizeof(*d));
	struct tmsg_tinit ti;
	struct tmsg_rinit ri;

	assert_int_equal(tmsg_make_tinit(m, 2, 4096, opts, 1), 0);
	assert_int_equal(roundtrip(m, d), 12 + 12 + 4);
	assert_int_equal(tmsg_parse_tinit(d, &ti), 0);
	assert_int_equal(ti.cpus, 2);
	assert_int_equal(ti.page_size, 4096);
	assert_int_equal(ti.nr_opts, 1);
	assert_string_equal(ti.opts[0], "tcp");
	tmsg_tinit_free(&ti);

	assert_int_equal(tmsg_make_rinit(m, 3, ports), 0);
	roundtrip(m, d);
	assert_memory_equal(d->payload, "1500\0" "1501\0" "4294967295", 21);
	assert_int_equal(tmsg_parse_rinit(d, &ri), 0);
	assert_int_equal(ri.cpus, 3);
	assert_int_equal(ri.ports[2], 4294967295u);
	tmsg_rinit_free(&ri);

	/* wrong command */
	tmsg_make(m, TMSG_CLOSE);
	assert_int_equal(tmsg_parse_rinit(m, &ri), -EPROTO);
	free(m);
	free(d);
}

static void test_rinit_bad(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_rinit ri;
	static const struct {
		uint32_t cpus;
		const char *s;
		size_t len;
	} bad[] = {
		{ 2, "1500\0", 5 },		/* too few */
		{ 1, "1500\0" "1501\0", 10 },	/* too many */
		{ 1, "1500", 4 },		/* not terminated */
		{ 1, "15x0\0", 5 },		/* not a number */
		{ 1, "-1\0", 3 },
		{ 1, "\0", 1 },			/* empty */
		{ 1, "4294967296\0", 11 },	/* > u32 */
		{ 1, "00000000001\0", 12 },	/* too long */
		{ 0, "", 0 },			/* no CPU */
		{ 5000, "1\0", 2 },		/* too many CPUs */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tmsg_make(m, TMSG_RINIT);
		be32(m->fixed, bad[i].cpus);
		memcpy(m->payload, bad[i].s, bad[i].len);
		m->len = bad[i].len;
		assert_int_equal(tmsg_parse_rinit(m, &ri), -EBADMSG);
		assert_null(ri.ports);
	}
	free(m);
}

static void test_tinit_bad(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_tinit ti;
	const char *opts[] = { "tcp", "vsock" };

	tmsg_make_tinit(m, 0, 4096, NULL, 0);
	assert_int_equal(tmsg_parse_tinit(m, &ti), -EBADMSG);
	tmsg_make_tinit(m, 1, 4097, NULL, 0);
	assert_int_equal(tmsg_parse_tinit(m, &ti), -EBADMSG);
	tmsg_make_tinit(m, 1, 4096, opts, 2);
	be32(m->fixed + 8, 3);		/* says 3 options, has 2 */
	assert_int_equal(tmsg_parse_tinit(m, &ti), -EBADMSG);
	be32(m->fixed + 8, 1);		/* says 1, has 2 */
	assert_int_equal(tmsg_parse_tinit(m, &ti), -EBADMSG);
	be32(m->fixed + 8, 0xffffffff);
	assert_int_equal(tmsg_parse_tinit(m, &ti), -EBADMSG);
	be32(m->fixed + 8, 2);
	assert_int_equal(tmsg_parse_tinit(m, &ti), 0);
	assert_string_equal(ti.opts[1], "vsock");
	tmsg_tinit_free(&ti);
	free(m);
}

/*
 * TRACE_REQ as stock `trace-cmd record -A 127.0.0.1:port -C local -e
 * sched:sched_switch` sends it (seen with strace).
 */
static const uint8_t stock_trace_req[84] = {
	0x00, 0x00, 0x00, 0x54, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x10,
	0x00, 0x00, 0x00, 0x00,				/* flags */
	0x00, 0x00, 0x00, 0x00,				/* argc (unused) */
	0xf8, 0xf8, 0x12, 0x34, 0x56, 0x78, 0x71, 0xd7,	/* trace_id */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x23,	/* ARGS, 35 */
	0x00, 0x00, 0x00, 0x04,
	'-', 'C', 0, 'l', 'o', 'c', 'a', 'l', 0, '-', 'e', 0,
	's', 'c', 'h', 'e', 'd', ':', 's', 'c', 'h', 'e', 'd', '_',
	's', 'w', 'i', 't', 'c', 'h', 0,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,	/* TSYNC_PROTOS, 5 */
	'p', 't', 'p', 0, 0,
};

/* The stock agent's TRACE_RESP to it. */
static const uint8_t stock_trace_resp[62] = {
	0x00, 0x00, 0x00, 0x3e, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x28,
	0x00, 0x00, 0x00, 0x00,				/* flags */
	0x00, 0x00, 0x00, 0x02,				/* cpus */
	0x00, 0x00, 0x10, 0x00,				/* page_size */
	0x3c, 0x5a, 0x11, 0x22, 0x33, 0x44, 0x9e, 0x01,	/* trace_id */
	'p', 't', 'p', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x00, 0x00, 0x05, 0xde,				/* tsync_port 1502 */
	'1', '5', '0', '0', 0, '1', '5', '0', '1', 0,
};

static void test_stock_trace_req(void **state)
{
	struct tmsg *m = malloc(sizeof(*m)), *e = malloc(sizeof(*e));
	struct tmsg_trace_req req, again;

	assert_int_equal(tmsg_decode(m, stock_trace_req, 84), 84);
	assert_int_equal(m->cmd, TMSG_TRACE_REQ);
	assert_int_equal(m->wire_cmd_size, 16);
	assert_int_equal(tmsg_parse_trace_req(m, &req), 0);
	assert_int_equal(req.flags, 0);
	assert_true(req.trace_id == 0xf8f81234567871d7ULL);
	assert_int_equal(req.argc, 4);
	assert_string_equal(req.argv[0], "-C");
	assert_string_equal(req.argv[1], "local");
	assert_string_equal(req.argv[2], "-e");
	assert_string_equal(req.argv[3], "sched:sched_switch");
	assert_int_equal(req.nr_protos, 1);
	assert_string_equal(req.protos[0], "ptp");
	assert_null(req.auth_nonce);
	assert_int_equal(req.auth_version, 0);
	assert_false(req.plain_secret);
	assert_false(req.proxy);

	/* Our encoder, from the parsed fields, gives the same 84 bytes. */
	assert_int_equal(tmsg_make_trace_req(e, &req), 0);
	assert_int_equal(tmsg_encode(e, wire), 84);
	assert_memory_equal(wire, stock_trace_req, 84);
	assert_int_equal(tmsg_parse_trace_req(e, &again), 0);
	tmsg_trace_req_free(&again);
	tmsg_trace_req_free(&req);
	free(m);
	free(e);
}

static void test_stock_trace_resp(void **state)
{
	struct tmsg *m = malloc(sizeof(*m)), *e = malloc(sizeof(*e));
	struct tmsg_trace_resp resp;

	assert_int_equal(tmsg_decode(m, stock_trace_resp, 62), 62);
	assert_int_equal(tmsg_parse_trace_resp(m, &resp), 0);
	assert_int_equal(resp.flags, 0);
	assert_int_equal(resp.cpus, 2);
	assert_int_equal(resp.page_size, 4096);
	assert_true(resp.trace_id == 0x3c5a112233449e01ULL);
	assert_string_equal(resp.tsync_proto, "ptp");
	assert_int_equal(resp.tsync_port, 1502);
	assert_int_equal(resp.ports[0], 1500);
	assert_int_equal(resp.ports[1], 1501);

	assert_int_equal(tmsg_make_trace_resp(e, &resp), 0);
	assert_int_equal(tmsg_encode(e, wire), 62);
	assert_memory_equal(wire, stock_trace_resp, 62);
	tmsg_trace_resp_free(&resp);
	free(m);
	free(e);
}

static void test_trace_req_auth_proxy(void **state)
{
	const char *argv[] = { "-e", "sched" };
	const char *protos[] = { "xen", "ptp" };
	uint8_t nonce[TMSG_AUTH_NONCE];
	struct tmsg_trace_req req = {
		.flags = TMSG_FL_USE_FIFOS, .trace_id = 42,
		.argc = 2, .argv = argv, .nr_protos = 2, .protos = protos,
		.auth_nonce = nonce, .proxy = true, .cpus = 4,
	};
	struct tmsg *m = malloc(sizeof(*m)), *d = malloc(sizeof(*d));
	struct tmsg_trace_req out;

	for (size_t i = 0; i < sizeof(nonce); i++)
		nonce[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(tmsg_make_trace_req(m, &req), 0);
	assert_int_equal(m->cmd, TMSG_TRACE_PROXY);
	roundtrip(m, d);
	assert_int_equal(tmsg_parse_trace_req(d, &out), 0);
	assert_true(out.proxy);
	assert_int_equal(out.cpus, 4);
	assert_int_equal(out.flags, TMSG_FL_USE_FIFOS);
	assert_int_equal(out.argc, 2);
	assert_string_equal(out.argv[1], "sched");
	assert_int_equal(out.nr_protos, 2);
	assert_string_equal(out.protos[0], "xen");
	assert_string_equal(out.protos[1], "ptp");
	assert_int_equal(out.auth_version, TMSG_AUTH_VERSION);
	assert_non_null(out.auth_nonce);
	assert_memory_equal(out.auth_nonce, nonce, sizeof(nonce));
	assert_false(out.plain_secret);
	tmsg_trace_req_free(&out);

	/* An empty request: no parameters at all. */
	memset(&req, 0, sizeof(req));
	tmsg_make_trace_req(m, &req);
	assert_int_equal(m->len, 0);
	assert_int_equal(tmsg_parse_trace_req(m, &out), 0);
	assert_int_equal(out.argc, 0);
	tmsg_trace_req_free(&out);
	free(m);
	free(d);
}

/* Build a TRACE_REQ whose payload is @p (@len bytes). */
static struct tmsg *raw_req(const void *p, size_t len)
{
	struct tmsg *m = malloc(sizeof(*m));

	tmsg_make(m, TMSG_TRACE_REQ);
	memcpy(m->payload, p, len);
	m->len = len;
	return m;
}

static void test_trace_req_params(void **state)
{
	static const struct {
		const char *what;
		const char *p;
		size_t len;
		int ret;
	} cases[] = {
		{ "unknown id skipped",
		  "\0\0\0\x07\0\0\0\x03" "abc" "\0\0\0\1\0\0\0\5ptp\0\0", 24, 0 },
		{ "unknown empty id", "\xff\xff\xff\xff\0\0\0\0", 8, 0 },
		{ "overrun", "\0\0\0\x07\0\0\0\x09" "abc", 11, -EBADMSG },
		{ "stray bytes", "\0\0\0\x07\0\0\0\0" "abc", 11, -EBADMSG },
		{ "huge length", "\0\0\0\0\xff\xff\xff\xff", 8, -EBADMSG },
		{ "args short", "\0\0\0\0\0\0\0\3" "\0\0\0", 11, -EBADMSG },
		{ "argc too big", "\0\0\0\0\0\0\0\7" "\0\0\0\2-e\0", 15, -EBADMSG },
		{ "argc huge", "\0\0\0\0\0\0\0\7" "\xff\xff\xff\xff-e\0", 15, -EBADMSG },
		{ "arg unterminated", "\0\0\0\0\0\0\0\6" "\0\0\0\1-e", 14, -EBADMSG },
		{ "extra arg", "\0\0\0\0\0\0\0\x0a" "\0\0\0\1-e\0-e\0", 18, -EBADMSG },
		{ "args twice", "\0\0\0\0\0\0\0\4\0\0\0\0" "\0\0\0\0\0\0\0\4\0\0\0\0",
		  24, -EBADMSG },
		{ "protos no end", "\0\0\0\1\0\0\0\4ptp\0", 12, -EBADMSG },
		{ "protos unterminated", "\0\0\0\1\0\0\0\3ptp", 11, -EBADMSG },
		{ "protos empty name", "\0\0\0\1\0\0\0\6\0ptp\0\0", 14, -EBADMSG },
		{ "protos long name",
		  "\0\0\0\1\0\0\0\x12" "abcdefghijklmnop\0\0", 26, -EBADMSG },
		{ "protos only end", "\0\0\0\1\0\0\0\1\0", 9, 0 },
		{ "protos zero length", "\0\0\0\1\0\0\0\0", 8, -EBADMSG },
		/* the retired clear secret: read as a mark, whatever it holds */
		{ "plain secret", "\x54\x43\x58\x01\0\0\0\2ab", 10, 0 },
		{ "plain secret twice", "\x54\x43\x58\x01\0\0\0\0"
		  "\x54\x43\x58\x01\0\0\0\0", 16, -EBADMSG },
		{ "auth short", "\x54\x43\x58\x02\0\0\0\3\0\0\1", 11, -EBADMSG },
		{ "auth version 0", "\x54\x43\x58\x02\0\0\0\4\0\0\0\0", 12, -EBADMSG },
		{ "auth v1 no nonce", "\x54\x43\x58\x02\0\0\0\4\0\0\0\1", 12, -EBADMSG },
		/* a newer version: kept, without contents, for the agent to name */
		{ "auth v2", "\x54\x43\x58\x02\0\0\0\6\0\0\0\2xy", 14, 0 },
	};
	struct tmsg_trace_req out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tmsg *m = raw_req(cases[i].p, cases[i].len);
		int ret = tmsg_parse_trace_req(m, &out);

		if (ret != cases[i].ret)
			fail_msg("%s: got %d (%s)", cases[i].what, ret,
				 tcx_error());
		if (!ret && i == 0) {
			assert_int_equal(out.nr_protos, 1);
			assert_string_equal(out.protos[0], "ptp");
		}
		if (!ret && !strcmp(cases[i].what, "plain secret"))
			assert_true(out.plain_secret);
		if (!ret && !strcmp(cases[i].what, "auth v2")) {
			assert_int_equal(out.auth_version, 2);
			assert_null(out.auth_nonce);
		}
		if (ret)
			assert_null(out.argv);
		tmsg_trace_req_free(&out);
		free(m);
	}
}

static void test_trace_resp_bad(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_trace_resp r;

	/* protocol name filling all 16 bytes: no NUL */
	tmsg_decode(m, stock_trace_resp, 62);
	memset(m->fixed + 20, 'x', 16);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), -EBADMSG);
	/* control byte in the name */
	tmsg_decode(m, stock_trace_resp, 62);
	m->fixed[21] = '\n';
	assert_int_equal(tmsg_parse_trace_resp(m, &r), -EBADMSG);
	/* cpus says 3, two ports */
	tmsg_decode(m, stock_trace_resp, 62);
	be32(m->fixed + 4, 3);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), -EBADMSG);
	/* cpus 0 (stock agents cannot send it either) */
	be32(m->fixed + 4, 0);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), -EBADMSG);
	/* page size 0 */
	tmsg_decode(m, stock_trace_resp, 62);
	be32(m->fixed + 8, 0);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), -EBADMSG);
	/* making one with a long protocol name */
	tmsg_decode(m, stock_trace_resp, 62);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), 0);
	strcpy(r.tsync_proto, "");
	assert_int_equal(tmsg_make_trace_resp(m, &r), 0);
	assert_int_equal(m->fixed[20], 0);
	tmsg_trace_resp_free(&r);
	free(m);
}

static void test_time_sync(void **state)
{
	struct tmsg *m = malloc(sizeof(*m)), *d = malloc(sizeof(*d));
	uint8_t probe[8144];
	struct tmsg_time_sync ts;

	for (size_t i = 0; i < sizeof(probe); i++)
		probe[i] = (uint8_t)i;
	/* PTP PROBES: the largest TIME_SYNC trace-cmd sends */
	assert_int_equal(tmsg_make_time_sync(m, "ptp", 3, probe, sizeof(probe)), 0);
	assert_int_equal(roundtrip(m, d), 12 + 20 + 8144);
	assert_int_equal(tmsg_parse_time_sync(d, &ts), 0);
	assert_string_equal(ts.proto, "ptp");
	assert_int_equal(ts.msg_id, 3);
	assert_int_equal(ts.len, sizeof(probe));
	assert_memory_equal(ts.payload, probe, sizeof(probe));

	assert_int_equal(tmsg_make_time_sync(m, "none", 2, NULL, 0), 0);
	roundtrip(m, d);
	assert_int_equal(tmsg_parse_time_sync(d, &ts), 0);
	assert_string_equal(ts.proto, "none");
	assert_int_equal(ts.len, 0);

	assert_int_equal(tmsg_make_time_sync(m, "0123456789abcdef", 1, NULL, 0),
			 -EINVAL);
	assert_int_equal(tmsg_make_time_sync(m, "ptp", 1, probe, 8161), -EMSGSIZE);
	free(m);
	free(d);
}

/* cmd_size larger than known: the excess is skipped; smaller: zeros. */
static void test_cmd_size_growth_shrink(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_trace_resp r;
	uint8_t b[80];

	/* TRACE_RESP from a newer agent with 8 more fixed bytes */
	memcpy(b, stock_trace_resp, 52);
	memset(b + 52, 0xee, 8);
	memcpy(b + 60, stock_trace_resp + 52, 10);
	be32(b, 70);
	be32(b + 8, 48);
	assert_int_equal(tmsg_decode(m, b, 70), 70);
	assert_int_equal(m->wire_cmd_size, 48);
	assert_int_equal(m->fixed_len, 40);
	assert_int_equal(m->len, 10);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), 0);
	assert_int_equal(r.tsync_port, 1502);
	assert_int_equal(r.ports[1], 1501);
	tmsg_trace_resp_free(&r);

	/* From an older one without tsync_port (36 fixed bytes) */
	memcpy(b, stock_trace_resp, 48);
	memcpy(b + 48, stock_trace_resp + 52, 10);
	be32(b, 58);
	be32(b + 8, 36);
	assert_int_equal(tmsg_decode(m, b, 58), 58);
	assert_int_equal(tmsg_parse_trace_resp(m, &r), 0);
	assert_int_equal(r.tsync_port, 0);
	assert_int_equal(r.cpus, 2);
	assert_int_equal(r.ports[0], 1500);
	tmsg_trace_resp_free(&r);

	/* A CLOSE with a fixed part from the future is still a CLOSE. */
	memset(b, 0, 20);
	be32(b, 20); be32(b + 4, TMSG_CLOSE); be32(b + 8, 8);
	assert_int_equal(tmsg_decode(m, b, 20), 20);
	assert_int_equal(m->cmd, TMSG_CLOSE);
	assert_int_equal(m->len, 0);
	free(m);
}

/* ---- over a transport ---- */

struct pair {
	struct tmsg_transport *t;	/* our side */
	int peer;			/* the test plays the peer here */
};

static void make_pair(struct pair *p, int timeout_ms)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p->t = tmsg_fd_transport(sv[0], "test peer");
	assert_non_null(p->t);
	p->t->io_timeout_ms = timeout_ms;
	p->peer = sv[1];
}

static void free_pair(struct pair *p)
{
	tmsg_close(p->t);
	if (p->peer >= 0)
		close(p->peer);
}

static void peer_write(struct pair *p, const void *b, size_t n)
{
	assert_int_equal(write(p->peer, b, n), n);
}

/* Read one message the library sent to the peer. */
static uint32_t peer_read_cmd(struct pair *p)
{
	uint8_t h[12];

	assert_int_equal(read(p->peer, h, 12), 12);
	return (uint32_t)h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7];
}

struct late_send {
	struct tmsg_transport *t;
	int delay_ms;
};

static void *send_late(void *arg)
{
	struct late_send *l = arg;
	struct tmsg *m = malloc(sizeof(*m));

	usleep(l->delay_ms * 1000);
	if (m && !tmsg_make_time_sync(m, "ptp", 1, "x", 1))
		tmsg_send(l->t, m);
	free(m);
	return NULL;
}

/*
 * spin_us (time sync's probes): a message already there is read; one that
 * comes after the spin still is, by blocking; silence still times out.
 */
static void test_spin(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_transport *peer;
	struct late_send l;
	struct pair p;
	pthread_t th;

	(void)state;
	assert_non_null(m);
	make_pair(&p, 1000);
	peer = tmsg_fd_transport(p.peer, "peer");
	assert_non_null(peer);
	p.peer = -1;
	p.t->spin_us = 2000;
	l = (struct late_send){ .t = peer, .delay_ms = 0 };
	send_late(&l);
	assert_int_equal(tmsg_recv(p.t, m, 1000), 0);
	assert_int_equal(m->cmd, TMSG_TIME_SYNC);
	l.delay_ms = 30;
	assert_int_equal(pthread_create(&th, NULL, send_late, &l), 0);
	assert_int_equal(tmsg_recv(p.t, m, 5000), 0);
	assert_int_equal(m->cmd, TMSG_TIME_SYNC);
	pthread_join(th, NULL);
	assert_int_equal(tmsg_recv(p.t, m, 50), -ETIMEDOUT);
	tmsg_close(peer);
	free_pair(&p);
	free(m);
}

static void test_recv_stock_and_truncated(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct pair p;

	make_pair(&p, 100);
	peer_write(&p, stock_trace_req, 84);
	assert_int_equal(tmsg_recv(p.t, m, 1000), 0);
	assert_int_equal(m->cmd, TMSG_TRACE_REQ);
	assert_int_equal(m->len, 56);

	/* nothing sent: a timeout */
	assert_int_equal(tmsg_recv(p.t, m, 50), -ETIMEDOUT);
	/* half a message, then silence: the io timeout ends it */
	peer_write(&p, stock_trace_req, 30);
	assert_int_equal(tmsg_recv(p.t, m, 1000), -EPROTO);
	assert_non_null(strstr(tcx_error(), "test peer: the peer stalled mid-message"));
	free_pair(&p);
	/* half a header too */
	make_pair(&p, 100);
	peer_write(&p, stock_trace_req, 5);
	assert_int_equal(tmsg_recv(p.t, m, 1000), -EPROTO);
	/* the rest arrives later: the session is over, but the stream is
	 * still framed; half a header then a close: connection reset */
	free_pair(&p);

	make_pair(&p, 1000);
	peer_write(&p, stock_trace_req, 6);
	close(p.peer);
	p.peer = -1;
	assert_int_equal(tmsg_recv(p.t, m, 1000), -ECONNRESET);
	assert_non_null(strstr(tcx_error(), "mid-message"));
	free_pair(&p);
	free(m);
}

static void test_recv_oversized_unknown(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	uint8_t h[12];
	struct pair p;

	make_pair(&p, 100);
	be32(h, 8193); be32(h + 4, TMSG_SEND_DATA); be32(h + 8, 0);
	peer_write(&p, h, 12);
	assert_int_equal(tmsg_recv(p.t, m, 1000), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "invalid message"));
	assert_non_null(strstr(tcx_error(), "8193"));

	be32(h, 12); be32(h + 4, 42); be32(h + 8, 0);
	peer_write(&p, h, 12);
	assert_int_equal(tmsg_recv(p.t, m, 1000), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "unknown command 42"));
	free_pair(&p);

	assert_int_equal(tmsg_make_data(m, wire, TMSG_MAX_DATA + 1), -EMSGSIZE);
	assert_int_equal(tmsg_make_data(m, wire, TMSG_MAX_DATA), 0);
	free(m);
}

static void test_out_of_order(void **state)
{
	struct tmsg *m = malloc(sizeof(*m)), *o = malloc(sizeof(*o));
	uint8_t b[TMSG_WIRE_MAX];
	struct pair p;
	size_t n;

	make_pair(&p, 1000);
	/* TINIT while waiting for TRACE_RESP: NOT_SUPP back, keep waiting */
	tmsg_make_tinit(o, 1, 4096, NULL, 0);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	/* a NOT_SUPP is not answered */
	tmsg_make(o, TMSG_NOT_SUPP);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	peer_write(&p, stock_trace_resp, 62);
	assert_int_equal(tmsg_wait_for(p.t, TMSG_TRACE_RESP, m, 1000), 0);
	assert_int_equal(m->cmd, TMSG_TRACE_RESP);
	assert_int_equal(peer_read_cmd(&p), TMSG_NOT_SUPP);
	{
		struct pollfd pfd = { .fd = p.peer, .events = POLLIN };

		assert_int_equal(poll(&pfd, 1, 0), 0);	/* only one */
	}

	/* CLOSE while waiting for something else */
	tmsg_make(o, TMSG_CLOSE);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_wait_for(p.t, TMSG_CLOSE_RESP, m, 1000),
			 -ECONNABORTED);

	/* a peer that keeps sending the wrong thing */
	tmsg_make(o, TMSG_NOT_SUPP);
	n = tmsg_encode(o, b);
	for (int i = 0; i < 9; i++)
		peer_write(&p, b, n);
	assert_int_equal(tmsg_wait_for(p.t, TMSG_CLOSE_RESP, m, 1000), -EPROTO);
	free_pair(&p);
	free(m);
	free(o);
}

static uint8_t collected[64 * 1024];
static size_t ncollected;

static int collect(void *arg, const void *buf, size_t len)
{
	memcpy(collected + ncollected, buf, len);
	ncollected += len;
	return 0;
}

struct send_job {
	struct tmsg_transport *t;
	const uint8_t *buf;
	size_t len;
	int ret;
};

static void *sender(void *arg)
{
	struct send_job *j = arg;

	j->ret = tmsg_send_data(j->t, j->buf, j->len);
	if (!j->ret)
		j->ret = tmsg_send_cmd(j->t, TMSG_FIN_DATA);
	return NULL;
}

static void test_data_stream(void **state)
{
	static uint8_t data[20000];
	struct tmsg_transport *a, *b;
	struct send_job job;
	pthread_t th;
	int sv[2];
	ssize_t n;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a = tmsg_fd_transport(sv[0], "a");
	b = tmsg_fd_transport(sv[1], "b");
	job = (struct send_job){ a, data, sizeof(data), -1 };
	pthread_create(&th, NULL, sender, &job);

	/* 8180 + 8180 + 3640: read the first header by hand */
	{
		uint8_t h[12];

		assert_int_equal(tmsg_read_full(b, h, 12, 1000), 0);
		assert_int_equal(h[2] << 8 | h[3], 8192);
		assert_int_equal(h[7], TMSG_SEND_DATA);
		assert_int_equal(tmsg_read_full(b, collected, 8180, 1000), 0);
		ncollected = 8180;
	}
	n = tmsg_recv_data(b, collect, NULL, TMSG_WAIT_MS, 0);
	pthread_join(th, NULL);
	assert_int_equal(job.ret, 0);
	assert_int_equal(n, sizeof(data) - 8180);
	assert_int_equal(ncollected, sizeof(data));
	assert_memory_equal(collected, data, sizeof(data));

	/* a limit on the total */
	job = (struct send_job){ a, data, sizeof(data), -1 };
	pthread_create(&th, NULL, sender, &job);
	ncollected = 0;
	n = tmsg_recv_data(b, collect, NULL, TMSG_WAIT_MS, 10000);
	assert_int_equal(n, -EFBIG);
	tmsg_close(b);		/* the rest may sit in the socket buffer */
	pthread_join(th, NULL);
	tmsg_close(a);
}

static void test_data_interleaved(void **state)
{
	struct tmsg *o = malloc(sizeof(*o));
	uint8_t b[TMSG_WIRE_MAX];
	struct pair p;
	size_t n;

	make_pair(&p, 1000);
	tmsg_make_data(o, "abc", 3);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	tmsg_make_time_sync(o, "ptp", 2, "x", 1);	/* out of order */
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	tmsg_make_data(o, "def", 3);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	tmsg_make(o, TMSG_FIN_DATA);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	ncollected = 0;
	assert_int_equal(tmsg_recv_data(p.t, collect, NULL, 1000, 0), 6);
	assert_memory_equal(collected, "abcdef", 6);
	assert_int_equal(peer_read_cmd(&p), TMSG_NOT_SUPP);

	/* SEND_DATA stream cut by a CLOSE */
	tmsg_make(o, TMSG_CLOSE);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_recv_data(p.t, collect, NULL, 1000, 0),
			 -ECONNABORTED);
	/* and a silent peer: trace-cmd's 5 s, here 100 ms */
	assert_int_equal(tmsg_recv_data(p.t, collect, NULL, 100, 0), -ETIMEDOUT);
	free_pair(&p);
	free(o);
}

/* A peer that stops reading: writes time out instead of hanging. */
static void test_peer_stops_reading(void **state)
{
	static uint8_t big[1 << 20];
	struct pair p;
	int64_t t0;
	struct timespec ts;
	int ret;

	make_pair(&p, 100);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	ret = tmsg_send_data(p.t, big, sizeof(big));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_int_equal(ret, -ETIMEDOUT);
	assert_non_null(strstr(tcx_error(), "stopped reading"));
	assert_true(ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0 < 2000);

	/* and a peer that is gone: EPIPE, no SIGPIPE */
	close(p.peer);
	p.peer = -1;
	ret = tmsg_send_cmd(p.t, TMSG_CLOSE);
	assert_true(ret == -EPIPE || ret == -ECONNRESET);
	free_pair(&p);
}

/* The listen handshake against a scripted V3 server. */
static void *v3_server(void *arg)
{
	int fd = *(int *)arg;
	char buf[16];

	if (write(fd, "tracecmd", 8) != 8 ||
	    read(fd, buf, 5) != 5 || memcmp(buf, "-1V3", 5) ||
	    write(fd, "V3", 3) != 3 ||
	    read(fd, buf, 7) != 7 || memcmp(buf, "766679", 7) ||
	    write(fd, "OK", 2) != 2)
		*(int *)arg = -1;
	return NULL;
}

static void test_v3_handshake(void **state)
{
	struct tmsg_transport *t;
	pthread_t th;
	int sv[2], srv;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	srv = sv[1];
	pthread_create(&th, NULL, v3_server, &srv);
	t = tmsg_fd_transport(sv[0], "listen");
	assert_int_equal(tmsg_v3_client_handshake(t, 1000), 0);
	pthread_join(th, NULL);
	assert_int_equal(srv, sv[1]);
	close(sv[1]);
	tmsg_close(t);

	/* not a listener */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t = tmsg_fd_transport(sv[0], "listen");
	assert_int_equal(write(sv[1], "HTTP/1.1", 8), 8);
	assert_int_equal(tmsg_v3_client_handshake(t, 1000), -EPROTO);
	close(sv[1]);
	tmsg_close(t);
}

/* The host side helpers against a scripted agent. */
static void test_host_request(void **state)
{
	struct tmsg *o = malloc(sizeof(*o));
	struct tmsg_trace_req req = { .trace_id = 9 };
	struct tmsg_trace_resp resp;
	uint8_t b[TMSG_WIRE_MAX];
	char why[64];
	struct pair p;
	size_t n;

	make_pair(&p, 1000);
	/* accepted */
	peer_write(&p, stock_trace_resp, 62);
	assert_int_equal(tmsg_host_request(p.t, &req, &resp, 1000, why,
					   sizeof(why)), 0);
	assert_int_equal(resp.ports[1], 1501);
	tmsg_trace_resp_free(&resp);
	assert_int_equal(peer_read_cmd(&p), TMSG_TRACE_REQ);
	{
		uint8_t rest[16];

		assert_int_equal(read(p.peer, rest, 16), 16);
	}
	/* refused with a reason */
	tmsg_make_not_supp(o, "option \"-p\" is not allowed");
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_host_request(p.t, &req, &resp, 1000, why,
					   sizeof(why)), -EPERM);
	assert_string_equal(why, "option \"-p\" is not allowed");
	assert_non_null(strstr(tcx_error(), "refused the session: option"));
	assert_null(resp.ports);
	/* refused by a stock agent: no reason; or with a garbled one */
	tmsg_make(o, TMSG_NOT_SUPP);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_host_request(p.t, &req, &resp, 1000, why,
					   sizeof(why)), -EPERM);
	assert_string_equal(why, "");
	memcpy(o->payload, "x\x1b[2J", 6);
	o->len = 6;
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_host_request(p.t, &req, &resp, 1000, why,
					   sizeof(why)), -EPERM);
	assert_string_equal(why, "");
	/* a TRACE_RESP that does not parse */
	memcpy(b, stock_trace_resp, 62);
	b[19] = 3;	/* 3 cpus, 2 ports */
	peer_write(&p, b, 62);
	assert_int_equal(tmsg_host_request(p.t, &req, &resp, 1000, NULL, 0),
			 -EBADMSG);
	/* CLOSE then CLOSE_RESP */
	tmsg_make(o, TMSG_CLOSE_RESP);
	n = tmsg_encode(o, b);
	peer_write(&p, b, n);
	assert_int_equal(tmsg_host_close(p.t, 1000), 0);
	/* an agent that never confirms */
	assert_int_equal(tmsg_host_close(p.t, 50), -ETIMEDOUT);
	free_pair(&p);
	free(o);
}

static void test_tcp(void **state)
{
	struct sockaddr_storage peer;
	unsigned int port, port2;
	char name[64];
	int lfd, lfd2, cfd, afd;

	lfd = tmsg_tcp_listen_search(TMSG_DATA_PORT_START, &port);
	assert_true(lfd >= 0);
	assert_true(port >= TMSG_DATA_PORT_START);
	lfd2 = tmsg_tcp_listen_search(port, &port2);
	assert_true(lfd2 >= 0);
	assert_true(port2 > port);	/* the next free one */
	snprintf(name, sizeof(name), "%u", port);
	cfd = tmsg_tcp_connect("127.0.0.1", name, 1000);
	assert_true(cfd >= 0);
	afd = tmsg_accept(lfd, 1000, &peer, NULL);
	assert_true(afd >= 0);
	assert_true(tmsg_addr_matches(&peer, "127.0.0.1"));
	assert_true(tmsg_addr_matches(&peer, "localhost"));
	assert_false(tmsg_addr_matches(&peer, "10.1.2.3"));
	tmsg_addr_string(&peer, name, sizeof(name));
	assert_non_null(strstr(name, "127.0.0.1:"));
	assert_int_equal(tmsg_accept(lfd, 10, NULL, NULL), -ETIMEDOUT);
	close(afd);
	close(cfd);
	close(lfd2);
	close(lfd);

	lfd = tmsg_tcp_listen("127.0.0.1", 0, &port);
	assert_true(lfd >= 0);
	assert_true(port > 0);
	close(lfd);
	assert_true(tmsg_tcp_connect("127.0.0.1", "1", 1000) < 0);
}

static void test_vchan_paths(void **state)
{
	char buf[128];

	assert_int_equal(tmsg_vchan_path(buf, sizeof(buf), 3, 0), 0);
	assert_string_equal(buf, "/local/domain/3/data/trace-cmd-xen/0");
	/* the longest domid and port fit libxenvchan's 64-byte buffer */
	assert_int_equal(tmsg_vchan_path(buf, sizeof(buf), 32767, 4294967295u), 0);
	assert_true(strlen(buf) + strlen("/event-channel") < 64);
	assert_int_equal(tmsg_vchan_path(buf, sizeof(buf), 4294967295u, 4294967295u),
			 -ENAMETOOLONG);
	assert_int_equal(tmsg_vchan_path(buf, 10, 1, 1), -ENAMETOOLONG);
	assert_null(tmsg_vchan_server(0, "/local/domain/1/data/trace-cmd-xen/"
				      "a-path-that-is-much-too-long", 0, 0));
	assert_non_null(strstr(tcx_error(), "longer than"));
	assert_null(tmsg_vchan_server(0, "/local/domain/1/data/trace-cmd-xen/1",
				      (1 << 20) + 1, 0));

	/* Without Xen (or the simulator's libraries) everything fails
	 * cleanly, with a message, and leaks nothing. */
	if (!access("/dev/xen", F_OK) || getenv("LD_LIBRARY_PATH"))
		return;
	struct tmsg_xs_agent ag;
	unsigned int id;

	assert_null(tmsg_vchan_server(0, "/local/domain/1/data/trace-cmd-xen/1",
				      0, 1 << 20));
	assert_non_null(strstr(tcx_error(), "vchan server for domain 0"));
	assert_null(tmsg_vchan_client(1, "/local/domain/1/data/trace-cmd-xen/1"));
	assert_non_null(strstr(tcx_error(), "vchan client to domain 1"));
	assert_true(tmsg_xs_lookup(1, &ag) < 0);
	assert_false(ag.ready);
	assert_true(tmsg_xs_self_domid(&id) < 0);
	assert_true(tmsg_xs_advertise(1, "x", 0) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_checks),
		cmocka_unit_test(test_simple_cmds),
		cmocka_unit_test(test_truncated_decode),
		cmocka_unit_test(test_tinit_rinit),
		cmocka_unit_test(test_rinit_bad),
		cmocka_unit_test(test_tinit_bad),
		cmocka_unit_test(test_stock_trace_req),
		cmocka_unit_test(test_stock_trace_resp),
		cmocka_unit_test(test_trace_req_auth_proxy),
		cmocka_unit_test(test_trace_req_params),
		cmocka_unit_test(test_trace_resp_bad),
		cmocka_unit_test(test_time_sync),
		cmocka_unit_test(test_cmd_size_growth_shrink),
		cmocka_unit_test(test_spin),
		cmocka_unit_test(test_recv_stock_and_truncated),
		cmocka_unit_test(test_recv_oversized_unknown),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_data_stream),
		cmocka_unit_test(test_data_interleaved),
		cmocka_unit_test(test_peer_stops_reading),
		cmocka_unit_test(test_v3_handshake),
		cmocka_unit_test(test_host_request),
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_vchan_paths),
	};

	return cmocka_run_group_tests_name("protocol", tests, NULL, NULL);
}
