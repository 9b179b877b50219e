#!/bin/bash
# SPDX-License-Identifier: MIT
# test-cli.sh: the bgrun command line, observed through run-tests' helper reports.
#
# Usage: test-cli.sh BGRUN RUN_TESTS [log|no-log] (absolute paths; meson passes
# them). The checks run with bgrun's default supervisor, which records every
# launch in a temporary event log, or with --no-log (one plain spawn).
# Each check prints "ok - ..." or "not ok - ..."; the exit status is 1 if any
# failed. Nothing sleeps to synchronise: a detached child's report is polled
# for with a deadline, and --wait is used where the order matters.

set -u

BGRUN=${1:?usage: test-cli.sh BGRUN RUN_TESTS}
RT=${2:?usage: test-cli.sh BGRUN RUN_TESTS}
MODE=${3:-log}
case "$MODE" in
log) MODE_ARGS=() ;;
no-log) MODE_ARGS=(--no-log) ;;
*) echo "# unknown mode: $MODE"; exit 1 ;;
esac
for f in "$BGRUN" "$RT"; do
	if [ ! -x "$f" ]; then
		echo "# not executable: $f"
		exit 1
	fi
done

USAGE_PROG=bgrun
. "$(dirname "$0")/lib.sh"
export BGRUN_DB=$TMP/events.db
# bgrun's own stdin, for the checks that do not redirect it (-i -).
exec </dev/null
# The directory as the kernel names it (readlink of /proc/self/fd/N, cwd).
TMPR=$(pwd -P)
# run ARGS...: runs bgrun (stdin: /dev/null unless redirected), see capture.
run() { capture "$BGRUN" "${MODE_ARGS[@]}" "$@"; }

# key REPORT KEY: the first value of KEY; keys REPORT KEY: all, one a line.
key() { sed -n "s/^$2=//p" "$1" | head -n 1; }
keys() { sed -n "s/^$2=//p" "$1"; }

# hex STRING: its bytes in lowercase hex, as the helper writes them.
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# hexlines STRING...: each string in hex, one a line.
hexlines() {
	local s
	for s in "$@"; do
		hex "$s"
		echo
	done
}

# has_env REPORT NAME=VALUE: the child's environment holds that entry.
has_env() { keys "$1" env | grep -qx "$(hex "$2")"; }
# has_name REPORT NAME: the child's environment holds NAME at all.
has_name() { keys "$1" env | grep -q "^$(hex "$2=")"; }

# fnv FILE: FNV-1a 64 of FILE's bytes, 16 hex digits (bash wraps at 64 bits).
fnv() {
	local h=$((0xcbf29ce484222325)) b
	for b in $(od -An -v -tu1 "$1"); do
		h=$(((h ^ b) * 0x100000001b3))
	done
	printf '%016x' "$h"
}

# launch_report DESC REPORT ARGS...: runs `bgrun ARGS... RT helper report
# REPORT` and waits for the report to appear.
launch_report() {
	local d=$1 r=$2
	shift 2
	run "$@" "$RT" helper report "$r"
	eq "$d: exit 0" "$RC" 0
	eq "$d: nothing on stderr" "$ERR" ""
	check "$d: report written" wait_for "$r"
}

# The script's own session and process group, for the --wait checks.
read -r _ _ MY_PGID MY_SID _ < <(sed 's/^.*) //' /proc/$$/stat)

echo "# bgrun: $BGRUN"
echo "# run-tests: $RT"

# --- a plain detached launch ---
R=$TMP/r-plain
launch_report "plain launch" "$R" --
eq "plain launch: nothing on stdout" "$OUT" ""
PID=$(key "$R" pid)
check "plain launch: pid reported" test -n "$PID"
eq "plain launch: new session (sid = pid)" "$(key "$R" sid)" "$PID"
eq "plain launch: own process group (pgid = pid)" "$(key "$R" pgid)" "$PID"
eq "plain launch: descriptors 0,1,2 only" "$(key "$R" fds)" "0,1,2"
eq "plain launch: stdin is /dev/null" "$(key "$R" fd0)" /dev/null
if [ "$MODE" = log ]; then
	# Kept: one file for both streams, named after the event.
	check "plain launch: stdout is the kept output" \
		eval '[[ $(key "$R" fd1) == "$TMPR/output/"*.log ]]'
	eq "plain launch: stderr is the same file" "$(key "$R" fd2)" \
		"$(key "$R" fd1)"
