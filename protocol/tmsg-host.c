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

#include "tcx-hmac.h"
#include "tmsg-internal.h"

/* An agent that refuses: -EPERM, with its reason if it is sane. */
static int refused(struct tmsg_transport *ctl, const struct tmsg *m,
		   char *why, size_t why_len)
{
	if (tmsg_parse_not_supp(m, why, why_len) && why_len)
		why[0] = 0;
	return tcx_fail(-EPERM, "%s: the agent refused the session%s%s",
			ctl->name, why_len && why[0] ? ": " : "",
			why_len ? why : "");
}

/*
 * The agent's CHALLENGE in @m: check its proof, answer with ours. Returns
 * 0, or -EACCES (the agent told so with NOT_SUPP) or another error.
 */
static int answer_challenge(struct tmsg_transport *ctl, struct tmsg *m,
			    const struct tmsg *req, struct tmsg_auth *a)
{
	struct tmsg_auth_msg am;
	int ret;

	if (m->cmd == TMSG_TRACE_RESP) {
		tmsg_send_cmd(ctl, TMSG_CLOSE);
		return tcx_fail(-EACCES, "%s: the agent did not authenticate "
				"itself (it has no secret, or it is not "
				"trace-cmd-xen's agent): a recorder with a secret "
				"records only agents that prove they know it",
				ctl->name);
	}
	ret = tmsg_parse_auth(m, &am);
	if (!ret && am.step != TMSG_AUTH_CHALLENGE)
		ret = tcx_fail(-EPROTO, "AUTH step %u, expected CHALLENGE",
			       am.step);
	if (ret)
		return tcx_fail(ret, "%s: %s", ctl->name, tcx_error());
	memcpy(a->agent_nonce, am.nonce, TMSG_AUTH_NONCE);
	tmsg_auth_derive(a, req);
	if (!tcx_mem_equal(am.mac, a->agent_proof, TMSG_AUTH_MAC)) {
		if (!tmsg_make_not_supp(m, "the agent's proof is wrong: "
					"its secret is not the recorder's"))
			tmsg_send(ctl, m);
		return tcx_fail(-EACCES, "%s: the agent could not prove that it "
				"knows the secret (the two secret files differ, "
				"or this is not the agent meant)", ctl->name);
	}
	ret = tmsg_make_auth(m, TMSG_AUTH_PROOF, NULL, a->host_proof);
	return ret ? ret : tmsg_send(ctl, m);
}

int tmsg_host_request_auth(struct tmsg_transport *ctl,
			   const struct tmsg_trace_req *req,
			   struct tmsg_auth *auth,
			   struct tmsg_trace_resp *resp, int timeout_ms,
			   char *why, size_t why_len)
{
	uint64_t deadline = tmsg_deadline(timeout_ms);
	struct tmsg *m = malloc(sizeof(*m)), *sent = NULL;
	uint8_t nonce[TMSG_AUTH_NONCE];
	struct tmsg_trace_req r = *req;
	int ret = 0;

	memset(resp, 0, sizeof(*resp));
	if (why_len)
		why[0] = 0;
	if (auth) {
		auth->done = false;
		sent = malloc(sizeof(*sent));
		ret = tmsg_auth_nonce(nonce, sizeof(nonce));
		r.auth_nonce = nonce;
	}
	if (!m || (auth && !sent))
		ret = tcx_fail(-ENOMEM, "out of memory");
	if (!ret)
		ret = tmsg_make_trace_req(m, &r);
	if (!ret && sent)
		memcpy(sent, m, sizeof(*m));	/* the transcript's input */
	if (!ret)
		ret = tmsg_send(ctl, m);
	if (!ret)
		/* The whole answer within @timeout_ms, not each byte. */
		ret = tmsg_recv_by(ctl, m, deadline);
	if (!ret && auth && m->cmd != TMSG_NOT_SUPP) {
		ret = answer_challenge(ctl, m, sent, auth);
		if (!ret)
			ret = tmsg_recv_by(ctl, m, deadline);
	}
	if (!ret && m->cmd == TMSG_NOT_SUPP) {
		ret = refused(ctl, m, why, why_len);
	} else if (!ret) {
		ret = tmsg_parse_trace_resp(m, resp);
		if (ret)
			tcx_fail(ret, "%s: %s", ctl->name, tcx_error());
	}
	if (auth) {
		auth->done = !ret;
		if (ret)
			tmsg_auth_wipe(auth);
	}
	free(sent);
	free(m);
	return ret;
}

int tmsg_host_request(struct tmsg_transport *ctl,
		      const struct tmsg_trace_req *req,
		      struct tmsg_trace_resp *resp, int timeout_ms,
		      char *why, size_t why_len)
{
	return tmsg_host_request_auth(ctl, req, NULL, resp, timeout_ms, why,
				      why_len);
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
