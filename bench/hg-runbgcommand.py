#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# hg-runbgcommand.py: Mercurial's runbgcommand benchmark (hg changeset D9019) with bgrun's column beside it.
"""Reproduces the table of Mercurial's "procutil: avoid using os.fork() to
implement runbgcommand" (D9019): the cost of one runbgcommand call against
the caller's heap size, ensurestart True and False, for

  hg<=5.5      hg 5.5's double fork (os.fork, then Popen in the child),
               reimplemented below as it was
  hg-6.3       the installed Mercurial's procutil.runbgcommand
               (Popen of `/bin/sh -c '( CMD ) &'`)
  popen        subprocess.Popen(start_new_session=True), /dev/null stdio
  posix_spawn  os.posix_spawn(setsid=True), /dev/null stdio: the floor for
               a confirmed start from Python
  bgrun        bgrun.runbgcommand (this project's module)

The heap is made as one bytes object or as many small bytes objects (in a
list), 0 to --max-gb GB (default 1.0: the seed's 4 GB does not fit beside
the other work of a shared machine; --max-gb 4 adds it). Each cell is
timed call by call: --rounds rounds of --per-round calls per method, the
methods interleaved within each round so that load hits them alike; p50
and p90 over all calls. Every method launches /bin/true with the same
environment; children are reaped outside the timed calls.

For bgrun with ensurestart=False a call only queues the launch; the
column 'bgrun+flush' is what a short-lived program pays per launch when
it must make sure they happened before it exits (bgrun.flush() after the
round, divided by the calls).

Then, with --hg-overhead (default on), the cost per hg command of logging
its commandfinish: `hg status` in a small repository, with no logging,
with logtoprocess -> `logsink send --from-hg-env` (embedded store, then the
daemon), and with the bgrun extension's ui.log handler (embedded, daemon).
Reported: the time ui.log('commandfinish') takes inside hg (a timing
wrapper extension), hg's wall time, and the CPU time of hg plus every
process it started (the bench is a child subreaper, so detached hooks are
waited for and counted).

With --handler-cost, only the handler's cost, resolved: hg status
--handler-runs times (200) per variant (no extension, an empty one, the
extension with the handler off, the handler with the daemon and
embedded, logtoprocess + logsink send both ways), interleaved in rounds
of random order; medians and per-round paired differences against no
extension and the handler off, with p25-p75 and a bootstrap 95% CI; a
probe extension's timings inside hg (each extension's load, set-up hooks,
ui.log, other threads' CPU); -X importtime of the pieces; the CPU of
fresh python3 -S importing the module.

With --paired, only the ensurestart=True target, resolved: for each heap,
--pairs (300) times one call each of bgrun.runbgcommand, os.posix_spawn
and hg 6.3's runbgcommand in random order, each child exited and reaped
before the next call (so bgrun's reaper and the floor's waitpid both stay
outside the timed calls), the cyclic collector off; p50 and p90 of each,
the difference of p50s and the median of the paired differences with a
bootstrap 95% interval.

Run with Debian's /usr/bin/python3 (the one hg runs on) and PYTHONPATH
giving the module: PYTHONPATH=build/python bench/hg-runbgcommand.py
"""

import argparse
import csv
import ctypes
import gc
import os
import random
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from mercurial.utils import procutil

import bgrun

TRUE = [b'/bin/true']
ENV = {b'PATH': b'/usr/bin:/bin'}
DEVNULL_ACTIONS = [
    (os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0),
    (os.POSIX_SPAWN_OPEN, 1, '/dev/null', os.O_WRONLY, 0),
    (os.POSIX_SPAWN_OPEN, 2, '/dev/null', os.O_WRONLY, 0),
]

# Children the timed calls started but did not reap: reaped between rounds.
_pending = []


def hg55_runbgcommand(cmd, env, shell=False, stdout=None, stderr=None,
                      ensurestart=True, record_wait=None, stdin_bytes=None):
    """hg 5.5's procutil.runbgcommand (POSIX), the double fork, as it was."""
    pid = os.fork()
    if pid:
        if not ensurestart:
            # As hg 5.5: a thread reaps the intermediate child.
            def _do_wait():
                os.waitpid(pid, 0)

            t = threading.Thread(target=_do_wait)
            t.daemon = True
            t.start()
            return
        # Parent process
        (_pid, status) = os.waitpid(pid, 0)
        if os.WIFEXITED(status):
            returncode = os.WEXITSTATUS(status)
        else:
            returncode = -(os.WTERMSIG(status))
        if returncode != 0:
            raise OSError(returncode, 'error running %r: %s' % (cmd, os.strerror(returncode)))
        return
    returncode = 255
    try:
        if record_wait is None:
            # Start a new session
            os.setsid()
        stdin = open(os.devnull, 'r')
        if stdout is None:
            stdout = open(os.devnull, 'w')
        if stderr is None:
            stderr = open(os.devnull, 'w')
        p = subprocess.Popen(cmd, shell=shell, env=env, close_fds=True,
                             stdin=stdin, stdout=stdout, stderr=stderr)
        if record_wait is not None:
            record_wait(p.wait)
        returncode = 0
    except EnvironmentError as ex:
        returncode = ex.errno & 0xFF
        if returncode == 0:
            returncode = 255
    except Exception:
        returncode = 255
    finally:
        # mission accomplished, this child needs to exit and not
        # continue the hg process here.
        os._exit(returncode)


def popen_bg(cmd, env, ensurestart=True):
    _pending.append(subprocess.Popen(cmd, env=env, close_fds=True, start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))


def posix_spawn_bg(cmd, env, ensurestart=True):
    _pending.append(os.posix_spawn(cmd[0], cmd, env, setsid=True,
                                   file_actions=DEVNULL_ACTIONS))


def reap_pending():
    while _pending:
        p = _pending.pop()
        if isinstance(p, int):
            os.waitpid(p, 0)
        else:
            p.wait()


