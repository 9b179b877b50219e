#!/bin/bash
# SPDX-License-Identifier: MIT
# test-logtool.sh: logsink as a log tool without footguns: no log yet, every time form, prune's safety and shrinking, ids typed back, stats, errors.
#
# Usage: test-logtool.sh BGRUN LOGSINK RUN_TESTS (absolute paths; meson passes
# them). Events are recorded for real (bgrun, `logsink send`) in real SQLite
# files; a few with chosen times are recorded with --field start_ns. "Now" is
# fixed with $BGRUN_NOW, so that "today" and "2 hours ago" are known and no
# check depends on the clock. Exit 77 (skipped) without sqlite3 or python3.

set -u

BGRUN=${1:?usage: test-logtool.sh BGRUN LOGSINK RUN_TESTS}
LS=${2:?usage: test-logtool.sh BGRUN LOGSINK RUN_TESTS}
RT=${3:?usage: test-logtool.sh BGRUN LOGSINK RUN_TESTS}
USAGE_PROG=logsink
. "$(dirname "$0")/lib.sh"
need_executable "$BGRUN" "$LS" "$RT"
need_program python3 sqlite3
PY=$(python3 -c 'import sys; print(sys.executable)') || exit 1

TMP=$(pwd -P)
export BGRUN_DB=$TMP/events.db
export BGRUN_SINK=embedded
# Local time 5:30 ahead of UTC (a POSIX rule: no tzdata needed).
export TZ=XST-5:30
unset BGRUN_NOW
exec </dev/null
lsink() { capture "$LS" "$@"; }
# ep 'LOCAL TIME': its seconds since the epoch.
ep() { date -d "$1" +%s; }
# at ID 'LOCAL TIME' [COMMAND]: records a finished run of COMMAND (default:
# "run ID") at that time, under that id.
at() {
	"$LS" send --event commandfinish --field id="$1" \
		--field start_ns="$(ep "$2")000000000" --field result=success \
		--field display="${3:-run $1}" || fail "recording $1"
}
# deploy ID 'LOCAL TIME': a `logsink send --event deploy` at that time.
deploy() {
	"$LS" send --event deploy --message shipped --field id="$1" \
		--field start_ns="$(ep "$2")000000000" || fail "recording $1"
}
# ids ARGS...: the ids `logsink query --json ARGS...` lists, sorted, on one line.
ids() {
	"$LS" query --json "$@" | "$PY" -c '
import json, sys
print(" ".join(sorted(json.loads(l)["id"] for l in sys.stdin)))'
}

echo "# bgrun: $BGRUN"
echo "# logsink: $LS"

# --- no log yet ---
lsink query
eq "no log yet: query exit 0" "$RC" 0
eq "no log yet: the table's header only" "$OUT" \
	"TIME                 DURATION  RESULT           EXIT  ID        COMMAND"
eq "no log yet: nothing on stderr" "$ERR" ""
lsink stats --csv
eq "no log yet: stats, the CSV header only" "$RC:$OUT" \
	"0:command,runs,failures,p50_ms,p95_ms,max_ms"$'\r'
lsink show abc
expect_error "no log yet: show" 1 "logsink: no event 'abc'"
lsink show 'no/such'
expect_error "no log yet: show, not an id all the same" 1 \
	"logsink: 'no/such' is not an event id"
check "no log yet: nothing created" test ! -e "$BGRUN_DB"
# A database nothing was written to yet reads as empty too.
: >"$TMP/empty.db"
lsink --db "$TMP/empty.db" query --json
eq "an empty database file: empty, exit 0" "$RC:$OUT:$ERR" "0::"
# But a --db naming no file is a mistake, not an empty log.
lsink --db "$TMP/typo.db" query
expect_error "--db naming no file" 1 \
	"logsink: cannot open '$TMP/typo.db': No such file or directory"

# --- BGRUN_SINK=bogus is an error ---
BGRUN_SINK=bogus lsink send --event deploy
expect_error "BGRUN_SINK=bogus: send" 1 \
	"logsink: invalid BGRUN_SINK 'bogus': expected auto, embedded or daemon"
