"""Bad input against both adapters (hypothesis): malformed JSON, wrong types, huge and odd ids,
unknown methods, responses to nothing, truncated messages.  Each gets a well-formed JSON-RPC
error or is ignored, the server stays up, and no registry leaks."""

import asyncio
import json
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_inflight.impl.server import Session
from mcp_inflight.impl.stdio import serve_stdio
from mcp_inflight.serve import demo_server
from support.http_server import sse_messages, start
from support.sessions import init_params

INIT = init_params()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
odd_ids = (
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**80), 2**80)
    | st.sampled_from(["", "7", "_GET_stream", "0" * 40, "\u2603"])
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    | st.lists(st.integers(), max_size=2)
)
methods = (
    st.sampled_from(
        [
            "ping",
            "tools/list",
            "tools/call",
            "initialize",
            "no/such",
            "",
            "notifications/cancelled",
            "notifications/progress",
            "logging/setLevel",
            "server/discover",
            "resources/list",
        ]
    )
    | st.integers()
    | st.none()
)
tool_params = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["echo", "nope", "slow"]) | st.integers() | st.none(),
        "arguments": st.one_of(
            json_values,
            st.fixed_dictionaries({"text": json_values}),
            st.fixed_dictionaries(
                {"label": json_values, "steps": st.integers(-3, 2), "delay": st.floats(-1, 0.01)}
            ),
        ),
    }
)
messages = st.one_of(
    st.fixed_dictionaries(
        {
            "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | st.none(),
            "id": odd_ids,
            "method": methods,
        },
        optional={"params": json_values | tool_params},
    ),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": methods},
        optional={"params": st.fixed_dictionaries({"requestId": odd_ids}) | json_values},
    ),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": odd_ids},
        optional={"result": json_values, "error": json_values},
    ),
    json_values,
)


@st.composite
def raw_lines(draw):
    """One line of input: a message as JSON, truncated JSON, or bytes that are not JSON."""
    kind = draw(st.sampled_from(["json", "truncated", "garbage", "deep", "surrogate"]))
    if kind == "garbage":
        return draw(st.binary(min_size=1, max_size=40)).replace(b"\n", b" ").replace(b"\r", b" ")
    if kind == "deep":  # nesting past any parser's recursion, inside a request
        depth = draw(st.integers(900, 3000))
        where = draw(st.sampled_from(["params", "id", "arguments"]))
        deep = b"[" * depth + b"]" * depth
        if where == "id":
            return b'{"jsonrpc":"2.0","id":' + deep + b',"method":"ping"}'
        if where == "arguments":
            return (
                b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                b'"arguments":{"text":' + deep + b"}}}"
            )
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + deep + b"}"
    if kind == "surrogate":  # a lone surrogate escape in an id, a method or a text
        esc = draw(st.sampled_from([b"\\ud800", b"\\udfff", b"a\\ud83d"]))
        return draw(
            st.sampled_from(
                [
                    b'{"jsonrpc":"2.0","id":"' + esc + b'","method":"ping"}',
                    b'{"jsonrpc":"2.0","id":3,"method":"' + esc + b'"}',
                    b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
                    + esc
                    + b'"}}}',
                ]
            )
        )
    text = json.dumps(draw(messages)).encode()
    if kind == "truncated" and len(text) > 1:
        text = text[: draw(st.integers(1, len(text) - 1))]
    return text


def well_formed(m):
    assert isinstance(m, dict) and m.get("jsonrpc") == "2.0", m
    if "method" in m:
        return
    assert "id" in m and (("result" in m) != ("error" in m)), m
    if "error" in m:
        e = m["error"]
        assert isinstance(e.get("code"), int) and isinstance(e.get("message"), str), m
    assert m["id"] is None or type(m["id"]) in (int, str), m


# --- HTTP -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def http(srv):
    with httpx.Client(timeout=10) as c:
        r = c.post(
            srv.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
        )
        h = {
            "accept": "application/json, text/event-stream",
            "mcp-session-id": r.headers["mcp-session-id"],
            "content-type": "application/json",
        }
        yield c, h


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=raw_lines(), modern=st.booleans())
def test_http_bad_input(srv, http, line, modern):
    c, h = http
    headers = {**h, "mcp-protocol-version": "2026-07-28"} if modern else h
    r = c.post(srv.url, content=line, headers=headers)
    assert r.status_code in (200, 202, 400, 404, 409), (r.status_code, r.text)
    if r.content:
        if r.headers["content-type"].startswith("text/event-stream"):
            for m in sse_messages(r.text):
                well_formed(m)
        else:
            well_formed(r.json())
    assert (
        c.post(srv.url, json={"jsonrpc": "2.0", "id": "alive", "method": "ping"}, headers=h).json()[
            "result"
        ]
        == {}
    )


def test_http_no_leak_after_bad_input(srv, http):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(s.idle() for s in srv.app.sessions.values()):
        time.sleep(0.02)
    assert all(s.idle() for s in srv.app.sessions.values())


# --- stdio (the adapter in-process, on a pipe-like reader, so its session can be inspected) ----


@settings(deadline=None)
@given(lines=st.lists(raw_lines(), min_size=1, max_size=8))
def test_stdio_bad_input(lines):
    async def go():
        reader = asyncio.StreamReader()
        out = []
        session = Session(demo_server(), "stdio")
        task = asyncio.create_task(serve_stdio(session.server, reader, out.append, session))
        reader.feed_data(
            json.dumps(
                {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT}
            ).encode()
            + b"\n"
        )
        for line in lines:
            reader.feed_data(line + b"\n")
        reader.feed_data(b'{"jsonrpc":"2.0","id":"alive-check","method":"ping"}\n')
        deadline = asyncio.get_running_loop().time() + 5
        while not any(b'"alive-check"' in o for o in out):
            assert asyncio.get_running_loop().time() < deadline, "the server stopped answering"
            await asyncio.sleep(0.005)
        while not session.idle():
            assert asyncio.get_running_loop().time() < deadline, "a request never finished"
            await asyncio.sleep(0.005)
        reader.feed_eof()
        await asyncio.wait_for(task, 5)
        for o in out:
            assert o.endswith(b"\n") and o.count(b"\n") == 1
            well_formed(json.loads(o))
        assert session.core.empty() and not session.pending

    asyncio.run(go())
