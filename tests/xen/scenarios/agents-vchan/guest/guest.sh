# Guest side: the agent in Xen mode (its messages on the console), and one
# tcx-load per vCPU, which runs for as long as the guest does; the script
# ends when the agent does.
. /tcx/lib.sh
ncpu=$(grep -c ^processor /proc/cpuinfo)
i=0
while [ $i -lt "$ncpu" ]; do
	if command -v taskset >/dev/null 2>&1; then
		taskset -c $i /scenario/tcx-load &
	else
		/scenario/tcx-load &
	fi
	i=$((i + 1))
done
trace-cmd-xen agent --xen &
AGENT=$!
mark "AGENT STARTED pid=$AGENT cpus=$ncpu"
wait $AGENT
rc=$?
mark "AGENT EXIT rc=$rc"
exit $rc
