#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Conformance of tdat's files with the stock trace-cmd 3.1.6 and libtracecmd:
# files written by tdat-gen are read by `trace-cmd dump/report/convert` and by
# tdat-check (public libtracecmd API). TAP, one line per check.
#
#   tdat-conformance.sh TDAT-GEN TDAT-CHECK
set -u
gen=$1
check=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/tdat-conf-XXXXXX")
trap 'rm -rf "$T"' EXIT
n=0

ok() {	# status description...
	local st=$1; shift
	n=$((n + 1))
	if [ "$st" = 0 ]; then echo "ok $n - $*"; else echo "not ok $n - $*"; fi
}

# pass the checker's unnumbered TAP lines through, numbered; a checker
# that dies is a failure of its own. It links libtracecmd only (not tdat),
# and libtracecmd 1.3.1 leaks its v6 clock string: no leak check there.
checker() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok 0 "${line#ok - }" ;;
		"not ok - "*) ok 1 "${line#not ok - }" ;;
		"exit "*) [ "${line#exit }" = 0 ] || ok 1 "tdat-check $1 exits ${line#exit }" ;;
		*) echo "# $line" ;;
		esac
	done < <(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$check" "$@" 2>&1; echo "exit $?")
}

# report output that no reader complaint may appear in
clean() {
	! grep -qiE 'UNKNOWN EVENT|bad page|possibly truncated|failed|error|warning' "$1"
}

