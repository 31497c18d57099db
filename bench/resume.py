"""What resumable streams cost: ``tools/call echo`` per second on our app with the default event
store and with ``event_store=None``, side by side in one run (``wrk`` with ``bench/wrk_call.lua``,
one session, SSE answers; each call then keeps two events: the priming event and the response).

    .venv/bin/python bench/resume.py [--seconds 5] [--rounds 3]
    .venv/bin/python bench/resume.py --in-process [--calls 5000] [--rounds 5]

Each round measures both servers (each its own process), alternating which goes first; the table
gives the median calls/s, p50 and p99, and the ratio.  ``--in-process`` drives the ASGI app
directly (no socket, no uvicorn), alternating the two apps, and gives the CPU time per call
(the fastest round of each: the least disturbed by other work on the machine).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import runtime_http as R  # noqa: E402

VARIANTS = ("store", "none")


def serve(variant: str) -> None:
    import asyncio

    import uvicorn

    from mcp_inflight.impl.http import LOOPBACK, create_app
    from mcp_inflight.serve import demo_server

    store = {} if variant == "store" else {"event_store": None}
    app = create_app(demo_server(), "/mcp", allowed_hosts=set(LOOPBACK) | {"127.0.0.1"}, **store)
    server = uvicorn.Server(R.uvicorn_config(app, 0))

    async def main():
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await task

    asyncio.run(main())


def start(variant: str):
    p = subprocess.Popen(
        [sys.executable, __file__, "--serve", variant], stderr=subprocess.PIPE, text=True
    )
    line = p.stderr.readline()
    m = R.LISTEN.search(line)
    if not m:
        p.kill()
        raise SystemExit(f"server {variant} did not start: {line!r}")
    return p, m.group(1)


def in_process(calls: int, rounds: int) -> None:
    import asyncio
    import json
    import time

    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server

    async def post(app, body: bytes, sid: str | None = None) -> list:
        hdrs = [
            (b"host", b"127.0.0.1"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if sid:
            hdrs += [(b"mcp-session-id", sid.encode()), (b"mcp-protocol-version", b"2025-11-25")]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": hdrs}
        scope["server"] = ("127.0.0.1", 80)
        given = False

        async def receive():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)

        out: list = []

        async def send(m):
            out.append(m)

        await app(scope, receive, send)
        return out

    async def run() -> dict:
        per: dict[str, list[float]] = {v: [] for v in VARIANTS}
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": R.INIT["clientInfo"],
        }
        for _ in range(rounds):
            for v in VARIANTS:
                opts = {} if v == "store" else {"event_store": None}
                app = create_app(demo_server(), "/mcp", **opts)
                msg = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
                out = await post(app, json.dumps(msg).encode())
                sid = dict(out[0]["headers"])[b"mcp-session-id"].decode()
                bodies = [
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": k + 1,
                            "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": R.ECHO_TEXT}},
                        }
                    ).encode()
                    for k in range(calls)
                ]
                t = time.process_time()
                for b in bodies:
                    await post(app, b, sid)
                per[v].append((time.process_time() - t) / calls * 1e6)
        return per

    per = asyncio.run(run())
    print(f"tools/call echo driven in-process, {calls} calls x {rounds} rounds per app")
    print(f"{'event store':<14}{'us CPU/call (best)':>20}  rounds")
    for v in VARIANTS:
        rounds_us = " ".join(f"{x:.0f}" for x in sorted(per[v]))
        print(f"{'default' if v == 'store' else 'None':<14}{min(per[v]):>20.1f}  {rounds_us}")
    print(f"extra CPU per call with the store: {min(per['store']) - min(per['none']):.1f} us")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", choices=VARIANTS)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--in-process", action="store_true", help="drive the ASGI app directly")
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.in_process:
        in_process(args.calls, args.rounds)
        return 0
    import httpx

    procs = {v: start(v) for v in VARIANTS}
    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    try:
        with httpx.Client(timeout=10) as c:
            sids = {}
            for v, (_, url) in procs.items():
                h = R.open_session(c, url)
                good, problems = R.sample_calls(c, url, h, 20, v)
                if good != 20:
                    raise SystemExit(f"{v}: {problems[:3]}")
                sids[v] = h["mcp-session-id"]
        for k in range(args.rounds):
            order = VARIANTS if k % 2 == 0 else VARIANTS[::-1]
            for v in order:
                res, _ = R.run_wrk(procs[v][1], sids[v], args.seconds, 1, args.connections)
                results[v].append(res)
    finally:
        for p, _ in procs.values():
            p.terminate()
            p.wait(10)

    def rps(r):
        return r["ok"] / (r["duration_us"] / 1e6)

    for v in VARIANTS:
        bad = [r for r in results[v] if r["ok"] != r["requests"] or r["bad_body"]]
        if bad:
            raise SystemExit(f"{v}: answers that were not right: {bad[0]}")

    def med(v, key):
        if key == "rps":
            return median(rps(r) for r in results[v])
        return median(r[key.replace("_ms", "_us")] / 1000 for r in results[v])

    print(
        f"tools/call echo, wrk 1 thread, {args.connections} connections, one session, "
        f"{args.rounds} rounds of {args.seconds:g} s, medians"
    )
    print(f"{'event store':<14}{'calls/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for v in VARIANTS:
        print(
            f"{'default' if v == 'store' else 'None':<14}{med(v, 'rps'):>10.0f}"
            f"{med(v, 'p50_ms'):>9.2f}{med(v, 'p99_ms'):>9.2f}"
        )
    print(f"ratio (default / None): {med('store', 'rps') / med('none', 'rps'):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
