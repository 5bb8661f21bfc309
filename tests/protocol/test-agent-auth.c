// SPDX-License-Identifier: GPL-2.0
/*
 * The challenge-response and the stream tokens against our agent, the
 * binary (`agent -N 127.0.0.1 --secret-file F`) on a simulated guest
 * kernel, driven by the library's host side and by hand-made messages:
 *
 * - the right secret: a whole session, every page of every CPU back;
 * - data connections with no token, a wrong one, another CPU's and the
 *   previous session's: each closed and counted, the session unharmed;
 * - a wrong secret: the host sees the agent's proof fail (and says so);
 *   a forged proof: the agent refuses "wrong secret";
 * - a proof recorded in one session and replayed in the next: refused;
 * - no secret, the retired secret in clear, an unknown version: refused;
 * - an agent without a secret is not accepted by a host that has one;
 * - secret files: shorter than 16 bytes, or readable by group or others.
 *
 * Usage: test-agent-auth AGENT_BINARY
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "simkernel.h"
#include "tcx-util.h"
#include "tlib.h"
#include "tmsg.h"

#define SECRET	"a-secret-of-24-bytes-ok"

static const char *agent_bin;
static char dir[64];
static struct simk_pages pages;

struct agent_proc {
	pid_t pid;
	int port;
	char log[160];
};

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* The agent with @auth ("--insecure" or "--secret-file=F"), log by @tag. */
static void start_agent(struct agent_proc *a, const char *tag, const char *auth)
{
	char port[16], simk[128];
	char *argv[] = { (char *)agent_bin, "-N", "127.0.0.1", "-p", port,
			 (char *)auth, "--tracing-dir", simk, NULL };
	struct tlib_spawn_opts so = { .out = a->log, .err = a->log };
	int fd;

	snprintf(simk, sizeof(simk), "%s/simk", dir);
	a->port = tlib_free_port();
	assert_true(a->port > 0);
	snprintf(port, sizeof(port), "%d", a->port);
	snprintf(a->log, sizeof(a->log), "%s/agent-%s.log", dir, tag);
	a->pid = tlib_spawn(argv, &so);
	assert_true(a->pid > 0);
	fd = tlib_connect_wait(a->port, 5000);
	if (fd < 0)
		fail_msg("the agent does not listen on %d (see %s)", a->port, a->log);
	close(fd);
}

static void start_secret_agent(struct agent_proc *a, const char *tag)
{
	char arg[160];

	snprintf(arg, sizeof(arg), "--secret-file=%s/secret", dir);
	start_agent(a, tag, arg);
}

static void stop_agent(struct agent_proc *a)
{
	assert_int_equal(tlib_kill(a->pid, SIGTERM), 0);
}

static struct tmsg_transport *connect_ctl(const struct agent_proc *a)
{
	int fd = tlib_connect_wait(a->port, 5000);

	assert_true(fd >= 0);
	return tmsg_fd_transport(fd, "agent");
}

static struct tmsg_transport *connect_port(uint32_t port, const char *name)
{
	int fd = tlib_connect_wait((int)port, 5000);

	assert_true(fd >= 0);
	return tmsg_fd_transport(fd, name);
}

static const char *ev_argv[] = { "-e", "tcx:tick" };

static int discard(void *arg, const void *buf, size_t len)
{
	*(size_t *)arg += len;
	return 0;
}

/* Every byte of @t until the agent closes it. */
static size_t drain(struct tmsg_transport *t)
{
	static uint8_t buf[65536];
	size_t got = 0;
	ssize_t n;

	do {
		n = t->ops->read(t, buf, sizeof(buf));
		if (n == -EAGAIN)
			n = t->ops->wait(t, POLLIN, 10000) > 0 ? -EAGAIN : -ETIMEDOUT;
		if (n > 0)
			got += (size_t)n;
	} while (n > 0 || n == -EAGAIN);
	assert_int_equal(n, 0);
	return got;
}

/*
 * One authenticated session; before its real data connections, @bogus
 * (if not NULL) opens others to CPU 0's port. Every page must come back.
 */
