#!/bin/bash
# SPDX-License-Identifier: MIT
# test-clone.sh: `bgrun clone` against the real Mercurial: bundles made by hg, clones checked by hg, every bad input, the hooks.
#
# Usage: test-clone.sh BGRUN CLONE_HELPER CLONE_FIXTURES_PY (meson passes
# them). Repositories are made with Debian's hg (HGRCPATH private), bundled
# with `hg debugcreatestreamclonebundle`, applied with `bgrun clone`, and
# the clone is checked by `hg verify` and compared with the source (log,
# files and contents of every revision) and with the store that
# `hg debugapplystreamclonebundle` makes from the same bundle. The checks
# are lib.sh's ("ok - ..." / "not ok - ..."); the exit status is 1 if any
# failed, 77 if hg, python3 or sqlite3 is missing. Nothing sleeps to
# synchronise: detached hooks are waited for by polling their traces with
# a deadline.

set -u

BGRUN=${1:?usage: test-clone.sh BGRUN CLONE_HELPER FIXTURES}
HELPER=${2:?usage: test-clone.sh BGRUN CLONE_HELPER FIXTURES}
FIX=${3:?usage: test-clone.sh BGRUN CLONE_HELPER FIXTURES}
CLONE_NEEDS="hg python3 sqlite3"
. "$(dirname "$0")/clone-lib.sh"

export BGRUN_DB=$TMP/events.db
LOGSINK=$(dirname "$BGRUN")/../logsink/logsink

# run ARGS...: bgrun clone ARGS; sets RC, OUT, ERR, OUT_LINES, ERR_LINES.
run() { capture "$BGRUN" clone "$@"; }
# poll DESC COMMAND...: polls COMMAND until it succeeds (30 s deadline).
# COMMAND is run again each time: a value to watch goes in a function, not
# in a $(...) argument, which would be expanded once, before the first try.
poll() {
	local d=$1 deadline=$((SECONDS + 30))
	shift
	until "$@"; do
		if [ $SECONDS -ge $deadline ]; then
			fail "$d (timed out)"
			return 1
		fi
		sleep 0.02
	done
	pass "$d"
}
# sql QUERY: the query's rows. A writer (a hook's recorder) may hold the
# database for a moment: the CLI waits for it instead of failing at once.
sql() { sqlite3 -batch -noheader -cmd '.timeout 10000' "$BGRUN_DB" "$1"; }
# is N COMMAND...: whether COMMAND prints N (run anew each time by poll).
is() { local want=$1; shift; test "$("$@")" = "$want"; }

# --- the pieces ------------------------------------------------------------
check "store path encoding agrees with Mercurial's (C and pure Python)" \
	python3 "$FIX" encode "$HELPER"
for n in 0 3 55 56 64 65 1000; do
	head -c $n /dev/urandom >"$TMP/r"
	eq "sha1 of $n bytes" "$("$HELPER" sha1 <"$TMP/r")" \
		"$(sha1sum <"$TMP/r" | cut -d' ' -f1)"
done
check "closer pool: every descriptor closed, first error kept" \
	"$HELPER" closer

# --- a repository with everything the store encoding cares about ------------
hg init src
python3 "$FIX" tree src 0
hg -R src addremove -q && hg -R src commit -q -m 'rev 0' -d '0 0'
python3 "$FIX" tree src 1
hg -R src mv -q src/src/mod0/sub0/file0000.c 'src/Moved File.C'
hg -R src cp -q src/README.TXT 'src/COPY of README'
hg -R src addremove -q && hg -R src commit -q -m 'rev 1' -d '1 0'
hg -R src tag -d '2 0' v1.0
hg -R src branch -q stable
python3 "$FIX" tree src 2
hg -R src addremove -q && hg -R src commit -q -m 'rev 2 on stable' -d '3 0'
hg -R src debugcreatestreamclonebundle "$TMP/rich.hg" >/dev/null
check "hg made a stream clone bundle v1" \
	test "$(head -c 6 "$TMP/rich.hg")" = HGS1UN
# The reference: the same bundle applied by Mercurial itself.
hg init ref && hg -R ref debugapplystreamclonebundle "$TMP/rich.hg" >/dev/null

NFILES=$(find src/.hg/store/data -type f | wc -l)
TIP_FILES=$(hg -R src files -r tip | wc -l)
echo "# source: $TIP_FILES files at tip, $NFILES filelog files"

