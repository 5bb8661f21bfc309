// SPDX-License-Identifier: GPL-2.0
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <traceevent/kbuffer.h>

#include "tfile.h"

#define FAIL(...) do { snprintf(f->err, sizeof(f->err), __VA_ARGS__); return -1; } while (0)

struct cur {
	const uint8_t	*p;
	size_t		left;
};

static int take(struct cur *c, void *dst, size_t n)
{
	if (c->left < n)
		return -1;
	if (dst)
		memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
	return 0;
}

static const char *str(struct cur *c)
{
	const char *s = (const char *)c->p;
	size_t n = strnlen(s, c->left);

	if (n == c->left)
		return NULL;
	take(c, NULL, n + 1);
	return s;
}

static int add_opt(struct tf *f, uint16_t id, uint32_t size, const uint8_t *d, int sec)
{
	if (f->nopts == TF_MAX_OPTS)
		return -1;
	f->opts[f->nopts++] = (struct tf_opt){ id, size, d, sec };
	return 0;
}

static int parse_buffer_opt(struct tf *f, const uint8_t *d, uint32_t size)
{
	struct cur c = { d, size };
	uint32_t ps, n, i;

	if (take(&c, NULL, 8) || !str(&c) || !str(&c) || take(&c, &ps, 4) || take(&c, &n, 4))
		FAIL("BUFFER option short");
	if (n > TF_MAX_CPUS)
		FAIL("BUFFER lists %u CPUs", n);
	for (i = 0; i < n; i++) {
		struct tf_cpu *e = &f->ent[i];

		if (take(&c, &e->cpu, 4) || take(&c, &e->off, 8) || take(&c, &e->size, 8))
			FAIL("BUFFER entry %u short", i);
	}
	f->nent = n;
	return 0;
}

static int parse_v7(struct tf *f, struct cur *c)
{
	uint64_t optoff, off;
	int sec = 0;

	if (!str(c) || !str(c) || take(c, &optoff, 8))
		FAIL("v7 header short");
	/* the sequential walk readers do to find STRINGS */
	off = c->p - f->buf;
	while (off + 16 <= f->len) {
		uint64_t sz;

		memcpy(&sz, f->buf + off + 8, 8);
		off += 16 + sz;
	}
	f->walk_end_ok = off == f->len;
	off = optoff;
	while (off) {
		struct cur s;
		uint16_t id, fl;
		uint32_t size;
		uint64_t ssz;

		if (off + 16 > f->len)
			FAIL("options section at %llu beyond EOF", (unsigned long long)off);
		memcpy(&id, f->buf + off, 2);
		memcpy(&fl, f->buf + off + 2, 2);
		memcpy(&ssz, f->buf + off + 8, 8);
		if (id != 0 || fl || off + 16 + ssz > f->len)
			FAIL("bad options section at %llu", (unsigned long long)off);
		s.p = f->buf + off + 16;
		s.left = ssz;
		off = 0;
		for (;;) {
			if (take(&s, &id, 2) || take(&s, &size, 4) || s.left < size)
				FAIL("option runs out of its section");
			if (id == 0) {
				memcpy(&off, s.p, 8);
				break;
			}
			add_opt(f, id, size, s.p, sec);
			if (id == 3 && parse_buffer_opt(f, s.p, size))
				return -1;
			if (id == 8)
				memcpy(&f->cpus, s.p, 4);
			take(&s, NULL, size);
		}
		sec++;
	}
	f->noptsec = sec;
	return 0;
}

static int skip_sized(struct cur *c, int nbytes)
{
	uint64_t n = 0;

	if (take(c, &n, nbytes))
		return -1;
	return take(c, NULL, n);
}

static int parse_v6(struct tf *f, struct cur *c)
{
	uint32_t n, i, j, m;
	uint64_t clen;

	for (i = 0; i < 2; i++)
		if (!str(c) || skip_sized(c, 8))
			FAIL("v6 header files");
	if (take(c, &n, 4))
		FAIL("ftrace count");
	for (i = 0; i < n; i++)
		if (skip_sized(c, 8))
			FAIL("ftrace format");
	if (take(c, &n, 4))
		FAIL("systems");
	f->nsys = n;
	for (i = 0; i < n; i++) {
		if (!str(c) || take(c, &m, 4))
			FAIL("system");
		for (j = 0; j < m; j++)
			if (skip_sized(c, 8))
				FAIL("format");
	}
	if (skip_sized(c, 4) || skip_sized(c, 4) || skip_sized(c, 8))
		FAIL("kallsyms/printk/cmdlines");
	if (take(c, &f->cpus, 4))
		FAIL("cpus");
	if (c->left >= 10 && !memcmp(c->p, "options  ", 10)) {
		take(c, NULL, 10);
		for (;;) {
			uint16_t id;
			uint32_t size;

			if (take(c, &id, 2))
				FAIL("options");
			if (!id)
				break;
			if (take(c, &size, 4) || c->left < size)
				FAIL("option");
			add_opt(f, id, size, c->p, 0);
			take(c, NULL, size);
		}
	}
	if (c->left < 10 || memcmp(c->p, "flyrecord", 10))
		FAIL("no flyrecord");
	take(c, NULL, 10);
	if (f->cpus > TF_MAX_CPUS)
		FAIL("cpus %d", f->cpus);
	for (i = 0; i < (uint32_t)f->cpus; i++) {
		f->ent[i].cpu = i;
		if (take(c, &f->ent[i].off, 8) || take(c, &f->ent[i].size, 8))
			FAIL("cpu table");
	}
	f->nent = f->cpus;
	if (take(c, &clen, 8) || clen >= sizeof(f->clock) || c->left < clen)
		FAIL("clock");
	memcpy(f->clock, c->p, clen);
	return 0;
}

