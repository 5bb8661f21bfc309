/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The benchmarks' small statistics: medians of repeated runs, since one
 * run on a shared machine decides nothing.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values; @v is left sorted (v[0] lowest, v[n - 1] highest). */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
