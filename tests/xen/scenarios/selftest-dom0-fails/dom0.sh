# Harness self-test: a dom0 script that fails. run-scenario.sh must report
# it (not ok, non-zero exit) and still bring the results back.
. /tcx/lib.sh
echo "selftest: dom0 script reached, exiting 3 on purpose" | tee "$RESULTS/reached"
exit 3
