// SPDX-License-Identifier: GPL-2.0
/*
 * Host description: an INI-like file, [host] then one [domain NAME] per
 * domain (format in docs/xensim.md).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuid.h>

#include "tcx-util.h"
#include "xsim.h"

/* tcx_fail() with the message prefixed by "line N: "; returns @err. */
static int line_fail(int err, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int line_fail(int err, unsigned int line, const char *fmt, ...)
{
	char msg[TCX_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tcx_fail(err, "line %u: %s", line, msg);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 0);
	return errno || end == v || *trim(end) ? -EINVAL : 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
	uint64_t x;

	if (parse_u64(v, &x) || x > UINT32_MAX)
		return -EINVAL;
	*out = x;
	return 0;
}

/* Comma-separated signed values into @out; one value stands for all. */
static int parse_list(char *v, int64_t out[XSIM_MAX_VCPUS])
{
	unsigned int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;

		if (n >= XSIM_MAX_VCPUS)
			return -EINVAL;
		errno = 0;
		out[n++] = strtoll(trim(t), &end, 0);
		if (errno || *trim(end))
			return -EINVAL;
	}
	if (!n)
		return -EINVAL;
	for (unsigned int i = n; i < XSIM_MAX_VCPUS; i++)
		out[i] = out[n - 1];
	return 0;
}

static int parse_offsets(char *v, struct xsim_dom_conf *d)
{
	if (parse_list(v, d->tsc_offset))
		return -EINVAL;
	d->offset_set = true;
	return 0;
}

/* SECONDS (up to 6 decimals) in microseconds. */
static int parse_us(const char *v, uint64_t *us)
{
	uint64_t whole = 0, frac = 0;
	unsigned int digits = 0;
	const char *p = v;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > 1000000000ull)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++) {
			if (++digits > 6)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	}
	if (*p)
		return -EINVAL;
	while (digits++ < 6)
		frac *= 10;
	*us = whole * 1000000ull + frac;
	return 0;
}

/* offset_change = SECONDS:OFFSET[,OFFSET...], later than the previous one */
static int parse_change(char *v, struct xsim_dom_conf *d)
{
	struct xsim_tsc_change *c;
	char *colon = strchr(v, ':');

	if (!colon || d->nchanges >= XSIM_MAX_TSC_CHANGES)
		return -EINVAL;
	*colon = '\0';
	c = &d->change[d->nchanges];
	if (parse_us(trim(v), &c->at_us) || parse_list(colon + 1, c->offset))
		return -EINVAL;
	if (d->nchanges && c->at_us <= d->change[d->nchanges - 1].at_us)
		return -EINVAL;
	d->nchanges++;
	return 0;
}

/*
 * dom0 is this machine: the recorder learns the vendor (which decides how
 * pre-4.19 exit reasons read) from dom0's own CPUID, as on real Xen. So the
 * simulated hypervisor follows this machine unless a host file insists.
 */
static enum xsim_vendor this_machine_vendor(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid(0, &a, &b, &c, &d) &&
	    ((b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) ||	/* AuthenticAMD */
	     (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975)))	/* HygonGenuine */
		return XSIM_AMD;
	return XSIM_INTEL;
}

