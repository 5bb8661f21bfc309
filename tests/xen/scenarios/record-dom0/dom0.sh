# dom0 side: trace-cmd-xen record --xen records the hypervisor (trace.dat),
# dom0's own ftrace (trace-dom0.dat) and a xentrace-format copy (--raw)
# while its command boots a PV guest and waits for its load to finish.
. /tcx/lib.sh
set -u
cat > /tmp/boot-guest.sh <<'EOS'
. /tcx/lib.sh
id=$(guest_create /scenario/pv.cfg) || { echo "xl create failed"; exit 1; }
mark "GUEST CREATED pv domid=$id"
guest_wait pv '@@ GUEST DONE' 600 || exit 1
grep -q '@@ GUEST DONE rc=0' "$CONSOLE_DIR/guest-pv.log" || exit 1
xl list > "$RESULTS/xl-list.txt"
xl destroy pv
# the destroy's records come in too; exit with a status to pass through
exit 7
EOS
mark "RECORD START"
trace-cmd-xen record --xen -e sched:sched_switch -e irq --xen-pages 256 \
	-o "$RESULTS/trace.dat" --raw "$RESULTS/xentrace.bin" \
	--summary-json "$RESULTS/summary.json" -- sh /tmp/boot-guest.sh \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
echo "$rc" > "$RESULTS/record-rc"
# a second consumer while one runs is refused clearly
xentrace -D -e all -S 256 /tmp/xt.bin &
XT=$!
sleep 2
trace-cmd-xen record --xen -q --no-dom0 -o /tmp/second.dat --duration 1 \
	2> "$RESULTS/second.err"
echo $? > "$RESULTS/second-rc"
kill -TERM $XT
wait $XT
ls -la "$RESULTS"
# the command's status (7) passes through
[ "$rc" -eq 7 ] && [ -s "$RESULTS/trace.dat" ] && [ -s "$RESULTS/trace-dom0.dat" ]
