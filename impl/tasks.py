"""The task store: the runtime side of ``model/tasks.py``'s ``fresh-bound`` design, sans-IO.

A task-augmented request that the server turns into a task ends with ``CreateTaskResult``; the
task lives here, keyed by a task id minted fresh (``secrets``, so unguessable) and bound to its
requester (the owner: an authorization context, or the 2025-11-25 session).  Nothing here is
keyed by a JSON-RPC request id, so no cancel of the originating request reaches a task:
``notifications/cancelled`` and a closed POST end the request in the request core, and only
``tasks/cancel``, the session's end and the ttl end a task.

The methods are the model's moves: ``create``; the work's ``ask`` (``input_required``),
``finish`` (``completed`` or ``failed``) and ``honour`` (a 2026-07-28 cancellation taking
effect); the requester's ``get``, ``result`` (2025-11-25), ``answer`` (the input, through
``tasks/result``'s stream on 2025-11-25 or ``tasks/update`` on 2026-07-28), ``cancel`` and
``list`` (2025-11-25); ``expire`` (the ttl timer) and ``end_session``.  A call for a task that
is unknown, deleted or another owner's raises :class:`TaskError` (``-32602``, the same answer
for all three so that a task id cannot be probed).  Every status change puts one
``notifications/tasks/status`` on :attr:`TaskStore.outbox`, addressed to the owner; a terminal
status never changes, so nothing follows it.  No I/O and no clock: the adapter runs the work,
blocks ``tasks/result`` until :meth:`TaskStore.result` stops raising :class:`NotReady`, and
calls :meth:`TaskStore.expire` when a task's ttl (capped at ``max_ttl_ms``) runs out.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED = (
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
)
LIVE = (WORKING, INPUT_REQUIRED)
TERMINAL = (COMPLETED, FAILED, CANCELLED)
REV_2025 = "2025-11-25"
REV_2026 = "2026-07-28"
INVALID_PARAMS = -32602


class TaskError(Exception):
    """A task method refused (JSON-RPC ``-32602``)."""

    code = INVALID_PARAMS


class NotReady(Exception):
    """``tasks/result`` on a task that is not terminal yet: the adapter keeps it waiting."""


@dataclass
class Task:
    task_id: str
    owner: str
    revision: str
    ttl_ms: int
    status: str = WORKING
    result: Any = None
    cancel_requested: bool = False
    running: bool = True

    def view(self) -> dict[str, Any]:
        """The ``Task`` object as the methods answer it."""
        out: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        out["ttlMs" if self.revision == REV_2026 else "ttl"] = self.ttl_ms
        if self.revision == REV_2026 and self.status in (COMPLETED, FAILED):
            out["result" if self.status == COMPLETED else "error"] = self.result
        return out


@dataclass
class TaskStore:
    max_ttl_ms: int = 3_600_000
    tasks: dict[str, Task] = field(default_factory=dict)
    #: ``(owner, Task view)`` per status change, in order; the adapter sends and clears it
    outbox: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    ended: set[str] = field(default_factory=set)

    # --- the server ---------------------------------------------------------------------

    def create(self, owner: str, revision: str, ttl_ms: int | None = None) -> Task:
        """A new task for ``owner``'s request (its ``CreateTaskResult``): a fresh id, status
        ``working``, the ttl asked for capped at ``max_ttl_ms`` (a null ttl gets the cap)."""
        ttl = self.max_ttl_ms if ttl_ms is None else min(ttl_ms, self.max_ttl_ms)
        task_id = secrets.token_urlsafe(16)
        while task_id in self.tasks:  # pragma: no cover - 128 bits
            task_id = secrets.token_urlsafe(16)
        t = Task(task_id, owner, revision, ttl)
        self.tasks[task_id] = t
        return t

    def _set(self, t: Task, status: str) -> None:
        if t.status in TERMINAL or t.status == status:
            return
        t.status = status
        self.outbox.append((t.owner, t.view()))

    def ask(self, task_id: str) -> None:
        """The work needs the requester's input."""
        t = self.tasks[task_id]
        if t.status == WORKING:
            self._set(t, INPUT_REQUIRED)

    def finish(self, task_id: str, ok: bool, result: Any = None) -> None:
        """The work ended (a JSON-RPC error is ``ok=False``); a task already terminal keeps
        its status (a cancelled task stays cancelled)."""
        t = self.tasks.get(task_id)
        if t is None:
            return
        t.running = False
        if t.status in LIVE:
            t.result = result
            self._set(t, COMPLETED if ok else FAILED)

    def honour(self, task_id: str) -> None:
        """A 2026-07-28 cancellation takes effect (the work stops)."""
        t = self.tasks[task_id]
        if t.cancel_requested and t.status in LIVE:
            t.running = False
            self._set(t, CANCELLED)

    def expire(self, task_id: str) -> None:
        """The task's ttl ran out: it and its result are deleted, whatever its status."""
        t = self.tasks.pop(task_id, None)
        if t is not None:
            t.running = False

    def end_session(self, owner: str) -> None:
        """A 2025-11-25 session ended: its live tasks are cancelled and their work stopped."""
        self.ended.add(owner)
        for t in self.tasks.values():
            if t.owner == owner and t.revision == REV_2025:
                t.running = False
                self._set(t, CANCELLED)

    # --- the requester's methods -------------------------------------------------------------

    def _own(self, owner: str, task_id: str) -> Task:
        t = self.tasks.get(task_id)
        if t is None or t.owner != owner or (t.revision == REV_2025 and owner in self.ended):
            raise TaskError(f"unknown task {task_id!r}")
        return t

    def get(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/get``: the task's state (on 2026-07-28 with its result once terminal), every
        time it is asked."""
        return self._own(owner, task_id).view()

    def result(self, owner: str, task_id: str) -> Any:
        """``tasks/result`` (2025-11-25): what the underlying request returned, on every call
        once the task is terminal; :class:`NotReady` before."""
        t = self._own(owner, task_id)
        if t.revision != REV_2025:
            raise TaskError("tasks/result is not a method of the tasks extension")
        if t.status not in TERMINAL:
            raise NotReady(task_id)
        return t.result

    def answer(self, owner: str, task_id: str) -> None:
        """The requester's input for an ``input_required`` task (``tasks/update`` on
        2026-07-28); the task works again."""
        t = self._own(owner, task_id)
        if t.status == INPUT_REQUIRED:
            self._set(t, WORKING)

    def cancel(self, owner: str, task_id: str) -> dict[str, Any]:
        """``tasks/cancel``: on 2025-11-25 a live task is cancelled before the answer (a
        terminal one refused); on 2026-07-28 the request is acknowledged and recorded."""
        t = self._own(owner, task_id)
        if t.revision == REV_2025:
            if t.status in TERMINAL:
                raise TaskError(f"task {task_id!r} is already {t.status}")
            self._set(t, CANCELLED)
            return t.view()
        if t.status in LIVE:
            t.cancel_requested = True
        return {}

    def list(self, owner: str) -> list[dict[str, Any]]:
        """``tasks/list`` (2025-11-25): the owner's tasks only."""
        if owner in self.ended:
            return []
        return [
            t.view() for t in self.tasks.values() if t.owner == owner and t.revision == REV_2025
        ]
