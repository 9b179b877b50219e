#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# clone-fixtures.py: inputs for test-clone.sh: repository trees, broken bundles, path-encoding cross-checks.
"""
Usage:
  clone-fixtures.py tree DIR REV       shape the working tree DIR for revision
                                        REV (0, 1, 2) of the test repository
                                        (-1: only the names, small)
  clone-fixtures.py bad GOOD OUTDIR     write broken variants of the bundle
                                        GOOD, and OUTDIR/cases.tsv: name, then
                                        keyword and offset for a file, and
                                        for a pipe
  clone-fixtures.py setreq IN OUT REQS  IN with its requirements replaced
  clone-fixtures.py encode HELPER       compare clone-helper's store path
                                        encoding with Mercurial's own
Everything is deterministic (fixed seeds), so failures reproduce.
"""

import os
import random
import shutil
import struct
import subprocess
import sys


def write(path, data):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)


# --- the test repository -------------------------------------------------

def long_names():
    """Paths whose encoded store name exceeds 120 bytes: hashed into dh/."""
    return [
        b'very/long/' + b'directory_name_' * 8 + b'/' + b'f' * 100 + b'.txt',
        b'Deep/' + b'/'.join(b'Level%02d.dir' % i for i in range(14)) + b'/file.c',
        b'UPPER' * 20 + b'/' + b'MiXeD' * 30 + b'.TXT',
        b'dots./' * 3 + b'abcdefg.xyz/' * 4 + b'x' * 90,
        b'spaces end /' * 4 + b'n' * 100 + b' .txt',
        b'caf\xc3\xa9/' * 10 + b'\xc3\xa9t\xc3\xa9' * 30 + b'.md',
        b'aux/con/prn/' + b'nul.' * 40 + b'c',
        b'trailing' * 20 + b'.',
    ]


def special_names():
    return [
        b'README.TXT', b'Docs/Guide.MD', b'UPPER/CASE/NAME.C', b'A_B_c',
        b'_underscore_', b'tilde~file', b'with space/a file.txt',
        b' leading space', b'trailing space ', b'trailing dot.',
        b'caf\xc3\xa9/na\xc3\xafve.txt',
        b'\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab.txt',
        b'latin1-\xe9t\xe9.bin',
        b'x.i/a', b'y.d/b', b'z.hg/c', b'deep.i/more.d/q.hg/f.i',
        b'foo', b'foo.i/bar', b'foo.d/baz', b'foo.hg/qux', b'foo.i.hg/quux',
        b'aux.c', b'con/prn.txt', b'nul', b'com1.txt', b'lpt9', b'AUX.H',
        b'weird:name?.txt', b'star*pipe|lt<gt>', b'quote"s',
        b'.hidden', b'.dotdir/.dotfile', b'empty.txt',
        b'data/looks/like/store.i', b'00changelog.i', b'dh/not-hashed',
    ]


def tree(top, rev):
    rnd = random.Random(1000 + rev)
    top = os.fsencode(top)
    if rev == -1:
        # Small: the special and long names only (fuzzing seeds).
        for n in special_names() + long_names():
            write(os.path.join(top, n), n + b'\n')
    elif rev == 0:
        for i in range(1000):
            p = b'src/mod%d/sub%d/file%04d.c' % (i % 10, i % 3, i)
            write(os.path.join(top, p), b'/* file %d */\n' % i + bytes(
                rnd.choice(b'abcdefghij \n') for _ in range(rnd.randint(0, 400))))
        for n in special_names() + long_names():
            write(os.path.join(top, n), b'' if n == b'empty.txt' else n + b'\n')
        write(os.path.join(top, b'blobs/big.bin'), rnd.randbytes(8 << 20))
        write(os.path.join(top, b'blobs/Big2.BIN'), rnd.randbytes(2 << 20))
    elif rev == 1:
        # Changes, removals, additions; the shell moves some files too.
        for i in range(0, 1000, 20):
            p = os.path.join(top, b'src/mod%d/sub%d/file%04d.c' % (i % 10, i % 3, i))
            with open(p, 'ab') as f:
                f.write(b'/* changed in rev 1 */\n')
        for i in range(1, 1000, 100):
            os.unlink(os.path.join(top, b'src/mod%d/sub%d/file%04d.c' % (i % 10, i % 3, i)))
        for i in range(20):
            write(os.path.join(top, b'new/Added%02d.TXT' % i), b'added %d\n' % i)
        write(os.path.join(top, long_names()[0]), b'rewritten\n')
    elif rev == 2:
        # A delta against the big binary, and one more long name.
        p = os.path.join(top, b'blobs/big.bin')
        with open(p, 'r+b') as f:
            f.seek(4 << 20)
            f.write(rnd.randbytes(4096))
        write(os.path.join(top, b'Another/' + b'Very' * 40 + b'.txt'), b'x\n')
    else:
        sys.exit('tree: unknown revision %d' % rev)


