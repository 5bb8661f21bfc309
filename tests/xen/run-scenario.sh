#!/bin/bash
# Run one real-Xen scenario: Xen 4.17 + a Linux dom0 (+ the guests dom0
# creates) under qemu-system-x86_64 TCG, then the scenario's host-side checks.
#
#   tests/xen/run-scenario.sh [--builddir DIR] [--timeout S] [--tap]
#                             [--check-only] NAME|DIR
#
# NAME is a directory under tests/xen/scenarios/ (or a path to one), holding
#   dom0.sh         run by dom0's /init once the Xen toolstack is up; files
#                   it puts in /results come back to the host
#   scenario.conf   optional shell variables (see the defaults below)
#   guest/          optional: copied to /scenario in every guest, whose /init
#                   runs ROLE.sh (tcx.role=ROLE on the guest's cmdline) or guest.sh
#   *.cfg, ...      anything else is copied to /scenario in dom0
#   check           optional host-side executable, run after QEMU exited, in
#                   the returned results directory; prints "ok - ..." /
#                   "not ok - ..." lines (TAP, unnumbered)
# Output: TAP (one ok / not ok per check, plan at the end); exit status 0
# only if every check passed. The run's files stay under
# BUILDDIR/xen-tests/NAME/: serial.log (timestamped), out/ (the results),
# check.log. A run that exceeds its timeout is killed and fails with the tail
# of its log, and with the machine's state just before: Xen's debug keys
# (d 0 q r) through the console, and each CPU's registers twice from QEMU's
# monitor (cpu-state.txt); every QEMU it started is killed on exit, also on
# Ctrl-C.
# Without --tap the serial console is shown live; with --tap (meson) it goes
# only to serial.log, and a run that cannot happen here (no QEMU, too little
# memory) prints "1..0 # SKIP reason" and exits 0. In CI (CI=true) a missing
# QEMU is a failure, not a skip: the project installs it.
# --check-only boots nothing: it re-runs the host-side checks on the results
# of the previous run (e.g. after rebuilding the project's binaries).
# A dom0 that has not printed "@@ DOM0 UP" (its /init running) within
# TCX_XEN_BOOT_DEADLINE seconds (default 120) of QEMU's start has stalled in
# its boot (seen under TCG, in the dom0 kernel): QEMU is stopped there, the
# run fails with "dom0 boot stalled" and leaves the file boot-stalled in its
# directory, which run-retry.sh reads. 0 turns the deadline off.
# A kernel that logged an RCU stall whose timer wakeup did not happen (TCG
# stopped its timer interrupts) and then printed nothing for
# TCX_XEN_SILENCE seconds (default 120) is dead: QEMU is stopped there
# instead of at the timeout, so that run-retry.sh still has the time to run
# the scenario again. 0 turns this off.
# Likewise a kernel whose soft lockup in text_poke_bp (a static key's patch
# waiting for an IPI that TCG never delivers) has lasted TCX_XEN_LOCKUP
# seconds (default 120): it never comes back, and its watchdog keeps the
# console from falling silent. 0 turns this off.
# Environment: TCX_QEMU overrides the QEMU binary (the harness self-test
# uses a stub); TCX_XEN_BOOT_DEADLINE, above.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRCROOT=$(cd "$HERE/../.." && pwd)
BUILDDIR=$SRCROOT/build
TAP=0
CHECK_ONLY=0
TIMEOUT_ARG=
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) BUILDDIR=$2; shift 2 ;;
	--builddir=*) BUILDDIR=${1#*=}; shift ;;
	--timeout) TIMEOUT_ARG=$2; shift 2 ;;
	--tap) TAP=1; shift ;;
	--check-only) CHECK_ONLY=1; shift ;;
	-h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) echo "run-scenario: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { echo "usage: run-scenario.sh [--builddir DIR] [--timeout S] [--tap] [--check-only] NAME" >&2; exit 2; }
if [ -d "$1" ]; then SCEN=$(cd "$1" && pwd); else SCEN=$HERE/scenarios/$1; fi
NAME=$(basename "$SCEN")
[ -f "$SCEN/dom0.sh" ] || { echo "run-scenario: no scenario $SCEN/dom0.sh" >&2; exit 2; }
mkdir -p "$BUILDDIR"
BUILDDIR=$(cd "$BUILDDIR" && pwd)

