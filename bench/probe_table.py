"""The cross-SDK table: start each installed target, probe every profile it speaks, and write
what a maintainer can paste into an issue.

    .venv/bin/python bench/probe_table.py [--out DIR] [--only TARGET ...]
                                          [--url NAME=URL ...] [--command 'NAME=CMD ...' ...]

Targets (each started as its own process, on a free loopback port or as a child over stdio, and
probed one profile after another):

* ``ours``: ``mcp-inflight serve`` (``--fixtures probe_contract``: the demo tools and the
  probe's fixture contract; stdio: ``serve --transport stdio``);
* ``python-sdk`` and ``python-sdk+guard``: the official Python SDK (``tests/support/
  sdk_server.py`` for 2025-11-25 and stdio, ``sdk_contract_server.py`` for 2026-07-28), bare
  and behind ``mcp_inflight.guard`` / ``guard_stdio``;
* ``ts-sdk`` and ``ts-sdk-stateless``: the official TypeScript SDK from npm (``tests/ts_sdk``,
  pinned), sessions, and a server and transport per POST;
* ``fastmcp`` and ``fastmcp+guard``: FastMCP (``tests/support/fastmcp_server.py``) when the
  ``fastmcp`` package is installed (not a dependency of mcp-inflight), bare and behind the
  guard (HTTP only: ``guard_stdio`` wraps the SDK's stdio streams, FastMCP runs its own);
* any ``--url NAME=URL`` (probed on 2025-11-25 sessions and 2026-07-28) and
  ``--command 'NAME=CMD ...'`` (probed over stdio).

Profiles: ``2025-11-25`` (Streamable HTTP sessions), ``2026-07-28`` (stateless POSTs),
``2025-11-25 stateless`` (a server without sessions, the TypeScript SDK's stateless mode) and
``stdio``.  A profile a target does not speak is reported with the probe's reason.

Writes to ``--out`` (default ``probe-table/``): ``table.md`` (the table, then each finding with
the model's shortest counterexample, a wire excerpt and the path of its reproduction script),
``table.json`` (the same, and every probe's report), ``repro/*.py`` (one standalone script per
finding and target).  Prints the Markdown.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"
TS = ROOT / "tests" / "ts_sdk"
ARGS = {"label": "probe", "steps": 6, "delay": 0.25}
PY = sys.executable

#: defect class -> (design or mutant of the model that shows it, the property it breaks)
MODEL = {
    "misrouted_notification": ("unguarded", "no_misrouted_notification"),
    "misrouted_server_request": ("unguarded", "no_misrouted_server_request"),
    "misrouted_response": ("unguarded", "no_misrouted_response"),
    "lost_response": ("unguarded", "no_hung_request"),
    "cancel_misdirected": ("unguarded", "cancel_hits_target"),
    "collateral_close": ("unguarded", "owned_removal"),
    "id_type_confusion": ("unguarded", "unique_in_flight"),
    "refused_across_clients": ("atomic-shared-registry", "no_refusal_across_posts"),
}
MODEL_NOTE = {
    "id_type_confusion": 'the model has one kind of id; a server that makes 7 and "7" one key '
    "lets two requests share it, as here",
    "close_not_cancelled": "the model takes the close of a 2026-07-28 POST as its cancel; "
    "whether a server does is what the probe's fixture contract shows",
    "reuse_refused": "not a misrouting: the model's witness sequential_reuse shows the id "
    "admitted again after its response",
}
PROFILE_MODEL = {
    "2025-11-25": ("2025-11-25", "http"),
    "2025-11-25 stateless": ("2026-07-28", "http"),
    "2026-07-28": ("2026-07-28", "http"),
    "stdio": ("2025-11-25", "stdio"),
}


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _ts_version() -> str | None:
    pkg = TS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if not pkg.exists():
        return None
    return json.loads(pkg.read_text())["version"]


def _npm_ci() -> str | None:
    """Install the pinned TypeScript SDK if it is not there; None when it is, else why not."""
    if _ts_version() is not None:
        return None
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return "node and npm are not on PATH"
    r = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=TS,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        return f"npm ci failed: {r.stderr.strip()[-300:]}"
    return None


def targets(extra_urls=(), extra_commands=(), only=None) -> list[dict]:
    """Each target: ``name``, ``title`` (with its version), ``profiles`` {profile: launcher}
    or ``unavailable`` (why).  A launcher is ``("http", argv_for(port))``, ``("url", URL)`` or
    ``("stdio", argv)``.  ``only``: the names to be probed (None: all); the TypeScript SDK is
    installed only when one of its targets is among them (an empty ``only`` installs nothing)."""
    mcp = _version("mcp")
    out: list[dict] = []
    serve = [PY, "-m", "mcp_inflight", "serve"]
    ours = f"mcp-inflight {_version('mcp-inflight') or ''}".strip()
    out.append(
        {
            "name": "ours",
            "title": f"`mcp-inflight serve` ({ours})",
            "profiles": {
                "2025-11-25": (
                    "http",
                    lambda p: serve + ["--fixtures", "probe_contract", "--port", str(p)],
                ),
                "2026-07-28": (
                    "http",
                    lambda p: serve + ["--fixtures", "probe_contract", "--port", str(p)],
                ),
                "stdio": ("stdio", serve + ["--transport", "stdio"]),
            },
        }
    )
    for guarded in (False, True):
        flag = ["--guard"] if guarded else []
        out.append(
            {
                "name": "python-sdk" + ("+guard" if guarded else ""),
                "title": f"Python SDK `mcp` {mcp}" + (" + guard" if guarded else ""),
                "profiles": {
                    "2025-11-25": (
                        "http",
                        lambda p, f=flag: [
                            PY,
                            str(SUPPORT / "sdk_server.py"),
                            "--port",
                            str(p),
                            *f,
                        ],
                    ),
                    "2026-07-28": (
                        "http",
                        lambda p, f=flag: [
                            PY,
                            str(SUPPORT / "sdk_contract_server.py"),
                            "--port",
                            str(p),
                            *f,
                        ],
                    ),
                    "stdio": ("stdio", [PY, str(SUPPORT / "sdk_server.py"), "--stdio", *flag]),
                },
            }
            if mcp
            else {"name": "python-sdk", "title": "Python SDK `mcp`", "unavailable": "not installed"}
        )
    wanted = only is None or any(n.startswith("ts-sdk") for n in only)
    why = _npm_ci() if wanted else None
    ts = _ts_version()
    node = shutil.which("node") or "node"
    for stateless in (False, True):
        name = "ts-sdk" + ("-stateless" if stateless else "")
        title = f"TypeScript SDK {ts or ''}".strip() + (" stateless" if stateless else "")
        if why is not None:
            out.append({"name": name, "title": title, "unavailable": why})
            continue
        flag = ["--stateless"] if stateless else []
        argv = lambda p, f=flag: [node, str(TS / "server.mjs"), "--port", str(p), *f]  # noqa: E731
        profiles = (
            {"2026-07-28": ("http", argv), "2025-11-25 stateless": ("http", argv)}
            if stateless
            else {"2025-11-25": ("http", argv)}
        )
        out.append({"name": name, "title": title, "profiles": profiles})
    fastmcp = _version("fastmcp")
    if fastmcp is None or importlib.util.find_spec("fastmcp") is None:
        out.append({"name": "fastmcp", "title": "FastMCP", "unavailable": "not installed here"})
    else:
        fm = str(SUPPORT / "fastmcp_server.py")
        for guarded in (False, True):
            flag = ["--guard"] if guarded else []
            profiles = {
                "2025-11-25": ("http", lambda p, f=flag: [PY, fm, "--port", str(p), *f]),
                "2026-07-28": ("http", lambda p, f=flag: [PY, fm, "--port", str(p), *f]),
            }
            if not guarded:  # guard_stdio wraps the SDK's stdio streams; FastMCP runs its own
                profiles["stdio"] = ("stdio", [PY, fm, "--stdio"])
            out.append(
                {
                    "name": "fastmcp" + ("+guard" if guarded else ""),
                    "title": f"FastMCP {fastmcp}" + (" + guard" if guarded else ""),
                    "profiles": profiles,
                }
            )
    for spec in extra_urls:
        name, _, url = spec.partition("=")
        out.append(
            {
                "name": name,
                "title": f"`{url}`",
                "profiles": {"2025-11-25": ("url", url), "2026-07-28": ("url", url)},
            }
        )
    for spec in extra_commands:
        name, _, cmd = spec.partition("=")
        out.append(
            {"name": name, "title": f"`{cmd}`", "profiles": {"stdio": ("stdio", shlex.split(cmd))}}
        )
    return out


def _wait_port(port: int, proc, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def _probe_argv(profile: str, where: list[str], records: pathlib.Path) -> list[str]:
    base = [PY, "-m", "mcp_inflight", "probe", "--json", "--quiet", "--args", json.dumps(ARGS)]
    base += ["--records", str(records)]
    if profile == "stdio":
        return base + ["--stdio", "--"] + where
    extra = {
        "2025-11-25": [],
        "2026-07-28": ["--revision", "2026-07-28"],
        "2025-11-25 stateless": ["--stateless"],
    }[profile]
    return base + extra + where


def probe_one(launcher, profile: str, records: pathlib.Path) -> dict:
    """Start the target (unless it is a URL), probe ``profile``, stop it; the probe's report."""
    kind, what = launcher
    proc = None
    try:
        if kind == "http":
            port = _free_port()
            argv = what(port)
            proc = subprocess.Popen(
                argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if not _wait_port(port, proc):
                return {"status": "not started", "reason": f"did not start: {shlex.join(argv)}"}
            where = [f"http://127.0.0.1:{port}/mcp"]
            target = argv
        elif kind == "url":
            where, target = [what], [what]
        else:
            where, target = list(what), list(what)
        t = time.monotonic()
        p = subprocess.run(
            _probe_argv(profile, where, records),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            return {"status": "error", "reason": (p.stderr or p.stdout)[-500:]}
        doc["exit_status"] = p.returncode
        doc["wall_seconds"] = round(time.monotonic() - t, 1)
        doc["started"] = shlex.join(str(a) for a in target)
        return doc
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --- the model's counterexamples --------------------------------------------------------------

_CX: dict = {}


def counterexample(cls: str, profile: str) -> dict | None:
    """The model's shortest trace for the property behind ``cls`` on the profile's revision and
    transport, under the design that breaks it (breadth-first: a shortest one)."""
    if cls not in MODEL:
        return None
    design_name, prop = MODEL[cls]
    revision, transport = PROFILE_MODEL[profile]
    if design_name == "atomic-shared-registry":
        revision, transport = "2026-07-28", "http"
    from mcp_inflight.model.config import DESIGNS, Config, mutants
    from mcp_inflight.model.trace import trace_lines
    from mcp_inflight.proofs.explorer import explore

    key = (design_name, revision, transport)
    if key not in _CX:  # one exploration per design and profile
        design = DESIGNS.get(design_name) or mutants()[design_name]
        _CX[key] = explore(Config(design, revision, transport), progress=False)
    v = _CX[key].verdict(prop)
    out = None
    if v.applies and not v.ok and v.trace is not None:
        out = {
            "design": design_name,
            "property": prop,
            "revision": revision,
            "transport": transport,
            "steps": len(v.trace),
            "trace": trace_lines(v.trace),
        }
    return out


# --- the wire excerpt ------------------------------------------------------------------------


def _brief(msg) -> str:
    if not isinstance(msg, dict):
        return json.dumps(msg)[:100]
    if msg.get("method") == "notifications/progress":
        p = msg.get("params") or {}
        return f"progress token={json.dumps(p.get('progressToken'))} {p.get('progress')}/{p.get('total')}"
    if "method" in msg:
        return f"{msg['method']} id={json.dumps(msg.get('id'))}" if "id" in msg else msg["method"]
    if "error" in msg:
        return f"error id={json.dumps(msg.get('id'))} {json.dumps(msg['error'])[:80]}"
    return f"result id={json.dumps(msg.get('id'))}"


def excerpt(run: dict, limit: int = 18) -> list[str]:
    """What the test run sent and received, one short line each, in time order."""
    lines: list[tuple[float, str]] = []
    if run.get("transport") == "stdio":
        for r in run["requests"]:
            lines.append(
                (
                    r["sent"],
                    f"-> {r['name']}: {r['method']} id={json.dumps(r['id'])} token={r['token']}",
                )
            )
        for c in run.get("cancels", []):
            lines.append(
                (
                    c["t"],
                    f"-> notifications/cancelled requestId={json.dumps(c['id'])} (meaning {c['means']})",
                )
            )
        for e in run["received"]:
            if (e["msg"] or {}).get("method") != "notifications/message":
                lines.append((e["t"], f"<- {_brief(e['msg'])}"))
    else:
        for p in run["posts"]:
            lines.append(
                (
                    p["sent"],
                    f"{p['name']}: POST {p['method']} id={json.dumps(p['id'])} ({p['sender']}) -> HTTP {p['status']}",
                )
            )
            for e in p["events"]:
                if (e["msg"] or {}).get("method") != "notifications/message":  # logs: left out
                    lines.append((e["t"], f"{p['name']}'s stream: {_brief(e['msg'])}"))
            if p.get("how") == "aborted":
                lines.append((p["end"], f"{p['name']}: closed by the probe"))
        for c in run.get("cancels", []):
            lines.append(
                (
                    c["t"],
                    f"notifications/cancelled requestId={json.dumps(c['id'])} (meaning {c['means']})",
                )
            )
    lines.sort(key=lambda x: x[0])
    shown = [f"{t:6.2f}s  {text}" for t, text in lines]
    if len(shown) > limit:
        shown = shown[: limit - 1] + [f"   ... {len(shown) - limit + 1} more"]
    return shown


# --- the whole table ---------------------------------------------------------------------------


def build(targets_: list[dict], out: pathlib.Path, only=None, say=print) -> dict:
    from mcp_inflight.probe.repro import PLAN, script

    out.mkdir(parents=True, exist_ok=True)
    (out / "repro").mkdir(exist_ok=True)
    results: dict = {}
    findings: list[dict] = []
    columns: list[tuple[str, str, str]] = []
    for tg in targets_:
        if only and tg["name"] not in only:
            continue
        if "unavailable" in tg:
            columns.append((tg["name"], tg["title"], ""))
            results[tg["name"]] = {"unavailable": tg["unavailable"], "title": tg["title"]}
            continue
        for profile, launcher in tg["profiles"].items():
            col = f"{tg['name']} {profile}"
            columns.append((col, tg["title"], profile))
            say(f"probing {tg['title']} on {profile} ...")
            with tempfile.NamedTemporaryFile(suffix=".json") as rec:
                doc = probe_one(launcher, profile, pathlib.Path(rec.name))
                try:
                    recorded = json.loads(pathlib.Path(rec.name).read_text() or "{}")
                except ValueError:
                    recorded = {}
            doc["title"] = tg["title"]
            doc["profile"] = profile
            results[col] = doc
            say(f"  {doc.get('status')} ({doc.get('wall_seconds', '-')} s)")
            for f in doc.get("findings", []):
                if not f["found"]:
                    continue
                scen = f["evidence"][0].split(":", 1)[0]
                run = (recorded.get("records") or {}).get(scen, {}).get("test")
                kind, what = launcher
                slug = f"{tg['name']}-{profile.replace(' ', '-')}-{f['class']}".replace("+", "-")
                path = out / "repro" / f"{slug}.py"
                if scen in PLAN:
                    common = {"tool": "slow", "args": ARGS, "file": f"repro/{slug}.py"}
                    title = f"{tg['title']}, {profile}: {f['class']} ({scen})"
                    if kind == "stdio":
                        text = script(scen, title, argv=list(what), **common)
                    else:
                        url = doc.get("target") if kind == "http" else what
                        text = script(
                            scen,
                            title,
                            url=str(url).split(" ")[0],
                            mode="session" if profile == "2025-11-25" else "stateless",
                            revision="2026-07-28" if profile == "2026-07-28" else "2025-11-25",
                            **common,
                        )
                    path.write_text(text)
                    path.chmod(0o755)
                findings.append(
                    {
                        "target": tg["name"],
                        "title": tg["title"],
                        "profile": profile,
                        "class": f["class"],
                        "scenario": scen,
                        "evidence": f["evidence"],
                        "model": counterexample(f["class"], profile),
                        "model_note": MODEL_NOTE.get(f["class"]),
                        "wire": excerpt(run) if run else [],
                        "repro": f"repro/{slug}.py" if scen in PLAN else None,
                    }
                )
    doc = {
        "date": datetime.date.today().isoformat(),
        "versions": {
            "mcp": _version("mcp"),
            "mcp-inflight": _version("mcp-inflight"),
            "@modelcontextprotocol/sdk": _ts_version(),
            "node": _node_version(),
            "fastmcp": _version("fastmcp"),
        },
        "columns": [{"column": c, "title": t, "profile": p} for c, t, p in columns],
        "results": results,
        "findings": findings,
    }
    (out / "table.json").write_text(json.dumps(doc, indent=1))
    (out / "table.md").write_text(markdown(doc))
    return doc


def _node_version() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    r = subprocess.run([node, "--version"], capture_output=True, text=True)
    return r.stdout.strip() or None


def _cell(doc: dict, cls: str) -> str:
    if "unavailable" in doc:
        return "not run"
    if "findings" not in doc or "reason" in doc:
        return "could not test"
    f = next(f for f in doc["findings"] if f["class"] == cls)
    if f["found"]:
        return "**found**"
    return "not found"


def _refusal(doc: dict) -> str:
    if "unavailable" in doc or "findings" not in doc or "reason" in doc:
        return "-"
    ref = doc.get("refusal")
    if not ref:
        return "never (admitted)"
    parts = [
        f"HTTP {ref['status']}" if ref.get("status") is not None else "",
        str(ref.get("code") or ""),
    ]
    return ", ".join(p for p in parts if p) or "refused"


def _status(doc: dict) -> str:
    if "unavailable" in doc:
        return doc["unavailable"]
    if "reason" in doc:
        return f"{doc.get('exit_status', 2)}: could not test ({doc['reason'][:90]})"
    return f"{doc['exit_status']} ({doc['status']}, {doc['wall_seconds']} s)"


def markdown(doc: dict) -> str:
    from mcp_inflight.probe.records import CLASSES

    cols = doc["columns"]
    res = doc["results"]
    head = [f"{c['title']}" + (f"<br>{c['profile']}" if c["profile"] else "") for c in cols]
    v = doc["versions"]
    lines = [
        f"Probed {doc['date']}: `mcp` {v['mcp']}, `@modelcontextprotocol/sdk` {v['@modelcontextprotocol/sdk']} "
        f"(node {v['node']}), mcp-inflight {v['mcp-inflight']}; FastMCP {v['fastmcp'] or 'not installed'}.",
        "",
        "| defect class | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(cols),
    ]
    shown = [
        c
        for c in CLASSES
        if any(
            "findings" in res[k["column"]] and "reason" not in res[k["column"]]
            for k in cols
            if "unavailable" not in res[k["column"]]
        )
    ]
    for cls in shown:
        cells = [_cell(res[c["column"]], cls) for c in cols]
        if all(x in ("not found", "not run", "could not test") for x in cells) and cls in (
            "second_request_failed",
            "replay_misrouted",
        ):
            continue
        lines.append(f"| `{cls}` | " + " | ".join(cells) + " |")
    lines.append(
        "| duplicate refused with | " + " | ".join(_refusal(res[c["column"]]) for c in cols) + " |"
    )
    lines.append(
        "| probe exit status | " + " | ".join(_status(res[c["column"]]) for c in cols) + " |"
    )
    if doc["findings"]:
        lines += ["", "## Findings", ""]
    for f in doc["findings"]:
        lines.append(f"### {f['title']}, {f['profile']}: `{f['class']}` ({f['scenario']})")
        lines.append("")
        for e in f["evidence"][:3]:
            lines.append(f"- {e}")
        lines.append("")
        m = f["model"]
        if m:
            lines.append(
                f"The model's shortest counterexample ({m['design']}, {m['revision']} {m['transport']}, "
                f"`{m['property']}`, {m['steps']} steps):"
            )
            lines += ["", "```", *m["trace"], "```", ""]
        if f.get("model_note"):
            lines += [f"Model: {f['model_note']}.", ""]
        if f["wire"]:
            lines += ["Wire (the probe's test run):", "", "```", *f["wire"], "```", ""]
        if f["repro"]:
            lines += [f"Reproduce: `python3 {f['repro']}`", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="probe-table", help="output folder (default probe-table/)")
    ap.add_argument(
        "--only", action="append", metavar="TARGET", help="probe only this target (repeatable)"
    )
    ap.add_argument(
        "--url", action="append", default=[], metavar="NAME=URL", help="also probe a server by URL"
    )
    ap.add_argument(
        "--command",
        action="append",
        default=[],
        metavar="'NAME=CMD ...'",
        help="also probe a stdio server",
    )
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    out = pathlib.Path(args.out).resolve()
    build(
        targets(args.url, args.command, args.only),
        out,
        args.only,
        say=lambda s: print(s, file=sys.stderr),
    )
    print((out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
