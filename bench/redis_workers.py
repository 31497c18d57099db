"""Many workers on Redis, measured side by side in one run.

``python bench/redis_workers.py [--duration 5] [--threads 2] [--connections 16] [--calls 1000]``

Starts a ``redis-server`` of its own (free port, temporary directory, no persistence), then, one
after the other, ``mcp-inflight serve`` as:

* ``single``: the single-process server (no Redis: sessions in the process);
* ``redis x1``, ``redis x2``, ``redis x4``: ``serve --workers N --redis URL`` (N worker
  processes accepting on one socket, sessions, claims and routing in Redis).

For each: throughput of ``tools/call echo`` in one 2025-11-25 session (``wrk`` with
``bench/wrk_call.lua``, every answer checked; keep-alive connections, spread over the workers by
the kernel as they connect), then the latency of sequential calls on one connection (p50, p99),
and, for the Redis ones, the Redis commands per request read from ``INFO commandstats`` before
and after a run of sequential requests (``EVALSHA`` is a script: one round trip; the other
commands each one too).  Ratios are against ``single`` in the same run.

The machine's cores bound what more workers can give: on 2 cores, 4 workers, wrk and
redis-server share them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from runtime_http import run_wrk  # noqa: E402

H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LISTEN = re.compile(r"listening on (http://\S+)")
READY = re.compile(r"worker \S+ ready")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mcpi-bench-redis-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        argv = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", self.dir]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        self.client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def commandstats(self) -> dict[str, int]:
        out = {}
        for name, v in self.client.info("commandstats").items():
            out[name.removeprefix("cmdstat_")] = int(v["calls"])
        return out

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Serve:
    def __init__(self, args: list[str], workers: int):
        argv = [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0", *args]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        self.url = ""
        ready = 0
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while time.monotonic() < deadline and (not self.url or ready < workers):
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("serve exited")
            m = LISTEN.search(line)
            if m:
                self.url = m.group(1)
            if READY.search(line):
                ready += 1
        # keep reading stderr so the pipe never fills (and for the workers' last words)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(5)

    def store_stats(self) -> list[dict]:
        """Each worker's store counters, printed as it stops."""
        out = []
        for line in self.lines:
            if " stopping: store " in line:
                out.append(json.loads(line.split(" stopping: store ", 1)[1]))
        return out


