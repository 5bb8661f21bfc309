// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd's "ptp" time sync, byte for byte, over the protocol library's
 * TIME_SYNC framing (fixed part: protocol name, message id). All payload
 * integers are big-endian. The agent is the server: it sends START and 339
 * PROBEs, stamping each before sending and after the echo; the host, the
 * client, stamps each PROBE it echoes and sends those stamps back in one
 * PROBES of 2 x 339 slots. The server keeps the probe with the shortest
 * round trip: offset = client stamp - (sent + returned) / 2.
 *
 * Stamps come from a clock callback (the TSC for x86-tsc): the same
 * instant a trace_marker_raw write would get, without reading it back.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcx-util.h"
#include "tmsg.h"
#include "tsync-internal.h"

#define WAIT_MS		TMSG_WAIT_MS
/*
 * Both ends poll for the next message this long before sleeping: a stamp
 * taken after a wake-up is late by the scheduler, more one way than the
 * other (xensim: 7-37 us of error blocking, under 1 us polling). The poll
 * yields between looks: the agent pins itself to the vCPU's CPU, and a
 * host thread on that CPU waited out the other end's whole spin (xensim:
 * fastest round trips of 0.2-0.5 ms and errors up to 80 us).
 */
#define SPIN_US		200

static int send_ts(struct tmsg_transport *t, struct tmsg *m, const char *proto,
		   uint32_t id, const void *p, size_t len)
{
	int ret = tmsg_make_time_sync(m, proto, id, p, len);

	return ret ? ret : tmsg_send(t, m);
}

void tsync_quickack(struct tmsg_transport *t)
{
	int fd = t->ops->fd ? t->ops->fd(t) : -1, one = 1;

	/*
	 * trace-cmd writes a message's header and payload separately without
	 * TCP_NODELAY: Nagle holds the payload until our ACK, which Linux
	 * delays by 40 ms. A probe would take 44 ms instead of tens of us.
	 * Not sticky, hence before every read. Fails quietly on non-TCP.
	 */
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

/* Receive a TIME_SYNC of @proto; its id in @id. -EPROTO for anything else. */
static int recv_ts(struct tmsg_transport *t, struct tmsg *m, const char *proto,
		   struct tmsg_time_sync *ts)
{
	int ret;

	tsync_quickack(t);
	ret = tmsg_recv(t, m, WAIT_MS);

	if (ret)
		return ret;
	if (m->cmd != TMSG_TIME_SYNC)
		return -EPROTO;
	ret = tmsg_parse_time_sync(m, ts);
	if (ret)
		return ret;
	if (strncmp(ts->proto, proto, TMSG_PROTO_NAME_LEN))
		return -EPROTO;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

int tsync_ptp_server(struct tmsg_transport *t, uint32_t series, tsync_clock_fn clk,
		     void *ctx, int64_t *offset, int64_t *ts, uint64_t *rtt)
{
	uint64_t *s = NULL, *r = NULL, best = UINT64_MAX;
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_time_sync in;
	uint8_t buf[16];
	uint32_t n, i;
	bool found = false;
	int spin = t->spin_us, ret;

	t->spin_us = SPIN_US;
	s = calloc(TSYNC_PTP_LOOP, sizeof(*s));
	r = calloc(TSYNC_PTP_LOOP, sizeof(*r));
	if (!m || !s || !r) {
		ret = -ENOMEM;
		goto out;
	}
	put32(buf, series);
	put32(buf + 4, TSYNC_PTP_FASTEST | TSYNC_PTP_USE_MARKER);
	ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_START, buf, 8);
	if (!ret)
		ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
	if (!ret && in.msg_id != TSYNC_PTP_START)
		ret = -EPROTO;
	for (i = 0; !ret && i < TSYNC_PTP_LOOP; i++) {
		put32(buf, i + 1);
		s[i] = clk(ctx);
		ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_PROBE, buf, 4);
		if (!ret)
			ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
		r[i] = clk(ctx);
		if (!ret && (in.msg_id != TSYNC_PTP_PROBE || in.len < 4 ||
			     get32(in.payload) != i + 1))
			ret = -EPROTO;
	}
	if (!ret)
		ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_END, NULL, 0);
	if (!ret)
		ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
	if (!ret && (in.msg_id != TSYNC_PTP_PROBES || in.len < 8))
		ret = -EPROTO;
	if (ret)
		goto out;
	n = get32(in.payload + 4);
	if (n > TSYNC_PTP_LOOP)
		n = TSYNC_PTP_LOOP;
	if (8 + (size_t)n * 12 > in.len) {
		ret = -EBADMSG;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const uint8_t *p = in.payload + 8 + (size_t)i * 12;
		uint64_t cts = get64(p), d;

		/* all three stamps, all for the same probe */
		if (!cts || !s[i] || !r[i] || get32(p + 8) != i + 1)
			continue;
		d = r[i] - s[i];
		if (d < best) {
			best = d;
			*ts = (int64_t)((s[i] + r[i]) / 2);
			*offset = (int64_t)(cts - (uint64_t)*ts);
			found = true;
		}
	}
	if (!found) {
		ret = -ENODATA;
		goto out;
	}
	if (rtt)
		*rtt = best;
	put64(buf, (uint64_t)*ts);
	put64(buf + 8, (uint64_t)*offset);
	ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_OFFSET, buf, 16);