static void session(const struct agent_proc *a, struct tmsg_auth *auth,
		    void (*bogus)(const struct tmsg_trace_resp *, void *), void *arg)
{
	struct tmsg_trace_req req = { .trace_id = 5, .argc = 2, .argv = ev_argv };
	struct tmsg_transport *ctl = connect_ctl(a), *data[SIMK_CPUS];
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_trace_resp resp;
	char why[TMSG_MAX_REASON];
	size_t meta = 0;

	auth->secret = (const uint8_t *)SECRET;
	auth->secret_len = strlen(SECRET);
	if (tmsg_host_request_auth(ctl, &req, auth, &resp, 10000, why, sizeof(why)))
		fail_msg("%s", tcx_error());
	assert_true(auth->done);
	assert_int_equal(resp.cpus, SIMK_CPUS);
	if (bogus)
		bogus(&resp, arg);
	assert_int_equal(tmsg_host_open_streams("127.0.0.1", 0, &resp, data), 0);
	for (uint32_t c = 0; c < resp.cpus; c++)
		assert_int_equal(tmsg_auth_send_token(data[c], auth, c), 0);
	assert_true(tmsg_recv_data(ctl, discard, &meta, 10000, 0) > 0);
	usleep(300 * 1000);
	assert_int_equal(tmsg_send_cmd(ctl, TMSG_CLOSE), 0);
	for (uint32_t c = 0; c < resp.cpus; c++) {
		size_t got = drain(data[c]);

		/* the simulated kernel's pages, all of them, then the end */
		assert_int_equal(got, pages.len[c]);
		tmsg_close(data[c]);
	}
	assert_int_equal(tmsg_wait_for(ctl, TMSG_CLOSE_RESP, m, 10000), 0);
	tmsg_trace_resp_free(&resp);
	tmsg_close(ctl);
	free(m);
}

struct bogus {
	const struct tmsg_auth *old;	/* the previous session's keys */
	const struct tmsg_auth *now;	/* this one's */
	struct tmsg_transport *silent;	/* open, sending nothing */
};

static void bogus_conns(const struct tmsg_trace_resp *r, void *arg)
{
	struct bogus *b = arg;
	struct tmsg_transport *t;
	uint8_t junk[TMSG_AUTH_MAC];

	/* closed at once; and one that stays, silent */
	t = connect_port(r->ports[0], "gone");
	tmsg_close(t);
	b->silent = connect_port(r->ports[0], "silent");
	/* random bytes */
	assert_int_equal(tmsg_auth_nonce(junk, sizeof(junk)), 0);
	t = connect_port(r->ports[0], "junk");
	assert_int_equal(tmsg_write_full(t, junk, sizeof(junk)), 0);
	tmsg_close(t);
	/* CPU 1's token on CPU 0's port */
	t = connect_port(r->ports[0], "cpu1");
	assert_int_equal(tmsg_auth_send_token(t, b->now, 1), 0);
	tmsg_close(t);
	/* the previous session's token of CPU 0 */
	t = connect_port(r->ports[0], "old");
	assert_int_equal(tmsg_auth_send_token(t, b->old, 0), 0);
	tmsg_close(t);
}

static void test_session_and_bogus_streams(void **state)
{
	struct tmsg_auth first = { 0 }, second = { 0 };
	struct bogus b = { .old = &first, .now = &second };
	struct agent_proc a;

	start_secret_agent(&a, "session");
	session(&a, &first, NULL, NULL);
	assert_true(first.done);
	session(&a, &second, bogus_conns, &b);
	tmsg_close(b.silent);
	/* fresh keys each session */
	assert_memory_not_equal(first.key, second.key, TMSG_AUTH_MAC);
	assert_memory_not_equal(first.agent_nonce, second.agent_nonce, TMSG_AUTH_NONCE);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, "cpu0: refused data connection from 127.0.0.1:"), 5);
	assert_int_equal(tlib_count_lines(a.log, "wrong token"), 3);
	assert_int_equal(tlib_count_lines(a.log, "closed before its token"), 1);
	/* the silent one: past its deadline, or once the host's came */
	assert_int_equal(tlib_count_lines(a.log, ": no token in time") +
			 tlib_count_lines(a.log, ": the host's came first"), 1);
	assert_int_equal(tlib_count_lines(a.log, ": 5 stream connections refused"), 1);
	assert_int_equal(tlib_count_lines(a.log, "refused data connection"), 5);
	assert_int_equal(tlib_count_lines(a.log, "pages sent"), 2);
	assert_int_equal(tlib_count_lines(a.log, "session failed"), 0);
}

static void test_wrong_secret(void **state)
{
	struct tmsg_trace_req req = { .trace_id = 6, .argc = 2, .argv = ev_argv };
	struct tmsg_auth auth = { .secret = (const uint8_t *)SECRET "X",
				  .secret_len = strlen(SECRET) + 1 };
	struct tmsg_transport *ctl;
	struct tmsg_trace_resp resp;
	char why[TMSG_MAX_REASON];
	struct agent_proc a;

	start_secret_agent(&a, "wrong");
	ctl = connect_ctl(&a);
	assert_int_equal(tmsg_host_request_auth(ctl, &req, &auth, &resp, 10000,
						why, sizeof(why)), -EACCES);
	assert_non_null(strstr(tcx_error(), "could not prove that it knows the secret"));
	assert_false(auth.done);
	tmsg_close(ctl);
	/* no secret at all */
	ctl = connect_ctl(&a);
	assert_int_equal(tmsg_host_request(ctl, &req, &resp, 10000, why,
					   sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "requires a secret"));
	tmsg_close(ctl);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, "the host refused our proof: the agent's proof is wrong"), 1);
	assert_int_equal(tlib_count_lines(a.log, ": tracing "), 0);
}

