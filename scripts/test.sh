#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh: set up if needed, then build and run the whole test suite.
# Usage: scripts/test.sh [--asan] [--fallbacks]
#   --asan       in build-asan, with -Db_sanitize=address,undefined (and
#                bgrun-start built with them: with b_sanitize set,
#                -Dstarter=auto uses the project's compiler, not musl-gcc)
#   --fallbacks  in build-fallbacks, as if the optional glibc features were
#                missing, bgrun-start and bgrun on glibc too
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=build
opts=()
for a in "$@"; do
	case "$a" in
	--asan) builddir=build-asan; opts+=(-Db_sanitize=address,undefined -Db_lundef=false) ;;
	--fallbacks) builddir=build-fallbacks; opts+=(-Dfallbacks=true -Dstarter=system -Dfront=system) ;;
	*) echo "test.sh: unknown option '$a'" >&2; exit 2 ;;
	esac
done
scripts/setup.sh "$builddir" "${opts[@]}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec meson test -C "$builddir" --print-errorlogs --num-processes 2
