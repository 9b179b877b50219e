#!/bin/bash
# SPDX-License-Identifier: MIT
# test-jobs.sh: bgrun's job verbs (ps, kill, wait, restart, show) on real jobs, by the ids the ps table shows; exit notifications.
#
# Usage: test-jobs.sh BGRUN RUN_TESTS LOGSINK (absolute paths; meson passes them).
# Jobs are run-tests helpers: `pause` (ends only by a signal) and a shell
# that reads its exit code from a FIFO this script holds open, so that the
# script says when a job ends. Nothing sleeps to synchronise: a job's row
# is polled for with a deadline (wait_row), and `bgrun wait` itself is
# what waits for an end.

set -u

BGRUN=${1:?usage: test-jobs.sh BGRUN RUN_TESTS LOGSINK}
RT=${2:?usage: test-jobs.sh BGRUN RUN_TESTS LOGSINK}
LOGSINK=${3:?usage: test-jobs.sh BGRUN RUN_TESTS LOGSINK}
USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
need_executable "$BGRUN" "$RT" "$LOGSINK"
export BGRUN_DB=$TMP/events.db
export BGRUN_CONFIG=
exec </dev/null

run() { capture "$BGRUN" "$@"; }

# wait_row ID: polls `bgrun ps` until ID (a short id) is listed, up to 10 s.
wait_row() {
	local end=$((SECONDS + 10))
	until "$BGRUN" ps 2>/dev/null | awk 'NR > 1 {print $1}' | grep -qx "$1"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.01
	done
}

# field ID NAME: the value of NAME in `bgrun show ID`.
field() { "$BGRUN" show "$1" | sed -n "s/^$2: //p"; }

echo "# bgrun: $BGRUN"

# --- verbs are reserved words; --help lists them ---
run --help
eq "--help: exit 0" "$RC" 0
for v in ps kill wait restart show clone; do
	check "--help lists $v" grep -q "^  $v " <<<"$OUT"
done
run -w kill 1234
expect_usage "a verb as COMMAND" \
	"bgrun: 'kill' is a bgrun verb; to launch a program of that name: bgrun [OPTION]... -- kill ..."
# A program named like a verb runs after "--".
mkdir -p "$TMP/bin"
ln -s "$RT" "$TMP/bin/ps"
PATH=$TMP/bin:$PATH run -w -- ps helper exit 5
eq "bgrun -w -- ps: the program ps ran (its status)" "$RC" 5

# --- no log yet ---
run ps
eq "ps, no log: exit 0" "$RC" 0
eq "ps, no log: the header alone" "$OUT" \
	"ID            PID     AGE  TAG         COMMAND"
run kill abc
expect_error "kill, no log" 1 "bgrun: no job 'abc'"

# --- ps, kill, wait, show on a paused job, by the id the table shows ---
run --print-id --tag pausing -- "$RT" helper pause
eq "launch pause: exit 0" "$RC" 0
ID1=$OUT
S1=${ID1: -8}
check "ps: the job is listed by its short id" wait_row "$S1"
LINE=$("$BGRUN" ps | awk -v s="$S1" '$1 == s')
read -r _ PID1 _ TAG1 _ <<<"$LINE"
KILL_PIDS+=("$PID1")
eq "ps: its tag" "$TAG1" pausing
eq "ps: its pid is the command's" "$PID1" "$(field "$S1" pid)"
check "ps: its command" grep -q "$RT helper pause\$" <<<"$LINE"
run ps --json
eq "ps --json: exit 0" "$RC" 0
check "ps --json: one object with the job's id" \
	grep -q "\"id\":\"$ID1\"" <<<"$OUT"
check "ps --json: it says running" grep -q '"result":"running"' <<<"$OUT"
# The short id as shown, a part of it and the whole id all name it.
USAGE_PROG="bgrun kill"
run kill -s bogus "$S1"
expect_usage "kill -s bogus" "bgrun: kill: invalid signal 'bogus'"
USAGE_PROG=bgrun
"$BGRUN" wait "$S1" >"$TMP/wait1.out" 2>&1 &
WAITER=$!
run kill "${S1:2:5}"
eq "kill (a part of the short id): exit 0" "$RC" 0
eq "kill: nothing said" "$ERR" ""
wait "$WAITER"
eq "wait: the job's status (SIGTERM: 143)" "$?" 143
eq "wait: nothing said" "$(cat "$TMP/wait1.out")" ""
eq "show: recorded signaled" "$(field "$ID1" result)" signaled
eq "show: by SIGTERM" "$(field "$ID1" signal)" "15 (SIGTERM)"
check "ps: no longer listed" eval '! "$BGRUN" ps | grep -q "^$S1 "'
run kill "$S1"
expect_error "kill an ended job" 1 "bgrun: kill: job $S1 is not running (signaled)"
run wait "$ID1"
eq "wait on an ended job: its status at once" "$RC" 143