BGRUN_SINK=bogus capture "$BGRUN" -- "$RT" helper exit 0
expect_error "BGRUN_SINK=bogus: bgrun, before launching" 125 \
	"bgrun: invalid BGRUN_SINK 'bogus': expected auto, embedded or daemon"
BGRUN_SINK=bogus capture "$BGRUN" --no-log -- "$RT" helper exit 0
eq "BGRUN_SINK=bogus: bgrun --no-log does not care" "$RC" 0
check "BGRUN_SINK=bogus: nothing recorded" test ! -e "$BGRUN_DB"

# --- time filters, against events at known local times ---
at y10 '2026-11-30 10:00'
at old '2026-11-20 10:00'
at t0930 '2026-12-01 09:30'
at t1130 '2026-12-01 11:30'
at t1159 '2026-12-01 11:59:30'
at future '2026-12-01 13:00'
export BGRUN_NOW='2026-12-01 12:00'
ALL="future old t0930 t1130 t1159 y10"
eq "no filter: all" "$(ids)" "$ALL"
# since FORM WANT: --since FORM lists exactly WANT.
since() { eq "--since '$1'" "$(ids --since "$1")" "$2"; }
until_() { eq "--until '$1'" "$(ids --until "$1")" "$2"; }
since today "future t0930 t1130 t1159"
since TODAY "future t0930 t1130 t1159"
since yesterday "future t0930 t1130 t1159 y10"
since 'yesterday 12:00' "future t0930 t1130 t1159"
since 'today 11:30' "future t1130 t1159"
since 11:30 "future t1130 t1159"
since 11:59:30 "future t1159"
until_ 09:30:01 "old t0930 y10"
since now "future"
until_ now "old t0930 t1130 t1159 y10"
until_ today "old y10"
eq "--since yesterday --until today" "$(ids --since yesterday --until today)" "y10"
since 1w "future t0930 t1130 t1159 y10"
since 2w "$ALL"
since 1h30m "future t1130 t1159"
since '1h 30m' "future t1130 t1159"
since '2 hours ago' "future t1130 t1159"
since '3 hours ago' "future t0930 t1130 t1159"
since '90 minutes ago' "future t1130 t1159"
since 30s "future t1159"
since -30s "future t1159"
since '1 day' "future t0930 t1130 t1159"
until_ +1h "old t0930 t1130 t1159 y10"
since "@$(ep '2026-12-01 11:30')" "future t1130 t1159"
since "@$(ep '2026-12-01 11:30').5" "future t1159"
since 2026-12-01 "future t0930 t1130 t1159"
since 20261201 "future t0930 t1130 t1159"
since 20261130 "future t0930 t1130 t1159 y10"
since '2026-12-01 10:00' "future t1130 t1159"
since 2026-12-01T10:00:00 "future t1130 t1159"
since 20261201T11:45 "future t1159"
since 2026-11-30T10:00 "future t0930 t1130 t1159 y10"
since 2026-12-01T06:00Z "future t1130 t1159"
since 2026-12-01T11:30+05:30 "future t1130 t1159"
lsink query --since 20261232
expect_usage "--since 20261232: not a date, never seconds" \
	"logsink: invalid time '20261232' for --since: expected a date (2026-12-01 10:00), a duration ago (2h, 1h30m, '2 hours ago'), @EPOCH, now, today or yesterday"
lsink query --since 90
expect_usage "--since 90: a number needs a unit" \
	"logsink: invalid time '90' for --since: a number needs a unit ('90s' ago, or '@90' for seconds since 1970)"
lsink query --until '2 fortnights ago'
expect_usage "--until with an unknown unit" \
	"logsink: invalid time '2 fortnights ago' for --until: expected a date (2026-12-01 10:00), a duration ago (2h, 1h30m, '2 hours ago'), @EPOCH, now, today or yesterday"
BGRUN_NOW=soon lsink query --since 1h
expect_usage "BGRUN_NOW invalid" "logsink: invalid time 'soon' in BGRUN_NOW"
# stats takes the same times.
eq "stats --since today: the runs of today" "$("$LS" stats --since today --csv |
	"$PY" -c 'import csv, sys; print(sum(int(r["runs"]) for r in csv.DictReader(sys.stdin)))')" 4

