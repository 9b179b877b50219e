# SPDX-License-Identifier: MIT
# test_hgext.py: the real hg with hgext3rd/bgrun.py in a real repository: events recorded, commands never broken.
"""Each hg runs as its own process (Debian's /usr/bin/hg on /usr/bin/python3)
with a private HGRCPATH and HOME, PYTHONPATH giving this build's module and
the source tree's extension. Rows are read back from the store with
Python's sqlite3, matched to the hg process by its pid."""

import os
import shutil
import sqlite3
import subprocess
import time
import unittest

import testlib
from testlib import HELPER, TmpCase, read_report

HG = shutil.which('hg')

BOOM = '''
from mercurial import registrar
cmdtable = {}
command = registrar.command(cmdtable)

@command(b'boom', [], b'hg boom', norepo=True)
def boom(ui, **opts):
    raise RuntimeError('boom from the test extension')
'''

# What the hg process has mapped when Python exits (its atexit).
MAPS = '''
import atexit, os

def uisetup(ui):
    def dump():
        with open('/proc/self/maps') as m, open(os.environ['BGRUN_TEST_MAPS'], 'w') as f:
            f.write(m.read())
    atexit.register(dump)
'''


class HgExt(TmpCase):
    def setUp(self):
        super().setUp()
        if HG is None:
            self.skipTest('hg is not installed')
        self.db = self.path('events.db')
        self.rc = self.path('hgrc')
        self.boom = self.path('boom.py')
        with open(self.boom, 'w') as f:
            f.write(BOOM)
        self.repo = self.path('repo')
        self.env = dict(os.environ, HGRCPATH=self.rc, HOME=self.tmp, HGPLAIN='1',
                        HGUSER='test', HGENCODING='utf-8', BGRUN_DB=self.db,
                        BGRUN_SINK='embedded', BGRUN_SOCKET=self.path('none.sock'))
        self.hgrc()

    def hgrc(self, extra='', log='commandfinish, commandexception', ext=True):
        with open(self.rc, 'w') as f:
            f.write('[extensions]\nboom = %s\n' % self.boom)
            if ext:
                f.write('bgrun =\n[bgrun]\nlog = %s\n' % log)
            f.write(extra)

    def hg(self, *args, cwd=None, env=None):
        t0 = time.monotonic()
        p = subprocess.Popen([HG] + list(args), cwd=cwd or self.repo, env=env or self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate(timeout=120)
        wall = time.monotonic() - t0
        return p.pid, p.returncode, out, err, wall

    def rows(self, pid=None):
        if not os.path.exists(self.db):
            return []
        con = sqlite3.connect('file:%s?mode=ro' % self.db, uri=True)
        con.row_factory = sqlite3.Row
        try:
            q = 'SELECT * FROM events'
            if pid is not None:
                return [dict(r) for r in con.execute(q + ' WHERE pid = ?', (pid,))]
            return [dict(r) for r in con.execute(q)]
        finally:
            con.close()

    def test_real_commands(self):
        os.mkdir(self.repo)
        with open(os.path.join(self.repo, 'a'), 'w') as f:
            f.write('a\n')
        cases = [
            (('init',), 'init', 0),
            (('add', 'a'), 'add', 0),
            (('commit', '-m', 'first'), 'commit', 0),
            (('status',), 'status', 0),
            (('log', '-r', '.', '-T', '{rev}\n'), 'log', 0),
            (('cat', '-r', '.', 'no-such-file'), 'cat', 1),
            (('update', '-r', 'no-such-rev'), 'update', 255),
            (('boom',), 'boom', 1),
        ]
        for args, canonical, code in cases:
            with self.subTest(args=args):
                pid, rc, out, err, wall = self.hg(*args)
                self.assertEqual(rc, code, err)
                self.assertNotIn(b'bgrun:', err)
                evs = {r['event']: r for r in self.rows(pid)}
                fin = evs['commandfinish']
                self.assertEqual(fin['source'], 'hg')
                self.assertEqual(fin['exit_code'], code)
                self.assertEqual(fin['result'], 'success' if code == 0 else 'failed')
                self.assertEqual(fin['display'], 'hg ' + canonical)
                self.assertGreater(fin['duration_ns'], 0)
                self.assertLessEqual(fin['duration_ns'], wall * 1e9)
                self.assertEqual(fin['end_ns'] - fin['start_ns'], fin['duration_ns'])
                self.assertIn(' exited %d after ' % code, fin['message'])
                self.assertEqual(fin['cwd'], os.path.realpath(self.repo))
                self.assertIn('"canonical_command":"%s"' % canonical, fin['options'])
                if canonical == 'boom':
                    exc = evs['commandexception']
                    self.assertIn('boom from the test extension', exc['message'])
                    self.assertIn('Traceback', exc['message'])
                    self.assertEqual(exc['source'], 'hg')
                else:
                    self.assertNotIn('commandexception', evs)
        # Read back through the module by the extension's own commands.
        pid, rc, out, err, wall = self.hg('bgrun-log', '-l', '3')
        self.assertEqual(rc, 0, err)
        lines = out.decode().splitlines()
        self.assertEqual(len(lines), 3, out)
        self.assertTrue(lines[0].endswith('  hg boom') and '  exit 1 ' in lines[0], lines)
        self.assertTrue(lines[1].endswith('  hg update') and '  exit 255 ' in lines[1], lines)
        self.assertTrue(lines[2].endswith('  hg cat'), lines)
        # A command run elsewhere is not this repository's.
        self.assertEqual(self.hg('version', '-q', cwd=self.tmp)[1], 0)
        pid, rc, out, err, wall = self.hg('bgrun-stats')
        self.assertEqual(rc, 0, err)
        stats = {l.split()[1]: l.split()[2:4] for l in out.decode().splitlines()[1:]}
        self.assertEqual(stats['status'], ['1', '0'])
        self.assertEqual(stats['update'], ['1', '1'])
        self.assertEqual(stats['bgrun-log'], ['1', '0'])
        self.assertNotIn('version', stats)
        pid, rc, out, err, wall = self.hg('bgrun-stats', '--all')
        self.assertIn(b'hg version ', out)

    def test_log_star(self):
        self.hgrc(log='*')
        pid, rc, out, err, wall = self.hg('version', '-q', cwd=self.tmp)
        self.assertEqual(rc, 0, err)
        events = {r['event'] for r in self.rows(pid)}
        self.assertIn('commandfinish', events)
        self.assertIn('command', events)

    def test_log_list_as_configlist_reads_it(self):
        # Words split on commas and white space; quoted text goes to hg's
        # own parser.
        for log, want in (('commandfinish,commandexception', {'commandfinish'}),
                          ('  commandfinish \t commandexception ,', {'commandfinish'}),
                          ('"commandfinish", "command"', {'commandfinish', 'command'}),
                          ('command', {'command'})):
            with self.subTest(log=log):
                self.hgrc(log=log)
                pid, rc, out, err, wall = self.hg('version', '-q', cwd=self.tmp)
                self.assertEqual(rc, 0, err)
                self.assertEqual({r['event'] for r in self.rows(pid)}, want)

    def test_broken_sink_never_breaks_hg(self):
        os.mkdir(self.repo)
        # The reference: the same commands with a working sink.
        self.hgrc()
        want = [self.hg(*a)[1:4] for a in (('init',), ('status',), ('boom',))]
        brokens = [
            # No store and no spool can be made under a regular file.
            dict(BGRUN_DB='/dev/null/events.db'),
            # A daemon-only sink with no daemon: kept in the spool.
            dict(BGRUN_SINK='daemon'),
            # A sink that cannot even be made.
            dict(BGRUN_SINK='sometimes'),
        ]
        for broken in brokens:
            with self.subTest(broken=broken):
                shutil.rmtree(self.repo)
                os.mkdir(self.repo)
                self.hgrc()
                env = dict(self.env, **broken)
                got = [self.hg(*a, env=env)[1:4] for a in (('init',), ('status',), ('boom',))]
                for (rc, out, err), (wrc, wout, werr) in zip(got, want):
                    self.assertEqual((rc, out), (wrc, wout))
                    lines = [l for l in err.splitlines() if l.startswith(b'bgrun:')]
                    rest = [l for l in err.splitlines() if not l.startswith(b'bgrun:')]
                    self.assertEqual(rest, werr.splitlines())
                    if broken.get('BGRUN_SINK') == 'daemon':
                        self.assertEqual(lines, [])  # spooled, not lost
                    else:
                        # boom fails two events: still one line.
                        self.assertEqual(len(lines), 1, err)
                        self.assertIn(b'event not recorded', lines[0])

    def test_daemon_path_loads_no_sqlite(self):
        # With the daemon answering, hg records its commands without
        # loading libbgrun-store or SQLite; the embedded store loads them.
        if not testlib.LOGSINK:
            self.skipTest('BGRUN_TEST_LOGSINK is not set')
        sock = self.path('sink.sock')
        maps_ext = self.path('maps.py')
        with open(maps_ext, 'w') as f:
            f.write(MAPS)
        env = dict(self.env, BGRUN_SOCKET=sock, BGRUN_SINK='try',
                   BGRUN_TEST_MAPS=self.path('maps'))
        out = subprocess.run([testlib.LOGSINK, 'serve', '--detach', '--log', self.path('d.log')],
                             env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        dpid = int(out.stdout)
        self.addCleanup(os.kill, dpid, 15)
        self.hgrc(extra='[extensions]\nmaps = %s\n' % maps_ext)
        os.mkdir(self.repo)
        self.assertEqual(self.hg('init', env=env)[1], 0)
        for sink, loaded in (('try', False), ('embedded', True)):
            with self.subTest(sink=sink):
                pid, rc, out, err, wall = self.hg('status', env=dict(env, BGRUN_SINK=sink))
                self.assertEqual((rc, err), (0, b''))
                maps = testlib.slurp(env['BGRUN_TEST_MAPS'])
                self.assertEqual(('libsqlite3' in maps, 'libbgrun-store' in maps),
                                 (loaded, loaded))
                fin, = [r for r in self.rows(pid) if r['event'] == 'commandfinish']
                self.assertEqual((fin['display'], fin['exit_code']), ('hg status', 0))

    def test_runbgcommand_replaced(self):
        # logtoprocess's hook (shell=True) through bgrun's primitive: no
        # `( CMD ) &`, so the hook does not start with SIGINT and SIGQUIT
        # ignored, as a job of hg's shell does.
        testlib.require_helper(self)
        reports = {}
        for replaced in (True, False):
            rep = self.path()
            self.hgrc(log='commandfinish')
            with open(self.rc, 'a') as f:
                f.write('runbgcommand = %s\n' % replaced)
                f.write('[extensions]\nlogtoprocess =\n')
                f.write('[logtoprocess]\ncommandfinish = "%s" helper report "%s"\n'
                        % (HELPER, rep))
            pid, rc, out, err, wall = self.hg('debugbgrun', cwd=self.tmp)
            self.assertEqual(rc, 0, err)
            self.assertIn(b'runbgcommand: %s\n' % (b'bgrun' if replaced else b'hg'), out)
            reports[replaced] = read_report(rep)
            self.assertIn(b'EVENT=commandfinish', reports[replaced]['env'])
        self.assertEqual(reports[True]['sigign'], '0000000000000000')
        self.assertEqual(reports[False]['sigign'], '0000000000000006')

    def test_forked_child_opens_its_own_sink(self):
        # In-process, as a chg worker forked from its server is: the child
        # never uses (nor closes) the parent's sink.
        import hgext3rd.bgrun as ext
        from mercurial import ui as uimod
        u = uimod.ui()
        u.setconfig(b'bgrun', b'db', os.fsencode(self.db))
        u.setconfig(b'bgrun', b'mode', b'embedded')
        opts = {b'return_code': 0, b'duration': 0.5, b'canonical_command': b'status'}
        ext._record(u, b'commandfinish', b'st exited 0\n', opts)
        parent_sink = ext._state.sink
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ext._record(u, b'commandfinish', b'child\n', opts)
                code = 0 if ext._state.sink is not parent_sink else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        ext._record(u, b'commandfinish', b'parent again\n', opts)
        self.assertIs(ext._state.sink, parent_sink)
        # The parent sends (and waits at exit); the child put, as it ends
        # with os._exit().
        ext._flush(u)
        self.assertEqual(ext._state.failed, 0)
        msgs = sorted(r['message'] for r in self.rows())
        self.assertEqual(msgs, ['child', 'parent again', 'st exited 0'])
        self.assertTrue(all(r['display'] == 'hg status' for r in self.rows()))

    def test_stats_counts(self):
        self.hgrc(log='*')
        pid, rc, out, err, wall = self.hg('debugbgrun', cwd=self.tmp)
        self.assertEqual(rc, 0, err)
        # The `command` event came before the command ran.
        self.assertIn(b'recorded: 1\n', out)
        self.assertIn(b'failed: 0\n', out)
        self.assertIn(b'last path: store\n', out)


if __name__ == '__main__':
    testlib.main()
