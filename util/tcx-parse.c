// SPDX-License-Identifier: GPL-2.0
/*
 * Strict decimal numbers. strtoul() would take a sign, spaces, and (base 0)
 * octal or hex: callers each patched some of that, each differently.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "tcx-util.h"

int tcx_parse_uintn(const char *s, size_t n, unsigned long max, unsigned long *v)
{
	unsigned long r = 0;
	bool big = false;

	if (!s || !n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned int d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned int)(s[i] - '0');
		/* keep scanning: "99999999999999999999x" is not a number */
		if (r > (ULONG_MAX - d) / 10)
			big = true;
		else
			r = r * 10 + d;
	}
	if (big || r > max)
		return -ERANGE;
	*v = r;
	return 0;
}

int tcx_parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	return tcx_parse_uintn(s, s ? strlen(s) : 0, max, v);
}

int tcx_parse_size(const char *s, uint64_t max, uint64_t *v)
{
	size_t n = 0, len = s ? strlen(s) : 0;
	unsigned long num;
	unsigned int shift = 0;
	const char *u;
	int ret;

	while (n < len && s[n] >= '0' && s[n] <= '9')
		n++;
	ret = tcx_parse_uintn(s, n, ULONG_MAX, &num);
	if (ret)
		return ret;
	u = s + n;
	if (*u == 'k' || *u == 'K')
		shift = 10;
	else if (*u == 'm' || *u == 'M')
		shift = 20;
	else if (*u == 'g' || *u == 'G')
		shift = 30;
	if (shift)
		u++;
	if (shift && (!strcmp(u, "iB") || !strcmp(u, "B")))
		u += strlen(u);
	if (*u)
		return -EINVAL;
	if ((uint64_t)num > (UINT64_MAX >> shift) || ((uint64_t)num << shift) > max)
		return -ERANGE;
	*v = (uint64_t)num << shift;
	return 0;
}
