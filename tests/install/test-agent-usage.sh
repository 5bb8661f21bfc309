#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The agent's mistakes, TAP, from `trace-cmd-xen agent` and from the
# guests' trace-cmd-xen-agent alike: each names what is wrong (not the
# usage only) and exits 2 (usage) or 1 (failure).
#
#   test-agent-usage.sh TRACE_CMD_XEN TRACE_CMD_XEN_AGENT
set -u
tcx=$1 agent=$2
n=0 failed=0

check() {	# status pattern args...
	local want=$1 pat=$2 out st name; shift 2
	for name in "trace-cmd-xen agent" trace-cmd-xen-agent; do
		if [ "$name" = trace-cmd-xen-agent ]; then
			out=$(timeout 20 "$agent" "$@" 2>&1 >/dev/null)
		else
			out=$(timeout 20 "$tcx" agent "$@" 2>&1 >/dev/null)
		fi
		st=$?
		n=$((n + 1))
		if [ "$st" -eq "$want" ] && printf '%s\n' "$out" | grep -qF -- "$pat" &&
		   printf '%s\n' "$out" | grep -q "^$name: "; then
			echo "ok $n - $name $*: exit $st, says: $pat"
			continue
		fi
		echo "not ok $n - $name $*: exit $st (want $want), said:"
		printf '%s\n' "$out" | sed 's/^/#   /'
		failed=$((failed + 1))
	done
}

check 2 "-N 10.0.0.1: --secret-file FILE (hosts must know its secret) or --insecure" \
	-N 10.0.0.1
check 2 "-N 10.0.0.1: --secret-file FILE" -N 10.0.0.1 -p 8000
check 2 "--xen (in a Xen guest) or -N HOST (over TCP) is missing"
check 2 "--xen (in a Xen guest) or -N HOST (over TCP) is missing" --insecure
check 2 "exclude each other" --xen -N 10.0.0.1
check 2 "unexpected argument 'extra'" -N 10.0.0.1 --insecure extra

# Outside a Xen guest (this machine: no xenstore at all).
n=$((n + 1))
if [ -e /dev/xen/xenbus ] || [ -e /proc/xen/xenbus ] ||
   [ -e /var/run/xenstored/socket ]; then
	echo "ok $n # SKIP this machine reaches a xenstore"
else
	n=$((n - 1))
	check 1 "--xen: this is not a Xen guest, or its xenstore is not reachable" --xen
	check 1 "--xen: this is not a Xen guest" --xen --domid 3
fi
echo "1..$n"
[ "$failed" -eq 0 ]
