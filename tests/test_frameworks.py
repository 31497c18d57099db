"""The guard in front of the Python frameworks MCP servers are built on, each served on a loopback
port as its author would run it (``tests/support/framework_servers.py``), bare and guarded.

What each framework does with a second request under an in-flight id is measured, not assumed:

* the probe (``mcp_inflight.probe``) where it can judge the framework (a stateful session whose
  POSTs stream progress: FastMCP's default mode);
* where it cannot (stateless servers: no session; servers that answer a POST with one JSON body:
  no progress to route), the probe's own reason is checked, and the plain case is measured
  directly: A calls a slow tool, B calls it under A's id while A runs, and what each POST
  receives is read back (each call names itself in its arguments, so a result says whose it is).

The frameworks' own features (auth, lifespan, other routes) and a tool that elicits twice are
checked through the guard with the official client.

``fastapi-mcp``, ``mcp-proxy`` and ``gradio``'s MCP server run on ``mcp`` 1.x only (they use the
1.x low-level server API); their tests run in an environment of the ``test-mcp1`` extra
and are skipped, saying so, beside ``mcp`` 2.x.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version

import httpx
import pytest

from mcp_inflight import probe as P
from mcp_inflight.impl import sse
from support.framework_servers import TOKEN
from support.servers import start

HERE = os.path.dirname(__file__)
SERVERS = os.path.join(HERE, "support", "framework_servers.py")
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MCP_MAJOR = int(version("mcp").split(".")[0])

#: What the probe finds on the official SDK's server without the guard (README's table); the
#: frameworks on its session manager are measured against it.
SDK_DEFECTS = {
    "misrouted_notification",
    "misrouted_server_request",
    "misrouted_response",
    "lost_response",
    "cancel_misdirected",
    "collateral_close",
    "id_type_confusion",
}


def _installed(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def needs(dist: str, mcp_major: int):
    """Skip unless ``dist`` is installed beside ``mcp`` of the major version it runs on."""
    have = _installed(dist)
    if have is None:
        extra = "frameworks" if mcp_major == 2 else "test-mcp1"
        return pytest.mark.skip(reason=f"{dist} is not installed (the {extra} extra)")
    return pytest.mark.skipif(
        MCP_MAJOR != mcp_major,
        reason=f"{dist} {have} runs on mcp {mcp_major}.x only (installed: mcp {version('mcp')}); "
        f"its tests run in an environment of the test-mcp1 extra",
    )


# --- running the servers -----------------------------------------------------------------------


def stop(proc) -> None:
    """Stop a server; a bare one may hold a POST that never gets its response, which keeps
    uvicorn's graceful shutdown waiting, so it is killed after a few seconds."""
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@contextlib.contextmanager
def served(framework: str, *flags: str):
    proc, url = start([sys.executable, SERVERS, framework, *flags])
    try:
        yield url
    finally:
        stop(proc)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def proxied(guarded: bool):
    """``mcp-proxy`` (or the guarded bridge) in front of the stdio backend: the MCP URL."""
    import httpx

    port = _free_port()
    if guarded:
        head = [sys.executable, "-m", "mcp_inflight.frameworks.mcp_proxy"]
    else:
        head = [os.path.join(os.path.dirname(sys.executable), "mcp-proxy")]
    argv = [*head, "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING"]
    argv += ["--", sys.executable, SERVERS, "backend"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/status", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"the bridge did not start: {' '.join(argv)}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


# --- the probe, by URL -------------------------------------------------------------------------

SLOW = {"label": "probe", "steps": 6, "delay": 0.25}
ASK = {"label": "probe", "delay": 1.0}


def probe_url(url: str, headers: dict | None = None) -> dict:
    """The probe's report on ``url`` (as ``mcp-inflight probe URL --json`` prints it); a target
    the probe cannot test gives ``{"status": "untested", "reason": ...}``."""
    from mcp_inflight.probe.recording import Target
    from mcp_inflight.probe.scenarios import probe

    t = Target(
        url=url,
        tool="slow",
        args=SLOW,
        elicit_tool="ask",
        elicit_args=ASK,
        headers=dict(headers or {}),
    )
    try:
        doc = asyncio.run(probe(t, P.SCENARIOS))
    except P.CannotTest as exc:
        return {"status": "untested", "reason": str(exc)}
    doc.pop("records")
    return doc


def found(doc: dict) -> set[str]:
    return {f["class"] for s in doc["scenarios"] for f in s["findings"]}


# --- the plain case, measured directly ---------------------------------------------------------

ACCEPT = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}


