// SPDX-License-Identifier: GPL-2.0
/*
 * hostile-agent: a guest agent that speaks trace-cmd's agent protocol with
 * the project's message layer and misbehaves by script, so that tests can
 * prove the recorder in dom0 stays in charge of a guest that is an
 * adversary.
 *
 *   hostile-agent --mode MODE (--tcp PORT | --xen) [--tmp DIR]
 *                 [--delay-ms N] [--pages N] [--meta-mib N] [--cpus N]
 *                 [--flood-mib N]
 *
 * --xen serves the control vchan to dom0 and advertises it in this
 * domain's xenstore directory (XENSIM_DOMID on the simulator), as
 * `trace-cmd-xen agent --xen` does; --tcp listens on 127.0.0.1:PORT. One
 * session, then the agent holds whatever it still has open until it is
 * killed: a guest that misbehaves does not politely go away.
 *
 * Each mode is a row of the table below: what TRACE_RESP claims, what time
 * sync answers, what metadata and pages are sent, where the agent dribbles
 * or goes silent. On stdout it says what it sent: "hostile: trace_id N",
 * "hostile: good_pages N events N bad_pages N", for the test's checks.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libxenvchan.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xenevtchn.h>

#include "agent-internal.h"
#include "tcx-util.h"
#include "tdat.h"
#include "tmsg.h"
#include "tsync-internal.h"
#include "tlib.h"

#define MAXC		8
#define PAGE		4096
#define PER_PAGE	255		/* 16-byte events in a 4 KiB page */
#define CTL_RING	(64 * 1024)
#define DATA_RING	(1024 * 1024)

/* ---- the script ---- */

enum step { AT_NONE, AT_RESP, AT_META, AT_AFTER_META, AT_PAGE, AT_CLOSE };
enum tsy { TS_NONE, TS_PROBES, TS_TIMES };
enum meta { M_GOOD, M_OPTIONS, M_12, M_WRAP, M_PAST, M_BIG };
enum pages { P_GOOD, P_BAD, P_FLOOD, P_NOTIFY };

struct mode {
	const char *name;
	enum step mute;		/* goes silent here */
	enum step dribble;	/* sends this step's message a byte at a time */
	uint32_t claim;		/* CPUs in TRACE_RESP (0: the real ones) */
	enum tsy tsync;
	int64_t ts_off;		/* TS_TIMES: the offset claimed */
	int64_t ts_shift;	/* TS_TIMES: added to the ts claimed */
	enum meta meta;
	enum pages pages;
};

#define CLAIM_VCPUS	UINT32_MAX	/* one more than the domain has */

static const struct mode modes[] = {
	{ .name = "good" },
	{ .name = "dribble-resp", .dribble = AT_RESP },
	{ .name = "dribble-meta", .dribble = AT_META },
	{ .name = "dribble-close", .dribble = AT_CLOSE },
	{ .name = "probes", .tsync = TS_PROBES },
	{ .name = "cpus-4096", .claim = 4096 },
	{ .name = "cpus-2g", .claim = 1u << 31 },
	{ .name = "cpus-1000", .claim = 1000 },
	{ .name = "cpus-vcpus", .claim = CLAIM_VCPUS },
	{ .name = "times-window", .tsync = TS_TIMES, .ts_off = 1000000000000000ll },
	{ .name = "times-big", .tsync = TS_TIMES, .ts_off = ((int64_t)1 << 62) + 1 },
	{ .name = "times-min", .tsync = TS_TIMES, .ts_off = INT64_MIN },
	{ .name = "times-ts", .tsync = TS_TIMES, .ts_shift = INT64_MAX },
	{ .name = "options", .meta = M_OPTIONS },
	{ .name = "meta-12", .meta = M_12 },
	{ .name = "meta-wrap", .meta = M_WRAP },
	{ .name = "meta-past", .meta = M_PAST },
	{ .name = "meta-big", .meta = M_BIG },
	{ .name = "pages-bad", .pages = P_BAD },
	{ .name = "pages-flood", .pages = P_FLOOD },
	{ .name = "flood", .pages = P_NOTIFY },
	{ .name = "mute-resp", .mute = AT_RESP },
	{ .name = "mute-meta", .mute = AT_META },
	{ .name = "mute-after-meta", .mute = AT_AFTER_META },
	{ .name = "mute-page", .mute = AT_PAGE },
	{ .name = "mute-close", .mute = AT_CLOSE },
};

