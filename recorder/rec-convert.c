// SPDX-License-Identifier: GPL-2.0
/*
 * convert: a xentrace capture read into a per-pCPU stream whose records go
 * through the trace.dat sink (rec-sink.c) into a file written by tdat.
 *
 * Version 7 (the default) reads the capture once: cmdlines and GUEST
 * options are written after the data, at close. A file is first looked at
 * cheaply: its window headers give the pCPUs with data,
 * its first 16 MiB whether runstate or SWITCH records drive the vCPU model
 * and whether exit reasons are AMD's. Version 6 needs cmdlines and options
 * before the data: a file is then scanned whole first, and a pipe's tasks
 * are named by sched_switch only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdint.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"

/* ---- the conversion ---- */

/* The start of a file read ahead for what must be known before the data. */
#define SNIFF_BYTES	(16u << 20)
/* A pCPU's pages per write with -j (measured: 128 KiB 1.57 s, 512 KiB 1.47 s, 1 MiB 1.78 s) */
#define PAR_BATCH_BYTES	(512u << 10)

struct conv {
	const struct rec_convert_opts	*o;
	int				fd;
	struct stat			st;
	bool				is_file, is_stdin;
	int				version;
	bool				v7;
	int				ncpus;
	struct tdat_writer		*w;
	bool				created;
	struct rec_sink			*out;	/* the file's */
	struct rec_sink			*sink;	/* scan: collects vCPUs only */
	int				max_cpu;
	bool				has_runstate;
	bool				has_switch;
	bool				amd_seen;	/* pre-4.19 exits with AMD reasons */
	bool				*has_data;	/* pCPUs with data */
	uint64_t			*bytes;		/* a file's: bytes of each pCPU's windows */
	int				jobs;		/* threads for the records */
	struct rec_sink_opts		so;		/* the file's sink's */
	struct rec_sink_stats		kst;		/* what it wrote (all the workers') */
	int				err;
};

static void scan_emit(void *ctx, const struct rec_record *r)
{
	struct conv *c = ctx;
	uint32_t dom[2], vcpu[2];
	int n = rec_record_vcpus(r, dom, vcpu);

	for (int i = 0; i < n; i++)
		if (rec_sink_note_vcpu(c->sink, dom[i], vcpu[i]) < 0)
			c->err = -ENOMEM;
	if ((r->event & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE)
		c->has_runstate = true;
	else if (r->event == TRC_SCHED_SWITCH)
		c->has_switch = true;
	/* VMX exit reasons stay below 0x60; AMD's interrupt, I/O, NPF... do not */
	else if ((r->event & ~(TRC_64_FLAG | TRC_HVM_NESTEDFLAG)) == TRC_HVM_VMEXIT &&
		 r->nr && r->w[0] >= 0x60)
		c->amd_seen = true;
}

static void progress(void *ctx, uint64_t bytes)
{
	const struct rec_convert_opts *o = ctx;

	fprintf(o->log, "\rtrace-cmd-xen convert: %" PRIu64 " MiB read", bytes >> 20);
	fflush(o->log);
}

/*
 * A quick unordered pass over the file (@limit: its first bytes only, 0:
 * all of it): which vCPUs the scheduler records name (into c->sink),
 * runstate or SWITCH, AMD exit reasons; with @cpus, also which pCPUs have
 * data (the whole file only).
 */
static int scan(struct conv *c, int fd, uint64_t limit, bool cpus)
{
	/* GEN for LOST_RECORDS, SCHED for everything naming a vCPU, HVM exits */
	struct rec_stream_params p = { .unordered = true, .class_mask = 0x00b };
	struct rec_stream *s = rec_stream_new(&p, scan_emit, c);
	struct rec_stream_stats st;
	struct rec_read_result res;
	int ret;

	if (!s)
		return tcx_fail(-ENOMEM, "out of memory");
	if (limit)
		ret = rec_read_xentrace_prefix(fd, limit, s, &res);
	else
		ret = rec_read_xentrace(fd, s, &res, NULL, NULL);
	if (ret < 0 && ret != -EBADMSG)
		tcx_fail(ret, "%s: %s", c->o->input, res.msg);
	else
		ret = 0;
	rec_stream_finish(s);
	rec_stream_get_stats(s, &st);
	if (cpus) {
		c->max_cpu = st.max_cpu;
		c->has_data = calloc(c->max_cpu + 1, sizeof(*c->has_data));
		if (!c->has_data && !ret)
			ret = tcx_fail(-ENOMEM, "out of memory");
		for (int i = 0; c->has_data && i <= c->max_cpu; i++)
			c->has_data[i] = rec_stream_has_data(s, i);
	}
	rec_stream_free(s);
	if (!ret && c->err)
		ret = tcx_fail(c->err, "out of memory for the vCPUs");
	return ret;
}

/*
 * What a version 7 conversion of a file needs before its data, without
 * reading the records twice: the pCPUs with data from the window headers
 * (the file's CPU count), and from the first
 * SNIFF_BYTES, runstate or SWITCH and AMD exit reasons. vCPUs are named
 * at close (cmdlines and GUEST options after the data).
 */
static int look_ahead(struct conv *c, int fd)
{
	c->has_data = calloc(REC_MAX_CPUS, sizeof(*c->has_data));
	if (!c->has_data)
		return tcx_fail(-ENOMEM, "out of memory");
	for (int i = 0; i < REC_MAX_CPUS; i++)
		c->has_data[i] = c->bytes[i] != 0;
	return scan(c, fd, SNIFF_BYTES, false);
}

__attribute__((format(printf, 2, 3)))
static void warn(const struct rec_convert_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log)
		return;
	fprintf(o->log, "trace-cmd-xen convert: warning: ");
	va_start(ap, fmt);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fputc('\n', o->log);
}

