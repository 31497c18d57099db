"""The runtime's benchmark: the core's cost per request lifecycle, then tools/call over HTTP.

    .venv/bin/python bench/runtime.py [--duration 10] [--warmup 2] [--rounds 3] [--connections 10]

1. **Core, in process** (``time.perf_counter_ns`` over many iterations): one 2025-11-25 http
   session core; per request lifecycle ``arrive`` (admitted), ``emit`` (a progress notification
   routed to its own stream), ``finish`` (the response routed, entries released); a refused
   duplicate (``arrive`` under an id in flight); and a new ``SessionCore`` (what 2026-07-28 http
   pays per POST).  Every returned verdict is checked (admitted, routed to its own handle,
   refused), and the core must be empty at the end.
2. **HTTP, over loopback**, one server at a time, each a subprocess run the same way (uvicorn,
   one worker, ``log_level=warning``, no access log, lifespan on, no proxy headers, no
   ``server`` or ``date`` header, uvloop when installed: the settings of ``mcp-inflight serve``):

   * ``ours``: ``mcp-inflight serve --port 0`` (the demo tools; ``echo`` is called);
   * ``sdk``:  ``bench/sdk_echo.py``, the official ``mcp`` SDK's low-level ``Server`` with the same
     ``echo`` tool on its ``streamable_http_app()`` (sessions, SSE answers);
   * ``bare``: ``bench/bare_echo.py``, a bare ASGI app answering the same call with one SSE event
     (the ceiling).

   The servers take turns (``--rounds``, default 3: ours, sdk, bare, ours, ...) and the median
   of each figure is reported, with the ratios taken round by round (the machine is shared and
   its load drifts).  The load generator is ``wrk`` (native) with ``bench/wrk_call.lua``: every request a
   ``tools/call echo`` under its own id, in the session that an ``initialize`` made first.  The
   Lua script checks every response (a 200 whose body has a result with the echoed text); after
   the run a sample of calls is made with httpx and the SSE body parsed (one message, its id,
   its text).  A run whose responses are not all good is reported as invalid, not as a figure.
   Which event loop and HTTP parser each server process used is read from its memory map
   (``/proc/PID/maps``: uvloop's and httptools' extension modules).

``--servers`` also takes ``ours-online``: ``mcp-inflight serve --online-check``, the same server
checking every session's exchanges against the model as they happen; beside ``ours`` in one run
(``--servers ours,ours-online``) the script prints the check's cost per call and the check's own
counts (events, steps checked, violations, sessions past its bound), which serve prints as it
stops.  ``--servers`` also takes ``ours-app``: our ASGI app (``create_app(demo_server())``, as ``serve``
builds it) through this script's runner, so that ``--loop asyncio`` can be compared with the
same app; ``--loop`` applies to the servers this script runs (``ours`` is always the CLI).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from mcp_inflight.impl import sse

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LUA = HERE / "wrk_call.lua"
ECHO_TEXT = "hello"
SERVERS = ("ours", "sdk", "bare", "ours-app", "ours-online")
TITLES = {
    "ours": "mcp-inflight serve",
    "ours-online": "mcp-inflight serve --online-check",
    "ours-app": "mcp-inflight app (bench runner)",
    "sdk": "official mcp 2.3.0 SDK",
    "bare": "bare ASGI (ceiling)",
}
LISTEN = re.compile(r"listening on (http://\S+)")


# --- the servers (subprocess side) ---------------------------------------------------------


def uvicorn_config(app, port: int):
    """The uvicorn settings of ``mcp-inflight serve`` (mcp_inflight/serve.py), for every server."""
    import uvicorn

    from mcp_inflight.serve import uvicorn_settings

    return uvicorn.Config(app, host="127.0.0.1", port=port, **uvicorn_settings())


def serve_subprocess(name: str, port: int, loop: str) -> int:
    """Run one bench server (``--serve NAME``): the runner used for ``sdk``, ``bare``, ``ours-app``."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    if name == "sdk":
        from sdk_echo import app
    elif name == "bare":
        from bare_echo import app
    elif name == "ours-app":
        from mcp_inflight.impl.http import LOOPBACK, create_app
        from mcp_inflight.serve import demo_server

        app = create_app(demo_server(), "/mcp", allowed_hosts=set(LOOPBACK) | {"127.0.0.1"})
    else:
        raise SystemExit(f"unknown server {name!r}")
    config = uvicorn_config(app, port)
    server = uvicorn.Server(config)

    async def main():
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                return await task
            await asyncio.sleep(0.02)
        p = server.servers[0].sockets[0].getsockname()[1]
        print(
            f"bench server {name}: listening on http://127.0.0.1:{p}/mcp",
            file=sys.stderr,
            flush=True,
        )
        await task

    if loop == "auto":
        try:
            import uvloop  # noqa: F401

            loop = "uvloop"
        except ImportError:
            loop = "asyncio"
    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())
    return 0


