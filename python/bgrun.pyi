# SPDX-License-Identifier: MIT
"""Type stubs of the C module bgrun (python/module.c, spawn.c, sink.c, store.c)."""

import os
from typing import (Any, Callable, Iterable, Mapping, NamedTuple, Optional,
                    Sequence, Union)

_Str = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Fd = Union[int, Any]  # a descriptor, or an object with fileno()

__version__: str

STDOUT: int   # stderr only: the same open file as stdout (-2, as subprocess)
DEVNULL: int  # /dev/null, the default (-3, as subprocess)
INHERIT: int  # this process's own descriptor 0, 1 or 2 (-4)
PIPE: int     # refused: nobody would read it (-1, as subprocess)

class SpawnError(OSError):
    """A launch failed: errno, strerror, filename (the program), stage."""
    stage: str  # 'arguments', 'setup', 'cwd', 'stdin', 'stdout', 'stderr', 'exec'

class SpawnFileNotFoundError(SpawnError, FileNotFoundError): ...
class SpawnPermissionError(SpawnError, PermissionError): ...
class SpawnNotADirectoryError(SpawnError, NotADirectoryError): ...
class SpawnIsADirectoryError(SpawnError, IsADirectoryError): ...
class SpawnTimeoutError(SpawnError, TimeoutError): ...
class SpawnChildProcessError(SpawnError, ChildProcessError): ...
class SpawnProcessLookupError(SpawnError, ProcessLookupError): ...

class SinkError(OSError):
    """An event was not stored: errno, strerror (the sink's reason)."""
    spooled: bool   # kept in the spool, to be stored later
    event_id: str

class Rusage(NamedTuple):
    user_cpu: Optional[float]     # seconds
    sys_cpu: Optional[float]
    max_rss_kb: Optional[int]
    minor_faults: Optional[int]
    major_faults: Optional[int]
    in_blocks: Optional[int]
    out_blocks: Optional[int]
    vol_ctxsw: Optional[int]
    invol_ctxsw: Optional[int]

class Status(NamedTuple):
    pid: int
    returncode: int               # exit_code, or -signal (Popen's convention)
    exit_code: Optional[int]      # None if killed by a signal
    signal: Optional[int]         # None if it exited
    core_dumped: bool
    duration: Optional[float]     # seconds, spawn to reap (monotonic)
    start_time: Optional[float]   # time.time() just before spawning
    end_time: Optional[float]     # time.time() when reaped
    rusage: Rusage

class Child:
    """A launched child. Dropped, it is reaped by the library (never a zombie)."""
    @property
    def pid(self) -> int:
        """The pid; with ensurestart=False waits for the launch, raising its SpawnError."""
    def wait(self, timeout: Optional[float] = None) -> Status:
        """Waits (GIL released) and reaps; TimeoutError on expiry."""
    def wait_returncode(self, timeout: Optional[float] = None) -> int:
        """As wait(), giving Popen.wait()'s return code."""
    def kill(self, sig: int = ...) -> None:
        """Signals it through its pidfd; ProcessLookupError once reaped."""

def spawn(argv_or_script: Union[_Str, Sequence[_Str]], *, shell: bool = False,
          env: Optional[Mapping[_Str, _Str]] = None,
          env_set: Optional[Mapping[_Str, _Str]] = None,
          env_unset: Optional[Iterable[_Str]] = None,
          cwd: Optional[_Str] = None,
          stdin: Union[None, int, bytes, bytearray, memoryview, str, "os.PathLike[str]", Any] = None,
          stdout: Union[None, _Fd, _Str] = None,
          stderr: Union[None, _Fd, _Str] = None,
          append: bool = False, ensurestart: bool = True, detach: bool = True,
          on_start: Optional[Callable[[Union[int, SpawnError]], object]] = None,
          ) -> Child:
    """Launches a command on libbgrun's primitive (see help(bgrun.spawn))."""

def runbgcommand(cmd: Union[bytes, Sequence[bytes]],
                 env: Optional[Mapping[Union[bytes, str], Union[bytes, str]]],
                 shell: bool = False, stdout: Optional[_Fd] = None,
                 stderr: Optional[_Fd] = None, ensurestart: bool = True,
                 record_wait: Optional[Callable[[Union[Callable[[], int], int]], object]] = None,
                 stdin_bytes: Optional[bytes] = None) -> None:
    """Mercurial's procutil.runbgcommand on the primitive (see help(bgrun.runbgcommand))."""

def flush() -> list[SpawnError]:
    """Waits for queued launches; returns the failures of runbgcommand's fire-and-forget ones."""

def log(event: str, **fields: Any) -> str:
    """Records an event through the module's Sink(); returns its id."""

class Sink:
    """The sink client: the daemon, else the store, else the spool."""
    def __init__(self, db: Optional[_Str] = None, *, socket: Optional[_Str] = None,
                 mode: Optional[str] = None, logsink: Optional[_Str] = None,
                 timeout: float = 0) -> None: ...
    @property
    def via(self) -> Optional[str]:
        """'daemon' or 'store': how the last successful put went."""
    def connect(self, *, wait: bool = True) -> Optional[str]:
        """Opens the daemon connection or the store now: 'daemon' or 'store'.

        wait=False: returns None at once: a daemon is connected to here,
        its answer read by the next put or send; else in a library thread
        (no GIL)."""
    def put(self, event: str, **fields: Any) -> str:
        """Records one event (GIL released until committed); returns its id."""
    def send(self, event: str, **fields: Any) -> str:
        """As put(), but returns the id at once. Through a daemon: the frame
        written in this thread, the answer read by the next send, flush(),
        close() or exit() (not os._exit()); else in a library thread,
        waited for by those."""
    def hglog(self, event: bytes, msg: bytes, opts: Mapping[bytes, Any], *,
              put: bool = False) -> str:
        """One Mercurial ui.log event, as send() (put=True: put()), with the
        fields hgext3rd/bgrun.py records: source 'hg', our pid, msg less
        its last newline (cut at 100000 bytes + ' (truncated)'), every opt
        as logtoprocess gives it to its hook (None/False '0', True '1');
        for commandfinish end_ns, exit_code and result, duration_ns and
        start_ns, display 'hg ' + canonical_command."""
    def flush(self, *, wait: bool = True) -> list[SinkError]:
        """Waits for this sink's sends; the SinkError of each not stored.

        wait=False: only those of the sends done so far."""
    def close(self) -> None: ...
    def __enter__(self) -> "Sink": ...
    def __exit__(self, *exc: object) -> None: ...

def query(db: Optional[_Str] = None, *, source: Optional[_Str] = None,
          event: Optional[_Str] = None, cwd: Optional[_Str] = None,
          tag: Optional[_Str] = None, result: Optional[_Str] = None,
          cmd_glob: Optional[_Str] = None, failed: bool = False,
          since: Optional[float] = None, until: Optional[float] = None,
          limit: int = 0) -> list[dict[str, Any]]:
    """The matching events, newest first, as dicts of their columns."""

def stats(db: Optional[_Str] = None, *, source: Optional[_Str] = None,
          event: Optional[_Str] = None, cwd: Optional[_Str] = None,
          tag: Optional[_Str] = None, result: Optional[_Str] = None,
          cmd_glob: Optional[_Str] = None, failed: bool = False,
          since: Optional[float] = None, until: Optional[float] = None,
          limit: int = 0) -> list[dict[str, Any]]:
    """Per command: display, runs, failures, p50_ns, p95_ns, max_ns."""