# same_store DIR DESC: DIR's store holds the files and fncache of ref's.
same_store() {
	local d=$1 desc=$2
	check "$desc: same store files and bytes as hg's" \
		diff -r -x fncache -x requires -x undo\* -x phaseroots \
		-x cache "$TMP/ref/.hg/store" "$d/.hg/store"
	eq "$desc: same fncache entries as hg's" \
		"$(sort "$d/.hg/store/fncache" | md5sum)" \
		"$(sort "$TMP/ref/.hg/store/fncache" | md5sum)"
}

# compare DIR DESC: hg verify passes and DIR shows what src shows.
compare() {
	local d=$1 desc=$2 rev
	local tmpl='{rev}:{node} {branch} {tags} {author} {date|hgdate} {desc}\n{file_adds} / {file_dels} / {file_mods} / {file_copies}\n'
	check "$desc: hg verify" hg -q -R "$d" verify
	eq "$desc: .hg/requires" "$(cat "$d/.hg/requires")" "share-safe"
	eq "$desc: .hg/store/requires" "$(tr '\n' ' ' <"$d/.hg/store/requires")" \
		"dotencode fncache generaldelta revlog-compression-zstd revlogv1 sparserevlog store "
	eq "$desc: hg log" "$(hg -R "$d" log -T "$tmpl")" \
		"$(hg -R src log -T "$tmpl")"
	for rev in 0 1 2 3; do
		eq "$desc: hg files -r $rev" "$(cd "$d" && hg files -r $rev | md5sum)" \
			"$(cd src && hg files -r $rev | md5sum)"
	done
	rm -rf "$TMP/cat-a" "$TMP/cat-b"
	(cd src && hg cat -r tip -o "$TMP/cat-a/%p" 'glob:**')
	(cd "$d" && hg cat -r tip -o "$TMP/cat-b/%p" 'glob:**')
	check "$desc: hg cat of every file at tip" diff -r "$TMP/cat-a" "$TMP/cat-b"
	for rev in 0 1; do
		rm -rf "$TMP/arch-a" "$TMP/arch-b"
		hg -R src archive -q -r $rev --no-decode -t files "$TMP/arch-a"
		hg -R "$d" archive -q -r $rev --no-decode -t files "$TMP/arch-b"
		check "$desc: every file of rev $rev" diff -r "$TMP/arch-a" "$TMP/arch-b"
	done
}

run "$TMP/rich.hg" dst
eq "clone: exit 0" "$RC" 0
eq "clone: nothing on stderr without a terminal" "$ERR" ""
check "clone: one summary line 'N files, X MB in T s'" \
	grep -Eq '^[0-9]+ files, [0-9.]+ MB in [0-9.]+ s \([0-9.]+ MB/s\)$' "$TMP/.stdout"
compare dst "clone"
same_store dst "clone"
eq "clone: no temporary directory left" "$(leftovers "$TMP")" 0
# dense FILE: every byte of FILE has blocks behind it (no holes).
dense() { [ $(($(stat -c '%b * %B' "$1"))) -ge "$(stat -c %s "$1")" ]; }
check "clone: the large revlog is dense" dense dst/.hg/store/data/blobs/big.bin.d
check "clone: every store file is dense" \
	test -z "$(find dst/.hg/store -type f -size +4k | while read -r f; do dense "$f" || echo "$f"; done)"

# Every way of writing gives the same store.
i=0
for opts in "--close-threads 0" "--close-threads 3 --close-threshold 1" \
	"--close-threads 1 --close-threshold 1 --chunk-size 4K" \
	"--write-threads 0 --close-threshold 1" \
	"--write-threads 1 --close-threshold 1 --chunk-size 4K" \
	"--write-threads 3 --close-threads 0 --close-threshold 1 --chunk-size 512" \
	"--chunk-size 32K" "--chunk-size 8M" "--copy-file-range" \
	"--copy-file-range --chunk-size 512 --close-threshold 1"; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	run $opts "$TMP/rich.hg" "w$i"
	eq "clone $opts: exit 0" "$RC" 0
	same_store "w$i" "clone $opts"
done
capture "$BGRUN" clone - from-pipe < <(cat "$TMP/rich.hg")
eq "clone from a pipe: exit 0" "$RC" 0
same_store from-pipe "clone from a pipe"
"$BGRUN" clone --copy-file-range - from-file <"$TMP/rich.hg" >/dev/null
eq "clone from stdin as a file: exit 0" "$?" 0
same_store from-file "clone from stdin as a file"
compare from-pipe "clone from a pipe"

