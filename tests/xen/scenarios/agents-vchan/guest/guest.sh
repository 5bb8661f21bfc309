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
# the agent's log (stderr, unbuffered) stamped with the guest's uptime: how
# long a session's setup takes in the guest
{ trace-cmd-xen agent --xen 2>&1; echo $? > /tmp/agent-rc; } |
	while IFS= read -r l; do echo "[up $(cut -d' ' -f1 /proc/uptime)] $l"; done &
AGENT=$!
mark "AGENT STARTED cpus=$ncpu"
wait $AGENT
rc=$(cat /tmp/agent-rc 2>/dev/null || echo 255)
mark "AGENT EXIT rc=$rc"
exit $rc
