"""The HTTP half of ``bench/runtime.py``: the servers it runs (each a subprocess), the load
(``wrk`` with ``bench/wrk_call.lua``), the checks of every answer, and the HTTP table.

``python bench/runtime_http.py --serve NAME --port P --loop L`` runs one bench server (``sdk``,
``bare``, ``ours-app``); ``bench/runtime.py`` starts it so.  See ``bench/runtime.py`` for what is
measured and how.  ``--py-spy DIR`` (here, and on ``bench/runtime.py``, which samples each
server's measured load with it) records where a server spends its time as a flame graph.
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
from statistics import median

from mcp_inflight.impl import sse

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LUA = HERE / "wrk_call.lua"
ECHO_TEXT = "hello"
#: the online check's placements (``serve --online-checker``), as bench servers
ONLINE = {
    "ours-online": "process",
    "ours-online-thread": "thread",
    "ours-online-inline": "inline",
}
#: ``serve --online-check`` of another version (``--online-base REV``), the check before
BASE = "ours-online-base"
#: ``serve`` of another version (``--online-base REV``), without the check: the server before
PLAIN_BASE = "ours-base"
#: the bare app on ``serve``'s uvicorn protocol (a response's head and body in one write), so
#: that the protocol's share and the app's can be told apart
BARE_SERVE = "bare-serve"
SERVERS = ("ours", "sdk", "bare", "ours-app", *ONLINE, BASE, PLAIN_BASE, BARE_SERVE)
TITLES = {
    "ours": "mcp-inflight serve",
    "ours-online": "serve --online-check (process)",
    "ours-online-thread": "serve --online-check (thread)",
    "ours-online-inline": "serve --online-check (inline)",
    BASE: "serve --online-check (base rev)",
    PLAIN_BASE: "mcp-inflight serve (base rev)",
    "ours-app": "mcp-inflight app (bench runner)",
    "sdk": "official mcp 2.3.0 SDK",
    "bare": "bare ASGI (ceiling)",
    BARE_SERVE: "bare ASGI on serve's protocol",
}
LISTEN = re.compile(r"listening on (http://\S+)")


# --- the servers (subprocess side) ---------------------------------------------------------


def uvicorn_config(app, port: int, http: str = "auto"):
    """The uvicorn settings of ``mcp-inflight serve`` (mcp_inflight/serve.py), for every server;
    ``http``: uvicorn's protocol (its own by default)."""
    import uvicorn

    from mcp_inflight.serve import uvicorn_settings

    return uvicorn.Config(app, host="127.0.0.1", port=port, http=http, **uvicorn_settings())


def serve_subprocess(name: str, port: int, loop: str) -> int:
    """Run one bench server (``--serve NAME``): the runner used for ``sdk``, ``bare``, ``ours-app``."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    http = "auto"
    if name == "sdk":
        from sdk_echo import app
    elif name in ("bare", BARE_SERVE):
        from bare_echo import app

        if name == BARE_SERVE:
            from mcp_inflight.serve import http_protocol

            http = http_protocol(10.0)  # serve's default --header-timeout
    elif name == "ours-app":
        from mcp_inflight.impl.http import LOOPBACK, create_app
        from mcp_inflight.serve import demo_server

        app = create_app(demo_server(), "/mcp", allowed_hosts=set(LOOPBACK) | {"127.0.0.1"})
    else:
        raise SystemExit(f"unknown server {name!r}")
    config = uvicorn_config(app, port, http)
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

    def __init__(self, name: str, loop: str, base: str | None = None):
        self.name = name
        env, cwd = None, str(ROOT)
        if name in (BASE, PLAIN_BASE):
            if base is None:
                raise RuntimeError(f"{name} needs --online-base REV")
            cmd = [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0"]
            if name == BASE:
                cmd.append("--online-check")
            # that version's package first on the path, and as the working directory
            env, cwd = dict(os.environ, PYTHONPATH=base), base
        elif name == "ours" or name in ONLINE:
            exe = ROOT / ".venv" / "bin" / "mcp-inflight"
            cmd = [str(exe) if exe.exists() else "mcp-inflight", "serve", "--port", "0"]
            if name in ONLINE:
                cmd += ["--online-check", "--online-checker", ONLINE[name]]
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
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env
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


def py_spy_exe() -> str | None:
    """The ``py-spy`` sampler: the one beside this interpreter, else on the PATH."""
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def py_spy(pid: int, out: Path, seconds: float | None = None) -> subprocess.Popen:
    """Start ``py-spy record`` on process ``pid``, writing a flame graph (SVG) to ``out`` when
    ``seconds`` have passed or the process ends.  ``--nonblocking``: the process is not stopped
    to be sampled, so its own timing is disturbed only by the sampler's share of the CPUs."""
    exe = py_spy_exe()
    if exe is None:
        raise RuntimeError("--py-spy: py-spy is not installed (pip install py-spy)")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "record", "--pid", str(pid), "-o", str(out), "--rate", "200", "--nonblocking"]
    if seconds is not None:
        cmd += ["--duration", f"{max(1, round(seconds))}"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def py_spy_done(proc: subprocess.Popen, out: Path) -> None:
    """Wait for a ``py-spy record`` started by :func:`py_spy`; report where its graph went."""
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    if out.exists():
        print(f"  flame graph: {out}", file=sys.stderr, flush=True)
    else:
        print(f"  py-spy wrote no flame graph to {out}: {err.strip()[-300:]}", file=sys.stderr)


def bench_server(name, args) -> dict:
    import httpx

    srv = Running(name, args.loop, getattr(args, "online_base_dir", None))
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
            spy_dir = getattr(args, "py_spy", None)
            if spy_dir:  # the measured load, sampled (its figures then carry the sampler's cost)
                runs = getattr(args, "_py_spy_runs", {})
                k = runs[name] = runs.get(name, 0) + 1
                args._py_spy_runs = runs
                spy_out = Path(spy_dir) / f"http-{name}-{k}.svg"
                spy = py_spy(srv.proc.pid, spy_out, args.duration)
            cpu0, sys0 = _cpu_s(srv.proc.pid), _sys_s(srv.proc.pid)
            res, raw = run_wrk(srv.url, sid, args.duration, args.threads, args.connections)
            cpu1, sys1 = _cpu_s(srv.proc.pid), _sys_s(srv.proc.pid)
            if spy_dir:
                py_spy_done(spy, spy_out)
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
        # CPU seconds per call during the measured load: the server's process, and its child
        # processes (the online check's checker process)
        "cpu_us_per_call": 1e6 * (cpu1[0] - cpu0[0]) / max(1, res["requests"]),
        "sys_us_per_call": 1e6 * (sys1 - sys0) / max(1, res["requests"]),
        "child_cpu_us_per_call": 1e6 * (cpu1[1] - cpu0[1]) / max(1, res["requests"]),
    }


