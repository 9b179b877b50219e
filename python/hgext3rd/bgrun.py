# SPDX-License-Identifier: MIT
# hgext3rd/bgrun.py: Mercurial on libbgrun: runbgcommand on the primitive, ui.log events recorded in-process.
"""launch background commands with bgrun and record ui.log events in its sink

Two things, each on by configuration:

- ``procutil.runbgcommand`` is replaced for the whole process by
  ``bgrun.runbgcommand``: logtoprocess, remotefilelog and any extension
  that launches background work go through bgrun's primitive
  (posix_spawn: no ``/bin/sh -c '( CMD ) &'`` unless shell=True, exec
  errors raised instead of swallowed by a shell, children reaped instead
  of left as zombies). ``[bgrun] runbgcommand = False`` keeps hg's own.

- A ``ui.log`` handler records the events named in ``[bgrun] log`` (a
  list, or ``*`` for all) straight into bgrun's sink, in this process:
  through the sink daemon when it answers, else into the store, else
  into the spool. No process is started per event, and hg does not
  wait for the event's commit (``Sink.send``): with a daemon, no thread
  either, the connection being made while the command runs and the
  event's frame written by ``ui.log``; the daemon's answer is read when
  the process exits, after Python's own finalisation. Without one, the
  event is put in a thread of the module, waited for then. An event no
  path stored is then reported on stderr. (A forked child, a chg worker,
  ends with ``os._exit()``:
  it puts and waits.) Each event gets what
  logtoprocess would have passed to its hook (the message, every keyword
  as an option) and, for commandfinish, the return code, duration and
  canonical command as fields, with source ``hg``::

    [extensions]
    bgrun =
    [bgrun]
    log = commandfinish, commandexception

  ``[bgrun] db``, ``socket`` and ``mode`` (env, try, auto, embedded,
  daemon) choose the sink; by default $BGRUN_DB, $BGRUN_SOCKET and
  $BGRUN_SINK do, as for ``logsink send``.

Recording never fails or aborts a command: an event that cannot be
stored is counted, and the first such failure of the process is reported
once on stderr (events kept in the spool are only mentioned with
--debug). ``hg debugbgrun`` shows the counts.

``hg bgrun-log`` and ``hg bgrun-stats`` show the commands recorded at
this repository's root (``--all``: everywhere), over bgrun.query() and
bgrun.stats().
"""

import os
import time

from mercurial import (
    demandimport,
    pycompat,
    registrar,
)
from mercurial.utils import procutil

# Imported now, not lazily: a missing module is an error at load time,
# and no proxy sits between hg and each call.
with demandimport.deactivated():
    import bgrun as _bgrun

testedwith = b'6.3.2'

cmdtable = {}
command = registrar.command(cmdtable)
configtable = {}
configitem = registrar.configitem(configtable)
configitem(b'bgrun', b'log', default=list)
configitem(b'bgrun', b'runbgcommand', default=True)
configitem(b'bgrun', b'db', default=None)
configitem(b'bgrun', b'socket', default=None)
configitem(b'bgrun', b'mode', default=None)

class _state:
    """The process's sink and counts (a chg server serves many commands)."""

    # The process that loaded the extension: it ends through exit(), so
    # its events are sent without waiting (Sink.send, waited for at
    # exit); a forked child (a chg worker) ends with os._exit() and puts.
    mainpid = os.getpid()
    sink = None
    sinkkey = None
    inherited = []
    connecting = None  # the pid that opened its sink ahead
    recorded = 0
    failed = 0
    spooled = 0
    reported = False


def _forget_sink():
    # In a forked child (a chg worker, hg serve's): the parent's sink, its
    # daemon connection and its store, are the parent's. It is kept
    # unclosed and never used (closing an inherited SQLite connection
    # could checkpoint the parent's WAL): the child opens its own.
    if _state.sink is not None:
        _state.inherited.append(_state.sink)
    _state.sink = None
    _state.sinkkey = None


os.register_at_fork(after_in_child=_forget_sink)


