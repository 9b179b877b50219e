#!/bin/bash
# SPDX-License-Identifier: MIT
# test-clone-v2.sh: `bgrun clone` of stream bundles v2 (bundle2, stream2 part) against the real Mercurial, every bad input.
#
# Usage: test-clone-v2.sh BGRUN CLONE_FIXTURES_PY (meson passes them).
# Repositories of many formats are made with Debian's hg (HGRCPATH
# private) and bundled with `hg bundle -a -t 'none-v2;stream=v2'`; each
# bundle is applied by `bgrun clone` and by `hg unbundle` into a fresh
# `hg init` repository, and the two must agree: the same .hg/store files
# byte for byte (hg's transaction leaves its undo files, and writes the
# fncache in another order: those are the only differences, and the
# fncache is compared sorted), the same requirements, the same cache
# files, hg verify clean, the same hg log. The exit status is 1 if any
# check failed, 77 if hg or python3 is missing.

set -u

BGRUN=${1:?usage: test-clone-v2.sh BGRUN FIXTURES}
FIX=${2:?usage: test-clone-v2.sh BGRUN FIXTURES}
CLONE_NEEDS="hg python3"
. "$(dirname "$0")/clone-lib.sh"

run() { capture "$BGRUN" clone --no-log "$@"; }
# bundle2 REPO FILE [HG OPTIONS]: a stream bundle v2 of REPO (a
# treemanifest repository needs changegroup 03 named, though none is sent).
bundle2() {
	local r=$1 f=$2 spec='none-v2;stream=v2'
	shift 2
	grep -qx treemanifest "$r/.hg/store/requires" 2>/dev/null &&
		spec="$spec;cg.version=03"
	hg -R "$r" "$@" bundle -q -a -t "$spec" "$f"
}
# hgref BUNDLE DIR: what Mercurial makes of BUNDLE in a new repository.
hgref() { hg init "$2" && hg -R "$2" unbundle -q "$1" >/dev/null; }

# same_as_hg DIR REF DESC: DIR holds what REF (hg's) holds.
same_as_hg() {
	local d=$1 ref=$2 desc=$3 f bad=
	check "$desc: same store files and bytes as hg's" \
		diff -r -x fncache -x 'undo*' "$ref/.hg/store" "$d/.hg/store"
	eq "$desc: same fncache entries as hg's" \
		"$(sort "$d/.hg/store/fncache" 2>/dev/null | md5sum)" \
		"$(sort "$ref/.hg/store/fncache" 2>/dev/null | md5sum)"
	eq "$desc: same .hg/requires as hg's" "$(cat "$d/.hg/requires")" \
		"$(cat "$ref/.hg/requires")"
	for f in "$d"/.hg/cache/*; do
		[ -e "$f" ] || continue
		cmp -s "$f" "$ref/.hg/cache/${f##*/}" || bad="$bad ${f##*/}"
	done
	eq "$desc: every cache file as hg wrote it" "$bad" ""
	check "$desc: hg verify" hg -q -R "$d" verify
	eq "$desc: hg log" "$(hg -R "$d" log -T '{rev}:{node} {branch} {tags} {phase} {desc}\n')" \
		"$(hg -R "$ref" log -T '{rev}:{node} {branch} {tags} {phase} {desc}\n')"
}

# --- a repository with everything the store encoding cares about ------------
hg init src
python3 "$FIX" tree src 0
hg -R src addremove -q && hg -R src commit -q -m 'rev 0' -d '0 0'
python3 "$FIX" tree src 1
hg -R src mv -q src/src/mod0/sub0/file0000.c 'src/Moved File.C'
hg -R src addremove -q && hg -R src commit -q -m 'rev 1' -d '1 0'
hg -R src tag -d '2 0' v1.0
hg -R src branch -q stable
python3 "$FIX" tree src 2
hg -R src addremove -q && hg -R src commit -q -m 'rev 2 on stable' -d '3 0'
hg -R src log -r tip -T '{tags}' >/dev/null # fills the tags caches
bundle2 src "$TMP/rich2.hg"
check "hg wrote a stream bundle v2 (HG20, part STREAM2)" \
	test "$(head -c 4 rich2.hg)$(head -c 20 rich2.hg | tail -c 7)" = HG20STREAM2
check "the bundle carries cache files" grep -aq 'rbc-names-v1' rich2.hg
hgref rich2.hg ref

