#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guests' agent as the trace-cmd-xen-agent package installs it, for a
# scenario's guests: that .deb of the package suite (BUILDDIR/tests/package/
# debs-KEY, built from this very tree) unpacked with dpkg-deb -x into DEST.
#
#   tests/xen/lib/agent-package.sh SRCROOT BUILDDIR DEST
#
# Exit 0: DEST holds the package's files (usr/bin/trace-cmd-xen-agent,
# lib/systemd/system/trace-cmd-xen-agent.service, etc/default/...) and the
# .deb's path is on stdout. Exit 1, why on stdout: TCX_XEN_AGENT_PACKAGE=0,
# no such package (the package suite has not run), or it was built from
# another state of the tree.
set -u
if [ "${TCX_XEN_AGENT_PACKAGE:-1}" = 0 ]; then
	echo "TCX_XEN_AGENT_PACKAGE=0"
	exit 1
fi
src=${1:?usage: agent-package.sh SRCROOT BUILDDIR DEST} build=${2:?} dest=${3:?}
key=$("$src/tests/package/source-key.sh" "$src") || { echo "no source key"; exit 1; }
deb=$(compgen -G "$build/tests/package/debs-$key/trace-cmd-xen-agent_*_*.deb" | head -n1)
if [ -z "$deb" ]; then
	if compgen -G "$build/tests/package/debs-*/trace-cmd-xen-agent_*.deb" >/dev/null; then
		echo "the trace-cmd-xen-agent package under $build/tests/package was built from another state of the tree (meson test --suite package rebuilds it)"
	else
		echo "no trace-cmd-xen-agent package under $build/tests/package (meson test --suite package builds it)"
	fi
	exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
dpkg-deb -x "$deb" "$dest" || { echo "dpkg-deb -x $deb failed"; exit 1; }
for f in usr/bin/trace-cmd-xen-agent lib/systemd/system/trace-cmd-xen-agent.service \
	etc/default/trace-cmd-xen-agent; do
	[ -e "$dest/$f" ] || { echo "$deb has no $f"; exit 1; }
done
echo "$deb"
