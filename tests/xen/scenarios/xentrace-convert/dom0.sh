# dom0 side: xentrace records everything (-e all) from before the guests
# exist until every guest (one per /scenario/*.cfg) has run its load; the
# capture and what dom0 knows about the domains go back to the host in
# /results. Also used, through a symlink, by other xentrace-* scenarios.
. /tcx/lib.sh
set -u
trace-cmd-xen --version > "$RESULTS/dom0-tcx-version.txt" || { echo "trace-cmd-xen does not run in dom0"; exit 1; }
cat "$RESULTS/dom0-tcx-version.txt"

# -S 256: 1 MiB of trace buffer per pCPU, so that nothing is lost under TCG
xentrace -D -e all -S 256 "$RESULTS/xentrace.bin" &
XT=$!
sleep 1
mark "XENTRACE STARTED"

names=""
for cfg in /scenario/*.cfg; do
	name=$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$cfg")
	id=$(guest_create "$cfg") || { echo "xl create $cfg failed"; exit 1; }
	mark "GUEST CREATED $name domid=$id"
	names="$names $name"
done
for name in $names; do
	guest_wait "$name" '@@ GUEST DONE' 900 || exit 1	# the scenario's timeout bounds it
	grep -q '@@ GUEST DONE rc=0' "$CONSOLE_DIR/guest-$name.log" ||
		{ echo "$name: guest script failed"; exit 1; }
done
mark "GUESTS DONE"

# the domains as dom0 sees them: "name domid vcpus", one line per
# incarnation: under TCG a PVH guest sometimes triple-faults early in boot,
# and xl restarts it (on_reboot) under a new domid, which the capture holds too
domains_file /tmp/domains-now.txt
xl vcpu-list > "$RESULTS/vcpu-list.txt"
: > "$RESULTS/domains.txt"
while read -r name domid vcpus; do
	ids=$(sed -n "s/.*Waiting for domain $name (domid \([0-9]*\)) to die.*/\1/p" \
		"/var/log/xen/xl-$name.log" 2>/dev/null | sort -un)
	for id in ${ids:-$domid}; do
		echo "$name $id $vcpus" >> "$RESULTS/domains.txt"
		[ "$id" != "$domid" ] && mark "GUEST RESTARTED $name: domid $id, now $domid"
	done
	[ -n "$ids" ] || [ "$name" = Domain-0 ] || echo "$name: no domid in xl-$name.log"
done < /tmp/domains-now.txt
cat "$RESULTS/domains.txt"
sleep 1
kill -TERM $XT
wait $XT
xtrc=$?
mark "XENTRACE STOPPED rc=$xtrc bytes=$(stat -c %s "$RESULTS/xentrace.bin")"
# the CPU frequency Xen measured: the host converts TSC with it
sed -n 's/^cpu_mhz *: *//p' "$RESULTS/xl-info.txt" > "$RESULTS/cpu_mhz"
for name in $names; do xl destroy "$name"; done
[ $xtrc -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ]