run rich2.hg dst
eq "clone: exit 0" "$RC" 0
eq "clone: nothing on stderr" "$ERR" ""
same_as_hg dst ref "clone"
eq "clone: no temporary directory left" "$(leftovers "$TMP")" 0
rm -rf "$TMP/cat-a" "$TMP/cat-b"
(cd src && hg cat -r tip -o "$TMP/cat-a/%p" 'glob:**')
(cd dst && hg cat -r tip -o "$TMP/cat-b/%p" 'glob:**')
check "clone: hg cat of every file at tip" diff -r "$TMP/cat-a" "$TMP/cat-b"
# The v1 bundle of the same repository gives the same store (v2 adds the
# cache files).
hg -R src debugcreatestreamclonebundle "$TMP/rich1.hg" >/dev/null
run rich1.hg dst1
check "v1 and v2 bundles of one repository: the same store" \
	diff -r dst1/.hg/store dst/.hg/store
run -v rich2.hg verbose
check "-v: says v2" grep -q 'stream bundle v2; requirements' "$TMP/.stderr"

# Every way of reading and writing gives the same store.
i=0
for opts in "--close-threads 3 --close-threshold 1" \
	"--close-threads 1 --close-threshold 1 --chunk-size 4K" \
	"--write-threads 0 --close-threshold 1" \
	"--write-threads 3 --close-threads 0 --close-threshold 1 --chunk-size 512" \
	"--chunk-size 512" "--copy-file-range"; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	run $opts rich2.hg "w$i"
	eq "clone $opts: exit 0" "$RC" 0
	check "clone $opts: same store" diff -r dst/.hg/store "w$i/.hg/store"
done
capture "$BGRUN" clone --no-log - from-pipe < <(cat rich2.hg)
eq "clone from a pipe: exit 0" "$RC" 0
check "clone from a pipe: same store and cache" diff -r dst/.hg from-pipe/.hg
capture "$BGRUN" clone --no-log --chunk-size 512 - from-pipe2 < <(cat rich2.hg)
check "clone from a pipe, 512-byte buffer: same store and cache" \
	diff -r dst/.hg from-pipe2/.hg

# The same content framed otherwise (Mercurial reads all of these too).
for how in 1,interrupt,param 100,param,before,after 4096,interrupt; do
	python3 "$FIX" reframe rich2.hg "$TMP/re.hg" "$how"
	rm -rf re re-pipe re-hg
	run re.hg re
	eq "frames $how: exit 0" "$RC" 0
	check "frames $how: same store and cache" diff -r dst/.hg re/.hg
	capture "$BGRUN" clone --no-log - re-pipe < <(cat re.hg)
	check "frames $how, from a pipe: same store and cache" diff -r dst/.hg re-pipe/.hg
	hgref re.hg re-hg
	check "frames $how: hg makes the same store of it" \
		diff -r -x fncache -x 'undo*' re-hg/.hg/store re/.hg/store
done
python3 "$FIX" reframe rich2.hg "$TMP/re.hg" 32768
check "the fixture writes hg's own bytes back (32 KiB frames)" cmp -s rich2.hg re.hg

# --- repository formats ------------------------------------------------------
# mini NAME HG-OPTIONS...: a small repository with awkward names, bundled
# (the long ones only in a store with an fncache: the others cannot hold them).
mini() {
	local r=$1 names=-1
	shift
	case "$*" in *usefncache=no*) names=-2 ;; esac
	hg "$@" init "$r"
	python3 "$FIX" tree "$r" $names
	hg -R "$r" "$@" commit -q -A -m one -d '0 0'
	echo more >>"$r/README.TXT"
	hg -R "$r" "$@" commit -q -m two -d '1 0'
	# A changelog big enough not to be inline (persistent nodemaps need it).
	head -c 150000 /dev/urandom | base64 >"$TMP/msg"
	hg -R "$r" "$@" commit -q -l "$TMP/msg" -d '2 0' --config ui.allowemptycommit=1
	bundle2 "$r" "$TMP/$r.hg" "$@"
}
formats=(
	"zstd"
	"zlib --config format.revlog-compression=zlib"
	"nofncache --config format.usefncache=no"
	"nodotencode --config format.dotencode=no"
	"nostore --config format.usestore=no"
	"noshare --config format.use-share-safe=no"
	"nosparse --config format.sparse-revlog=no"
	"nogd --config format.generaldelta=no --config format.sparse-revlog=no"
	"tree --config experimental.treemanifest=1"
	"nodemap --config format.use-persistent-nodemap=yes --config storage.revlog.persistent-nodemap.slow-path=allow"
	"bmstore --config format.bookmarks-in-store=yes"
	"internal --config format.use-internal-phase=yes"
	"archived --config format.exp-archived-phase=yes"
)
for f in "${formats[@]}"; do
	name=${f%% *}
	# shellcheck disable=SC2086
	opts=$([ "$name" = "$f" ] || echo "${f#* }")
	# shellcheck disable=SC2086
	mini "$name" $opts
	hgref "$name.hg" "$name-hg"
	run "$name.hg" "$name-clone"
	eq "$name: exit 0" "$RC" 0
	same_as_hg "$name-clone" "$name-hg" "$name"
	eq "$name: .hg/store/requires as hg's" \
		"$(cat "$name-clone/.hg/store/requires")" \
		"$(cat "$name-hg/.hg/store/requires")"