METHODS = [
    ('hg<=5.5', hg55_runbgcommand),
    ('hg-6.3', procutil.runbgcommand),
    ('popen', popen_bg),
    ('posix_spawn', posix_spawn_bg),
    ('bgrun', bgrun.runbgcommand),
]


def make_heap(kind, nbytes):
    if nbytes == 0:
        return None
    if kind == 'bytes':
        return b'a' * nbytes
    # Many small objects: bytes of 90 characters (123 bytes each with
    # their header) plus a list slot, about 131 bytes apiece.
    return [b'%090d' % i for i in range(nbytes // 131)]


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def run_cell(rounds, per_round, rng):
    """{(method, ensurestart): [ns per call...]}, and bgrun's flush cost."""
    times = {(m, es): [] for m, _ in METHODS for es in (True, False)}
    flush_ns = []
    for _ in range(rounds):
        order = [(m, fn, es) for m, fn in METHODS for es in (True, False)]
        rng.shuffle(order)
        for name, fn, es in order:
            t = times[(name, es)]
            for _ in range(per_round):
                t0 = time.perf_counter_ns()
                fn(TRUE, ENV, ensurestart=es)
                t.append(time.perf_counter_ns() - t0)
            if name == 'bgrun' and not es:
                t0 = time.perf_counter_ns()
                bad = bgrun.flush()
                flush_ns.append((time.perf_counter_ns() - t0) / per_round)
                assert not bad, bad
            reap_pending()
    return times, flush_ns


# --- ensurestart=True, bgrun, os.posix_spawn and hg 6.3 call by call (--paired) ---

def _children():
    with open('/proc/self/task/%d/children' % threading.get_native_id()) as f:
        return [int(x) for x in f.read().split()]


def _gone(pid):
    """Waits, outside the timed call, until bgrun's reaper has reaped pid."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)
    while pid in _children():
        os.sched_yield()


def paired_cell(pairs, rng):
    """[{method: ns}...]: each time one call of bgrun, os.posix_spawn and
    hg 6.3's runbgcommand, in random order, each child exited and reaped
    before the next call."""
    out = []
    for _ in range(pairs):
        order = ['bgrun', 'posix_spawn', 'hg-6.3']
        rng.shuffle(order)
        got = {}
        for name in order:
            if name == 'bgrun':
                t0 = time.perf_counter_ns()
                bgrun.runbgcommand(TRUE, ENV, ensurestart=True)
                got[name] = time.perf_counter_ns() - t0
                for pid in _children():
                    _gone(pid)
            elif name == 'posix_spawn':
                t0 = time.perf_counter_ns()
                pid = os.posix_spawn(TRUE[0], TRUE, ENV, setsid=True,
                                     file_actions=DEVNULL_ACTIONS)
                got[name] = time.perf_counter_ns() - t0
                os.waitpid(pid, 0)
            else:
                t0 = time.perf_counter_ns()
                procutil.runbgcommand(TRUE, ENV, ensurestart=True)
                got[name] = time.perf_counter_ns() - t0
                # hg 6.3 never waits for its shell (`returncode = p.wait`,
                # not called): reaped here, so that no child is left.
                for pid in _children():
                    os.waitpid(pid, 0)
        out.append(got)
    return out


def paired(args, rng):
    sizes = [s for s in (4.0, 1.0, 0.5, 0.2, 0.0) if s <= args.max_gb]
    print_header()
    print('# ensurestart=True, %d triples per cell: bgrun.runbgcommand, os.posix_spawn '
          '(setsid, /dev/null stdio) and hg 6.3\'s runbgcommand call by call in random '
          'order, each child exited and reaped outside the timed calls, the collector off'
          % args.pairs)
    print('%-22s %15s %15s %9s %9s %24s %10s' % ('ms', 'bgrun p50/p90', 'spawn p50/p90',
                                                'p50 diff', 'p90 x', 'paired diff [95% CI]',
                                                'hg-6.3 p50'))
    rows = []
    met = True
    for gb in sizes:
        for kind in (('bytes', 'objects') if gb > 0 else ('bytes',)):
            heap = make_heap(kind, int(gb * 1e9))
            gc.collect()
            gc.disable()
            try:
                got = paired_cell(args.pairs, rng)
            finally:
                gc.enable()
            b = [g['bgrun'] / 1e6 for g in got]
            p = [g['posix_spawn'] / 1e6 for g in got]
            h50 = pct([g['hg-6.3'] / 1e6 for g in got], 0.5)
            d = [x - y for x, y in zip(b, p)]
            b50, b90, p50, p90 = pct(b, 0.5), pct(b, 0.9), pct(p, 0.5), pct(p, 0.9)
            dmed = statistics.median(d)
            lo, hi = _boot_ci_median(d, rng)
            met = met and b50 - p50 <= 0.05 and b50 < h50
            label = 'mem=%.1fGB %s' % (gb, kind if gb else '')
            print('%-22s %15s %15s %+9.3f %9.2f %24s %10.3f' % (
                label, '%.3f/%.3f' % (b50, b90), '%.3f/%.3f' % (p50, p90), b50 - p50,
                b90 / p90, '%+.3f [%+.3f, %+.3f]' % (dmed, lo, hi), h50), flush=True)
            rows.append(dict(section='paired', heap=kind, gb=gb, n=len(got),
                             bgrun_p50_ms='%.4f' % b50, bgrun_p90_ms='%.4f' % b90,
                             spawn_p50_ms='%.4f' % p50, spawn_p90_ms='%.4f' % p90,
                             diff_p50_ms='%.4f' % (b50 - p50), pair_median_ms='%.4f' % dmed,
                             pair_ci_lo_ms='%.4f' % lo, pair_ci_hi_ms='%.4f' % hi,
                             hg63_p50_ms='%.4f' % h50))
            del heap
    print('# target (bgrun p50 within 0.05 ms of os.posix_spawn p50, and below hg 6.3\'s, '
          'in every cell): %s' %
          ('met' if met else 'not met'))
    return rows


PAIRED_FIELDS = ['section', 'heap', 'gb', 'n', 'bgrun_p50_ms', 'bgrun_p90_ms', 'spawn_p50_ms',
                 'spawn_p90_ms', 'diff_p50_ms', 'pair_median_ms', 'pair_ci_lo_ms',
                 'pair_ci_hi_ms', 'hg63_p50_ms']

# --- the cost of logging one hg command ---

TIMER_EXT = '''
import os, time
from mercurial import extensions, ui as uimod

def _log(orig, self, event, *args, **opts):
    if event != b'commandfinish':
        return orig(self, event, *args, **opts)
    t0 = time.perf_counter_ns()
    try:
        return orig(self, event, *args, **opts)
    finally:
        dt = time.perf_counter_ns() - t0
        with open(os.environ['BENCH_UILOG'], 'a') as f:
            f.write('%d\\n' % dt)

def uisetup(ui):
    extensions.wrapfunction(uimod.ui, 'log', _log)
'''


def subreaper():
    """Orphans below us become our children: their CPU is then ours to count."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_CHILD_SUBREAPER)')


def wait_all_children():
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def in_hg_tmp(label, prefix, body, args, rng):
    """body(args, rng, hg, logsink, tmp) in a temporary directory, or a
    skip said when hg or logsink is missing."""
    hg = shutil.which('hg')
    logsink = args.logsink
    if hg is None or logsink is None or not os.access(logsink, os.X_OK):
        print('# %s: skipped (hg or --logsink missing)' % label)
        return []
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        return body(args, rng, hg, logsink, tmp)
    finally:
        shutil.rmtree(tmp, True)


def hg_bench_setup(hg, tmp, pycache=False):
    """What both hg benches run in: the environment (HOME, the log and
    the socket in tmp; an extension that does nothing importable, which
    shows what hg itself costs for loading a third-party one by name: it
    first tries, and fails, hgext.NAME) and a 50-file repository. With
    pycache, Python's compiled files go to tmp/pycache, not beside the
    sources. Returns (base_env, repo)."""
    repo = os.path.join(tmp, 'repo')
    pyext = os.path.join(tmp, 'pyext', 'hgext3rd')
    os.makedirs(pyext)
    with open(os.path.join(pyext, 'bgrunbenchempty.py'), 'w') as f:
        f.write("testedwith = b'6.3.2'\n")
    pypath = os.path.join(tmp, 'pyext') + os.pathsep + os.environ.get('PYTHONPATH', '')
    base_env = dict(os.environ, HOME=tmp, HGPLAIN='1', HGUSER='bench', PYTHONPATH=pypath,
                    BGRUN_DB=os.path.join(tmp, 'events.db'),
                    BGRUN_SOCKET=os.path.join(tmp, 'sink.sock'))
    base_env.pop('BGRUN_SINK', None)
    if pycache:
        base_env.pop('PYTHONDONTWRITEBYTECODE', None)
        base_env['PYTHONPYCACHEPREFIX'] = os.path.join(tmp, 'pycache')
    subprocess.run([hg, 'init', repo], env=dict(base_env, HGRCPATH=''), check=True)
    for i in range(50):
        with open(os.path.join(repo, 'f%d' % i), 'w') as f:
            f.write('%d\n' % i)
    subprocess.run([hg, 'commit', '-qAm', 'files'], cwd=repo,
                   env=dict(base_env, HGRCPATH=''), check=True)
    return base_env, repo


def hg_bench_envs(tmp, configs, first, base_env, **more):
    """One hgrc per config (NAME, RC, EXTRA_ENV), `first` written before
    its RC; NAME -> its environment."""
    envs = {}
    for name, rc, extra in configs:
        path = os.path.join(tmp, 'hgrc-%d' % len(envs))
        with open(path, 'w') as f:
            f.write(first)
            f.write(rc)
        envs[name] = dict(base_env, HGRCPATH=path, **more, **extra)
    return envs


def hg_overhead(args, rng):
    return in_hg_tmp('hg overhead', 'bgrun-hgbench-', _hg_overhead, args, rng)


def _hg_overhead(args, rng, hg, logsink, tmp):
    timer = os.path.join(tmp, 'timer.py')
    with open(timer, 'w') as f:
        f.write(TIMER_EXT)
    base_env, repo = hg_bench_setup(hg, tmp)

    hook = '"%s" send --from-hg-env' % logsink
    configs = [
        ('none', '', {}),
        ('an empty extension', '[extensions]\nbgrunbenchempty =\n', {}),
        # The extension loaded, nothing logged: what its import costs.
        ('bgrun ext, log off', '[extensions]\nbgrun =\n', {}),
        ('logtoprocess+send embedded',
         '[extensions]\nlogtoprocess =\n[logtoprocess]\ncommandfinish = %s\n' % hook,
         {'BGRUN_SINK': 'embedded'}),
        ('logtoprocess+send daemon',
         '[extensions]\nlogtoprocess =\n[logtoprocess]\ncommandfinish = %s\n' % hook,
         {'BGRUN_SINK': 'daemon'}),
        ('bgrun ext embedded', '[extensions]\nbgrun =\n[bgrun]\nlog = commandfinish\n',
         {'BGRUN_SINK': 'embedded'}),
        ('bgrun ext daemon', '[extensions]\nbgrun =\n[bgrun]\nlog = commandfinish\n',
         {'BGRUN_SINK': 'daemon'}),
    ]
    daemon = subprocess.run([logsink, 'serve', '--detach', '--log', os.path.join(tmp, 'd.log')],
                            env=base_env, capture_output=True, text=True, check=True)
    dpid = int(daemon.stdout)
    # After the daemon started: it must not become ours to wait for.
    subreaper()
    results = {name: {'uilog': [], 'wall': [], 'cpu': []} for name, _, _ in configs}
    envs = hg_bench_envs(tmp, configs, '[extensions]\ntimer = %s\n' % timer, base_env,
                         BENCH_UILOG=os.path.join(tmp, 'uilog'))
    try:
        for _ in range(args.hg_runs):
            order = list(configs)
            rng.shuffle(order)
            for name, _, _ in order:
                env = envs[name]
                if os.path.exists(env['BENCH_UILOG']):
                    os.unlink(env['BENCH_UILOG'])
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter_ns()
                p = subprocess.run([hg, 'status'], cwd=repo, env=env,
                                   stdout=subprocess.DEVNULL)
                wall = time.perf_counter_ns() - t0
                # Detached hooks were reparented to us: wait for them all.
                wait_all_children()
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                assert p.returncode == 0
                cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                res = results[name]
                res['wall'].append(wall)
                res['cpu'].append(cpu * 1e9)
                with open(env['BENCH_UILOG']) as f:
                    res['uilog'].append(int(f.read().split()[0]))
    finally:
        os.kill(dpid, 15)
    # A handler that failed quietly (counted, not shown) or an extension
    # that did not load would make its rows cheap: count what was stored.
    logging = [name for name, rc, _ in configs if 'log' in rc and 'commandfinish' in rc]
    stored = len(bgrun.query(base_env['BGRUN_DB'], event='commandfinish'))
    expected = args.hg_runs * len(logging)
    print('# commandfinish rows stored: %d of %d%s' % (
        stored, expected, '' if stored == expected else '  <-- SOME WERE NOT RECORDED'))
    rows = []
    base = {k: statistics.median(v) for k, v in results['none'].items()}
    print()
    print('# per hg command (hg status, %d runs each, interleaved), ms: p50 (p90 for ui.log);'
          % args.hg_runs)
    print('# extra = p50 - p50 of none; pair = p50 of (run - the none run of its round)')
    print('%-28s %14s %9s %9s %11s %11s %10s %10s' % (
        'logging', 'ui.log p50/p90', 'wall', 'cpu', 'wall-extra', 'cpu-extra',
        'wall-pair', 'cpu-pair'))
    for name, _, _ in configs:
        res = results[name]
        m = {k: statistics.median(v) for k, v in res.items()}
        # Paired with the 'none' run of the same round: the load of that
        # moment cancels out better than between two medians.
        pw = statistics.median(a - b for a, b in zip(res['wall'], results['none']['wall']))
        pc = statistics.median(a - b for a, b in zip(res['cpu'], results['none']['cpu']))
        print('%-28s %14s %9.2f %9.2f %11.3f %11.3f %10.3f %10.3f' % (
            name, '%.3f/%.3f' % (m['uilog'] / 1e6, pct(res['uilog'], 0.9) / 1e6),
            m['wall'] / 1e6, m['cpu'] / 1e6,
            (m['wall'] - base['wall']) / 1e6, (m['cpu'] - base['cpu']) / 1e6,
            pw / 1e6, pc / 1e6))
        rows.append(dict(section='hg-command', logging=name,
                         uilog_p50_ms='%.4f' % (m['uilog'] / 1e6),
                         uilog_p90_ms='%.4f' % (pct(res['uilog'], 0.9) / 1e6),
                         wall_p50_ms='%.3f' % (m['wall'] / 1e6),
                         cpu_p50_ms='%.3f' % (m['cpu'] / 1e6),
                         wall_pair_ms='%.3f' % (pw / 1e6),
                         cpu_pair_ms='%.3f' % (pc / 1e6)))
    print("# against the empty extension (hg's own cost of loading one), paired by round, p50 ms:")
    empty = results['an empty extension']
    for name, _, _ in configs:
        if not name.startswith('bgrun'):
            continue
        res = results[name]
        pw = statistics.median(a - b for a, b in zip(res['wall'], empty['wall']))
        pc = statistics.median(a - b for a, b in zip(res['cpu'], empty['cpu']))
        print('#   %-26s wall %+7.3f  cpu %+7.3f' % (name, pw / 1e6, pc / 1e6))
        rows.append(dict(section='hg-command-vs-empty', logging=name,
                         wall_pair_ms='%.3f' % (pw / 1e6), cpu_pair_ms='%.3f' % (pc / 1e6)))
    print('# load average after: %.2f %.2f %.2f' % os.getloadavg())
    return rows


# --- the handler's cost, resolved: --handler-cost ---

# Loaded first in every variant of --handler-cost: times, inside hg, with
# the clock of the main thread's CPU and the wall clock, what each other
# extension costs where it runs (its load, its set-up hooks, ui.log's
# commandfinish), and at Python's exit the CPU of every other thread the
# process ran (RUSAGE_SELF less RUSAGE_THREAD: exited threads included).
PROBE_EXT = """
import atexit, os, resource, time
from mercurial import extensions, ui as uimod

acc = {}

def _add(key, w, c):
    a = acc.setdefault(key, [0, 0])
    a[0] += w
    a[1] += c

def _timed(key, fn):
    def wrapper(*args, **kw):
        w0 = time.perf_counter_ns(); c0 = time.thread_time_ns()
        try:
            return fn(*args, **kw)
        finally:
            _add(key, time.perf_counter_ns() - w0, time.thread_time_ns() - c0)
    return wrapper

def _load(orig, ui, name, path, *args, **kw):
    w0 = time.perf_counter_ns(); c0 = time.thread_time_ns()
    try:
        mod = orig(ui, name, path, *args, **kw)
    finally:
        _add('load', time.perf_counter_ns() - w0, time.thread_time_ns() - c0)
    for hook in ('uisetup', 'extsetup', 'uipopulate', 'reposetup'):
        fn = getattr(mod, hook, None)
        if fn is not None:
            setattr(mod, hook, _timed('setup', fn))
    return mod

def _log(orig, self, event, *args, **opts):
    if event != b'commandfinish':
        return orig(self, event, *args, **opts)
    w0 = time.perf_counter_ns(); c0 = time.thread_time_ns()
    try:
        return orig(self, event, *args, **opts)
    finally:
        _add('uilog', time.perf_counter_ns() - w0, time.thread_time_ns() - c0)

def _exit():
    me = resource.getrusage(resource.RUSAGE_THREAD)
    al = resource.getrusage(resource.RUSAGE_SELF)
    other = (al.ru_utime + al.ru_stime) - (me.ru_utime + me.ru_stime)
    out = ['%s %d %d' % (k, w, c) for k, (w, c) in sorted(acc.items())]
    out.append('threads 0 %d' % round(other * 1e9))
    with open(os.environ['BENCH_PROBE'], 'a') as f:
        f.write(' '.join(out) + '\\n')

extensions.wrapfunction(extensions, 'load', _load)
extensions.wrapfunction(uimod.ui, 'log', _log)
# First registered, so run last: after the bgrun module's own handler.
atexit.register(_exit)
"""


def _spawn_reap(argv, env):
    """(exit status, wall ns, cpu ns): hg from its spawn to its reaping,
    and the CPU (user+sys) of hg and of every process it started: they
    are reparented to this subreaper when detached, and waited for too."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, '/dev/null', os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - t0
    cpu = ru.ru_utime + ru.ru_stime
    while True:
        try:
            _, _, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += ru.ru_utime + ru.ru_stime
    return status, wall, round(cpu * 1e9)


def _task_cpu_ns(pid):
    """The CPU a running process used so far, all its threads, in ns."""
    total = 0
    try:
        for t in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/schedstat' % (pid, t)) as f:
                total += int(f.read().split()[0])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return total


def _qs(values, qs):
    v = sorted(values)
    n = len(v)
    out = []
    for q in qs:
        # Linear interpolation between the closest ranks.
        x = q * (n - 1)
        i = int(x)
        out.append(v[i] + (v[min(i + 1, n - 1)] - v[i]) * (x - i))
    return out


def _boot_ci_median(values, rng, n=1000):
    """A bootstrap 95% interval of the median."""
    k = len(values)
    meds = sorted(statistics.median(rng.choices(values, k=k)) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def _importtime(argv, env, names, runs):
    """Median self and cumulative µs of each module of names under -X importtime."""
    got = {n: ([], []) for n in names}
    for _ in range(runs):
        p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        seen = set()
        for line in p.stderr.splitlines():
            m = line.split('|')
            if len(m) != 3 or not m[0].startswith('import time:'):
                continue
            name = m[2].strip()
            if name in got and name not in seen:
                try:
                    got[name][0].append(int(m[0].split(':')[1]))
                    got[name][1].append(int(m[1]))
                except ValueError:
                    continue
                seen.add(name)
    return {n: (statistics.median(a) if a else None, statistics.median(b) if b else None)
            for n, (a, b) in got.items()}


def handler_cost(args, rng):
    return in_hg_tmp('handler cost', 'bgrun-hgcost-', _handler_cost, args, rng)


def _handler_cost(args, rng, hg, logsink, tmp):
    # hg as the bench runs it: Debian's interpreter on the script, so that
    # -X importtime can be given the same way.
    hgpy = [sys.executable, hg]
    # Compiled once (the warm-up runs), kept in the bench's directory, not
    # the source tree's: a variant that recompiled its .py at each run
    # would pay that instead of its cost.
    base_env, repo = hg_bench_setup(hg, tmp, pycache=True)

    hook = '"%s" send --from-hg-env' % logsink
    ltp = '[extensions]\nlogtoprocess =\n[logtoprocess]\ncommandfinish = %s\n' % hook
    on = '[extensions]\nbgrun =\n[bgrun]\nlog = commandfinish\n'
    configs = [
        ('none', '', {}),
        ('empty ext', '[extensions]\nbgrunbenchempty =\n', {}),
        ('bgrun ext, handler off',
         '[extensions]\nbgrun =\n[bgrun]\nlog =\nrunbgcommand = False\n', {}),
        ('bgrun handler daemon', on, {'BGRUN_SINK': 'daemon'}),
        ('bgrun handler embedded', on, {'BGRUN_SINK': 'embedded'}),
        ('logtoprocess daemon', ltp, {'BGRUN_SINK': 'daemon'}),
        ('logtoprocess embedded', ltp, {'BGRUN_SINK': 'embedded'}),
    ]
    names = [c[0] for c in configs]
    probe = os.path.join(tmp, 'bgrunbenchprobe.py')
    with open(probe, 'w') as f:
        f.write(PROBE_EXT)
    probe_out = os.path.join(tmp, 'probe')
    envs = hg_bench_envs(tmp, configs, '[extensions]\nbgrunbenchprobe = %s\n' % probe,
                         base_env, BENCH_PROBE=probe_out)
    # hg's .pyc files and the store exist before the first timed run.
    for name in names:
        for _ in range(2):
            subprocess.run(hgpy + ['status'], cwd=repo, env=envs[name],
                           stdout=subprocess.DEVNULL, check=False)
    daemon = subprocess.run([logsink, 'serve', '--detach', '--log', os.path.join(tmp, 'd.log')],
                            env=base_env, capture_output=True, text=True, check=True)
    dpid = int(daemon.stdout)
    load0 = os.getloadavg()
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    dcpu = {n: 0 for n in names}
    parts = {n: {} for n in names}
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        # After the daemon started: it must not become ours to wait for.
        subreaper()
        for _ in range(args.handler_runs):
            order = list(names)
            rng.shuffle(order)
            for name in order:
                if os.path.exists(probe_out):
                    os.unlink(probe_out)
                d0 = _task_cpu_ns(dpid)
                st, w, c = _spawn_reap(hgpy + ["status"], envs[name])
                dcpu[name] += _task_cpu_ns(dpid) - d0
                with open(probe_out) as f:
                    v = f.read().split()
                for i in range(0, len(v), 3):
                    p = parts[name].setdefault(v[i], ([], []))
                    p[0].append(int(v[i + 1]))
                    p[1].append(int(v[i + 2]))
                if not os.WIFEXITED(st) or os.WEXITSTATUS(st) != 0:
                    raise SystemExit('hg status failed under %r: %r' % (name, st))
                wall[name].append(w)
                cpu[name].append(c)
    finally:
        os.chdir(cwd)
        os.kill(dpid, 15)
    load1 = os.getloadavg()
    logging = [n for n, rc, _ in configs if 'commandfinish' in rc]
    # Warm-up runs with the daemon not yet started went to the store too.
    stored = len(bgrun.query(base_env['BGRUN_DB'], event='commandfinish'))
    expected = (args.handler_runs + 2) * len(logging)
    print('# commandfinish rows stored: %d of %d%s' % (
        stored, expected, '' if stored == expected else '  <-- SOME WERE NOT RECORDED'))
    n = args.handler_runs
    print()
    print('# hg status (50 files), %d runs per variant, interleaved in rounds of random order;'
          % n)
    print('# load average %.2f %.2f %.2f before, %.2f %.2f %.2f after' % (load0 + load1))
    print('# wall: spawn to reap; cpu: user+sys of hg and all it started (detached included);')
    print('# daemon: the sink daemon\'s CPU during the run, mean per run. ms.')
    print('%-24s %8s %8s %8s %8s %8s %8s' % (
        'variant', 'wall p50', 'wall p90', 'cpu p50', 'cpu p90', 'cpu mean', 'daemon'))
    rows = []
    for name in names:
        wp50, wp90 = _qs(wall[name], (0.5, 0.9))
        cp50, cp90 = _qs(cpu[name], (0.5, 0.9))
        cmean = statistics.fmean(cpu[name])
        print('%-24s %8.2f %8.2f %8.2f %8.2f %8.2f %8.3f' % (
            name, wp50 / 1e6, wp90 / 1e6, cp50 / 1e6, cp90 / 1e6, cmean / 1e6,
            dcpu[name] / n / 1e6))
        rows.append(dict(section='handler-cost', variant=name, against='', n=n,
                         wall_p50_ms='%.4f' % (wp50 / 1e6), wall_p90_ms='%.4f' % (wp90 / 1e6),
                         cpu_p50_ms='%.4f' % (cp50 / 1e6), cpu_p90_ms='%.4f' % (cp90 / 1e6),
                         cpu_mean_ms='%.4f' % (cmean / 1e6),
                         daemon_cpu_ms='%.4f' % (dcpu[name] / n / 1e6),
                         load='%.2f %.2f' % (load0[0], load1[0])))
    for base in ('none', 'bgrun ext, handler off'):
        print()
        print('# paired by round against %r, ms: median of the differences [p25, p75],'
              % base)
        print('# its bootstrap 95%% CI, and the difference of the mean CPU (total/%d)' % n)
        print('%-24s %24s %17s %24s %17s %9s' % (
            'variant', 'wall p50 [p25, p75]', '95% CI', 'cpu p50 [p25, p75]', '95% CI',
            'cpu mean'))
        for name in names:
            if name == base:
                continue
            row = dict(section='handler-cost-paired', variant=name, against=base, n=n,
                       load='%.2f %.2f' % (load0[0], load1[0]))
            line = '%-24s' % name
            for key, m in (('wall', wall), ('cpu', cpu)):
                d = [a - b for a, b in zip(m[name], m[base])]
                p25, p50, p75 = _qs(d, (0.25, 0.5, 0.75))
                lo, hi = _boot_ci_median(d, rng)
                line += ' %24s %17s' % ('%+.3f [%+.3f, %+.3f]' % (p50 / 1e6, p25 / 1e6, p75 / 1e6),
                                        '%+.3f, %+.3f' % (lo / 1e6, hi / 1e6))
                row.update({key + '_pair_p50_ms': '%.4f' % (p50 / 1e6),
                            key + '_pair_p25_ms': '%.4f' % (p25 / 1e6),
                            key + '_pair_p75_ms': '%.4f' % (p75 / 1e6),
                            key + '_pair_ci_lo_ms': '%.4f' % (lo / 1e6),
                            key + '_pair_ci_hi_ms': '%.4f' % (hi / 1e6)})
            dm = statistics.fmean(cpu[name]) - statistics.fmean(cpu[base])
            line += ' %+9.3f' % (dm / 1e6)
            row['cpu_mean_diff_ms'] = '%.4f' % (dm / 1e6)
            print(line)
            rows.append(row)

    # The pieces, timed inside hg by the probe (µs, median over the runs).
    print()
    print('# inside hg, timed by a probe extension loaded first, µs p50 (p90): the other')
    print("# extensions' load (hg's finding and importing them), their set-up hooks, ui.log's")
    print('# commandfinish (wall / main thread CPU), and the CPU of the other threads')
    keys = ['load', 'setup', 'uilog', 'threads']
    print('%-24s' % 'variant' + ''.join('%26s' % k for k in keys) + '%12s' % 'cpu sum')
    for name in names:
        line = '%-24s' % name
        row = dict(section='handler-cost-inside', variant=name, n=n,
                   load='%.2f %.2f' % (load0[0], load1[0]))
        total = 0
        for k in keys:
            w, c = parts[name].get(k, ([], []))
            if not c:
                line += '%26s' % '-'
                continue
            cw50, cw90 = _qs(w, (0.5, 0.9))
            cc50, cc90 = _qs(c, (0.5, 0.9))
            total += cc50
            if k == 'threads':
                line += '%26s' % ('cpu %.0f (%.0f)' % (cc50 / 1e3, cc90 / 1e3))
            else:
                line += '%26s' % ('%.0f (%.0f) / %.0f (%.0f)' % (
                    cw50 / 1e3, cw90 / 1e3, cc50 / 1e3, cc90 / 1e3))
            row.update({k + '_wall_p50_us': '%.1f' % (cw50 / 1e3),
                        k + '_wall_p90_us': '%.1f' % (cw90 / 1e3),
                        k + '_cpu_p50_us': '%.1f' % (cc50 / 1e3),
                        k + '_cpu_p90_us': '%.1f' % (cc90 / 1e3)})
        line += '%12.0f' % (total / 1e3)
        print(line)
        rows.append(row)

    # The pieces, by -X importtime (median over the runs, µs).
    runs = args.importtime_runs
    print()
    print('# -X importtime, median of %d runs, µs (self / cumulative); load %.2f' % (
        runs, os.getloadavg()[0]))
    pieces = []
    t = _importtime([sys.executable, '-X', 'importtime', '-c', 'import bgrun'], base_env,
                    ['bgrun'], runs)
    pieces.append(('python3 -c "import bgrun"', 'bgrun', t['bgrun']))
    t = _importtime([sys.executable, '-X', 'importtime', '-c', 'import _json'], base_env,
                    ['_json'], runs)
    pieces.append(('python3 -c "import _json"', '_json', t['_json']))
    mods = ['bgrun', 'hgext3rd.bgrun', 'hgext.bgrun', 'hgext3rd.bgrunbenchempty',
            'hgext.bgrunbenchempty', 'hgext', 'pkgutil', 'hgext.logtoprocess']
    for name in ('empty ext', 'bgrun ext, handler off', 'bgrun handler daemon',
                 'logtoprocess daemon'):
        t = _importtime([sys.executable, '-X', 'importtime', hg, 'status'], dict(envs[name]),
                        mods, runs)
        for m in mods:
            if t[m][0] is not None:
                pieces.append(('hg status, ' + name, m, t[m]))
    for where, m, (self_us, cum_us) in pieces:
        print('%-40s %-26s %7d %7d' % (where, m, self_us, cum_us))
        rows.append(dict(section='importtime', variant=where, against=m, n=runs,
                         self_us='%d' % self_us, cumulative_us='%d' % cum_us))

    # A fresh `python3 -S` importing the module, against one importing a
    # C module with no library of its own, and one importing nothing:
    # CPU of the process, paired by round.
    print()
    progs = [('pass', 'pass'), ('import _json', 'import _json'), ('import bgrun', 'import bgrun')]
    pw = {p: [] for p, _ in progs}
    pc = {p: [] for p, _ in progs}
    env = dict(base_env)
    for _ in range(args.handler_runs):
        order = list(progs)
        rng.shuffle(order)
        for name, code in order:
            st, w, c = _spawn_reap([sys.executable, "-S", "-c", code], env)
            pw[name].append(w)
            pc[name].append(c)
    print('# fresh python3 -S -c CODE, %d runs each, interleaved; load %.2f; ms: p50, and'
          % (args.handler_runs, os.getloadavg()[0]))
    print('# median of the paired difference against "pass" [p25, p75]')
    print('%-16s %8s %8s %26s %26s' % ('code', 'wall', 'cpu', 'wall - pass', 'cpu - pass'))
    for name, _ in progs:
        dw = _qs([a - b for a, b in zip(pw[name], pw['pass'])], (0.25, 0.5, 0.75))
        dc = _qs([a - b for a, b in zip(pc[name], pc['pass'])], (0.25, 0.5, 0.75))
        print('%-16s %8.3f %8.3f %26s %26s' % (
            name, statistics.median(pw[name]) / 1e6, statistics.median(pc[name]) / 1e6,
            '%+.3f [%+.3f, %+.3f]' % (dw[1] / 1e6, dw[0] / 1e6, dw[2] / 1e6),
            '%+.3f [%+.3f, %+.3f]' % (dc[1] / 1e6, dc[0] / 1e6, dc[2] / 1e6)))
        rows.append(dict(section='python-S', variant=name, against='pass', n=args.handler_runs,
                         wall_p50_ms='%.4f' % (statistics.median(pw[name]) / 1e6),
                         cpu_p50_ms='%.4f' % (statistics.median(pc[name]) / 1e6),
                         wall_pair_p50_ms='%.4f' % (dw[1] / 1e6),
                         wall_pair_p25_ms='%.4f' % (dw[0] / 1e6),
                         wall_pair_p75_ms='%.4f' % (dw[2] / 1e6),
                         cpu_pair_p50_ms='%.4f' % (dc[1] / 1e6),
                         cpu_pair_p25_ms='%.4f' % (dc[0] / 1e6),
                         cpu_pair_p75_ms='%.4f' % (dc[2] / 1e6)))
    print('# load average after: %.2f %.2f %.2f' % os.getloadavg())
    return rows


HANDLER_FIELDS = ['section', 'variant', 'against', 'n', 'load', 'wall_p50_ms', 'wall_p90_ms',
                  'cpu_p50_ms', 'cpu_p90_ms', 'cpu_mean_ms', 'daemon_cpu_ms',
                  'wall_pair_p50_ms', 'wall_pair_p25_ms', 'wall_pair_p75_ms',
                  'wall_pair_ci_lo_ms', 'wall_pair_ci_hi_ms',
                  'cpu_pair_p50_ms', 'cpu_pair_p25_ms', 'cpu_pair_p75_ms',
                  'cpu_pair_ci_lo_ms', 'cpu_pair_ci_hi_ms', 'cpu_mean_diff_ms',
                  'self_us', 'cumulative_us'] + [
                      '%s_%s_%s_us' % (k, m, q) for k in ('load', 'setup', 'uilog', 'threads')
                      for m in ('wall', 'cpu') for q in ('p50', 'p90')]


def plot(args, rows):
    if shutil.which('gnuplot') is None:
        print('# plot: gnuplot not installed')
        return
    data = args.png + '.dat'
    series = [(m, es) for m, _ in METHODS for es in (True, False)]
    with open(data, 'w') as f:
        for m, es in series:
            f.write('# %s ensurestart=%s\n' % (m, es))
            for r in rows:
                if r.get('method') == m and r.get('ensurestart') == str(es) and r['heap'] == 'bytes':
                    f.write('%s %s\n' % (r['gb'], r['p50_ms']))
            f.write('\n\n')
    script = ['set terminal png size 900,600 noenhanced', "set output '%s'" % args.png,
              'set logscale y', "set xlabel 'heap (GB, one bytes object)'",
              "set ylabel 'p50 ms per call'", 'set key left top',
              "set title 'runbgcommand from Python %s'" % sys.version.split()[0]]
    plots = ["'%s' index %d with linespoints title '%s es=%s'" % (data, i, m, es)
             for i, (m, es) in enumerate(series)]
    script.append('plot ' + ', '.join(plots))
    subprocess.run(['gnuplot'], input='\n'.join(script) + '\n', text=True, check=False)
    os.unlink(data)
    print('# plot: %s' % args.png)


def print_header():
    print('# Python %s; %s; load average before: %.2f %.2f %.2f' % (
        sys.version.split()[0], ' '.join(sys.argv), *os.getloadavg()))


def write_csv(path, fields, rows):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print('# csv: %s' % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--max-gb', type=float, default=1.0)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--per-round', type=int, default=20)
    ap.add_argument('--quick', action='store_true', help='0 and 0.2 GB, 2 rounds of 10')
    ap.add_argument('--csv', default='hg-runbgcommand.csv')
    ap.add_argument('--png', default=None)
    ap.add_argument('--hg-runs', type=int, default=60)
    ap.add_argument('--no-hg-overhead', action='store_true')
    ap.add_argument('--hg-only', action='store_true', help='only the cost per hg command')
    ap.add_argument('--logsink', default=os.environ.get('BGRUN_LOGSINK'))
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--handler-cost', action='store_true',
                    help='only the handler\'s cost per hg command, resolved (paired runs)')
    ap.add_argument('--handler-runs', type=int, default=200)
    ap.add_argument('--importtime-runs', type=int, default=30)
    ap.add_argument('--paired', action='store_true',
                    help='only ensurestart=True: bgrun, os.posix_spawn and hg 6.3 call by call')
    ap.add_argument('--pairs', type=int, default=300)
    args = ap.parse_args()
    if args.paired:
        write_csv(args.csv, PAIRED_FIELDS, paired(args, random.Random(args.seed)))
        return
    if args.handler_cost:
        rng = random.Random(args.seed)
        print_header()
        write_csv(args.csv, HANDLER_FIELDS, handler_cost(args, rng))
        return
    if args.quick:
        args.max_gb, args.rounds, args.per_round, args.hg_runs = 0.2, 2, 10, 5
    rng = random.Random(args.seed)
    sizes = [s for s in (1.0, 0.5, 0.2, 0.0) if s <= args.max_gb and not args.hg_only]
    if args.max_gb >= 4.0:
        sizes.insert(0, 4.0)
    print('# Python %s, hg runbgcommand: %s, %d calls per cell (%d rounds of %d)' % (
        sys.version.split()[0], procutil.__file__, args.rounds * args.per_round,
        args.rounds, args.per_round))
    print('# %s; load average before: %.2f %.2f %.2f' % (
        ' '.join(sys.argv), *os.getloadavg()))
    if args.max_gb < 4.0:
        print('# sizes capped at %.1f GB (--max-gb): the seed also had 4 GB' % args.max_gb)
    names = [m for m, _ in METHODS]
    print('%-36s' % 'p50 / p90 ms' + ''.join('%16s' % n for n in names + ['bgrun+flush']))
    rows = []
    for gb in sizes:
        for kind in (('bytes', 'objects') if gb > 0 else ('bytes',)):
            heap = make_heap(kind, int(gb * 1e9))
            gc.collect()
            times, flush = run_cell(args.rounds, args.per_round, rng)
            for es in (True, False):
                line = '%-36s' % ('mem=%.1fGB %s, ensurestart=%s' % (gb, kind if gb else '', es))
                for m in names:
                    t = times[(m, es)]
                    p50, p90 = pct(t, 0.5) / 1e6, pct(t, 0.9) / 1e6
                    line += '%16s' % ('%.3f/%.3f' % (p50, p90))
                    rows.append(dict(section='runbgcommand', heap=kind, gb=gb, method=m,
                                     ensurestart=str(es), n=len(t),
                                     p50_ms='%.4f' % p50, p90_ms='%.4f' % p90))
                if es:
                    line += '%16s' % '-'
                else:
                    per = statistics.median(times[('bgrun', False)]) + statistics.median(flush)
                    line += '%16s' % ('%.3f' % (per / 1e6))
                    rows.append(dict(section='runbgcommand', heap=kind, gb=gb,
                                     method='bgrun+flush', ensurestart='False',
                                     n=len(flush), p50_ms='%.4f' % (per / 1e6), p90_ms=''))
                print(line, flush=True)
            del heap
    if not args.no_hg_overhead:
        rows += hg_overhead(args, rng)
    fields = ['section', 'heap', 'gb', 'method', 'ensurestart', 'n', 'p50_ms', 'p90_ms',
              'logging', 'uilog_p50_ms', 'uilog_p90_ms', 'wall_p50_ms', 'cpu_p50_ms',
              'wall_pair_ms', 'cpu_pair_ms']
    write_csv(args.csv, fields, rows)
    if args.png:
        plot(args, rows)


if __name__ == '__main__':
    main()
