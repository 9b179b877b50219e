#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh: build the libFuzzer targets with clang, ASan and UBSan, and run fuzz-bundle on seeds made from real bundles, then fuzz-frame.
# Usage: scripts/fuzz.sh [SECONDS]   (default 20; the build is in build-fuzz)
# Ends with a summary in meson's words ("Ok: N", "Fail: N", "Skipped: N"),
# so that .ci/run counts the fuzz run as one test. A crash leaves its input
# in build-fuzz/fuzz-artifacts/ (replay: build-fuzz/fuzz/fuzz-bundle FILE).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
builddir=build-fuzz

summary() {
	echo "Ok:                 $1"
	echo "Fail:               $2"
	echo "Skipped:            $3"
	exit "$2"
}
# clang and its libFuzzer runtime; hg and python3 make the seeds.
scripts/install-packages.sh clang libclang-rt-14-dev mercurial python3 ||
	{ echo "fuzz: cannot install clang"; summary 0 1 0; }
for p in clang hg python3; do
	if ! command -v "$p" >/dev/null; then
		echo "fuzz: skipped: $p is not installed"
		summary 0 0 1
	fi
done

if [ ! -f "$builddir/build.ninja" ]; then
	CC=clang meson setup "$builddir" -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null ||
		{ echo "fuzz: meson setup failed"; summary 0 1 0; }
fi
ninja -C "$builddir" fuzz/fuzz-bundle fuzz/fuzz-frame >/dev/null ||
	{ echo "fuzz: build failed"; summary 0 1 0; }

# Seeds: bundles v1 and v2 of small real repositories (every kind of name
# the store encodes, two revisions, zlib and zstd), v2 ones framed
# otherwise, and every broken variant the clone tests use.
seeds=$builddir/fuzz-seeds
corpus=$builddir/fuzz-corpus
artifacts=$builddir/fuzz-artifacts
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HGRCPATH=$work/hgrc HGUSER=fuzz HGPLAIN=1
printf '[ui]\nportablefilenames = ignore\n' >"$HGRCPATH"
for kind in zstd zlib; do
	cfg=()
	[ $kind = zlib ] && cfg=(--config format.revlog-compression=zlib)
	hg "${cfg[@]}" init "$work/$kind"
	python3 tests/clone-fixtures.py tree "$work/$kind" -1
	hg -R "$work/$kind" "${cfg[@]}" commit -q -A -m one -d '0 0'
	echo more >>"$work/$kind/README.TXT"
	hg -R "$work/$kind" "${cfg[@]}" commit -q -m two -d '1 0'
	hg -R "$work/$kind" "${cfg[@]}" debugcreatestreamclonebundle \
		"$seeds/$kind.hg" >/dev/null ||
		{ echo "fuzz: hg could not make a bundle"; summary 0 1 0; }
	hg -R "$work/$kind" "${cfg[@]}" bundle -q -a -t 'none-v2;stream=v2' \
		"$seeds/$kind-v2.hg" ||
		{ echo "fuzz: hg could not make a v2 bundle"; summary 0 1 0; }
done
python3 tests/clone-fixtures.py bad "$seeds/zstd.hg" "$work/bad"
python3 tests/clone-fixtures.py bad2 "$seeds/zstd-v2.hg" "$work/bad"
for how in 1,interrupt 100,param,before,after; do
	python3 tests/clone-fixtures.py reframe "$seeds/zstd-v2.hg" \
		"$seeds/zstd-v2-$how.hg" "$how"
done
cp "$work"/bad/*.hg "$seeds/"
# Inputs that once failed (fuzz/regress/), run first like every seed.
cp fuzz/regress/*.hg "$seeds/"
echo "fuzz: $(ls "$seeds" | wc -l) seeds, running for $secs s"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
log=$work/fuzz.log
"$builddir/fuzz/fuzz-bundle" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1 \
	"$corpus" "$seeds" >"$log" 2>&1
rc=$?
grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log"
if [ $rc -ne 0 ]; then
	tail -40 "$log"
	echo "fuzz: fuzz-bundle failed (exit $rc); inputs in $artifacts"
	summary 0 1 0
fi
echo "fuzz: fuzz-bundle: no crash"

# fuzz-frame: the sink protocol's frames (docs/protocol.md), from seeds of
# every frame type made here, and a stream of several frames.
fseeds=$builddir/fuzz-frame-seeds
fcorpus=$builddir/fuzz-frame-corpus
rm -rf "$fseeds"
mkdir -p "$fseeds" "$fcorpus"
python3 - "$fseeds" <<'PY'
import os, struct, sys
def field(tag, val): return struct.pack('>HI', tag, len(val)) + val
def i64(v): return struct.pack('>q', v)
def frame(t, seq, fields):
    body = bytes([1, t]) + struct.pack('>I', seq) + b''.join(fields)
    return struct.pack('>I', len(body)) + body
argv = struct.pack('>I', 3) + b''.join(struct.pack('>I', len(a)) + a
                                       for a in [b'hg', b'', b'commit -m x'])
ev = frame(2, 1, [field(1, b'0f3c-id'), field(2, b'commandfinish'),
                  field(3, b'hg'), field(8, i64(4242)), field(11, argv),
                  field(17, i64(123456789)), field(18, i64(1)),
                  field(21, b'failed'), field(33, b'cat exited 1 after 0.10 seconds'),
                  field(34, b'{"return_code":"1"}'), field(999, b'later')])
seeds = {
    'event': ev,
    'ack': frame(3, 1, [field(64, i64(0))]),
    'error': frame(4, 2, [field(65, i64(5)), field(66, b'event x: invalid')]),
    'hello': frame(1, 0, [field(67, i64(1)), field(68, i64(1 << 20)),
                          field(69, i64(77)), field(70, b'/x/events.db'),
                          field(71, i64(2049)), field(72, i64(12))]),
    'stream': ev + frame(3, 7, [field(64, i64(0))]) + ev,
}
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name + '.bin'), 'wb') as f:
        f.write(data)
PY
"$builddir/fuzz/fuzz-frame" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1 \
	"$fcorpus" "$fseeds" >"$log" 2>&1
rc=$?
grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log"
if [ $rc -ne 0 ]; then
	tail -40 "$log"
	echo "fuzz: fuzz-frame failed (exit $rc); inputs in $artifacts"
	summary 1 1 0
fi
echo "fuzz: fuzz-frame: no crash"
summary 2 0 0
