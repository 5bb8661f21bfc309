// SPDX-License-Identifier: GPL-2.0
/*
 * Writer creation, errors, and the metadata kept in memory until
 * tdat_start_data(): header page, formats, kallsyms, printk, cmdlines and
 * options.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "tcx-util.h"
#include "tdat-internal.h"

#ifndef TCX_VERSION
#define TCX_VERSION "0"
#endif

int tdat_err(struct tdat_writer *w, int ret, const char *fmt, ...)
{
	char buf[TCX_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tcx_fail(ret, "%s", buf);
	if (w->shared)
		pthread_mutex_lock(&w->err_lock);
	/* once the writer has failed, keep the message that names the cause */
	if (!w->failed) {
		w->first_err = ret;
		snprintf(w->err, sizeof(w->err), "%s", tcx_error());
	}
	if (w->shared)
		pthread_mutex_unlock(&w->err_lock);
	return ret;
}

int tdat_sticky(const struct tdat_writer *w)
{
	pthread_mutex_t *lock = (pthread_mutex_t *)&w->err_lock;
	int ret;

	if (w->shared)
		pthread_mutex_lock(lock);
	ret = tcx_fail(w->first_err ? w->first_err : -EIO, "%s",
		       w->err[0] ? w->err : "earlier write failed");
	if (w->shared)
		pthread_mutex_unlock(lock);
	return ret;
}

/*
 * A large buffer moves to a fresh block faulted in by one call before the
 * copy: realloc()'s copy would fault page by page (about 10 us a page in
 * a paravirtualised guest, against well under 1 us for the whole call).
 */
#define TDAT_BUF_POPULATE	(16u << 10)