else
	eq "plain launch: stdout is /dev/null" "$(key "$R" fd1)" /dev/null
	eq "plain launch: stderr is /dev/null" "$(key "$R" fd2)" /dev/null
fi
eq "plain launch: stdin empty" "$(key "$R" stdin_len)" 0
eq "plain launch: cwd inherited" "$(key "$R" cwd)" "$TMPR"
eq "plain launch: argc" "$(key "$R" argc)" 4
eq "plain launch: argv passed" "$(keys "$R" arg)" \
	"$(hexlines "$RT" helper report "$R")"

# Ignored signals and open descriptors of the caller do not reach the child.
R=$TMP/r-signals
(
	trap '' USR1 TERM HUP
	exec 7<"$RT"
	exec "$BGRUN" "$RT" helper report "$R" >/dev/null 2>&1
)
check "signals: report written" wait_for "$R"
check "signals: nothing ignored in the child" \
	grep -Eq '^sigign=0+$' "$R"
check "signals: nothing blocked in the child" \
	grep -Eq '^sigblk=0+$' "$R"
eq "signals: the caller's fd 7 is not inherited" "$(key "$R" fds)" "0,1,2"

# bgrun returns while the command still runs, and does not kill it.
run --print-pid "$RT" helper pause
eq "pause: exit 0" "$RC" 0
if [[ $OUT =~ ^[0-9]+$ ]]; then
	KILL_PIDS+=("$OUT")
	check "pause: the command outlives bgrun" kill -0 "$OUT"
	kill -KILL "$OUT" 2>/dev/null
else
	fail "pause: a pid printed"
fi

# --- --print-pid ---
R=$TMP/r-pid
launch_report "--print-pid" "$R" --print-pid
eq "--print-pid: the child's pid" "$OUT" "$(key "$R" pid)"
eq "--print-pid: one line" "$OUT_LINES" 1

# --- arguments ---
# A report with extra arguments: options after COMMAND are the command's,
# and every string goes through byte for byte.
R=$TMP/r-argv
run "$RT" helper report "$R" -o x --bogus '' $'new\nline' 'sp ace'
eq "argv: exit 0" "$RC" 0
check "argv: report written" wait_for "$R"
eq "argv: argc" "$(key "$R" argc)" 10
eq "argv: options after COMMAND and odd strings kept" "$(keys "$R" arg)" \
	"$(hexlines "$RT" helper report "$R" -o x --bogus '' $'new\nline' 'sp ace')"

# --- -o, -e, -a ---
R=$TMP/r-out
launch_report "-o" "$R" -o out.log
eq "-o: stdout is the file" "$(key "$R" fd1)" "$TMPR/out.log"
if [ "$MODE" = log ]; then
	check "-o: stderr kept" eval '[[ $(key "$R" fd2) == "$TMPR/output/"*.log ]]'
else
	eq "-o: stderr still /dev/null" "$(key "$R" fd2)" /dev/null
fi
R=$TMP/r-err
launch_report "-e" "$R" --stderr "$TMP/err.log"
eq "-e: stderr is the file" "$(key "$R" fd2)" "$TMPR/err.log"
if [ "$MODE" = log ]; then
	check "-e: stdout kept" eval '[[ $(key "$R" fd1) == "$TMPR/output/"*.log ]]'
else
	eq "-e: stdout still /dev/null" "$(key "$R" fd1)" /dev/null
fi
R=$TMP/r-nullout
launch_report "--no-output" "$R" --no-output
eq "--no-output: stdout is /dev/null" "$(key "$R" fd1)" /dev/null
eq "--no-output: stderr is /dev/null" "$(key "$R" fd2)" /dev/null
R=$TMP/r-devnull
launch_report "-o /dev/null" "$R" -o /dev/null
eq "-o /dev/null: stdout is /dev/null" "$(key "$R" fd1)" /dev/null
if [ "$MODE" = log ]; then
	check "-o /dev/null: stderr kept" \
		eval '[[ $(key "$R" fd2) == "$TMPR/output/"*.log ]]'
