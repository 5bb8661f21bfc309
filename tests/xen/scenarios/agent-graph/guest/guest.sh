# Guest side: the agent in Xen mode (its messages on the console, where the
# check reads what the peer asked for), and one tcx-load per vCPU; the
# script ends when the agent does.
. /tcx/lib.sh
ncpu=$(grep -c ^processor /proc/cpuinfo)
i=0
while [ $i -lt "$ncpu" ]; do
	/scenario/tcx-load &
	i=$((i + 1))
done
# the kernel's tracers, for the check's diagnostics (a refusal names the
# instance's own list)
echo "@@ TOP TRACERS $(cat /sys/kernel/tracing/available_tracers 2>/dev/null)"
{ trace-cmd-xen agent --xen 2>&1; echo $? > /tmp/agent-rc; } |
	while IFS= read -r l; do echo "[up $(cut -d' ' -f1 /proc/uptime)] $l"; done &
AGENT=$!
mark "AGENT STARTED cpus=$ncpu"
wait $AGENT
rc=$(cat /tmp/agent-rc 2>/dev/null || echo 255)
mark "AGENT EXIT rc=$rc"
exit $rc
