#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# trace-cmd-xen-agent.service, TAP: installed with meson install into a
# temporary DESTDIR, `systemd-analyze verify` finds nothing to say about it
# (its binary, its man page), its options file is the one installed, and
# its command line is the guests' agent binary's.
#
#   test-systemd.sh BUILD_DIR UNIT_PATH DEFAULTS_PATH
set -u
build=$1 unit=$2 defaults=$3
. "$(dirname "$0")/tap.sh"
dest=$tmp/dest

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/log" 2>&1
ok $? "meson install --destdir" || sed 's/^/#   /' "$tmp/log"
[ -f "$dest$unit" ] && [ -f "$dest$defaults" ]
ok $? "installs $unit and $defaults"

# verify the unit as installed, its paths moved under DESTDIR
exec_line=$(sed -n 's/^ExecStart=//p' "$dest$unit")
bin=${exec_line%% *}
mandir=$(cd "$dest" && find . -name trace-cmd-xen-agent.1 | sed 's|^\.||; s|/man1/.*||')
sed "s|^ExecStart=|ExecStart=$dest|" "$dest$unit" >"$tmp/trace-cmd-xen-agent.service"
verify() {	# unit file
	MANPATH=$dest$mandir systemd-analyze verify "$1" >"$tmp/verify" 2>&1
}
verify "$tmp/trace-cmd-xen-agent.service"
st=$?
[ "$st" -eq 0 ] && [ ! -s "$tmp/verify" ]
ok $? "systemd-analyze verify: exit $st, nothing to say" || sed 's/^/#   /' "$tmp/verify"

# ... and it does speak up about a broken unit
mkdir "$tmp/broken"
sed 's/^Restart=.*/Restart=sometimes/; s|^ExecStart=[^ ]*|&-missing|' \
	"$tmp/trace-cmd-xen-agent.service" >"$tmp/broken/trace-cmd-xen-agent.service"
verify "$tmp/broken/trace-cmd-xen-agent.service"
grep -q "restart specifier" "$tmp/verify" && grep -q "missing is not executable" "$tmp/verify"
ok $? "systemd-analyze verify reports a bad Restart= and a missing binary"

grep -qx "EnvironmentFile=-$defaults" "$dest$unit"
ok $? "EnvironmentFile=-$defaults, the file installed"
[ -x "$dest$bin" ] && [ "$(basename "$bin")" = trace-cmd-xen-agent ] &&
	[ "${exec_line#* }" = '$TRACE_CMD_XEN_AGENT_OPTS' ]
ok $? "ExecStart=$exec_line: the installed trace-cmd-xen-agent"
grep -qx 'Environment=TRACE_CMD_XEN_AGENT_OPTS=--xen' "$dest$unit"
ok $? "without an options file it runs agent --xen"
! grep -q '^TRACE_CMD_XEN_AGENT_OPTS' "$dest$defaults"
ok $? "the installed options file sets nothing until edited"

# what it runs, here (no Xen): the agent's message, as the journal gets it
"$dest$bin" --xen >"$tmp/out" 2>&1
st=$?
[ "$st" -eq 1 ] && grep -q "not a Xen guest" "$tmp/out"
ok $? "its command outside Xen: exit 1 and says it is not a Xen guest" ||
	sed 's/^/#   /' "$tmp/out"
grep -qx 'ConditionVirtualization=xen' "$dest$unit"
ok $? "ConditionVirtualization=xen: not started at all outside Xen"
echo "1..$n"
[ "$failed" -eq 0 ]
