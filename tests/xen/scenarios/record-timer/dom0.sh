# dom0 side: record --xen with the smallest buffers (2 pages a pCPU, set
# once per boot: this is the boot's first consumer) while dom0 forks a
# few hundred commands, whose page-table hypercalls Xen traces. Half a
# buffer then fills in a few ms and the drain's timer, not the VIRQ,
# keeps up with it.
. /tcx/lib.sh
set -u
mark "RECORD START"
trace-cmd-xen record --xen -q --no-dom0 --xen-pages 2 -o "$RESULTS/trace.dat" \
	--summary-json "$RESULTS/summary.json" -- \
	sh -c 'i=0; while [ $i -lt 300 ]; do ls / >/dev/null; i=$((i+1)); done' \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
echo "$rc" > "$RESULTS/record-rc"
cat "$RESULTS/summary.json"
[ "$rc" -eq 0 ] && [ -s "$RESULTS/trace.dat" ]
