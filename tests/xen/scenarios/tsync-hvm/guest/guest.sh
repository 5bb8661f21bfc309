# Guest side: once dom0 records (it starts when it sees TSYNC WAIT: an HVM
# boot under TCG is too long to record whole), marker rounds on every vCPU,
# twice, then the rounds as the guest's own trace shows them, on the console.
# Then trace-cmd-xen agent --xen, left running, for dom0's record -A.
. /tcx/lib.sh
mark "TSYNC WAIT"
sleep 20
mark "TSYNC START"
tsync-probe guest 10
rc=$?
mark "TSYNC DONE rc=$rc"
trace-cmd-xen agent --xen >/dev/console 2>&1 </dev/null &
mark "AGENT STARTED"
exit $rc
