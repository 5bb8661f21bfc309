#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The trace-cmd front (cli/front.c), TAP: with a fake stock trace-cmd and a
# fake trace-cmd-xen that print their argv, which command lines go where
# and that argv, stdin, pid, exit status and signals pass through; then with
# the real stock trace-cmd and our real trace-cmd-xen.
#
#   test-front.sh FRONT FRONT_FAKE FAKE_TRACE_CMD FAKE_STOCK_PATH TRACE_CMD_XEN TDAT_GEN STOCK
set -u
front=$1 fake_front=$2 fake_tc=$3 fake_stock=$4 tcx=$5 tdat_gen=$6 stock=$7

. "$(dirname "$0")/tap.sh"
is() {		# got want description...
	local got=$1 want=$2; shift 2
	[ "$got" = "$want" ]
	ok $? "$*"
	[ "$got" = "$want" ] || printf '#   got:  %s\n#   want: %s\n' "$got" "$want"
}


# The fake stock trace-cmd, where the fake front was built to find it;
# the fake front with a fake trace-cmd-xen next to it.
mkdir -p "$(dirname "$fake_stock")" "$tmp/bin"
cp "$fake_tc" "$fake_stock"
cp "$fake_front" "$tmp/bin/trace-cmd"
cp "$fake_tc" "$tmp/bin/trace-cmd-xen"
export FAKE_OUT=$tmp/out

route() {	# expected (stock|ours), args...
	local want=$1; shift
	rm -f "$FAKE_OUT"
	"$tmp/bin/trace-cmd" "$@" >/dev/null 2>&1
	is "$(awk '{ print $1; exit }' "$FAKE_OUT" 2>/dev/null)" "$want" \
		"trace-cmd $* -> $want"
}

route ours record --xen
route ours record --xen -h
route ours record -e sched --xen
route ours record -esched -q --xen
route ours record --xen-pages 64 --xen-cpus 0-3 --xen -A guest1
route ours record --xen-events sched -e sched -A guest1
route ours record -M 3 -e sched -A guest1 -e irq --name g1 --xen
route ours record -A guest1 -e sched -f 'prev_pid>0' -p function_graph --xen
route stock record -c -F -e sched ls --xen
route stock record -S -e sched
route ours record --duration 5 --xen
route ours record --summary-json=out.json --xen
route stock record -e sched
route stock record -e sched -- ls --xen
route stock record -e sched ls --xen
route stock record -o --xen
route ours agent --xen
route ours agent -N 10.0.0.1 --secret-file /etc/secret
route ours agent -N 10.0.0.1 --insecure
route ours agent -p 823 --tracing-dir /tmp/t -N 10.0.0.1 --insecure
route stock agent -N 10.0.0.1
route stock agent -N 10.0.0.1 -P 3
route ours convert --xen x.bin
route stock convert -i trace.dat -o v6.dat
route stock report --xen
route stock list -e
route stock

# argv, stdin and exit status pass through unchanged
rm -f "$FAKE_OUT"
printf 'in-line\n' | FAKE=stdin FAKE_STATUS=7 "$tmp/bin/trace-cmd" report -i 'a b' '' -q
st=$?
is "$st" 7 "the stock exit status passes through"
is "$(tail -n +2 "$FAKE_OUT" | tr '\n' '|')" "report|-i|a b||-q|in-line|" \
	"argv (empty and spaced words too) and stdin reach the stock trace-cmd"
is "$(head -1 "$FAKE_OUT" | sed 's/.*argv0=//')" trace-cmd "argv[0] is trace-cmd"

FAKE_STATUS=3 "$tmp/bin/trace-cmd" record --xen >/dev/null 2>&1
is $? 3 "our exit status passes through"

{ (FAKE=kill exec "$tmp/bin/trace-cmd" list); st=$?; } >/dev/null 2>&1
is "$st" 143 "a signal that kills the stock trace-cmd is the front's end too"

