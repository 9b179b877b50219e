# SPDX-License-Identifier: MIT
# lib.sh: what the shell test scripts share: a temporary directory, checks printed as ok / not ok, running a program.
#
# Source it after setting USAGE_PROG (the program whose usage hint
# expect_usage looks for). It makes TMP (removed at exit, with every pid in
# KILL_PIDS killed first), cds into it (BGRUN_OUTPUT_DIR is $TMP/output), and counts failures in FAILED;
# finish exits 1 if any check failed.

TMP=$(mktemp -d) || exit 1
KILL_PIDS=()
cleanup() {
	local p
	for p in "${KILL_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP" || exit 1
# A logged launch keeps its output in the state directory: here, not $HOME's.
export BGRUN_OUTPUT_DIR=$TMP/output
FAILED=0

# The sqlite3 shell with a busy timeout: a test that reads the log while a
# recorder or the daemon commits would otherwise fail with "database is
# locked" on a loaded machine (the shell's default is not to wait).
sqlite3() { command sqlite3 -cmd '.timeout 30000' "$@"; }

pass() { echo "ok - $1"; }
fail() { echo "not ok - $1"; FAILED=1; }
# check DESC COMMAND...: ok when COMMAND succeeds.
check() {
	local d=$1
	shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}
# eq DESC GOT WANT
eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1"
		printf '#   got:  %q\n#   want: %q\n' "$2" "$3"
	fi
}

# capture PROGRAM ARGS...: runs it; sets RC, OUT and ERR (trailing newlines
# stripped), OUT_LINES and ERR_LINES.
capture() {
	"$@" >"$TMP/.stdout" 2>"$TMP/.stderr"
	RC=$?
	OUT=$(cat "$TMP/.stdout")
	ERR=$(cat "$TMP/.stderr")
	OUT_LINES=$(wc -l <"$TMP/.stdout")
	ERR_LINES=$(wc -l <"$TMP/.stderr")
}

# expect_error DESC RC ONE-LINE-MESSAGE: the last run failed with exactly
# that exit code and that single line on stderr, and printed nothing else.
expect_error() {
	eq "$1: exit $2" "$RC" "$2"
	eq "$1: message" "$ERR" "$3"
	eq "$1: one line on stderr" "$ERR_LINES" 1
	eq "$1: nothing on stdout" "$OUT" ""
}

# expect_usage DESC FIRST-LINE: a usage error (exit 2, the line, the hint).
expect_usage() {
	eq "$1: exit 2" "$RC" 2
	eq "$1: message" "$ERR" "$2"$'\n'"Try '$USAGE_PROG --help'."
	eq "$1: two lines on stderr" "$ERR_LINES" 2
	eq "$1: nothing on stdout" "$OUT" ""
}

# check_not_linked DESC PROG LIB...: PROG contains no code of each LIB
# (sqlite or libuv) and loads no copy of it. A static program has no
# NEEDED list to read, so this reads its symbols: any symbol of the
# library (sqlite3_*, uv_*), defined (linked in) or undefined (taken from
# a shared library), in the symbol table or the dynamic one, fails it, as
# does a NEEDED entry naming the library. A program without a symbol
# table (stripped) cannot be judged and fails too.
check_not_linked() {
	local desc=$1 prog=$2 lib syms needed found=""
	shift 2
	if ! command -v nm >/dev/null || ! command -v readelf >/dev/null; then
		fail "$desc (nm or readelf missing: binutils)"
		return
	fi
	if ! syms=$(nm "$prog" 2>&1); then
		fail "$desc (${syms%%$'\n'*})"
		return
	fi
	# A stripped program has no symbol table, and nm says so.
	if [[ $syms == *"no symbols"* ]]; then
		fail "$desc (no symbol table in $prog: cannot tell)"
		return
	fi
	syms+=$'\n'$(nm -D "$prog" 2>/dev/null)
	needed=$(readelf -d "$prog" | awk '/NEEDED/ {print $NF}' | tr -d '[]')
	for lib in "$@"; do
		local sym_re lib_re hits
		case $lib in
		sqlite) sym_re='sqlite3_' lib_re='^libsqlite3' ;;
		libuv) sym_re='uv_' lib_re='^libuv' ;;
		*) fail "$desc (check_not_linked: unknown library $lib)"; return ;;
		esac
		# nm's last field is the name (defined: "ADDR T name",
		# undefined: "U name"), maybe with a @VERSION.
		hits=$(awk -v re="^$sym_re" '$NF ~ re {print $NF}' <<<"$syms" |
			sort -u | head -3 | paste -sd ' ')
		[ -n "$hits" ] && found+="; $lib symbols: $hits ..."
		hits=$(grep -E "$lib_re" <<<"$needed" | paste -sd ' ')
		[ -n "$hits" ] && found+="; $lib needed: $hits"
	done
	if [ -z "$found" ]; then
		pass "$desc"
	else
		fail "$desc"
		echo "#   $prog:${found#;}"
	fi
}

# wait_for FILE: polls for FILE, up to 10 seconds.
wait_for() {
	local end=$((SECONDS + 10))
	while [ ! -e "$1" ]; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.01
	done
}

# need_executable FILE...: each must be executable, else the test is broken (exit 1).
need_executable() {
	local f
	for f in "$@"; do
		if [ ! -x "$f" ]; then
			echo "# not executable: $f"
			exit 1
		fi
	done
}

# need_program PROG...: each must be on PATH, else the test is skipped (exit 77).
need_program() {
	local p
	for p in "$@"; do
		if ! command -v "$p" >/dev/null; then
			echo "# skipped: $p is not installed (scripts/setup.sh installs it)"
			exit 77
		fi
	done
}

# finish: the summary line and the exit status.
finish() {
	if [ "$FAILED" -ne 0 ]; then
		echo "# some checks failed"
		exit 1
	fi
	echo "# all checks passed"
	exit 0
}