struct ha {
	const struct mode *mode;
	bool xen;
	unsigned int tcp_port, domid;
	int ncpus;
	uint32_t claim;
	int delay_ms, npages, meta_mib, flood_mib;
	const char *tmp;
	struct tmsg *m;
	struct tmsg_transport *ctl, *data[MAXC], *tst;
	struct libxenvchan *raw[MAXC];
	int lfd[MAXC], tlfd;
	uint32_t ports[MAXC], tport;
	uint64_t host_id, trace_id;
	uint8_t *pg;		/* npages pages per CPU, CPU after CPU */
	uint64_t good_pages, good_events, bad_pages;
	pthread_t tth;
	bool tstarted;
	volatile int stop;
};

/* ---- helpers ---- */

static void msleep(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&d, NULL);
}

/* Keep everything open, send nothing, until killed. */
static void hold(const char *where)
{
	printf("hostile: silent %s\n", where);
	fflush(stdout);
	for (;;)
		pause();
}

static void die(const char *what)
{
	fprintf(stderr, "hostile-agent: %s: %s\n", what, tcx_error());
	exit(1);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* Bytes one at a time, --delay-ms apart; ends when the peer is gone. */
static int dribble_out(struct ha *h, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		int ret = tmsg_write_full(h->ctl, b + i, 1);

		if (ret)
			return ret;
		msleep(h->delay_ms);
	}
	return 0;
}

/* ---- what the agent sends: a v6 trace.dat's metadata and pages ---- */

static uint8_t *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *b = NULL;

	if (fd >= 0 && !fstat(fd, &st) && (b = malloc(st.st_size + 1)) &&
	    read(fd, b, st.st_size) == st.st_size)
		*len = (size_t)st.st_size;
	else {
		free(b);
		b = NULL;
	}
	if (fd >= 0)
		close(fd);
	return b;
}

/* The options a guest must never get into dom0's files. */
static void inject(struct ha *h, struct tdat_writer *w)
{
	uint64_t ts[1] = { 1000 };
	int64_t off[1] = { 0x4444444444ll };
	struct tdat_time_shift_cpu sc[MAXC];
	uint32_t pids[MAXC];
	uint8_t o8[8];
	char date[] = "0x1badd00d";

	for (int c = 0; c < h->ncpus; c++) {
		sc[c] = (struct tdat_time_shift_cpu){ .count = 1, .ts = ts, .offset = off };
		pids[c] = 1;
	}
	put_le(o8, 0x3333333333ull, 8);
	if (tdat_add_option(w, TDAT_OPT_DATE, date, sizeof(date)) ||
	    tdat_add_option(w, TDAT_OPT_OFFSET, o8, 8) ||
	    tdat_add_guest(w, "evil", 0x6666666666ull, (uint32_t)h->ncpus, pids) ||
	    tdat_set_time_shift(w, h->host_id, 0, (uint32_t)h->ncpus, sc) ||
	    tdat_set_tsc2nsec(w, 12345, 7, 0x7777777777ull))
		die("injecting options");
}

static char *big_kallsyms(int mib, size_t *len)
{
	size_t cap = (size_t)mib << 20, n = 0;
	char *k = malloc(cap + 64);

	if (!k)
		return NULL;
	for (unsigned long i = 0; n < cap; i++)
		n += (size_t)sprintf(k + n, "ffffffff%08lx T hostile_%lu\n", i, i);
	*len = n;
	return k;
}

/* The metadata for @cpus CPUs (with the mode's content) and, for the real
 * CPUs, npages pages each of PER_PAGE tick events. */