# Another signal goes through the supervisor too (not one it forwards
# of itself): the group gets SIGKILL, the supervisor survives to record it.
run --print-id -- "$RT" helper pause
ID2=$OUT
run kill -s KILL "$ID2"
eq "kill -s KILL (the whole id, just launched): exit 0" "$RC" 0
run wait "${ID2: -8}"
eq "wait after SIGKILL: 137" "$RC" 137
eq "show: SIGKILL recorded" "$(field "$ID2" signal)" "9 (SIGKILL)"

# --- wait on a job that exits with a code, told by the test through a FIFO ---
mkfifo "$TMP/fifo"
exec 3<>"$TMP/fifo"
run --print-id -i "$TMP/fifo" -s -- 'read code; exit "$code"'
eq "fifo job: launched" "$RC" 0
ID3=$OUT
run wait --timeout 100ms "$ID3"
eq "wait --timeout on a running job: 124" "$RC" 124
"$BGRUN" wait "$ID3" >"$TMP/wait3.out" 2>&1 &
WAITER=$!
echo 3 >&3
wait "$WAITER"
eq "wait: the exit code of the job" "$?" 3
exec 3>&-
eq "show: recorded failed" "$(field "$ID3" result)" failed

# --- ids: ambiguous, unknown, invalid ---
run wait -
eq "wait, ambiguous id: exit 125" "$RC" 125
check "wait, ambiguous id: said" grep -q "^bgrun: job id '-' is ambiguous; the jobs whose ids contain it:\$" <<<"$ERR"
check "wait, ambiguous id: the candidates listed" grep -q "^bgrun:   ${ID1: -8}  $ID1  " <<<"$ERR"
run wait zzzz
expect_error "wait, unknown id" 125 "bgrun: no job 'zzzz'"
run kill 'a/b'
expect_error "kill, not an id" 1 "bgrun: 'a/b' is not a job id"
USAGE_PROG="bgrun kill"
run kill
expect_usage "kill without an id" "bgrun: kill: missing job id"
USAGE_PROG=bgrun

