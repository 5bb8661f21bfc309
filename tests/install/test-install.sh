#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# meson install, TAP: into a temporary DESTDIR from this build directory,
# exactly the expected files (no simulator unless -Dinstall_sim=true), an
# installed front that finds the installed trace-cmd-xen, and bash
# completion that offers what trace-cmd-xen COMMAND -h lists.
#
#   test-install.sh BUILD_DIR INSTALL_SIM EXPECTED_PATH...
set -u
build=$1 install_sim=$2; shift 2
. "$(dirname "$0")/tap.sh"

dest=$tmp/dest

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/log" 2>&1
ok $? "meson install --destdir" || sed 's/^/#   /' "$tmp/log"

(cd "$dest" && find . ! -type d | sed 's|^\./|/|' | sort) >"$tmp/got"
printf '%s\n' "$@" | sort >"$tmp/want"
diff "$tmp/want" "$tmp/got" >"$tmp/diff"
ok $? "installs exactly: $(tr '\n' ' ' <"$tmp/want")" || sed 's/^/#   /' "$tmp/diff"

grep -E 'xensim|libxen' "$tmp/got" >"$tmp/sim"
if [ "$install_sim" = true ]; then
	[ -s "$tmp/sim" ]; ok $? "-Dinstall_sim=true: the simulator is installed"
else
	[ ! -s "$tmp/sim" ]; ok $? "the simulator and its shim libraries are not installed" ||
		sed 's/^/#   /' "$tmp/sim"
fi

bindir=$(dirname "$(grep '/trace-cmd-xen$' "$tmp/want" | grep /bin/)")
front=$dest$bindir/trace-cmd tcx=$dest$bindir/trace-cmd-xen
[ -n "$("$tcx" record -h)" ] && [ "$("$front" record --xen -h 2>&1)" = "$("$tcx" record -h 2>&1)" ]
ok $? "the installed trace-cmd record --xen runs the installed trace-cmd-xen"

# completion: candidates for "WORDS... CUR" from a completion file
complete_words() {	# file cur words...
	local file=$1 cur=$2; shift 2
	bash -c '. "$1"; shift; cmd=$1; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		 f=$(complete -p "$cmd" | sed "s/.*-F \([^ ]*\).*/\1/")
		 "$f" "$cmd" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		 printf "%s\n" "${COMPREPLY[@]}"' sh "$file" "$@" "$cur" | sort -u
}
compdir=$dest$(dirname "$(grep 'completions/trace-cmd-xen$' "$tmp/want")")
for cmd in record agent convert; do
	"$tcx" "$cmd" -h | grep -E '^  -' | grep -oE '(^  |, )--?[a-zA-Z][a-zA-Z0-9-]*' |
		sed 's/^[ ,]*//' | sort -u >"$tmp/help"
	complete_words "$compdir/trace-cmd-xen" - trace-cmd-xen "$cmd" >"$tmp/comp"
	diff "$tmp/help" "$tmp/comp" >"$tmp/diff"
	ok $? "completion of trace-cmd-xen $cmd - offers every option of its -h, no other" ||
		sed 's/^/#   /' "$tmp/diff"
done
[ "$(complete_words "$compdir/trace-cmd-xen" "" trace-cmd-xen | tr '\n' ' ')" = \
  "--help --version -h agent convert help record " ]
ok $? "completion of trace-cmd-xen offers its commands"
[ "$(complete_words "$compdir/trace-cmd" --x trace-cmd record -e sched)" = --xen ]
ok $? "completion of trace-cmd record -e sched --x offers --xen"
complete_words "$compdir/trace-cmd" --s trace-cmd agent -N h | grep -qx -- --secret-file
ok $? "completion of trace-cmd agent --s offers --secret-file"
[ "$(complete_words "$compdir/trace-cmd" --no-d trace-cmd record --xen)" = --no-dom0 ]
ok $? "completion of trace-cmd record --xen --no-d is trace-cmd-xen's (--no-dom0)"

echo "1..$n"
[ "$failed" -eq 0 ]
