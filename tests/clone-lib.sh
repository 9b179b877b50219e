# SPDX-License-Identifier: MIT
# clone-lib.sh: what the `bgrun clone` test scripts share on top of lib.sh: the skip check, a private hg configuration, the bad-bundle loop.
#
# Source it after setting CLONE_NEEDS (the programs without which the test
# is skipped, exit 77). It sources lib.sh (USAGE_PROG is 'bgrun clone'),
# makes TMP its physical path (hg prints resolved paths), closes stdin and
# points hg at a private hgrc in TMP. The script defines run ARGS... (bgrun
# clone ARGS, by capture) before it calls bad_bundles.

for p in $CLONE_NEEDS; do
	if ! command -v "$p" >/dev/null; then
		echo "# skipped: $p is not installed"
		exit 77
	fi
done

USAGE_PROG='bgrun clone'
. "$(dirname "$0")/lib.sh"
TMP=$(pwd -P)
exec </dev/null

export HGRCPATH=$TMP/hgrc HGUSER='bgrun test <test@example.com>' HGPLAIN=1
export HGENCODING=utf-8 TZ=UTC
printf '[ui]\nportablefilenames = ignore\n' >"$HGRCPATH"

# leftovers DIR: what clones left in DIR (temporary directories, owner files).
leftovers() { find "$1" -maxdepth 1 -name '.*.clone-*' | wc -l; }
# temporaries DIR: the temporary directories of clones in DIR.
temporaries() { find "$1" -maxdepth 1 -type d -name '.*.clone-*' | wc -l; }

# bad_bundles [LABEL]: applies every $TMP/bad/NAME.hg listed in
# $TMP/bad/cases.tsv (NAME, then keyword and offset read from a file, then
# from a pipe) from the file and from a pipe: each must fail with one line
# naming the problem at its offset and leave nothing behind. LABEL, if
# given, is added to the names of the checks (a second pass, with other
# options in run).
bad_bundles() {
	local name kw_file off_file kw_pipe off_pipe how off keyword file
	while IFS=$'\t' read -r name kw_file off_file kw_pipe off_pipe; do
		file=$TMP/bad/$name.hg
		name="$name${1:+ $1}"
		for how in file pipe; do
			if [ $how = file ]; then
				run "$file" bad-dest
				off=$off_file keyword=$kw_file
			else
				run - bad-dest < <(cat "$file")
				off=$off_pipe keyword=$kw_pipe
			fi
			eq "bad $name ($how): exit 1" "$RC" 1
			eq "bad $name ($how): one line" "$ERR_LINES" 1
			case "$ERR" in
			*"offset $off: "*"$keyword"*) pass "bad $name ($how): names the problem at offset $off" ;;
			*) fail "bad $name ($how): names the problem at offset $off"
			   printf '#   got: %s\n#   want: offset %s ... %s\n' "$ERR" "$off" "$keyword" ;;
			esac
			if [ -e bad-dest ] || [ "$(leftovers "$TMP")" != 0 ]; then
				fail "bad $name ($how): nothing left behind"
				rm -rf bad-dest "$TMP"/.*.clone-*
			else
				pass "bad $name ($how): nothing left behind"
			fi
		done
	done <"$TMP/bad/cases.tsv"
}

# interrupted BUNDLE [OPTIONS]: bgrun clone OPTIONS - intr, reading the
# start of BUNDLE from a FIFO kept open, is sent SIGINT once its temporary
# directory is there: it must exit 130, say so, and leave nothing behind.
interrupted() {
	local bundle=$1 pid rc deadline=$((SECONDS + 30))
	shift
	mkfifo "$TMP/fifo"
	"$BGRUN" clone "$@" - intr <"$TMP/fifo" >/dev/null 2>"$TMP/intr.err" &
	pid=$!
	KILL_PIDS+=("$pid")
	exec 3>"$TMP/fifo"
	head -c 300000 "$bundle" >&3
	until [ "$(temporaries "$TMP")" = 1 ] || [ $SECONDS -ge $deadline ]; do sleep 0.02; done
	eq "interrupt: the clone had started" "$(temporaries "$TMP"):$(leftovers "$TMP")" 1:2
	kill -INT "$pid"
	wait "$pid"
	rc=$?
	eq "interrupt: exit 130" "$rc" 130
	KILL_PIDS=()
	exec 3>&-
	eq "interrupt: message" "$(cat "$TMP/intr.err")" "bgrun: clone: stdin: interrupted"
	check "interrupt: no DEST" test ! -e intr
	eq "interrupt: no temporary directory" "$(leftovers "$TMP")" 0
}
