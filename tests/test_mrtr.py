"""2026-07-28 multi round-trip requests: a handler that asks the client several times in one call.

The official ``mcp`` client in ``auto`` mode, over real HTTP on loopback and over stdio with a
real subprocess, completes a tool that elicits twice, samples once and lists the roots once,
each question asked once.  Then the ``requestState`` checks of :mod:`impl.request_state`, one test
per check; each names the check it needs and the outcome it would get without it."""

from __future__ import annotations

import asyncio
import base64
import json
import pathlib
import sys

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_inflight.impl.request_state import (
    RequestStates,
    Sealer,
    StateLimit,
    StateRefused,
    call_binding,
)
from mcp_inflight.impl.server import MODERN, Answered, Server, Session

SUPPORT = pathlib.Path(__file__).parent / "support"

# --- the official client, end to end ----------------------------------------------------------


async def _interview(target, mode="auto"):
    asked: list[tuple[str, str]] = []

    async def on_elicit(context, params):
        asked.append(("elicit", params.message))
        value = "Ada" if "name" in params.message else "teal"
        return types.ElicitResult(action="accept", content={"value": value})

    async def on_sample(context, params):
        asked.append(("sample", params.messages[0].content.text))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="teal as the sea"),
            model="test",
        )

    async def on_roots(context):
        asked.append(("roots", ""))
        return types.ListRootsResult(
            roots=[types.Root(uri="file:///a"), types.Root(uri="file:///b")]
        )

    client = Client(
        target,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
    )
    async with client:
        res = await client.call_tool("interview", {"topic": "T"})
        version = client.session.protocol_version
    return version, res.content[0].text, asked


_ASKED = [
    ("elicit", "T: your name?"),
    ("elicit", "T: Ada, your colour?"),
    ("sample", "a line on teal"),
    ("roots", ""),
]


def test_official_client_auto_over_http_completes_two_elicitations_a_sampling_and_roots():
    """Each question is asked once, in order, and the result holds every answer: the answers of
    earlier rounds come back in requestState (without it the first question is asked anew on
    every round until the client gives up after 10)."""
    from support.http_server import start
    from support.mrtr_server import build

    srv = start(build())
    try:
        version, text, asked = asyncio.run(_interview(srv.url))
    finally:
        srv.stop()
    assert version == MODERN
    assert text == "Ada|teal|teal as the sea|2"
    assert asked == _ASKED


def test_official_client_auto_over_stdio_completes_two_elicitations_a_sampling_and_roots():
    params = StdioServerParameters(
        command=sys.executable, args=[str(SUPPORT / "mrtr_server.py")], env=None
    )
    version, text, asked = asyncio.run(_interview(params))
    assert version == MODERN
    assert text == "Ada|teal|teal as the sea|2"
    assert asked == _ASKED


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_official_client_legacy_completes_two_elicitations_a_sampling_and_roots(transport):
    """2025-11-25 (the client's ``legacy`` mode): the four questions go out as server-to-client
    requests on the call's own stream, each under its own id minted by the core, and come back
    answered in order."""
    from support.http_server import start
    from support.mrtr_server import build

    if transport == "http":
        srv = start(build())
        try:
            version, text, asked = asyncio.run(_interview(srv.url, mode="legacy"))
        finally:
            srv.stop()
    else:
        params = StdioServerParameters(
            command=sys.executable, args=[str(SUPPORT / "mrtr_server.py")], env=None
        )
        version, text, asked = asyncio.run(_interview(params, mode="legacy"))
    assert version == "2025-11-25"
    assert text == "Ada|teal|teal as the sea|2"
    assert asked == _ASKED


# --- the session: a refused state never reaches the handler -----------------------------------


class _Outlet:
    def __init__(self):
        self.sent: list[dict] = []
        self.closed = asyncio.Event()

    def send(self, msg):
        self.sent.append(msg)

    def close(self):
        self.closed.set()


def _counting_server(states: RequestStates | None = None):
    server = Server("t", request_states=states)
    server.runs = 0

    @server.tool()
    async def two(ctx, x: int) -> str:
        server.runs += 1
        a = await ctx.elicit("first?")
        b = await ctx.elicit("second?")
        return f"{x}:{a['content']['v']}:{b['content']['v']}"

    @server.tool()
    async def forever(ctx) -> str:
        while True:
            await ctx.elicit("again?")

    return server


_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


