# SPDX-License-Identifier: MIT
# test_runbgcommand.py: bgrun.runbgcommand against hg 6.3's procutil.runbgcommand, as its children see them.
"""Each case launches the helper through hg's own runbgcommand and through
bgrun's with the same arguments, and compares what the two children saw:
argv bytes, environment, cwd, descriptors, stdout/stderr contents, stdin,
session, and what record_wait gets. Where bgrun differs on purpose (no
shell, so no PWD added by it; exec errors raised; stdin_bytes delivered
to a detached child, which hg 6.3 loses), the case says so."""

import os
import subprocess
import sys

import testlib
from testlib import HELPER, TmpCase, read_report, report_argv, slurp

import bgrun
from mercurial.utils import procutil

HG = procutil.runbgcommand
# The shell hg runs adds PWD (and nothing else, on Debian's dash).
SHELL_ADDS = (b'PWD=',)

ARGS = [
    [],
    [b'a b', b''],
    [b'\xff\xfe', b'caf\xc3\xa9', b'new\nline', b'tab\there'],
    [b"'", b'"', b'$HOME', b'`id`', b'*', b'\\', b'; exit 3', b'-n', b'--'],
]
ENVS = [
    {b'PATH': b'/usr/bin:/bin', b'X': b'1'},
    {b'PATH': b'/usr/bin:/bin', b'SPACE': b'a b', b'NL': b'x\ny', b'EMPTY': b'',
     b'BIN': b'\xff', b'EQ': b'a=b'},
    {'PATH': '/usr/bin:/bin', 'STR': 'value'},
]


def env_of(rep, shell):
    env = rep['env']
    if shell:
        env = [e for e in env if not e.startswith(SHELL_ADDS)]
    return sorted(env)


