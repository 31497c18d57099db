"""Resumable streams (2025-11-25 Streamable HTTP): the official client resuming after its
connection is cut, and the rules on raw HTTP (one stream per replay, foreign ids refused, no
event twice, ids unique in the session, the store's bounds)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from mcp_inflight.impl import sse
from mcp_inflight.impl.events import MemoryEventStore, ReplayRefused
from support.http_server import build_server, start
from support.sessions import http_session as session
from support.sessions import tool_call as call


def server_with_steps():
    server = build_server()

    @server.tool()
    async def steps(ctx, label: str, n: int = 5, delay: float = 0.05) -> str:
        for k in range(1, n + 1):
            await asyncio.sleep(delay)
            await ctx.progress(k, n, f"{label} {k}")
        return f"steps:{label}"

    @server.tool()
    async def step_then_ask(ctx, label: str, delay: float = 0.2) -> str:
        await ctx.progress(1, 2, f"{label} 1")
        await asyncio.sleep(delay)
        answer = await ctx.elicit(f"{label}: go on?")
        await ctx.progress(2, 2, f"{label} 2")
        return f"asked:{label}:{answer.get('action')}"

    return server


@pytest.fixture(scope="module")
def srv():
    s = start(server_with_steps(), retry_ms=50)
    yield s
    s.stop()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


class Events:
    """An SSE response read event by event (``sse.Event``: id, data, retry)."""

    def __init__(self, cm):
        self.cm = cm
        self.got: list[sse.Event] = []

    async def __aenter__(self):
        self.resp = await self.cm.__aenter__()
        self._it = self._events()
        return self

    async def _events(self):
        d = sse.Decoder()
        async for chunk in self.resp.aiter_bytes():
            for e in d.feed(chunk):
                yield e

    async def next(self):
        async for e in self._it:
            self.got.append(e)
            return e
        return None

    async def rest(self):
        while await self.next() is not None:
            pass
        return self.got

    async def __aexit__(self, *exc):
        await self.cm.__aexit__(*exc)


def post(c, url, body, h):
    return Events(c.stream("POST", url, json=body, headers=h))


def resume(c, url, h, last):
    return Events(c.stream("GET", url, headers={**h, "last-event-id": last}))


def msgs(events):
    return [e.json() for e in events if e.data]


def progress(events, token=None):
    return [
        m["params"]["progress"]
        for m in msgs(events)
        if m.get("method") == "notifications/progress"
        and (token is None or m["params"]["progressToken"] == token)
    ]


def stream_of(eid):
    tag, stream, n = eid.split(".")
    return tag, stream, int(n)


# --- the official client, its connection cut mid-call -------------------------------------------


class CuttingProxy:
    """A TCP proxy on loopback that cuts the first connection whose server-to-client bytes carry
    a progress notification (both sides closed at once, as a network failure would)."""

    def __init__(self, port):
        self.port = port
        self.cuts = 0
        self.armed = True

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _conn(self, cr, cw):
        sr, sw = await asyncio.open_connection("127.0.0.1", self.port)

        async def pipe(r, w, watch):
            try:
                while data := await r.read(65536):
                    if watch and self.armed and b"notifications/progress" in data:
                        self.armed = False
                        self.cuts += 1
                        w.write(data[: data.index(b"notifications/progress")])
                        break
                    w.write(data)
                    await w.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            for x in (cw, sw):
                x.close()

        await asyncio.gather(pipe(cr, sw, False), pipe(sr, cw, True))


def test_official_client_resumes_after_its_connection_is_cut(srv):
    import mcp_types as types
    from mcp.client import Client

    async def go():
        seen = []
        asked = []

        async def on_progress(p, total, message):
            seen.append(p)

        async def on_elicit(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={})

        async with CuttingProxy(srv.port) as proxy:
            # the client names the proxy in its Host header: allow it as this server's name
            srv.app.hosts.allowed_hosts.add(proxy.url.split("/")[2])
            async with Client(proxy.url, mode="legacy", elicitation_callback=on_elicit) as client:
                res = await client.call_tool(
                    "steps", {"label": "R", "n": 6, "delay": 0.05}, progress_callback=on_progress
                )
                assert proxy.cuts == 1
                assert res.content[0].text == "steps:R"
                # the first progress event was cut before the client read it: the resume
                # replayed it; every one came once
                assert seen == [1, 2, 3, 4, 5, 6]
                proxy.armed = True  # an elicitation made while the stream is detached
                seen.clear()
                res = await client.call_tool(
                    "step_then_ask", {"label": "E"}, progress_callback=on_progress
                )
                assert proxy.cuts == 2
                assert res.content[0].text == "asked:E:accept" and len(asked) == 1
                assert seen == [1, 2]

    run(go())


# --- raw HTTP ---------------------------------------------------------------------------------


def test_event_ids_prime_retry_and_uniqueness(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            streams = []
            for rid in (1, 2):
                async with post(
                    c, srv.url, call(rid, "steps", {"label": "u", "n": 2}, "t"), h
                ) as a:
                    streams.append(await a.rest())
            ids = [e.id for s in streams for e in s]
            assert all(ids) and len(set(ids)) == len(ids)  # every event has one, none twice
            for s in streams:
                first = s[0]
                assert first.data == "" and first.retry == 50  # the priming event
                names = {stream_of(e.id)[1] for e in s}
                assert len(names) == 1 and names.pop().startswith("p")
                assert msgs(s)[-1]["result"]["content"][0]["text"] == "steps:u"
                # a request id never serves as a stream name
                assert all(stream_of(e.id)[1] not in ("1", "2") for e in s)
            assert stream_of(streams[0][0].id)[1] != stream_of(streams[1][0].id)[1]
            tags = {stream_of(i)[0] for i in ids}
            h2 = await session(c, srv.url)
            async with post(c, srv.url, call(1, "echo", {"text": "x"}), h2) as b:
                other = await b.rest()
            assert {stream_of(e.id)[0] for e in other}.isdisjoint(tags)
            r = await c.post(srv.url, json=call(3, "echo", {"text": "x"}), headers=h)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-")

    run(go())


def test_replay_carries_only_the_named_stream_and_no_event_twice(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            args = {"label": "x", "n": 6, "delay": 0.05}
            async with post(c, srv.url, call(7, "steps", args, "B"), h) as b:
                async with post(c, srv.url, call(8, "steps", args, "A"), h) as a:
                    await a.next()  # priming
                    await a.next()  # A's first progress
                # A's connection is dropped; its handler goes on and its messages are kept
                before = list(a.got)
                await asyncio.sleep(0.1)
                async with resume(c, srv.url, h, before[-1].id) as r:
                    after = await r.rest()
                bs = await b.rest()
            whole = before + after
            assert progress(whole) == progress(whole, "A") == [1, 2, 3, 4, 5, 6]
            ids = [e.id for e in whole]
            assert len(set(ids)) == len(ids)
            assert {stream_of(i)[1] for i in ids} == {stream_of(before[0].id)[1]}
            assert [stream_of(i)[2] for i in ids] == sorted(stream_of(i)[2] for i in ids)
            assert msgs(after)[-1]["id"] == 8 and "result" in msgs(after)[-1]
            assert progress(bs, "B") == [1, 2, 3, 4, 5, 6] and progress(bs, "A") == []
            # the stream has ended: a resume from its first event replays the rest, then ends
            async with resume(c, srv.url, h, before[0].id) as r:
                again = await r.rest()
            assert [e.id for e in again] == ids[1:]

    run(go())


def test_a_second_resume_takes_the_stream_over(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with post(
                c, srv.url, call(1, "hold", {"label": "over", "timeout": 5}, "o"), h
            ) as a:
                await a.next()
                await a.next()
            async with resume(c, srv.url, h, a.got[0].id) as r1:
                assert msgs([await r1.next()])[0]["params"]["progress"] == 0
                async with resume(c, srv.url, h, r1.got[-1].id) as r2:
                    assert await r1.next() is None  # the first resume's response ended
                    await c.post(srv.url, json=call(2, "release", {"label": "over"}), headers=h)
                    got = await r2.rest()
            assert [m["id"] for m in msgs(got)] == [1]
            assert msgs(got)[0]["result"]["content"][0]["text"] == "held:over"

    run(go())


def test_unknown_and_foreign_event_ids_are_refused_with_400(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            hx = await session(c, srv.url)
            hy = await session(c, srv.url)
            async with post(c, srv.url, call(1, "steps", {"label": "X", "n": 2}, "X"), hx) as x:
                xs = await x.rest()
            async with post(c, srv.url, call(1, "steps", {"label": "Y", "n": 2}, "Y"), hy) as y:
                ys = await y.rest()
            tag, stream, n = stream_of(ys[0].id)
            for last in (
                xs[0].id,  # another session's event, on a stream of the same name
                "garbage",
                f"{tag}.p99.1",  # no such stream in this session
                f"{tag}.{stream}.{n + 1000}",  # never issued
                "1",  # a request id
            ):
                r = await c.get(srv.url, headers={**hy, "last-event-id": last})
                assert r.status_code == 400, (last, r.status_code)
                err = r.json()["error"]
                assert err["code"] == -32600 and err["message"].startswith("Bad Request: ")
                assert "progressToken" not in r.text  # nothing of any stream
            r = await c.get(srv.url, headers={**hy, "last-event-id": ys[0].id})
            assert r.status_code == 200 and progress(list(sse.events([r.content])), "Y") == [1, 2]
            assert "X" not in json.dumps(msgs(list(sse.events([r.content]))))

    run(go())


def test_off_switch_keeps_no_events_and_drops_after_a_disconnect():
    s = start(server_with_steps(), event_store=None)
    try:

        async def go():
            async with httpx.AsyncClient(timeout=10) as c:
                h = await session(c, s.url)
                async with post(c, s.url, call(1, "steps", {"label": "o", "n": 4}, "o"), h) as a:
                    first = await a.next()
                assert first.id is None and first.data
                await asyncio.sleep(0.4)
                async with resume(c, s.url, h, "x.p1.1") as g:
                    # no store: a plain standalone stream (today's behaviour), no replay
                    assert g.resp.status_code == 200
                    chunk = await g.resp.aiter_bytes().__anext__()
                    assert chunk == b": stream open\n\n"

        run(go())
        assert sum(x.core.dropped for x in s.app.sessions.values()) >= 1
    finally:
        s.stop()


# --- the store alone --------------------------------------------------------------------------


def test_memory_store_bounds_drop_the_oldest_and_refuse_a_resume_with_a_hole():
    st = MemoryEventStore(max_per_session=3, max_events=5, max_bytes=1000)
    a = [st.append("A", "p1", b"a%d" % k) for k in range(4)]
    assert st.kept("A") == 3  # the per-session bound: A's oldest went
    # a[0] itself is gone, but all that came after it is kept: no hole
    assert st.replay("A", a[0]) == ("p1", [(a[1], b"a1"), (a[2], b"a2"), (a[3], b"a3")])
    b = [st.append("B", "p1", b"b%d" % k) for k in range(3)]
    assert st.events == 5 and st.kept("A") == 2 and st.kept("B") == 3  # the total: A's oldest
    with pytest.raises(ReplayRefused, match="no longer kept"):
        st.replay("A", a[0])  # a[1] was dropped: a replay from a[0] would have a hole
    assert st.replay("A", a[1]) == ("p1", [(a[2], b"a2"), (a[3], b"a3")])
    with pytest.raises(ReplayRefused):
        st.replay("B", a[2])  # A's id in B: another session's, though its stream is named p1
    assert st.replay("B", b[0]) == ("p1", [(b[1], b"b1"), (b[2], b"b2")])
    st.append("C", "p1", b"x" * 900)
    assert st.bytes <= 1000 and st.kept("C") == 1
    st.forget("C")
    assert st.kept("C") == 0
    with pytest.raises(ReplayRefused):
        st.replay("C", "whatever.p1.1")
    for k in range(5000):  # stale entries of dropped events do not pile up
        st.append("D", f"p{k % 7}", b"d")
    assert len(st._order) <= 2 * st.events + 1025
    for k in range(3000):  # nor the streams whose events are all dropped (one per POST)
        st.append("E", f"p{k}", b"e")
    assert len(st._sessions["E"].streams) == st.kept("E") == 3
    # once an event newer than an id is dropped, that id is refused, whatever its stream: the
    # store keeps one number for what is gone, not a history per stream
    d = st.append("F", "p1", b"f")
    for _ in range(4):  # d and the first of these are dropped: no event of p1 after d was
        st.append("F", "p2", b"g")
    with pytest.raises(ReplayRefused, match="no longer kept"):
        st.replay("F", d)


class ByStreamName:
    """A store that names events by stream alone, shared by every session (the design whose
    ids are not unique across sessions: what FastMCP's fix #4402 undid for the SDK's ids)."""

    def __init__(self):
        self.events: dict[str, list[bytes]] = {}

    def append(self, session, stream, data):
        self.events.setdefault(stream, []).append(data)
        return f"{stream}.{len(self.events[stream])}"

    def replay(self, session, last):
        stream, _, n = last.partition(".")
        if stream not in self.events or not n.isdigit():
            raise ReplayRefused("unknown")
        kept = self.events[stream]
        return stream, [(f"{stream}.{k + 1}", d) for k, d in enumerate(kept) if k + 1 > int(n)]

    def forget(self, session):
        pass


async def _cross_session_replay(url):
    """Two sessions, one call each (Y's, then X's); resume session Y's stream from its priming
    event: the progress of the replay that belongs to session X (its token)."""
    async with httpx.AsyncClient(timeout=10) as c:
        hx = await session(c, url)
        hy = await session(c, url)
        async with post(c, url, call(1, "steps", {"label": "Y", "n": 2}, "Y"), hy) as y:
            ys = await y.rest()
        async with post(c, url, call(1, "steps", {"label": "X", "n": 2}, "X"), hx) as x:
            await x.rest()
        r = await c.get(url, headers={**hy, "last-event-id": ys[0].id})
        return progress(list(sse.events([r.content])), "X")


def test_a_store_keyed_by_stream_alone_replays_another_sessions_events():
    """The isolation test fails on the design that breaks it, and holds on the default."""
    for store, leaked in ((ByStreamName(), [1, 2]), (MemoryEventStore(), [])):
        s = start(server_with_steps(), event_store=store)
        try:
            assert run(_cross_session_replay(s.url)) == leaked
        finally:
            s.stop()
