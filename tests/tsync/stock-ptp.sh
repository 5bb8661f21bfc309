#!/bin/bash
# ptp against the stock trace-cmd 3.1.6 host, byte for byte: our agent is
# the ptp server, the stock `trace-cmd record -A` the client; the stock host
# writes TIME_SHIFT into the guest file from our OFFSET messages. One TSC on
# both sides, so the offsets found must be small.
# Usage: stock-ptp.sh AGENT_BINARY
agent=$(readlink -f "$1")
dir=$(mktemp -d /tmp/tsync-stock-XXXXXX)
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
no() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
check() { if eval "$1"; then ok "$2"; else no "$2"; fi; }
cleanup() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
echo "1..5"
if [ ! -x /usr/bin/trace-cmd ] || [ ! -w /sys/kernel/tracing/trace_clock ]; then
	for i in 1 2 3 4 5; do echo "ok $i # SKIP no stock trace-cmd or tracefs"; done
	exit 0
fi
cd "$dir" || exit 1
# a port nobody listens on (the CLI takes no 0)
for port in $(seq $((20000 + $$ % 20000)) 45000); do
	! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
done
"$agent" agent -N 127.0.0.1 --insecure -p "$port" >agent.log 2>&1 &
apid=$!
for _ in $(seq 100); do
	grep -q "^agent: listening" agent.log && break
	sleep 0.1
done
timeout -s INT 60 /usr/bin/trace-cmd record -d --no-filter -C x86-tsc -o h.dat \
	-e sched:sched_switch -A 127.0.0.1:"$port" -C x86-tsc -e sched:sched_switch \
	sleep 1 >rec.log 2>&1
check 'grep -q "Negotiated ptp time sync" rec.log' "the stock host negotiated ptp with our agent"
check 'grep -q "time sync ptp" agent.log && ! grep -q "time sync (ptp)" agent.log' \
	"our agent served the ptp rounds without error"
/usr/bin/trace-cmd dump --options h-127.0.0.1.dat >opts.txt 2>&1
check 'grep -q "TimeShift" opts.txt && grep -q "^0x1 \[peer.s protocol flags\]" opts.txt' \
	"the stock host wrote TIME_SHIFT (interpolating) into the guest file"
# samples: "<offset> 1 0 <ts>[...]"; same TSC on both ends
awk '/\[offset \* scaling/ { o = $1 < 0 ? -$1 : $1; c++; if (o > m) m = o }
     END { print c + 0, m + 0 }' opts.txt >samples.txt
read -r count maxoff <samples.txt
check '[ "$count" -ge 2 ]' "$count samples"
check '[ "$maxoff" -lt 2600000 ]' "largest |offset| $maxoff ticks (< 1 ms: the stock host's marker stamps dominate)"
if [ -n "$failed" ]; then
	sed 's/^/# host: /' rec.log
	sed 's/^/# agent: /' agent.log
fi