def _sink(ui):
    # One configitems() where three config() calls cost 3 times as much
    # (the three items have no default and no alias).
    conf = dict(ui.configitems(b'bgrun'))
    key = (conf.get(b'db'), conf.get(b'socket'), conf.get(b'mode'))
    if _state.sink is None or _state.sinkkey != key:
        db, sock, mode = key
        _state.sink = _bgrun.Sink(
            db and os.path.expanduser(db),
            socket=sock and os.path.expanduser(sock),
            mode=mode and pycompat.sysstr(mode),
        )
        _state.sinkkey = key
    return _state.sink


def _record(ui, event, msg, opts):
    # The fields (logtoprocess's message and options; for commandfinish
    # the return code, duration and command) are built by the module:
    # the same Python, run once per command and all of it cold, cost
    # 0.07 to 0.1 ms of hg's CPU.
    sink = _sink(ui)
    if os.getpid() == _state.mainpid:
        # A long-lived process (hg serve) hears of its earlier sends here
        # (an hg command's only event has none before it).
        if _state.recorded:
            _flush(ui, wait=False)
        sink.hglog(event, msg, opts)
    else:
        sink.hglog(event, msg, opts, put=True)
    _state.recorded += 1


def _flush(ui, wait=True):
    """Counts (and reports) the events sent and not stored (wait: all of them)."""
    if _state.sink is None:
        return
    for exc in _state.sink.flush(wait=wait):
        _state.recorded -= 1
        _failed(ui, exc)


def _failed(ui, exc):
    if getattr(exc, 'spooled', False):
        _state.spooled += 1
        ui.debug(b'bgrun: event kept in the spool: %s\n' % _excbytes(exc))
        return
    _state.failed += 1
    if _state.reported:
        return
    _state.reported = True
    ui.warn(
        b'bgrun: event not recorded: %s (further failures of this '
        b'process are counted, not shown)\n' % _excbytes(exc)
    )


def _excbytes(exc):
    return pycompat.bytestr(str(exc) or type(exc).__name__)


# [bgrun] log's events, by the option's text: uipopulate runs for every
# ui (three in an `hg status`), and parsing the list each time cost more
# than the rest of the handler's set-up.
_eventsets = {}


def _events(ui):
    """The events to record (a frozenset), or None for none."""
    raw = ui.config(b'bgrun', b'log')
    if not raw:
        return None
    if not isinstance(raw, bytes):  # a list given by an extension's setconfig
        return frozenset(raw) or None
    events = _eventsets.get(raw)
    if events is None:
        # Event names are words: split as configlist() would. Its parser
        # (40 to 65 us the first time) only for text it alone reads right.
        if b'"' in raw or b"'" in raw or b'\\' in raw:
            names = ui.configlist(b'bgrun', b'log')
        else:
            names = raw.replace(b',', b' ').split()
        events = _eventsets[raw] = frozenset(names)
    return events or None


class bgrunlogger:
    """ui.log handler: the configured events into bgrun's sink."""

    def __init__(self, events):
        self._all = b'*' in events
        self._events = events

    def tracked(self, event):
        return self._all or event in self._events

    def log(self, ui, event, msg, opts):
        try:
            _record(ui, event, msg, opts)
        except Exception as exc:  # never fail the command for its log
            try:
                _failed(ui, exc)
            except Exception:
                pass


def uisetup(ui):
    # Once per process. Not on Windows, where hg's runbgcommand is
    # another function (and libbgrun's Windows platform is not built).
    if ui.configbool(b'bgrun', b'runbgcommand') and not pycompat.iswindows:
        procutil.runbgcommand = _bgrun.runbgcommand


def _preconnect(ui):
    """Opens the sink while the command runs, once a process.

    commandfinish comes at the very end: opening the daemon connection
    or the store then would add its cost to the command's. connect(
    wait=False) connects to a daemon here (a connect and a write, its
    answer read by the send), else opens the store in a thread of the
    module's, not a Python one: it never takes the GIL, and starting it
    does not wait for it.
    """
    if _state.connecting == os.getpid():
        return
    _state.connecting = os.getpid()
    try:
        _sink(ui).connect(wait=False)
    except Exception as exc:
        _failed(ui, exc)