/* TRACE_REQ with a fresh nonce, by hand; the CHALLENGE that answers it. */
static void hand_request(struct tmsg_transport *ctl, struct tmsg *req,
			 struct tmsg_auth_msg *chal, struct tmsg *m)
{
	uint8_t nonce[TMSG_AUTH_NONCE];
	struct tmsg_trace_req r = { .trace_id = 9, .argc = 2, .argv = ev_argv,
				    .auth_nonce = nonce };

	assert_int_equal(tmsg_auth_nonce(nonce, sizeof(nonce)), 0);
	assert_int_equal(tmsg_make_trace_req(req, &r), 0);
	assert_int_equal(tmsg_send(ctl, req), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(tmsg_parse_auth(m, chal), 0);
	assert_int_equal(chal->step, TMSG_AUTH_CHALLENGE);
}

static void test_forged_and_replayed_proof(void **state)
{
	struct tmsg *req = malloc(sizeof(*req)), *m = malloc(sizeof(*m));
	struct tmsg *proof = malloc(sizeof(*proof));
	struct tmsg_auth auth = { .secret = (const uint8_t *)SECRET,
				  .secret_len = strlen(SECRET) };
	uint8_t junk[TMSG_AUTH_MAC], nonce1[TMSG_AUTH_NONCE];
	struct tmsg_trace_resp resp;
	struct tmsg_auth_msg chal;
	struct tmsg_transport *ctl;
	char why[TMSG_MAX_REASON];
	struct agent_proc a;
	size_t meta = 0;

	start_secret_agent(&a, "replay");
	/* a forged proof */
	ctl = connect_ctl(&a);
	hand_request(ctl, req, &chal, m);
	assert_int_equal(tmsg_auth_nonce(junk, sizeof(junk)), 0);
	assert_int_equal(tmsg_make_auth(m, TMSG_AUTH_PROOF, NULL, junk), 0);
	assert_int_equal(tmsg_send(ctl, m), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(m->cmd, TMSG_NOT_SUPP);
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), 0);
	assert_string_equal(why, "wrong secret");
	tmsg_close(ctl);

	/* a right exchange, recorded */
	ctl = connect_ctl(&a);
	hand_request(ctl, req, &chal, m);
	memcpy(nonce1, chal.nonce, sizeof(nonce1));
	memcpy(auth.agent_nonce, chal.nonce, TMSG_AUTH_NONCE);
	tmsg_auth_derive(&auth, req);
	assert_memory_equal(chal.mac, auth.agent_proof, TMSG_AUTH_MAC);
	assert_int_equal(tmsg_make_auth(proof, TMSG_AUTH_PROOF, NULL, auth.host_proof), 0);
	assert_int_equal(tmsg_send(ctl, proof), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(tmsg_parse_trace_resp(m, &resp), 0);
	tmsg_trace_resp_free(&resp);
	/*
	 * The metadata first, as a host reads it: unread, each of its
	 * messages would be answered NOT_SUPP while CLOSE_RESP is awaited,
	 * after the agent closed (EPIPE, or ECONNRESET dropping CLOSE_RESP).
	 */
	assert_true(tmsg_recv_data(ctl, discard, &meta, 10000, 0) > 0);
	if (tmsg_host_close(ctl, 10000))
		fail_msg("CLOSE of an authenticated session: %s; the agent's log: %s",
			 tcx_error(), tlib_show(a.log));
	tmsg_close(ctl);

	/* replayed: the same TRACE_REQ and PROOF bytes in a new session */
	ctl = connect_ctl(&a);
	assert_int_equal(tmsg_send(ctl, req), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(tmsg_parse_auth(m, &chal), 0);
	assert_memory_not_equal(chal.nonce, nonce1, TMSG_AUTH_NONCE);
	assert_int_equal(tmsg_send(ctl, proof), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), 0);
	assert_string_equal(why, "wrong secret");
	tmsg_close(ctl);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, "the host's proof is wrong"), 2);
	assert_int_equal(tlib_count_lines(a.log, ": tracing "), 1);
	free(req);
	free(m);
	free(proof);
}

