#!/bin/bash
# The demonstration: a simulated Xen host (xensim, sim/hosts/two-guests.conf)
# runs dom0 and two guests, each guest running `trace-cmd-xen agent --xen`;
# `trace-cmd-xen record --xen -A guest1 -e EVENT -A guest2 -e EVENT`,
# acting as dom0, records the hypervisor through the simulator's drop-in
# Xen libraries, this machine's real ftrace (dom0's side) and both guests through their agents
# over the simulated libxenvchan, on one clock.
#
#   scripts/demo.sh [OUTDIR]      (./build.sh demo builds first)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${TCX_DEMO_BUILD:-$top/build}	# the build to run (tests: theirs)
out=${1:-$top/demo-out}
secs=${DEMO_SECONDS:-3}
conf=$top/sim/hosts/two-guests.conf
mkdir -p "$out"
out=$(cd "$out" && pwd)
host=$(mktemp -d /tmp/tcx-demo.XXXXXX)
sim_pid=
agent_pids=()
cleanup() {
	for p in "${agent_pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$sim_pid" ]; then
		kill "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	rm -rf "$host"
}
trap cleanup EXIT

# The tests and the demo read this machine's ftrace for dom0's side.
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing

echo "== simulated Xen host: $conf"
"$build/sim/xensim" run "$conf" --dir "$host/h" &
sim_pid=$!
for _ in $(seq 200); do
	[ -e "$host/h/truth" ] && break
	sleep 0.05
done

echo "== trace-cmd-xen agent --xen in guest1 (domain 1) and guest2 (domain 2)"
for d in 1 2; do
	t=$host/h/dom$d/tracing
	# the simulated guest kernel's boot script: its clock and events
	echo x86-tsc >"$t/trace_clock"
	echo 1 >"$t/events/sched/sched_switch/enable"
	echo 1 >"$t/tracing_on"
	XENSIM_HOST=$host/h XENSIM_DOMID=$d LD_LIBRARY_PATH=$build/sim \
		"$build/trace-cmd-xen" agent --xen --tracing-dir "$t" \
		2>"$host/agent$d.log" &
	agent_pids+=($!)
done
for d in 1 2; do
	for _ in $(seq 200); do
		grep -q serving "$host/agent$d.log" 2>/dev/null && break
		sleep 0.05
	done
done

echo "== trace-cmd-xen record --xen -e sched:sched_switch -A guest1 -e sched:sched_switch -A guest2 -e sched:sched_switch, ${secs}s"
XENSIM_HOST=$host/h LD_LIBRARY_PATH=$build/sim \
	"$build/trace-cmd-xen" record --xen -e sched:sched_switch \
	-A guest1 -e sched:sched_switch -A guest2 -e sched:sched_switch \
	--duration "$secs" -o "$out/trace.dat" \
	--raw "$out/xen.bin" --summary-json "$out/summary.json"

echo "== what was captured (summary.json)"
python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for k in ("hypervisor", "dom0"):
    print(k, json.dumps(s[k]))
for g in s.get("guests", []):
    print("guest", json.dumps(g))
PY

echo
echo "== trace-cmd report -i trace.dat -i trace-guest1.dat (a slice)"
trace-cmd report -i "$out/trace.dat" -i "$out/trace-guest1.dat" 2>/dev/null |
	grep -E 'sched_switch|kvm_e' | sed -n '2000,2015p' || true
echo
echo "Files in $out: trace.dat (hypervisor), trace-dom0.dat (dom0),"
echo "  trace-guest1.dat, trace-guest2.dat (the guests), xen.bin (xentrace format)"
echo "View:  trace-cmd report -i $out/trace.dat -i $out/trace-dom0.dat -i $out/trace-guest1.dat"
echo "       kernelshark $out/trace.dat -a $out/trace-dom0.dat -a $out/trace-guest1.dat"
# the host's vendor is this machine's: exit reasons are SVM codes on AMD
svm=
grep -q AuthenticAMD /proc/cpuinfo && svm=" --svm-mode"
echo "       $build/trace-cmd-xen convert --xenalyze $out/xen.bin -o $out/xen-xenalyze.bin &&"
echo "         xenalyze$svm --summary $out/xen-xenalyze.bin"
