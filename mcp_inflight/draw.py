"""Diagrams generated from ``model/`` and drift-checked.

Three kinds, written under the output directory:

* the request lifecycle of every protocol revision: ``lifecycle-<revision>.dot`` (Graphviz),
  ``.mmd`` (Mermaid ``stateDiagram-v2``) and ``.svg``, built directly from
  ``table(revision)`` (states in ``STATES`` order, transitions in table order);
* ``session/``: the session-level state graph of ``atomic`` and ``unguarded``, complete (DOT)
  and as a reduced view (DOT, SVG), with the states and transitions that break an invariant in
  red (``mcp_inflight/draw_session.py``);
* ``counterexamples/``: a sequence diagram (Mermaid ``sequenceDiagram``, DOT, SVG) for every
  invariant the explorer finds broken on ``unguarded`` and ``check_then_claim``, with an
  ``index.md`` (``mcp_inflight/draw_sequence.py``).

Everything is deterministic: no timestamps, no paths, stable order, and the Graphviz version
comment stripped from the SVG.  SVGs are rendered by the ``dot`` binary when it is installed.

``check`` regenerates into a temporary directory and reports every file of the output
directory that is missing, stale (with a unified diff) or left over (a generated kind of file
that the model no longer produces).

Command line: ``mcp-inflight diagrams [--out DIR] [--check]``.
"""

from __future__ import annotations

import argparse
import difflib
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from functools import lru_cache

from mcp_inflight.model import lifecycle as lc

PRE_STATES = tuple(s.label for s in lc.PRE)
FORMATS = ("dot", "mmd", "svg")
DEFAULT_OUT = "diagrams"

LEGEND_LINES = (
    "unsent and sent are pre-states: a model slot no request has used yet,",
    "and a request on the wire not yet read by the server (dashed).",
    "Edges read  trigger [cond1, cond2]: the bracketed names are guard",
    "conditions defined in model/session.py CONDITIONS.",
    "Double border: no transition leaves the state (a self-loop aside).",
    "Grey dotted: not reachable from unsent in this revision.",
)


# --- the table, read once per drawing ---------------------------------------------------------

def _edges(revision: str) -> list[tuple[str, str, str, str]]:
    """``(source, dest, trigger, label)`` per edge, in table order then source order."""
    out = []
    for r in lc.table(revision):
        label = r.trigger
        if r.conditions:
            label += " [" + ", ".join(r.conditions) + "]"
        for src in r.source:
            out.append((src, r.dest, r.trigger, label))
    return out


def _reachable(revision: str) -> set[str]:
    edges = _edges(revision)
    seen = {lc.INITIAL}
    todo = [lc.INITIAL]
    while todo:
        s = todo.pop()
        for src, dst, _, _ in edges:
            if src == s and dst not in seen:
                seen.add(dst)
                todo.append(dst)
    return seen


def _final(revision: str) -> set[str]:
    leaves = {src for src, dst, _, _ in _edges(revision) if src != dst}
    return {s for s in lc.STATES if s not in leaves}


# --- DOT --------------------------------------------------------------------------------------

