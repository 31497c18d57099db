"""State graphs of the declared models (lease, rounds, resume, tasks, subscriptions), drawn.

One drawing per model and design at the model's default bounds, computed by
``model_graphs.py`` (whole graph when it is small, else the exact quotient by the phases of the
model's slots; the drawing's caption says which and what a node stands for):
``diagrams/models/<model>-<design>.dot``, ``.mmd`` (Mermaid ``stateDiagram-v2``) and ``.svg``,
listed in ``diagrams/models/index.md``.

Reading a drawing: the initial node has a double border and the arrow from the start point; a
red node holds a state that breaks an ``always`` property (named on it with ✗), a red arrow
stands for a transition that breaks a ``step`` property (the action and the property named on
it), an orange one for a hazard the protocol cannot exclude; ◆ names a witness where the
explorer's shortest run reaches it, ⟳ a liveness property that a fair run from that node can
fail.  Arrows between the same two nodes are one arrow with every action listed; actions that
stay inside a node are listed on it ("stays:").
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import textwrap
from concurrent.futures import ProcessPoolExecutor
from functools import cache

from .model_graphs import FULL_LIMIT, MODELS, PROJECTIONS, Graph, build
from .render import quote
from .sequence import _mm

RED = "#c62828"
RED_FILL = "#ffd6d6"
ORANGE = "#e65100"


@cache
def graphs() -> tuple[Graph, ...]:
    """Every design of every model, drawn (explored once per process, and read from the
    checkers' cache while the models and this drawing's walk are unchanged)."""
    from mcp_inflight.proofs import cache as store

    walk = hashlib.sha256(
        pathlib.Path(__file__).with_name("model_graphs.py").read_bytes()
    ).hexdigest()
    key = store.source_key("models-draw", tuple(MODELS), PROJECTIONS, FULL_LIMIT, walk)
    found = store.load("models-draw", key)
    if isinstance(found, tuple) and all(isinstance(g, Graph) for g in found):
        return found
    named = [(m, d) for m, mod in MODELS.items() for d in mod.DESIGNS]
    workers = min(len(named), os.cpu_count() or 1)
    if workers > 1:  # each design walked in its own process: the same graph, sooner
        with ProcessPoolExecutor(workers) as pool:
            out = tuple(pool.map(_build, named))
    else:
        out = tuple(_build(n) for n in named)
    store.store("models-draw", key, out)
    return out


def _build(named: tuple[str, str]) -> Graph:
    """The drawing of one design of one model, named (a worker process builds the spec)."""
    model, design = named
    return build(MODELS[model].spec(design))


def caption(g: Graph) -> str:
    """What the drawing shows and what a node stands for, in words."""
    head = f"{g.model} {g.design} ({g.bounds}): {g.states} states, {g.transitions} transitions"
    if g.kind == "full":
        return f"{head}. The whole graph: a node is one state, an arrow one transition (move)."
    return (
        f"{head}, drawn as {len(g.nodes)} nodes. A node is every reachable state with the "
        f"values shown of {', '.join(g.keeps)} (n = how many); an arrow labelled a means some "
        "transition by action a leads from a state of one node to a state of the other."
    )


LEGEND = (
    "Double border: the initial node. Red node: some state in it breaks an always property "
    "(named after ✗). Red arrow, or ✗ after an action: a transition breaks a step property. "
    "◆: a witness where its shortest run reaches it. ⟳: a liveness property fails from there."
)


def _wrap(text: str, width: int = 110) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


def _edges(g: Graph) -> tuple[dict[tuple[int, int], list[str]], dict[int, list[str]]]:
    """Arrows between two nodes (their labels, in order) and actions that stay in a node."""
    pairs: dict[tuple[int, int], list[str]] = {}
    stays: dict[int, list[str]] = {}
    for a, label, z in g.edges:
        text = label + _marks(g, (a, label, z))
        if a == z:
            stays.setdefault(a, []).append(text)
        else:
            pairs.setdefault((a, z), []).append(text)
    return pairs, stays


def _marks(g: Graph, e: tuple[int, str, int]) -> str:
    out = ""
    if e in g.bad_edges:
        out += " ✗ " + ", ".join(g.bad_edges[e])
    if e in g.hazard_edges:
        out += " (hazard: " + ", ".join(g.hazard_edges[e]) + ")"
    out += "".join(f" ◆ {w}" for w, x in g.witness_edges.items() if x == e)
    return out


def _node_lines(g: Graph, n: int, stays: dict[int, list[str]]) -> list[str]:
    lines = list(g.nodes[n])
    if g.kind == "quotient":
        lines.append(f"n = {g.members[n]}")
    lines += [f"✗ {p}" for p in g.bad_nodes.get(n, [])]
    lines += [f"◆ {w}" for w, x in g.witness_nodes.items() if x == n]
    lines += [f"⟳ {p} fails from here" for p, x in g.liveness_nodes.items() if x == n]
    if n in stays:
        lines += _wrap("stays: " + ", ".join(stays[n]), 60)
    return lines


def _loops(g: Graph, n: int) -> list[str]:
    return [lab for a, lab, z in g.edges if a == z == n]


def _bad(g: Graph, labels: list[str], a: int, z: int) -> tuple[bool, bool]:
    bad = any((a, lab, z) in g.bad_edges for lab in labels)
    hazard = any((a, lab, z) in g.hazard_edges for lab in labels)
    return bad, hazard


def dot(g: Graph) -> str:
    pairs, stays = _edges(g)
    raw = {(a, z): [lab for a2, lab, z2 in g.edges if (a2, z2) == (a, z)] for a, z in pairs}
    title = "\n".join(_wrap(caption(g)) + _wrap(LEGEND))
    out = [
        *[f"// {line}" for line in _wrap(caption(g), 96)],
        f"digraph {quote('model ' + g.name)} {{",
        "    rankdir=TB;",
        '    fontname="Helvetica";',
        "    fontsize=14;",
        "    labelloc=t;",
        f"    label={quote(title)};",
        '    node [fontname="Helvetica", fontsize=10, shape=box, style="rounded"];',
        '    edge [fontname="Helvetica", fontsize=8, color="#555555"];',
        '    start [shape=point, width=0.15, label=""];',
        f"    start -> n{g.init};",
    ]
    for n in range(len(g.nodes)):
        attrs = [f"label={quote(chr(10).join(_node_lines(g, n, stays)))}"]
        if n == g.init:
            attrs.append("peripheries=2")
        if n in g.bad_nodes:
            attrs.append(f'style="rounded,filled", fillcolor="{RED_FILL}", color="{RED}"')
        elif any((n, lab, n) in g.bad_edges for lab in _loops(g, n)):
            attrs.append(f'color="{RED}", penwidth=2')
        out.append(f"    n{n} [{', '.join(attrs)}];")
    for (a, z), labels in pairs.items():
        attrs = [f"label={quote(chr(10).join(labels))}"]
        bad, hazard = _bad(g, raw[(a, z)], a, z)
        if bad:
            attrs.append(f'color="{RED}", fontcolor="{RED}", penwidth=2')
        elif hazard:
            attrs.append(f'color="{ORANGE}", fontcolor="{ORANGE}"')
        out.append(f"    n{a} -> n{z} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _mtext(text: str) -> str:
    """Text inside a quoted Mermaid state label, a transition label or the quoted title."""
    return _mm(text).replace('"', "'")


def mermaid(g: Graph) -> str:
    pairs, stays = _edges(g)
    out = ["---", f'title: "{_mtext(caption(g))}"', "---", "stateDiagram-v2"]
    legend = LEGEND.replace("Double border", "The arrow from [*]").replace(
        "Red arrow, or ✗ after an action", "✗ after an action"
    )
    out += [f"    %% {line}" for line in _wrap(legend, 96)]
    out.append(f"    classDef bad fill:{RED_FILL},stroke:{RED}")
    for n in range(len(g.nodes)):
        text = "<br/>".join(_mtext(x) for x in _node_lines(g, n, stays))
        out.append(f'    state "{text}" as n{n}')
    out.append(f"    [*] --> n{g.init}")
    for (a, z), labels in pairs.items():
        out.append(f"    n{a} --> n{z} : {_mtext(', '.join(labels))}")
    for n in g.bad_nodes:
        out.append(f"    class n{n} bad")
    return "\n".join(out) + "\n"


def index(drawn: tuple[Graph, ...]) -> str:
    sources = ", ".join(f"`model/{name}.py`" for name in MODELS)
    out = [
        "# State graphs of the declared models",
        "",
        f"Generated from {sources} by `mcp-inflight diagrams`, one per model and design at the",
        f"model's default bounds. A design with at most {FULL_LIMIT} reachable states is drawn",
        "whole; a larger one as its exact quotient: a node is every state with the same values",
        "of the variables named below, an arrow labelled with an action means some transition",
        "by that action joins a state of one node to a state of the other, and the actions that",
        "stay inside a node are listed on it. Red node: some state in it breaks an `always`",
        "property (✗ names it); red arrow: a transition breaks a `step` property; ◆: where the",
        "shortest run reaches a witness; ⟳: a liveness property fails from that node.",
        "",
        "| model | design | states | transitions | drawn | nodes | broken |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for g in drawn:
        drawn_as = "whole" if g.kind == "full" else "by " + ", ".join(g.keeps)
        broken = ", ".join(g.failing) or "none"
        out.append(
            f"| {g.model} | [{g.design}]({g.name}.svg) ([DOT]({g.name}.dot), "
            f"[Mermaid]({g.name}.mmd)) | {g.states} | {g.transitions} | {drawn_as} | "
            f"{len(g.nodes)} | {broken} |"
        )
    return "\n".join(out) + "\n"


def files() -> dict[str, tuple[str, str | None]]:
    """``models/<model>-<design>.dot`` and ``.mmd`` (with the DOT to render as SVG for the
    former), and ``models/index.md``."""
    drawn = graphs()
    out: dict[str, tuple[str, str | None]] = {}
    for g in drawn:
        d = dot(g)
        out[f"models/{g.name}.dot"] = (d, d)
        out[f"models/{g.name}.mmd"] = (mermaid(g), None)
    out["models/index.md"] = (index(drawn), None)
    return out
