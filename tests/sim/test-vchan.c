// SPDX-License-Identifier: GPL-2.0
/*
 * libxenvchan between domains of the simulated host, as the agent (server,
 * in a guest, under its data/) and the recorder (client, dom0) will use it:
 * rendezvous through xenstore, in-page and 1 MiB rings, one client per
 * server, close removing the path while the peer drains, a vanished server
 * seen by its client, xenstore permissions on the advertisement, and each
 * domain's own grant table: one guest exhausting it fails alone.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <libxenvchan.h>
#include <xenstore.h>

#include "tlib.h"

#define PATH	"/local/domain/1/data/tcx/vchan"

static struct tlib_sim sim;

static int setup(void **state)
{
	if (tlib_sim_start(&sim, tlib_conf_path("basic.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	return 0;
}

static int teardown(void **state)
{
	int ret = tlib_sim_stop(&sim);

	tlib_sim_cleanup(&sim);
	return ret;
}

static struct libxenvchan *as_guest_server(size_t rmin, size_t wmin)
{
	struct libxenvchan *s;

	setenv("XENSIM_DOMID", "1", 1);
	s = libxenvchan_server_init(NULL, 0, PATH, rmin, wmin);
	setenv("XENSIM_DOMID", "0", 1);
	return s;
}

static void test_rendezvous(void **state)
{
	struct libxenvchan *s = as_guest_server(0, 0), *c;
	char buf[16];

	assert_non_null(s);
	s->blocking = 1;
	assert_int_equal(libxenvchan_is_open(s), 2);	/* waiting */
	assert_int_equal(s->read.order, 10);		/* in the page */
	assert_int_equal(s->write.order, 11);
	c = libxenvchan_client_init(NULL, 1, PATH);
	assert_non_null(c);
	c->blocking = 1;
	assert_int_equal(libxenvchan_is_open(s), 1);
	assert_int_equal(libxenvchan_is_open(c), 1);
	assert_int_equal(libxenvchan_send(c, "hello", 5), 5);
	assert_int_equal(libxenvchan_recv(s, buf, 5), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(libxenvchan_send(s, "world!", 6), 6);
	assert_int_equal(libxenvchan_data_ready(c), 6);
	assert_int_equal(libxenvchan_read(c, buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "world!", 6);
	/* packets larger than the ring fail in blocking mode */
	{
		char big[4096] = { 0 };

		assert_int_equal(libxenvchan_send(c, big, sizeof(big)), -1);
	}
	/* one client per server */
	assert_null(libxenvchan_client_init(NULL, 1, PATH));
	libxenvchan_close(c);
	libxenvchan_close(s);
}

struct pump {
	struct libxenvchan *v;
	size_t total;
	uint64_t sum;
};

static void *server_reader(void *arg)
{
	struct pump *p = arg;
	uint8_t buf[65536];

	while (p->total < 8u << 20) {
		int n = libxenvchan_read(p->v, buf, sizeof(buf));

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			p->sum = p->sum * 31 + buf[i];
		p->total += n;
	}
	return NULL;
}

static void test_big_rings(void **state)
{
	struct libxenvchan *s = as_guest_server(1 << 20, 1 << 20), *c;
	struct pump pr = { 0 };
	pthread_t t;
	uint8_t buf[100000];
	uint64_t sum = 0;
	size_t sent = 0;
	struct timespec t0, t1;

	assert_non_null(s);
	assert_int_equal(s->read.order, 20);
	assert_int_equal(s->write.order, 20);
	c = libxenvchan_client_init(NULL, 1, PATH);
	assert_non_null(c);
	assert_int_equal(c->write.order, 20);
	s->blocking = 1;
	c->blocking = 1;
	pr.v = s;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&t, NULL, server_reader, &pr), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	while (sent < 8u << 20) {
		size_t n = (8u << 20) - sent;
		int w;

		if (n > sizeof(buf))
			n = sizeof(buf);
		w = libxenvchan_write(c, buf, n);
		assert_true(w > 0);
		for (int i = 0; i < w; i++)
			sum = sum * 31 + buf[i];
		sent += w;
	}
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("# 8 MiB through 1 MiB rings in %.1f ms\n",
		      (t1.tv_sec - t0.tv_sec) * 1e3 +
		      (t1.tv_nsec - t0.tv_nsec) / 1e6);
	assert_int_equal(pr.total, 8u << 20);
	assert_true(pr.sum == sum);
	libxenvchan_close(c);
	libxenvchan_close(s);

	/* more than 1 MiB per direction is refused */
	assert_null(as_guest_server(2 << 20, 0));
}

