"""An in-process HTTP transport for httpx that drives an ASGI app and streams its responses.

Why not ``httpx.ASGITransport``: in httpx (0.27 to 0.29 at least) it awaits the whole app call
and collects every body chunk before it returns the response, so a client sees nothing of an SSE
stream until the server closes it; and it answers ``receive()`` with ``http.disconnect`` only
once the response is complete, so a client cannot go away in the middle.  The probe needs both:
each progress notification with its arrival time while the request still runs, and the abort of
one POST (``collateral_close``).

Here each request runs the app in its own task; ``send`` hands every body chunk to the response
stream as it comes; closing the response (the client going away) makes ``receive()`` return
``http.disconnect``, and later ``send`` calls are dropped, as uvicorn does.  :class:`AppRunner`
also runs the ASGI lifespan (startup before the first request, shutdown at the end): the
official SDK's ``streamable_http_app()`` starts its session manager there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

Message = dict[str, Any]


class LifespanFailed(Exception):
    """The app reported ``lifespan.startup.failed`` or raised during its startup."""


class AppRunner:
    """One ASGI app run in-process: its lifespan and one task per request.

    ``async with AppRunner(app) as runner:`` then ``httpx.AsyncClient(transport=
    runner.transport())``; every client gets its own transport (closing a client closes only the
    streams it opened).  ``lifespan=False`` skips the lifespan protocol (for an app whose
    lifespan already runs elsewhere)."""

    def __init__(
        self,
        app: Any,
        *,
        lifespan: bool = True,
        client: tuple[str, int] = ("127.0.0.1", 50000),
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.app = app
        self.lifespan = lifespan
        self.client = client
        self.shutdown_timeout = shutdown_timeout
        self.state: dict[str, Any] = {}
        self.tasks: set[asyncio.Task] = set()
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._lifespan_task: asyncio.Task | None = None

    # --- lifespan -------------------------------------------------------------------------
    async def __aenter__(self) -> AppRunner:
        if self.lifespan:
            await self._startup()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _run_lifespan(self) -> None:
        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.0"},
            "state": self.state,
        }
        await self.app(scope, self._to_app.get, self._from_app.put)

    async def _next_from_lifespan(self) -> Message | None:
        """The app's next lifespan message, or None when its lifespan task ended without one."""
        assert self._lifespan_task is not None
        getter = asyncio.ensure_future(self._from_app.get())
        await asyncio.wait({getter, self._lifespan_task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            return getter.result()
        getter.cancel()
        return None

    async def _startup(self) -> None:
        self._lifespan_task = asyncio.ensure_future(self._run_lifespan())
        await self._to_app.put({"type": "lifespan.startup"})
        msg = await self._next_from_lifespan()
        if msg is None:
            # The app raised or returned before answering: it does not speak the lifespan
            # protocol, and the ASGI spec says to go on without it.
            task, self._lifespan_task = self._lifespan_task, None
            if not task.cancelled():
                task.exception()  # retrieved, so that asyncio does not log it
            return
        if msg["type"] == "lifespan.startup.failed":
            raise LifespanFailed(f"the app's lifespan startup failed: {msg.get('message', '')}")

    async def aclose(self) -> None:
        """End every request still running (their clients gone), then the lifespan."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=0.5)
        if self._lifespan_task is not None and not self._lifespan_task.done():
            await self._to_app.put({"type": "lifespan.shutdown"})
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._next_from_lifespan(), self.shutdown_timeout)
            if not self._lifespan_task.done():
                self._lifespan_task.cancel()
            with contextlib.suppress(BaseException):
                await self._lifespan_task
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=self.shutdown_timeout)

    # --- requests -------------------------------------------------------------------------
    def transport(self) -> StreamingASGITransport:
        return StreamingASGITransport(self)

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task


class _Exchange:
    """One request's ASGI conversation: the body in, the response out, the disconnect."""

    def __init__(self, body: bytes) -> None:
        self.body: bytes | None = body
        self.start: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self.chunks: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        self.gone = asyncio.Event()  # the client closed the response, or it is complete
        self.complete = False

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.gone.is_set():
            return  # the client went away: dropped, as uvicorn does
        kind = message["type"]
        if kind == "http.response.start":
            if not self.start.done():
                self.start.set_result(message)
        elif kind == "http.response.body":
            chunk = message.get("body", b"")
            if chunk:
                self.chunks.put_nowait(chunk)
            if not message.get("more_body", False):
                self.complete = True
                self.chunks.put_nowait(None)
                self.gone.set()

    def ended(self, task: asyncio.Task) -> None:
        """The app returned or raised: a response it never started is a 500; one it started
        but never completed ends with a connection error."""
        err = None if task.cancelled() else task.exception()
        if not self.start.done():
            self.start.set_result(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            self.chunks.put_nowait(b"Internal Server Error")
            self.chunks.put_nowait(None)
        elif not self.complete:
            self.chunks.put_nowait(
                httpx.RemoteProtocolError(
                    f"the app ended the response without completing it ({err!r})"
                )
            )
        self.gone.set()

    def close(self) -> None:
        self.gone.set()


class _Body(httpx.AsyncByteStream):
    def __init__(self, exchange: _Exchange, owner: StreamingASGITransport) -> None:
        self.exchange = exchange
        self.owner = owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            item = await self.exchange.chunks.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def aclose(self) -> None:
        self.exchange.close()
        self.owner.open.discard(self.exchange)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """An httpx transport onto an :class:`AppRunner`'s app; response bodies stream."""

    def __init__(self, runner: AppRunner) -> None:
        self.runner = runner
        self.open: set[_Exchange] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self.runner.client,
            "root_path": "",
            "state": dict(self.runner.state),
        }
        ex = _Exchange(body)
        task = self.runner._spawn(self.runner.app(scope, ex.receive, ex.send))
        task.add_done_callback(ex.ended)
        timeout = request.extensions.get("timeout", {}).get("read")
        try:
            start = await asyncio.wait_for(asyncio.shield(ex.start), timeout)
        except TimeoutError:
            ex.close()
            raise httpx.ReadTimeout(
                "the app sent no response start in time", request=request
            ) from None
        except asyncio.CancelledError:
            ex.close()
            raise
        self.open.add(ex)
        return httpx.Response(
            start["status"],
            headers=list(start.get("headers", [])),
            stream=_Body(ex, self),
            request=request,
        )

    async def aclose(self) -> None:
        for ex in list(self.open):
            ex.close()
        self.open.clear()
