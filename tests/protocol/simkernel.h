/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests: a simulated guest kernel directory, shaped like tracefs, whose
 * per_cpu/cpuN/trace_pipe_raw hold pages of "tcx/tick" events written by
 * tdat (NCPUS CPUs, PER_CPU events each, n = cpu * 100 + i).
 */
#ifndef SIMKERNEL_H
#define SIMKERNEL_H

#include <stddef.h>
#include <stdint.h>

#define SIMK_CPUS	2
#define SIMK_PER_CPU	20


struct simk_pages {
	uint8_t *data[SIMK_CPUS];	/* each CPU's pages, as written */
	size_t len[SIMK_CPUS];
};

/*
 * Create @dir (which must not exist) with the layout above; the pages put
 * in it are returned in @pages (free with simk_free()). Returns 0 or -1.
 */
int simk_create(const char *dir, struct simk_pages *pages);
void simk_free(struct simk_pages *pages);

#endif /* SIMKERNEL_H */
