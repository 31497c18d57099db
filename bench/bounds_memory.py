"""Memory a client can make one server process keep, at the bounds (resident memory, in process).

    .venv/bin/python bench/bounds_memory.py [--sessions 200]

Prints, each measured on the Streamable HTTP app driven through its ASGI interface:

* **per session**: ``initialize`` with the largest ``capabilities`` the bound admits (16 KiB of
  compact JSON, made of ``{}`` objects: the shape that costs most once parsed), beside the
  parsed tree of the same text (what a session kept before the bound);
* **per stream at its send buffer**: the bytes one POST stream queues for a reader that reads
  nothing before it is cut off (``max_stream_buffer``, 1 MiB);
* **per used requestState**: one entry of the replay record (``max_live`` bounds their number,
  a tenth of it per client);
* **per session at rest**: an empty ``initialize``.

Each figure is the growth of the process's resident memory (``/proc/self/statm``, Linux) while
the measured objects are made and kept, divided by their number (``tracemalloc`` misreads
orjson's output buffers, so it is not used).  These are sizes, not speeds: they do not depend on
the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mcp_inflight.impl.http import MAX_STREAM_BUFFER, _Outlet, create_app  # noqa: E402
from mcp_inflight.impl.request_state import RequestStates  # noqa: E402
from mcp_inflight.impl.server import MAX_CLIENT_CAPABILITIES  # noqa: E402
from mcp_inflight.serve import demo_server  # noqa: E402

HEADERS = [
    (b"host", b"127.0.0.1"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]


async def _post(app, body: bytes) -> int:
    sent: list = []
    done = False

    async def receive():
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)

    async def send(m):
        sent.append(m)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": HEADERS}
    await app(scope, receive, send)
    return sent[0]["status"]


def _capabilities(limit: int) -> dict:
    """Capabilities of ``{}`` objects whose compact JSON is just under ``limit`` bytes."""
    n = (limit - 40) // 3
    caps = {"experimental": {"x": {"items": [{} for _ in range(n)]}}}
    while len(json.dumps(caps, separators=(",", ":"))) > limit:
        caps["experimental"]["x"]["items"].pop()
    return caps


def _init(caps: dict) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": caps,
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    ).encode()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(fn) -> int:
    gc.collect()
    before = _rss()
    keep = fn()
    gc.collect()
    after = _rss()
    del keep
    return after - before


def sessions(n: int, caps: dict) -> int:
    app = create_app(demo_server(), event_store=None, max_sessions=None)
    body = _init(caps)

    def make():
        async def go():
            for _ in range(n):
                assert await _post(app, body) == 200
            return app

        return asyncio.run(go())

    total = measure(make)
    assert len(app.sessions) == n
    return total // n


def parsed_tree(n: int, caps: dict) -> int:
    text = json.dumps(caps)
    return measure(lambda: [json.loads(text) for _ in range(n)]) // n


def stream_at_buffer(n: int = 20) -> int:
    msg = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"m": "x" * 1000}}

    def fill():
        outlets = []
        for _ in range(n):
            cut: list = []
            out = _Outlet(limit=MAX_STREAM_BUFFER)
            out.cut = lambda cut=cut: cut.append(True)
            while not cut:
                out.send(msg)
            outlets.append(out)
        return outlets

    return measure(fill) // n


def used_states(n: int) -> int:
    rs = RequestStates(max_live=n + 1, max_live_per_client=n + 1)
    tokens = [rs.issue("call", {}, ["k"], 1) for _ in range(n)]

    def use():
        for t in tokens:
            rs.resume(t, "call", None, "127.0.0.1")
        return rs

    return measure(use) // n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=200)
    args = p.parse_args(argv)
    caps = _capabilities(MAX_CLIENT_CAPABILITIES)
    size = len(json.dumps(caps, separators=(",", ":")))
    rows = [
        (
            f"session, capabilities at the bound ({size:,} B of JSON)",
            sessions(args.sessions, caps),
        ),
        ("  the same capabilities parsed (kept before the bound)", parsed_tree(50, caps)),
        ("session, empty capabilities", sessions(args.sessions, {})),
        (
            f"stream queue when its reader is cut off (bound {MAX_STREAM_BUFFER:,} B)",
            stream_at_buffer(),
        ),
        ("used requestState in the replay record", used_states(20_000)),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value / 1024:10.1f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