def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_lifecycle(revision: str) -> str:
    """The Graphviz DOT text of the ``revision`` lifecycle."""
    reach = _reachable(revision)
    final = _final(revision)
    lines = [
        f"digraph {_q('lifecycle ' + revision)} {{",
        "    rankdir=LR;",
        "    newrank=true;",
        "    nodesep=0.6;",
        "    ranksep=0.9;",
        '    fontname="Helvetica";',
        "    fontsize=16;",
        "    labelloc=t;",
        f"    label={_q('MCP request lifecycle, revision ' + revision)};",
        '    node [fontname="Helvetica", fontsize=12, shape=box, style="rounded"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        "",
        '    "__start" [shape=point, width=0.15, label=""];',
    ]
    for s in lc.STATES:
        attrs = []
        styles = ["rounded"]
        if s in PRE_STATES:
            styles.append("dashed")
        if s not in reach:
            styles.append("dotted")
            attrs += ['color="grey50"', 'fontcolor="grey40"']
            attrs.append(f'label="{s}\\n(unreachable)"')
        if s in final:
            attrs.append("peripheries=2")
        attrs.insert(0, f"style={_q(','.join(styles))}")
        lines.append(f"    {_q(s)} [{', '.join(attrs)}];")
    lines.append("")
    lines.append(f"    \"__start\" -> {_q(lc.INITIAL)};")
    loops: dict[str, int] = {}
    for src, dst, trigger, label in _edges(revision):
        extra = ""
        if src == dst:
            # self-loops alternate above and below the node so their labels do not overlap
            k = loops[src] = loops.get(src, -1) + 1
            port = ("n", "s")[k % 2]
            extra += f", tailport={port}, headport={port}"
        if src not in reach:
            extra = ', color="grey50", fontcolor="grey40", style=dotted'
        lines.append(f"    {_q(src)} -> {_q(dst)} [label={_q(label)}{extra}];")
    lines.append("")
    legend = "\\l".join(line.replace('"', '\\"') for line in LEGEND_LINES) + "\\l"
    lines.append(f'    "__legend" [shape=note, style=filled, fillcolor="#f6f6f6", '
                 f'fontsize=10, label="{legend}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- Mermaid ----------------------------------------------------------------------------------

def mermaid_lifecycle(revision: str) -> str:
    """The Mermaid ``stateDiagram-v2`` text of the ``revision`` lifecycle."""
    reach = _reachable(revision)
    lines = [
        "---",
        f"title: MCP request lifecycle, revision {revision}",
        "---",
        "stateDiagram-v2",
        "    direction LR",
    ]
    for s in lc.STATES:
        lines.append(f"    {s}")
    lines.append(f"    [*] --> {lc.INITIAL}")
    for src, dst, _, label in _edges(revision):
        lines.append(f"    {src} --> {dst} : {label}")
    lines.append(f"    note left of {lc.INITIAL}")
    for line in LEGEND_LINES[:4]:
        lines.append(f"        {line}")
    lines.append("    end note")
    lines.append("    classDef pre stroke-dasharray: 5 5")
    lines.append(f"    class {','.join(PRE_STATES)} pre")
    unreachable = [s for s in lc.STATES if s not in reach]
    if unreachable:
        lines.append("    classDef unreachable stroke-dasharray: 2 2, color: grey")
        lines.append(f"    class {','.join(unreachable)} unreachable")
    return "\n".join(lines) + "\n"


# --- SVG --------------------------------------------------------------------------------------

@lru_cache(maxsize=256)
def _render_svg(dot_bin: str, dot_text: str) -> bytes:
    proc = subprocess.run([dot_bin, "-Tsvg"], input=dot_text.encode("utf-8"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot -Tsvg failed ({proc.returncode}): "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    text = proc.stdout.decode("utf-8").replace("\r\n", "\n")
    text = _strip_generator_comments(text)
    return text.encode("utf-8")


def _strip_generator_comments(svg: str) -> str:
    """Drop the comments Graphviz writes that carry its version or a path."""
    def keep(m: re.Match) -> str:
        body = m.group(0)
        # node and edge comments (``<!-- a&#45;&gt;b -->``) are stable: keep them
        if "Generated by" in body or "graphviz version" in body:
            return ""
        if "/" in body or "\\" in body:
            return ""
        return body
    return re.sub(r"<!--.*?-->\n?", keep, svg, flags=re.S)


# --- generate / check -------------------------------------------------------------------------

def _dot_binary() -> str | None:
    return shutil.which("dot")


def _warn_no_dot() -> None:
    print("mcp-inflight diagrams: warning: Graphviz 'dot' not found on PATH; "
          "SVG diagrams skipped (install graphviz to render them)", file=sys.stderr)


class _Progress:
    """Progress lines on a terminal (stderr), only once a run has taken a couple of seconds."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.monotonic()
        self.shown = False

    def __call__(self, text: str) -> None:
        if not self.enabled or time.monotonic() - self.t0 < 1.5:
            return
        sys.stderr.write("\r  " + text[:96].ljust(96))
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()


def _contents(dot_bin: str | None, progress=None) -> dict[str, bytes]:
    from mcp_inflight import draw_sequence, draw_session

    prog = _Progress(progress)
    files: dict[str, bytes] = {}
    for rev in lc.REVISIONS:
        dot_text = dot_lifecycle(rev)
        files[f"lifecycle-{rev}.dot"] = dot_text.encode("utf-8")
        files[f"lifecycle-{rev}.mmd"] = mermaid_lifecycle(rev).encode("utf-8")
        if dot_bin is not None:
            files[f"lifecycle-{rev}.svg"] = _render_svg(dot_bin, dot_text)
    prog("exploring the session state graphs")
    for name, text in draw_session.files().items():
        files[name] = text.encode("utf-8")
        if dot_bin is not None and name.endswith("-reduced.dot"):
            prog(f"rendering {name[:-4]}.svg")
            files[name[:-4] + ".svg"] = _render_svg(dot_bin, text)
    for name, (text, dot_text) in draw_sequence.files(progress=prog).items():
        files[name] = text.encode("utf-8")
        if dot_bin is not None and dot_text is not None:
            prog(f"rendering {name[:-4]}.svg")
            files[name[:-4] + ".svg"] = _render_svg(dot_bin, dot_text)
    prog.done()
    return files


def clear_caches() -> None:
    """Forget every explored graph, trace and rendered SVG (the next generation starts afresh)."""
    from mcp_inflight import draw_sequence, draw_session

    _render_svg.cache_clear()
    draw_session.graph.cache_clear()
    draw_session.bound.cache_clear()
    draw_sequence.clear()


#: Subdirectories of the output directory that hold nothing but generated files.
SUBDIRS = ("session", "counterexamples")


def _generated_kind(rel: str, kinds: tuple[str, ...]) -> bool:
    """Is ``rel`` (a path relative to the output directory) a file this module writes?"""
    p = pathlib.PurePosixPath(rel)
    suffix = p.suffix.lstrip(".")
    if len(p.parts) == 1:
        return p.name.startswith("lifecycle-") and suffix in kinds
    return p.parts[0] in SUBDIRS and (suffix in kinds or suffix == "md")


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Write the diagrams of every revision into ``out_dir``; return the written paths."""
    out_dir = pathlib.Path(out_dir)
    dot_bin = _dot_binary()
    if dot_bin is None:
        _warn_no_dot()
    files = _contents(dot_bin)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    for rel in _leftovers(out_dir, set(files), dot_bin is not None):
        (out_dir / rel).unlink()
        print(f"removed {out_dir / rel} (the model no longer produces it)", file=sys.stderr)
    return written


def _leftovers(out_dir: pathlib.Path, produced: set[str], have_dot: bool) -> list[str]:
    """Generated-kind files in ``out_dir`` that are not in ``produced`` (relative names).

    Without ``dot`` SVGs are not produced, so they are never counted as left over."""
    if not out_dir.is_dir():
        return []
    kinds = FORMATS if have_dot else tuple(f for f in FORMATS if f != "svg")
    present = [p for p in out_dir.iterdir() if p.is_file()]
    for sub in SUBDIRS:
        if (out_dir / sub).is_dir():
            present += [p for p in (out_dir / sub).iterdir() if p.is_file()]
    out = []
    for p in sorted(present):
        rel = p.relative_to(out_dir).as_posix()
        if _generated_kind(rel, kinds) and rel not in produced:
            out.append(rel)
    return out


def _diff(name: str, old: bytes, new: bytes) -> str:
    a = old.decode("utf-8", "replace").splitlines(keepends=True)
    b = new.decode("utf-8", "replace").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=f"{name} (committed)",
                                 tofile=f"{name} (from the model)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def check(out_dir: pathlib.Path) -> tuple[bool, str]:
    """Regenerate into a temporary directory and compare with ``out_dir``.

    Returns ``(ok, report)``; the report names every missing, stale or left-over file and gives
    a unified diff for each stale one.  Without ``dot`` only the DOT and Mermaid files are
    compared (and SVGs are neither required nor flagged).
    """
    out_dir = pathlib.Path(out_dir)
    have_dot = _dot_binary() is not None
    with tempfile.TemporaryDirectory(prefix="mcp-inflight-diagrams-") as tmp:
        fresh = {p.relative_to(tmp).as_posix(): p.read_bytes()
                 for p in generate(pathlib.Path(tmp))}
    missing, stale, diffs = [], [], []
    for name in sorted(fresh):
        path = out_dir / name
        if not path.is_file():
            missing.append(name)
            continue
        old = path.read_bytes()
        if old != fresh[name]:
            stale.append(name)
            diffs.append(_diff(name, old, fresh[name]))
    extra = _leftovers(out_dir, set(fresh), have_dot)
    ok = not (missing or stale or extra)
    out = []
    if ok:
        out.append(f"diagrams in {out_dir} are up to date ({len(fresh)} files)")
    else:
        out.append(f"diagrams in {out_dir} are out of date with model/:")
        out += [f"  missing: {n}" for n in missing]
        out += [f"  stale:   {n}" for n in stale]
        out += [f"  extra:   {n} (the model no longer produces it)" for n in extra]
        out.append("regenerate with: mcp-inflight diagrams" +
                   (f" --out {out_dir}" if str(out_dir) != DEFAULT_OUT else ""))
    if not have_dot:
        out.append("note: Graphviz 'dot' not found; SVG files were not compared")
    report = "\n".join(out) + "\n"
    if diffs:
        report += "\n" + "\n".join(diffs)
    return ok, report


# --- command line -----------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcp-inflight diagrams",
        description="Draw the diagrams of the model into DIR, or check the drawn files are "
                    "current: the request lifecycle of every revision (DOT, Mermaid, SVG), the "
                    "session state graph of atomic and unguarded (session/: complete graph as "
                    "DOT, reduced view as DOT and SVG, invariant violations in red) and a "
                    "sequence diagram for every counterexample on unguarded and "
                    "check_then_claim (counterexamples/: Mermaid, DOT, SVG). Runs the explorer; "
                    "takes some seconds. Without Graphviz 'dot' on PATH, SVGs are skipped.")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"output directory (default: {DEFAULT_OUT})")
    p.add_argument("--check", action="store_true",
                   help="do not write; regenerate into a temporary directory and exit 1 if "
                        "any file in DIR is missing, stale or left over (with a diff)")
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
    written = generate(out_dir)
    groups: dict[str, int] = {}
    for path in written:
        rel = path.relative_to(out_dir)
        key = rel.parts[0] + "/" if len(rel.parts) > 1 else "lifecycle"
        groups[key] = groups.get(key, 0) + 1
    print(f"wrote {len(written)} files to {out_dir}: "
          + ", ".join(f"{k} {n}" for k, n in groups.items()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1:]))
