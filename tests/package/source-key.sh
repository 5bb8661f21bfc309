#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The key of a source tree's contents, as the package suite names its
# .debs (BUILDDIR/tests/package/debs-KEY): 16 hex digits of a sha256 over
# every file git tracks or would track (all files outside build*/ and .git
# in a tree that is not a git checkout). With --list, the files instead,
# NUL-separated.
#
#   source-key.sh [--list] SOURCE_DIR
set -u
list=0
[ "${1:-}" = --list ] && { list=1; shift; }
src=${1:?usage: source-key.sh [--list] SOURCE_DIR}
files() {
	if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; then
		git -C "$src" ls-files -z --cached --others --exclude-standard |
			(cd "$src" && xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh)
	else
		(cd "$src" && find . -path ./build -prune -o -path './build-*' -prune -o \
			-path ./.git -prune -o -path './obj-*' -prune -o -type f -print0 |
			sed -z 's|^\./||')
	fi
}
if [ "$list" = 1 ]; then
	files
	exit
fi
files | LC_ALL=C sort -z | (cd "$src" && xargs -0 sha256sum) | sha256sum | cut -c1-16
