#!/bin/bash
# The demonstration, as a new user runs it (TAP): scripts/demo.sh records a
# simulated host, then every command it prints for viewing the files is run
# as printed (KernelShark's, a GUI, is only checked to name files that exist).
#
#   test-demo.sh SOURCE-DIR BUILD-DIR
set -u
src=$1
build=$2
# TAP's ok() and $tmp, shared with the install tests
. "$src/tests/install/tap.sh"

TCX_DEMO_BUILD=$build DEMO_SECONDS=2 timeout 240 "$src/scripts/demo.sh" "$tmp/out" \
	>"$tmp/demo.out" 2>"$tmp/demo.err"
rc=$?
ok $rc "scripts/demo.sh runs to its end (exit $rc)"
[ $rc = 0 ] || sed 's/^/# /' "$tmp/demo.err" | tail -20

# The commands after "View:", one per line; a line ending in "&&" goes on.
python3 - "$tmp/demo.out" >"$tmp/cmds" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
at = next((i for i, l in enumerate(lines) if l.startswith('View:')), None)
cmds, cur = [], ''
for l in lines[at:] if at is not None else []:
    l = l[len('View:'):] if l.startswith('View:') else l
    cur += ' ' + l.strip()
    if not cur.endswith('&&'):
        cmds.append(cur.strip())
        cur = ''
for c in cmds:
    print(c)
EOF
ok $([ "$(wc -l <"$tmp/cmds")" -ge 3 ]; echo $?) "the demo prints its viewing commands ($(wc -l <"$tmp/cmds"))"

while read -r cmd; do
	case $cmd in
	kernelshark*)
		missing=
		for f in $cmd; do
			case $f in /*) [ -s "$f" ] || missing="$missing $f" ;; esac
		done
		ok $([ -z "$missing" ]; echo $?) "printed: $cmd: its files exist${missing:+ (missing:$missing)}"
		;;
	*)
		timeout 120 bash -c "$cmd" >"$tmp/cmd.out" 2>"$tmp/cmd.err"
		rc=$?
		ok $([ $rc = 0 ] && [ -s "$tmp/cmd.out" ]; echo $?) "printed: $cmd: exit $rc, with output"
		[ $rc = 0 ] || sed 's/^/# /' "$tmp/cmd.err" | tail -5
		;;
	esac
done <"$tmp/cmds"

echo "1..$n"
exit $((failed > 0))
