"""The online check beside the server: the serving path only queues its events.

:class:`Beside` is the sink that ``serve --online-check`` and ``guard(app, online=True)`` put
behind their tap.  Its :meth:`~Beside.feed`, on the request's path, appends the event (already
decoded by the tap) to a bounded queue and returns: no model work there.  A checker beside it
takes the events off the queue and runs the :class:`~mcp_inflight.trace.online.Monitor` on
them:

* ``"process"`` (the default): the serving thread itself writes the events, a batch a line (a
  JSON array), to the non-blocking pipe of a child process (``python -m
  mcp_inflight.trace.checker``) that runs the Monitor and writes back each violation, its log
  records and, when asked, its counts (read by a thread of the server's process that sleeps
  until then); so the check's model work does not hold the server's GIL and can run on another
  core;
* ``"thread"``: a thread of the server's process runs the Monitor itself (no second process;
  the model work shares the GIL with the server);
* ``"inline"``: the Monitor runs in :meth:`~Beside.feed` itself, on the request's path (what
  the check did before it had a queue; kept to measure against, and for a synchronous check).

When the queue is full an event is dropped and counted (``dropped_events``), and the checker is
told which sessions (and exchanges of no session yet) lost events: each of them is counted as
not checked (``unchecked_parts``) and skipped from there on, never reported clean.  Violations
are reported as the checker finds them: logged on the logger ``mcp_inflight.trace`` (in the
server's process) and kept in ``recent``; :meth:`~Beside.drain` waits until every event queued
so far is checked and returns the counts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

import orjson

from ..model.observe import Observed
from .online import Monitor, Violation, log

MODES = ("process", "thread", "inline")


class _NoTimer:
    """No timer (a feeder on no event loop), until the next write."""

    def cancel(self) -> None:
        pass


_NO_TIMER = _NoTimer()


class Beside:
    """See the module text.  ``capacity``: events the queue holds at most."""

    def __init__(
        self,
        mode: str = "process",
        monitor: Monitor | None = None,
        capacity: int = 20_000,
        requests: int = 3,
        ids: int = 1,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown online check mode {mode!r} (one of {', '.join(MODES)})")
        if mode == "process" and monitor is not None:
            raise ValueError("a Monitor of this process cannot run in a checker process")
        self.mode = mode
        self.capacity = capacity
        self.monitor = monitor or Monitor(requests=requests, ids=ids)
        self.dropped = 0
        self.skipped = 0  # events counted and skipped here, as the check would skip them
        self.closed = False
        self._q: deque[dict[str, Any]] = deque()
        self._gap_sessions: set[Any] = set()
        self._gap_exchanges: set[Any] = set()
        self._gap_events = 0
        self._wake = threading.Event()
        self._idle = False
        self._lock = threading.Condition()
        self._asked = 0  # drain requests made
        self._acked = 0  # drain requests answered
        self._counts: dict[str, int] = {}
        # the counts of a checker process, kept up to date here as its reports arrive
        self._violations = 0
        self._recent: list[Violation] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        self._buf = []
        self._pending = deque()
        if mode == "inline":
            self.feed = self.monitor.feed  # type: ignore[method-assign]
            return
        if mode == "process":
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "mcp_inflight.trace.checker"]
                + ["--requests", str(requests), "--ids", str(ids)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert self._proc.stdin is not None
            self._fd = self._proc.stdin.fileno()
            os.set_blocking(self._fd, False)
            try:  # room for a burst in the pipe itself (Linux; else its default)
                import fcntl

                fcntl.fcntl(self._fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
            except (ImportError, OSError):
                pass
            self._reader = threading.Thread(
                target=self._read_reports, name="online-check-reports", daemon=True
            )
            self._reader.start()
            self.feed = self._feed_pipe  # type: ignore[method-assign]
            return
        self._thread = threading.Thread(target=self._run, name=f"online-check-{mode}", daemon=True)
        self._thread.start()

    # --- the serving path ------------------------------------------------------------------

    def feed(self, ev: dict[str, Any]) -> None:
        """Queue ``ev`` for the check, or drop it (and count it) when the queue is full.  An
        event the check counts and skips (an ``open``, a status below 400: see
        :meth:`~mcp_inflight.trace.online.Monitor.feed`) is counted here and not queued."""
        kind = ev["kind"]
        if kind == "open" or (kind == "status" and ev["status"] < 400):
            self.skipped += 1
            return
        q = self._q
        if len(q) < self.capacity:
            if self._gap_events:
                self._put_gap()
            q.append(ev)
            if self._idle:
                self._wake.set()
        else:
            self._lost(ev)

    def _put_gap(self, into: Any = None) -> None:
        """Tell the checker, in the queue's order, which events it will never see."""
        (self._q if into is None else into).append(
            {
                "ctl": "gap",
                "sessions": sorted(self._gap_sessions, key=str),
                "exchanges": sorted(self._gap_exchanges, key=str),
                "events": self._gap_events,
            }
        )
        self._gap_sessions, self._gap_exchanges, self._gap_events = set(), set(), 0

    def _lost(self, ev: dict[str, Any]) -> None:
        self.dropped += 1
        self._gap_events += 1
        sid = ev.get("session")
        if sid is None:
            self._gap_exchanges.add(ev.get("exchange"))
        else:
            self._gap_sessions.add(sid)

    # --- to a checker process, from the serving thread itself --------------------------------
    #
    # No thread of this process ships the events (a second thread would take the GIL from
    # the server, and the handing over of the GIL costs more than the shipping): the events
    # are kept in a list and written, a batch a line, to the checker's pipe (non-blocking)
    # by the thread that feeds them: when ``BATCH`` are kept, else ``PAUSE`` seconds after the
    # first of them (a timer of the event loop the tap runs in; a feeder on no asyncio event
    # loop has them written ``BATCH`` at a time and by :meth:`drain`).  What the pipe does not take
    # at once waits (``_pending``), counted against ``capacity``.

    _buf: list[dict[str, Any]]
    _pending: deque[bytes]  # encoded batches the pipe has not taken yet (the first from _off)
    _off = 0
    _held = 0  # events written to _pending and not yet all into the pipe
    _timer: Any = None
    _loop: Any = None
    _dead = False

    def _feed_pipe(self, ev: dict[str, Any]) -> None:
        kind = ev["kind"]
        if kind == "open" or (kind == "status" and ev["status"] < 400):
            self.skipped += 1
            return
        buf = self._buf
        if len(buf) + self._held >= self.capacity:
            self._lost(ev)
            return
        if self._gap_events:
            self._put_gap(buf)
        buf.append(ev)
        if len(buf) >= self.BATCH:
            self._flush()
        elif self._timer is None:
            self._later()

    def _later(self) -> None:
        try:
            loop = self._loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: written ``BATCH`` at a time, and by drain()
            self._timer = _NO_TIMER
            return
        self._timer = loop.call_later(self.PAUSE, self._flush)

    def _flush(self, block: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending = self._pending
        if self._buf:
            pending.append(orjson.dumps(self._buf) + b"\n")
            self._held += len(self._buf)
            self._buf = []
        if not pending or self._dead:
            return
        fd = self._fd
        try:
            if block:
                os.set_blocking(fd, True)
            while pending:
                first = pending[0]
                try:
                    k = os.write(fd, memoryview(first)[self._off :])
                except BlockingIOError:
                    break
                self._off += k
                if self._off == len(first):
                    pending.popleft()
                    self._off = 0
        except OSError:  # the checker process is gone: nothing more is checked
            self._dead = True
            self._answer(self._asked, self._counts)
        finally:
            if block:
                os.set_blocking(fd, False)
        if not pending:
            self._held = 0
        elif self._timer is None and not block:
            self._later()

    def _control(self, item: dict[str, Any]) -> None:
        """A control to the checker process, after everything fed before it, written whole."""
        if self._gap_events:
            self._put_gap(self._buf)
        self._buf.append(item)
        self._flush(block=True)
        if item["ctl"] == "stop" and self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()

    # --- beside it -------------------------------------------------------------------------

    #: a batch smaller than this is followed by a pause of ``PAUSE`` seconds, so that the
    #: events of a busy server are taken (and shipped) many at a time, not one wake-up each
    BATCH = 256
    PAUSE = 0.01

    def _take(self) -> list[dict[str, Any]]:
        """Everything queued, waiting for at least one item."""
        q = self._q
        while not q:
            self._wake.clear()
            self._idle = True
            if not q:
                self._wake.wait(1.0)
            self._idle = False
        out = []
        pop = q.popleft
        while q:
            out.append(pop())
        if len(out) < self.BATCH and out[-1].get("ctl") is None:
            time.sleep(self.PAUSE)
            while q and len(out) < self.BATCH:
                out.append(pop())
        return out

    def _run(self) -> None:
        self._run_thread()

    def _run_thread(self) -> None:
        m = self.monitor
        while True:
            for item in self._take():
                ctl = item.get("ctl")
                if ctl is None:
                    m.feed(item)
                elif ctl == "gap":
                    m.gap(item["sessions"], item["exchanges"], item["events"])
                elif ctl == "drain":
                    self._answer(item["n"], m.summary())
                elif ctl == "stop":
                    self._answer(item["n"], m.summary())
                    return

    def _read_reports(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            r = orjson.loads(line)
            if "violation" in r:
                v = r["violation"]
                step = Observed(**{**v["step"], "of": tuple(v["step"]["of"])})
                self._violations += 1
                self._recent.append(Violation(v["session"], step, v["event"]))
                del self._recent[: -self.monitor.keep]
            elif "log" in r:  # the checker's own log records, logged here
                log.log(r["log"], "%s", r["msg"])
            elif "ack" in r:
                self._answer(r["ack"], r["counts"])
        self._answer(self._asked, self._counts)  # the process ended: nobody waits for it

    def _answer(self, n: int, counts: dict[str, int]) -> None:
        with self._lock:
            self._counts = dict(counts)
            self._acked = max(self._acked, n)
            self._lock.notify_all()

    # --- the counts ------------------------------------------------------------------------

    def drain(self, timeout: float = 30.0) -> dict[str, int]:
        """Wait until every event queued so far has been checked (at most ``timeout``
        seconds); the counts then."""
        return self._ask("drain", timeout)

    def close(self, timeout: float = 30.0) -> dict[str, int]:
        """Check what is queued, stop the checker, and return the final counts."""
        if self.closed:
            return self.summary()
        self.closed = True
        counts = self._ask("stop", timeout)
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        return counts

    def _ask(self, what: str, timeout: float) -> dict[str, int]:
        if self.mode == "inline" or (self.closed and what == "drain"):
            return self.summary()
        if self._thread is not None and not self._thread.is_alive():  # the checker is gone
            return self.summary()
        if self.mode == "process" and self._dead:
            return self.summary()
        with self._lock:
            self._asked += 1
            n = self._asked
        item = {"ctl": what, "n": n}  # never dropped
        if self.mode == "process":
            loop = self._loop
            here = None
            try:
                here = asyncio.get_running_loop()
            except RuntimeError:
                pass
            if loop is not None and loop is not here and loop.is_running():
                loop.call_soon_threadsafe(self._control, item)  # in the feeding thread
            else:
                self._control(item)
        else:
            if self._gap_events:
                self._put_gap()
            self._q.append(item)
            self._wake.set()
        with self._lock:
            if not self._lock.wait_for(lambda: self._acked >= n, timeout):
                log.warning("the online check did not catch up within %.0f s", timeout)
        return self.summary()

    def summary(self) -> dict[str, int]:
        """The counts as of the last :meth:`drain` (``violations`` as reported so far), with
        the events dropped here, counted now (the checker counts them once told)."""
        if self.mode == "process":
            counts = dict(self._counts) or {
                k: 0 for k in ("events", "steps", "unchecked_parts", "dropped_events", "restarts")
            }
            counts["violations"] = self._violations
        else:
            counts = self.monitor.summary()
        counts["dropped_events"] = self.dropped
        counts["events"] += self.skipped
        return counts

    @property
    def violations(self) -> int:
        return self._violations if self.mode == "process" else self.monitor.violations

    @property
    def recent(self) -> list[Violation]:
        return self._recent if self.mode == "process" else self.monitor.recent

    @property
    def events(self) -> int:
        return self.summary()["events"]

    @property
    def unchecked(self) -> int:
        return self.summary()["unchecked_parts"]


def _violation_report(v: Violation) -> bytes:
    s = v.step
    step = {"kind": s.kind, "at": s.at, "r": s.r, "i": s.i, "stream": s.stream, "of": s.of}
    return orjson.dumps({"violation": {"session": v.session, "step": step, "event": v.event}})


def main(argv: list[str] | None = None) -> int:
    """The checker process: batches of events and controls on stdin (each line a JSON array),
    violations, log records and counts as JSON Lines on stdout; it ends at the end of its
    input or when told to stop."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m mcp_inflight.trace.checker")
    p.add_argument("--requests", type=int, default=3)
    p.add_argument("--ids", type=int, default=1)
    args = p.parse_args(argv)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's ^C: it ends at its input's end
    out = sys.stdout.buffer

    class Forward(logging.Handler):
        """The check's log records go to the server's process, which logs them."""

        def emit(self, record: logging.LogRecord) -> None:
            out.write(orjson.dumps({"log": record.levelno, "msg": record.getMessage()}) + b"\n")
            out.flush()

    log.addHandler(Forward())
    log.propagate = False
    m = Monitor(requests=args.requests, ids=args.ids)
    reported = 0

    def report() -> None:
        nonlocal reported
        if m.violations != reported:
            for v in m.recent[-min(m.violations - reported, len(m.recent)) :]:
                out.write(_violation_report(v) + b"\n")
            reported = m.violations
            out.flush()

    for line in sys.stdin.buffer:
        for item in orjson.loads(line):
            ctl = item.get("ctl")
            if ctl is None:
                m.feed(item)
                if m.violations != reported:
                    report()
            elif ctl == "gap":
                m.gap(item["sessions"], item["exchanges"], item["events"])
            else:  # drain, stop
                report()
                out.write(orjson.dumps({"ack": item["n"], "counts": m.summary()}) + b"\n")
                out.flush()
                if ctl == "stop":
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
