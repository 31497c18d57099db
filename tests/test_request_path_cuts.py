"""The request path's cheaper forms keep what they replace.

* the schema check of a request's params (``messages.check_request``: one validator per
  method and revision, made once) gives the verdicts of ``mcp_types.methods
  .validate_client_request``, and a refused call is still refused;
* the handler context's ``cancelled`` event, made when first read, is seen set by a handler
  that reads it before or only after its request is cancelled;
* the event store's bound per session, now applied inline on append, keeps what a plain
  reference store keeps (the newest events of each session, within the totals);
* ``serve``'s uvicorn protocol writes a response's head and first body in one write, the same
  bytes as uvicorn's own protocol, and still sends a stream's head before the app waits.

Each check is also shown catching a wrong variant.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import methods as M

from mcp_inflight.impl.context import Context
from mcp_inflight.impl.events import MemoryEventStore, ReplayRefused
from mcp_inflight.impl.messages import check_request
from mcp_inflight.impl.server import INVALID_PARAMS, Running, Server, Session

# --- the schema check, one validator per (method, revision) ----------------------------------

PARAMS: list[Any] = [
    None,
    {},
    {"name": "echo"},
    {"name": "echo", "arguments": {"text": "hi"}},
    {"name": 7},
    {"uri": "file:///x"},
    {"level": "info"},
    {"level": "loud"},
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
    {"cursor": 3},
    {"_meta": {"progressToken": "p"}},
    {"_meta": "not an object"},
    [1, 2],
]


def _verdict(fn: Any, method: Any, version: Any, params: Any) -> Any:
    try:
        fn(method, version, params)
    except pydantic.ValidationError as e:
        return ("invalid", e.title, e.errors(include_url=False))
    except (KeyError, ValueError) as e:
        return (type(e).__name__,)
    return "ok"


def _differences(fn: Any) -> list[tuple[Any, ...]]:
    out = []
    for method, version in sorted(M.CLIENT_REQUESTS):
        for params in PARAMS:
            want = _verdict(M.validate_client_request, method, version, params)
            got = _verdict(fn, method, version, params)
            if got != want:
                out.append((method, version, params, want, got))
    for method, version in (("no/such", "2025-11-25"), ("tools/call", "1999-01-01")):
        want = _verdict(M.validate_client_request, method, version, {})
        if _verdict(fn, method, version, {}) != want:
            out.append((method, version, want))
    return out


def test_check_request_gives_the_schemas_verdicts() -> None:
    assert _differences(check_request) == []
    assert _differences(check_request) == []  # again, every validator now made


def test_a_validator_kept_per_method_alone_is_caught() -> None:
    cache: dict[str, Any] = {}

    def wrong(method: str, version: str, params: Any) -> None:  # keyed without the revision
        if method not in cache:
            cache[method] = M.CLIENT_REQUESTS[(method, version)]
        body = {"jsonrpc": "2.0", "id": 0, "method": method}
        if params is not None:
            body["params"] = params
        cache[method].model_validate(body, by_name=False)

    assert _differences(wrong) != []


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.closed = asyncio.Event()

    def send(self, msg: dict) -> None:
        self.sent.append(msg)

    def close(self) -> None:
        self.closed.set()


INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"},
}


def test_a_call_the_schema_rejects_is_still_refused_each_time() -> None:
    server = Server("t")

    @server.tool()
    async def echo(ctx: Any, text: str) -> str:
        return text

    async def go() -> None:
        session = Session(server, "stdio")
        session.request(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, Recorder()
        )
        for k in range(3):  # the first call makes the validator, the others reuse it
            bad = {"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {"name": 7}}
            got = session.request(bad, Recorder())
            assert got.reply["error"]["code"] == INVALID_PARAMS, got
        good = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
        good["params"] = {"name": "echo", "arguments": {"text": "hi"}}
        out = Recorder()
        assert type(session.request(good, out)) is Running
        await asyncio.wait_for(out.closed.wait(), 5)
        assert out.sent[-1]["result"]["content"][0]["text"] == "hi"

    asyncio.run(go())


# --- the context's cancelled event, made when first read --------------------------------------


def _cancel_seen(read_first: bool, context: type = Context) -> list[Any]:
    """A handler of a 2025-11-25 stdio session cancelled by ``notifications/cancelled``: what
    it saw of ``ctx.cancelled`` (read before the cancel, or only in its unwinding)."""
    server = Server("t")
    seen: list[Any] = []
    gate = asyncio.Event()

    @server.tool()
    async def wait(ctx: Any) -> str:
        if gate.is_set():  # the call made again once the first was cancelled
            return "done"
        seen.append(type(ctx).__name__)
        if read_first:
            event = ctx.cancelled
            seen.append(("before", event.is_set()))
        try:
            await gate.wait()
        except asyncio.CancelledError:
            seen.append(("after", ctx.cancelled.is_set(), ctx.was_cancelled))
            raise
        return "done"

    async def go() -> None:
        import mcp_inflight.impl.server as srv

        old = srv.Context
        srv.Context = context  # type: ignore[misc]
        try:
            session = Session(server, "stdio")
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
            session.request(init, Recorder())
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait"}}
            out = Recorder()
            assert type(session.request(call, out)) is Running
            await asyncio.sleep(0)  # the handler's first step
            cancel = {"requestId": 1, "reason": "no longer needed"}
            session.notification(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            await asyncio.wait_for(out.closed.wait(), 5)
            assert out.sent == []  # a cancelled request is not answered
            gate.set()
            out = Recorder()
            again = session.request(call, out)  # its id is free again
            assert type(again) is Running
            await asyncio.wait_for(out.closed.wait(), 5)
            assert out.sent[-1]["result"]["content"][0]["text"] == "done"
        finally:
            srv.Context = old  # type: ignore[misc]

    asyncio.run(go())
    return seen


def test_a_cancel_is_seen_by_a_handler_that_reads_cancelled_only_afterwards() -> None:
    assert _cancel_seen(read_first=False) == ["Context", ("after", True, True)]


def test_a_cancel_is_seen_by_a_handler_that_read_cancelled_before() -> None:
    assert _cancel_seen(read_first=True) == ["Context", ("before", False), ("after", True, True)]


def test_a_context_that_forgets_a_cancel_before_the_first_read_is_caught() -> None:
    class Forgetful(Context):
        def _cancel(self) -> None:
            if self._cancelled is not None:  # the cancel is lost when the event is not made yet
                self._cancelled.set()

    assert _cancel_seen(read_first=False, context=Forgetful) != [
        "Forgetful",
        ("after", True, True),
    ]


def test_the_event_is_made_once_and_only_when_read() -> None:
    class S:
        revision = "2025-11-25"

    class H:
        id = 1

    ctx = Context(S(), H(), {})
    assert ctx._cancelled is None and not ctx.was_cancelled
    first = ctx.cancelled
    assert ctx.cancelled is first and not first.is_set()
    ctx._cancel()
    assert first.is_set() and ctx.was_cancelled


# --- the event store's bounds ------------------------------------------------------------------


class Reference:
    """The bounds as the event store's text states them, kept naively: every event in one list,
    oldest first; per session at most ``per`` (its oldest dropped), then in total at most
    ``events`` and ``size`` bytes (the oldest of all dropped)."""

    def __init__(self, per: int, events: int, size: int) -> None:
        self.per, self.events, self.size = per, events, size
        self.kept: list[tuple[str, str, bytes]] = []

    def append(self, session: str, stream: str, data: bytes) -> None:
        self.kept.append((session, stream, data))
        mine = [e for e in self.kept if e[0] == session]
        while len(mine) > self.per:
            self.kept.remove(mine.pop(0))
        while len(self.kept) > self.events or sum(len(e[2]) for e in self.kept) > self.size:
            self.kept.pop(0)

    def forget(self, session: str) -> None:
        self.kept = [e for e in self.kept if e[0] != session]


def _kept(store: MemoryEventStore) -> list[tuple[str, str, bytes]]:
    out = []
    for session, k in store._sessions.items():
        for stream, events in k.streams.items():
            for n, data in events.items():
                out.append((n, session, stream, data))
    return [(s, st_, d) for _, s, st_, d in sorted(out, key=lambda e: (e[1], e[0]))]


def _by_session(kept: list[tuple[str, str, bytes]]) -> list[tuple[str, str, bytes]]:
    return sorted(kept, key=lambda e: e[0])  # stable: each session's own order kept


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["p1", "p2", "g1"]),
            st.binary(max_size=6),
        ),
        st.tuples(st.just("forget"), st.sampled_from(["a", "b", "c"])),
    ),
    max_size=80,
)


def _agrees(store: MemoryEventStore, ref: Reference, script: list) -> bool:
    for op in script:
        if op[0] == "append":
            store.append(*op[1:])
            ref.append(*op[1:])
        else:
            store.forget(op[1])
            ref.forget(op[1])
        kept = _kept(store)
        if kept != _by_session(ref.kept):
            return False
        if store.events != len(kept) or store.bytes != sum(len(e[2]) for e in kept):
            return False
        if any(len(k.order) != store.kept(s) for s, k in store._sessions.items()):
            return False
    return True


@given(ops, st.integers(1, 5), st.integers(1, 12), st.integers(1, 40))
@settings(max_examples=300, deadline=None)
def test_the_event_store_keeps_what_its_bounds_say(script: list, per: int, n: int, size: int):
    store = MemoryEventStore(max_per_session=per, max_events=n, max_bytes=size)
    assert _agrees(store, Reference(per, n, size), script)


def test_a_store_bounded_one_event_too_loosely_is_caught() -> None:
    script = [("append", "a", "p1", b"x")] * 4
    assert _agrees(MemoryEventStore(3, 100, 100), Reference(3, 100, 100), script)
    assert not _agrees(MemoryEventStore(4, 100, 100), Reference(3, 100, 100), script)


def test_a_busy_session_keeps_its_newest_events_and_refuses_a_resume_into_the_gap() -> None:
    store = MemoryEventStore(max_per_session=10)
    ids = [store.append("s", "p1" if k % 2 else "p2", b"%d" % k) for k in range(1000)]
    assert store.kept("s") == 10 and store.events == 10
    assert store.bytes == sum(len(b"%d" % k) for k in range(990, 1000))
    stream, events = store.replay("s", ids[-3])
    assert [d for _, d in events] == [b"999"] and stream == "p1"
    with pytest.raises(ReplayRefused):
        store.replay("s", ids[500])


# --- serve's uvicorn protocol: a response's head and body in one write -------------------------


class Transport(asyncio.Transport):
    """A connection's transport that records what is written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _whole(scope: Any, receive: Any, send: Any) -> None:
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _streaming(release: asyncio.Event) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await release.wait()
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def _late_body(release: asyncio.Event) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await release.wait()
        await send({"type": "http.response.body", "body": b"ok"})

    return app


