#!/bin/bash
# SPDX-License-Identifier: MIT
# test-logsink.sh: logsink reading back what bgrun really recorded: every result, filters, formats, errors, concurrency.
#
# Usage: test-logsink.sh BGRUN LOGSINK RUN_TESTS (absolute paths; meson passes
# them). Every event is made by running bgrun for real; logsink's output is
# parsed with python3 (json, csv) where it is meant for programs. Each check
# prints "ok - ..." or "not ok - ..."; the exit status is 1 if any failed, 77
# (skipped) without python3 or sqlite3. Nothing sleeps to synchronise: a
# detached launch's row is polled for with a deadline.

set -u

BGRUN=${1:?usage: test-logsink.sh BGRUN LOGSINK RUN_TESTS}
LS=${2:?usage: test-logsink.sh BGRUN LOGSINK RUN_TESTS}
RT=${3:?usage: test-logsink.sh BGRUN LOGSINK RUN_TESTS}
USAGE_PROG=logsink
. "$(dirname "$0")/lib.sh"
need_executable "$BGRUN" "$LS" "$RT"
need_program python3 sqlite3

# The interpreter itself: a version manager's shim may take a second a start.
PY=$(python3 -c 'import sys; print(sys.executable)') || exit 1

TMP=$(pwd -P) # as bgrun records directories: resolved
export BGRUN_DB=$TMP/events.db
# A fixed local time zone that is not UTC (a POSIX rule: no tzdata needed),
# so that local times and explicit offsets are told apart.
export TZ=XST-5:30
exec </dev/null
# lsink ARGS...: runs logsink, see capture.
lsink() { capture "$LS" "$@"; }

# py CODE ARGS...: runs python3 code (stdin passed through).
py() {
	local code=$1
	shift
	"$PY" -c "$code" "$@"
}

# field ID KEY: a field of the event's JSON (from `logsink show --json`);
# "null" for JSON null, "" if there is no such event.
field() {
	"$LS" show --json "$1" 2>/dev/null | py '
import json, sys
for line in sys.stdin:
    v = json.loads(line).get(sys.argv[1])
    print("null" if v is None else v)' "$2"
}

# ids ARGS...: the ids `logsink query --json ARGS...` lists, one a line.
ids() {
	"$LS" query --json "$@" | py '
import json, sys
for line in sys.stdin:
    print(json.loads(line)["id"])'
}

# wait_result ID RESULT: polls until the event has that result (20 s).
wait_result() {
	local end=$((SECONDS + 20))
	until [ "$(field "$1" result)" = "$2" ]; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.02
	done
}

# supervisor_of ID: the pid of the supervisor of event ID (bgrun-start,
# COMMAND's parent), as its `running` row names it, once it is COMMAND's
# parent indeed.
supervisor_of() {
	local sup pid
	sup=$(field "$1" supervisor_pid)
	pid=$(field "$1" pid)
	[[ $sup =~ ^[0-9]+$ && $pid =~ ^[0-9]+$ ]] || return 1
	[ "$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)" = "$sup" ] || return 1
	echo "$sup"
}

# launch ARGS...: bgrun --print-id ARGS...; sets ID and BRC (bgrun's status).
launch() {
	"$BGRUN" --print-id "$@" >"$TMP/.bgrun-stdout" 2>"$TMP/.bgrun-stderr"
	BRC=$?
	ID=$(head -n 1 "$TMP/.bgrun-stdout")
}

echo "# bgrun: $BGRUN"
echo "# logsink: $LS"
echo "# run-tests: $RT"

# --- every result, made for real ---
launch -w -- "$RT" helper exit 0
ID_OK=$ID
eq "success: bgrun exit 0" "$BRC" 0
eq "success: result" "$(field "$ID_OK" result)" success
eq "success: exit_code 0" "$(field "$ID_OK" exit_code)" 0
eq "success: signal null" "$(field "$ID_OK" signal)" null

launch -w -- "$RT" helper exit 3
ID_FAIL=$ID
eq "failure: bgrun exit 3" "$BRC" 3
eq "failure: result" "$(field "$ID_FAIL" result)" failed
eq "failure: exit_code 3" "$(field "$ID_FAIL" exit_code)" 3
eq "failure: signal null" "$(field "$ID_FAIL" signal)" null

launch -w -- "$RT" helper signal 9
ID_SIG=$ID
eq "signal 9: bgrun exit 137" "$BRC" 137
eq "signal 9: result" "$(field "$ID_SIG" result)" signaled
eq "signal 9: signal 9" "$(field "$ID_SIG" signal)" 9
eq "signal 9: exit_code null" "$(field "$ID_SIG" exit_code)" null

launch -w --timeout 0.2 -- "$RT" helper pause
ID_TMO=$ID
eq "timeout: bgrun exit 124, as timeout(1)" "$BRC" 124
eq "timeout: result" "$(field "$ID_TMO" result)" timeout
eq "timeout: SIGTERM" "$(field "$ID_TMO" signal)" 15
eq "timeout: exit_code null" "$(field "$ID_TMO" exit_code)" null

# The ignored TERM survives the exec: only the SIGKILL that follows works.
launch -w --timeout 0.2 --kill-after 0.2 -s -- \
	"trap '' TERM; exec '$RT' helper pause"
ID_KILL=$ID
eq "timeout, TERM ignored: bgrun exit 137" "$BRC" 137
eq "timeout, TERM ignored: result" "$(field "$ID_KILL" result)" timeout
eq "timeout, TERM ignored: SIGKILL" "$(field "$ID_KILL" signal)" 9

launch -- bgrun-no-such-cmd
ID_NOCMD=$ID
eq "exec failure: bgrun exit 127" "$BRC" 127
check "exec failure: recorded as spawn_failed" \
	wait_result "$ID_NOCMD" spawn_failed
eq "exec failure: no pid" "$(field "$ID_NOCMD" pid)" null

# poll COMMAND...: until it succeeds (20 s).
poll() {
	local end=$((SECONDS + 20))
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.02
	done
}
# parent_of PID: its parent's pid (the guardian, for a supervisor).
parent_of() { awk '{print $4}' "/proc/$1/stat" 2>/dev/null; }
# gone PID: no such process, or a zombie (what the lost rule sees).
gone() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ]
}

