// SPDX-License-Identifier: GPL-2.0
/*
 * util: tcx_unique_id() never waits for the kernel's random pool. This
 * program's own getrandom() stands in for libc's (util is linked in
 * statically, so its calls bind here): it plays a kernel whose pool is not
 * initialised yet, and fails the test if it is ever asked to block.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcx-util.h"

enum kernel {
	READY,		/* the pool is initialised: every flag works */
	NOT_READY,	/* GRND_INSECURE works, GRND_NONBLOCK says EAGAIN */
	OLD_NOT_READY,	/* before Linux 5.6: no GRND_INSECURE, and EAGAIN */
	BROKEN,		/* no getrandom at all (ENOSYS) */
};

static enum kernel kernel;
static unsigned int calls, blocking_calls;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	calls++;
	if (!(flags & (GRND_NONBLOCK | GRND_INSECURE))) {
		/* the call that waits minutes in a fresh guest */
		blocking_calls++;
		errno = EINTR;
		return -1;
	}
	switch (kernel) {
	case READY:
		break;
	case NOT_READY:
		if (!(flags & GRND_INSECURE)) {
			errno = EAGAIN;
			return -1;
		}
		break;
	case OLD_NOT_READY:
		errno = flags & GRND_INSECURE ? EINVAL : EAGAIN;
		return -1;
	case BROKEN:
		errno = ENOSYS;
		return -1;
	}
	return syscall(SYS_getrandom, buf, len, flags & ~GRND_INSECURE);
}

/* 64 IDs from the kernel in *@state: none 0, no two alike, nothing asked to block */
static void test_ids(void **state)
{
	uint64_t ids[64];

	kernel = *(enum kernel *)*state;
	calls = blocking_calls = 0;
	for (size_t i = 0; i < 64; i++) {
		ids[i] = tcx_unique_id();
		assert_true(ids[i] != 0);
		for (size_t j = 0; j < i; j++)
			assert_true(ids[i] != ids[j]);
	}
	assert_true(calls >= 64);
	assert_int_equal(blocking_calls, 0);
}

int main(void)
{
	static enum kernel ready = READY, not_ready = NOT_READY, old = OLD_NOT_READY,
			   broken = BROKEN;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_ids, &ready),
		cmocka_unit_test_prestate(test_ids, &not_ready),
		cmocka_unit_test_prestate(test_ids, &old),
		cmocka_unit_test_prestate(test_ids, &broken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
