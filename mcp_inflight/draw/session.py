"""The session-level state graph of a design, drawn from the explorer's transitions.

The graph is the session's declaration (``model/session_spec.py``) walked by
``proofs/walk.py:transitions_out`` on its compiled rules (``proofs/compiled_spec.py``): every
transition of the reachable space, the one explorer's.  It is walked *without* symmetry reduction
so that every node is a concrete state of the model (no canonical form is involved), and the
nodes are numbered breadth-first from the initial state with the outgoing transitions of each
state taken in a fixed order (the order of ``ACTIONS``, then instance, then id), so the drawing
depends on the model only.

Profile and bound.  The graph is drawn on 2026-07-28 Streamable HTTP, at the smallest bound at
which every action of the profile fires on every design drawn, with at least two request
instances so that two requests can meet under one id (computed by :func:`bound`: 1 id and 2
instances).  ``atomic`` serves each 2026-07-28 POST as a scope of its own, so its drawing shows
two POSTs under one id both served and its id-keyed registries empty; ``unguarded`` keeps one
registry for every POST.  On 2025-11-25 http
the same bound has 12 to 39 times as many states and transitions (megabytes of DOT),
too many to commit as a drawing; the actions only that profile has (``server_request``,
``answer``, ``break_stream``) appear in the lifecycle diagrams and the counterexample sequence
diagrams.

Colours.  Properties are judged with the model's own functions (``model/properties.py``) on the
concrete backend.  A state in which a state invariant fails is red; a transition on which a step
invariant fails is a red edge (the invariants are named in the tooltip and, in the reduced
view, on the label).

Two drawings per design:

* ``session-<design>-<profile>.dot``: the complete graph, every state and every transition.
  Node labels are state numbers; the full state is the tooltip.  It is too large to lay out
  legibly, so it is not rendered to SVG.
* ``session-<design>-<profile>-reduced.dot``/``.svg``: a reduced view for reading.  States are
  projected onto the lifecycle state of each instance and the owners of the two id-keyed
  registries (``inflight``, ``stream``), and states with the same projection are merged.  A
  merged node is red when at least one of its states breaks a state invariant (the label says
  how many).  Transitions that leave the projection unchanged (progress, a cancel sent but not
  yet delivered, ...) are not drawn unless one of them breaks a step invariant; then it is a red
  self-loop.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.properties import INVARIANTS
from mcp_inflight.model.session import ACTION, ACTIONS
from mcp_inflight.model.session_spec import spec
from mcp_inflight.model.session_state import FIELDS
from mcp_inflight.model.trace import id_name, inst_name, render_value
from mcp_inflight.proofs.compiled_spec import Refused, compile_spec
from mcp_inflight.proofs.walk import transitions_out

from .render import quote, quote_escaped

DESIGNS_DRAWN = ("atomic", "unguarded")
REVISION = "2026-07-28"
TRANSPORT = "http"
#: Bounds tried in order, smallest state space first: ``(ids, requests)``; two instances at
#: least, so that two requests can meet under one id.
CANDIDATE_BOUNDS = ((1, 2), (2, 2))

RED = "#c62828"
RED_FILL = "#ffd6d6"
_NL = "\\n"  # a line break inside a DOT label
_ORDER = {a.name: n for n, a in enumerate(ACTIONS)}


@dataclass
class Graph:
    cfg: Config
    states: list = field(default_factory=list)  # number -> concrete State
    number: dict = field(default_factory=dict)  # State -> number
    edges: list = field(default_factory=list)  # (pre no, action, args, post no, broken)
    bad_states: dict = field(default_factory=dict)  # number -> [state invariant names]
    coverage: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.cfg.design.name}-{self.cfg.revision}-{self.cfg.transport}"


def _edge_key(e: tuple[Any, ...]) -> tuple[int, int, int]:
    _, a, args, _, _ = e
    return (_ORDER[a.name], args["r"], args.get("i", -1))


@cache
def graph(cfg: Config) -> Graph:
    """The reachable transition graph of ``cfg`` (no symmetry), numbered breadth-first."""
    sp = spec(cfg, liveness=False)
    b = sp.logic()
    state_inv = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "state"]
    step_inv = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "step"]
    succ: dict = {}
    g = Graph(cfg, coverage={a.name: 0 for a in sp.acts})
    try:
        fire = compile_spec(sp).fire
    except Refused:  # a rule the generator cannot read: taken as written
        fire = None
    for pre, m, post, out in transitions_out(sp, fire):
        a, args = ACTION[m.name], dict(m.args)
        broken = [
            p.name
            for p in step_inv
            if not p.fn(b, pre, post, cfg, a, m.kw["r"], m.kw.get("i"), out)
        ]
        succ.setdefault(pre, []).append((pre, a, args, post, broken))
        g.coverage[m.name] += 1
    s0 = sp.initial()
    g.number[s0] = 0
    g.states.append(s0)
    todo = deque([s0])
    while todo:
        s = todo.popleft()
        n = g.number[s]
        for _pre, a, args, post, broken in sorted(succ.get(s, ()), key=_edge_key):
            if post not in g.number:
                g.number[post] = len(g.states)
                g.states.append(post)
                todo.append(post)
            g.edges.append((n, a, args, g.number[post], broken))
    for n, s in enumerate(g.states):
        bad = [p.name for p in state_inv if not p.fn(b, s, cfg)]
        if bad:
            g.bad_states[n] = bad
    return g


@cache
def bound() -> tuple[int, int]:
    """The smallest ``(ids, requests)`` of ``CANDIDATE_BOUNDS`` at which every action of the
    profile fires on every design drawn."""
    for ids, req in CANDIDATE_BOUNDS:
        ok = True
        for d in DESIGNS_DRAWN:
            cov = graph(Config(DESIGNS[d], REVISION, TRANSPORT, ids, req)).coverage
            if any(n == 0 for n in cov.values()):
                ok = False
                break
        if ok:
            return ids, req
    raise RuntimeError("no candidate bound makes every action fire")  # pragma: no cover


def configs() -> list[Config]:
    ids, req = bound()
    return [Config(DESIGNS[d], REVISION, TRANSPORT, ids, req) for d in DESIGNS_DRAWN]


# --- text of a state ----------------------------------------------------------------------

_INST_FIELDS = [f for f in FIELDS if f.key == "inst"]
_ID_FIELDS = [f for f in FIELDS if f.key == "id"]


def state_text(cfg: Config, s: Any) -> str:
    """The full state on one line (the tooltip of a node of the complete graph)."""
    parts = []
    for r in range(cfg.requests):
        vals = []
        for f in _INST_FIELDS:
            if f.sort == "time" and not cfg.stdio:
                continue
            vals.append(f"{f.name}={render_value(f, getattr(s, f.name)[r])}")
        parts.append(f"{inst_name(r)}: " + " ".join(vals))
    regs = []
    for f in _ID_FIELDS:
        for k in range(cfg.ids):
            regs.append(f"{f.name}[{id_name(k)}]={render_value(f, getattr(s, f.name)[k])}")
    if cfg.stdio:
        regs.append(f"clock={s.clock}")
    if s.ended:
        regs.append("ended")
    parts.append(" ".join(regs))
    return " | ".join(parts)


def project(cfg: Config, s: Any) -> tuple[Any, ...]:
    """The reduced view's node: lifecycle state per instance, registry owners per id."""
    return (s.life, s.inflight, s.stream if cfg.http else ())


