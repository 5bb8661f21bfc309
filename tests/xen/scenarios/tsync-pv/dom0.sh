# dom0 side: record --xen (hypervisor only, the classes protocol xen reads
# from a PV guest) while the PV guest runs its marker rounds.
. /tcx/lib.sh
set -u
cat > /tmp/boot-guest.sh <<'EOS'
. /tcx/lib.sh
id=$(guest_create /scenario/pv.cfg) || { echo "xl create failed"; exit 1; }
echo "$id" > "$RESULTS/domid"
mark "GUEST CREATED pv domid=$id"
guest_wait pv '@@ GUEST DONE' 600 || exit 1
guest_final_domid pv "$id" "$RESULTS/domid" || exit 1
xl list > "$RESULTS/xl-list.txt"
xl destroy pv
exit 0
EOS
mark "RECORD START"
trace-cmd-xen record --xen --no-dom0 -M gen,sched,pv,guest -S 256 \
	-o "$RESULTS/trace.dat" --raw "$RESULTS/xentrace.bin" -- sh /tmp/boot-guest.sh \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
[ "$rc" -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ]