REQUEST = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}"


async def _exchange(protocol: Any, app: Any, release: asyncio.Event | None = None) -> list:
    """One request through uvicorn's ``protocol`` class on a recording transport: the writes
    (after the app's first steps, and at the end when ``release`` is given)."""
    import uvicorn
    from uvicorn.server import ServerState

    config = uvicorn.Config(app, log_level="warning", lifespan="off", date_header=False)
    config.load()
    state = ServerState()
    proto = protocol(config=config, server_state=state, app_state={})
    t = Transport()
    proto.connection_made(t)
    proto.data_received(REQUEST)
    for _ in range(5):
        await asyncio.sleep(0)
    steps = [list(t.writes)]
    if release is not None:
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        steps.append(list(t.writes))
    for task in list(state.tasks):
        await task
    proto.connection_lost(None)
    return steps


def _stock() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


@pytest.mark.parametrize("timeout", [None, 10.0])
def test_a_whole_response_goes_out_in_one_write(timeout: float | None) -> None:
    from mcp_inflight.serve_http import http_protocol

    ours = asyncio.run(_exchange(http_protocol(timeout), _whole))[-1]
    stock = asyncio.run(_exchange(_stock(), _whole))[-1]
    assert len(ours) == 1 and b"".join(ours) == b"".join(stock)
    assert ours[0].startswith(b"HTTP/1.1 200 OK\r\n") and ours[0].endswith(b'{"ok":true}')
    assert len(stock) == 2  # what the check tells apart: uvicorn's own protocol writes twice


