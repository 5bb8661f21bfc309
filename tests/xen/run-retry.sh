#!/bin/bash
# run-scenario.sh for meson, with one more try when a guest triple-faulted.
#
#   tests/xen/run-retry.sh --tap --builddir DIR NAME
#
# Under QEMU TCG, PVH guests sometimes triple-fault in Xen's emulation
# (docs/real-xen.md: seen with both tsc_mode native and default, at boot,
# mid-session and after it); the scenario then fails for a reason that is
# not the project's. When a run fails and Xen logged "Triple fault" on its
# serial console, the scenario runs once more from scratch and that run's
# result stands; the first run's TAP lines are kept as comments. A failure
# without a triple fault is reported as it is, with no retry.
set -uo pipefail
here=$(dirname "$0")
args=("$@")
name=${args[${#args[@]}-1]}
builddir=.
for ((i = 0; i < ${#args[@]} - 1; i++)); do
	[ "${args[$i]}" = --builddir ] && builddir=${args[$((i + 1))]}
done
first=$(mktemp)
trap 'rm -f "$first" "$first.err"' EXIT

"$here/run-scenario.sh" "${args[@]}" >"$first" 2>"$first.err"
rc=$?
log=$builddir/xen-tests/$name/serial.log
if [ $rc = 0 ] || ! grep -q "Triple fault" "$log" 2>/dev/null; then
	cat "$first"
	cat "$first.err" >&2
	exit $rc
fi
cat "$first.err" >&2
kept=$builddir/xen-tests/$name-first-try
rm -rf "$kept"
cp -a "$builddir/xen-tests/$name" "$kept" 2>/dev/null
echo "# $name: the first run failed and Xen logged a guest triple fault"
grep -m3 "Triple fault" "$log" | sed 's/^/#   /'
echo "# its results: $kept; its TAP lines:"
sed 's/^/#   /' "$first"
echo "# running $name again"
exec "$here/run-scenario.sh" "${args[@]}"
