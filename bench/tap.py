"""The tap alone: CPU per echo call of the in-process HTTP app (``impl.http.create_app``)
driven in process (no socket, no HTTP server), bare, behind the tap with the online check
beside it (``traced(app, online=True)``, a checker process), and behind the tap writing a
trace file; measured side by side, in rounds, in one run.  With ``--base REV`` also
``online-base``: the online check behind the tap of git revision ``REV``
(``mcp_inflight/trace/tap.py`` of it, with the current checker).  The CPU is this process's (the
serving thread and the reports' reader); the checker process's is not counted.

    python bench/tap.py [--calls N] [--rounds R] [--base REV]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from mcp_inflight.impl.http import create_app
from mcp_inflight.impl.server import Server
from mcp_inflight.trace.tap import traced

TEXT = "hello"
BASE = [
    (b"host", b"127.0.0.1:8000"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]


def build() -> Server:
    server = Server("tap-bench")

    @server.tool()
    async def echo(ctx, text: str) -> str:
        return text

    return server


async def post(app, headers, msg) -> tuple[int, dict, bytes]:
    body = orjson.dumps(msg)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "http_version": "1.1",
        "query_string": b"",
        "root_path": "",
        "raw_path": b"/mcp",
        "asgi": {"version": "3.0"},
    }
    sent = False
    out: dict = {"status": 0, "headers": {}, "body": []}

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)

    async def send(m):
        if m["type"] == "http.response.start":
            out["status"] = m["status"]
            out["headers"] = dict(m.get("headers", ()))
        elif m["type"] == "http.response.body":
            out["body"].append(m.get("body", b""))

    await app(scope, receive, send)
    return out["status"], out["headers"], b"".join(out["body"])


async def session(app) -> list:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    status, hdrs, _ = await post(
        app, BASE, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    )
    assert status == 200, status
    h = BASE + [
        (b"mcp-session-id", hdrs[b"mcp-session-id"]),
        (b"mcp-protocol-version", b"2025-11-25"),
    ]
    await post(app, h, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return h


async def calls(app, h, first: int, n: int) -> None:
    for k in range(first, first + n):
        msg = {
            "jsonrpc": "2.0",
            "id": k,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": TEXT}},
        }
        status, _, body = await post(app, h, msg)
        if status != 200 or TEXT.encode() not in body:
            raise AssertionError(f"echo call {k}: {status} {body[:200]!r}")


def base_tap(rev: str):
    """The tap module of git revision ``rev``, imported beside the current one."""
    root = Path(__file__).resolve().parent.parent
    src = subprocess.run(
        ["git", "-C", str(root), "show", f"{rev}:mcp_inflight/trace/tap.py"],
        capture_output=True,
        check=True,
    ).stdout
    file = Path(tempfile.mkdtemp(prefix="tap-base-")) / "tap.py"
    file.write_bytes(src)
    name = "mcp_inflight.trace._tap_base"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--base", metavar="REV", help="also the online check behind REV's tap")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp()
    kinds: tuple[str, ...] = ("bare", "online", "trace")
    base = None
    if args.base:
        base = base_tap(args.base)
        kinds = ("bare", "online-base", "online", "trace")

    async def run() -> dict[str, list[float]]:
        apps, heads = {}, {}
        for kind in kinds:
            app = create_app(build())
            if kind == "online":
                app = traced(app, online=True)
            elif kind == "online-base":
                app = base.traced(app, online=True)
            elif kind == "trace":
                app = traced(app, trace=os.path.join(tmp, "t.jsonl"))
            apps[kind] = app
            heads[kind] = await session(app)
            await calls(app, heads[kind], 1, 300)  # warm-up
        per: dict[str, list[float]] = {k: [] for k in kinds}
        nxt = 1000
        for _ in range(args.rounds):
            for kind in kinds:
                c0 = time.process_time_ns()
                await calls(apps[kind], heads[kind], nxt, args.calls)
                per[kind].append((time.process_time_ns() - c0) / args.calls / 1000.0)
                nxt += args.calls
        for kind in kinds:
            if kind.startswith("online"):
                got = apps[kind].monitor.close()
                if got["violations"] or got["unchecked_parts"] or got["dropped_events"]:
                    raise AssertionError(f"{kind}: the check on clean echo calls counted {got}")
                print(f"{kind} check counts: {got}")
        return per

    per = asyncio.run(run())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best = {k: min(v) for k, v in per.items()}
    for kind in kinds:
        extra = best[kind] - best["bare"]
        print(
            f"  {kind:11} CPU per echo call: best {best[kind]:6.1f} us, median "
            f"{sorted(per[kind])[len(per[kind]) // 2]:6.1f} us  (tap: +{extra:5.1f} us, "
            f"{best[kind] / best['bare']:.2f}x bare)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