async def _call(server, rid, name, args, state=None, responses=None, method="tools/call"):
    """One 2026-07-28 call on its own session (as one POST): the reply message."""
    params: dict = {"name": name, "arguments": args, "_meta": _META}
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    session = Session(server, "http", MODERN)
    out = _Outlet()
    arrival = session.request(
        {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, out
    )
    if isinstance(arrival, Answered):
        return arrival.reply
    await asyncio.wait_for(out.closed.wait(), 5)
    return out.sent[-1]


def _answer(v):
    return {"action": "accept", "content": {"v": v}}


def test_rounds_through_the_session_and_a_refused_state_never_runs_the_handler():
    async def go():
        server = _counting_server()
        r1 = (await _call(server, 1, "two", {"x": 7}))["result"]
        assert r1["resultType"] == "input_required"
        (k1,) = r1["inputRequests"]
        r2 = (await _call(server, 2, "two", {"x": 7}, r1["requestState"], {k1: _answer("a")}))[
            "result"
        ]
        (k2,) = r2["inputRequests"]
        assert k2 != k1 and r2["inputRequests"][k2]["params"]["message"] == "second?"
        runs = server.runs
        # the same state for another call (other arguments): refused before the handler runs
        bad = await _call(server, 3, "two", {"x": 8}, r2["requestState"], {k2: _answer("b")})
        assert bad["error"]["code"] == -32602 and bad["error"]["data"] == {"reason": "call"}
        assert server.runs == runs
        done = await _call(server, 4, "two", {"x": 7}, r2["requestState"], {k2: _answer("b")})
        assert done["result"]["content"][0]["text"] == "7:a:b"
        # the same state again: replayed
        again = await _call(server, 5, "two", {"x": 7}, r2["requestState"], {k2: _answer("c")})
        assert again["error"]["data"] == {"reason": "replayed"} and server.runs == runs + 1

    asyncio.run(go())


def test_answers_without_a_state_or_for_unasked_keys_are_not_taken():
    """The retry's answers count only for the keys its state says were asked last round: a
    first call's inputResponses, or an answer to a question not yet asked, is not used (without
    that rule the handler would run to its end on answers nobody asked for)."""

    async def go():
        server = _counting_server()
        pre = {"elicitation/create#1": _answer("a"), "elicitation/create#2": _answer("b")}
        r1 = (await _call(server, 1, "two", {"x": 1}, None, pre))["result"]
        assert r1["resultType"] == "input_required"
        assert list(r1["inputRequests"]) == ["elicitation/create#1"]
        r2 = (await _call(server, 2, "two", {"x": 1}, r1["requestState"], pre))["result"]
        assert list(r2["inputRequests"]) == ["elicitation/create#2"]

    asyncio.run(go())


def test_a_method_handler_gets_rounds_too_and_keeps_a_state_of_its_own():
    """A registered method handler (here ``prompts/get``) asks twice over two rounds like a
    tool; a ``requestState`` that is not the runtime's reaches it untouched (the handler owns
    it, as the conformance fixture's does), while a forged runtime state is refused before it
    runs."""

    async def go():
        server = Server("t", capabilities={"prompts": {}})
        seen = []

        @server.method("prompts/get")
        async def get(ctx, params):
            seen.append(params.get("requestState"))
            if params.get("requestState") == "own-state":
                return {"messages": []}
            a = await ctx.elicit("first?")
            b = await ctx.elicit("second?")
            text = f"{a['content']['v']}{b['content']['v']}"
            return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}

        get_ = {"method": "prompts/get"}
        r1 = (await _call(server, 1, "p", {}, **get_))["result"]
        (k1,) = r1["inputRequests"]
        r2 = (await _call(server, 2, "p", {}, r1["requestState"], {k1: _answer("x")}, **get_))[
            "result"
        ]
        (k2,) = r2["inputRequests"]
        r3 = await _call(server, 3, "p", {}, r2["requestState"], {k2: _answer("y")}, **get_)
        assert r3["result"]["messages"][0]["content"]["text"] == "xy"
        own = await _call(server, 4, "p", {}, "own-state", **get_)
        assert own["result"]["messages"] == [] and seen[-1] == "own-state"
        runs = len(seen)
        kind, body, tag = r2["requestState"].split(".")
        forged = await _call(server, 5, "p", {}, f"{kind}.{body}.{tag[::-1]}", **get_)
        assert forged["error"]["data"] == {"reason": "signature"} and len(seen) == runs

    asyncio.run(go())


def test_the_rounds_of_a_call_are_bounded():
    """A handler that never stops asking ends with an error after ``max_rounds`` rounds (without
    the bound the client would be asked until it gives up)."""

    async def go():
        server = _counting_server(RequestStates(max_rounds=3))
        state, key = None, None
        for rid in range(1, 4):
            r = (await _call(server, rid, "forever", {}, state, key and {key: _answer("x")}))[
                "result"
            ]
            (key,) = r["inputRequests"]
            state = r["requestState"]
        last = await _call(server, 9, "forever", {}, state, {key: _answer("x")})
        assert last["error"]["code"] == -32603 and "more than 3 rounds" in last["error"]["message"]

    asyncio.run(go())


# --- the sealing, one check per test ----------------------------------------------------------

KEY = b"k" * 32
CALL = call_binding("tools/call", {"name": "two", "arguments": {"x": 7}})


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _states(**kw):
    return RequestStates(KEY, clock=kw.pop("clock", Clock()), **kw)


def _refused(states, token, binding=CALL, responses=None) -> str:
    with pytest.raises(StateRefused) as e:
        states.resume(token, binding, responses)
    return e.value.reason