# ---- scenario defaults (scenario.conf may override) -------------------------
TIMEOUT=300		# host seconds for the whole QEMU run
SMP=2			# pCPUs
MEM=3G			# machine memory (QEMU touches about 1 GB of it)
NEED_MEM_MB=3072	# skip below this much MemAvailable
CPU=qemu64,+svm,+npt	# +npt gives Xen HAP, which PVH/HVM need (no shadow paging in Debian's Xen)
DOM0_MEM=1024M
DOM0_BINARIES=""	# executables put in dom0's PATH: a name is a project
GUEST_BINARIES=""	# executable (from BUILDDIR), an absolute path a host one
GUEST_ROOT=""		# a host directory copied over every guest's root (a
			# package unpacked with dpkg-deb -x)
XEN_EXTRA=""		# appended to Xen's command line
HVM=0			# 1: dom0 gets the qemu-xen device model, hvmloader, SeaBIOS
OPT_IN=""		# VAR: with --tap (meson) run only if $VAR is 1 (costly scenarios)
OPT_IN_WHY=""		# why it is opt-in, for the skip line
# shellcheck disable=SC1091
[ -f "$SCEN/scenario.conf" ] && . "$SCEN/scenario.conf"
[ -n "$TIMEOUT_ARG" ] && TIMEOUT=$TIMEOUT_ARG
QEMU=${TCX_QEMU:-qemu-system-x86_64}
ACCEL=${TCX_QEMU_ACCEL:-tcg}	# e.g. tcg,thread=single (experiments)
# dom0's /init says "@@ DOM0 UP" 10-20 s after QEMU's start (docs/real-xen.md);
# no marker by this many seconds: the boot stalled
BOOT_DEADLINE=${TCX_XEN_BOOT_DEADLINE:-120}
SILENCE=${TCX_XEN_SILENCE:-120}
TIMER_STALL="kthread timer wakeup didn't happen"
LOCKUP=${TCX_XEN_LOCKUP:-120}
# seconds VAR VALUE: a whole number of seconds, or the run stops here
seconds() {
	case $2 in
	''|*[!0-9]*) echo "run-scenario: $1=$2: not a number of seconds" >&2; exit 2 ;;
	esac
}
seconds TCX_XEN_SILENCE "$SILENCE"
seconds TCX_XEN_LOCKUP "$LOCKUP"
seconds TCX_XEN_BOOT_DEADLINE "$BOOT_DEADLINE"

RUN=$BUILDDIR/xen-tests/$NAME
LOG=$RUN/serial.log
OUT=$RUN/out

# ---- TAP bookkeeping --------------------------------------------------------
n=0 nfail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else notok "$2"; fi; }
note() { echo "# $*"; }
finish() {
	# an error in this script ends the block it is in: that is no pass
	if [ $nfail = 0 ] && [ "$ran" != 1 ]; then
		notok "the run went through to its checks (cut short by an error in run-scenario.sh)"
	fi
	echo "1..$n"
	if [ $nfail -gt 0 ]; then
		note "$NAME: FAIL ($nfail of $n checks failed); serial log $LOG"
		exit 1
	fi
	note "$NAME: PASS ($n checks); serial log $LOG"
	exit 0
}
skip() {
	if [ "$TAP" = 1 ]; then echo "1..0 # SKIP $*"; exit 0; fi
	echo "run-scenario: SKIPPED: $*" >&2
	exit 77
}
show_tail() {	# FILE [LINES]
	note "---- last ${2:-40} lines of $1 ----"
	tail -n "${2:-40}" "$1" 2>/dev/null | sed 's/^/#   /'
}

