#!/bin/bash
# trace-cmd-xen convert from the outside (TAP): options and exit codes,
# bad input, standard input, --cpu-hz forms, the JSON summary, stock
# `trace-cmd report` on every file written, and a cross-check with Debian's
# xenalyze on the same captures.
#
#   test-cli.sh TRACE-CMD-XEN XTGEN
set -u
tcx=$1
xtgen=$2
tmp=$(mktemp -d /tmp/tcx-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0

ok() {	# status description...
	local st=$1; shift
	n=$((n + 1))
	if [ "$st" = 0 ]; then
		echo "ok $n - $*"
	else
		echo "not ok $n - $*"
		fails=$((fails + 1))
	fi
}

# run CMD...: status in $rc, stderr in $tmp/err; a signal or a hang fails.
run() {
	timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# every converted file must pass stock trace-cmd report cleanly
report_ok() {	# file
	trace-cmd report "$1" >"$tmp/report" 2>"$tmp/report.err" || return 1
	! grep -q "UNKNOWN EVENT" "$tmp/report" || return 1
	! grep -qi "bad page\|CANT FIND\|failed to" "$tmp/report" || return 1
	[ ! -s "$tmp/report.err" ] || return 1
	[ "$(wc -l <"$tmp/report")" -gt 1 ]
}

json() {	# file python-expression-on-d
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# ---- options and exit codes ----
run "$tcx" convert -h
ok $([ $rc = 0 ] && grep -q "usage: trace-cmd-xen convert" "$tmp/out"; echo $?) "-h prints usage, exit 0"
run "$tcx" convert
ok $([ $rc = 2 ] && grep -q "no input file" "$tmp/err"; echo $?) "no input: exit 2"
run "$tcx" convert x.bin --cpu-hz 2.4Q
ok $([ $rc = 2 ] && grep -q "2.4Q" "$tmp/err"; echo $?) "bad --cpu-hz: exit 2 naming the value"
run "$tcx" convert x.bin --file-version 5
ok $([ $rc = 2 ] && grep -q "'5'" "$tmp/err"; echo $?) "bad --file-version: exit 2"
run "$tcx" convert x.bin --bogus
ok $([ $rc = 2 ]; echo $?) "unknown option: exit 2"
run "$tcx" convert "$tmp/missing.bin" -o "$tmp/m.dat" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "missing.bin" "$tmp/err"; echo $?) "missing input: exit 1 naming the file"

"$xtgen" -o "$tmp/same.bin" --epochs 2 >/dev/null
cp "$tmp/same.bin" "$tmp/same.orig"
run "$tcx" convert "$tmp/same.bin" -o "$tmp/same.bin" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "the output is the input" "$tmp/err" && cmp -s "$tmp/same.bin" "$tmp/same.orig"; echo $?) \
   "output = input: refused, input intact"

# ---- a normal capture ----
"$xtgen" -o "$tmp/a.bin" --late-domain --doms 4 --lost 5 --epochs 30 >"$tmp/a.truth"
run "$tcx" convert "$tmp/a.bin" -o "$tmp/a.dat" --cpu-hz 2.4G --summary-json "$tmp/a.json"
ok $([ $rc = 0 ]; echo $?) "convert exit 0"
ok $(grep -q "^records *[0-9]" "$tmp/err" && grep -q "^lost" "$tmp/err" && \
     grep -q "^skew" "$tmp/err" && grep -q "^pCPUs *4" "$tmp/err" && \
     grep -q "^domains *4" "$tmp/err" && grep -q "^time span" "$tmp/err"; echo $?) \
   "closing summary on stderr"
ok $(! grep -q "assuming" "$tmp/err"; echo $?) "no frequency note with --cpu-hz"
ok $([ "$(json "$tmp/a.json" "d['records']")" = "$(json "$tmp/a.truth" "d['records']")" ] && \
     [ "$(json "$tmp/a.json" "d['lost']")" = "$(json "$tmp/a.truth" "d['lost']")" ] && \
     [ "$(json "$tmp/a.json" "d['vcpus']")" = 8 ]; echo $?) "--summary-json matches the generator"
report_ok "$tmp/a.dat"
ok $? "trace-cmd report: clean"
ok $(grep -q "sched_switch: *d[0-9]*v[0-9]*:[0-9]* \[120\] [RS] ==>" "$tmp/report" && \
     grep -q "kvm_exit: *reason IO_INSTRUCTION" "$tmp/report" && \
     grep -q "d3v1-196610 " "$tmp/report"; echo $?) "report shows vCPU tasks, switches and named exits"

# --cpu-hz in its three forms gives the same file; no flag: a note
"$tcx" convert "$tmp/a.bin" -o "$tmp/b.dat" --cpu-hz 2400M 2>/dev/null
"$tcx" convert "$tmp/a.bin" -o "$tmp/c.dat" --cpu-hz 2400000000 2>/dev/null
ok $(cmp -s "$tmp/a.dat" "$tmp/b.dat" && cmp -s "$tmp/a.dat" "$tmp/c.dat"; echo $?) \
   "--cpu-hz 2.4G, 2400M and 2400000000 give identical files"
run "$tcx" convert "$tmp/a.bin" -o "$tmp/d.dat"
ok $([ $rc = 0 ] && grep -q "no --cpu-hz given: assuming 2400000000 Hz" "$tmp/err"; echo $?) \
   "without --cpu-hz: says which frequency it assumed"

# standard input, version 6
run bash -c "cat '$tmp/a.bin' | '$tcx' convert -i - -o '$tmp/s.dat' --cpu-hz 2.4G --summary-json '$tmp/s.json'"
ok $([ $rc = 0 ] && [ "$(json "$tmp/s.json" "d['records']")" = "$(json "$tmp/a.json" "d['records']")" ] \
     && [ "$(json "$tmp/s.json" "d['late']")" = 0 ]; echo $?) "-i - reads a pipe: same records, none late"
report_ok "$tmp/s.dat"
ok $? "trace-cmd report on the piped file: clean"
# one pass for version 7, file or pipe: cmdlines and GUEST options after the data
trace-cmd dump --cmd-lines -i "$tmp/a.dat" 2>/dev/null | grep -v '^ *$\|\[' | sort >"$tmp/a.cmd"
trace-cmd dump --cmd-lines -i "$tmp/s.dat" 2>/dev/null | grep -v '^ *$\|\[' | sort >"$tmp/s.cmd"
ok $(grep -q "196610 d3v1" "$tmp/a.cmd" && cmp -s "$tmp/a.cmd" "$tmp/s.cmd" && \
     [ "$(trace-cmd dump --options -i "$tmp/s.dat" 2>/dev/null | grep -c 'Guest name')" = 4 ]; echo $?) \
   "file and pipe: the same cmdlines (written after the data) and 4 GUEST options"
run "$tcx" convert "$tmp/a.bin" -o "$tmp/v6.dat" --cpu-hz 2.4G --file-version 6
report_ok "$tmp/v6.dat"
ok $? "version 6 file: trace-cmd report clean"

# --svm: pre-4.19 VMEXIT records from an AMD host get SVM exit names
run "$tcx" convert "$tmp/a.bin" -o "$tmp/svm.dat" --cpu-hz 2.4G --svm
trace-cmd report "$tmp/svm.dat" 2>/dev/null >"$tmp/svm.report"
ok $([ $rc = 0 ] && grep -q "kvm_exit: *reason" "$tmp/svm.report" && \
     ! grep -q "reason IO_INSTRUCTION" "$tmp/svm.report"; echo $?) "--svm names exit reasons as SVM"

# AMD exit reasons first seen after the 16 MiB looked at ahead: SVM names
# from there on, with a warning counting the exits named VMX before
"$xtgen" -o "$tmp/vmx.bin" --size-mb 17 >/dev/null
"$xtgen" -o "$tmp/amd.bin" --svm --legacy-ids --epochs 2 >/dev/null
cat "$tmp/vmx.bin" "$tmp/amd.bin" >"$tmp/late-amd.bin"
run "$tcx" convert "$tmp/late-amd.bin" -o "$tmp/la.dat" --cpu-hz 2.4G -q --summary-json "$tmp/la.json"
ok $([ $rc = 0 ] && grep -q "warning: exit reasons only AMD has appeared after the start" "$tmp/err" && \
     [ "$(json "$tmp/la.json" "d['svm_detected']")" = True ]; echo $?) \
   "AMD exit reasons past the look-ahead: SVM from there on, with a warning"
rm -f "$tmp/vmx.bin" "$tmp/late-amd.bin" "$tmp/la.dat"

# ---- bad input: a clear error or a partial file with a warning ----
: >"$tmp/empty.bin"
run "$tcx" convert "$tmp/empty.bin" -o "$tmp/e.dat" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "empty.bin: empty input" "$tmp/err"; echo $?) "empty file: exit 1, clear error"

