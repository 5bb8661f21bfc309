/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small independent trace.dat parser for the unit tests: it finds the
 * per-CPU data and the options the way a reader must, and decodes pages
 * with libtraceevent's kbuffer (the reader trace-cmd itself uses).
 */
#ifndef TFILE_H
#define TFILE_H

#include <stdint.h>
#include <stddef.h>

#define TF_MAX_OPTS	256
#define TF_MAX_CPUS	4096

struct tf_opt {
	uint16_t	id;
	uint32_t	size;
	const uint8_t	*data;
	int		section;	/* which options section (v7), 0 first */
};

struct tf_cpu {
	uint32_t	cpu;
	uint64_t	off;
	uint64_t	size;
};

struct tf {
	uint8_t		*buf;
	size_t		len;
	int		version;
	int		long_size;
	uint32_t	page_size;
	int		cpus;		/* v6 field or v7 CPUCOUNT */
	int		nent;
	struct tf_cpu	ent[TF_MAX_CPUS];
	int		nopts;
	struct tf_opt	opts[TF_MAX_OPTS];
	int		noptsec;
	int		walk_end_ok;	/* v7: section walk ends exactly at EOF */
	int		nsys;
	char		clock[64];	/* v6 clock after the table */
	char		err[128];
};

struct tf_ev {
	int		cpu;
	uint64_t	ts;
	uint32_t	size;
	const uint8_t	*data;
	int		missed;		/* kbuffer_missed_events of a page's first */
	int		page;		/* page index within the CPU */
};

int tf_load(const char *path, struct tf *f);
void tf_free(struct tf *f);
const struct tf_cpu *tf_cpu(const struct tf *f, int cpu);
const struct tf_opt *tf_opt(const struct tf *f, uint16_t id, int nth);
/* Decode every event of @cpu; returns the count (at most @max stored). */
int tf_events(const struct tf *f, int cpu, struct tf_ev *out, int max);
/* Raw entries of page @page of @cpu: types into @types, returns count. */
int tf_raw_types(const struct tf *f, int cpu, int page, int *types, int max);
/* The page's commit word. */
uint64_t tf_commit(const struct tf *f, int cpu, int page);

#endif
