#!/bin/bash
# SPDX-License-Identifier: MIT
# test-output.sh: the output a logged launch keeps: the files, bgrun logs [-f], bgrun -w's live display, its signals and timeout, the cap, prune.
#
# Usage: test-output.sh BGRUN LOGSINK RUN_TESTS (absolute paths; meson passes
# them). Real processes throughout; a job that must still run while a check
# looks is held on a FIFO this script writes to, and every wait is on a
# condition with a deadline, never a sleep for its own sake.

set -u

BGRUN=${1:?usage: test-output.sh BGRUN LOGSINK RUN_TESTS}
LS=${2:?usage: test-output.sh BGRUN LOGSINK RUN_TESTS}
RT=${3:?usage: test-output.sh BGRUN LOGSINK RUN_TESTS}

USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
need_executable "$BGRUN" "$LS" "$RT"
need_program sqlite3
export BGRUN_DB=$TMP/events.db
export BGRUN_CONFIG=$TMP/config
unset BGRUN_OUTPUT BGRUN_MAX_OUTPUT
OUT_DIR=$TMP/output
exec </dev/null

# sql QUERY: run against the log.
sql() { sqlite3 -cmd '.timeout 10000' "$BGRUN_DB" "$1"; }
# until_true DESC COMMAND...: polls COMMAND for up to 20 s.
until_true() {
	local end=$((SECONDS + 20))
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.01
	done
}
# result_is ID RESULT: the row says so.
result_is() { [ "$(sql "SELECT result FROM events WHERE id = '$1'" 2>/dev/null)" = "$2" ]; }
has_text() { grep -q -- "$2" "$1" 2>/dev/null; }

# --- kept by default, merged, shown live by -w ---
capture "$BGRUN" -w --print-id -- sh -c 'echo out1; echo err1 >&2; echo out2'
eq "-w: exit 0" "$RC" 0
ID=${OUT%%$'\n'*}
eq "-w: the output shown on bgrun's stdout, merged in order" "${OUT#*$'\n'}" \
	$'out1\nerr1\nout2'
eq "-w: nothing on bgrun's stderr" "$ERR" ""
F=$OUT_DIR/$ID.log
check "kept: ID.log in the output directory" test -f "$F"
eq "kept: both streams, in order" "$(cat "$F")" $'out1\nerr1\nout2'
eq "kept: mode 0600" "$(stat -c %a "$F")" 600
eq "kept: directory mode 0700" "$(stat -c %a "$OUT_DIR")" 700
eq "recorded: stdout_path and stderr_path" \
	"$(sql "SELECT stdout_path || '|' || stderr_path FROM events WHERE id = '$ID'")" \
	"$F|$F"
eq "recorded: kept, with its cap" \
	"$(sql "SELECT json_extract(options, '\$.output') || ' ' || json_extract(options, '\$.output_max') FROM events WHERE id = '$ID'")" \
	"kept 16777216"

# Live: bgrun -w shows a line while the command still runs.
mkfifo "$TMP/go0"
"$BGRUN" -w -- sh -c 'echo first; read x <"$0"; echo second' "$TMP/go0" \
	>"$TMP/w.out" 2>&1 &
WPID=$!
KILL_PIDS+=("$WPID")
check "-w live: the first line shown while the command runs" \
	until_true has_text "$TMP/w.out" first
check "-w live: bgrun still waits" kill -0 "$WPID"
echo go >"$TMP/go0"
wait "$WPID"
eq "-w live: exit 0" "$?" 0
eq "-w live: then the rest" "$(cat "$TMP/w.out")" $'first\nsecond'

# --- bgrun logs ---
capture "$BGRUN" logs "$ID"
eq "logs: exit 0" "$RC" 0
eq "logs: the output" "$OUT" $'out1\nerr1\nout2'
capture "$BGRUN" logs "${ID: -8}"
eq "logs by the short id: the output" "$RC:$OUT" $'0:out1\nerr1\nout2'
capture "$BGRUN" logs -f "$ID"
eq "logs -f of a finished job: its output and status" "$RC:$OUT" \
	$'0:out1\nerr1\nout2'
capture "$BGRUN" logs bogus-id-that-is-none
expect_error "logs: no such event" 125 "bgrun: logs: no event 'bogus-id-that-is-none'"
capture "$BGRUN" logs
eq "logs without an id: usage, exit 2" "$RC" 2
capture "$BGRUN" -- logs
expect_error "bgrun -- logs: a program named logs" 127 "bgrun: logs: command not found"

