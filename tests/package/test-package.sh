#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages, TAP: dpkg-buildpackage builds them from this tree
# (kept in OUT_DIR/debs-KEY for this tree's contents, so a re-run skips
# it), lintian finds no error, and in a fresh Debian 12 root (mmdebstrap
# bookworm) they install with apt, divert the stock trace-cmd, record
# with `trace-cmd record --xen` against the simulator (copied in from the
# package build: it is not packaged), report, show their man page and run
# an agent that loads no dom0 library; removed, they leave the stock
# trace-cmd as it was.
#
#   test-package.sh SOURCE_DIR OUT_DIR
set -u
src=$1 out=$2
. "$src/tests/install/tap.sh"
mkdir -p "$out"
root=
trap 'rm -rf "$tmp"; [ -n "$root" ] && rm -rf "$root"' EXIT
skip_rest() {	# why
	echo "not ok $((n + 1)) - $1"
	n=$((n + 1)) failed=$((failed + 1))
	echo "1..$n"
	exit 1
}
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root (mmdebstrap, chroot, mount namespaces)"
	exit 0
fi
for prog in dpkg-buildpackage lintian mmdebstrap unshare; do
	command -v "$prog" >/dev/null ||
		skip_rest "$prog is missing (scripts/install-deps.sh installs it)"
done

# --- build, or take the build of the same tree ---
files() { "$src/tests/package/source-key.sh" --list "$src"; }
key=$("$src/tests/package/source-key.sh" "$src")
debs=$out/debs-$key
if [ -f "$debs/done" ]; then
	ok 0 "dpkg-buildpackage -b: the packages of this tree ($key), built before"
