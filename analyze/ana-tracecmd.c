// SPDX-License-Identifier: GPL-2.0
/*
 * libtracecmd, loaded when analyze first reads a trace.dat. Recording
 * (but for --session's analysis at the end) and converting never read
 * one, and linking it made every process load it and libzstd: about
 * 0.5 ms of CPU and 20 page faults each, on a recorder whose whole cost
 * is measured.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "analyze-internal.h"
#include "tcx-util.h"

#define TC_SONAME	"libtracecmd.so.1"

struct ana_tc ana_tc;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[256];	/* empty once loaded */

#ifdef ANA_TC_LINKED
/* a sanitized build links it (analyze/meson.build says why) */
static void load(void)
{
	ana_tc = (struct ana_tc){
		.set_loglevel = tracecmd_set_loglevel, .open = tracecmd_open,
		.close = tracecmd_close, .get_tep = tracecmd_get_tep,
		.read_data = tracecmd_read_data, .read_at = tracecmd_read_at,
		.read_cpu_first = tracecmd_read_cpu_first,
		.free_record = tracecmd_free_record, .get_traceid = tracecmd_get_traceid,
		.get_guest_cpumap = tracecmd_get_guest_cpumap,
	};
}
#else
/* Each symbol, or the first one missing. */
static const char *resolve(void *lib)
{
	static const struct {
		const char *name;
		size_t off;
	} sym[] = {
#define SYM(f) { "tracecmd_" #f, offsetof(struct ana_tc, f) }
		SYM(set_loglevel), SYM(open), SYM(close), SYM(get_tep), SYM(read_data),
		SYM(read_at), SYM(read_cpu_first), SYM(free_record), SYM(get_traceid),
		SYM(get_guest_cpumap),
#undef SYM
	};
	struct ana_tc tc;

	_Static_assert(sizeof(sym) / sizeof(sym[0]) == sizeof(tc) / sizeof(tc.open),
		       "a symbol for every member");
	for (size_t i = 0; i < sizeof(sym) / sizeof(sym[0]); i++) {
		void *f = dlsym(lib, sym[i].name);

		if (!f)
			return sym[i].name;
		/* the member's type is the header's: only the address is copied */
		memcpy((char *)&tc + sym[i].off, &f, sizeof(f));
	}
	ana_tc = tc;
	return NULL;
}

static void load(void)
{
	void *lib = dlopen(TC_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *missing;

	if (!lib) {
		snprintf(why, sizeof(why), "cannot load %s (trace-cmd's library, which reads "
			 "trace.dat files): %s", TC_SONAME, dlerror());
		return;
	}
	missing = resolve(lib);
	if (missing) {
		snprintf(why, sizeof(why), "%s has no %s: not the library trace-cmd-xen was "
			 "built for", TC_SONAME, missing);
		dlclose(lib);
	}
	/* kept loaded: its records and handles outlive any one call */
}
#endif

int ana_tc_load(void)
{
	pthread_once(&once, load);
	return why[0] ? tcx_fail(-ENOENT, "%s", why) : 0;
}
