"""What resumable streams cost: ``tools/call echo`` per second on our app with the default event
store and with ``event_store=None``, side by side in one run (``wrk`` with ``bench/wrk_call.lua``,
one session, SSE answers; each call then keeps two events: the priming event and the response).

    .venv/bin/python bench/resume.py [--seconds 5] [--rounds 3]

Each round measures both servers (each its own process), alternating which goes first; the table
gives the median calls/s, p50 and p99, and the ratio.
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", choices=VARIANTS)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=10)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve)
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
