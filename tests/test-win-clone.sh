#!/bin/bash
# SPDX-License-Identifier: MIT
# test-win-clone.sh: `bgrun clone` of the Windows build, under wine, makes the store that Linux makes: same files, same bytes.
#
# Usage: test-win-clone.sh BGRUN_EXE FIXTURES_PY [LINUX_BGRUN]
# (tests/win/meson.build passes the first two; the Linux bgrun, a native
# build's launcher/bgrun-full, comes third or from $BGRUN_LINUX_BGRUN,
# which scripts/test-windows.sh sets when ./build has one). Debian's hg
# makes a repository of awkward names (clone-fixtures.py: capitals,
# Windows device names, trailing dots and spaces, non-ASCII, characters
# Windows refuses, deep and over-long paths, an 8 MB file), bundles it
# as v1 and v2 streams; the Windows bgrun.exe applies them under wine
# (the background closers too), and each tree is compared file by file
# and byte by byte with the Linux bgrun's and with what hg itself makes
# of the bundle (hg debugapplystreamclonebundle). Then a clone into a
# directory whose Windows path is over 260 characters, the owner file
# of a running clone (left by --cleanup) and of a killed one (removed), a
# URL (refused in one line), a hook; every clone and logged hook is
# recorded (BGRUN_DB, in TMP), and the rows are read back with Python's
# sqlite3. Wine's output goes to files,
# never to a pipe (scripts/wine-run.sh says why). Exit 77 when hg, wine
# or python3 is missing.

set -u

EXE=${1:?usage: test-win-clone.sh BGRUN_EXE FIXTURES_PY [LINUX_BGRUN]}
FIX=${2:?usage: test-win-clone.sh BGRUN_EXE FIXTURES_PY [LINUX_BGRUN]}
LINUX=${3:-${BGRUN_LINUX_BGRUN:-}}
CLONE_NEEDS="hg python3 wine"
. "$(dirname "$0")/clone-lib.sh"

# wclone ARGS...: bgrun.exe clone ARGS under wine (paths relative to
# TMP, which wine sees as the current directory on its Z: drive); sets
# RC, OUT, ERR as capture does.
# The log of every clone here (relative: wine's current directory is TMP).
export BGRUN_DB=events.db
wclone() {
	wine "$EXE" clone "$@" >"$TMP/.stdout" 2>"$TMP/.stderr" </dev/null
	RC=$?
	OUT=$(cat "$TMP/.stdout")
	ERR=$(cat "$TMP/.stderr")
	ERR_LINES=$(wc -l <"$TMP/.stderr")
}
# listing DIR: every file and directory under DIR, with the MD5 of each
# file's bytes, sorted (the same on both sides only if names, kinds and
# bytes all are).
listing() {
	(cd "$1" && find . -mindepth 1 \( -type d -printf 'd %p\n' \) -o \
		\( -type f -printf 'f %p ' -exec sh -c 'md5sum <"$1" | cut -d" " -f1' sh {} \; \) \
		-o -printf '? %p\n' | LC_ALL=C sort)
}
# same_tree DESC A B: A and B hold the same files with the same bytes.
same_tree() {
	if diff <(listing "$2") <(listing "$3") >"$TMP/tree.diff"; then
		pass "$1"
	else
		fail "$1"
		head -20 "$TMP/tree.diff" | sed 's/^/#   /'
	fi
}
# same_as_hg BUNDLE DIR DESC: DIR's store holds what hg makes of BUNDLE
# in a new repository (v1: debugapplystreamclonebundle, v2: unbundle),
# but requires, which the former keeps from `hg init`, and the fncache,
# whose order is hg's own (compared sorted).
same_as_hg() {
	rm -rf "$TMP/hgref"
	hg init "$TMP/hgref"
	case $(head -c 4 "$1") in
	HG20) hg -R "$TMP/hgref" unbundle -q "$1" >/dev/null ;;
	*) hg -R "$TMP/hgref" debugapplystreamclonebundle "$1" >/dev/null ;;
	esac
	check "$3: same store files and bytes as hg's" \
		diff -r -x fncache -x 'undo*' -x phaseroots -x requires \
		-x cache "$TMP/hgref/.hg/store" "$2/.hg/store"
	eq "$3: same fncache entries as hg's" \
		"$(sort "$2/.hg/store/fncache" | md5sum)" \
		"$(sort "$TMP/hgref/.hg/store/fncache" | md5sum)"
}

