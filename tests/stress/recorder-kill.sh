#!/bin/bash
# SPDX-License-Identifier: MIT
# recorder-kill.sh: logged launches whose recorder is killed (kill -9) at a random moment of its life; every finish must still be recorded, once.
#
# Usage: tests/stress/recorder-kill.sh [BUILD-DIR] [N]   (default: build, 200)
#
# Not part of `meson test` (it sleeps on purpose: the kill moments are
# random, between 0 and 350 ms after the launch, which covers the
# recorder's start-up, its wait for the log's lock, its `running` row,
# its wait for the command's end and its finish). Each command runs
# 300 ms. At the end every launch must have exactly one row, `success`,
# with a duration and rusage: prints the counts, exit 1 if any is
# missing, unfinished or wrong.

set -u
BUILD=${1:-build}
N=${2:-200}
BGRUN=$(realpath "$BUILD/launcher/bgrun") || exit 1
LS=$(realpath "$BUILD/logsink/logsink") || exit 1
RT=$(realpath "$BUILD/tests/run-tests") || exit 1
for p in pgrep sqlite3; do
	command -v "$p" >/dev/null || { echo "recorder-kill.sh: $p is needed" >&2; exit 2; }
done
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
export BGRUN_DB=$TMP/events.db BGRUN_SINK=embedded
unset XDG_RUNTIME_DIR BGRUN_SOCKET

killed=0 ids=() sups=()
for ((i = 0; i < N; i++)); do
	out=$("$BGRUN" --print-id --print-pid -- "$RT" helper sleep-ms 300) || continue
	ids+=("${out%%$'\n'*}")
	pid=${out##*$'\n'}
	sup=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
	[ -n "$sup" ] && sups+=("$sup")
	sleep "$(printf '0.%03d' $((RANDOM % 350)))"
	# The first recorder a moment after that (it may not have started).
	rec=""
	for ((t = 0; t < 100 && ${#sup} > 0; t++)); do
		rec=$(pgrep -P "$sup" -x bgrun-record | head -n 1)
		[ -n "$rec" ] && break
		kill -0 "$sup" 2>/dev/null || break
	done
	if [ -n "$rec" ] && kill -KILL "$rec" 2>/dev/null; then
		killed=$((killed + 1))
	fi
done

# Every supervisor waits for its last recorder: none left means all done.
deadline=$((SECONDS + 120))
for sup in "${sups[@]}"; do
	while [ "$(awk '{print $2}' "/proc/$sup/stat" 2>/dev/null)" = "(bgrun-start)" ] &&
		[ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.05
	done
done

q() { sqlite3 "$BGRUN_DB" "$1"; }
rows=$(q "SELECT count(*) FROM events")
ok=$(q "SELECT count(*) FROM events WHERE result = 'success' AND exit_code = 0
        AND duration_ns > 0 AND max_rss_kb > 0")
running=$(q "SELECT count(*) FROM events WHERE result = 'running'")
missing=0
for id in "${ids[@]}"; do
	[ "$(q "SELECT count(*) FROM events WHERE id = '$id'")" = 1 ] ||
		missing=$((missing + 1))
done
echo "launches: ${#ids[@]}, recorders killed: $killed, rows: $rows," \
	"success with duration and rusage: $ok, running: $running, missing: $missing"
[ "$rows" = "${#ids[@]}" ] && [ "$ok" = "$rows" ] && [ "$missing" = 0 ]
