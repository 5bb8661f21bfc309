// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen -A end to end on xensim: the built trace-cmd-xen binary
 * (TCX_BIN) records sim/hosts/two-guests.conf while each guest runs our
 * agent (`agent --xen`, XENSIM_DOMID) on its simulated kernel. The files
 * are read back with libtracecmd and the stock trace-cmd, the GUEST
 * entries of trace.dat are matched with the guest files' TRACEIDs, the
 * summary JSON is parsed, and the event counts are compared with the
 * simulator's ground truth (gstats):
 *  - two guests by name and by domid: files, GUEST entries, order, counts;
 *  - the guests' tracing turned off before the stop: every event the guest
 *    kernels produced is in the files;
 *  - an agent killed mid-capture: its file is valid and ends there, the
 *    summary says so, the other guest's file is complete;
 *  - errors: exit 1 (2 for usage) with a clear message, nothing on disk;
 *  - a TCP guest (agent -N, --secret-file): pids -1 in its GUEST entry; a
 *    wrong or missing secret is refused, and so are a short secret and a
 *    secret file that others can read.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>

#include "recorder-internal.h"
#include "tlib.h"

#define MAXCPU		16
#define MAXAGENTS	4

static struct tlib_sim sim;
static pid_t agents[MAXAGENTS];
static int nagents;
static char outdir[400];

/* two-guests.conf */
static const unsigned int gdom[2] = { 1, 2 }, gvcpus[2] = { 2, 1 };