# --- prune: safety ---
SUM=$(ids)
lsink prune --older-than 0
expect_usage "prune --older-than 0: a unit is required" \
	"logsink: invalid duration '0' for --older-than: expected a number and a unit (90s, 10m, 1h30m, 2d)"
lsink prune --older-than 30
expect_usage "prune --older-than 30: a unit is required" \
	"logsink: invalid duration '30' for --older-than: expected a number and a unit (90s, 10m, 1h30m, 2d)"
lsink prune --keep 0
expect_usage "prune --keep 0" \
	"logsink: invalid count '0' for --keep: expected a positive number"
lsink prune
expect_usage "prune needs a condition" "logsink: prune needs --older-than=AGE or --keep=N"
eq "prune refused: nothing deleted" "$(ids)" "$SUM"
BEFORE=$(cksum <"$BGRUN_DB")
lsink prune --older-than 1d --dry-run
eq "prune --dry-run: exit 0" "$RC" 0
check "prune --dry-run: says what would go" \
	eval '[[ $OUT =~ ^would\ prune\ 2\ events\;\ the\ log\ would\ shrink\ by\ about\ [0-9]+\ bytes ]]'
eq "prune --dry-run: nothing deleted" "$(ids)" "$SUM"
eq "prune --dry-run: the file unchanged" "$(cksum <"$BGRUN_DB")" "$BEFORE"
lsink prune -n --older-than 1d
check "prune -n: the same" eval '[[ $OUT == "would prune 2 events;"* ]]'
lsink prune --older-than 1d
check "prune --older-than 1d (of the fixed now)" eval '[[ $OUT == "pruned 2 events;"* ]]'
eq "prune --older-than 1d: old and y10 gone" "$(ids)" "future t0930 t1130 t1159"

# --- prune --keep N, per command ---
export BGRUN_DB=$TMP/keep.db
for i in 1 2 3 4 5; do at "a$i" "2026-12-01 0$i:00" make; done
for i in 1 2 3; do at "b$i" "2026-12-01 0$i:30" test; done
for i in 1 2 3; do deploy "d$i" "2026-11-0$i 10:00"; done
lsink prune --keep 2 --dry-run
check "prune --keep 2 --dry-run: 3 make, 1 test, 1 deploy" eval '[[ $OUT == "would prune 5 events;"* ]]'
lsink prune --keep 2 --older-than 1h
check "prune --keep 2: the same" eval '[[ $OUT == "pruned 5 events;"* ]]'
eq "prune --keep 2: the two newest of each command" "$(ids)" "a4 a5 b2 b3 d2 d3"
lsink prune --keep 1 --older-than 20d
check "prune --keep 1 --older-than 20d: only the old beyond the newest" \
	eval '[[ $OUT == "pruned 1 event;"* ]]'
eq "prune --keep 1 --older-than 20d: what is left" "$(ids)" "a4 a5 b2 b3 d3"

# --- prune gives the space back ---
export BGRUN_DB=$TMP/big.db
at seed '2026-12-01 10:00'
sqlite3 "$BGRUN_DB" "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000)
	INSERT INTO events(id, event, source, recorded_ns, start_ns, result, display, message)
	SELECT 'bulk-' || i, 'commandfinish', 'bgrun', 1000000000000000000, 1000000000000000000,
	       'success', 'bulk', hex(randomblob(200)) FROM c"
eq "a new log is made with auto_vacuum incremental" "$(sqlite3 "$BGRUN_DB" 'PRAGMA auto_vacuum')" 2
SIZE0=$(stat -c %s "$BGRUN_DB")
lsink prune --older-than 1d
FREED=$(sed -n 's/^pruned 2000 events; the log shrank by \([0-9]*\) bytes (.*)$/\1/p' <<<"$OUT")
SIZE1=$(stat -c %s "$BGRUN_DB")
check "prune: the file shrank ($SIZE0 -> $SIZE1)" test "$SIZE1" -lt $((SIZE0 / 2))
eq "prune: says by how much, exactly" "$FREED" $((SIZE0 - SIZE1))
check "prune: the size for people" eval '[[ $OUT =~ \([0-9]+\.[0-9]\ [KMG]iB\)$ ]]'
eq "prune: the rest kept" "$(ids)" "seed"
# A log made before auto_vacuum: the first prune rebuilds it (VACUUM).
sqlite3 "$BGRUN_DB" "PRAGMA auto_vacuum = NONE; VACUUM;
	WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000)
	INSERT INTO events(id, event, source, recorded_ns, start_ns, result, display, message)
	SELECT 'bulk-' || i, 'commandfinish', 'bgrun', 1000000000000000000, 1000000000000000000,
	       'success', 'bulk', hex(randomblob(200)) FROM c"