# -v says what it does; on a terminal there is progress.
run -v "$TMP/rich.hg" verbose
check "-v: the bundle's counts" grep -q 'bgrun: clone: .*rich.hg: [0-9]* files' "$TMP/.stderr"
check "-v: the requirements and settings" grep -q 'requirements dotencode,' "$TMP/.stderr"
run -q "$TMP/rich.hg" quiet
eq "-q: no summary" "$OUT" ""
script -qec "$BGRUN clone $TMP/rich.hg $TMP/tty" /dev/null >"$TMP/tty.out" 2>&1
check "on a terminal: progress with files, bytes, rate and ETA" \
	grep -aEq '[0-9]+/[0-9]+ files, .* MB/s, ETA' "$TMP/tty.out"
check "on a terminal: the clone is complete" hg -q -R tty verify

# --- destinations ----------------------------------------------------------
mkdir empty-dest
run "$TMP/rich.hg" empty-dest
eq "an empty DEST directory: exit 0" "$RC" 0
check "an empty DEST directory: cloned into" test -f empty-dest/.hg/store/fncache
mkdir full-dest && echo keep >full-dest/file
run "$TMP/rich.hg" full-dest
eq "a non-empty DEST: exit 1" "$RC" 1
eq "a non-empty DEST: one line" "$ERR" \
	"bgrun: clone: full-dest: the destination exists and is not empty"
eq "a non-empty DEST: left alone" "$(ls -A full-dest)" "file"
echo x >a-file
run "$TMP/rich.hg" a-file
eq "DEST a file: exit 1" "$RC" 1
eq "DEST a file: one line" "$ERR_LINES" 1
mkdir linked-dir && ln -s linked-dir a-link
run "$TMP/rich.hg" a-link
eq "DEST a symbolic link to an empty directory: exit 1" "$RC" 1
eq "DEST a symbolic link to an empty directory: refused" "$ERR" \
	"bgrun: clone: a-link: the destination exists and is not a directory"
eq "DEST a symbolic link: the directory left alone" "$(ls -A linked-dir)" ""
run "$TMP/rich.hg" no/such/parent
eq "DEST in a missing directory: exit 1" "$RC" 1
eq "DEST in a missing directory: one line" "$ERR_LINES" 1
run "$TMP/no-such-bundle" nb
eq "a missing bundle: exit 1" "$RC" 1
eq "a missing bundle: message" "$ERR" \
	"bgrun: clone: $TMP/no-such-bundle: No such file or directory"
check "a missing bundle: no DEST" test ! -e nb
run
expect_usage "no arguments" "bgrun: clone: missing BUNDLE or DEST"
eq "failed clones: no temporary directory left" "$(leftovers "$TMP")" 0

# --- other requirements ------------------------------------------------------
# mini REPO CONFIG...: a small repository with these format options.
mini() {
	local r=$1
	shift
	hg "$@" init "$r"
	mkdir -p "$r/Dir/sub.i" "$r/x.d"
	echo a >"$r/Dir/sub.i/A.txt"
	echo b >"$r/x.d/aux.c"
	echo c >"$r/plain"
	hg -R "$r" "$@" commit -q -A -m one -d '0 0'
	echo more >>"$r/plain"
	hg -R "$r" "$@" commit -q -m two -d '1 0'
	hg -R "$r" "$@" debugcreatestreamclonebundle "$TMP/$r.hg" >/dev/null
}
# same_as_hg_v1 BUNDLE DIR DESC: DIR holds what hg makes of BUNDLE
# (but requires: debugapplystreamclonebundle keeps the repository's own,
# where `hg clone --stream` takes the bundle's, as the clone does).
same_as_hg_v1() {
	rm -rf "$TMP/hgref1"
	hg init "$TMP/hgref1"
	hg -R "$TMP/hgref1" debugapplystreamclonebundle "$1" >/dev/null
	check "$3: same store files and bytes as hg's" \
		diff -r -x fncache -x 'undo*' -x phaseroots -x requires \
		"$TMP/hgref1/.hg/store" "$2/.hg/store"
	eq "$3: same fncache entries as hg's" \
		"$(sort "$2/.hg/store/fncache" | md5sum)" \
		"$(sort "$TMP/hgref1/.hg/store/fncache" | md5sum)"
	check "$3: hg verify" hg -q -R "$2" verify
}
mini zlib --config format.revlog-compression=zlib
run "$TMP/zlib.hg" zlib-clone
eq "zlib bundle: exit 0" "$RC" 0
eq "zlib bundle: store requirements without zstd" \
	"$(tr '\n' ' ' <zlib-clone/.hg/store/requires)" \
	"dotencode fncache generaldelta revlogv1 sparserevlog store "
