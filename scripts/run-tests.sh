#!/bin/bash
# Run every test of a configured build directory through meson (TAP, so each
# test case counts) and print one closing line "N passed, N failed, N skipped".
# Before it, "retried: N": how many runs were tried again because the
# emulator, not the project, failed them (the real-Xen tests print a line
# "# retried: NAME: REASON" each time; one "retry:" line here per retry).
# Exit status is non-zero if anything failed.
#
#   scripts/run-tests.sh BUILDDIR [meson test args...]
set -uo pipefail
builddir=${1:?usage: run-tests.sh BUILDDIR [meson test args]}
shift

# tracefs must be mounted for the tests that read this machine's ftrace.
if [ ! -e /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

meson test -C "$builddir" --print-errorlogs "$@"
rc=$?

# Count TAP results over the whole run from meson's JSON log.
python3 - "$builddir/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
reasons = []
retries = []
failures = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    res = t.get("result")
    retries += [t["name"] + ": " + l[len("# retried: "):]
                for l in t.get("stdout", "").splitlines()
                if l.startswith("# retried: ")]
    # meson records one entry per test; TAP subtests are in its stdout
    out = t.get("stdout", "").splitlines()
    sub = [l for l in out if l.startswith(("ok ", "not ok "))]
    # meson shows a failed TAP test's stderr only: show what it said on stdout
    # around each failed case
    for i, l in enumerate(out):
        if l.startswith("not ok"):
            why = []
            for m in reversed(out[max(0, i - 15):i]):
                if not m.startswith("#"):
                    break
                why.insert(0, m)
            why.append(l)
            for m in out[i + 1:i + 40]:
                if not m.startswith("#"):
                    break
                why.append(m)
            failures.append(t["name"] + ":\n    " + "\n    ".join(why))
    if sub:
        for l in sub:
            if l.startswith("not ok"):
                failed += 1
            elif "# SKIP" in l or "# skip" in l:
                skipped += 1
                reasons.append(t["name"] + ": " + l)
            else:
                passed += 1
        if res not in ("OK", "SKIP") and not any(l.startswith("not ok") for l in sub):
            failed += 1   # crashed or timed out after its last subtest
    elif res == "OK":
        passed += 1
    elif res == "SKIP":
        skipped += 1
        why = [l for l in t.get("stdout", "").splitlines() if "# SKIP" in l or "# skip" in l]
        reasons.append(t["name"] + ": " + (why[0] if why else "skipped (exit 77)"))
    else:
        failed += 1
for f in failures:
    print("failed:", f)
for r in reasons:
    print("skipped:", r)
for r in retries:
    print("retry:", r)
print(f"retried: {len(retries)}")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
