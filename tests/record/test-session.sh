#!/bin/bash
# record --xen --session, --repeat and --fail-on-loss on xensim (TAP):
#
#   test-session.sh SOURCE-DIR BUILD-DIR
set -u
src=$1
build=$2
. "$src/tests/install/tap.sh"
tcx=$build/trace-cmd-xen
xsim_pid=

sim_start() {	# conf
	rm -rf "$tmp/host"
	"$build/sim/xensim" run "$1" --dir "$tmp/host" >"$tmp/xsim.log" 2>&1 &
	xsim_pid=$!
	for _ in $(seq 100); do [ -e "$tmp/host/ready" ] && return 0; sleep 0.1; done
	return 1
}
sim_stop() {
	[ -n "$xsim_pid" ] && kill "$xsim_pid" && wait "$xsim_pid" 2>/dev/null
	xsim_pid=
}
trap 'sim_stop; rm -rf "$tmp"' EXIT
rec() {
	XENSIM_HOST=$tmp/host LD_LIBRARY_PATH=$build/sim timeout 120 "$tcx" record --xen -q "$@"
}
# json FILE EXPR: python's value of EXPR over the JSON object j
json() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>&1
}

# one session under each load: guest1's vCPU with a light and a heavy rival
for load in light heavy; do
	sim_start "$src/tests/record/session-$load.conf"
	ok $? "xensim runs session-$load.conf"
	rec --no-dom0 --session "$tmp/$load" -- sh -c 'sleep 2; exit 5'
	rc=$?
	sim_stop
	ok $([ $rc = 5 ]; echo $?) "$load: the command's exit status passes (5, got $rc)"
	for f in trace.dat summary.json analysis.json; do
		ok $([ -s "$tmp/$load/$f" ]; echo $?) "$load: the session has $f"
	done
	v=$(json "$tmp/$load/summary.json" "j['command']['exit_status'], j['command']['signal'], \
j['analysis']['ok'], j['xen_version'], j['argv'][1], j['options']['session'] == sys.argv[1].rsplit('/', 1)[0], \
bool(j['start_utc'].endswith('Z')), bool(j['host']['release'])")
	ok $([ "$v" = "5 None True 4.17.0-xensim record True True True" ]; echo $?) \
		"$load: summary.json: exit status, analysis, Xen version, argv, session, start, host ($v)"
done

# guest1's vCPU: less CPU and more runnable time under the heavy rival
pct() {	# session state
	json "$tmp/$1/analysis.json" "[v['$2']['pct'] for d in j['domains'] if d['dom'] == 1 \
for v in d['vcpus']][0]"
}
lr=$(pct light running) hr=$(pct heavy running)
lq=$(pct light runnable) hq=$(pct heavy runnable)
echo "# guest1 d1v0 running: light $lr%, heavy $hr%; runnable: light $lq%, heavy $hq%"
# tolerance: the heavy rival must cost guest1 at least 5 points of CPU
ok $(python3 -c "import sys; sys.exit(not ($lr - $hr >= 5))"; echo $?) \
	"heavier rival: guest1 runs at least 5 points less ($lr% -> $hr%)"
ok $(python3 -c "import sys; sys.exit(not ($hq - $lq >= 5))"; echo $?) \
	"heavier rival: guest1 is runnable at least 5 points more ($lq% -> $hq%)"

