#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# hg-stream-gen.py: the time Mercurial takes to make a stream clone's bytes in one process, without HTTP: what hg serve does for a getbundle (or stream_out) before its web server sends it.
#
# Usage: bench/hg-stream-gen.py REPO [v2|v1]
# Runs, in this process (Mercurial imported, the repository opened and the
# stream made once first, untimed), what the server runs for the request
# bgrun clone URL
# sends: exchange.getbundlechunks with bundlecaps HG20 and
# bundle2=HG20\nstream=v2, cg=0, common=null, stream=1 (v2, the default),
# or generatev1wireproto (v1, the legacy stream_out); every chunk is taken
# and dropped. Prints the seconds that took, then the bytes, on one line.
# Run it with Debian's /usr/bin/python3 (where Mercurial is).
import sys
import time

from mercurial import exchange, hg, streamclone, ui as uimod
from mercurial.node import nullid
from mercurial.utils import urlutil  # noqa: F401 (loads what hg serve has)
from mercurial import util

repo_path = sys.argv[1].encode()
kind = sys.argv[2] if len(sys.argv) > 2 else 'v2'
ui = uimod.ui.load()
ui.setconfig(b'ui', b'quiet', b'yes')
repo = hg.repository(ui, repo_path)


def generate():
    """The stream's bytes, made as the server makes them: how many."""
    n = 0
    if kind == 'v2':
        caps = {b'HG20', b'bundle2=' + util.urlreq.quote(b'HG20\nstream=v2')}
        info, chunks = exchange.getbundlechunks(
            repo, b'serve', common=[nullid], bundlecaps=caps, cg=False,
            stream=True)
    else:
        chunks = streamclone.generatev1wireproto(repo)
    for chunk in chunks:
        n += len(chunk)
    return n


# Once untimed: Mercurial imports its modules on first use (demandimport),
# which a running hg serve has done before the request.
generate()
start = time.perf_counter()
n = generate()
print('%.6f %d' % (time.perf_counter() - start, n))