int tf_load(const char *path, struct tf *f)
{
	struct stat st;
	struct cur c;
	int fd, i;

	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		FAIL("open %s", path);
	f->len = st.st_size;
	f->buf = malloc(f->len + 1);
	if (!f->buf || pread(fd, f->buf, f->len, 0) != (ssize_t)f->len) {
		close(fd);
		FAIL("read %s", path);
	}
	close(fd);
	c.p = f->buf;
	c.left = f->len;
	if (take(&c, NULL, 10) || memcmp(f->buf, "\x17\x08\x44tracing", 10))
		FAIL("magic");
	f->version = atoi(str(&c));
	if (take(&c, NULL, 1) || take(&c, NULL, 0))
		FAIL("endian");
	f->long_size = *c.p;
	take(&c, NULL, 1);
	if (take(&c, &f->page_size, 4))
		FAIL("page size");
	if (f->version == 7 ? parse_v7(f, &c) : parse_v6(f, &c))
		return -1;
	for (i = 0; i < f->nent; i++) {
		if (f->ent[i].size && (f->ent[i].off % f->page_size ||
				       f->ent[i].off + f->ent[i].size > f->len))
			FAIL("CPU %u data %llu+%llu outside the file", f->ent[i].cpu,
			     (unsigned long long)f->ent[i].off, (unsigned long long)f->ent[i].size);
	}
	return 0;
}

void tf_free(struct tf *f)
{
	free(f->buf);
	f->buf = NULL;
}

const struct tf_cpu *tf_cpu(const struct tf *f, int cpu)
{
	int i;

	for (i = 0; i < f->nent; i++)
		if ((int)f->ent[i].cpu == cpu && f->ent[i].size)
			return &f->ent[i];
	return NULL;
}

const struct tf_opt *tf_opt(const struct tf *f, uint16_t id, int nth)
{
	int i;

	for (i = 0; i < f->nopts; i++)
		if (f->opts[i].id == id && !nth--)
			return &f->opts[i];
	return NULL;
}

static struct kbuffer *kb(const struct tf *f)
{
	return kbuffer_alloc(f->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			     KBUFFER_ENDIAN_LITTLE);
}

int tf_events(const struct tf *f, int cpu, struct tf_ev *out, int max)
{
	const struct tf_cpu *e = tf_cpu(f, cpu);
	struct kbuffer *k;
	uint64_t p;
	int n = 0;

	if (!e)
		return 0;
	k = kb(f);
	for (p = 0; p < e->size; p += f->page_size) {
		unsigned long long ts;
		void *d;
		int first = 1;

		kbuffer_load_subbuffer(k, f->buf + e->off + p);
		for (d = kbuffer_read_event(k, &ts); d; d = kbuffer_next_event(k, &ts)) {
			if (n < max)
				out[n] = (struct tf_ev){ cpu, ts, kbuffer_event_size(k), d,
							 first ? kbuffer_missed_events(k) : 0,
							 (int)(p / f->page_size) };
			first = 0;
			n++;
		}
	}
	kbuffer_free(k);
	return n;
}

uint64_t tf_commit(const struct tf *f, int cpu, int page)
{
	const struct tf_cpu *e = tf_cpu(f, cpu);
	uint64_t v = 0;

	if (!e || (uint64_t)page * f->page_size >= e->size)
		return ~0ull;
	memcpy(&v, f->buf + e->off + (uint64_t)page * f->page_size + 8, f->long_size);
	return v;
}

int tf_raw_types(const struct tf *f, int cpu, int page, int *types, int max)
{
	const struct tf_cpu *e = tf_cpu(f, cpu);
	struct kbuffer_raw_info info, *ip = &info;
	struct kbuffer *k;
	uint8_t *pg;
	int n = 0;

	if (!e || (uint64_t)page * f->page_size >= e->size)
		return -1;
	k = kb(f);
	pg = f->buf + e->off + (uint64_t)page * f->page_size;
	kbuffer_load_subbuffer(k, pg);
	info.next = pg + 8 + f->long_size;
	while ((ip = kbuffer_raw_get(k, pg, &info)) && n < max)
		types[n++] = ip->type;
	kbuffer_free(k);
	return n;
}