class RunBgCommand(TmpCase):
    def both(self, args=(), env=None, **kw):
        """The reports of hg's child and bgrun's, launched alike."""
        env = ENVS[0] if env is None else env
        out = []
        for fn in (HG, bgrun.runbgcommand):
            p = self.path()
            fn(report_argv(p, *args), env, **kw)
            out.append(read_report(p))
        return out

    def assertSameChild(self, hg, bg, shell=False):
        """The same child, but for what hg's shell adds (shell: bgrun's too)."""
        self.assertEqual(hg['arg'][4:], bg['arg'][4:])
        self.assertEqual(env_of(hg, True), env_of(bg, shell))
        for k in ('cwd', 'fds', 'fd1', 'fd2', 'sigblk'):
            self.assertEqual(hg[k], bg[k], k)
        # hg's `( CMD ) &` runs CMD as an asynchronous list without job
        # control, which ignores SIGINT and SIGQUIT; bgrun's child starts
        # with every signal at its default.
        self.assertEqual(bg['sigign'], '0000000000000000')

    def test_argv_env_matrix(self):
        for args in ARGS:
            for env in ENVS:
                for ensurestart in (True, False):
                    with self.subTest(args=args, env=env, ensurestart=ensurestart):
                        hg, bg = self.both(args, env, ensurestart=ensurestart)
                        self.assertSameChild(hg, bg)
                        # Detached: each leads a session of its own.
                        self.assertNotEqual(bg['sid'], str(os.getsid(0)))
                        self.assertNotEqual(hg['sid'], str(os.getsid(0)))
                        self.assertEqual(bg['fds'], '0,1,2')

    def test_no_shell_env_exact(self):
        # hg's shell adds PWD; bgrun gives exactly env.
        hg, bg = self.both([], {b'PATH': b'/bin'})
        self.assertEqual(bg['env'], [b'PATH=/bin'])
        self.assertIn(b'PATH=/bin', hg['env'])

    def test_cmd_as_bytes(self):
        # A bytes cmd is one argv element in both (hg shell-quotes it whole).
        script = self.path('prog')
        for fn in (HG, bgrun.runbgcommand):
            p = self.path()
            with open(script, 'w') as f:
                f.write('#!/bin/sh\nexec "%s" helper report "%s" "$@"\n' % (HELPER, p))
            os.chmod(script, 0o755)
            fn(os.fsencode(script), ENVS[0])
            rep = read_report(p)
            self.assertEqual(rep['arg'][4:], [])
            self.assertEqual(rep['cwd'], os.getcwd())

    def test_env_none_inherits(self):
        os.environ['BGRUN_PY_MARK'] = 'inherited'
        for fn in (HG, bgrun.runbgcommand):
            p = self.path()
            fn(report_argv(p), None)
            self.assertIn(b'BGRUN_PY_MARK=inherited', read_report(p)['env'])
        del os.environ['BGRUN_PY_MARK']

    def test_cwd_is_ours(self):
        old = os.getcwd()
        os.chdir(self.tmp)
        try:
            hg, bg = self.both()
        finally:
            os.chdir(old)
        self.assertEqual(hg['cwd'], os.path.realpath(self.tmp))
        self.assertEqual(bg['cwd'], hg['cwd'])

    def test_shell_true(self):
        script = b'"%s" helper report "$OUT" "$X" $((1+2)) a\\ b; exit 0' % HELPER.encode()
        for ensurestart in (True, False):
            reps = []
            for fn in (HG, bgrun.runbgcommand):
                p = self.path()
                fn(script, {b'PATH': b'/bin', b'X': b'x y', b'OUT': os.fsencode(p)},
                   shell=True, ensurestart=ensurestart)
                rep = read_report(p)
                rep['env'] = [e for e in rep['env'] if not e.startswith(b'OUT=')]
                reps.append(rep)
            hg, bg = reps
            self.assertEqual(bg['arg'][4:], [b'x y', b'3', b'a b'])
            self.assertSameChild(hg, bg, shell=True)

    def test_stdout_stderr_files(self):
        for kind in ('fileobj', 'fd', 'stderr=STDOUT', 'stdout only'):
            texts = []
            for fn in (HG, bgrun.runbgcommand):
                out, err = self.path(), self.path()
                fo, fe = open(out, 'wb'), open(err, 'wb')
                kw = {}
                if kind == 'fileobj':
                    kw = dict(stdout=fo, stderr=fe)
                elif kind == 'fd':
                    kw = dict(stdout=fo.fileno(), stderr=fe.fileno())
                elif kind == 'stderr=STDOUT':
                    kw = dict(stdout=fo, stderr=subprocess.STDOUT)
                else:
                    kw = dict(stdout=fo)
                waits = []
                fn([HELPER.encode(), b'helper', b'outerr', b'to out', b'to err'],
                   ENVS[0], record_wait=waits.append, **kw)
                self.assertEqual(waits[0](), 0)
                fo.close()
                fe.close()
                texts.append((slurp(out, 'rb'), slurp(err, 'rb')))
            with self.subTest(kind=kind):
                self.assertEqual(texts[0], texts[1])
                self.assertIn(b'to out\n', texts[1][0])

    def test_stdout_descriptor_seen(self):
        for fn in (HG, bgrun.runbgcommand):
            out = self.path()
            with open(out, 'wb') as fo:
                p = self.path()
                fn(report_argv(p), ENVS[0], stdout=fo, stderr=fo)
                rep = read_report(p)
            self.assertEqual(rep['fd1'], out)
            self.assertEqual(rep['fd2'], out)

    def test_stdin_bytes(self):
        data = bytes(range(256)) * 1000
        # With record_wait (not detached) both feed stdin_bytes.
        hg, bg = [], []
        for fn, reps in ((HG, hg), (bgrun.runbgcommand, bg)):
            p = self.path()
            fn(report_argv(p), ENVS[0], stdin_bytes=data, record_wait=lambda w: w())
            reps.append(read_report(p))
        self.assertEqual(hg[0]['stdin_len'], str(len(data)))
        self.assertEqual((hg[0]['stdin_len'], hg[0]['stdin_fnv']),
                         (bg[0]['stdin_len'], bg[0]['stdin_fnv']))
        # Detached, hg 6.3's `( CMD ) &` gives CMD /dev/null (an
        # asynchronous list without job control): the bytes are lost.
        # bgrun feeds them.
        for ensurestart in (True, False):
            p = self.path()
            bgrun.runbgcommand(report_argv(p), ENVS[0], stdin_bytes=b'hello',
                               ensurestart=ensurestart)
            rep = read_report(p)
            self.assertEqual(rep['stdin_len'], '5')
            self.assertEqual(rep['stdin_fnv'], 'a430d84680aabd0b')

    def test_record_wait_exit_code(self):
        cases = [[b'exit', b'0'], [b'exit', b'7'], [b'exit', b'255'], [b'signal', b'15']]
        for mode in cases:
            got = []
            for fn in (HG, bgrun.runbgcommand):
                waits = []
                fn([HELPER.encode(), b'helper'] + mode, ENVS[0], record_wait=waits.append)
                self.assertEqual(len(waits), 1)
                self.assertTrue(callable(waits[0]))
                got.append(waits[0]())
            with self.subTest(mode=mode):
                if mode[0] == b'exit':
                    self.assertEqual(got, [int(mode[1])] * 2)
                else:
                    # hg waits for its `sh -c`, which reports the signal
                    # as 128+N; bgrun waits for the command itself and
                    # says -N, as Popen.wait does.
                    self.assertEqual(got, [128 + 15, -15])

    def test_record_wait_not_detached(self):
        hg, bg = [], []
        for fn, reps in ((HG, hg), (bgrun.runbgcommand, bg)):
            p = self.path()
            fn(report_argv(p), ENVS[0], record_wait=lambda w: w())
            reps.append(read_report(p))
        self.assertEqual(hg[0]['sid'], str(os.getsid(0)))
        self.assertEqual(bg[0]['sid'], hg[0]['sid'])
        self.assertEqual(bg[0]['ppid'], str(os.getpid()))

    def test_exec_errors_raised(self):
        missing = [b'/nonexistent/program']
        notexec = self.path('notexec')
        open(notexec, 'w').close()
        # hg 6.3: its shell swallows both, nothing is raised.
        HG(missing, ENVS[0])
        HG([os.fsencode(notexec)], ENVS[0])
        with self.assertRaises(FileNotFoundError) as cm:
            bgrun.runbgcommand(missing, ENVS[0])
        self.assertIsInstance(cm.exception, bgrun.SpawnError)
        self.assertEqual(cm.exception.stage, 'exec')
        self.assertEqual(cm.exception.filename, '/nonexistent/program')
        with self.assertRaises(PermissionError):
            bgrun.runbgcommand([os.fsencode(notexec)], ENVS[0])
        with self.assertRaises(FileNotFoundError):
            bgrun.runbgcommand([b'no-such-program-in-path'], {b'PATH': b'/bin'})

    def test_exec_error_record_wait(self):
        # As hg: record_wait(255), then the error propagates.
        waits = []
        with self.assertRaises(FileNotFoundError):
            bgrun.runbgcommand([b'/nonexistent/program'], ENVS[0], record_wait=waits.append)
        self.assertEqual(waits, [255])

    def test_exec_errors_recorded(self):
        self.assertEqual(bgrun.flush(), [])
        bgrun.runbgcommand([b'/nonexistent/one'], ENVS[0], ensurestart=False)
        bgrun.runbgcommand([b'/bin/true'], ENVS[0], ensurestart=False)
        bgrun.runbgcommand([b'/nonexistent/two'], ENVS[0], ensurestart=False)
        failures = bgrun.flush()
        self.assertEqual([f.filename for f in failures],
                         ['/nonexistent/one', '/nonexistent/two'])
        self.assertTrue(all(isinstance(f, FileNotFoundError) and f.stage == 'exec'
                            for f in failures))
        self.assertEqual(bgrun.flush(), [])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            bgrun.runbgcommand([b'true'], {b'A=B': b'1'})
        with self.assertRaises(ValueError):
            bgrun.runbgcommand([b'a\0b'], ENVS[0])
        # The environment's strings are copied, not converted one by one:
        # the same refusals.
        for bad in ({b'A': b'x\0y'}, {b'A\0': b'1'}, {'A': 'x\0y'}, {b'': b'1'},
                    {b'A': 1}):
            with self.subTest(env=bad):
                with self.assertRaises((ValueError, TypeError)):
                    bgrun.runbgcommand([b'true'], bad)
        with self.assertRaises(ValueError):
            bgrun.runbgcommand([b'true'], ENVS[0], stdout=subprocess.PIPE)
        with self.assertRaises(TypeError):
            bgrun.runbgcommand([b'true'], ENVS[0], stdin_bytes='text')
        with self.assertRaises(ValueError):
            bgrun.runbgcommand([], ENVS[0])

    def test_no_zombies_after_1000(self):
        # In a process of its own, so that no other test's child counts.
        script = self.path('zombies.py')
        with open(script, 'w') as f:
            f.write(ZOMBIE_SCRIPT)
        r = subprocess.run([sys.executable, script], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, PYTHONPATH=PYPATH))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, 'launched 1000, zombies 0, children 0\n')


PYPATH = os.pathsep.join(sys.path)
ZOMBIE_SCRIPT = """
import os, sys
sys.path[:0] = os.environ['PYTHONPATH'].split(os.pathsep)
import bgrun, testlib
true, env = [b'/bin/true'], {b'PATH': b'/bin'}
for i in range(1000):
    if i % 4 == 3:
        bgrun.runbgcommand(true, env, ensurestart=False)
    elif i % 4 == 2:
        # A record_wait function never called: reaped all the same.
        bgrun.runbgcommand(true, env, record_wait=lambda w: None)
    else:
        bgrun.runbgcommand(true, env)
assert bgrun.flush() == []
me = os.getpid()
# The library reaps each child as it exits: poll until none is left.
testlib.poll(lambda: not testlib.children_of(me), 'every child reaped')
print('launched 1000, zombies %d, children %d' % (
    len(testlib.zombies_of(me)), len(testlib.children_of(me))))
"""

if __name__ == '__main__':
    testlib.main()
