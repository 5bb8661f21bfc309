/* SPDX-License-Identifier: GPL-2.0 */
/*
 * recorder internals: the layers under recorder.h, each usable alone.
 *
 *	rec_record	one decoded Xen trace record
 *	rec_stream	per-pCPU byte windows in, records out
 *	rec_read_xentrace  a xentrace file (or pipe) fed into a rec_stream
 *	rec_events	the catalogue: every Xen event id -> name, trace.dat
 *			format text and payload encoding
 *	rec_vcpus	which vCPU runs on which pCPU, from scheduler records
 *	rec_sink	records in, trace.dat events out (through tdat)
 *	rec_hvbuf	the hypervisor's trace buffers (libxenctrl)
 *	rec_hvdrain	the thread that empties them
 *	rec_dom0	dom0's own ftrace (libtracefs)
 *
 * For the recorder's own files, its tests and its fuzzers; the command line
 * uses recorder.h only. Same error convention as recorder.h.
 */
#ifndef RECORDER_INTERNAL_H
#define RECORDER_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "recorder.h"

/* Xen's idle domain and the placeholder for "no vCPU known". */
#define REC_DOMID_IDLE		32767
#define REC_DOMID_DEFAULT	32768

/* ---- records ---- */

#define REC_F_TSC	0x1	/* the record carried its own TSC */
#define REC_F_SKEW	0x2	/* older than its pCPU's previous record; clamped */
#define REC_F_LATE	0x4	/* emitted after a newer record of another pCPU */

/**
 * struct rec_record - one decoded Xen trace record
 * @tsc:	raw host TSC (inherited from the pCPU's previous record when
 *		the record had none)
 * @event:	the 28-bit event id (TRC_HD_TO_EVENT)
 * @cpu:	the pCPU that logged it
 * @nr:		number of payload words (0..7)
 * @flags:	REC_F_*
 * @w:		the payload words, host endian
 */
struct rec_record {
	uint64_t	tsc;
	uint32_t	event;
	uint16_t	cpu;
	uint8_t		nr;
	uint8_t		flags;
	uint32_t	w[7];
};

/* ---- the stream: windows in, merged records out ---- */

/* Receives every record but the wrap fillers, in merged TSC order. */
typedef void (*rec_emit_fn)(void *ctx, const struct rec_record *r);

/* Records a batched stream holds before it hands them over. */
#define REC_EMIT_BATCH		64

/*
 * Receives the same records in the same order as a rec_emit_fn, @n at a
 * time (1..REC_EMIT_BATCH): one call per run instead of one per record.
 */
typedef void (*rec_emit_batch_fn)(void *ctx, const struct rec_record *r, unsigned int n);

/**
 * struct rec_stream_params - how a stream buffers
 * @max_cpus:	pCPU ids accepted are 0..max_cpus-1 (0: REC_MAX_CPUS)
 * @max_buffered: bytes of queued records after which the oldest are emitted
 *		even though a slower pCPU may still send older ones (0: 64 MiB);
 *		records arriving later than that are counted as late
 * @unordered:	emit each record as soon as it is parsed, without merging
 *		(for a quick scan)
 * @class_mask:	with @unordered, only records of these classes (bits 16-27
 *		of the id, shifted down: 0x002 for SCHED) are decoded and emitted;
 *		0 for all
 * @per_cpu:	emit every record as soon as it is fed, each pCPU's in its
 *		own order with the time rules (TSC inheritance, skew clamp),
 *		but no order across pCPUs: for a consumer whose output is per
 *		pCPU, as a trace.dat's CPU buffers are (readers merge them by
 *		time). Nothing is queued but the records that wait for their
 *		pCPU's first TSC (REC_NO_TSC_HOLD), so nothing is late and no
 *		other bound applies; rec_stream_expect() is moot
 */
struct rec_stream_params {
	int		max_cpus;
	size_t		max_buffered;
	bool		unordered;
	uint32_t	class_mask;
	bool		per_cpu;
};


/*
 * Records without a TSC that come before their pCPU's first TSC wait for
 * it, in either mode, and then take it. At most this many wait per pCPU
 * (at most 32 bytes each): later ones, until that first TSC, are dropped
 * and counted in no_tsc_dropped, so a pCPU that never gets a TSC (a
 * corrupt capture, or a mask of only TSC-less classes) costs bounded
 * memory. A pCPU that has none at rec_stream_finish() gives the ones it
 * holds the latest TSC any pCPU delivered.
 */
#define REC_NO_TSC_HOLD		1024

struct rec_stream;

/**
 * rec_stream_new - a merging stream calling @emit for every record
 * @p:		parameters (NULL: defaults)
 *
 * Returns NULL with errno set on failure.
 */
struct rec_stream *rec_stream_new(const struct rec_stream_params *p,
				  rec_emit_fn emit, void *ctx);

/**
 * struct rec_time - a pCPU's time rules and the stream's counters, lent to
 * a rec_emit_raw_fn for one call
 * @cur_tsc:	the pCPU's newest TSC
 * @first_fed:	its first TSC (what records without one take before any other)
 * @has_cur:	@cur_tsc is set
 * @records:	records taken (the callee adds)
 * @no_tsc:	of which without a TSC of their own (the callee adds)
 * @first_tsc:	the stream's oldest TSC emitted (lowered by the callee)
 * @last_tsc:	its newest (raised by the callee)
 */
struct rec_time {
	uint64_t	cur_tsc;
	uint64_t	first_fed;
	bool		has_cur;
	uint64_t	records;
	uint64_t	no_tsc;
	uint64_t	first_tsc;
	uint64_t	last_tsc;
};

/*
 * Takes whole records of pCPU @cpu from @p (@len bytes) in order, as a
 * per_cpu stream would emit them, keeping the time rules on @t (a record
 * without a TSC takes @t->cur_tsc, or @t->first_fed before any), and
 * returns the bytes it took. It stops before any record it does not take;
 * it must not take fillers and LOST_RECORDS (the GEN class), a record
 * older than @t->cur_tsc (skew, which the stream counts), or a record
 * fewer than REC_DECODE_FAST_READ bytes from the end of @p. Whatever is
 * batched is handed over before the call.
 */
typedef size_t (*rec_emit_raw_fn)(void *ctx, int cpu, const uint8_t *p, size_t len,
				  struct rec_time *t);