/* The input: opened, refused if it is the output, its size known. */
static int open_input(struct conv *c)
{
	const struct rec_convert_opts *o = c->o;
	struct stat ost;

	c->is_stdin = !strcmp(o->input, "-");
	c->fd = c->is_stdin ? 0 : open(o->input, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0)
		return tcx_fail(-errno, "%s: %s", o->input, strerror(errno));
	c->is_file = !fstat(c->fd, &c->st) && S_ISREG(c->st.st_mode);
	/* writing the output would destroy the input being read */
	if (c->is_file && !stat(o->output, &ost) && ost.st_dev == c->st.st_dev &&
	    ost.st_ino == c->st.st_ino)
		return tcx_fail(-EINVAL, "%s: the output is the input file", o->output);
	return 0;
}

/*
 * What must be known before the data. Version 6 needs every cmdline and
 * option before the data: a first pass over the whole file. Version 7
 * takes them after the data: a look at the window headers and the start.
 * A pipe is read once, as it comes.
 */
static int look_first(struct conv *c)
{
	int ret;

	/* the scan's vCPUs go into a writer-less sink, copied over later */
	c->sink = rec_sink_new(NULL, &(struct rec_sink_opts){ .ncpus = 1 });
	if (!c->sink)
		return tcx_fail(-ENOMEM, "out of memory");
	if (c->is_file) {
		/* each pCPU's bytes: its region's room, and the workers' shares */
		c->bytes = calloc(REC_MAX_CPUS, sizeof(*c->bytes));
		if (!c->bytes)
			return tcx_fail(-ENOMEM, "out of memory");
		ret = rec_xentrace_cpu_bytes(c->fd, c->bytes, REC_MAX_CPUS, &c->max_cpu,
					     c->jobs);
		if (ret < 0)
			return tcx_fail(ret, "%s: %s", c->o->input, strerror(-ret));
		ret = c->v7 ? look_ahead(c, c->fd) : scan(c, c->fd, 0, true);
		if (ret < 0)
			return ret;
		if (!c->v7 && lseek(c->fd, 0, SEEK_SET) < 0)
			return tcx_fail(-errno, "%s: %s", c->o->input, strerror(errno));
	}
	c->ncpus = c->is_file ? c->max_cpu + 1 : REC_MAX_CPUS;
	if (c->ncpus < 1)
		c->ncpus = 1;
	/* a thread per pCPU with data at most; a pipe is read by one */
	if (c->is_file) {
		int n = 0;

		for (int i = 0; i < c->ncpus; i++)
			n += c->has_data[i];
		if (c->jobs > n)
			c->jobs = n;
	} else {
		c->jobs = 1;
	}
	return 0;
}