async def _sse_now(scope: Any, receive: Any, send: Any) -> None:
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"data: 1\n\n"})


def test_a_stream_answered_at_once_goes_out_in_one_write() -> None:
    from mcp_inflight.serve_http import http_protocol

    ours = asyncio.run(_exchange(http_protocol(10.0), _sse_now))[-1]
    stock = asyncio.run(_exchange(_stock(), _sse_now))[-1]
    assert len(ours) == 1 and b"".join(ours) == b"".join(stock) and len(stock) == 2
    assert b"transfer-encoding: chunked" in ours[0] and ours[0].endswith(b"0\r\n\r\n")


def test_a_streams_head_still_goes_out_before_its_first_event() -> None:
    from mcp_inflight.serve_http import http_protocol

    release = asyncio.Event()
    before, after = asyncio.run(_exchange(http_protocol(10.0), _streaming(release), release))
    assert len(before) == 1 and before[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in before[0]
    assert b"".join(after).endswith(b"data: 1\n\n\r\n0\r\n\r\n")


def test_a_head_whose_body_comes_later_is_not_held_past_the_loops_turn() -> None:
    from mcp_inflight.serve_http import http_protocol

    release = asyncio.Event()
    before, after = asyncio.run(_exchange(http_protocol(10.0), _late_body(release), release))
    assert len(before) == 1 and before[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"".join(after).endswith(b"\r\n\r\nok")
