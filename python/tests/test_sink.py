# SPDX-License-Identifier: MIT
# test_sink.py: bgrun.Sink and bgrun.log(): events into the store, through the daemon, into the spool.

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time

import testlib
from testlib import LOGSINK, TmpCase

import bgrun


def rows(db, where='1'):
    con = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute('SELECT * FROM events WHERE ' + where)]
    finally:
        con.close()


class SinkCase(TmpCase):
    def setUp(self):
        super().setUp()
        self.db = self.path('events.db')
        self.sock = self.path('sink.sock')

    def test_embedded_fields(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            eid = s.put('deploy', message='it went out', exit_code=3, signal=None,
                        argv=[b'make', 'a b', b'\xff'], tag='t1', duration=1.5,
                        options={'k': 'v', 'n': 1, 'b': b'bytes'}, source='ci',
                        result='failed', pid=1234, display=b'caf\xc3\xa9')
            self.assertEqual(s.via, 'store')
        self.assertEqual(len(eid), 36)
        r, = rows(self.db)
        self.assertEqual(r['id'], eid)
        self.assertEqual((r['event'], r['source'], r['message'], r['exit_code'], r['signal'],
                          r['tag'], r['duration_ns'], r['result'], r['pid'], r['display']),
                         ('deploy', 'ci', 'it went out', 3, None, 't1', 1500000000, 'failed',
                          1234, 'caf\xe9'))
        self.assertEqual(json.loads(r['argv']), ['make', 'a b', {'hex': 'FF'}])
        self.assertEqual(json.loads(r['options']), {'k': 'v', 'n': '1', 'b': 'bytes'})
        self.assertEqual(r['cwd'], os.getcwd())
        self.assertEqual(r['uid'], os.getuid())

    def test_defaults_and_id(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            s.put('plain')
            s.put('again', id='my-id.1', result='running')
            s.put('again', id='my-id.1', result='success', message='the running row, final')
            s.put('again', id='my-id.1', result='failed', message='a retry changes nothing')
        by_event = {r['event']: r for r in rows(self.db)}
        self.assertEqual(by_event['plain']['source'], 'python')
        self.assertEqual(rows(self.db, "id = 'my-id.1'")[0]['message'], 'the running row, final')
        self.assertEqual(len(rows(self.db)), 2)

    def test_bad_fields(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            with self.assertRaises(TypeError):
                s.put('x', no_such_field=1)
            with self.assertRaises(TypeError):
                s.put('x', exit_code='3')
            with self.assertRaises(ValueError):
                s.put('x', message='nul\0inside')
            with self.assertRaises(ValueError):
                s.put('x', id='not a valid id')
            with self.assertRaises(TypeError):
                s.put('x', argv='a string')
            with self.assertRaises(bgrun.SinkError) as cm:
                s.put('x', options='[not an object]')
            self.assertEqual(cm.exception.errno, 22)
            self.assertFalse(cm.exception.spooled)
        with self.assertRaises(ValueError):
            bgrun.Sink(self.db, mode='sometimes')
        s.close()
        with self.assertRaises(ValueError):
            s.put('x')

    def test_hglog_fields(self):
        # What hgext3rd/bgrun.py recorded in Python before hglog() built it:
        # each rule of that code, checked on a stored row.
        class Named:  # pycompat.bytestr takes __bytes__ where there is one
            def __bytes__(self):
                return b'by bytes'

        class Code(int):  # an int's subclass too: not str()'s fast path
            def __bytes__(self):
                return b'code by bytes'

        opts = {b'canonical_command': b'status', b'return_code': 1, b'duration': 0.25,
                b'flag': True, b'off': False, b'none': None, b'num': 3,
                b'\xe9t\xe9': b'x', b'text': 'ascii str', b'named': Named(),
                b'code': Code(7)}
        before = time.time_ns()
        with bgrun.Sink(self.db, mode='embedded') as s:
            fin = s.hglog(b'commandfinish', b'status exited 1 after 0.25 seconds\n', opts,
                          put=True)
            exc = s.hglog(b'commandexception', b'Traceback\nboom\n', {b'k': b'v'}, put=True)
            long = s.hglog(b'longmsg', b'a' * 100001 + b'\n', {}, put=True)
            edge = s.hglog(b'edgemsg', b'b' * 99999 + b'\n', {}, put=True)
            sent = s.hglog(b'commandfinish', b'sent\n', {b'return_code': 0,
                                                          b'duration': -1.0,
                                                          b'canonical_command': b''})
            self.assertEqual(s.flush(), [])
        after = time.time_ns()
        by_id = {r['id']: r for r in rows(self.db)}
        r = by_id[fin]
        self.assertEqual((r['event'], r['source'], r['pid'], r['message'], r['exit_code'],
                          r['result'], r['duration_ns'], r['display'], r['cwd']),
                         ('commandfinish', 'hg', os.getpid(),
                          'status exited 1 after 0.25 seconds', 1, 'failed', 250000000,
                          'hg status', os.getcwd()))
        self.assertTrue(before <= r['end_ns'] <= after)
        self.assertEqual(r['end_ns'] - r['start_ns'], r['duration_ns'])
        self.assertEqual(json.loads(r['options']), {
            'canonical_command': 'status', 'return_code': '1', 'duration': '0.25',
            'flag': '1', 'off': '0', 'none': '0', 'num': '3', '\xe9t\xe9': 'x',
            'text': 'ascii str', 'named': 'by bytes', 'code': 'code by bytes'})
        r = by_id[exc]
        self.assertEqual((r['message'], r['exit_code'], r['result'], r['display'],
                          r['end_ns'], json.loads(r['options'])),
                         ('Traceback\nboom', None, None, None, None, {'k': 'v'}))
        self.assertEqual(by_id[long]['message'], 'a' * 100000 + ' (truncated)')
        self.assertEqual(by_id[edge]['message'], 'b' * 99999)
        r = by_id[sent]
        self.assertEqual((r['message'], r['exit_code'], r['result'], r['duration_ns'],
                          r['start_ns'], r['display']),
                         ('sent', 0, 'success', None, None, None))

    def test_hglog_duration_rounds_as_python(self):
        durations = [0.0, 1e-9, 2.5e-9, 3.5e-9, 0.1234567895, 12.3456789125, 4.0000000005,
                     86400.123456789]
        with bgrun.Sink(self.db, mode='embedded') as s:
            ids = [s.hglog(b'commandfinish', b'', {b'duration': d}, put=True)
                   for d in durations]
        got = {r['id']: r['duration_ns'] for r in rows(self.db)}
        self.assertEqual([got[i] for i in ids], [round(d * 1e9) for d in durations])

    def test_hglog_bad_arguments(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            with self.assertRaises(TypeError):
                s.hglog(b'commandfinish', 'a str message', {})
            with self.assertRaises(TypeError):
                s.hglog(b'commandfinish', b'm', {b'canonical_command': 'a str'}, put=True)
            with self.assertRaises(ValueError):
                s.hglog(b'commandfinish', b'nul\0inside', {}, put=True)
            with self.assertRaises(UnicodeEncodeError):
                s.hglog(b'x', b'm', {b'k': 'caf\xe9'}, put=True)
            with self.assertRaises(ValueError):
                s.hglog(b'commandfinish', b'm', {b'duration': 1e300}, put=True)
            ok = s.hglog(b'commandfinish', b'm', {b'duration': 1.0}, put=True)
        self.assertEqual([r['id'] for r in rows(self.db)], [ok])

    def test_query_and_stats(self):
        with self.assertRaises(FileNotFoundError):
            bgrun.query(self.db)
        with bgrun.Sink(self.db, mode='embedded') as s:
            for i in range(6):
                s.put('commandfinish', source='hg', display='hg st', exit_code=i % 3,
                      result='success' if i % 3 == 0 else 'failed',
                      duration_ns=(i + 1) * 1000, start_ns=i * 10 ** 9, cwd='/r',
                      argv=[b'\xff'])
            s.put('other', source='ci', cwd='/elsewhere')
        rows = bgrun.query(self.db, source='hg', cwd='/r')
        self.assertEqual([r['exit_code'] for r in rows], [2, 1, 0, 2, 1, 0])
        self.assertEqual(rows[0]['argv'], [{'hex': 'FF'}])
        self.assertEqual(len(bgrun.query(self.db, limit=2)), 2)
        self.assertEqual(len(bgrun.query(self.db, failed=True)), 4)
        self.assertEqual(len(bgrun.query(self.db, since=3.0, until=5.0)), 2)
        self.assertEqual([r['event'] for r in bgrun.query(self.db, source='ci')], ['other'])
        st, = bgrun.stats(self.db, source='hg')
        self.assertEqual((st['display'], st['runs'], st['failures'], st['max_ns']),
                         ('hg st', 6, 4, 6000))

    def test_connect_ahead(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            self.assertEqual(s.connect(), 'store')
            self.assertEqual(rows(self.db), [])  # made, nothing written
            s.put('after-connect')
        with bgrun.Sink(self.db, socket=self.sock, mode='daemon') as s:
            with self.assertRaises(bgrun.SinkError) as cm:
                s.connect()
            self.assertFalse(cm.exception.spooled)
        self.assertFalse(os.path.exists(self.db + '.spool'))
        # From another thread while this one puts: they take turns.
        with bgrun.Sink(self.db, mode='embedded') as s:
            t = threading.Thread(target=s.connect)
            t.start()
            s.put('beside-connect')
            t.join()
        self.assertEqual(sorted(r['event'] for r in rows(self.db)),
                         ['after-connect', 'beside-connect'])

    def test_spool_when_nothing_answers(self):
        # mode daemon, no daemon: the event is kept in the spool.
        with bgrun.Sink(self.db, socket=self.sock, mode='daemon') as s:
            with self.assertRaises(bgrun.SinkError) as cm:
                s.put('spooled-one', message='later')
        e = cm.exception
        self.assertTrue(e.spooled)
        self.assertEqual(len(e.event_id), 36)
        self.assertIsInstance(e, OSError)
        spool = self.db + '.spool'
        # One event file, and the reason it waits (.reason).
        self.assertEqual([n for n in os.listdir(spool) if n.endswith('.ev')],
                         [n for n in os.listdir(spool) if e.event_id in n])
        self.assertEqual(len([n for n in os.listdir(spool) if n.endswith('.ev')]), 1)
        self.assertIn('.reason', os.listdir(spool))
        # The next embedded writer stores what the spool holds, and the
        # reason goes with it.
        with bgrun.Sink(self.db, mode='embedded') as s:
            s.put('next')
        self.assertEqual(rows(self.db, "event = 'spooled-one'")[0]['id'], e.event_id)
        self.assertEqual(os.listdir(spool), [])

    def test_broken_store(self):
        # A database under a regular file: no store, no spool.
        with bgrun.Sink('/dev/null/events.db', mode='embedded') as s:
            with self.assertRaises(bgrun.SinkError) as cm:
                s.put('lost')
        self.assertFalse(cm.exception.spooled)

    def _start_daemon(self):
        if not LOGSINK:
            self.skipTest('BGRUN_TEST_LOGSINK is not set')
        env = dict(os.environ, BGRUN_DB=self.db, BGRUN_SOCKET=self.sock)
        out = subprocess.run([LOGSINK, 'serve', '--detach', '--log', self.path('d.log')],
                             env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        pid = int(out.stdout)
        self.addCleanup(lambda: self._stop(pid))
        return pid

    def test_daemon(self):
        self._start_daemon()
        with bgrun.Sink(self.db, socket=self.sock, mode='daemon') as s:
            ids = [s.put('via-daemon', exit_code=i) for i in range(10)]
            self.assertEqual(s.via, 'daemon')
        got = sorted((r['id'], r['exit_code']) for r in rows(self.db, "event = 'via-daemon'"))
        self.assertEqual(got, sorted(zip(ids, range(10))))

    def _stop(self, pid):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        testlib.poll(lambda: not os.path.exists('/proc/%d' % pid) or
                     testlib.process_table().get(pid, ('Z',))[0] == 'Z', 'daemon exit')

    def test_store_library_loaded_only_when_needed(self):
        # Importing the module, and events through the daemon, load
        # neither libbgrun-store nor SQLite; the embedded store loads
        # them, once. In a process of its own (this one has imported
        # Python's sqlite3).
        self._start_daemon()
        code = '''if 1:
            import sys
            import bgrun
            def loaded():
                with open('/proc/self/maps') as f:
                    maps = f.read()
                return ['libsqlite3' in maps, 'libbgrun-store' in maps]
            db, sock = sys.argv[1:3]
            print(loaded())
            s = bgrun.Sink(db, socket=sock, mode='try')
            s.connect(wait=False)
            s.put('daemon-put')
            print(loaded(), s.via)
            e = bgrun.Sink(db, mode='embedded')
            e.put('embedded-put')
            print(loaded(), e.via)
        '''
        out = subprocess.run([os.sys.executable, '-c', code, self.db, self.sock],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines(), [
            '[False, False]', '[False, False] daemon', '[True, True] store'])
        self.assertEqual(sorted(r['event'] for r in rows(self.db)),
                         ['daemon-put', 'embedded-put'])

    def test_connect_without_waiting(self):
        # connect(wait=False) returns at once; the put after it takes the
        # path it opened, or every path again if it failed.
        with bgrun.Sink(self.db, mode='embedded') as s:
            self.assertIsNone(s.connect(wait=False))
            s.put('after-ahead')
            self.assertEqual(s.via, 'store')
        # (Another log: the next embedded writer of this one would replay the spool.)
        with bgrun.Sink(self.path('other.db'), socket=self.sock, mode='daemon') as s:
            self.assertIsNone(s.connect(wait=False))  # nothing answers: not raised
            with self.assertRaises(bgrun.SinkError) as cm:
                s.put('kept')
            self.assertTrue(cm.exception.spooled)
        # Dropped while its thread may still connect: the object waits for it.
        for _ in range(50):
            bgrun.Sink(self.db, mode='embedded').connect(wait=False)
        s = bgrun.Sink(self.db, mode='embedded')
        s.connect(wait=False)
        s.__init__(self.db, mode='embedded')  # re-initialised under it
        s.put('after-reinit')
        s.close()
        self.assertEqual(sorted(r['event'] for r in rows(self.db)),
                         ['after-ahead', 'after-reinit'])
        self._start_daemon()
        with bgrun.Sink(self.db, socket=self.sock, mode='try') as s:
            s.connect(wait=False)
            s.put('ahead-daemon')
            self.assertEqual(s.via, 'daemon')

    def test_send_and_flush(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            ids = [s.send('sent', exit_code=i) for i in range(20)]
            self.assertIsInstance(s.flush(wait=False), list)
            self.assertEqual(s.flush(), [])
            self.assertEqual(s.via, 'store')
            got = sorted((r['id'], r['exit_code']) for r in rows(self.db, "event = 'sent'"))
            self.assertEqual(got, sorted(zip(ids, range(20))))
            # Bad fields are refused at once, as by put().
            with self.assertRaises(TypeError):
                s.send('x', no_such_field=1)
            # close() waits for the sends: none is lost.
            last = s.send('before-close')
        self.assertEqual(rows(self.db, "event = 'before-close'")[0]['id'], last)
        with self.assertRaises(ValueError):
            s.send('after-close')

    def test_send_through_the_daemon_in_this_thread(self):
        # With a daemon, send() starts no thread: the frame is written,
        # the ack read by flush(), close() or exit(). The sender leaves
        # the user and the boot out; the daemon fills them in.
        import pwd
        self._start_daemon()
        tasks = lambda: len(os.listdir('/proc/self/task'))
        with bgrun.Sink(self.db, socket=self.sock, mode='try') as s:
            self.assertIsNone(s.connect(wait=False))
            before = tasks()
            ids = [s.send('posted', exit_code=i) for i in range(5)]
            self.assertEqual(tasks(), before)
            self.assertEqual(s.flush(), [])
            self.assertEqual(s.via, 'daemon')
            last = s.send('posted', exit_code=5)
        ids.append(last)  # close() settles it
        got = rows(self.db, "event = 'posted'")
        self.assertEqual(sorted(r['id'] for r in got), sorted(ids))
        with open('/proc/sys/kernel/random/boot_id') as f:
            boot = f.read().strip()
        self.assertEqual({(r['user'], r['boot_id']) for r in got},
                         {(pwd.getpwuid(os.getuid()).pw_name, boot)})
        # Not flushed nor closed: exit() reads the acks.
        code = ('import sys, bgrun; s = bgrun.Sink(sys.argv[1], socket=sys.argv[2]); '
                's.connect(wait=False); print(s.send("at-exit"))')
        out = subprocess.run([os.sys.executable, '-c', code, self.db, self.sock],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual((out.returncode, out.stderr), (0, ''))
        self.assertEqual([r['id'] for r in rows(self.db, "event = 'at-exit'")],
                         [out.stdout.strip()])

    def test_many_sends_through_the_daemon(self):
        # More sends than the module keeps unsettled (it settles as it
        # goes), one refused by the daemon's store among them: flush()
        # returns that one (not spooled: no store would take it), and
        # every other is committed.
        self._start_daemon()
        with bgrun.Sink(self.db, socket=self.sock, mode='daemon') as s:
            s.connect(wait=False)
            ids = [s.send('many', exit_code=i) for i in range(100)]
            bad = s.send('many', options='[not an object')
            ids += [s.send('many', exit_code=i) for i in range(100, 200)]
            fails = s.flush()
            self.assertEqual([(f.event_id, f.spooled) for f in fails], [(bad, False)])
            self.assertEqual(s.flush(), [])
        got = rows(self.db, "event = 'many'")
        self.assertEqual(sorted(r['id'] for r in got), sorted(ids))

    def test_send_whose_daemon_dies(self):
        # The daemon is stopped with the frame unread, then killed: the
        # settle finds the connection gone and puts the event into the
        # store (mode try), the same id; nothing is lost or said lost.
        pid = self._start_daemon()
        s = bgrun.Sink(self.db, socket=self.sock, mode='try')
        self.assertEqual(s.connect(), 'daemon')
        os.kill(pid, signal.SIGSTOP)
        eid = s.send('orphaned')
        os.kill(pid, signal.SIGKILL)
        self.assertEqual(s.flush(), [])
        self.assertEqual(s.via, 'store')
        self.assertEqual([r['id'] for r in rows(self.db, "event = 'orphaned'")], [eid])
        s.close()

    def test_forked_child_refused_the_parents_sink(self):
        # The fork comes while the parent's send may be inside SQLite
        # (here: making the log): it waits for the send, else the child
        # inherits SQLite's record of the parent's locks and its own
        # put waits on them, holding the log's lock, until both give up
        # (10 s) and spool. Each round a new log, so each makes one.
        for n in range(4):
            db = self.path('events%d.db' % n)
            with bgrun.Sink(db, mode='embedded') as s:
                s.send('parent')
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        try:
                            s.put('child')
                        except ValueError:
                            own = bgrun.Sink(db, mode='embedded')
                            own.put('child-own')
                            if own.via == 'store':
                                code = 0
                    finally:
                        os._exit(code)
                _, status = os.waitpid(pid, 0)
                self.assertEqual(os.waitstatus_to_exitcode(status), 0)
                self.assertEqual(s.flush(), [])
            self.assertEqual(sorted(r['event'] for r in rows(db)), ['child-own', 'parent'])

    def test_send_whose_ack_never_comes(self):
        # The daemon takes the connection, then stops: the event is sent
        # and never acknowledged. After the timeout the send goes on to
        # the other paths: here (mode daemon) the spool, said by flush().
        pid = self._start_daemon()
        s = bgrun.Sink(self.db, socket=self.sock, mode='daemon', timeout=0.3)
        self.assertEqual(s.connect(), 'daemon')
        os.kill(pid, signal.SIGSTOP)
        self.addCleanup(os.kill, pid, signal.SIGCONT)
        eid = s.send('unacked')
        fails = s.flush()
        self.assertEqual([(f.event_id, f.spooled) for f in fails], [(eid, True)])
        self.assertIsInstance(fails[0], bgrun.SinkError)
        self.assertEqual(s.flush(), [])  # taken once
        self.assertEqual(s.flush(wait=False), [])
        spool = self.db + '.spool'
        self.assertEqual(len([n for n in os.listdir(spool) if eid in n]), 1)
        s.close()

    def test_send_not_held_up_by_another_sinks_send(self):
        # The module's threads stay for the next job: a send must still
        # not wait behind another one, here one whose ack does not come
        # while the daemon is stopped. If it did, it would run only after
        # that send's timeout, which would then have spooled its event.
        pid = self._start_daemon()
        slow = bgrun.Sink(self.db, socket=self.sock, mode='daemon', timeout=120)
        self.assertEqual(slow.connect(), 'daemon')
        os.kill(pid, signal.SIGSTOP)
        resumed = False
        try:
            waiting = slow.send('waits-for-its-ack')
            other = self.path('other.db')
            with bgrun.Sink(other, mode='embedded') as fast:
                eid = fast.send('not-held-up')
                self.assertEqual(fast.flush(), [])
                self.assertEqual([r['id'] for r in rows(other)], [eid])
            os.kill(pid, signal.SIGCONT)
            resumed = True
            self.assertEqual(slow.flush(), [])
        finally:
            if not resumed:
                os.kill(pid, signal.SIGCONT)
        slow.close()
        self.assertEqual([r['id'] for r in rows(self.db, "event = 'waits-for-its-ack'")],
                         [waiting])

    def test_forked_child_sends_in_threads_of_its_own(self):
        # The parent's threads, idle, are not the child's: its sends start
        # one of its own (were they counted as idle, the send would be
        # queued for no thread and flush() would never return).
        with bgrun.Sink(self.db, mode='embedded') as s:
            s.connect(wait=False)
            s.send('parent')
            self.assertEqual(s.flush(), [])
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    with bgrun.Sink(self.db, mode='embedded') as own:
                        own.send('child-send')
                        code = 0 if own.flush() == [] else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            s.send('parent-after')
            self.assertEqual(s.flush(), [])
        self.assertEqual(sorted(r['event'] for r in rows(self.db)),
                         ['child-send', 'parent', 'parent-after'])

    def test_send_waited_for_at_exit(self):
        # A process that sends and exits without flush(): exit() waits for
        # the send; one that could not be stored nor spooled is said on
        # stderr, once; one kept in the spool is not.
        code = '''if 1:
            import sys
            import bgrun
            db, mode = sys.argv[1:3]
            s = bgrun.Sink(db, socket=sys.argv[3], mode=mode)
            if sys.argv[4:] == ['flush-first']:
                s.send('taken')
                print(len(s.flush()), file=sys.stderr)
            for i in range(3):
                print(s.send('at-exit', exit_code=i))
        '''
        def run(db, mode, *extra):
            out = subprocess.run([os.sys.executable, '-c', code, db, mode, self.sock, *extra],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout.split(), out.stderr.splitlines()
        ids, err = run(self.db, 'embedded')
        self.assertEqual(err, [])
        self.assertEqual(sorted(r['id'] for r in rows(self.db, "event = 'at-exit'")),
                         sorted(ids))
        ids, err = run('/dev/null/events.db', 'embedded')
        self.assertEqual(len(ids), 3)
        self.assertEqual(len(err), 1, err)
        self.assertTrue(err[0].startswith('bgrun: event not recorded: '), err)
        self.assertIn(', and more)', err[0])
        # A program that took a lost event from flush() reports them: the
        # later ones are counted (logsink status), not said again at exit.
        ids, err = run('/dev/null/events.db', 'embedded', 'flush-first')
        self.assertEqual((len(ids), err), (3, ['1']))
        db2 = self.path('spooled.db')
        ids, err = run(db2, 'daemon')  # no daemon: the spool
        self.assertEqual(err, [])
        self.assertEqual(len([n for n in os.listdir(db2 + '.spool') if n.endswith('.ev')]), 3)

    def test_threads_share_a_sink(self):
        with bgrun.Sink(self.db, mode='embedded') as s:
            def writer(k):
                for i in range(25):
                    s.put('threaded', tag='t%d' % k, exit_code=i)
            ts = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(len(rows(self.db, "event = 'threaded'")), 100)

    def test_module_log(self):
        # log() uses a module-wide Sink made from the environment at its
        # first use: in a process of its own.
        code = ('import bgrun; print(bgrun.log("from-log", message="m", exit_code=0))')
        env = dict(os.environ, BGRUN_DB=self.db, BGRUN_SINK='embedded')
        out = subprocess.run([os.sys.executable, '-c', code], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        r, = rows(self.db)
        self.assertEqual((r['id'], r['event'], r['message']), (out.stdout.strip(), 'from-log', 'm'))


if __name__ == '__main__':
    testlib.main()