static void test_close_removes_path(void **state)
{
	struct libxenvchan *s = as_guest_server(0, 0), *c;
	struct xs_handle *xs = xs_open(0);
	unsigned int len;
	char buf[8], *v;

	assert_non_null(s);
	assert_non_null(xs);
	c = libxenvchan_client_init(NULL, 1, PATH);
	assert_non_null(c);
	/* advertised read-only to the peer, invisible to others */
	setenv("XENSIM_DOMID", "2", 1);
	{
		struct xs_handle *other = xs_open(0);

		assert_non_null(other);
		assert_null(xs_read(other, XBT_NULL, PATH "/ring-ref", &len));
		assert_int_equal(errno, EACCES);
		xs_close(other);
	}
	setenv("XENSIM_DOMID", "0", 1);
	v = xs_read(xs, XBT_NULL, PATH "/ring-ref", &len);
	assert_non_null(v);
	free(v);

	assert_int_equal(libxenvchan_send(s, "bye", 3), 3);
	libxenvchan_close(s);
	assert_null(xs_read(xs, XBT_NULL, PATH "/ring-ref", &len));
	assert_int_equal(errno, ENOENT);
	assert_null(xs_read(xs, XBT_NULL, PATH, &len));
	/* the client sees it closed, drains, then gets -1 */
	assert_int_equal(libxenvchan_is_open(c), 0);
	assert_int_equal(libxenvchan_read(c, buf, sizeof(buf)), 3);
	assert_int_equal(libxenvchan_read(c, buf, sizeof(buf)), -1);
	libxenvchan_close(c);
	xs_close(xs);
}

/* A server that dies is seen by its client (notify on unmap). */
static void test_server_crash(void **state)
{
	struct libxenvchan *c = NULL;
	int pfd[2], st;
	pid_t pid;
	char ok;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct libxenvchan *s = as_guest_server(0, 0);

		ok = s ? 'y' : 'n';
		if (write(pfd[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(pfd[0], &ok, 1), 1);
	assert_int_equal(ok, 'y');
	c = libxenvchan_client_init(NULL, 1, PATH);
	assert_non_null(c);
	c->blocking = 1;
	assert_int_equal(libxenvchan_is_open(c), 1);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* woken by the notification, then it reads as closed */
	for (int i = 0; i < 200 && libxenvchan_is_open(c); i++)
		usleep(10000);
	assert_int_equal(libxenvchan_is_open(c), 0);
	libxenvchan_close(c);
	close(pfd[0]);
	close(pfd[1]);
}

/* Domain @dom serves 1 MiB rings both ways (513 grants) at path @i. */
static struct libxenvchan *big_server(const char *dom, int i, int *err)
{
	struct libxenvchan *s;
	char path[96];

	snprintf(path, sizeof(path), "/local/domain/%s/data/tcx/g%d", dom, i);
	setenv("XENSIM_DOMID", dom, 1);
	errno = 0;
	s = libxenvchan_server_init(NULL, 0, path, 1 << 20, 1 << 20);
	*err = errno;
	setenv("XENSIM_DOMID", "0", 1);
	return s;
}

/*
 * Xen gives each domain its own grant table (64 frames of 512 entries by
 * default): guest 1 granting until its table is full gets ENOSPC, as
 * gntalloc answers, after 32760 / 513 = 63 vchans; guest 2 still grants,
 * and guest 1 again once it closes one.
 */
static void test_grant_table_per_domain(void **state)
{
	enum { MAX = 80 };
	struct libxenvchan *s[MAX] = { 0 }, *other, *c;
	int n = 0, err = 0;

	(void)state;
	while (n < MAX) {
		s[n] = big_server("1", n, &err);
		if (!s[n])
			break;
		n++;
	}
	fprintf(stderr, "# guest 1: %d vchans of 513 grants, then: %s\n", n, strerror(err));
	assert_int_equal(n, (64 * 512 - 8) / 513);
	assert_int_equal(err, ENOSPC);
	/* the other guest's table is its own */
	other = big_server("2", 0, &err);
	assert_non_null(other);
	/* and works: dom0 maps its rings */
	c = libxenvchan_client_init(NULL, 2, "/local/domain/2/data/tcx/g0");
	assert_non_null(c);
	c->blocking = 1;
	assert_int_equal(libxenvchan_send(c, "grant", 5), 5);
	libxenvchan_close(c);
	libxenvchan_close(other);
	/* guest 1's entries come back as it closes a vchan */
	libxenvchan_close(s[n - 1]);
	s[n - 1] = big_server("1", n - 1, &err);
	assert_non_null(s[n - 1]);
	for (int i = 0; i < n; i++)
		libxenvchan_close(s[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rendezvous),
		cmocka_unit_test(test_big_rings),
		cmocka_unit_test(test_close_removes_path),
		cmocka_unit_test(test_server_crash),
		cmocka_unit_test(test_grant_table_per_domain),
	};

	return cmocka_run_group_tests_name("xensim vchan", tests, setup,
					   teardown);
}
