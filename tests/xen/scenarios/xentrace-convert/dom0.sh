# dom0 side: xentrace records everything (-e all) from before the guests
# exist until both have run their load; the capture and what dom0 knows about
# the domains go back to the host in /results.
. /tcx/lib.sh
set -u
trace-cmd-xen --version > "$RESULTS/dom0-tcx-version.txt" || { echo "trace-cmd-xen does not run in dom0"; exit 1; }
cat "$RESULTS/dom0-tcx-version.txt"

# -S 256: 1 MiB of trace buffer per pCPU, so that nothing is lost under TCG
xentrace -D -e all -S 256 "$RESULTS/xentrace.bin" &
XT=$!
sleep 1
mark "XENTRACE STARTED"

PV=$(guest_create /scenario/pv.cfg) || { echo "xl create pv failed"; exit 1; }
mark "PV CREATED domid=$PV"
PVH=$(guest_create /scenario/pvh.cfg) || { echo "xl create pvh failed"; exit 1; }
mark "PVH CREATED domid=$PVH"
guest_wait pv '@@ GUEST DONE' 300 || exit 1
guest_wait pvh '@@ GUEST DONE' 300 || exit 1
grep -q '@@ GUEST DONE rc=0' "$CONSOLE_DIR/guest-pv.log" || { echo "pv guest script failed"; exit 1; }
grep -q '@@ GUEST DONE rc=0' "$CONSOLE_DIR/guest-pvh.log" || { echo "pvh guest script failed"; exit 1; }
mark "GUESTS DONE"

# the domains as dom0 sees them: "name domid vcpus"
domains_file "$RESULTS/domains.txt"
xl vcpu-list > "$RESULTS/vcpu-list.txt"
cat "$RESULTS/domains.txt"
sleep 1
kill -TERM $XT
wait $XT
xtrc=$?
mark "XENTRACE STOPPED rc=$xtrc bytes=$(stat -c %s "$RESULTS/xentrace.bin")"
# the CPU frequency Xen measured: the host converts TSC with it
sed -n 's/^cpu_mhz *: *//p' "$RESULTS/xl-info.txt" > "$RESULTS/cpu_mhz"
xl destroy pv; xl destroy pvh
[ $xtrc -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ]