def _messages(resp) -> list:
    if resp.headers.get("content-type", "").startswith("application/json"):
        return [resp.json()]
    out = []
    for ev in sse.Decoder().feed(resp.content):
        with contextlib.suppress(ValueError):
            out.append(json.loads(ev.data))
    return out


def whose(status, messages) -> str:
    """What one POST got: ``refused`` (409, -32600), ``nothing`` (no response before the
    deadline), the label of the call whose result it carries (``done:A`` names A), or
    ``other: <text>`` for a result that names neither (its text shown, so a failing
    comparison says what the framework answered)."""
    if status is None:
        return "nothing"
    for m in messages:
        if "id" in m and "method" not in m:
            if "error" in m:
                return "refused" if status == 409 and m["error"]["code"] == -32600 else "error"
            blocks = m["result"].get("content") or [{}]
            text = json.dumps(blocks[0].get("text", ""))
            for label in ("A", "B"):
                if f"done:{label}" in text or f'\\"done\\": \\"{label}\\"' in text:
                    return label
            return f"other: {text[:300]}"
    return "no response"


def duplicate_pair(url, args, headers=None, ids=(5, 5), gap=0.3, limit=5.0, cancel=None) -> dict:
    """Open a session (if the server gives one), send A (``slow`` with label A), and while it
    runs B (label B), under ``ids`` (the same id by default); ``{"session": bool, "A": ...,
    "B": ...}`` with :func:`whose` of each POST and the progress tokens each POST's stream
    carried.  ``cancel``: seconds after B to send ``notifications/cancelled`` for A's id."""
    import httpx

    async def main():
        h = {**ACCEPT, **(headers or {})}
        async with httpx.AsyncClient(timeout=30) as c:
            r = await c.post(url, headers=h, json={"jsonrpc": "2.0", "id": 0, **_m("initialize")})
            r.raise_for_status()
            sid = r.headers.get("mcp-session-id")
            if sid:
                h["Mcp-Session-Id"] = sid
            await c.post(url, headers=h, json={"jsonrpc": "2.0", **_m("notifications/initialized")})

            async def post(label):
                params = {"name": "slow", "arguments": {**args, "label": label}}
                params["_meta"] = {"progressToken": label}
                rid = ids[0] if label == "A" else ids[1]
                msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
                try:
                    async with asyncio.timeout(limit):
                        resp = await c.post(url, headers=h, json=msg)
                except TimeoutError:
                    return {"got": "nothing", "tokens": []}
                ms = _messages(resp)
                tokens = sorted(
                    {
                        m["params"]["progressToken"]
                        for m in ms
                        if m.get("method") == "notifications/progress"
                    }
                )
                return {"got": whose(resp.status_code, ms), "tokens": tokens}

            a = asyncio.create_task(post("A"))
            await asyncio.sleep(gap)
            b = asyncio.create_task(post("B"))
            if cancel is not None:
                await asyncio.sleep(cancel)
                note = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
                note["params"] = {"requestId": ids[0]}
                await c.post(url, headers=h, json=note)
            return {"session": sid is not None, "A": await a, "B": await b}

    def _m(method):
        if method == "initialize":
            return {
                "method": method,
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        return {"method": method}

    return asyncio.run(main())


# --- the official client -----------------------------------------------------------------------


def official(url: str, headers: dict, calls: list[tuple[str, dict]]) -> dict:
    """Each call of ``calls`` made with the official client (answering every elicitation
    with accept), in one session: ``{"tools": [...], name: text or "error: ..."}``."""
    import anyio

    async def run(session):
        out = {"tools": sorted(t.name for t in (await session.list_tools()).tools)}
        for name, args in calls:
            r = await session.call_tool(name, args)
            text = r.content[0].text if r.content else ""
            failed = getattr(r, "is_error", None) or getattr(r, "isError", False)
            out[name] = f"error: {text}" if failed else text
        return out

    if MCP_MAJOR >= 2:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import ElicitResult

        async def on_elicit(context, params):
            return ElicitResult(action="accept", content={"value": True})

        async def main():
            transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))
            async with Client(transport, mode="legacy", elicitation_callback=on_elicit) as c:
                return await run(c)

    else:
        import httpx
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.types import ElicitResult

        async def on_elicit(context, params):
            return ElicitResult(action="accept", content={"ok": True})

        async def main():
            http = httpx.AsyncClient(headers=headers, timeout=30)
            async with streamable_http_client(url, http_client=http) as (read, write, _):
                async with ClientSession(read, write, elicitation_callback=on_elicit) as s:
                    await s.initialize()
                    return await run(s)

    return anyio.run(main)