/*
 * The room of a pCPU's region, from its bytes in the capture: events take
 * about 1.5x their records' bytes (more where scheduler records add
 * switches), so that it never grows in practice. Each growth inserts a
 * range, which moves the regions behind it and, on ext4, writes back
 * everything behind it first; with several threads writing, the others
 * wait for it.
 */
static uint64_t region_room(uint64_t bytes)
{
	return (bytes * 2 + (2ull << 20) - 1) & ~((1ull << 20) - 1);
}

/*
 * A file's regions, reserved in pCPU order before any data: the layout is
 * then the same whatever order pCPUs fill their first batch in, on one
 * thread or several.
 */
static int reserve_regions(struct conv *c)
{
	for (int i = 0; i < c->ncpus; i++) {
		int ret;

		if (!c->has_data[i])
			continue;
		ret = tdat_reserve_region(c->w, i, region_room(c->bytes[i]));
		if (ret < 0)
			return tcx_fail(ret, "%s: %s", c->o->output, tcx_error());
	}
	return 0;
}

/*
 * Room per pCPU from the file size (events take about 1.5x their records'
 * bytes), so that a capture's regions rarely grow: each growth inserts
 * a range, and ext4 writes back everything behind it first. Captures under
 * 4 MiB a pCPU keep tdat's default (0).
 */
static uint64_t region_size(const struct conv *c)
{
	uint64_t n = 0, room;

	if (!c->is_file)
		return 0;
	for (int i = 0; i < c->ncpus; i++)
		n += c->has_data && c->has_data[i];
	room = n ? (uint64_t)c->st.st_size / n * 8 / 5 : 0;
	if (room <= (4ull << 20))
		return 0;
	return (room + (1 << 20) - 1) & ~((1ull << 20) - 1);
}

/* The writer and its sink, the vCPUs the scan found, what goes before the data. */
static int create_output(struct conv *c, struct rec_convert_summary *sum)
{
	const struct rec_convert_opts *o = c->o;
	struct tdat_params tp = {
		.clock = "x86-tsc",
		.version = c->version,
		.max_cpus = c->ncpus,
		.cpus = c->is_file ? c->ncpus : 0,
		.region_size = region_size(c),
		/* the close waits for the disk: let it start now */
		.writeback = true,
		.shared = c->jobs > 1,
		/*
		 * threads: past the page cache, one worker decodes while
		 * another waits for the disk (1 GB capture, -j 2: 1.7 s
		 * wall against 2.1-4.9 s buffered); one thread would wait
		 * for each write itself (3.2-3.4 s against 2.2-2.4 s)
		 */
		.direct = c->jobs > 1,
		/*
		 * threads: fewer, larger writes, as ext4 takes the inode's
		 * lock for each (and for each size patch after it), and one
		 * thread's write makes the others wait; one thread keeps
		 * the memory of the default
		 */
		.batch_bytes = c->jobs > 1 ? PAR_BATCH_BYTES : 0,
	};
	struct rec_sink_opts so = {
		.svm = o->svm,
		.svm_auto = !o->svm,
		.ncpus = c->ncpus,
		.use_switch = c->has_switch && !c->has_runstate,
	};
	bool pre = !c->v7 && c->is_file;	/* cmdlines and GUEST before the data */
	uint32_t *vcpus = NULL;
	size_t nvcpus = 0;
	int ret;

	c->w = tdat_open(o->output, &tp);
	if (!c->w)
		return tcx_fail(errno ? -errno : -EIO, "%s: %s", o->output, tcx_error());
	c->created = true;
	if (c->amd_seen && !o->svm) {
		so.svm = true;
		sum->svm_detected = true;
		if (o->log)
			fprintf(o->log, "trace-cmd-xen convert: exit reasons only AMD has seen: "
				"naming pre-4.19 VMEXIT reasons as SVM (as --svm)\n");
	}
	c->out = rec_sink_new(c->w, &so);
	if (!c->out)
		return tcx_fail(-ENOMEM, "out of memory");
	ret = rec_sink_vcpus(c->sink, &vcpus, &nvcpus);
	for (size_t i = 0; !ret && i < nvcpus; i++)
		ret = rec_sink_note_vcpu(c->out, vcpus[i] >> 16, vcpus[i] & 0xffff);
	free(vcpus);
	if (!ret)
		ret = rec_sink_add_formats(c->w);
	if (!ret && pre)
		ret = rec_sink_add_cmdlines(c->out);
	if (!ret)
		ret = tdat_set_tsc2nsec(c->w, sum->mult, sum->shift, 0);
	if (!ret)
		ret = tdat_set_traceid(c->w, REC_HOST_TRACEID);
	if (!ret)
		ret = tdat_set_uname(c->w, "Xen hypervisor xentrace");
	if (!ret && pre)
		ret = rec_sink_add_guests(c->out);
	if (!ret)
		ret = tdat_start_data(c->w);
	if (ret < 0)
		return tcx_fail(ret, "%s: %s", o->output, tcx_error());
	c->so = so;
	return c->is_file ? reserve_regions(c) : 0;
}