/**
 * rec_stream_new_batched - rec_stream_new(), records handed to @emit in runs
 * @p:		parameters (NULL: defaults)
 *
 * Every run is handed over before the rec_stream_feed(),
 * rec_stream_end_window() or rec_stream_finish() that decoded it returns:
 * between those calls the consumer has seen every record a rec_emit_fn
 * would have. Returns NULL with errno set on failure.
 */
struct rec_stream *rec_stream_new_batched(const struct rec_stream_params *p,
					  rec_emit_batch_fn emit, void *ctx);

/**
 * rec_stream_set_raw - a per_cpu batched stream offers its pCPUs' records
 * to @raw first, once each pCPU has its first TSC; the record @raw stops
 * at goes to @one at once when it is set (the same consumer's call for one
 * record), else to the batch as the rest does
 */
void rec_stream_set_raw(struct rec_stream *s, rec_emit_raw_fn raw, rec_emit_fn one);

/**
 * rec_stream_feed - raw ring bytes of @cpu, in the order the ring holds them
 *
 * A window may come in any number of pieces; a record split between two
 * pieces is joined. Records may be emitted before this returns. Returns
 * -EINVAL for a pCPU id out of range.
 */
int rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len);

/**
 * rec_stream_end_window - the window of @cpu is complete
 *
 * Bytes of a record left incomplete are counted in cut_bytes and dropped.
 * Emits what the merge allows.
 */
int rec_stream_end_window(struct rec_stream *s, int cpu);

/**
 * rec_stream_expect - pCPU @cpu will send data: hold back records of the
 * others until it has (or until the buffer bound is reached)
 *
 * A pCPU counts as expected anyway from its first data on; declare them
 * all up front (from a scan, or the host's pCPU list) to merge exactly.
 */
int rec_stream_expect(struct rec_stream *s, int cpu);

/** rec_stream_finish - no more input: emit everything still queued */
int rec_stream_finish(struct rec_stream *s);

/**
 * rec_stream_raise_last - as if a record at @tsc had been emitted: last_tsc
 * becomes at least @tsc, and so does the TSC rec_stream_finish() gives the
 * records of a pCPU that never had one; for streams fed side by side with
 * others from one capture (each with its own pCPUs), the newest of them all
 */
void rec_stream_raise_last(struct rec_stream *s, uint64_t tsc);

/** rec_stream_has_data - whether pCPU @cpu has fed any bytes */
bool rec_stream_has_data(const struct rec_stream *s, int cpu);

/** rec_stream_get_stats - counters so far */
void rec_stream_get_stats(const struct rec_stream *s, struct rec_stream_stats *st);

/** rec_stream_free - free @s (safe on NULL); queued records are dropped */
void rec_stream_free(struct rec_stream *s);

/* ---- the xentrace file format ---- */

/** rec_record_size - a trace record's bytes, from its first word */
static inline unsigned int rec_record_size(uint32_t hdr)
{
	/* by the top nibble (TSC bit, word count): one load on the per-record path */
	static const uint8_t size[16] = {
		4, 8, 12, 16, 20, 24, 28, 32, 12, 16, 20, 24, 28, 32, 36, 40,
	};

	return size[hdr >> 28];
}

/* Bytes from a record's start rec_decode_fast() reads: one word past the largest. */
#define REC_DECODE_FAST_READ	44

/* The words kept of the 8 after a record's header and TSC, by count: masks. */
#define REC_K(n, i)	((i) < (n) ? 0xffffffffu : 0)
#define REC_KROW(n)	{ REC_K(n, 0), REC_K(n, 1), REC_K(n, 2), REC_K(n, 3), \
			  REC_K(n, 4), REC_K(n, 5), REC_K(n, 6), 0 }
static const uint32_t rec_words_keep[8][8] = {
	REC_KROW(0), REC_KROW(1), REC_KROW(2), REC_KROW(3),
	REC_KROW(4), REC_KROW(5), REC_KROW(6), REC_KROW(7),
};
#undef REC_KROW
#undef REC_K

_Static_assert(sizeof(struct rec_record) >= offsetof(struct rec_record, w) + 32,
	       "rec_decode_fast() stores 8 words at w");

/**
 * rec_decode_fast - the record at @p into @r, without the time rules, where
 * REC_DECODE_FAST_READ bytes are readable: its words are loaded and masked
 * whole, not one by one (the 8th lands in the struct's tail padding)
 */
static inline void rec_decode_fast(const uint8_t *p, int cpu, struct rec_record *r)
{
	uint32_t hdr, lo, hi;
	unsigned int nr;
	uint64_t v[4], m[4];

	memcpy(&hdr, p, 4);
	nr = (hdr >> 28) & 7;
	p += 4;
	r->event = hdr & 0x0fffffff;
	r->nr = nr;
	r->cpu = cpu;
	r->flags = 0;
	r->tsc = 0;
	if (hdr & 0x80000000u) {
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		r->tsc = lo | (uint64_t)hi << 32;
		r->flags = REC_F_TSC;
		p += 8;
	}
	memcpy(v, p, sizeof(v));
	memcpy(m, rec_words_keep[nr], sizeof(m));
	for (int i = 0; i < 4; i++)
		v[i] &= m[i];
	memcpy((uint8_t *)r + offsetof(struct rec_record, w), v, sizeof(v));
}

/* Called now and then while reading, with the bytes read so far. */
typedef void (*rec_progress_fn)(void *ctx, uint64_t bytes);

/**
 * rec_read_xentrace - feed the windows of the xentrace capture on @fd into @s
 *
 * Reads sequentially (pipes work) in bounded memory; does not finish @s.
 * A truncated tail is tolerated (res->truncated). Returns 0, -EINVAL when
 * the input is empty or does not start with a cpu_change record, -EBADMSG
 * when an invalid window header was met later (what came before is fed),
 * or -errno of a failed read. res->msg names the problem and the offset.
 */
int rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
		      rec_progress_fn progress, void *pctx);

/**
 * struct rec_window_ops - where rec_read_xentrace_windows() puts a window
 * @feed:	bytes of pCPU @cpu's current window, in order
 * @end:	that window is complete (also when the input ends inside it)
 *
 * Both return 0 or a negative errno, which ends the reading.
 */
