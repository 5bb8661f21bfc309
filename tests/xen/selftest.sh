#!/bin/bash
# Self-test of the real-Xen harness (TAP): its failure paths must fail.
#   tests/xen/selftest.sh [BUILDDIR]
# 1. A real boot whose dom0 script exits 3 (scenario selftest-dom0-fails,
#    through run-retry.sh as meson runs scenarios): the run fails, says why,
#    still returns the results, and is not taken for a dom0 boot stall (a
#    stall of this boot, the emulator's doing, is retried once: its
#    "# retried:" line is repeated here, where scripts/run-tests.sh counts it).
# 2-7. With a stub in place of QEMU (no boot, seconds each): a hang after
#    dom0 is up is killed at the timeout and fails with the log's tail;
#    Ctrl-C (SIGINT) and SIGTERM stop the run and kill the "QEMU"; a QEMU that
#    exits without running the scenario fails; a dom0 whose boot stalls is
#    stopped at the boot deadline and retried once, with the first try's files
#    kept, and a second stall fails naming it; a stall then a good boot
#    passes; a dom0 that boots and whose scenario fails is not retried.
# 8. A kernel that logged a timer stall and fell silent is stopped after
#    TCX_XEN_SILENCE seconds and retried once; silence alone is not enough.
# 9. Soft lockups of a kernel patching its own code (text_poke_bp) are
#    retried once, the evidence shown, and stopped once they have lasted
#    TCX_XEN_LOCKUP seconds; a hang without them is not retried.
# 10. A limit that is not a whole number of seconds stops run-scenario.sh
#    before anything starts (TCX_QEMU is /bin/false there, so that a
#    check that let it through could not boot a real QEMU).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILDDIR=${1:-$HERE/../../build}
mkdir -p "$BUILDDIR"
BUILDDIR=$(cd "$BUILDDIR" && pwd)
RS=$HERE/run-scenario.sh
RR=$HERE/run-retry.sh
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
rm -rf "$BUILDDIR/xen-tests/selftest-dom0-fails-first-try"
"$RR" --tap --builddir "$BUILDDIR" selftest-dom0-fails >"$W/real.tap" 2>&1
rc=$?
if grep -q '^1..0 # SKIP' "$W/real.tap"; then
	sed -n 's/^1..0 # SKIP/1..0 # SKIP/p' "$W/real.tap"
	exit 0
fi
grep '^# retried: ' "$W/real.tap"	# a stall of this boot, retried
run=$BUILDDIR/xen-tests/selftest-dom0-fails
out=$run/out
check $(( rc == 0 )) "a scenario whose dom0 script exits 3 makes the run fail (rc=$rc)"
grep -qE '^not ok .*dom0.sh exited 0 .*rc=3' "$W/real.tap"
check $? "... and its TAP output names the failure (dom0.sh rc=3)"
grep -q '@@ DOM0 UP' "$run/serial.log" 2>/dev/null && [ ! -e "$run/boot-stalled" ] &&
	! grep -q '^not ok .*boot stalled' "$W/real.tap"
check $? "... and it is not taken for a dom0 boot stall (dom0 came up)"
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
echo "$STUB_MODE" >> "$STUB_PIDFILE.runs"
mode=$STUB_MODE
if [ "$mode" = stall-once ]; then	# stall, then boot and pass
	[ "$(wc -l < "$STUB_PIDFILE.runs")" = 1 ] && mode=stall || mode=boot
fi
echo "(XEN) Xen version 4.17 (stub)"
case $mode in
stall)	# as a dom0 kernel stalled under TCG: a partial boot log, no /init
	echo "[    3.100000] ACPI: bus type PCI registered"
	echo "[    4.200000] hpet_acpi_add: no address or irqs in _CRS"
	exec sleep 1000 ;;
exit) exit 0 ;;
esac
echo "@@ DOM0 UP (up 9.60s) (stub)"
case $mode in
hang)	# keeps what the console's input gets (the harness's debug keys)
	echo "stub: last line before the hang"; exec cat > "$STUB_PIDFILE.keys" ;;
