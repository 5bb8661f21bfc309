// SPDX-License-Identifier: GPL-2.0
/*
 * The file: metadata layout (v6 sequence or v7 sections), per-CPU regions,
 * the on-disk size table patched after every batch, region growth and the
 * final compaction.
 *
 * Crash safety rests on one order: page bytes are written first, the size
 * that makes them visible second. Between the two a kill loses the batch,
 * never shows garbage.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tdat-internal.h"

#define SEC_OPTIONS		0
#define SEC_FLYRECORD		3
#define SEC_HEADER_INFO		16
#define SEC_FTRACE_EVENTS	17
#define SEC_EVENT_FORMATS	18
#define SEC_KALLSYMS		19
#define SEC_PRINTK		20
#define SEC_CMDLINES		21
#define NO_DESC			0xffffffffu

static const uint8_t magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

/* Past @n bytes written from *@iov, @cnt entries; returns the entries left. */
static int iov_skip(struct iovec **iov, int cnt, size_t n)
{
	struct iovec *v = *iov;

	while (cnt && n >= v->iov_len) {
		n -= v->iov_len;
		v++;
		cnt--;
	}
	if (cnt) {
		v->iov_base = (char *)v->iov_base + n;
		v->iov_len -= n;
	}
	*iov = v;
	return cnt;
}

/* pwritev() until all is written; @iov is consumed. */
static int pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	while (cnt) {
		ssize_t n = pwritev(fd, iov, cnt, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		off += (uint64_t)n;
		cnt = iov_skip(&iov, cnt, (size_t)n);
	}
	return 0;
}

int tdat_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { (void *)buf, len };

	return len ? pwritev_all(fd, &iov, 1, off) : 0;
}

static int io_fail(struct tdat_writer *w, int ret, const char *what)
{
	/* shared: the message and the flag of the first failure together */
	if (w->shared)
		pthread_mutex_lock(&w->err_lock);
	tdat_err(w, ret, "%s: %s: %s", w->path, what, strerror(-ret));
	__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
	if (w->shared)
		pthread_mutex_unlock(&w->err_lock);
	return ret;
}

static int patch(struct tdat_writer *w, const void *p, size_t len, uint64_t off)
{
	int ret = tdat_pwrite_all(w->fd, p, len, off);

	return ret ? io_fail(w, ret, "patching the size table") : 0;
}

static int build_table(struct tdat_writer *w, struct tdat_buf *b, uint32_t *ncpus);

/* ---- metadata ---- */

static int put_opt(struct tdat_buf *b, uint16_t id, const void *data, uint32_t size)
{
	if (tdat_buf_u16(b, id) || tdat_buf_u32(b, size) || tdat_buf_put(b, data, size))
		return -ENOMEM;
	return 0;
}

/*
 * The pieces both versions share, appended to the metadata as they are
 * (no copy of their own: the formats, kallsyms and printk are the
 * metadata's bulk, and every byte copied is a page touched).
 */
static int put_part(struct tdat_writer *w, struct tdat_buf *m, int i)
{
	int ret = 0;

	switch (i) {
	case 0:
		ret |= tdat_buf_str(m, "header_page");
		ret |= tdat_buf_u64(m, w->header_page_len);
		ret |= tdat_buf_put(m, w->header_page, w->header_page_len);
		ret |= tdat_buf_str(m, "header_event");
		ret |= tdat_buf_u64(m, strlen(tdat_header_event_text()));
		ret |= tdat_buf_put(m, tdat_header_event_text(), strlen(tdat_header_event_text()));
		break;
	case 1:
		ret |= tdat_buf_u32(m, w->nftrace);
		ret |= tdat_buf_put(m, w->ftrace.data, w->ftrace.len);
		break;
	case 2:
		ret |= tdat_buf_u32(m, w->nsys);
		for (int k = 0; k < w->nsys; k++) {
			ret |= tdat_buf_str(m, w->sys[k].name);
			ret |= tdat_buf_u32(m, w->sys[k].count);
			ret |= tdat_buf_put(m, w->sys[k].formats.data, w->sys[k].formats.len);
		}
		break;
	case 3:
		ret |= tdat_buf_u32(m, w->kallsyms_len);
		ret |= tdat_buf_put(m, w->kallsyms, w->kallsyms_len);
		/* a big kernel's kallsyms is tens of MiB: one copy at a time */
		free(w->kallsyms);
		w->kallsyms = NULL;
		break;
	case 4:
		ret |= tdat_buf_u32(m, w->printk_len);
		ret |= tdat_buf_put(m, w->printk, w->printk_len);
		free(w->printk);
		w->printk = NULL;
		break;
	default:
		ret |= tdat_buf_u64(m, w->cmdlines.len);
		ret |= tdat_buf_put(m, w->cmdlines.data, w->cmdlines.len);
		break;
	}
	return ret ? -ENOMEM : 0;
}