python3 -c "import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(300000)))" >"$tmp/random.bin"
run "$tcx" convert "$tmp/random.bin" -o "$tmp/r.dat" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "not a xentrace capture" "$tmp/err" && [ ! -e "$tmp/r.dat" ]; echo $?) \
   "random bytes: exit 1, clear error, no output left"
run bash -c "cat '$tmp/random.bin' | '$tcx' convert -i - -o '$tmp/rp.dat' --cpu-hz 2.4G"
ok $([ $rc = 1 ] && grep -q "not a xentrace capture" "$tmp/err" && [ ! -e "$tmp/rp.dat" ]; echo $?) \
   "random bytes from a pipe: exit 1, no output left"

head -c -13 "$tmp/a.bin" >"$tmp/trunc.bin"
run "$tcx" convert "$tmp/trunc.bin" -o "$tmp/t.dat" --cpu-hz 2.4G
ok $([ $rc = 0 ] && grep -q "warning: .*truncated capture" "$tmp/err"; echo $?) "truncated tail: exit 0 with a warning"
report_ok "$tmp/t.dat"
ok $? "truncated: the partial file reads cleanly"

# a window announcing far more bytes than the file has
python3 - "$tmp/a.bin" "$tmp/past.bin" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
hdr = struct.pack('<IiI', 0x2001f003, 1, 0xfffffff0)
open(sys.argv[2], 'wb').write(d + hdr + d[12:4000])
EOF
run "$tcx" convert "$tmp/past.bin" -o "$tmp/p.dat" --cpu-hz 2.4G
ok $([ $rc = 0 ] && grep -q "truncated capture" "$tmp/err"; echo $?) "window size past the end: exit 0, warning"
report_ok "$tmp/p.dat"
ok $? "window past the end: file reads cleanly"