def test_a_sealed_state_resumes_with_its_answers_merged():
    """The control for the tests below: a fresh, untouched state of this call is accepted."""
    st = _states()
    token = st.issue(CALL, {"a#1": 1}, ["a#2"], 1)
    got = st.resume(token, CALL, {"a#2": 2, "other": 3})
    assert got.answers == {"a#1": 1, "a#2": 2} and got.round == 1


def test_signature_check_refuses_a_tampered_byte_and_an_altered_payload():
    """Without the MAC check the altered payload (an answer changed, re-encoded, old tag kept)
    would be accepted with the forged answer."""
    st = _states()
    token = st.issue(CALL, {"a#1": "yes"}, ["a#2"], 1)
    kind, body, tag = token.split(".")
    flipped = body[:5] + ("A" if body[5] != "A" else "B") + body[6:]
    assert _refused(st, f"{kind}.{flipped}.{tag}") == "signature"
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["answers"]["a#1"] = "no"
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    assert _refused(st, f"{kind}.{forged}.{tag}") == "signature"
    assert _refused(st, f"{kind}.{body}.{tag[:-2]}") == "signature"


def test_signature_check_refuses_another_key_and_a_shared_key_is_accepted():
    """A state sealed under another key is refused (without the MAC check it would open); two
    authorities given one secret (two processes) accept each other's states."""
    other = RequestStates(b"o" * 32, clock=Clock())
    token = other.issue(CALL, {}, ["a#1"], 1)
    assert _refused(_states(), token) == "signature"
    assert _states().resume(_states().issue(CALL, {}, ["a#1"], 1), CALL, None).round == 1
    assert _refused(RequestStates(), _states().issue(CALL, {}, [], 1)) == "signature"


def test_expiry_check_refuses_a_state_past_its_ttl():
    """Sealed validly, presented after its expiry: without the expiry check it would open."""
    clock = Clock()
    st = _states(clock=clock, ttl=60)
    token = st.issue(CALL, {}, ["a#1"], 1)
    clock.now += 60
    assert _refused(st, token) == "expired"
    clock.now -= 0.001
    assert st.resume(token, CALL, None).round == 1


def test_call_check_refuses_a_state_of_another_call():
    """A valid state of tools/call two {x: 7} presented for other arguments, another tool or
    another method: without the binding check it would resume that other call."""
    st = _states()
    for other in (
        call_binding("tools/call", {"name": "two", "arguments": {"x": 8}}),
        call_binding("tools/call", {"name": "one", "arguments": {"x": 7}}),
        call_binding("prompts/get", {"name": "two", "arguments": {"x": 7}}),
    ):
        assert _refused(st, st.issue(CALL, {}, ["a#1"], 1), other) == "call"
    # what a retry changes is not part of the call
    retry = {"name": "two", "arguments": {"x": 7}, "requestState": "s", "inputResponses": {}}
    assert call_binding("tools/call", {**retry, "_meta": {"progressToken": 1}}) == CALL


def test_replay_check_refuses_a_used_state_until_it_expires():
    """Single use: the second presentation is refused (without the nonce record it would resume
    again); the record forgets a nonce once its state has expired, and when full it refuses
    rather than forgets."""
    clock = Clock()
    st = _states(clock=clock, ttl=60, max_live=2)
    token = st.issue(CALL, {}, ["a#1"], 1)
    st.resume(token, CALL, None)
    assert _refused(st, token) == "replayed"
    st.resume(st.issue(CALL, {}, [], 1), CALL, None)
    assert _refused(st, st.issue(CALL, {}, [], 1)) == "capacity"
    clock.now += 61
    assert st.resume(st.issue(CALL, {}, [], 1), CALL, None).round == 1
    assert st.live() == 1


def test_size_checks_refuse_an_oversized_state():
    """Sealing over ``max_bytes`` raises (without the check the state would grow with every
    round); a validly sealed token over the opener's limit is refused as ``size`` (without
    the check it would open)."""
    small = _states(max_bytes=1024)
    with pytest.raises(StateLimit) as e:
        small.issue(CALL, {"a#1": "x" * 2000}, [], 1)
    assert e.value.limit == "size"
    big = _states(max_bytes=8192).issue(CALL, {"a#1": "x" * 2000}, [], 1)
    assert _refused(small, big) == "size"


def test_rounds_limit_when_sealing():
    st = _states(max_rounds=2)
    st.issue(CALL, {}, [], 2)
    with pytest.raises(StateLimit) as e:
        st.issue(CALL, {}, [], 3)
    assert e.value.limit == "rounds"


def test_malformed_tokens_are_refused():
    st = _states()
    for bad in (None, 7, "junk", "mi1.", "mi1.e30.", "mi1.!!.!!"):
        assert _refused(st, bad) in ("malformed", "signature")
    # a validly sealed object without the fields a state needs
    assert _refused(st, Sealer(KEY, "mi1").seal({"call": CALL})) == "malformed"
