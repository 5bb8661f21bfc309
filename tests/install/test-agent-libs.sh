#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# trace-cmd-xen-agent, the guests' binary, TAP: it links what a guest has
# (libxenvchan, libxenstore, libtracefs) and loads none of dom0's
# libraries, directly or through another; trace-cmd-xen, built from the
# same tree, does need them, so the check can tell.
#
#   test-agent-libs.sh TRACE_CMD_XEN_AGENT TRACE_CMD_XEN
set -u
agent=$1 tcx=$2
. "$(dirname "$0")/tap.sh"
dom0_libs='libxenctrl|libxenforeignmemory|libxendevicemodel|libxenguest|libxenlight|libtracecmd'

needed() {	# binary: its DT_NEEDED names, one a line
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}
needed "$agent" >"$tmp/needed"
for lib in libxenvchan libxenstore libtracefs; do
	grep -q "^$lib\.so" "$tmp/needed"
	ok $? "trace-cmd-xen-agent needs $lib" || sed 's/^/#   /' "$tmp/needed"
done
! grep -E "^($dom0_libs)\.so" "$tmp/needed" >"$tmp/bad"
ok $? "trace-cmd-xen-agent needs no dom0 library itself" || sed 's/^/#   /' "$tmp/bad"

# what the loader brings in, libraries' own needs included
ldd "$agent" >"$tmp/ldd" 2>&1
ok $? "ldd trace-cmd-xen-agent" || sed 's/^/#   /' "$tmp/ldd"
! grep -q 'not found' "$tmp/ldd"
ok $? "... finds every library" || grep 'not found' "$tmp/ldd" | sed 's/^/#   /'
! grep -E "($dom0_libs)\.so" "$tmp/ldd" >"$tmp/bad"
ok $? "... and loads no dom0 library ($dom0_libs)" || sed 's/^/#   /' "$tmp/bad"

needed "$tcx" | grep -E "^($dom0_libs)\.so" >"$tmp/tcx"
grep -q '^libxenctrl\.so' "$tmp/tcx" && grep -q '^libxenforeignmemory\.so' "$tmp/tcx"
ok $? "trace-cmd-xen does need libxenctrl and libxenforeignmemory (what the check looks for)" ||
	sed 's/^/#   /' "$tmp/tcx"

"$agent" --help >"$tmp/help" 2>&1
st=$?
[ "$st" -eq 0 ] && grep -q -- '--xen' "$tmp/help"
ok $? "trace-cmd-xen-agent --help runs: exit $st" || sed 's/^/#   /' "$tmp/help"
[ "$(sed 1d "$tmp/help")" = "$("$tcx" agent --help 2>&1 | sed 1d)" ]
ok $? "... the options of trace-cmd-xen agent --help"
[ "$(stat -c %s "$agent")" -lt "$(stat -c %s "$tcx")" ]
ok $? "trace-cmd-xen-agent ($(stat -c %s "$agent") bytes) is smaller than trace-cmd-xen ($(stat -c %s "$tcx"))"
echo "1..$n"
[ "$failed" -eq 0 ]
