#!/bin/bash
# The demonstration: a simulated Xen host (xensim, sim/hosts/two-guests.conf)
# runs dom0 and two guests; `trace-cmd-xen record --xen`, acting as dom0,
# records the hypervisor through the simulator's drop-in Xen libraries
# together with this machine's real ftrace (dom0's side), on one clock.
#
#   scripts/demo.sh [OUTDIR]      (./build.sh demo builds first)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
out=${1:-$top/demo-out}
secs=${DEMO_SECONDS:-3}
conf=$top/sim/hosts/two-guests.conf
mkdir -p "$out"
out=$(cd "$out" && pwd)
host=$(mktemp -d /tmp/tcx-demo.XXXXXX)
sim_pid=
cleanup() {
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

echo "== trace-cmd-xen record --xen, ${secs}s (hypervisor + dom0's ftrace)"
XENSIM_HOST=$host/h LD_LIBRARY_PATH=$build/sim \
	"$build/trace-cmd-xen" record --xen -e sched:sched_switch -q \
	--duration "$secs" -o "$out/trace.dat" --raw "$out/xen.bin" \
	--summary-json "$out/summary.json"

echo "== what was captured (summary.json)"
python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps(s, indent=1)[:1500])
PY

echo
echo "== trace-cmd report -i trace.dat -i trace-dom0.dat (a slice)"
trace-cmd report -i "$out/trace.dat" -i "$out/trace-dom0.dat" 2>/dev/null |
	grep -m 12 -E 'sched_switch|kvm_e' || true
echo
echo "Files in $out: trace.dat (hypervisor), trace-dom0.dat (dom0), xen.bin (xentrace format)"
echo "View:  trace-cmd report -i $out/trace.dat -i $out/trace-dom0.dat"
echo "       kernelshark $out/trace.dat -a $out/trace-dom0.dat"
echo "       xenalyze --summary $out/xen.bin"