fi

"$RT" helper stdout hello >"$TMP/want-hello" 2>/dev/null </dev/null
printf 'old contents, longer than the new\n' >"$TMP/t.log"
run -w -o "$TMP/t.log" "$RT" helper stdout hello
eq "-o truncates: exit 0" "$RC" 0
eq "-o truncates: only the new output" "$(cat "$TMP/t.log")" \
	"$(cat "$TMP/want-hello")"
printf 'old\n' >"$TMP/a.log"
run -w -a -o "$TMP/a.log" "$RT" helper stdout hello
eq "-a appends: exit 0" "$RC" 0
eq "-a appends: old then new" "$(cat "$TMP/a.log")" \
	"old"$'\n'"$(cat "$TMP/want-hello")"
"$RT" helper stderr oops 2>"$TMP/want-oops" >/dev/null </dev/null
printf 'old contents, longer than the new\n' >"$TMP/e.log"
run -w -e "$TMP/e.log" "$RT" helper stderr oops
eq "-e writes stderr: exit 0" "$RC" 0
eq "-e writes stderr: content" "$(cat "$TMP/e.log")" "$(cat "$TMP/want-oops")"
check "-e writes stderr: not empty" test -s "$TMP/e.log"

# The same file for both: one open file, so neither stream clobbers the other.
printf 'old contents, longer than the new\n' >"$TMP/both.log"
run -w -o "$TMP/both.log" -e "$TMP/both.log" -s 'echo out; echo err >&2'
eq "-o F -e F: exit 0" "$RC" 0
eq "-o F -e F: both streams, in order" "$(cat "$TMP/both.log")" $'out\nerr'
printf 'old contents, longer than the new\n' >"$TMP/both2.log"
run -w -o both2.log -e "$TMP/./both2.log" "$RT" helper outerr out err
eq "-o F -e same inode: exit 0" "$RC" 0
eq "-o F -e same inode: both streams, in order" \
	"$(cat "$TMP/both2.log")" $'out\nerr'
printf 'old\n' >"$TMP/both3.log"
run -w -a -o "$TMP/both3.log" -e "$TMP/both3.log" "$RT" helper outerr out err
eq "-a -o F -e F: exit 0" "$RC" 0
eq "-a -o F -e F: appended, in order" "$(cat "$TMP/both3.log")" \
	$'old\nout\nerr'

# --- -C ---
mkdir "$TMP/dir"
ln -s "$RT" "$TMP/dir/rt"
R=$TMP/r-cwd
launch_report "-C" "$R" -C "$TMP/dir"
eq "-C: cwd" "$(key "$R" cwd)" "$TMPR/dir"
R=$TMP/r-cwd2
run --cwd dir -o rel.log ./rt helper report "$R"
eq "-C with ./prog: exit 0" "$RC" 0
check "-C with ./prog: found relative to DIR" wait_for "$R"
check "-C: -o relative to bgrun's cwd" test -e "$TMP/rel.log"
check "-C: not relative to DIR" test ! -e "$TMP/dir/rel.log"

# --- environment ---
R=$TMP/r-env
BGRUN_T_A=old BGRUN_T_B=keep BGRUN_T_C=gone \
	launch_report "-E -u" "$R" -E BGRUN_T_A=new --env BGRUN_T_D= \
	-u BGRUN_T_C
check "-E: replaces a variable" has_env "$R" BGRUN_T_A=new
check "-E: the old value is gone" eval '! has_env "$R" BGRUN_T_A=old'
check "-E: an empty value" has_env "$R" BGRUN_T_D=
check "-E: others kept" has_env "$R" BGRUN_T_B=keep
check "-u: removed" eval '! has_name "$R" BGRUN_T_C'
check "-E: a variable of the caller is inherited" has_env "$R" "PATH=$PATH"

