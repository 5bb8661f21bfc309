#!/bin/bash
# Build (or reuse) the base boot images for the real-Xen tests, from Debian 12
# packages only: apt-get download + dpkg-deb -x, nothing is installed.
#
#   tests/xen/lib/images.sh CACHEDIR     prints the image directory on stdout
#
# CACHEDIR (normally BUILDDIR/xen-images) holds debs/ (the downloaded .debs,
# kept) and base-KEY/ (the images), where KEY hashes the exact package
# versions plus this script, so a second run with the same archive state
# downloads and builds nothing. base-KEY/ holds:
#   xen                 the hypervisor, gunzipped (multiboot ELF32 for -kernel)
#   vmlinuz             the Debian kernel (dom0 boots it as is)
#   dom0-base.cpio.gz   busybox, Xen 4.17 tools + their exact libraries, the
#                       xen + virtio modules, /guest/vmlinux (the same kernel,
#                       decompressed: PV/PVH guests skip the slow un-xz in dom0)
#   domU-base.cpio.gz   busybox and the xen modules a guest needs
#   hvm.cpio.gz         appended to dom0 for scenarios with HVM=1: the
#                       qemu-xen device model (qemu-system-xen) and its
#                       libraries, hvmloader, SeaBIOS, QEMU's keymaps and
#                       option ROMs (missing if the device model's libraries
#                       cannot be resolved here: see hvm.log)
#   versions.txt        what it was built from
# Scenario files, the inits and the project's binaries are NOT in here: they
# are small cpio archives appended per run (see run-scenario.sh), so editing
# them never triggers a rebuild.
set -euo pipefail

CACHE=${1:?usage: images.sh CACHEDIR}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
ARCH_LIB=usr/lib/x86_64-linux-gnu
XENBIN=usr/lib/xen-4.17/bin

log() { echo "images: $*" >&2; }

# ---- what to download: the kernel linux-image-amd64 points at, Xen 4.17 ----
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/{print $2; exit}'
}
KPKG=$(kernel_pkg)
if [ -z "$KPKG" ]; then
	log "apt lists empty or stale: apt-get update"
	apt-get update -q >&2 || { log "apt-get update failed (needs root and the Debian archive)"; exit 1; }
	KPKG=$(kernel_pkg)
	[ -n "$KPKG" ] || { log "cannot resolve linux-image-amd64"; exit 1; }
fi
PKGS="xen-hypervisor-4.17-amd64 xen-utils-4.17 xen-utils-common xenstore-utils
      libxencall1 libxendevicemodel1 libxenevtchn1 libxenforeignmemory1
      libxengnttab1 libxenhypfs1 libxenmisc4.17 libxenstore4 libxentoolcore1
      libxentoollog1 libyajl2 busybox-static $KPKG
      qemu-system-xen seabios qemu-system-data"