static int buf_grow(struct tdat_buf *b, size_t cap)
{
	char *d;

	if (cap < TDAT_BUF_POPULATE) {
		d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
	} else {
		d = malloc(cap);
		if (!d)
			return -ENOMEM;
		tcx_mem_populate(d, cap);
		if (b->len)
			memcpy(d, b->data, b->len);
		free(b->data);
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

int tdat_buf_put(struct tdat_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		if (buf_grow(b, cap))
			return -ENOMEM;
	}
	if (p)
		memcpy(b->data + b->len, p, n);
	else
		memset(b->data + b->len, 0, n);
	b->len += n;
	return 0;
}

int tdat_buf_reserve(struct tdat_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return 0;
	return buf_grow(b, b->len + n);
}

int tdat_buf_zero(struct tdat_buf *b, size_t n)
{
	return tdat_buf_put(b, NULL, n);
}

void tdat_buf_free(struct tdat_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int tdat_optlist_add(struct tdat_optlist *l, uint16_t id, const void *data, uint32_t size)
{
	struct tdat_opt *v = realloc(l->v, sizeof(*v) * (l->n + 1));

	if (!v)
		return -ENOMEM;
	l->v = v;
	v[l->n].data = malloc(size ? size : 1);
	if (!v[l->n].data)
		return -ENOMEM;
	memcpy(v[l->n].data, data, size);
	v[l->n].id = id;
	v[l->n].size = size;
	l->n++;
	return 0;
}

void tdat_optlist_free(struct tdat_optlist *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].data);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* The kernel's header_page layout for @long_size-byte longs, sized to the page. */
static char *synth_header_page(uint32_t page_size, int long_size, size_t *len)
{
	char *s = NULL;
	int n;

	n = asprintf(&s,
		     "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		     "\tfield: local_t commit;\toffset:8;\tsize:%d;\tsigned:1;\n"
		     "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		     "\tfield: char data;\toffset:%d;\tsize:%u;\tsigned:0;\n",
		     long_size, 8 + long_size, page_size - 8 - long_size);
	if (n < 0)
		return NULL;
	*len = n;
	return s;
}

char *tdat_header_page_text(uint32_t page_size, int long_size, size_t *len)
{
	if ((long_size != 4 && long_size != 8) || page_size < 4096) {
		errno = EINVAL;
		return NULL;
	}
	return synth_header_page(page_size, long_size, len);
}

static const char header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

const char *tdat_header_event_text(void)
{
	return header_event;
}

/*
 * A second descriptor for the pages, where the file system says what
 * O_DIRECT needs (statx, Linux 6.1) and whole pages meet it: metadata
 * and patches stay buffered on the first.
 */
static void open_direct(struct tdat_writer *w)
{
	struct stat a, b;
	struct statx sx;

	if (statx(w->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) ||
	    !(sx.stx_mask & STATX_DIOALIGN) || !sx.stx_dio_offset_align ||
	    !sx.stx_dio_mem_align || w->page_size % sx.stx_dio_offset_align ||
	    w->page_size % sx.stx_dio_mem_align)
		return;
	w->dfd = open(w->path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	/* the file just made, not another put in its place since */
	if (w->dfd >= 0 && (fstat(w->fd, &a) || fstat(w->dfd, &b) || a.st_dev != b.st_dev ||
			    a.st_ino != b.st_ino)) {
		close(w->dfd);
		w->dfd = -1;
	}
	w->dio_mem = sx.stx_dio_mem_align;
	w->dio_off = sx.stx_dio_offset_align;
}

bool tdat_is_direct(const struct tdat_writer *w)
{
	return w && w->dfd >= 0;
}

struct tdat_writer *tdat_open(const char *path, const struct tdat_params *params)
{
	struct tdat_params p = params ? *params : (struct tdat_params){0};
	struct tdat_writer *w;
	const char *why;

	if (!path || !strcmp(path, "-")) {
		why = "a file path is needed (the file is patched in place)";
		goto inval;
	}
	if (!p.version)
		p.version = 7;
	if (!p.page_size)
		p.page_size = 4096;
	if (p.version != 6 && p.version != 7) {
		tcx_fail(-EINVAL, "%s: file version %d is not 6 or 7",
			 path, p.version);
		errno = EINVAL;
		return NULL;
	}
	if (p.page_size < 4096 || p.page_size > (1u << 20) || (p.page_size & (p.page_size - 1))) {
		tcx_fail(-EINVAL, "%s: page size %u is not a power of two from 4096 to 1 MiB", path, p.page_size);
		errno = EINVAL;
		return NULL;
	}
	if (p.cpus < 0 || p.cpus > TDAT_MAX_CPUS || p.max_cpus < 0 || p.max_cpus > TDAT_MAX_CPUS) {
		tcx_fail(-EINVAL, "%s: cpus %d / max_cpus %d out of 0..%d",
			 path, p.cpus, p.max_cpus, TDAT_MAX_CPUS);
		errno = EINVAL;
		return NULL;
	}
	if (!p.max_cpus)
		p.max_cpus = p.cpus > 256 ? p.cpus : 256;
	if (p.cpus > p.max_cpus) {
		tcx_fail(-EINVAL, "%s: cpus %d above max_cpus %d",
			 path, p.cpus, p.max_cpus);
		errno = EINVAL;
		return NULL;
	}
	if (!p.region_size)
		p.region_size = TDAT_DEF_REGION;
	/* regions move with fallocate: whole pages (and fs blocks) */
	p.region_size = (p.region_size + p.page_size - 1) & ~(uint64_t)(p.page_size - 1);

	w = calloc(1, sizeof(*w));
	if (!w)
		goto nomem;
	pthread_mutex_init(&w->live_lock, NULL);
	w->shared = p.shared;
	if (w->shared) {
		pthread_mutexattr_t a;

		pthread_mutex_init(&w->io_lock, NULL);
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&w->err_lock, &a);
		pthread_mutexattr_destroy(&a);
	}
	w->fd = -1;
	w->dfd = -1;
	w->version = p.version;
	w->page_size = p.page_size;
	w->max_cpus = p.max_cpus;
	w->want_cpus = p.cpus;
	w->region_size = p.region_size;
	w->writeback = p.writeback;
	w->long_size = 8;
	w->hdr = 16;
	/* bounded memory whatever the page size: one write's worth per CPU */
	if (!p.batch_bytes)
		p.batch_bytes = TDAT_BATCH_BYTES;
	if (p.batch_bytes > TDAT_BATCH_MAX)
		p.batch_bytes = TDAT_BATCH_MAX;
	w->batch_pages = p.page_size < p.batch_bytes ? p.batch_bytes / p.page_size : 1;
	w->path = strdup(path);
	w->clock = p.clock ? strdup(p.clock) : NULL;
	w->header_page = synth_header_page(w->page_size, 8, &w->header_page_len);
	if (!w->path || (p.clock && !w->clock) || !w->header_page) {
		tdat_close(w);
		goto nomem;
	}
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		int e = errno;

		tcx_fail(-e, "cannot create %s: %s", path, strerror(e));
		tdat_close(w);
		errno = e;
		return NULL;
	}
	if (p.direct)
		open_direct(w);
	return w;
nomem:
	tcx_fail(-ENOMEM, "%s: out of memory", path);
	errno = ENOMEM;
	return NULL;
inval:
	tcx_fail(-EINVAL, "%s", why);
	errno = EINVAL;
	return NULL;
}

