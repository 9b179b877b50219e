#!/bin/bash
# SPDX-License-Identifier: MIT
# test-clone-http.sh: `bgrun clone http://...` against a real `hg serve` (compared with `hg clone --stream -U`) and hostile servers.
#
# Usage: test-clone-http.sh BGRUN FAKE_SERVER_PY (meson passes them).
# `hg serve` listens on 127.0.0.1, on a port it picks (-p 0), and is
# stopped at the end; a clonebundles manifest points it at bundles on a
# static server (Python's http.server); clone-fake-hg.py answers as broken
# servers do. The
# exit status is 1 if any check failed, 77 if hg or python3 is missing or
# bgrun was built without libcurl.

set -u

BGRUN=${1:?usage: test-clone-http.sh BGRUN FAKE_SERVER}
FAKE=${2:?usage: test-clone-http.sh BGRUN FAKE_SERVER}
CLONE_NEEDS="hg python3"
. "$(dirname "$0")/clone-lib.sh"

run() { capture "$BGRUN" clone --no-log "$@"; }

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
hg -R src bookmark -q -r 0 first
hg -R src bookmark -q -r tip 'caf'$'\xc3\xa9''-feature'

# The clonebundles extension advertises a manifest when there is one.
hg -R src serve --config extensions.clonebundles= -a 127.0.0.1 -p 0 -d \
	--pid-file "$TMP/serve.pid" >"$TMP/serve.out" 2>&1
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
eq "same bookmarks" "$(hg -R dst bookmarks)" "$(hg -R ref bookmarks)"
check "bookmarks: there are two" test "$(hg -R dst bookmarks | wc -l)" = 2
check "bookmarks: written as hg writes them" cmp -s dst/.hg/bookmarks ref/.hg/bookmarks
check "hg pull afterwards: no changes found" \
	grep -q 'no changes found' <(hg -R dst pull 2>&1)
hg -R dst incoming -q >/dev/null 2>&1
eq "hg incoming afterwards: nothing (exit 1)" "$?" 1
hg -R dst outgoing -q >/dev/null 2>&1
eq "hg outgoing afterwards: nothing (exit 1)" "$?" 1
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
hostile nostream 'offers no stream clone'
hostile legacydeny 'stream_out: the server does not allow stream clones'
hostile legacytrunc 'stream_out: Transferred a partial file'
hostile notahg 'not a Mercurial server'
# --- a clonebundles manifest ----------------------------------------------
# The bundles on a static server (Python's http.server); hg serve reads
# the manifest from src/.hg/clonebundles.manifest at each request.
mkdir bundles
cp "$TMP/stream.hg" bundles/stream.hg
hg -R src debugcreatestreamclonebundle bundles/packed1.hg >/dev/null
hg -R src bundle -q -a -t 'zstd-v2;stream=v2' bundles/zstd.hg
python3 -u -m http.server 0 --bind 127.0.0.1 --directory bundles >"$TMP/static.log" 2>&1 &
KILL_PIDS+=("$!")
disown "$!"
deadline=$((SECONDS + 30))
until grep -q 'port [0-9]' "$TMP/static.log" || [ $SECONDS -ge $deadline ]; do sleep 0.02; done
SPORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$TMP/static.log" | head -1)
check "the static server listens" test -n "$SPORT"
S=http://127.0.0.1:$SPORT
# spec BUNDLE [COMPRESSION]: its BUNDLESPEC as a manifest holds it, which
# is what hg debugbundle --spec prints, its parameters' values quoted once
# (hg says "none" of every stream bundle: a compressed one is named here).
spec() {
	hg debugbundle --spec "$1" | sed "s/^none-/${2:-none}-/"
}
{
	echo "$S/zstd.hg BUNDLESPEC=$(spec bundles/zstd.hg zstd)"
	echo "$S/stream.hg BUNDLESPEC=$(spec bundles/stream.hg) REQUIRESNI=true"
} >src/.hg/clonebundles.manifest
run -v "$URL" cb
eq "clonebundles: exit 0" "$RC" 0
check "clonebundles: said which bundle" grep -q "using the clone bundle $S/stream.hg" "$TMP/.stderr"
check "clonebundles: the stream bundle was fetched from the static server" \
	grep -q 'GET /stream.hg' "$TMP/static.log"
check "clonebundles: the compressed one was not" test -z "$(grep 'GET /zstd.hg' "$TMP/static.log")"
check "clonebundles: the same store as from the server" diff -r dst/.hg/store cb/.hg/store
eq "clonebundles: same paths" "$(hg -R cb paths)" "$(hg -R ref paths)"
check "clonebundles: hg pull finds nothing new" grep -q 'no changes found' <(hg -R cb pull 2>&1)
# The manifest is one hg itself uses: hg clone --stream fetches the same.
hg clone -q --stream -U "$URL" cb-hg
eq "clonebundles: hg clone --stream -U fetched the same bundle" \
	"$(grep -c 'GET /stream.hg' "$TMP/static.log")" 2
