"""Diagrams generated from ``model/`` and drift-checked.

Three kinds, written under the output directory:

* the request lifecycle of every protocol revision: ``lifecycle-<revision>.dot`` (Graphviz),
  ``.mmd`` (Mermaid ``stateDiagram-v2``) and ``.svg``, built directly from
  ``table(revision)`` (states in ``STATES`` order, transitions in table order);
* ``session/``: the session-level state graph of ``atomic`` and ``unguarded``, complete (DOT)
  and as a reduced view (DOT, SVG), with the states and transitions that break an invariant in
  red (``session.py``);
* ``counterexamples/``: a sequence diagram (Mermaid ``sequenceDiagram``, DOT, SVG) for every
  invariant the explorer finds broken on ``unguarded`` and ``check_then_claim``, with an
  ``index.md`` (``sequence.py``);
* ``paths/``: the declared models' counterexamples as Mermaid sequence diagrams (``paths.py``);
* ``models/``: the state graph of every declared model (lease, rounds, resume, tasks,
  subscriptions) and design at its default bounds, whole or as an exact quotient, failing
  states and transitions in red, witnesses marked (DOT, Mermaid, SVG, with an ``index.md``;
  ``models.py``, walked by ``model_graphs.py``).

The lifecycle is drawn by ``lifecycle.py``; writing and checking a directory is
``output.py``; DOT quoting, SVG rendering (the ``dot`` binary through the ``graphviz`` package,
when it is installed) and progress lines are ``render.py``.

Command line: ``mcp-inflight diagrams [--out DIR] [--check]``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

from .lifecycle import dot_lifecycle, mermaid_lifecycle
from .output import DEFAULT_OUT, FORMATS, check, clear_caches, generate

__all__ = [
    "DEFAULT_OUT",
    "FORMATS",
    "check",
    "clear_caches",
    "dot_lifecycle",
    "generate",
    "mermaid_lifecycle",
    "run",
]


def writable_dir(path: pathlib.Path) -> str | None:
    """Why the diagrams cannot be written under ``path`` (a message), or None; checked before
    the explorer runs.  The directory is created, as writing would create it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        return f"cannot write into {path}: {e.strerror or e}"
    return None


# --- command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcp-inflight diagrams",
        description="Draw the diagrams of the model into DIR, or check the drawn files are "
        "current: the request lifecycle of every revision (DOT, Mermaid, SVG), the "
        "session state graph of atomic and unguarded (session/: complete graph as "
        "DOT, reduced view as DOT and SVG, invariant violations in red) and a "
        "sequence diagram for every counterexample on unguarded and "
        "check_then_claim (counterexamples/: Mermaid, DOT, SVG), the declared models' "
        "counterexamples (paths/) and state graphs (models/: DOT, Mermaid, SVG). Runs "
        "the explorer; takes some seconds. Without Graphviz 'dot' on PATH, SVGs are skipped.",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"output directory (default: {DEFAULT_OUT})",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="do not write; regenerate into a temporary directory and exit 1 if "
        "any file in DIR is missing, stale or left over (with a diff)",
    )
    return p


def run(argv: list[str]) -> int:
    """``mcp-inflight diagrams [--out DIR] [--check]``: 0 ok, 1 stale (``--check``), 2 usage."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:  # argparse: --help exits 0, usage errors exit 2
        return int(e.code) if isinstance(e.code, int) else 2
    out_dir = pathlib.Path(args.out)
    if args.check:
        ok, report = check(out_dir)
        (sys.stdout if ok else sys.stderr).write(report)
        return 0 if ok else 1
    why = writable_dir(out_dir)
    if why is not None:
        sys.stderr.write(f"mcp-inflight diagrams: error: --out: {why}\n")
        return 2
    written = generate(out_dir)
    groups: dict[str, int] = {}
    for path in written:
        rel = path.relative_to(out_dir)
        key = rel.parts[0] + "/" if len(rel.parts) > 1 else "lifecycle"
        groups[key] = groups.get(key, 0) + 1
    print(
        f"wrote {len(written)} files to {out_dir}: "
        + ", ".join(f"{k} {n}" for k, n in groups.items())
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1:]))