static int meta_ok(struct tdat_writer *w, const char *what)
{
	if (w->started)
		return tdat_err(w, -EBUSY, "%s after tdat_start_data()", what);
	return 0;
}

int tdat_set_header_page(struct tdat_writer *w, const char *text, size_t len)
{
	const char *c, *end;
	int size = 0, ret;
	char *copy;

	ret = meta_ok(w, "header page");
	if (ret)
		return ret;
	copy = strndup(text, len);
	if (!copy)
		return tdat_err(w, -ENOMEM, "no memory for the header page");
	c = strstr(copy, " commit;");
	if (c && (c = strstr(c, "size:")))
		size = atoi(c + 5);
	end = strstr(copy, " timestamp;");
	if (size != 4 && size != 8) {
		free(copy);
		return tdat_err(w, -EINVAL, "header page: commit size %d is not 4 or 8", size);
	}
	if (!end || !strstr(end, "size:8;")) {
		free(copy);
		return tdat_err(w, -EINVAL, "header page: no 8-byte timestamp field");
	}
	free(w->header_page);
	w->header_page = copy;
	w->header_page_len = strlen(copy);
	w->long_size = size;
	w->hdr = 8 + size;
	return 0;
}

static int parse_id(const char *text)
{
	const char *p = strstr(text, "\nID:");

	if (!strncmp(text, "ID:", 3))
		p = text - 1;
	if (!p)
		return -1;
	return atoi(p + 4);
}

static int check_format(struct tdat_writer *w, const char *system, const char *text)
{
	static const char *const need[] = { "name:", "ID:", "format:", "print fmt:" };
	int id, i;

	for (i = 0; i < 4; i++)
		if (!strstr(text, need[i]))
			return tdat_err(w, -EINVAL, "format of system %s has no \"%s\" line",
					system, need[i]);
	id = parse_id(text);
	if (id <= 0 || id > 65535)
		return tdat_err(w, -EINVAL, "format of system %s: ID %d out of 1..65535", system, id);
	for (i = 0; i < w->nids; i++)
		if (w->ids[i] == id)
			return tdat_err(w, -EEXIST, "format of system %s: ID %d given twice", system, id);
	return id;
}

static int add_id(struct tdat_writer *w, int id)
{
	int *ids = realloc(w->ids, sizeof(*ids) * (w->nids + 1));

	if (!ids)
		return tdat_err(w, -ENOMEM, "no memory for event ids");
	w->ids = ids;
	ids[w->nids++] = id;
	return 0;
}

static int put_format(struct tdat_buf *b, const char *text)
{
	size_t n = strlen(text);

	if (tdat_buf_u64(b, n) || tdat_buf_put(b, text, n))
		return -ENOMEM;
	return 0;
}

