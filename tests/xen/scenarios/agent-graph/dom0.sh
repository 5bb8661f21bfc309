# dom0 side: boot one PV guest that runs trace-cmd-xen agent --xen, wait
# until it advertises state=ready in xenstore, then record it with
# per-guest options: the function_graph tracer limited to schedule().
. /tcx/lib.sh
set -u
XS=/usr/bin
g=guest1
id=$(guest_create /scenario/$g.cfg) || { echo "xl create $g failed"; exit 1; }
mark "GUEST CREATED $g domid=$id"
ready() {
	[ "$($XS/xenstore-read /local/domain/$1/data/trace-cmd-xen/state 2>/dev/null)" = ready ]
}
uptime_s() { cut -d. -f1 /proc/uptime; }
guest_wait $g '@@ AGENT STARTED' 600 || exit 1
end=$(( $(uptime_s) + 300 ))
until ready $id; do
	[ "$(uptime_s)" -lt $end ] || { echo "$g: agent never ready"; tail -n 30 "$CONSOLE_DIR/guest-$g.log"; exit 1; }
	sleep 0.2
done
mark "AGENT READY $g domid=$id"
domains_file "$RESULTS/domains.txt"
cat "$RESULTS/domains.txt"
mark "RECORD START"
# Options before -A are dom0's and the session's; those after it are the
# guest's, sent to its agent as they are. --tsync none: time sync has its
# own scenarios.
exec 3>&1
{ trace-cmd-xen record --xen --tsync none --guest-open-timeout 120 --guest-stop-timeout 60 \
	--xen-events sched -e sched:sched_switch --duration 6 \
	-o "$RESULTS/trace.dat" --summary-json "$RESULTS/summary.json" \
	-A $g -p function_graph -l schedule -l __schedule -l 'pick_next_task*' \
	-g schedule -e sched:sched_switch 2>&1 1>&3
  echo $? > /tmp/record-rc; } |
	while IFS= read -r l; do echo "[up $(cut -d' ' -f1 /proc/uptime)] $l"; done \
	> "$RESULTS/record.err"
rc=$(cat /tmp/record-rc 2>/dev/null || echo 255)
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
echo "$rc" > "$RESULTS/record-rc"
# the agent serves the next session: ready again, its tracer put back
end=$(( $(uptime_s) + 30 ))
until ready $id || [ "$(uptime_s)" -ge $end ]; do sleep 0.2; done
$XS/xenstore-ls -f /local/domain/$id/data/trace-cmd-xen > "$RESULTS/xs-$g-after.txt" 2>&1
ls -la "$RESULTS"
[ "$rc" -eq 0 ]
