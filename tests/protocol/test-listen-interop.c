// SPDX-License-Identifier: GPL-2.0
/*
 * Interop oracle: the stock `trace-cmd listen` (a V3 server) driven by our
 * client code. The handshake, TINIT/RINIT, the metadata as SEND_DATA and
 * FIN_DATA, the per-CPU TCP data connections and CLOSE must all be right
 * for listen to assemble a file that the stock `trace-cmd report` reads
 * with every event in it.
 *
 * The trace.dat to send is written by our tdat library (version 6): its
 * metadata is the part before "flyrecord", its pages what follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcx-util.h"
#include "tdat.h"
#include "tlib.h"
#include "tmsg.h"

#define NCPUS		2
#define PER_CPU		20
#define TRACE_CMD	"/usr/bin/trace-cmd"

static char dir[64];
static pid_t listen_pid = -1;

struct v6_file {
	uint8_t *buf;
	size_t len;
	size_t meta_len;		/* up to "flyrecord" */
	uint64_t off[NCPUS], size[NCPUS];
};

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc(st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return b;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Walk a little-endian v6 file to its "flyrecord" section. */
static void split_v6(struct v6_file *f)
{
	const uint8_t *b = f->buf;
	size_t p = 10, n;
	uint8_t *fly;

	assert_memory_equal(b + p, "6", 2);
	p += 2 + 1 + 1 + 4;			/* version, endian, long, page */
	assert_memory_equal(b + p, "header_page", 12);
	p += 12;
	p += 8 + le(b + p, 8);
	assert_memory_equal(b + p, "header_event", 13);
	p += 13;
	p += 8 + le(b + p, 8);
	n = le(b + p, 4);			/* ftrace formats */
	p += 4;
	while (n--)
		p += 8 + le(b + p, 8);
	n = le(b + p, 4);			/* event systems */
	p += 4;
	while (n--) {
		size_t e;

		p += strlen((const char *)b + p) + 1;
		e = le(b + p, 4);
		p += 4;
		while (e--)
			p += 8 + le(b + p, 8);
	}
	p += 4 + le(b + p, 4);			/* kallsyms */
	p += 4 + le(b + p, 4);			/* printk */
	p += 8 + le(b + p, 8);			/* cmdlines */
	assert_int_equal(le(b + p, 4), NCPUS);
	p += 4;
	assert_memory_equal(b + p, "options  ", 10);
	fly = memmem(b + p, f->len - p, "flyrecord", 10);
	assert_non_null(fly);
	f->meta_len = fly - b;
	p = f->meta_len + 10;
	for (int c = 0; c < NCPUS; c++) {
		f->off[c] = le(b + p, 8);
		f->size[c] = le(b + p + 8, 8);
		p += 16;
		assert_true(f->off[c] + f->size[c] <= f->len);
		assert_int_equal(f->size[c] % 4096, 0);
	}
}

static void make_trace(struct v6_file *f)
{
	struct tdat_params par = { .version = 6, .page_size = 4096,
				   .max_cpus = NCPUS, .cpus = NCPUS,
				   .clock = "local" };
	char path[128];
	struct tdat_writer *w;

	snprintf(path, sizeof(path), "%s/src.dat", dir);
	w = tdat_open(path, &par);
	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "tcx", tlib_tick_format), 0);
	assert_int_equal(tdat_add_cmdline(w, 77, "ticker"), 0);
	assert_int_equal(tdat_start_data(w), 0);
	for (int i = 0; i < PER_CPU; i++) {
		for (int c = 0; c < NCPUS; c++) {
			uint8_t ev[12] = { 0x84, 0x03, 0, 0, 77, 0, 0, 0 };

			ev[8] = (uint8_t)(c * 100 + i);
			assert_int_equal(tdat_write_event(w, c,
					 1000000 + i * 1000 + c, ev, 12), 0);
		}
	}
	assert_int_equal(tdat_close(w), 0);
	f->buf = slurp(path, &f->len);
	split_v6(f);
}

static void start_listen(unsigned int port)
{
	char pstr[16], log[128];
	char *argv[] = { TRACE_CMD, "listen", "-p", pstr, "-d", dir, NULL };
	struct tlib_spawn_opts o = { .out = log, .err = log };

	snprintf(pstr, sizeof(pstr), "%u", port);
	snprintf(log, sizeof(log), "%s/listen.log", dir);
	listen_pid = tlib_spawn(argv, &o);
	assert_true(listen_pid > 0);
}

