// SPDX-License-Identifier: GPL-2.0
/*
 * The recorder's side of an agent session, as `trace-cmd record -A` runs
 * it: TRACE_REQ / TRACE_RESP, the metadata into a file, CLOSE / CLOSE_RESP.
 * The data streams are the caller's: TCP, vsock or vchan by the ports in
 * TRACE_RESP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tmsg-internal.h"

int tmsg_host_request(struct tmsg_transport *ctl,
		      const struct tmsg_trace_req *req,
		      struct tmsg_trace_resp *resp, int timeout_ms,
		      char *why, size_t why_len)
{
	uint64_t deadline = tmsg_deadline(timeout_ms);
	struct tmsg *m = malloc(sizeof(*m));
	int ret;

	memset(resp, 0, sizeof(*resp));
	if (why_len)
		why[0] = 0;
	if (!m)
		return tcx_fail(-ENOMEM, "out of memory");
	ret = tmsg_make_trace_req(m, req);
	if (!ret)
		ret = tmsg_send(ctl, m);
	if (!ret)
		/* The whole answer within @timeout_ms, not each byte. */
		ret = tmsg_recv_by(ctl, m, deadline);
	if (!ret && m->cmd == TMSG_NOT_SUPP) {
		/* An agent that refuses: keep its reason if it is sane. */
		if (tmsg_parse_not_supp(m, why, why_len) && why_len)
			why[0] = 0;
		ret = tcx_fail(-EPERM, "%s: the agent refused the session%s%s",
				ctl->name, why_len && why[0] ? ": " : "",
				why_len ? why : "");
	} else if (!ret) {
		ret = tmsg_parse_trace_resp(m, resp);
		if (ret)
			tcx_fail(ret, "%s: %s", ctl->name, tcx_error());
	}
	free(m);
	return ret;
}

static struct tmsg_transport *open_stream(const char *host,
					  unsigned int domid, uint32_t cpu,
					  uint32_t port)
{
	char name[64], pstr[16];
	int fd;

	if (!host) {
		char path[TMSG_VCHAN_PATH_MAX + 1];

		if (tmsg_vchan_path(path, sizeof(path), domid, port))
			return NULL;
		return tmsg_vchan_client(domid, path);
	}
	if (!port || port > 65535) {
		tcx_fail(-EINVAL, "%s: cpu%u: port %u", host, cpu, port);
		return NULL;
	}
	snprintf(pstr, sizeof(pstr), "%u", port);
	fd = tmsg_tcp_connect(host, pstr, TMSG_WAIT_MS);
	if (fd < 0)
		return NULL;
	snprintf(name, sizeof(name), "%s:%u cpu%u", host, port, cpu);
	return tmsg_fd_transport(fd, name);
}

int tmsg_host_open_streams(const char *host, unsigned int domid,
			   const struct tmsg_trace_resp *resp,
			   struct tmsg_transport **out)
{
	for (uint32_t c = 0; c < resp->cpus; c++) {
		out[c] = open_stream(host, domid, c, resp->ports[c]);
		if (!out[c]) {
			while (c--) {
				tmsg_close(out[c]);
				out[c] = NULL;
			}
			return -EIO;
		}
	}
	return 0;
}

int tmsg_fd_sink(void *arg, const void *buf, size_t len)
{
	int fd = *(int *)arg;
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tmsg_host_close(struct tmsg_transport *ctl, int timeout_ms)
{
	uint64_t deadline = tmsg_deadline(timeout_ms);
	struct tmsg *m = malloc(sizeof(*m));
	int ret;

	if (!m)
		return tcx_fail(-ENOMEM, "out of memory");
	ret = tmsg_send_cmd(ctl, TMSG_CLOSE);
	if (!ret)
		ret = tmsg_wait_until(ctl, TMSG_CLOSE_RESP, m, deadline);
	free(m);
	return ret;
}