def uipopulate(ui):
    events = _events(ui)
    if events:
        ui.setlogger(b'bgrun', bgrunlogger(events))
        _preconnect(ui)


def _db(ui):
    db = ui.config(b'bgrun', b'db')
    return db and os.path.expanduser(db)


def _where(repo, opts):
    """Only the commands run at this repository's root, unless --all."""
    if opts.get('all') or repo is None:
        return None
    return repo.root


def _ms(ns):
    return b'%9.1fms' % (ns / 1e6) if ns is not None else b'%11s' % b'-'


@command(
    b'bgrun-log',
    [
        (b'l', b'limit', 10, b'show at most NUM commands', b'NUM'),
        (b'', b'all', False, b'commands run anywhere, not only in this repository'),
    ],
    b'hg bgrun-log [-l NUM] [--all]',
    optionalrepo=True,
    intents={b'readonly'},
)
def bgrunlog(ui, repo, **opts):
    """show the last commands recorded, newest first

    The commandfinish events of hg (source hg) that ran at this
    repository's root: when, exit code, duration, canonical command. A
    thin wrapper over bgrun.query(); ``logsink query --source hg`` reads
    the same rows.
    """
    try:
        rows = _bgrun.query(_db(ui), source='hg', event='commandfinish',
                            cwd=_where(repo, opts), limit=max(0, opts['limit']))
    except FileNotFoundError:
        rows = []
    for r in rows:
        when = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r['time_ns'] / 1e9))
        code = r.get('exit_code')
        ui.write(b'%s  exit %-3s %s  %s\n' % (
            pycompat.bytestr(when), b'-' if code is None else b'%d' % code,
            _ms(r.get('duration_ns')), pycompat.bytestr(r.get('display') or '-')))
    if not rows:
        ui.status(b'no commands recorded\n')


@command(
    b'bgrun-stats',
    [(b'', b'all', False, b'commands run anywhere, not only in this repository')],
    b'hg bgrun-stats [--all]',
    optionalrepo=True,
    intents={b'readonly'},
)
def bgrunstats(ui, repo, **opts):
    """show runs, failures and durations per command

    Over the commandfinish events of hg run at this repository's root: a
    thin wrapper over bgrun.stats() (``logsink stats`` computes the same).
    """
    try:
        rows = _bgrun.stats(_db(ui), source='hg', event='commandfinish',
                            cwd=_where(repo, opts))
    except FileNotFoundError:
        rows = []
    if rows:
        ui.write(b'%-24s %6s %8s %11s %11s %11s\n' % (
            b'command', b'runs', b'failures', b'p50', b'p95', b'max'))
    for r in rows:
        ui.write(b'%-24s %6d %8d %s %s %s\n' % (
            pycompat.bytestr(r['display'] or '-'), r['runs'], r['failures'],
            _ms(r['p50_ns']), _ms(r['p95_ns']), _ms(r['max_ns'])))
    if not rows:
        ui.status(b'no commands recorded\n')


@command(b'debugbgrun', [], b'hg debugbgrun', norepo=True, intents={b'readonly'})
def debugbgrun(ui, **opts):
    """show what this process's bgrun handler recorded, and the sink it uses

    In a plain hg these are the counts of this very command (its own
    commandfinish is recorded after it printed); under chg, of the server.
    """
    _flush(ui)
    ui.write(b'runbgcommand: %s\n' % (
        b'bgrun' if procutil.runbgcommand is _bgrun.runbgcommand else b'hg'))
    ui.write(b'events: %s\n' % (b', '.join(sorted(ui.configlist(b'bgrun', b'log'))) or b'(none)'))
    ui.write(b'recorded: %d\n' % _state.recorded)
    ui.write(b'spooled: %d\n' % _state.spooled)
    ui.write(b'failed: %d\n' % _state.failed)
    via = _state.sink.via if _state.sink is not None else None
    ui.write(b'last path: %s\n' % pycompat.bytestr(via or 'none'))