static uint8_t *make_trace(struct ha *h, uint32_t cpus, size_t *meta_len)
{
	struct tdat_params p = { .version = 6, .page_size = PAGE, .max_cpus = (int)cpus,
				 .cpus = (int)cpus, .clock = "x86-tsc" };
	char path[512];
	struct tdat_writer *w;
	uint8_t *b;
	size_t len, ml;

	snprintf(path, sizeof(path), "%s/hostile-%d.dat", h->tmp, (int)getpid());
	w = tdat_open(path, &p);
	if (!w || tdat_add_event_format(w, "tcx", tlib_tick_format) ||
	    tdat_add_cmdline(w, 9, "ticker") ||
	    tdat_set_traceid(w, h->mode->meta == M_OPTIONS ? 0x5555555555ull : h->trace_id) ||
	    tdat_set_uname(w, "Linux hostile 6.1 x86_64"))
		die("tdat");
	if (h->mode->meta == M_OPTIONS)
		inject(h, w);
	if (h->mode->meta == M_BIG) {
		char *k = big_kallsyms(h->meta_mib, &len);

		if (!k || tdat_set_kallsyms(w, k, len))
			die("kallsyms");
		free(k);
	}
	if (tdat_start_data(w))
		die("tdat_start_data");
	for (int i = 0; i < h->npages * PER_PAGE; i++)
		for (int c = 0; c < h->ncpus; c++) {
			uint8_t ev[12] = { 0x84, 0x03, 0, 0, 9, 0, 0, 0 };

			put_le(ev + 8, (uint64_t)(c * 1000000 + i), 4);
			if (tdat_write_event(w, c, 5000 + (uint64_t)i * 10, ev, 12))
				die("tdat_write_event");
		}
	if (tdat_close(w))
		die("tdat_close");
	b = slurp(path, &len);
	unlink(path);
	if (!b || agent_meta_length(b, len, 6, &ml))
		die("reading back the trace");
	h->pg = calloc((size_t)h->ncpus * h->npages, PAGE);
	for (int c = 0; c < h->ncpus && cpus >= (uint32_t)h->ncpus; c++) {
		const uint8_t *e = b + ml + 10 + 16 * c;
		uint64_t off = get_le(e, 8), n = get_le(e + 8, 8);

		if (n != (uint64_t)h->npages * PAGE || off + n > len) {
			fprintf(stderr, "hostile-agent: %" PRIu64 " bytes of pages, not %d pages\n",
				n, h->npages);
			exit(1);
		}
		memcpy(h->pg + (size_t)c * h->npages * PAGE, b + off, n);
	}
	*meta_len = ml;
	return b;
}

/* The mode's cut of good metadata @b of @len bytes. */
static size_t spoil_meta(struct ha *h, uint8_t *b, size_t len)
{
	/* magic 10, "tracing6\0"... see agent_meta_length(): the header
	 * page's size is at 30, the header event's after that text */
	size_t hp = 30, he;

	he = hp + 8 + get_le(b + hp, 8) + 13;
	switch (h->mode->meta) {
	case M_12:
		return 12;
	case M_WRAP:
		put_le(b + hp, UINT64_MAX - 15, 8);
		return len;
	case M_PAST:
		put_le(b + he, len, 8);
		return len;
	default:
		return len;
	}
}

/* ---- crafted pages ---- */

static uint64_t rnd = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

/* 0: commit past the page; 1: an event whose length wraps; 2: garbage. */
static void bad_page(uint8_t *p, const uint8_t *good, int kind)
{
	memcpy(p, good, PAGE);
	switch (kind) {
	case 0:
		put_le(p + 8, PAGE * 4, 8);
		break;
	case 1:
		/* type_len 0: the length is the next word, minus 4 from here */
		put_le(p + 16, 0, 4);
		put_le(p + 20, 0xfffffffcu, 4);
		break;
	default:
		for (int i = 0; i < PAGE; i += 8)
			put_le(p + i, xorshift(), 8);
		put_le(p + 8, 4000 | (xorshift() & 0xff00000000000000ull), 8);
		break;
	}
}

static const uint8_t *good_page(struct ha *h, int c, int i)
{
	return h->pg + ((size_t)c * h->npages + (size_t)(i % h->npages)) * PAGE;
}

static int send_page(struct ha *h, int c, const uint8_t *p, size_t len)
{
	return tmsg_write_full(h->data[c], p, len);
}

/* A good page sent: its events are its commit's 16-byte records. A page
 * sent again is moved later in time: dom0 refuses a page that goes back. */
static int send_good(struct ha *h, int c, int i)
{
	uint8_t p[PAGE];
	int ret;

	memcpy(p, good_page(h, c, i), PAGE);
	put_le(p, get_le(p, 8) + (uint64_t)(i / h->npages) * 1000000, 8);
	ret = send_page(h, c, p, PAGE);

	if (!ret) {
		h->good_pages++;
		h->good_events += get_le(p + 8, 8) / 16;
	}
	return ret;
}