static int host_key(struct xsim_conf *c, const char *k, char *v)
{
	uint32_t x;

	if (!strcmp(k, "vendor")) {
		if (!strcmp(v, "auto"))
			c->vendor = this_machine_vendor();
		else if (!strcmp(v, "intel"))
			c->vendor = XSIM_INTEL;
		else if (!strcmp(v, "amd"))
			c->vendor = XSIM_AMD;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "seed"))
		return parse_u64(v, &c->seed);
	if (!strcmp(k, "migrate")) {
		if (!strcmp(v, "1") || !strcmp(v, "yes"))
			c->migrate = true;
		else if (!strcmp(v, "0") || !strcmp(v, "no"))
			c->migrate = false;
		else
			return -EINVAL;
		return 0;
	}
	if (parse_u32(v, &x))
		return -EINVAL;
	if (!strcmp(k, "pcpus")) {
		if (!x || x > XSIM_MAX_PCPUS)
			return -EINVAL;
		c->pcpus = x;
	} else if (!strcmp(k, "cpu_khz")) {
		c->cpu_khz = x;
	} else if (!strcmp(k, "slice_us")) {
		c->slice_us = x ? x : 1;
	} else if (!strcmp(k, "tick_us")) {
		c->tick_us = x ? x : 1;
	} else if (!strcmp(k, "act_lag_us")) {
		c->act_lag_us = x;
	} else if (!strcmp(k, "xwake_pct")) {
		c->xwake_pct = x > 100 ? 100 : x;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int dom_key(struct xsim_dom_conf *d, const char *k, char *v)
{
	uint32_t x;

	if (!strcmp(k, "type")) {
		if (!strcmp(v, "pv"))
			d->type = XSIM_PV;
		else if (!strcmp(v, "pvh"))
			d->type = XSIM_PVH;
		else if (!strcmp(v, "hvm"))
			d->type = XSIM_HVM;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "profile")) {
		if (!strcmp(v, "idle"))
			d->profile = XSIM_IDLE;
		else if (!strcmp(v, "mixed"))
			d->profile = XSIM_MIXED;
		else if (!strcmp(v, "busy"))
			d->profile = XSIM_BUSY;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "instance_tracers")) {
		if (!*v || strlen(v) >= sizeof(d->instance_tracers) ||
		    strspn(v, "abcdefghijklmnopqrstuvwxyz_ ") != strlen(v))
			return -EINVAL;
		snprintf(d->instance_tracers, sizeof(d->instance_tracers), "%s", v);
		return 0;
	}
	if (!strcmp(k, "tsc_offset"))
		return parse_offsets(v, d);
	if (!strcmp(k, "offset_change"))
		return parse_change(v, d);
	if (!strcmp(k, "drift_ppm")) {
		char *end;
		long ppm;

		errno = 0;
		ppm = strtol(v, &end, 0);
		if (errno || end == v || *trim(end) || ppm < -100000 || ppm > 100000)
			return -EINVAL;
		d->drift_ppm = (int32_t)ppm;
		return 0;
	}
	if (parse_u32(v, &x))
		return -EINVAL;
	if (!strcmp(k, "domid")) {
		if (x >= 0x7ff0)
			return -EINVAL;
		d->domid = x;
	} else if (!strcmp(k, "vcpus")) {
		if (!x || x > XSIM_MAX_VCPUS)
			return -EINVAL;
		d->vcpus = x;
	} else if (!strcmp(k, "tsc_mode")) {
		if (x > 2)
			return -EINVAL;
		d->tsc_mode = x;
	} else if (!strcmp(k, "gtsc_khz")) {
		d->gtsc_khz = x;
	} else if (!strcmp(k, "rate")) {
		d->rate = x;
	} else if (!strcmp(k, "run_us")) {
		d->run_us = x ? x : 1;
	} else if (!strcmp(k, "block_us")) {
		d->block_us = x ? x : 1;
	} else {
		return -EINVAL;
	}
	return 0;
}

static void defaults(struct xsim_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->pcpus = 2;
	c->vendor = this_machine_vendor();
	c->slice_us = 1000;
	c->tick_us = 1000;
	c->xwake_pct = 25;
	c->migrate = true;
	c->seed = 1;
}

static void dom_defaults(struct xsim_dom_conf *d, const char *name,
			 unsigned int idx)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->domid = idx;
	d->type = idx ? XSIM_HVM : XSIM_PV;
	d->vcpus = 1;
	d->profile = XSIM_MIXED;
	d->rate = 1000;
	d->run_us = 500;
	d->block_us = 2000;
}

static int check(struct xsim_conf *c, unsigned int line)
{
	if (!c->ndoms || c->dom[0].domid != 0)
		return line_fail(-EINVAL, line, "the first domain must be domid 0");
	for (unsigned int i = 0; i < c->ndoms; i++)
		for (unsigned int j = 0; j < i; j++)
			if (c->dom[i].domid == c->dom[j].domid ||
			    !strcmp(c->dom[i].name, c->dom[j].name))
				return line_fail(-EINVAL, line,
						 "domain %s: duplicate name or domid",
						 c->dom[i].name);
	for (unsigned int i = 0; i < c->ndoms; i++)
		if (c->dom[i].type == XSIM_PV &&
		    (c->dom[i].nchanges || c->dom[i].drift_ppm))
			return line_fail(-EINVAL, line,
					 "domain %s: a PV domain reads the host TSC (no offset_change, no drift_ppm)",
					 c->dom[i].name);
	if (c->dom[0].type == XSIM_HVM)
		return line_fail(-EINVAL, line, "dom0 cannot be HVM");
	return 0;
}