done
eq "zlib: no zstd requirement" "$(grep -c zstd zlib-clone/.hg/store/requires)" 0
check "tree: meta/ in the fncache" grep -q '^meta/' tree-clone/.hg/store/fncache
check "nodemap: the bundle carries 00changelog.n" grep -aq '00changelog.n' nodemap.hg

# A non-publishing repository sends its phaseroots; a secret changeset stays secret.
mini draft --config phases.publish=no
hg -R draft phase -q -f -s -r tip --config phases.publish=no
bundle2 draft "$TMP/draft.hg" --config phases.publish=no \
	--config server.uncompressedallowsecret=yes
check "draft: the bundle carries phaseroots" grep -aq phaseroots draft.hg
hgref draft.hg draft-hg
run draft.hg draft-clone
same_as_hg draft-clone draft-hg "non-publishing"
eq "non-publishing: phases kept" "$(hg -R draft-clone log -T '{phase} ')" "secret draft draft "

# A file name with a backslash: hg stores data/dir/back~5cslash.txt.i.
hg init bs
mkdir bs/dir
echo x >'bs/dir/back\slash.txt'
hg -R bs commit -q -A -m bs -d '0 0'
bundle2 bs "$TMP/bs.hg"
hgref bs.hg bs-hg
run bs.hg bs-clone
eq "a backslash in a file name: exit 0" "$RC" 0
check "a backslash in a file name: stored as hg does" \
	test -f 'bs-clone/.hg/store/data/dir/back~5cslash.txt.i'
same_as_hg bs-clone bs-hg "a backslash in a file name"

# Many files: background closing at its default threshold.
hg init many
mkdir -p many/d
for i in $(seq 1 2600); do echo "$i" >"many/d/f$i"; done
hg -R many commit -q -A -m many
bundle2 many "$TMP/many.hg"
hgref many.hg many-hg
run -v many.hg many-clone
check "many files: written (and closed) by 2 writer threads, no closers" \
	grep -q '; 0 closer threads; 2 writer threads' "$TMP/.stderr"
run -v --write-threads 0 many.hg many-clone1
check "many files, --write-threads 0: closed in the background" \
	grep -q '; 4 closer threads; 0 writer threads' "$TMP/.stderr"
same_as_hg many-clone1 many-hg "many files, one writing thread"
same_as_hg many-clone many-hg "many files"

# --- what it refuses ----------------------------------------------------------
for c in zstd gzip bzip2; do
	hg -R zstd bundle -q -a -t "$c-v2;stream=v2" "$TMP/$c-comp.hg"
	run "$c-comp.hg" comp-dest
	eq "$c-compressed container: exit 1" "$RC" 1
	check "$c-compressed container: says why, at offset 8" \
		grep -q "offset 8: compressed bundle2 container (Compression=[A-Z][A-Z]): stream bundles are applied uncompressed" "$TMP/.stderr"
	check "$c-compressed container: no DEST" test ! -e comp-dest
done
# Mercurial 6.3.2 knows no stream v3: asked for one, it writes a
# changegroup bundle, which is not a stream clone.
hg -R zstd bundle -q -a -t 'none-v2;stream=v3-exp' "$TMP/v3.hg"
run v3.hg v3-dest
eq "stream=v3-exp (a changegroup bundle from hg 6.3): exit 1" "$RC" 1
check "stream=v3-exp: said so" grep -q 'offset 8: not a stream clone bundle: a changegroup part' "$TMP/.stderr"
hg -R zstd bundle -q -a -t 'none-v2' "$TMP/cg.hg"
run cg.hg cg-dest
check "a changegroup bundle2: refused" grep -q 'changegroup part' "$TMP/.stderr"

python3 "$FIX" bad2 zstd.hg "$TMP/bad"
touch "$TMP/before-bad"
bad_bundles
# The same with writer threads writing the files.
run() { capture "$BGRUN" clone --no-log --write-threads 2 --close-threshold 1 "$@"; }
bad_bundles "(writer threads)"
run() { capture "$BGRUN" clone --no-log "$@"; }
eq "bad input: nothing written outside the temporary directory" \
	"$(find "$TMP" -newer "$TMP/before-bad" \( -name 'escape*' -o -name hgrc \) | wc -l)" 0

# Interrupted while the bundle trickles in through a FIFO.
interrupted rich2.hg --no-log

finish