else
	rm -rf "$out"/debs-* "$out/build"
	mkdir -p "$out/build/src" "$debs.new/sim"
	files | (cd "$src" && tar --null -T - -cf -) | tar -xf - -C "$out/build/src"
	(cd "$out/build/src" && DEB_BUILD_OPTIONS=nocheck \
		dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1
	st=$?
	ok $st "dpkg-buildpackage -b -us -uc (DEB_BUILD_OPTIONS=nocheck): exit $st" ||
		{ tail -30 "$out/build.log" | sed 's/^/#   /'; skip_rest "no packages"; }
	grep -q -- '--buildtype=release' "$out/build.log" &&
		grep -q -- '-Dtests=false' "$out/build.log"
	ok $? "... a release build, without the tests"
	mv "$out/build"/*.deb "$out/build"/*.changes "$out/build"/*.buildinfo "$debs.new/"
	# the simulator and its shim libraries, from the same release build
	cp -a "$out/build/src"/obj-*/sim/xensim "$out/build/src"/obj-*/sim/libxen*.so* \
		"$debs.new/sim/"
	cp "$src/sim/hosts/two-guests.conf" "$debs.new/sim/host.conf"
	rm -rf "$out/build" "$debs.new/sim"/*.p
	mv "$debs.new" "$debs" && touch "$debs/done"
fi
pkgs="trace-cmd-xen-front trace-cmd-xen trace-cmd-xen-agent"
for p in $pkgs; do
	[ -f "$debs/${p}_"*_*.deb ]
	ok $? "built $p" || skip_rest "no $p package"
done

lintian --allow-root "$debs"/*.changes >"$tmp/lintian" 2>&1
st=$?
[ "$st" -eq 0 ] && ! grep -q '^E: ' "$tmp/lintian"
ok $? "lintian on the .changes and its .debs: exit $st, no error" ||
	sed 's/^/#   /' "$tmp/lintian"
grep -v '^E: ' "$tmp/lintian" | sed 's/^/# lintian: /'

# --- a fresh Debian 12 root ---
# the Debian 12 archive this machine's apt uses (its updates and security
# too: the packages depend on the versions built against), else
# mmdebstrap's own default
mirrors=()
while read -r uri suite; do
	case $suite in bookworm|bookworm-*) mirrors+=("deb $uri $suite main") ;; esac
done < <(apt-get indextargets --format '$(REPO_URI) $(CODENAME)' \
	'Identifier: Packages' 'Component: main' 'Origin: Debian' 2>/dev/null | sort -u)
root=$(mktemp -d "$out/root.XXXXXX")
mmdebstrap --variant=apt --include=trace-cmd,man-db --skip=cleanup/apt/lists \
	bookworm "$root" "${mirrors[@]}" </dev/null >"$tmp/mmdebstrap" 2>&1
st=$?
ok $st "mmdebstrap bookworm (${mirrors[*]:-its default mirror}) with the stock trace-cmd: exit $st" ||
	{ tail -20 "$tmp/mmdebstrap" | sed 's/^/#   /'; skip_rest "no root"; }
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null

in_root() {	# command...: run in the root, with /dev, /proc, /sys (tracefs) in a
		# mount namespace of its own, so nothing stays mounted after it
	unshare --mount --propagation private -- sh -c '
		r=$1; shift
		mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" &&
			mount --rbind /sys "$r/sys" && exec chroot "$r" "$@"' \
		sh "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
stock_sum=$(sha256sum <"$root/usr/bin/trace-cmd")
in_root trace-cmd list -o >/dev/null 2>&1
ok $? "the root's stock trace-cmd runs"

# --- install ---
mkdir "$root/tmp/debs"
for p in $pkgs; do cp "$debs/${p}_"*_*.deb "$root/tmp/debs/"; done
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/debs/*.deb' \
	>"$tmp/apt" 2>&1
st=$?
ok $st "apt-get install the three packages: exit $st" || tail -20 "$tmp/apt" | sed 's/^/#   /'
in_root dpkg-divert --list /usr/bin/trace-cmd >"$tmp/divert"
grep -q 'diversion of /usr/bin/trace-cmd to /usr/bin/trace-cmd.distrib by trace-cmd-xen-front' "$tmp/divert"
ok $? "dpkg-divert: /usr/bin/trace-cmd to /usr/bin/trace-cmd.distrib by trace-cmd-xen-front" ||
	sed 's/^/#   /' "$tmp/divert"
[ "$(sha256sum <"$root/usr/bin/trace-cmd.distrib")" = "$stock_sum" ] &&
	[ "$(sha256sum <"$root/usr/bin/trace-cmd")" != "$stock_sum" ]
ok $? "the stock trace-cmd is /usr/bin/trace-cmd.distrib, unchanged; /usr/bin/trace-cmd is the front"
[ -L "$root/etc/systemd/system/multi-user.target.wants/trace-cmd-xen-agent.service" ]
ok $? "trace-cmd-xen-agent.service is enabled (it runs in Xen guests only)"
# as installed, its binary and man page found in the root (the root has
# no systemd of its own to verify with)
unit=$root/lib/systemd/system/trace-cmd-xen-agent.service
sed "s|^ExecStart=|ExecStart=$root|" "$unit" >"$tmp/trace-cmd-xen-agent.service" 2>&1
MANPATH=$root/usr/share/man systemd-analyze verify "$tmp/trace-cmd-xen-agent.service" \
	>"$tmp/verify" 2>&1
st=$?
[ "$st" -eq 0 ] && [ ! -s "$tmp/verify" ] &&
	grep -qx 'ExecStart=/usr/bin/trace-cmd-xen-agent $TRACE_CMD_XEN_AGENT_OPTS' "$unit"
ok $? "systemd-analyze verify on the installed unit: exit $st, nothing to say; it runs /usr/bin/trace-cmd-xen-agent" ||
	sed 's/^/#   /' "$tmp/verify"

# --- use ---
mkdir -p "$root/opt/xensim"
cp -a "$debs/sim/." "$root/opt/xensim/"
in_root bash -c '
	/opt/xensim/xensim run /opt/xensim/host.conf --dir /tmp/host & sim=$!
	for _ in $(seq 200); do [ -e /tmp/host/truth ] && break; sleep 0.05; done
	XENSIM_HOST=/tmp/host LD_LIBRARY_PATH=/opt/xensim \
		LD_DEBUG=files LD_DEBUG_OUTPUT=/tmp/ld-record \
		trace-cmd record --xen -e sched -o /tmp/x.dat -- sleep 1
	st=$?
	kill $sim; wait $sim
	exit $st' >"$tmp/record" 2>&1
st=$?
ok $st "trace-cmd record --xen -e sched -o x.dat -- sleep 1 (xensim): exit $st" ||
	sed 's/^/#   /' "$tmp/record"
in_root trace-cmd report -i /tmp/x.dat >"$tmp/report" 2>&1
st=$?
[ "$st" -eq 0 ] && [ "$(grep -c runstate_change "$tmp/report")" -gt 0 ]
ok $? "trace-cmd report -i x.dat (the stock one): exit $st, $(grep -c runstate_change "$tmp/report") runstate_change events of the hypervisor" ||
	head -5 "$tmp/report" | sed 's/^/#   /'
in_root trace-cmd report -i /tmp/x-dom0.dat >"$tmp/report" 2>&1
st=$?
[ "$st" -eq 0 ] && [ "$(grep -c sched_switch "$tmp/report")" -gt 0 ]
ok $? "trace-cmd report -i x-dom0.dat: exit $st, $(grep -c sched_switch "$tmp/report") sched_switch events of dom0" ||
	head -5 "$tmp/report" | sed 's/^/#   /'
# libtracecmd is analyze's, loaded when it reads a file: a recording never loads it
cat "$root"/tmp/ld-record.* 2>/dev/null |
	sed -n 's/.*file=\([^ ]*\) .*generating link map.*/\1/p' | sort -u >"$tmp/loaded"
grep -q '^libxenctrl' "$tmp/loaded" && ! grep -E '^lib(tracecmd|zstd)\.' "$tmp/loaded"
ok $? "... the recording loaded libxenctrl, not libtracecmd or libzstd: $(tr '\n' ' ' <"$tmp/loaded")"
in_root trace-cmd-xen analyze /tmp/x.dat >"$tmp/analyze" 2>&1
st=$?
[ "$st" -eq 0 ] && grep -q '^records  *[1-9][0-9]* read' "$tmp/analyze"
ok $? "trace-cmd-xen analyze x.dat (libtracecmd loaded then): exit $st" ||
	head -5 "$tmp/analyze" | sed 's/^/#   /'
mkdir -p "$root/tmp/badlib"
: >"$root/tmp/badlib/libtracecmd.so.1"
in_root env LD_LIBRARY_PATH=/tmp/badlib trace-cmd-xen analyze /tmp/x.dat >"$tmp/analyze" 2>&1
st=$?
[ "$st" -ne 0 ] && grep -q 'cannot load libtracecmd.so.1 .*badlib/libtracecmd.so.1' "$tmp/analyze"
ok $? "... with a broken libtracecmd.so.1 first in the path: exit $st, the library and why" ||
	head -5 "$tmp/analyze" | sed 's/^/#   /'
in_root man -P cat trace-cmd-xen-record >"$tmp/man" 2>&1
st=$?
[ "$st" -eq 0 ] && grep -q 'trace-cmd-xen-record' "$tmp/man" && grep -q -- '--xen' "$tmp/man"
ok $? "man trace-cmd-xen-record: exit $st" || head -5 "$tmp/man" | sed 's/^/#   /'
in_root man -w trace-cmd-xen-agent >/dev/null 2>&1
ok $? "man trace-cmd-xen-agent is there too"

# the guests' agent: what the loader brings in, as it runs
in_root env LD_DEBUG=files trace-cmd-xen-agent --xen >"$tmp/agent" 2>&1
st=$?
[ "$st" -eq 1 ] && grep -q 'trace-cmd-xen-agent: --xen: this is not a Xen guest' "$tmp/agent"
ok $? "trace-cmd-xen-agent --xen in a root without Xen: exit $st, not a Xen guest" ||
	grep -v 'file=\|^ *[0-9]*: *$' "$tmp/agent" | sed 's/^/#   /'
sed -n 's/.*file=\([^ ]*\) .*generating link map.*/\1/p' "$tmp/agent" | sort -u >"$tmp/loaded"
grep -q '^libxenvchan' "$tmp/loaded" && ! grep -E '^lib(xenctrl|xenforeignmemory|xendevicemodel|xenguest|xenlight|tracecmd)\.' "$tmp/loaded"
ok $? "... it loaded libxenvchan and no dom0 library: $(tr '\n' ' ' <"$tmp/loaded")"
in_root trace-cmd agent --xen >"$tmp/agent" 2>&1
grep -q '^trace-cmd-xen-agent: --xen: this is not a Xen guest' "$tmp/agent"
ok $? "trace-cmd agent --xen runs trace-cmd-xen-agent" || sed 's/^/#   /' "$tmp/agent"

# --- remove ---
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q '"$pkgs" >"$tmp/apt" 2>&1
st=$?
ok $st "apt-get purge $pkgs: exit $st" || tail -20 "$tmp/apt" | sed 's/^/#   /'
[ "$(sha256sum <"$root/usr/bin/trace-cmd")" = "$stock_sum" ] && [ ! -e "$root/usr/bin/trace-cmd.distrib" ]
ok $? "/usr/bin/trace-cmd is the stock one again (same sha256), no trace-cmd.distrib left"
[ -z "$(in_root dpkg-divert --list /usr/bin/trace-cmd)" ]
ok $? "no diversion left"
left=$(cd "$root" && ls -d usr/bin/trace-cmd-xen* etc/default/trace-cmd-xen-agent \
	lib/systemd/system/trace-cmd-xen-agent.service 2>/dev/null)
[ -z "$left" ]
ok $? "none of their files left${left:+: $left}"
in_root trace-cmd list -o >/dev/null 2>&1
ok $? "the stock trace-cmd runs"
echo "1..$n"
[ "$failed" -eq 0 ]
