#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gen-repo.sh: make a Mercurial repository of N files with the real hg, its stream clone bundle, and a tar of the same store files.
# Usage: bench/gen-repo.sh N OUTDIR [source|large]
# Writes OUTDIR/repo (3 revisions: all N files, then 10% changed, then 1%
# changed plus 1% added), OUTDIR/bundle.hg (hg debugcreatestreamclonebundle),
# OUTDIR/bundle2.hg (the stream bundle v2: hg bundle -t 'none-v2;stream=v2')
# and OUTDIR/store.tar (the store files that bundle carries, under their
# store names, as a clone has them: what `tar x` is measured on). Files are
# source-like text of 200 B to 16 KiB, 50 to a directory, some names and
# directories with capitals (so encoded); with "large", N incompressible
# files of 1 MiB (for the write size). The content is deterministic.
set -euo pipefail
n=${1:?usage: gen-repo.sh N OUTDIR [source|large]}
out=${2:?usage: gen-repo.sh N OUTDIR [source|large]}
kind=${3:-source}
for p in hg python3 tar; do
	command -v "$p" >/dev/null || { echo "gen-repo: $p is not installed" >&2; exit 1; }
done
export HGRCPATH=/dev/null HGUSER='bench <bench@example.com>' HGPLAIN=1
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
hg init "$out/repo"

gen() {
	python3 - "$out/repo" "$n" "$1" "$kind" <<'EOF'
import os, random, sys
top, n, rev, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
words = ('static int const char return struct void if else for while size_t '
         'buffer error offset bundle store revlog entry file name data chunk '
         'close write read thread queue lock flags mode path value result').split()
def text(rnd, size):
    out, n = [], 0
    while n < size:
        line = ' '.join(rnd.choice(words) for _ in range(rnd.randint(3, 12)))
        line = '\t' * rnd.randint(0, 3) + line + ';\n'
        out.append(line)
        n += len(line)
    return ''.join(out)[:size]
def path(i):
    # 50 files a directory, 20 directories a part.
    d = i // 50
    return '%s/part%02d/mod%04d/%s%06d.c' % ('Lib' if d % 7 == 0 else 'src',
                                            d % 20, d // 20,
                                            'File' if i % 5 == 0 else 'file', i)
def sizes(rnd):
    # Mostly small, a tail of larger ones: about 3 KB on average.
    return min(16384, int(rnd.lognormvariate(7.4, 0.9)) + 200)
if kind == 'large':
    rnd = random.Random(10 + rev)
    for i in range(n) if rev == 0 else range(0, n, 10):
        p = os.path.join(top, 'blobs/Blob%04d.bin' % i)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as f:
            f.write(rnd.randbytes(1 << 20))
elif rev == 0:
    rnd = random.Random(1)
    for i in range(n):
        p = os.path.join(top, path(i))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(text(rnd, sizes(rnd)))
elif rev == 1:
    rnd = random.Random(2)
    for i in range(0, n, 10):
        with open(os.path.join(top, path(i)), 'a') as f:
            f.write(text(rnd, 300))
else:
    rnd = random.Random(3)
    for i in range(0, n, 100):
        with open(os.path.join(top, path(i)), 'a') as f:
            f.write(text(rnd, 100))
    for i in range(n, n + n // 100):
        p = os.path.join(top, path(i))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(text(rnd, sizes(rnd)))
EOF
}
for rev in 0 1 2; do
	gen $rev
	hg -R "$out/repo" addremove -q
	hg -R "$out/repo" commit -q -m "rev $rev" -d "$rev 0"
done
hg -R "$out/repo" debugcreatestreamclonebundle "$out/bundle.hg" >/dev/null
hg -R "$out/repo" bundle -q -a -t 'none-v2;stream=v2' "$out/bundle2.hg"

# The same store files as a clone has them (applied by hg itself), tarred.
hg init "$out/ref"
hg -R "$out/ref" debugapplystreamclonebundle "$out/bundle.hg" >/dev/null
(cd "$out/ref/.hg/store" && tar -cf "$out/store.tar" --exclude='./undo*' \
	--exclude=./phaseroots --exclude=./requires --exclude=./fncache \
	--exclude=./cache .)
rm -rf "$out/ref"
files=$(tar -tf "$out/store.tar" | grep -vc '/$')
echo "gen-repo: $out: $files store files, $(du -sh "$out/bundle.hg" | cut -f1) bundle"