# --- a vanished supervisor: lost, once its command has ended too ---
# The guardian above the supervisor (bgrun-start's first process) would
# take over from it: both are killed, the guardian first.
launch -- "$RT" helper pause
ID_LOST=$ID
check "lost: launched" test -n "$ID_LOST"
check "lost: running recorded" wait_result "$ID_LOST" running
PID_LOST=$(field "$ID_LOST" pid)
[[ $PID_LOST =~ ^[0-9]+$ ]] && KILL_PIDS+=("$PID_LOST")
SUP=$(supervisor_of "$ID_LOST")
if check "lost: supervisor found" test -n "$SUP"; then
	GUARD=$(parent_of "$SUP")
	eq "lost: the supervisor's parent is bgrun-start (the guardian)" \
		"$(awk '{print $2}' "/proc/$GUARD/stat" 2>/dev/null)" "(bgrun-start)"
	kill -KILL "$GUARD"
	check "lost: guardian gone" poll gone "$GUARD"
	kill -KILL "$SUP"
	check "lost: supervisor gone" poll gone "$SUP"
fi
eq "lost: not while its command runs (reported running)" \
	"$(field "$ID_LOST" result)" running
kill -KILL "$PID_LOST"
# lost_listed: query --json reports the event as lost.
lost_listed() {
	"$LS" query --json | py '
import json, sys
sys.exit(0 if any(json.loads(l)["id"] == sys.argv[1] and
                  json.loads(l)["result"] == "lost" for l in sys.stdin) else 1)' \
		"$ID_LOST"
}
check "lost: query --json shows it lost" poll lost_listed
eq "lost: still stored as running" \
	"$(sqlite3 "$BGRUN_DB" "SELECT result FROM events WHERE id = '$ID_LOST'")" \
	running
lsink show "$ID_LOST"
check "show lost: reported lost, recorded running" \
	grep -qx 'result: lost (recorded as running; its supervisor is gone)' \
	"$TMP/.stdout"
lsink mark-lost
eq "mark-lost: exit 0" "$RC" 0
eq "mark-lost: prints 1" "$OUT" 1
eq "mark-lost: now stored as lost" \
	"$(sqlite3 "$BGRUN_DB" "SELECT result FROM events WHERE id = '$ID_LOST'")" \
	lost
lsink mark-lost
eq "mark-lost again: prints 0" "$OUT" 0
lsink show "$ID_LOST"
check "show lost: now recorded lost" grep -qx 'result: lost' "$TMP/.stdout"

# --- a killed recorder: the supervisor starts another, nothing is lost ---
# The recorder (bgrun-record, bgrun-start's other child) is killed once
# the `running` row is written, and once before its first write, while
# it waits for the log's lock (held here). Either way the row ends with
# the command's true status, duration and rusage, which bgrun-start has.
# In a log of their own, so that the filters below count as before.
SAVED_DB=$BGRUN_DB
export BGRUN_DB=$TMP/recorder.db

# recorder_of SUP: the pid of bgrun-start SUP's recorder, once it runs.
recorder_of() {
	local f pid comm state ppid rest
	for f in /proc/[0-9]*/stat; do
		read -r pid comm state ppid rest <"$f" 2>/dev/null || continue
		if [ "$ppid" = "$1" ] && [ "$comm" = "(bgrun-record)" ]; then
			echo "$pid"
			return 0
		fi
	done
	return 1
}
# wait_recorder_of SUP: recorder_of, polled for (20 s).
wait_recorder_of() {
	local end=$((SECONDS + 20))
	until recorder_of "$1"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.02
	done
}
# finish_ok DESC ID CODE: the row says the command exited with CODE,
# with a duration and rusage, supervised by the same bgrun-start.
finish_ok() {
	check "$1: recorded as failed" wait_result "$2" failed
	eq "$1: exit_code $3" "$(field "$2" exit_code)" "$3"
	check "$1: a duration" test "$(field "$2" duration_ns)" -gt 0
	check "$1: rusage (max_rss_kb)" test "$(field "$2" max_rss_kb)" -gt 0
	eq "$1: one row" \
		"$(sqlite3 "$BGRUN_DB" "SELECT count(*) FROM events WHERE id = '$2'")" 1
}

mkfifo "$TMP/go-run" "$TMP/go-lock"
launch -- "$RT" helper exit 0 # the log exists, for the lock below
launch -s -- "read x <'$TMP/go-run'; exit 5"
ID_REC=$ID
check "recorder killed while running: running recorded" \
	wait_result "$ID_REC" running
SUP=$(supervisor_of "$ID_REC")
REC=""
if check "recorder killed while running: supervisor found" test -n "$SUP"; then
	REC=$(wait_recorder_of "$SUP")
fi
if check "recorder killed while running: recorder found" test -n "$REC"; then
	kill -KILL "$REC"
fi
echo go >"$TMP/go-run"
finish_ok "recorder killed while running" "$ID_REC" 5
eq "recorder killed while running: same supervisor" \
	"$(field "$ID_REC" supervisor_pid)" "$SUP"

exec {LOCK}>>"$BGRUN_DB-lock"
flock -x "$LOCK"
"$BGRUN" --print-id --print-pid -s -- "read x <'$TMP/go-lock'; exit 6" \
	>"$TMP/.early" 2>&1 {LOCK}>&-
ID_REC=$(sed -n 1p "$TMP/.early")
PID_REC=$(sed -n 2p "$TMP/.early")
SUP=$(awk '{print $4}' "/proc/$PID_REC/stat" 2>/dev/null)
REC=""
if check "recorder killed before its first write: supervisor found" \
	test -n "$SUP"; then
	KILL_PIDS+=("$PID_REC")
	REC=$(wait_recorder_of "$SUP")
fi
if check "recorder killed before its first write: recorder found" \
	test -n "$REC"; then
	kill -KILL "$REC"
fi
eq "recorder killed before its first write: no row yet" \
	"$(sqlite3 "$BGRUN_DB" "SELECT count(*) FROM events WHERE id = '$ID_REC'")" 0
exec {LOCK}>&-
check "recorder killed before its first write: running recorded" \
	wait_result "$ID_REC" running
echo go >"$TMP/go-lock"
finish_ok "recorder killed before its first write" "$ID_REC" 6

