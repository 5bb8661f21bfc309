// SPDX-License-Identifier: GPL-2.0
/*
 * Appending options to a finished version 7 file, as trace-cmd does for
 * TIME_SHIFT: a new options section at the end of the file, linked from
 * the DONE option of the last section in the chain.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tdat-internal.h"

struct tdat_appender {
	int			fd;
	uint64_t		done_off;	/* next-offset of the last DONE */
	struct tdat_optlist	opts;
};

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EBADMSG;
}

/*
 * Walk the header and the options chain to the last DONE. With @drop_ts,
 * unlink on the way every section that holds nothing but a TIME_SHIFT
 * (a live file's, tdat_publish_time_shift()): the caller appends the
 * one that replaces it, and a stock reader keeps the last TIME_SHIFT
 * it meets and leaks the others. One 8-byte write each: the chain is
 * whole at every moment.
 */
static int walk_chain(int fd, uint64_t *done_off, bool drop_ts)
{
	uint8_t head[64];
	uint64_t off, size, next, pos;
	uint16_t id, sec;
	uint32_t osize;
	size_t p;
	int ret, hops = 0;

	ret = pread_all(fd, head, sizeof(head), 0);
	if (ret || memcmp(head, "\x17\x08\x44tracing", 10))
		return tcx_fail(-EBADMSG, "not a trace.dat file");
	if (strcmp((char *)head + 10, "7"))
		return tcx_fail(-EOPNOTSUPP, "file version %.4s: only version 7 takes options after its data",
			 (char *)head + 10);
	if (head[12] != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		return tcx_fail(-EOPNOTSUPP, "file of the other endianness");
	p = 18;		/* magic, "7\0", endian, long size, page size */
	p += strnlen((char *)head + p, sizeof(head) - p) + 1;	/* compression */
	p += strnlen((char *)head + p, sizeof(head) - p) + 1;	/* its version */
	if (p + 8 > sizeof(head))
		return tcx_fail(-EBADMSG, "bad compression field");
	memcpy(&off, head + p, 8);
	for (uint64_t prev_link = 0;;) {
		uint8_t sh[16];
		uint32_t nopt = 0;
		bool ts_only = true;

		if (++hops > 10000 || pread_all(fd, sh, 16, off))
			return tcx_fail(-EBADMSG, "options section at %llu unreadable", (unsigned long long)off);
		memcpy(&sec, sh, 2);
		memcpy(&size, sh + 8, 8);
		if (sec != 0 || (sh[2] & 1) || size < 14)
			return tcx_fail(-EOPNOTSUPP, "options section at %llu: id %u size %llu%s",
				 (unsigned long long)off, sec, (unsigned long long)size,
				 (sh[2] & 1) ? " (compressed: not supported)" : "");
		/* walk to DONE: its size may hold slack after the link */
		pos = off + 16;
		for (;;) {
			if (pos + 6 > off + 16 + size || pread_all(fd, sh, 6, pos))
				return tcx_fail(-EBADMSG, "options section at %llu has no DONE",
					 (unsigned long long)off);
			memcpy(&id, sh, 2);
			memcpy(&osize, sh + 2, 4);
			if (!id)
				break;
			nopt++;
			ts_only &= id == TDAT_OPT_TIME_SHIFT;
			pos += 6 + (uint64_t)osize;
		}
		if (osize < 8 || pread_all(fd, &next, 8, pos + 6))
			return tcx_fail(-EBADMSG, "options section at %llu: bad DONE",
				 (unsigned long long)off);
		if (!next) {
			*done_off = pos + 6;
			return 0;
		}
		if (drop_ts && prev_link && nopt == 1 && ts_only) {
			ret = tdat_pwrite_all(fd, &next, 8, prev_link);
			if (ret)
				return tcx_fail(ret, "unlinking an old TIME_SHIFT: %s", strerror(-ret));
		} else {
			prev_link = pos + 6;
		}
		off = next;
	}
}

static int find_last_done(int fd, uint64_t *done_off)
{
	return walk_chain(fd, done_off, false);
}

struct tdat_appender *tdat_append_open(const char *path)
{
	struct tdat_appender *a = calloc(1, sizeof(*a));
	int ret;

	if (!a) {
		tcx_fail(-ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	a->fd = open(path, O_RDWR | O_CLOEXEC);
	if (a->fd < 0) {
		ret = -errno;
		tcx_fail(ret, "cannot open %s: %s", path, strerror(-ret));
		goto fail;
	}
	ret = find_last_done(a->fd, &a->done_off);
	if (ret) {
		tcx_fail(ret, "%s: %s", path, tcx_error());
		goto fail;
	}
	return a;
fail:
	if (a->fd >= 0)
		close(a->fd);
	free(a);
	errno = -ret;
	return NULL;
}

int tdat_append_option(struct tdat_appender *a, uint16_t id, const void *data, uint32_t size)
{
	if (id == TDAT_OPT_DONE || (id >= 15 && id <= 22))
		return tcx_fail(-EINVAL, "option id %u cannot be appended", id);
	if (size && !data)
		return tcx_fail(-EINVAL, "option %u: %u bytes from NULL", id, size);
	if (tdat_optlist_add(&a->opts, id, data, size))
		return tcx_fail(-ENOMEM, "out of memory");
	return 0;
}

int tdat_append_time_shift(struct tdat_appender *a, uint64_t peer_id, uint32_t flags,
			   uint32_t ncpu, const struct tdat_time_shift_cpu *cpus)
{
	struct tdat_buf b = {0};
	int ret;

	ret = tdat_time_shift_build(&b, peer_id, flags, ncpu, cpus);
	if (!ret)
		ret = tdat_append_option(a, TDAT_OPT_TIME_SHIFT, b.data, b.len);
	tdat_buf_free(&b);
	return ret;
}

int tdat_append_close(struct tdat_appender *a)
{
	int ret = 0;

	if (!a)
		return 0;
	if (a->opts.n) {
		ret = tdat_append_options_section(a->fd, a->done_off, &a->opts, NULL);
		if (ret)
			tcx_fail(ret, "appending options: %s", strerror(-ret));
		for (int i = 0; !ret && i < a->opts.n; i++) {
			uint64_t last;

			/* the new one is in: the ones it replaces go */
			if (a->opts.v[i].id == TDAT_OPT_TIME_SHIFT) {
				ret = walk_chain(a->fd, &last, true);
				break;
			}
		}
	}
	if (close(a->fd) && !ret) {
		ret = -errno;
		tcx_fail(ret, "closing the file: %s", strerror(-ret));
	}
	tdat_optlist_free(&a->opts);
	free(a);
	return ret;
}