class Running:
    """A server subprocess, started and stopped by the benchmark."""

    def __init__(self, name: str, loop: str):
        self.name = name
        if name in ("ours", "ours-online"):
            exe = ROOT / ".venv" / "bin" / "mcp-inflight"
            cmd = [str(exe) if exe.exists() else "mcp-inflight", "serve", "--port", "0"]
            if name == "ours-online":
                cmd.append("--online-check")
        else:
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--serve",
                name,
                "--port",
                "0",
                "--loop",
                loop,
            ]
        self.cmd = cmd
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT)
        )
        deadline = time.monotonic() + 30
        self.url = None
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            m = LISTEN.search(line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.stop()
            raise RuntimeError(f"{name}: server did not start: {' '.join(cmd)}\n{''.join(seen)}")

    def runtime(self) -> tuple[str, str]:
        """(event loop, HTTP parser) of the server process, from the modules mapped in memory."""
        try:
            maps = Path(f"/proc/{self.proc.pid}/maps").read_text()
        except OSError:
            return "unknown", "unknown"
        loop = "uvloop" if "/uvloop/loop." in maps else "asyncio"
        parser = "httptools" if "/httptools/parser/parser." in maps else "h11"
        return loop, parser

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


# --- HTTP client side ----------------------------------------------------------------------

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench-runtime", "version": "1"},
}


def sse_messages(text: str) -> list:
    return sse.messages(text)


def open_session(client, url) -> dict:
    """initialize + notifications/initialized; the headers later calls need."""
    r = client.post(
        url,
        headers=ACCEPT,
        content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}),
    )
    if r.status_code != 200:
        raise RuntimeError(f"initialize: HTTP {r.status_code}: {r.text[:200]}")
    sid = r.headers.get("mcp-session-id")
    if not sid:
        raise RuntimeError("initialize: no Mcp-Session-Id")
    h = {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    r = client.post(
        url,
        headers=h,
        content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    if r.status_code != 202:
        raise RuntimeError(f"notifications/initialized: HTTP {r.status_code}")
    return h


def sample_calls(client, url, headers, n: int, tag: str) -> tuple[int, list[str]]:
    """``n`` tools/call echo with fresh ids; each SSE body parsed and checked. (good, problems)."""
    good, problems = 0, []
    for k in range(n):
        rid = f"sample-{tag}-{k}"
        text = f"{ECHO_TEXT}-{k}"
        r = client.post(
            url,
            headers=headers,
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}},
                }
            ),
        )
        why = None
        if r.status_code != 200:
            why = f"HTTP {r.status_code}"
        elif not r.headers.get("content-type", "").startswith("text/event-stream"):
            why = f"content-type {r.headers.get('content-type')}"
        else:
            msgs = sse_messages(r.text)
            if len(msgs) != 1:
                why = f"{len(msgs)} SSE messages"
            else:
                m = msgs[0]
                res = m.get("result") or {}
                content = res.get("content") or [{}]
                if m.get("id") != rid:
                    why = f"id {m.get('id')!r} != {rid!r}"
                elif "error" in m or res.get("isError"):
                    why = f"error: {m}"
                elif content[0].get("text") != text:
                    why = f"text {content[0].get('text')!r} != {text!r}"
        if why is None:
            good += 1
        else:
            problems.append(why)
    return good, problems


def run_wrk(url, sid, seconds, threads, connections, timeout=10) -> tuple[dict, str]:
    cmd = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{seconds:g}s",
        f"--timeout={timeout}s",
        "--latency",
        "-s",
        str(LUA),
        url,
        "--",
        sid,
        ECHO_TEXT,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if p.returncode != 0:
        raise RuntimeError(f"wrk failed ({p.returncode}): {p.stderr.strip()}")
    for line in p.stdout.splitlines():
        if line.startswith("WRKRESULT "):
            return json.loads(line[len("WRKRESULT ") :]), p.stdout
    raise RuntimeError(f"wrk printed no WRKRESULT line:\n{p.stdout}")