t_start=$SECONDS t_boot=$SECONDS boot_s=0 ran=0 exported=1
if [ "$CHECK_ONLY" = 1 ]; then
	[ -d "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]
	exported=$?
	check $exported "results of the previous run present ($OUT)"
	ran=1
else
# ---- can it run here? ---------------------------------------------------------
if ! command -v "$QEMU" >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		notok "QEMU present ($QEMU not found; scripts/install-deps.sh installs qemu-system-x86)"
		finish
	fi
	skip "$QEMU not found (apt-get install qemu-system-x86, or scripts/install-deps.sh)"
fi
if [ "$TAP" = 1 ] && [ -n "$OPT_IN" ] && [ "${!OPT_IN:-0}" != 1 ]; then
	skip "opt-in scenario (${OPT_IN_WHY:-a long boot}): run it with $OPT_IN=1, or run-scenario.sh $NAME"
fi
avail=$(awk '/^MemAvailable:/{print int($2 / 1024)}' /proc/meminfo)
[ "$avail" -ge "$NEED_MEM_MB" ] ||
	skip "only ${avail} MiB of memory available, the scenario needs ${NEED_MEM_MB} MiB"

# ---- every process we start dies with us ---------------------------------------
QPID='' SPID=''
cleanup() {
	local p
	for p in $QPID $SPID; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
	done
	for p in $QPID $SPID; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$p" 2>/dev/null
	done
	QPID='' SPID=''
}
trap cleanup EXIT
trap 'note "interrupted"; cleanup; trap - EXIT; exit 130' INT
trap 'note "terminated"; cleanup; trap - EXIT; exit 143' TERM HUP

# ---- images: cached base + this run's overlays ---------------------------------
rm -rf "$RUN"
mkdir -p "$RUN" "$OUT"
IMGDIR=$("$HERE/lib/images.sh" "$BUILDDIR/xen-images" 2>"$RUN/images.log")
check $? "boot images built or reused (Debian 12 packages; $RUN/images.log)" ||
	true
if [ ! -f "$IMGDIR/.done" ] 2>/dev/null || [ -z "$IMGDIR" ]; then
	show_tail "$RUN/images.log" 20
	finish
fi
note "images: $IMGDIR ($(( SECONDS - t_start )) s)"

# find_binary NAME: a project executable in the build directory
find_binary() {
	local c
	for c in "$BUILDDIR/$1" "$BUILDDIR/cli/$1"; do
		[ -x "$c" ] && [ -f "$c" ] && { echo "$c"; return 0; }
	done
	c=$(find "$BUILDDIR" -maxdepth 3 -type f -name "$1" -perm -u+x 2>/dev/null | head -n1)
	[ -n "$c" ] && { echo "$c"; return 0; }
	return 1
}
# add_binaries STAGE NAMES...: the binary, the exact libraries it links (ldd
# closure) and the loader; /opt/tcx/bin/NAME runs it with those libraries
add_binaries() {
	local stage=$1 b path l; shift
	for b in "$@"; do
		if [ "${b#/}" != "$b" ]; then		# a host binary, e.g. /usr/bin/trace-cmd
			path=$b
			[ -x "$path" ] || { echo "host binary $path not found" >&2; return 1; }
			b=$(basename "$b")
		else
			path=$(find_binary "$b") || { echo "project binary '$b' not found in $BUILDDIR" >&2; return 1; }
		fi
		install -D -m755 "$path" "$stage/opt/tcx/libexec/$b"
		mkdir -p "$stage/opt/tcx/lib" "$stage/opt/tcx/bin" "$stage/lib64"
		if ldd "$path" | grep -q 'not found'; then
			echo "$path: unresolved libraries: $(ldd "$path" | grep 'not found')" >&2
			return 1
		fi
		for l in $(ldd "$path" | awk '/=> \//{print $3}'); do
			cp -L "$l" "$stage/opt/tcx/lib/"
		done
		cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$stage/opt/tcx/lib/"
		cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
		printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/tcx/lib exec /opt/tcx/libexec/%s "$@"\n' "$b" \
			> "$stage/opt/tcx/bin/$b"
		chmod 755 "$stage/opt/tcx/bin/$b"
		echo "$b <- $path" >&2
	done
}
mkcpio() {	# DIR OUTPUT
	(cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) > "$2"
}

overlays() {
	set -e
	local S=$RUN/stage
	rm -rf "$S"
	# guest: init, helpers, the scenario's guest/ files, project binaries
	mkdir -p "$S/domU/tcx" "$S/domU/scenario"
	install -m755 "$HERE/initramfs/domU-init" "$S/domU/init"
	install -m644 "$HERE/initramfs/lib.sh" "$S/domU/tcx/lib.sh"
	[ -d "$SCEN/guest" ] && cp -rL "$SCEN/guest/." "$S/domU/scenario/"
	[ -n "$GUEST_ROOT" ] && cp -a "$GUEST_ROOT/." "$S/domU/"
	# shellcheck disable=SC2086
	add_binaries "$S/domU" $GUEST_BINARIES
	mkcpio "$S/domU" "$RUN/domU-overlay.cpio.gz"
	# dom0: init, helpers, the scenario, the guests' initramfs, project binaries
	mkdir -p "$S/dom0/tcx" "$S/dom0/scenario" "$S/dom0/guest"
	install -m755 "$HERE/initramfs/dom0-init" "$S/dom0/init"
	install -m644 "$HERE/initramfs/lib.sh" "$S/dom0/tcx/lib.sh"
	(cd "$SCEN" && find . -mindepth 1 -maxdepth 1 ! -name guest ! -name check \
		-exec cp -rL {} "$S/dom0/scenario/" \;)
	# Linux takes concatenated cpio archives (later files win), but
	# libxenguest gunzips a PV ramdisk itself and stops after the first gzip
	# member: the guest's archive is one uncompressed stream.
	zcat "$IMGDIR/domU-base.cpio.gz" "$RUN/domU-overlay.cpio.gz" > "$S/dom0/guest/domU.cpio"
	# An HVM guest's ramdisk reaches it through qemu-xen's fw_cfg, which has
	# no DMA under Xen: SeaBIOS's linuxboot ROM reads it a byte per I/O exit
	# (about 150 KB/s under TCG). One gzip member is a third of the bytes.
	[ "$HVM" = 1 ] && gzip -6 -c "$S/dom0/guest/domU.cpio" > "$S/dom0/guest/domU.cpio.gz"
	# shellcheck disable=SC2086
	add_binaries "$S/dom0" $DOM0_BINARIES
	mkcpio "$S/dom0" "$RUN/dom0-overlay.cpio.gz"
	local hvm=()
	if [ "$HVM" = 1 ]; then
		[ -f "$IMGDIR/hvm.cpio.gz" ] || { cat "$IMGDIR/hvm.log"; echo "no HVM archive"; return 1; }
		hvm=("$IMGDIR/hvm.cpio.gz")
	fi
	cat "$IMGDIR/dom0-base.cpio.gz" "${hvm[@]}" "$RUN/dom0-overlay.cpio.gz" > "$RUN/dom0.cpio.gz"
	rm -rf "$S"
}
(overlays) >"$RUN/overlay.log" 2>&1
check $? "scenario, inits and project binaries packed for dom0 and guests ($RUN/overlay.log)"
if [ $nfail -gt 0 ]; then show_tail "$RUN/overlay.log" 20; finish; fi

# ---- boot ---------------------------------------------------------------------
EXPORT=$RUN/export.img		# dom0 writes a tar of /results here
rm -f "$EXPORT"; truncate -s 1G "$EXPORT"
DOM0_TIMEOUT=$(( TIMEOUT > 180 ? TIMEOUT - 75 : TIMEOUT * 2 / 3 ))
XEN_ARGS="console=com1 com1=115200,8n1 loglvl=all guest_loglvl=all dom0_mem=$DOM0_MEM,max:$DOM0_MEM dom0_max_vcpus=$SMP bootscrub=0 $XEN_EXTRA"
DOM0_ARGS="console=hvc0 earlyprintk=xen rdinit=/init loglevel=5 tcx.timeout=$DOM0_TIMEOUT"
note "booting $NAME: cpu $CPU, $SMP pCPUs, $MEM, timeout ${TIMEOUT}s; log $LOG"

# the serial console, each line stamped with seconds since QEMU started
stamp() {
	local start=${EPOCHREALTIME/./} line d
	while IFS= read -r line; do
		line=${line%$'\r'}
		d=$(( ${EPOCHREALTIME/./} - start ))
		printf '[%4d.%02d] %s\n' $((d / 1000000)) $(( (d % 1000000) / 10000 )) "$line"
	done
}
FIFO=$RUN/serial.fifo
rm -f "$FIFO"; mkfifo "$FIFO"
# there from the start: the reader opens it only once QEMU has the FIFO
: >"$LOG"
if [ "$TAP" = 1 ]; then
	stamp <"$FIFO" >"$LOG" &
else
	stamp <"$FIFO" | tee "$LOG" | sed 's/^/# /' &
fi
SPID=$!
# the console's input (Xen's debug keys) and QEMU's monitor, for dump_state()
KEYS=$RUN/serial-in.fifo MON=$RUN/monitor.sock
rm -f "$KEYS" "$MON"; mkfifo "$KEYS"
exec {KFD}<>"$KEYS"	# read-write: neither open waits for the other end
t_boot=$SECONDS q_start=${EPOCHREALTIME/./}
nice -n 5 "$QEMU" -accel "$ACCEL" -cpu "$CPU" -m "$MEM" -smp "$SMP" \
	-display none -monitor "unix:$MON,server=on,wait=off" -serial stdio -no-reboot \
	-drive "file=$EXPORT,format=raw,if=virtio,cache=unsafe" \
	-kernel "$IMGDIR/xen" -append "$XEN_ARGS" \
	-initrd "$IMGDIR/vmlinuz $DOM0_ARGS,$RUN/dom0.cpio.gz" \
	<"$KEYS" >"$FIFO" 2>&1 &
QPID=$!
timed_out=0 stalled=0 dom0_up=0 silent=0 locked=0 stuck=0 dump_at=
# Before a stuck machine is stopped, what it was doing: QEMU's view of
# each CPU twice, a second apart (lib/cpu-state.py: where it is, halted or
# spinning), then Xen's debug keys on its console (d: each pCPU's
# registers and call trace, symbolised by Xen; 0: dom0's vCPUs; q: every
# domain's vCPUs and their pending events; r: the run queues). A hang that
# the harness may not retry is then not only "the console went silent".
dump_state() {
	python3 "$HERE/lib/cpu-state.py" "$MON" > "$RUN/cpu-state.txt" 2>&1
	dump_at=$(wc -l < "$LOG" 2>/dev/null || echo 0)
	printf '\001\001\001' >&"$KFD"	# CTRL-a three times: input to Xen
	sleep 1
	for k in d 0 q r; do printf '%s' "$k" >&"$KFD"; sleep 1; done
	sleep 2
}
stop_qemu() {	# SIGTERM, SIGKILL if it is still there 2 s later
	kill -TERM "$QPID" 2>/dev/null
	for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QPID" 2>/dev/null || return 0; sleep 0.2; done
	kill -KILL "$QPID" 2>/dev/null
}
while kill -0 "$QPID" 2>/dev/null; do
	if [ $dom0_up = 0 ] && [ "$BOOT_DEADLINE" -gt 0 ] &&
		[ $(( ${EPOCHREALTIME/./} - q_start )) -ge $(( BOOT_DEADLINE * 1000000 )) ]; then
		if grep -q '@@ DOM0 UP' "$LOG" 2>/dev/null; then
			dom0_up=1
		else
			stalled=1
			stop_qemu
			break
		fi
	fi
	if [ $(( SECONDS - t_boot )) -ge "$TIMEOUT" ]; then
		timed_out=1
		dump_state
		stop_qemu
		break
	fi
	if [ "$SILENCE" -gt 0 ] && [ $(( EPOCHSECONDS - $(stat -c %Y "$LOG") )) -ge "$SILENCE" ] &&
		grep -q "$TIMER_STALL" "$LOG" 2>/dev/null; then
		silent=1
		dump_state
		stop_qemu
		break
	fi
	if [ "$LOCKUP" -gt 0 ] && grep -q "soft lockup" "$LOG" 2>/dev/null; then
		stuck=$(grep -oE 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s' "$LOG" |
			sed 's/.* for \([0-9]*\)s$/\1/' | sort -n | tail -n1)
		if [ "${stuck:-0}" -ge "$LOCKUP" ] && grep -q text_poke_bp "$LOG"; then
			locked=1
			dump_state
			stop_qemu
			break
		fi
	fi
	sleep 1
done
wait "$QPID" 2>/dev/null
qrc=$?
QPID=
wait "$SPID" 2>/dev/null
SPID=
rm -f "$FIFO"
exec {KFD}>&-
rm -f "$KEYS" "$MON"
boot_s=$(( SECONDS - t_boot ))
note "QEMU exited rc=$qrc after ${boot_s}s"

# ---- what the boot says -------------------------------------------------------------
marker() { grep -m1 -E "@@ $1" "$LOG" 2>/dev/null; }
if [ $stalled = 1 ]; then
	# the emulator, not the scenario: run-retry.sh runs it once more
	why="dom0 boot stalled: no \"@@ DOM0 UP\" within ${BOOT_DEADLINE}s of QEMU's start (TCX_XEN_BOOT_DEADLINE)"
	echo "$why" > "$RUN/boot-stalled"
	notok "dom0 booted within the boot deadline ($why; QEMU stopped)"
	show_tail "$LOG" 30
	rm -f "$EXPORT"
	note "times: images+overlays $(( t_boot - t_start ))s, QEMU ${boot_s}s"
	finish
fi
up=$(marker 'DOM0 UP' | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p')
[ -n "$up" ] && note "dom0 up ${up}s after QEMU's start (boot deadline ${BOOT_DEADLINE}s)"
show_stopped() {	# the log's tail before dump_state(), then what it found
	note "---- last 60 lines of $LOG before the machine's state was asked for ----"
	head -n "${dump_at:-0}" "$LOG" 2>/dev/null | tail -n 60 | sed 's/^/#   /'
	note "---- Xen's debug keys d, 0, q, r (at most 300 lines; all of it in $LOG) ----"
	tail -n +$(( ${dump_at:-0} + 1 )) "$LOG" 2>/dev/null | head -n 300 | sed 's/^/#   /'
	note "---- QEMU's CPUs, two looks a second apart ($RUN/cpu-state.txt) ----"
	grep '^summary: ' "$RUN/cpu-state.txt" 2>/dev/null | sed 's/^summary: /#   /'
}
if [ $timed_out = 1 ]; then
	notok "QEMU finished within ${TIMEOUT}s (killed: hang or far too slow)"
	show_stopped
elif [ $silent = 1 ]; then
	notok "QEMU finished within ${TIMEOUT}s (stopped after ${boot_s}s: a kernel's timers stopped, \"$TIMER_STALL\", and the console was silent for ${SILENCE}s: TCX_XEN_SILENCE)"
	show_stopped
elif [ $locked = 1 ]; then
	notok "QEMU finished within ${TIMEOUT}s (stopped after ${boot_s}s: a kernel stuck patching its own code, soft lockup in text_poke_bp for ${stuck}s: TCX_XEN_LOCKUP)"
	show_stopped
else
	check $(( qrc != 0 )) "QEMU exited cleanly (rc=$qrc)"
fi
marker 'TOOLSTACK UP' >/dev/null
check $? "dom0 booted and the Xen toolstack is up"
rcline=$(marker 'SCENARIO EXIT rc=')
src=$(echo "$rcline" | sed -n 's/.*SCENARIO EXIT rc=\([0-9]*\).*/\1/p')
check $(( ${src:-1} != 0 )) "dom0.sh exited 0 (${rcline:-no exit marker})"
[ "${src:-1}" != 0 ] && [ $timed_out = 0 ] && show_tail "$LOG" 40
# an empty disk reads as an empty tar: dom0-rc is the proof that dom0's
# /init finished and wrote the archive
exported=1
if tar -C "$OUT" -xf "$EXPORT" 2>/dev/null && [ -f "$OUT/dom0-rc" ]; then exported=0; fi
rm -f "$EXPORT"
check $exported "results returned through the virtio disk ($OUT)"
ran=1
fi

# ---- host-side checks -----------------------------------------------------------------
if [ -x "$SCEN/check" ] && [ $exported = 0 ]; then
	export TCX_BUILDDIR=$BUILDDIR TCX_SRCROOT=$SRCROOT TCX_SCENARIO=$SCEN \
		TCX_OUT=$OUT TCX_RUN=$RUN TCX_SERIAL_LOG=$LOG
	(cd "$OUT" && "$SCEN/check") >"$RUN/check.log" 2>&1
	crc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*|"ok") ok "$(echo "$line" | sed -E 's/^ok( [0-9]+)?( -)? ?//')" ;;
		"not ok"*) notok "$(echo "$line" | sed -E 's/^not ok( [0-9]+)?( -)? ?//')" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$RUN/check.log"
	check $crc "host check script exited 0 ($RUN/check.log)"
elif [ -x "$SCEN/check" ]; then
	notok "host checks not run: no results came back"
fi
note "times: images+overlays $(( t_boot - t_start ))s, QEMU ${boot_s}s, checks $(( SECONDS - t_boot - boot_s ))s"
finish