/* A v7 section's header, its size 0 until put_section_size() patches it. */
static int put_section_hdr(struct tdat_buf *m, uint16_t id, uint64_t *offset)
{
	*offset = m->len;
	if (tdat_buf_u16(m, id) || tdat_buf_u16(m, 0) || tdat_buf_u32(m, NO_DESC) ||
	    tdat_buf_u64(m, 0))
		return -ENOMEM;
	return 0;
}

/* The size of the section at @offset: what follows its header up to here. */
static void put_section_size(struct tdat_buf *m, uint64_t offset)
{
	uint64_t size = m->len - offset - 16;

	memcpy(m->data + offset + 8, &size, 8);
}

/* A v7 section of put_part(@i). */
static int put_part_section(struct tdat_writer *w, struct tdat_buf *m, int i, uint64_t *offset)
{
	int ret = put_section_hdr(m, SEC_HEADER_INFO + i, offset);

	if (!ret)
		ret = put_part(w, m, i);
	if (!ret)
		put_section_size(m, *offset);
	return ret;
}

static int put_section(struct tdat_buf *m, uint16_t id, const struct tdat_buf *body,
		       uint64_t *offset)
{
	int ret = put_section_hdr(m, id, offset);

	if (!ret)
		ret = tdat_buf_put(m, body->data, body->len);
	if (!ret)
		put_section_size(m, *offset);
	return ret;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int clock_opt(struct tdat_writer *w, struct tdat_buf *b)
{
	char s[128];
	int n = snprintf(s, sizeof(s), "[%s]", w->clock);

	return put_opt(b, TDAT_OPT_TRACECLOCK, s, n + 1);
}

static int user_opts(struct tdat_writer *w, struct tdat_buf *b)
{
	int i, ret = 0;

	for (i = 0; i < w->opts.n; i++)
		ret |= put_opt(b, w->opts.v[i].id, w->opts.v[i].data, w->opts.v[i].size);
	return ret;
}

static int meta_v7(struct tdat_writer *w, struct tdat_buf *m)
{
	struct tdat_buf o = {0};
	uint64_t secoff[6], optoff, pos, zero = 0, sz, bufpos;
	uint32_t n0 = 0, cpus = w->want_cpus;
	int ret = 0, i;

	ret |= tdat_buf_put(m, magic, 10) | tdat_buf_put(m, "7", 2);
	ret |= tdat_buf_put(m, "\0", 1);	/* little endian is 0 */
	m->data[m->len - 1] = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	ret |= tdat_buf_put(m, &(uint8_t){ w->long_size }, 1);
	ret |= tdat_buf_u32(m, w->page_size);
	ret |= tdat_buf_put(m, "none\0", 6);
	pos = m->len;
	ret |= tdat_buf_u64(m, 0);	/* first options section, set below */
	for (i = 0; i < 6 && !ret; i++)
		ret |= put_part_section(w, m, i, &secoff[i]);

	/* the options section: offsets of the sections above first */
	for (i = 0; i < 6; i++)
		ret |= put_opt(&o, SEC_HEADER_INFO + i, &secoff[i], 8);
	ret |= clock_opt(w, &o);
	ret |= user_opts(w, &o);
	optoff = m->len;
	/* patchable: CPUCOUNT and the BUFFER entries, found by their offsets */
	ret |= put_opt(&o, TDAT_OPT_CPUCOUNT, &cpus, 4);
	w->cpus_field_off = optoff + 16 + o.len - 4;
	/*
	 * BUFFER lists the CPUs with data; the room for max_cpus entries is
	 * kept as slack inside DONE, whose payload readers read by its size
	 * (its first 8 bytes are the link). Both are rewritten as CPUs appear.
	 */
	w->buf_opt_off = optoff + 16 + o.len;
	sz = 8 + 1 + strlen(w->clock) + 1 + 4 + 4;
	ret |= tdat_buf_u16(&o, TDAT_OPT_BUFFER) | tdat_buf_u32(&o, sz);
	bufpos = o.len;
	ret |= tdat_buf_u64(&o, 0);	/* the flyrecord section, set below */
	ret |= tdat_buf_str(&o, "");
	ret |= tdat_buf_str(&o, w->clock);
	ret |= tdat_buf_u32(&o, w->page_size);
	w->table_off = optoff + 16 + o.len;
	ret |= tdat_buf_u32(&o, n0);
	ret |= tdat_buf_u16(&o, TDAT_OPT_DONE) | tdat_buf_u32(&o, 8 + 20 * w->max_cpus);
	w->done_off = optoff + 16 + o.len;
	ret |= tdat_buf_u64(&o, zero);
	ret |= tdat_buf_zero(&o, 20ull * w->max_cpus);
	if (!ret) {
		uint64_t tmp;

		ret = put_section(m, SEC_OPTIONS, &o, &tmp);
		memcpy(m->data + pos, &optoff, 8);
		w->flyrec_off = m->len;
		memcpy(m->data + optoff + 16 + bufpos, &w->flyrec_off, 8);
		ret |= tdat_buf_u16(m, SEC_FLYRECORD) | tdat_buf_u16(m, 0);
		ret |= tdat_buf_u32(m, NO_DESC) | tdat_buf_u64(m, 0);
	}
	tdat_buf_free(&o);
	/* the live options slots: inside the flyrecord section, never read unlinked */
	w->live_size = TDAT_LIVE_BASE + TDAT_LIVE_PER_CPU * (uint32_t)w->max_cpus;
	if (w->live_size > TDAT_LIVE_MAX)
		w->live_size = TDAT_LIVE_MAX;
	w->live_off = align_up(m->len, 8);
	w->data_start = align_up(w->live_off + 2ull * w->live_size, w->page_size);
	return ret ? -ENOMEM : 0;
}

static int meta_v6(struct tdat_writer *w, struct tdat_buf *m)
{
	uint32_t cpus = w->want_cpus;
	int ret = 0, i;

	ret |= tdat_buf_put(m, magic, 10) | tdat_buf_put(m, "6", 2);
	ret |= tdat_buf_put(m, "\0", 1);
	m->data[m->len - 1] = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	ret |= tdat_buf_put(m, &(uint8_t){ w->long_size }, 1);
	ret |= tdat_buf_u32(m, w->page_size);
	for (i = 0; i < 6 && !ret; i++)
		ret |= put_part(w, m, i);
	w->cpus_field_off = m->len;
	ret |= tdat_buf_u32(m, cpus);
	ret |= tdat_buf_put(m, "options  ", 10);
	ret |= clock_opt(w, m);
	ret |= user_opts(w, m);
	ret |= tdat_buf_u16(m, TDAT_OPT_DONE);
	ret |= tdat_buf_put(m, "flyrecord", 10);
	w->table_off = m->len;
	/* the table and the clock line after it; rewritten as CPUs appear */
	w->table_room = 16ull * w->max_cpus + 8 + strlen(w->clock) + 3;
	w->data_start = align_up(m->len + w->table_room, w->page_size);
	return ret ? -ENOMEM : 0;
}

int tdat_write_metadata(struct tdat_writer *w)
{
	/* all of it up to the first data page in one allocation: the bulk, and room for the rest */
	size_t n = 64 * 1024 + 2 * TDAT_LIVE_MAX + w->page_size + 20 * (size_t)w->max_cpus +
		   w->header_page_len + w->ftrace.len + w->kallsyms_len + w->printk_len +
		   w->cmdlines.len;
	struct tdat_buf m = {0};
	int ret, i;

	for (i = 0; i < w->nsys; i++)
		n += strlen(w->sys[i].name) + 8 + w->sys[i].formats.len;
	ret = tdat_buf_reserve(&m, n);
	if (!ret)
		ret = w->version == 7 ? meta_v7(w, &m) : meta_v6(w, &m);
	if (ret) {
		tdat_buf_free(&m);
		return tdat_err(w, ret, "no memory for the metadata");
	}
	/*
	 * One write of everything up to the first data page, table and
	 * flyrecord size included: no moment where the file is half made.
	 */
	if (w->version == 6) {
		struct tdat_buf t = {0};
		uint32_t ncpus;

		ret = build_table(w, &t, &ncpus) | tdat_buf_put(&m, t.data, t.len);
		tdat_buf_free(&t);
	} else {
		uint64_t sz = w->data_start - (w->flyrec_off + 16);

		memcpy(m.data + w->flyrec_off + 8, &sz, 8);
	}
	if (!ret)
		ret = tdat_buf_zero(&m, w->data_start - m.len);
	if (ret) {
		tdat_buf_free(&m);
		return tdat_err(w, ret, "no memory for the metadata");
	}
	ret = tdat_pwrite_all(w->fd, m.data, m.len, 0);
	tdat_buf_free(&m);
	if (ret)
		return io_fail(w, ret, "writing the metadata");
	w->file_end = w->data_start;
	w->ncpus = w->want_cpus;
	return 0;
}

/* ---- the size table ---- */

/*
 * The v7 flyrecord section's size reaches the end of the file. Readers walk
 * the sections to the end; a size short of it would land them in a hole
 * (crawled 16 bytes at a time) or in page data read as section headers,
 * while one past it just ends the walk. So the size grows before the file
 * does, and shrinks after.
 */
static int flyrec_size(struct tdat_writer *w, uint64_t end)
{
	uint64_t sz;

	if (w->version != 7)
		return 0;
	sz = end - (w->flyrec_off + 16);
	return patch(w, &sz, 8, w->flyrec_off + 8);
}

static int active_index(struct tdat_writer *w, int cpu)
{
	int i;

	for (i = 0; i < w->nactive; i++)
		if (w->active[i] == cpu)
			return i;
	return -1;
}

static void entry(struct tdat_writer *w, int cpu, uint8_t *p)
{
	struct tdat_cpu *c = w->cpu[cpu];
	uint64_t off = c && c->has_region ? c->region_off : 0;
	uint64_t size = c && c->has_region && !c->hidden ? c->size : 0;
	uint32_t c32 = cpu;

	if (w->version == 7) {
		memcpy(p, &c32, 4);
		memcpy(p + 4, &off, 8);
		memcpy(p + 12, &size, 8);
	} else {
		memcpy(p, &off, 8);
		memcpy(p + 8, &size, 8);
	}
}

static int patch_one(struct tdat_writer *w, struct tdat_cpu *c)
{
	uint8_t e[20];
	int i;

	entry(w, c->cpu, e);
	if (w->version == 6)
		return patch(w, e, 16, w->table_off + 16ull * c->cpu);
	i = active_index(w, c->cpu);
	return patch(w, e, 20, w->table_off + 4 + 20ull * i);
}

/*
 * The CPU table as it must be now: v7 the BUFFER option (and DONE's head)
 * from its header on, v6 the table and clock line. Sets *ncpus.
 */
static int build_table(struct tdat_writer *w, struct tdat_buf *b, uint32_t *ncpus)
{
	uint8_t e[20];
	int ret = 0, i, j;

	*ncpus = w->want_cpus;
	if (w->nactive && w->active[w->nactive - 1] + 1 > (int)*ncpus)
		*ncpus = w->active[w->nactive - 1] + 1;
	if (w->version == 7) {
		uint64_t fixed = w->table_off - w->buf_opt_off - 6;

		ret |= tdat_buf_u16(b, TDAT_OPT_BUFFER);
		ret |= tdat_buf_u32(b, fixed + 4 + 20 * w->nactive);
		ret |= tdat_buf_u64(b, w->flyrec_off);
		ret |= tdat_buf_str(b, "");
		ret |= tdat_buf_str(b, w->clock);
		ret |= tdat_buf_u32(b, w->page_size);
		ret |= tdat_buf_u32(b, w->nactive);
		for (i = 0; i < w->nactive; i++) {
			entry(w, w->active[i], e);
			ret |= tdat_buf_put(b, e, 20);
		}
		ret |= tdat_buf_u16(b, TDAT_OPT_DONE);
		ret |= tdat_buf_u32(b, 8 + 20 * (w->max_cpus - w->nactive));
		w->done_off = w->buf_opt_off + b->len;
		/* the live options stay linked (the caller holds live_lock) */
		ret |= tdat_buf_u64(b, w->live_link);
		/*
		 * The rest of DONE's room is never read; entries only grow,
		 * so what this write does not reach is still the zeros of
		 * tdat_start_data(): a new CPU costs one small write.
		 */
	} else {
		char clk[140];
		int n = snprintf(clk, sizeof(clk), "[%s]\n", w->clock);

		/* a CPU without a region is zeros: its state may be being made */
		for (i = 0, j = 0; i < (int)*ncpus; i++) {
			memset(e, 0, sizeof(e));
			if (j < w->nactive && w->active[j] == i) {
				entry(w, i, e);
				j++;
			}
			ret |= tdat_buf_put(b, e, 16);
		}
		/* the table only grows: this covers the previous clock line */
		ret |= tdat_buf_u64(b, n);
		ret |= tdat_buf_put(b, clk, n);
	}
	return ret ? -ENOMEM : 0;
}

/* Rewrite the CPU count and the whole table: when the CPU set changes. */
int tdat_file_patch_cpus(struct tdat_writer *w)
{
	struct tdat_buf b = {0};
	uint32_t ncpus;
	int ret;

	pthread_mutex_lock(&w->live_lock);
	if (build_table(w, &b, &ncpus)) {
		pthread_mutex_unlock(&w->live_lock);
		tdat_buf_free(&b);
		return tdat_err(w, -ENOMEM, "no memory for the CPU table");
	}
	w->ncpus = ncpus;
	/*
	 * The table first, the count second: a kill in between leaves the old
	 * count reading entries that are all valid (v6 then sees a bad clock
	 * line and falls back to "local", with a warning).
	 */
	ret = patch(w, b.data, b.len, w->version == 7 ? w->buf_opt_off : w->table_off);
	pthread_mutex_unlock(&w->live_lock);
	tdat_buf_free(&b);
	if (!ret)
		ret = patch(w, &ncpus, 4, w->cpus_field_off);
	return ret;
}

/* ---- regions ---- */

/*
 * Before data moves (fallocate shifting, copies), the regions at or after
 * @from show size 0 on disk: a kill then loses their view, never shows
 * pages at a stale offset. The caller patches the new offsets after.
 */
static int hide_from(struct tdat_writer *w, uint64_t from, bool hide)
{
	bool any = false;
	int i;

	for (i = 0; i < w->nactive; i++) {
		struct tdat_cpu *o = w->cpu[w->active[i]];

		if (o->region_off >= from && o->hidden != hide) {
			o->hidden = hide;
			any = true;
		}
	}
	return any ? tdat_file_patch_cpus(w) : 0;
}

static int extend_to(struct tdat_writer *w, uint64_t end)
{
	int ret;

	if (end > w->file_end) {
		ret = flyrec_size(w, end);
		if (ret)
			return ret;
	}
	if (ftruncate(w->fd, end)) {
		ret = -errno;
		/* put the size back: the file did not grow */
		flyrec_size(w, w->file_end);
		return io_fail(w, ret, "resizing the file");
	}
	w->file_end = end;
	return flyrec_size(w, end);
}

static int region_alloc(struct tdat_writer *w, struct tdat_cpu *c)
{
	struct tdat_resv *r = w->resv ? &w->resv[c->cpu] : NULL;
	bool reserved = r && r->cap;
	int i;

	c->region_off = reserved ? r->off : w->file_end;
	c->region_cap = reserved ? r->cap : w->region_size;
	if (reserved)
		r->cap = 0;
	c->size = 0;
	i = w->nactive++;
	while (i > 0 && w->active[i - 1] > c->cpu) {
		w->active[i] = w->active[i - 1];
		i--;
	}
	w->active[i] = c->cpu;
	c->has_region = true;
	i = reserved ? 0 : extend_to(w, c->region_off + c->region_cap);
	return i ? i : tdat_file_patch_cpus(w);
}

int tdat_reserve_region(struct tdat_writer *w, int cpu, uint64_t bytes)
{
	uint64_t cap = align_up(bytes ? bytes : w->region_size, w->page_size);
	int ret;

	if (!w->started)
		return tdat_err(w, -EINVAL, "a region for CPU %d before tdat_start_data()", cpu);
	if (tdat_failed(w))
		return tdat_sticky(w);
	if (cpu < 0 || cpu >= w->max_cpus)
		return tdat_err(w, -EINVAL, "a region for CPU %d, beyond max_cpus %d", cpu,
				w->max_cpus);
	if ((w->cpu[cpu] && w->cpu[cpu]->has_region) || (w->resv && w->resv[cpu].cap))
		return tdat_err(w, -EEXIST, "CPU %d has its region already", cpu);
	if (!w->resv) {
		w->resv = calloc(w->max_cpus, sizeof(*w->resv));
		if (!w->resv)
			return tdat_err(w, -ENOMEM, "no memory for the regions");
	}
	ret = extend_to(w, w->file_end + cap);
	if (ret)
		return ret;
	w->resv[cpu].off = w->file_end - cap;
	w->resv[cpu].cap = cap;
	return 0;
}

/* Copy @len bytes inside the file, front to back (dst < src or disjoint). */
static int copy_range(struct tdat_writer *w, uint64_t src, uint64_t dst, uint64_t len)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	ssize_t n;
	int ret = 0;

	if (!buf)
		return tdat_err(w, -ENOMEM, "no memory to move data");
	while (len && !ret) {
		size_t want = len < chunk ? len : chunk;

		n = pread(w->fd, buf, want, src);
		if (n <= 0) {
			ret = io_fail(w, n < 0 ? -errno : -EIO, "reading data to move");
			break;
		}
		ret = tdat_pwrite_all(w->fd, buf, n, dst);
		if (ret)
			ret = io_fail(w, ret, "moving data");
		src += n;
		dst += n;
		len -= n;
	}
	free(buf);
	return ret;
}