struct rec_window_ops {
	int (*feed)(void *ctx, int cpu, const uint8_t *p, size_t len);
	int (*end)(void *ctx, int cpu);
};

/**
 * rec_read_xentrace_windows - rec_read_xentrace() into @ops instead of a
 * stream, for readers that want the windows themselves
 */
int rec_read_xentrace_windows(int fd, const struct rec_window_ops *ops, void *ctx,
			      struct rec_read_result *res);

/**
 * rec_read_xentrace_prefix - the same for the first @max_bytes of the
 * regular file @fd (from offset 0, the fd's offset is left alone), for a
 * quick look at the start of a capture; the window cut at the limit counts
 * as truncated. -ESPIPE when @fd is not a regular file.
 */
int rec_read_xentrace_prefix(int fd, uint64_t max_bytes, struct rec_stream *s,
			     struct rec_read_result *res);

/**
 * rec_xentrace_cpus - the pCPUs with data in the xentrace file @fd, from
 * its window headers only (one small pread per window, the records are
 * not read): has_data[cpu] for cpu < @max_cpus, and the highest in
 * @max_cpu (-1: none). Stops quietly at the first invalid header (the
 * reading reports it). Returns 0 or -errno.
 */
int rec_xentrace_cpus(int fd, bool *has_data, int max_cpus, int *max_cpu);

/**
 * rec_xentrace_cpu_bytes - rec_xentrace_cpus() counting bytes: @bytes[cpu]
 * (zeroed by the caller) grows by the size of each of pCPU @cpu's windows;
 * a file of 64 MiB or more is walked on up to @nthreads threads
 */
int rec_xentrace_cpu_bytes(int fd, uint64_t *bytes, int max_cpus, int *max_cpu, int nthreads);

/**
 * rec_xentrace_walk - the window headers' walk behind rec_xentrace_cpus()
 * and rec_xentrace_cpu_bytes()
 * @fd:		the capture
 * @has_data:	set for each pCPU with a window of data (NULL: not kept)
 * @bytes:	grows by each pCPU's window sizes (NULL: not kept)
 * @max_cpus:	pCPU ids accepted; a header naming another stops the walk
 * @max_cpu:	the highest pCPU with data (-1: none)
 * @nthreads:	stretches walked side by side, at most 8 (1: one thread)
 * @min_split:	files smaller than this are walked on one thread
 *
 * A stretch after the first starts at a header found by looking (one
 * whose next ones chain up); the results are those of one thread's walk
 * whatever is found there. Returns 0 or -errno.
 */
int rec_xentrace_walk(int fd, bool *has_data, uint64_t *bytes, int max_cpus, int *max_cpu,
		      int nthreads, uint64_t min_split);

/*
 * A struct rec_walk is rec_read_xentrace_windows()'s walk over a capture
 * that another thread reads: it is handed the input chunk by chunk, and
 * feeds only the windows of the pCPUs it was given. Walks of disjoint sets
 * over the same chunks share one reading; each meets every header, so each
 * reports the same end, truncation or bad header, with the messages and
 * the struct rec_read_result that rec_read_xentrace() gives for the same
 * chunks (it reads 1 MiB at a time).
 */
struct rec_walk;

/**
 * rec_read_full - pread() @len bytes at @off, or up to the end of the file
 *
 * Returns the bytes read (fewer only at the end), or a negative errno.
 */
ssize_t rec_read_full(int fd, void *buf, size_t len, uint64_t off);

/**
 * rec_walk_new - a walk feeding @ops the windows of the pCPUs @mine marks
 * (REC_MAX_CPUS entries, copied); @res is its result, reset here
 *
 * Returns the walk, or NULL with errno set.
 */
struct rec_walk *rec_walk_new(const bool *mine, const struct rec_window_ops *ops, void *ctx,
			      struct rec_read_result *res);

/**
 * rec_walk_chunk - the next @n bytes of the input
 *
 * Returns 0, or the error that ends the walk: -EINVAL (not a capture),
 * -EBADMSG (a bad window header: @res says where), or what @ops returned.
 */
int rec_walk_chunk(struct rec_walk *w, const uint8_t *buf, size_t n);

/**
 * rec_walk_end - the input ended (@err 0: a window cut short is counted as
 * truncated, as rec_read_xentrace() does) or could not be read (@err, a
 * negative errno, which is returned with its message in @res)
 */
int rec_walk_end(struct rec_walk *w, int err);

/** rec_walk_free - free @w (safe on NULL) */
void rec_walk_free(struct rec_walk *w);

/* ---- the event catalogue ---- */

/* How an event's payload is built from a record. */
enum rec_enc {
	REC_ENC_WORDS,		/* u32 nr, then the words */
	REC_ENC_RUNSTATE,	/* packed vcpu/dom word, old and new state from the id */
	REC_ENC_HCALL_V2,	/* op, then the present arguments as u64 */
	REC_ENC_GUEST,		/* guest event number, nr, words */
	REC_ENC_RAW,		/* raw id, nr, words (xen/unknown, id families) */
	REC_ENC_VMENTRY,	/* kvm/kvm_entry */
	REC_ENC_VMEXIT,		/* kvm/kvm_exit, VMX or SVM by id */
};


/**
 * struct rec_event - one catalogue entry
 * @xen_id:	the Xen event id (for families, the base id)
 * @system:	trace.dat system ("xen", "kvm" or "sched")
 * @name:	event name in that system
 * @id:		the trace.dat event id (16 bits)
 * @enc:	payload encoding
 * @size:	payload bytes after the 8-byte common header
 */
struct rec_event {
	uint32_t	xen_id;
	const char	*system;
	const char	*name;
	uint16_t	id;
	enum rec_enc	enc;
	uint16_t	size;
};

/* trace.dat ids of the events that are not a Xen record's own. */
#define REC_ID_SCHED_SWITCH	300
#define REC_ID_KVM_ENTRY	1000
#define REC_ID_KVM_EXIT		1001
#define REC_ID_XEN_BASE		2000

/* Payload sizes (common header included) of the fixed-layout events. */
#define REC_SCHED_SWITCH_SIZE	64
#define REC_KVM_ENTRY_SIZE	24
#define REC_KVM_EXIT_SIZE	32
/* Largest payload any event gets. */
#define REC_MAX_PAYLOAD		80

/** rec_events_count - number of formats (catalogue entries plus derived) */
int rec_events_count(void);