# --- the repository and its bundles ----------------------------------------
hg init src
python3 "$FIX" tree src 0
hg -R src addremove -q && hg -R src commit -q -m 'rev 0' -d '0 0'
python3 "$FIX" tree src 1
hg -R src addremove -q && hg -R src commit -q -m 'rev 1' -d '1 0'
hg -R src tag -d '2 0' v1.0
python3 "$FIX" tree src 2
hg -R src addremove -q && hg -R src commit -q -m 'rev 2' -d '3 0'
hg -R src debugcreatestreamclonebundle "$TMP/v1.hg" >/dev/null
hg -R src bundle -q -a -t 'none-v2;stream=v2' "$TMP/v2.hg"
check "hg made a v1 stream bundle" test "$(head -c 6 v1.hg)" = HGS1UN
check "hg made a v2 stream bundle" test "$(head -c 4 v2.hg)" = HG20
NFILES=$(find src/.hg/store -type f | wc -l)
echo "# source: $NFILES store files"

if [ -n "$LINUX" ] && [ -x "$LINUX" ]; then
	"$LINUX" clone --no-log -q v1.hg linux-v1 && "$LINUX" clone --no-log -q v2.hg linux-v2
	check "Linux bgrun cloned both bundles" test -d linux-v1/.hg -a -d linux-v2/.hg
else
	LINUX=
	echo "# skipped: the Linux bgrun (no LINUX_BGRUN given, no \$BGRUN_LINUX_BGRUN): compared with hg's store only"
fi

# --- v1 and v2, on the writing thread and with the closer pool -------------
for v in v1 v2; do
	for how in plain pool; do
		d=win-$v-$how
		if [ $how = plain ]; then
			wclone -v --close-threads=0 $v.hg $d
		else
			wclone -v --close-threshold=1 $v.hg $d
		fi
		eq "$d: exit 0" "$RC" 0
		case $how in
		plain) want="0 closer threads" what="closed on the writing thread" ;;
		pool) want="4 closer threads" what="4 closer threads, the default count" ;;
		esac
		case $ERR in
		*"; $want"*) pass "$d: $what" ;;
		*) fail "$d: $what"; printf '#   %s\n' "$ERR" ;;
		esac
		same_as_hg $v.hg $d "$d"
		if [ -n "$LINUX" ]; then
			same_tree "$d: same files and bytes as the Linux bgrun's" \
				linux-$v $d
		fi
		eq "$d: no temporary left" "$(leftovers "$TMP")" 0
	done
done
check "the v1 clone passes hg verify" hg -q -R win-v1-pool verify
eq "the v1 clone's tip is the source's" "$(hg -R win-v1-pool log -r tip -T '{node}')" \
	"$(hg -R src log -r tip -T '{node}')"

