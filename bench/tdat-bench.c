// SPDX-License-Identifier: GPL-2.0
/*
 * tdat-bench: events per second through the tdat page encoder into a file,
 * against a plain write() of the same number of bytes to a file in the same
 * run and the same directory. Prints the ratio; the target is at least 50
 * million 16-byte events per second and at most 4x the plain copy's time.
 *
 *   tdat-bench [EVENTS] [DIR]      (defaults: 10000000, $TMPDIR or /tmp)
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tcx-util.h"
#include "tdat.h"

static const char fmt[] =
	"name: bench\nID: 5001\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:u64 val;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"val=%llu\", REC->val\n";

/*
 * Both clocks: CPU time of this (single-threaded) process is the per-core
 * cost and does not count the time other jobs on a shared machine take the
 * CPU away; wall time is printed alongside.
 */
struct stamp {
	double	cpu;
	double	wall;
};

static struct stamp now(void)
{
	double cpu = tcx_clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9;

	return (struct stamp){ cpu, tcx_now_ns() / 1e9 };
}

static struct stamp since(struct stamp t0)
{
	struct stamp t1 = now();

	return (struct stamp){ t1.cpu - t0.cpu, t1.wall - t0.wall };
}

/* Encode @n events on @ncpu CPUs; returns seconds, *bytes = data written. */
static struct stamp run_tdat(const char *path, long n, int ncpu, int use_reserve, uint64_t *bytes)
{
	struct tdat_params p = { .version = 7, .max_cpus = ncpu, .cpus = ncpu };
	struct tdat_writer *w = tdat_open(path, &p);
	struct tdat_stats st;
	uint8_t ev[16] = { 0x89, 0x13 };	/* common_type 5001 */
	struct stamp t0, t;
	long i;

	if (!w || tdat_add_event_format(w, "xen", fmt) || tdat_start_data(w)) {
		fprintf(stderr, "tdat-bench: %s\n", tcx_error());
		exit(1);
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		uint64_t ts = 1000 + (uint64_t)i * 3;
		int cpu = ncpu > 1 ? (int)(i % ncpu) : 0;

		if (use_reserve) {
			uint8_t *d = tdat_reserve(w, cpu, ts, 16);

			if (!d)
				goto fail;
			memcpy(d, ev, 8);
			memcpy(d + 8, &i, 8);
		} else {
			memcpy(ev + 8, &i, 8);
			if (tdat_write_event(w, cpu, ts, ev, 16))
				goto fail;
		}
	}
	tdat_get_stats(w, -1, &st);
	*bytes = st.pages * 4096;
	/*
	 * Up to a closed file: a layout that grows regions in place pays the
	 * filesystem's writeback as it grows, one that leaves gaps pays it
	 * when the close compacts them; timing only up to the flush would
	 * count the one and not the other.
	 */
	if (tdat_close(w))
		goto fail;
	t = since(t0);
	return t;
fail:
	fprintf(stderr, "tdat-bench: %s\n", tcx_error());
	exit(1);
}

/* Raw kernel pages through tdat_write_page (the agent's path). */
static struct stamp run_pages(const char *path, long n, uint64_t *bytes)
{
	struct tdat_params p = { .version = 7, .max_cpus = 1, .cpus = 1 };
	struct tdat_writer *w = tdat_open(path, &p);
	uint8_t ev[16] = { 0x89, 0x13 }, page[4096];
	long pages = n / 204, i;
	struct stamp t0, t;
	uint64_t ts;
	int j;

