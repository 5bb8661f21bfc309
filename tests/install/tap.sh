# SPDX-License-Identifier: GPL-2.0
# What the install tests share, sourced: TAP's ok() (its status is the
# case's, so `ok $? what || show why` shows why on a failure) and a
# scratch directory $tmp removed at exit.
n=0 failed=0
ok() {		# status description...
	local st=$1; shift
	n=$((n + 1))
	if [ "$st" -eq 0 ]; then echo "ok $n - $*"; else
		echo "not ok $n - $*"; failed=$((failed + 1)); fi
	return "$st"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
