"""Minimal reproduction scripts for a probe finding: standalone Python (standard library only)
that a maintainer can run against their server and paste into an issue.

:func:`script` fills one of two templates: HTTP (a 2025-11-25 session, or stateless POSTs) and
stdio (a child process).  Each sends A, waits until A is where the probe sent B, sends B under
the id the scenario names, optionally cancels A's id or closes A's connection, and prints every
message each request's stream (or the channel) carried, with times.
"""

from __future__ import annotations

import json

#: scenario -> (ids of A and B, when B is sent, then)
PLAN = {
    "duplicate_progress": ((11, 11), "half", None),
    "response_routing": ((21, 21), "first", None),
    "cancel_routing": ((31, 31), "first", "cancel"),
    "server_request_routing": ((51, 51), "start", None),
    "collateral_close": ((61, 61), "first", "abort"),
    "id_types": ((7, "7"), "half", None),
    "id_types_cancel": ((4, "4"), "first", "cancel"),
    "reuse": ((71, 71), "answered", None),
    "stateless_isolation": ((101, 101), "half", None),
    "stateless_close": ((111, 111), "first", "abort"),
    "stateless_close_early": ((121, 121), "start", "abort-first"),
    "stateless_reuse": ((131, 131), "half", None),
}

_HTTP = '''#!/usr/bin/env python3
"""{title}

Reproduces mcp-inflight probe's scenario {scenario!r} ({mode}) against an MCP server:
A calls {tool!r}; {when_text}; B calls it under id {idb_json} (A's id: {ida_json}){then_text}.
Prints every message each POST's stream carries, with its time. Standard library only.

    python3 {file} [URL]      (default {url})
"""

import http.client
import json
import sys
import threading
import time
import urllib.parse

URL = sys.argv[1] if len(sys.argv) > 1 else {url!r}
TOOL, ARGS = {tool!r}, {args!r}
IDS = {ids!r}
WHEN, THEN, MODE, REVISION = {when!r}, {then!r}, {mode!r}, {revision!r}
T0 = time.monotonic()
u = urllib.parse.urlsplit(URL)
headers = {{"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}}
seen = {{"A": [], "B": []}}
conns = {{}}


def meta(token):
    m = {{"progressToken": token}}
    if MODE == "stateless" and REVISION == "2026-07-28":
        m.update({{
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {{"name": "repro", "version": "1"}},
            "io.modelcontextprotocol/clientCapabilities": {{}},
        }})
    return m


def send(name, body):
    h = dict(headers)
    if MODE == "stateless":
        h["Mcp-Method"] = body["method"]
        if body["method"] == "tools/call":
            h["Mcp-Name"] = body["params"]["name"]
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conns[name] = c
    c.request("POST", u.path or "/", json.dumps(body), h)
    return c.getresponse()


def read(name, r):
    print(f"{{time.monotonic() - T0:6.2f}}s [{{name}}] HTTP {{r.status}} {{r.getheader('content-type')}}")
    try:
        for raw in r:
            line = raw.decode("utf-8", "replace").rstrip()
            if line.startswith("data:") and line[5:].strip():
                msg = json.loads(line[5:])
                seen[name].append(msg)
                print(f"{{time.monotonic() - T0:6.2f}}s [{{name}}] {{json.dumps(msg)}}", flush=True)
                if msg.get("method") == "elicitation/create":
                    reply = {{"jsonrpc": "2.0", "id": msg["id"], "result": {{"action": "decline"}}}}
                    threading.Thread(target=lambda: send("answer", reply).read()).start()
            elif not line.startswith(("event:", "id:", "retry:")) and line:
                print(f"{{time.monotonic() - T0:6.2f}}s [{{name}}] {{line}}")
    except OSError:
        print(f"{{time.monotonic() - T0:6.2f}}s [{{name}}] connection closed")


def call(name, rid):
    body = {{"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {{"name": TOOL, "arguments": ARGS, "_meta": meta(f"token-{{name}}")}}}}
    t = threading.Thread(target=lambda: read(name, send(name, body)), daemon=True)
    t.start()
    return t


def own_progress(name):
    return sum(1 for m in seen[name] if (m.get("params") or {{}}).get("progressToken") == f"token-{{name}}")


if MODE == "session":
    init = {{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {{
        "protocolVersion": REVISION, "capabilities": {{"elicitation": {{}}}},
        "clientInfo": {{"name": "repro", "version": "1"}}}}}}
    r = send("init", init)
    headers["Mcp-Session-Id"] = r.getheader("mcp-session-id")
    r.read()
    headers["MCP-Protocol-Version"] = REVISION
    send("init", {{"jsonrpc": "2.0", "method": "notifications/initialized"}}).read()
else:
    headers["MCP-Protocol-Version"] = REVISION

a = call("A", IDS[0])
deadline = time.monotonic() + 10
steps = ARGS.get("steps", 4)
while time.monotonic() < deadline:
    n = own_progress("A")
    if WHEN == "start" or (WHEN == "first" and n >= 1) or (WHEN == "half" and n >= steps // 2):
        break
    if WHEN == "answered" and any("result" in m or "error" in m for m in seen["A"]):
        break
    time.sleep(0.01)
if THEN == "abort-first":
    time.sleep(0.05)
    conns["A"].sock.close()
    print(f"{{time.monotonic() - T0:6.2f}}s [A] closed by the client")
b = call("B", IDS[1])
if THEN in ("cancel", "abort"):
    while time.monotonic() < deadline and own_progress("B") < 1 and own_progress("A") < steps // 2:
        time.sleep(0.01)
    if THEN == "cancel":
        note = {{"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {{"requestId": IDS[0], "reason": "repro"}}}}
        send("cancel", note).read()
        print(f"{{time.monotonic() - T0:6.2f}}s [client] notifications/cancelled for id {{IDS[0]!r}} (meaning A)")
    else:
        conns["A"].sock.close()
        print(f"{{time.monotonic() - T0:6.2f}}s [A] closed by the client")
b.join(15)
a.join(1)
for name in ("A", "B"):
    tokens = sorted({{(m.get("params") or {{}}).get("progressToken") for m in seen[name]}} - {{None}})
    answers = [m for m in seen[name] if "result" in m or "error" in m]
    print(f"{{name}}: progress tokens on its stream {{tokens}}; responses {{json.dumps(answers)}}")
'''

