#!/bin/bash
# run-scenario.sh for meson, with one more try when the emulator, not the
# scenario, made the run fail.
#
#   tests/xen/run-retry.sh --tap --builddir DIR NAME
#
# Three failures under QEMU TCG are not the project's (docs/real-xen.md):
# - a dom0 boot stall: dom0's /init never said "@@ DOM0 UP" within the boot
#   deadline (run-scenario.sh stops QEMU there and leaves boot-stalled in
#   the run's directory);
# - a guest triple fault: PVH guests sometimes triple-fault in Xen's
#   emulation (seen with both tsc_mode native and default, at boot,
#   mid-session and after it); Xen logs "Triple fault" on its serial console;
# - a kernel whose timers stop: a guest or dom0 kernel logs an RCU stall with
#   "kthread timer wakeup didn't happen" (its timer interrupts stopped coming:
#   TCG's timer emulation, seen on an idle host);
# - a kernel stuck patching its own code: soft lockups with text_poke_bp in
#   the trace (dom0 turning a tracepoint's static key off: the patching CPU
#   waits for an IPI the other never takes, stuck on the patch's int3).
# A run that failed for one of them runs once more from scratch and that
# run's result stands; the first run's files are kept in NAME-first-try/ and
# its TAP lines printed as comments, after one line
#   # retried: NAME: REASON
# (scripts/run-tests.sh counts these). A failure for any other reason is
# reported as it is, with no retry; so is a failure of the second run, a
# second stall included.
set -uo pipefail
here=$(dirname "$0")
args=("$@")
name=$(basename "${args[${#args[@]}-1]}")
builddir=$here/../../build
for ((i = 0; i < ${#args[@]} - 1; i++)); do
	case ${args[$i]} in
	--builddir) builddir=${args[$((i + 1))]} ;;
	--builddir=*) builddir=${args[$i]#*=} ;;
	esac
done
first=$(mktemp)
trap 'rm -f "$first" "$first.err" "$first.start"' EXIT
: > "$first.start"

"$here/run-scenario.sh" "${args[@]}" >"$first" 2>"$first.err"
rc=$?
run=$builddir/xen-tests/$name
log=$run/serial.log
reason=
# (written by this run, not left by an earlier one)
if [ $rc != 0 ] && [ "$run/boot-stalled" -nt "$first.start" ]; then
	reason=$(head -n1 "$run/boot-stalled")	# "dom0 boot stalled: ..."
elif [ $rc != 0 ] && grep -q "Triple fault" "$log" 2>/dev/null; then
	reason="guest triple fault (Xen logged it; the run failed)"
elif [ $rc != 0 ] && grep -q "kthread timer wakeup didn't happen" "$log" 2>/dev/null; then
	reason="a kernel's timers stopped (RCU stall, timer wakeup did not happen; the run failed)"
elif [ $rc != 0 ] && grep -q "soft lockup" "$log" 2>/dev/null &&
	grep -q "text_poke_bp" "$log" 2>/dev/null; then
	reason="a kernel stuck patching its own code (soft lockup in text_poke_bp; the run failed)"
fi
if [ -z "$reason" ]; then
	cat "$first"
	cat "$first.err" >&2
	exit $rc
fi
cat "$first.err" >&2
kept=$builddir/xen-tests/$name-first-try
rm -rf "$kept"
cp -a "$run" "$kept" 2>/dev/null
echo "# retried: $name: $reason"
case $reason in
"guest triple fault"*) grep -m3 "Triple fault" "$log" | sed 's/^/#   /' ;;
"a kernel's timers"*) grep -m3 "rcu:" "$log" | sed 's/^/#   /' ;;
"a kernel stuck"*) grep -m1 "soft lockup" "$log" | sed 's/^/#   /'
	grep -m1 "text_poke_bp" "$log" | sed 's/^/#   /' ;;
esac
echo "# the first run's results: $kept; its TAP lines:"
sed 's/^/#   /' "$first"
echo "# running $name again"
"$here/run-scenario.sh" "${args[@]}"
rc=$?
if [ $rc != 0 ] && [ -f "$run/boot-stalled" ]; then
	echo "# $name: dom0 boot stalled again on the retry: a failure"
fi
exit $rc