/* TRACE_REQ with @params (raw parameter bytes): the agent's reason. */
static void raw_refusal(const struct agent_proc *a, const void *params,
			size_t len, const char *want)
{
	struct tmsg_transport *ctl = connect_ctl(a);
	struct tmsg *m = malloc(sizeof(*m));
	char why[TMSG_MAX_REASON];

	tmsg_make(m, TMSG_TRACE_REQ);
	memcpy(m->payload, params, len);
	m->len = (uint32_t)len;
	assert_int_equal(tmsg_send(ctl, m), 0);
	assert_int_equal(tmsg_recv(ctl, m, 10000), 0);
	assert_int_equal(m->cmd, TMSG_NOT_SUPP);
	assert_int_equal(tmsg_parse_not_supp(m, why, sizeof(why)), 0);
	if (!strstr(why, want))
		fail_msg("reason \"%s\", expected \"%s\"", why, want);
	tmsg_close(ctl);
	free(m);
}

static void test_refused_requests(void **state)
{
	static const uint8_t plain[] = "\x54\x43\x58\x01\0\0\0\x17" SECRET;
	static const uint8_t v2[] = "\x54\x43\x58\x02\0\0\0\x08\0\0\0\x02" "next";
	struct agent_proc a;

	start_secret_agent(&a, "refused");
	raw_refusal(&a, "", 0, "requires a secret");
	raw_refusal(&a, plain, sizeof(plain) - 1, "sent its secret in clear");
	raw_refusal(&a, v2, sizeof(v2) - 1, "authentication version 2 is not supported");
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, ": tracing "), 0);
}

/* A host with a secret does not record an agent that proves nothing. */
static void test_agent_without_secret(void **state)
{
	struct tmsg_trace_req req = { .trace_id = 6, .argc = 2, .argv = ev_argv };
	struct tmsg_auth auth = { .secret = (const uint8_t *)SECRET,
				  .secret_len = strlen(SECRET) };
	struct tmsg_transport *ctl;
	struct tmsg_trace_resp resp;
	char why[TMSG_MAX_REASON];
	struct agent_proc a;

	start_agent(&a, "insecure", "--insecure");
	ctl = connect_ctl(&a);
	assert_int_equal(tmsg_host_request_auth(ctl, &req, &auth, &resp, 10000,
						why, sizeof(why)), -EACCES);
	assert_non_null(strstr(tcx_error(), "did not authenticate itself"));
	tmsg_close(ctl);
	stop_agent(&a);
}

/* The agent refuses to start on a short or shared secret file. */
static void test_secret_files(void **state)
{
	static const struct {
		const char *text;
		mode_t mode;
		const char *want;
	} cases[] = {
		{ "fifteen-bytes!!\n", 0600, "must hold 16 to 256 bytes" },
		{ "\n", 0600, "not 0" },
		{ SECRET "\n", 0644, "chmod 600" },
		{ SECRET "\n", 0640, "chmod 600" },
		{ SECRET "\n", 0604, "chmod 600" },
	};
	char path[128], log[160], arg[160];

	snprintf(path, sizeof(path), "%s/bad-secret", dir);
	snprintf(log, sizeof(log), "%s/bad-secret.log", dir);
	snprintf(arg, sizeof(arg), "--secret-file=%s", path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { (char *)agent_bin, "-N", "127.0.0.1", "-p", "1",
				 arg, NULL };
		struct tlib_spawn_opts so = { .out = log, .err = log };
		pid_t pid;

		write_file(path, cases[i].text, cases[i].mode);
		pid = tlib_spawn(argv, &so);
		assert_true(pid > 0);
		assert_int_equal(tlib_wait(pid), 2);
		if (tlib_count_lines(log, cases[i].want) != 1 ||
		    tlib_count_lines(log, path) != 1)
			fail_msg("case %zu: no \"%s\" naming %s in %s", i,
				 cases[i].want, path, log);
	}
	/* 16 bytes exactly, mode 600: accepted (the agent starts) */
	{
		struct agent_proc a;

		write_file(path, "sixteen-bytes-ok\n", 0600);
		start_agent(&a, "sixteen", arg);
		stop_agent(&a);
	}
}

static int setup(void **state)
{
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/tcx-auth-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/simk", dir);
	if (simk_create(path, &pages))
		return -1;
	snprintf(path, sizeof(path), "%s/secret", dir);
	write_file(path, SECRET "\n", 0600);
	return 0;
}

static int teardown(void **state)
{
	simk_free(&pages);
	if (!getenv("TCX_KEEP"))
		return tlib_rmtree(dir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_and_bogus_streams),
		cmocka_unit_test(test_wrong_secret),
		cmocka_unit_test(test_forged_and_replayed_proof),
		cmocka_unit_test(test_refused_requests),
		cmocka_unit_test(test_agent_without_secret),
		cmocka_unit_test(test_secret_files),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s AGENT_BINARY\n", argv[0]);
		return 2;
	}
	agent_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