_STDIO = '''#!/usr/bin/env python3
"""{title}

Reproduces mcp-inflight probe's scenario {scenario!r} over stdio: A calls {tool!r}; {when_text};
B calls it under id {idb_json} (A's id: {ida_json}){then_text}. Prints every line the server
writes, with its time. Standard library only.

    python3 {file} [COMMAND ...]      (default: {argv_text})
"""

import json
import subprocess
import sys
import threading
import time

ARGV = sys.argv[1:] or {argv!r}
TOOL, ARGS = {tool!r}, {args!r}
IDS = {ids!r}
WHEN, THEN = {when!r}, {then!r}
T0 = time.monotonic()
seen = []
p = subprocess.Popen(ARGV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def pump():
    for line in p.stdout:
        msg = json.loads(line)
        seen.append(msg)
        print(f"{{time.monotonic() - T0:6.2f}}s <- {{line.rstrip()}}", flush=True)


def send(msg):
    print(f"{{time.monotonic() - T0:6.2f}}s -> {{json.dumps(msg)}}", flush=True)
    p.stdin.write(json.dumps(msg) + "\\n")
    p.stdin.flush()


def progress(token):
    return sum(1 for m in seen if (m.get("params") or {{}}).get("progressToken") == token)


def until(pred, seconds=10):
    end = time.monotonic() + seconds
    while not pred() and time.monotonic() < end:
        time.sleep(0.01)


threading.Thread(target=pump, daemon=True).start()
send({{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {{"protocolVersion": "2025-11-25",
      "capabilities": {{}}, "clientInfo": {{"name": "repro", "version": "1"}}}}}})
until(lambda: any(m.get("id") == 0 for m in seen))
send({{"jsonrpc": "2.0", "method": "notifications/initialized"}})
steps = ARGS.get("steps", 4)


def call(rid, token):
    send({{"jsonrpc": "2.0", "id": rid, "method": "tools/call",
          "params": {{"name": TOOL, "arguments": ARGS, "_meta": {{"progressToken": token}}}}}})


call(IDS[0], "A")
until({{"first": lambda: progress("A") >= 1, "half": lambda: progress("A") >= steps // 2,
       "answered": lambda: any(m.get("id") == IDS[0] and "method" not in m for m in seen)}}[WHEN])
call(IDS[1], "B")
if THEN == "cancel":
    until(lambda: progress("B") >= 1 or progress("A") >= steps // 2, 3)
    send({{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {{"requestId": IDS[0]}}}})
time.sleep(ARGS.get("delay", 0.25) * steps * 2 + 1)
p.stdin.close()
p.wait(10)
print(f"A reported {{progress('A')}} of {{steps}} steps, B {{progress('B')}}")
print("responses:", json.dumps([m for m in seen if "method" not in m and m.get("id") != 0]))
'''

_WHEN = {
    "half": "once A has reported half its progress",
    "first": "once A has reported its first progress",
    "answered": "once A has its response",
    "start": "at once",
}
_THEN = {
    None: "",
    "cancel": "; then the client cancels A's id (meaning A)",
    "abort": "; then the client closes A's connection",
    "abort-first": "; A's connection is closed before that, before its first step",
}


def script(
    scenario: str,
    title: str,
    *,
    tool: str,
    args: dict,
    url: str | None = None,
    argv: list[str] | None = None,
    mode: str = "session",
    revision: str = "2025-11-25",
    file: str = "repro.py",
) -> str:
    """The reproduction script of ``scenario`` (see :data:`PLAN`): over HTTP at ``url`` (``mode``
    ``session`` or ``stateless``, header ``revision``), or over stdio with ``argv``."""
    ids, when, then = PLAN[scenario]
    common = {
        "title": title,
        "scenario": scenario,
        "tool": tool,
        "args": args,
        "ids": list(ids),
        "ida_json": json.dumps(ids[0]),
        "idb_json": json.dumps(ids[1]),
        "when": when,
        "then": then,
        "when_text": _WHEN[when],
        "then_text": _THEN[then],
        "file": file,
    }
    if argv is not None:
        return _STDIO.format(argv=list(argv), argv_text=" ".join(argv), **common)
    assert url is not None
    return _HTTP.format(url=url, mode=mode, revision=revision, **common)