# pCPU 1 sends a million records and never a TSC: a bounded number are
# kept, the rest dropped, counted and warned about once
"$xtgen" -o "$tmp/n0.bin" --cpus 1 --epochs 5 >"$tmp/n0.truth"
python3 - "$tmp/n0.bin" "$tmp/notsc.bin" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
rec = struct.pack('<II', 0x1008200f, 32)	# TRC_HVM_INTR, one word, no TSC
n, per, out = 1000000, 8192, bytearray(d)
for done in range(0, n, per):
    m = min(per, n - done)
    out += struct.pack('<IiI', 0x2001f003, 1, 8 * m) + rec * m
open(sys.argv[2], 'wb').write(out)
EOF
run "$tcx" convert "$tmp/notsc.bin" -o "$tmp/nt.dat" --cpu-hz 2.4G --summary-json "$tmp/nt.json"
ok $([ $rc = 0 ] && [ "$(json "$tmp/nt.json" "d['no_tsc_dropped']")" = 998976 ] && \
     [ "$(json "$tmp/nt.json" "d['records']")" = $(( $(json "$tmp/n0.truth" "d['records']") + 1024 )) ] && \
     [ "$(json "$tmp/nt.json" "d['pcpus']")" = 2 ]; echo $?) \
   "pCPU without a TSC: 1024 records kept, the rest dropped and counted"
