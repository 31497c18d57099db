"""Recording (I/O): sessions on the target, the probe's POSTs, and what each POST's stream
received, with arrival times, as the plain JSON records :mod:`.records` reads.

Each POST has its own httpx client so that it can be aborted alone (its connection closed, as a
client that goes away does).  Every SSE body is read with the project's one decoder,
:mod:`mcp_inflight.impl.sse`.  Server-to-client requests are answered as they arrive
(elicitation declined, roots empty, ping answered).  :class:`Target` says where the requests go:
a URL over the network, or an in-process ASGI app (``transport``, see :mod:`.asgi`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_inflight.impl.sse import Decoder

from .records import (
    ACCEPT,
    INITIALIZE,
    PROTOCOL_VERSION,
    CannotTest,
    first_response,
    is_server_request,
)


@dataclass
class Target:
    """What to probe and with which tools.  ``transport``: None to reach ``url`` over the
    network; else a callable that returns a fresh httpx transport for each client (the
    in-process probe's).  ``label`` names the target in the report (default: ``url``)."""

    url: str
    tool: str
    args: dict
    elicit_tool: str | None
    elicit_args: dict
    headers: dict
    transport: Callable[[], Any] | None = None
    label: str | None = None
    twice_tool: str | None = "ask_twice"
    twice_args: dict | None = None

    @property
    def name(self) -> str:
        return self.label or self.url

    def client(self, timeout: Any) -> Any:
        """A new httpx client for one POST (or one session's short requests)."""
        import httpx

        if self.transport is None:
            return httpx.AsyncClient(timeout=timeout, headers=self.headers, verify=_tls())
        return httpx.AsyncClient(timeout=timeout, headers=self.headers, transport=self.transport())

    def call(self, rid: Any, token: Any, tool: Any = None, args: Any = None) -> Any:
        params = {"name": tool or self.tool, "arguments": self.args if args is None else args}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    def ask(self, rid: Any, token: Any) -> Any:
        return self.call(rid, token, self.elicit_tool, self.elicit_args)

    def ask_twice(self, rid: Any, token: Any) -> Any:
        return self.call(rid, token, self.twice_tool, self.twice_args or {"label": "probe"})


class Post:
    """One POST and what its response stream delivered, with arrival times (and each event's
    SSE id when it has one).  With ``resume`` (an event id) it is instead a GET with
    ``Last-Event-ID``: the resumption of the stream that id belongs to."""

    def __init__(
        self, session: Any, name: Any, msg: Any, sender: Any, token: Any, resume: Any = None
    ) -> None:
        self.session = session
        self.name = name
        self.msg = msg
        self.sender = sender
        self.token = token
        self.resume = resume
        self.last_event_id: Any = (
            None  # the last SSE event id this stream carried (a priming one too)
        )
        self.sent = session.now()
        self.status: Any = None
        self.head: Any = None
        self.content_type: Any = None
        self.body: Any = None
        self.events: list[dict] = []
        self.end: Any = None
        self.how: Any = None
        self.client: Any = None
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> Any:
        import httpx

        s = self.session
        self.client = s.target.client(httpx.Timeout(None, connect=10.0))
        if self.resume is None:
            request = self.client.stream(
                "POST", s.url, json=self.msg, headers=s.headers_for(self.msg)
            )
        else:
            h = {**s.headers(), "Last-Event-ID": self.resume, "Accept": "text/event-stream"}
            h.pop("Content-Type", None)
            request = self.client.stream("GET", s.url, headers=h)
        try:
            async with request as r:
                self.status = r.status_code
                self.head = round(self.session.now(), 4)
                self.content_type = r.headers.get("content-type", "")
                if r.status_code >= 300 or "text/event-stream" not in self.content_type:
                    raw = await read_body(r)
                    self.body = _parse_json(raw)
                    if isinstance(self.body, dict) and r.status_code < 300:
                        self._got(self.body)
                    elif isinstance(self.body, list):
                        for m in self.body:
                            self._got(m)
                    self._finish("closed")
                    return
                await read_sse(r, self._got, self._saw_id)
                self._finish("closed")
        except asyncio.CancelledError:
            self._finish(self.how or "aborted")
            raise
        except Exception as exc:  # noqa: BLE001  (a failing connection is a result to record)
            self.body = self.body or {"transport_error": repr(exc)}
            self._finish("error")
        finally:
            await self.client.aclose()

    def _got(self, m: Any, eid: Any = None) -> None:
        e = {"t": round(self.session.now(), 4), "msg": m}
        if eid is not None:
            e["id"] = eid
        self.events.append(e)
        if is_server_request(m):
            self.session.answer(m)

    def _saw_id(self, eid: Any) -> None:
        self.last_event_id = eid

    def _finish(self, how: Any) -> None:
        if self.end is None:
            self.end = round(self.session.now(), 4)
            self.how = how

    @property
    def done(self) -> Any:
        return self._task.done()

    async def _stop(self, how: str) -> None:
        self.how = how
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
        self._finish(how)

    async def abort(self) -> None:
        """Close this POST's connection, as a client that goes away does."""
        await self._stop("aborted")

    async def give_up(self) -> None:
        """Stop waiting for this POST (what has not come counts as lost)."""
        if not self.done:
            await self._stop("timeout")

    def record(self) -> Any:
        return {
            "name": self.name,
            "sender": self.sender,
            "method": self.msg.get("method") if self.resume is None else "GET",
            "id": self.msg.get("id"),
            "token": self.token,
            "sent": round(self.sent, 4),
            "status": self.status,
            "head": self.head,
            "content_type": self.content_type,
            "body": self.body,
            "events": self.events,
            "end": self.end,
            "how": self.how,
            "last_event_id": self.last_event_id,
            "resumed_from": self.resume,
        }


_TLS: list[Any] = []


def _tls() -> Any:
    """One TLS context for every connection of the probe (building one per client costs more
    CPU than the probe's own work; each POST has its own client so that it can be aborted)."""
    if not _TLS:
        import ssl

        _TLS.append(ssl.create_default_context())
    return _TLS[0]


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return {"text": raw.decode("utf-8", "replace")[:200]}


#: the most the probe reads of one response (a body or a stream), and the most events it keeps
#: of one stream: a target cannot make the probe keep more
MAX_READ = 16 * 1024 * 1024
MAX_EVENTS = 10_000


class ReadBound(Exception):
    """A response went over :data:`MAX_READ` bytes or :data:`MAX_EVENTS` events."""


async def read_body(response: Any) -> bytes:
    """A response's body, at most :data:`MAX_READ` bytes (:class:`ReadBound` beyond)."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_READ:
            raise ReadBound(f"the response is over the probe's read bound of {MAX_READ} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_sse(response: Any, on_message: Any, on_id: Any = None) -> None:
    """Read an SSE body as it arrives with the project's decoder (:class:`mcp_inflight.impl.sse.
    Decoder`); each event's data is one JSON-RPC message, passed to ``on_message`` (data that is
    not JSON as ``{"unparsable": text}``).  An event the server left without its closing blank
    line when the stream ended is read too: the probe records what the server sent.

    With ``on_id``: ``on_message(msg, event id)`` for an event that set an id, and ``on_id(id)``
    for every event that set one, a priming event (an id and empty data, no message) too."""
    decoder = Decoder()
    last = None

    def deliver(evs: Any) -> None:
        nonlocal last
        for e in evs:
            eid = e.id if on_id is not None and e.id != last else None
            last = e.id
            if eid is not None:
                on_id(eid)
            if not e.data and on_id is not None:
                continue  # a priming event
            try:
                m = json.loads(e.data)
            except (ValueError, RecursionError):
                m = {"unparsable": e.data[:200]}
            if eid is None:
                on_message(m)
            else:
                on_message(m, eid)

    size = 0
    events = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_READ:
            raise ReadBound(f"the stream is over the probe's read bound of {MAX_READ} bytes")
        evs = decoder.feed(chunk)
        events += len(evs)
        if events > MAX_EVENTS:
            raise ReadBound(f"the stream is over the probe's bound of {MAX_EVENTS} events")
        deliver(evs)
    for e in decoder.feed(b"\n\n"):  # the stream ended: an unterminated last event
        try:
            on_message(json.loads(e.data))
        except (ValueError, RecursionError):
            pass


class Session:
    """One 2025-era session on the target: initialize, then POSTs that carry its session id."""

    def __init__(self, target: Target, t0: float) -> None:
        self.target = target
        self.url = target.url
        self.t0 = t0
        self.sid: Any = None
        self.version = PROTOCOL_VERSION
        self.init_result: dict = {}  # initialize's result (capabilities, serverInfo)
        self.client: Any = None
        self.posts: list[Post] = []
        self.answers: list[asyncio.Task] = []
        self.cancels: list[dict] = []
        self.aborts: list[dict] = []

    def now(self) -> Any:
        return time.monotonic() - self.t0

    def headers(self) -> Any:
        h = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.sid is not None:
            h["Mcp-Session-Id"] = self.sid
            h["MCP-Protocol-Version"] = self.version
        return h

    def headers_for(self, msg: Any) -> dict:
        """The headers of a POST that carries ``msg``."""
        return self.headers()

    async def open(self) -> Any:
        import httpx

        self.client = self.target.client(10.0)
        init = INITIALIZE
        try:
            async with self.client.stream("POST", self.url, json=init, headers=self.headers()) as r:
                status = r.status_code
                ctype = r.headers.get("content-type", "")
                sid = r.headers.get("mcp-session-id")
                msgs: list[Any] = []
                if "text/event-stream" in ctype:

                    async def until_response() -> None:
                        await read_sse(r, msgs.append)

                    await asyncio.wait_for(until_response(), 10)
                else:
                    msgs.append(_parse_json(await read_body(r)))
        except (TimeoutError, httpx.HTTPError, OSError, ReadBound) as exc:
            raise CannotTest(f"no session: initialize failed to {self.url}: {exc!r}") from None
        if status != 200:
            raise CannotTest(f"no session: initialize got HTTP {status}")
        result = next(
            (m.get("result") for m in msgs if isinstance(m, dict) and "result" in m), None
        )
        if not isinstance(result, dict):
            raise CannotTest(f"no session: initialize got no result ({str(msgs)[:200]})")
        if not sid:
            raise CannotTest(
                "no session: initialize returned no Mcp-Session-Id (a stateless "
                "server; ids only collide within a session)"
            )
        self.sid = sid
        self.init_result = result
        self.version = result.get("protocolVersion") or PROTOCOL_VERSION
        r = await self.client.post(
            self.url,
            headers=self.headers(),
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        if r.status_code >= 300:
            raise CannotTest(f"notifications/initialized got HTTP {r.status_code}")
        return self

    async def request(self, msg: Any, timeout: float = 10.0) -> Any:
        """A short request: its answer (first response message)."""
        p = self.post("probe", msg, "client", None)
        end = time.monotonic() + timeout
        while not p.done and time.monotonic() < end and first_response(p.record()) is None:
            await asyncio.sleep(0.01)
        await p.give_up()
        self.posts.remove(p)
        r = first_response(p.record())
        if r is None:
            raise CannotTest(
                f"{msg['method']} got no answer (HTTP {p.status}, {str(p.body)[:200]})"
            )
        return r["msg"]

    def answers_pending(self) -> Any:
        return any(not a.done() for a in self.answers)

    def post(self, name: Any, msg: Any, sender: Any, token: Any) -> Post:
        p = Post(self, name, msg, sender, token)
        self.posts.append(p)
        return p

    def resume(self, name: Any, of: Post) -> Post:
        """GET with ``Last-Event-ID``: the last event id ``of``'s stream carried."""
        p = Post(self, name, of.msg, "client", of.token, resume=of.last_event_id)
        self.posts.append(p)
        return p

    def answer(self, msg: Any) -> None:
        """Answer a server-to-client request: elicitation declined, roots empty, ping."""
        method = msg.get("method")
        if method == "elicitation/create":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "decline"}}
        elif method == "roots/list":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}
        elif method == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {"code": -32601, "message": f"the probe does not answer {method}"},
            }

        async def send() -> None:
            try:
                await self.client.post(self.url, json=reply, headers=self.headers())
            except Exception:  # noqa: BLE001  (a lost answer shows up in the records)
                pass

        self.answers.append(asyncio.ensure_future(send()))

    async def cancel(self, rid: Any, means: Any) -> None:
        self.cancels.append({"t": round(self.now(), 4), "id": rid, "means": means})
        await self.client.post(
            self.url,
            headers=self.headers(),
            json={
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "mcp-inflight probe"},
            },
        )

    async def abort(self, post: Post) -> None:
        self.aborts.append({"t": round(self.now(), 4), "post": post.name})
        await post.abort()

    async def close(self) -> None:
        for p in self.posts:
            await p.give_up()
        for a in self.answers:
            if not a.done():
                a.cancel()
        try:
            await self.client.delete(self.url, headers=self.headers())
        except Exception:  # noqa: BLE001
            pass
        await self.client.aclose()

    def record(self, scenario: Any, variant: Any) -> Any:
        return {
            "scenario": scenario,
            "variant": variant,
            "posts": [p.record() for p in self.posts],
            "cancels": self.cancels,
            "aborts": self.aborts,
        }


async def until(pred: Any, deadline: Any) -> bool:
    """Wait until ``pred()`` or the monotonic ``deadline``; returns whether ``pred()`` held."""
    while not pred():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True
