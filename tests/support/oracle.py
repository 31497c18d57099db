"""The model as the oracle of the adapter tests: the wire trace of every server a test starts is
checked by the online monitor (:class:`mcp_inflight.trace.online.Monitor`), and a test whose
server wrote a trace the ``atomic`` design does not explain fails.

The servers the tests start register themselves here when they start, so a new test gets the
oracle without asking for it:

* an app served in process (``support/http_server.py``'s ``start``, the load test's server)
  is wrapped in the trace tap (:func:`tapped`), whose sink only appends each event to a list;
* a server in its own process (``serve --trace``, the guard in front of the SDK, the stdio
  server) writes its trace to a file (:func:`trace_file`), read as it grows; a pool of
  workers sharing sessions through Redis writes one file per worker, read as one trace in the
  order of the events' times (:func:`pool`).

After each test's call (``tests/conftest.py``'s hook), every live oracle feeds the events it has
not checked yet to its monitor, and the test fails on a new violation, named with the event no
move explains.  A server's last events (its sessions' ends) are checked when it stops
(:meth:`Oracle.retire`).  The model work is done then, after the call, off the server's path;
the monitor remembers the steps it has checked, so a server's repeated traffic costs a lookup
a step.

A test of a server broken on purpose (a mutant the model must not explain) says so with
``@pytest.mark.oracle_expects_violation``: it then fails unless the oracle sees one.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson

from mcp_inflight.trace.online import Monitor
from mcp_inflight.trace.tap import traced

_LIVE: list[Oracle] = []
_PENDING: list[str] = []  # violations of servers stopped since the last check_all
_LOCK = threading.Lock()


class OracleViolation(AssertionError):
    """The wire trace of a test's server is not explained by the model."""


class Oracle:
    """The check of one server's trace.  ``feed`` is the tap's sink (in process); ``path`` a
    trace file another process writes."""

    def __init__(self, name: str, path: str | Path | None = None, alive: Any = None) -> None:
        self.name = name
        #: for a server in its own process: whether it still runs (once it has stopped, the
        #: next check reads its trace to the end and retires the oracle)
        self.alive = alive
        self.path = Path(path) if path is not None else None
        self.monitor = Monitor(requests=3, ids=1)
        self.events: list[dict[str, Any]] = []
        self._done = 0  # events of ``events`` fed to the monitor
        self._offsets: dict[Path, int] = {}  # bytes of each trace file read
        #: the trace files of a pool of workers, ``path`` with the worker's number appended
        #: (one session's exchanges go to several workers), checked as one trace
        self.parts: list[Path] = []
        self._reported = 0  # violations already reported
        self.seen = 0  # violations found so far (reported or expected)
        with _LOCK:
            _LIVE.append(self)

    def feed(self, ev: dict[str, Any]) -> None:
        """The tap's sink: the event is kept, checked after the test's call."""
        self.events.append(ev)

    write = feed  # the tap writes to an object with a ``write`` method

    def _read(self) -> None:
        if self.path is None:
            return
        paths = self.parts or [self.path]
        new: list[dict[str, Any]] = []
        for k, path in enumerate(paths):
            if not path.exists():
                continue
            with open(path, "rb") as f:
                f.seek(self._offsets.get(path, 0))
                data = f.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self._offsets[path] = self._offsets.get(path, 0) + end + 1
            for line in data[:end].split(b"\n"):
                if line.strip():
                    ev = orjson.loads(line)
                    if self.parts and type(ev["exchange"]) is int:
                        # each worker numbers its POSTs from 1: one name per worker's POST
                        ev["exchange"] = ev["exchange"] * len(paths) + k
                    new.append(ev)
        if self.parts:  # the workers' events in the order they happened
            new.sort(key=lambda ev: ev["t"])
        self.events += new

    def check(self) -> list[str]:
        """Feed what is new to the monitor; the violations found since the last check."""
        self._read()
        events, m = self.events, self.monitor
        n = len(events)
        for ev in events[self._done : n]:
            m.feed(ev)
        del events[:n]  # checked: not kept
        self._done = 0
        new = m.violations - self._reported
        self._reported = m.violations
        self.seen += new
        return [
            f"{self.name}: session {v.session}: {v.step.describe()}: {v.event}"
            for v in m.recent[len(m.recent) - min(new, len(m.recent)) :]
        ]

    def retire(self) -> None:
        """The server has stopped: check its last events and forget it.  What they show is
        reported by the next :func:`check_all` (after the test's call, or after its teardown
        when the server was a fixture's)."""
        with _LOCK:
            if self in _LIVE:
                _LIVE.remove(self)
        _PENDING.extend(self.check())
        for path in [self.path, *self.parts]:
            if path is not None:
                path.unlink(missing_ok=True)


def check_all() -> list[str]:
    """Every live oracle's new violations, and those of the servers stopped since the last
    call (the hooks after each test's call and teardown)."""
    with _LOCK:
        live = list(_LIVE)
    for o in live:
        if o.alive is not None and not o.alive():
            o.retire()
    out: list[str] = list(_PENDING)
    _PENDING.clear()
    for o in live:
        if o in _LIVE:
            out += o.check()
    return out


def tapped(app: Any, name: str = "app") -> Any:
    """``app`` behind the trace tap, its events checked by a new :class:`Oracle` (at
    ``.oracle`` of the result)."""
    oracle = Oracle(name)
    tap = traced(app, trace=oracle)
    tap.oracle = oracle
    return tap


def trace_file(name: str) -> Oracle:
    """A new :class:`Oracle` reading a trace file (at ``.path``) that a server process writes
    (``serve --trace PATH``, the guard's ``trace=PATH``); set its ``alive`` once the process
    runs."""
    fd, path = tempfile.mkstemp(prefix="oracle-", suffix=".jsonl")
    os.close(fd)
    return Oracle(name, path)


def traced_argv(argv: list[str], name: str) -> tuple[list[str], Oracle]:
    """``argv`` (a server's command line that takes ``--trace FILE``) writing its trace for a
    new oracle; give the oracle its process: :func:`watch`."""
    o = trace_file(name)
    return [*argv, "--trace", str(o.path)], o


def pool(o: Oracle, n: int) -> Oracle:
    """``o`` reads the traces of ``n`` workers, ``PATH.0`` ... (``redis_pool.py --trace``)."""
    assert o.path is not None
    o.parts = [o.path.with_name(f"{o.path.name}.{k}") for k in range(n)]
    return o


def watch(o: Oracle, proc: Any) -> Any:
    """``o`` checks the trace of ``proc`` (a ``subprocess.Popen`` or an asyncio process) until
    it ends; returns ``proc`` with the oracle at ``.oracle``."""
    if hasattr(proc, "poll"):
        o.alive = lambda: proc.poll() is None
    else:
        o.alive = lambda: proc.returncode is None and _running(proc.pid)
    proc.oracle = o
    return proc


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
