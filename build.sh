#!/bin/bash
# The project's one entry point for people and CI.
#
#   ./build.sh demo    install what is missing, build, run the demonstration
#   ./build.sh test    install what is missing, build with ASan+UBSan, run
#                      every test; ends with "N passed, N failed"
#   ./build.sh bench   optimised build, run the benchmarks under bench/
#   ./build.sh build   install and build only
#
# Build directories: build/ (ASan+UBSan, used by demo and test) and
# build-release/ (benchmarks). In CI (CI=true) warnings are errors.
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD

"$top/scripts/install-deps.sh"

werror=false
[ "${CI:-}" = true ] && werror=true

setup() {	# dir, extra meson options...
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" -Dwerror=$werror "$@" >/dev/null
	else
		meson setup "$dir" -Dwerror=$werror "$@" >/dev/null
	fi
	ninja -C "$dir" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
}

debug_build() {
	setup build -Db_sanitize=address,undefined -Db_lundef=false
}

case "${1:-}" in
build)
	debug_build
	;;
demo)
	debug_build
	shift
	exec "$top/scripts/demo.sh" "$@"
	;;
test)
	debug_build
	shift
	exec "$top/scripts/run-tests.sh" build "$@"
	;;
bench)
	setup build-release --buildtype=release -Db_sanitize=none
	shift
	exec "$top/bench/run.sh" build-release "$@"
	;;
*)
	sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