static int setup(void **state)
{
	nagents = 0;
	if (tlib_sim_start(&sim, tlib_conf_path("../../sim/hosts/two-guests.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	snprintf(outdir, sizeof(outdir), "%s/out", sim.tmp);
	return mkdir(outdir, 0755);
}

static void stop_agents(void)
{
	for (int i = 0; i < nagents; i++) {
		if (agents[i] <= 0)
			continue;
		kill(agents[i], SIGKILL);
		waitpid(agents[i], NULL, 0);
		agents[i] = 0;
	}
	nagents = 0;
}

static int teardown(void **state)
{
	stop_agents();
	tlib_sim_cleanup(&sim);
	return 0;
}

/* `agent --xen` in guest @domid, advertised in xenstore when this returns. */
static pid_t start_xen_agent(unsigned int domid)
{
	/* the guests trace sched_switch only */
	pid_t pid = tlib_sim_guest(&sim, domid, "sched/sched_switch", NULL);

	if (pid < 0)
		fail_msg("the agent of domain %u does not advertise itself (see %s/agent%u.log)",
			 domid, sim.tmp, domid);
	assert_true(nagents < MAXAGENTS);
	agents[nagents++] = pid;
	return pid;
}

/* Run trace-cmd-xen with @argv (after the binary), stderr into @err. */
static int tcx_run(const char *err, ...)
{
	char *argv[48];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)tlib_tcx();
	va_start(ap, err);
	while (n < 47 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return tlib_wait(tlib_sim_spawn(&sim, argv, -1, "/dev/null", err));
}

static bool exists(const char *file)
{
	return !access(file, F_OK);
}

/* The output directory holds nothing (no trace.dat, no guest file...). */
static void assert_outdir_empty(void)
{
	assert_int_equal(tlib_dir_entries(outdir), 0);
}

/* ---- a guest file through libtracecmd ---- */

struct gread {
	uint64_t traceid;
	int cpus;			/* CPUs with a buffer (read until NULL) */
	uint64_t events[MAXCPU], total;
	uint64_t switches, prints;	/* sched_switch; print (time sync markers) */
	uint64_t idle_out;		/* sched_switch with prev_pid 0 */
	uint64_t other;			/* anything else */
	uint64_t backwards;		/* per CPU, a stamp before the previous one */
	uint64_t first, last;		/* the earliest and latest stamp */
};

static void gread_file(const char *file, int cpus, struct gread *g)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);
	struct tep_handle *tep;

	memset(g, 0, sizeof(*g));
	if (!h)
		fail_msg("libtracecmd cannot open %s", file);
	tep = tracecmd_get_tep(h);
	g->traceid = tracecmd_get_traceid(h);
	g->cpus = cpus;
	for (int c = 0; c < cpus && c < MAXCPU; c++) {
		struct tep_record *r;
		uint64_t last = 0;

		while ((r = tracecmd_read_data(h, c))) {
			struct tep_event *ev = tep_find_event_by_record(tep, r);

			if (r->ts < last)
				g->backwards++;
			last = r->ts;
			if (!g->total || r->ts < g->first)
				g->first = r->ts;
			if (r->ts > g->last)
				g->last = r->ts;
			g->events[c]++;
			g->total++;
			if (ev && !strcmp(ev->name, "sched_switch")) {
				unsigned long long v = 1;

				g->switches++;
				if (!tep_get_field_val(NULL, ev, "prev_pid", r, &v, 0) && !v)
					g->idle_out++;
			} else if (ev && !strcmp(ev->name, "print"))
				g->prints++;
			else
				g->other++;
			tracecmd_free_record(r);
		}
	}
	tracecmd_close(h);
}

/* ---- the stock trace-cmd report ---- */

struct report {
	int cpus;
	uint64_t events, switches, unknown;
};

/* room for every line of a report here, whatever the load */
static char rep_text[1 << 24];

static void report(const char *file, struct report *r)
{
	char *line, *save;
	int rc;

	memset(r, 0, sizeof(*r));
	r->cpus = -1;
	rc = tlib_capture(rep_text, sizeof(rep_text), "trace-cmd report -i '%s' 2>&1", file);
	assert_true(strlen(rep_text) < sizeof(rep_text) - 1);
	for (line = strtok_r(rep_text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *b = strchr(line, '[');
		double ts;
		int cpu;

		if (!strncmp(line, "cpus=", 5))
			r->cpus = atoi(line + 5);
		if (strstr(line, "[UNKNOWN EVENT]"))
			r->unknown++;
		/* an event: "comm-pid [cpu] secs.usecs: name: ..." */
		if (b && sscanf(b, "[%d] %lf:", &cpu, &ts) == 2) {
			r->events++;
			if (strstr(line, " sched_switch: "))
				r->switches++;
		}
	}
	if (rc)
		fail_msg("trace-cmd report -i %s: status %d", file, rc);
}

/* ---- GUEST options of trace.dat, from `trace-cmd dump --options` ---- */

struct gentry {
	char name[64];
	uint64_t traceid;
	int cpus;
	int pid[MAXCPU];
};

static int dump_guests(const char *file, struct gentry *e, int max)
{
	char *line, *save;
	int n = -1, rc;

	rc = tlib_dump_options(rep_text, sizeof(rep_text), file);
	assert_true(strlen(rep_text) < sizeof(rep_text) - 1);
	for (line = strtok_r(rep_text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		unsigned long long id;
		int a, b;

		if (strstr(line, "[Option ")) {
			/* an option other than GUEST ends the entry */
			if (strstr(line, "[Option GUEST,") && n + 1 < max)
				memset(&e[++n], 0, sizeof(e[0]));
			continue;
		}
		if (n < 0)
			continue;
		if (strstr(line, "[Guest name]") && sscanf(line, "%63s", name) == 1)
			snprintf(e[n].name, sizeof(e[n].name), "%s", name);
		else if (strstr(line, "[trace id]") && sscanf(line, "%llx", &id) == 1)
			e[n].traceid = id;
		else if (strstr(line, "[Guest CPUs]"))
			e[n].cpus = atoi(line);
		else if (strstr(line, "[guest cpu, host pid]") &&
			 sscanf(line, "%d %d", &a, &b) == 2 && a >= 0 && a < MAXCPU)
			e[n].pid[a] = b;
	}
	if (rc)
		fail_msg("trace-cmd dump --options -i %s: status %d", file, rc);
	return n + 1;
}

static const struct gentry *gentry_named(const struct gentry *e, int n, const char *name)
{
	const struct gentry *found = NULL;

	for (int i = 0; i < n; i++) {
		if (strcmp(e[i].name, name))
			continue;
		if (found)
			fail_msg("two GUEST entries named %s", name);
		found = &e[i];
	}
	return found;
}

/* ---- the summary JSON, parsed by python3's json ---- */

struct jguest {
	char name[64], transport[16], file[512], note[256];
	int cpus;
	uint64_t traceid, events, pages, lost;
	bool died;
};

struct jsum {
	char error[256];
	int ng;
	struct jguest g[4];
};

static void json_load(const char *file, struct jsum *j)
{
	char cmd[1200], line[1024], *txt = tlib_path(outdir, "json.txt");
	FILE *f;

	memset(j, 0, sizeof(*j));
	/* one guest a line: name transport cpus traceid events pages lost died file note */
	snprintf(cmd, sizeof(cmd), "python3 -c '"
		 "import json, sys\n"
		 "s = json.load(open(sys.argv[1]))\n"
		 "print(\"error\", s[\"error\"] or \"-\")\n"
		 "for g in s[\"guests\"]:\n"
		 "    print(\"guest\", g[\"name\"], g[\"transport\"], g[\"cpus\"], g[\"traceid\"],"
		 " g[\"events\"], g[\"pages\"], g[\"lost\"], int(g[\"died\"]), g[\"file\"],"
		 " g[\"note\"] or \"-\")\n"
		 "' '%s' > '%s'", file, txt);
	if (system(cmd))
		fail_msg("%s does not parse as the summary JSON", tlib_show(file));
	f = fopen(txt, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct jguest *g;
		unsigned long long id, ev, pg, lo;
		int died, off = 0;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "error ", 6)) {
			snprintf(j->error, sizeof(j->error), "%.255s",
				 strcmp(line + 6, "-") ? line + 6 : "");
			continue;
		}
		assert_true(j->ng < 4);
		g = &j->g[j->ng++];
		assert_int_equal(sscanf(line, "guest %63s %15s %d %llu %llu %llu %llu %d %511s %n",
					g->name, g->transport, &g->cpus, &id, &ev, &pg, &lo, &died,
					g->file, &off), 9);
		g->traceid = id;
		g->events = ev;
		g->pages = pg;
		g->lost = lo;
		g->died = died;
		if (off && strcmp(line + off, "-"))
			snprintf(g->note, sizeof(g->note), "%s", line + off);
	}
	fclose(f);
}

static const struct jguest *jguest_named(const struct jsum *j, const char *name)
{
	for (int i = 0; i < j->ng; i++)
		if (!strcmp(j->g[i].name, name))
			return &j->g[i];
	fail_msg("the summary JSON has no guest %s", name);
	return NULL;
}

/*
 * Everything that must hold for one Xen guest's file after a clean
 * capture: readable by libtracecmd and the stock report, its CPU count,
 * only sched_switch, each CPU in order, its TRACEID in trace.dat's GUEST
 * entry named after it with vCPU i -> rec_vcpu_pid(dom, i), and the
 * summary's counts. Returns the events per CPU in @g.
 */
static void check_xen_guest(int i, const struct gentry *ge, int nge, const struct jsum *j,
			    struct gread *g)
{
	char name[16], file[32], dname[8];
	const struct gentry *e;
	const struct jguest *jg;
	struct report r;

	snprintf(name, sizeof(name), "guest%u", gdom[i]);
	snprintf(file, sizeof(file), "trace-guest%u.dat", gdom[i]);
	snprintf(dname, sizeof(dname), "d%u", gdom[i]);

	report(tlib_path(outdir, file), &r);
	gread_file(tlib_path(outdir, file), (int)gvcpus[i], g);
	print_message("# %s: report cpus=%d, %lu events (%lu sched_switch), %lu unknown; "
		      "libtracecmd %lu sched_switch, %lu print\n", file, r.cpus,
		      (unsigned long)r.events, (unsigned long)r.switches,
		      (unsigned long)r.unknown, (unsigned long)g->switches,
		      (unsigned long)g->prints);
	assert_int_equal(r.cpus, gvcpus[i]);
	assert_int_equal(r.unknown, 0);
	assert_true(g->switches > 0);
	/* the guests trace sched_switch; time sync writes markers (print) */
	assert_int_equal(g->other, 0);
	assert_int_equal(g->backwards, 0);
	assert_int_equal(r.events, g->total);
	assert_int_equal(r.switches, g->switches);

	/* the GUEST entry of the domain names the guest, with its file's TRACEID */
	e = gentry_named(ge, nge, name);
	if (!e)
		fail_msg("trace.dat has no GUEST entry named %s", name);
	assert_null(gentry_named(ge, nge, dname));
	assert_true(e->traceid == g->traceid);
	assert_true(e->traceid != rec_guest_traceid(gdom[i]));
	assert_int_equal(e->cpus, gvcpus[i]);
	for (unsigned int v = 0; v < gvcpus[i]; v++)
		assert_int_equal(e->pid[v], rec_vcpu_pid(gdom[i], v));

	jg = jguest_named(j, name);
	assert_string_equal(jg->transport, "vchan");
	assert_int_equal(jg->cpus, gvcpus[i]);
	assert_true(jg->traceid == g->traceid);
	assert_int_equal(jg->events, g->total);
	assert_true(jg->events > 0);
	assert_int_equal(jg->lost, 0);
	assert_non_null(strstr(jg->file, file));
}

/* the same through libtracecmd's own lookup */
static void check_cpumap(const char *host, uint64_t traceid, const char *name, int n,
			 const int *want)
{
	struct tracecmd_input *h = tracecmd_open(host, 0);
	const char *gname;
	const int *pids;
	int cnt;

	assert_non_null(h);
	assert_int_equal(tracecmd_get_guest_cpumap(h, traceid, &gname, &cnt, &pids), 0);
	assert_string_equal(gname, name);
	assert_int_equal(cnt, n);
	for (int v = 0; v < n; v++)
		assert_int_equal(pids[v], want[v]);
	tracecmd_close(h);
}

/* The host's files are there and read. */
static void check_host_files(void)
{
	struct tracecmd_input *h;
	char cmd[1200];

	h = tracecmd_open(tlib_path(outdir, "trace.dat"), 0);
	assert_non_null(h);
	tracecmd_close(h);
	h = tracecmd_open(tlib_path(outdir, "trace-dom0.dat"), 0);
	assert_non_null(h);
	assert_true(tracecmd_get_traceid(h) == rec_guest_traceid(0));
	tracecmd_close(h);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i '%s' -i '%s' > /dev/null 2>&1",
		 tlib_path(outdir, "trace.dat"), tlib_path(outdir, "trace-dom0.dat"));
	assert_int_equal(system(cmd), 0);
}