ok $([ "$(grep -c "warning: .*records without a TSC were dropped" "$tmp/err")" = 1 ] && \
     grep -q "^no TSC *998976 records dropped" "$tmp/err"; echo $?) \
   "pCPU without a TSC: one warning, a summary line"
report_ok "$tmp/nt.dat"
ok $? "pCPU without a TSC: trace-cmd report clean"
rm -f "$tmp/n0.bin" "$tmp/notsc.bin" "$tmp/nt.dat"

# records with the largest extra-word count (7) and TSC, cut by the window end;
# a cpu_change that itself carries 7 words; a pCPU id out of range
python3 - "$tmp/x7.bin" "$tmp/badcpu.bin" "$tmp/corrupt.bin" "$tmp/a.bin" <<'EOF'
import struct, sys
recs = b''.join(struct.pack('<IQ7I', 0xf0000000 | 0x1f00f, 1000 + i, *range(7)) for i in range(50))
out = struct.pack('<I7I', 0x7001f003, 0, len(recs) - 20, 0, 0, 0, 0, 0) + recs[:-20]
out += struct.pack('<IiI', 0x2001f003, 1, len(recs)) + recs
open(sys.argv[1], 'wb').write(out)
open(sys.argv[2], 'wb').write(struct.pack('<IiI', 0x2001f003, 99999, 40) + recs[:40])
good = open(sys.argv[4], 'rb').read()
open(sys.argv[3], 'wb').write(good + b'\xff' * 64)
EOF
run "$tcx" convert "$tmp/x7.bin" -o "$tmp/x7.dat" --cpu-hz 2.4G --summary-json "$tmp/x7.json"
ok $([ $rc = 0 ] && [ "$(json "$tmp/x7.json" "d['unknown']")" = 99 ] && \
     [ "$(json "$tmp/x7.json" "d['cut_bytes']")" = 20 ]; echo $?) \
   "7-word records: decoded, the cut one counted, unknown ids kept as xen/unknown"
ok $(grep -q "warning: .*cut at a window end" "$tmp/err"; echo $?) "cut record: warning"
report_ok "$tmp/x7.dat"
ok $? "7-word records: trace-cmd report clean"
run "$tcx" convert "$tmp/badcpu.bin" -o "$tmp/bc.dat" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "invalid pCPU 99999" "$tmp/err"; echo $?) "pCPU id out of range: exit 1 naming it"
run "$tcx" convert "$tmp/corrupt.bin" -o "$tmp/co.dat" --cpu-hz 2.4G
ok $([ $rc = 1 ] && grep -q "invalid window header 0xffffffff at offset" "$tmp/err"; echo $?) \
   "corrupt window after good data: exit 1 naming the offset"
report_ok "$tmp/co.dat"
ok $? "corrupt: what came before is a clean file"

# ---- -j: the same file, whatever the number of threads ----
run "$tcx" convert "$tmp/a.bin" -o "$tmp/j.dat" -j 0
ok $([ $rc = 2 ] && grep -q "invalid -j '0'" "$tmp/err"; echo $?) "-j 0: exit 2 naming the value"
run "$tcx" convert "$tmp/a.bin" -o "$tmp/j.dat" --jobs two
ok $([ $rc = 2 ] && grep -q "invalid -j 'two'" "$tmp/err"; echo $?) "--jobs two: exit 2 naming the value"