int tdat_add_event_format(struct tdat_writer *w, const char *system, const char *text)
{
	struct tdat_system *s = NULL;
	int id, i, ret;

	ret = meta_ok(w, "event format");
	if (ret)
		return ret;
	if (!system || !*system || !text)
		return tdat_err(w, -EINVAL, "event format without a system name or text");
	if (!strcmp(system, "ftrace"))
		return tdat_add_ftrace_format(w, text);
	id = check_format(w, system, text);
	if (id < 0)
		return id;
	for (i = 0; i < w->nsys; i++)
		if (!strcmp(w->sys[i].name, system))
			s = &w->sys[i];
	if (!s) {
		s = realloc(w->sys, sizeof(*s) * (w->nsys + 1));
		if (!s)
			return tdat_err(w, -ENOMEM, "no memory for system %s", system);
		w->sys = s;
		s = &w->sys[w->nsys];
		memset(s, 0, sizeof(*s));
		s->name = strdup(system);
		if (!s->name)
			return tdat_err(w, -ENOMEM, "no memory for system %s", system);
		w->nsys++;
	}
	if (put_format(&s->formats, text))
		return tdat_err(w, -ENOMEM, "no memory for a format of %s", system);
	s->count++;
	return add_id(w, id);
}

int tdat_add_ftrace_format(struct tdat_writer *w, const char *text)
{
	int id, ret;

	ret = meta_ok(w, "ftrace format");
	if (ret)
		return ret;
	if (!text)
		return tdat_err(w, -EINVAL, "ftrace format without text");
	id = check_format(w, "ftrace", text);
	if (id < 0)
		return id;
	if (put_format(&w->ftrace, text))
		return tdat_err(w, -ENOMEM, "no memory for an ftrace format");
	w->nftrace++;
	return add_id(w, id);
}

static int set_text(struct tdat_writer *w, char **dst, size_t *dlen, const char *text,
		    size_t len, const char *what)
{
	char *copy;
	int ret = meta_ok(w, what);

	if (ret)
		return ret;
	if (len > UINT32_MAX)
		return tdat_err(w, -EFBIG, "%s of %zu bytes is over 4 GiB", what, len);
	copy = malloc(len ? len : 1);
	if (!copy)
		return tdat_err(w, -ENOMEM, "no memory for %s", what);
	memcpy(copy, text, len);
	free(*dst);
	*dst = copy;
	*dlen = len;
	return 0;
}

int tdat_set_kallsyms(struct tdat_writer *w, const char *text, size_t len)
{
	return set_text(w, &w->kallsyms, &w->kallsyms_len, text, len, "kallsyms");
}

int tdat_set_printk(struct tdat_writer *w, const char *text, size_t len)
{
	return set_text(w, &w->printk, &w->printk_len, text, len, "printk formats");
}

/*
 * After tdat_start_data() a version 7 file still takes cmdlines: they go
 * into a second cmdlines section that tdat_close() writes after the data
 * (see tdat_file_finish()). A version 6 file has no place for them.
 */
int tdat_add_cmdline(struct tdat_writer *w, int pid, const char *comm)
{
	struct tdat_buf *b = &w->cmdlines;
	char line[64];
	int n;

	if (w->started) {
		if (w->version != 7)
			return tdat_err(w, -EBUSY, "cmdline after tdat_start_data() in a version 6 file");
		b = &w->late_cmdlines;
	}
	if (!comm || !*comm || strchr(comm, '\n'))
		return tdat_err(w, -EINVAL, "cmdline of pid %d: empty comm or comm with a newline", pid);
	n = snprintf(line, sizeof(line), "%d %.15s\n", pid, comm);
	if (tdat_buf_put(b, line, n))
		return tdat_err(w, -ENOMEM, "no memory for cmdlines");
	return 0;
}

int tdat_add_cmdlines(struct tdat_writer *w, const char *text, size_t len)
{
	const char *end = text ? text + len : NULL;
	int added = 0;

	while (text && text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		const char *eol = nl ? nl : end;
		const char *sp = memchr(text, ' ', (size_t)(eol - text));
		unsigned long pid;
		char comm[16];
		size_t n = 0;

		if (sp && !tcx_parse_uintn(text, (size_t)(sp - text), INT_MAX, &pid)) {
			/* tdat_add_cmdline() keeps 15 bytes anyway */
			n = strnlen(sp + 1, (size_t)(eol - sp - 1));
			n = n < sizeof(comm) - 1 ? n : sizeof(comm) - 1;
			memcpy(comm, sp + 1, n);
			comm[n] = 0;
		}
		if (n) {
			int ret = tdat_add_cmdline(w, (int)pid, comm);

			if (ret)
				return ret;
			added++;
		}
		text = nl ? nl + 1 : NULL;
	}
	return added;
}

