"""The runtime's benchmark: the core's cost per request lifecycle, then tools/call over HTTP.

    .venv/bin/python bench/runtime.py [--duration 10] [--warmup 2] [--rounds 3] [--connections 10]

1. **Core, in process** (CPU time, ``time.thread_time_ns``, over many iterations; the lifecycle
   the median of five runs): one 2025-11-25 http
   session core; per request lifecycle ``arrive`` (admitted), ``emit`` (a progress notification
   routed to its own stream), ``finish`` (the response routed, entries released); a refused
   duplicate (``arrive`` under an id in flight); and a new ``SessionCore`` (what 2026-07-28 http
   pays per POST).  Every returned verdict is checked (admitted, routed to its own handle,
   refused), and the core must be empty at the end.
   Beside it, the online check alone (``trace.online.Monitor.feed``, what ``serve
   --online-check`` runs on each event) per call, on the events the tap writes for one
   ``tools/call echo`` (open, the call, status 200, the response, close; one session, each
   call under its own id, as the load below sends them); its counts must show every call
   checked and no violation.
   ``--core-base-rev REV`` (or ``--core-baseline PATH``) times the core of another revision in
   turns with this one, in one process: the lifecycle before and now, side by side.
   Then the **ASGI apps alone, in process** (``bench/asgi_inproc.py``: our app as ``serve``
   builds it and the bare one, CPU time per ``tools/call echo``, no socket and no HTTP parser)
   and the **memory** per idle session and per in-flight request (``bench/churn.py``'s
   ``tracemalloc`` figures, in a process of its own); ``--no-asgi`` and ``--no-memory`` skip them.
2. **HTTP, over loopback** (``bench/runtime_http.py``), one server at a time, each a subprocess run the same way (uvicorn,
   one worker, ``log_level=warning``, no access log, lifespan on, no proxy headers, no
   ``server`` or ``date`` header, uvloop when installed: the settings of ``mcp-inflight serve``):

   * ``ours``: ``mcp-inflight serve --port 0`` (the demo tools; ``echo`` is called);
   * ``sdk``:  ``bench/sdk_echo.py``, the official ``mcp`` SDK's low-level ``Server`` with the same
     ``echo`` tool on its ``streamable_http_app()`` (sessions, SSE answers);
   * ``bare``: ``bench/bare_echo.py``, a bare ASGI app answering the same call with one SSE event
     (the ceiling);
   * ``bare-serve`` (asked for by name): the same bare app on ``serve``'s uvicorn protocol, which
     writes a response's head and body in one write where uvicorn's own writes twice; beside
     ``bare`` it shows what that saves, beside ``ours`` the app's own share at equal protocol.

   The servers take turns (``--rounds``, default 3: ours, sdk, bare, ours, ...) and the median
   of each figure is reported, with the ratios taken round by round (the machine is shared and
   its load drifts).  The load generator is ``wrk`` (native) with ``bench/wrk_call.lua``: every request a
   ``tools/call echo`` under its own id, in the session that an ``initialize`` made first.  The
   Lua script checks every response (a 200 whose body has a result with the echoed text); after
   the run a sample of calls is made with httpx and the SSE body parsed (one message, its id,
   its text).  A run whose responses are not all good is reported as invalid, not as a figure.
   Which event loop and HTTP parser each server process used is read from its memory map
   (``/proc/PID/maps``: uvloop's and httptools' extension modules).

``--py-spy DIR`` records flame graphs with ``py-spy`` (``pip install py-spy``): the core's
lifecycle in process, after its figures (``DIR/core.svg``), and each server's measured load
over HTTP (``DIR/http-NAME-ROUND.svg``, the sampler attached to the server's process; those
rounds' figures include the sampler's share of the two CPUs, so profile and measure apart).

``--servers`` also takes ``ours-online``: ``mcp-inflight serve --online-check``, the same server
checking every session's exchanges against the model as they happen, in a checker process beside
it; ``ours-online-thread`` and ``ours-online-inline`` the same with ``--online-checker thread``
and ``inline``; ``ours-online-base``, with ``--online-base REV``, the ``serve --online-check`` of
git revision REV (its package unpacked to a temporary directory), the check before.  Beside
``ours`` in one run (``--servers ours,ours-online,...``) the script prints both throughputs,
their ratio and the server time the check adds per call, round by round and as medians, the CPU
time per call of the server's process and of its checker process (from ``/proc``, steadier than
throughput on a shared machine), and the check's own counts (events, steps checked, violations,
parts not checked, events dropped), which serve prints as it stops.  The in-process figures
also time ``Beside.feed`` (the queue a checker process reads) against ``Monitor.feed``.  ``--servers`` also takes ``ours-app``: our ASGI app (``create_app(demo_server())``, as ``serve``
builds it) through this script's runner, so that ``--loop asyncio`` can be compared with the
same app; ``--loop`` applies to the servers this script runs (``ours`` is always the CLI).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from runtime_http import ECHO_TEXT, SERVERS, TITLES, bench_server, print_http, summarize

#: The whole-number options: flag, default, metavar, help.
NUMBERS = (
    ("--duration", 10, "S", "seconds of measured load per server (default 10)"),
    ("--warmup", 2, "S", "seconds of warm-up load per server, not counted (default 2)"),
    ("--connections", 10, "N", "wrk connections (default 10)"),
    (
        "--rounds",
        3,
        "N",
        "the servers take turns this many times; medians are reported (default 3)",
    ),
    ("--threads", 1, "N", "wrk threads (default 1)"),
    ("--core-iterations", 100_000, "N", "request lifecycles timed in process (default 100000)"),
    (
        "--sample",
        20,
        "N",
        "calls per server before and after the load whose SSE bodies are parsed (default 20)",
    ),
)

# --- the core, in process ------------------------------------------------------------------

#: The core's aim per request lifecycle (arrive, emit, finish), in microseconds.
CORE_AIM_US = 10.0
#: The clock of the in-process figures: this thread's CPU time, which a shared machine's load
#: disturbs far less than wall time (the core does no I/O and never waits).
CLOCK = time.thread_time_ns


def lifecycles(core, n: int) -> float:
    """``n`` request lifecycles (arrive, emit, finish) on ``core``, each message checked to go
    to its own request's stream: nanoseconds per lifecycle."""
    pc = CLOCK
    t0 = pc()
    for i in range(n):
        h = core.arrive(i).handle
        if core.emit(h) is not h or core.finish(h) is not h:
            raise AssertionError(f"{type(core).__module__}: a message of {h} was misrouted")
    return (pc() - t0) / n


