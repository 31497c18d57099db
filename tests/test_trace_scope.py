"""The trace checker on exchanges outside the model's account (``mcp_inflight/trace/scope.py``):
a ``ping`` under the id of a tool call in flight, refused 409 with ``id: null``, is not a
response on no instance's stream (the false alarm ``serve --trace`` under ``probe`` gave); an
error status that hides another call's message still is one."""

from __future__ import annotations

import asyncio
import json

import pytest

from mcp_inflight.impl.http import create_app
from mcp_inflight.trace import replay as R
from mcp_inflight.trace.format import read
from mcp_inflight.trace.online import Monitor
from mcp_inflight.trace.tap import traced
from support.asgi import HEADERS, Exchange, open_session, request
from support.http_server import build_server
from support.sessions import tool_call


async def _duplicate_ping(path) -> tuple[int | None, dict]:
    """A session: ``hold`` under id 21, a ``ping`` under 21 (refused), the hold released."""
    server = build_server()
    app = traced(create_app(server, "/mcp"), trace=str(path))
    h = await open_session(app)
    body = json.dumps(tool_call(21, "hold", {"label": "a"}, token="t")).encode()
    held = Exchange(app, "POST", {**HEADERS, **h}, body).start()
    for _ in range(200):
        if "a" in server.release:
            break
        await asyncio.sleep(0.005)
    ping = await request(app, msg={"jsonrpc": "2.0", "id": 21, "method": "ping"}, headers=h)
    await request(app, msg=tool_call(22, "release", {"label": "a"}), headers=h)
    await held.done()
    await request(app, "DELETE", headers=h)
    app.trace_writer.close()
    return ping.status, json.loads(ping.body)


def _replay(path, capsys) -> tuple[int, str]:
    code = R.run([str(path)])
    return code, capsys.readouterr().out


def test_a_duplicate_ping_refused_with_id_null_replays_clean(tmp_path, capsys, monkeypatch):
    path = tmp_path / "t.jsonl"
    status, body = asyncio.run(_duplicate_ping(path))
    assert status == 409 and body["id"] is None and body["error"]["data"] == {"id": 21}
    code, out = _replay(path, capsys)
    assert code == 0, out
    m = Monitor()
    for ev in read(path):
        m.feed(ev)
    assert m.violations == 0 and m.steps > 0, m.summary()
    # without the scope (every exchange in the model's account) the false alarm comes back
    monkeypatch.setattr(R, "within", lambda events: list(range(len(events))))
    code, out = _replay(path, capsys)
    assert code == 1 and "response id=? seen on no instance's stream" in out


PROGRESS = {
    "jsonrpc": "2.0",
    "method": "notifications/progress",
    "params": {"progressToken": "t", "progress": 1},
}


def test_an_error_status_does_not_hide_a_misrouted_response(tmp_path, capsys):
    """A broken adapter answers a POST 404 and writes another call's progress on it: only the
    transport's own answer (an error under id null) is outside the account."""
    path = tmp_path / "t.jsonl"
    asyncio.run(_duplicate_ping(path))
    events = read(path)
    ping = next(
        ev["exchange"]
        for ev in events
        if ev["kind"] == "message" and ev["message"].get("method") == "ping"
    )
    forged = []
    for ev in events:
        forged.append(ev)
        if ev["exchange"] == ping and ev["kind"] == "status":
            ev["status"] = 404
            forged.append({**ev, "kind": "message", "message": PROGRESS})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(ev) + "\n" for ev in forged))
    code, out = _replay(bad, capsys)
    assert code == 1 and "progress/log seen on no instance's stream" in out, out
    m = Monitor()
    for ev in forged:
        m.feed(ev)
    assert m.violations == 1


@pytest.mark.parametrize("status", [404, 413])
def test_the_transport_answers_under_id_null_are_outside(status):
    from mcp_inflight.trace.scope import outside

    assert outside(status, call=True) and outside(409, call=False)
    assert not outside(409, call=True) and not outside(200, call=False)


def test_a_deeply_nested_id_leaves_its_session_unchecked_not_the_check_dead():
    """A tool call under an id nested deeper than the mapping can key (the bad-input tests send
    one): the session is counted unchecked and the check goes on with the others."""
    from mcp_inflight.trace.format import C2S, event

    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    m = Monitor()
    m.feed(event("message", 1, C2S, "s", message=tool_call(deep, "echo", {})))
    m.feed(event("message", 2, C2S, "s", message=tool_call(1, "echo", {})))
    m.feed(event("message", 3, C2S, "t", message=tool_call(1, "echo", {})))
    assert m.unchecked == 1 and m.violations == 0 and "t" in m._sessions


def test_a_call_whose_params_are_not_an_object_leaves_its_session_unchecked():
    from mcp_inflight.trace.format import C2S, S2C, event

    m = Monitor()
    bad = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}
    m.feed(event("message", 1, C2S, "s", message=bad))
    m.feed(event("message", 1, S2C, "s", message=PROGRESS))  # not the plain call-response shape
    m.feed(event("message", 1, S2C, "s", message={"jsonrpc": "2.0", "id": 1, "result": {}}))
    m.feed(event("close", 1, S2C, "s", by="server"))
    assert m.unchecked == 1 and m.violations == 0
