#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""analyze's joined view against xensim's truth (test-join.c test_xensim).

    join-truth.py TRUTH JOIN.json SUMMARY.json GUEST.txt HOST_FIRST_NS HOST_LAST_NS

TRUTH is the simulator's log (docs/xensim.md): the runs of every vCPU (`run`,
`open`, in host TSC) and the host TSC of each guest sched_switch and
sched_wakeup (`gswitch`, `gwakeup`). JOIN.json is `analyze -i trace.dat -i
trace-guest1.dat --json`, SUMMARY.json `analyze trace.dat --json` (for the
hypervisor trace's first TSC), GUEST.txt the guest file's sched records as
libtracecmd reads them (test-join.c dump_guest()), HOST_FIRST_NS and
HOST_LAST_NS the hypervisor trace's first and last record in libtracecmd's
ns. Every task's ran, on-pcpu, preempted, blocked, wakes, wait, wait-guest
and wait-xen is derived from the truth alone and compared. Exits 1 with the
differences when one is off, 3 when every figure agrees but the recording
lacks one that the comparison needs to be able to fail (no guest waits
while its vCPU ran, say: a loaded machine's timing): the caller records
again. With JOIN_TRUTH_DEBUG=FILE, each guest record's offset from the
truth and each wait go into FILE.
"""
import json
import os
import sys

# Tolerance per interval boundary, in ns. Host runstate records are exact
# (the trace keeps Xen's TSC, converted as the file says); each guest event
# is put on the host's time line by time sync, which on xensim is off by
# about a ns (its rounds are stamped by the simulator itself). Every guest
# event's own error is checked against BOUND, so a figure summed over n
# boundaries cannot be off by more than n * BOUND; BOUND is 100 times what
# the error is, and far below the figures' differences (checked at the end).
BOUND = 100


def main():
    truth, jpath, spath, gpath = sys.argv[1:5]
    hfirst, hlast = int(sys.argv[5]), int(sys.argv[6])
    khz = None
    runs = {}        # vcpu -> [(start, end or None, written, written)], host TSC
    ev = {}          # vcpu -> [(tsc, kind, a, b)], truth (emission) order
    domid = 1
    dropped = 0
    lost = []
    for line in open(truth):
        w = line.split()
        if not w:
            continue
        if w[0] == 'host':
            khz = int(dict(x.split('=') for x in w[1:])['cpu_khz'])
        elif w[0] in ('run', 'open') and int(w[1]) == domid:
            # run DOM VCPU PCPU START END WS WE, open DOM VCPU PCPU START WS
            o = w[0] == 'open'
            r = (int(w[4]), None if o else int(w[5]), w[5 if o else 6] == '1',
                 not o and w[7] == '1')
            runs.setdefault(int(w[2]), []).append(r)
            lost += [(t, line.strip()) for t, wr in ((r[0], r[2]), (r[1], r[3]))
                     if t is not None and not wr]
        elif w[0] == 'gswitch' and int(w[1]) == domid:
            ev.setdefault(int(w[2]), []).append((int(w[3]), 'switch', int(w[4]), int(w[5])))
        elif w[0] == 'gwakeup' and int(w[1]) == domid:
            ev.setdefault(int(w[2]), []).append((int(w[3]), 'wakeup', int(w[4]), None))
        elif w[0] == 'gstats':
            d = dict(x.split('=') for x in w[1:])
            if int(d['domid']) == domid:
                dropped += int(d['dropped_pages'])
    s = json.load(open(spath))
    j = json.load(open(jpath))
    first_tsc, last_tsc = s['window']['first_tsc'], s['window']['last_tsc']
    # Host TSC -> libtracecmd's ns: through the hypervisor trace's first and
    # last record, not cpu_khz, since the recorder refines the conversion
    # with clock readings at start and end (a ppm or two off the kHz figure:
    # 1-2 us over the window). Between the two, within a ns.
    rate = (hlast - hfirst) / (last_tsc - first_tsc)
    def ns(t):
        return hfirst + (t - first_tsc) * rate
    bad = []
    # Only a sanity check that the trace is the truth's host: the
    # recorder's clock readings are late by a scheduling delay at times
    # (13 ppm over a 1 s window seen on a loaded machine); a wrong rate
    # would be off by far more.
    if abs(rate * khz / 1000000 - 1) > 1e-4:
        bad.append('the hypervisor trace runs at %.3f kHz, the truth\'s host at %d'
                   % (1000000 / rate, khz))
    if dropped:
        bad.append('the guest lost %d pages: the file is not the truth\'s events' % dropped)

    # the guest file's events per CPU, and where they are in the truth
    gfile = {}
    for line in open(gpath):
        w = line.split()
        gfile.setdefault(int(w[0]), []).append(
            (int(w[1]), w[2], int(w[3]), int(w[4]) if len(w) > 4 else None))
    dbg = open(os.environ['JOIN_TRUTH_DEBUG'], 'w') if 'JOIN_TRUTH_DEBUG' in os.environ else None
    inf = {}         # vcpu -> the truth events the file holds, as (ns, kind, a, b)
    worst = 0
    for c, fe in sorted(gfile.items()):
        te = ev.get(c, [])
        best = None
        for i, t in enumerate(te):
            if (t[1], t[2], t[3]) == fe[0][1:] and abs(ns(t[0]) - fe[0][0]) <= BOUND:
                if best is None or abs(ns(t[0]) - fe[0][0]) < abs(ns(te[best][0]) - fe[0][0]):
                    best = i
        if best is None or best + len(fe) > len(te):
            bad.append('guest CPU %d: its first record %s is not in the truth' % (c, fe[0]))
            continue
        seq = [(ns(t[0]), t[1], t[2], t[3]) for t in te[best:best + len(fe)]]
        for f, t in zip(fe, seq):
            if f[1:] != t[1:] or abs(f[0] - t[0]) > BOUND:
                bad.append('guest CPU %d: record %s, the truth says %s' % (c, f, t))
                break
            worst = max(worst, abs(f[0] - t[0]))
            if dbg:
                print(c, f[0] - t[0], f[0], file=dbg)
        inf[c] = seq
    print('# guest records: %s on the truth\'s events, at most %.1f ns off'
          % (' + '.join(str(len(inf.get(c, []))) for c in sorted(gfile)), worst))
    # Each vCPU's runstate records in the trace, from the truth: a run's
    # start and end when they reached the buffer (at the trace's edges a
    # pCPU that lags may stamp a record before tracing began, which then
    # is not in the trace), and the wake a guest kick caused (its gwakeup,
    # which xensim stamps at Xen's wake). Running after a start; after an
    # end or a wake, runnable: inside a task's run or a kicked wait the vCPU
    # is never blocked, since xensim's guest switches its task out before
    # its vCPU blocks. Before the first record and after the trace's last
    # the state is unknown.
    hend = hlast
    recs = {}
    for c, r in runs.items():
        for a0, b0, ws, we in r:
            if ws:
                recs.setdefault(c, []).append((ns(a0), True))
            if we and b0 is not None:
                recs.setdefault(c, []).append((ns(b0), False))
    for d, es in inf.items():
        for e in es:
            # vCPU N's task is pid 1000 + N
            if e[1] == 'wakeup' and e[2] - 1000 in runs and e[2] - 1000 != d:
                recs.setdefault(e[2] - 1000, []).append((e[0], False))
    segs = {}
    for c, r in recs.items():
        r = sorted(x for x in r if hfirst <= x[0] <= hend)
        segs[c] = [(t, r[i + 1][0] if i + 1 < len(r) else hend, run)
                   for i, (t, run) in enumerate(r)]
    nlost = sum(1 for t, _ in lost if first_tsc <= t <= last_tsc)
    print('# runstate records of guest1 not in the trace (its edges): %d' % nlost)

    def split(c, a, b):
        """[a, b) of vCPU c: (running, runnable, unknown, boundaries)."""
        a = max(a, hfirst)
        if b <= a:
            return 0, 0, 0, 0
        on = off = 0
        nb = 2
        for s0, e0, run in segs.get(c, []):
            lo, hi = max(s0, a), min(e0, b)
            if hi > lo:
                if run:
                    on += hi - lo
                else:
                    off += hi - lo
            nb += a < s0 < b
        return on, off, (b - a) - on - off, nb

    exp = {}
    def task(pid):
        return exp.setdefault(pid, dict(ran=0, on=0, pre=0, unk=0, nb_run=0, wakes=0,
                                        wait=0, wg=0, wx=0, wo=0, nb_wait=0))
    merged = sorted((e[0], c, i, e) for c, es in inf.items() for i, e in enumerate(es))
    cur = {}         # guest CPU -> (pid, since)
    wk = {}          # pid -> its first wake since its last switch in
    for t, c, _, e in merged:
        if e[1] == 'wakeup':
            # the first wake since it last ran; none while it runs
            if all(p[0] != e[2] for p in cur.values()):
                wk.setdefault(e[2], t)
            continue
        prev, nxt = e[2], e[3]
        if prev > 0 and c in cur and cur[c][0] == prev:
            x = task(prev)
            on, pre, unk, nb = split(c, cur[c][1], t)
            x['on'] += on
            x['pre'] += pre
            x['unk'] += unk
            x['ran'] += on + pre + unk
            x['nb_run'] += nb
        cur[c] = (nxt, t)
        if nxt > 0 and nxt in wk:
            w = wk.pop(nxt)
            x = task(nxt)
            on, xen, unk, nb = split(c, w, t)
            if dbg and t > w:
                print('wait', nxt, c, w, t, on, xen, unk, file=dbg)
            if t >= hfirst:
                x['wakes'] += 1
                x['wait'] += on + xen + unk
                x['wg'] += on
                x['wx'] += xen
                x['wo'] += unk
                x['nb_wait'] += nb

    got = {t['pid']: t for t in j['tasks']}
    if sorted(got) != sorted(exp):
        bad.append('tasks %s, the truth has %s' % (sorted(got), sorted(exp)))
    figs = [('ran_ns', 'ran', 'nb_run'), ('on_pcpu_ns', 'on', 'nb_run'),
            ('preempted_ns', 'pre', 'nb_run'), ('unknown_ns', 'unk', 'nb_run'),
            ('wait_ns', 'wait', 'nb_wait'), ('wait_guest_ns', 'wg', 'nb_wait'),
            ('wait_xen_ns', 'wx', 'nb_wait'), ('wait_other_ns', 'wo', 'nb_wait')]
    maxdiff = 0
    for pid in sorted(exp):
        x, g = exp[pid], got.get(pid)
        if g is None:
            continue
        print('# pid %d: %s' % (pid, ', '.join(
            '%s %d (truth %.0f)' % (k, g[k], x[e]) for k, e, _ in figs)))
        print('# pid %d: wakes %d (truth %d), blocked %d (truth 0), in-exits %d'
              % (pid, g['wakes'], x['wakes'], g['blocked_ns'], g['in_exit_ns']))
        for k, e, n in figs:
            tol = BOUND * x[n]
            maxdiff = max(maxdiff, abs(g[k] - x[e]))
            if abs(g[k] - x[e]) > tol:
                bad.append('pid %d %s: %d, the truth says %.0f (tolerance %d ns, %d '
                           'boundaries)' % (pid, k, g[k], x[e], tol, x[n]))
        if g['wakes'] != x['wakes']:
            bad.append('pid %d wakes: %d, the truth says %d' % (pid, g['wakes'], x['wakes']))
        if g['blocked_ns'] != 0:
            bad.append('pid %d blocked_ns: %d, the truth says 0' % (pid, g['blocked_ns']))
        if not 0 <= g['in_exit_ns'] <= g['on_pcpu_ns']:
            bad.append('pid %d: in_exit_ns %d not within on_pcpu_ns' % (pid, g['in_exit_ns']))
    # The comparison must be able to fail: every figure it relies on is
    # there, beyond its tolerance, and an expectation with on-pcpu and
    # preempted swapped would be outside it (join-rival.conf makes them
    # about 65 % and 35 % of the tasks' runs).
    tot = {k: sum(x[k] for x in exp.values())
           for k in ('on', 'pre', 'wakes', 'wx', 'wg', 'nb_run', 'nb_wait')}
    thin = []        # what this recording cannot check (not a difference)
    if tot['wakes'] <= 0:
        thin.append('the truth has no wakes: this recording cannot check them')
    for k, n in (('on', 'nb_run'), ('pre', 'nb_run'), ('wg', 'nb_wait'), ('wx', 'nb_wait')):
        if tot[k] <= BOUND * tot[n]:
            thin.append('the truth\'s %s is %.0f ns, within the tolerance: this recording '
                        'cannot check it' % (k, tot[k]))
    if abs(tot['on'] - tot['pre']) <= BOUND * tot['nb_run']:
        thin.append('on-pcpu and preempted differ by %.0f ns, within the tolerance: this '
                    'recording cannot tell them apart' % abs(tot['on'] - tot['pre']))
    ran = sum(v['running']['ns'] for d in s['domains'] if d['dom'] == domid
              for v in d['vcpus'])
    if sum(t['on_pcpu_ns'] for t in j['tasks']) > ran * 1.001 + 1000:
        bad.append('tasks on a pCPU longer than the vCPUs ran (%d ns)' % ran)
    print('# truth totals: on-pcpu %.0f, preempted %.0f, wakes %d, wait-xen %.0f, '
          'wait-guest %.0f ns' % (tot['on'], tot['pre'], tot['wakes'], tot['wx'], tot['wg']))
    print('# largest difference from the truth: %.0f ns (tolerance %d ns per boundary)'
          % (maxdiff, BOUND))
    for b in bad:
        print('FAIL: ' + b)
    for b in thin:
        print('CANNOT CHECK: ' + b)
    return 1 if bad else 3 if thin else 0


if __name__ == '__main__':
    sys.exit(main())