/*
 * The records, each pCPU's in its own order, not merged across pCPUs: a
 * trace.dat keeps one buffer per CPU and its readers merge them by time,
 * and what the sink writes for a record depends only on its pCPU's
 * records. Returns the reader's result (-EBADMSG: a corrupt window, what
 * came before it is written) or the sink's error.
 */
static int convert_records(struct conv *c, struct rec_convert_summary *sum)
{
	const struct rec_convert_opts *o = c->o;
	struct rec_stream *s;
	int rret, ret;

	if (c->jobs > 1) {
		struct rec_convert_par a = {
			.fd = c->fd, .input = o->input,
			.output = o->output, .bytes = c->bytes, .jobs = c->jobs, .w = c->w,
			.so = c->so, .out = c->out, .progress = o->progress ? progress : NULL,
			.pctx = (void *)o,
		};

		ret = rec_convert_records_par(&a, sum, &c->kst);
		if (o->progress && sum->read.bytes >= (64u << 20))
			fputc('\n', o->log);
		return ret;
	}
	s = rec_stream_new_batched(&(struct rec_stream_params){ .max_cpus = c->ncpus,
								.per_cpu = true },
				   rec_sink_emit_batch, c->out);
	if (!s)
		return tcx_fail(-ENOMEM, "out of memory");
	rec_stream_set_raw(s, rec_sink_emit_raw, rec_sink_emit);
	rret = rec_read_xentrace(c->fd, s, &sum->read, o->progress ? progress : NULL, (void *)o);
	rec_stream_finish(s);
	rec_stream_get_stats(s, &sum->stream);
	rec_stream_free(s);
	if (o->progress && sum->read.bytes >= (64u << 20))
		fputc('\n', o->log);
	rec_sink_get_stats(c->out, &c->kst);
	ret = rec_sink_error(c->out);
	if (ret)
		return tcx_fail(ret, "%s: %s", o->output, tcx_error());
	if (rret < 0 && rret != -EBADMSG)
		tcx_fail(rret, "%s: %s", o->input, sum->read.msg);
	return rret < 0 ? rret : 0;
}

/* After the data: v7's sections, the warnings, the file closed, the summary. */
static int finish_output(struct conv *c, struct rec_convert_summary *sum)
{
	const struct rec_convert_opts *o = c->o;
	const struct rec_sink_stats *k = &c->kst;
	int ret = 0;

	if (c->v7) {
		/* every vCPU the records named, in the sections after the data */
		ret = rec_sink_add_cmdlines(c->out);
		if (!ret)
			ret = rec_sink_add_guests(c->out);
		if (ret < 0)
			return tcx_fail(ret, "%s: %s", o->output, tcx_error());
	} else if (!c->is_file) {
		warn(o, "a version 6 file from a pipe gets no GUEST options and names tasks "
		     "by sched_switch only, not in cmdlines");
	}
	if (k->svm_switched) {
		sum->svm_detected = true;
		warn(o, "exit reasons only AMD has appeared after the start of the capture: "
		     "later pre-4.19 VMEXIT reasons are named as SVM, the %" PRIu64
		     " before as VMX (convert again with --svm)", k->vmx_before_svm);
	}
	if (sum->read.truncated)
		warn(o, "%s: %s", o->input, sum->read.msg);
	if (sum->stream.cut_bytes)
		warn(o, "%s: %" PRIu64 " bytes of records cut at a window end were dropped",
		     o->input, sum->stream.cut_bytes);
	if (sum->stream.no_tsc_dropped)
		warn(o, "%s: %" PRIu64 " records without a TSC were dropped: their pCPU had "
		     "no TSC yet and already held %d such records waiting for one",
		     o->input, sum->stream.no_tsc_dropped, REC_NO_TSC_HOLD);
	ret = tdat_close(c->w);
	c->w = NULL;
	if (ret < 0)
		return tcx_fail(ret, "%s: closing failed: %s", o->output, tcx_error());
	memcpy(sum->classes, k->classes, sizeof(sum->classes));
	sum->unknown = k->unknown;
	sum->switches = k->switches;
	sum->events = k->events;
	sum->ncpus = sum->stream.max_cpu + 1;
	return rec_sink_domains(c->out, &sum->domains, &sum->ndomains, &sum->nvcpus);
}