# A command that cannot start is recorded by a recorder bgrun starts.
exec {LOCK}>>"$BGRUN_DB-lock"
flock -x "$LOCK"
"$BGRUN" --print-id -- bgrun-no-such-cmd >"$TMP/.nocmd" 2>/dev/null {LOCK}>&- &
BG=$!
REC=$(wait_recorder_of "$BG")
if check "spawn_failed, recorder killed: recorder found" test -n "$REC"; then
	kill -KILL "$REC"
fi
exec {LOCK}>&-
wait "$BG"
eq "spawn_failed, recorder killed: bgrun exit 127" "$?" 127
ID_REC=$(sed -n 1p "$TMP/.nocmd")
check "spawn_failed, recorder killed: recorded" \
	wait_result "$ID_REC" spawn_failed

# --- a killed supervisor: the guardian takes over, nothing is lost ---
# bgrun-start's first process, the guardian, is the supervisor's parent
# and a subreaper: kill -9 of the supervisor while the command runs makes
# the command the guardian's child, which reaps it and has the finish
# recorded with the true exit code, duration and rusage (the row naming
# it as the supervisor); the same when the supervisor is killed after it
# reaped the command, before the finish was written (the log's lock held
# meanwhile); and bgrun --wait still exits with the command's status.
mkfifo "$TMP/go-sup" "$TMP/go-sup2" "$TMP/go-sup3"
launch -s -- "read x <'$TMP/go-sup'; exit 4"
ID_SUPK=$ID
check "supervisor killed while running: running recorded" \
	wait_result "$ID_SUPK" running
PID_SUPK=$(field "$ID_SUPK" pid)
[[ $PID_SUPK =~ ^[0-9]+$ ]] && KILL_PIDS+=("$PID_SUPK")
SUP=$(supervisor_of "$ID_SUPK")
GUARD=""
if check "supervisor killed while running: supervisor found" test -n "$SUP"; then
	GUARD=$(parent_of "$SUP")
	kill -KILL "$SUP"
fi
# supervised_by ID PID: the row names PID as its supervisor.
supervised_by() { [ "$(field "$1" supervisor_pid)" = "$2" ]; }
check "supervisor killed while running: the row names the guardian" \
	poll supervised_by "$ID_SUPK" "$GUARD"
eq "supervisor killed while running: the command is the guardian's child" \
	"$(parent_of "$PID_SUPK")" "$GUARD"
eq "supervisor killed while running: still running, not lost" \
	"$(field "$ID_SUPK" result)" running
echo go >"$TMP/go-sup"
finish_ok "supervisor killed while running" "$ID_SUPK" 4
check "supervisor killed while running: the guardian ends" poll gone "$GUARD"

# Killed once it has reaped the command, while its recorder waits for the
# log's lock (a bound longer than the test: BGRUN_LOCK_TIMEOUT).
exec {LOCK}>>"$BGRUN_DB-lock"
flock -x "$LOCK"
BGRUN_LOCK_TIMEOUT=120 "$BGRUN" --print-id --print-pid -s -- \
	"read x <'$TMP/go-sup2'; exit 3" >"$TMP/.early" 2>&1 {LOCK}>&-
ID_SUPK=$(sed -n 1p "$TMP/.early")
PID_SUPK=$(sed -n 2p "$TMP/.early")
SUP=$(parent_of "$PID_SUPK")
if check "supervisor killed after the end: supervisor found" test -n "$SUP"; then
	KILL_PIDS+=("$PID_SUPK")
	echo go >"$TMP/go-sup2"
	# Reaped by the supervisor: the end is in its hands (and the guardian's).
	check "supervisor killed after the end: the command reaped" \
		poll test ! -e "/proc/$PID_SUPK"
	kill -KILL "$SUP"
	check "supervisor killed after the end: supervisor gone" poll gone "$SUP"
fi
exec {LOCK}>&-
finish_ok "supervisor killed after the end" "$ID_SUPK" 3

# bgrun --wait: its child is the guardian, which exits with the status.
"$BGRUN" --print-pid -w -s -- "read x <'$TMP/go-sup3'; exit 9" >"$TMP/.waited" 2>&1 &
BG=$!
PID_W=""
# wait_pid_line FILE: the pid bgrun printed, once it has (20 s).
wait_pid_line() {
	local end=$((SECONDS + 20))
	until [[ $(sed -n 1p "$1" 2>/dev/null) =~ ^[0-9]+$ ]]; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.02
	done
	sed -n 1p "$1"
}
PID_W=$(wait_pid_line "$TMP/.waited")
if check "bgrun -w, supervisor killed: launched" test -n "$PID_W"; then
	KILL_PIDS+=("$PID_W")
	kill -KILL "$(parent_of "$PID_W")"
fi
echo go >"$TMP/go-sup3"
wait "$BG"
eq "bgrun -w, supervisor killed: exit status of the command" "$?" 9

# What the command leaves behind, orphaned, is adopted by the guardian
# (a subreaper), which reaps it when it ends: no zombie.
launch -s -- "(exec '$RT' helper exit 0 & echo \$! >'$TMP/orphan'); read x <'$TMP/go-sup'"
ID_ORPH=$ID
check "orphan: running recorded" wait_result "$ID_ORPH" running
ORPHAN=$(cat "$TMP/orphan" 2>/dev/null)
if check "orphan: started" test -n "$ORPHAN"; then
	check "orphan: reaped (no zombie left)" poll test ! -e "/proc/$ORPHAN"
fi
echo go >"$TMP/go-sup"
check "orphan: the command's finish recorded" wait_result "$ID_ORPH" success
export BGRUN_DB=$SAVED_DB

# --- the recorder's options only from the supervisor chain ---
# bgrun-record (and bgrun-full, its fallback) take --_supervise and
# --_child (or --_failed) only with the descriptor 3 their parent made (a
# socket: SO_PEERCRED); run by hand, with nothing, a pipe or a file
# there, they refuse and write no row.
forged() {
	local d=$1 id=$2
	shift 2
	capture "$@"
	expect_error "forged row ($PROG, $d)" 125 \
		"$PROG: internal to bgrun, run by its supervisor (see supervise.c)"
	eq "forged row ($PROG, $d): nothing recorded" \
		"$(sqlite3 "$BGRUN_DB" "SELECT count(*) FROM events WHERE id = '$id'")" 0
}
END_LINE="end 0 0 1 1 1 1 1 1 1 1 1 1 1"
echo "$END_LINE" >"$TMP/end.txt"
for PROG in bgrun-record bgrun-full; do
	FULL=$(dirname "$BGRUN")/$PROG
	forged "no descriptor 3" 0123456789ab "$FULL" --_supervise=0123456789ab \
		--_child=1:2:3 -- "$RT" helper exit 0 3<&-
	forged "a pipe" 0123456789ac "$FULL" --_supervise=0123456789ac \
		--_child=1:2:3 -- "$RT" helper exit 0 3< <(echo "$END_LINE")
	forged "a file" 0123456789ad "$FULL" --_supervise=0123456789ad \
		--_child=1:2:3 -- "$RT" helper exit 0 3<"$TMP/end.txt"
	forged "--_failed" 0123456789ae "$FULL" --_supervise=0123456789ae \
		--_failed=2:6:1:1 -- "$RT" helper exit 0 3<"$TMP/end.txt"
