# SPDX-License-Identifier: MIT
# test_spawn.py: bgrun.spawn(), Child, Status and the errors, seen from the child and from Python.

import faulthandler
import os
import signal
import sys
import threading
import time

import testlib
from testlib import HELPER, TmpCase, read_report, report_argv, slurp

import bgrun

H = HELPER.encode()


class Spawn(TmpCase):
    def test_argv_and_status(self):
        c = bgrun.spawn([H, b'helper', b'exit', b'7'])
        self.assertGreater(c.pid, 0)
        t0 = time.time()
        st = c.wait()
        t1 = time.time()
        self.assertIsInstance(st, bgrun.Status)
        self.assertEqual((st.pid, st.exit_code, st.signal, st.returncode, st.core_dumped),
                         (c.pid, 7, None, 7, False))
        self.assertGreater(st.duration, 0)
        self.assertLessEqual(st.start_time, st.end_time)
        self.assertLessEqual(st.end_time, t1 + 1)
        self.assertIsInstance(st.rusage, bgrun.Rusage)
        self.assertGreaterEqual(st.rusage.user_cpu, 0)
        self.assertGreater(st.rusage.max_rss_kb, 0)
        # Again: the same status.
        self.assertEqual(c.wait(), st)
        self.assertEqual(c.wait_returncode(), 7)
        self.assertGreater(t1, t0)

    def test_string_and_pathlike(self):
        import pathlib
        p = self.path()
        c = bgrun.spawn([pathlib.Path(HELPER), 'helper', 'report', pathlib.Path(p), 'caf\xe9'])
        c.wait()
        self.assertEqual(read_report(p)['arg'][4:], ['caf\xe9'.encode()])

    def test_env_set_unset_cwd(self):
        p = self.path()
        os.environ['BGRUN_PY_DROP'] = 'x'
        try:
            bgrun.spawn(report_argv(p), env_set={'A': 'b', b'B': b'\xff'},
                        env_unset=['BGRUN_PY_DROP'], cwd=self.tmp).wait()
        finally:
            del os.environ['BGRUN_PY_DROP']
        rep = read_report(p)
        self.assertIn(b'A=b', rep['env'])
        self.assertIn(b'B=\xff', rep['env'])
        self.assertFalse(any(e.startswith(b'BGRUN_PY_DROP=') for e in rep['env']))
        self.assertEqual(rep['cwd'], os.path.realpath(self.tmp))
        p = self.path()
        bgrun.spawn(report_argv(p), env={'ONLY': '1', 'PATH': '/bin'}).wait()
        self.assertEqual(sorted(read_report(p)['env']), [b'ONLY=1', b'PATH=/bin'])

    def test_detach(self):
        p = self.path()
        bgrun.spawn(report_argv(p)).wait()
        rep = read_report(p)
        self.assertEqual(rep['sid'], rep['pid'])
        p = self.path()
        bgrun.spawn(report_argv(p), detach=False).wait()
        self.assertEqual(read_report(p)['sid'], str(os.getsid(0)))

    def test_stdin_kinds(self):
        data = b'x' * 100000
        src = self.path('in')
        with open(src, 'wb') as f:
            f.write(b'from a file')
        r, w = os.pipe()
        os.write(w, b'from a pipe')
        os.close(w)
        for stdin, n in ((data, len(data)), (bytearray(b'abc'), 3), (memoryview(b'abcd'), 4),
                         (src, 11), (r, 11), (None, 0), (bgrun.DEVNULL, 0)):
            p = self.path()
            bgrun.spawn(report_argv(p), stdin=stdin).wait()
            with self.subTest(stdin=type(stdin)):
                self.assertEqual(read_report(p)['stdin_len'], str(n))
        os.close(r)

    def test_stdout_stderr(self):
        out, err = self.path(), self.path()
        argv = [H, b'helper', b'outerr', b'O', b'E']
        bgrun.spawn(argv, stdout=out, stderr=err).wait()
        bgrun.spawn(argv, stdout=out, stderr=err, append=True).wait()
        self.assertEqual(slurp(out, 'rb'), b'O\nO\n')
        self.assertEqual(slurp(err, 'rb'), b'E\nE\n')
        bgrun.spawn(argv, stdout=os.fsencode(out), stderr=bgrun.STDOUT).wait()
        self.assertEqual(slurp(out, 'rb'), b'O\nE\n')
        with open(out, 'wb') as f:
            bgrun.spawn(argv, stdout=f, stderr=f.fileno()).wait()
        self.assertEqual(slurp(out, 'rb'), b'O\nE\n')
        p = self.path()
        bgrun.spawn(report_argv(p), stdout=bgrun.INHERIT).wait()
        self.assertEqual(read_report(p)['fd1'], os.readlink('/proc/self/fd/1'))

    def test_shell(self):
        out = self.path()
        bgrun.spawn('echo "$X" $((2+3)) >"$OUT"', shell=True,
                    env_set={'X': 'a b', 'OUT': out}).wait()
        self.assertEqual(slurp(out), 'a b 5\n')
        st = bgrun.spawn(b'exit 4', shell=True).wait()
        self.assertEqual(st.exit_code, 4)

    def test_errors(self):
        with self.assertRaises(FileNotFoundError) as cm:
            bgrun.spawn(['/nonexistent/prog'])
        e = cm.exception
        self.assertIsInstance(e, bgrun.SpawnError)
        self.assertIsInstance(e, OSError)
        self.assertEqual((e.errno, e.stage, e.filename), (2, 'exec', '/nonexistent/prog'))
        with self.assertRaises(FileNotFoundError) as cm:
            bgrun.spawn([H, b'helper', b'exit', b'0'], cwd='/nonexistent/dir')
        self.assertEqual(cm.exception.stage, 'cwd')
        with self.assertRaises(bgrun.SpawnError) as cm:
            bgrun.spawn([H, b'helper', b'exit', b'0'], stdout='/nonexistent/dir/out')
        self.assertEqual(cm.exception.stage, 'stdout')
        with self.assertRaises(bgrun.SpawnError) as cm:
            bgrun.spawn([H, b'helper', b'exit', b'0'], stderr='/nonexistent/dir/err')
        self.assertEqual(cm.exception.stage, 'stderr')
        with self.assertRaises(bgrun.SpawnError) as cm:
            bgrun.spawn([H, b'helper', b'exit', b'0'], stdin='/nonexistent/in')
        self.assertEqual(cm.exception.stage, 'stdin')
        with self.assertRaises(PermissionError):
            bgrun.spawn(['/etc/passwd'])
        with self.assertRaises(ValueError):
            bgrun.spawn([])
        with self.assertRaises(ValueError):
            bgrun.spawn(['true'], stdout=bgrun.PIPE)
        with self.assertRaises(TypeError):
            bgrun.spawn([1])
        with self.assertRaises(ValueError):
            bgrun.spawn(['true'], on_start=print)  # ensurestart=True

    def test_ensurestart_off(self):
        seen = []
        done = threading.Event()

        def on_start(v):
            seen.append(v)
            done.set()

        c = bgrun.spawn([H, b'helper', b'exit', b'3'], ensurestart=False, on_start=on_start)
        self.assertEqual(c.wait().exit_code, 3)
        testlib.poll(done.is_set, 'on_start')
        self.assertEqual(seen, [c.pid])
        seen.clear()
        done.clear()
        c = bgrun.spawn(['/nonexistent/prog'], ensurestart=False, on_start=on_start)
        with self.assertRaises(FileNotFoundError) as cm:
            c.pid
        self.assertEqual(cm.exception.stage, 'exec')
        with self.assertRaises(FileNotFoundError):
            c.wait()
        testlib.poll(done.is_set, 'on_start')
        self.assertIsInstance(seen[0], FileNotFoundError)
        self.assertEqual(bgrun.flush(), [])

    def test_kill_and_timeout(self):
        c = bgrun.spawn([H, b'helper', b'pause'])
        with self.assertRaises(TimeoutError):
            c.wait(timeout=0)
        with self.assertRaises(TimeoutError):
            c.wait(timeout=0.05)
        c.kill(signal.SIGKILL)
        st = c.wait()
        self.assertEqual((st.signal, st.exit_code, st.returncode), (signal.SIGKILL, None, -9))
        with self.assertRaises(ProcessLookupError):
            c.kill()

    def test_dropped_child_reaped(self):
        me = os.getpid()
        before = set(testlib.children_of(me))
        for _ in range(20):
            bgrun.spawn(['/bin/true'])
        testlib.poll(lambda: set(testlib.children_of(me)) <= before, 'dropped children reaped')
        self.assertEqual([z for z in testlib.zombies_of(me) if z not in before], [])

    def test_gil_released_during_wait(self):
        # The child (cat) ends only when another Python thread closes its
        # stdin, which that thread does once the main thread announced
        # it was about to wait. If wait() held the GIL, that thread could
        # not run: the wait would end on its timeout instead, and fail.
        r, w = os.pipe()
        c = bgrun.spawn([H, b'helper', b'cat'], stdin=r)
        os.close(r)
        waiting = threading.Event()
        ticks = [0]

        def closer():
            waiting.wait()
            for _ in range(1000):
                ticks[0] += 1  # Python bytecode: needs the GIL
            os.close(w)

        t = threading.Thread(target=closer)
        t.start()
        waiting.set()
        st = c.wait(timeout=20)
        t.join()
        self.assertEqual(st.exit_code, 0)
        self.assertEqual(ticks[0], 1000)

    def test_fifo_stdin(self):
        # spawn() opens a FIFO given as stdin without waiting for a writer
        # (O_NONBLOCK, then cleared: the child's read blocks as it would
        # have), so a launch never blocks on it, and no GIL is held there
        # for long: that a blocking call releases it is the wait's test
        # above. The write end is opened first (a reader of our own makes
        # that open not block), so the child never reads an EOF before
        # the data; a Python thread writes it once the child runs.
        fifo = self.path('fifo')
        os.mkfifo(fifo)
        faulthandler.dump_traceback_later(60, exit=True)
        self.addCleanup(faulthandler.cancel_dump_traceback_later)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        w = os.open(fifo, os.O_WRONLY)
        out = self.path()
        c = bgrun.spawn([H, b'helper', b'cat'], stdin=fifo, stdout=out)
        os.close(reader)

        def writer():
            os.write(w, b'through the fifo')
            os.close(w)

        t = threading.Thread(target=writer)
        t.start()
        st = c.wait()
        t.join()
        self.assertEqual(st.exit_code, 0)
        self.assertEqual(slurp(out, 'rb'), b'through the fifo')

    def test_help_reads_like_the_header(self):
        for obj in (bgrun, bgrun.spawn, bgrun.runbgcommand, bgrun.log, bgrun.Sink,
                    bgrun.Child, bgrun.Child.wait, bgrun.flush):
            self.assertTrue(obj.__doc__ and len(obj.__doc__) > 40, obj)
        stub = os.path.join(os.path.dirname(__file__), '..', 'bgrun.pyi')
        text = slurp(stub)
        for name in ('def spawn', 'def runbgcommand', 'def log', 'class Sink', 'class Child',
                     'class Status', 'class SpawnError', 'class SinkError', 'def flush'):
            self.assertIn(name, text)
        for name in dir(bgrun):
            if not name.startswith('_'):
                self.assertIn(name, text, name)

    def test_types_made_at_first_use(self):
        # Not at import (hg imports the module for every command), but
        # there whenever asked for: by name, by dir() and help(), by an error.
        code = '''if 1:
            import bgrun, pydoc
            made = lambda: sorted(n for n in ('SpawnFileNotFoundError', 'Status', 'Rusage')
                                  if n in bgrun.__dict__)
            print(made())
            try:
                bgrun.spawn(['/nonexistent/program'])
            except FileNotFoundError as e:
                print(type(e).__name__, isinstance(e, bgrun.SpawnError))
            print(made())
            print(issubclass(bgrun.SpawnPermissionError, PermissionError), bgrun.Status.__name__)
            print('Rusage' in dir(bgrun), 'SpawnTimeoutError' in pydoc.render_doc(bgrun))
            try:
                bgrun.no_such_name
            except AttributeError as e:
                print('AttributeError')
        '''
        import subprocess
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines(), [
            '[]', 'SpawnFileNotFoundError True', "['SpawnFileNotFoundError']",
            'True Status', 'True True', 'AttributeError'])


if __name__ == '__main__':
    testlib.main()