# one process: the pid the shell spawned is the one that prints
"$tmp/bin/trace-cmd" list &
pid=$!
wait $pid
is "$(sed -n '1s/.*pid=\([0-9]*\).*/\1/p' "$FAKE_OUT")" "$pid" \
	"the stock trace-cmd runs in the front's process (no wrapper left)"
"$tmp/bin/trace-cmd" record --xen &
pid=$!
wait $pid
is "$(sed -n '1s/.*pid=\([0-9]*\).*/\1/p' "$FAKE_OUT")" "$pid" \
	"trace-cmd-xen runs in the front's process"

# found next to the front, not in PATH
PATH=/nonexistent "$tmp/bin/trace-cmd" record --xen >/dev/null 2>&1
is "$(awk '{ print $1; exit }' "$FAKE_OUT")" ours "trace-cmd-xen is found next to the front, PATH aside"

# a guest's install: trace-cmd-xen-agent next to the front runs the agent
cp "$fake_tc" "$tmp/bin/trace-cmd-xen-agent"
route agent agent --xen --domid 3
is "$(tail -n +2 "$FAKE_OUT" | tr '\n' '|')" "--xen|--domid|3|" \
	"trace-cmd agent --xen --domid 3 -> trace-cmd-xen-agent --xen --domid 3"
route stock agent -N 10.0.0.1
route agent agent -N 10.0.0.1 --insecure
route ours record --xen
rm "$tmp/bin/trace-cmd-xen"
route agent agent --xen
mv "$tmp/bin/trace-cmd-xen-agent" "$tmp/bin/trace-cmd-xen"
route ours agent --xen

# installed over the stock trace-cmd: a refusal, not a loop
mv "$fake_stock" "$fake_stock.real"
cp "$fake_front" "$fake_stock"
err=$(timeout 10 "$fake_stock" list 2>&1)
st=$?
is "$st" 1 "a front installed as the stock trace-cmd exits 1"
case "$err" in
*"installed as $fake_stock"*) ok 0 "... and says so: $err" ;;
*) ok 1 "... and says so (got: $err)" ;;
esac
rm -f "$fake_stock"
err=$("$tmp/bin/trace-cmd" list 2>&1)
st=$?
is "$st" 127 "no stock trace-cmd: exit 127"
case "$err" in
*"$fake_stock: No such file"*) ok 0 "... naming it: $err" ;;
*) ok 1 "... naming it (got: $err)" ;;
esac
mv "$fake_stock.real" "$fake_stock"

# The real front, the real stock trace-cmd, our real trace-cmd-xen.
if [ ! -x "$stock" ]; then
	echo "not ok $((n + 1)) - the stock trace-cmd $stock is not installed"
	n=$((n + 1)) failed=$((failed + 1))
else
	is "$("$front" list -e | md5sum)" "$("$stock" list -e | md5sum)" \
		"trace-cmd list -e through the front is the stock output"
	"$tdat_gen" plain "$tmp/small.dat" 7 50 2 >/dev/null
	want=$("$stock" report -i "$tmp/small.dat" 2>&1)
	is "$("$front" report -i "$tmp/small.dat" 2>&1)" "$want" \
		"trace-cmd report -i through the front is the stock output"
	[ "$(printf '%s\n' "$want" | grep -c xen_seq)" -eq 50 ]
	ok $? "... which holds the file's 50 events"
	"$stock" report -i "$tmp/none.dat" >/dev/null 2>&1
	want=$?
	"$front" report -i "$tmp/none.dat" >/dev/null 2>&1
	is $? "$want" "the stock exit status of a failing report passes through ($want)"
	[ "$want" -ne 0 ]
	ok $? "... and it is a failure"
	is "$("$front" record --xen -h 2>&1)" "$("$tcx" record -h 2>&1)" \
		"trace-cmd record --xen -h is trace-cmd-xen's help"
	"$front" record -e sched --xen --no-such-option >/dev/null 2>&1
	is $? 2 "trace-cmd record -e sched --xen --bad: trace-cmd-xen's usage status"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
