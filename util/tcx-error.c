// SPDX-License-Identifier: GPL-2.0
/*
 * The calling thread's last error: the message of a failure, next to the
 * negative errno value that the failing function returns.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tcx-util.h"

static __thread char last_error[TCX_ERROR_MAX];

int tcx_fail(int err, const char *fmt, ...)
{
	char buf[sizeof(last_error)];
	va_list ap;

	/* Through a copy: callers may pass tcx_error() as an argument. */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Messages quote peer bytes: keep terminals and logs safe. */
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	memcpy(last_error, buf, sizeof(buf));
	return err;
}

const char *tcx_error(void)
{
	return last_error[0] ? last_error : "no error";
}