# --- restart: a new job, linked, the same argv, cwd, tag, output ---
mkdir "$TMP/work"
run --print-id -C "$TMP/work" --tag again -o "$TMP/out1" -w -- "$RT" helper stdout hello
eq "restart: the first run" "$RC" 0
ID4=$OUT
run restart --print-id "${ID4: -8}"
eq "restart: exit 0" "$RC" 0
ID5=$OUT
check "restart: a new id" test -n "$ID5" -a "$ID5" != "$ID4"
run wait "$ID5"
eq "restart: the new job ran" "$RC" 0
# (stderr, not redirected, is kept: the options say so first.)
# (The kept environment's file is named in the options too.)
links() {
	field "$1" options |
		sed 's/"output":"kept","output_max":"[0-9]*",//; s/,"env_file":"[^"]*"//'
}
# option ID NAME: a string member of the job's options.
option() { field "$1" options | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
eq "restart: linked to the old one" "$(links "$ID5")" \
	"{\"restart_of\":\"$ID4\"}"
for f in cwd tag stdout_path command 'argv\[[0-9]*\]'; do
	eq "restart: the same $f" "$("$BGRUN" show "$ID5" | grep "^$f: ")" \
		"$("$BGRUN" show "$ID4" | grep "^$f: ")"
done
eq "restart: the output file written again" "$(cat "$TMP/out1")" hello
# -a is repeated: the restart appends.
run --print-id -a -o "$TMP/out3" -w -- "$RT" helper stdout one
ID8=$OUT
run restart --print-id "$ID8"
ID9=$OUT
run wait "$ID9"
eq "restart -a: the new job ran" "$RC" 0
eq "restart -a: appended" "$(cat "$TMP/out3")" $'one\none'
eq "restart -a: recorded" "$(links "$ID9")" \
	"{\"restart_of\":\"$ID8\",\"append\":\"1\"}"

# --- restart repeats the environment, kept in ID.env, never in the log ---
T_GONE=1 T_SECRET=s3cret run --print-id -w -E "T_NL=a"$'\n'"b" -E 'T_SP=x y' \
	-u T_GONE -o "$TMP/env.out" -- env -0
eq "env: the first run" "$RC" 0
ID12=$OUT
cp "$TMP/env.out" "$TMP/env.0"
ENVF=$BGRUN_OUTPUT_DIR/$ID12.env
check "env: kept in ID.env" test -f "$ENVF"
eq "env: ID.env mode 0600" "$(stat -c %a "$ENVF")" 600
check "env: ID.env is the command's environment, NUL-separated" \
	cmp -s "$ENVF" "$TMP/env.0"
eq "env: the options name the file" "$(option "$ID12" env_file)" "$ENVF"
check "env: the log holds no value of it" \
	eval '! "$LOGSINK" query --json | grep -q "s3cret\|x y"'
T_GONE=back T_SECRET=changed T_NEW=1 run restart --print-id "$ID12"
eq "env: restart, exit 0" "$RC" 0
ID13=$OUT
run wait "$ID13"
eq "env: the restart ran" "$RC" 0
check "env: the restart's environment is the job's, byte for byte" \
	cmp -s "$TMP/env.out" "$TMP/env.0"
check "env: the restart keeps its own" test -f "$BGRUN_OUTPUT_DIR/$ID13.env"
rm "$ENVF"
run restart "$ID12"
expect_error "env: restart, the file gone" 1 \
	"bgrun: restart: cannot read the environment of job $ID12 ($ENVF): No such file or directory; --current-env runs it with this one"
# --no-keep-env: none kept; restart refuses unless --current-env.
run --print-id -w --no-keep-env -o "$TMP/env.out" -- env -0
ID14=$OUT
check "--no-keep-env: no ID.env" test ! -e "$BGRUN_OUTPUT_DIR/$ID14.env"
eq "--no-keep-env: recorded" "$(option "$ID14" keep_env)" 0
run restart "$ID14"
expect_error "--no-keep-env: restart refused" 1 \
	"bgrun: restart: the environment of job $ID14 was not kept (--no-keep-env); --current-env runs it with this one"
T_NEW=current run restart --current-env --print-id "$ID14"
eq "--current-env: exit 0" "$RC" 0
ID15=$OUT
run wait "$ID15"
check "--current-env: the environment of the call" \
	grep -qz '^T_NEW=current$' "$TMP/env.out"
check "--current-env: --no-keep-env repeated" \
	test ! -e "$BGRUN_OUTPUT_DIR/$ID15.env"
printf '[output]\nkeep-env = false\n' >"$TMP/config.keep"
BGRUN_CONFIG=$TMP/config.keep run --print-id -w -- true
check "[output] keep-env = false: no ID.env" test ! -e "$BGRUN_OUTPUT_DIR/$OUT.env"
BGRUN_KEEP_ENV=maybe run -w -- true
expect_usage "BGRUN_KEEP_ENV=maybe" \
	"bgrun: invalid BGRUN_KEEP_ENV 'maybe' ([output] keep-env): expected yes or no"

# --- restart repeats -i, --timeout, --kill-after and the output settings ---
printf 'first\n' >"$TMP/in1"
run --print-id -i "$TMP/in1" -- "$RT" helper cat
ID=$OUT
run wait "$ID"
eq "-i: the first run read it" "$RC:$("$BGRUN" logs "$ID")" 0:first
printf 'second\n' >"$TMP/in1"
run restart --print-id "$ID"
NEW=$OUT
run wait "$NEW"
eq "restart: -i repeated (the file read again)" "$RC:$("$BGRUN" logs "$NEW")" 0:second
run --print-id --timeout 200ms -- "$RT" helper pause
ID=$OUT
run wait "$ID"
eq "--timeout: the first run, 124" "$RC" 124
run restart --print-id "$ID"
run wait "$OUT"
eq "restart: --timeout repeated (124)" "$RC" 124
# A job that ignores SIGTERM: --kill-after's SIGKILL ends it. (Its
# --timeout gives the shell time to ignore SIGTERM before it comes.)
mkfifo "$TMP/up"
exec 6<>"$TMP/up"
run --print-id --timeout 1s --kill-after 100ms -s -- \
	"trap '' TERM; echo up >$TMP/up; exec \"$RT\" helper pause"
ID=$OUT
read -r -t 10 -u 6 LINE
run wait "$ID"
eq "--kill-after: the first run, SIGKILL" "$(field "$ID" signal)" "9 (SIGKILL)"
run restart --print-id "$ID"
NEW=$OUT
read -r -t 10 -u 6 LINE
run wait "$NEW"
eq "restart: --kill-after repeated (SIGKILL)" "$(field "$NEW" signal)" "9 (SIGKILL)"
run --print-id --split-output -- "$RT" helper outerr O E
ID=$OUT
run wait "$ID"
run restart --print-id "$ID"
NEW=$OUT
run wait "$NEW"
run logs "$NEW"
eq "restart: --split-output repeated" "$OUT|$ERR" "O|E"
eq "restart: --split-output, two files" \
	"$(field "$NEW" stdout_path)|$(field "$NEW" stderr_path)" \
	"$BGRUN_OUTPUT_DIR/$NEW.out|$BGRUN_OUTPUT_DIR/$NEW.err"
run --print-id -w --no-output -- "$RT" helper stdout x
ID=$OUT
run restart --print-id "$ID"
NEW=$OUT
run wait "$NEW"
eq "restart: --no-output repeated (nothing kept)" \
	"$(field "$NEW" stdout_path) $(ls "$BGRUN_OUTPUT_DIR" | grep -c "^$NEW\.\(log\|out\|err\)")" "- 0"
run --print-id --max-output=4K -s -- 'head -c 65536 /dev/zero'
ID=$OUT
run wait "$ID"
run restart --print-id "$ID"
NEW=$OUT
run wait "$NEW"
eq "restart: --max-output repeated" "$(option "$NEW" output_max)" 4096
check "restart: the cap applied ($(option "$NEW" output_dropped) bytes dropped)" \
	test "$(option "$NEW" output_dropped)" -gt 0

# --- restart of a running job: stopped first (SIGTERM, then SIGKILL) ---
run --print-id -- "$RT" helper pause
ID6=$OUT
run restart --print-id "$ID6"
eq "restart, running: exit 0" "$RC" 0
ID16=$OUT
eq "restart, running: the old job ended by SIGTERM first" \
	"$(field "$ID6" result) $(field "$ID6" signal)" "signaled 15 (SIGTERM)"
check "restart, running: the new one runs" wait_row "${ID16: -8}"
eq "restart, running: linked" "$(links "$ID16")" "{\"restart_of\":\"$ID6\"}"
"$BGRUN" kill "$ID16"
run wait "$ID16"
eq "restart, running: the new one killed" "$RC" 143
run --print-id -s -- "trap '' TERM; echo up >$TMP/up; exec \"$RT\" helper pause"
ID17=$OUT
read -r -t 10 -u 6 LINE
eq "restart, running: the job ignores SIGTERM" "$LINE" up
run restart --kill-after 300ms --print-id "$ID17"
eq "restart, SIGTERM ignored: exit 0" "$RC" 0
ID18=$OUT
eq "restart, SIGTERM ignored: said" "$ERR" \
	"bgrun: restart: job $ID17 has not ended 0.3s after SIGTERM: sending SIGKILL"
eq "restart, SIGTERM ignored: the old job took the SIGKILL" \
	"$(field "$ID17" result) $(field "$ID17" signal)" "signaled 9 (SIGKILL)"
read -r -t 10 -u 6 LINE
eq "restart, SIGTERM ignored: the new one runs" "$LINE" up
"$BGRUN" kill -s KILL "$ID18"
run wait "$ID18"
eq "restart, SIGTERM ignored: the new one killed" "$RC" 137
exec 6>&-
USAGE_PROG="bgrun restart"
run restart --kill-after 0 x
expect_usage "restart --kill-after 0" \
	"bgrun: restart: invalid duration '0' for --kill-after: $(
		"$BGRUN" restart --kill-after zz x 2>&1 | sed -n "1s/.*for --kill-after: //p")"