/*
 * In place, by an eighth of the room (at least region_size): the file's
 * size stays within that of its data, and the growths are logarithmic in
 * it. A move copies, so it doubles.
 */
static uint64_t grow_step(const struct tdat_writer *w, const struct tdat_cpu *c)
{
	uint64_t add = align_up(c->region_cap / TDAT_GROW_DIV, w->page_size);

	return add < w->region_size ? w->region_size : add;
}

/*
 * A full region grows in place: FALLOC_FL_INSERT_RANGE opens space after it
 * and shifts the regions behind it, whose offsets are then patched. Where
 * the filesystem cannot (tmpfs), the region moves to the end of the file
 * at twice the size: only this CPU's bytes are copied, and the new offset
 * is patched after the copy, so a reader never sees a half-moved region.
 *
 * On ext4 an insert first writes back, and waits for, every dirty page
 * behind it: with several busy CPUs that is most of the data written so
 * far, whatever the step, the batching or the order of the regions, as
 * long as the gaps stay a fraction of the data (copying instead costs
 * more). The old 256 MiB rooms paid the same writeback at close.
 */
static int region_grow(struct tdat_writer *w, struct tdat_cpu *c)
{
	uint64_t add = grow_step(w, c);
	uint64_t end = c->region_off + c->region_cap;
	uint64_t old_off = c->region_off;
	int ret, i;

	if (end == w->file_end) {
		c->region_cap += add;
		return extend_to(w, w->file_end + add);
	}
	ret = hide_from(w, end, true);
	if (!ret)
		ret = flyrec_size(w, w->file_end + add);
	if (ret)
		return ret;
	if (!fallocate(w->fd, FALLOC_FL_INSERT_RANGE, end, add)) {
		for (i = 0; i < w->nactive; i++) {
			struct tdat_cpu *o = w->cpu[w->active[i]];

			if (o != c && o->region_off >= end)
				o->region_off += add;
		}
		for (i = 0; w->resv && i < w->max_cpus; i++)
			if (w->resv[i].cap && w->resv[i].off >= end)
				w->resv[i].off += add;
		c->region_cap += add;
		w->file_end += add;
		return hide_from(w, 0, false);
	}
	ret = hide_from(w, 0, false);
	if (ret)
		return ret;
	add = c->region_cap;
	ret = extend_to(w, w->file_end + 2 * add);
	if (ret)
		return ret;
	ret = copy_range(w, old_off, w->file_end - 2 * add, c->size);
	if (ret)
		return ret;
	c->region_off = w->file_end - 2 * add;
	c->region_cap = 2 * add;
	ret = patch_one(w, c);
	/* give the old blocks back; a failure only costs disk space */
	if (!ret && c->size)
		(void)fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, old_off,
				align_up(c->size, w->page_size));
	return ret;
}

