#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh: set up if needed, then launch a command in the background with bgrun and show that it ran.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
bgrun=build/launcher/bgrun
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "\$ bgrun --print-pid -o $out/demo.log -- sh -c 'echo started in session \$(ps -o sid= \$\$); sleep 1; echo done'"
pid=$("$bgrun" --print-pid -o "$out/demo.log" -- sh -c 'echo "started as pid $$ in session $(cut -d" " -f6 /proc/$$/stat)"; sleep 1; echo done')
echo "bgrun returned at once; the command runs detached as pid $pid"
# Wait for the detached command by watching its pid (it is not our child).
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
echo "--- $out/demo.log"
cat "$out/demo.log"
echo "\$ bgrun -- no-such-command"
"$bgrun" -- no-such-command || echo "(exit code $?)"