done

# --- another user, as root's tests can be: the recorder records when
# bgrun ran in a directory that user cannot search (ours, root's 0700:
# su leaves one there), and for a user /etc/passwd does not name, whom
# the static bgrun-record (no NSS module in a static program) hands to
# bgrun-full, with the same arguments and descriptors, to ask NSS ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	! getent passwd 54321 >/dev/null; then
	# Its own directory, outside ours.
	NAMELESS=$(mktemp -d) && chmod 0777 "$NAMELESS"
	as_nameless() {
		setpriv --reuid 54321 --regid 54321 --clear-groups \
			env -u BGRUN_OUTPUT_DIR -u XDG_STATE_HOME \
			-u XDG_RUNTIME_DIR -u BGRUN_CONFIG -u BGRUN_SINK \
			BGRUN_DB="$NAMELESS/events.db" \
			BGRUN_SOCKET="$NAMELESS/sock" HOME="$NAMELESS" "$@"
	}
	# Read as that user, once the recorder made the log: a read of ours
	# would make root's empty file in its place, which it may not write.
	nameless_row() {
		[ -s "$NAMELESS/events.db" ] &&
			as_nameless sqlite3 -cmd '.timeout 30000' "$NAMELESS/events.db" \
				"SELECT uid, coalesce(user, 'NULL'), exit_code, result FROM events WHERE id = '$1'" 2>/dev/null
	}
	wait_nameless() {
		local end=$((SECONDS + 20))
		until [ "$(nameless_row "$1")" = "$2" ] || [ $SECONDS -ge $end ]; do
			sleep 0.05
		done
		nameless_row "$1"
	}
	capture as_nameless "$BGRUN" -w --print-id -- "$RT" helper exit 3
	eq "from a directory its user cannot search: bgrun -w exits 3" "$RC" 3
	eq "from a directory its user cannot search: recorded" \
		"$(wait_nameless "$OUT" "54321|NULL|3|failed")" "54321|NULL|3|failed"
	capture eval '(cd "$NAMELESS" && as_nameless "$BGRUN" -w --print-id -- "$RT" helper exit 4)'
	eq "a user /etc/passwd does not name: bgrun -w exits 4" "$RC" 4
	eq "that user: recorded by uid, with the exit code" \
		"$(wait_nameless "$OUT" "54321|NULL|4|failed")" "54321|NULL|4|failed"
	rm -rf "$NAMELESS"
else
	echo "# skipped: another user (needs root, setpriv, a free uid 54321)"
fi

# --- signals sent to the supervisor reach the command ---
launch -- "$RT" helper pause
ID_TERM=$ID
check "TERM forwarded: running recorded" wait_result "$ID_TERM" running
PID_TERM=$(field "$ID_TERM" pid)
[[ $PID_TERM =~ ^[0-9]+$ ]] && KILL_PIDS+=("$PID_TERM")
SUP=$(supervisor_of "$ID_TERM")
if check "TERM forwarded: supervisor found" test -n "$SUP"; then
	kill -TERM "$SUP"
fi
check "TERM forwarded: recorded as signaled" wait_result "$ID_TERM" signaled
eq "TERM forwarded: signal 15" "$(field "$ID_TERM" signal)" 15
eq "TERM forwarded: exit_code null" "$(field "$ID_TERM" exit_code)" null

# --- a signal sent to the supervisor at once, before anything is recorded ---
# bgrun-start blocks it from its first instruction, so it waits, pending,
# and still reaches the command.
"$BGRUN" --print-id --print-pid -- "$RT" helper pause >"$TMP/.early" 2>&1
ID_EARLY=$(sed -n 1p "$TMP/.early")
PID_EARLY=$(sed -n 2p "$TMP/.early")
if check "early TERM: launched" test -r "/proc/$PID_EARLY/stat"; then
	KILL_PIDS+=("$PID_EARLY")
	kill -TERM "$(awk '{print $4}' "/proc/$PID_EARLY/stat")"
fi
check "early TERM: recorded as signaled" wait_result "$ID_EARLY" signaled
eq "early TERM: signal 15" "$(field "$ID_EARLY" signal)" 15

# --- a relative $BGRUN_DB is bgrun's, not the command's directory's ---
mkdir -p "$TMP/reldir"
(cd "$TMP" && BGRUN_DB=rel.db "$BGRUN" -w -C reldir -- "$RT" helper exit 0)
check "relative BGRUN_DB: in bgrun's directory" test -f "$TMP/rel.db"
check "relative BGRUN_DB: not in the command's" test ! -e "$TMP/reldir/rel.db"

# --- argv kept byte for byte ---
ARGS=('sp ace' $'new\nline' $'\xff\xfe' $'\xc3\xa9t\xc3\xa9' 'back\slash' '' 'x,y')
launch -w -- "$RT" helper exit 0 "${ARGS[@]}"
ID_ARGV=$ID
"$LS" show --json "$ID_ARGV" >"$TMP/argv.json"
check "argv: --json round trip (strings, {\"hex\"} for non-UTF-8)" py '
import json, os, sys
row = json.load(open(sys.argv[1]))
want = [os.fsencode(a) for a in sys.argv[2:]]
got = []
for a in row["argv"]:
    if isinstance(a, dict):
        got.append(bytes.fromhex(a["hex"]))
    else:
        got.append(a.encode("utf-8"))
kinds = [isinstance(a, dict) for a in row["argv"]]
ok = got == want and kinds == [b"\xff\xfe" == w for w in want]
if not ok:
    print("#  got", got, kinds)
    print("# want", want)
