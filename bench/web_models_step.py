"""Time per step of the models page's JSON API (``mcp-inflight explore``, ``/models``), over HTTP.

A step is what the page asks when the user takes a move: ``GET /api/models/view`` with the path
one move longer (the server replays the whole path from the initial state and evaluates every
move's guard at its end).  The script starts the server as users do (its own process,
loopback), walks random paths on every design of every declared model at its default bounds,
and prints, per model, the time per step over HTTP (one kept-alive connection, as a browser
keeps one) beside the time of the same view computed in this process without HTTP.  The aim:
under 100 ms per step, judged on the 95th percentile (single steps on a shared machine carry the
other processes' noise; the slowest and the load average are printed beside it).

    .venv/bin/python bench/web_models_step.py [--walks 4] [--length 30]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

from mcp_inflight.web import declared_api

AIM_MS = 100.0


def start_server() -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "explore", "--port", "0", "--model", "rounds"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return proc, int(m.group(1))
    raise SystemExit("the server did not start")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--walks", type=int, default=4, help="random walks per design")
    ap.add_argument("--length", type=int, default=30, help="steps per walk at most")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    proc, port = start_server()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    load0 = os.getloadavg()
    print(f"cores: {os.cpu_count()}, load average at start: {load0[0]:.1f}")
    print(
        f"{'model':14} {'steps':>6} {'http median':>12} {'http p95':>9} {'http max':>9} "
        f"{'in-process median':>18} {'http/in-process':>16}"
    )
    all_http: list[float] = []
    try:
        for m in declared_api.models():
            http_ms: list[float] = []
            local_ms: list[float] = []
            for d in m["designs"]:
                for _ in range(args.walks):
                    path: list[str] = []
                    for _ in range(args.length):
                        q = {"model": m["name"], "design": d["name"], "path": "-".join(path)}
                        url = "/api/models/view?" + urllib.parse.urlencode(q)
                        t = time.perf_counter()
                        conn.request("GET", url, headers={"Host": f"127.0.0.1:{port}"})
                        r = conn.getresponse()
                        body = json.loads(r.read())
                        http_ms.append((time.perf_counter() - t) * 1000)
                        assert r.status == 200, body
                        t = time.perf_counter()
                        declared_api.view(q)
                        local_ms.append((time.perf_counter() - t) * 1000)
                        if not body["enabled"]:
                            break
                        path.append(rng.choice(body["enabled"])["token"])
            all_http += http_ms
            hm, lm = statistics.median(http_ms), statistics.median(local_ms)
            print(
                f"{m['name']:14} {len(http_ms):6} {hm:10.1f}ms {pct(http_ms, 95):7.1f}ms "
                f"{max(http_ms):7.1f}ms {lm:16.1f}ms {hm / lm:15.2f}x"
            )
    finally:
        conn.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    p95 = pct(all_http, 95)
    load1 = os.getloadavg()
    print(
        f"all: {len(all_http)} steps, p95 {p95:.1f} ms (aim {AIM_MS:g} ms: "
        f"{'met' if p95 < AIM_MS else 'NOT met'}), {sum(x > AIM_MS for x in all_http)} over "
        f"the aim; load average at the end: {load1[0]:.1f}"
    )
    return 0 if p95 < AIM_MS else 1


if __name__ == "__main__":
    sys.exit(main())
