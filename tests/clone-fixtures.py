#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# clone-fixtures.py: inputs for test-clone.sh: repository trees, broken bundles, path-encoding cross-checks.
"""
Usage:
  clone-fixtures.py tree DIR REV       shape the working tree DIR for revision
                                        REV (0, 1, 2) of the test repository
                                        (-1: only the names, small; -2:
                                        those a store without fncache
                                        can hold)
  clone-fixtures.py bad GOOD OUTDIR     write broken variants of the bundle
                                        GOOD, and OUTDIR/cases.tsv: name, then
                                        keyword and offset for a file, and
                                        for a pipe
  clone-fixtures.py setreq IN OUT REQS  IN with its requirements replaced
  clone-fixtures.py encode HELPER       compare clone-helper's store path
                                        encoding with Mercurial's own
  clone-fixtures.py bad2 GOOD OUTDIR    the same for a stream bundle v2
                                        (hg bundle -t 'none-v2;stream=v2')
  clone-fixtures.py reframe IN OUT HOW  the v2 bundle IN written again:
                                        HOW is a frame size, and may add
                                        ",param" (an advisory stream
                                        parameter), ",before" / ",after"
                                        (advisory parts), ",interrupt" (an
                                        advisory out-of-band part)
  clone-fixtures.py setreq2 IN OUT REQS the v2 bundle IN with REQS
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


# Store names a hostile bundle may try to plant: Mercurial's transaction
# and lock files, config, and names outside the revlog layout.
HOSTILE_NAMES = [
    b'journal', b'journal.phaseroots', b'undo', b'undo.backupfiles', b'wlock',
    b'hgrc', b'bookmarks', b'narrowspec', b'00changelog', b'foo.i',
    b'data/journal', b'data/x.txt', b'meta/00manifest', b'dh/x.i',
    b'store/00changelog.i', b'cache/branch2',
]


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
    if rev in (-1, -2):
        # Small: the special and long names only (fuzzing seeds). -2: what
        # a store without fncache holds: no long names (it cannot hash
        # them), no directory named *.i, *.d or *.hg (hg 6.3 cannot stream
        # those out of such a store: it asks for the decoded name).
        names = special_names()
        if rev == -1:
            names += long_names()
        else:
            names = [n for n in names
                     if not any(c.endswith((b'.i', b'.d', b'.hg'))
                                for c in n.split(b'/')[:-1])]
        for n in names:
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
    case('changegroup-magic', b'HG10' + data[4:], 'changegroup', 0)
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
    renamed('empty-component', b'data//x.i', 'empty component')
    renamed('trailing-slash', b'data/x.i/', 'empty component')
    renamed('empty', b'', 'empty entry name')
    renamed('requires', b'requires', 'keeps itself')
    # Only what a stream clone creates (store.walk, phaseroots, obsstore).
    for n in HOSTILE_NAMES:
        renamed('planted-' + n.decode().replace('/', '-'), n,
                'not a file a stream clone creates')
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
    conflict = ents + [(b'data/plainfile.dat', b'x'), (b'data/plainfile.dat/sub.i', b'y')]
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


# --- stream bundles v2 (bundle2) -----------------------------------------

def i32(n):
    return struct.pack('>i', n)


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def part_header(ptype, mandatory=(), advisory=()):
    h = bytearray([len(ptype)]) + ptype + struct.pack('>I', 0)
    h += bytes([len(mandatory), len(advisory)])
    for k, v in list(mandatory) + list(advisory):
        h += bytes([len(k), len(v)])
    for k, v in list(mandatory) + list(advisory):
        h += k + v
    return bytes(h)


def frames(payload, size):
    out = bytearray()
    for i in range(0, len(payload), size):
        out += i32(len(payload[i:i + size])) + payload[i:i + size]
    return bytes(out)


def parse2(data):
    """(stream params, requirements, [(src, name, data)]) of a v2 bundle."""
    assert data[:4] == b'HG20', data[:4]
    pos = 4
    (n,) = struct.unpack('>i', data[pos:pos + 4])
    params = data[pos + 4:pos + 4 + n]
    pos += 4 + n
    (hs,) = struct.unpack('>i', data[pos:pos + 4])
    h = data[pos + 4:pos + 4 + hs]
    pos += 4 + hs
    t = h[1:1 + h[0]]
    assert t.lower() == b'stream2', t
    at = 1 + h[0] + 4
    nm, na = h[at], h[at + 1]
    at += 2
    sizes = [(h[at + 2 * i], h[at + 2 * i + 1]) for i in range(nm + na)]
    at += 2 * (nm + na)
    kv = {}
    for kl, vl in sizes:
        kv[h[at:at + kl]] = h[at + kl:at + kl + vl]
        at += kl + vl
    payload = bytearray()
    while True:
        (fs,) = struct.unpack('>i', data[pos:pos + 4])
        pos += 4
        if fs == 0:
            break
        payload += data[pos:pos + fs]
        pos += fs
    assert data[pos:] == i32(0), 'more than one part'
    from urllib.parse import unquote_to_bytes
    reqs = unquote_to_bytes(kv[b'requirements'])
    ents = []
    p = 0
    for _ in range(int(kv[b'filecount'])):
        src = payload[p:p + 1]
        p += 1
        vals = []
        for _ in range(2):
            v = shift = 0
            while True:
                c = payload[p]
                p += 1
                v |= (c & 0x7f) << shift
                shift += 7
                if not c & 0x80:
                    break
            vals.append(v)
        name = bytes(payload[p:p + vals[0]])
        p += vals[0]
        ents.append((src, name, bytes(payload[p:p + vals[1]])))
        p += vals[1]
    assert p == len(payload)
    return params, reqs, ents


def entry2(src, name, d, name_len=None, data_len=None):
    return (src + uvarint(len(name) if name_len is None else name_len) +
            uvarint(len(d) if data_len is None else data_len) + name + d)


class Bundle2:
    """A v2 bundle being built, with the offsets the reader reports."""

    def __init__(self, reqs, ents, files=None, nbytes=None, frame=32768,
                 sparams=b'', before=b'', after=b'', tail=i32(0),
                 extra_params=(), payload_extra=b'', drop=(),
                 raw_entries=None, interrupt_at=None, interrupt=b''):
        from urllib.parse import quote_from_bytes
        if files is None:
            files = len(ents)
        if nbytes is None:
            nbytes = sum(len(d) for _, _, d in ents)
        out = bytearray(b'HG20' + i32(len(sparams)) + sparams)
        out += before
        if not isinstance(files, bytes):
            files = b'%d' % files
        params = [(b'bytecount', b'%d' % nbytes), (b'filecount', files),
                  (b'requirements', quote_from_bytes(reqs, safe='').encode())]
        params = [kv for kv in params if kv[0] not in drop]
        params += list(extra_params)
        self.part_offset = len(out)
        h = part_header(b'STREAM2', params)
        # Where each parameter's value is.
        at = len(out) + 4 + 1 + 7 + 4 + 2 + 2 * len(params)
        self.value_offset = {}
        for k, v in params:
            self.value_offset[k] = at + len(k)
            at += len(k) + len(v)
        out += i32(len(h)) + h
        payload = bytearray()
        self.entry_pos = []
        for e in (raw_entries if raw_entries is not None else
                  [entry2(*e) for e in ents]):
            self.entry_pos.append(len(payload))
            payload += e
        self.payload_end = len(payload)
        payload += payload_extra
        self.data_start = len(out)
        self.frame = frame
        body = frames(bytes(payload), frame)
        if interrupt_at is not None:
            # An out-of-band part between two frames.
            k = interrupt_at
            cut = k * (frame + 4)
            self.interrupt_offset = len(out) + cut
            body = body[:cut] + i32(-1) + interrupt + body[cut:]
            self.shift_from, self.shift = k * frame, 4 + len(interrupt)
        else:
            self.shift_from, self.shift = None, 0
        out += body
        self.end_payload = len(out)
        out += i32(0) + after
        self.end_parts = len(out)
        out += tail
        self.blob = bytes(out)

    def raw(self, p):
        """The bundle offset of payload position p."""
        f = self.frame
        r = self.data_start + (p // f) * (f + 4) + 4 + p % f
        if self.shift_from is not None and p >= self.shift_from:
            r += self.shift
        return r

    def entry(self, i):
        return self.raw(self.entry_pos[i])


def advisory_part(ptype=b'output', payload=b'hello'):
    h = part_header(ptype, advisory=[(b'in-reply-to', b'0')])
    return i32(len(h)) + h + (frames(payload, 3) if payload else b'') + i32(0)


def bad2(good, outdir):
    with open(good, 'rb') as f:
        data = f.read()
    sp, reqs, ents = parse2(data)
    assert len(ents) >= 3
    os.makedirs(outdir, exist_ok=True)
    cases = []
    F = 100  # small frames: entries span them
    last = len(ents) - 1
    B = sum(len(d) for _, _, d in ents)

    def mk(**kw):
        kw.setdefault('frame', F)
        return Bundle2(reqs, ents, **kw)

    def case(name, blob, keyword, off_file, off_pipe=None, kw_pipe=None):
        write(os.path.join(outdir, name + '.hg'), blob)
        cases.append((name, keyword, off_file, kw_pipe or keyword,
                      off_file if off_pipe is None else off_pipe))

    g = mk()
    T = len(g.blob)
    case('v2-trunc-params', b'HG20\0\0', 'ends in the stream parameters size', 6)
    case('v2-negative-params', b'HG20' + i32(-3), 'out of range', 4)
    for c in (b'ZS', b'GZ', b'BZ'):
        case('v2-compressed-' + c.decode(), b'HG20' + i32(14) + b'Compression=' + c
             + data[8:], 'compressed bundle2 container (Compression=%s)' % c.decode(), 8)
    case('v2-mandatory-sparam', mk(sparams=b'Foo=1').blob,
         "unsupported mandatory stream parameter 'Foo'", 8)
    case('v2-sparam-digit', mk(sparams=b'1x').blob, 'not starting with a letter', 8)
    case('v2-no-stream2', b'HG20' + i32(0) + i32(0), 'no stream2 part', 8)
    cg = part_header(b'CHANGEGROUP', [(b'version', b'02')])
    case('v2-changegroup', b'HG20' + i32(0) + i32(len(cg)) + cg + i32(0) + i32(0),
         'changegroup part', 8)
    foo = part_header(b'FOO')
    case('v2-mandatory-part', b'HG20' + i32(0) + i32(len(foo)) + foo + i32(0)
         + data[8:], "unsupported mandatory part 'foo'", 8)
    case('v2-negative-part-header', b'HG20' + i32(0) + i32(-5),
         'negative part header size', 8)
    short = b'\x07STREAM2\0\0'
    case('v2-part-header-short', b'HG20' + i32(0) + i32(len(short)) + short,
         'too short', 8 + 4 + 8)
    b = mk(drop=(b'requirements',))
    case('v2-missing-param', b.blob, 'without its requirements parameter', 8)
    b = mk(files=b'1x')
    case('v2-bad-count', b.blob, 'invalid byte 0x78 in its filecount',
         b.value_offset[b'filecount'] + 1)
    b = mk(extra_params=[(b'frobnicate', b'1')])
    case('v2-mandatory-part-param', b.blob,
         "unsupported mandatory parameter 'frobnicate'", b.value_offset[b'frobnicate'] - 10)
    cut = g.part_offset + 9
    case('v2-trunc-part-header', g.blob[:cut], 'ends in a part header', cut)
    cut = g.entry(0) + 10
    case('v2-trunc-data', g.blob[:cut], 'byte count', g.value_offset[b'bytecount'],
         cut, 'truncated bundle: it ends')
    case('v2-trunc-end', g.blob[:T - 4], 'ends in a part header size', T - 4)
    case('v2-trunc-payload-end', g.blob[:T - 8], 'ends in the size of a payload frame', T - 8)
    b = mk(nbytes=B + 1000)
    case('v2-bytecount-high', b.blob, 'byte count', b.value_offset[b'bytecount'])
    b = mk(nbytes=B - 1)
    case('v2-bytecount-low', b.blob, 'byte count leaves', b.entry(last))
    b = mk(files=len(ents) + 1)
    case('v2-filecount-high', b.blob, 'files announced', b.end_payload + 4)
    b = mk(files=1 << 40)
    case('v2-filecount-huge', b.blob, 'false file count', b.value_offset[b'filecount'],
         b.end_payload + 4, 'files announced')
    b = mk(files=len(ents) - 1)
    case('v2-filecount-low', b.blob, 'after the last', b.entry(last))
    b = mk(payload_extra=b'junk')
    case('v2-trailing-payload', b.blob, 'after the last', b.raw(b.payload_end))
    case('v2-trailing-data', g.blob + b'junk', 'after the end of the bundle2', T)
    b = mk(after=i32(len(foo)) + foo)
    case('v2-mandatory-part-after', b.blob, "mandatory part 'foo'", b.end_payload + 4)
    # A frame of negative size: the third frame header.
    nf = bytearray(g.blob)
    fo = g.data_start + 2 * (F + 4)
    nf[fo:fo + 4] = i32(-2)
    case('v2-negative-frame', bytes(nf), 'negative payload frame size -2', fo)
    ab = part_header(b'error:abort', [(b'message', b'boom: disk on fire')])
    b = mk(interrupt_at=2, interrupt=i32(len(ab)) + ab + i32(0))
    case('v2-interrupt-abort', b.blob,
         "producer failed while writing it (error:abort): boom: disk on fire",
         b.interrupt_offset)

    def renamed(case_name, src, newname, keyword, extra=0, **kw):
        e = list(ents)
        e[last] = (src, newname, e[last][2])
        b = Bundle2(reqs, e, frame=F, **kw)
        case('v2-name-' + case_name, b.blob, keyword, b.entry(last) + extra)

    renamed('absolute', b's', b'/tmp/escape.i', 'absolute')
    renamed('dotdot', b's', b'data/../../escape.i', "'..' component")
    renamed('dot', b's', b'data/./x.i', "'.' component")
    renamed('newline', b's', b'data/a\nb.i', 'newline')
    renamed('empty-component', b's', b'data//x.i', 'empty component')
    renamed('requires', b's', b'requires', 'keeps itself')
    for n in HOSTILE_NAMES:
        renamed('planted-' + n.decode().replace('/', '-'), b's', n,
                'not a file a stream clone creates')
    renamed('nul', b's', b'data/a\0b.i', 'NUL byte')
    renamed('empty', b's', b'', 'empty entry name')
    renamed('cache-hgrc', b'c', b'hgrc', 'cache entry name')
    renamed('cache-escape', b'c', b'../hgrc', 'cache entry name')
    renamed('cache-dir', b'c', b'branch2/x', 'cache entry name')
    renamed('source', b'x', ents[last][1], 'invalid entry source byte 0x78')
    raw = [entry2(*e) for e in ents]
    raw[last] = b's' + b'\xff' * 10 + b'\x01' + b'x'
    b = Bundle2(reqs, ents, frame=F, raw_entries=raw)
    case('v2-uvarint-huge', b.blob, 'name length too large', b.entry(last) + 1)
    raw = [entry2(*e) for e in ents]
    raw[last] = entry2(b's', ents[last][1], ents[last][2], name_len=9000)
    b = Bundle2(reqs, ents, frame=F, raw_entries=raw)
    case('v2-name-too-long', b.blob, 'longer than', b.entry(last))
    raw = [entry2(*e) for e in ents]
    raw[last] = entry2(*ents[last], data_len=len(ents[last][2]) + 1000)
    b = Bundle2(reqs, ents, frame=F, raw_entries=raw)
    case('v2-entry-too-large', b.blob, 'larger than', b.entry(last))
    dup = ents + [ents[0]]
    b = Bundle2(reqs, dup, frame=F)
    case('v2-duplicate', b.blob, 'collides', b.entry(len(dup) - 1))
    cdup = ents + [(b'c', b'branch2-immutable', b'x'), (b'c', b'branch2-immutable', b'y')]
    b = Bundle2(reqs, cdup, frame=F)
    case('v2-cache-duplicate', b.blob, 'collides', b.entry(len(cdup) - 1))
    conflict = ents + [(b's', b'data/plainfile.dat', b'x'), (b's', b'data/plainfile.dat/sub.i', b'y')]
    b = Bundle2(reqs, conflict, frame=F)
    case('v2-file-dir-conflict', b.blob, 'needs a directory', b.entry(len(conflict) - 1))
    b = Bundle2(reqs + b',exp-revlogv2.2', ents, frame=F)
    case('v2-req-unsupported', b.blob, 'unsupported requirements: exp-revlogv2.2',
         b.value_offset[b'requirements'])
    b = Bundle2(reqs + b',\x01', ents, frame=F)
    case('v2-req-bad-byte', b.blob, 'invalid byte 0x01 in the requirements',
         b.value_offset[b'requirements'])
    b = Bundle2(b'generaldelta', ents, frame=F)
    case('v2-req-no-revlogv1', b.blob, 'revlogv1 missing', b.value_offset[b'requirements'])
    with open(os.path.join(outdir, 'cases.tsv'), 'w') as f:
        for c in cases:
            f.write('%s\t%s\t%d\t%s\t%d\n' % c)


def reframe(inp, out, how):
    with open(inp, 'rb') as f:
        sp, reqs, ents = parse2(f.read())
    opts = how.split(',')
    kw = {'frame': int(opts[0])}
    if 'param' in opts:
        kw['sparams'] = b'someday=maybe'
    if 'before' in opts:
        kw['before'] = advisory_part(b'output', b'before the stream')
    if 'after' in opts:
        kw['after'] = advisory_part(b'x-note', b'')
    if 'interrupt' in opts:
        oob = advisory_part(b'output', b'remote: working')
        kw['interrupt_at'] = 1
        kw['interrupt'] = oob
    write(out, Bundle2(reqs, ents, **kw).blob)


def setreq2(inp, out, reqs):
    with open(inp, 'rb') as f:
        sp, old, ents = parse2(f.read())
    write(out, Bundle2(reqs.encode(), ents).blob)


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
    elif len(a) == 3 and a[0] == 'bad2':
        bad2(a[1], a[2])
    elif len(a) == 4 and a[0] == 'reframe':
        reframe(a[1], a[2], a[3])
    elif len(a) == 4 and a[0] == 'setreq2':
        setreq2(a[1], a[2], a[3])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