/*
 * Options: before tdat_start_data() into the first options section; after
 * it, for version 7 only, into the chained section tdat_close() writes.
 */
static struct tdat_optlist *opt_target(struct tdat_writer *w, uint16_t id)
{
	if (!w->started)
		return &w->opts;
	if (w->version == 7)
		return &w->late_opts;
	tdat_err(w, -EBUSY, "option %u after tdat_start_data() in a version 6 file", id);
	return NULL;
}

static int opt_add(struct tdat_writer *w, uint16_t id, const void *data, uint32_t size,
		   bool single)
{
	struct tdat_optlist *l = opt_target(w, id);
	int i;

	if (!l)
		return -EBUSY;
	if (single) {
		/* one value: the last call wins */
		for (i = 0; i < l->n; i++) {
			if (l->v[i].id != id)
				continue;
			free(l->v[i].data);
			memmove(&l->v[i], &l->v[i + 1], sizeof(*l->v) * (l->n - i - 1));
			l->n--;
			break;
		}
	}
	if (tdat_optlist_add(l, id, data, size))
		return tdat_err(w, -ENOMEM, "no memory for option %u", id);
	return 0;
}

int tdat_set_traceid(struct tdat_writer *w, uint64_t id)
{
	w->traceid = id;
	w->has_traceid = true;
	return opt_add(w, TDAT_OPT_TRACEID, &id, 8, true);
}

int tdat_set_uname(struct tdat_writer *w, const char *uname)
{
	if (!uname)
		return tdat_err(w, -EINVAL, "UNAME text is NULL");
	free(w->uname);
	w->uname = strdup(uname);
	return opt_add(w, TDAT_OPT_UNAME, uname, strlen(uname) + 1, true);
}

int tdat_set_version(struct tdat_writer *w, const char *version)
{
	if (!version)
		return tdat_err(w, -EINVAL, "VERSION text is NULL");
	free(w->version_str);
	w->version_str = strdup(version);
	return opt_add(w, TDAT_OPT_VERSION, version, strlen(version) + 1, true);
}

int tdat_set_tsc2nsec(struct tdat_writer *w, uint32_t mult, uint32_t shift, uint64_t offset)
{
	uint8_t d[16];

	/* the reader's 64x32 multiply splits at bit 32: shift above 32 breaks it */
	if (!mult || shift > 32)
		return tdat_err(w, -EINVAL, "TSC2NSEC mult %u shift %u: need mult > 0, shift <= 32",
				mult, shift);
	memcpy(d, &mult, 4);
	memcpy(d + 4, &shift, 4);
	memcpy(d + 8, &offset, 8);
	w->has_tsc2nsec = true;
	w->tsc_mult = mult;
	w->tsc_shift = shift;
	w->tsc_offset = offset;
	return opt_add(w, TDAT_OPT_TSC2NSEC, d, 16, true);
}

int tdat_add_guest(struct tdat_writer *w, const char *name, uint64_t traceid,
		   uint32_t nvcpu, const uint32_t *pids)
{
	struct tdat_buf b = {0};
	uint32_t i;
	int ret;

	if (!name || !*name)
		return tdat_err(w, -EINVAL, "GUEST option without a name");
	if (!traceid)
		return tdat_err(w, -EINVAL, "GUEST %s: trace id 0 never matches a guest file", name);
	if (!nvcpu || nvcpu > TDAT_MAX_CPUS || !pids)
		return tdat_err(w, -EINVAL, "GUEST %s: %u vCPUs (need 1..%d and a pid array)",
				name, nvcpu, TDAT_MAX_CPUS);
	ret = tdat_buf_str(&b, name) | tdat_buf_u64(&b, traceid) | tdat_buf_u32(&b, nvcpu);
	for (i = 0; i < nvcpu; i++)
		ret |= tdat_buf_u32(&b, i) | tdat_buf_u32(&b, pids[i]);
	if (ret) {
		tdat_buf_free(&b);
		return tdat_err(w, -ENOMEM, "no memory for GUEST %s", name);
	}
	ret = opt_add(w, TDAT_OPT_GUEST, b.data, b.len, false);
	tdat_buf_free(&b);
	return ret;
}