/** rec_event_at - the @i-th entry, 0 <= i < rec_events_count() */
const struct rec_event *rec_event_at(int i);

/**
 * rec_event_format - the trace.dat format text of entry @e into @buf
 *
 * Returns the text length, or -ENOSPC if @size is too small.
 */
int rec_event_format(const struct rec_event *e, char *buf, size_t size);

/**
 * rec_event_lookup - the catalogue entry for a Xen event id
 *
 * Never NULL: ids outside the catalogue give the xen/unknown entry.
 */
const struct rec_event *rec_event_lookup(uint32_t event);

/** rec_event_class - the class of a Xen event id */
static inline enum rec_class rec_event_class(uint32_t event)
{
	switch ((event >> 16) & 0xfff) {
	case 0x001: return REC_CLASS_GEN;
	case 0x002: return REC_CLASS_SCHED;
	case 0x004: return REC_CLASS_DOM0OP;
	case 0x008: return REC_CLASS_HVM;
	case 0x010: return REC_CLASS_MEM;
	case 0x020: return REC_CLASS_PV;
	case 0x040: return REC_CLASS_SHADOW;
	case 0x080: return REC_CLASS_HW;
	case 0x800: return REC_CLASS_GUEST;
	default: return REC_CLASS_OTHER;
	}
}


/**
 * rec_event_encode - build the trace.dat payload of record @r
 * @e:		rec_event_lookup(r->event)
 * @pid:	common_pid
 * @buf:	at least REC_MAX_PAYLOAD bytes
 *
 * For REC_ENC_VMEXIT, @isa overrides the vendor (1 VMX, 2 SVM, 0: from the
 * id). Returns the payload length, or 0 when the record has more words than
 * the format holds (encode it with the xen/unknown entry instead).
 */
size_t rec_event_encode(const struct rec_event *e, const struct rec_record *r,
			int pid, int isa, void *buf);

/**
 * rec_event_encode_size - the payload length rec_event_encode() gives for
 * @r with @e, when that is known without encoding (0: encode to learn it,
 * or the record does not fit @e); lets a caller encode straight into the
 * room tdat_reserve() gives. The failure rules of rec_event_encode().
 */
static inline size_t rec_event_encode_size(const struct rec_event *e,
					   const struct rec_record *r)
{
	unsigned int nr = r->nr > 7 ? 7 : r->nr;
	size_t len = 8 + e->size;

	switch (e->enc) {
	case REC_ENC_WORDS:
		return 4 + nr * 4u > e->size ? 0 : len;
	case REC_ENC_RUNSTATE:
		return nr == 1 ? len : 0;
	case REC_ENC_RAW:
	case REC_ENC_GUEST:
		return len;
	case REC_ENC_VMENTRY:
		return nr ? 0 : len;
	case REC_ENC_VMEXIT:
		return nr > 3 ? 0 : len;
	case REC_ENC_HCALL_V2:
		break;	/* only decoding the arguments tells */
	}
	return 0;
}

/*
 * The encodings of most records, shared by rec_event_encode() and the
 * sink, which writes them straight into a page: 8 + the event's size
 * bytes at @b, the record's fit (rec_event_encode_size()) already checked.
 */
/* Word @i of a record's words (a struct rec_record's w, or the raw bytes after its header and TSC). */
static inline uint32_t rec_word(const void *words, unsigned int i)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)words + 4 * i, 4);
	return v;
}

