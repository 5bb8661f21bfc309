# dom0 side: record --xen (hypervisor only, the classes protocol xen reads)
# while the scenario's one guest (its only .cfg) runs its marker rounds.
# Shared by tsync-pv, tsync-pvh and tsync-vtsc.
. /tcx/lib.sh
set -u
cfg=$(ls /scenario/*.cfg | head -n1)
name=$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$cfg")
cat > /tmp/boot-guest.sh <<'EOS'
. /tcx/lib.sh
cfg=$1 name=$2
id=$(guest_create "$cfg") || { echo "xl create failed"; exit 1; }
echo "$id" > "$RESULTS/domid"
mark "GUEST CREATED $name domid=$id"
guest_wait "$name" '@@ GUEST DONE' 600 || exit 1
guest_final_domid "$name" "$id" "$RESULTS/domid" || exit 1
xl list > "$RESULTS/xl-list.txt"
xl destroy "$name"
exit 0
EOS
mark "RECORD START"
trace-cmd-xen record --xen --no-dom0 --xen-events gen,sched,hvm,pv,guest --xen-pages 256 \
	-o "$RESULTS/trace.dat" --raw "$RESULTS/xentrace.bin" -- sh /tmp/boot-guest.sh "$cfg" "$name" \
	2> "$RESULTS/record.err"
rc=$?
cat "$RESULTS/record.err"
mark "RECORD DONE rc=$rc"
[ "$rc" -eq 0 ] && [ -s "$RESULTS/xentrace.bin" ]