def base(url: str) -> str:
    """The server's root: ``http://host:port``."""
    return "/".join(url.split("/", 3)[:3])


# =============================================================================================
# FastMCP (the fastmcp package), stateful and stateless
# =============================================================================================

fastmcp = needs("fastmcp", 2)


@fastmcp
@pytest.mark.slow
def test_fastmcp_stateful_bare_misroutes_and_guarded_is_clean():
    with served("fastmcp") as url:
        bare = probe_url(url, AUTH)
    with served("fastmcp", "--guard") as url:
        guarded = probe_url(url, AUTH)
    with served("fastmcp", "--run-guarded") as url:  # mcp.run(..., middleware=[Guard])
        run_guarded = probe_url(url, AUTH)
    assert bare["status"] == "defects" and found(bare) == SDK_DEFECTS, bare
    for doc in (guarded, run_guarded):
        assert doc["status"] == "clean" and doc["exit"] == 0, doc
        judged = {s["scenario"] for s in doc["scenarios"] if s["status"] == "judged"}
        assert judged == set(P.SCENARIOS) - {"replay_routing"}, doc  # no event store
        refusals = [s["refusal"] for s in doc["scenarios"] if s["refusal"]]
        assert refusals and all(r["status"] == 409 and r["code"] == -32600 for r in refusals)


@fastmcp
def test_fastmcp_features_and_two_elicitations_through_the_guard():
    import httpx

    calls = [("ask_twice", {"label": "x"}), ("lifespan_started", {}), ("echo", {"text": "e"})]
    for how in ("--guard", "--run-guarded"):
        with served("fastmcp", how) as url:
            got = official(url, AUTH, calls)
            health = httpx.get(base(url) + "/health")
            unauthorized = httpx.post(url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1})
        assert got["ask_twice"] == "ask_twice:x:accept:accept", how
        assert got["lifespan_started"] == "true" and got["echo"] == "e"
        assert health.status_code == 200 and health.json()["framework"] == "fastmcp"
        assert unauthorized.status_code == 401  # FastMCP's own bearer auth (no session: on)


@fastmcp
def test_fastmcp_stateless_serves_each_post_on_its_own_with_or_without_the_guard():
    args = {"steps": 4, "delay": 0.25}
    results = {}
    for flags in ((), ("--guard",)):
        with served("fastmcp", "--stateless", *flags) as url:
            report = probe_url(url, AUTH)
            pair = duplicate_pair(url, args, AUTH)
            elicit = official(url, AUTH, [("ask_twice", {"label": "x"})])
        assert report["status"] == "untested" and report["reason"].startswith("no session")
        results[flags] = (pair, elicit)
    bare, guarded = results[()], results[("--guard",)]
    # no session: no table shared between POSTs, so the duplicate is served as a request of
    # its own, each POST with its own progress and result, and the guard has nothing to guard
    assert bare[0] == {
        "session": False,
        "A": {"got": "A", "tokens": ["A"]},
        "B": {"got": "B", "tokens": ["B"]},
    }
    assert guarded == bare
    # FastMCP's stateless mode cannot send a server-to-client request, guarded or not
    assert bare[1]["ask_twice"].startswith("error: ") and "back-channel" in bare[1]["ask_twice"]