check "zlib bundle: hg verify" hg -q -R zlib-clone verify
mini tree --config experimental.treemanifest=1
run "$TMP/tree.hg" tree-clone
eq "treemanifest bundle: exit 0" "$RC" 0
check "treemanifest bundle: requirement kept" grep -qx treemanifest tree-clone/.hg/store/requires
check "treemanifest bundle: meta/ in the fncache" grep -q '^meta/' tree-clone/.hg/store/fncache
check "treemanifest bundle: hg verify" hg -q -R tree-clone verify
eq "treemanifest bundle: hg log" "$(hg -R tree-clone log -T '{node}\n')" \
	"$(hg -R tree log -T '{node}\n')"
# Persistent nodemaps exist once the changelog is too big to be inline.
NM=(--config format.use-persistent-nodemap=yes
	--config storage.revlog.persistent-nodemap.slow-path=allow)
hg "${NM[@]}" init nodemap
for i in 1 2 3; do
	echo $i >>nodemap/file
	head -c 60000 /dev/urandom | base64 >"$TMP/msg"
	hg -R nodemap "${NM[@]}" commit -q -A -l "$TMP/msg"
done
hg -R nodemap "${NM[@]}" debugcreatestreamclonebundle "$TMP/nodemap.hg" >/dev/null
check "nodemap bundle: carries 00changelog.n" grep -aq '00changelog.n' "$TMP/nodemap.hg"
run "$TMP/nodemap.hg" nodemap-clone
eq "nodemap bundle: exit 0" "$RC" 0
check "nodemap bundle: nodemaps dropped, as hg's post_stream_cleanup does" \
	test -z "$(find nodemap-clone/.hg/store -name '*.n' -o -name '*.nd')"
check "nodemap bundle: hg verify" hg -q -R nodemap-clone verify
eq "nodemap bundle: hg log" "$(hg -R nodemap-clone log -T '{node}\n')" \
	"$(hg -R nodemap "${NM[@]}" log -T '{node}\n')"
# A bundle that requires persistent-nodemap (older hg wrote that): applied
# without it, nodemaps dropped, as hg's debugapplystreamclonebundle does.
python3 "$FIX" setreq "$TMP/nodemap.hg" "$TMP/nmreq.hg" \
	"generaldelta,persistent-nodemap,revlog-compression-zstd,revlogv1,sparserevlog"
run "$TMP/nmreq.hg" nmreq-clone
eq "persistent-nodemap required: exit 0" "$RC" 0
check "persistent-nodemap required: the nodemaps dropped" \
	test ! -e nmreq-clone/.hg/store/00changelog.n
eq "persistent-nodemap required: the requirement dropped" \
	"$(grep -c persistent-nodemap nmreq-clone/.hg/store/requires)" 0
same_as_hg_v1 "$TMP/nmreq.hg" nmreq-clone "persistent-nodemap required"
mini small
python3 "$FIX" setreq "$TMP/small.hg" "$TMP/v2.hg" "generaldelta,revlogv1,exp-revlogv2.2,narrowhg-experimental"
run "$TMP/v2.hg" v2-clone
eq "unsupported requirements: exit 1" "$RC" 1
eq "unsupported requirements: message" "$ERR" \
	"bgrun: clone: $TMP/v2.hg: offset 24: unsupported requirements: exp-revlogv2.2 (the experimental revlog v2, unstable: docket files naming data files), narrowhg-experimental"
check "unsupported requirements: no DEST" test ! -e v2-clone
python3 "$FIX" setreq "$TMP/small.hg" "$TMP/cl2.hg" "generaldelta,revlogv1,exp-changelog-v2,exp-copies-sidedata-changeset"
run "$TMP/cl2.hg" cl2-clone
eq "changelog v2: refused, saying why" "$ERR" \
	"bgrun: clone: $TMP/cl2.hg: offset 24: unsupported requirements: exp-changelog-v2 (the experimental changelog v2, a format hg 6.3 enables only as 'enable-unstable-format-and-corrupt-my-data'), exp-copies-sidedata-changeset (copies kept in changeset sidedata, which lives in the experimental changelog v2)"