# A parameter without "=" makes the entry invalid for hg (parsebundlespec):
# so for bgrun too, which then takes the server's stream, as hg does.
echo "$S/stream.hg BUNDLESPEC=$(spec bundles/stream.hg | sed 's/%3D/%253D/')" \
	>src/.hg/clonebundles.manifest
run -v "$URL" cbinvalid
eq "clonebundles, an invalid BUNDLESPEC: exit 0 (the server streams)" "$RC" 0
check "clonebundles, an invalid BUNDLESPEC: not used" \
	test -z "$(grep 'using the clone bundle' "$TMP/.stderr")"
eq "clonebundles, an invalid BUNDLESPEC: not fetched" \
	"$(grep -c 'GET /stream.hg' "$TMP/static.log")" 2
echo "$S/packed1.hg BUNDLESPEC=$(spec bundles/packed1.hg)" >src/.hg/clonebundles.manifest
run "$URL" cb1
eq "clonebundles, a v1 (packed1) bundle: exit 0" "$RC" 0
check "clonebundles, a v1 (packed1) bundle: fetched" grep -q 'GET /packed1.hg' "$TMP/static.log"
check "clonebundles, a v1 (packed1) bundle: the same store (no caches in v1)" \
	diff -r dst/.hg/store cb1/.hg/store
check "clonebundles, a v1 (packed1) bundle: hg verify" hg -q -R cb1 verify
echo "$S/missing.hg BUNDLESPEC=$(spec bundles/stream.hg)" >src/.hg/clonebundles.manifest
run "$URL" cb404
eq "clonebundles, a 404: exit 1" "$RC" 1
eq "clonebundles, a 404: one line" "$ERR" \
	"bgrun: clone: ${URL%/}: clone bundle $S/missing.hg: HTTP 404"
check "clonebundles, a 404: nothing left" test ! -e cb404
eq "clonebundles, a 404: no temporary directory" "$(leftovers "$TMP")" 0
echo "$S/zstd.hg BUNDLESPEC=$(spec bundles/zstd.hg zstd)" >src/.hg/clonebundles.manifest
run -v "$URL" cbz
eq "clonebundles, none we can apply: exit 0 (the server streams)" "$RC" 0
check "clonebundles, none we can apply: no clone bundle used" \
	test -z "$(grep 'using the clone bundle' "$TMP/.stderr")"
rm src/.hg/clonebundles.manifest

# --- the legacy stream_out: a server without a bundle2 stream -------------
hg -R src serve --config server.bundle2.stream=false -a 127.0.0.1 -p 0 -d \
	--pid-file "$TMP/serve-legacy.pid" >"$TMP/serve-legacy.out" 2>&1
KILL_PIDS+=("$(cat "$TMP/serve-legacy.pid")")
LPORT=$(sed -n 's/.*bound to 127\.0\.0\.1:\([0-9]*\)).*/\1/p' "$TMP/serve-legacy.out")
LURL=http://127.0.0.1:$LPORT/
run -v "$LURL" legacy
eq "legacy stream_out: exit 0" "$RC" 0
check "legacy stream_out: said so" grep -q 'using the legacy stream_out' "$TMP/.stderr"
check "legacy stream_out: a stream bundle v1 applied" grep -q 'stream bundle v1' "$TMP/.stderr"
hg clone -q --stream -U "$LURL" legacy-ref
check "legacy stream_out: same store as hg clone --stream -U from it" \
	diff -r -x fncache -x 'undo*' legacy-ref/.hg/store legacy/.hg/store
eq "legacy stream_out: same .hg/requires" "$(cat legacy/.hg/requires)" "$(cat legacy-ref/.hg/requires)"
check "legacy stream_out: hg verify" hg -q -R legacy verify
eq "legacy stream_out: same hg log" "$(hg -R legacy log -T '{node} {phase} {tags}\n')" \
	"$(hg -R ref log -T '{node} {phase} {tags}\n')"
eq "legacy stream_out: same bookmarks" "$(hg -R legacy bookmarks)" "$(hg -R ref bookmarks)"
check "legacy stream_out: hg pull finds nothing new" \
	grep -q 'no changes found' <(hg -R legacy pull 2>&1)

# --- --update and --wait: hg update as a post-clone hook -------------------
run --update --wait "$URL" upd
eq "--update --wait: exit 0" "$RC" 0
hg clone -q "$URL" ref-updated
eq "--update --wait: the working copy where hg clone puts it" \
	"$(hg -R upd log -r . -T '{node}')" "$(hg -R ref-updated log -r . -T '{node}')"