static bool dio_fits(const struct tdat_writer *w, const struct iovec *iov, int cnt, uint64_t off)
{
	if (off % w->dio_off)
		return false;
	for (int i = 0; i < cnt; i++)
		if ((uintptr_t)iov[i].iov_base % w->dio_mem || iov[i].iov_len % w->dio_off)
			return false;
	return true;
}

/*
 * Direct where it fits; what a direct write leaves (a short write near a
 * full disk) goes buffered. A refusal (EINVAL) ends direct writes for good.
 */
static int write_pages(struct tdat_writer *w, struct iovec *iov, int cnt, uint64_t off)
{
	ssize_t n;

	if (w->dfd < 0 || !dio_fits(w, iov, cnt, off))
		return pwritev_all(w->fd, iov, cnt, off);
	do
		n = pwritev(w->dfd, iov, cnt, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EINVAL) {
		close(w->dfd);
		w->dfd = -1;
		n = 0;
	}
	if (n < 0)
		return -errno;
	off += (uint64_t)n;
	cnt = iov_skip(&iov, cnt, (size_t)n);
	return cnt ? pwritev_all(w->fd, iov, cnt, off) : 0;
}

static int write_cpu(struct tdat_writer *w, struct tdat_cpu *c, struct iovec *iov,
		     int cnt, uint64_t bytes)
{
	int ret;

	if (tdat_failed(w))
		return tdat_sticky(w);
	if (!c->has_region) {
		ret = region_alloc(w, c);
		if (ret)
			return ret;
	}
	while (c->size + bytes > c->region_cap) {
		ret = region_grow(w, c);
		if (ret)
			return ret;
	}
	ret = write_pages(w, iov, cnt, c->region_off + c->size);
	if (ret)
		return io_fail(w, ret, "writing pages");
	c->size += bytes;
	/*
	 * A region that is not last grows by an insert, which writes back
	 * the regions behind it and waits: start that writeback a quarter
	 * step at a time, so that the insert finds it done. Earlier, not
	 * more: the next insert, or the collapse of the gap at close,
	 * writes these pages back anyway.
	 */
	if (c->region_off + c->region_cap < w->file_end && c->size >= c->wb_behind) {
		(void)sync_file_range(w->fd, c->region_off + c->region_cap, 0,
				      SYNC_FILE_RANGE_WRITE);
		c->wb_behind = c->size + grow_step(w, c) / 4;
	}
	/* a hint, in large steps (each call walks its range); a region that moves is not hinted again */
	if (w->writeback && c->size - c->wb_size >= TDAT_WRITEBACK_STEP) {
		(void)sync_file_range(w->fd, c->region_off + c->wb_size, c->size - c->wb_size,
				      SYNC_FILE_RANGE_WRITE);
		c->wb_size = c->size;
	}
	return patch_one(w, c);
}