def bench_server(name, args) -> dict:
    import httpx

    srv = Running(name, args.loop)
    try:
        with httpx.Client(timeout=10) as client:
            headers = open_session(client, srv.url)
            sid = headers["mcp-session-id"]
            pre_good, pre_problems = sample_calls(client, srv.url, headers, args.sample, "pre")
            # uvicorn's own headers tell whether the server ran with serve's settings
            probe = client.post(
                srv.url,
                headers=headers,
                content=json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": "uvicorn-headers",
                        "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": ECHO_TEXT}},
                    }
                ),
            )
            uvicorn_headers = sorted(k for k in ("server", "date") if k in probe.headers)
            if args.warmup > 0:
                warm, _ = run_wrk(srv.url, sid, args.warmup, args.threads, args.connections)
            else:
                warm = None
            res, raw = run_wrk(srv.url, sid, args.duration, args.threads, args.connections)
            post_good, post_problems = sample_calls(client, srv.url, headers, args.sample, "post")
        rss_kb = _rss_kb(srv.proc.pid)
        loop, parser = srv.runtime()  # after the load: every module it uses is loaded
    finally:
        srv.stop()
    online = None  # the online check's own counts, printed by serve as it stops
    for line in (srv.proc.stderr.read() or "").splitlines():
        if "online check: " in line:
            online = json.loads(line.split("online check: ", 1)[1])
    secs = res["duration_us"] / 1e6
    errors = res["connect_errors"] + res["read_errors"] + res["write_errors"] + res["timeouts"]
    # wrk counts a request in summary.requests when its response is complete; the Lua checks
    # ran on each of them, so ok must equal requests for the run to count.
    valid = (
        res["ok"] == res["requests"]
        and res["bad_status"] == 0
        and res["bad_body"] == 0
        and res["status_errors"] == 0
        and errors == 0
        and pre_good == args.sample
        and post_good == args.sample
        and (warm is None or (warm["ok"] == warm["requests"] and warm["status_errors"] == 0))
    )
    return {
        "server": name,
        "title": TITLES[name],
        "cmd": " ".join(srv.cmd),
        "loop": loop,
        "parser": parser,
        "uvicorn_headers": uvicorn_headers,
        "calls_per_s": res["requests"] / secs if secs else 0.0,
        "p50_ms": res["p50_us"] / 1000,
        "p90_ms": res["p90_us"] / 1000,
        "p99_ms": res["p99_us"] / 1000,
        "max_ms": res["max_us"] / 1000,
        "requests": res["requests"],
        "ok": res["ok"],
        "non_2xx": res["status_errors"],
        "bad_status": res["bad_status"],
        "bad_body": res["bad_body"],
        "socket_errors": errors,
        "warmup": warm and {"requests": warm["requests"], "ok": warm["ok"]},
        "sample_ok": pre_good + post_good,
        "sample_n": 2 * args.sample,
        "sample_problems": (pre_problems + post_problems)[:5],
        "rss_mb": rss_kb / 1024 if rss_kb else None,
        "valid": valid,
        "online": online,
    }


def _rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


# --- the core, in process ------------------------------------------------------------------