eq "an old log: auto_vacuum none" "$(sqlite3 "$BGRUN_DB" 'PRAGMA auto_vacuum')" 0
SIZE0=$(stat -c %s "$BGRUN_DB")
lsink prune --older-than 1d
FREED=$(sed -n 's/^pruned 2000 events; the log shrank by \([0-9]*\) bytes (.*)$/\1/p' <<<"$OUT")
SIZE1=$(stat -c %s "$BGRUN_DB")
check "an old log: the file shrank ($SIZE0 -> $SIZE1)" test "$SIZE1" -lt $((SIZE0 / 2))
eq "an old log: says by how much" "$FREED" $((SIZE0 - SIZE1))
eq "an old log: now incremental" "$(sqlite3 "$BGRUN_DB" 'PRAGMA auto_vacuum')" 2
eq "an old log: the rest kept" "$(ids)" "seed"

# --- ids: typed back from the table ---
export BGRUN_DB=$TMP/ids.db
for i in 1 2 3 4 5; do "$BGRUN" -w --tag "t$i" -- "$RT" helper exit 0 || fail "launch $i"; done
"$LS" query --json | "$PY" -c '
import json, sys
for l in sys.stdin:
    print(json.loads(l)["id"])' >"$TMP/ids"
"$LS" query --table | tail -n +2 | cut -c 55-62 >"$TMP/shown"
eq "the ID column: the ids' last 8 characters" "$(cat "$TMP/shown")" "$(rev "$TMP/ids" | cut -c 1-8 | rev)"
# idof PART: the id `logsink show PART` names.
idof() { "$LS" show --json "$1" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }
n=0
while read -r short <&3 && read -r id <&4; do
	n=$((n + 1))
	eq "id $n: the column's text as shown" "$(idof "$short")" "$id"
	eq "id $n: a prefix of the column's text" "$(idof "${short:0:7}")" "$id"
	eq "id $n: a piece of the column's text" "$(idof "${short:1:7}")" "$id"
	eq "id $n: the full id" "$(idof "$id")" "$id"
	eq "id $n: query --id" "$("$LS" query --json --id "${short:0:7}" | wc -l)" 1
done 3<"$TMP/shown" 4<"$TMP/ids"
eq "five ids tried" "$n" 5
# Every UUID v7 has "-7" at the same place: all five contain it.
lsink show -- -7
eq "ambiguous id: exit 1" "$RC" 1
eq "ambiguous id: the message" "$(head -n 1 <<<"$ERR")" \
	"logsink: event id '-7' is ambiguous: 5 events' ids contain it:"
eq "ambiguous id: the candidates, newest first" \
	"$(tail -n +2 <<<"$ERR" | awk '{print $2 " " $3}')" \
	"$(paste -d ' ' "$TMP/shown" "$TMP/ids")"
eq "ambiguous id: nothing on stdout" "$OUT" ""
lsink query --id 'a/b'
expect_usage "query --id: not an id" "logsink: 'a/b' is not an event id"

# --- the table shows other events usefully ---
"$LS" send --event deploy --message 'shipped v2' --field id=dep1
EVENT=command MSG1=$'log -r .\n' HGPID=$$ "$LS" send --from-hg-env --field id=hgc1
lsink query --table
check "table: a deploy event's name and message" \
	eval '[[ $(grep "  dep1  " <<<"$OUT") =~ \ \ deploy:\ shipped\ v2$ ]]'
check "table: an hg command event's name and message" \
	eval '[[ $(grep "  hgc1  " <<<"$OUT") =~ \ \ command:\ log\ -r\ \.$ ]]'