N=1000
for V in 6 7; do
	W=$((13 - V))	# the other version
	p=$T/p$V.dat
	# small regions: growth happens on the way
	"$gen" plain "$p" $V $N 3 4096
	ok $? "v$V: tdat-gen writes $N events on 3 CPUs"

	trace-cmd dump --summary -i "$p" >"$T/sum" 2>&1
	ok $? "v$V: trace-cmd dump --summary"
	trace-cmd dump --options -i "$p" >"$T/opt" 2>&1
	st=$?
	for o in TRACECLOCK TRACEID UNAME VERSION CPUSTAT; do
		grep -q "Option $o" "$T/opt" || st=1
	done
	if [ $V = 7 ]; then
		grep -q "Option BUFFER" "$T/opt" && grep -q "Option CPUCOUNT" "$T/opt" || st=1
		grep -q '^3 \[CPUs\]' "$T/opt" || st=1
	fi
	ok $st "v$V: dump --options decodes every option"

	trace-cmd report -i "$p" >"$T/rep$V" 2>&1
	st=$?
	ok $st "v$V: trace-cmd report exits 0"
	clean "$T/rep$V"
	ok $? "v$V: report has no unknown events, bad pages or truncation"
	c=$(grep -c 'xen_seq:' "$T/rep$V")
	[ "$c" = $N ]
	ok $? "v$V: report shows $c of $N events"
	grep -o 'val=[0-9]*' "$T/rep$V" | cut -d= -f2 >"$T/vals"
	seq 0 $((N - 1)) | cmp -s - "$T/vals"
	ok $? "v$V: report lists the events in write order"
	grep -q 'CPU:[0-9] \[5 EVENTS DROPPED\]' "$T/rep$V"
	ok $? "v$V: report shows the 5 lost events"
	trace-cmd report --stat -i "$p" >"$T/stat" 2>&1
	[ $? = 0 ] && [ "$(grep -c 'overrun: 0' "$T/stat")" = 3 ]
	ok $? "v$V: report --stat shows the CPUSTAT of 3 CPUs"
	trace-cmd report --ts-check -i "$p" >"$T/tsc" 2>&1
	[ $? = 0 ] && clean "$T/tsc" && ! grep -qi 'backwards' "$T/tsc"
	ok $? "v$V: report --ts-check finds no time going back"

	checker seq "$p" $N 3 1

	# convert to the other version and back; zstd as well
	trace-cmd convert -i "$p" -o "$T/cv$W.dat" --file-version $W --compression none >/dev/null 2>&1 &&
		trace-cmd report -i "$T/cv$W.dat" >"$T/rcv" 2>&1 && cmp -s "$T/rep$V" "$T/rcv"
	ok $? "v$V: convert to v$W reports the same"
	trace-cmd convert -i "$T/cv$W.dat" -o "$T/back.dat" --file-version $V --compression none >/dev/null 2>&1 &&
		trace-cmd report -i "$T/back.dat" >"$T/rback" 2>&1 && cmp -s "$T/rep$V" "$T/rback"
	ok $? "v$V: converted back to v$V reports the same"
	trace-cmd convert -i "$p" -o "$T/z.dat" --file-version 7 --compression zstd >/dev/null 2>&1 &&
		trace-cmd report -i "$T/z.dat" >"$T/rz" 2>&1 && cmp -s "$T/rep$V" "$T/rz"
	ok $? "v$V: convert to v7 zstd reports the same"

	# host and guest: GUEST, TRACEID, TIME_SHIFT, TSC2NSEC
	h=$T/host$V.dat
	g=$T/guest$V.dat
	"$gen" host "$h" $V && "$gen" guest "$g" $V
	ok $? "v$V: tdat-gen writes host and guest files"
	trace-cmd dump --options -i "$h" >"$T/hopt" 2>&1 &&
		grep -q '^guest1 \[Guest name\]' "$T/hopt" && grep -q 'Option TSC2NSEC' "$T/hopt"
	ok $? "v$V: host dump --options shows GUEST guest1 and TSC2NSEC"
	trace-cmd dump --options -i "$g" >"$T/gopt" 2>&1 &&
		grep -q 'Option TimeShift' "$T/gopt" && grep -q '0x1111222233334444 \[peer' "$T/gopt"
	ok $? "v$V: guest dump --options shows the TIME_SHIFT (appended after close in v7)"
	# TSC2NSEC with the x86-tsc clock: report converts to ns itself
	trace-cmd report -i "$h" >"$T/hrep" 2>&1
	first=$(grep -m1 'kvm_entry:' "$T/hrep" | grep -o '[0-9]*\.[0-9]*:' | tr -d :)
	ns=$(( (9000000 * 1398101) >> 22 ))
	us=$(( (ns + 500) / 1000 ))	# report rounds to the microsecond
	want=$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))
	[ "$first" = "$want" ]
	ok $? "v$V: host report shows TSC 9000000 as $want s (got $first)"
	trace-cmd report -t -i "$h" -i "$g" >"$T/hg" 2>&1
	st=$?
	clean "$T/hg" || st=1
	[ "$(grep -c 'host[67].dat: .*kvm_e' "$T/hg")" = 400 ] &&
		[ "$(grep -c 'guest[67].dat: .*xen_seq' "$T/hg")" = 400 ] || st=1
	ok $st "v$V: report -i host -i guest shows all 800 events"
	checker hostguest "$h" "$g" "$T/want"
	# report's own interleaving and ns times against the checker's list
	sed -n 's/^ *host[67]\.dat: .* \([0-9]*\)\.\([0-9]\{9\}\): .*/0 \1\2/p; s/^ *guest[67]\.dat: .* \([0-9]*\)\.\([0-9]\{9\}\): .*/1 \1\2/p' \
		"$T/hg" | awk '{ printf "%d %d\n", $1, $2 }' >"$T/got"
	awk 'NR > 1 && $2 < last { bad = 1 } { last = $2 } END { exit bad }' "$T/got"
	ok $? "v$V: report -i host -i guest interleaves by corrected time"
	sort -k2,2n -k1,1n "$T/got" | cmp -s - <(sort -k2,2n -k1,1n "$T/want")
	ok $? "v$V: report -t prints every guest time shifted to the nanosecond"

	# a writer killed after a flush: the flushed events are all there
	c=$T/crash$V.dat
	# (a child shell reports the kill, not this one)
	bash -c '"$@"; exit $?' _ "$gen" crash "$c" $V 5000 10 2>/dev/null
	[ $? = 137 ]
	ok $? "v$V: the writer is SIGKILLed after tdat_flush"
	trace-cmd report -i "$c" >"$T/crep" 2>&1
	st=$?
	clean "$T/crep" || st=1
	[ "$(grep -c 'xen_seq:' "$T/crep")" = 5000 ] || st=1
	ok $st "v$V: report reads the 5000 flushed events of the killed writer"
	checker seq "$c" 5000 2 0

	# 32 CPUs at 256 MiB strides: data offsets past 4 GiB in an 8 GiB
	# sparse file while writing; compact once closed
	bash -c '"$@"; exit $?' _ "$gen" crash "$c" $V 6400 10 32 $((256 << 20)) 2>/dev/null
	st=$?
	[ $st = 137 ] && [ "$(stat -c %s "$c")" -gt $((4 << 30)) ]
	ok $? "v$V: 32 CPUs killed while their regions span $(($(stat -c %s "$c") >> 20)) MiB"
	checker seq "$c" 6400 32 0
	rm -f "$c"
	"$gen" plain "$c" $V 6400 32 && [ "$(stat -c %s "$c")" -lt $((1 << 20)) ]
	ok $? "v$V: the same closed is compact ($(stat -c %s "$c") bytes)"
	checker seq "$c" 6400 32 1

	# killed at arbitrary points while regions grow and move: never a
	# file the reader refuses or misreads
	for d in 0.03 0.08; do
		k=$T/kill$V.dat
		rm -f "$k"
		"$gen" plain "$k" $V 3000000 3 4096 &
		pid=$!
		# the file is a trace.dat from tdat_start_data() on: wait for it
		while [ ! -s "$k" ] && kill -0 $pid 2>/dev/null; do sleep 0.01; done
		sleep $d
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		trace-cmd report -i "$k" >"$T/krep" 2>&1
		st=$?
		clean "$T/krep" || st=1
		# each CPU's events are a prefix of what it was given, in order
		grep -o '\[00[0-2]\].*val=[0-9]*' "$T/krep" |
			sed 's/^\[00\([0-2]\)\].*val=/\1 /' |
			awk '{ if ($2 <= last[$1] && seen[$1]) bad = 1; last[$1] = $2; seen[$1] = 1 } END { exit bad }' || st=1
		ok $st "v$V: killed after ${d}s: report reads $(grep -c xen_seq: "$T/krep") events, in order"
	done