sys.exit(0 if ok else 1)' "$TMP/argv.json" "$RT" helper exit 0 "${ARGS[@]}"
E=$'\xc3\xa9t\xc3\xa9'
lsink show "$ID_ARGV"
eq "argv: show, one argument a line, escaped" \
	"$(grep '^argv\[' "$TMP/.stdout")" \
	"argv[0]: $RT
argv[1]: helper
argv[2]: exit
argv[3]: 0
argv[4]: sp ace
argv[5]: new\\nline
argv[6]: \\xff\\xfe
argv[7]: $E
argv[8]: back\\\\slash
argv[9]: 
argv[10]: x,y"

# --- more events for the filters ---
launch -w --tag mytag -- "$RT" helper exit 0
ID_TAG=$ID
mkdir "$TMP/wd"
launch -w -C "$TMP/wd" -- "$RT" helper exit 0
ID_CWD=$ID
LONG=$(printf 'x%.0s' {1..300})
launch -w --tag long -- "$RT" helper exit 0 "$LONG"
ID_LONG=$ID
# A tag and a command that CSV must quote.
launch -w --tag $'a,"b"\nc' -- "$RT" helper exit 0 'say "hi", then' $'two\r\nlines'
ID_CSV=$ID
# Enough events (17) for two ids to share a first character.
for i in 1 2 3 4; do
	launch -w --tag extra -- "$RT" helper exit 0
done

"$LS" query --json >"$TMP/all.json"
ALL=$(wc -l <"$TMP/all.json")
check "query: at least 17 events" test "$ALL" -ge 17
check "query: newest first" py '
import json, sys
t = [json.loads(l)["time_ns"] for l in open(sys.argv[1])]
sys.exit(0 if t == sorted(t, reverse=True) else 1)' "$TMP/all.json"
eq "ls is query" "$("$LS" ls --json)" "$(cat "$TMP/all.json")"
eq "query: --db after the verb wins" \
	"$(BGRUN_DB=$TMP/nowhere.db "$LS" query --db "$BGRUN_DB" --json)" \
	"$(cat "$TMP/all.json")"
eq "query: --db before the verb" \
	"$(BGRUN_DB=$TMP/nowhere.db "$LS" --db "$BGRUN_DB" query --json)" \
	"$(cat "$TMP/all.json")"
check "query: --db did not create the other file" test ! -e "$TMP/nowhere.db"

# want_ids DESC PYTHON-CONDITION ARGS...: `query ARGS...` lists exactly
# the events of all.json for which the condition on `r` holds, in order.
want_ids() {
	local d=$1 cond=$2
	shift 2
	eq "$d" "$(ids "$@")" "$(py '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if '"$cond"':
        print(r["id"])' "$TMP/all.json")"
}
want_ids "--failed" 'r["result"] not in ("success", "running")' --failed
check "--failed: not empty" test -n "$(ids --failed)"
for r in success failed signaled timeout spawn_failed lost running; do
	want_ids "--result $r" "r['result'] == '$r'" --result "$r"
done
eq "--result signaled: all three" "$(ids --result signaled | sort)" \
	"$(printf '%s\n' "$ID_SIG" "$ID_TERM" "$ID_EARLY" | sort)"
eq "--tag" "$(ids --tag mytag)" "$ID_TAG"
eq "--cwd" "$(ids --cwd "$TMP/wd")" "$ID_CWD"
eq "--cwd relative" "$(ids --cwd wd)" "$ID_CWD"
eq "--cmd GLOB" "$(ids --cmd '*helper exit 3')" "$ID_FAIL"
want_ids "--cmd GLOB '*helper exit 0*'" \
	'"helper exit 0" in (r["display"] or "")' --cmd '*helper exit 0*'
want_ids "--source bgrun" 'True' --source bgrun
eq "--source hg: none" "$(ids --source hg)" ""
want_ids "--event commandfinish" 'True' --event commandfinish
eq "--event other: none" "$(ids --event uiblocked)" ""
eq "--limit 2" "$(ids --limit 2)" "$(head -n 2 "$TMP/all.json" | py '
import json, sys
for l in sys.stdin:
    print(json.loads(l)["id"])')"
eq "--failed --limit 1 --cmd" "$(ids --failed --limit 1 --cmd '*exit 3')" \
	"$ID_FAIL"

# Times: around the second the successful launch started.
T=$(field "$ID_OK" time_ns)
S=$((T / 1000000000))
has() { grep -qx "$1"; }
check "--since 1h: all" test "$(ids --since 1h | wc -l)" -eq "$ALL"
eq "--until 1h: none" "$(ids --until 1h)" ""
check "--since 1h and --until 0s" test "$(ids --since 1h --until 0s | wc -l)" -eq "$ALL"
check "--since 2000-01-01: all" test "$(ids --since 2000-01-01 | wc -l)" -eq "$ALL"
eq "--until 2000-01-01T00:00Z: none" "$(ids --until 2000-01-01T00:00Z)" ""
eq "--since tomorrow's date: none" \
	"$(ids --since "$(date -d @$((S + 86400)) +%F)")" ""
Z=$(date -u -d @"$S" +%FT%TZ)
check "--since $Z (UTC) includes it" has "$ID_OK" < <(ids --since "$Z")
check "--until $Z excludes it" eval '! has "$ID_OK" < <(ids --until "$Z")'
Z1=$(date -u -d @$((S + 1)) +%FT%TZ)
check "--until $Z1 includes it" has "$ID_OK" < <(ids --until "$Z1")
LOCAL=$(date -d @"$S" '+%F %T')
check "--since '$LOCAL' (local) includes it" has "$ID_OK" < <(ids --since "$LOCAL")
check "--until '$LOCAL' (local) excludes it" \
	eval '! has "$ID_OK" < <(ids --until "$LOCAL")'
OFF=$(date -d @$((S + 1)) +%FT%T%:z)
check "--until $OFF (offset) includes it" has "$ID_OK" < <(ids --until "$OFF")
OFF=$(date -d @"$S" +%FT%T%:z)
check "--until $OFF (offset) excludes it" \
	eval '! has "$ID_OK" < <(ids --until "$OFF")'
MIN=$(date -d @$((S / 60 * 60)) +%FT%H:%M)
check "--since $MIN (minutes) includes it" has "$ID_OK" < <(ids --since "$MIN")
eq "--since/--until: that second only" \
	"$(ids --since "$Z" --until "$Z1" | grep -c -x "$ID_OK")" 1