check "--update --wait: its files are there" test -f upd/x.d/aux.c
eq "--update --wait: nothing modified" "$(hg -R upd status)" ""
run --update=first --wait "$URL" upd-first
eq "--update=REV --wait: exit 0" "$RC" 0
eq "--update=REV --wait: the working copy at REV (a bookmark)" \
	"$(hg -R upd-first log -r . -T '{node}')" "$(hg -R ref log -r first -T '{node}')"
run --update="no such rev" --wait "$URL" upd-bad
eq "--update=BADREV --wait: exit 3 (cloned, the hook failed)" "$RC" 3
check "--update=BADREV --wait: says which hook failed" \
	grep -q 'hook post-clone.update failed: exit status 255' "$TMP/.stderr"
check "--update=BADREV --wait: the clone stands" hg -q -R upd-bad verify
run --hook 'exit 7' --wait "$URL" hook-fails
eq "a failing --hook with --wait: exit 3" "$RC" 3
check "a failing --hook with --wait: its status said" \
	grep -q 'hook post-clone.cli1 failed: exit status 7' "$TMP/.stderr"
run --hook 'exit 7' "$URL" hook-nowait
eq "a failing --hook without --wait: exit 0 (not waited for)" "$RC" 0
capture "$BGRUN" clone --db "$TMP/log.db" --update --wait "$URL" upd-logged
eq "--update --wait, logged: exit 0" "$RC" 0
eq "--update --wait, logged: the hook's finish recorded, tagged" \
	"$(sqlite3 -cmd '.timeout 10000' "$TMP/log.db" \
		"SELECT source, result, exit_code FROM events WHERE tag = 'post-clone.update'")" \
	"clone-hook|success|0"
eq "--update --wait, logged: the working copy where hg clone puts it" \
	"$(hg -R upd-logged log -r . -T '{node}')" "$(hg -R ref-updated log -r . -T '{node}')"

# --- TLS: a clone bundle on an https server with a self-signed certificate -
if command -v openssl >/dev/null; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" \
		-out "$TMP/cert.pem" >"$TMP/openssl.log" 2>&1
	python3 -u -c '
import http.server, functools, os, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[3])
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(sys.argv[4] + ".tmp", "w").write("%d\n" % srv.server_address[1])
os.rename(sys.argv[4] + ".tmp", sys.argv[4])
srv.serve_forever()
' "$TMP/cert.pem" "$TMP/key.pem" bundles "$TMP/tls.port" >"$TMP/tls.log" 2>&1 &
	KILL_PIDS+=("$!")
	disown "$!"
	check "the https server listens" wait_for "$TMP/tls.port"
	T=https://127.0.0.1:$(cat "$TMP/tls.port")
	echo "$T/stream.hg BUNDLESPEC=$(spec bundles/stream.hg)" >src/.hg/clonebundles.manifest
	run "$URL" tls-default
	eq "https, self-signed: refused by default (exit 1)" "$RC" 1
	eq "https, self-signed: one line" "$ERR_LINES" 1
	case "$ERR" in
	*"clone bundle $T/stream.hg: "*certificate*) pass "https, self-signed: says the certificate is the problem" ;;
	*) fail "https, self-signed: says the certificate is the problem"; printf '#   got: %s\n' "$ERR" ;;
	esac
	check "https, self-signed: nothing left" test ! -e tls-default
	run --insecure "$URL" tls-insecure
	eq "https, --insecure: exit 0" "$RC" 0
	check "https, --insecure: the same store" diff -r dst/.hg/store tls-insecure/.hg/store
	run --cacert "$TMP/cert.pem" "$URL" tls-cacert
	eq "https, --cacert with its certificate: exit 0" "$RC" 0
	check "https, --cacert: the same store" diff -r dst/.hg/store tls-cacert/.hg/store
	rm src/.hg/clonebundles.manifest
else
	echo "# skipped the TLS checks: openssl is not installed"
fi

# --- --no-clonebundles -----------------------------------------------------
echo "$S/stream.hg BUNDLESPEC=$(spec bundles/stream.hg)" >src/.hg/clonebundles.manifest
n_before=$(grep -c 'GET /stream.hg' "$TMP/static.log")
run -v --no-clonebundles "$URL" nocb
eq "--no-clonebundles: exit 0" "$RC" 0
eq "--no-clonebundles: the manifest's bundle not fetched" \
	"$(grep -c 'GET /stream.hg' "$TMP/static.log")" "$n_before"
check "--no-clonebundles: the server streamed" grep -q 'stream bundle v2' "$TMP/.stderr"
rm src/.hg/clonebundles.manifest

run "http://127.0.0.1:1/" refused
eq "nothing listening: exit 1" "$RC" 1
check "nothing listening: one line saying so" grep -q "capabilities: Couldn't connect to server" "$TMP/.stderr"

finish
