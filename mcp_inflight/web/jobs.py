"""Explorations for the page's list of traces, one at a time in a child process.

The exhaustive search of a configuration takes from a fraction of a second to about a minute at
the default bound (2 ids, 3 instances), so it runs in a process of its own: the server's
threads keep answering steps at full speed while it runs (a thread would share the GIL with
them).  Each configuration is explored once per server; results stay in memory.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import asdict
from typing import Any

#: a configuration: the session's (design, revision, transport, ids, requests), or what the
#: ``work`` of an :class:`Explorations` takes (the declared models': model, design, bounds)
Spec = Hashable

#: configurations that may wait to be explored; beyond, a new one is refused (503)
MAX_QUEUED = 8
#: seconds one exploration may run (its process is ended then; the result says so)
EXPLORE_BUDGET = 600.0


class Busy(Exception):
    """The server cannot take this now (503)."""


def session_work(spec: Any, max_states: int | None) -> dict:
    """The session model's exploration of ``spec``, as the page lists it (the session model is
    imported here, so that a child exploring a declared model does without it)."""
    from mcp_inflight.web import model_api

    return asdict(model_api.explored(spec, max_states))


def _child(
    work: Callable[[Any, int | None], dict], spec: Spec, max_states: int | None, conn: Any
) -> None:
    try:
        conn.send(("ok", work(spec, max_states)))
    except BaseException as e:  # reported to the page, not lost with the process
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


class Explorations:
    """A queue of configurations to explore, worked off by one child process at a time;
    ``work(spec, max_states)`` (a module-level function: the child is spawned) explores one
    (default: the session model's)."""

    def __init__(
        self,
        max_states: int | None,
        budget: float | None = EXPLORE_BUDGET,
        work: Callable[[Any, int | None], dict] = session_work,
    ):
        self.max_states = max_states
        self.work = work
        self.budget = budget
        self._ctx = mp.get_context("spawn")
        self._lock = threading.Condition()
        self._results: dict[Spec, dict] = {}
        self._queue: list[Spec] = []
        self._running: Spec | None = None
        self._started: float = 0.0
        self._proc: Any = None
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="explorations", daemon=True)
        self._thread.start()

    def status(self, spec: Spec) -> dict:
        """The result if done; otherwise queue the configuration and say where it stands."""
        with self._lock:
            if spec in self._results:
                return self._results[spec]
            if spec == self._running:
                took = round(time.monotonic() - self._started, 1)
                return {"status": "exploring", "seconds": took}
            if spec not in self._queue:
                if len(self._queue) >= MAX_QUEUED:
                    raise Busy(
                        f"{MAX_QUEUED} configurations already wait to be explored; try again later"
                    )
                self._queue.append(spec)
                self._lock.notify_all()
            ahead = self._queue.index(spec) + (self._running is not None)
            return {"status": "queued", "ahead": ahead}

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                spec = self._queue.pop(0)
                self._running = spec
                self._started = time.monotonic()
                parent, child = self._ctx.Pipe(duplex=False)
                proc = self._ctx.Process(
                    target=_child,
                    args=(self.work, spec, self.max_states, child),
                    daemon=True,
                    name="mcp-inflight-explore",
                )
                proc.start()
                self._proc = proc
            child.close()
            if parent.poll(self.budget):
                try:
                    kind, payload = parent.recv()
                except (EOFError, OSError):
                    kind, payload = "error", "the exploring process ended without a result"
            else:
                kind, payload = "error", f"the exploration took more than {self.budget:g} s"
            parent.close()
            if proc.is_alive():
                proc.kill()
            proc.join(5)
            with self._lock:
                self._proc = None
                self._running = None
                if kind == "ok":
                    self._results[spec] = dict(payload, status="done")
                else:
                    self._results[spec] = {"status": "error", "error": payload}
                self._lock.notify_all()

    def close(self) -> None:
        """Stop: drop the queue and end the running exploration's process."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            proc = self._proc
            self._lock.notify_all()
        if proc is not None and proc.is_alive():
            proc.terminate()
            proc.join(5)
