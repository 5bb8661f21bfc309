# dom0 side: the HVM guest boots unrecorded; record --xen (hypervisor only,
# the classes protocol xen reads) from its TSYNC WAIT until it is done.
. /tcx/lib.sh
set -u
id=$(guest_create /scenario/hvm.cfg) || { echo "xl create failed"; exit 1; }
echo "$id" > "$RESULTS/domid"
mark "GUEST CREATED hvm domid=$id"
guest_wait hvm '@@ TSYNC WAIT' 600 || exit 1
cat > /tmp/wait-guest.sh <<'EOS'
. /tcx/lib.sh
guest_wait hvm '@@ GUEST DONE' 600 || exit 1
guest_final_domid hvm "$id" "$RESULTS/domid" || exit 1
exit 0
EOS
mark "RECORD START"
trace-cmd-xen record --xen --no-dom0 -M gen,sched,hvm,pv,guest -S 256 \
	-o /tmp/trace.dat --raw "$RESULTS/xentrace.bin" -- sh /tmp/wait-guest.sh \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
xl list > "$RESULTS/xl-list.txt"
xl destroy hvm
[ "$rc" -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ]
