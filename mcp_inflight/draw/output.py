"""Writing the diagrams into a directory, and checking a directory against the model.

Everything is deterministic: no timestamps, no paths, stable order, and the Graphviz version
comment stripped from the SVG.  ``check`` regenerates into a temporary directory and reports
every file of the output directory that is missing, stale (with a unified diff) or left over
(a generated kind of file that the model no longer produces).
"""

from __future__ import annotations

import difflib
import pathlib
import sys
import tempfile

from mcp_inflight.model.config import REVISIONS

from . import lifecycle, models, paths, render, sequence, session

FORMATS = ("dot", "mmd", "svg")
DEFAULT_OUT = "diagrams"


def _contents(have_dot: bool, progress: bool | None = None) -> dict[str, bytes]:
    prog = render.Progress(progress)
    files: dict[str, bytes] = {}
    for rev in REVISIONS:
        lifecycle_dot = lifecycle.dot_lifecycle(rev)
        files[f"lifecycle-{rev}.dot"] = lifecycle_dot.encode("utf-8")
        files[f"lifecycle-{rev}.mmd"] = lifecycle.mermaid_lifecycle(rev).encode("utf-8")
        if have_dot:
            files[f"lifecycle-{rev}.svg"] = render.render_svg(lifecycle_dot)
    prog("exploring the session state graphs")
    for name, graph in session.files().items():
        files[name] = graph.encode("utf-8")
        if have_dot and name.endswith("-reduced.dot"):
            prog(f"rendering {name[:-4]}.svg")
            files[name[:-4] + ".svg"] = render.render_svg(graph)
    for name, (text, dot_text) in sequence.files(progress=prog).items():
        files[name] = text.encode("utf-8")
        if have_dot and dot_text is not None:
            prog(f"rendering {name[:-4]}.svg")
            files[name[:-4] + ".svg"] = render.render_svg(dot_text)
    prog("drawing the declared models' counterexamples")
    for name, text in paths.files().items():
        files[name] = text.encode("utf-8")
    prog("drawing the declared models' state graphs")
    for name, (text, dot_text) in models.files().items():
        files[name] = text.encode("utf-8")
        if have_dot and dot_text is not None:
            prog(f"rendering {name[:-4]}.svg")
            files[name[:-4] + ".svg"] = render.render_svg(dot_text)
    prog.done()
    return files


def clear_caches() -> None:
    """Forget every explored graph, trace and rendered SVG (the next generation starts afresh)."""
    render.render_svg.cache_clear()
    session.graph.cache_clear()
    session.bound.cache_clear()
    sequence.clear()
    paths._explored.cache_clear()
    models.graphs.cache_clear()


#: Subdirectories of the output directory that hold nothing but generated files.
SUBDIRS = ("session", "counterexamples", "paths", "models")


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
    have_dot = render.dot_binary() is not None
    if not have_dot:
        render.warn_no_dot()
    files = _contents(have_dot)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    for rel in _leftovers(out_dir, set(files), have_dot):
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
    lines = difflib.unified_diff(
        a, b, fromfile=f"{name} (committed)", tofile=f"{name} (from the model)"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def check(out_dir: pathlib.Path) -> tuple[bool, str]:
    """Regenerate into a temporary directory and compare with ``out_dir``.

    Returns ``(ok, report)``; the report names every missing, stale or left-over file and gives
    a unified diff for each stale one.  Without ``dot`` only the DOT and Mermaid files are
    compared (and SVGs are neither required nor flagged).
    """
    out_dir = pathlib.Path(out_dir)
    have_dot = render.dot_binary() is not None
    with tempfile.TemporaryDirectory(prefix="mcp-inflight-diagrams-") as tmp:
        fresh = {p.relative_to(tmp).as_posix(): p.read_bytes() for p in generate(pathlib.Path(tmp))}
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
        out.append(
            "regenerate with: mcp-inflight diagrams"
            + (f" --out {out_dir}" if str(out_dir) != DEFAULT_OUT else "")
        )
    if not have_dot:
        out.append("note: Graphviz 'dot' not found; SVG files were not compared")
    report = "\n".join(out) + "\n"
    if diffs:
        report += "\n" + "\n".join(diffs)
    return ok, report
