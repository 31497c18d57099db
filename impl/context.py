"""What a handler sees and what an adapter gets back: the :class:`Context` of a tool or method
handler (progress, log, elicit, sample, the cancellation signal), the :class:`TaskContext` of a
tool running as a task, the errors a handler raises or meets, and what a request comes to
(:class:`Answered`, :class:`Running`).  Importable from :mod:`.server`.

The context speaks to its session only through the session's methods (``notify``,
``server_request``, ``task_question``) and reads the server's task runtime; it is typed
against the session loosely (``Any``) because the session's module imports this one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from .core import Handle, Refused
from .messages import CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY, LOG_LEVELS, MODERN, error

__all__ = [
    "Outlet",
    "Answered",
    "Running",
    "Arrival",
    "JsonRpcError",
    "RequestFailed",
    "InputRequired",
    "Context",
    "TaskContext",
]

# --- what a session writes to, and what an arrival comes to -----------------------------------


class Outlet(Protocol):
    """What an adapter gives a session for one request's channel: ``send`` writes a message on
    it, ``close`` ends it (HTTP: the POST's response; stdio: nothing, the channel is shared).
    The core decides which outlet gets what: ``handle.data`` is the outlet of the request that
    handle stands for."""

    def send(self, msg: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class Answered:
    """A request answered at once, within the step that admitted it: ``reply`` is the message
    to send (None: the core routed it nowhere)."""

    reply: dict[str, Any] | None  # (not frozen: made per request, as the core's Admitted)


@dataclass(slots=True)
class Running:
    """A request whose handler runs: it writes on its outlet, then closes it."""

    handle: Handle  # (not frozen: made per request, as the core's Admitted)


#: what :meth:`.server.Session.request` comes to: :class:`~.core.Refused` (a duplicate of an id in
#: flight: its ``error`` to send), :class:`Answered` or :class:`Running`
Arrival = Refused | Answered | Running


# --- the handler's view ----------------------------------------------------------------------


class JsonRpcError(Exception):
    """Raised by a handler: answer the request with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = error(code, message, data)


class RequestFailed(Exception):
    """A server-to-client request could not be made or was answered with an error."""

    def __init__(self, err: dict) -> None:
        self.error = err
        super().__init__(err.get("message", "request failed"))


class InputRequired(Exception):
    """2026-07-28: the handler needs the client's input; the call returns InputRequiredResult
    (raised by the first question of this run that the answers so far do not cover)."""

    def __init__(self, key: str, request: dict) -> None:
        self.key = key
        self.request = request


_UNREAD = object()


class Context:
    """What a tool handler gets: progress, log, elicit, sample and the cancellation signal."""

    _caps: Any
    _cancelled: asyncio.Event | None  # ``cancelled``, made when first read
    _cancel_seen: bool  # the request has been cancelled

    @property
    def client_capabilities(self) -> Any:
        """The client's capabilities: the request's (2026-07-28) or its session's."""
        if self._caps is _UNREAD:
            self._caps = self.session.client_capabilities
        return self._caps

    @client_capabilities.setter
    def client_capabilities(self, value: Any) -> None:
        self._caps = value

    @property
    def cancelled(self) -> asyncio.Event:
        """Set once the request is cancelled (its handler's task is also cancelled).  Made when
        first read: most handlers never read it, and an ``asyncio.Event`` per request is not
        free; made after the cancellation, it is made set."""
        event = self._cancelled
        if event is None:
            event = self._cancelled = asyncio.Event()
            if self._cancel_seen:
                event.set()
        return event

    def _cancel(self) -> None:
        """The request is cancelled: ``cancelled`` is set (now, or when it is first read)."""
        self._cancel_seen = True
        if self._cancelled is not None:
            self._cancelled.set()

    @property
    def was_cancelled(self) -> bool:
        """Whether the request has been cancelled (``cancelled.is_set()`` without making the
        event)."""
        event = self._cancelled
        return self._cancel_seen or (event is not None and event.is_set())

    def __init__(self, session: Any, handle: Any, params: dict) -> None:
        self.session = session
        self.handle = handle
        self.request_id = handle.id
        meta = params.get("_meta")
        if not isinstance(meta, dict):  # a custom method's params are not schema-checked
            meta = {}
        self.progress_token = meta.get("progressToken")
        self.protocol_version = session.revision
        # 2026-07-28: the request's own; 2025-11-25: the session's, read when first asked for
        self._caps = (
            meta.get(CLIENT_CAPABILITIES_META_KEY) if session.revision == MODERN else _UNREAD
        )
        self._cancelled = None
        self._cancel_seen = False
        responses = params.get("inputResponses")
        self.input_responses = responses if isinstance(responses, dict) else {}
        self.log_level = meta.get(LOG_LEVEL_META_KEY)
        self._asked = 0
        # 2026-07-28 rounds: the answers this run may use (from a verified requestState and the
        # retry's inputResponses for the keys it asked), the round they come from, and the call
        # the next requestState is bound to; set by the session before the handler runs
        self._answers: dict = {}
        self._round = 0
        self._binding = ""
        self.started = False  # the handler's task has taken its first step

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress (only if the request carried a progress token).  Returns whether the
        notification was written (False: no token, or the core dropped it)."""
        if self.progress_token is None:
            return False
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._emit("notifications/progress", params)

    async def log(self, data: Any, level: str = "info", logger: str | None = None) -> bool:
        """A ``notifications/message`` on this request's stream (if the level passes)."""
        floor: Any = self.session.log_level
        if self.session.revision == MODERN:
            # 2026-07-28: only requests that opt in with a level in _meta get log messages
            floor = self.log_level
            if floor not in LOG_LEVELS:
                return False
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(floor):
            return False
        params = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return self._emit("notifications/message", params)

    async def elicit(self, message: str, schema: dict | None = None) -> dict:
        """Ask the user (``elicitation/create``, form mode); returns the ElicitResult dict."""
        params = {
            "mode": "form",
            "message": message,
            "requestedSchema": schema or {"type": "object", "properties": {}},
        }
        return await self._ask("elicitation/create", params)

    async def sample(self, messages: list, max_tokens: int = 256, **extra: Any) -> dict:
        """Ask the client's model (``sampling/createMessage``); returns the CreateMessageResult."""
        params = {"messages": messages, "maxTokens": max_tokens, **extra}
        return await self._ask("sampling/createMessage", params)

    async def list_roots(self) -> dict:
        """Ask for the client's roots (``roots/list``); returns the ListRootsResult."""
        return await self._ask("roots/list", {})

    async def request(self, method: str, params: dict) -> dict:
        """A server-to-client request tied to this request (2025-11-25: sent on its stream and
        awaited; 2026-07-28: returned to the client in an InputRequiredResult, answered by its
        retry).  Returns the client's result; raises :class:`RequestFailed` on an error."""
        return await self._ask(method, params)

    async def notify(self, method: str, params: dict | None = None) -> bool:
        """A notification on this request's stream (where the core routes it)."""
        return self._emit(method, params or {})

    def _emit(self, method: str, params: dict) -> bool:
        return self.session.notify(self.handle, method, params)

    async def _ask(self, method: Any, params: Any) -> dict:
        self._asked += 1
        if self.session.revision == MODERN:
            # The handler re-runs from its start on each retry: its n-th question has the same
            # key on every run, so an answer given in an earlier round answers it again.
            key = f"{method}#{self._asked}"
            if key in self._answers:
                return self._answers[key]
            raise InputRequired(key, {"method": method, "params": params})
        return await self.session.server_request(self.handle, method, params)


class TaskContext(Context):
    """The context of a tool call running as a task.  Its request was answered with
    ``CreateTaskResult``, so the request's stream is gone and, in the request lifecycle the
    core follows (``model/session.py``), so are the request's notifications: ``progress``,
    ``log`` and ``notify`` send nothing and return False (the tasks page lets a task's
    progress token live on; the models do not say where such messages go yet).  ``cancelled``
    is set by ``tasks/cancel``, the session's end and the ttl."""

    task_id = ""

    def _emit(self, method: str, params: dict) -> bool:
        return False

    async def _ask(self, method: Any, params: Any) -> dict:
        """The task goes ``input_required`` until the question is answered.  2026-07-28: it
        waits, under a key of its own, for ``tasks/update`` (SEP-2663); questions asked at once
        wait together.  2025-11-25: it is sent on a ``tasks/result`` stream waiting on the task
        (the requester calls ``tasks/result`` on ``input_required``), with the task's
        ``related-task`` key, and answered there."""
        if self.session.revision != MODERN:
            return await self.session.task_question(self.task_id, method, params)
        self._asked += 1
        key = f"{method}#{self._asked}"
        request = {"method": method, "params": params}
        return await self.session.server.task_runtime.ask(self.task_id, key, request)