# --- a detached job's output, followed live; its end through a FIFO ---
mkfifo "$TMP/go"
capture "$BGRUN" --print-id -- sh -c 'echo started; read x <"$0"; echo "got $x"; exit 7' "$TMP/go"
eq "detached: exit 0" "$RC" 0
ID=$OUT
"$BGRUN" logs -f "$ID" >"$TMP/f.out" 2>"$TMP/f.err" &
FPID=$!
KILL_PIDS+=("$FPID")
check "logs -f: shows what is written while the job runs" \
	until_true has_text "$TMP/f.out" started
check "logs -f: still following while the job runs" kill -0 "$FPID"
echo hello >"$TMP/go"
wait "$FPID"
eq "logs -f: ends with the job, its exit status" "$?" 7
eq "logs -f: all of the output" "$(cat "$TMP/f.out")" $'started\ngot hello'
eq "logs -f: nothing on stderr" "$(cat "$TMP/f.err")" ""

# A job whose row is not written (yet, or ever: no daemon answers for
# BGRUN_SINK=daemon, so the record waits in the spool) is followed by its
# whole id, from its file, to its end.
mkfifo "$TMP/go2"
BGRUN_SINK=daemon BGRUN_SOCKET=$TMP/no.sock capture "$BGRUN" --print-id -- \
	sh -c 'echo early; read x <"$0"; echo late' "$TMP/go2"
eq "no row: launched" "$RC" 0
ID=$OUT
"$BGRUN" logs -f "$ID" >"$TMP/f2.out" 2>"$TMP/f2.err" &
FPID=$!
KILL_PIDS+=("$FPID")
check "no row: logs -f shows the output" until_true has_text "$TMP/f2.out" early
check "no row: still following" kill -0 "$FPID"
echo go >"$TMP/go2"
wait "$FPID"
eq "no row: logs -f ends with the job, 125: no end recorded" "$?" 125
eq "no row: all of the output" "$(cat "$TMP/f2.out")" $'early\nlate'
eq "no row: said why" "$(cat "$TMP/f2.err")" "bgrun: logs: event $ID: no end was recorded"

# --- --split-output ---
capture "$BGRUN" -w --print-id --split-output -- sh -c 'echo O; echo E >&2'
ID=${OUT%%$'\n'*}
eq "split -w: stdout on bgrun's stdout" "${OUT#*$'\n'}" O
eq "split -w: stderr on bgrun's stderr" "$ERR" E
eq "split: ID.out" "$(cat "$OUT_DIR/$ID.out")" O
eq "split: ID.err" "$(cat "$OUT_DIR/$ID.err")" E
check "split: no ID.log" test ! -e "$OUT_DIR/$ID.log"
capture "$BGRUN" logs "$ID"
eq "split logs: stdout, stderr apart" "$RC|$OUT|$ERR" "0|O|E"

# --- opting out: --no-output, -o /dev/null, the configuration ---
# (The environment is kept all the same, in ID.env: not counted.)
n_out() { ls "$OUT_DIR" | grep -vc '\.env$'; }
N=$(n_out)
capture "$BGRUN" -w --print-id --no-output -- echo gone
eq "--no-output: nothing shown" "$RC:$OUT" "0:${OUT%%$'\n'*}"
ID=$OUT
eq "--no-output: no file" "$(n_out)" "$N"
check "--no-output: the environment kept all the same" test -f "$OUT_DIR/$ID.env"
capture "$BGRUN" logs "$ID"
expect_error "logs of --no-output" 125 \
	"bgrun: logs: event $ID kept no output (--no-output, -o, --no-log, or launched before bgrun kept output)"
capture "$BGRUN" -w -o /dev/null -e /dev/null -- echo gone
eq "-o /dev/null -e /dev/null: no file" "$RC:$OUT:$(n_out)" "0::$N"
printf '[output]\ncapture = none\n' >"$BGRUN_CONFIG"
capture "$BGRUN" -w -- echo gone
eq "[output] capture = none: no file" "$RC:$OUT:$(n_out)" "0::$N"
printf '[output]\ncapture = sideways\n' >"$BGRUN_CONFIG"
capture "$BGRUN" -w -- echo gone
expect_usage "[output] capture: a bad value" \
	"bgrun: invalid BGRUN_OUTPUT 'sideways' ([output] capture): expected merged, split or none"
rm -f "$BGRUN_CONFIG"
capture "$BGRUN" --max-output=12Q -- true
expect_usage "--max-output: a bad size" \
	"bgrun: invalid size '12Q' for --max-output: expected bytes, or a number and K, M, G (512K, 16M)"