# A file name with a backslash (legal here): hg stores data/dir~5c....
hg init bs
mkdir bs/dir
echo x >'bs/dir/back\slash.txt'
hg -R bs commit -q -A -m bs -d '0 0'
hg -R bs debugcreatestreamclonebundle "$TMP/bs.hg" >/dev/null
run "$TMP/bs.hg" bs-clone
eq "a backslash in a file name: exit 0" "$RC" 0
check "a backslash in a file name: stored as hg does" \
	test -f 'bs-clone/.hg/store/data/dir/back~5cslash.txt.i'
same_as_hg_v1 "$TMP/bs.hg" bs-clone "a backslash in a file name"
eq "a backslash in a file name: hg files" "$(cd bs-clone && hg files -r tip)" 'dir/back\slash.txt'
# The archived phase (format.exp-archived-phase): applied, as hg does.
mini archived --config format.exp-archived-phase=yes
check "archived: the bundle requires exp-archived-phase" \
	grep -aq exp-archived-phase "$TMP/archived.hg"
run "$TMP/archived.hg" archived-clone
eq "archived: exit 0" "$RC" 0
check "archived: the requirement kept" grep -qx exp-archived-phase archived-clone/.hg/store/requires
same_as_hg_v1 "$TMP/archived.hg" archived-clone "archived"

# --- bad input ----------------------------------------------------------------
python3 "$FIX" bad "$TMP/small.hg" "$TMP/bad"
touch "$TMP/before-bad"
bad_bundles
# The same errors, at the same offsets, when writer threads write the
# files (each directory's in order; a file in the way of a directory
# waited for).
run() { capture "$BGRUN" clone --write-threads 2 --close-threshold 1 "$@"; }
bad_bundles "(writer threads)"
run() { capture "$BGRUN" clone "$@"; }
eq "bad input: nothing written outside the temporary directory" \
	"$(find "$TMP" -newer "$TMP/before-bad" -name 'escape*' | wc -l)" 0

# A close that fails in the background fails the clone.
capture "$HELPER" failclose "$TMP/rich.hg" "$TMP/fc" 7
eq "a failed background close: bgrun_clone gives -EIO" "$RC" 0
check "a failed background close: said so" grep -q 'cannot close' "$TMP/.stdout"
check "a failed background close: no DEST" test ! -e "$TMP/fc"
eq "a failed background close: no temporary directory" "$(leftovers "$TMP")" 0
# ... and one that fails on a writer thread, which closes its files itself.
capture "$HELPER" failclose "$TMP/rich.hg" "$TMP/fc" 7 0 2
eq "a failed close on a writer thread: bgrun_clone gives -EIO" "$RC" 0
check "a failed close on a writer thread: the entry at its offset" \
	grep -Eq 'offset [0-9]+: cannot close [^ ]+: Input/output error' "$TMP/.stdout"
check "a failed close on a writer thread: no DEST" test ! -e "$TMP/fc"
eq "a failed close on a writer thread: no temporary directory" "$(leftovers "$TMP")" 0

# A write that fails on a writer thread (over the file size limit: EFBIG,
# with SIGXFSZ ignored): one line naming the first entry over it, at its
# offset, as on one thread; nothing left.
"$HELPER" bundle "$TMP/rich.hg" >"$TMP/rich.list"
# "OFFSET NAME SIZE" lines after the header's.
big=$(awk 'NR > 1 && $NF > max { max = $NF } END { print max }' "$TMP/rich.list")
limit=$(((big - 1) / 1024))
want=$(awk -v l=$((limit * 1024)) 'NR > 1 && $NF > l {
	n = $0; sub(/^[0-9]+ /, "", n); sub(/ [0-9]+$/, "", n); print "offset " $1 ": cannot write " n; exit }' \
	"$TMP/rich.list")
for opts in "--write-threads 2 --close-threshold 1" \
	"--write-threads 3 --close-threads 0 --close-threshold 1 --chunk-size 4K" \
	"--write-threads 0"; do
	# shellcheck disable=SC2086
	capture bash -c 'trap "" XFSZ; ulimit -f "$1"; shift; exec "$@"' - "$limit" \
		"$BGRUN" clone --no-log $opts "$TMP/rich.hg" efbig
	eq "a failed write ($opts): exit 1" "$RC" 1
	eq "a failed write ($opts): one line" "$ERR" \
		"bgrun: clone: $TMP/rich.hg: $want: File too large"
	check "a failed write ($opts): no DEST" test ! -e efbig
	eq "a failed write ($opts): no temporary directory" "$(leftovers "$TMP")" 0