USAGE_PROG=bgrun

# --- exit notifications ---
# A hook tells the test it ran by a line on a FIFO the test holds open.
mkfifo "$TMP/hooks"
exec 4<>"$TMP/hooks"
# next_line: the next line a hook wrote, up to 10 s.
next_line() { LINE=""; read -r -t 10 -u 4 LINE; }
run --print-id -w --tag notified -o "$TMP/out2" \
	--on-exit "env | grep '^BGRUN_' | sort >$TMP/hooks.env; echo \"explicit \$BGRUN_TAG\" >$TMP/hooks" \
	-- "$RT" helper exit 6
eq "--on-exit: the job's status" "$RC" 6
ID7=$OUT
next_line
eq "--on-exit: the hook ran" "$LINE" "explicit notified"
eq "--on-exit: its environment" \
	"$(grep -v '^BGRUN_\(DB\|CONFIG\|DURATION_MS\|OUTPUT_DIR\)=' "$TMP/hooks.env")" \
"BGRUN_COMMAND=$RT helper exit 6
BGRUN_EXIT_CODE=6
BGRUN_ID=$ID7
BGRUN_OUTPUT=$TMP/out2
BGRUN_RESULT=failed
BGRUN_SIGNAL=
BGRUN_TAG=notified"
check "--on-exit: BGRUN_DURATION_MS is a number" \
	grep -Eq '^BGRUN_DURATION_MS=[0-9]+$' "$TMP/hooks.env"