# --- the table ---
lsink query --table
eq "table: exit 0" "$RC" 0
check "table: aligned, ids and commands in full" py '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
lines = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
head, body = lines[0], lines[1:]
ok = head.split() == ["TIME", "DURATION", "RESULT", "EXIT", "ID", "COMMAND"]
ok = ok and head.index("ID") == 54 and head.index("COMMAND") == 64
ok = ok and len(body) == len(rows)
for r, l in zip(rows, body):
    if l[54:62] != r["id"][-8:] or l[64:] != r["display"] or \
       l[31:43].rstrip() != r["result"]:
        print("# bad line:", repr(l))
        ok = False
sys.exit(0 if ok else 1)' "$TMP/all.json" "$TMP/.stdout"
# row ID: the table line of event ID.
row() { grep "  ${1: -8}  " "$TMP/.stdout"; }
check "table: failure shows exit 3" eval '[[ $(row "$ID_FAIL") =~ \ failed\ +3\  ]]'
check "table: signal shows SIGKILL" eval '[[ $(row "$ID_SIG") =~ \ signaled\ +SIGKILL\  ]]'
check "table: timeout shows SIGTERM" eval '[[ $(row "$ID_TMO") =~ \ timeout\ +SIGTERM\  ]]'
check "table: spawn_failed shows -" eval '[[ $(row "$ID_NOCMD") =~ \ spawn_failed\ +-\  ]]'
check "table: local time" eval '[[ $(row "$ID_OK") == "$(date -d @"$S" "+%F %T")  "* ]]'
check "table: a human duration" \
	eval '[[ $(row "$ID_TMO") =~ ^.{19}\ \ \ *[0-9]+(ms|\.[0-9]s)\  ]]'
check "table: not cut when not a terminal" eval '[[ $(row "$ID_LONG") == *"$LONG" ]]'
lsink query
eq "no format, not a terminal: the table" "$OUT" "$("$LS" query --table)"

# On a terminal 80 columns wide every line fits, the long one cut.
cat >"$TMP/tty-run.py" <<'EOF'
import fcntl, os, pty, struct, sys, termios
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out.replace(b"\r\n", b"\n"))
sys.exit(os.waitstatus_to_exitcode(status))
EOF
"$PY" "$TMP/tty-run.py" "$LS" query >"$TMP/tty.out"
eq "terminal: exit 0" "$?" 0
check "terminal: every line within 80 columns" py '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
sys.exit(0 if lines and max(len(l) for l in lines) <= 80 else 1)' "$TMP/tty.out"
check "terminal: the long command cut with an ellipsis" \
	grep -Eq "^.*  ${ID_LONG: -8}  .*(…|\.\.\.)\$" "$TMP/tty.out"
"$PY" "$TMP/tty-run.py" "$LS" stats >"$TMP/tty-stats.out"
check "terminal: stats within 80 columns" py '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
sys.exit(0 if lines and max(len(l) for l in lines) <= 80 else 1)' "$TMP/tty-stats.out"

# --- CSV ---
"$LS" query --csv >"$TMP/all.csv"
check "csv: RFC 4180, parsed by python's csv module" py '
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
recs = list(csv.reader(open(sys.argv[2], newline="", encoding="utf-8")))
cols = "id,time,event,source,result,exit_code,signal,duration_ms,tag,cwd,command"
ok = recs[0] == cols.split(",") and len(recs) == len(rows) + 1
def s(v):
    return "" if v is None else str(v)
for r, c in zip(rows, recs[1:]):
    d = dict(zip(recs[0], c))
    want = {"id": r["id"], "event": r["event"], "source": r["source"],
            "result": r["result"], "exit_code": s(r["exit_code"]),
            "signal": s(r["signal"]), "tag": s(r["tag"]), "cwd": s(r["cwd"]),
            "command": s(r["display"])}
    if any(d[k] != v for k, v in want.items()) or len(c) != 11:
        print("# bad record:", c)
        ok = False
    if r["duration_ns"] is not None and \
       abs(float(d["duration_ms"]) * 1e6 - r["duration_ns"]) > 1:
        print("# bad duration:", c)
        ok = False
sys.exit(0 if ok else 1)' "$TMP/all.json" "$TMP/all.csv"
check "csv: records end with CRLF" py '
import sys
data = open(sys.argv[1], "rb").read()
sys.exit(0 if data.split(b"\n")[0].endswith(b"\r") and data.endswith(b"\r\n")
         else 1)' "$TMP/all.csv"
check "csv: the tag with a comma, quotes and a newline is quoted" \
	grep -qF ',"a,""b""' "$TMP/all.csv"
# A control character (ESC starts a terminal's escape sequences) is written
# as \xNN, quoted, as the table writes it; --json keeps the exact text.
ESC_TAG=$'esc\e[31mred'
"$BGRUN" --tag "$ESC_TAG" --wait -- true
"$LS" query --tag "$ESC_TAG" --csv >"$TMP/esc.csv"
check "csv: no raw control character" py '
import sys
sys.exit(1 if b"\x1b" in open(sys.argv[1], "rb").read() else 0)' "$TMP/esc.csv"
check "csv: a control character as \\xNN, the field quoted" \
	grep -qF ',"esc\x1b[31mred",' "$TMP/esc.csv"
eq "csv: --json keeps the exact tag" \
	"$("$LS" query --tag "$ESC_TAG" --json | py 'import json, sys; print(repr(json.loads(sys.stdin.readline())["tag"]))')" \
	"'esc\\x1b[31mred'"
check "csv: ISO 8601 local times" py '
import csv, sys
recs = list(csv.DictReader(open(sys.argv[1], newline="", encoding="utf-8")))
sys.exit(0 if all(r["time"].endswith("+05:30") and "T" in r["time"]
                  for r in recs) else 1)' "$TMP/all.csv"