R=$TMP/r-clear
launch_report "--clear-env" "$R" --clear-env
eq "--clear-env: no variables at all" "$(keys "$R" env)" ""
R=$TMP/r-clear2
launch_report "--clear-env -E" "$R" --clear-env -E A=1 -E 'B=two words' \
	-E C=x -E A=3 -u C
eq "--clear-env -E -u: exactly the variables set" \
	"$(keys "$R" env | sort)" "$(hexlines A=3 'B=two words' | sort)"
if [ "$MODE" = log ]; then
	# The recorder lives in bgrun's environment, not in COMMAND's.
	run -w --print-id --clear-env -E "BGRUN_DB=$TMP/not-this.db" \
		"$RT" helper exit 0
	ID=$OUT
	eq "env of COMMAND only: exit 0" "$RC" 0
	eq "env of COMMAND only: recorded in bgrun's \$BGRUN_DB" \
		"$(sqlite3 "$BGRUN_DB" "SELECT result FROM events WHERE id = '$ID'")" \
		success
	check "env of COMMAND only: not in COMMAND's \$BGRUN_DB" \
		test ! -e "$TMP/not-this.db"
fi

# --- a long command line ---
# COMMAND's argv over half of ARG_MAX: it is on one command line per
# program (bgrun, COMMAND, the recorder), never twice on one.
BIG=$(head -c 100000 /dev/zero | tr '\0' x)
BIG_ARGS=()
for ((i = 0; i < $(getconf ARG_MAX) * 6 / 10 / 100001; i++)); do
	BIG_ARGS+=("$BIG")
done
run -w "$RT" helper exit 0 "${BIG_ARGS[@]}"
eq "60% of ARG_MAX in argv: exit 0" "$RC" 0
eq "60% of ARG_MAX in argv: nothing on stderr" "$ERR" ""
# As much as bgrun itself can be given (90%: the environment and bgrun's
# own words take the rest): logged as --no-log launches it, and recorded
# whole. 11 arguments of 100 kB each used to fail with E2BIG when logged.
BIG_ARGS=()
for ((i = 0; i < $(getconf ARG_MAX) * 9 / 10 / 100001; i++)); do
	BIG_ARGS+=("$BIG")