# --- stats: --by, --sort, --limit, --plot ---
export BGRUN_DB=$TMP/stats.db
# run ID 'LOCAL TIME' DURATION_MS RESULT TAG HOST ARGV...: a finished run.
run() {
	local id=$1 t=$2 ms=$3 result=$4 tag=$5 host=$6 a f=()
	shift 6
	for a in "$@"; do f+=(--field "argv=$a"); done
	"$LS" send --event commandfinish --field id="$id" \
		--field start_ns="$(ep "$t")000000000" --field duration_ns="${ms}000000" \
		--field result="$result" --field tag="$tag" --field host="$host" \
		"${f[@]}" || fail "recording $id"
}
run m1 '2026-11-30 10:00' 1000 success build h1 make -j4
run m2 '2026-11-30 11:00' 2000 success build h1 make -j4
run m3 '2026-12-01 10:00' 3000 success build h1 make -j4
run m4 '2026-12-01 11:00' 10000 failed build h1 make -j4
run t1 '2026-12-01 10:10' 5000 success ci h2 ./run-tests all
run t2 '2026-12-01 10:20' 20 failed ci h2 ./run-tests all
run t3 '2026-12-01 10:30' 30 failed ci h2 ./run-tests all
# col N ARGS...: field N of each CSV record of `logsink stats --csv ARGS...`, one line.
col() {
	local n=$1
	shift
	"$LS" stats --csv "$@" | tr -d '\r' | cut -d , -f "$n" | paste -sd ' '
}
eq "stats: by command (the default), in order" "$(col 1)" "command ./run-tests all make -j4"
eq "stats: runs and failures" "$(col 2-3)" "runs,failures 3,2 4,1"
eq "stats --by argv0" "$(col 1 --by argv0)" "argv0 ./run-tests make"
eq "stats --by tag" "$(col 1,2 --by tag)" "tag,runs build,4 ci,3"
eq "stats --by host" "$(col 1,2 --by host)" "host,runs h1,4 h2,3"
eq "stats --by day (local days)" "$(col 1,2 --by day)" "day,runs 2026-11-30,2 2026-12-01,5"
eq "stats --sort count" "$(col 1 --sort count)" "command make -j4 ./run-tests all"
eq "stats --sort failures" "$(col 1 --sort failures)" "command ./run-tests all make -j4"
eq "stats --sort p95" "$(col 1,5 --sort p95)" "command,p95_ms make -j4,10000.000000 ./run-tests all,5000.000000"
eq "stats --sort p50" "$(col 1 --sort p50)" "command make -j4 ./run-tests all"
eq "stats --sort count --limit 1" "$(col 1 --sort count --limit 1)" "command make -j4"
eq "stats --by tag --json: the key's name" "$("$LS" stats --by tag --json --limit 1)" \
	'{"tag":"build","runs":4,"failures":1,"p50_ns":2000000000,"p95_ns":10000000000,"max_ns":10000000000}'
lsink stats --by tag --sort failures
eq "stats table: the key's column" "$(head -n 1 <<<"$OUT")" \
	"  RUNS  FAILED       P50       P95       MAX  TAG"
eq "stats table: rows" "$(tail -n +2 <<<"$OUT" | awk '{print $NF}' | paste -sd ' ')" "ci build"
lsink stats --by week
expect_usage "stats --by week" \
	"logsink: invalid key 'week' for --by: expected command, argv0, tag, host or day"
lsink stats --sort speed
expect_usage "stats --sort speed" \
	"logsink: invalid order 'speed' for --sort: expected key, count, failures, p50, p95 or max"
if command -v gnuplot >/dev/null; then
	lsink stats --tag build --plot "$TMP/build.png"
	eq "stats --plot: exit 0" "$RC" 0
	eq "stats --plot: the table still printed" "$(tail -n +2 <<<"$OUT" | awk '{print $1}')" 4
	eq "stats --plot: a PNG written" "$(head -c 8 "$TMP/build.png" | od -An -c | tr -s ' ')" \
		" 211 P N G \r \n 032 \n"
	lsink stats --by tag --plot "$TMP/all.png"
	check "stats --by tag --plot: a PNG" test -s "$TMP/all.png"
else
	echo "# gnuplot is not installed: --plot's drawing not tried"