def bench_core(n: int) -> dict:
    from mcp_inflight.impl.core import Admitted, Refused, SessionCore

    pc = CLOCK
    # the timer's own cost, subtracted from the per-step figures
    t0 = pc()
    for _ in range(n):
        pc()
    timer = (pc() - t0) / n

    core = SessionCore("2025-11-25", "http")
    lifecycles(core, min(n, 2000))  # warm-up
    # the whole lifecycle, untimed inside the loop: the median of five runs
    runs = sorted(lifecycles(core, n) for _ in range(5))
    lifecycle = runs[2]

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
        "lifecycle_runs_us": [x / us for x in runs],
        "arrive_admit_us": max(0.0, ta / n - timer) / us,
        "emit_us": max(0.0, te / n - timer) / us,
        "finish_us": max(0.0, tf / n - timer) / us,
        "refused_duplicate_us": refused / us,
        "new_session_core_us": new_core / us,
        "timer_ns": timer,
    }


def spy_core(out_dir: str, seconds: float = 5.0) -> Path:
    """A flame graph of the core's request lifecycle: ``py-spy`` samples this process while it
    runs lifecycles (each verdict checked) for ``seconds``; written to ``DIR/core.svg``."""
    from runtime_http import py_spy, py_spy_done

    from mcp_inflight.impl.core import SessionCore

    out = Path(out_dir) / "core.svg"
    spy = py_spy(os.getpid(), out, seconds)
    core = SessionCore("2025-11-25", "http")
    end = time.monotonic() + seconds + 1.0  # the sampler attaches first, then runs seconds
    while time.monotonic() < end and spy.poll() is None:
        lifecycles(core, 10_000)
    py_spy_done(spy, out)
    return out