# --- bundles ------------------------------------------------------------

def parse(data):
    assert data[:6] == b'HGS1UN'
    files, size = struct.unpack('>QQ', data[6:22])
    (rl,) = struct.unpack('>H', data[22:24])
    reqs = data[24:24 + rl - 1]
    pos = 24 + rl
    entries = []
    for _ in range(files):
        nul = data.index(b'\0', pos)
        nl = data.index(b'\n', nul)
        n = int(data[nul + 1:nl])
        entries.append((data[pos:nul], data[nl + 1:nl + 1 + n]))
        pos = nl + 1 + n
    assert pos == len(data)
    return reqs, entries


def header(reqs, files, nbytes, comp=b'UN', magic=b'HGS1'):
    return (magic + comp + struct.pack('>QQ', files, nbytes) +
            struct.pack('>H', len(reqs) + 1) + reqs + b'\0')


def build(reqs, entries, files=None, nbytes=None):
    """The bundle, and the offset of each entry."""
    if files is None:
        files = len(entries)
    if nbytes is None:
        nbytes = sum(len(d) for _, d in entries)
    out = bytearray(header(reqs, files, nbytes))
    offs = []
    for name, d in entries:
        offs.append(len(out))
        out += b'%s\0%d\n' % (name, len(d)) + d
    return bytes(out), offs


def bad(good, outdir):
    with open(good, 'rb') as f:
        data = f.read()
    reqs, ents = parse(data)
    assert len(ents) >= 3
    os.makedirs(outdir, exist_ok=True)
    cases = []
    H = 24 + len(reqs) + 1
    whole, offs = build(reqs, ents)
    T = len(whole)
    B = sum(len(d) for _, d in ents)
    last = len(ents) - 1

    def case(name, blob, keyword, off_file, off_pipe=None, kw_pipe=None):
        """A bad bundle, and what a clone from a file and from a pipe says.

        From a regular file, the reader compares the counts with the file's
        size before writing anything, so a truncation is often reported
        early (at the byte count, offset 14) rather than where it happens.
        """
        write(os.path.join(outdir, name + '.hg'), blob)
        cases.append((name, keyword, off_file, kw_pipe or keyword,
                      off_file if off_pipe is None else off_pipe))

    case('empty', b'', 'ends in the magic', 0)
    case('bad-magic', b'HGXX' + data[4:], 'bad magic', 0)
    case('changegroup-magic', b'HG20' + data[4:], 'changegroup', 0)
    case('compression', data[:4] + b'GZ' + data[6:], 'unsupported compression', 4)
    case('trunc-header', data[:10], 'truncated', 10)
    case('trunc-requirements', data[:H - 3], 'truncated', H - 3)
    cut = offs[1] + 3
    case('trunc-name', whole[:cut], 'truncated', 14, cut)
    case('trunc-data', whole[:T - 5], 'bytes left in the bundle', offs[last],
         T - 5, 'truncated')
    case('trunc-between', whole[:offs[2]], 'truncated', 14, offs[2])
    case('bytecount-high', build(reqs, ents, nbytes=B + 1000)[0],
         'byte count', 14)
    case('bytecount-low', build(reqs, ents, nbytes=B - 1)[0],
         'byte count leaves', offs[last])
    case('filecount-high', build(reqs, ents, files=len(ents) + 1)[0],
         'files announced', T)
    case('filecount-huge', build(reqs, ents, files=1 << 40)[0],
         'file count', 6, T)
    case('filecount-low', build(reqs, ents, files=len(ents) - 1)[0],
         'after the last', offs[last])
    case('trailing-data', whole + b'junk', 'after the last', T)

    def renamed(case_name, newname, keyword, extra=0):
        e = list(ents)
        e[last] = (newname, e[last][1])
        blob, o = build(reqs, e)
        case('name-' + case_name, blob, keyword, o[last] + extra)

    renamed('absolute', b'/tmp/escape.i', 'absolute')
    renamed('dotdot', b'data/../../escape.i', "'..' component")
    renamed('dot', b'data/./x.i', "'.' component")
    renamed('newline', b'data/a\nb.i', 'newline')
    renamed('backslash', b'data/a\\b.i', 'backslash')
    renamed('empty-component', b'data//x.i', 'empty component')
    renamed('trailing-slash', b'data/x.i/', 'empty component')
    renamed('empty', b'', 'empty entry name')
    renamed('requires', b'requires', 'keeps itself')
    renamed('nul', b'data/a\0b.i', 'NUL byte', len(b'data/a'))
    e = list(ents)
    blob, o = build(reqs, e)
    sized = blob[:o[last]] + blob[o[last]:].replace(
        b'\0%d\n' % len(e[last][1]), b'\0%da\n' % len(e[last][1]), 1)
    case('size-invalid', sized, 'invalid entry size',
         o[last] + len(e[last][0]) + 1 + len(b'%d' % len(e[last][1])))
    big = blob[:o[last]] + blob[o[last]:].replace(
        b'\0%d\n' % len(e[last][1]), b'\0%d\n' % (len(e[last][1]) + 1000), 1)
    case('entry-too-large', big, 'larger than', o[last])
    dup = ents + [ents[0]]
    blob, o = build(reqs, dup)
    case('duplicate', blob, 'collides', o[-1])
    conflict = ents + [(b'data/plainfile', b'x'), (b'data/plainfile/sub.i', b'y')]
    blob, o = build(reqs, conflict)
    case('file-dir-conflict', blob, 'needs a directory', o[-1])
    case('req-unsupported', build(reqs + b',exp-revlogv2.2', ents)[0],
         'unsupported requirements', 24)
    case('req-no-revlogv1', build(b'generaldelta', ents)[0],
         'revlogv1 missing', 24)
    case('req-bad-byte', build(reqs + b',\x01', ents)[0], 'invalid byte',
         24 + len(reqs) + 1)
    zero = data[:22] + b'\0\0' + data[24:]
    case('req-length-zero', zero, 'requirements length 0', 22)
    nonul = data[:H - 1] + b'X' + data[H:]
    case('req-no-nul', nonul, 'not terminated', H - 1)
    with open(os.path.join(outdir, 'cases.tsv'), 'w') as f:
        for c in cases:
            f.write('%s\t%s\t%d\t%s\t%d\n' % c)