static void conv_free(struct conv *c, int ret)
{
	char msg[TCX_ERROR_MAX];

	/* closing a failed writer fails again: keep the first message */
	snprintf(msg, sizeof(msg), "%s", tcx_error());
	if (c->w && tdat_close(c->w) && ret < 0)
		tcx_fail(ret, "%s", msg);
	/* a failed conversion leaves no half file behind (a corrupt input
	 * keeps what came before the bad window: that file is complete) */
	if (c->created && ret < 0 && ret != -EBADMSG)
		unlink(c->o->output);
	rec_sink_free(c->out);
	rec_sink_free(c->sink);
	free(c->has_data);
	free(c->bytes);
	if (!c->is_stdin && c->fd >= 0)
		close(c->fd);
}

/* One conversion on up to @jobs threads. */
static int convert(const struct rec_convert_opts *o, struct rec_convert_summary *sum, int jobs)
{
	struct conv c = { .o = o, .max_cpu = -1, .fd = -1, .jobs = jobs };
	int ret, rret = 0;

	memset(sum, 0, sizeof(*sum));
	sum->hz = o->hz ? o->hz : REC_DEFAULT_HZ;
	if (rec_tsc2nsec(sum->hz, &sum->mult, &sum->shift))
		return tcx_fail(-EINVAL, "cannot convert %" PRIu64 " Hz", sum->hz);
	c.version = o->file_version ? o->file_version : 7;
	c.v7 = c.version == 7;
	ret = open_input(&c);
	if (!ret)
		ret = look_first(&c);
	if (!ret)
		ret = create_output(&c, sum);
	if (!ret) {
		rret = convert_records(&c, sum);
		ret = rret == -EBADMSG ? 0 : rret;
	}
	if (!ret)
		ret = finish_output(&c, sum);
	if (!ret && rret == -EBADMSG)
		ret = tcx_fail(rret, "%s: %s (what came before is in %s)", o->input,
			       sum->read.msg, o->output);
	conv_free(&c, ret);
	return ret;
}

int rec_convert(const struct rec_convert_opts *o, struct rec_convert_summary *sum)
{
	int ret = convert(o, sum, o->jobs > 1 ? o->jobs : 1);

	/*
	 * AMD exit reasons first seen past the look-ahead turn SVM names on
	 * from that record on, in the capture's order across pCPUs, which
	 * workers do not share: once more on one thread.
	 */
	if (ret == -EAGAIN) {
		rec_convert_summary_free(sum);
		ret = convert(o, sum, 1);
	}
	return ret;
}

/* ---- summaries ---- */

static double span_s(const struct rec_convert_summary *s)
{
	if (s->stream.last_tsc <= s->stream.first_tsc)
		return 0;
	return (double)(s->stream.last_tsc - s->stream.first_tsc) / (double)s->hz;
}

