"""The official ``mcp`` 2.3.0 client against ``mcp-inflight serve``, over Streamable HTTP (a real
server process on a loopback port) and over stdio (a real subprocess), in ``legacy`` mode and in
the default ``auto`` mode (which tries 2026-07-28 ``server/discover`` first)."""

import asyncio
import os
import re
import subprocess
import sys

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from support import oracle

SERVE = [sys.executable, "-m", "mcp_inflight", "serve"]


@pytest.fixture(scope="module")
def http_url():
    argv, o = oracle.traced_argv(SERVE + ["--port", "0"], "serve")  # checked by the model
    proc = oracle.watch(o, subprocess.Popen(argv, stderr=subprocess.PIPE, text=True))
    try:
        line = proc.stderr.readline()
        m = re.search(r"listening on (http://\S+)", line)
        assert m, f"serve did not start: {line!r}"
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _stdio(o: oracle.Oracle):
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_inflight", "serve", "--transport", "stdio", "--trace", str(o.path)],
        env=dict(os.environ),
    )


async def _scenario(target, mode):
    progress = []
    logs = []
    asked = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    async def on_log(params):
        logs.append(params.data)

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    client = Client(
        target, mode=mode, elicitation_callback=on_elicit, logging_callback=on_log, log_level="info"
    )
    async with client:
        tools = await client.list_tools()
        assert {"slow", "ask", "echo"} <= {t.name for t in tools.tools}
        res = await client.call_tool(
            "slow", {"label": "L1", "steps": 3, "delay": 0.01}, progress_callback=on_progress
        )
        assert res.content[0].text == "done:L1"
        assert [p for p, _, _ in progress] == [1, 2, 3]
        assert all("L1" in m for _, _, m in progress)
        res = await client.call_tool("ask", {"label": "Q", "delay": 0.01})
        assert res.content[0].text == "ask:Q:accept"
        assert len(asked) == 1 and "Q" in asked[0]
        res = await client.call_tool("echo", {"text": "hi"})
        assert res.content[0].text == "hi"
        version = client.session.protocol_version
    await asyncio.sleep(0.05)
    assert any("L1" in str(x) for x in logs), logs
    return version


@pytest.mark.parametrize("mode,expected", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_official_client_over_http(http_url, mode, expected):
    assert asyncio.run(_scenario(http_url, mode)) == expected


@pytest.mark.parametrize("mode,expected", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_official_client_over_stdio(mode, expected):
    o = oracle.trace_file("serve --transport stdio")  # its trace, checked by the model
    try:
        assert asyncio.run(_scenario(_stdio(o), mode)) == expected
    finally:
        o.retire()  # the client has stopped the server


def test_serve_help_and_fixture_errors(capsys):
    from mcp_inflight.serve import run as serve

    with pytest.raises(SystemExit) as e:
        serve(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--transport" in out and "--fixtures" in out
    assert serve(["--fixtures", "no_such_fixture"]) == 2
    err = capsys.readouterr().err
    assert "no fixture module 'mcp_inflight.fixtures.no_such_fixture'" in err
    # only the modules that provide a server are offered, not the parts they share
    assert "available: conformance, probe_contract, tasks" in err
    assert serve(["--path", "mcp"]) == 2
    assert "--path" in capsys.readouterr().err


def test_serve_runs_with_its_public_uvicorn_settings(http_url):
    """``uvicorn_settings()`` is what ``serve`` runs with (a benchmark reuses it): valid uvicorn
    settings, and the running server shows them (no ``server`` or ``date`` header)."""
    import httpx
    import uvicorn

    from mcp_inflight.serve import uvicorn_settings

    settings = uvicorn_settings()
    config = uvicorn.Config(lambda scope, receive, send: None, **settings)
    assert (config.server_header, config.date_header, config.access_log) == (False, False, False)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    r = httpx.post(
        http_url,
        json=body,
        headers={
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
        },
    )
    assert r.status_code == 200 and "server" not in r.headers and "date" not in r.headers, r.headers


def test_runtime_requirements_cover_what_serve_and_probe_import():
    """Every package ``mcp-inflight serve``, ``mcp-inflight probe`` and the runtime import (at
    module level or inside a function) is a runtime requirement of the distribution, not only
    a test extra: an installed ``mcp-inflight`` runs them without the test extras."""
    import ast
    import importlib.metadata as md
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    declared = {Requirement(r).name.lower().replace("_", "-") for r in project["dependencies"]}
    dists = md.packages_distributions()
    # the probe package; its pytest plugin runs only inside pytest, which brings pytest
    probe = [
        p for p in sorted((root / "mcp_inflight" / "probe").glob("*.py")) if p.name != "plugin.py"
    ]
    files = [root / "mcp_inflight" / "serve.py", *probe, *sorted((root / "impl").glob("*.py"))]
    missing = {}
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top in sys.stdlib_module_names or top == "mcp_inflight":
                    continue
                names = {d.lower().replace("_", "-") for d in dists.get(top, [top])}
                if not names & declared:
                    missing.setdefault(top, set()).add(f.name)
    # the guard wraps a server of the official SDK: it imports the SDK (and anyio and
    # pydantic_core, which the SDK depends on; the guard reads bodies with the SDK's own parser)
    # only when it runs in front of one, where they are installed by definition
    for top in ("mcp", "anyio", "pydantic_core"):
        if missing.get(top, set()) <= {"guard.py", "guard_stdio.py"}:
            missing.pop(top, None)
    # Redis is the optional extra ``redis``, imported only when serving with --redis
    extra = {Requirement(r).name for r in project["optional-dependencies"]["redis"]}
    if "redis" in extra and missing.get("redis", set()) <= {
        "serve.py",
        "redis_store.py",
        "redis_resp.py",
        "redis_http.py",
        "redis_tasks.py",
    }:
        missing.pop("redis", None)
    assert missing == {}, f"imported but not in [project] dependencies: {missing}"


def test_official_client_after_session_expiry():
    """A session idle past ``session_idle_timeout`` gets 404 ("Session not found", as the official
    SDK answers); the official client reports it, and a new client opens a new session."""
    import anyio
    from mcp.shared.exceptions import MCPError

    from support.http_server import start

    srv = start(session_idle_timeout=0.5)
    seen = []
    try:

        async def main():
            async with Client(srv.url, mode="legacy") as client:
                r = await client.call_tool("echo", {"text": "one"})
                assert r.content[0].text == "one"
                seen.append(set(srv.app.sessions))
                # an open standalone GET stream keeps a session (as in the official SDK): end it
                # from the server's side, as a dropped connection would, then stay idle
                for s in list(srv.app.sessions.values()):
                    if s.standalone is not None:
                        s.standalone.get_loop().call_soon_threadsafe(s.standalone.set_result, None)
                await anyio.sleep(1.5)  # past the expiry: no request meanwhile
                try:
                    await client.call_tool("echo", {"text": "two"})
                except MCPError as e:
                    seen.append(str(e))
            async with Client(srv.url, mode="legacy") as client:
                r = await client.call_tool("echo", {"text": "three"})
                assert r.content[0].text == "three"
                seen.append(set(srv.app.sessions))

        try:
            anyio.run(main)
        except BaseException as e:  # the old session's DELETE on exit may fail: 404
            if "Session not found" not in repr(e):
                raise
    finally:
        srv.stop()
    assert len(seen[0]) == 1 and "Session not found" in seen[1], seen
    assert len(seen[2]) == 1 and seen[2] != seen[0], seen
