// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the xentrace decoder: any bytes as a capture,
 * through the file reader, the merging stream (with a tiny buffer bound,
 * so forced emission runs too), the catalogue's encoders and the vCPU
 * model. Everything but the trace.dat writer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder-internal.h"

struct ctx {
	struct rec_vcpus	*vm;
	uint64_t		last[64];
};

static void emit(void *p, const struct rec_record *r)
{
	struct ctx *c = p;
	const struct rec_event *e = rec_event_lookup(r->event);
	uint8_t b[REC_MAX_PAYLOAD];
	struct rec_switch sw;
	size_t len;

	/* per pCPU, records never go back in time */
	if (r->cpu < 64) {
		if (r->tsc < c->last[r->cpu])
			abort();
		c->last[r->cpu] = r->tsc;
	}
	len = rec_event_encode(e, r, 1, 0, b);
	if (!len)
		len = rec_event_encode(rec_event_lookup(0xffffffff), r, 1, 0, b);
	if (!len || len > REC_MAX_PAYLOAD)
		abort();
	if (rec_vcpus_update(c->vm, r, &sw)) {
		char pc[16], nc[16];

		rec_vcpu_comm(sw.prev_dom, sw.prev_vcpu, pc);
		rec_vcpu_comm(sw.next_dom, sw.next_vcpu, nc);
		rec_encode_sched_switch(b, rec_vcpu_pid(sw.prev_dom, sw.prev_vcpu), pc,
					sw.prev_state, rec_vcpu_pid(sw.next_dom, sw.next_vcpu), nc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_stream_params p = { .max_cpus = 256, .max_buffered = 4096 };
	struct ctx c = { 0 };
	struct rec_read_result res;
	struct rec_stream *s;
	int fd = memfd_create("capture", 0);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	c.vm = rec_vcpus_new(256, size && (data[0] & 1));
	/* convert's way too: each pCPU in its own order, after the look-ahead */
	p.per_cpu = size && (data[0] & 2);
	if (p.per_cpu) {
		bool has[256] = { 0 };
		int max_cpu;

		rec_xentrace_cpus(fd, has, 256, &max_cpu);
		s = rec_stream_new(&(struct rec_stream_params){ .unordered = true,
								.class_mask = 0x00b },
				   emit, &c);
		if (s)
			rec_read_xentrace_prefix(fd, 4096, s, &res);
		rec_stream_free(s);
		/* the main pass starts its time order afresh */
		memset(c.last, 0, sizeof(c.last));
	}
	s = rec_stream_new(&p, emit, &c);
	if (s && c.vm) {
		rec_read_xentrace(fd, s, &res, NULL, NULL);
		rec_stream_finish(s);
	}
	rec_stream_free(s);
	rec_vcpus_free(c.vm);
	close(fd);
	return 0;
}