void rec_convert_summary_print(const struct rec_convert_summary *s, FILE *f)
{
	fprintf(f, "records     %" PRIu64 " (", s->stream.records);
	for (int i = 0; i < REC_NR_CLASSES; i++)
		fprintf(f, "%s%s %" PRIu64, i ? ", " : "", rec_class_name(i), s->classes[i]);
	fprintf(f, ")\n");
	fprintf(f, "unknown     %" PRIu64 " records written as xen/unknown\n", s->unknown);
	fprintf(f, "events      %" PRIu64 " written, %" PRIu64 " of them sched_switch\n",
		s->events, s->switches);
	fprintf(f, "lost        %" PRIu64 " records lost by Xen (%" PRIu64 " LOST_RECORDS)\n",
		s->stream.lost, s->stream.lost_records);
	fprintf(f, "skew        %" PRIu64 " records older than their pCPU's previous one "
		"(max %" PRIu64 " ticks), %" PRIu64 " emitted late\n",
		s->stream.skew, s->stream.max_skew, s->stream.late);
	if (s->stream.no_tsc_dropped)
		fprintf(f, "no TSC      %" PRIu64 " records dropped: before their pCPU's first TSC, "
			"past the %d held\n", s->stream.no_tsc_dropped, REC_NO_TSC_HOLD);
	if (s->read.truncated || s->stream.cut_bytes)
		fprintf(f, "truncated   %" PRIu64 " bytes missing at the end, %" PRIu64
			" bytes of cut records\n", s->read.truncated, s->stream.cut_bytes);
	fprintf(f, "pCPUs       %d\n", s->stream.cpus);
	fprintf(f, "domains     %u:", s->ndomains);
	for (uint32_t i = 0; i < s->ndomains; i++)
		fprintf(f, " d%u (%u vCPU%s)", s->domains[i].dom, s->domains[i].nvcpus,
			s->domains[i].nvcpus == 1 ? "" : "s");
	fprintf(f, "\nvCPUs       %u\n", s->nvcpus);
	fprintf(f, "time span   %.9f s (TSC %" PRIu64 " .. %" PRIu64 " at %" PRIu64 " Hz)\n",
		span_s(s), s->stream.first_tsc, s->stream.last_tsc, s->hz);
}

void rec_convert_summary_json(const struct rec_convert_summary *s, FILE *f)
{
	fprintf(f, "{\n  \"records\": %" PRIu64 ",\n  \"classes\": {", s->stream.records);
	for (int i = 0; i < REC_NR_CLASSES; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", rec_class_name(i), s->classes[i]);
	fprintf(f, "},\n  \"unknown\": %" PRIu64 ",\n", s->unknown);
	fprintf(f, "  \"events\": %" PRIu64 ",\n  \"sched_switch\": %" PRIu64 ",\n",
		s->events, s->switches);
	fprintf(f, "  \"lost\": %" PRIu64 ",\n  \"lost_records\": %" PRIu64 ",\n",
		s->stream.lost, s->stream.lost_records);
	fprintf(f, "  \"skew\": %" PRIu64 ",\n  \"max_skew_ticks\": %" PRIu64
		",\n  \"late\": %" PRIu64 ",\n", s->stream.skew, s->stream.max_skew, s->stream.late);
	fprintf(f, "  \"no_tsc\": %" PRIu64 ",\n  \"no_tsc_dropped\": %" PRIu64
		",\n  \"fillers\": %" PRIu64 ",\n",
		s->stream.no_tsc, s->stream.no_tsc_dropped, s->stream.fillers);
	fprintf(f, "  \"truncated_bytes\": %" PRIu64 ",\n  \"cut_bytes\": %" PRIu64 ",\n",
		s->read.truncated, s->stream.cut_bytes);
	fprintf(f, "  \"bytes\": %" PRIu64 ",\n  \"windows\": %" PRIu64 ",\n",
		s->read.bytes, s->read.windows);
	fprintf(f, "  \"pcpus\": %d,\n  \"domains\": [", s->stream.cpus);
	for (uint32_t i = 0; i < s->ndomains; i++)
		fprintf(f, "%s{\"dom\": %u, \"vcpus\": %u, \"max_vcpu\": %u, \"traceid\": %" PRIu64 "}",
			i ? ", " : "", s->domains[i].dom, s->domains[i].nvcpus,
			s->domains[i].max_vcpu, rec_guest_traceid(s->domains[i].dom));
	fprintf(f, "],\n  \"vcpus\": %u,\n", s->nvcpus);
	fprintf(f, "  \"first_tsc\": %" PRIu64 ",\n  \"last_tsc\": %" PRIu64 ",\n",
		s->stream.first_tsc, s->stream.last_tsc);
	fprintf(f, "  \"svm_detected\": %s,\n", s->svm_detected ? "true" : "false");
	fprintf(f, "  \"span_s\": %.9f,\n  \"hz\": %" PRIu64 ",\n  \"tsc2nsec_mult\": %u,\n"
		"  \"tsc2nsec_shift\": %u\n}\n", span_s(s), s->hz, s->mult, s->shift);
}

void rec_convert_summary_free(struct rec_convert_summary *s)
{
	free(s->domains);
	s->domains = NULL;
}