static inline void rec_put32(uint8_t *b, unsigned int off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static inline void rec_put64(uint8_t *b, unsigned int off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

/* The common header: type, flags 0, preempt count 0, pid. */
static inline void rec_put_common(uint8_t *b, uint16_t id, int pid)
{
	uint16_t v = id;

	memcpy(b, &v, 2);
	b[2] = 0;
	b[3] = 0;
	rec_put32(b, 4, (uint32_t)pid);
}

/* REC_ENC_WORDS: nr, then the @size / 4 - 1 words it has room for. */
static inline void rec_encode_words(uint8_t *b, uint16_t id, unsigned int size, int pid,
				    const void *words, unsigned int nr)
{
	unsigned int room = (size - 4) / 4;

	rec_put_common(b, id, pid);
	rec_put32(b, 8, nr);
	/* word by word: cheaper than memcpy and memset of run-time sizes */
	for (unsigned int i = 0; i < room; i++)
		rec_put32(b, 12 + 4 * i, i < nr ? rec_word(words, i) : 0);
}

/*
 * REC_ENC_WORDS for an event of at most 7 words (a size of at most 32),
 * from a record's raw bytes: the 8 words at @words read whole (a record's
 * REC_DECODE_FAST_READ bytes cover them), the @nr kept (nr <= the room)
 * and all 8 stored, zeros past the room. So @b must have REC_WORDS_WIDE
 * writable bytes; what lands past the event is free room of the page,
 * which the next event overwrites or the page's finish zeroes.
 */
#define REC_WORDS_WIDE	44
static inline void rec_encode_words_wide(uint8_t *b, uint16_t id, int pid,
					 const void *words, unsigned int nr)
{
	uint64_t v[4], m[4];

	memcpy(v, words, sizeof(v));
	memcpy(m, rec_words_keep[nr], sizeof(m));
	for (int i = 0; i < 4; i++)
		v[i] &= m[i];
	rec_put_common(b, id, pid);
	rec_put32(b, 8, nr);
	memcpy(b + 12, v, sizeof(v));
}

/* The vCPU id kvm events carry: the pid's low 16 bits, less one. */
static inline uint32_t rec_pid_vcpu(int pid)
{
	return pid > 0 ? (uint32_t)(pid - 1) & 0xffff : 0;
}

/* REC_ENC_VMENTRY, for a record without words. */
static inline void rec_encode_vmentry(uint8_t *b, uint16_t id, int pid, uint32_t event)
{
	rec_put_common(b, id, pid);
	/* the size is fixed: constant stores, no memset call */
	memset(b + 8, 0, REC_KVM_ENTRY_SIZE - 8);
	rec_put32(b, 8, rec_pid_vcpu(pid));
	rec_put32(b, 12, event);
}

/* REC_ENC_VMEXIT, for a record of at most 3 words; @isa 0: from the id. */
static inline void rec_encode_vmexit(uint8_t *b, uint16_t id, int pid, int isa, uint32_t event,
				     const void *words, unsigned int nr)
{
	uint64_t rip = nr > 1 ? rec_word(words, 1) : 0;

	if (nr > 2)
		rip |= (uint64_t)rec_word(words, 2) << 32;
	if (!isa)
		isa = (event & 0xff) == 0x03 ? 2 : 1;
	rec_put_common(b, id, pid);
	memset(b + 8, 0, REC_KVM_EXIT_SIZE - 8);
	rec_put32(b, 8, nr ? rec_word(words, 0) : 0);
	rec_put32(b, 12, isa);
	rec_put64(b, 16, rip);
	rec_put32(b, 24, rec_pid_vcpu(pid));
	rec_put32(b, 28, event);
}

/** rec_encode_sched_switch - a sched/sched_switch payload (64 bytes) */
size_t rec_encode_sched_switch(void *buf, int prev_pid, const char *prev_comm,
			       long prev_state, int next_pid, const char *next_comm);

/** rec_encode_kvm_entry - a synthesized kvm/kvm_entry payload */
size_t rec_encode_kvm_entry(void *buf, int pid, uint32_t vcpu);

/* VMX exit reasons written in synthesized kvm/kvm_exit events (isa 1). */
#define REC_SYNTH_EXIT_PREEMPTED	1	/* EXTERNAL_INTERRUPT */
#define REC_SYNTH_EXIT_BLOCKED		12	/* HLT */

/**
 * rec_encode_kvm_exit - a synthesized kvm/kvm_exit payload, for a vCPU
 * switched out with no VMEXIT record: reason REC_SYNTH_EXIT_PREEMPTED
 */
size_t rec_encode_kvm_exit(void *buf, int pid, uint32_t vcpu);

/**
 * rec_encode_kvm_exit_state - the same with the reason from how the vCPU
 * left: REC_STATE_BLOCKED gives REC_SYNTH_EXIT_BLOCKED (HLT), anything
 * else REC_SYNTH_EXIT_PREEMPTED (EXTERNAL_INTERRUPT); xen_event stays 0
 */
size_t rec_encode_kvm_exit_state(void *buf, int pid, uint32_t vcpu, long prev_state);

/* ---- vCPUs as tasks ---- */

/**
 * rec_vcpu_pid - the pseudo task pid of (dom, vcpu): ((dom<<16)|vcpu)+1;
 * 0 for the idle domain and anything above it (no real domain)
 */
static inline int rec_vcpu_pid(uint32_t dom, uint32_t vcpu)
{
	if (dom >= REC_DOMID_IDLE)
		return 0;
	return (int)((dom << 16) | (vcpu & 0xffff)) + 1;
}

/** rec_vcpu_comm - "d<dom>v<vcpu>", or "<idle>" for the idle domain */
void rec_vcpu_comm(uint32_t dom, uint32_t vcpu, char comm[16]);

/* The TRACEID of a converted hypervisor file: "XENHOST". */
#define REC_HOST_TRACEID	0x58454e484f535400ull

/** rec_guest_traceid - the TRACEID a guest file of domain @dom must carry */
uint64_t rec_guest_traceid(uint32_t dom);

/* Linux prev_state values written in sched_switch. */
#define REC_STATE_RUNNING	0	/* R: preempted, still runnable */
#define REC_STATE_BLOCKED	1	/* S: blocked or offline */

/* What a scheduler record did to its pCPU. */
struct rec_switch {
	uint32_t	prev_dom, prev_vcpu;	/* REC_DOMID_IDLE when unknown */
	uint32_t	next_dom, next_vcpu;
	long		prev_state;
};

struct rec_vcpus;

/**
 * rec_vcpus_new - a vCPU model for pCPUs 0..ncpus-1
 * @use_switch:	drive it from SWITCH records, for captures without runstate
 *		records (a mask with SCHED_VERBOSE but not SCHED_MIN); their
 *		prev_state is then always R
 */
struct rec_vcpus *rec_vcpus_new(int ncpus, bool use_switch);

/**
 * rec_vcpus_update - apply record @r (on r->cpu)
 *
 * Returns 1 and fills @sw when the running vCPU of the pCPU changed,
 * 0 otherwise. Uses RUNSTATE_CHANGE and CONTINUE_RUNNING, or SWITCH.
 */
int rec_vcpus_update(struct rec_vcpus *m, const struct rec_record *r, struct rec_switch *sw);

/**
 * rec_vcpus_current - the vCPU on @cpu: returns false when unknown or idle,
 * else true with @dom and @vcpu set
 */
bool rec_vcpus_current(const struct rec_vcpus *m, int cpu, uint32_t *dom, uint32_t *vcpu);

/** rec_vcpus_free - free @m (safe on NULL) */
void rec_vcpus_free(struct rec_vcpus *m);

/**
 * rec_record_vcpus - the (dom, vcpu) pairs record @r names (runstate,
 * switch, wake and the like, LOST_RECORDS), for collecting the tasks of a
 * capture; returns how many (0..2)
 */
int rec_record_vcpus(const struct rec_record *r, uint32_t dom[2], uint32_t vcpu[2]);

/* ---- the trace.dat sink: records in, tdat events out ---- */

struct tdat_writer;
struct rec_sink;

/*
 * A sink's tap: every record it wrote, with the vCPU running on the record's
 * pCPU once the record was applied (@known false: idle or not yet known).
 */
typedef void (*rec_tap_fn)(void *ctx, const struct rec_record *r, bool known,
			   uint32_t dom, uint32_t vcpu);

/**
 * struct rec_sink_opts - how a sink writes
 * @ncpus:	pCPUs 0..ncpus-1 (records of others are ignored; 0: REC_MAX_CPUS)
 * @svm:	name exit reasons of pre-4.19 VMEXIT records as SVM
 * @use_switch:	drive the vCPU model from SWITCH records (no runstate records)
 * @svm_auto:	without @svm, switch to SVM names from the first pre-4.19
 *		VMEXIT whose reason only AMD has (0x60 or more) on; the exits
 *		named VMX before it are counted (stats.vmx_before_svm)
 * @tap, @tap_ctx: called for every record after it was written (NULL: no)
 */
struct rec_sink_opts {
	int		ncpus;
	bool		svm;
	bool		use_switch;
	bool		svm_auto;
	rec_tap_fn	tap;
	void		*tap_ctx;
};

/**
 * struct rec_sink_stats - what a sink wrote
 * @classes:	records per class (enum rec_class)
 * @unknown:	records written as xen/unknown
 * @switches:	sched_switch events written
 * @events:	events written in all
 * @svm_switched: @svm_auto turned SVM naming on
 * @vmx_before_svm: pre-4.19 exits named as VMX before that
 */
struct rec_sink_stats {
	uint64_t	classes[REC_NR_CLASSES];
	uint64_t	unknown;
	uint64_t	switches;
	uint64_t	events;
	bool		svm_switched;
	uint64_t	vmx_before_svm;
};


/**
 * rec_sink_add_formats - every event format and the idle cmdline, into @w
 * before tdat_start_data()
 */
int rec_sink_add_formats(struct tdat_writer *w);

/** rec_sink_new - a sink writing to @w (NULL with errno on failure) */
struct rec_sink *rec_sink_new(struct tdat_writer *w, const struct rec_sink_opts *o);

/**
 * rec_sink_emit - write record @r (a rec_emit_fn: pass the sink as ctx)
 *
 * A void callback: after the first tdat error it writes nothing more and
 * keeps the error for rec_sink_error().
 */
void rec_sink_emit(void *sink, const struct rec_record *r);

/**
 * rec_sink_emit_batch - rec_sink_emit() of @n records at @r, in order
 * (a rec_emit_batch_fn: pass the sink as ctx)
 */
void rec_sink_emit_batch(void *sink, const struct rec_record *r, unsigned int n);

/**
 * rec_sink_emit_raw - the records of known size that touch no vCPU state,
 * from the raw window bytes straight into the page (a rec_emit_raw_fn:
 * pass the sink as ctx); the same bytes and counters as rec_sink_emit()
 */
size_t rec_sink_emit_raw(void *sink, int cpu, const uint8_t *p, size_t len, struct rec_time *t);

/** rec_sink_note_vcpu - remember a (dom, vcpu) pair, e.g. from a scan */
int rec_sink_note_vcpu(struct rec_sink *k, uint32_t dom, uint32_t vcpu);


/** rec_sink_add_cmdlines - a cmdline for every vCPU known (before tdat_start_data) */
int rec_sink_add_cmdlines(struct rec_sink *k);

/**
 * rec_sink_add_guests - one GUEST option per domain known: name "d<dom>",
 * trace id rec_guest_traceid(dom), vCPU i -> rec_vcpu_pid(dom, i), or the
 * name and trace id rec_sink_name_guest() gave the domain
 */
int rec_sink_add_guests(struct rec_sink *k);

/**
 * rec_sink_name_guest - the GUEST entry of domain @dom gets @name and
 * @traceid (a guest recorded through its agent: its file's TRACEID)
 */
int rec_sink_name_guest(struct rec_sink *k, uint32_t dom, const char *name, uint64_t traceid);

/**
 * rec_sink_domains - the domains known, sorted, idle excluded, into a
 * calloc'ed array @out (the caller frees it)
 */
int rec_sink_domains(const struct rec_sink *k, struct rec_domain_summary **out,
		     uint32_t *ndomains, uint32_t *nvcpus);

/**
 * rec_sink_vcpus - the (dom << 16 | vcpu) pairs known, sorted, into a
 * malloc'ed array @out of @n entries (the caller frees it)
 */
int rec_sink_vcpus(const struct rec_sink *k, uint32_t **out, size_t *n);

/** rec_sink_get_stats - counters so far */
void rec_sink_get_stats(const struct rec_sink *k, struct rec_sink_stats *st);

/**
 * rec_sink_error - the first write error of rec_sink_emit()
 * @k:		the sink
 *
 * Returns that negative errno, with its message made the calling thread's
 * tcx_error(), or 0 if the sink has not failed.
 */
int rec_sink_error(const struct rec_sink *k);

/** rec_sink_free - free @k (safe on NULL); the writer stays open */
void rec_sink_free(struct rec_sink *k);

/* ---- convert on several threads (rec-convert-par.c) ---- */

/**
 * struct rec_convert_par - a conversion's records on several threads
 * @fd:		the capture, a regular file, read from offset 0 (pread)
 * @input, @output: their names, for messages
 * @bytes:	the bytes of each pCPU's windows (REC_MAX_CPUS entries), by
 *		which the pCPUs are shared out
 * @jobs:	worker threads, 2 or more
 * @w:		the writer: params.shared, data started, regions reserved
 * @so:		the options of each worker's sink
 * @out:	the sink whose vCPUs the workers' are added to (for the
 *		cmdlines and GUEST options)
 * @progress, @pctx: the reading's progress (NULL: none)
 */
struct rec_convert_par {
	int			fd;
	const char		*input, *output;
	const uint64_t		*bytes;
	int			jobs;
	struct tdat_writer	*w;
	struct rec_sink_opts	so;
	struct rec_sink		*out;
	rec_progress_fn		progress;
	void			*pctx;
};

/**
 * rec_convert_records_par - the records of @a's capture into @a->w, each
 * worker reading, decoding and writing its own pCPUs; the counters into
 * @sum (stream, read) and @kst as one thread would have them
 *
 * Returns 0, -EBADMSG for a corrupt window header (everything before it
 * written, sum->read says where), -EAGAIN when a worker's sink turned SVM
 * names on past the look-ahead (that depends on the order across pCPUs:
 * convert on one thread instead), or another negative errno with
 * tcx_error() naming the file.
 */
int rec_convert_records_par(const struct rec_convert_par *a, struct rec_convert_summary *sum,
			    struct rec_sink_stats *kst);


/* ---- the hypervisor's trace buffers (rec-hvbuf.c) ---- */

struct rec_hvbuf;

/**
 * struct rec_hvbuf_opts - how to set the buffers up
 * @pages:	pages per pCPU (0: REC_HV_DEFAULT_PAGES); Xen fixes the size
 *		once per boot, rec_hvbuf_pages() says what it is
 * @evt_mask:	Xen event mask (0: all)
 * @cpumap:	pCPU bitmap (bit c of byte c/8), NULL for all
 * @discard:	drop what the buffers hold already
 */
struct rec_hvbuf_opts {
	unsigned long	pages;
	uint32_t	evt_mask;
	const uint8_t	*cpumap;
	bool		discard;
};

/* One domain as xc_domain_getinfolist reports it. */
struct rec_hvdom {
	uint32_t	dom;
	uint32_t	nvcpus;
	bool		hvm;
	bool		dying;
};

/* A pCPU's window: @a then @b (empty unless it wrapped). Negative stops. */
typedef int (*rec_window_fn)(void *ctx, int cpu, const void *a, size_t alen,
			     const void *b, size_t blen);

/**
 * rec_hvbuf_open - claim VIRQ_TBUF, set the masks, enable tracing, map
 *
 * Returns 0 or a negative errno with tcx_error() saying why in the user's
 * terms (not dom0, no privilege, another consumer, tracing compiled out).
 */
int rec_hvbuf_open(struct rec_hvbuf **out, const struct rec_hvbuf_opts *o);

/** rec_hvbuf_set_evt_mask - Xen's event mask from now on; 0 or -errno */
int rec_hvbuf_set_evt_mask(struct rec_hvbuf *h, uint32_t mask);

/** rec_hvbuf_ncpus - pCPUs of the host (max_cpu_id + 1) */
int rec_hvbuf_ncpus(const struct rec_hvbuf *h);

/** rec_hvbuf_has_cpu - whether pCPU @cpu has a buffer */
bool rec_hvbuf_has_cpu(const struct rec_hvbuf *h, int cpu);

/** rec_hvbuf_pages - the buffer size in pages per pCPU, as Xen set it */
unsigned int rec_hvbuf_pages(const struct rec_hvbuf *h);

/**
 * rec_hvbuf_xen_version - Xen's version as xc_version() gives it, e.g.
 * "4.17.0" (major.minor and the extra version) into @buf; "" if unknown
 */
void rec_hvbuf_xen_version(const struct rec_hvbuf *h, char *buf, size_t len);

/** rec_hvbuf_cpu_khz - Xen's calibrated TSC kHz (xc_physinfo) */
uint32_t rec_hvbuf_cpu_khz(const struct rec_hvbuf *h);

/** rec_hvbuf_bytes - bytes consumed so far */
uint64_t rec_hvbuf_bytes(const struct rec_hvbuf *h);

/**
 * rec_hvbuf_drain - hand every pCPU's unread window to @fn, then free it
 * for Xen (cons = prod); -EPROTO if Xen's counters are bogus
 */
int rec_hvbuf_drain(struct rec_hvbuf *h, rec_window_fn fn, void *ctx);

/** rec_hvbuf_fd - the event channel fd to poll for VIRQ_TBUF */
int rec_hvbuf_fd(const struct rec_hvbuf *h);

/** rec_hvbuf_ack - after the fd polled readable: take and unmask the event */
void rec_hvbuf_ack(struct rec_hvbuf *h);

/** rec_hvbuf_stop - disable tracing (the buffers keep their data) */
int rec_hvbuf_stop(struct rec_hvbuf *h);

/** rec_hvbuf_domains - up to @max domains; returns how many or -errno */
int rec_hvbuf_domains(struct rec_hvbuf *h, struct rec_hvdom *out, int max);

/**
 * rec_hvbuf_close - disable tracing, set Xen's default masks back (the
 * previous ones cannot be read), unmap, unbind (safe on NULL)
 */
void rec_hvbuf_close(struct rec_hvbuf *h);

/* ---- the drain thread (rec-hvdrain.c) ---- */

struct rec_hvdrain;

/*
 * What the session does with staged data, in the order Xen's windows came:
 * @window (a window of @bytes starts on @cpu), @data (some of its bytes),
 * @end (the window is complete). Negative returns stop the consumer.
 */
struct rec_hvdrain_ops {
	int (*window)(void *ctx, int cpu, uint64_t bytes);
	int (*data)(void *ctx, int cpu, const void *p, size_t len);
	int (*end)(void *ctx, int cpu);
};

/**
 * rec_hvdrain_open - the drain, not started: its staging ring of
 * @ring_bytes (0: 32 MiB), faulted in for modest rates; made before Xen's
 * buffers are enabled, so that none of it delays their first copy
 */
int rec_hvdrain_open(struct rec_hvdrain **out, size_t ring_bytes, int poll_ms);

/**
 * rec_hvdrain_start - right after @hv's buffers are enabled: a thread that
 * copies every window into the ring and gives Xen its space back at once;
 * woken by VIRQ_TBUF, by its own timer before the busiest pCPU would raise
 * it at the last round's rate, and at least every poll_ms (0: 100)
 */
int rec_hvdrain_start(struct rec_hvdrain *d, struct rec_hvbuf *hv);

/**
 * rec_hvdrain_fd - readable once a 32nd of the ring is staged, or at the
 * stop: the consumer polls it with a timeout, which takes smaller amounts
 */
int rec_hvdrain_fd(const struct rec_hvdrain *d);

/** rec_hvdrain_consume - hand what is staged to @ops; returns entries or -errno */
int rec_hvdrain_consume(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx);

/**
 * rec_hvdrain_consume_for - as rec_hvdrain_consume(), but stop once about
 * @budget_ns (0: no limit) have passed; what is left stays staged
 * (rec_hvdrain_backlog() says how much)
 */
int rec_hvdrain_consume_for(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx,
			    uint64_t budget_ns);

/** rec_hvdrain_backlog - bytes staged and not yet consumed (the consumer's thread) */
uint64_t rec_hvdrain_backlog(const struct rec_hvdrain *d);

/**
 * rec_hvdrain_stop - after tracing was disabled: one last round, consume
 * everything, join the thread; the drain's error (-EPROTO) if it had one
 */
int rec_hvdrain_stop(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx);

/* How the drain thread woke: the summary's "drain". */
struct rec_hvdrain_stats {
	uint64_t	rounds;		/* copies out of Xen's buffers */
	uint64_t	virqs;		/* of them woken by VIRQ_TBUF, not the timer */
	uint64_t	min_wait_ns;	/* the shortest sleep the timer chose */
	uint64_t	ring_bytes;	/* the staging ring's bytes faulted in */
};

/**
 * rec_hvdrain_get_stats - how often the drain woke, and why; only once
 * rec_hvdrain_stop() has joined its thread
 */
void rec_hvdrain_get_stats(const struct rec_hvdrain *d, struct rec_hvdrain_stats *st);

/** rec_hvdrain_peak - the most bytes staged at once */
uint64_t rec_hvdrain_peak(const struct rec_hvdrain *d);

/**
 * rec_hvdrain_error - the first error of the drain thread
 * @d:		the drain
 *
 * Returns that negative errno, with its message made the calling thread's
 * tcx_error(), or 0 if the drain has not failed.
 */
int rec_hvdrain_error(const struct rec_hvdrain *d);

/** rec_hvdrain_close - stop (if needed) and free (safe on NULL) */
void rec_hvdrain_close(struct rec_hvdrain *d);

/* ---- dom0's ftrace (rec-dom0.c) ---- */

struct rec_dom0;
struct tdat_stats;

/**
 * struct rec_dom0_opts - dom0's side of a recording
 * @path:	trace-dom0.dat
 * @ft:		the ftrace options (NULL: REC_DOM0_DEFAULT_EVENT, nothing else)
 * @traceid:	the file's TRACEID (the GUEST entry of dom0 in trace.dat)
 * @mult, @shift: TSC2NSEC (mult 0: none)
 * @pids, @npids: tasks to name "command" (not running yet); with @ft's
 *		filter_command, the only tasks traced (with -P's)
 * @log:	notes (-b ignored beside -m); NULL: none
 */
struct rec_dom0_opts {
	FILE			*log;
	const char		*path;
	const struct rec_ftrace_opts *ft;
	int			file_version;
	uint64_t		traceid;
	uint32_t		mult, shift;
	const int		*pids;
	int			npids;
};

/** rec_dom0_cleanup_stale - remove instances of recorders that died */
void rec_dom0_cleanup_stale(FILE *log);

/**
 * rec_dom0_open - create the instance (tracing off) and the file, whose
 * metadata is then on disk; -EINVAL for an unknown event (the reason in
 * tcx_error())
 */
int rec_dom0_open(struct rec_dom0 **out, const struct rec_dom0_opts *o);

/** rec_dom0_start - tracing on */
int rec_dom0_start(struct rec_dom0 *d);

/**
 * rec_dom0_drain - move the pages ready into the file; returns how many
 *
 * After a write error, this and rec_dom0_stop() fail with that error and
 * set its message again.
 */
int rec_dom0_drain(struct rec_dom0 *d);

/**
 * rec_dom0_stop - tracing off and everything left into the file
 *
 * With -m nothing is read before: the instance's buffer (buffer_size_kb
 * set to -m's KiB, overwrite mode) holds the newest events, read here.
 */
int rec_dom0_stop(struct rec_dom0 *d);

/**
 * rec_dom0_overwritten - with -m, after rec_dom0_stop(): the events the
 * kernel's ring overwrote on @cpu (-1: all CPUs), by design, from
 * per_cpu/cpuN/stats "overrun:"; *@pages (if set): the pages kept there.
 * 0 without -m.
 */
uint64_t rec_dom0_overwritten(const struct rec_dom0 *d, int cpu, uint64_t *pages);

/** rec_dom0_max_kb - -m's KiB (0: none) */
unsigned long rec_dom0_max_kb(const struct rec_dom0 *d);

/** rec_dom0_ncpus - the CPUs dom0's file has */
int rec_dom0_ncpus(const struct rec_dom0 *d);

/** rec_dom0_stats - the file's counters */
void rec_dom0_stats(const struct rec_dom0 *d, struct tdat_stats *st);

/** rec_dom0_writer - the file's writer, for late options */
struct tdat_writer *rec_dom0_writer(struct rec_dom0 *d);

/** rec_dom0_close - close the file, remove the instance (safe on NULL) */
int rec_dom0_close(struct rec_dom0 *d);

/* ---- guests: what the session does with them (rec-guest.c) ---- */

/**
 * rec_same_file - whether paths @a and @b name one file: the same text, or
 * two existing names of one inode
 */
bool rec_same_file(const char *a, const char *b);

/**
 * rec_stage_path - where a file of this run is written until the run has
 * really started: "@path.<pid>.tmp" (malloc'ed), beside it so that a
 * rename() puts it in place; until then an older @path stays whole
 */
char *rec_stage_path(const char *path);

/**
 * rec_stage_wanted - whether @path is staged: a regular file or none yet;
 * a device, a FIFO or a symlink (--raw /dev/stdout) is written as it is
 */
bool rec_stage_wanted(const char *path);

/**
 * rec_guest_commit - a staged guest file (rec_guest_opts.stage) takes its
 * real name, replacing an older file of that name; 0 or -errno
 */
int rec_guest_commit(struct rec_guest *g);

/**
 * rec_guest_add_host_entry - the GUEST option of this guest in the host's
 * trace.dat @host: its name, its TRACEID, vCPU i -> rec_vcpu_pid(domid, i)
 * for a Xen guest (the pseudo tasks of the hypervisor file), -1 for a
 * network guest (as trace-cmd); a version 7 @host takes it at any time
 * before tdat_close()
 */
int rec_guest_add_host_entry(const struct rec_guest *g, struct tdat_writer *host);

/**
 * rec_guest_hv_record - one hypervisor record of the session, with the
 * vCPU running on its pCPU (a rec_tap_fn's arguments): time sync ("xen")
 * finds its markers in them. Each pCPU's records in order, @run naming
 * the vCPU's stretch on its pCPU (struct tsync_hvrec), or all in merged
 * TSC order with @run 0. From one thread at a time, from rec_guest_open()
 * until rec_guest_close(), including the records drained after
 * rec_guest_stop(): the last sample's traps are among them. Cheap for a
 * guest without protocol xen; others' records are skipped under the
 * guest's lock, so a caller passes only the guest's own and LOST_RECORDS.
 * @g NULL is ignored.
 */
void rec_guest_hv_record(struct rec_guest *g, const struct rec_record *r, bool known,
			 uint32_t dom, uint32_t vcpu, uint64_t run);

/**
 * rec_guest_set_tsc2nsec - TSC2NSEC for the guest file, after
 * rec_guest_stop() (a version 7 file; -EBUSY while running); the time
 * sync summary gives its bound in ns through the same mult/shift
 */
int rec_guest_set_tsc2nsec(struct rec_guest *g, uint32_t mult, uint32_t shift);

#endif /* RECORDER_INTERNAL_H */