out:
	t->spin_us = spin;
	free(m);
	free(s);
	free(r);
	return ret;
}

int tsync_ptp_client(struct tmsg_transport *t, tsync_clock_fn clk, void *ctx,
		     int64_t *offset, int64_t *ts)
{
	struct tmsg *m = malloc(sizeof(*m));
	uint8_t *res = calloc(1, TSYNC_PTP_PROBES_SIZE);
	struct tmsg_time_sync in;
	uint32_t series = 0, stored = 0, probes = 0;
	uint8_t buf[8];
	int spin = t->spin_us, ret;

	t->spin_us = SPIN_US;
	if (!m || !res) {
		ret = -ENOMEM;
		goto out;
	}
	ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
	if (!ret && (in.msg_id != TSYNC_PTP_START || in.len < 8))
		ret = -EPROTO;
	if (ret)
		goto out;
	series = get32(in.payload);
	memcpy(buf, in.payload, 8);
	/* echoed as received */
	ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_START, buf, 8);
	while (!ret) {
		uint32_t count;
		uint64_t now;

		ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
		if (ret || in.msg_id != TSYNC_PTP_PROBE || in.len < 4 || !get32(in.payload))
			break;
		now = clk(ctx);
		/* a round has TSYNC_PTP_LOOP probes: a guest sending more would
		 * hold this loop for ever */
		if (++probes > TSYNC_PTP_LOOP) {
			ret = tcx_fail(-EPROTO, "ptp: more than %u PROBEs in one round",
				       TSYNC_PTP_LOOP);
			goto out;
		}
		count = get32(in.payload);
		if (count <= TSYNC_PTP_LOOP) {
			uint8_t *p = res + 8 + (size_t)(count - 1) * 12;

			put64(p, now);
			put32(p + 8, count);
			stored++;
		}
		memcpy(buf, in.payload, 4);
		ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_PROBE, buf, 4);
	}
	if (ret)
		goto out;
	if (in.msg_id != TSYNC_PTP_END) {
		ret = -EPROTO;
		goto out;
	}
	put32(res, series);
	put32(res + 4, stored);
	ret = send_ts(t, m, TSYNC_PTP_NAME, TSYNC_PTP_PROBES, res, TSYNC_PTP_PROBES_SIZE);
	if (!ret)
		ret = recv_ts(t, m, TSYNC_PTP_NAME, &in);
	if (!ret && (in.msg_id != TSYNC_PTP_OFFSET || in.len < 16))
		ret = -EPROTO;
	if (!ret) {
		*ts = (int64_t)get64(in.payload);
		*offset = (int64_t)get64(in.payload + 8);
	}
out:
	t->spin_us = spin;
	free(m);
	free(res);
	return ret;
}

int tsync_ptp_host(struct tmsg_transport *t, uint32_t ncpu, tsync_clock_fn clk, void *ctx,
		   int64_t *ts, int64_t *off, bool *ok)
{
	for (uint32_t c = 0; c < ncpu; c++) {
		uint64_t sent = clk(ctx), back;
		int ret = tsync_none_probe(t, (uint16_t)c);

		if (!ret)
			ret = tsync_ptp_client(t, clk, ctx, &off[c], &ts[c]);
		if (ret)
			return ret;
		back = clk(ctx);
		ok[c] = tsync_ptp_sample_ok(ts[c], off[c], sent, back);
	}
	return 0;
}

bool tsync_ptp_sample_ok(int64_t ts, int64_t off, uint64_t sent, uint64_t back)
{
	/* the host time the guest claims: its time plus its offset */
	__int128 h = (__int128)(uint64_t)ts + off;

	if (off < -TSYNC_OFFSET_MAX || off > TSYNC_OFFSET_MAX)
		return false;
	return h >= (__int128)sent && h <= (__int128)back;
}

int tsync_none_probe(struct tmsg_transport *t, uint16_t cpu)
{
	struct tmsg *m = malloc(sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	/* the vCPU number goes in native order, as trace-cmd sends it */
	ret = send_ts(t, m, TSYNC_NONE_NAME, TSYNC_NONE_PROBE, &cpu, sizeof(cpu));
	free(m);
	return ret;
}

int tsync_none_stop(struct tmsg_transport *t)
{
	struct tmsg *m = malloc(sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	ret = send_ts(t, m, TSYNC_NONE_NAME, TSYNC_NONE_STOP, NULL, 0);
	free(m);
	return ret;
}

int tsync_none_wait(struct tmsg_transport *t, int timeout_ms, uint16_t *cpu)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_time_sync in;
	int ret;

	if (!m)
		return -ENOMEM;
	ret = tmsg_recv(t, m, timeout_ms);
	if (!ret && m->cmd == TMSG_TIME_SYNC && !tmsg_parse_time_sync(m, &in) &&
	    !strncmp(in.proto, TSYNC_NONE_NAME, TMSG_PROTO_NAME_LEN) &&
	    in.msg_id == TSYNC_NONE_PROBE && in.len >= 2) {
		memcpy(cpu, in.payload, 2);
		ret = 1;
	}
	free(m);
	return ret;
}