done
PRINT_ID=()
[ "$MODE" = log ] && PRINT_ID=(--print-id)
run -w "${PRINT_ID[@]}" "$RT" helper exit 0 "${BIG_ARGS[@]}"
eq "90% of ARG_MAX in argv (${#BIG_ARGS[@]} x 100 kB): exit 0" "$RC" 0
if [ "$MODE" = log ]; then
	eq "90% of ARG_MAX in argv: recorded whole" \
		"$(sqlite3 -cmd '.timeout 10000' "$BGRUN_DB" "SELECT json_array_length(argv) || ' ' || (length(argv) > ${#BIG_ARGS[@]} * 100000) FROM events WHERE id = '$OUT'")" \
		"$((${#BIG_ARGS[@]} + 4)) 1"
fi
unset BIG BIG_ARGS

# --- -i ---
printf 'line one\nline two\0\377\001binary\n' >"$TMP/in.dat"
head -c 20000 "$RT" >>"$TMP/in.dat"
IN_LEN=$(wc -c <"$TMP/in.dat")
IN_FNV=$(fnv "$TMP/in.dat")
R=$TMP/r-in
launch_report "-i FILE" "$R" -i "$TMP/in.dat"
eq "-i FILE: stdin is the file" "$(key "$R" fd0)" "$TMPR/in.dat"
eq "-i FILE: length read" "$(key "$R" stdin_len)" "$IN_LEN"
eq "-i FILE: content read" "$(key "$R" stdin_fnv)" "$IN_FNV"
eq "-i FILE: bgrun's descriptor not leaked" "$(key "$R" fds)" "0,1,2"
R=$TMP/r-in-dash
run -w -i - "$RT" helper report "$R" <"$TMP/in.dat"
eq "-i -: exit 0" "$RC" 0
eq "-i -: length read" "$(key "$R" stdin_len)" "$IN_LEN"
eq "-i -: content read" "$(key "$R" stdin_fnv)" "$IN_FNV"
R=$TMP/r-in-async
launch_report "-i FILE --no-ensurestart" "$R" --no-ensurestart \
	--stdin "$TMP/in.dat"
eq "-i FILE --no-ensurestart: length read" "$(key "$R" stdin_len)" "$IN_LEN"
R=$TMP/r-in-none
run -i "$TMP/no/in.dat" "$RT" helper report "$R"
expect_error "-i missing file" 125 \
	"bgrun: cannot open '$TMP/no/in.dat' for stdin: No such file or directory"
check "-i missing file: nothing launched" test ! -e "$R"
# A FIFO no process writes to: opened at once, the command reads EOF.
# (timeout only turns a hang into a failure; nothing is timed.)
mkfifo "$TMP/in.fifo"
R=$TMP/r-in-fifo
capture timeout 60 "$BGRUN" "${MODE_ARGS[@]}" -w -i "$TMP/in.fifo" \
	"$RT" helper report "$R"
eq "-i FIFO without a writer: exit 0, not blocked" "$RC" 0
eq "-i FIFO without a writer: EOF" "$(key "$R" stdin_len)" 0

# --- -s ---
run -w -o "$TMP/s.out" -s 'printf "%s|%s|%s" "$0" "$1" "$2"' zero one 'two 2'
eq "-s: exit 0" "$RC" 0
eq "-s: ARGS are \$0, \$1..." "$(cat "$TMP/s.out")" "zero|one|two 2"
run -w --shell 'exit 7'
eq "-s: the script's status" "$RC" 7
R=$TMP/r-shell
run -s 'exec "$0" helper report "$1"' "$RT" "$R"
eq "-s detached: exit 0" "$RC" 0
check "-s detached: report written" wait_for "$R"
eq "-s detached: new session" "$(key "$R" sid)" "$(key "$R" pid)"

# --- --wait ---
for n in 0 3 255; do
	run -w "$RT" helper exit "$n"
	eq "--wait: exit $n passed through" "$RC" "$n"
	eq "--wait: exit $n: bgrun silent" "$OUT$ERR" ""
done
run --wait "$RT" helper signal 9
eq "--wait: killed by signal 9 is 137" "$RC" 137
run --wait "$RT" helper signal 15
eq "--wait: killed by signal 15 is 143" "$RC" 143
R=$TMP/r-wait
run -w --print-pid "$RT" helper report "$R"
eq "--wait: exit 0" "$RC" 0
check "--wait: report written before bgrun returns" test -e "$R"
eq "--wait --print-pid: the child's pid" "$OUT" "$(key "$R" pid)"
eq "--wait: same session as the caller" "$(key "$R" sid)" "$MY_SID"
eq "--wait: same process group as the caller" "$(key "$R" pgid)" "$MY_PGID"

# --- not found: 127 ---
run bgrun-no-such-command
expect_error "missing command" 127 \
	"bgrun: bgrun-no-such-command: command not found"
run -w bgrun-no-such-command
expect_error "missing command with --wait" 127 \
	"bgrun: bgrun-no-such-command: command not found"
run "$TMP/no-such-file"
expect_error "missing path" 127 \
	"bgrun: $TMP/no-such-file: No such file or directory"
run $'bgrun-no\nsuch\tcommand\033'
expect_error "missing command, control characters escaped" 127 \
	'bgrun: bgrun-no\nsuch\tcommand\x1b: command not found'
run -i "$TMP/in.dat" -o "$TMP/o-127.log" bgrun-no-such-command
eq "missing command: -i and -o: exit 127" "$RC" 127

# --- not executable: 126 ---
printf 'just data\n' >"$TMP/file.txt"
chmod 644 "$TMP/file.txt"
run ./file.txt
expect_error "not executable" 126 \
	"bgrun: ./file.txt: cannot execute: Permission denied"
PATH="$TMP:$PATH" run file.txt
expect_error "not executable, found in PATH" 126 \
	"bgrun: file.txt: cannot execute: Permission denied"
run "$TMP/dir"
expect_error "a directory" 126 \
	"bgrun: $TMP/dir: cannot execute: Permission denied"
printf 'no interpreter line, no ELF header\n' >"$TMP/bad.bin"
chmod 755 "$TMP/bad.bin"
run ./bad.bin
expect_error "not an executable format" 126 \
	"bgrun: ./bad.bin: cannot execute: Exec format error"
# glibc's words for the errno, in the bgrun built against musl too (whose
# own strerror says "Symbolic link loop"): src/musl/strerror.c.
ln -s loop-b "$TMP/loop-a"
ln -s loop-a "$TMP/loop-b"
run ./loop-a
expect_error "a symbolic link loop, in glibc's words" 126 \
	"bgrun: ./loop-a: cannot execute: Too many levels of symbolic links"

# --- bgrun's own failures: 125 ---
R=$TMP/r-125
run -o "$TMP/no/out.log" "$RT" helper report "$R"
expect_error "unopenable stdout" 125 \
	"bgrun: cannot open '$TMP/no/out.log' for stdout: No such file or directory"
run -e "$TMP/no/err.log" "$RT" helper report "$R"
expect_error "unopenable stderr" 125 \
	"bgrun: cannot open '$TMP/no/err.log' for stderr: No such file or directory"
run -C /nonexistent-bgrun-dir "$RT" helper report "$R"
expect_error "bad -C" 125 \
	"bgrun: cannot change directory to '/nonexistent-bgrun-dir': No such file or directory"
run -C "$TMP/file.txt" "$RT" helper report "$R"
expect_error "-C a file" 125 \
	"bgrun: cannot change directory to '$TMP/file.txt': Not a directory"
run -w -o "$TMP/no/out.log" "$RT" helper report "$R"
eq "unopenable stdout with --wait: exit 125" "$RC" 125
check "125: nothing launched" test ! -e "$R"
# A FIFO no process reads: refused at once (timeout: a hang fails).
mkfifo "$TMP/out.fifo"
capture timeout 60 "$BGRUN" "${MODE_ARGS[@]}" -o "$TMP/out.fifo" \
	"$RT" helper report "$R"
expect_error "-o FIFO without a reader" 125 \
	"bgrun: cannot open '$TMP/out.fifo' for stdout: a FIFO that no process reads"
check "-o FIFO without a reader: nothing launched" test ! -e "$R"
# With a reader (this shell, read-write: it never blocks), it works.
exec {FIFO_RD}<>"$TMP/out.fifo"
run -w -o "$TMP/out.fifo" "$RT" helper stdout fifo-line
eq "-o FIFO with a reader: exit 0" "$RC" 0
read -r -t 60 LINE <&"$FIFO_RD"
eq "-o FIFO with a reader: the output" "$LINE" fifo-line
exec {FIFO_RD}<&-

# --- usage errors: 2 ---
run --bogus "$RT" helper exit 0
expect_usage "unknown long option" "bgrun: unrecognized option '--bogus'"
run -x "$RT" helper exit 0
expect_usage "unknown short option" "bgrun: invalid option -- 'x'"
run
expect_usage "no command" "bgrun: missing command"
run -w -o out.log
expect_usage "options but no command" "bgrun: missing command"
run -o
expect_usage "missing option argument" \
	"bgrun: option requires an argument -- 'o'"
run -E FOO "$RT" helper exit 0
expect_usage "-E without =" \
	"bgrun: invalid environment assignment 'FOO': expected NAME=VALUE"
run -E =x "$RT" helper exit 0
expect_usage "-E with an empty name" \
	"bgrun: invalid environment assignment '=x': expected NAME=VALUE"
run -u A=B "$RT" helper exit 0
expect_usage "-u with =" "bgrun: invalid variable name 'A=B' for --unset"
run -e '' "$RT" helper exit 0
expect_usage "-e with an empty file name" "bgrun: empty file name for -e"
run --db '' "$RT" helper exit 0
expect_usage "--db with an empty file name" "bgrun: empty file name for --db"
check "--db '': no spool made" test ! -e .spool
run --_supervise=0123456789abcdef --_child=1:1:1 "$RT" helper exit 0
expect_usage "the recorder's options are not bgrun's" \
	"bgrun: unrecognized option '--_supervise=0123456789abcdef'"
eq "usage errors: nothing on stdout" "$OUT" ""

# --- --help, --version ---
run --help
eq "--help: exit 0" "$RC" 0
check "--help: usage on stdout" grep -q '^Usage: bgrun ' "$TMP/.stdout"
eq "--help: nothing on stderr" "$ERR" ""
run -h --bogus
eq "-h: exit 0" "$RC" 0
check "-h: usage on stdout" grep -q '^Usage: bgrun ' "$TMP/.stdout"
run --version
eq "--version: exit 0" "$RC" 0
check "--version: bgrun X.Y.Z" eval '[[ $OUT =~ ^bgrun\ [0-9]+\.[0-9]+\.[0-9]+$ ]]'
eq "--version: one line" "$OUT_LINES" 1
eq "--version: nothing on stderr" "$ERR" ""

# --- --no-ensurestart ---
R=$TMP/r-async
if [ "$MODE" = no-log ]; then
	# Alone, bgrun must still learn the outcome before it exits.
	launch_report "--no-ensurestart" "$R" --no-ensurestart --print-pid
	eq "--no-ensurestart: the child's pid" "$OUT" "$(key "$R" pid)"
	eq "--no-ensurestart: new session" "$(key "$R" sid)" "$(key "$R" pid)"
	run --no-ensurestart bgrun-no-such-command
	expect_error "--no-ensurestart, missing command" 127 \
		"bgrun: bgrun-no-such-command: command not found"
	run --no-ensurestart ./file.txt
	expect_error "--no-ensurestart, not executable" 126 \
		"bgrun: ./file.txt: cannot execute: Permission denied"
	run --no-ensurestart -o "$TMP/no/out.log" "$RT" helper exit 0
	expect_error "--no-ensurestart, unopenable stdout" 125 \
		"bgrun: cannot open '$TMP/no/out.log' for stdout: No such file or directory"
else
	# Supervised, bgrun returns once the supervisor runs; a failure to
	# start the command is found in the log, not in bgrun's exit code.
	launch_report "--no-ensurestart" "$R" --no-ensurestart
	eq "--no-ensurestart: new session" "$(key "$R" sid)" "$(key "$R" pid)"
	run --print-pid --no-ensurestart true
	expect_usage "--print-pid --no-ensurestart" \
		"bgrun: --print-pid needs the command started; drop --no-ensurestart"
	run --no-ensurestart --print-id bgrun-no-such-command
	eq "--no-ensurestart, missing command: exit 0" "$RC" 0
	eq "--no-ensurestart, missing command: nothing on stderr" "$ERR" ""
	ID=$OUT
	# result_of ID: the recorded result, once the supervisor wrote it
	# (waiting out the recorder's checkpoint, which locks readers out).
	result_of() {
		sqlite3 -cmd '.timeout 5000' "$BGRUN_DB" \
			"SELECT result FROM events WHERE id = '$1'" 2>/dev/null
	}
	end=$((SECONDS + 10))
	until [ "$(result_of "$ID")" = spawn_failed ] || [ "$SECONDS" -ge "$end" ]; do
		sleep 0.01
	done
	eq "--no-ensurestart, missing command: spawn_failed in the log" \
		"$(result_of "$ID")" spawn_failed
	eq "recorded: the user who ran bgrun, by uid and name" \
		"$(sqlite3 -cmd '.timeout 10000' "$BGRUN_DB" "SELECT uid, user FROM events WHERE id = '$ID'")" \
		"$(id -u)|$(id -un)"
fi
run --no-ensurestart -w "$RT" helper exit 3
eq "--no-ensurestart --wait: exit 3 passed through" "$RC" 3

# --- what bgrun links: no SQLite (the recorder is bgrun-record, clone bgrun-full's) ---
check_not_linked "bgrun does not link libsqlite3" "$BGRUN" sqlite
if [ "$MODE" = log ]; then
	# bgrun hands `clone` to bgrun-full: its usage error comes back.
	capture "$BGRUN" clone
	eq "clone: bgrun-full's usage error, exit 2" "$RC" 2
	check "clone: bgrun-full's usage message" \
		eval '[[ $ERR == "bgrun: clone: missing BUNDLE or DEST"* ]]'
fi

finish