# =============================================================================================
# fastapi-mcp: FastAPI endpoints as tools, the SDK's session manager in JSON-response mode
# =============================================================================================

fastapi_mcp = needs("fastapi-mcp", 1)


@fastapi_mcp
@pytest.mark.slow
def test_fastapi_mcp_bare_gives_b_the_result_of_a_and_the_guard_refuses_b():
    args = {"delay": 1.0}
    with served("fastapi-mcp") as url:
        report = probe_url(url, AUTH)
        bare = duplicate_pair(url, args, AUTH)
    with served("fastapi-mcp", "--guard") as url:
        guarded = duplicate_pair(url, args, AUTH)
    assert report["status"] == "untested" and "JSON body" in report["reason"], report
    # A's POST never gets a response; B's POST gets A's result
    assert bare == {"session": True, "A": {"got": "nothing", "tokens": []}, "B": _got("A")}
    assert guarded == {"session": True, "A": _got("A"), "B": _got("refused")}


@fastapi_mcp
@pytest.mark.slow
def test_fastapi_mcp_bare_crosses_7_and_quoted_7_and_the_guard_serves_both():
    args = {"delay": 1.0}
    with served("fastapi-mcp") as url:
        bare = duplicate_pair(url, args, AUTH, ids=(7, "7"))
    with served("fastapi-mcp", "--guard") as url:
        guarded = duplicate_pair(url, args, AUTH, ids=(7, "7"), limit=8.0)
    # two different ids; the SDK keys both as "7": A's POST is never answered, B's gets A's
    assert bare == {"session": True, "A": _got("nothing"), "B": _got("A")}
    # guarded: both admitted; B waits at the guard until A has left the SDK, then is served
    assert guarded == {"session": True, "A": _got("A"), "B": _got("B")}


@fastapi_mcp
@pytest.mark.slow
def test_fastapi_mcp_bare_lets_a_cancel_meant_for_a_stop_b():
    args = {"delay": 1.0}
    with served("fastapi-mcp") as url:
        bare = duplicate_pair(url, args, AUTH, cancel=0.2, limit=4.0)
    # the cancel names A's id; the SDK's in-flight entry under it is B's: B stops with an error
    # (-32800), A's POST is never answered
    assert bare == {"session": True, "A": _got("nothing"), "B": _got("error")}