int xsim_conf_parse(const char *text, struct xsim_conf *c)
{
	char *copy = strdup(text), *save = NULL, *raw;
	struct xsim_dom_conf *d = NULL;
	unsigned int line = 0;
	int ret;

	if (!copy)
		return tcx_fail(-ENOMEM, "out of memory");
	defaults(c);
	/* strtok_r would merge blank lines and miscount; split by hand. */
	for (raw = copy; raw; raw = save) {
		char *l, *eq, *k, *v;

		save = strchr(raw, '\n');
		if (save)
			*save++ = '\0';
		line++;
		if ((l = strchr(raw, '#')))
			*l = '\0';
		l = trim(raw);
		if (!*l)
			continue;
		if (*l == '[') {
			char *e = strchr(l, ']'), *name;

			if (!e || *trim(e + 1)) {
				ret = line_fail(-EINVAL, line, "bad section");
				goto out;
			}
			*e = '\0';
			name = trim(l + 1);
			if (!strcmp(name, "host")) {
				d = NULL;
				continue;
			}
			if (strncmp(name, "domain", 6) || !isspace((unsigned char)name[6])) {
				ret = line_fail(-EINVAL, line, "unknown section %s", name);
				goto out;
			}
			if (c->ndoms >= XSIM_MAX_DOMAINS) {
				ret = line_fail(-EINVAL, line, "too many domains");
				goto out;
			}
			d = &c->dom[c->ndoms];
			dom_defaults(d, trim(name + 6), c->ndoms++);
			continue;
		}
		eq = strchr(l, '=');
		if (!eq) {
			ret = line_fail(-EINVAL, line, "expected key = value");
			goto out;
		}
		*eq = '\0';
		k = trim(l);
		v = trim(eq + 1);
		if (d ? dom_key(d, k, v) : host_key(c, k, v)) {
			ret = line_fail(-EINVAL, line, "bad %s = %s", k, v);
			goto out;
		}
	}
	ret = check(c, line);
out:
	free(copy);
	return ret;
}

int xsim_conf_load(const char *path, struct xsim_conf *c)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (!f) {
		ret = -errno;
		return tcx_fail(ret, "%s: %s", path, strerror(-ret));
	}
	text = calloc(1, 1 << 20);
	if (!text) {
		fclose(f);
		return tcx_fail(-ENOMEM, "%s: out of memory", path);
	}
	len = fread(text, 1, (1 << 20) - 1, f);
	if (ferror(f)) {
		fclose(f);
		free(text);
		return tcx_fail(-EIO, "%s: read error", path);
	}
	fclose(f);
	text[len] = '\0';
	ret = xsim_conf_parse(text, c);
	free(text);
	if (ret)
		return tcx_fail(ret, "%s: %s", path, tcx_error());
	return 0;
}

unsigned int xsim_frac_bits(enum xsim_vendor v)
{
	return v == XSIM_AMD ? 32 : 48;
}

uint64_t xsim_tsc_ratio(const struct xsim_conf *c, const struct xsim_dom_conf *d)
{
	unsigned int frac = xsim_frac_bits(c->vendor);
	unsigned __int128 r;

	if (d->type == XSIM_PV || !d->gtsc_khz || d->gtsc_khz == c->cpu_khz ||
	    !c->cpu_khz)
		return 1ull << frac;
	r = ((unsigned __int128)d->gtsc_khz << frac) / c->cpu_khz;
	return (uint64_t)r;
}

uint64_t xsim_guest_tsc(uint64_t host, uint64_t ratio, unsigned int frac,
			int64_t offset)
{
	unsigned __int128 p = (unsigned __int128)host * ratio;

	return (uint64_t)(p >> frac) + (uint64_t)offset;
}

uint64_t xsim_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint32_t xsim_measure_khz(void)
{
	uint64_t n0 = raw_ns(), t0 = xsim_rdtsc(), n1, t1;
	struct timespec d = { 0, 50 * 1000 * 1000 };

	nanosleep(&d, NULL);
	n1 = raw_ns();
	t1 = xsim_rdtsc();
	return (uint32_t)((t1 - t0) * 1000000ull / (n1 - n0));
}