	if (!w || tdat_add_event_format(w, "xen", fmt) || tdat_start_data(w))
		goto fail;
	/* one full page of 204 events, as a kernel would hand it over */
	memset(page, 0, sizeof(page));
	for (j = 0; j < 204; j++) {
		uint32_t h = 4 | (3u << 5);

		memcpy(page + 16 + j * 20, &h, 4);
		memcpy(page + 16 + j * 20 + 4, ev, 16);
	}
	ts = 4080;
	memcpy(page + 8, &ts, 8);
	t0 = now();
	for (i = 0; i < pages; i++) {
		ts = 1000 + (uint64_t)i * 1000;
		memcpy(page, &ts, 8);
		if (tdat_write_page(w, 0, page))
			goto fail;
	}
	*bytes = (uint64_t)pages * 4096;
	if (tdat_close(w))
		goto fail;
	t = since(t0);
	return t;
fail:
	fprintf(stderr, "tdat-bench: %s\n", tcx_error());
	exit(1);
}

/* The reference: write() the same bytes in the same chunks, no encoding. */
static struct stamp run_copy(const char *path, uint64_t bytes)
{
	size_t chunk = 32 * 4096;
	char *buf = malloc(chunk);
	struct stamp t0, t;
	int fd;

	memset(buf, 0x5a, chunk);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf) {
		perror(path);
		exit(1);
	}
	t0 = now();
	while (bytes) {
		size_t k = bytes < chunk ? bytes : chunk;

		if (write(fd, buf, k) != (ssize_t)k) {
			perror("write");
			exit(1);
		}
		bytes -= k;
	}
	close(fd);
	t = since(t0);
	free(buf);
	return t;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char a[512], b[512];
	/* reserve: 0 write_event, 1 tdat_reserve, 2 raw pages */
	struct { const char *name; int ncpu, reserve; } cases[] = {
		{ "write_event, 1 CPU", 1, 0 },
		{ "reserve, 1 CPU", 1, 1 },
		{ "write_event, 4 CPUs interleaved", 4, 0 },
		{ "write_page (raw 4 KiB pages)", 1, 2 },
	};
	int failed = 0;
	unsigned int i, r;

	snprintf(a, sizeof(a), "%s/tdat-bench-%d.dat", dir, getpid());
	snprintf(b, sizeof(b), "%s/tdat-bench-%d.copy", dir, getpid());
	printf("tdat-bench: %ld events of 16 bytes, files in %s (best of 3)\n", n, dir);
	printf("  rates per CPU-second of this process (wall-clock rate in brackets);\n"
	       "  ratio = tdat time / time of write()ing the same bytes, best of 3 each\n");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stamp bt = { 1e9, 1e9 }, bc = { 1e9, 1e9 }, t, c;
		uint64_t bytes = 0;
		bool met;

		for (r = 0; r < 3; r++) {
			if (cases[i].reserve == 2)
				t = run_pages(a, n, &bytes);
			else
				t = run_tdat(a, n, cases[i].ncpu, cases[i].reserve, &bytes);
			unlink(a);
			c = run_copy(b, bytes);
			unlink(b);
			bt.cpu = t.cpu < bt.cpu ? t.cpu : bt.cpu;
			bt.wall = t.wall < bt.wall ? t.wall : bt.wall;
			bc.cpu = c.cpu < bc.cpu ? c.cpu : bc.cpu;
			bc.wall = c.wall < bc.wall ? c.wall : bc.wall;
		}
		met = n / bt.cpu >= 50e6 && bt.cpu / bc.cpu <= 4.0;
		printf("  %-32s %6.1f M events/s [%5.1f] %6.0f MB/s | write() of the same %llu MB %6.0f MB/s [%5.0f] | ratio %.2fx [%.2fx] %s\n",
		       cases[i].name, n / bt.cpu / 1e6, n / bt.wall / 1e6, bytes / bt.cpu / 1e6,
		       (unsigned long long)(bytes >> 20), bytes / bc.cpu / 1e6, bytes / bc.wall / 1e6,
		       bt.cpu / bc.cpu, bt.wall / bc.wall,
		       met ? "target met" : "TARGET MISSED (>= 50 M/s, <= 4x)");
		if (i == 0 && !met)
			failed = 1;
	}
	return failed;
}
