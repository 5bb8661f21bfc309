# dom0 side: boot two PV guests that each run trace-cmd-xen agent
# --xen, wait until both advertise state=ready in xenstore, then record the
# hypervisor, dom0 and both guests (-A, over libxenvchan) for a few seconds.
. /tcx/lib.sh
set -u
XS=/usr/bin
GUESTS="pv pv1"
for g in $GUESTS; do
	id=$(guest_create /scenario/$g.cfg) || { echo "xl create $g failed"; exit 1; }
	mark "GUEST CREATED $g domid=$id"
done
# ready: the agent's advertisement, state=ready written last (xl costs dom0
# a good fraction of a second under TCG: the domid is asked once)
ready() {
	[ "$($XS/xenstore-read /local/domain/$1/data/trace-cmd-xen/state 2>/dev/null)" = ready ]
}
uptime_s() { cut -d. -f1 /proc/uptime; }
# under TCG on a shared host (load 8 on 2 cores) a guest took 2.5-5.5 min
# from xl create to a ready agent
for g in $GUESTS; do
	guest_wait $g '@@ AGENT STARTED' 600 || exit 1
	id=$(xl domid $g)
	mark "AGENT STARTED $g domid=$id"
	end=$(( $(uptime_s) + 300 ))
	until ready $id; do
		[ "$(uptime_s)" -lt $end ] || { echo "$g: agent never ready"; tail -n 30 "$CONSOLE_DIR/guest-$g.log"; exit 1; }
		sleep 0.2
	done
	mark "AGENT READY $g domid=$id"
	$XS/xenstore-ls -f /local/domain/$id/data/trace-cmd-xen > "$RESULTS/xs-$g-before.txt" 2>&1
done
domains_file "$RESULTS/domains.txt"
cat "$RESULTS/domains.txt"
# timings on the host-stamped console: each guest file appears when its open
# reaches the metadata, "recording" once every guest is open
watch_files() {
	for f in trace-pv.dat trace-pv1.dat; do
		until [ -e "$RESULTS/$f" ]; do sleep 0.1; done
		mark "FILE $f"
	done
	until grep -q 'recording' "$RESULTS/record.err" 2>/dev/null; do sleep 0.1; done
	mark "RECORDING (every guest open)"
}
watch_files &
WATCH=$!
mark "RECORD START"
# A record that has not ended 150 s after "recording" (6 s of capture) is
# stuck: its threads' names, wait channels, syscalls and kernel stacks go
# to record-stuck.txt, then SIGABRT (ASan prints the stack of the thread
# that takes it; addr2line on the host names the offsets), 30 s later
# SIGKILL, so that the results still come back.
watchdog() {
	until grep -q 'recording' "$RESULTS/record.err" 2>/dev/null; do sleep 1; done
	sleep 150
	p=$(pidof trace-cmd-xen) || return 0
	mark "RECORD STUCK pid=$p"
	for p1 in $p; do
		for t in /proc/$p1/task/*; do
			echo "== $t $(cat $t/comm) wchan=$(cat $t/wchan) syscall=$(cut -d' ' -f1 $t/syscall)"
			cat $t/stack
		done
	done > "$RESULTS/record-stuck.txt" 2>&1
	cat "$RESULTS/record-stuck.txt"
	kill -ABRT $p
	sleep 30
	p=$(pidof trace-cmd-xen) || return 0
	mark "RECORD KILLED pid=$p"
	kill -KILL $p
}
watchdog &
DOG=$!
# Its stderr stamped with dom0's uptime, its stdout on the console (fd 3).
# --tsync none: time sync has its own scenarios (tsync-pv, tsync-hvm: that
# one through record -A). With it, record adds the PV class for PV guests,
# and a PV dom0's own traps and hypercalls (every page fault, iret, event
# channel of the recorder and the vchan traffic) outran dom0's decoding
# under TCG (the ASan build): a 6 s capture was still being decoded minutes
# later. --xen-events sched: the vCPU runs the guests' pseudo tasks need.
exec 3>&1
{ ASAN_OPTIONS=handle_abort=1 trace-cmd-xen record --xen --tsync none --guest-open-timeout 120 --guest-stop-timeout 60 \
	--xen-events sched -e sched:sched_switch -A pv -e sched:sched_switch \
	-A pv1 -e sched:sched_switch --duration 6 \
	-o "$RESULTS/trace.dat" --summary-json "$RESULTS/summary.json" 2>&1 1>&3
  echo $? > /tmp/record-rc; } |
	while IFS= read -r l; do echo "[up $(cut -d' ' -f1 /proc/uptime)] $l"; done \
	> "$RESULTS/record.err"
rc=$(cat /tmp/record-rc 2>/dev/null || echo 255)
kill $WATCH $DOG 2>/dev/null
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
echo "$rc" > "$RESULTS/record-rc"
# after the session each agent serves the next one: ready again
for g in $GUESTS; do
	id=$(awk -v g=$g '$1 == g { print $2 }' "$RESULTS/domains.txt")
	end=$(( $(uptime_s) + 30 ))
	until ready $id || [ "$(uptime_s)" -ge $end ]; do sleep 0.2; done
	$XS/xenstore-ls -f /local/domain/$id/data/trace-cmd-xen > "$RESULTS/xs-$g-after.txt" 2>&1
done
domains_file "$RESULTS/domains-after.txt"
ls -la "$RESULTS"
[ "$rc" -eq 0 ]
