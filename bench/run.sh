#!/bin/bash
# Run every benchmark of a build directory. Each prints its results as
# ratios against a reference measured in the same run.
#
#   bench/run.sh BUILDDIR
#
# To add a benchmark: build it in bench/meson.build and add its path
# (relative to BUILDDIR, with its arguments if any) to the list below.
#
# record-bench goes first: its low steps weigh a 3 s session's own CPU,
# and on a VM that backs its memory lazily, right after convert-bench
# has written and freed 2.5 GB those sessions cost twice as much for
# minutes (the memory's first touches), record's more than xentrace's.
set -u
build=${1:?usage: bench/run.sh BUILDDIR}
benches=(
	bench/record-bench
	bench/tdat-bench
	bench/convert-bench
	bench/agent-bench
	"bench/agent-bench 256 2 ${TMPDIR:-/tmp} vchan"
	bench/tsync-bench
	bench/scale-bench
	bench/analyze-bench
)
rc=0
for b in "${benches[@]}"; do
	echo "== $b"
	read -r -a cmd <<< "$b"
	"$build/${cmd[0]}" "${cmd[@]:1}" || rc=1
done
exit $rc
