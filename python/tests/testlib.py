# SPDX-License-Identifier: MIT
# testlib.py: what the Python tests share: the helper program, its reports, polling with a deadline.
"""The child of these tests is `run-tests helper MODE` (tests/helper.c):
`report FILE ARGS...` writes what the process saw (argv and environment
in hex, descriptors, session, cwd, stdin's length and hash) to FILE.tmp
and renames it to FILE, so a test waits for FILE to exist and reads a
whole report. Nothing here sleeps to synchronise: it polls a condition
until a deadline, and the condition is the synchronisation."""

import os
import shutil
import sys
import tempfile
import time
import unittest

HELPER = os.environ.get('BGRUN_TEST_HELPER', '')
LOGSINK = os.environ.get('BGRUN_TEST_LOGSINK', '')
DEADLINE = 30.0


def require_helper(case):
    if not HELPER or not os.access(HELPER, os.X_OK):
        raise unittest.SkipTest('BGRUN_TEST_HELPER is not set (run through meson test)')


def poll(cond, what, deadline=DEADLINE):
    """cond() until it is true, or AssertionError after deadline seconds."""
    end = time.monotonic() + deadline
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.002)


def read_report(path, deadline=DEADLINE):
    poll(lambda: os.path.exists(path), path, deadline)
    rep = {'arg': [], 'env': []}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip('\n').partition('=')
            if k in ('arg', 'env'):
                rep[k].append(bytes.fromhex(v))
            else:
                rep[k] = v
    return rep


def slurp(path, mode='r'):
    with open(path, mode) as f:
        return f.read()


def report_argv(path, *args):
    return [HELPER.encode(), b'helper', b'report', os.fsencode(path)] + list(args)


def process_table():
    """{pid: (state, ppid)} of every process (from /proc/PID/stat)."""
    table = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(b')') + 2:].split()
        table[int(name)] = (rest[0].decode(), int(rest[1]))
    return table


def zombies_of(pid):
    return [p for p, (st, pp) in process_table().items() if pp == pid and st == 'Z']


def children_of(pid):
    return [p for p, (st, pp) in process_table().items() if pp == pid]


class TmpCase(unittest.TestCase):
    """A private temporary directory per test, removed after it."""

    def setUp(self):
        require_helper(self)
        self.tmp = tempfile.mkdtemp(prefix='bgrun-py-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.n = 0

    def path(self, name=None):
        self.n += 1
        return os.path.join(self.tmp, name or 'r%d' % self.n)


def main():
    unittest.main(verbosity=2)
    sys.exit(0)
