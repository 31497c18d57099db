"""The README's table of probe results: ``mcp-inflight probe`` against ``mcp-inflight serve``,
a server on the official Python SDK (``tests/support/sdk_server.py``) without the guard, and the
same server with it.  Each server runs as its own process on a free loopback port; the probes run
one after the other.

    .venv/bin/python bench/probe_table.py [--json PATH]

Prints a Markdown table (one row per defect class, then how the duplicate was refused, the
probe's exit status and its running time).  A server that cannot be started (``mcp-inflight
serve`` before the runtime exists) gets a column saying so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SDK_SERVER = ROOT / "tests" / "support" / "sdk_server.py"


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _wait_port(port, proc, seconds=30.0):
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


def targets():
    """(column title, argv builder) per server; argv gets the port."""
    py = sys.executable
    out = []
    if importlib.util.find_spec("mcp_inflight.serve") is not None:
        out.append(
            (
                "`mcp-inflight serve`",
                lambda p: [py, "-m", "mcp_inflight", "serve", "--port", str(p)],
            )
        )
    else:
        out.append(("`mcp-inflight serve`", None))
    try:
        from importlib.metadata import version

        sdk = f"official SDK `mcp` {version('mcp')}"
    except Exception:  # noqa: BLE001
        sdk = "official SDK `mcp`"
    out.append((sdk, lambda p: [py, str(SDK_SERVER), "--port", str(p)]))
    out.append((sdk + " + guard", lambda p: [py, str(SDK_SERVER), "--port", str(p), "--guard"]))
    return out


def probe(title, argv_for):
    if argv_for is None:
        return {"unavailable": "module mcp_inflight.serve not installed"}
    port = _free_port()
    proc = subprocess.Popen(argv_for(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not _wait_port(port, proc):
            return {"unavailable": f"did not start: {' '.join(argv_for(port))}"}
        url = f"http://127.0.0.1:{port}/mcp"
        sys.stderr.write(f"probing {title} at {url}\n")
        t = time.monotonic()
        p = subprocess.run(
            [sys.executable, "-m", "mcp_inflight", "probe", url, "--json", "--quiet"],
            capture_output=True,
            text=True,
            timeout=180,
        )
        doc = json.loads(p.stdout)
        doc["exit_status"] = p.returncode
        doc["wall_seconds"] = round(time.monotonic() - t, 1)
        return doc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _refusal(doc):
    ref = doc.get("refusal")
    if not ref:
        return "never (admitted)"
    parts = []
    if ref.get("status") is not None:
        parts.append(f"HTTP {ref['status']}")
    if ref.get("code") is not None:
        parts.append(f"{ref['code']}")
    return ", ".join(parts) or "refused"


def table(results) -> str:
    from mcp_inflight.probe import CLASSES

    titles = list(results)
    lines = ["| defect class | " + " | ".join(titles) + " |", "|---|" + "---|" * len(titles)]
    for cls in CLASSES:
        cells = []
        for t in titles:
            doc = results[t]
            if "unavailable" in doc or "findings" not in doc:
                cells.append("not run")
                continue
            f = next(f for f in doc["findings"] if f["class"] == cls)
            cells.append("**found**" if f["found"] else "not found")
        lines.append(f"| `{cls}` | " + " | ".join(cells) + " |")
    lines.append(
        "| duplicate refused with | "
        + " | ".join(
            "not run" if "unavailable" in results[t] else _refusal(results[t]) for t in titles
        )
        + " |"
    )
    lines.append(
        "| probe exit status | "
        + " | ".join(
            results[t]["unavailable"]
            if "unavailable" in results[t]
            else f"{results[t]['exit_status']} ({results[t].get('status', '')}, "
            f"{results[t]['wall_seconds']} s)"
            for t in titles
        )
        + " |"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write every probe's JSON report to PATH")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    results = {title: probe(title, argv_for) for title, argv_for in targets()}
    print(table(results))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
