"""Memory under session churn: the resident set of the Streamable HTTP app after many session
create/delete cycles, measured in-process (the app called on its ASGI interface, no socket, so
what grows is the app's own state).

Each cycle: ``initialize``, ``notifications/initialized``, a ``tools/call`` left running and the
session DELETEd under it (its handler cancelled), and a 2026-07-28 POST whose handler outlives
the POST (its stream closed after its first progress).  The figures: RSS after a warm-up, after
every quarter of the run, and the growth; the app's registries at the end (sessions, scopes
left, live requests), which must all be 0.

Then the memory a session and a request hold while they live (``tracemalloc``, after the churn):
``--sessions`` idle sessions opened (``initialize``, ``notifications/initialized``), then
``--inflight`` ``tools/call`` requests left running in one session (each has reported its first
progress).  An allocation counts as the server's when its traceback passes through this package
(``impl/``, ``model/``, ``mcp_inflight/``) and it was not made by the in-process client
(``tests/support/asgi.py``: the test side of each exchange, which a real client holds in its own
process); the bytes per session and per request are the growth of what is still allocated,
divided by their number.  Everything is then ended (DELETE) and the registries must be empty.

Run: ``python bench/churn.py [--cycles 20000] [--sessions 1000] [--inflight 1000]
[--base-rev REV]``; ``--base-rev`` then runs the same on git revision REV's package and prints
both memory figures side by side (before -> now).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import resource
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import mcp_inflight  # noqa: E402
import mcp_inflight.impl  # noqa: E402
import mcp_inflight.model  # noqa: E402
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


ROOT = Path(__file__).resolve().parent.parent
#: the folders of the package this process imported (this checkout's, or with ``--base-rev``
#: another revision's unpacked copy)
OURS = tuple(
    str(Path(m.__file__).resolve().parent) + "/"
    for m in (mcp_inflight, mcp_inflight.impl, mcp_inflight.model)
    if m.__file__
)
CLIENT = str(ROOT / "tests" / "support" / "asgi.py")


def _server_side(tb: tracemalloc.Traceback) -> bool:
    files = [f.filename for f in tb]
    return files[0] != CLIENT and any(f.startswith(OURS) for f in files)


def grown(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> tuple[int, int]:
    """Bytes still allocated in ``after`` beyond ``before``: (the server's, everything)."""
    server = total = 0
    for d in after.compare_to(before, "traceback"):
        total += d.size_diff
        if _server_side(d.traceback):
            server += d.size_diff
    return server, total


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)
    gc.collect()


#: this run's memory figures (bytes held by the server), as printed
MEMORY_SEEN: dict[str, int] = {}


async def held(app, sessions: int, inflight: int) -> int:
    """Memory per idle session and per in-flight request (printed); 0 if everything ended."""
    await settle()
    tracemalloc.start(30)
    base = tracemalloc.take_snapshot()
    heads = [await open_session(app) for _ in range(sessions)]
    await settle()
    idle = tracemalloc.take_snapshot()
    h = heads[0]
    calls = []
    for k in range(inflight):
        body = json.dumps({**CALL, "id": 100 + k}).encode()
        calls.append(Exchange(app, "POST", {**HEADERS, **h}, body).start())
    for ex in calls:
        while not any(ex.chunks):
            await asyncio.sleep(0)
    await settle()
    busy = tracemalloc.take_snapshot()
    tracemalloc.stop()
    s_srv, s_all = grown(base, idle)
    r_srv, r_all = grown(idle, busy)
    MEMORY_SEEN["per idle session"] = round(s_srv / sessions)
    MEMORY_SEEN["per in-flight request"] = round(r_srv / inflight)
    print(
        f"memory per idle session: {s_srv / sessions:,.0f} bytes held by the server "
        f"({s_all / sessions:,.0f} with the in-process client's; {sessions} sessions, "
        "tracemalloc)"
    )
    print(
        f"memory per in-flight request: {r_srv / inflight:,.0f} bytes held by the server "
        f"({r_all / inflight:,.0f} with the in-process client's; {inflight} tools/call in one "
        "session, each past its first progress)"
    )
    for hd in heads:
        await request(app, "DELETE", headers=hd)
    for ex in calls:
        await ex.done()
    await settle()
    left = (len(app.sessions), len(app._left), app.live_requests())
    print(f"after DELETE: sessions {left[0]}, scopes left {left[1]}, live requests {left[2]}")
    return 0 if left == (0, 0, 0) else 1


async def main(cycles: int, warmup: int, sessions: int = 0, inflight: int = 0) -> int:
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
    if left != (0, 0, 0):
        return 1
    return await held(app, sessions, inflight) if sessions and inflight else 0


MEMORY = (
    ("per idle session", re.compile(r"memory per idle session: ([0-9,]+) bytes")),
    ("per in-flight request", re.compile(r"memory per in-flight request: ([0-9,]+) bytes")),
)


def against(rev: str, argv: list[str], code: int) -> int:
    """This run's memory figures beside those of revision ``rev`` (the same script and options,
    the package of ``rev`` first on the path)."""
    import os
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from runtime import base_package

    i = argv.index("--base-rev")
    rest = argv[:i] + argv[i + 2 :]
    base = base_package(rev)
    run = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *rest],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=base),
        cwd=base,
        timeout=3600,
    )
    print(f"\n{rev} (the same run, its package from {base}):")
    print(run.stdout.rstrip())
    mine = MEMORY_SEEN
    print(f"\nmemory held by the server, {rev} -> now:")
    for label, pattern in MEMORY:
        m = pattern.search(run.stdout)
        if m is None or label not in mine:
            print(f"  {label}: not measured on both")
            continue
        before = int(m.group(1).replace(",", ""))
        now = mine[label]
        print(
            f"  {label}: {before:,} -> {now:,} bytes ({now - before:+,}; now / before {now / before:.2f})"
        )
    return code or run.returncode


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument(
        "--sessions",
        type=int,
        default=1000,
        help="idle sessions held (at most the app's 1024; 0: skip)",
    )
    p.add_argument("--inflight", type=int, default=1000, help="requests held (0: skip)")
    p.add_argument(
        "--base-rev",
        metavar="REV",
        help="then the same run on the package of git revision REV (unpacked to a temporary "
        "directory, in a process of its own), and both memory figures side by side",
    )
    a = p.parse_args()
    code = asyncio.run(main(a.cycles, a.warmup, a.sessions, a.inflight))
    if a.base_rev and a.sessions and a.inflight:
        sys.stdout.flush()
        code = against(a.base_rev, sys.argv[1:], code)
    sys.exit(code)
