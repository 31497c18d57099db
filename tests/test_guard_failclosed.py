"""The guard fails closed: no body reaches the SDK unjudged.

A body the SDK reads differently from a strict JSON reader (non-finite numbers, numbers that
overflow a double, duplicate keys, escaped keys, a byte-order mark) is judged as the SDK reads
it; a body over the guard's limit is refused unread.  Checked in front of the official SDK's
server in a real process, over real HTTP on loopback."""

from __future__ import annotations

import json
import threading

import httpx
import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_guard import _raw_session

from mcp_inflight.guard import guard
from mcp_inflight.impl import jsonio, sse
from support.servers import sdk_server, stop

IN_FLIGHT = 41  # the id of the request kept in flight for the whole module


class _Asking:
    """A ``tools/call ask`` under :data:`IN_FLIGHT`, its stream read in a thread: it stays in
    flight until its elicitation is answered."""

    def __init__(self, url: str, headers: dict) -> None:
        self.url = url
        self.headers = headers
        self.messages: list = []
        self.asked = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.asked.wait(10), "the in-flight request never asked"

    def _run(self) -> None:
        call = {
            "jsonrpc": "2.0",
            "id": IN_FLIGHT,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"label": "held", "delay": 0.0}},
        }
        with httpx.Client(timeout=60) as c:
            with c.stream("POST", self.url, headers=self.headers, json=call) as r:
                d = sse.Decoder()
                for chunk in r.iter_bytes():
                    for e in d.feed(chunk):
                        if e.data:
                            m = json.loads(e.data)
                            self.messages.append(m)
                            if m.get("method") == "elicitation/create":
                                self.asked.set()
        self.done.set()


def _answer(c: httpx.Client, url: str, headers: dict, first: _Asking) -> None:
    """Accept the in-flight request's elicitation; the request then ends with its own
    response."""
    ask = next(m for m in first.messages if m.get("method") == "elicitation/create")
    answer = {
        "jsonrpc": "2.0",
        "id": ask["id"],
        "result": {"action": "accept", "content": {"ok": True}},
    }
    assert c.post(url, headers=headers, json=answer).status_code == 202
    assert first.done.wait(10)
    final = first.messages[-1]
    assert final["id"] == IN_FLIGHT and "ask:held:accept" in json.dumps(final)


# JSON the SDK's parser (pydantic-core) accepts and a strict reader refuses or reads otherwise
HOSTILE_NUMBERS = ["NaN", "Infinity", "-Infinity", "1E400", "1E999", "-1E400", "2.5e+308"]
# spellings of the in-flight id, as the SDK reads them
ID_FORMS = [
    f'"id":{IN_FLIGHT}',
    f'"id":"other","id":{IN_FLIGHT}',  # duplicate keys: the last one counts
    f'"\\u0069d":{IN_FLIGHT}',  # an escaped key
    f'"id":{IN_FLIGHT},"id":{IN_FLIGHT}',
]
METHODS = ['"tools/call"', '"tools\\/call"', '"\\u0074ools/call"']


@st.composite
def duplicates(draw) -> bytes:
    """A request under the in-flight id, written with what only a lax reader accepts."""
    number = draw(st.sampled_from(HOSTILE_NUMBERS))
    where = draw(st.sampled_from(["arguments", "meta", "top", "nested"]))
    args = '{"text":"dup"' + (f',"x":{number}' if where == "arguments" else "") + "}"
    params = '{"name":"echo","arguments":' + args
    if where == "meta":
        params += ',"_meta":{"progressToken":' + number + "}"
    if where == "nested":
        params += ',"deep":[[{"n":[' + number + "]}]]"
    params += "}"
    fields = [
        '"jsonrpc":"2.0"',
        draw(st.sampled_from(ID_FORMS)),
        '"method":' + draw(st.sampled_from(METHODS)),
        '"params":' + params,
    ]
    if where == "top":
        fields.append('"extra":' + number)
    fields = draw(st.permutations(fields))
    space = draw(st.sampled_from(["", " ", "\n", "\t"]))
    text = "{" + ("," + space).join(fields) + "}" + space
    bom = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf"]))
    return bom + text.encode()


@settings(max_examples=50, deadline=None)
@given(body=duplicates())
def test_the_generated_bodies_are_what_the_property_needs(body):
    """Each body is refused by the project's strict reader; the SDK's parser reads it as a
    request under the in-flight id (or refuses it outright, for the byte-order mark)."""
    with pytest.raises(ValueError):
        jsonio.loads(body)
    if not body.startswith(b"\xef"):
        assert pydantic_core.from_json(body)["id"] == IN_FLIGHT


def test_no_lax_duplicate_of_an_in_flight_id_reaches_the_sdk(sdk_guarded):
    """The property over JSON the SDK accepts and strict JSON does not: a duplicate of an
    in-flight id is never served (400 or 409, never 200), and the first request still gets
    its own elicitation answered and its own response.  On the run's guarded SDK server
    (``sdk_guarded``), in a session of this test's own."""
    url = sdk_guarded
    c, h = _raw_session(url)
    try:
        first = _Asking(url, h)

        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(body=duplicates())
        def one(body: bytes) -> None:
            r = c.post(url, headers=h, content=body)
            assert r.status_code in (400, 409), (body, r.status_code, r.text[:300])
            if not body.startswith(b"\xef"):
                assert r.status_code == 409 and r.json()["error"]["data"] == {"id": IN_FLIGHT}

        one()
        _answer(c, url, h, first)
    finally:
        c.close()


def test_a_body_over_the_limit_is_refused_unread_whatever_its_content_length_says():
    """A ``Content-Length`` over the guard's limit is answered 413 by the guard (before: sent to
    the SDK unread, which served it where its own limit was raised)."""
    import asyncio

    seen: list = []

    async def inner(scope, receive, send):
        seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def go():
        g = guard(inner, max_body=1024)
        sent: list = []

        async def receive():
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(m):
            sent.append(m)

        headers = [(b"mcp-session-id", b"s1"), (b"content-length", b"5000000")]
        await g({"type": "http", "method": "POST", "headers": headers}, receive, send)
        return sent

    sent = asyncio.run(go())
    assert sent[0]["status"] == 413 and seen == []


def test_a_raised_sdk_limit_does_not_let_a_large_duplicate_past_the_guard():
    """Against the real SDK with its own limit raised to 16 MiB: a 5 MiB duplicate of an
    in-flight id is refused by the guard (before: the SDK served it)."""
    proc, url = sdk_server("--guard", "--sdk-max-body", str(16 * 1024 * 1024))
    try:
        c, h = _raw_session(url)
        first = _Asking(url, h)
        pad = "x" * (5 * 1024 * 1024)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": IN_FLIGHT,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": pad}},
            }
        )
        r = c.post(url, headers=h, content=body)
        assert r.status_code == 413
        assert not first.done.is_set()
        # the first request, still in flight, is answered and gets its own response (a server
        # stopped with a stream open waits seconds for it to close)
        _answer(c, url, h, first)
        c.close()
    finally:
        stop(proc)
