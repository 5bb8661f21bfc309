/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcx-util: the few helpers that several libraries and the command line
 * share and that belong to none of them: strict number parsing, JSON
 * strings, the monotonic clock. Depends on libc alone, so that anything
 * (the agent included) can link it without pulling in Xen's libraries.
 */
#ifndef TCX_UTIL_H
#define TCX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/**
 * tcx_parse_uint - a decimal number, strictly
 * @s:		the text, NUL-terminated
 * @max:	the largest value accepted
 * @v:		the value (left alone on failure)
 *
 * Only the digits 0-9: no sign, no spaces on either side, no "0x", nothing
 * after the number. Leading zeros are allowed and decimal ("010" is ten).
 * Zero is accepted; callers that need at least 1 check it.
 *
 * Return: 0, -EINVAL if @s is not such a number (empty included), -ERANGE
 * if it is above @max or does not fit an unsigned long.
 */
int tcx_parse_uint(const char *s, unsigned long max, unsigned long *v);

/**
 * tcx_parse_uintn - tcx_parse_uint() on the first @n bytes of @s
 * @s:		the text (need not be NUL-terminated)
 * @n:		its length; all @n bytes must be digits
 * @max:	the largest value accepted
 * @v:		the value (left alone on failure)
 *
 * For a field inside a longer string, such as the host part of
 * "host:port". Same rules and return values as tcx_parse_uint().
 */
int tcx_parse_uintn(const char *s, size_t n, unsigned long max, unsigned long *v);

/**
 * tcx_json_str - write @s to @f as a JSON string, quotes included
 * @f:		the stream
 * @s:		the text (NULL writes "")
 *
 * '"' and '\\' are escaped with a backslash, control characters (below
 * 0x20, and DEL) as \u00XX; other bytes are copied as they are, so the
 * output is valid JSON when @s is valid UTF-8.
 */
void tcx_json_str(FILE *f, const char *s);

/**
 * tcx_clock_ns - clock @id in nanoseconds (0 if the clock cannot be read)
 * @id:		CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, ...
 */
uint64_t tcx_clock_ns(clockid_t id);

/** tcx_now_ns - CLOCK_MONOTONIC in nanoseconds: for timeouts and durations */
uint64_t tcx_now_ns(void);

#endif /* TCX_UTIL_H */