/* Good and bad pages on every CPU, alternated: good, bad 0, good, bad 1, ... */
static int pages_bad(struct ha *h)
{
	uint8_t bad[PAGE];
	int ret = 0;

	for (int c = 0; c < h->ncpus && !ret; c++) {
		for (int i = 0; i < h->npages && !ret; i++) {
			ret = send_good(h, c, i);
			if (ret || i >= 3)
				continue;
			bad_page(bad, good_page(h, c, i), i);
			ret = send_page(h, c, bad, PAGE);
			h->bad_pages += !ret;
		}
	}
	return ret;
}

static int pages_good(struct ha *h)
{
	int ret = 0;

	for (int i = 0; i < h->npages && !ret; i++)
		for (int c = 0; c < h->ncpus && !ret; c++)
			ret = send_good(h, c, i);
	return ret;
}

/* Pages as fast as the streams take them, --flood-mib per CPU or until
 * CLOSE comes. */
static int pages_flood(struct ha *h)
{
	int max = h->flood_mib * (1 << 20) / PAGE;

	for (int i = 0; i < max; i++) {
		int ret = tmsg_recv(h->ctl, h->m, 0);

		if (!ret && h->m->cmd == TMSG_CLOSE)
			return 1;
		if (ret && ret != -ETIMEDOUT)
			return ret;
		for (int c = 0; c < h->ncpus; c++) {
			ret = send_good(h, c, i);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Xen: every data stream's event channel kicked in a loop, no data. */
static void *notify_main(void *arg)
{
	struct ha *h = arg;
	uint64_t n = 0;

	while (!h->stop) {
		for (int c = 0; c < h->ncpus; c++)
			if (h->raw[c])
				xenevtchn_notify(h->raw[c]->event, h->raw[c]->event_port);
		n++;
	}
	printf("hostile: %" PRIu64 " notify rounds\n", n);
	return NULL;
}

/* ---- time sync: trace-cmd's ptp, with what the mode claims ---- */

static int ts_send(struct tmsg_transport *t, struct tmsg *m, uint32_t id,
		   const void *p, size_t len)
{
	int ret = tmsg_make_time_sync(m, TSYNC_PTP_NAME, id, p, len);

	return ret ? ret : tmsg_send(t, m);
}

static int ts_recv(struct tmsg_transport *t, struct tmsg *m, uint32_t *id)
{
	struct tmsg_time_sync in;
	int ret = tmsg_recv(t, m, 5000);

	if (!ret && m->cmd == TMSG_TIME_SYNC && !tmsg_parse_time_sync(m, &in)) {
		*id = in.msg_id;
		return 0;
	}
	return ret ? ret : -EPROTO;
}

/* One ptp round as the server, then OFFSET with the mode's lie. */
static int ptp_lie(struct ha *h, struct tmsg *m)
{
	uint8_t b[16];
	uint32_t id;
	int ret;

	put_be(b, 1, 4);
	put_be(b + 4, TSYNC_PTP_FASTEST, 4);
	ret = ts_send(h->tst, m, TSYNC_PTP_START, b, 8);
	if (!ret)
		ret = ts_recv(h->tst, m, &id);
	for (uint32_t i = 1; !ret && i <= TSYNC_PTP_LOOP; i++) {
		put_be(b, i, 4);
		ret = ts_send(h->tst, m, TSYNC_PTP_PROBE, b, 4);
		if (!ret)
			ret = ts_recv(h->tst, m, &id);
		if (h->mode->tsync == TS_PROBES) {
			/* the round never ends: probes for ever */
			i = 1;
			if (ret == -ETIMEDOUT || ret == -EPROTO)
				ret = 0;
		}
	}
	if (!ret)
		ret = ts_send(h->tst, m, TSYNC_PTP_END, NULL, 0);
	if (!ret)
		ret = ts_recv(h->tst, m, &id);
	if (ret)
		return ret;
	put_be(b, tsync_rdtsc() + (uint64_t)h->mode->ts_shift, 8);
	put_be(b + 8, (uint64_t)h->mode->ts_off, 8);
	return ts_send(h->tst, m, TSYNC_PTP_OFFSET, b, 16);
}

static void *tsync_main(void *arg)
{
	struct ha *h = arg;
	struct tmsg *m = malloc(sizeof(*m));
	int rounds = 0;

	if (h->xen) {
		while (!h->stop && tmsg_vchan_wait_client(h->tst, 200) == 0)
			;
	} else {
		int fd = tmsg_accept(h->tlfd, 10000, NULL, NULL);

		h->tst = fd < 0 ? NULL : tmsg_fd_transport(fd, "hostile tsync");
	}
	while (m && h->tst && !h->stop) {
		uint16_t cpu;
		int ret = tsync_none_wait(h->tst, 200, &cpu);

		if (ret == -ETIMEDOUT || ret == 0)
			continue;
		if (ret < 0 || ptp_lie(h, m))
			break;
		rounds++;
	}
	printf("hostile: %d ptp rounds answered\n", rounds);
	free(m);
	return NULL;
}

/* ---- the session ---- */

static void open_ctl(struct ha *h)
{
	char path[TMSG_VCHAN_PATH_MAX + 1];

	if (!h->xen) {
		int lfd = tmsg_tcp_listen("127.0.0.1", h->tcp_port, NULL), fd;

		if (lfd < 0)
			die("listen");
		printf("hostile: listening\n");
		fflush(stdout);
		fd = tmsg_accept(lfd, -1, NULL, NULL);
		close(lfd);
		h->ctl = fd < 0 ? NULL : tmsg_fd_transport(fd, "hostile ctl");
		if (!h->ctl)
			die("accept");
		return;
	}
	if (tmsg_xs_self_domid(&h->domid) || tmsg_vchan_path(path, sizeof(path), h->domid, 0))
		die("xenstore");
	h->ctl = tmsg_vchan_server(0, path, CTL_RING, CTL_RING);
	if (!h->ctl || tmsg_xs_advertise(h->domid, "trace-cmd-v3 pages-per-cpu allow-list", 0))
		die("control vchan");
	printf("hostile: advertised\n");
	fflush(stdout);
	while (tmsg_vchan_wait_client(h->ctl, 200) == 0)
		;
}

static void open_data(struct ha *h)
{
	char path[TMSG_VCHAN_PATH_MAX + 1];

	for (int c = 0; c < h->ncpus; c++) {
		if (!h->xen) {
			h->lfd[c] = tmsg_tcp_listen("127.0.0.1", 0, &h->ports[c]);
			if (h->lfd[c] < 0)
				die("data listen");
			continue;
		}
		h->ports[c] = (uint32_t)c + 1;
		if (tmsg_vchan_path(path, sizeof(path), h->domid, h->ports[c]))
			die("vchan path");
		if (h->mode->pages == P_NOTIFY) {
			h->raw[c] = libxenvchan_server_init(NULL, 0, path, 0, DATA_RING);
			if (!h->raw[c])
				die("raw data vchan");
			continue;
		}
		h->data[c] = tmsg_vchan_server(0, path, 0, DATA_RING);
		if (!h->data[c])
			die("data vchan");
	}
	if (h->mode->tsync == TS_NONE)
		return;
	if (h->xen) {
		h->tport = (uint32_t)h->ncpus + 1;
		if (tmsg_vchan_path(path, sizeof(path), h->domid, h->tport))
			die("vchan path");
		h->tst = tmsg_vchan_server(0, path, CTL_RING, CTL_RING);
		if (!h->tst)
			die("tsync vchan");
	} else {
		h->tlfd = tmsg_tcp_listen("127.0.0.1", 0, &h->tport);
		if (h->tlfd < 0)
			die("tsync listen");
	}
}

/* The streams dom0 connected (TCP) or joined (vchan). */
static void connect_data(struct ha *h)
{
	for (int c = 0; c < h->ncpus; c++) {
		if (h->raw[c])
			continue;
		if (h->xen) {
			while (tmsg_vchan_wait_client(h->data[c], 200) == 0)
				;
			continue;
		}
		{
			int fd = tmsg_accept(h->lfd[c], 10000, NULL, NULL);

			h->data[c] = fd < 0 ? NULL : tmsg_fd_transport(fd, "hostile data");
			if (!h->data[c])
				hold("(dom0 did not connect every stream)");
		}
	}
}

/* TRACE_RESP as the mode claims it, built by hand: past 4096 CPUs the
 * library would not build it. */
static void send_resp(struct ha *h)
{
	struct tmsg *m = h->m;
	uint32_t n = h->claim, fl = 0;
	uint8_t *f = m->fixed;
	size_t len = 0;

	tmsg_make(m, TMSG_TRACE_RESP);
	put_be(f, fl, 4);
	put_be(f + 4, n, 4);
	put_be(f + 8, PAGE, 4);
	put_be(f + 12, h->trace_id, 8);
	if (h->mode->tsync != TS_NONE)
		snprintf((char *)f + 20, 16, "%s", TSYNC_PTP_NAME);
	put_be(f + 36, h->tport, 4);
	/* the real streams, then the last again for every claimed one */
	for (uint32_t c = 0; c < n; c++) {
		char port[16];
		int k = snprintf(port, sizeof(port), "%u",
				 h->ports[c < (uint32_t)h->ncpus ? c : (uint32_t)h->ncpus - 1]);

		if (len + k + 1 > TMSG_MAX_DATA - TMSG_TRACE_RESP_SIZE)
			break;	/* what fits: a count the ports do not match */
		memcpy(m->payload + len, port, k + 1);
		len += k + 1;
	}
	m->len = (uint32_t)len;
	if (h->mode->dribble == AT_RESP) {
		uint8_t wire[TMSG_WIRE_MAX];

		dribble_out(h, wire, tmsg_encode(m, wire));
		hold("after dribbling TRACE_RESP");
	}
	if (tmsg_send(h->ctl, m))
		die("TRACE_RESP");
}

/* The metadata as SEND_DATA ... FIN_DATA, cut, dribbled or muted. */
static void send_meta(struct ha *h, const uint8_t *b, size_t len)
{
	int ret;

	if (h->mode->mute == AT_META) {
		tmsg_send_data(h->ctl, b, len / 2);
		hold("mid-metadata");
	}
	if (h->mode->dribble == AT_META) {
		uint8_t wire[TMSG_WIRE_MAX];

		for (size_t at = 0; at < len; at += TMSG_MAX_DATA) {
			size_t n = len - at < TMSG_MAX_DATA ? len - at : TMSG_MAX_DATA;

			tmsg_make_data(h->m, b + at, n);
			if (dribble_out(h, wire, tmsg_encode(h->m, wire)))
				break;
		}
		hold("after dribbling the metadata");
	}
	ret = tmsg_send_data(h->ctl, b, len);
	if (!ret)
		ret = tmsg_send_cmd(h->ctl, TMSG_FIN_DATA);
	if (ret)
		hold("(dom0 stopped reading the metadata)");
}

/* Until CLOSE (1), or the peer's end (<0). */
static int wait_close(struct ha *h)
{
	for (;;) {
		int ret = tmsg_recv(h->ctl, h->m, 1000);

		if (ret == -ETIMEDOUT)
			continue;
		if (ret)
			return ret;
		if (h->m->cmd == TMSG_CLOSE)
			return 1;
	}
}

static void session(struct ha *h)
{
	const struct mode *md = h->mode;
	struct tmsg_trace_req req;
	uint8_t *meta;
	size_t mlen;
	pthread_t nth;
	bool notifying = false;
	int ret;

	open_ctl(h);
	h->ctl->io_timeout_ms = 30000;
	if (tmsg_recv(h->ctl, h->m, 30000) || h->m->cmd != TMSG_TRACE_REQ ||
	    tmsg_parse_trace_req(h->m, &req))
		die("TRACE_REQ");
	h->host_id = req.trace_id;
	tmsg_trace_req_free(&req);
	if (md->mute == AT_RESP)
		hold("before TRACE_RESP");
	h->claim = md->claim == CLAIM_VCPUS ? (uint32_t)h->ncpus + 1 :
		   md->claim ? md->claim : (uint32_t)h->ncpus;
	meta = make_trace(h, h->claim <= TDAT_MAX_CPUS ? h->claim : (uint32_t)h->ncpus, &mlen);
	mlen = spoil_meta(h, meta, mlen);
	open_data(h);
	printf("hostile: trace_id %" PRIu64 " host %" PRIu64 " claim %u\n", h->trace_id,
	       h->host_id, h->claim);
	fflush(stdout);
	send_resp(h);
	connect_data(h);
	if (md->tsync != TS_NONE && !pthread_create(&h->tth, NULL, tsync_main, h))
		h->tstarted = true;
	send_meta(h, meta, mlen);
	free(meta);
	if (md->mute == AT_AFTER_META)
		hold("after the metadata");
	if (md->mute == AT_PAGE) {
		send_page(h, 0, good_page(h, 0, 0), PAGE / 2);
		hold("mid-page");
	}
	switch (md->pages) {
	case P_BAD:
		ret = pages_bad(h);
		break;
	case P_FLOOD:
		ret = pages_flood(h);
		break;
	case P_NOTIFY:
		notifying = !pthread_create(&nth, NULL, notify_main, h);
		ret = 0;
		break;
	default:
		ret = pages_good(h);
		break;
	}
	printf("hostile: good_pages %" PRIu64 " events %" PRIu64 " bad_pages %" PRIu64 "\n",
	       h->good_pages, h->good_events, h->bad_pages);
	fflush(stdout);
	if (ret < 0)
		hold("(a stream broke)");
	if (ret == 0 && wait_close(h) < 0)
		hold("(the control stream broke)");
	if (md->mute == AT_CLOSE)
		hold("at CLOSE");
	h->stop = 1;
	if (notifying)
		pthread_join(nth, NULL);
	if (h->tstarted)
		pthread_join(h->tth, NULL);
	for (int c = 0; c < h->ncpus; c++) {
		tmsg_close(h->data[c]);
		h->data[c] = NULL;
		if (h->raw[c])
			libxenvchan_close(h->raw[c]);
		h->raw[c] = NULL;
	}
	if (md->dribble == AT_CLOSE) {
		uint8_t wire[TMSG_WIRE_MAX];

		tmsg_make(h->m, TMSG_CLOSE_RESP);
		dribble_out(h, wire, tmsg_encode(h->m, wire));
		hold("after dribbling CLOSE_RESP");
	}
	tmsg_send_cmd(h->ctl, TMSG_CLOSE_RESP);
	hold("after the session");
}

static void usage(void)
{
	fprintf(stderr, "usage: hostile-agent --mode MODE (--tcp PORT | --xen) [--tmp DIR] "
		"[--delay-ms N] [--pages N] [--meta-mib N] [--cpus N] [--flood-mib N]\nmodes:");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(stderr, " %s", modes[i].name);
	fputc('\n', stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "tcp", required_argument, NULL, 't' },
		{ "xen", no_argument, NULL, 'x' },
		{ "tmp", required_argument, NULL, 'd' },
		{ "delay-ms", required_argument, NULL, 'D' },
		{ "pages", required_argument, NULL, 'p' },
		{ "meta-mib", required_argument, NULL, 'M' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "flood-mib", required_argument, NULL, 'F' },
		{ 0 }
	};
	struct ha h = { .ncpus = 2, .delay_ms = 100, .npages = 4, .meta_mib = 100, .flood_mib = 8,
			.tmp = "/tmp", .tlfd = -1 };
	const char *mode = NULL;
	bool tcp = false;
	int o;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'm':
			mode = optarg;
			break;
		case 't':
			tcp = true;
			h.tcp_port = (unsigned int)atoi(optarg);
			break;
		case 'x':
			h.xen = true;
			break;
		case 'd':
			h.tmp = optarg;
			break;
		case 'D':
			h.delay_ms = atoi(optarg);
			break;
		case 'p':
			h.npages = atoi(optarg);
			break;
		case 'M':
			h.meta_mib = atoi(optarg);
			break;
		case 'c':
			h.ncpus = atoi(optarg);
			break;
		case 'F':
			h.flood_mib = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	for (size_t i = 0; mode && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, mode))
			h.mode = &modes[i];
	if (!h.mode || tcp == h.xen || h.ncpus < 1 || h.ncpus > MAXC || h.npages < 1 ||
	    h.delay_ms < 0 || h.meta_mib < 1 || h.flood_mib < 1)
		usage();
	if (h.mode->pages == P_NOTIFY && !h.xen) {
		fprintf(stderr, "hostile-agent: flood is for vchan (--xen)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	h.m = malloc(sizeof(*h.m));
	h.trace_id = 0x4e57000000000000ull | (uint64_t)getpid();
	if (!h.m)
		return 1;
	session(&h);
	return 0;
}
