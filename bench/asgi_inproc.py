"""tools/call ``echo`` through the ASGI apps alone, in process: no sockets, no HTTP parser.

    .venv/bin/python bench/asgi_inproc.py [--calls 20000] [--rounds 5] [--profile] [--base-rev REV]

The app's share of a call, without uvicorn: ``create_app(demo_server())`` as ``mcp-inflight
serve`` builds it (its default options: event store on, every check) and ``bench/bare_echo.py``
take turns, each answering ``--calls`` POSTs of a ``tools/call echo`` under fresh ids in one
2025-11-25 session, on uvloop when installed.  ``receive`` hands over the body in one message
and ``send`` collects what the app writes; every answer is checked (status 200, one SSE
``message`` event whose data has the call's id and the echoed text).  Medians of the rounds in
microseconds of CPU time (``thread_time``) per call, and the difference ours - bare: the Python our app adds per call.
``--profile`` runs our app under cProfile once and prints the top functions; ``--sample``
samples its stacks instead (``SIGPROF`` on the process's CPU time, so the profile's own cost is
not spread over the functions as cProfile's is) and prints the shares of the app's functions,
inclusive and own, then the own time by source file.  ``--base-rev REV`` also times the app of git revision REV (its package
unpacked to a temporary directory, as ``bench/runtime.py --online-base`` does): the two
revisions cannot share one process (one package name), so each round runs ours now, ours of
REV and the bare app each in a fresh process of its own, in turns, and the ratio now / before is
taken round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
]


def _scope(headers: list) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": headers,
        "state": {},
    }


def _body(rid: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":"' + rid.encode() + b'","method":"tools/call",'
        b'"params":{"name":"echo","arguments":{"text":"hello"}}}'
    )


async def _call(app, scope: dict, body: bytes) -> tuple[int, bytes]:
    out: list = []
    given = False

    async def receive():
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # never: the app reads the body once

    async def send(m):
        out.append(m)

    await app(scope, receive, send)
    status = out[0]["status"]
    return status, b"".join(m.get("body", b"") for m in out[1:])


async def _session(app) -> list:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "0"},
        },
    }
    out: list = []

    async def receive():
        return {"type": "http.request", "body": json.dumps(init).encode(), "more_body": False}

    async def send(m):
        out.append(m)

    await app(_scope(HEADERS), receive, send)
    sid = dict(out[0]["headers"])[b"mcp-session-id"]
    headers = HEADERS + [(b"mcp-session-id", sid), (b"mcp-protocol-version", b"2025-11-25")]
    # initialized notification, as a client sends it
    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    await _call(app, _scope(headers), note)
    return headers


def _check(status: int, body: bytes, rid: str) -> None:
    if status != 200:
        raise AssertionError(f"status {status}: {body[:200]!r}")
    msgs = [ln[6:] for ln in body.split(b"\n") if ln.startswith(b"data: ") and len(ln) > 6]
    if len(msgs) != 1:
        raise AssertionError(f"{len(msgs)} messages in {body!r}")
    m = json.loads(msgs[0])
    if m.get("id") != rid or m["result"]["content"][0]["text"] != "hello":
        raise AssertionError(f"wrong answer {m}")


async def _run(app, n: int, tag: str, check_every: int = 97) -> float:
    headers = await _session(app)
    scope = _scope(headers)
    for k in range(200):  # warm-up
        rid = f"{tag}w{k}"
        _check(*await _call(app, dict(scope), _body(rid)), rid)
    bodies = [(f"{tag}{k}", _body(f"{tag}{k}")) for k in range(n)]
    t0 = time.thread_time_ns()  # CPU time: steadier than wall time on a shared machine
    for k, (rid, body) in enumerate(bodies):
        status, got = await _call(app, dict(scope), body)
        if k % check_every == 0:
            _check(status, got, rid)
        elif status != 200:
            raise AssertionError(f"status {status}")
    return (time.thread_time_ns() - t0) / n / 1000.0


def apps():
    sys.path.insert(0, str(HERE))
    from bare_echo import app as bare

    from mcp_inflight.impl.http import LOOPBACK, create_app
    from mcp_inflight.serve import demo_server

    ours = create_app(demo_server(), "/mcp", allowed_hosts=set(LOOPBACK) | {"127.0.0.1"})
    return ours, bare


def new_loop():
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()


def bench(calls: int, rounds: int) -> dict:
    ours_t, bare_t = [], []
    loop = new_loop()
    try:
        for r in range(rounds):
            ours, bare = apps()
            ours_t.append(loop.run_until_complete(_run(ours, calls, f"o{r}-")))
            bare_t.append(loop.run_until_complete(_run(bare, calls, f"b{r}-")))
            if ours.live_requests():
                raise AssertionError("requests left in flight after the run")
    finally:
        loop.close()
    return {
        "calls": calls,
        "rounds": rounds,
        "ours_us": median(ours_t),
        "bare_us": median(bare_t),
        "ours_rounds": ours_t,
        "bare_rounds": bare_t,
        "added_us": median(o - b for o, b in zip(ours_t, bare_t, strict=True)),
    }


def print_bench(b: dict) -> None:
    print(
        f"ASGI app alone, in process (tools/call echo, {b['calls']:,} calls x {b['rounds']} rounds, "
        f"medians): ours {b['ours_us']:.1f} us/call, bare {b['bare_us']:.1f} us/call, ours - bare "
        f"{b['added_us']:.1f} us"
    )
    print(
        "  per round: ours "
        + ", ".join(f"{x:.1f}" for x in b["ours_rounds"])
        + "; bare "
        + ", ".join(f"{x:.1f}" for x in b["bare_rounds"])
    )


def one(which: str, calls: int, tag: str) -> float:
    """One round of one app in this process (a worker of ``--base-rev``)."""
    ours, bare = apps()
    loop = new_loop()
    try:
        t = loop.run_until_complete(_run(ours if which == "ours" else bare, calls, tag))
        if which == "ours" and ours.live_requests():
            raise AssertionError("requests left in flight after the run")
    finally:
        loop.close()
    return t


def against(rev: str, calls: int, rounds: int) -> dict:
    """Ours now, ours of ``rev`` and the bare app, each round a fresh process apiece, in turns."""
    import os
    import shutil
    import subprocess

    sys.path.insert(0, str(HERE))
    from runtime import base_package

    base = base_package(rev)
    root = str(HERE.parent)

    def run(which: str, path: str | None, tag: str) -> float:
        env = dict(os.environ)
        if path is not None:  # the base package ahead of the installed one
            env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
        argv = [sys.executable, str(HERE / "asgi_inproc.py"), "--one", which]
        argv += ["--calls", str(calls), "--tag", tag]
        out = subprocess.run(argv, env=env, cwd=path or root, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{which} ({path or 'now'}) failed: {out.stderr[-2000:]}")
        where, us = out.stdout.split()[-2:]
        if not where.startswith(path or root):  # the package of the revision asked for
            raise RuntimeError(f"{which} ran {where}, not the package under {path or root}")
        return float(us)

    now, before, bare = [], [], []
    try:
        for r in range(rounds):
            now.append(run("ours", None, f"n{r}-"))
            before.append(run("ours", base, f"b{r}-"))
            bare.append(run("bare", None, f"x{r}-"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {
        "rev": rev,
        "calls": calls,
        "rounds": rounds,
        "now": now,
        "before": before,
        "bare": bare,
        "ratio": median(n / b for n, b in zip(now, before, strict=True)),
    }


def print_against(a: dict) -> None:
    print(
        f"ASGI app, ours now against ours of {a['rev']} (tools/call echo, {a['calls']:,} calls, "
        f"{a['rounds']} rounds, a fresh process per app and round, medians): now "
        f"{median(a['now']):.1f} us/call, before {median(a['before']):.1f}, bare "
        f"{median(a['bare']):.1f}; now / before {a['ratio']:.2f}x (per round "
        + ", ".join(f"{n / b:.2f}" for n, b in zip(a["now"], a["before"], strict=True))
        + f"); bare / now {median(a['bare']) / median(a['now']):.2f}"
    )
    for key in ("now", "before", "bare"):
        print(f"  {key}: " + ", ".join(f"{x:.1f}" for x in a[key]))


def sample(calls: int, interval: float = 0.0005, top: int = 40) -> None:
    """Our app's stacks sampled on the process's CPU clock: each function's share of the
    samples, inclusive (on the stack) and own (on top)."""
    import collections
    import signal

    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    by_file: collections.Counter[str] = collections.Counter()
    total = 0

    def on_tick(signum: int, frame) -> None:
        nonlocal total
        total += 1
        seen = set()
        first = True
        while frame is not None:
            code = frame.f_code
            key = f"{Path(code.co_filename).name}:{code.co_name}"
            if first:
                own[key] += 1
                by_file[Path(code.co_filename).name] += 1
                first = False
            if key not in seen:
                inclusive[key] += 1
                seen.add(key)
            frame = frame.f_back

    ours, _ = apps()
    loop = new_loop()
    signal.signal(signal.SIGPROF, on_tick)
    signal.setitimer(signal.ITIMER_PROF, interval, interval)
    try:
        us = loop.run_until_complete(_run(ours, calls, "s"))
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        loop.close()
    print(f"{calls:,} calls, {us:.1f} us of CPU per call, {total} samples (inclusive / own)")
    for key, n in inclusive.most_common(top):
        print(f"  {100 * n / total:5.1f}%  {100 * own[key] / total:5.1f}%  {key}")
    print("own time by file (with the C each calls), us per call:")
    for name, n in by_file.most_common(24):
        print(f"  {us * n / total:5.1f}  {100 * n / total:5.1f}%  {name}")


def profile(calls: int) -> None:
    import cProfile
    import pstats

    ours, _ = apps()
    loop = new_loop()
    pr = cProfile.Profile()
    pr.enable()
    loop.run_until_complete(_run(ours, calls, "p"))
    pr.disable()
    loop.close()
    pstats.Stats(pr).sort_stats("tottime").print_stats(40)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/asgi_inproc.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--sample", action="store_true")
    p.add_argument("--base-rev", metavar="REV")
    p.add_argument("--one", choices=("ours", "bare"), help=argparse.SUPPRESS)
    p.add_argument("--tag", default="o-", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        from mcp_inflight.impl import http

        print(f"{http.__file__}\n{one(a.one, a.calls, a.tag):.4f}")
        return 0
    if a.profile:
        profile(a.calls)
        return 0
    if a.sample:
        sample(a.calls)
        return 0
    if a.base_rev:
        print_against(against(a.base_rev, a.calls, a.rounds))
        return 0
    print_bench(bench(a.calls, a.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