/*
 * Shared: one batch at a time. A region made or grown moves the offsets
 * of others and the file's end; and ext4 takes the inode's lock for every
 * write anyway, which a second writer waits for spinning in the kernel:
 * waiting here sleeps instead (measured with convert -j 2: 0.89x the wall
 * time and 0.85x the CPU of writes side by side).
 */
int tdat_file_write_cpu(struct tdat_writer *w, struct tdat_cpu *c, struct iovec *iov,
			int cnt, uint64_t bytes)
{
	int ret;

	if (!w->shared)
		return write_cpu(w, c, iov, cnt, bytes);
	pthread_mutex_lock(&w->io_lock);
	ret = write_cpu(w, c, iov, cnt, bytes);
	pthread_mutex_unlock(&w->io_lock);
	return ret;
}

int tdat_file_flush_cpu(struct tdat_writer *w, struct tdat_cpu *c)
{
	struct iovec iov = { c->batch, (size_t)c->nbatch * w->page_size };
	uint64_t size = c->size;
	int ret = tdat_file_write_cpu(w, c, &iov, 1, iov.iov_len);

	/* written, even if the size patch failed */
	if (c->size != size) {
		uint64_t now = tcx_clock_ns(TDAT_BATCH_CLOCK);

		/* a full batch that filled fast: the next one is twice as large */
		if (c->nbatch == c->limit && c->limit < w->batch_pages &&
		    now - c->fill_ns < TDAT_BATCH_GROW_NS) {
			c->limit = 2 * c->limit < w->batch_pages ? 2 * c->limit : w->batch_pages;
		}
		c->fill_ns = now;
		c->nbatch = 0;
		c->page = c->batch;
	}
	return ret;
}