# convert FILE -j 1, 2 and 4 (with more options): every file and every
# summary (stderr, JSON) must be the same
same_j() {	# name input [options...]
	local name=$1 in=$2 j bad=0
	shift 2
	for j in 1 2 4; do
		timeout 120 "$tcx" convert "$in" -o "$tmp/$name-j$j.dat" --cpu-hz 2.4G -j $j \
			--summary-json "$tmp/$name-j$j.json" "$@" >/dev/null 2>"$tmp/$name-j$j.err"
		echo $? >"$tmp/$name-j$j.rc"
		sed -i "s|$tmp/$name-j$j.dat|OUT|g" "$tmp/$name-j$j.err"
	done
	for j in 2 4; do
		cmp -s "$tmp/$name-j1.dat" "$tmp/$name-j$j.dat" || { echo "# $name: -j $j file differs"; bad=1; }
		cmp -s "$tmp/$name-j1.json" "$tmp/$name-j$j.json" || { echo "# $name: -j $j JSON differs"; bad=1; }
		cmp -s "$tmp/$name-j1.err" "$tmp/$name-j$j.err" || { echo "# $name: -j $j stderr differs"; bad=1; }
		cmp -s "$tmp/$name-j1.rc" "$tmp/$name-j$j.rc" || { echo "# $name: -j $j exit differs"; bad=1; }
	done
	[ -s "$tmp/$name-j1.dat" ] || bad=1
	return $bad
}

"$xtgen" -o "$tmp/j8.bin" --cpus 8 --doms 4 --vcpus 3 --epochs 20 --lost 7 --skew 5 --seed 3 >/dev/null
"$xtgen" -o "$tmp/jsvm.bin" --cpus 4 --svm --legacy-ids --epochs 10 >/dev/null
"$xtgen" -o "$tmp/jg.bin" --cpus 4 --doms 3 --vcpus 2 --epochs 10 --guest >/dev/null
for spec in "plain:a.bin" "8pcpus-lost-skew:j8.bin" "svm-legacy:jsvm.bin" "guest:jg.bin"; do
	name=${spec%%:*}
	for v in 7 6; do
		same_j "$name-v$v" "$tmp/${spec#*:}" --file-version $v
		ok $? "-j 1, 2, 4: identical files and summaries ($name, version $v)"
	done
done
same_j svm-flag "$tmp/jsvm.bin" --svm
ok $? "-j 1, 2, 4: identical files with --svm"
report_ok "$tmp/8pcpus-lost-skew-v7-j2.dat"
ok $? "trace-cmd report reads the -j 2 file cleanly"
report_ok "$tmp/guest-v6-j2.dat"
ok $? "trace-cmd report reads the -j 2 version 6 file cleanly"

# AMD reasons past the look-ahead: the order across pCPUs decides, so -j
# converts again on one thread; the same file and warning
"$xtgen" -o "$tmp/vmx.bin" --size-mb 17 >/dev/null
cat "$tmp/vmx.bin" "$tmp/jsvm.bin" >"$tmp/late-amd.bin"
same_j late-amd "$tmp/late-amd.bin" -q
ok $([ $? = 0 ] && grep -q "exit reasons only AMD has appeared" "$tmp/late-amd-j2.err"; echo $?) \
   "-j 1, 2, 4: AMD exit reasons past the look-ahead, identical files and warning"
rm -f "$tmp/vmx.bin" "$tmp/late-amd.bin" "$tmp"/late-amd-j*.dat

# malformed input at -j 2: today's messages and exit status, what came
# before the fault written and readable
head -c -13 "$tmp/j8.bin" >"$tmp/jtrunc.bin"
same_j trunc "$tmp/jtrunc.bin"
ok $([ $? = 0 ] && [ "$(cat "$tmp/trunc-j2.rc")" = 0 ] && \
     grep -q "warning: .*truncated capture" "$tmp/trunc-j2.err"; echo $?) \
   "-j 2, truncated capture: exit 0 with the warning, the file of -j 1"
report_ok "$tmp/trunc-j2.dat"
ok $? "-j 2, truncated capture: trace-cmd report clean"
"$xtgen" -o "$tmp/jbig.bin" --cpus 4 --size-mb 5 --seed 9 >/dev/null
python3 - "$tmp/jbig.bin" "$tmp/jmid.bin" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off = 0
while off < 3 << 20:	# a window boundary past the first 1 MiB read
    size = struct.unpack_from('<IiI', d, off)[2]
    off += 12 + size