def _cpu_s(pid):
    """CPU seconds (user and system) used so far by process ``pid`` and by its live children."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p):
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return int(f[1]), (int(f[11]) + int(f[12])) / tick  # ppid, utime + stime

    own = stat(pid)
    kids = 0.0
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and d.name != str(pid):
            st = stat(d.name)
            if st is not None and st[0] == pid:
                kids += st[1]
    return (own[1] if own else 0.0), kids


def _sys_s(pid):
    """System CPU seconds used so far by process ``pid`` (the kernel's share: its socket
    writes and reads, its waits; what one write per response instead of two saves)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return int(f[12]) / os.sysconf("SC_CLK_TCK")


def _rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def summarize(rounds: list[dict]) -> dict:
    """One server's rounds: the median of each figure, the sums of the counts."""
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
    for name in (BASE, *ONLINE):
        if "ours" in by and name in by:
            print_online(by, runs, name)
    for other, aim in (("sdk", 10.0), ("bare", 0.85), (BARE_SERVE, 0.85)):
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


def print_online(by: dict, runs: dict, name: str = "ours-online") -> None:
    """The online check's cost, ``ours`` and ``name`` (one placement of the check) side by
    side: throughput without and with it, their ratio and the server time it adds per call,
    round by round (the two ran in turns) and as medians."""
    pairs = [
        (a["calls_per_s"], b["calls_per_s"])
        for a, b in zip(runs["ours"], runs[name], strict=False)
        if a["calls_per_s"] and b["calls_per_s"]
    ]
    if not pairs:
        return
    ratio = median(on / off for off, on in pairs)
    cost = median(1e6 / on - 1e6 / off for off, on in pairs)
    off, on = median(x for x, _ in pairs), median(y for _, y in pairs)
    cpu = median(
        b["cpu_us_per_call"] - a["cpu_us_per_call"]
        for a, b in zip(runs["ours"], runs[name], strict=False)
    )
    kid = median(x["child_cpu_us_per_call"] for x in runs[name])
    print(
        f"  online check ({ONLINE.get(name, 'base rev')}): {off:.0f} calls/s off, {on:.0f} on: "
        f"{ratio:.2f}x the throughput, "
        f"{cost:+.0f} us of server time per call (median of rounds, 1/rate on minus off); "
        f"the server process's CPU {cpu:+.0f} us per call, its checker process's "
        f"{kid:.0f} us (medians, CPU time read from /proc)"
    )
    for k, ((a, b), x, y) in enumerate(zip(pairs, runs[name], runs["ours"], strict=False), 1):
        print(
            f"    round {k}: {a:.0f} off, {b:.0f} on, {b / a:.2f}x, {1e6 / b - 1e6 / a:+.0f} us; "
            f"CPU per call {y['cpu_us_per_call']:.0f} us off, {x['cpu_us_per_call']:.0f} on "
            f"(+{x['child_cpu_us_per_call']:.0f} in the checker); the check's counts {x['online']}"
        )
    by[name]["online_cost_us_per_call"] = cost
    by[name]["online_cpu_us_per_call"] = cpu
    by[name]["online_checker_cpu_us_per_call"] = kid
    by[name]["online_ratio"] = ratio


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/runtime_http.py", description="one bench server")
    p.add_argument(
        "--serve", metavar="NAME", required=True, choices=("sdk", "bare", "ours-app", BARE_SERVE)
    )
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    p.add_argument(
        "--py-spy",
        metavar="DIR",
        help="record this server's whole run with py-spy: a flame graph DIR/serve-NAME.svg, "
        "written when the server stops",
    )
    args = p.parse_args(argv)
    if args.py_spy:
        out = Path(args.py_spy) / f"serve-{args.serve}.svg"
        spy = py_spy(os.getpid(), out)
        try:
            return serve_subprocess(args.serve, args.port, args.loop)
        finally:
            # the sampler writes its graph once this process has ended; it outlives it
            print(f"bench server {args.serve}: py-spy (pid {spy.pid}) -> {out}", file=sys.stderr)
    return serve_subprocess(args.serve, args.port, args.loop)


if __name__ == "__main__":
    sys.exit(main())
