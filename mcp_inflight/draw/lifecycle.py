"""The request lifecycle of every revision, drawn from ``model/lifecycle.py``'s table.

``lifecycle-<revision>.dot`` (Graphviz) and ``.mmd`` (Mermaid ``stateDiagram-v2``), states in
``STATES`` order, transitions in table order; pre-states dashed, final states double-bordered,
unreachable states grey.
"""

from __future__ import annotations

from mcp_inflight.model import lifecycle as lc

from .render import quote as _q

PRE_STATES = tuple(s.label for s in lc.PRE)

LEGEND_LINES = (
    "unsent and sent are pre-states: a model slot no request has used yet,",
    "and a request on the wire not yet read by the server (dashed).",
    "Edges read  trigger [cond1, cond2]: the bracketed names are guard",
    "conditions of model/session_conditions.py CONDITIONS.",
    "Double border: no transition leaves the state (a self-loop aside).",
    "Grey dotted: not reachable from unsent in this revision.",
)


# --- the table, read once per drawing ---------------------------------------------------------


def _edges(revision: str) -> list[tuple[str, str, str, str]]:
    """``(source, dest, trigger, label)`` per edge, in table order then source order.

    Read from the ``transitions`` machine built from the table (``lifecycle.machine``), so
    what is drawn is what that library accepted: the states exist, each trigger's sources and
    destination, its conditions by name."""
    out = []
    m = lc.machine(revision)
    for trigger, event in m.events.items():
        for src, ts in event.transitions.items():
            for t in ts:
                conds = [c.func for c in t.conditions]
                label = trigger + (" [" + ", ".join(conds) + "]" if conds else "")
                out.append((src, t.dest, trigger, label))
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
    lines.append(f'    "__start" -> {_q(lc.INITIAL)};')
    loops: dict[str, int] = {}
    for src, dst, _trigger, label in _edges(revision):
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
    lines.append(
        f'    "__legend" [shape=note, style=filled, fillcolor="#f6f6f6", '
        f'fontsize=10, label="{legend}"];'
    )
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