/* ---- close ---- */

static int cmp_region(const void *a, const void *b)
{
	const struct tdat_cpu *x = *(struct tdat_cpu *const *)a;
	const struct tdat_cpu *y = *(struct tdat_cpu *const *)b;

	return x->region_off < y->region_off ? -1 : x->region_off > y->region_off;
}

/*
 * Remove the holes between regions so that the final file is dense: with
 * FALLOC_FL_COLLAPSE_RANGE from the last region back, else by copying each
 * region down. Offsets are patched after each step.
 */
static int compact(struct tdat_writer *w)
{
	struct tdat_cpu **r;
	uint64_t cursor;
	int n = w->nactive, i, j, ret = 0;

	if (!n)
		return extend_to(w, w->data_start);
	r = malloc(sizeof(*r) * n);
	if (!r)
		return tdat_err(w, -ENOMEM, "no memory to compact");
	for (i = 0; i < n; i++)
		r[i] = w->cpu[w->active[i]];
	qsort(r, n, sizeof(*r), cmp_region);

	ret = extend_to(w, r[n - 1]->region_off + r[n - 1]->size);
	for (i = n - 2; i >= -1 && !ret; i--) {
		uint64_t end = i >= 0 ? r[i]->region_off + r[i]->size : w->data_start;
		uint64_t len = r[i + 1]->region_off - end;

		if (!len)
			continue;
		ret = hide_from(w, end, true);
		if (ret)
			break;
		if (fallocate(w->fd, FALLOC_FL_COLLAPSE_RANGE, end, len)) {
			ret = hide_from(w, 0, false);
			break;	/* copy what is left */
		}
		for (j = i + 1; j < n; j++)
			r[j]->region_off -= len;
		w->file_end -= len;
		ret = flyrec_size(w, w->file_end);
		if (!ret)
			ret = hide_from(w, 0, false);
	}
	cursor = w->data_start;
	for (i = 0; i < n && !ret; i++) {
		if (r[i]->region_off != cursor) {
			/* the copy may overwrite its own source: hidden meanwhile */
			r[i]->hidden = true;
			ret = patch_one(w, r[i]);
			if (!ret)
				ret = copy_range(w, r[i]->region_off, cursor, r[i]->size);
			if (ret)
				break;
			r[i]->region_off = cursor;
			r[i]->hidden = false;
			ret = patch_one(w, r[i]);
		}
		cursor += r[i]->size;
	}
	for (i = 0; i < n; i++)
		r[i]->region_cap = r[i]->size;
	free(r);
	if (!ret)
		ret = extend_to(w, cursor);
	return ret ? ret : tdat_file_patch_cpus(w);
}

