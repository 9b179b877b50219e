#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh: set up if needed, then launch commands in the background with bgrun and show what the log recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
bgrun=build/launcher/bgrun
logsink=build/logsink/logsink
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private event log, so that the demo leaves nothing behind.
export BGRUN_DB=$work/events.db

# show COMMAND...: prints it as one would type it, then runs it.
show() {
	local a q="'\\''"
	printf '$'
	for a in "$@"; do
		case $a in
		*[!A-Za-z0-9_./=:-]*) printf " '%s'" "${a//\'/$q}" ;;
		*) printf ' %s' "$a" ;;
		esac
	done
	echo
	"$@"
}

show "$bgrun" --tag demo -o "$work/demo.log" -- \
	sh -c 'echo "hello from pid $$, leader of session $(cut -d" " -f6 /proc/$$/stat)"; sleep 0.3'
echo "(bgrun returned at once; the command runs detached, its supervisor records it)"
show "$bgrun" --tag demo -- sh -c 'exit 3'
show "$bgrun" --tag demo -- no-such-command || echo "(exit code $?)"

# Wait until both commands that started are recorded as finished.
for _ in $(seq 1 200); do
	[ "$("$logsink" query --tag demo --result running --csv | wc -l)" -le 1 ] && break
	sleep 0.05
done
show cat "$work/demo.log"
show "$logsink" query --tag demo
show "$logsink" stats --tag demo