# The hook is a job of its own, recorded as such, linked to the job; its
# row comes once its recorder runs: polled for, with a deadline.
hook_id() {
	local end=$((SECONDS + 10))
	HOOK=""
	while [ -z "$HOOK" ]; do
		HOOK=$("$LOGSINK" query --source on-exit --json 2>/dev/null |
			sed -n 's/^{"id":"\([^"]*\)".*/\1/p' | head -n 1)
		[ -n "$HOOK" ] && return 0
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.01
	done
}
check "--on-exit: the hook recorded" hook_id
run wait "$HOOK"
eq "--on-exit: the hook's end recorded" "$RC" 0
eq "--on-exit: source on-exit" "$(field "$HOOK" source)" on-exit
eq "--on-exit: linked to its job" "$(field "$HOOK" options)" \
	"{\"on_exit_of\":\"$ID7\"}"
run --no-log --on-exit true -- "$RT" helper exit 0
expect_usage "--on-exit --no-log" \
	"bgrun: --tag, --timeout, --print-id, --strict-log and --on-exit need the log; drop --no-log"

# The configuration's [on-exit] commands: for every launch but with
# --no-on-exit, and for a job ended by bgrun kill (its signal said).
printf '[on-exit]\nnote = echo "config $BGRUN_TAG $BGRUN_RESULT $BGRUN_SIGNAL" >%s\n' \
	"$TMP/hooks" >"$TMP/config"
BGRUN_CONFIG=$TMP/config run -w --print-id --no-on-exit --tag A \
	--on-exit "echo \"explicit \$BGRUN_TAG\" >$TMP/hooks" -- "$RT" helper exit 0
IDA=$OUT
next_line
eq "--no-on-exit: --on-exit runs" "$LINE" "explicit A"
# restart repeats --on-exit and --no-on-exit (the check below sees that
# the configuration's command did not run for it either).
BGRUN_CONFIG=$TMP/config run restart --print-id "$IDA"
run wait "$OUT"
next_line
eq "restart: --on-exit repeated" "$LINE" "explicit A"
BGRUN_CONFIG=$TMP/config run --print-id --tag B -- "$RT" helper pause
run kill -s INT "$OUT"
eq "[on-exit]: the job killed" "$RC" 0
SEEN=""
for i in 1 2 3; do
	next_line
	SEEN+="$LINE;"
	[ "$LINE" = "config B signaled 2" ] && break
done
eq "[on-exit]: run once, with the signal; not for --no-on-exit" "$SEEN" \
	"config B signaled 2;"
exec 4>&-
# Every hook (four) recorded as ended before the directory goes.
hooks_done() {
	local end=$((SECONDS + 10)) n
	while :; do
		n=$("$LOGSINK" query --source on-exit --json 2>/dev/null |
			grep -vc '"result":"running"')
		[ "$n" -ge 4 ] && return 0
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.01
	done
}
check "every hook has ended" hooks_done
run ps
eq "no job left running" "$OUT_LINES" 1


# --- restart of a job whose output bgrun kept: the new job keeps its own ---
run --print-id -- "$RT" helper stdout kept-once
ID10=$OUT
run wait "$ID10"
run restart --print-id "$ID10"
ID11=$OUT
run wait "$ID11"
eq "restart, kept output: the new job ran" "$RC" 0
run logs "$ID11"
eq "restart, kept output: the new job's own output" "$OUT" kept-once
check "restart, kept output: in a file of its own" \
	eval '"$BGRUN" show "$ID11" | grep -q "^stdout_path: .*/$ID11.log$"'
run logs "$ID10"
eq "restart, kept output: the old job's file untouched" "$OUT" kept-once

# --- wait on the very first launch into a new log (the schema made at once) ---
for i in 1 2 3 4 5; do
	BGRUN_DB=$TMP/new-$i.db capture "$BGRUN" --print-id -- true
	BGRUN_DB=$TMP/new-$i.db capture "$BGRUN" wait "$OUT"
	eq "wait on a new log's first job ($i): exit 0, no schema message" "$RC:$ERR" 0:
done

finish
