# Guest side: prove the project's binary runs here, then a small load on
. /tcx/lib.sh
# every vCPU: a busy loop (timer ticks, preemption) and syscall-heavy dd
# (PV: every syscall bounces through Xen).
trace-cmd-xen --version || exit 1
mark "LOAD START"
ncpu=$(grep -c ^processor /proc/cpuinfo)
end=$(( $(date +%s) + 3 ))
i=0
while [ $i -lt "$ncpu" ]; do
	( while [ "$(date +%s)" -lt $end ]; do :; done ) &
	i=$((i + 1))
done
dd if=/dev/zero of=/dev/null bs=512 count=20000 2>/dev/null
wait
mark "LOAD DONE"
