#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The man pages, TAP: each renders with man -l without a warning, has
# trace-cmd's sections, and its OPTIONS list the same short and long
# options as `trace-cmd-xen [COMMAND] -h`, no more, no fewer.
#
#   test-man.sh TRACE_CMD_XEN PAGE.1...
set -u
tcx=$1; shift
. "$(dirname "$0")/tap.sh"
export MANWIDTH=80 LC_ALL=C.UTF-8

for page in "$@"; do
	name=$(basename "$page" .1)
	cmd=${name#trace-cmd-xen}; cmd=${cmd#-}
	man --warnings -l "$page" >"$tmp/text" 2>"$tmp/err"
	st=$?
	[ "$st" -eq 0 ] && [ ! -s "$tmp/err" ] && [ -s "$tmp/text" ]
	ok $? "man -l $name.1 renders without warnings" || sed 's/^/#   /' "$tmp/err"

	missing=
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "SEE ALSO"; do
		grep -qx "$s" "$tmp/text" || missing="$missing $s"
	done
	[ -z "$missing" ]
	ok $? "$name.1 has NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXAMPLES, SEE ALSO${missing:+ (lacks$missing)}"

	# the page: terms of OPTIONS, indented 7; -h: option lines, indented 2
	sed -n '/^OPTIONS$/,/^[A-Z]/p' "$tmp/text" | grep -E '^ {7}-' |
		grep -oE '(^ {7}|, )--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ ,]*//' |
		sort -u >"$tmp/man"
	"$tcx" ${cmd:+"$cmd"} -h | grep -E '^  -' |
		grep -oE '(^  |, )--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ ,]*//' |
		sort -u >"$tmp/help"
	[ -s "$tmp/help" ] && diff "$tmp/help" "$tmp/man" >"$tmp/diff"
	ok $? "$name.1 and trace-cmd-xen${cmd:+ $cmd} -h list the same $(wc -l <"$tmp/help") options" ||
		sed 's/^/#   /' "$tmp/diff"
done
echo "1..$n"
[ "$failed" -eq 0 ]
