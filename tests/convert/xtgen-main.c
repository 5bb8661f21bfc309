// SPDX-License-Identifier: GPL-2.0
/*
 * xtgen: write a synthetic xentrace capture and print its ground truth as
 * JSON on stdout (for the shell tests and the bench).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtgen.h"

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cpus", 1, NULL, 'c' }, { "doms", 1, NULL, 'd' }, { "vcpus", 1, NULL, 'v' },
		{ "epochs", 1, NULL, 'e' }, { "epoch-ticks", 1, NULL, 'T' }, { "seed", 1, NULL, 's' },
		{ "guest", 0, NULL, 'g' }, { "all-ids", 0, NULL, 'a' }, { "lost", 1, NULL, 'l' },
		{ "skew", 1, NULL, 'k' }, { "late-domain", 0, NULL, 'L' }, { "svm", 0, NULL, 'S' },
		{ "no-hvm", 0, NULL, 'H' }, { "no-pv", 0, NULL, 'P' }, { "ring", 1, NULL, 'r' },
		{ "events", 1, NULL, 'n' }, { "size-mb", 1, NULL, 'm' }, { "no-switch", 0, NULL, 'W' },
		{ "legacy-ids", 0, NULL, 'Y' },
		{ NULL, 0, NULL, 0 },
	};
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	const char *out = NULL;
	uint64_t size_mb = 0;
	FILE *f;
	int c, ret;

	xtgen_defaults(&p);
	while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'c': p.ncpus = atoi(optarg); break;
		case 'd': p.ndoms = atoi(optarg); break;
		case 'v': p.nvcpus = atoi(optarg); break;
		case 'e': p.epochs = strtoull(optarg, NULL, 0); break;
		case 'T': p.epoch_ticks = strtoull(optarg, NULL, 0); break;
		case 's': p.seed = atoi(optarg); break;
		case 'g': p.guest = true; break;
		case 'a': p.all_ids = true; break;
		case 'l': p.lost_every = atoi(optarg); break;
		case 'k': p.skew_every = atoi(optarg); break;
		case 'L': p.late_domain = true; break;
		case 'S': p.svm = true; break;
		case 'H': p.hvm = false; break;
		case 'P': p.pv = false; break;
		case 'r': p.ring_bytes = atoi(optarg); break;
		case 'n': p.events_per_slice = atoi(optarg); break;
		case 'm': size_mb = strtoull(optarg, NULL, 0); break;
		case 'W': p.switch_records = false; break;
		case 'Y': p.legacy_ids = true; break;
		default:
			fprintf(stderr, "usage: xtgen -o FILE [--cpus N --doms N --vcpus N --epochs N "
				"--epoch-ticks N --seed N --guest --all-ids --lost N --skew N "
				"--late-domain --svm --legacy-ids --no-hvm --no-pv --no-switch --ring BYTES "
				"--events N --size-mb MB]\n");
			return 2;
		}
	}
	if (!out || !t)
		return 2;
	if (size_mb) {
		/* measure one epoch, then size the run */
		FILE *nul = fopen("/dev/null", "w");
		struct xtgen_params q = p;

		q.epochs = 2;
		if (!nul || xtgen_write(&q, nul, t))
			return 1;
		fclose(nul);
		p.epochs = size_mb * 1048576 / (t->bytes / 2) + 1;
	}
	f = strcmp(out, "-") ? fopen(out, "w") : stdout;
	if (!f) {
		perror(out);
		return 1;
	}
	ret = xtgen_write(&p, f, t);
	if (ret || (f != stdout && fclose(f))) {
		fprintf(stderr, "xtgen: writing %s failed\n", out);
		return 1;
	}
	if (f == stdout)
		return 0;
	printf("{\"records\": %" PRIu64 ", \"fillers\": %" PRIu64 ", \"bytes\": %" PRIu64
	       ", \"lost_records\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"skew\": %" PRIu64
	       ", \"no_tsc\": %" PRIu64 ", \"switches\": %" PRIu64 ", \"vmentry\": %" PRIu64
	       ", \"vmexit\": %" PRIu64 ", \"first_tsc\": %" PRIu64 ", \"last_tsc\": %" PRIu64
	       ", \"pcpus\": %d, \"epochs\": %" PRIu64 ",\n \"classes\": [",
	       t->records, t->fillers, t->bytes, t->lost_records, t->lost, t->skew, t->no_tsc,
	       t->switches, t->vmentry, t->vmexit, t->first_tsc, t->last_tsc, t->max_cpu + 1,
	       p.epochs);
	for (int i = 0; i < 12; i++)
		printf("%s%" PRIu64, i ? ", " : "", t->per_class[i]);
	printf("],\n \"run_ticks\": {");
	for (int d = 0, first = 1; d < p.ndoms; d++)
		for (int v = 0; v < p.nvcpus; v++, first = 0)
			printf("%s\"d%dv%d\": %" PRIu64, first ? "" : ", ", d, v, t->run_ticks[d][v]);
	printf("},\n \"ids\": {");
	for (int i = 0; i < t->nids; i++)
		printf("%s\"0x%08x\": %" PRIu64, i ? ", " : "", t->ids[i], t->id_count[i]);
	printf("}}\n");
	free(t);
	return 0;
}
