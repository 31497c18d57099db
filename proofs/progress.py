"""The explorer's progress on stderr: states, rate, depth, queue and an estimate of what is left.

A run reports through a :class:`Tracker`, which it ticks from its search loop (states found,
BFS depth, queue length) and tells the size of each finished BFS level.  The tracker hands a
:class:`Snapshot` to a *sink* a few times a second: a :class:`Display` writing to stderr in the
same process, or, in a worker process of ``search_many``, a :class:`QueueSink` sending it to the
parent, whose display draws the runs of every worker.  Nothing here writes to stdout.

A display has two modes:

* ``live`` (stderr is a terminal): one line, rewritten in place a few times a second;
* ``lines`` (stderr is a file or a pipe, e.g. a CI log): one plain line per run in progress
  every ``interval`` seconds.

Both end each run with one summary line.

What is left is estimated from the sizes of the BFS levels, and only once they shrink: when the
last three finished levels shrink twice in a row (``a > b > c``), the next levels are taken to
shrink by the last ratio ``q = c/b``, so about ``c*q/(1-q)`` states remain to be found beyond the
finished levels (less those of the next level found already), and the time left is that over
the current rate.  While levels still grow, or have shrunk only once, no figure is shown
(``left ?``): the search gives no basis for one.  The estimate is a geometric extrapolation, not
a bound; the tail of a BFS often thins out faster or slower than that.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any, Protocol, cast

#: seconds between redraws of the live line, and between plain lines by default
LIVE_INTERVAL = 0.25
LINES_INTERVAL = 5.0
#: seconds between two snapshots a run hands to its sink (at most)
TICK_INTERVAL = 0.1


@dataclass(frozen=True)
class Snapshot:
    """Where a run stands (``final``: the run is over, these are its totals)."""

    label: str
    states: int
    seconds: float
    depth: int
    queue: int
    left: int | None  # estimated states left to find, or None when there is no basis
    final: bool = False
    transitions: int = 0
    complete: bool = True

    @property
    def rate(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def text(self) -> str:
        if self.left is None:
            est = "left ?"
        else:
            eta = f", ~{self.left / self.rate:,.0f}s" if self.rate > 0 else ""
            est = f"left ~{self.left:,} states{eta} (est.)"
        return (
            f"{self.label}: {self.states:,} states, {self.rate:,.0f} states/s, "
            f"depth {self.depth}, queue {self.queue:,}, {est}"
        )

    def summary(self) -> str:
        cut = "" if self.complete else " (stopped at the state limit)"
        return (
            f"{self.label}: {self.states:,} states, {self.transitions:,} transitions, "
            f"depth {self.depth}, {self.seconds:.1f}s ({self.rate:,.0f} states/s){cut}"
        )


class Sink(Protocol):
    def update(self, snap: Snapshot) -> None: ...


class Silent:
    """The sink of a run asked for no progress at all (rather than the process's default):
    a :class:`Tracker` given it reports nothing and takes no snapshots."""

    def update(self, snap: Snapshot) -> None:
        pass


def estimate_left(levels: list[int], next_found: int) -> int | None:
    """States left to find, extrapolated from finished BFS level sizes (module docstring)."""
    if len(levels) < 3:
        return None
    a, b, c = levels[-3:]
    if not a > b > c:
        return None
    q = c / b
    return max(0, round(c * q / (1 - q)) - next_found)


class Tracker:
    """One run's progress: ticked from the search loop, throttled, handed to ``sink``."""

    def __init__(self, label: str, sink: Sink | None, every: float | None = None):
        self.label = label
        self.sink = None if isinstance(sink, Silent) else sink
        self.every = TICK_INTERVAL if every is None else every
        self.t0 = time.monotonic()
        self.last = self.t0
        self.levels: list[int] = [1]  # the initial state is level 0

    @property
    def enabled(self) -> bool:
        return self.sink is not None

    def level(self, size: int) -> None:
        """A BFS level is finished; the next one (now being expanded) has ``size`` states."""
        self.levels.append(size)

    def tick(self, states: int, depth: int, queue: int, next_found: int = 0) -> None:
        if self.sink is None:
            return
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        # the level being expanded is not finished: extrapolate from the finished ones
        left = estimate_left(self.levels, next_found)
        self.sink.update(Snapshot(self.label, states, now - self.t0, depth, queue, left))

    def done(self, states: int, transitions: int, depth: int, complete: bool = True) -> None:
        if self.sink is None:
            return
        self.sink.update(
            Snapshot(
                self.label,
                states,
                time.monotonic() - self.t0,
                depth,
                0,
                0,
                final=True,
                transitions=transitions,
                complete=complete,
            )
        )


class Display:
    """Draws snapshots of one or more runs on ``stream`` (stderr); see the module docstring."""

    def __init__(self, stream: Any = None, live: bool | None = None, interval: float | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if live is None:
            live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.live = live
        self.interval = (
            interval if interval is not None else (LIVE_INTERVAL if live else LINES_INTERVAL)
        )
        self.runs: dict[str, Snapshot] = {}
        self.last = time.monotonic()
        self.shown = 0  # width of the live line on screen
        self.header = ""

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _clear(self) -> None:
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def update(self, snap: Snapshot) -> None:
        if snap.final:
            self.runs.pop(snap.label, None)
            self._clear()
            self._write("  done " + snap.summary() + "\n")
            return
        self.runs[snap.label] = snap
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        self.draw()

    def draw(self) -> None:
        if not self.runs:
            return
        if self.live:
            width = max(20, shutil.get_terminal_size((120, 24)).columns - 1)
            text = self.header + " | ".join(s.text() for s in self.runs.values())
            text = "  " + text
            if len(text) > width:
                text = text[: width - 3] + "..."
            pad = max(0, self.shown - len(text))
            self._write("\r" + text + " " * pad)
            self.shown = len(text)
        else:
            for s in self.runs.values():
                self._write("  " + self.header + s.text() + "\n")

    def close(self) -> None:
        self._clear()


class Patient:
    """Hands on a run's snapshots only once the run has lasted ``after`` seconds: many short
    runs (the declared models' designs) say nothing, a long one is shown as it goes."""

    def __init__(self, sink: Sink, after: float = 2.0):
        self.sink = sink
        self.after = after

    def update(self, snap: Snapshot) -> None:
        if snap.seconds >= self.after:
            self.sink.update(snap)


class QueueSink:
    """In a worker process: sends each snapshot to the parent's queue (never blocks the run)."""

    def __init__(self, queue: Any):
        self.queue = queue

    def update(self, snap: Snapshot) -> None:
        try:
            self.queue.put_nowait(snap)
        except Exception:  # noqa: BLE001 - a full or closed queue must not stop the search
            pass


def sink_for(progress: Any) -> Sink | None:
    """The sink a run reports to: ``progress`` is a sink itself, True (a display on stderr),
    False (none) or None (a display when stderr is a terminal)."""
    if progress is None:
        progress = sys.stderr.isatty()
    if progress is True:
        return Display()
    if progress is False:
        return None
    return cast(Sink, progress)


# set in a worker process of search_many: where its runs send their snapshots
_worker_queue: Any = None


def worker_init(queue: Any) -> None:
    global _worker_queue
    _worker_queue = queue


def worker_sink() -> Sink | None:
    return QueueSink(_worker_queue) if _worker_queue is not None else None