int tdat_time_shift_build(struct tdat_buf *b, uint64_t peer_id, uint32_t flags,
			  uint32_t ncpu, const struct tdat_time_shift_cpu *cpus)
{
	uint32_t i, j, k, count;
	int ret;

	if (!ncpu || ncpu > TDAT_MAX_CPUS || !cpus)
		return tcx_fail(-EINVAL, "TIME_SHIFT: %u CPUs (need 1..%d)", ncpu, TDAT_MAX_CPUS);
	if (flags & ~TDAT_TSHIFT_INTERPOLATE)
		return tcx_fail(-EINVAL, "TIME_SHIFT: unknown flags 0x%x", flags);
	count = cpus[0].count;
	for (i = 0; i < ncpu; i++) {
		const struct tdat_time_shift_cpu *c = &cpus[i];

		/* a CPU with no sample makes readers index past the array */
		if (!c->count || !c->ts || !c->offset)
			return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u has %u samples (need >= 1 with ts and offset)",
				 i, c->count);
		/* the reader (and trace-cmd's writer) assume equal counts */
		if (c->count != count)
			return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u has %u samples, CPU 0 has %u (must be equal)",
				 i, c->count, count);
		for (j = 0; j < c->count; j++) {
			int64_t sc = c->scaling ? c->scaling[j] : 1;
			int64_t fr = c->frac ? c->frac[j] : 0;

			if (sc <= 0)
				return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u sample %u has scaling %" PRId64
					 " (must be > 0)", i, j, sc);
			if (fr < 0 || fr > 63)
				return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u sample %u has frac %" PRId64
					 " (must be 0..63)", i, j, fr);
			/* one sample: readers apply ts + offset, ignoring scaling */
			if (c->count == 1 && (sc != 1 || fr != 0))
				return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u has one sample with scaling %" PRId64
					 " frac %" PRId64 ", which readers ignore (give 2 samples)", i, sc, fr);
			/* readers keep one sample per timestamp and drop the rest */
			for (k = 0; k < j; k++) {
				if (c->ts[k] == c->ts[j])
					return tcx_fail(-EINVAL, "TIME_SHIFT: CPU %u samples %u and %u share ts %" PRIu64
						 " (readers drop one)", i, k, j, c->ts[j]);
			}
		}
	}
	ret = tdat_buf_u64(b, peer_id) | tdat_buf_u32(b, flags) | tdat_buf_u32(b, ncpu);
	for (i = 0; i < ncpu && !ret; i++) {
		const struct tdat_time_shift_cpu *c = &cpus[i];

		ret |= tdat_buf_u32(b, c->count);
		ret |= tdat_buf_put(b, c->ts, 8ull * c->count);
		ret |= tdat_buf_put(b, c->offset, 8ull * c->count);
		for (j = 0; j < c->count; j++)
			ret |= tdat_buf_u64(b, c->scaling ? (uint64_t)c->scaling[j] : 1);
	}
	for (i = 0; i < ncpu && !ret; i++)
		for (j = 0; j < cpus[i].count; j++)
			ret |= tdat_buf_u64(b, cpus[i].frac ? (uint64_t)cpus[i].frac[j] : 0);
	if (ret)
		return tcx_fail(-ENOMEM, "TIME_SHIFT: out of memory");
	return 0;
}

int tdat_set_time_shift(struct tdat_writer *w, uint64_t peer_id, uint32_t flags,
			uint32_t ncpu, const struct tdat_time_shift_cpu *cpus)
{
	struct tdat_buf b = {0};
	int ret;

	ret = tdat_time_shift_build(&b, peer_id, flags, ncpu, cpus);
	if (ret) {
		tdat_buf_free(&b);
		return tdat_err(w, ret, "%s", tcx_error());
	}
	ret = opt_add(w, TDAT_OPT_TIME_SHIFT, b.data, b.len, true);
	tdat_buf_free(&b);
	return ret;
}