# --- a path over 260 characters --------------------------------------------
# DEST's own directory is 240 characters below TMP: every file of the
# clone is then past MAX_PATH, the longest by the length of its store
# name (over 120 characters for the hashed dh/ names).
deep=$(printf 'd%.0s' {1..59})
deep="$deep/$deep/$deep/$deep"
mkdir -p "$deep"
wclone v1.hg "$deep/long"
eq "long path: exit 0" "$RC" 0
longest=$(cd "$deep/long" && find . -type f | awk '{ print length($0) }' | sort -n | tail -1)
winlen=$(( ${#TMP} + 3 + ${#deep} + 5 + longest - 1 ))
check "long path: the longest file's Windows path is over 260 characters ($winlen)" \
	test "$winlen" -gt 260
same_as_hg v1.hg "$deep/long" "long path"

# --- a bundle on standard input, a URL, a hook -------------------------------
wine "$EXE" clone -q - stdin-clone <v1.hg >"$TMP/.stdout" 2>"$TMP/.stderr"
eq "stdin: exit 0" "$?" 0
same_as_hg v1.hg stdin-clone "stdin"

# --- the owner file: a running clone's temporary is left, a killed one's removed
# A clone reading its bundle from a FIFO kept open waits inside its
# temporary directory, its owner file beside (locked, pid and creation time).
# started PATTERN: polls (30 s deadline) for the temporary and its owner file.
started() {
	local deadline=$((SECONDS + 30))
	until compgen -G "$1.owner" >/dev/null && [ "$(temporaries "$TMP")" = 1 ]; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}
for how in running killed; do
	mkfifo "$TMP/fifo-$how"
	wine "$EXE" clone -q - $how <"$TMP/fifo-$how" >"$TMP/$how.out" 2>"$TMP/$how.err" &
	pid=$!
	KILL_PIDS+=("$pid")
	exec 3>"$TMP/fifo-$how"
	head -c 300 v1.hg >&3
	check "$how: the clone is under way" started ".$how.clone-*"
	if [ $how = killed ]; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null # bash's "Killed" line
		exec 3>&-
	fi
	wclone --cleanup $how
	eq "$how: --cleanup exit 0" "$RC" 0
	if [ $how = running ]; then
		eq "$how: --cleanup leaves its temporary and owner file" "$(temporaries "$TMP"):$(leftovers "$TMP")" 1:2
		tail -c +301 v1.hg >&3
		exec 3>&-
		wait "$pid"
		eq "$how: the clone then finishes (exit 0)" "$?" 0
		same_as_hg v1.hg running "$how"
	else
		case $ERR in
		"bgrun: clone: removed .killed.clone-"*", left by a killed clone (pid "*")")
			pass "$how: --cleanup removes its temporary and says so" ;;
		*) fail "$how: --cleanup removes its temporary and says so"
		   printf '#   %s\n' "$ERR" ;;
		esac
	fi
	eq "$how: no temporary left" "$(leftovers "$TMP")" 0
	KILL_PIDS=()
done

wclone https://example.invalid/repo url-clone
eq "URL: exit 1" "$RC" 1
eq "URL: one line" "$ERR_LINES" 1
case $ERR in
*"not supported in this build (Windows)"*) pass "URL: says a server is not supported on Windows" ;;
*) fail "URL: says a server is not supported on Windows"; printf '#   %s\n' "$ERR" ;;
esac
check "URL: no DEST" test ! -e url-clone

# The hook runs detached (cmd.exe, no console): it leaves a file, polled
# for with a deadline; HG_FILES is the clone's count.
wclone -q --wait --hook='echo %HG_HOOKNAME% %HG_FILES%> hooked.txt' v1.hg hooked
eq "hook: exit 0 (--wait: it succeeded)" "$RC" 0
files=$(find hooked/.hg/store -type f ! -name fncache ! -name requires | wc -l)
eq "hook: ran in DEST with the clone's environment" \
	"$(tr -d '\r' <hooked/hooked.txt 2>/dev/null)" "post-clone.cli1 $files"

# --- the records: the clones above in BGRUN_DB, one with --db and its
# hook (run by bgrun-supervise.exe, as a logged launch) ---
wclone -q --db=clones.db --wait --hook='echo recorded> hook2.txt' v1.hg recorded
eq "recorded: exit 0" "$RC" 0
eq "recorded: the hook ran" "$(tr -d '\r' <recorded/hook2.txt 2>/dev/null)" recorded
# rows DB SQL: the rows, one per line, fields joined by |.
rows() {
	python3 - "$1" "$2" <<-'PY'
	import sqlite3, sys
	db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
	for r in db.execute(sys.argv[2]):
	    print("|".join("" if v is None else str(v) for v in r))
	PY
}
eq "recorded: the clone's row (event clone, success, exit 0, DEST its cwd)" \
	"$(rows clones.db "SELECT event, source, result, exit_code, cwd LIKE '%recorded' FROM events WHERE event = 'clone'")" \
	"clone|bgrun|success|0|1"
check "recorded: the clone's row has its files and bytes" \
	test -n "$(rows clones.db "SELECT 1 FROM events WHERE event = 'clone' AND json_extract(options, '$.files') > 0 AND json_extract(options, '$.bytes') > 0")"
eq "recorded: the hook's row (tagged with its name, success, exit 0)" \
	"$(rows clones.db "SELECT tag, result, exit_code FROM events WHERE event != 'clone'")" \
	"post-clone.cli1|success|0"
eq "recorded: the clones before, in BGRUN_DB (v1 and v2 twice, long path, stdin, running, hooked: success)" \
	"$(rows events.db "SELECT count(*) FROM events WHERE event = 'clone' AND result = 'success'")" 8
eq "recorded: the --wait hook before, in BGRUN_DB" \
	"$(rows events.db "SELECT tag, result FROM events WHERE event != 'clone' AND tag LIKE 'post-clone%'")" \
	"post-clone.cli1|success"

finish