def bench_online(n: int) -> dict:
    """The online check per call: ``Monitor.feed`` over the events of ``n`` echo calls as the
    tap writes them, after as many again as warm-up (the check remembers its steps)."""
    from mcp_inflight.trace.format import C2S, S2C, event
    from mcp_inflight.trace.online import Monitor

    def calls(first: int, count: int) -> list[dict]:
        evs = []
        for k in range(first, first + count):
            rid = f"1-{k}"
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
            call["params"] = {"name": "echo", "arguments": {"text": ECHO_TEXT}}
            res = {"content": [{"type": "text", "text": ECHO_TEXT}], "isError": False}
            evs += [
                event("open", k + 1, C2S, "s", method="POST"),
                event("message", k + 1, C2S, "s", message=call),
                event("status", k + 1, S2C, "s", status=200),
                event(
                    "message", k + 1, S2C, "s", message={"jsonrpc": "2.0", "id": rid, "result": res}
                ),
                event("close", k + 1, S2C, "s", by="server"),
            ]
        return evs

    m = Monitor()
    warm, timed = calls(0, n), calls(n, n)
    for ev in warm:
        m.feed(ev)
    t0 = time.perf_counter_ns()
    for ev in timed:
        m.feed(ev)
    per_call = (time.perf_counter_ns() - t0) / n / 1000.0
    counts = m.summary()
    if counts["violations"] or counts["unchecked_parts"] or counts["steps"] != 4 * n:
        raise AssertionError(f"the online check on clean echo calls counted {counts}")
    # beside the server (what serve --online-check runs by default): the serving path only
    # queues the events; a checker process checks them.  The same calls under other ids.
    from mcp_inflight.trace.checker import Beside

    beside = Beside("process", capacity=10 * (len(warm) + len(timed)))
    for ev in warm:
        beside.feed(ev)
    beside.drain()
    fresh = calls(2 * n, n)
    cpu0 = time.process_time_ns()  # this process's threads: the feeding one and the reports' one
    t0 = time.perf_counter_ns()
    for ev in fresh:
        beside.feed(ev)
    queued = (time.perf_counter_ns() - t0) / n / 1000.0
    t1 = time.perf_counter_ns()
    got = beside.close()
    drained = (time.perf_counter_ns() - t1) / 1e9
    cpu = (time.process_time_ns() - cpu0) / n / 1000.0
    if (
        got["violations"]
        or got["unchecked_parts"]
        or got["dropped_events"]
        or got["steps"] != 4 * n
    ):
        raise AssertionError(f"the online check beside, on clean echo calls, counted {got}")
    return {
        "calls": n,
        "per_call_us": per_call,
        "events_per_call": len(timed) / n,
        "counts": counts,
        "beside_per_call_us": queued,
        "beside_cpu_per_call_us": cpu,
        "beside_drain_s": drained,
        "beside_counts": got,
    }


