#!/bin/sh
# Install, from Debian 12's archive, whatever the build and the tests need and
# this machine lacks. Idempotent; does nothing when all is present.
set -eu

PKGS="meson ninja-build pkg-config gcc clang libclang-rt-14-dev libc6-dev
	libtracecmd-dev libtracefs-dev libtraceevent-dev libcmocka-dev
	libxen-dev trace-cmd xen-utils-common xen-utils-4.17
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd
	python3 libkshark-dev libjson-c-dev
	scdoc man-db systemd librsvg2-bin libpng-dev"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >&2
