# Guest side: marker rounds on every vCPU, twice, then the rounds as the
# guest's own trace shows them, on the console for the host.
. /tcx/lib.sh
mark "TSYNC START"
tsync-probe guest 10
rc=$?
mark "TSYNC DONE rc=$rc"
exit $rc