def base_package(rev: str) -> str:
    """The package of git revision ``rev`` laid out as installed (``mcp_inflight`` with its
    ``model``, ``impl`` and ``proofs`` inside), in a temporary directory: its path."""
    import tempfile

    root = Path(__file__).resolve().parent.parent
    out = Path(tempfile.mkdtemp(prefix="mcp-inflight-base-"))
    tar = subprocess.run(
        ["git", "-C", str(root), "archive", rev, "mcp_inflight", "model", "impl", "proofs"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    for sub in ("model", "impl", "proofs"):
        (out / sub).rename(out / "mcp_inflight" / sub)
    return str(out)


def base_impl(rev: str) -> str:
    """``impl/`` of git revision ``rev`` unpacked to a temporary directory: its path."""
    import tempfile

    root = Path(__file__).resolve().parent.parent
    out = Path(tempfile.mkdtemp(prefix="mcp-inflight-core-"))
    tar = subprocess.run(
        ["git", "-C", str(root), "archive", rev, "impl"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    return str(out / "impl")


def bench_memory(sessions: int = 500, inflight: int = 500) -> dict:
    """Memory per idle session and per in-flight request: ``bench/churn.py`` (a short churn,
    then ``tracemalloc`` over sessions and requests held), in a process of its own."""
    import re

    here = Path(__file__).resolve().parent
    run = subprocess.run(
        [
            sys.executable,
            str(here / "churn.py"),
            "--cycles",
            "1000",
            "--sessions",
            str(sessions),
            "--inflight",
            str(inflight),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    got: dict = {"sessions": sessions, "inflight": inflight}
    for key, label in (
        ("idle_session_bytes", "memory per idle session"),
        ("inflight_request_bytes", "memory per in-flight request"),
    ):
        m = re.search(rf"{label}: ([0-9,]+) bytes", run.stdout)
        if m:
            got[key] = int(m.group(1).replace(",", ""))
    return got


def print_summary(out: dict, rows: list[dict]) -> None:
    """The figures of this run side by side."""
    from statistics import median

    print("\nsummary")
    c = out.get("core")
    if c:
        line = f"  core lifecycle (arrive + emit + finish): {c['lifecycle_us']:.2f} us"
        ab = out.get("core_against")
        if ab:
            line += (
                f"; in turns with {ab['baseline']}: before {ab['baseline_us']:.2f} us, now "
                f"{ab['current_us']:.2f} us, now / before {ab['ratio']:.2f}"
            )
        print(line + f"  (aim < {CORE_AIM_US:g} us)")
    a = out.get("asgi")
    if a:
        print(
            f"  the ASGI app alone, in process (CPU us per call): ours {a['ours_us']:.1f}, bare "
            f"{a['bare_us']:.1f}, ours - bare {a['added_us']:.1f}"
        )
    by = {r["server"]: r for r in rows}
    if by:
        calls = ", ".join(f"{n} {r['calls_per_s']:,.0f}" for n, r in by.items())
        print(f"  HTTP calls/s (medians): {calls}")
        cpu = {
            n: median(x["cpu_us_per_call"] for x in runs)
            for n, runs in out.get("http_rounds", {}).items()
            if runs
        }
        if cpu:
            print(
                "  server CPU time per call (us, medians; steadier than calls/s on a shared "
                "machine): " + ", ".join(f"{n} {v:.0f}" for n, v in cpu.items())
            )
            sys_cpu = {
                n: median(x.get("sys_us_per_call", 0.0) for x in runs)
                for n, runs in out.get("http_rounds", {}).items()
                if runs
            }
            print(
                "    of which system time (the kernel's: socket reads and writes): "
                + ", ".join(f"{n} {v:.1f}" for n, v in sys_cpu.items())
            )
            if "ours" in cpu and "bare" in cpu:
                print(f"  bare / ours in CPU time per call: {cpu['bare'] / cpu['ours']:.2f}")
            if "ours" in cpu and "bare-serve" in cpu:
                line = (
                    f"  bare on serve's protocol / ours in CPU time per call: "
                    f"{cpu['bare-serve'] / cpu['ours']:.2f}"
                )
                if "bare" in cpu:
                    line += (
                        f"; bare on serve's protocol / bare on uvicorn's own (what one write "
                        f"per response saves the same app): {cpu['bare-serve'] / cpu['bare']:.2f}"
                    )
                print(line)
        rounds = out.get("http_rounds", {})
        for other in ("ours-base", "bare"):
            if other in rounds and "ours" in rounds and other != "ours":
                per = [
                    x["calls_per_s"] / y["calls_per_s"]
                    for x, y in zip(rounds["ours"], rounds[other], strict=True)
                    if y["calls_per_s"]
                ]
                if per and other == "ours-base":
                    print(
                        f"  ours / ours-base (the server before, --online-base), calls/s: "
                        f"{median(per):.2f}x (per round: {', '.join(f'{x:.2f}' for x in per)})"
                    )
        ours = by.get("ours")
        for other in ("bare", "bare-serve", "sdk"):
            ratio = (ours or {}).get("ratios", {}).get(other)
            if ratio:
                print(
                    f"  ours / {other}: {ratio['median']:.2f}x (median of the per-round ratios; "
                    f"aim >= {ratio['aim']:g}x)"
                )
    m = out.get("memory")
    if m:
        print(
            f"  memory per idle session {m.get('idle_session_bytes', 0):,} bytes, per "
            f"in-flight request {m.get('inflight_request_bytes', 0):,} bytes"
        )
    print(f"  load: before {out['uptime_before']}; after {out['uptime_after']}")


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

    def once(cls) -> float:
        core = cls("2025-11-25", "http")
        lifecycles(core, 1000)  # warm-up
        t = lifecycles(core, n) / 1000.0
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
        f"core (SessionCore 2025-11-25 http, {c['iterations']:,} iterations, CPU time (thread_time_ns), "
        f"the lifecycle the median of 5 runs; "
        f"timer cost {c['timer_ns']:.0f} ns subtracted per step)"
    )
    verdict = "meets" if c["lifecycle_us"] < CORE_AIM_US else "MISSES"
    print(
        f"  request lifecycle, arrive + emit + finish  {c['lifecycle_us']:8.2f} us"
        f"   (aim < {CORE_AIM_US:g} us: {verdict})"
    )
    print(f"    arrive (admitted)                        {c['arrive_admit_us']:8.2f} us")
    print(f"    emit (progress routed to its stream)     {c['emit_us']:8.2f} us")
    print(f"    finish (response routed, released)      {c['finish_us']:8.2f} us")
    print(f"  refused duplicate (arrive, id in flight)   {c['refused_duplicate_us']:8.2f} us")
    print(f"  new SessionCore (2026-07-28 http: per POST) {c['new_session_core_us']:7.2f} us")
    o = c.get("online")
    if o:
        print(
            f"  online check per echo call (Monitor.feed, {o['events_per_call']:.0f} events)"
            f"  {o['per_call_us']:6.2f} us  ({o['per_call_us'] / c['lifecycle_us']:.1f}x the "
            f"core's lifecycle; {o['calls']:,} calls, counts {o['counts']})"
        )
        print(
            f"  the same beside the server (Beside.feed, queued for a checker process) "
            f"{o['beside_per_call_us']:6.2f} us on the serving path, "
            f"{o['beside_cpu_per_call_us']:.2f} us of this process's CPU in all (the queue and "
            f"the writes to the checker's pipe); the checker process then took "
            f"{o['beside_drain_s']:.2f} s more to catch up; counts {o['beside_counts']}"
        )


BASELINE_HELP = (
    "also time the lifecycle of another version of the core in turns with the current one: a "
    "directory with its core.py and generated.py (git archive REV impl | tar -x), or a lone "
    "core.py (run on the current generated.py)"
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="bench/runtime.py",
        description="The runtime's cost: the sans-IO core per request lifecycle (in process), then "
        "tools/call throughput and p50/p99 latency over loopback HTTP for mcp-inflight serve, "
        "the official mcp SDK and a bare ASGI app, one server at a time, wrk as the load.",
    )
    for flag, default, metavar, text in NUMBERS:
        p.add_argument(flag, type=int, default=default, metavar=metavar, help=text)
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
    p.add_argument("--core-baseline", metavar="PATH", help=BASELINE_HELP)
    p.add_argument(
        "--core-base-rev",
        metavar="REV",
        help="the same as --core-baseline with the core of git revision REV (its impl/ unpacked "
        "to a temporary directory): the lifecycle before and now, side by side",
    )
    p.add_argument(
        "--no-asgi",
        action="store_true",
        help="skip the in-process figures of the ASGI apps alone (bench/asgi_inproc.py)",
    )
    p.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the memory per idle session and per in-flight request (bench/churn.py)",
    )
    p.add_argument(
        "--online-base",
        metavar="REV",
        help="the git revision whose serve the server ours-base runs, and whose serve "
        "--online-check ours-online-base runs (its package laid out as installed, in a "
        "temporary directory)",
    )
    p.add_argument(
        "--py-spy",
        metavar="DIR",
        help="record flame graphs with py-spy into DIR: the core's lifecycle in process "
        "(core.svg, after its figures) and each server's measured HTTP load "
        "(http-NAME-ROUND.svg); the HTTP figures then include the sampler's share of the CPUs",
    )
    p.add_argument("--no-core", action="store_true", help="skip the in-process core figures")
    p.add_argument("--no-http", action="store_true", help="skip the HTTP figures")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = p.parse_args(argv)

    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    bad = [s for s in servers if s not in SERVERS]
    if bad:
        p.error(f"unknown server(s) {', '.join(bad)}; choose from {', '.join(SERVERS)}")
    args.online_base_dir = None
    if args.online_base:
        args.online_base_dir = base_package(args.online_base)
    if not args.no_http and shutil.which("wrk") is None:
        print("bench/runtime.py: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2

    out = {"uptime_before": uptime(), "python": sys.version.split()[0], "cpus": os.cpu_count()}
    print(f"load before: {out['uptime_before']}")
    print(f"python {out['python']}, {out['cpus']} cpus\n")
    if not args.no_core:
        out["core"] = bench_core(args.core_iterations)
        out["core"]["online"] = bench_online(max(1000, args.core_iterations // 20))
        print_core(out["core"])
        if args.py_spy:
            spy_core(args.py_spy)
        baseline = args.core_baseline
        if baseline is None and args.core_base_rev:
            baseline = base_impl(args.core_base_rev)
        if baseline:
            ab = out["core_against"] = bench_core_against(
                load_core(baseline), max(1000, args.core_iterations // 5)
            )
            ab["baseline"] = args.core_base_rev or baseline
            print(
                f"  lifecycle against {ab['baseline']} ({ab['pairs']} turns each, "
                f"{ab['iterations']:,} lifecycles a turn): baseline {ab['baseline_us']:.2f} us, "
                f"current {ab['current_us']:.2f} us, current / baseline {ab['ratio']:.2f}"
            )
    if not args.no_asgi:
        from asgi_inproc import bench as bench_asgi
        from asgi_inproc import print_bench as print_asgi

        print()
        out["asgi"] = bench_asgi(20000, 5)
        print_asgi(out["asgi"])
    if not args.no_memory:
        out["memory"] = bench_memory()
        m = out["memory"]
        print(
            f"\nmemory (bench/churn.py, tracemalloc, server side): per idle session "
            f"{m.get('idle_session_bytes', 0):,} bytes, per in-flight request "
            f"{m.get('inflight_request_bytes', 0):,} bytes"
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
    print_summary(out, rows)
    print(f"\nload after: {out['uptime_after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