/* ---- the tests ---- */

/* Every event of @file is sched_switch (dom0's file, through libtracecmd). */
static uint64_t only_switches(const char *file, uint64_t *others)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);
	struct tep_handle *tep;
	uint64_t n = 0;

	*others = 0;
	if (!h)
		fail_msg("libtracecmd cannot open %s", file);
	tep = tracecmd_get_tep(h);
	/* dom0's file has a buffer per CPU of this machine */
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF); c++) {
		struct tep_record *r;

		while ((r = tracecmd_read_data(h, (int)c))) {
			struct tep_event *ev = tep_find_event_by_record(tep, r);

			if (ev && !strcmp(ev->name, "sched_switch"))
				n++;
			else
				(*others)++;
			tracecmd_free_record(r);
		}
	}
	tracecmd_close(h);
	return n;
}

/*
 * Per-instance options in one run: dom0 -e sched:sched_switch, guest1 -e
 * sched:sched_switch, guest2 (named "web") -e sched:sched_wakeup. Each
 * agent is asked for its guest's own events after -C x86-tsc
 * --file-version 6, and each file holds those events only (time sync's
 * print markers aside); then a guest lacking its event is left out alone.
 */
static void test_own_events(void **state)
{
	char *err = tlib_path(outdir, "err"), log[600], g1[600], g2[600], d0[600];
	struct gread g;
	uint64_t others, n;
	pid_t pid;

	(void)state;
	start_xen_agent(gdom[0]);
	/* guest2's kernel makes wakeups: what its agent is asked for */
	pid = tlib_sim_guest(&sim, gdom[1], "sched/sched_wakeup", NULL);
	if (pid < 0)
		fail_msg("the agent of domain 2 does not advertise itself");
	agents[nagents++] = pid;
	snprintf(g1, sizeof(g1), "%s/trace-guest1.dat", outdir);
	snprintf(g2, sizeof(g2), "%s/trace-web.dat", outdir);
	snprintf(d0, sizeof(d0), "%s/trace-dom0.dat", outdir);
	if (tcx_run(err, "record", "--xen", "-q", "-e", "sched:sched_switch", "-A", "guest1",
		    "-e", "sched:sched_switch", "-A", "2", "--name", "web", "-e",
		    "sched:sched_wakeup", "--duration", "1.5", "-o", tlib_path(outdir, "trace.dat"),
		    NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	for (int i = 0; i < 2; i++) {
		snprintf(log, sizeof(log), "%s/agent%u.log", sim.tmp, gdom[i]);
		if (!tlib_file_has(log, i ? "peer asks for: -C x86-tsc --file-version 6 -e "
					    "sched:sched_wakeup\n"
					  : "peer asks for: -C x86-tsc --file-version 6 -e "
					    "sched:sched_switch\n"))
			fail_msg("agent %u was not asked for its own event alone, see %s", gdom[i],
				 tlib_show(log));
	}
	gread_file(g1, gvcpus[0], &g);
	print_message("# guest1: %" PRIu64 " sched_switch, %" PRIu64 " print, %" PRIu64
		      " other\n", g.switches, g.prints, g.other);
	assert_true(g.switches > 0);
	assert_int_equal(g.other, 0);
	gread_file(g2, gvcpus[1], &g);
	print_message("# web (guest2): %" PRIu64 " sched_switch, %" PRIu64 " print, %" PRIu64
		      " other\n", g.switches, g.prints, g.other);
	assert_int_equal(g.switches, 0);
	assert_true(g.other > 0);
	assert_false(exists(tlib_path(outdir, "trace-guest2.dat")));
	n = only_switches(d0, &others);
	print_message("# dom0: %" PRIu64 " sched_switch, %" PRIu64 " other\n", n, others);
	assert_int_equal(others, 0);
	check_host_files();
	/* the stock trace-cmd reads the guest file with its own name */
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "trace-cmd report -i '%s' 2>/dev/null | "
			 "grep -q sched_wakeup", g2);
		assert_int_equal(system(cmd), 0);
	}

	/* guest2 lacks the event it is given: left out, the others record */
	unlink(g1);
	unlink(g2);
	unlink(d0);
	if (tcx_run(err, "record", "--xen", "-q", "-A", "guest1", "-e", "sched:sched_switch",
		    "-A", "guest2", "-e", "nosuch:event", "--duration", "1", "-o",
		    tlib_path(outdir, "trace.dat"), NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	if (!tlib_file_has(err, "guest guest2 lacks an event") ||
	    !tlib_file_has(err, "nosuch:event") || !tlib_file_has(err, "recording without it"))
		fail_msg("no message naming guest2 and its event, see %s", tlib_show(err));
	assert_false(exists(tlib_path(outdir, "trace-guest2.dat")));
	gread_file(g1, gvcpus[0], &g);
	assert_true(g.switches > 0);
	assert_true(only_switches(d0, &others) > 0);
	stop_agents();
}

/* Two guests in one run, with their own -e and -f: each file holds what its
 * guest was given, the filter held from the first event on. */
static void test_guest_filters(void **state)
{
	char *err = tlib_path(outdir, "err"), g1[600], g2[600];
	struct gread g;

	(void)state;
	for (int i = 0; i < 2; i++)
		start_xen_agent(gdom[i]);
	snprintf(g1, sizeof(g1), "%s/trace-guest%u.dat", outdir, gdom[0]);
	snprintf(g2, sizeof(g2), "%s/trace-guest%u.dat", outdir, gdom[1]);
	if (tcx_run(err, "record", "--xen", "-q", "-e", "sched:sched_switch", "-A", "guest1",
		    "-e", "sched:sched_switch", "-f", "prev_pid>0", "-A", "guest2", "-e", "sched",
		    "--duration", "1.5", "-o", tlib_path(outdir, "trace.dat"), NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	gread_file(g1, gvcpus[0], &g);
	print_message("# guest1 (prev_pid>0): %" PRIu64 " sched_switch, %" PRIu64
		      " from idle\n", g.switches, g.idle_out);
	assert_true(g.switches > 0);
	assert_int_equal(g.idle_out, 0);
	gread_file(g2, gvcpus[1], &g);
	print_message("# guest2 (unfiltered): %" PRIu64 " sched_switch, %" PRIu64
		      " from idle\n", g.switches, g.idle_out);
	assert_true(g.idle_out > 0);
	/* the stock trace-cmd agrees (-R: the fields, not the plugin's text) */
	{
		char cmd[1400];

		snprintf(cmd, sizeof(cmd), "trace-cmd report -R -i '%s' 2>/dev/null | "
			 "grep -q 'sched_switch:.* prev_pid=[1-9]'", g1);
		assert_int_equal(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "trace-cmd report -R -i '%s' 2>/dev/null | "
			 "grep -q 'sched_switch:.* prev_pid=0 '", g1);
		assert_int_not_equal(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "trace-cmd report -R -i '%s' 2>/dev/null | "
			 "grep -q 'sched_switch:.* prev_pid=0 '", g2);
		assert_int_equal(system(cmd), 0);
	}
	stop_agents();
}

/*
 * -A guest1 -m 16: the agent's ring on the simulated kernel (buffer_size_kb
 * 16: a ring of 4 pages per vCPU that overwrites its oldest unread page)
 * is sent once tracing is off. The command writes 6000 numbered markers
 * into vCPU 0's buffer: the file holds the last ones and not the first,
 * no more than 16 KiB and a page per CPU, and the simulator's truth
 * counts what the ring overwrote.
 */
static void test_max_kb(void **state)
{
	char *err = tlib_path(outdir, "err"), *rep = tlib_path(outdir, "m.txt");
	char g1[480], cmd[1200], script[900], line[512];
	struct tlib_markers m;
	unsigned long long overrun = 0;
	long fly_max;
	FILE *f;

	start_xen_agent(gdom[0]);
	snprintf(g1, sizeof(g1), "%s/trace-guest%u.dat", outdir, gdom[0]);
	/* paced: the simulator queues 64 markers at most until a vCPU runs */
	snprintf(script, sizeof(script), "i=0; while [ $i -lt 2000 ]; do echo \"tcxm $i\"; "
		 "i=$((i+1)); [ $((i %% 16)) = 0 ] && sleep 0.01; done > "
		 "%s/dom%u/tracing/per_cpu/cpu0/trace_marker; sleep 0.3", sim.dir, gdom[0]);
	/* no sched_switch passes the filter: the newest pages are the markers' */
	if (tcx_run(err, "record", "--xen", "-q", "--no-dom0", "-A", "guest1", "-e",
		    "sched:sched_switch", "-f", "prev_pid<0", "-m", "16", "-o", tlib_path(outdir, "trace.dat"),
		    "--", "/bin/sh", "-c", script, NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	stop_agents();
	assert_int_equal(tlib_sh("trace-cmd report -i '%s' > '%s' 2>/dev/null", g1, rep), 0);
	assert_int_equal(tlib_markers(rep, &m), 0);
	fly_max = tlib_cpu_kb_max(g1);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	snprintf(cmd, sizeof(cmd), "%s/truth", sim.dir);
	f = fopen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " overrun=");

		if (!strncmp(line, "gstats domid=1 vcpu=0 ", 22) && p)
			overrun = strtoull(p + 9, NULL, 10);
	}
	fclose(f);
	print_message("# -m 16: markers %ld..%ld (%ld of 2000; the simulator stamped %d), "
		      "largest CPU %ld KiB, vCPU 0 overwrote %llu events\n", m.first, m.last, m.n,
		      tlib_truth_count(sim.dir, "marker 1 0 "), fly_max, overrun);
	assert_true(tlib_truth_count(sim.dir, "gbuffer domid=1 size_kb=16 ring_pages=4") > 0);
	assert_true(tlib_truth_count(sim.dir, "marker 1 0 ") >= 2000);
	assert_int_equal(m.last, 1999);
	assert_true(m.first > 1000);
	assert_true(m.n > 0 && m.n < 1000);
	/* the ring, the page open at the stop, and one the simulator made
	 * before it read tracing_on */
	assert_true(fly_max > 0 && fly_max <= 16 + 8);
	assert_true(overrun > 1000);
}

/* Two guests, one by name, one by domid, for 2 s. */
static void test_two_guests(void **state)
{
	char *err = tlib_path(outdir, "err"), *js = tlib_path(outdir, "sum.json"), cmd[2400];
	unsigned long m[2] = { 0 }, unknown = 99, nonmono = 99;
	uint64_t total[2] = { 0 };
	struct gentry ge[16];
	struct jsum j;
	FILE *f;
	int nge;

	for (int i = 0; i < 2; i++)
		start_xen_agent(gdom[i]);
	if (tcx_run(err, "record", "--xen", "-e", "sched:sched_switch", "-A", "guest1", "-e",
		    "sched:sched_switch", "-A", "2", "-e", "sched:sched_switch", "--duration", "2", "-o", tlib_path(outdir, "trace.dat"),
		    "--summary-json", js, NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	for (int i = 0; i < 2; i++)	/* nothing more for the simulator to count */
		assert_int_equal(tlib_sim_put(&sim, gdom[i], "tracing_on", "0\n"), 0);
	assert_true(tlib_file_has(err, "guest guest1 (domain 1): "));
	assert_true(tlib_file_has(err, "guest guest2 (domain 2): "));
	check_host_files();
	json_load(js, &j);
	assert_string_equal(j.error, "");
	assert_int_equal(j.ng, 2);
	nge = dump_guests(tlib_path(outdir, "trace.dat"), ge, 16);
	assert_non_null(gentry_named(ge, nge, "d0"));
	stop_agents();
	assert_int_equal(tlib_sim_stop(&sim), 0);

	for (int i = 0; i < 2; i++) {
		const struct jguest *jg;
		struct tlib_gstats t;
		struct gread g;
		int pids[MAXCPU];
		char name[16];

		check_xen_guest(i, ge, nge, &j, &g);
		snprintf(name, sizeof(name), "guest%u", gdom[i]);
		jg = jguest_named(&j, name);
		assert_false(jg->died);
		assert_string_equal(jg->note, "");
		for (unsigned int v = 0; v < gvcpus[i]; v++)
			pids[v] = rec_vcpu_pid(gdom[i], v);
		check_cpumap(tlib_path(outdir, "trace.dat"), g.traceid, name, (int)gvcpus[i], pids);

		/* the simulator produced at least what the file holds, CPU by CPU */
		assert_int_equal(tlib_truth_gstats(sim.dir, gdom[i], &t), 0);
		assert_int_equal(t.vcpus, gvcpus[i]);
		assert_int_equal(t.dropped, 0);
		for (unsigned int v = 0; v < gvcpus[i]; v++) {
			print_message("# %s vCPU %u: file %lu events, simulator %lu\n", name, v,
				      (unsigned long)g.events[v], (unsigned long)t.events[v]);
			assert_true(g.events[v] <= t.events[v]);
			assert_true(g.events[v] > 0);
		}
		total[i] = g.total;
	}

	/* trace-cmd merges the four files into one ordered time line */
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i '%s' -i '%s' -i '%s' -i '%s' "
		 "2>/dev/null | awk '/^trace-guest1.dat:/ {a++} /^trace-guest2.dat:/ {b++} "
		 "/UNKNOWN EVENT/ {u++} "
		 "{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+[.][0-9]+:$/) "
		 "{t = $i + 0; if (t < p) bad++; p = t; break}} "
		 "END {print a + 0, b + 0, u + 0, bad + 0}' > '%s'", tlib_path(outdir, "trace.dat"),
		 tlib_path(outdir, "trace-dom0.dat"), tlib_path(outdir, "trace-guest1.dat"), tlib_path(outdir, "trace-guest2.dat"),
		 tlib_path(outdir, "merged"));
	assert_int_equal(system(cmd), 0);
	f = fopen(tlib_path(outdir, "merged"), "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu %lu %lu", &m[0], &m[1], &unknown, &nonmono), 4);
	fclose(f);
	print_message("# merged report: guest1 %lu lines, guest2 %lu, %lu unknown, %lu out of "
		      "order\n", m[0], m[1], unknown, nonmono);
	/* every event, and the "cpus=" line */
	assert_int_equal(m[0], total[0] + 1);
	assert_int_equal(m[1], total[1] + 1);
	assert_int_equal(unknown, 0);
	assert_int_equal(nonmono, 0);
}

/*
 * -M with time sync: record adds the classes the guests' markers need and
 * no others. guest1 is HVM: HVM exits and GUEST records, not the PV class,
 * of which the simulated PV dom0 makes records (a real PV dom0 floods it:
 * every trap, page fault and hypercall of dom0 itself).
 */
static void test_mask(void **state)
{
	char *err = tlib_path(outdir, "err"), *js = tlib_path(outdir, "sum.json"), *text;
	const char *cls;
	int64_t hvm, pv;

	(void)state;
	start_xen_agent(gdom[0]);
	if (tcx_run(err, "record", "--xen", "--xen-events", "sched", "-e", "sched:sched_switch",
		    "-A", "guest1", "-e", "sched:sched_switch", "--duration", "1", "-o", tlib_path(outdir, "trace.dat"),
		    "--summary-json", js, NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	assert_int_equal(tlib_sim_put(&sim, gdom[0], "tracing_on", "0\n"), 0);
	stop_agents();
	assert_int_equal(tlib_sim_stop(&sim), 0);
	if (!tlib_file_has(err, "--xen-events 0x2f000: adding 0x8080000 for the guests (vCPU runs and time sync)"))
		fail_msg("no note of the classes added, see %s", tlib_show(err));
	/*
	 * Xen traced the PV class only until the guest's type was known
	 * (milliseconds; the simulated dom0 makes a PV record per 30 HVM
	 * ones): under 1 % of the HVM exits
	 */
	text = tlib_slurp(js, NULL);
	assert_non_null(text);
	cls = strstr(text, "\"classes\"");
	assert_non_null(cls);
	hvm = tlib_json_num(cls, "\"hvm\"");
	pv = tlib_json_num(cls, "\"pv\"");
	print_message("# classes: hvm %lld, pv %lld\n", (long long)hvm, (long long)pv);
	assert_true(hvm > 1000 && pv >= 0 && pv * 100 < hvm);
	assert_true(tlib_file_has(err, "tsync xen: "));
	free(text);
}

/*
 * The guests' tracing is turned off while recording (by the recorded
 * command), so the guest kernels produce nothing after it: the files must
 * hold every event they produced, CPU by CPU.
 */
static void test_every_event(void **state)
{
	char *err = tlib_path(outdir, "err"), *js = tlib_path(outdir, "sum.json");
	char script[1400];
	struct gentry ge[16];
	struct jsum j;
	int nge;

	for (int i = 0; i < 2; i++)
		start_xen_agent(gdom[i]);
	snprintf(script, sizeof(script),
		 "sleep 1.5; echo 0 > %s/dom1/tracing/tracing_on; "
		 "echo 0 > %s/dom2/tracing/tracing_on; sleep 1", sim.dir, sim.dir);
	if (tcx_run(err, "record", "--xen", "-q", "-A", "guest1", "-A", "guest2", "-o",
		    tlib_path(outdir, "trace.dat"), "--summary-json", js, "--", "/bin/sh", "-c", script, NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	json_load(js, &j);
	assert_int_equal(j.ng, 2);
	nge = dump_guests(tlib_path(outdir, "trace.dat"), ge, 16);
	stop_agents();
	assert_int_equal(tlib_sim_stop(&sim), 0);
	for (int i = 0; i < 2; i++) {
		struct tlib_gstats t;
		struct gread g;

		check_xen_guest(i, ge, nge, &j, &g);
		assert_int_equal(tlib_truth_gstats(sim.dir, gdom[i], &t), 0);
		assert_int_equal(t.dropped, 0);
		for (unsigned int v = 0; v < gvcpus[i]; v++) {
			print_message("# guest%u vCPU %u: file %lu events, simulator %lu\n",
				      gdom[i], v, (unsigned long)g.events[v],
				      (unsigned long)t.events[v]);
			assert_int_equal(g.events[v], t.events[v]);
		}
	}
}

/*
 * guest2's agent is SIGKILLed 1 s into a 3.5 s recording (by the recorded
 * command, so it is inside the capture whatever the load): record still
 * succeeds, guest2's file is valid and ends there, the summary says it
 * died; guest1's file has every event (its tracing is turned off before
 * the stop).
 */
static void test_agent_killed(void **state)
{
	char *err = tlib_path(outdir, "err"), *js = tlib_path(outdir, "sum.json");
	char script[1400];
	const struct jguest *jg;
	struct tlib_gstats t;
	struct gread g;
	struct report r;
	struct gentry ge[16];
	struct jsum j;
	pid_t victim;
	int nge;

	start_xen_agent(1);
	victim = start_xen_agent(2);
	snprintf(script, sizeof(script),
		 "sleep 1; kill -KILL %d; sleep 1.5; echo 0 > %s/dom1/tracing/tracing_on; "
		 "sleep 1", (int)victim, sim.dir);
	if (tcx_run(err, "record", "--xen", "-A", "guest1", "-A", "guest2", "-o",
		    tlib_path(outdir, "trace.dat"), "--summary-json", js, "--", "/bin/sh", "-c", script, NULL))
		fail_msg("record failed, see %s", tlib_show(err));
	assert_true(tlib_file_has(err, "went away"));
	json_load(js, &j);
	assert_string_equal(j.error, "");
	assert_int_equal(j.ng, 2);
	check_host_files();
	nge = dump_guests(tlib_path(outdir, "trace.dat"), ge, 16);
	stop_agents();
	assert_int_equal(tlib_sim_stop(&sim), 0);

	/* the survivor: complete */
	check_xen_guest(0, ge, nge, &j, &g);
	jg = jguest_named(&j, "guest1");
	assert_false(jg->died);
	assert_int_equal(tlib_truth_gstats(sim.dir, 1, &t), 0);
	for (unsigned int v = 0; v < gvcpus[0]; v++)
		assert_int_equal(g.events[v], t.events[v]);

	/* the dead one: valid, ends early, said so */
	jg = jguest_named(&j, "guest2");
	print_message("# guest2 died: \"%s\"\n", jg->note);
	assert_true(jg->died);
	assert_true(strlen(jg->note) > 0);
	report(tlib_path(outdir, "trace-guest2.dat"), &r);
	assert_int_equal(r.cpus, 1);
	assert_int_equal(r.unknown, 0);
	gread_file(tlib_path(outdir, "trace-guest2.dat"), 1, &g);
	assert_int_equal(g.backwards, 0);
	assert_int_equal(g.other, 0);
	assert_int_equal(g.total, r.events);
	assert_int_equal(g.total, jg->events);
	assert_true(g.total > 0);
	assert_int_equal(tlib_truth_gstats(sim.dir, 2, &t), 0);
	print_message("# guest2: file %lu events, simulator %lu\n", (unsigned long)g.total,
		      (unsigned long)t.events[0]);
	assert_true(g.total < t.events[0]);
	/* still named in trace.dat, with its file's TRACEID */
	{
		const struct gentry *e = gentry_named(ge, nge, "guest2");

		assert_non_null(e);
		assert_true(e->traceid == g.traceid);
		assert_int_equal(e->pid[0], rec_vcpu_pid(2, 0));
	}
}

/*
 * Ctrl-C stops the guests as --duration does; -o run.dat names the guest
 * file run-guest1.dat, as trace-cmd would.
 */
static void test_sigint(void **state)
{
	char *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "sum.json"), *gf = tlib_path(outdir, "run-guest1.dat");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-A", "guest1", "-o", tlib_path(outdir, "run.dat"),
			 "--summary-json", js, NULL };
	const struct jguest *jg;
	struct report r;
	struct gread g;
	struct jsum j;
	pid_t pid;

	start_xen_agent(1);
	pid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", err);
	/* the guest file exists once its metadata arrived: the capture runs */
	for (int t = 0; t < 3000 && !exists(gf); t++)
		usleep(10 * 1000);
	assert_true(exists(gf));
	sleep(1);
	kill(pid, SIGINT);
	assert_int_equal(tlib_wait(pid), 0);
	assert_true(tlib_file_has(err, "stopped by signal 2"));
	assert_true(exists(tlib_path(outdir, "run.dat")));
	assert_true(exists(tlib_path(outdir, "run-dom0.dat")));
	report(gf, &r);
	assert_int_equal(r.cpus, 2);
	assert_int_equal(r.unknown, 0);
	gread_file(gf, 2, &g);
	assert_true(g.switches > 0);
	assert_int_equal(g.total, r.events);
	assert_int_equal(g.backwards, 0);
	json_load(js, &j);
	assert_int_equal(j.ng, 1);
	jg = jguest_named(&j, "guest1");
	assert_false(jg->died);
	assert_int_equal(jg->events, g.total);
	assert_non_null(strstr(jg->file, "run-guest1.dat"));
}

/* One failing record: @rc, @msg in its stderr, nothing on disk. */
static void expect_fail(int rc, const char *msg, ...)
{
	char *argv[40], *err = tlib_path(outdir, "../err");
	va_list ap;
	int n = 0, got;

	argv[n++] = (char *)tlib_tcx();
	argv[n++] = "record";
	argv[n++] = "--xen";
	argv[n++] = "-q";
	argv[n++] = "--duration";
	argv[n++] = "1";
	argv[n++] = "-o";
	argv[n++] = tlib_path(outdir, "trace.dat");
	va_start(ap, msg);
	while (n < 39 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	got = tlib_wait(tlib_sim_spawn(&sim, argv, -1, "/dev/null", err));
	if (got != rc)
		fail_msg("record ... %s: status %d, not %d (%s)", argv[8], got, rc, tlib_show(err));
	assert_true(tlib_file_has(err, msg));
	if (rc == 2)
		assert_true(tlib_file_has(err, "usage: trace-cmd-xen record"));
	assert_outdir_empty();
}

/* guest1 runs an agent, guest2 does not (then one that was killed). */
static void test_errors(void **state)
{
	start_xen_agent(1);
	expect_fail(1, "-A nosuch: no running domain is named \"nosuch\"", "-A", "nosuch", NULL);
	expect_fail(1, "-A 9: no domain 9 is running", "-A", "9", NULL);
	expect_fail(1, "guest guest2 (domain 2) runs no agent", "-A", "2", NULL);
	expect_fail(1, "guest2", "-A", "guest2", NULL);
	/* the same guest twice, however named */
	expect_fail(1, "-A guest1: the same guest as -A guest1", "-A", "guest1", "-A", "guest1",
		    NULL);
	expect_fail(1, "-A 1: the same guest as -A guest1", "-A", "guest1", "-A", "1", NULL);
	/* the first guest opened, the second fails: no guest1 file either */
	expect_fail(1, "no running domain is named \"nosuch\"", "-A", "guest1", "-A", "nosuch",
		    NULL);
	/* usage */
	expect_fail(2, "--tsync bogus", "-A", "guest1", "--tsync", "bogus", NULL);
	expect_fail(2, "--tsync xen,bogus", "-A", "guest1", "--tsync", "xen,bogus", NULL);
	expect_fail(2, "--tsync-interval 0.5: milliseconds", "-A", "guest1", "--tsync-interval",
		    "0.5", NULL);
	expect_fail(2, "--tsync-interval abc", "-A", "guest1", "--tsync-interval", "abc",
		    NULL);
	expect_fail(2, "--secret-file", "-A", "guest1", "--secret-file", tlib_path(outdir, "../nosecret"),
		    NULL);

	/* an agent killed before the record: its advertisement stays, nobody answers */
	{
		pid_t a2 = start_xen_agent(2);

		kill(a2, SIGKILL);
		waitpid(a2, NULL, 0);
		for (int i = 0; i < nagents; i++)	/* reaped: never killed again */
			if (agents[i] == a2)
				agents[i] = 0;
		expect_fail(1, "guest guest2 (domain 2): the agent advertised in xenstore does "
			    "not answer", "-A", "guest2", NULL);
	}

	/* none of the failures above left guest1's agent busy */
	if (tcx_run(tlib_path(outdir, "../err"), "record", "--xen", "-q", "-A", "guest1", "--duration", "1",
		    "-o", tlib_path(outdir, "trace.dat"), NULL))
		fail_msg("record -A guest1 after the failures (%s)", tlib_show(tlib_path(outdir, "../err")));
	assert_true(exists(tlib_path(outdir, "trace-guest1.dat")));
}

/*
 * Our agent over TCP (`agent -N 127.0.0.1 -p PORT --secret-file F`) on
 * guest1's simulated kernel: a wrong or missing secret is refused (the
 * challenge-response), the right one records trace-127.0.0.1.dat, whose GUEST entry maps every vCPU
 * to -1 (the host cannot know which task runs them), as trace-cmd writes.
 */
static void test_tcp(void **state)
{
	char port[16], spec[48], tdir[400], log[460], *sec = tlib_path(outdir, "../secret");
	char *wrong = tlib_path(outdir, "../wrong"), *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "../sum.json");
	char *argv[] = { (char *)tlib_tcx(), "agent", "-N", "127.0.0.1", "-p", port, "--secret-file",
			 sec, "--tracing-dir", tdir, NULL };
	const struct gentry *e;
	const struct jguest *jg;
	struct gentry ge[16];
	struct report r;
	struct gread g;
	struct jsum j;
	int nge, fd, pids[2] = { -1, -1 };

	char *shortf = tlib_path(outdir, "../short"), *shared = tlib_path(outdir, "../shared");

	/* secrets are files of mode 600 holding 16 bytes or more */
	assert_int_equal(tlib_write_file(sec, "the right one, 16+ bytes\n"), 0);
	assert_int_equal(tlib_write_file(wrong, "the wrong one, 16+ bytes\n"), 0);
	assert_int_equal(tlib_write_file(shortf, "fifteen bytes..\n"), 0);
	assert_int_equal(tlib_write_file(shared, "the right one, 16+ bytes\n"), 0);
	assert_int_equal(chmod(sec, 0600) | chmod(wrong, 0600) | chmod(shortf, 0600), 0);
	assert_int_equal(chmod(shared, 0640), 0);
	assert_int_equal(tlib_sim_boot(&sim, 1, "sched/sched_switch"), 0);
	fd = tlib_free_port();
	assert_true(fd > 0);
	snprintf(port, sizeof(port), "%d", fd);
	snprintf(spec, sizeof(spec), "127.0.0.1:%s", port);
	snprintf(tdir, sizeof(tdir), "%s/dom1/tracing", sim.dir);
	snprintf(log, sizeof(log), "%s/agent-tcp.log", sim.tmp);
	/* in guest1: the agent's ptp clock is that guest's TSC, as its events' */
	agents[nagents++] = tlib_sim_spawn(&sim, argv, 1, "/dev/null", log);
	fd = tlib_connect_wait(atoi(port), 5000);
	if (fd < 0)
		fail_msg("the agent does not listen on %s (see %s)", port, log);
	close(fd);	/* a silent connection: the agent drops it */

	/* a wrong secret: the agent cannot prove it knows ours */
	expect_fail(1, "could not prove that it knows the secret", "-A", spec, "--secret-file",
		    wrong, NULL);
	expect_fail(1, "requires a secret", "-A", spec, NULL);
	expect_fail(2, "a secret must hold 16 to 256 bytes", "-A", spec, "--secret-file", shortf,
		    NULL);
	expect_fail(2, "chmod 600", "-A", spec, "--secret-file", shared, NULL);
	assert_true(tlib_file_has(err, shared));
	/* with ptp, a TCP guest's only protocol: its samples are in guest1's clock */
	if (tcx_run(err, "record", "--xen", "-A", spec, "--secret-file", sec, "--duration", "1.5",
		    "-o", tlib_path(outdir, "trace.dat"), "--summary-json", js, NULL))
		fail_msg("record -A %s failed (%s)", spec, tlib_show(err));
	assert_true(tlib_file_has(err, "guest 127.0.0.1"));
	/* the agent refused the wrong secret, and no stream of the right one */
	assert_true(tlib_file_has(log, "the host refused our proof"));
	assert_true(tlib_file_has(log, ": time sync ptp"));
	assert_int_equal(tlib_count_lines(log, "refused a time sync connection"), 0);
	assert_int_equal(tlib_count_lines(log, "refused data connection"), 0);
	check_host_files();
	report(tlib_path(outdir, "trace-127.0.0.1.dat"), &r);
	assert_int_equal(r.cpus, 2);
	assert_int_equal(r.unknown, 0);
	assert_true(r.switches > 0);
	gread_file(tlib_path(outdir, "trace-127.0.0.1.dat"), 2, &g);
	assert_int_equal(g.total, r.events);
	assert_int_equal(g.switches, r.switches);
	assert_int_equal(g.backwards, 0);
	/* shifted into the host's clock: inside the 1.5 s capture, give or take */
	{
		struct tracecmd_input *h = tracecmd_open(tlib_path(outdir, "trace.dat"), 0);
		uint64_t t0;

		assert_non_null(h);
		t0 = tracecmd_get_first_ts(h);
		tracecmd_close(h);
		if (g.first + 1000000000ULL < t0 || g.last > t0 + 5000000000ULL)
			fail_msg("guest events at [%llu, %llu] ns, the host's capture starts at %llu",
				 (unsigned long long)g.first, (unsigned long long)g.last,
				 (unsigned long long)t0);
	}

	nge = dump_guests(tlib_path(outdir, "trace.dat"), ge, 16);
	e = gentry_named(ge, nge, "127.0.0.1");
	if (!e)
		fail_msg("trace.dat has no GUEST entry named 127.0.0.1");
	assert_true(e->traceid == g.traceid);
	assert_int_equal(e->cpus, 2);
	assert_int_equal(e->pid[0], -1);
	assert_int_equal(e->pid[1], -1);
	check_cpumap(tlib_path(outdir, "trace.dat"), g.traceid, "127.0.0.1", 2, pids);
	/* the domain itself keeps its own entry: nothing says it is that guest */
	e = gentry_named(ge, nge, "d1");
	assert_non_null(e);
	assert_true(e->traceid == rec_guest_traceid(1));

	json_load(js, &j);
	assert_int_equal(j.ng, 1);
	jg = jguest_named(&j, "127.0.0.1");
	assert_string_equal(jg->transport, "tcp");
	assert_false(jg->died);
	assert_int_equal(jg->cpus, 2);
	assert_true(jg->traceid == g.traceid);
	assert_int_equal(jg->events, g.total);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_guests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_kb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	tracecmd_set_loglevel(TEP_LOG_NONE);
	if (getenv("TCX_TEST_ONLY"))
		cmocka_set_test_filter(getenv("TCX_TEST_ONLY"));
	return cmocka_run_group_tests_name("record-guests", tests, NULL, NULL);
}