int tdat_append_options_section(int fd, uint64_t done_off, const struct tdat_optlist *l,
				uint64_t *new_done_off)
{
	struct tdat_buf b = {0};
	uint64_t off, size, zero = 0;
	off_t end;
	int ret = 0, i;

	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	off = end;
	ret |= tdat_buf_u16(&b, SEC_OPTIONS) | tdat_buf_u16(&b, 0) | tdat_buf_u32(&b, NO_DESC);
	ret |= tdat_buf_u64(&b, 0);
	for (i = 0; i < l->n; i++)
		ret |= put_opt(&b, l->v[i].id, l->v[i].data, l->v[i].size);
	ret |= tdat_buf_u16(&b, TDAT_OPT_DONE) | tdat_buf_u32(&b, 8);
	ret |= tdat_buf_u64(&b, zero);
	if (ret) {
		tdat_buf_free(&b);
		return -ENOMEM;
	}
	size = b.len - 16;
	memcpy(b.data + 8, &size, 8);
	/* the new section first, then the link that makes it visible */
	ret = tdat_pwrite_all(fd, b.data, b.len, off);
	if (!ret)
		ret = tdat_pwrite_all(fd, &off, 8, done_off);
	if (!ret && new_done_off)
		*new_done_off = off + b.len - 8;
	tdat_buf_free(&b);
	return ret;
}

/*
 * Cmdlines added after tdat_start_data() (v7): a complete cmdlines section,
 * the early lines and the late ones, goes after the data (the file is
 * compacted, so its end is the end of the flyrecord section: the reader's
 * walk over the sections steps from one to the next). An option 21 in the
 * chained options section then points the readers to it instead of the
 * first one. The section is on disk before the option that names it: a
 * kill in between leaves the first section in use.
 */