def project_label(cfg: Config, p: tuple[Any, ...]) -> str:
    life, inflight, stream = p
    lines = [" ".join(f"{inst_name(r)}:{Life(v).label}" for r, v in enumerate(life))]
    regs = []
    for k in range(cfg.ids):
        regs.append(f"inflight[{id_name(k)}]={inst_name(inflight[k])}")
        if cfg.http:
            regs.append(f"stream[{id_name(k)}]={inst_name(stream[k])}")
    lines.append(" ".join(regs))
    return _NL.join(lines)


def _edge_text(a: Any, args: dict[str, int]) -> str:
    t = f"{a.name} {inst_name(args['r'])}"
    if "i" in args:
        t += f" id={id_name(args['i'])}"
    return t


def _legend(lines: list[str]) -> str:
    body = "\\l".join(line.replace('"', '\\"') for line in lines) + "\\l"
    return (
        f'    "__legend" [shape=note, style=filled, fillcolor="#f6f6f6", fontsize=10, '
        f'label="{body}"];'
    )


def _title(g: Graph, what: str) -> str:
    c = g.cfg
    return (
        f"{what}: design {c.design.name}, revision {c.revision} {c.transport}, "
        f"{c.ids} id(s) x {c.requests} request instances"
    )


# --- the complete graph -------------------------------------------------------------------


