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
# The agent package's files, when the host put them here: started as its
# unit does (no systemd here, so without the unit's sandbox): Environment=,
# then the options file of EnvironmentFile=, then ExecStart= with
# $TRACE_CMD_XEN_AGENT_OPTS split into words. Its libraries are in
# /opt/tcx/lib. Else the build's trace-cmd-xen agent.
unit=/lib/systemd/system/trace-cmd-xen-agent.service
if [ -f "$unit" ]; then
	eval "export $(sed -n 's/^Environment=//p' "$unit")"
	envfile=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
	# shellcheck disable=SC1090
	[ -f "$envfile" ] && . "$envfile"
	eval "set -- $(sed -n 's/^ExecStart=//p' "$unit")"
	mark "AGENT FROM PACKAGE: $*"
	export LD_LIBRARY_PATH=/opt/tcx/lib
else
	set -- trace-cmd-xen agent --xen
	mark "AGENT FROM BUILD: $*"
fi
# the agent's log (stderr, unbuffered) stamped with the guest's uptime: how
# long a session's setup takes in the guest
{ "$@" 2>&1; echo $? > /tmp/agent-rc; } |
	while IFS= read -r l; do echo "[up $(cut -d' ' -f1 /proc/uptime)] $l"; done &
AGENT=$!
mark "AGENT STARTED cpus=$ncpu"
wait $AGENT
rc=$(cat /tmp/agent-rc 2>/dev/null || echo 255)
mark "AGENT EXIT rc=$rc"
exit $rc
