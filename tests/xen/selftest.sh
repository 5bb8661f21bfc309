#!/bin/bash
# Self-test of the real-Xen harness (TAP): its failure paths must fail.
#   tests/xen/selftest.sh [BUILDDIR]
# 1. A real boot whose dom0 script exits 3 (scenario selftest-dom0-fails):
#    run-scenario.sh exits non-zero, says why, still returns the results.
# 2-4. With a stub in place of QEMU (no boot, a second or so each): a hang is
#    killed at the timeout and fails with the log's tail; Ctrl-C (SIGINT)
#    and SIGTERM stop the run and kill the "QEMU"; a QEMU that exits without
#    running the scenario fails.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILDDIR=${1:-$HERE/../../build}
mkdir -p "$BUILDDIR"
BUILDDIR=$(cd "$BUILDDIR" && pwd)
RS=$HERE/run-scenario.sh
W=$BUILDDIR/xen-tests/selftest
rm -rf "$W"; mkdir -p "$W"

n=0 nfail=0
check() {	# STATUS DESC: STATUS 0 = ok
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; nfail=$((nfail + 1)); fi
}
indent() { sed 's/^/#   /' "$1" | tail -n "${2:-15}"; }

if [ "${TCX_SELFTEST_NO_BOOT:-0}" != 1 ]; then	# 1 = only the stub parts
# ---- 1. a real boot, dom0 script fails -------------------------------------
"$RS" --tap --builddir "$BUILDDIR" selftest-dom0-fails >"$W/real.tap" 2>&1
rc=$?
if grep -q '^1..0 # SKIP' "$W/real.tap"; then
	sed -n 's/^1..0 # SKIP/1..0 # SKIP/p' "$W/real.tap"
	exit 0
fi
out=$BUILDDIR/xen-tests/selftest-dom0-fails/out
check $(( rc == 0 )) "a scenario whose dom0 script exits 3 makes run-scenario.sh fail (rc=$rc)"
grep -qE '^not ok .*dom0.sh exited 0 .*rc=3' "$W/real.tap"
check $? "... and its TAP output names the failure (dom0.sh rc=3)"
[ -f "$out/reached" ] && [ "$(cat "$out/dom0-rc" 2>/dev/null)" = 3 ]
check $? "... and the results still came back (dom0-rc = 3)"
grep -q '^trace-cmd-xen version' "$out/tcx-version" 2>/dev/null &&
	grep -q 'trace-cmd version' "$out/trace-cmd-version" 2>/dev/null
check $? "dom0 runs the project's binary and a host binary with their libraries"
grep -qx sched "$out/tracefs-events" 2>/dev/null
check $? "dom0 has tracefs mounted at /sys/kernel/tracing"
[ $nfail -gt 0 ] && indent "$W/real.tap" 30
fi

# ---- a stub QEMU: prints a little, then does what STUB_MODE says --------------
STUB=$W/qemu-stub
cat > "$STUB" <<'STUBEOF'
#!/bin/bash
echo $$ > "$STUB_PIDFILE"
echo "(XEN) Xen version 4.17 (stub)"
echo "stub: last line before the hang"
case $STUB_MODE in
hang) exec sleep 1000 ;;
exit) exit 0 ;;
esac
STUBEOF
chmod +x "$STUB"
# a copy of the scenario under another name, so that these runs keep their
# own files (xen-tests/selftest-stub/) and leave the real boot's alone
rm -rf "$W/selftest-stub"
cp -r "$HERE/scenarios/selftest-dom0-fails" "$W/selftest-stub"
stub_run() {	# MODE TIMEOUT TAG: run-scenario.sh in the background (pid in BGPID)
	STUB_MODE=$1 STUB_PIDFILE=$W/$3.pid TCX_QEMU=$STUB \
		"$RS" --tap --timeout "$2" --builddir "$BUILDDIR" "$W/selftest-stub" >"$W/$3.tap" 2>&1 &
	BGPID=$!
}
gone() {	# PIDFILE: the stub's process no longer exists
	local p
	p=$(cat "$1" 2>/dev/null) || return 1
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}
wait_pidfile() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# ---- 2. hang -> timeout ---------------------------------------------------------
stub_run hang 3 hang
wait "$BGPID"; rc=$?
check $(( rc == 0 )) "a hang is stopped at the timeout and fails (rc=$rc)"
grep -q '^not ok .*finished within 3s' "$W/hang.tap" && grep -q 'stub: last line before the hang' "$W/hang.tap"
check $? "... with the tail of its serial log printed"
gone "$W/hang.pid"
check $? "... and the hung QEMU killed"

# ---- 3. Ctrl-C and SIGTERM --------------------------------------------------------
set -m	# own process groups: background jobs may then receive SIGINT
for sig in INT TERM; do
	stub_run hang 300 "sig$sig"
	wait_pidfile "$W/sig$sig.pid"
	sleep 0.5
	kill -"$sig" "$BGPID"
	wait "$BGPID"; rc=$?
	check $(( rc == 0 )) "SIG$sig stops run-scenario.sh with a failure status (rc=$rc)"
	gone "$W/sig$sig.pid"
	check $? "... and kills its QEMU"
done
set +m

# ---- 4. QEMU exits without running the scenario --------------------------------------
stub_run exit 60 exit
wait "$BGPID"; rc=$?
check $(( rc == 0 )) "a boot that never reaches the scenario fails (rc=$rc)"
grep -q '^not ok .*toolstack is up' "$W/exit.tap" && grep -q '^not ok .*results returned' "$W/exit.tap"
check $? "... saying dom0 never came up and no results came back"

echo "1..$n"
[ $nfail -eq 0 ]