def setreq(inp, out, reqs):
    with open(inp, 'rb') as f:
        data = f.read()
    old, ents = parse(data)
    write(out, build(reqs.encode(), ents)[0])


# --- store path encoding against Mercurial's own --------------------------

def encode(helper):
    sys.path.insert(0, '/usr/lib/python3/dist-packages')
    from mercurial import store
    rnd = random.Random(7)
    pieces = [b'a', b'B', b'.', b' ', b'_', b'~', b':', b'/', b'aux', b'con',
              b'com1', b'lpt9', b'.i', b'.d', b'.hg', b'\xc3\xa9', b'\x01',
              b'\x7f', b'\xff', b'x' * 20, b'Z', b'9', b'prn.txt', b'nul.',
              b'..', b'-', b'\\', b'"', b'*']
    paths = [b'data/' + p + b'.i' for p in special_names() + long_names()]
    paths += [b'meta/a.i/b.d/00manifest.i', b'00changelog.i', b'data/.foo.i',
              b'data/' + b'x' * 150 + b'.', b'data/' + b'dir. /' * 30 + b'f.i']
    while len(paths) < 5000:
        s = b''.join(rnd.choice(pieces) for _ in range(rnd.randint(1, 45)))
        p = b'data/' + s + rnd.choice([b'.i', b'.d', b''])
        if b'//' not in p and not p.endswith(b'/'):
            paths.append(p)
    out = subprocess.run([helper, 'encode'], input=b'\0'.join(paths),
                         stdout=subprocess.PIPE, check=True).stdout.split(b'\0')
    bad = 0
    for i, p in enumerate(paths):
        got = out[4 * i:4 * i + 4]
        want = [store.encodedir(p), store.decodedir(p),
                store._pathencode(p), store._hybridencode(p, False)]
        want_py = store._hybridencode(p, True)
        for what, g, w in zip(['encodedir', 'decodedir', 'pathencode',
                               'hybridencode(plain)'], got, want):
            if g != w:
                bad += 1
                if bad <= 5:
                    print('# %s(%r): got %r, want %r' % (what, p, g, w))
        if want_py != want[2]:
            print('# mercurial disagrees with itself on %r' % p)
    print('# %d paths, %d mismatches' % (len(paths), bad))
    sys.exit(1 if bad else 0)


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == 'tree':
        tree(a[1], int(a[2]))
    elif len(a) == 3 and a[0] == 'bad':
        bad(a[1], a[2])
    elif len(a) == 4 and a[0] == 'setreq':
        setreq(a[1], a[2], a[3])
    elif len(a) == 2 and a[0] == 'encode':
        encode(a[1])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
