#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# trace-cmd-xen agent's mistakes, TAP: each names what is wrong (not the
# usage only) and exits 2 (usage) or 1 (failure).
#
#   test-agent-usage.sh TRACE_CMD_XEN
set -u
tcx=$1
n=0 failed=0

check() {	# status pattern args...
	local want=$1 pat=$2 out st; shift 2
	out=$(timeout 20 "$tcx" agent "$@" 2>&1 >/dev/null)
	st=$?
	n=$((n + 1))
	if [ "$st" -eq "$want" ] && printf '%s\n' "$out" | grep -qF -- "$pat"; then
		echo "ok $n - agent $*: exit $st, says: $pat"
	else
		echo "not ok $n - agent $*: exit $st (want $want), said:"
		printf '%s\n' "$out" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
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