open(sys.argv[2], 'wb').write(d[:off] + b'\xee' * 40 + d[off:])
PY
same_j mid "$tmp/jmid.bin"
ok $([ $? = 0 ] && [ "$(cat "$tmp/mid-j2.rc")" = 1 ] && \
     grep -q "invalid window header 0xeeeeeeee at offset" "$tmp/mid-j2.err"; echo $?) \
   "-j 2, corrupt window header mid-file: exit 1 naming the offset, the file of -j 1"
report_ok "$tmp/mid-j2.dat"
ok $? "-j 2, corrupt mid-file: what came before reads cleanly"
# a pCPU that never has a TSC: its records take the newest TSC of them
# all; it has more bytes than all the others, so a worker has it alone
python3 - "$tmp/j8.bin" "$tmp/jnotsc.bin" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
rec = struct.pack('<II', 0x1008200f, 32)	# TRC_HVM_INTR, one word, no TSC
n = len(d) // 8 + 8192
out = bytearray(struct.pack('<IiI', 0x2001f003, 9, 8 * n) + rec * n) + d
open(sys.argv[2], 'wb').write(out)
PY
same_j notsc "$tmp/jnotsc.bin"
ok $? "-j 1, 2, 4: a pCPU without a TSC, identical files and summaries"
rm -f "$tmp"/*-j[124].dat "$tmp/jbig.bin" "$tmp/jmid.bin"

# a pipe is read on one thread, whatever -j says
run bash -c "cat '$tmp/j8.bin' | '$tcx' convert -i - -o '$tmp/jp.dat' --cpu-hz 2.4G -j 2 --summary-json '$tmp/jp.json'"
ok $([ $rc = 0 ] && [ "$(json "$tmp/jp.json" "d['records']")" = "$(json "$tmp/8pcpus-lost-skew-v7-j1.json" "d['records']")" ]; echo $?) \
   "-j 2 from a pipe: converted on one thread, the same records"

# ---- xenalyze on the same captures ----
# xenalyze aborts on TRC_GUEST records: convert --xenalyze writes a copy
# without them. A second, independent stripper here is its oracle.
strip_guest() {	# in out
	python3 - "$1" "$2" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
out, off = bytearray(), 0
while off + 12 <= len(d):
    hdr, cpu, size = struct.unpack_from('<IiI', d, off)
    w, p, keep = d[off + 12:off + 12 + size], 0, bytearray()
    while p + 4 <= len(w):
        h = struct.unpack_from('<I', w, p)[0]
        n = 4 + (8 if h >> 31 else 0) + ((h >> 28) & 7) * 4
        if not ((h >> 16) & 0x800):
            keep += w[p:p + n]
        p += n
    out += struct.pack('<IiI', hdr, cpu, len(keep)) + keep
    off += 12 + size
open(sys.argv[2], 'wb').write(out)
EOF
}

# the records of each pCPU, in order, whatever the windows
same_records() {	# a b
	python3 - "$1" "$2" <<'EOF'
import struct, sys, collections
def recs(path):
    d, off, per = open(path, 'rb').read(), 0, collections.defaultdict(bytearray)
    while off + 12 <= len(d):
        hdr, cpu, size = struct.unpack_from('<IiI', d, off)
        per[cpu] += d[off + 12:off + 12 + size]
        off += 12 + size
    return {c: bytes(b) for c, b in per.items() if b}
a, b = recs(sys.argv[1]), recs(sys.argv[2])
sys.exit(0 if a == b and a else 1)
EOF
}

"$xtgen" -o "$tmp/g.bin" --cpus 4 --doms 3 --vcpus 2 --epochs 4 --guest >/dev/null
run xenalyze --cpu-hz=2.4G -s "$tmp/g.bin"
ok $([ $rc != 0 ] && grep -q "unexpected number bits" "$tmp/err"; echo $?) \
   "xenalyze stops on a capture with TRC_GUEST records (what --xenalyze is for)"
run "$tcx" convert --xenalyze "$tmp/g.bin" -o "$tmp/g-xa.bin"
ok $([ $rc = 0 ] && grep -q "TRC_GUEST records left out" "$tmp/err"; echo $?) \
   "convert --xenalyze: exit 0, says what it left out"
strip_guest "$tmp/g.bin" "$tmp/g-py.bin"
same_records "$tmp/g-xa.bin" "$tmp/g-py.bin"
ok $? "convert --xenalyze keeps every other record, in order per pCPU"
run xenalyze --cpu-hz=2.4G -s "$tmp/g-xa.bin"
ok $([ $rc = 0 ] && grep -q "Domain" "$tmp/out"; echo $?) "xenalyze --summary reads the copy"
run "$tcx" convert --xenalyze "$tmp/g.bin"
ok $([ $rc = 2 ] && grep -q "needs -o" "$tmp/err"; echo $?) "convert --xenalyze without -o: exit 2"
cp "$tmp/g.bin" "$tmp/g-keep.bin"
run "$tcx" convert --xenalyze "$tmp/g.bin" -o "$tmp/g.bin"
ok $([ $rc = 2 ] && grep -q "is the input" "$tmp/err" && cmp -s "$tmp/g.bin" "$tmp/g-keep.bin"; echo $?) \
   "convert --xenalyze -o INPUT: exit 2, the input untouched"
head -c 1000 "$tmp/g.bin" >"$tmp/g-cut.bin"
run "$tcx" convert --xenalyze "$tmp/g-cut.bin" -o "$tmp/g-cut-xa.bin"
ok $([ $rc = 0 ] && grep -q "truncated" "$tmp/err" && [ -s "$tmp/g-cut-xa.bin" ]; echo $?) \
   "convert --xenalyze of a truncated capture: what it had, and says so"
{ cat "$tmp/g.bin"; printf 'garbage!garbage!'; } >"$tmp/g-bad.bin"
run "$tcx" convert --xenalyze "$tmp/g-bad.bin" -o "$tmp/g-bad-xa.bin"
ok $([ $rc = 1 ] && grep -q "invalid window header" "$tmp/err" && same_records "$tmp/g-bad-xa.bin" "$tmp/g-py.bin"; echo $?) \
   "convert --xenalyze of a corrupt capture: exit 1 naming it, the records before it kept"
printf 'not a capture' >"$tmp/g-not.bin"
run "$tcx" convert --xenalyze "$tmp/g-not.bin" -o "$tmp/g-not-xa.bin"
ok $([ $rc = 1 ] && grep -q "not a xentrace capture" "$tmp/err" && [ ! -e "$tmp/g-not-xa.bin" ]; echo $?) \
   "convert --xenalyze of a file that is no capture: exit 1, nothing written"

for spec in "4 3 2" "2 4 3" "8 4 2" "4 3 2 --guest"; do
	set -- $spec
	"$xtgen" -o "$tmp/x.bin" --cpus $1 --doms $2 --vcpus $3 --epochs 25 --seed $1$2 \
		--late-domain ${4:-} >"$tmp/x.truth"
	"$tcx" convert "$tmp/x.bin" -o "$tmp/x.dat" --cpu-hz 2.4G -q --summary-json "$tmp/x.json"
	trace-cmd report -t "$tmp/x.dat" 2>/dev/null >"$tmp/x.report"
	"$tcx" convert --xenalyze "$tmp/x.bin" -o "$tmp/xa.bin" -q
	xenalyze --cpu-hz=2.4G -s "$tmp/xa.bin" >"$tmp/x.summary" 2>/dev/null
	xenalyze --cpu-hz=2.4G -a --dump-raw-process "$tmp/xa.bin" >"$tmp/x.dump" 2>/dev/null
	python3 - "$tmp" <<'EOF' >"$tmp/xa.out" 2>&1
import json, re, sys, collections
t = sys.argv[1]
hz = 2400000000
# our run time per vCPU: sched_switch intervals per pCPU
cur, since, run, nint = {}, {}, collections.Counter(), collections.Counter()
for l in open(t + '/x.report'):
    m = re.search(r'\[(\d+)\]\s+(\d+)\.(\d+):\s+sched_switch:\s+(\S+):(\d+) \[\d+\] [RS] ==> (\S+):(\d+)', l)
    if not m:
        continue
    cpu, ts = int(m.group(1)), int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, '0'))
    prev, nxt = m.group(4), m.group(6)
    if cpu in cur and cur[cpu] == prev and prev != '<idle>':
        run[prev] += ts - since[cpu]
        nint[prev] += 1
    cur[cpu], since[cpu] = nxt, ts
# xenalyze: "-- vN --" blocks inside "|-- Domain D --|", "running: count secs avg_cycles"
xa, dom, vc = {}, None, None
for l in open(t + '/x.summary'):
    m = re.match(r'\|-- Domain (\d+) --\|', l)
    if m:
        dom, vc = int(m.group(1)), None
        continue
    m = re.match(r'-- v(\d+) --', l)
    if m:
        vc = int(m.group(1))
        continue
    m = re.match(r'\s+running:\s+(\d+)\s+[\d.]+s\s+(\d+)', l)
    if m and dom is not None and vc is not None and dom < 32767:
        xa['d%dv%d' % (dom, vc)] = (int(m.group(1)), int(m.group(2)))
bad = 0
for k in sorted(set(xa) | set(run)):
    cnt, avg = xa.get(k, (0, 0))
    ours = run.get(k, 0) * hz / 1e9          # ns back to cycles
    theirs = cnt * avg                        # avg is truncated: within cnt cycles
    tol = cnt + 3 * nint.get(k, 0) + 1
    if abs(ours - theirs) > tol or nint.get(k, 0) != cnt:
        print('run time %s: ours %.0f cycles in %d runs, xenalyze %d in %d' % (k, ours, nint.get(k, 0), theirs, cnt))
        bad += 1
if not xa:
    print('no vCPU found in the xenalyze summary'); bad += 1
# events per class: xenalyze's processed records (wrap fillers excluded) vs our summary
theirs = collections.Counter()
for l in open(t + '/x.dump'):
    m = re.match(r'^\*\s+([0-9a-f]+)\s', l)
    if m:
        ev = int(m.group(1), 16)
        if ev == 0x1f002:
            continue
        theirs[(ev >> 16) & 0xfff] += 1
names = {0x1: 'gen', 0x2: 'sched', 0x4: 'dom0op', 0x8: 'hvm', 0x10: 'mem', 0x20: 'pv', 0x40: 'shadow', 0x80: 'hw', 0x800: 'guest'}
ours = json.load(open(t + '/x.json'))['classes']
# GUEST records were stripped for xenalyze: ours must match the generator
truth = json.load(open(t + '/x.truth'))['classes']
if ours.get('guest', 0) != truth[11]:
    print('class guest: ours %d, generated %d' % (ours.get('guest', 0), truth[11])); bad += 1
theirs[0x800] = ours.get('guest', 0)
for cls, name in names.items():
    if ours.get(name, 0) != theirs.get(cls, 0):
        print('class %s: ours %d, xenalyze %d' % (name, ours.get(name, 0), theirs.get(cls, 0)))
        bad += 1
print('checked %d vCPUs, %d classes' % (len(xa), len(names)))
sys.exit(1 if bad else 0)
EOF
	st=$?
	sed 's/^/# /' "$tmp/xa.out"
	ok $st "xenalyze agrees on per-vCPU run time and per-class counts ($1 pCPUs, $2 domains x $3 vCPUs${4:+, GUEST records stripped for xenalyze})"
done

echo "1..$n"
exit $((fails > 0))