# one apt-cache call for all (about 0.5 s each otherwise)
# shellcheck disable=SC2086
versions=$(apt-cache policy $PKGS | awk '
	/^[^ ]/ { sub(/:$/, ""); p = $1 }
	/^  Candidate:/ && p != "" { if ($2 != "(none)") print p "=" $2; p = "" }')
for p in $PKGS; do
	echo "$versions" | grep -q "^$p=" || { log "no candidate version for $p"; exit 1; }
done
KEY=$( (echo "$versions"; cat "$0") | sha256sum | cut -c1-16)
OUT=$CACHE/base-$KEY
if [ -f "$OUT/.done" ]; then
	echo "$OUT"
	exit 0
fi

t0=$SECONDS
DEBS=$CACHE/debs
mkdir -p "$DEBS"
need=()
for pv in $versions; do
	p=${pv%%=*} v=${pv#*=}
	# .deb file names escape the epoch colon as %3a
	compgen -G "$DEBS/${p}_${v//:/%3a}_*.deb" >/dev/null || need+=("$pv")
done
if [ ${#need[@]} -gt 0 ]; then
	log "apt-get download ${#need[@]} packages"
	(cd "$DEBS" && apt-get download -q -o APT::Sandbox::User=root "${need[@]}" >&2) || {
		log "apt-get download failed (root and the Debian archive are needed once)"
		exit 1
	}
fi

TMP=$(mktemp -d "$CACHE/tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
mkdir -p "$ROOT"
for pv in $versions; do
	p=${pv%%=*} v=${pv#*=}
	for d in "$DEBS/${p}_${v//:/%3a}_"*.deb; do dpkg-deb -x "$d" "$ROOT"; done
done
KVER=${KPKG#linux-image-}
depmod -b "$ROOT" "$KVER"
MODS=$ROOT/lib/modules/$KVER/kernel/drivers

IMG=$TMP/img
mkdir -p "$IMG"
zcat "$ROOT/boot/xen-4.17-amd64.gz" > "$IMG/xen"
cp "$ROOT/boot/vmlinuz-$KVER" "$IMG/vmlinuz"

# ---- helpers ----------------------------------------------------------------
busybox_tree() {	# DIR
	mkdir -p "$1"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,var,root,lib64}
	cp "$ROOT/bin/busybox" "$1/bin/busybox"
	local a
	for a in $("$ROOT/bin/busybox" --list); do
		[ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"
	done
	echo "$KVER" > "$1/etc/kver"
}
copy_mods() {	# DIR module-paths-relative-to-kernel/drivers...
	local d=$1 m; shift
	for m in "$@"; do
		install -D -m644 "$MODS/$m" "$d/lib/modules/$KVER/kernel/drivers/$m"
	done
}
mkcpio() {	# DIR OUTPUT
	(cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -6) > "$2"
}

# ---- guest base -------------------------------------------------------------
D=$TMP/domU
busybox_tree "$D"
copy_mods "$D" xen/xen-evtchn.ko xen/xen-gntdev.ko xen/xen-gntalloc.ko
mkcpio "$D" "$IMG/domU-base.cpio.gz"

# ---- dom0 base --------------------------------------------------------------
D=$TMP/dom0
busybox_tree "$D"
copy_mods "$D" xen/xen-privcmd.ko xen/xenfs/xenfs.ko xen/xen-evtchn.ko \
	xen/xen-gntdev.ko xen/xen-gntalloc.ko \
	virtio/virtio_ring.ko virtio/virtio.ko virtio/virtio_pci_legacy_dev.ko \
	virtio/virtio_pci_modern_dev.ko virtio/virtio_pci.ko block/virtio_blk.ko
mkdir -p "$D/$XENBIN" "$D/$ARCH_LIB" "$D/etc/xen" "$D/guest"
# Xen tools at their Debian path: /usr/sbin/xl & co are wrappers that need
# xen-utils-common's version lookup; xl also looks for helpers there.
for b in xl xenstored xenconsoled xenconsole xen-init-dom0 xentrace \
	xentrace_setsize lsevtchn xenstore-control xenperf xen-diag xenpm; do
	install -m755 "$ROOT/$XENBIN/$b" "$D/$XENBIN/$b"
done
install -m755 "$ROOT/usr/bin/xenstore" "$D/usr/bin/xenstore"
for a in read write ls list rm exists chmod watch; do
	ln -sf xenstore "$D/usr/bin/xenstore-$a"
done
install -m755 "$ROOT/usr/bin/xenalyze" "$D/usr/bin/xenalyze"
# The exact libraries they link: the extracted Xen ones first, then the
# system's (libc, libgcc_s, ...), plus the loader.
libs=$(for f in "$D/$XENBIN"/* "$D/usr/bin/xenstore" "$D/usr/bin/xenalyze"; do
	LD_LIBRARY_PATH=$ROOT/$ARCH_LIB ldd "$f" | awk '/=> \//{print $3} /not found/{print "MISSING:" $1}'
done | sort -u)
if echo "$libs" | grep -q MISSING:; then
	log "unresolved libraries: $(echo "$libs" | grep MISSING: | tr '\n' ' ')"
	exit 1
fi
for l in $libs; do cp -L "$l" "$D/$ARCH_LIB/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$D/lib64/"
# glibc dlopen()s libgcc_s for pthread_cancel (libxl during xl create); ldd
# does not list it.
cp -L "/lib/x86_64-linux-gnu/libgcc_s.so.1" "$D/$ARCH_LIB/"
cp "$ROOT/etc/xen/xl.conf" "$D/etc/xen/xl.conf"
ln -s "../$ARCH_LIB" "$D/lib/x86_64-linux-gnu"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' > "$D/etc/ld.so.conf"
ldconfig -r "$D"
# Guest kernels: the ELF vmlinux saves libxenguest an un-xz under TCG
# (about 5 s per guest); the bzImage is kept for HVM direct boot.
cp "$IMG/vmlinuz" "$D/guest/vmlinuz"
off=$(grep -abo -m1 $'\xfd7zXZ' "$IMG/vmlinuz" | cut -d: -f1)
tail -c +$((off + 1)) "$IMG/vmlinuz" | xz -dc 2>/dev/null > "$D/guest/vmlinux" || true
head -c4 "$D/guest/vmlinux" | grep -q ELF || { log "vmlinux extraction failed"; exit 1; }
mkcpio "$D" "$IMG/dom0-base.cpio.gz"

# ---- HVM: the device model dom0 runs for each HVM guest, and its firmware --
hvm_archive() {
	local D=$TMP/hvm l
	mkdir -p "$D/usr/libexec" "$D/$ARCH_LIB" "$D/usr/share/qemu" "$D/usr/lib/xen-4.17/boot"
	install -m755 "$ROOT/usr/libexec/xen-qemu-system-i386" "$D/usr/libexec/"
	# its libraries: the extracted Xen ones, then the system's, which
	# qemu-system-x86 (which the harness needs anyway) brings in: same source
	# package, same dependencies
	l=$(LD_LIBRARY_PATH=$ROOT/$ARCH_LIB ldd "$D/usr/libexec/xen-qemu-system-i386")
	if echo "$l" | grep -q 'not found'; then
		echo "unresolved: $(echo "$l" | grep 'not found' | tr '\n' ' ')"
		return 1
	fi
	for l in $(echo "$l" | awk '/=> \//{print $3}'); do cp -L "$l" "$D/$ARCH_LIB/"; done
	install -m644 "$ROOT/usr/lib/xen-4.17/boot/hvmloader" "$D/usr/lib/xen-4.17/boot/"
	install -D -m644 "$ROOT/usr/share/seabios/bios-256k.bin" "$D/usr/share/seabios/bios-256k.bin"
	# "could not read keymap file 'en-us'" without these; the option ROMs
	# for direct kernel boot through fw_cfg
	cp -r "$ROOT/usr/share/qemu/keymaps" "$D/usr/share/qemu/"
	cp -L "$ROOT"/usr/share/qemu/linuxboot*.bin "$D/usr/share/qemu/"
	mkcpio "$D" "$IMG/hvm.cpio.gz"
}
hvm_archive > "$IMG/hvm.log" 2>&1 || log "no HVM support: $(cat "$IMG/hvm.log")"

{
	echo "# trace-cmd-xen real-Xen base images, key $KEY"
	echo "$versions"
	echo "kernel=$KVER"
} > "$IMG/versions.txt"
touch "$IMG/.done"
rm -rf "$OUT"
mv "$IMG" "$OUT"
# older keys (previous package versions or an older images.sh) are dead
for d in "$CACHE"/base-*; do [ "$d" = "$OUT" ] || rm -rf "$d"; done
log "built $OUT in $((SECONDS - t0)) s ($(du -sh "$OUT" | cut -f1))"
echo "$OUT"
