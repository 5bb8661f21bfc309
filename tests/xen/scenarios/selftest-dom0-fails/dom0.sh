# Harness self-test: a dom0 script that fails. run-scenario.sh must report
# it (not ok, non-zero exit) and still bring the results back. On the way it
# shows what dom0 gets: the project's binary and a host one with their
# libraries, and tracefs.
. /tcx/lib.sh
trace-cmd-xen --version > "$RESULTS/tcx-version" 2>&1
trace-cmd --version > "$RESULTS/trace-cmd-version" 2>&1
ls /sys/kernel/tracing/events > "$RESULTS/tracefs-events" 2>&1
echo "selftest: dom0 script reached, exiting 3 on purpose" | tee "$RESULTS/reached"
exit 3