def bench_core(n: int) -> dict:
    from mcp_inflight.impl.core import Admitted, Refused, SessionCore

    pc = time.perf_counter_ns
    # the timer's own cost, subtracted from the per-step figures
    t0 = pc()
    for _ in range(n):
        pc()
    timer = (pc() - t0) / n

    core = SessionCore("2025-11-25", "http")
    for i in range(min(n, 2000)):  # warm-up
        h = core.arrive(i).handle
        core.emit(h)
        core.finish(h)

    # the whole lifecycle, untimed inside the loop
    t0 = pc()
    for i in range(n):
        h = core.arrive(i).handle
        core.emit(h)
        core.finish(h)
    lifecycle = (pc() - t0) / n

    # step by step, every verdict checked
    ta = te = tf = 0
    for i in range(n):
        a = pc()
        v = core.arrive(i)
        b = pc()
        if type(v) is not Admitted:
            raise AssertionError(f"arrive({i}) on a free id was not admitted: {v}")
        h = v.handle
        c = pc()
        to = core.emit(h)
        d = pc()
        if to is not h:
            raise AssertionError(f"progress of {h} routed to {to}")
        e = pc()
        to = core.finish(h)
        f = pc()
        if to is not h:
            raise AssertionError(f"response of {h} routed to {to}")
        ta += b - a
        te += d - c
        tf += f - e

    # a refused duplicate: an id in flight, arriving again
    h = core.arrive("dup").handle
    t0 = pc()
    for _ in range(n):
        v = core.arrive("dup")
    refused = (pc() - t0) / n
    if type(v) is not Refused or v.error["data"]["id"] != "dup":
        raise AssertionError(f"a duplicate was not refused: {v}")
    if core.finish(h) is not h:
        raise AssertionError("the original lost its stream to a refused duplicate")
    if not core.empty():
        raise AssertionError(f"registries not empty after the run: {core.registries()}")

    m = max(1, n // 10)
    t0 = pc()
    for _ in range(m):
        SessionCore("2026-07-28", "http")
    new_core = (pc() - t0) / m

    us = 1000.0
    return {
        "iterations": n,
        "lifecycle_us": lifecycle / us,
        "arrive_admit_us": max(0.0, ta / n - timer) / us,
        "emit_us": max(0.0, te / n - timer) / us,
        "finish_us": max(0.0, tf / n - timer) / us,
        "refused_duplicate_us": refused / us,
        "new_session_core_us": new_core / us,
        "timer_ns": timer,
    }


# --- report --------------------------------------------------------------------------------


def load_core(path: str):
    """``SessionCore`` of another version of the runtime, imported beside the current one under
    names of its own: ``path`` is a directory holding that version's ``core.py`` and
    ``generated.py`` (``git archive REV impl | tar -x -C DIR``, then ``DIR/impl``), or a lone
    ``core.py`` (``git show REV:impl/core.py > FILE``), which then runs the current
    ``impl/generated.py``."""
    import importlib.util
    import types

    here = Path(path)
    if here.is_dir():
        pkg = types.ModuleType("mcp_inflight.impl._baseline")
        pkg.__path__ = [str(here)]
        sys.modules[pkg.__name__] = pkg
        name, file = f"{pkg.__name__}.core", here / "core.py"
    else:
        name, file = "mcp_inflight.impl._core_baseline", here
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise OSError(f"cannot import {file}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.SessionCore


def bench_core_against(baseline, n: int, pairs: int = 15) -> dict:
    """Lifecycles (arrive, emit, finish, each verdict checked) on the baseline core and on the
    current one, in turns in one process, ``pairs`` times; medians and the median of the
    per-pair ratios (the machine's load drifts, so the ratio is what to read)."""
    from statistics import median

    from mcp_inflight.impl.core import SessionCore

    pc = time.perf_counter_ns

    def once(cls) -> float:
        core = cls("2025-11-25", "http")
        for i in range(1000):  # warm-up
            h = core.arrive(i).handle
            core.emit(h)
            core.finish(h)
        t0 = pc()
        for i in range(n):
            h = core.arrive(i).handle
            if core.emit(h) is not h or core.finish(h) is not h:
                raise AssertionError(f"{cls.__module__}: a message of {h} was misrouted")
        t = (pc() - t0) / n / 1000.0
        if not core.empty():
            raise AssertionError(f"{cls.__module__}: registries not empty after the run")
        return t

    base, cur = [], []
    for _ in range(pairs):
        base.append(once(baseline))
        cur.append(once(SessionCore))
    return {
        "pairs": pairs,
        "iterations": n,
        "baseline_us": median(base),
        "current_us": median(cur),
        "ratio": median(c / b for c, b in zip(cur, base, strict=True)),
    }


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def print_core(c: dict) -> None:
    print(
        f"core (SessionCore 2025-11-25 http, {c['iterations']:,} iterations, perf_counter_ns; "
        f"timer cost {c['timer_ns']:.0f} ns subtracted per step)"
    )
    print(f"  request lifecycle, arrive + emit + finish  {c['lifecycle_us']:8.2f} us")
    print(f"    arrive (admitted)                        {c['arrive_admit_us']:8.2f} us")
    print(f"    emit (progress routed to its stream)     {c['emit_us']:8.2f} us")
    print(f"    finish (response routed, released)      {c['finish_us']:8.2f} us")
    print(f"  refused duplicate (arrive, id in flight)   {c['refused_duplicate_us']:8.2f} us")
    print(f"  new SessionCore (2026-07-28 http: per POST) {c['new_session_core_us']:7.2f} us")


def summarize(rounds: list[dict]) -> dict:
    """One server's rounds: the median of each figure, the sums of the counts."""
    from statistics import median

    r = dict(rounds[-1])
    for key in ("calls_per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "rss_mb"):
        vals = [x[key] for x in rounds if x[key] is not None]
        r[key] = median(vals) if vals else None
    for key in (
        "requests",
        "ok",
        "non_2xx",
        "bad_status",
        "bad_body",
        "socket_errors",
        "sample_ok",
        "sample_n",
    ):
        r[key] = sum(x[key] for x in rounds)
    r["sample_problems"] = [p for x in rounds for p in x["sample_problems"]][:5]
    r["valid"] = all(x["valid"] for x in rounds)
    r["loop"] = "/".join(sorted({x["loop"] for x in rounds}))
    r["parser"] = "/".join(sorted({x["parser"] for x in rounds}))
    r["rounds_calls_per_s"] = [round(x["calls_per_s"]) for x in rounds]
    return r


def print_http(rows: list[dict], runs: dict, args) -> None:
    per = f"median of {args.rounds} rounds" if args.rounds > 1 else "one round"
    print(
        f"\ntools/call echo over HTTP (loopback), wrk {args.threads} thread, {args.connections} connections, "
        f"{args.duration:g} s after {args.warmup:g} s warm-up per server and round, servers taking turns; "
        f"one session per server, SSE answers; {per}; counts summed"
    )
    hdr = (
        f"  {'server':34} {'calls/s':>8} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'requests':>9} "
        f"{'non-2xx':>7} {'bad':>4} {'errs':>4} {'sample':>7} {'RSS MB':>6}  loop/parser"
    )
    print(hdr)
    for r in rows:
        flag = "" if r["valid"] else "   INVALID RUN"
        rss = f"{r['rss_mb']:6.0f}" if r["rss_mb"] else "     ?"
        print(
            f"  {r['title']:34} {r['calls_per_s']:8.0f} {r['p50_ms']:7.2f} {r['p90_ms']:7.2f} {r['p99_ms']:7.2f} "
            f"{r['requests']:9d} {r['non_2xx']:7d} {r['bad_status'] + r['bad_body']:4d} "
            f"{r['socket_errors']:4d} {r['sample_ok']:>3}/{r['sample_n']:<3} {rss}  {r['loop']}/{r['parser']}{flag}"
        )
        for p in r["sample_problems"]:
            print(f"      sample problem: {p}")
    if args.rounds > 1:
        print(
            "  calls/s per round: "
            + "; ".join(
                f"{r['server']} {', '.join(str(v) for v in r['rounds_calls_per_s'])}" for r in rows
            )
        )
    if len({(r["loop"], r["parser"]) for r in rows}) > 1:
        print("  NOTE: the servers did not all run on the same event loop and HTTP parser")
    if len({tuple(r["uvicorn_headers"]) for r in rows}) > 1:
        print(
            "  NOTE: uvicorn's server/date headers differ between the servers: not the same uvicorn settings "
            + "; ".join(f"{r['server']}: {', '.join(r['uvicorn_headers']) or 'none'}" for r in rows)
        )
    by = {r["server"]: r for r in rows}
    ours = by.get("ours") or by.get("ours-app")
    if ours is None:
        return
    print()
    from statistics import median

    if "ours" in by and "ours-online" in by:
        on = by["ours-online"]
        pairs = list(zip(runs["ours"], runs["ours-online"], strict=False))
        cost = median(
            1e6 / b["calls_per_s"] - 1e6 / a["calls_per_s"]
            for a, b in pairs
            if a["calls_per_s"] and b["calls_per_s"]
        )
        ratio = median(b["calls_per_s"] / a["calls_per_s"] for a, b in pairs if a["calls_per_s"])
        counts = [x["online"] for x in runs["ours-online"]]
        print(
            f"  online check: {ratio:5.2f}x the throughput without it, {cost:+.1f} us of server "
            f"time per call (median of rounds: 1/rate with minus without)"
        )
        for k, c in enumerate(counts, 1):
            print(f"    round {k}: the check's counts {c}")
        on["online_cost_us_per_call"] = cost

    for other, aim in (("sdk", 3.0), ("bare", 0.7)):
        if other in by:
            o = by[other]
            per_round = [
                a["calls_per_s"] / b["calls_per_s"]
                for a, b in zip(runs[ours["server"]], runs[other], strict=False)
                if b["calls_per_s"]
            ]
            ratio = median(per_round) if per_round else float("inf")
            ok = ours["valid"] and o["valid"]
            verdict = (
                ("meets" if ratio >= aim else "MISSES") if ok else "not comparable (invalid run)"
            )
            rounds = (
                f"  per round: {', '.join(f'{x:.2f}' for x in per_round)}"
                if len(per_round) > 1
                else ""
            )
            print(
                f"  throughput {ours['server']} / {other}: {ratio:5.2f}x   (aim >= {aim:g}x: {verdict}){rounds}"
            )
            ours.setdefault("ratios", {})[other] = {
                "median": ratio,
                "per_round": per_round,
                "aim": aim,
            }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="bench/runtime.py",
        description="The runtime's cost: the sans-IO core per request lifecycle (in process), then "
        "tools/call throughput and p50/p99 latency over loopback HTTP for mcp-inflight serve, "
        "the official mcp SDK and a bare ASGI app, one server at a time, wrk as the load.",
    )
    p.add_argument(
        "--duration", type=int, default=10, help="seconds of measured load per server (default 10)"
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="seconds of warm-up load per server, not counted (default 2)",
    )
    p.add_argument("--connections", type=int, default=10, help="wrk connections (default 10)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="the servers take turns this many times; medians are reported (default 3)",
    )
    p.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    p.add_argument(
        "--core-iterations",
        type=int,
        default=100_000,
        metavar="N",
        help="request lifecycles timed in process (default 100000)",
    )
    p.add_argument(
        "--servers",
        default="ours,sdk,bare",
        help=f"comma-separated, in order, from {', '.join(SERVERS)} (default ours,sdk,bare)",
    )
    p.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="event loop for the servers this script runs (sdk, bare, ours-app); auto: uvloop "
        "when installed, as uvicorn's own default and mcp-inflight serve choose (default auto)",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=20,
        metavar="N",
        help="calls per server before and after the load whose SSE bodies are parsed (default 20)",
    )
    p.add_argument(
        "--core-baseline",
        metavar="PATH",
        help="also time the lifecycle of another version of the core in turns with the current "
        "one: a directory with its core.py and generated.py (git archive REV impl | tar -x), or "
        "a lone core.py (run on the current generated.py)",
    )
    p.add_argument("--no-core", action="store_true", help="skip the in-process core figures")
    p.add_argument("--no-http", action="store_true", help="skip the HTTP figures")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    p.add_argument("--serve", metavar="NAME", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        return serve_subprocess(args.serve, args.port, args.loop)

    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    bad = [s for s in servers if s not in SERVERS]
    if bad:
        p.error(f"unknown server(s) {', '.join(bad)}; choose from {', '.join(SERVERS)}")
    if not args.no_http and shutil.which("wrk") is None:
        print("bench/runtime.py: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2

    out = {"uptime_before": uptime(), "python": sys.version.split()[0], "cpus": os.cpu_count()}
    print(f"load before: {out['uptime_before']}")
    print(f"python {out['python']}, {out['cpus']} cpus\n")
    if not args.no_core:
        out["core"] = bench_core(args.core_iterations)
        print_core(out["core"])
        if args.core_baseline:
            ab = out["core_against"] = bench_core_against(
                load_core(args.core_baseline), max(1000, args.core_iterations // 5)
            )
            ab["baseline"] = args.core_baseline
            print(
                f"  lifecycle against {args.core_baseline} ({ab['pairs']} turns each, "
                f"{ab['iterations']:,} lifecycles a turn): baseline {ab['baseline_us']:.2f} us, "
                f"current {ab['current_us']:.2f} us, current / baseline {ab['ratio']:.2f}"
            )
    rows = []
    if not args.no_http:
        runs = {name: [] for name in servers}
        for k in range(args.rounds):
            for name in servers:
                print(
                    f"  ... round {k + 1}/{args.rounds}, {TITLES[name]}: {args.warmup:g} s warm-up + "
                    f"{args.duration:g} s",
                    file=sys.stderr,
                    flush=True,
                )
                try:
                    runs[name].append(bench_server(name, args))
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    print(f"bench/runtime.py: {TITLES[name]}: {e}", file=sys.stderr)
                    return 1
        rows = [summarize(runs[name]) for name in servers]
        out["http"] = rows
        out["http_rounds"] = runs
        print_http(rows, runs, args)
    out["uptime_after"] = uptime()
    print(f"\nload after: {out['uptime_after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