def open_session(client, url) -> dict:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    r = client.post(url, headers=H, json=init)
    r.raise_for_status()
    h = {**H, "mcp-session-id": r.headers["mcp-session-id"]}
    client.post(url, headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return h


def echo(rid: int) -> dict:
    params = {"name": "echo", "arguments": {"text": "hello"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def latency(client, url, h, n: int) -> tuple[float, float]:
    times = []
    for k in range(n):
        t = time.perf_counter()
        r = client.post(url, headers=h, json=echo(100_000 + k))
        times.append(time.perf_counter() - t)
        assert r.status_code == 200 and '"hello"' in r.text, r.text
    return pct(times, 50) * 1e3, pct(times, 99) * 1e3


def round_trips(redis: RedisServer, n: int = 200) -> dict[str, dict]:
    """Per kind of request, on a fresh one-worker server: the worker's round trips to Redis
    per request (its own count, printed as it stops, less the session's creation) and the
    Redis commands per request (commandstats before and after)."""
    import httpx

    out = {}
    for name, make in KINDS.items():
        srv = Serve(["--redis", redis.url], 1)
        try:
            with httpx.Client(timeout=30) as client:
                h = open_session(client, srv.url)
                before = redis.commandstats()
                for k in range(n):
                    r = client.post(srv.url, headers=h, json=make(k))
                    assert r.status_code == 200, r.text
                after = redis.commandstats()
        finally:
            srv.stop()
        stats = srv.store_stats()[0]
        trips = (stats["round_trips"] - 1) / n  # less the session's creation
        delta = {c: after.get(c, 0) - before.get(c, 0) for c in after}
        delta["info"] = delta.get("info", 0) - 1
        cmds = {c: v / n for c, v in sorted(delta.items()) if v and c in CLIENT_COMMANDS}
        out[name] = {"round_trips": trips, "commands": cmds, "ops": stats["ops"]}
    return out


KINDS = {
    "tools/call echo": lambda k: echo(200_000 + k),
    "ping": lambda k: {"jsonrpc": "2.0", "id": 300_000 + k, "method": "ping"},
    "tools/call slow (3 progress, 3 logs)": lambda k: {
        "jsonrpc": "2.0",
        "id": 400_000 + k,
        "method": "tools/call",
        "params": {
            "name": "slow",
            "arguments": {"label": "b", "steps": 3, "delay": 0},
            "_meta": {"progressToken": k},
        },
    },
}


#: the commands a worker sends itself (DEL, PEXPIRE, GET, SET, INCR, EXISTS in commandstats run
#: inside the scripts; a worker's own DEL, of a waiter, does not occur in these requests)
CLIENT_COMMANDS = {"evalsha", "eval", "publish", "hgetall", "hset", "script|load", "multi", "exec"}


def store_path(redis: RedisServer, n: int = 2000, rounds: int = 3) -> dict[str, float]:
    """In one process, the store's calls for one request answered with no event (``claim``,
    then the priming event, the response and ``release`` pipelined), over the plain RESP
    connection and over redis-py's asyncio client, in turns: microseconds per request
    (the median of the rounds)."""
    import asyncio
    from statistics import median

    from mcp_inflight.impl.core import typed_id
    from mcp_inflight.impl.redis_store import RedisStore

    async def go():
        s = RedisStore(redis.url, "bench", 10_000)
        await s.load()
        await s.create_session("bench", {"revision": "2025-11-25"})
        times: dict[str, list[float]] = {"plain connection": [], "redis-py": []}
        for r in range(rounds):
            for name in times:
                s._lean_off = name == "redis-py"
                t = time.perf_counter()
                for k in range(n):
                    key = typed_id(f"{r}-{name}-{k}")
                    c = s.held("bench", key, await s.claim("bench", key))
                    await s.final(c, f"{r}{name[0]}{k}", 2, b"{}", [(1, b"")])
                times[name].append((time.perf_counter() - t) / n * 1e6)
        await s.end("bench")
        await s.close()
        return {name: median(v) for name, v in times.items()}

    try:  # the loop the workers run on (serve's)
        import uvloop
    except ImportError:
        return asyncio.run(go())
    return uvloop.run(go())


def run_config(name, args, workers, redis, opts) -> dict:
    """Throughput (wrk) and sequential latency of one server."""
    import httpx

    srv = Serve(args, workers)
    try:
        with httpx.Client(timeout=30) as client:
            h = open_session(client, srv.url)
            sid = h["mcp-session-id"]
            run_wrk(srv.url, sid, 1, opts.threads, opts.connections)  # warm-up
            res, _ = run_wrk(srv.url, sid, opts.duration, opts.threads, opts.connections)
            p50, p99 = latency(client, srv.url, h, opts.calls)
            left = [k for k in redis.client.keys("mcpi:*") if b":inflight:" in k]
    finally:
        srv.stop()
    secs = res["duration_us"] / 1e6
    # wrk's "sent" also counts the requests still open when the run stops: not errors
    errors = res["bad_status"] + res["bad_body"] + res["connect_errors"] + res["read_errors"]
    errors += res["write_errors"] + res["timeouts"]
    return {
        "name": name,
        "rps": res["ok"] / secs,
        "wrk_p50_ms": res["p50_us"] / 1e3,
        "wrk_p99_ms": res["p99_us"] / 1e3,
        "errors": errors,
        "seq_p50_ms": p50,
        "seq_p99_ms": p99,
        "claims_left": len(left),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=5.0, help="seconds of wrk per server")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--calls", type=int, default=1000, help="sequential calls for latency")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    opts = p.parse_args(argv)
    if not shutil.which("wrk"):
        print("wrk is not installed", file=sys.stderr)
        return 2
    redis = RedisServer()
    rows = []
    try:
        configs = [("single", [], 0)]
        for n in (1, 2, 4):
            configs.append((f"redis x{n}", ["--workers", str(n), "--redis", redis.url], n))
        for name, args, workers in configs:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows.append(run_config(name, args, workers, redis, opts))
        print("counting round trips ...", file=sys.stderr, flush=True)
        trips = round_trips(redis)
        path = store_path(redis)
    finally:
        redis.close()
    base = rows[0]
    print(
        f"\ntools/call echo, one 2025-11-25 session, wrk {opts.threads} threads "
        f"{opts.connections} connections {opts.duration:g} s; sequential latency over "
        f"{opts.calls} calls on one connection; {os.cpu_count()} cores\n"
    )
    head = f"{'server':<12} {'req/s':>8} {'ratio':>6} {'wrk p50':>8} {'wrk p99':>8} {'errors':>6}"
    head += f" {'seq p50':>8} {'seq p99':>8} {'+p99':>7}"
    print(head)
    for r in rows:
        print(
            f"{r['name']:<12} {r['rps']:>8.0f} {r['rps'] / base['rps']:>6.2f} "
            f"{r['wrk_p50_ms']:>6.2f}ms {r['wrk_p99_ms']:>6.2f}ms {r['errors']:>6} "
            f"{r['seq_p50_ms']:>6.2f}ms {r['seq_p99_ms']:>6.2f}ms "
            f"{r['seq_p99_ms'] - base['seq_p99_ms']:>+5.2f}ms"
        )
    print(
        "\nRedis per request, one worker, 200 sequential requests of each kind: round trips "
        "(the worker's count; a pipeline is one) and commands (INFO commandstats; EVALSHA = "
        "one script):"
    )
    for kind, t in trips.items():
        shown = ", ".join(f"{c} {v:.2f}" for c, v in t["commands"].items())
        print(f"  {kind:<30} {t['round_trips']:.2f} round trips  ({shown})  ops {t['ops']}")
    print(
        "  (a request of a session that a worker has not served before also reads the session's"
        " record once: HGETALL)"
    )
    plain, rpy = path["plain connection"], path["redis-py"]
    print(
        f"\nthe store's calls for one request (claim; events, response and release pipelined), "
        f"in one process, in turns: plain RESP connection {plain:.0f} us, redis-py asyncio "
        f"{rpy:.0f} us ({rpy / plain:.2f}x)"
    )
    print(f"\nclaims left in Redis after each run: {[r['claims_left'] for r in rows]}")
    if opts.json:
        out = {"rows": rows, "trips": trips, "store_path_us": path}
        Path(opts.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