done

# our appender on a file stock trace-cmd wrote (zstd, its own layout)
"$gen" guest "$T/g0.dat" 7 noshift &&
	trace-cmd convert -i "$T/g0.dat" -o "$T/gz.dat" --file-version 7 --compression zstd >/dev/null 2>&1 &&
	"$gen" tshift "$T/gz.dat" 7
ok $? "TIME_SHIFT appended to a zstd file written by trace-cmd convert"
checker hostguest "$T/host7.dat" "$T/gz.dat" "$T/want"

# version 7: a cmdline and a GUEST option given after the data started,
# written at close after the data (a second cmdlines section)
l=$T/late.dat
"$gen" latecmd "$l" 7 $N
ok $? "v7: tdat-gen writes a cmdline after tdat_start_data()"
trace-cmd dump --summary -i "$l" >"$T/lsum" 2>&1 &&
	trace-cmd dump --options -i "$l" >"$T/lopt" 2>&1 &&
	grep -q '^guest1 \[Guest name\]' "$T/lopt"
ok $? "v7 late cmdline: dump --summary and --options (GUEST in the chained section)"
trace-cmd dump --cmd-lines -i "$l" 2>&1 | grep -q "4242 seqtask"
ok $? "v7 late cmdline: dump --cmd-lines reads the section after the data"
trace-cmd report -i "$l" >"$T/lrep" 2>&1
st=$?
clean "$T/lrep" || st=1
[ "$(grep -c 'seqtask-4242 .*xen_seq:' "$T/lrep")" = $N ] || st=1
ok $st "v7 late cmdline: report names the task of all $N events"
checker seq "$l" $N 2 0
checker comm "$l" 4242 seqtask
trace-cmd convert -i "$l" -o "$T/l6.dat" --file-version 6 --compression none >/dev/null 2>&1 &&
	trace-cmd report -i "$T/l6.dat" 2>&1 | grep -c 'seqtask-4242 .*xen_seq:' | grep -qx $N
ok $? "v7 late cmdline: trace-cmd convert to v6 keeps the name"
bash -c '"$@"; exit $?' _ "$gen" latecmd "$l" 7 $N kill 2>/dev/null
[ $? = 137 ]
ok $? "v7 late cmdline: the writer is SIGKILLed before close"
trace-cmd report -i "$l" >"$T/lrep" 2>&1
st=$?
clean "$T/lrep" || st=1
[ "$(grep -c 'xen_seq:' "$T/lrep")" = $N ] || st=1
ok $st "v7 late cmdline, killed: report reads all $N flushed events (task unnamed)"
checker comm "$l" 4242 -

cmp -s "$T/rep6" "$T/rep7"
ok $? "v6 and v7 files of the same events report the same"
echo "1..$n"