static int connect_retry(const char *port)
{
	for (int i = 0; i < 50; i++) {
		int fd = tmsg_tcp_connect("127.0.0.1", port, 1000);

		if (fd >= 0)
			return fd;
		usleep(100 * 1000);
	}
	return -1;
}

static void test_listen_interop(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_transport *t;
	struct tmsg_rinit ri;
	struct v6_file f;
	const char *opts[] = { "tcp" };
	char pstr[16], cmd[512], out[128];
	unsigned int port;
	glob_t g;
	int fd, lfd;
	uint8_t byte;

	assert_int_equal(access(TRACE_CMD, X_OK), 0);
	make_trace(&f);

	/* A free port for listen: bind one, release it, hand it over. */
	lfd = tmsg_tcp_listen(NULL, 0, &port);
	assert_true(lfd >= 0);
	close(lfd);
	start_listen(port);
	snprintf(pstr, sizeof(pstr), "%u", port);
	fd = connect_retry(pstr);
	assert_true(fd >= 0);
	t = tmsg_fd_transport(fd, "trace-cmd listen");
	assert_non_null(t);

	if (tmsg_v3_client_handshake(t, TMSG_WAIT_MS))
		fail_msg("%s", tcx_error());
	assert_int_equal(tmsg_make_tinit(m, NCPUS, 4096, opts, 1), 0);
	assert_int_equal(tmsg_send(t, m), 0);
	if (tmsg_wait_for(t, TMSG_RINIT, m, TMSG_WAIT_MS))
		fail_msg("%s", tcx_error());
	assert_int_equal(tmsg_parse_rinit(m, &ri), 0);
	assert_int_equal(ri.cpus, NCPUS);

	assert_int_equal(tmsg_send_data(t, f.buf, f.meta_len), 0);
	assert_int_equal(tmsg_send_cmd(t, TMSG_FIN_DATA), 0);

	for (int c = 0; c < NCPUS; c++) {
		struct tmsg_transport *d;

		snprintf(pstr, sizeof(pstr), "%u", ri.ports[c]);
		fd = tmsg_tcp_connect("127.0.0.1", pstr, TMSG_WAIT_MS);
		assert_true(fd >= 0);
		d = tmsg_fd_transport(fd, "listen data");
		assert_int_equal(tmsg_write_full(d, f.buf + f.off[c], f.size[c]), 0);
		tmsg_close(d);
	}
	assert_int_equal(tmsg_send_cmd(t, TMSG_CLOSE), 0);

	/* listen closes the connection once the file is put together. */
	assert_int_equal(tmsg_read_full(t, &byte, 1, 15000), -ECONNRESET);
	tmsg_close(t);
	tmsg_rinit_free(&ri);

	snprintf(cmd, sizeof(cmd), "%s/trace.*.dat", dir);
	assert_int_equal(glob(cmd, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	snprintf(out, sizeof(out), "%s/report.txt", dir);
	snprintf(cmd, sizeof(cmd), TRACE_CMD " report -i '%s' > '%s' 2>&1",
		 g.gl_pathv[0], out);
	assert_int_equal(system(cmd), 0);
	globfree(&g);
	assert_int_equal(tlib_count_lines(out, "tick:"), NCPUS * PER_CPU);
	assert_int_equal(tlib_count_lines(out, "n=119"), 1);	/* cpu 1, last */
	assert_int_equal(tlib_count_lines(out, "cpus=2"), 1);
	assert_int_equal(tlib_count_lines(out, "ticker-77"), NCPUS * PER_CPU);
	free(f.buf);
	free(m);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/tcx-listen-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	if (listen_pid > 0) {
		kill(listen_pid, SIGINT);
		for (int i = 0; i < 20 && !waitpid(listen_pid, NULL, WNOHANG); i++)
			usleep(100 * 1000);
		kill(listen_pid, SIGKILL);
		waitpid(listen_pid, NULL, 0);
	}
	if (!getenv("TCX_KEEP"))
		return tlib_rmtree(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_interop),
	};

	return cmocka_run_group_tests_name("listen-interop", tests, setup,
					   teardown);
}
