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


def hg_overhead(args, rng):
    hg = shutil.which('hg')
    logsink = args.logsink
    if hg is None or logsink is None or not os.access(logsink, os.X_OK):
        print('# hg overhead: skipped (hg or --logsink missing)')
        return []
    tmp = tempfile.mkdtemp(prefix='bgrun-hgbench-')
    try:
        return _hg_overhead(args, rng, hg, logsink, tmp)
    finally:
        shutil.rmtree(tmp, True)


def _hg_overhead(args, rng, hg, logsink, tmp):
    repo = os.path.join(tmp, 'repo')
    timer = os.path.join(tmp, 'timer.py')
    with open(timer, 'w') as f:
        f.write(TIMER_EXT)
    # An extension that does nothing: what hg itself costs for loading a
    # third-party one by name (it first tries, and fails, hgext.NAME).
    pyext = os.path.join(tmp, 'pyext', 'hgext3rd')
    os.makedirs(pyext)
    with open(os.path.join(pyext, 'bgrunbenchempty.py'), 'w') as f:
        f.write("testedwith = b'6.3.2'\n")
    pypath = os.path.join(tmp, 'pyext') + os.pathsep + os.environ.get('PYTHONPATH', '')
    base_env = dict(os.environ, HOME=tmp, HGPLAIN='1', HGUSER='bench', PYTHONPATH=pypath,
                    BGRUN_DB=os.path.join(tmp, 'events.db'),
                    BGRUN_SOCKET=os.path.join(tmp, 'sink.sock'))
    base_env.pop('BGRUN_SINK', None)
    subprocess.run([hg, 'init', repo], env=dict(base_env, HGRCPATH=''), check=True)
    for i in range(50):
        with open(os.path.join(repo, 'f%d' % i), 'w') as f:
            f.write('%d\n' % i)
    subprocess.run([hg, 'commit', '-qAm', 'files'], cwd=repo,
                   env=dict(base_env, HGRCPATH=''), check=True)

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
    envs = {}
    for name, rc, extra in configs:
        path = os.path.join(tmp, 'hgrc-%d' % len(envs))
        with open(path, 'w') as f:
            f.write('[extensions]\ntimer = %s\n' % timer)
            f.write(rc)
        envs[name] = dict(base_env, HGRCPATH=path, BENCH_UILOG=os.path.join(tmp, 'uilog'), **extra)
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
    args = ap.parse_args()
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
    with open(args.csv, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print('# csv: %s' % args.csv)
    if args.png:
        plot(args, rows)


if __name__ == '__main__':
    main()
