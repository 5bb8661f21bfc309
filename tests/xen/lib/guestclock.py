"""Host-side checks of a guest file's clock after `record --xen -A` with
time sync (used by the scenarios' check scripts).

check() prints unnumbered TAP lines through the caller's ok(): the guest's
time sync summary, the TIME_SHIFT of its file, and the proof that counts:
in the stock `trace-cmd report -t -i trace.dat -i trace-GUEST.dat` every
guest event on vCPU i lies inside a run of the pseudo task d<domid>v<i> of
trace.dat (its sched_switch records), or within the bound plus 1 us of one.
A guest kernel stamps an event only while its vCPU runs, so a wrong offset
(or scale) puts events outside.
"""
import json
import os
import re
import subprocess

_SWITCH = re.compile(r"^\s*(?:trace\.dat:\s+)?\S.*?\[(\d+)\]\s+(\d+)\.(\d+):\s+sched_switch:\s+"
                     r"(\S+?):-?\d+ .*==> (\S+?):-?\d+ ")


def _ns(sec, frac):
    return int(sec) * 10**9 + int(frac.ljust(9, "0")[:9])


def host_runs(text, domid, vcpu):
    """Run intervals [start, end] in ns (None: open) of d<domid>v<vcpu> in
    the sched_switch lines of a `trace-cmd report -t` text of trace.dat."""
    name = "d%dv%d" % (domid, vcpu)
    runs, cur, seen = [], {}, set()
    for line in text.splitlines():
        m = _SWITCH.match(line)
        if not m:
            continue
        cpu, ns = int(m.group(1)), _ns(m.group(2), m.group(3))
        prev, nxt = m.group(4), m.group(5)
        if cpu not in seen:
            seen.add(cpu)
            if prev == name:	# running since before the capture
                runs.append([None, ns])
        if prev == name and cpu in cur:
            runs.append([cur.pop(cpu), ns])
        if nxt == name:
            cur[cpu] = ns
    runs += [[s, None] for s in cur.values()]
    return runs


def _dump(path):
    return subprocess.run(["trace-cmd", "dump", "--options", "-i", path],
                          capture_output=True, text=True, errors="replace").stdout


def check(ok, out, g, domid, vcpus, s, host_text, pv, min_samples=3):
    """Judge guest @g (domain @domid, @vcpus vCPUs) whose summary JSON
    object is @s; @host_text is `trace-cmd report -t -i trace.dat`; @pv:
    the offset must be 0, confirmed; else measured from rounds."""
    t = s.get("tsync") or {}
    note = str(t.get("note"))
    print("# %s: tsync %s" % (g, json.dumps(t)))
    ok(t.get("protocol") == "xen" and t.get("time_shift") is True
       and t.get("samples", 0) >= min_samples,
       "%s: time sync: protocol %s, TIME_SHIFT %s, %s samples" %
       (g, t.get("protocol"), t.get("time_shift"), t.get("samples")), json.dumps(t, indent=1))
    if pv:
        ok("offset 0 confirmed" in note and t.get("rounds", 0) > 0,
           "%s: offset 0 confirmed from %s page fault rounds in the hypervisor's records: %s"
           % (g, t.get("rounds"), note), note)
    else:
        ok(t.get("rounds", 0) > 0 and isinstance(t.get("bound_ns"), int) and t["bound_ns"] >= 0,
           "%s: offset measured from %s cpuid rounds in the hypervisor's records, bound %s ns"
           % (g, t.get("rounds"), t.get("bound_ns")), note)
    f = "trace-%s.dat" % g
    gopts = _dump(os.path.join(out, f))
    m = re.search(r"Option TimeShift.*?\n(0x[0-9A-Fa-f]+) \[peer", gopts, re.S)
    peer = int(m.group(1), 16) if m else None
    hid = re.search(r"Option TRACEID.*\n(0x[0-9A-Fa-f]+)", _dump(os.path.join(out, "trace.dat")))
    hid = int(hid.group(1), 16) if hid else None
    ok(peer is not None and peer == hid,
       "%s: TIME_SHIFT names trace.dat's trace id as its peer (%s)" %
       (f, "0x%X" % peer if peer is not None else None),
       gopts[gopts.find("Option TimeShift"):][:800] if "TimeShift" in gopts else gopts[:800])

    runs = {i: host_runs(host_text, domid, i) for i in range(vcpus)}
    slack = max(t.get("bound_ns") or 0, 0) + 1000
    r = subprocess.run(["trace-cmd", "report", "-t", "-i", os.path.join(out, "trace.dat"),
                        "-i", os.path.join(out, f)],
                       capture_output=True, text=True, errors="replace")
    pat = re.compile(r"^\s*%s:\s+.*?\[(\d+)\]\s+(\d+)\.(\d+):" % re.escape(f))
    n = outside = far = worst = 0
    for line in r.stdout.splitlines():
        m = pat.match(line)
        if not m:
            continue
        cpu, ns = int(m.group(1)), _ns(m.group(2), m.group(3))
        best = None
        for a, b in runs.get(cpu, []):
            d = (a - ns) if a is not None and ns < a else (ns - b) if b is not None and ns > b else 0
            best = d if best is None or d < best else best
        best = 10**18 if best is None else best
        n += 1
        outside += best > 0
        far += best > slack
        worst = max(worst, best)
    print("# %s: %d guest events on the host's time line; %d outside a run of their vCPU, "
          "%d by more than %d ns; worst %d ns; runs per vCPU %s" %
          (g, n, outside, far, slack, worst, {i: len(v) for i, v in runs.items()}))
    ok(r.returncode == 0 and n > 0 and n == s.get("events") and far == 0,
       "%s: each of its %d events lies in a run of its vCPU in trace.dat, within %d ns "
       "(%d outside at all, worst %d ns)" % (g, n, slack, outside, worst), r.stderr[:1000])


def main(argv):
    """guestclock.py DIR GUEST VCPUS pv|hvm: the record -A run in DIR
    (trace.dat, trace-GUEST.dat, summary.json) judged as check() does."""
    if len(argv) != 5 or argv[4] not in ("pv", "hvm"):
        print("usage: guestclock.py DIR GUEST VCPUS pv|hvm")
        return 2
    out, g, vcpus, kind = argv[1], argv[2], int(argv[3]), argv[4]
    failed = [0]

    def ok(cond, what, why=""):
        print(("ok - " if cond else "not ok - ") + what)
        if not cond:
            failed[0] += 1
            for line in str(why).splitlines()[:30]:
                print("# " + line)
        return cond

    try:
        summ = json.load(open(os.path.join(out, "summary.json")))
    except (OSError, ValueError) as e:
        summ = {}
        print("# summary.json: %s" % e)
    sg = [s for s in summ.get("guests", []) if isinstance(s, dict) and s.get("name") == g]
    s = sg[0] if sg else {}
    ok(summ.get("error") == "" and s and s.get("transport") == "vchan" and s.get("cpus") == vcpus
       and s.get("events", 0) > 0 and s.get("died") is False and s.get("error") == 0,
       "record -A %s: summary without error, guest %s over vchan with %d vCPUs, %s events"
       % (g, g, vcpus, s.get("events")), json.dumps(summ, indent=1)[:2000])
    host = subprocess.run(["trace-cmd", "report", "-t", "-i", os.path.join(out, "trace.dat")],
                          capture_output=True, text=True, errors="replace").stdout
    check(ok, out, g, int(s.get("domid", -1)), vcpus, s, host, pv=kind == "pv")
    return 1 if failed[0] else 0


if __name__ == "__main__":
    import sys
    raise SystemExit(main(sys.argv))
