#!/bin/bash
# SPDX-License-Identifier: MIT
# test-clone-http.sh: `bgrun clone http://...` against a real `hg serve` (compared with `hg clone --stream -U`) and hostile servers.
#
# Usage: test-clone-http.sh BGRUN FAKE_SERVER_PY (meson passes them).
# `hg serve` listens on 127.0.0.1, on a port it picks (-p 0), and is
# stopped at the end; clone-fake-hg.py answers as broken servers do. The
# exit status is 1 if any check failed, 77 if hg or python3 is missing or
# bgrun was built without libcurl.

set -u

BGRUN=${1:?usage: test-clone-http.sh BGRUN FAKE_SERVER}
FAKE=${2:?usage: test-clone-http.sh BGRUN FAKE_SERVER}
for p in hg python3; do
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

run() { capture "$BGRUN" clone --no-log "$@"; }
leftovers() { find "$1" -maxdepth 1 -name '.*.clone-*' | wc -l; }

run http://127.0.0.1:1/ probe
if grep -q 'needs libcurl' "$TMP/.stderr"; then
	echo "# skipped: bgrun was built without libcurl"
	exit 77
fi

# A repository with awkward names, a tag, a branch, cache files.
hg init src
mkdir -p src/Dir/sub.i src/x.d 'src/with space'
echo a >src/Dir/sub.i/A.txt
echo b >src/x.d/aux.c
echo c >'src/with space/Caf'$'\xc3\xa9''.TXT'
for i in $(seq 1 300); do echo "$i" >"src/Dir/f$i"; done
hg -R src commit -q -A -m one -d '0 0'
hg -R src tag -d '1 0' v1
hg -R src branch -q stable
echo more >>src/x.d/aux.c
hg -R src commit -q -m two -d '2 0'

hg -R src serve -a 127.0.0.1 -p 0 -d --pid-file "$TMP/serve.pid" >"$TMP/serve.out" 2>&1
KILL_PIDS+=("$(cat "$TMP/serve.pid")")
PORT=$(sed -n 's/.*bound to 127\.0\.0\.1:\([0-9]*\)).*/\1/p' "$TMP/serve.out")
check "hg serve listens on a port of its choosing" test -n "$PORT"
URL=http://127.0.0.1:$PORT/

run -v "$URL" dst
eq "clone from hg serve: exit 0" "$RC" 0
check "clone from hg serve: a stream bundle v2" grep -q 'stream bundle v2' "$TMP/.stderr"
hg clone -q --stream -U "$URL" ref
check "same store files and bytes as hg clone --stream -U" \
	diff -r -x fncache -x 'undo*' ref/.hg/store dst/.hg/store
eq "same fncache entries" "$(sort dst/.hg/store/fncache | md5sum)" \
	"$(sort ref/.hg/store/fncache | md5sum)"
eq "same .hg/requires" "$(cat dst/.hg/requires)" "$(cat ref/.hg/requires)"
bad=
for f in dst/.hg/cache/*; do
	cmp -s "$f" "ref/.hg/cache/${f##*/}" || bad="$bad ${f##*/}"
done
eq "every cache file as hg's" "$bad" ""
check "the cache files came too" test -s dst/.hg/cache/rbc-names-v1
eq "same paths" "$(hg -R dst paths)" "$(hg -R ref paths)"
check "hg verify" hg -q -R dst verify
eq "same hg log" "$(hg -R dst log -T '{node} {phase} {tags} {branch}\n')" \
	"$(hg -R ref log -T '{node} {phase} {tags} {branch}\n')"
eq "same bookmarks (none)" "$(hg -R dst bookmarks)" "$(hg -R ref bookmarks)"
check "hg pull afterwards: no changes found" \
	grep -q 'no changes found' <(hg -R dst pull 2>&1)
hg -R dst incoming -q >/dev/null 2>&1
eq "hg incoming afterwards: nothing (exit 1)" "$?" 1
eq "no temporary directory left" "$(leftovers "$TMP")" 0

# --- hostile servers -----------------------------------------------------
hg -R src bundle -q -a -t 'none-v2;stream=v2' "$TMP/stream.hg"
python3 "$FAKE" "$URL" "$TMP/stream.hg" "$TMP/fake.port" >"$TMP/fake.log" 2>&1 &
KILL_PIDS+=("$!")
disown "$!"
check "the fake server listens" wait_for "$TMP/fake.port"
FPORT=$(cat "$TMP/fake.port")
F=http://127.0.0.1:$FPORT
run "$F/ok/" fake-ok
eq "fake server, a good answer: exit 0" "$RC" 0
check "fake server, a good answer: the same store" \
	diff -r dst/.hg/store fake-ok/.hg/store

# hostile NAME KEYWORD [OPTIONS]: a clone from $F/NAME/ fails saying KEYWORD.
hostile() {
	local name=$1 kw=$2
	shift 2
	run "$@" "$F/$name/" hostile-dest
	eq "$name: exit 1" "$RC" 1
	eq "$name: one line" "$ERR_LINES" 1
	case "$ERR" in
	*"$kw"*) pass "$name: says '$kw'" ;;
	*) fail "$name: says '$kw'"; printf '#   got: %s\n' "$ERR" ;;
	esac
	if [ -e hostile-dest ] || [ "$(leftovers "$TMP")" != 0 ]; then
		fail "$name: nothing left at DEST"
		rm -rf hostile-dest "$TMP"/.*.clone-*
	else
		pass "$name: nothing left at DEST"
	fi
}
hostile trunc 'getbundle: Transferred a partial file'
hostile html "not a Mercurial answer (content type 'text/html')"
hostile gone 'getbundle: HTTP 404'
hostile nowhere 'capabilities: HTTP 404'
hostile stall 'getbundle: Timeout was reached' --timeout 2
hostile hgerror 'the server says: abort: repository locked'
hostile zlib "compressed its answer with 'zlib'"
hostile nostream 'offers no bundle2 stream clone'
hostile notahg 'not a Mercurial server'
run "http://127.0.0.1:1/" refused
eq "nothing listening: exit 1" "$RC" 1
check "nothing listening: one line saying so" grep -q "capabilities: Couldn't connect to server" "$TMP/.stderr"

finish