capture "$BGRUN" --no-log --split-output -- true
expect_usage "--split-output --no-log" \
	"bgrun: --split-output and --max-output need the log (it keeps the output); drop --no-log"

# --- -o - and -o /dev/stdout: bgrun's own stream ---
capture "$BGRUN" -w -o - -- echo dash
eq "-o -: the command writes on bgrun's stdout" "$RC:$OUT" "0:dash"
check "-o -: no file named -" test ! -e "$TMP/-"
for mode in --no-log ""; do
	printf 'earlier\n' >"$TMP/appended"
	"$BGRUN" $mode -w -o /dev/stdout -- echo hi >>"$TMP/appended"
	eq "-o /dev/stdout $mode >>f: f's earlier content kept" \
		"$(cat "$TMP/appended")" $'earlier\nhi'
	printf 'earlier\n' >"$TMP/appended2"
	"$BGRUN" $mode -w -e /dev/stderr -- sh -c 'echo oops >&2' 2>>"$TMP/appended2"
	eq "-e /dev/stderr $mode 2>>f: f's earlier content kept" \
		"$(cat "$TMP/appended2")" $'earlier\noops'
done

# --- the cap: the tail is kept ---
capture "$BGRUN" -w --print-id --max-output=8K -- sh -c \
	'i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done'
ID=${OUT%%$'\n'*}
eq "cap: exit 0" "$RC" 0
F=$OUT_DIR/$ID.log
BLOCK=$(stat -c %B "$F")
check "cap: the file takes at most the cap and a block ($(($(stat -c %b "$F") * BLOCK)) bytes)" \
	test $(($(stat -c %b "$F") * BLOCK)) -le $((8192 + 2 * 4096))
capture "$BGRUN" logs "$ID"
eq "cap: the last line kept" "${OUT##*$'\n'}" "line 2999"
check "cap: the first line dropped" eval '! grep -qx "line 0" "$TMP/.stdout"'
check "cap: logs says what was dropped" \
	eval '[[ $ERR =~ ^bgrun:\ \[[0-9]+\ bytes\ of\ earlier\ output\ dropped:\ over\ the\ cap\]$ ]]'
check "cap: recorded as dropped" \
	test "$(sql "SELECT json_extract(options, '\$.output_dropped') FROM events WHERE id = '$ID'")" -gt 0
printf '[output]\nmax-size = 4K\n' >"$BGRUN_CONFIG"
capture "$BGRUN" -w --print-id -- true
eq "[output] max-size: the cap recorded" \
	"$(sql "SELECT json_extract(options, '\$.output_max') FROM events WHERE id = '${OUT%%$'\n'*}'")" 4096
rm -f "$BGRUN_CONFIG"

# --- -w --timeout: 124, as timeout(1) ---
capture "$BGRUN" -w --print-id --timeout 200ms -- "$RT" helper pause
eq "-w --timeout: exit 124" "$RC" 124
eq "-w --timeout: recorded as timeout" "$(sql "SELECT result FROM events WHERE id = '$OUT'")" timeout

# --- signals to bgrun -w reach the command ---
# Each run writes a file of its own, made before bgrun starts: a reused
# one shows the last run's lines until the shell's child truncates it,
# and the signal went to a bgrun that had not yet set up its forwarding;
# one the caller ignores (a background job's SIGINT, SIGHUP under nohup)
# was then lost, and bgrun waited for ever.
for sig in TERM INT HUP; do
	out=$TMP/sig-$sig.out
	: >"$out"
	"$BGRUN" -w --print-id --print-pid -- "$RT" helper pause >"$out" 2>&1 &
	BPID=$!
	KILL_PIDS+=("$BPID")
	until_true eval '[ "$(wc -l <"$out")" -ge 2 ]'
	ID=$(sed -n 1p "$out")
	CPID=$(sed -n 2p "$out")
	KILL_PIDS+=("$CPID")
	kill -s "$sig" "$BPID"
	wait "$BPID"
	eq "SIG$sig to bgrun -w: exit 128+N" "$?" $((128 + $(kill -l "$sig")))
	check "SIG$sig to bgrun -w: the command is gone" eval '! kill -0 "$CPID" 2>/dev/null'
	eq "SIG$sig to bgrun -w: recorded as signaled" \
		"$(sql "SELECT result || ' ' || signal FROM events WHERE id = '$ID'")" \
		"signaled $(kill -l "$sig")"