done

# Interrupted while the bundle trickles in through a FIFO.
interrupted "$TMP/rich.hg"

# --- hooks -------------------------------------------------------------------
cat >"$TMP/hooks.rc" <<EOF
# hooks for the test
[ui]
username = nobody
[hooks]
post-clone.first = env >"\$HG_DEST/first.env"; pwd >"\$HG_DEST/first.pwd"
post-clone = echo unnamed >unnamed.txt
priority.post-clone.zlast = -5
post-clone.zlast = echo z >zlast.txt
post-clone.disabled =
post-clone.py = python:nosuch.hook
fail-clone.report = env >"$TMP/fail.env"
pre-clone = echo never >"$TMP/never.txt"
EOF
run --config "$TMP/hooks.rc" --hook 'echo cli >cli.txt' "$TMP/rich.hg" hooked
eq "hooks: the clone succeeds" "$RC" 0
eq "hooks: a hook that cannot start is reported" "$ERR" \
	"bgrun: clone: hook post-clone.py cannot start: python hooks are not supported"
poll "hooks: post-clone.first ran" test -s hooked/first.pwd
poll "hooks: post-clone ran" test -s hooked/unnamed.txt
poll "hooks: --hook ran" test -s hooked/cli.txt
poll "hooks: post-clone.zlast ran" test -s hooked/zlast.txt
eq "hooks: run in DEST" "$(cat hooked/first.pwd)" "$TMP/hooked"
envline() { grep "^$1=" hooked/first.env; }
eq "hooks: HG_HOOKTYPE" "$(envline HG_HOOKTYPE)" "HG_HOOKTYPE=post-clone"
eq "hooks: HG_HOOKNAME" "$(envline HG_HOOKNAME)" "HG_HOOKNAME=post-clone.first"
eq "hooks: HG_DEST" "$(envline HG_DEST)" "HG_DEST=$TMP/hooked"
eq "hooks: HG_SOURCE" "$(envline HG_SOURCE)" "HG_SOURCE=$TMP/rich.hg"
eq "hooks: HG_FILES" "$(envline HG_FILES)" \
	"HG_FILES=$(find hooked/.hg/store -type f ! -name fncache ! -name requires | wc -l)"
check "hooks: HG_BYTES" grep -Eq '^HG_BYTES=[0-9]{7,}$' hooked/first.env
check "hooks: HG_SECONDS" grep -Eq '^HG_SECONDS=[0-9]+\.[0-9]{3}$' hooked/first.env
eq "hooks: HG_RESULT" "$(envline HG_RESULT)" "HG_RESULT=0"
check "hooks: the caller's environment too" grep -q "^BGRUN_DB=$BGRUN_DB$" hooked/first.env
hook_rows() {
	sql "SELECT count(*) FROM events WHERE source = 'clone-hook' AND result = 'success';"
}
poll "hooks: four finishes recorded with source clone-hook" is 4 hook_rows
eq "hooks: launched in order (priority, then definition)" \
	"$(sql "SELECT tag FROM events WHERE source = 'clone-hook' ORDER BY start_ns;" | tr '\n' ' ')" \
	"post-clone.first post-clone post-clone.cli1 post-clone.zlast "
eq "hooks: recorded as commandfinish events in DEST" \
	"$(sql "SELECT DISTINCT event || ' ' || cwd FROM events WHERE source = 'clone-hook';")" \
	"commandfinish $TMP/hooked"
eq "hooks: the clone recorded too" \
	"$(sql "SELECT event || ' ' || source || ' ' || result || ' ' || cwd FROM events WHERE event = 'clone' AND cwd = '$TMP/hooked';")" \
	"clone bgrun success $TMP/hooked"
check "hooks: the clone event's message has the counts" \
	test -n "$(sql "SELECT 1 FROM events WHERE event = 'clone' AND cwd = '$TMP/hooked' AND message GLOB '[0-9]* files, * MB in * s';")"