static int late_cmdlines(struct tdat_writer *w)
{
	struct tdat_buf b = {0};
	uint64_t off, size, len;
	int ret;

	off = w->file_end;
	size = 8 + w->cmdlines.len + w->late_cmdlines.len;
	ret = tdat_buf_u16(&b, SEC_CMDLINES) | tdat_buf_u16(&b, 0) | tdat_buf_u32(&b, NO_DESC);
	ret |= tdat_buf_u64(&b, size);
	ret |= tdat_buf_u64(&b, size - 8);
	ret |= tdat_buf_put(&b, w->cmdlines.data, w->cmdlines.len);
	ret |= tdat_buf_put(&b, w->late_cmdlines.data, w->late_cmdlines.len);
	if (!ret)
		ret = tdat_optlist_add(&w->late_opts, SEC_CMDLINES, &off, 8);
	if (ret) {
		tdat_buf_free(&b);
		return tdat_err(w, -ENOMEM, "no memory for the late cmdlines");
	}
	len = b.len;
	ret = tdat_pwrite_all(w->fd, b.data, len, off);
	tdat_buf_free(&b);
	if (ret)
		return io_fail(w, ret, "writing the late cmdlines");
	w->file_end += len;
	return 0;
}

/* ---- live options ---- */

int tdat_publish_time_shift(struct tdat_writer *w, uint64_t peer_id, uint32_t flags,
			    uint32_t ncpu, const struct tdat_time_shift_cpu *cpus)
{
	struct tdat_buf b = {0}, t = {0};
	uint64_t size, slot, zero = 0;
	int ret;

	if (!w)
		return tcx_fail(-EINVAL, "no writer");
	if (w->version != 7)
		return tcx_fail(-EOPNOTSUPP, "%s: a version 6 file takes no option after its data",
				w->path);
	ret = tdat_time_shift_build(&t, peer_id, flags, ncpu, cpus);
	if (ret) {
		tdat_buf_free(&t);
		return ret;
	}
	ret = tdat_buf_u16(&b, SEC_OPTIONS) | tdat_buf_u16(&b, 0) | tdat_buf_u32(&b, NO_DESC);
	ret |= tdat_buf_u64(&b, 0);
	ret |= put_opt(&b, TDAT_OPT_TIME_SHIFT, t.data, t.len);
	ret |= tdat_buf_u16(&b, TDAT_OPT_DONE) | tdat_buf_u32(&b, 8) | tdat_buf_u64(&b, zero);
	tdat_buf_free(&t);
	if (ret) {
		tdat_buf_free(&b);
		return tcx_fail(-ENOMEM, "no memory for the TIME_SHIFT");
	}
	size = b.len - 16;
	memcpy(b.data + 8, &size, 8);
	pthread_mutex_lock(&w->live_lock);
	if (!w->started || w->live_done || !w->live_size) {
		ret = tcx_fail(-EINVAL, "%s: publishing outside the data", w->path);
	} else if (b.len > w->live_size) {
		ret = tcx_fail(-ENOSPC, "%s: a TIME_SHIFT of %zu bytes, the slot takes %u",
			       w->path, b.len, w->live_size);
	} else {
		/* the unlinked slot first, then the 8-byte link that switches */
		slot = w->live_link == w->live_off ? w->live_off + w->live_size : w->live_off;
		ret = tdat_pwrite_all(w->fd, b.data, b.len, slot);
		if (!ret)
			ret = tdat_pwrite_all(w->fd, &slot, 8, w->done_off);
		if (!ret) {
			w->live_link = slot;
			w->live_next = slot + b.len - 8;
		} else {
			tcx_fail(ret, "%s: writing the TIME_SHIFT: %s", w->path, strerror(-ret));
		}
	}
	pthread_mutex_unlock(&w->live_lock);
	tdat_buf_free(&b);
	return ret;
}

int tdat_file_finish(struct tdat_writer *w)
{
	int ret = 0, r;

	if (w->failed)
		return tdat_sticky(w);
	pthread_mutex_lock(&w->live_lock);
	w->live_done = true;
	pthread_mutex_unlock(&w->live_lock);
	ret = tdat_flush(w);
	if (!ret)
		ret = compact(w);
	if (!ret && w->version == 7 && w->late_cmdlines.len)
		ret = late_cmdlines(w);
	if (!ret && w->version == 7 && w->late_opts.n) {
		/* after the live section, which stays linked: its DONE ends the chain */
		if (w->live_link)
			w->done_off = w->live_next;
		r = tdat_append_options_section(w->fd, w->done_off, &w->late_opts, &w->done_off);
		if (r)
			ret = io_fail(w, r, "appending the late options");
	}
	return ret;
}

int tdat_close(struct tdat_writer *w)
{
	int ret = 0;

	if (!w)
		return 0;
	if (w->fd >= 0 && !w->failed) {
		if (!w->started)
			ret = tdat_start_data(w);
		if (!ret)
			ret = tdat_file_finish(w);
	} else if (w->failed) {
		ret = tdat_sticky(w);
	}
	tdat_free(w);
	return ret;
}
