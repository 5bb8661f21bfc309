# dom0 side: the HVM guest boots unrecorded; record --xen (hypervisor only,
# the classes protocol xen reads) from its TSYNC WAIT until it is done.
# Then the guest's agent: record --xen -A hvm with time sync, into agent/.
. /tcx/lib.sh
set -u
id=$(guest_create /scenario/hvm.cfg) || { echo "xl create failed"; exit 1; }
echo "$id" > "$RESULTS/domid"
mark "GUEST CREATED hvm domid=$id"
guest_wait hvm '@@ TSYNC WAIT' 600 || exit 1
cat > /tmp/wait-guest.sh <<'EOS'
. /tcx/lib.sh
guest_wait hvm '@@ GUEST DONE' 600 || exit 1
guest_final_domid hvm "$1" "$RESULTS/domid" || exit 1
exit 0
EOS
mark "RECORD START"
trace-cmd-xen record --xen --no-dom0 --xen-events gen,sched,hvm,pv,guest --xen-pages 256 \
	-o /tmp/trace.dat --raw "$RESULTS/xentrace.bin" -- sh /tmp/wait-guest.sh "$id" \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
xl list > "$RESULTS/xl-list.txt"
# record -A through the agent (started after the rounds): time sync over
# the real vchan, the guest's TIME_SHIFT judged by the host's check
arc=1
id=$(cat "$RESULTS/domid")
end=$(( $(cut -d. -f1 /proc/uptime) + 300 ))
until [ "$(xenstore-read /local/domain/$id/data/trace-cmd-xen/state 2>/dev/null)" = ready ] ||
	[ "$(cut -d. -f1 /proc/uptime)" -ge $end ]; do sleep 0.5; done
mark "AGENT READY hvm domid=$id"
mkdir -p "$RESULTS/agent"
trace-cmd-xen record --xen --no-dom0 --xen-events sched --xen-pages 256 -A hvm -e sched:sched_switch \
	--guest-open-timeout 120 --guest-stop-timeout 60 \
	--duration 6 --tsync-interval 2000 -o "$RESULTS/agent/trace.dat" \
	--summary-json "$RESULTS/agent/summary.json" 2> "$RESULTS/agent/record.err"
arc=$?
cat "$RESULTS/agent/record.err"
mark "RECORD -A DONE rc=$arc"
xl destroy hvm
[ "$rc" -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ] && [ "$arc" -eq 0 ]