@pytest.mark.xfail(
    strict=True,
    raises=httpx.RemoteProtocolError,
    reason="the guard drops the SDK's JSON body for a cancelled request after its headers "
    "(Content-Length) went out: a truncated HTTP response (JSON-response mode: fastapi-mcp, "
    "mcp-proxy)",
)
@pytest.mark.skipif(MCP_MAJOR < 2, reason="the official SDK's test server is on mcp 2.x")
def test_guard_in_json_response_mode_answers_a_cancelled_post_whole():
    import httpx

    from support.servers import sdk_server

    async def main(url):
        h = dict(ACCEPT)
        async with httpx.AsyncClient(timeout=30) as c:
            init = {"protocolVersion": "2025-11-25", "capabilities": {}}
            init["clientInfo"] = {"name": "t", "version": "1"}
            r = await c.post(
                url,
                headers=h,
                json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            )
            h["Mcp-Session-Id"] = r.headers["mcp-session-id"]
            await c.post(
                url, headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            msg = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
            msg["params"] = {"name": "slow", "arguments": {"label": "A", "steps": 4, "delay": 0.25}}
            a = asyncio.create_task(c.post(url, headers=h, json=msg))
            await asyncio.sleep(0.4)
            note = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            note["params"] = {"requestId": 5}
            await c.post(url, headers=h, json=note)
            async with asyncio.timeout(5):
                return await a

    proc, url = sdk_server("--guard", "--json-response")
    try:
        resp = asyncio.run(main(url))
    finally:
        stop(proc)
    # without the guard the SDK answers {"error": {"code": -32800, ...}}: a whole response
    assert resp.status_code == 200 and resp.json()["id"] == 5


def _got(who):
    return {"got": who, "tokens": []}


@fastapi_mcp
def test_fastapi_mcp_routes_auth_and_lifespan_untouched_by_the_guard():
    import httpx

    with served("fastapi-mcp", "--guard") as url:
        got = official(url, AUTH, [("get_item", {"item": 3}), ("slow", {"label": "A", "delay": 0})])
        route = httpx.get(base(url) + "/items/4")
        docs = httpx.get(base(url) + "/openapi.json")
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
        unauthorized = httpx.post(url, headers=ACCEPT, json=init)
    assert got["tools"] == ["get_item", "slow"]
    assert json.loads(got["get_item"]) == {"item": 3, "started": True}
    assert route.status_code == 200 and route.json()["item"] == 4
    assert docs.status_code == 200 and "/items/{item}" in docs.json()["paths"]
    assert unauthorized.status_code == 401  # fastapi-mcp's auth dependency


# =============================================================================================
# mcp-proxy: a stdio server bridged to Streamable HTTP (JSON-response mode)
# =============================================================================================

mcp_proxy = needs("mcp-proxy", 1)


@mcp_proxy
@pytest.mark.slow
def test_mcp_proxy_bare_gives_b_the_result_of_a_and_the_guarded_bridge_refuses_b():
    args = {"steps": 4, "delay": 0.25}
    with proxied(False) as url:
        report = probe_url(url)
        bare = duplicate_pair(url, args)
    with proxied(True) as url:
        guarded = duplicate_pair(url, args)
    assert report["status"] == "untested" and "JSON body" in report["reason"], report
    assert bare == {"session": True, "A": _got("nothing"), "B": _got("A")}
    assert guarded == {"session": True, "A": _got("A"), "B": _got("refused")}


@mcp_proxy
@pytest.mark.slow
def test_mcp_proxy_bare_crosses_7_and_quoted_7_and_the_guarded_bridge_serves_both():
    args = {"steps": 4, "delay": 0.25}
    with proxied(False) as url:
        bare = duplicate_pair(url, args, ids=(7, "7"))
    with proxied(True) as url:
        guarded = duplicate_pair(url, args, ids=(7, "7"), limit=8.0)
    assert bare == {"session": True, "A": _got("nothing"), "B": _got("A")}
    assert guarded == {"session": True, "A": _got("A"), "B": _got("B")}


@mcp_proxy
def test_mcp_proxy_status_tools_and_elicitation_the_same_through_the_guard():
    import httpx

    calls = [("echo", {"text": "e"}), ("ask_twice", {"label": "x"})]
    seen = {}
    for guarded in (False, True):
        with proxied(guarded) as url:
            seen[guarded] = official(url, {}, calls)
            seen[guarded]["status"] = httpx.get(base(url) + "/status").status_code
    assert seen[True] == seen[False]
    assert seen[True]["echo"] == "e" and seen[True]["status"] == 200
    # the bridge's client toward the stdio server answers no elicitation: its tool fails the
    # same way through the guard as without it
    assert seen[True]["ask_twice"].startswith("error: ")


# =============================================================================================
# gradio: its MCP server is the SDK's session manager in stateless mode
# =============================================================================================

gradio = needs("gradio", 1)


@gradio
@pytest.mark.slow
def test_gradio_serves_each_post_on_its_own_with_or_without_the_guard():
    import httpx

    seen = {}
    for flags in ((), ("--guard",)):
        with served("gradio", *flags) as url:
            report = probe_url(url)
            pair = duplicate_pair(url, {"delay": 1.0})
            health = httpx.get(base(url) + "/health").status_code
            page = httpx.get(base(url) + "/").status_code
        assert report["status"] == "untested" and report["reason"].startswith("no session")
        seen[flags] = (pair, health, page)
    assert seen[()][0]["session"] is False
    assert seen[()][0]["A"]["got"] == "A" and seen[()][0]["B"]["got"] == "B"
    assert seen[()][0]["A"]["tokens"] == ["A"] and seen[()][0]["B"]["tokens"] == ["B"]
    assert seen[("--guard",)] == seen[()] and seen[()][1:] == (200, 200)