def dot_full(g: Graph) -> str:
    cfg = g.cfg
    n_bad_edges = sum(1 for e in g.edges if e[4])
    lines = [
        f"// Complete session-level state graph of {cfg.label}, {cfg.ids} id(s) x "
        f"{cfg.requests} request instances, explored without symmetry reduction.",
        f"// {len(g.states)} states, {len(g.edges)} transitions; {len(g.bad_states)} states break "
        f"a state invariant (red), {n_bad_edges} transitions break a step invariant (red).",
        "// Generated from model/ by mcp-inflight diagrams; states are numbered breadth-first.",
        f"digraph {quote('session ' + g.label)} {{",
        f"    label={quote(_title(g, 'Session state graph (complete)'))};",
        "    labelloc=t;",
        "    node [shape=circle, fontsize=9, width=0.3, fixedsize=false];",
        "    edge [fontsize=8];",
        _legend(
            [
                "Node: state number (breadth-first from 0, the initial state); tooltip: full state.",
                "Red node: a state invariant fails there (named in the tooltip).",
                "Red edge: a step invariant fails on that transition (named in the tooltip).",
                "Edge label: action, instance (A, B, ...) and id where the action takes one.",
            ]
        ),
    ]
    for n, s in enumerate(g.states):
        tip = state_text(cfg, s)
        attrs = [f"label={quote(str(n))}"]
        if n in g.bad_states:
            tip += " | breaks: " + ", ".join(g.bad_states[n])
            attrs += [
                f'color="{RED}"',
                f'fontcolor="{RED}"',
                "style=filled",
                f'fillcolor="{RED_FILL}"',
            ]
        attrs.append(f"tooltip={quote(tip)}")
        lines.append(f"    s{n} [{', '.join(attrs)}];")
    for pre, a, args, post, broken in g.edges:
        attrs = [f"label={quote(_edge_text(a, args))}"]
        if broken:
            attrs += [
                f'color="{RED}"',
                f'fontcolor="{RED}"',
                "penwidth=2",
                f"tooltip={quote('breaks: ' + ', '.join(broken))}",
            ]
        lines.append(f"    s{pre} -> s{post} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- the reduced view ---------------------------------------------------------------------


def reduced(g: Graph) -> tuple[list[Any], list[Any]]:
    """``(nodes, edges)`` of the reduced view, in a stable order.

    ``nodes``: ``[(projection, n_states, n_bad, {invariant: count})]`` in order of the lowest
    state number merged; ``edges``: ``[(i, j, [labels], [broken invariants])]``.
    """
    cfg = g.cfg
    order: dict = {}
    count: dict = {}
    n_bad: dict = {}
    bad: dict = {}
    for n, s in enumerate(g.states):
        p = project(cfg, s)
        order.setdefault(p, len(order))
        count[p] = count.get(p, 0) + 1
        if n in g.bad_states:
            n_bad[p] = n_bad.get(p, 0) + 1
        for name in g.bad_states.get(n, ()):
            bad.setdefault(p, {}).setdefault(name, 0)
            bad[p][name] += 1
    nodes = [(p, count[p], n_bad.get(p, 0), bad.get(p, {})) for p in order]
    emap: dict = {}
    for pre, a, args, post, broken in g.edges:
        pi, pj = order[project(cfg, g.states[pre])], order[project(cfg, g.states[post])]
        if pi == pj and not broken:
            continue
        per_text = emap.setdefault((pi, pj), {})
        total, brk = per_text.setdefault(_edge_text(a, args), [0, {}])
        per_text[_edge_text(a, args)][0] = total + 1
        for name in broken:
            brk[name] = brk.get(name, 0) + 1
    edges = []
    for (i, j), per_text in sorted(emap.items()):
        labels, names = [], set()
        for text in sorted(per_text, key=lambda t: (_ORDER[t.split()[0]], t)):
            total, brk = per_text[text]
            if brk:
                text += (
                    " (breaks "
                    + ", ".join(
                        f"{n}: {c} of {total}" if c < total else n for n, c in sorted(brk.items())
                    )
                    + ")"
                )
                names.update(brk)
            labels.append(text)
        edges.append((i, j, labels, sorted(names)))
    return nodes, edges


def dot_reduced(g: Graph) -> str:
    cfg = g.cfg
    nodes, edges = reduced(g)
    lines = [
        f"// Reduced view of the session state graph of {cfg.label} ({cfg.ids} id(s) x "
        f"{cfg.requests} request instances): {len(g.states)} states merged into {len(nodes)} "
        "nodes by their projection",
        "// onto the lifecycle state of each instance and the owners of the id-keyed registries. "
        "The complete graph is in the file without -reduced.",
        f"digraph {quote('session ' + g.label + ' reduced')} {{",
        "    rankdir=TB;",
        "    newrank=true;",
        "    nodesep=0.35;",
        "    ranksep=0.45;",
        '    fontname="Helvetica";',
        "    fontsize=16;",
        "    labelloc=t;",
        f"    label={quote(_title(g, 'Session state graph, reduced view'))};",
        '    node [fontname="Helvetica", fontsize=10, shape=box, style="rounded"];',
        '    edge [fontname="Helvetica", fontsize=8, color="#555555"];',
        _legend(
            [
                f"Reduced view: the {len(g.states)} states of the complete graph merged into "
                f"{len(nodes)} nodes",
                "by the lifecycle state of each instance (A, B) and the owners of the registries",
                "inflight[id] and stream[id] ('-' = empty). (n) = states merged.",
                "Red node: at least one merged state breaks a state invariant (k of n named).",
                "Red edge: a transition breaks a step invariant (named on the label, with",
                "k of n when only k of the n transitions merged into that label break it).",
                "Transitions that change nothing in this projection are not drawn,",
                "unless they break a step invariant (then a red self-loop).",
                "Every action, instance and id: the complete graph (.dot without -reduced).",
                f"Here {len(g.bad_states)} of {len(g.states)} states break a state invariant and "
                f"{sum(1 for e in g.edges if e[4])} of {len(g.edges)} transitions a step invariant.",
            ]
        ),
    ]
    for k, (p, n, nb, bad) in enumerate(nodes):
        label = project_label(cfg, p) + _NL + f"({n})"
        attrs = []
        if nb:
            label += _NL + _NL.join(f"breaks {name}: {c} of {n}" for name, c in sorted(bad.items()))
            attrs += [
                f'color="{RED}"',
                f'fontcolor="{RED}"',
                'style="rounded,filled"',
                f'fillcolor="{RED_FILL}"',
                "penwidth=2",
            ]
        if k == 0:
            attrs.append("peripheries=2")
        attrs.insert(0, f"label={quote_escaped(label)}")
        lines.append(f"    n{k} [{', '.join(attrs)}];")
    for i, j, labels, brk in edges:
        attrs = [f"label={quote_escaped(_NL.join(labels))}"]
        if brk:
            attrs += [f'color="{RED}"', f'fontcolor="{RED}"', "penwidth=2"]
        lines.append(f"    n{i} -> n{j} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def files() -> dict[str, str]:
    """``{relative name: DOT text}`` for every design drawn (SVG is rendered by the caller
    for the reduced views only)."""
    out = {}
    for cfg in configs():
        g = graph(cfg)
        out[f"session/session-{g.label}.dot"] = dot_full(g)
        out[f"session/session-{g.label}-reduced.dot"] = dot_reduced(g)
    return out
