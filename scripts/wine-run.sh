#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wine-run.sh: meson's exe_wrapper in the Windows build (scripts/test-windows.sh):
# runs PROGRAM under wine with its output going through files, then copies
# them to our stdout and stderr. meson reads a test's output through pipes;
# a wine process that outlives the test (wine's own, or one the test
# started) inherits whatever wine was given, and would hold those pipes,
# and the test, open until it exits. Given files, it holds only those.
# Usage: wine-run.sh PROGRAM [ARGS...]
out=$(mktemp) err=$(mktemp)
wine "$@" >"$out" 2>"$err" </dev/null
rc=$?
cat "$out"
cat "$err" >&2
rm -f "$out" "$err"
exit $rc
