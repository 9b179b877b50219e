#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# clone-fake-hg.py: a hostile Mercurial server for test-clone-http.sh: a real server's capabilities, then a getbundle answer spoiled as asked.
"""
Usage: clone-fake-hg.py REAL_URL BUNDLE PORTFILE

Serves HTTP on 127.0.0.1, on a free port written to PORTFILE once it
listens. The first path component says how to answer:
  /ok/       the real capabilities, then BUNDLE (a stream bundle v2) as
             the getbundle answer, in hg's 0.2 media type; no bookmarks
  /trunc/    half of it, then the connection closed early
  /html/     an HTML page (200) instead of the bundle
  /gone/     HTTP 404 for getbundle
  /stall/    the headers and 100 bytes, then nothing
  /hgerror/  hg's error media type (application/hg-error)
  /zlib/     an answer compressed with an engine not asked for
  /nostream/ capabilities without stream=v2 in bundle2, nor the legacy
             stream or streamreqs
  /legacydeny/  no stream=v2, the legacy streamreqs; stream_out says 1
             (stream clones not allowed)
  /legacytrunc/ the same, stream_out a good header and then a few bytes
  /notahg/   capabilities that are not Mercurial's
Anything else is 404.
"""

import http.server
import socketserver
import sys
import time
import urllib.parse
import urllib.request


def main():
    real, bundle_path, portfile = sys.argv[1:4]
    caps = urllib.request.urlopen(real + '?cmd=capabilities').read()
    with open(bundle_path, 'rb') as f:
        bundle = f.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, *args):
            pass

        def send(self, code, ctype, body, length=None):
            self.send_response(code)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length',
                             str(len(body) if length is None else length))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            mode = u.path.strip('/').split('/')[0]
            cmd = urllib.parse.parse_qs(u.query).get('cmd', [''])[0]
            known = ('ok', 'trunc', 'html', 'gone', 'stall', 'hgerror', 'zlib',
                     'nostream', 'notahg', 'legacydeny', 'legacytrunc')
            if mode not in known:
                return self.send(404, 'text/plain', b'not found\n')
            if cmd == 'capabilities':
                c = caps
                if mode in ('nostream', 'legacydeny', 'legacytrunc'):
                    c = c.replace(b'stream%3Dv2', b'stream%3Dv9')
                if mode == 'nostream':
                    c = b' '.join(t for t in c.split(b' ')
                                  if t != b'stream'
                                  and not t.startswith(b'streamreqs='))
                if mode == 'notahg':
                    c = b'<html>hello</html>'
                return self.send(200, 'application/mercurial-0.1', c)
            if cmd == 'listkeys':
                return self.send(200, 'application/mercurial-0.1', b'')
            if cmd == 'stream_out' and mode == 'legacydeny':
                return self.send(200, 'application/mercurial-0.1', b'1\n')
            if cmd == 'stream_out' and mode == 'legacytrunc':
                body = b'0\n5 1000000\ndata/a.i\x0010\n1234'
                self.send(200, 'application/mercurial-0.1', body,
                          length=len(body) + 100)
                self.close_connection = True
                return
            if cmd != 'getbundle' or mode not in (
                    'ok', 'trunc', 'html', 'stall', 'hgerror', 'zlib'):
                return self.send(404, 'text/plain', b'not found\n')
            body = b'\x04none' + bundle
            if mode == 'ok':
                return self.send(200, 'application/mercurial-0.2', body)
            if mode == 'trunc':
                self.send(200, 'application/mercurial-0.2',
                          body[:len(body) // 2], length=len(body))
                self.close_connection = True
                return
            if mode == 'html':
                return self.send(200, 'text/html',
                                 b'<html><body>Sign in</body></html>\n')
            if mode == 'hgerror':
                return self.send(200, 'application/hg-error',
                                 b'abort: repository locked\n')
            if mode == 'zlib':
                return self.send(200, 'application/mercurial-0.2',
                                 b'\x04zlib' + bundle)
            # stall: a beginning, then silence until the client leaves.
            self.send(200, 'application/mercurial-0.2', body[:100],
                      length=len(body))
            for _ in range(120):
                time.sleep(0.5)
                try:
                    self.wfile.write(b'')
                    self.wfile.flush()
                except OSError:
                    return

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    srv = Server(('127.0.0.1', 0), Handler)
    with open(portfile + '.tmp', 'w') as f:
        f.write('%d\n' % srv.server_address[1])
    import os
    os.rename(portfile + '.tmp', portfile)
    srv.serve_forever()


if __name__ == '__main__':
    main()
