/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcx-util: the few helpers that several libraries and the command line
 * share and that belong to none of them: the thread's last error, strict
 * number parsing, JSON strings, the monotonic clock. Depends on libc alone, so that anything
 * (the agent included) can link it without pulling in Xen's libraries.
 */
#ifndef TCX_UTIL_H
#define TCX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/*
 * Errors
 *
 * The convention of every library of the project and of the command line:
 *
 * 1. A function returns 0 (or a count) on success and a negative errno
 *    value on failure; one returning a pointer returns NULL with errno set.
 * 2. The message of a failure goes in one place: the calling thread's last
 *    error. tcx_fail() sets it and returns its @err, so that
 *    "return tcx_fail(-EINVAL, "bad %s", x);" reads naturally; tcx_error()
 *    reads it. Like errno, it is valid until the thread's next failure: a
 *    caller that wants to keep it copies it. A caller that adds context
 *    does "return tcx_fail(ret, "%s: %s", path, tcx_error());".
 * 3. An object whose failures happen where no caller can be told (in
 *    another thread, in a void callback) keeps its first error (errno and
 *    text) and gives it back through "int <obj>_error(const struct <obj> *)":
 *    it returns that negative errno (0: none) and, when non-zero, makes its
 *    text the calling thread's tcx_error(). An object used from one thread
 *    reports each failing call through tcx_fail() instead.
 * 4. Warnings (the run goes on) go to the "FILE *log" of the options
 *    (NULL: none). Never an error message through the log alone when the
 *    call fails.
 * 5. No "char *err, size_t errlen" parameters: a function sets the message
 *    with tcx_fail(), and its callers read tcx_error().
 */

/* The longest message kept, NUL included; longer ones are truncated. */
#define TCX_ERROR_MAX	512

/**
 * tcx_fail - set the calling thread's last error
 * @err:	the value to return, a negative errno value
 * @fmt:	printf-like format of the message
 *
 * The message is formatted through a copy, so the arguments may include
 * tcx_error() itself (to add context to the message of a callee). Control
 * characters (below 0x20, and DEL) become '?': messages quote peer bytes,
 * and end up on terminals and in logs.
 *
 * Returns @err.
 */
int tcx_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * tcx_error - the message of the calling thread's last failure
 *
 * Valid until the thread's next tcx_fail(); never changed by success.
 *
 * Returns the message, or "no error" if the thread has not failed yet
 * (never NULL, never empty).
 */
const char *tcx_error(void);

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
 * Returns 0, -EINVAL if @s is not such a number (empty included), or
 * -ERANGE if it is above @max or does not fit an unsigned long.
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
 * tcx_parse_size - a byte count: a decimal number and an optional K, M or
 * G (powers of 1024, either case, "KiB" and "KB" alike), as "64M"
 * @s:		the text, NUL-terminated
 * @max:	the largest value accepted, in bytes
 * @v:		the value (left alone on failure)
 *
 * Returns 0, -EINVAL if @s is not such a size, or -ERANGE above @max.
 */
int tcx_parse_size(const char *s, uint64_t max, uint64_t *v);

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
 * tcx_clock_ns - clock @id in nanoseconds
 * @id:		CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, ...
 *
 * Returns the time, or 0 if the clock cannot be read.
 */
uint64_t tcx_clock_ns(clockid_t id);

/**
 * tcx_now_ns - CLOCK_MONOTONIC in nanoseconds: for timeouts and durations
 *
 * Returns the time, or 0 if the clock cannot be read.
 */
uint64_t tcx_now_ns(void);

/**
 * tcx_unique_id - a random 64-bit ID that is never 0, without waiting
 *
 * For trace IDs, which must differ between sessions but need no secrecy:
 * getrandom(2) with GRND_INSECURE (Linux 5.6 on), else GRND_NONBLOCK, else
 * the clocks, the pid and a counter mixed. It never waits for the kernel's
 * random pool to be initialised (getrandom() without flags does: seconds,
 * with no bound, in a freshly booted guest without a hardware RNG).
 *
 * Returns the ID.
 */
uint64_t tcx_unique_id(void);

/**
 * tcx_pages_alloc - a zeroed buffer of whole pages, partly faulted in ahead
 * @len:	bytes (rounded up to pages)
 * @populate:	how many of its first bytes to fault in now (0: none)
 * @huge:	ask for 2 MiB pages where the kernel has them (buffers of at
 *		least 2 MiB)
 *
 * For long-lived buffers that a hot path fills: a page fault per 4 KiB
 * costs a paravirtualised dom0 a trap to Xen each. Free it with
 * tcx_pages_free().
 *
 * Returns the buffer, or NULL with errno set.
 */
void *tcx_pages_alloc(size_t len, size_t populate, bool huge);

/**
 * tcx_pages_populate - fault in a range of a tcx_pages_alloc() buffer
 * @p:		the buffer
 * @off:	where the range starts
 * @len:	its length in bytes
 *
 * Advice only: where the kernel cannot, the pages fault in when touched.
 */
void tcx_pages_populate(void *p, size_t off, size_t len);

/**
 * tcx_mem_populate - fault in the pages under any writable range
 * @p:		where the range starts (any alignment: a malloc() block)
 * @len:	its length in bytes
 *
 * For a large heap block about to be filled: the pages it spans, partial
 * ones at its ends included (they belong to the same mapping), are
 * faulted in by one call. Advice only, like tcx_pages_populate().
 */
void tcx_mem_populate(void *p, size_t len);

/**
 * tcx_pages_free - unmap a tcx_pages_alloc() buffer
 * @p:		the buffer (NULL: nothing)
 * @len:	the length it was allocated with
 */
void tcx_pages_free(void *p, size_t len);

#endif /* TCX_UTIL_H */