int tdat_add_cpustat(struct tdat_writer *w, int cpu, const char *text)
{
	char *s = NULL;
	int n, ret;

	if (cpu < 0 || cpu >= w->max_cpus || !text)
		return tdat_err(w, -EINVAL, "CPUSTAT for CPU %d (max_cpus %d)", cpu, w->max_cpus);
	/* report --stat prints the text as is; trace-cmd heads it "CPU: N" */
	n = asprintf(&s, "CPU: %d\n%s", cpu, text);
	if (n < 0)
		return tdat_err(w, -ENOMEM, "no memory for CPUSTAT");
	ret = opt_add(w, TDAT_OPT_CPUSTAT, s, n + 1, false);
	free(s);
	return ret;
}

int tdat_add_option(struct tdat_writer *w, uint16_t id, const void *data, uint32_t size)
{
	/* ids whose content the writer owns: sections, DONE, BUFFER, CPUCOUNT, clock */
	if (id == TDAT_OPT_DONE || id == TDAT_OPT_BUFFER || id == TDAT_OPT_CPUCOUNT ||
	    id == TDAT_OPT_TRACECLOCK || (id >= 15 && id <= 22))
		return tdat_err(w, -EINVAL, "option id %u is written by tdat itself", id);
	if (size && !data)
		return tdat_err(w, -EINVAL, "option %u: %u bytes from NULL", id, size);
	return opt_add(w, id, data, size, false);
}

int tdat_start_data(struct tdat_writer *w)
{
	int ret;

	if (w->started)
		return tdat_err(w, -EBUSY, "tdat_start_data() called twice");
	if (w->failed)
		return tdat_sticky(w);
	if (!w->clock) {
		w->clock = strdup(w->has_tsc2nsec ? "x86-tsc" : "local");
		if (!w->clock)
			return tdat_err(w, -ENOMEM, "no memory");
	}
	if (!w->version_str && (ret = tdat_set_version(w, "trace-cmd-xen " TCX_VERSION)))
		return ret;
	if (!w->uname) {
		struct utsname u;
		char *s = NULL;

		if (!uname(&u) &&
		    asprintf(&s, "%s %s %s %s", u.sysname, u.nodename, u.release, u.machine) > 0) {
			ret = tdat_set_uname(w, s);
			free(s);
			if (ret)
				return ret;
		}
	}
	/* a retry after a failed allocation keeps what it got */
	if (!w->cpu)
		w->cpu = calloc(w->max_cpus, sizeof(*w->cpu));
	if (!w->active)
		w->active = calloc(w->max_cpus, sizeof(*w->active));
	if (!w->cpu || !w->active)
		return tdat_err(w, -ENOMEM, "no memory for %d CPUs", w->max_cpus);
	ret = tdat_write_metadata(w);
	if (ret) {
		w->failed = true;
		return ret;
	}
	w->started = true;
	w->live = w->max_cpus;
	return 0;
}

void tdat_free(struct tdat_writer *w)
{
	int i;

	if (w->cpu) {
		for (i = 0; i < w->max_cpus; i++) {
			if (!w->cpu[i])
				continue;
			tcx_pages_free(w->cpu[i]->batch,
				       (size_t)w->page_size * w->batch_pages);
			free(w->cpu[i]);
		}
	}
	free(w->cpu);
	free(w->active);
	free(w->resv);
	for (i = 0; i < w->nsys; i++) {
		free(w->sys[i].name);
		tdat_buf_free(&w->sys[i].formats);
	}
	free(w->sys);
	free(w->ids);
	tdat_buf_free(&w->ftrace);
	tdat_buf_free(&w->cmdlines);
	tdat_buf_free(&w->late_cmdlines);
	tdat_optlist_free(&w->opts);
	tdat_optlist_free(&w->late_opts);
	free(w->header_page);
	free(w->kallsyms);
	free(w->printk);
	free(w->uname);
	free(w->version_str);
	free(w->clock);
	free(w->path);
	if (w->fd >= 0)
		close(w->fd);
	if (w->dfd >= 0)
		close(w->dfd);
	pthread_mutex_destroy(&w->live_lock);
	if (w->shared) {
		pthread_mutex_destroy(&w->io_lock);
		pthread_mutex_destroy(&w->err_lock);
	}
	free(w);
}
