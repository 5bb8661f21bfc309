# dom0 side: boot a PV and a PVH guest that each run trace-cmd-xen agent
# --xen, wait until both advertise state=ready in xenstore, then record the
# hypervisor, dom0 and both guests (-A, over libxenvchan) for a few seconds.
. /tcx/lib.sh
set -u
XS=/usr/bin
GUESTS="pv pvh"
for g in $GUESTS; do
	id=$(guest_create /scenario/$g.cfg) || { echo "xl create $g failed"; exit 1; }
	mark "GUEST CREATED $g domid=$id"
done
# ready: the agent's advertisement, state=ready written last
ready() {
	_id=$(xl domid "$1" 2>/dev/null) || return 1
	[ "$($XS/xenstore-read /local/domain/$_id/data/trace-cmd-xen/state 2>/dev/null)" = ready ]
}
for g in $GUESTS; do
	guest_wait $g '@@ AGENT STARTED' 300 || exit 1
	n=600
	until ready $g; do
		n=$((n - 1))
		[ $n -gt 0 ] || { echo "$g: agent never ready"; tail -n 30 "$CONSOLE_DIR/guest-$g.log"; exit 1; }
		sleep 0.2
	done
	id=$(xl domid $g)
	mark "AGENT READY $g domid=$id"
	$XS/xenstore-ls -f /local/domain/$id/data/trace-cmd-xen > "$RESULTS/xs-$g-before.txt" 2>&1
done
domains_file "$RESULTS/domains.txt"
cat "$RESULTS/domains.txt"
mark "RECORD START"
trace-cmd-xen record --xen -A pv -A pvh -e sched:sched_switch --duration 6 \
	-o "$RESULTS/trace.dat" --summary-json "$RESULTS/summary.json" \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
echo "$rc" > "$RESULTS/record-rc"
# after the session each agent serves the next one: ready again
for g in $GUESTS; do
	n=50
	until ready $g || [ $n -le 0 ]; do n=$((n - 1)); sleep 0.2; done
	id=$(xl domid $g)
	$XS/xenstore-ls -f /local/domain/$id/data/trace-cmd-xen > "$RESULTS/xs-$g-after.txt" 2>&1
done
domains_file "$RESULTS/domains-after.txt"
ls -la "$RESULTS"
[ "$rc" -eq 0 ]