if [ -x "$LOGSINK" ]; then
	eq "hooks: logsink query --source clone-hook" \
		"$("$LOGSINK" query --source clone-hook --json | grep -c '"source":"clone-hook"')" 4
fi
check "hooks: no hook for another event" test ! -e "$TMP/never.txt"
check "hooks: fail-clone did not run" test ! -e "$TMP/fail.env"

run --config "$TMP/hooks.rc" "$TMP/bad/trunc-name.hg" failed-dest
eq "fail-clone: the clone fails" "$RC" 1
poll "fail-clone: the hook ran" test -s "$TMP/fail.env"
check "fail-clone: HG_HOOKTYPE" grep -qx 'HG_HOOKTYPE=fail-clone' "$TMP/fail.env"
check "fail-clone: HG_ERROR names the problem" \
	grep -q '^HG_ERROR=.*offset 14: truncated' "$TMP/fail.env"
check "fail-clone: HG_RESULT" grep -qx 'HG_RESULT=1' "$TMP/fail.env"
eq "fail-clone: the failed clone recorded" \
	"$(sql "SELECT result FROM events WHERE event = 'clone' AND cwd = '$TMP/failed-dest';")" \
	failed
poll "fail-clone: the hook's finish recorded" is 1 sql \
	"SELECT count(*) FROM events WHERE tag = 'fail-clone.report' AND result = 'success';"
check "fail-clone: no post-clone hook" test ! -e failed-dest

before=$(sql "SELECT count(*) FROM events;")
run --no-log --hook 'echo x >nolog.txt' "$TMP/small.hg" nolog
eq "--no-log: exit 0" "$RC" 0
poll "--no-log: the hook ran" test -s nolog/nolog.txt
eq "--no-log: nothing recorded" "$(sql "SELECT count(*) FROM events;")" "$before"

printf '[hooks]\n  indented = 1\n' >"$TMP/broken.rc"
run --config "$TMP/broken.rc" "$TMP/small.hg" broken
eq "a broken config: exit 1" "$RC" 1
eq "a broken config: message" "$ERR" \
	"bgrun: clone: $TMP/broken.rc:2: parse error (unexpected leading whitespace)"
check "a broken config: nothing cloned" test ! -e broken
# A file that is not a config (someone's secret): its position, never its text.
printf 'root:$6$secret-hash-text:19000:0:99999:7:::\n' >"$TMP/secret"
run --config "$TMP/secret" "$TMP/small.hg" secret
eq "--config of a file that is not one: exit 1" "$RC" 1
eq "--config of a file that is not one: the position only" "$ERR" \
	"bgrun: clone: $TMP/secret:1: parse error"
run --config "$TMP/no-such.rc" "$TMP/small.hg" nosuch
eq "--config of a missing file: exit 1" "$RC" 1
eq "--config of a missing file: says so" "$ERR" \
	"bgrun: clone: $TMP/no-such.rc: No such file or directory"

# The user's bgrun configuration file: its [hooks] run, before --config's.
printf '[hooks]\npost-clone.user = echo user >user.txt\n  echo line2 >>user.txt\n' >"$TMP/user.rc"
BGRUN_CONFIG=$TMP/user.rc run --no-log --wait "$TMP/small.hg" userhooks
eq "the user's config: exit 0" "$RC" 0
eq "the user's config: its [hooks] ran (waited for), continuation lines joined" \
	"$(cat userhooks/user.txt | tr '\n' ' ')" "user line2 "
printf '[hooks]\npost-clone.user = exit 9\n' >"$TMP/user.rc"
BGRUN_CONFIG=$TMP/user.rc run --no-log --wait --config "$TMP/override.rc" "$TMP/small.hg" userhooks2
eq "the user's config, then a missing --config: exit 1" "$RC" 1
printf '[hooks]\npost-clone.user =\n' >"$TMP/override.rc"
BGRUN_CONFIG=$TMP/user.rc run --no-log --wait --config "$TMP/override.rc" "$TMP/small.hg" userhooks3
eq "--config disables a hook of the user's config (empty command): exit 0" "$RC" 0
printf 'oops\n' >"$TMP/user.rc"
BGRUN_CONFIG=$TMP/user.rc run --no-log "$TMP/small.hg" userbroken
eq "a broken user config: exit 2" "$RC" 2
eq "a broken user config: one line, its position" "$ERR" \
	"bgrun: $TMP/user.rc:1: parse error"
check "a broken user config: nothing cloned" test ! -e userbroken

finish
