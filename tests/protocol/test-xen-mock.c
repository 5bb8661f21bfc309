// SPDX-License-Identifier: GPL-2.0
/*
 * The vchan transport and the agent's Xen mode, end to end in one process,
 * over mock-xen.c (an in-process stand-in for libxenvchan and xenstore)
 * until the simulator provides the real drop-in libraries. The agent serves
 * a simulated guest kernel; this test plays dom0 with the library's host
 * helpers: find the agent in xenstore, connect the control vchan, TRACE_REQ,
 * the per-CPU vchans, the metadata, every page byte for byte, CLOSE.
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent-internal.h"
#include "mock-xen.h"
#include "simkernel.h"
#include "tcx-util.h"
#include "tlib.h"
#include "tmsg.h"

static char dir[64];

/* ---- the transport alone ---- */

static void test_vchan_transport(void **state)
{
	const char *path = "/local/domain/5/data/trace-cmd-xen/9";
	struct tmsg_transport *srv, *cli;
	static uint8_t big[200000], got[200000];
	struct tmsg *m = malloc(sizeof(*m));

	srv = tmsg_vchan_server(0, path, 4096, 8192);
	assert_non_null(srv);
	assert_int_equal(tmsg_vchan_wait_client(srv, 20), 0);	/* nobody yet */
	cli = tmsg_vchan_client(MOCK_DOMID, path);
	assert_non_null(cli);
	assert_int_equal(tmsg_vchan_wait_client(srv, 1000), 1);
	assert_non_null(strstr(cli->name, "vchan client d5"));

	/* a message each way */
	tmsg_make_data(m, "ping", 4);
	assert_int_equal(tmsg_send(cli, m), 0);
	assert_int_equal(tmsg_recv(srv, m, 1000), 0);
	assert_int_equal(m->len, 4);
	assert_int_equal(tmsg_send_cmd(srv, TMSG_CLOSE_RESP), 0);
	assert_int_equal(tmsg_recv(cli, m, 1000), 0);
	assert_int_equal(m->cmd, TMSG_CLOSE_RESP);

	/* nothing to read: a timeout, not a hang */
	assert_int_equal(tmsg_recv(cli, m, 50), -ETIMEDOUT);

	/* more than the 8 KiB ring, with no reader: the writer times out */
	srv->io_timeout_ms = 100;
	assert_int_equal(tmsg_write_full(srv, big, sizeof(big)), -ETIMEDOUT);
	assert_non_null(strstr(tcx_error(), "stopped reading"));
	/* what fitted arrives */
	assert_int_equal(tmsg_read_full(cli, got, 8192, 1000), 0);

	/* the peer closes: end of stream after the data */
	tmsg_make_data(m, "last", 4);
	assert_int_equal(tmsg_send(srv, m), 0);
	tmsg_close(srv);
	assert_int_equal(tmsg_recv(cli, m, 1000), 0);
	assert_memory_equal(m->payload, "last", 4);
	assert_int_equal(tmsg_recv(cli, m, 1000), -ECONNRESET);
	assert_false(mock_vchan_exists(path));		/* server removed it */
	/* and writing to a closed peer fails */
	assert_int_equal(tmsg_send_cmd(cli, TMSG_CLOSE), -EPIPE);
	tmsg_close(cli);
	free(m);
}

/* ---- the agent in Xen mode ---- */

struct agent_run {
	struct agent_config cfg;
	pthread_t th;
	int ret;
};

static void *agent_main(void *arg)
{
	struct agent_run *r = arg;

	r->ret = agent_serve_xen(&r->cfg);
	return NULL;
}

static void xs_get(const char *node, char *buf, size_t len)
{
	struct tmsg_xs_agent a;

	(void)node;
	assert_int_equal(tmsg_xs_lookup(MOCK_DOMID, &a), 0);
	snprintf(buf, len, "%s", a.ready ? "ready" : "not ready");
}

/* Replace cpu0's pages by @n full pages (commit = all of the data area). */
static void make_busy_cpu0(const char *k, struct simk_pages *pages, size_t n)
{
	char path[256];
	uint8_t *b = calloc(n, 4096);
	FILE *f;

	for (size_t i = 0; i < n; i++) {
		b[i * 4096 + 8] = 4080 & 0xff;
		b[i * 4096 + 9] = 4080 >> 8;
		b[i * 4096 + 16] = (uint8_t)i;
	}
	snprintf(path, sizeof(path), "%s/per_cpu/cpu0/trace_pipe_raw", k);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 4096, n, f), n);
	fclose(f);
	free(pages->data[0]);
	pages->data[0] = b;
	pages->len[0] = n * 4096;
}

