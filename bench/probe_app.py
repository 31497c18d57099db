"""The in-process probe (``probe_app``) against the URL probe, on the same three servers, in one
run: ``mcp-inflight serve``'s app (our runtime), the official SDK's app
(``tests/support/sdk_server.py``) bare, and the same behind the guard.

    .venv/bin/python bench/probe_app.py [--repeat N] [--json PATH]

For each server, one after the other: the in-process probe of a freshly built app, then the server
started as its own process on a free loopback port and ``mcp-inflight probe URL --json`` run
against it.  Prints, per server, the probe's own time (the report's ``seconds``) and the wall time
of each, their ratio, and whether the two verdicts agree (status, classes found, and per scenario
its status, classes and refusal).  The aim: in-process under 10 s per app on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def apps():
    """The three apps, in the order of ``probe_table.targets()``: our runtime's, the official
    SDK's bare, and the same behind the guard."""
    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server
    from support.sdk_server import build_app

    return [lambda: create_app(demo_server()), lambda: build_app(False), lambda: build_app(True)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs per server and mode (default 1)")
    ap.add_argument("--json", metavar="PATH", help="also write every report to PATH")
    args = ap.parse_args(argv)
    import logging

    logging.disable(logging.INFO)  # the SDK logs each session at INFO
    from probe_table import probe as url_probe
    from probe_table import targets

    from mcp_inflight.probe import probe_app, verdicts

    rows, docs = [], {}
    for (title, argv_for), make in zip(targets(), apps(), strict=True):
        for n in range(args.repeat):
            sys.stderr.write(f"{title}: in-process probe ({n + 1}/{args.repeat})\n")
            t = time.monotonic()
            inproc = probe_app(make()).doc
            in_wall = time.monotonic() - t
            sys.stderr.write(f"{title}: URL probe ({n + 1}/{args.repeat})\n")
            url_doc = url_probe(title, argv_for)
            url_wall = url_doc["wall_seconds"]
            same = verdicts(inproc) == verdicts(url_doc)
            rows.append(
                (
                    title,
                    inproc.get("seconds"),
                    in_wall,
                    url_doc.get("seconds"),
                    url_wall,
                    inproc["status"],
                    url_doc["status"],
                    same,
                )
            )
            docs.setdefault(title, []).append({"in_process": inproc, "url": url_doc})
    print(
        "| server | in-process probe s (wall) | URL probe s (wall) | in-process / URL | "
        "verdict in-process, URL | same verdicts |"
    )
    print("|---|---|---|---|---|---|")
    for title, ins, inw, us, uw, ist, ust, same in rows:
        ratio = f"{ins / us:.2f}" if ins and us else "-"
        print(
            f"| {title} | {ins} ({inw:.1f}) | {us} ({uw:.1f}) | {ratio} | {ist}, {ust} | "
            f"{'yes' if same else 'NO'} |"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(docs, indent=1))
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