# analyze --compare of the two sessions finds the same difference, with its sign
"$tcx" analyze --compare "$tmp/light" "$tmp/heavy/analysis.json" --json >"$tmp/cmp.json" 2>"$tmp/cmp.err"
rc=$?
ok $rc "analyze --compare light heavy --json exits 0 (got $rc)"
v=$(json "$tmp/cmp.json" "[(m['running_ns']['diff'][1], m['running_ns']['pct'][1], \
m['runnable_ns']['diff'][1], m['running_ns']['values']) for x in j['vcpus'] if x['dom'] == 1 and x['vcpu'] == 0 \
for m in [x['metrics']]][0]")
echo "# --compare d1v0 (running diff, running %, runnable diff, running values): $v"
# the figures are analysis.json's (exactly), the signs the simulator's
ns() {	# session state
	json "$tmp/$1/analysis.json" "[v['$2']['ns'] for d in j['domains'] if d['dom'] == 1 \
for v in d['vcpus']][0]"
}
ok $(python3 -c "
import sys; rd, rp, qd, vals = $v
sys.exit(not (rd < 0 and rp < 0 and qd > 0 and vals == [$(ns light running), $(ns heavy running)]))"; echo $?) \
	"--compare: guest1 runs less (negative diff) and waits more (positive), analysis.json's figures"
"$tcx" analyze --compare "$tmp/light" "$tmp/heavy" >"$tmp/cmp.txt" 2>&1
ok $([ $? = 0 ] && grep -q '^d1v0' "$tmp/cmp.txt" && grep -q 'running_ns' "$tmp/cmp.txt"; echo $?) \
	"analyze --compare prints the tables side by side"
"$tcx" analyze --compare "$tmp/light" >/dev/null 2>&1
ok $([ $? = 2 ]; echo $?) "analyze --compare with one input is a usage error"

# a non-empty session directory is refused, and left as it was
out=$(rec --no-dom0 --session "$tmp/light" --duration 1 2>&1)
rc=$?
ok $([ $rc = 1 ] && [[ $out == *"not empty"* ]]; echo $?) "a non-empty --session is refused (exit $rc: $out)"
out=$(rec --session "$tmp/x" -o "$tmp/t.dat" --duration 1 2>&1)
rc=$?
ok $([ $rc = 2 ] && [[ $out == *"leave -o out"* ]]; echo $?) "-o with --session is a usage error (exit $rc)"
out=$(rec --repeat 2 --duration 1 2>&1)
rc=$?
ok $([ $rc = 2 ] && [[ $out == *"needs --session"* ]]; echo $?) "--repeat without --session is a usage error (exit $rc)"

# --repeat 2: two runs, each its own session
sim_start "$src/tests/record/session-light.conf"
rec --no-dom0 --repeat 2 --session "$tmp/rep" -- sleep 1
rc=$?
ok $([ $rc = 0 ]; echo $?) "--repeat 2 exits 0 (got $rc)"
for r in 1 2; do
	v=$(json "$tmp/rep/run-$r/summary.json" "j['options']['run'], j['options']['repeat'], j['analysis']['ok']")
	ok $([ "$v" = "$r 2 True" ] && [ -s "$tmp/rep/run-$r/analysis.json" ] &&
	     [ -s "$tmp/rep/run-$r/trace.dat" ]; echo $?) "--repeat 2: run-$r has its files ($v)"
done
# a failed start still leaves summary.json saying why
rec --session "$tmp/bad" -e nosuch:ev --duration 1 2>/dev/null
rc=$?
v=$(json "$tmp/bad/summary.json" "j['started'], 'nosuch:ev' in j['error'], j['analysis']['ok']")
ok $([ $rc = 1 ] && [ "$v" = "False True False" ] && [ ! -e "$tmp/bad/trace.dat" ]; echo $?) \
	"a start that fails: exit 1, summary.json says why, no trace.dat (exit $rc, $v)"
sim_stop

# --fail-on-loss: stress.conf overflows 2-page buffers: exit 3; a failing
# command's status wins; without the option, exit 0
sim_start "$src/tests/sim/stress.conf"
rec --no-dom0 --xen-pages 2 --fail-on-loss --session "$tmp/loss" -- sleep 1 2>"$tmp/loss.err"
rc=$?
lost=$(json "$tmp/loss/summary.json" "j['loss']['xen'] > 0 and j['loss']['any']")
ok $([ $rc = 3 ] && [ "$lost" = True ]; echo $?) "--fail-on-loss on a lossy host: exit 3 (got $rc, lost: $lost)"
rec --no-dom0 --xen-pages 2 --fail-on-loss --session "$tmp/loss2" -- sh -c 'sleep 1; exit 7' 2>/dev/null
rc=$?
ok $([ $rc = 7 ]; echo $?) "--fail-on-loss: the command's failure wins (7, got $rc)"
rec --no-dom0 --xen-pages 2 --session "$tmp/loss3" -- sleep 1 2>/dev/null
rc=$?
ok $([ $rc = 0 ]; echo $?) "without --fail-on-loss the loss is no failure (got $rc)"
sim_stop

echo "1..$n"
exit $((failed > 0))