static void run_xen_session(size_t busy_pages)
{
	const char *argv[] = { "-e", "tcx:tick" };
	struct tmsg_trace_req req = { .trace_id = 11, .argc = 2, .argv = argv };
	struct tmsg_transport *ctl = NULL, *data[SIMK_CPUS];
	struct tmsg_trace_resp resp;
	struct tmsg_xs_agent ad;
	struct simk_pages pages;
	struct agent_run r = { 0 };
	char k[128], log[128], path[64], why[128];
	uint8_t *got;
	ssize_t meta;
	FILE *lf;

	snprintf(k, sizeof(k), "%s/simk%zu", dir, busy_pages);
	assert_int_equal(simk_create(k, &pages), 0);
	if (busy_pages)
		make_busy_cpu0(k, &pages, busy_pages);
	snprintf(log, sizeof(log), "%s/agent%zu.log", dir, busy_pages);
	lf = fopen(log, "w");
	assert_non_null(lf);
	setvbuf(lf, NULL, _IOLBF, 0);
	r.cfg = (struct agent_config){
		.domid = AGENT_DOMID_SELF,	/* from "domid": 5 */
		.peer_domid = 0,
		.sessions = 1,
		.tracing_dir = k,
		.log = lf,
	};
	assert_int_equal(pthread_create(&r.th, NULL, agent_main, &r), 0);

	/* dom0: wait for state=ready, then connect to the control vchan */
	for (int i = 0; i < 200; i++) {
		if (!tmsg_xs_lookup(MOCK_DOMID, &ad) && ad.ready)
			break;
		usleep(10 * 1000);
	}
	assert_true(ad.ready);
	assert_string_equal(ad.version, TMSG_XS_VERSION);
	assert_non_null(strstr(ad.caps, "trace-cmd-v3"));
	assert_int_equal(ad.port, 0);
	assert_int_equal(tmsg_vchan_path(path, sizeof(path), MOCK_DOMID, ad.port), 0);
	ctl = tmsg_vchan_client(MOCK_DOMID, path);
	assert_non_null(ctl);

	if (tmsg_host_request(ctl, &req, &resp, 5000, why, sizeof(why)))
		fail_msg("%s", tcx_error());
	assert_int_equal(resp.cpus, SIMK_CPUS);
	assert_int_equal(resp.ports[0], 1);
	assert_int_equal(resp.ports[1], 2);
	assert_string_equal(resp.tsync_proto, "");
	assert_int_equal(tmsg_host_open_streams(NULL, MOCK_DOMID, &resp, data), 0);

	/* the metadata: a v6 trace.dat up to "flyrecord" */
	{
		int fd = memfd_create("meta", 0);
		size_t mlen = 0;
		uint8_t *mb;

		meta = tmsg_recv_data(ctl, tmsg_fd_sink, &fd, TMSG_WAIT_MS, 0);
		assert_true(meta > 0);
		mb = malloc(meta + 10);
		assert_int_equal(pread(fd, mb, meta, 0), meta);
		memcpy(mb + meta, "flyrecord", 10);
		assert_int_equal(agent_meta_length(mb, meta + 10, 6, &mlen), 0);
		assert_int_equal(mlen, meta);
		assert_non_null(memmem(mb, meta, "name: tick", 10));
		free(mb);
		close(fd);
	}

	/* every page, byte for byte, on its CPU's vchan; a busy CPU's
	 * pages go out back to back (no pause between full pages) */
	for (int c = 0; c < SIMK_CPUS; c++) {
		struct timespec t0, t1;

		got = malloc(pages.len[c]);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(tmsg_read_full(data[c], got, pages.len[c], 5000), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_memory_equal(got, pages.data[c], pages.len[c]);
		if (busy_pages && !c)
			assert_true((t1.tv_sec - t0.tv_sec) * 1000 +
				    (t1.tv_nsec - t0.tv_nsec) / 1000000 < 5000);
		free(got);
	}

	assert_int_equal(tmsg_host_close(ctl, 10000), 0);
	/* the agent closed the data vchans: end of stream */
	for (int c = 0; c < SIMK_CPUS; c++) {
		uint8_t b;

		assert_int_equal(tmsg_read_full(data[c], &b, 1, 5000), -ECONNRESET);
		tmsg_close(data[c]);
	}
	tmsg_close(ctl);
	tmsg_trace_resp_free(&resp);

	pthread_join(r.th, NULL);
	assert_int_equal(r.ret, 0);
	xs_get("state", why, sizeof(why));
	assert_string_equal(why, "not ready");		/* withdrawn */
	assert_false(mock_vchan_exists(path));
	fclose(lf);
	simk_free(&pages);
}

static void test_agent_xen_session(void **state)
{
	run_xen_session(0);
}

/* 4096 full pages (16 MiB) on one CPU: at 10 pages/s this would take
 * minutes; batched full pages take well under a second. */
static void test_agent_xen_busy_cpu(void **state)
{
	run_xen_session(4096);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/tcx-xenmock-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	mock_xen_reset();
	if (getenv("TCX_KEEP"))
		return 0;
	return tlib_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vchan_transport),
		cmocka_unit_test(test_agent_xen_session),
		cmocka_unit_test(test_agent_xen_busy_cpu),
	};

	return cmocka_run_group_tests_name("xen-mock", tests, setup, teardown);
}