timerstall)	# as a dom0 whose timers TCG stopped: an RCU stall, then nothing
	echo "[   47.803222] rcu: INFO: rcu_preempt self-detected stall on CPU"
	echo "[   47.830440] rcu: rcu_preempt kthread timer wakeup didn't happen for 5248 jiffies! g489 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402"
	exec sleep 1000 ;;
pokestall)	# as a dom0 stuck live-patching a static key under TCG
	echo "[   78.300831] watchdog: BUG: soft lockup - CPU#1 stuck for 48s! [trace-cmd-xen:130]"
	echo "[   78.589012]  text_poke_bp_batch+0x29f/0x300"
	exec sleep 1000 ;;
boot)	# dom0.sh exits with STUB_RC (0 by default); results on the "disk"
	rc=${STUB_RC:-0}
	echo "@@ TOOLSTACK UP (up 10.30s)"
	echo "@@ SCENARIO START timeout=60s"
	sleep "${STUB_SLEEP:-0}"
	echo "@@ SCENARIO EXIT rc=$rc"
	for a in "$@"; do
		case $a in file=*) img=${a#file=}; img=${img%%,*} ;; esac
	done
	d=$(mktemp -d)
	echo "$rc" > "$d/dom0-rc"
	tar -C "$d" -cf "$img" . && echo "@@ EXPORT DONE bytes=4k"
	rm -rf "$d"
	echo "@@ ALL DONE rc=$rc"
	exit 0 ;;
esac
STUBEOF
chmod +x "$STUB"
# a copy of the scenario under another name, so that these runs keep their
# own files (xen-tests/selftest-stub/) and leave the real boot's alone
rm -rf "$W/selftest-stub"
cp -r "$HERE/scenarios/selftest-dom0-fails" "$W/selftest-stub"
SR=$BUILDDIR/xen-tests/selftest-stub
stub_run() {	# MODE TIMEOUT TAG [SCRIPT]: run-scenario.sh (or SCRIPT) in the
		# background (pid in BGPID); boot deadline $DEADLINE (default 120)
	rm -f "$W/$3.pid" "$W/$3.pid.runs" "$W/$3.pid.keys"
	STUB_MODE=$1 STUB_PIDFILE=$W/$3.pid TCX_QEMU=$STUB \
		TCX_XEN_BOOT_DEADLINE=${DEADLINE:-120} TCX_XEN_SILENCE=${SILENCE:-120} \
		TCX_XEN_LOCKUP=${LOCKUP:-120} \
		"${4:-$RS}" --tap --timeout "$2" --builddir "$BUILDDIR" "$W/selftest-stub" >"$W/$3.tap" 2>&1 &
	BGPID=$!
}
runs() { wc -l < "$W/$1.pid.runs" 2>/dev/null || echo 0; }	# TAG: stub invocations
gone() {	# PIDFILE: the stub's process no longer exists
	local p
	p=$(cat "$1" 2>/dev/null) || return 1
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}
wait_pidfile() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
# ---- 2. hang -> timeout ---------------------------------------------------------
DEADLINE=2 stub_run hang 4 hang
wait "$BGPID"; rc=$?
check $(( rc == 0 )) "a hang after dom0 is up is stopped at the timeout and fails (rc=$rc)"
grep -q '^not ok .*finished within 4s' "$W/hang.tap" && grep -q 'stub: last line before the hang' "$W/hang.tap"
check $? "... with the tail of its serial log printed"
gone "$W/hang.pid"
check $? "... and the hung QEMU killed"
[ "$(od -An -c "$W/hang.pid.keys" 2>/dev/null | tr -d ' \n')" = '001001001d0qr' ]
check $? "... after Xen's debug keys were typed on its console: CTRL-a three times, then d 0 q r (got: $(od -An -c "$W/hang.pid.keys" 2>/dev/null | tr -s ' '))"
grep -q "^#   no answer from QEMU's monitor at .*monitor.sock" "$W/hang.tap"
check $? "... and QEMU's monitor asked for the CPUs' registers (the stub has none: said so)"
! grep -q 'boot stalled' "$W/hang.tap" && [ ! -e "$SR/boot-stalled" ]
check $? "... and not taken for a boot stall (dom0 was up at the 2 s deadline)"

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

# ---- 5. a dom0 boot stall, twice: stopped at the deadline, retried, failed --------
qemu_secs() {	# TAP: the "QEMU exited ... after Ns" of each run, commented or not
	sed -nE 's/^#( +#)? QEMU exited rc=[0-9]+ after ([0-9]+)s$/\2/p' "$1" | tr '\n' ' '
}
rm -rf "$SR-first-try"
DEADLINE=2 stub_run stall 60 stall "$RR"
wait "$BGPID"; rc=$?
secs=$(qemu_secs "$W/stall.tap")
echo "$secs" | awk '{ exit !(NF == 2 && $1 <= 8 && $2 <= 8) }'
check $? "a dom0 boot stall is stopped at the 2 s boot deadline, not the 60 s timeout (QEMU ran: ${secs:-?}s)"
[ "$(grep -c '^# retried: selftest-stub: dom0 boot stalled' "$W/stall.tap")" = 1 ] &&
	[ "$(runs stall)" = 2 ]
check $? "... and the scenario retried once (\"# retried:\" line, $(runs stall) QEMU runs)"
grep -q 'hpet_acpi_add' "$SR-first-try/serial.log" 2>/dev/null &&
	[ -f "$SR-first-try/boot-stalled" ] &&
	grep -q "^# the first run's results: .*selftest-stub-first-try" "$W/stall.tap" &&
	grep -q '^#   not ok .*dom0 boot stalled' "$W/stall.tap"
check $? "... with the first try's files kept (selftest-stub-first-try/) and its TAP lines shown"
[ $rc != 0 ] && grep -q '^not ok .*dom0 boot stalled: no "@@ DOM0 UP" within 2s' "$W/stall.tap" &&
	grep -q '^# selftest-stub: dom0 boot stalled again on the retry' "$W/stall.tap"
check $? "... and a second stall fails, naming the stall (rc=$rc)"
gone "$W/stall.pid"
check $? "... and the stalled QEMU killed"

# ---- 6. a stall, then a good boot: passes ------------------------------------------
DEADLINE=2 stub_run stall-once 60 once "$RR"
wait "$BGPID"; rc=$?
[ $rc = 0 ] && [ "$(runs once)" = 2 ] &&
	[ "$(grep -c '^# retried: selftest-stub: dom0 boot stalled' "$W/once.tap")" = 1 ] &&
	grep -q '^# selftest-stub: PASS' "$W/once.tap" && ! grep -q '^not ok' "$W/once.tap"
check $? "a stall followed by a good boot passes, with one retry (rc=$rc)"

# ---- 7. dom0 boots, its scenario fails: no retry -------------------------------------
DEADLINE=2 STUB_RC=3 STUB_SLEEP=3 stub_run boot 60 booted "$RR"
wait "$BGPID"; rc=$?
[ $rc != 0 ] && [ "$(runs booted)" = 1 ] && ! grep -q '^# retried:' "$W/booted.tap" &&
	grep -qE '^not ok .*dom0.sh exited 0 .*rc=3' "$W/booted.tap" &&
	! grep -q 'boot stalled' "$W/booted.tap"
check $? "a dom0 that boots and whose scenario fails (rc=3, past the deadline) fails with no retry (rc=$rc)"

# ---- 8. a kernel's timers stop after dom0 is up: stopped when silent, retried ------
rm -rf "$SR-first-try"
DEADLINE=2 SILENCE=3 stub_run timerstall 60 timer "$RR"
wait "$BGPID"; rc=$?
secs=$(qemu_secs "$W/timer.tap")
# 3 s of silence, the state dump's 7 s, and the stub's start
echo "$secs" | awk '{ exit !(NF == 2 && $1 <= 20 && $2 <= 20) }'
check $? "a console silent for 3 s after a timer stall is stopped then (after the state dump), not at the 60 s timeout (QEMU ran: ${secs:-?}s)"
[ $rc != 0 ] && [ "$(runs timer)" = 2 ] &&
	[ "$(grep -c "^# retried: selftest-stub: a kernel's timers stopped" "$W/timer.tap")" = 1 ] &&
	grep -q "^not ok .*a kernel's timers stopped.*silent for 3s" "$W/timer.tap"
check $? "... retried once, and the second stall fails naming it (rc=$rc, $(runs timer) QEMU runs)"
# the same silence without the stall's message is a hang: the timeout's
DEADLINE=2 SILENCE=1 stub_run hang 5 silent
wait "$BGPID"; rc=$?
secs=$(qemu_secs "$W/silent.tap")
[ $rc != 0 ] && grep -q '^not ok .*finished within 5s (killed' "$W/silent.tap" &&
	echo "$secs" | awk '{ exit !($1 >= 5) }'
check $? "... while a silent console without it waits for the timeout (QEMU ran: ${secs:-?}s)"

# ---- 9. soft lockups while a kernel patches its own code: retried once ------------
rm -rf "$SR-first-try"
DEADLINE=2 stub_run pokestall 4 poke "$RR"
wait "$BGPID"; rc=$?
[ $rc != 0 ] && [ "$(runs poke)" = 2 ] &&
	[ "$(grep -c "^# retried: selftest-stub: a kernel stuck patching its own code" "$W/poke.tap")" = 1 ] &&
	grep -q "^#   .*text_poke_bp_batch" "$W/poke.tap" &&
	grep -q '^not ok .*finished within 4s (killed' "$W/poke.tap"
check $? "a soft lockup in text_poke_bp is retried once, the evidence shown, and a second one fails (rc=$rc, $(runs poke) QEMU runs)"
# past TCX_XEN_LOCKUP (the stub's lockup is 48 s old) it is stopped then
rm -rf "$SR-first-try"
DEADLINE=2 LOCKUP=30 stub_run pokestall 60 pokeearly "$RR"
wait "$BGPID"; rc=$?
secs=$(qemu_secs "$W/pokeearly.tap")
echo "$secs" | awk '{ exit !(NF == 2 && $1 <= 20 && $2 <= 20) }' &&
	[ $rc != 0 ] && [ "$(runs pokeearly)" = 2 ] &&
	grep -q "^not ok .*stuck patching its own code, soft lockup in text_poke_bp for 48s" "$W/pokeearly.tap"
check $? "... stopped once it has lasted TCX_XEN_LOCKUP (30 s), not at the 60 s timeout, and retried once (QEMU ran: ${secs:-?}s, rc=$rc)"
# a hang without it, through the same retry wrapper, is not retried
DEADLINE=2 stub_run hang 4 hangr "$RR"
wait "$BGPID"; rc=$?
[ $rc != 0 ] && [ "$(runs hangr)" = 1 ] && ! grep -q '^# retried:' "$W/hangr.tap"
check $? "... while a hang without it is not retried (rc=$rc, $(runs hangr) QEMU run)"

# ---- 10. a limit that is not a whole number of seconds stops the run at once ---------
bad=""
for v in TCX_XEN_SILENCE TCX_XEN_LOCKUP TCX_XEN_BOOT_DEADLINE; do
	out=$(env "$v=2m" TCX_QEMU=/bin/false "$RS" --tap --builddir "$BUILDDIR" "$W/selftest-stub" 2>&1)
	rc=$?
	[ $rc = 2 ] && [ "$out" = "run-scenario: $v=2m: not a number of seconds" ] || bad="$bad $v(rc=$rc)"
done
[ -z "$bad" ]
check $? "TCX_XEN_SILENCE, TCX_XEN_LOCKUP and TCX_XEN_BOOT_DEADLINE of \"2m\" are refused by name, exit 2 (wrong:${bad:- none})"

echo "1..$n"
[ $nfail -eq 0 ]