done

# --- prune removes the kept output with its event ---
printf 'mine\n' >"$TMP/mine.log"
capture "$BGRUN" -w --print-id -o "$TMP/mine.log" -e "$TMP/mine.log" -- echo x
check "prune: a user's -o file is not kept output" test -s "$TMP/mine.log"
N=$(ls "$OUT_DIR" | wc -l)
check "prune: there are files to prune" test "$N" -gt 0
capture "$LS" prune --dry-run --older-than 0s
eq "prune --dry-run: exit 0" "$RC" 0
check "prune --dry-run: counts the output files ($OUT)" \
	eval '[[ $OUT == *"; would remove $N output files ("* ]]'
eq "prune --dry-run: the files stay" "$(ls "$OUT_DIR" | wc -l)" "$N"
capture "$LS" prune --older-than 0s
check "prune: says it removed them ($OUT)" \
	eval '[[ $OUT == *"; removed $N output files ("* ]]'
eq "prune: the files are gone" "$(ls "$OUT_DIR" | wc -l)" 0
eq "prune: the user's -o file stays" "$(cat "$TMP/mine.log")" x

# --- the cap without inotify: the supervisor's fallback timer ---
# inotify instances are counted per user (fs.inotify.max_user_instances):
# as root, the job runs as nobody after a helper running as nobody has
# taken all of that user's instances, so no other test is touched. The
# job itself checks, after each 256 KiB it writes, that the cap (64 KiB)
# has been applied before it writes more: only the timer can apply it
# now. It waits for that with a deadline (20 s; the timer fires every
# second) and exits 3 if it never comes.
fallback_test() {
	local nb=$TMP/nobody as hog_pid line id f
	as=(setpriv --reuid nobody --regid nogroup --clear-groups)
	chmod 711 "$TMP"
	mkdir "$nb" && chown nobody:nogroup "$nb"
	if ! "${as[@]}" test -x "$BGRUN" -a -x "$RT"; then
		echo "# skipped: the cap's fallback timer (nobody cannot run $BGRUN)"
		return
	fi
	mkfifo "$nb/hold"
	"${as[@]}" "$RT" helper inotify-hog <"$nb/hold" >"$nb/hog.out" 2>&1 &
	hog_pid=$!
	KILL_PIDS+=("$hog_pid")
	exec 5>"$nb/hold"
	until_true grep -q '^ready\|^inotify-hog' "$nb/hog.out"
	line=$(cat "$nb/hog.out")
	if [[ $line != ready* ]]; then
		echo "# skipped: the cap's fallback timer ($line)"
		exec 5>&-
		return
	fi
	echo "# nobody's inotify instances taken: ${line#ready }"
	eq "fallback: nobody has no inotify instance left" \
		"$("${as[@]}" "$RT" helper inotify-hog </dev/null 2>&1)" "ready 0"
	cd "$nb" || return
	capture env BGRUN_DB="$nb/events.db" BGRUN_OUTPUT_DIR="$nb/output" \
		BGRUN_CONFIG= BGRUN_SINK=embedded XDG_RUNTIME_DIR="$nb/run" \
		HOME="$nb" "${as[@]}" "$BGRUN" -w --print-id --max-output=64K -s -- '
		i=0
		while [ $i -lt 6 ]; do
			head -c 262144 /dev/zero
			end=$(( $(date +%s) + 20 ))
			until [ $(( $(stat -L -c "%b * %B" /proc/$$/fd/1) )) -le $((65536 + 2 * 4096)) ]; do
				[ "$(date +%s)" -ge "$end" ] && exit 3
				sleep 0.05
			done
			i=$((i + 1))
		done'
	cd "$TMP" || return
	exec 5>&-
	wait "$hog_pid"
	id=${OUT%%$'\n'*}
	f=$nb/output/$id.log
	eq "fallback: each write capped by the timer (exit 0, not 3)" "$RC" 0
	check "fallback: the file kept within the cap and two blocks ($(($(stat -c "%b * %B" "$f"))) bytes)" \
		test $(($(stat -c "%b * %B" "$f"))) -le $((65536 + 2 * 4096))
	check "fallback: recorded as dropped" test "$(sqlite3 -cmd '.timeout 10000' \
		"$nb/events.db" "SELECT json_extract(options, '\$.output_dropped') FROM events WHERE id = '$id'")" -gt 0
}
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	fallback_test
else
	echo "# skipped: the cap's fallback timer (needs root and setpriv, to run as nobody)"
fi

finish
