#!/bin/sh
# Run the decoder's libFuzzer binary for a bounded time from the committed
# seeds, with a scratch corpus in the build tree (libFuzzer writes new inputs
# into its first corpus directory, which must not be the source tree).
#   run-fuzz.sh BINARY SEEDS WORKDIR SECONDS
set -eu
bin=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus" "$work/crashes"
# a crash exits 1: libFuzzer's default 77 would read as a skip to meson
exec "$bin" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 -max_len=65536 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-print_final_stats=1 -artifact_prefix="$work/crashes/" \
	"$work/corpus" "$seeds"