fi
PATH=/nonexistent "$LS" stats --tag build --plot "$TMP/none.png" >/dev/null 2>"$TMP/.stderr"
eq "stats --plot without gnuplot: exit 1" "$?" 1
eq "stats --plot without gnuplot: the message" "$(cat "$TMP/.stderr")" \
	"logsink: --plot: gnuplot is not installed (not found in PATH)"
check "stats --plot without gnuplot: no file" test ! -e "$TMP/none.png"
lsink stats --tag nosuch --plot "$TMP/none.png"
eq "stats --plot, nothing chosen: exit 1" "$RC:$ERR" \
	"1:logsink: --plot: no finished runs with a duration to plot"

# --- no -lock file beside a file that is not a database ---
printf 'not a database at all, just some text\n' >"$TMP/notes.txt"
for verb in prune mark-lost query show stats; do
	args=()
	[ "$verb" = prune ] && args=(--older-than 1d)
	[ "$verb" = show ] && args=(abc)
	lsink --db "$TMP/notes.txt" "$verb" "${args[@]}"
	expect_error "$verb on a text file" 1 \
		"logsink: '$TMP/notes.txt': not a bgrun event database"
done
mkdir -m 700 "$TMP/run"
lsink --db "$TMP/notes.txt" serve --socket "$TMP/run/s.sock"
expect_error "serve on a text file: the same words" 1 \
	"logsink: '$TMP/notes.txt': not a bgrun event database"
check "no notes.txt-lock left" test ! -e "$TMP/notes.txt-lock"
eq "the text file untouched" "$(cat "$TMP/notes.txt")" "not a database at all, just some text"

# --- the same words in both programs ---
lsink serve --exit-idle abc
expect_usage "serve --exit-idle abc" \
	"logsink: invalid duration 'abc' for --exit-idle: expected a number and a unit (90s, 10m, 1h30m, 2d)"
capture "$BGRUN" --timeout abc -- true
USAGE_PROG=bgrun expect_usage "bgrun --timeout abc" \
	"bgrun: invalid duration 'abc' for --timeout: expected a number and a unit (90s, 10m, 1h30m, 2d)"
capture "$BGRUN" -w --timeout 1h30m -- "$RT" helper exit 0
eq "bgrun --timeout 1h30m: a duration" "$RC" 0

# --- serve: no directories made outside the runtime directory; --stop ---
export BGRUN_DB=$TMP/daemon.db
unset XDG_RUNTIME_DIR
lsink serve --socket "$TMP/no/such/dir/s.sock"
expect_error "serve --socket in a missing tree" 1 \
	"logsink: cannot create '$TMP/no/such/dir': its parent directory does not exist"
check "serve --socket in a missing tree: nothing made" test ! -e "$TMP/no"
SOCK=$TMP/run/s.sock
lsink serve --stop --socket "$SOCK"
eq "serve --stop, nobody serving" "$RC:$OUT:$ERR" "0:no daemon is serving '$SOCK':"
"$LS" serve --detach --socket "$SOCK" >"$TMP/detach.out" 2>&1
DPID=$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' "$TMP/detach.out" | head -n 1)
check "serve --detach: a pid ($(cat "$TMP/detach.out"))" test -n "$DPID"
[ -n "$DPID" ] && KILL_PIDS+=("$DPID")
BGRUN_SINK=daemon BGRUN_SOCKET=$SOCK "$LS" send --event deploy --message one --field id=via-daemon
eq "an event through the daemon" "$("$LS" query --json --id via-daemon | wc -l)" 1
lsink serve --stop --socket "$SOCK"
eq "serve --stop: exit 0" "$RC" 0
eq "serve --stop: says whom" "$OUT" "stopped the daemon (pid $DPID) serving '$SOCK'"
# Gone, or a zombie its parent has not reaped yet: not running either way.
running() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "" ] &&
	[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
check "serve --stop: the daemon is gone" eval '! running "$DPID"'
check "serve --stop: its socket removed" test ! -e "$SOCK"
lsink serve --stop --socket "$SOCK"
eq "serve --stop again: nobody" "$RC:$OUT" "0:no daemon is serving '$SOCK'"

finish
