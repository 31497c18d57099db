"""Memory under session churn: the resident set of the Streamable HTTP app after many session
create/delete cycles, measured in-process (the app called on its ASGI interface, no socket, so
what grows is the app's own state).

Each cycle: ``initialize``, ``notifications/initialized``, a ``tools/call`` left running and the
session DELETEd under it (its handler cancelled), and a 2026-07-28 POST whose handler outlives
the POST (its stream closed after its first progress).  The figures: RSS after a warm-up, after
every quarter of the run, and the growth; the app's registries at the end (sessions, scopes
left, live requests), which must all be 0.

Run: ``python bench/churn.py [--cycles 20000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mcp_inflight.impl.http import create_app  # noqa: E402
from mcp_inflight.impl.server import Server  # noqa: E402
from support.asgi import HEADERS, Exchange, open_session, request  # noqa: E402


def rss_mb() -> float:
    """The current resident set (Linux: /proc), in MB; the peak where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build() -> Server:
    server = Server("churn")

    @server.tool()
    async def hold(ctx) -> str:
        await ctx.progress(0, 1)
        await asyncio.sleep(3600)
        return "never"

    return server


CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "hold", "arguments": {}, "_meta": {"progressToken": "p"}},
}
MODERN = {"mcp-protocol-version": "2026-07-28"}
MODERN_CALL = {
    **CALL,
    "params": {
        **CALL["params"],
        "_meta": {
            "progressToken": "p",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}


async def cycle(app) -> None:
    h = await open_session(app)
    ex = Exchange(app, "POST", {**HEADERS, **h}, json.dumps(CALL).encode()).start()
    while not ex.chunks or not any(ex.chunks):
        await asyncio.sleep(0)
    await request(app, "DELETE", headers=h)
    await ex.done()
    assert ex.status == 200, (ex.status, ex.body)
    m = Exchange(app, "POST", {**HEADERS, **MODERN}, json.dumps(MODERN_CALL).encode()).start()
    while not any(m.chunks) and not m.complete:
        await asyncio.sleep(0)
    m.disconnect()
    await m.done()
    assert m.status == 200, (m.status, m.body)


async def main(cycles: int, warmup: int) -> int:
    app = create_app(build())
    for _ in range(warmup):
        await cycle(app)
    for _ in range(10):
        await asyncio.sleep(0)
    gc.collect()
    start = rss_mb()
    print(f"warm-up {warmup} cycles: RSS {start:.1f} MB")
    marks = {cycles * k // 4 for k in range(1, 5)}
    for n in range(1, cycles + 1):
        await cycle(app)
        if n in marks:
            for _ in range(10):
                await asyncio.sleep(0)
            gc.collect()
            print(f"after {n:>6} cycles: RSS {rss_mb():.1f} MB")
    end = rss_mb()
    left = (len(app.sessions), len(app._left), app.live_requests())
    print(
        f"growth over {cycles} cycles: {end - start:+.1f} MB "
        f"({(end - start) * 1024 * 1024 / cycles:.0f} bytes a cycle)"
    )
    print(f"sessions {left[0]}, scopes left {left[1]}, live requests {left[2]}")
    return 0 if left == (0, 0, 0) else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=1000)
    a = p.parse_args()
    sys.exit(asyncio.run(main(a.cycles, a.warmup)))
