"""The guard on stdio: the model's ``atomic`` design (its stdio profile) around the official
SDK's stdio streams, as :mod:`mcp_inflight.impl.guard` is around its Streamable HTTP app.

A refusal here is an error with ``id: null`` whose ``data`` names the id; the SDK's slots
(``7``, ``"7"`` and ``"07"`` share one) are taken one request at a time, as on HTTP.  Every
lifecycle decision is the runtime core's (``arrive``, ``emit``, ``finish``, ``cancel``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from .core import Refused, SessionCore
from .guard import _sdk_slots, new_core


def guard_stdio(read_stream: Any, write_stream: Any, observer: Any = None) -> Any:
    """Wrap the streams of the SDK's ``stdio_server()`` (2025-11-25 stdio, one session)::

        async with stdio_server() as (read, write):
            read, write = guard_stdio(read, write)
            await server.run(read, write, server.create_initialization_options())

    (For an ``MCPServer``, :func:`serve_stdio` does this.)  A request whose id is in flight is
    answered with a JSON-RPC ``-32600`` error whose ``id`` is null and whose ``data`` names the
    id (so no pending request of the client matches it) and never reaches the server; the id is
    free again once its response is written.  A ``notifications/cancelled`` for an id not in
    flight is dropped.  With duplicates admitted a cancel by id reaches the newer of the two and
    the client gets two responses under one id; the guard keeps both from happening.

    The SDK's in-flight table reads a numeric string id as that integer, so ``7``, ``"7"`` and
    ``"07"`` share a slot there: as on HTTP, only one request per slot is inside the SDK at a
    time; a second one, admitted by the model, waits at the guard (other messages go on being
    read) until the first has answered or unwound.  A cancel for a request still waiting there
    drops it at the guard (it never reaches the SDK); no cancel is ever held.

    ``observer``: as :attr:`mcp_inflight.impl.guard.Guard.observer` (its ``arriving`` is called,
    with no session id, before the core decides on each request).
    """
    state = _StdioState(new_core("stdio"))
    state.observer = observer
    return _GuardedRead(read_stream, state, write_stream), _GuardedWrite(write_stream, state)


async def serve_stdio(server: Any, observer: Any = None) -> None:
    """Serve an official-SDK server on stdin/stdout behind :func:`guard_stdio`: an ``MCPServer``
    (``server.run("stdio")``'s guarded equivalent: ``anyio.run(serve_stdio, server)``) or a
    low-level ``mcp.server.lowlevel.Server``.  ``MCPServer`` runs its stdio transport only on
    streams it opens itself, so this reaches its low-level server (the one place that does,
    checked against the installed SDK by the tests)."""
    from mcp.server.stdio import stdio_server

    low = getattr(server, "_lowlevel_server", server)
    if not hasattr(low, "create_initialization_options"):
        raise TypeError(f"not an official-SDK server: {type(server).__name__}")
    async with stdio_server() as (read, write):
        read, write = guard_stdio(read, write, observer)
        await low.run(read, write, low.create_initialization_options())


def _stdio_slots(rid: Any) -> frozenset:
    return frozenset(s for s in _sdk_slots(rid) if s[0] == "inflight")


class _StdioState:
    """The session's core and the SDK slots taken, shared by the read and write sides."""

    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self.busy: dict = {}  # SDK slot -> handle inside the SDK
        self.slots: dict = {}  # handle inside the SDK -> its slots
        self.held: deque = deque()  # (item, handle, slots) waiting for their slots
        self.ready: deque = deque()  # items whose slots came free, to hand to the SDK
        self.wake = asyncio.Event()
        self.observer = None  # the lifecycle observer hook (see guard_stdio)

    def enter(self, handle: Any, slots: Any) -> None:
        for k in slots:
            self.busy[k] = handle
        self.slots[handle] = slots

    def leave(self, handle: Any) -> None:
        """``handle`` has left the SDK: its slots are free; requests waiting for them go in."""
        for k in self.slots.pop(handle, ()):
            if self.busy.get(k) is handle:
                del self.busy[k]
        moved = False
        for entry in list(self.held):
            item, h, slots = entry
            if not any(k in self.busy for k in slots):
                self.held.remove(entry)
                self.enter(h, slots)
                self.ready.append(item)
                moved = True
        if moved:
            self.wake.set()


class _Wrapped:
    """A stream of the SDK's transport, wrapped: what the wrapper does not define is the inner
    stream's (e.g. ``last_context``), and closing it closes the inner stream."""

    def __init__(self, inner: Any, state: _StdioState) -> None:
        self.inner = inner
        self.state = state
        self.core = state.core

    def __getattr__(self, name: Any) -> Any:
        return getattr(self.inner, name)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        await self.aclose()
        return None


class _GuardedRead(_Wrapped):
    """What the server reads: the client's messages, after the model's admission."""

    def __init__(self, inner: Any, state: _StdioState, write: Any) -> None:
        super().__init__(inner, state)
        self.write = write
        self._pending: asyncio.Future | None = None

    async def _next(self) -> Any:
        """The next item of the inner stream, or None when woken because a held request may go
        in.  The inner read is kept across calls, so no item is lost when this one is not
        taken or the caller is cancelled."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self.inner.receive())
        if not self._pending.done():
            waker = asyncio.ensure_future(self.state.wake.wait())
            try:
                await asyncio.wait({self._pending, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waker.cancel()
        if self._pending.done():
            done, self._pending = self._pending, None
            return done.result()
        self.state.wake.clear()
        return None

    def _hook(self, item: Any, handle: Any) -> Any:
        from mcp.shared.message import ServerMessageMetadata, SessionMessage

        meta = (
            item.metadata
            if isinstance(item.metadata, ServerMessageMetadata)
            else ServerMessageMetadata()
        )
        inner_hook = meta.on_request_unanswered

        async def unanswered(handle: Any = handle, inner_hook: Any = inner_hook) -> None:
            self.core.finish(handle)  # a cancelled handler stopped: unwind
            self.state.leave(handle)
            if inner_hook is not None:
                await inner_hook()

        meta.on_request_unanswered = unanswered
        return SessionMessage(item.message, metadata=meta)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest

        state = self.state
        while True:
            if state.ready:
                return state.ready.popleft()
            item = await self._next()
            if item is None:
                continue
            msg = getattr(item, "message", None)
            if isinstance(msg, JSONRPCRequest):
                if state.observer is not None:
                    seen = {"id": msg.id, "method": msg.method, "params": msg.params}
                    state.observer.arriving(None, self.core, seen)
                verdict = self.core.arrive(msg.id)
                if isinstance(verdict, Refused):
                    err = verdict.error
                    await self.write.send(
                        SessionMessage(
                            JSONRPCError(
                                jsonrpc="2.0",
                                id=None,
                                error=ErrorData(
                                    code=err["code"], message=err["message"], data=err.get("data")
                                ),
                            )
                        )
                    )
                    continue
                handle = verdict.handle
                slots = _stdio_slots(msg.id)
                wrapped = self._hook(item, handle)
                if any(k in state.busy for k in slots):
                    state.held.append((wrapped, handle, slots))  # served once its slot is free
                    continue
                state.enter(handle, slots)
                return wrapped
            if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
                params = msg.params if isinstance(msg.params, dict) else {}
                target = self.core.cancel(params.get("requestId"))
                if target is None:
                    continue  # unknown or finished id: ignored
                waiting = [e for e in state.held if e[1] is target]
                if waiting:  # never reached the SDK: dropped here
                    state.held.remove(waiting[0])
                    self.core.finish(target)
                    continue
            return item

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        await super().aclose()


class _GuardedWrite(_Wrapped):
    """What the server writes: a message of a request goes out only where the model says it is
    deliverable; the request's response releases its id."""

    async def send(self, item: Any) -> None:
        from mcp.shared.message import ServerMessageMetadata
        from mcp_types import JSONRPCError, JSONRPCResponse

        msg = getattr(item, "message", None)
        if isinstance(msg, (JSONRPCResponse, JSONRPCError)) and msg.id is not None:
            handle = self.core.in_flight(msg.id)
            if handle is not None and handle in self.state.slots:
                goes = self.core.finish(handle) is handle
                self.state.leave(handle)
                if not goes:
                    return
        elif (
            isinstance(item.metadata, ServerMessageMetadata)
            and item.metadata.related_request_id is not None
        ):
            handle = self.core.in_flight(item.metadata.related_request_id)
            if handle is not None and self.core.emit(handle) is not handle:
                return
        await self.inner.send(item)