# --- show ---
lsink show "${ID_FAIL: -8}"
eq "show by the id's end (the table's ID): exit 0" "$RC" 0
check "show: id" grep -qx "id: $ID_FAIL" "$TMP/.stdout"
check "show: result" grep -qx 'result: failed' "$TMP/.stdout"
check "show: exit_code" grep -qx 'exit_code: 3' "$TMP/.stdout"
check "show: NULL as -" grep -qx 'signal: -' "$TMP/.stdout"
check "show: no tag as -" grep -qx 'tag: -' "$TMP/.stdout"
check "show: cwd" grep -qx "cwd: $TMP" "$TMP/.stdout"
check "show: every line is field: value" eval '! grep -qv "^[a-z_]*\(\[[0-9]*\]\)\?: " "$TMP/.stdout"'
lsink show "$ID_SIG"
check "show: signal named" grep -qx 'signal: 9 (SIGKILL)' "$TMP/.stdout"
eq "show --json: the row's JSON" "$("$LS" show --json "$ID_TAG")" \
	"$(grep -F "\"id\":\"$ID_TAG\"" "$TMP/all.json")"
lsink show zzzz
expect_error "show: unknown id" 1 "logsink: no event 'zzzz'"
AMB=$(cut -c 8 "$TMP/all.json" | sort | uniq -d | head -n 1)
lsink show "$AMB"
eq "show: ambiguous prefix: exit 1" "$RC" 1
AMB_RE="^logsink: event id '$AMB' is ambiguous: [0-9]+ events' ids contain it:\$"
check "show: ambiguous prefix: message" eval '[[ $(head -n 1 <<<"$ERR") =~ $AMB_RE ]]'
lsink show 'no/such'
expect_error "show: not an id" 1 "logsink: 'no/such' is not an event id"
lsink show
expect_usage "show: no id" "logsink: missing event id"

# --- stats ---
# One command (a script run with different variables) with known ends.
for spec in 0:0 50:0 100:3 150:0 200:1; do
	"$BGRUN" -w --tag st -E MS=${spec%:*} -E RC=${spec#*:} -s \
		"'$RT' helper sleep-ms \$MS; exit \$RC"
done
check "stats: runs, failures, percentiles of the runs" py '
import json, subprocess, sys
ls = sys.argv[1]
st = [json.loads(l) for l in subprocess.run([ls, "stats", "--tag", "st", "--json"],
      capture_output=True, check=True).stdout.splitlines()]
rows = [json.loads(l) for l in subprocess.run([ls, "query", "--tag", "st", "--json"],
        capture_output=True, check=True).stdout.splitlines()]
d = sorted(r["duration_ns"] for r in rows)
ok = len(st) == 1 and st[0]["runs"] == 5 and st[0]["failures"] == 2 and \
     st[0]["p50_ns"] == d[2] and st[0]["p95_ns"] == d[4] and \
     st[0]["max_ns"] == d[4] and d[2] >= 100e6 and d[4] >= 200e6 and \
     st[0]["command"] == rows[0]["display"]
if not ok:
    print("#", st, d)
sys.exit(0 if ok else 1)' "$LS"
lsink stats --tag st
eq "stats table: exit 0" "$RC" 0
eq "stats table: header and one row" "$OUT_LINES" 2
check "stats table: 5 runs, 2 failed" eval '[[ $(sed -n 2p "$TMP/.stdout") =~ ^\ +5\ +2\ + ]]'
eq "stats --failed: runs" "$("$LS" stats --tag st --failed --csv | py '
import csv, sys
print([r["runs"] for r in csv.DictReader(sys.stdin)])')" "['2']"
eq "stats --since in the future: nothing" "$("$LS" stats --since 2200-01-01 --json)" ""
lsink stats --csv
eq "stats --csv: exit 0" "$RC" 0
check "stats --csv: one record per command" py '
import csv, json, sys
recs = list(csv.DictReader(open(sys.argv[1], newline="", encoding="utf-8")))
cmds = {json.loads(l)["display"] for l in open(sys.argv[2])}
sys.exit(0 if len(recs) >= len(cmds) and
         sum(int(r["runs"]) for r in recs) >= len(cmds) else 1)' \
	"$TMP/.stdout" "$TMP/all.json"

# --- errors: the log itself ---
lsink --db "$TMP/none/events.db" query
expect_error "missing db" 1 \
	"logsink: cannot open '$TMP/none/events.db': No such file or directory"
check "missing db: nothing created" test ! -e "$TMP/none"
# No log yet where the log is kept ($BGRUN_DB, XDG...): an empty answer.
BGRUN_DB=$TMP/none/events.db lsink query
eq "no log yet: query exit 0" "$RC" 0
eq "no log yet: query, the header alone" "$OUT" "$("$LS" query | head -n 1)"
eq "no log yet: query, nothing on stderr" "$ERR" ""
BGRUN_DB=$TMP/none/events.db lsink query --json
eq "no log yet: query --json, nothing" "$RC:$OUT:$ERR" "0::"
BGRUN_DB=$TMP/none/events.db lsink stats --json
eq "no log yet: stats --json, nothing" "$RC:$OUT:$ERR" "0::"
BGRUN_DB=$TMP/none/events.db lsink show abc
expect_error "no log yet: show" 1 "logsink: no event 'abc'"
BGRUN_DB=$TMP/none/events.db lsink prune --older-than 1d
eq "no log yet: prune" "$RC:$OUT:$ERR" "0:pruned 0 events; the log shrank by 0 bytes (0 B):"
BGRUN_DB=$TMP/none/events.db lsink mark-lost
eq "no log yet: mark-lost" "$RC:$OUT:$ERR" "0:0:"
check "no log yet: still nothing created" test ! -e "$TMP/none"
env -u BGRUN_DB XDG_STATE_HOME="$TMP/xdg" "$LS" query --json >"$TMP/.stdout" 2>"$TMP/.stderr"
eq "default path: \$XDG_STATE_HOME/bgrun/events.db (none yet: empty)" \
	"$?:$(cat "$TMP/.stdout" "$TMP/.stderr")" "0:"
env -u BGRUN_DB -u XDG_STATE_HOME HOME="$TMP/home" "$LS" stats --csv >"$TMP/.stdout" 2>"$TMP/.stderr"
eq "default path: ~/.local/state/bgrun/events.db (none yet: empty)" \
	"$?:$(cat "$TMP/.stdout" "$TMP/.stderr")" "0:command,runs,failures,p50_ms,p95_ms,max_ms"$'\r'
check "default paths: nothing created" eval 'test ! -e "$TMP/xdg" && test ! -e "$TMP/home"'

printf 'not a database at all, just some text\n' >"$TMP/text.db"
lsink --db "$TMP/text.db" query
expect_error "not SQLite" 1 "logsink: '$TMP/text.db': not a bgrun event database"
sqlite3 "$TMP/foreign.db" 'CREATE TABLE t(x)'
SUM=$(cksum <"$TMP/foreign.db")
lsink --db "$TMP/foreign.db" query
expect_error "another program's SQLite db" 1 \
	"logsink: '$TMP/foreign.db': not a bgrun event database"
lsink --db "$TMP/foreign.db" prune --older-than 1s
expect_error "prune on another program's db" 1 \
	"logsink: '$TMP/foreign.db': not a bgrun event database"
eq "another program's db: untouched" "$(cksum <"$TMP/foreign.db")" "$SUM"

# --- usage errors ---
lsink query --since soon
expect_usage "bad --since" \
	"logsink: invalid time 'soon' for --since: expected a date (2026-12-01 10:00), a duration ago (2h, 1h30m, '2 hours ago'), @EPOCH, now, today or yesterday"
lsink query --until 2026-02-30
expect_usage "bad --until date" \
	"logsink: invalid time '2026-02-30' for --until: expected a date (2026-12-01 10:00), a duration ago (2h, 1h30m, '2 hours ago'), @EPOCH, now, today or yesterday"
lsink query --result bogus
expect_usage "bad --result" \
	"logsink: invalid result 'bogus': expected running, success, failed, signaled, timeout, spawn_failed or lost"
lsink query --limit -1
expect_usage "bad --limit" "logsink: invalid limit '-1': expected a positive number"
lsink query --json --csv
expect_usage "two formats" "logsink: --json and --csv cannot be used together"
lsink query --bogus
expect_usage "unknown option" "logsink query: unrecognized option '--bogus'"
lsink frobnicate
expect_usage "unknown command" "logsink: unknown command 'frobnicate'"
lsink
expect_usage "no command" "logsink: missing command (query, show, stats, status, prune, mark-lost)"
lsink prune
expect_usage "prune without --older-than" "logsink: prune needs --older-than=AGE or --keep=N"
lsink prune --older-than soon
expect_usage "prune, bad duration" \
	"logsink: invalid duration 'soon' for --older-than: expected a number and a unit (90s, 10m, 1h30m, 2d)"
lsink --help
eq "--help: exit 0" "$RC" 0
check "--help: usage" grep -q '^Usage: logsink ' "$TMP/.stdout"
check "--help: the verbs" grep -q '^  mark-lost ' "$TMP/.stdout"
lsink query --help
check "query --help" grep -q '^Usage: logsink query ' "$TMP/.stdout"
check "query --help: the filters" grep -q -- '--since=TIME' "$TMP/.stdout"
lsink show -h
check "show -h" grep -q '^Usage: logsink show ' "$TMP/.stdout"
lsink --version
check "--version" eval '[[ $OUT =~ ^logsink\ [0-9]+\.[0-9]+\.[0-9]+$ ]]'

# --- prune ---
lsink prune --older-than 1d
eq "prune: exit 0" "$RC" 0
eq "prune --older-than 1d: nothing that young" "${OUT%%;*}" "pruned 0 events"
# Two old finished events and an old running one, as an older bgrun
# would have left them (2001).
sqlite3 "$BGRUN_DB" "INSERT INTO events(id, event, source, recorded_ns, start_ns, result)
	VALUES ('old-1', 'commandfinish', 'bgrun', 1000000000000000000, 1000000000000000000, 'success'),
	       ('old-2', 'commandfinish', 'bgrun', 1000000000000000000, 1000000000000000000, 'failed'),
	       ('old-3', 'commandfinish', 'bgrun', 1000000000000000000, 1000000000000000000, 'running')"
BEFORE=$("$LS" query --json | wc -l)
lsink prune --older-than 1d
eq "prune old: the two finished" "${OUT%%;*}" "pruned 2 events"
eq "prune old: the running one kept" "$(ids --until 2002-01-01)" old-3
eq "prune old: the rest kept" "$("$LS" query --json | wc -l)" $((BEFORE - 2))
launch -- "$RT" helper pause
ID_RUN=$ID
check "prune: a running event" wait_result "$ID_RUN" running
PID_RUN=$(field "$ID_RUN" pid)
[[ $PID_RUN =~ ^[0-9]+$ ]] && KILL_PIDS+=("$PID_RUN")
BEFORE=$("$LS" query --json | wc -l)
lsink prune --older-than 0s
eq "prune everything: all but the two running" "${OUT%%;*}" "pruned $((BEFORE - 2)) events"
eq "prune everything: the running ones are left" "$(ids | sort)" \
	"$(printf '%s\n' "$ID_RUN" old-3 | sort)"
kill -KILL "$PID_RUN" 2>/dev/null
check "prune: the killed one is recorded" wait_result "$ID_RUN" signaled

# --- 32 bgrun processes at once, 50 launches each ---
CDB=$TMP/concurrent.db
rm -f "$TMP/conc-errors"
T0=$SECONDS
for i in $(seq 32); do
	(
		for j in $(seq 50); do
			BGRUN_DB=$CDB "$BGRUN" -- "$RT" helper exit 0 \
				2>>"$TMP/conc-errors" ||
				echo "launch $i.$j: exit $?" >>"$TMP/conc-errors"
		done
	) &
done
wait
echo "# 1600 launches took $((SECONDS - T0)) s"
check "concurrent: every bgrun exited 0, silently" test ! -s "$TMP/conc-errors"
[ -s "$TMP/conc-errors" ] && sed 's/^/# /' "$TMP/conc-errors" | head -n 20
count() { "$LS" --db "$CDB" query --json "$@" | wc -l; }
end=$((SECONDS + 120))
until [ "$(count --result success)" -eq 1600 ] || [ "$SECONDS" -ge "$end" ]; do
	sleep 0.05
done
echo "# all recorded $((SECONDS - T0)) s after the first launch"
# What waits in the spool, and why (logsink status), if not all are stored.
[ "$(count)" -eq 1600 ] || "$LS" --db "$CDB" status 2>&1 | sed 's/^/# /'
eq "concurrent: 1600 successes recorded" "$(count --result success)" 1600
eq "concurrent: 1600 events in all" "$(count)" 1600
eq "concurrent: none left running" "$(count --result running)" 0
eq "concurrent: stats agree" "$("$LS" --db "$CDB" stats --csv | py '
import csv, sys
print(sum(int(r["runs"]) for r in csv.DictReader(sys.stdin)))')" 1600

finish
