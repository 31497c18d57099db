"""The state graphs of the declared models, computed from the one checker's explorer.

Each model of ``model/declare.py`` (lease, rounds, resume, tasks, subscriptions) is walked at
its default bounds, once per design, on the rules the explorer runs (``proofs/compiled_spec.py``,
or the concrete steps of ``proofs/stepping.py`` when the generator refuses a rule), the way
``proofs/explorer.py``'s ``explore`` walks it: breadth first from the initial state, moves in
declared order, so the numbering depends on the model alone and the first state (transition)
where a witness holds is the end of the explorer's shortest run to it.  Liveness is judged by
``explore`` itself (a fair cycle, not a state), and its run replayed onto the graph; the tests
compare the walk with ``explore``'s states, transitions, verdicts and witnesses.

What a node stands for:

* **full graph** (the design has at most :data:`FULL_LIMIT` reachable states): a node is one
  state, an edge one transition, labelled by its move (an action with its arguments);
* **quotient** (more states): a node is the set of reachable states that agree on the
  variables :data:`PROJECTIONS` names for the model (every slot of each); there is an edge
  ``A -action-> B`` exactly when some transition by ``action`` leads from a state of ``A`` to
  a state of ``B`` (the existential quotient, nothing dropped).  Transitions that stay in their
  node are self-loops.

A node is marked failing when some state in it breaks an ``always`` property (named on the
node), an edge when some transition in it breaks a ``step`` property; a hazard the protocol
cannot exclude is marked apart.  A witness (``sometimes``, ``happens``) is shown on the node or
edge where the explorer's shortest run first reaches it, and a liveness failure on the node of
the state from which the explorer found a fair run that never reaches its goal.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_inflight.model.declare import Move, Spec, declared_models
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.stepping import move as make_move
from mcp_inflight.proofs.stepping import take

#: The models drawn: name -> module (``DESIGNS``, ``spec``).
MODELS = declared_models()

#: The variables a quotient node keeps, per model: the phase of each slot of the model's main
#: sort (and, for resume, the client's connection; for tasks, the task's status).
PROJECTIONS: dict[str, tuple[str, ...]] = {
    "lease": ("life",),
    "rounds": ("phase",),
    "resume": ("handler", "conn"),
    "tasks": ("rph", "ts"),
    "subscriptions": ("ph", "who"),
}

#: A design with at most this many reachable states is drawn whole.
FULL_LIMIT = 80


@dataclass
class Graph:
    """A drawn state graph (full or quotient), plain data (it is cached on disk)."""

    model: str
    design: str
    bounds: str
    kind: str  # "full" | "quotient"
    keeps: tuple[str, ...]  # the projection's variables (quotient), () for the full graph
    states: int  # reachable states of the model
    transitions: int  # transitions of the model (state, move) that fire
    nodes: list[list[str]] = field(default_factory=list)  # per node: its label lines
    members: list[int] = field(default_factory=list)  # per node: states it stands for
    init: int = 0
    #: (source node, label, target node) -> number of transitions it stands for
    edges: dict[tuple[int, str, int], int] = field(default_factory=dict)
    bad_nodes: dict[int, list[str]] = field(default_factory=dict)  # node -> always props
    bad_edges: dict[tuple[int, str, int], list[str]] = field(default_factory=dict)
    hazard_edges: dict[tuple[int, str, int], list[str]] = field(default_factory=dict)
    #: witness name -> node (sometimes) or edge (happens) where its shortest run reaches it
    witness_nodes: dict[str, int] = field(default_factory=dict)
    witness_edges: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    liveness_nodes: dict[str, int] = field(default_factory=dict)  # failing liveness -> node
    unreached: list[str] = field(default_factory=list)  # witnesses not reached
    failing: list[str] = field(default_factory=list)  # properties the explorer finds broken

    @property
    def name(self) -> str:
        return f"{self.model}-{self.design}"


@dataclass
class _Rules:
    """Per move ``fire(s) -> (post, output) | None``; per property a test on a state or a
    transition (``test(pre, post, output)``, per move)."""

    moves: list[Move]
    fire: list[Callable[[Any], Any] | None]
    state: Mapping[str, Callable[[Any], Any]]
    step: Sequence[Mapping[str, Callable[[Any, Any, Any], Any]]]


def _rules(spec: Spec) -> _Rules:
    from mcp_inflight.proofs.compiled_spec import Refused, compile_spec

    moves = list(spec.moves())
    try:
        c = compile_spec(spec)
    except Refused:
        return _concrete(spec, moves)
    return _Rules(moves, list(c.fire), c.state, c.step)


def _concrete(spec: Spec, moves: list[Move]) -> _Rules:
    b = spec.logic()

    def fire(m: Move) -> Callable[[Any], Any]:
        return lambda s: take(spec, s, m, b)

    def state_test(fn: Callable[..., Any]) -> Callable[[Any], Any]:
        return lambda s: bool(fn(b, s))

    def step_test(p: Any, m: Move) -> Callable[[Any, Any, Any], Any]:
        return lambda pre, post, out: bool(p.on_step(b, pre, post, m, out))

    steps = [p for p in spec.props if p.scope == "step"]
    return _Rules(
        moves,
        [fire(m) for m in moves],
        {p.name: state_test(p.fn) for p in spec.props if p.scope == "state"},
        [{p.name: step_test(p, m) for p in steps} for m in moves],
    )


def projection(spec: Spec, keeps: Iterable[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The quotient's key of a state: the values of the variables ``keeps``."""
    names = tuple(keeps)
    for n in names:
        spec.var(n)  # a name the model does not have is a KeyError here, not a silent graph
    return lambda s: tuple(getattr(s, n) for n in names)


def _label(spec: Spec, keeps: tuple[str, ...], s: Any) -> list[str]:
    """A node's lines: each kept variable, its slots' values side by side."""
    out = []
    for n in keeps:
        v = spec.var(n)
        vals = getattr(s, n)
        if v.keys is None:
            out.append(f"{n}={v.label(vals)}")
        else:
            out.append(" ".join(f"{v.slot(k)}={v.label(x)}" for k, x in enumerate(vals)))
    return out


def build(spec: Spec, limit: int = FULL_LIMIT, keeps: tuple[str, ...] | None = None) -> Graph:
    """The state graph of ``spec``: whole when it has at most ``limit`` states, else the
    quotient by ``keeps`` (default: the model's :data:`PROJECTIONS`)."""
    rules = _rules(spec)
    kept = keeps if keeps is not None else PROJECTIONS[spec.model]
    g = _walk(spec, rules, kept)
    if g.states <= limit:
        g = _walk(spec, rules, None)
    if any(p.kind == "liveness" for p in spec.props):
        _place_liveness(spec, g)
    g.failing = [p.name for p in spec.props if p.name in g.failing]
    return g


def _walk(spec: Spec, rules: _Rules, kept: tuple[str, ...] | None) -> Graph:
    """Every reachable state and transition of ``spec``, breadth first as the explorer walks
    them (moves in declared order), gathered into nodes by ``kept`` (None: one node a state).
    The first state (transition) in that order where a witness holds is where the explorer's
    shortest run reaches it."""
    whole = kept is None
    key: Callable[[Any], Any] = (lambda s: s) if kept is None else projection(spec, kept)
    always = [p.name for p in spec.props if p.kind == "always"]
    sometimes = [p.name for p in spec.props if p.kind == "sometimes"]
    steps = {p.name: p.kind for p in spec.props if p.kind in ("step", "hazard", "happens")}
    g = Graph(spec.model, spec.design, spec.bounds_label(), "full" if whole else "quotient",
              kept or (), 0, 0)  # fmt: skip
    node_of: dict[Any, int] = {}  # quotient key -> node
    bad_nodes: dict[int, set[str]] = {}
    bad_edges: dict[tuple[int, str, int], set[str]] = {}
    hazards: dict[tuple[int, str, int], set[str]] = {}
    failing: set[str] = set()

    def visit(s: Any) -> int:
        k = key(s)
        n = node_of.get(k)
        if n is None:
            n = node_of[k] = len(g.nodes)
            if kept is None:
                g.nodes.append([f"{x}: {y}" for x, y in _describe(spec, s)])
            else:
                g.nodes.append(_label(spec, kept, s))
            g.members.append(0)
        g.members[n] += 1
        g.states += 1
        for name in always:
            if not rules.state[name](s):
                bad_nodes.setdefault(n, set()).add(name)
                failing.add(name)
        for name in sometimes:
            if name not in g.witness_nodes and rules.state[name](s):
                g.witness_nodes[name] = n
        return n

    init = spec.initial()
    seen = {init: visit(init)}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        a = seen[s]
        for j, fire in enumerate(rules.fire):
            if fire is None:
                continue
            fired = fire(s)
            if fired is None:
                continue
            post, out = fired
            g.transitions += 1
            z = seen.get(post)
            if z is None:
                z = seen[post] = visit(post)
                queue.append(post)
            m = rules.moves[j]
            e = (a, str(m) if whole else m.name, z)
            g.edges[e] = g.edges.get(e, 0) + 1
            for name, test in rules.step[j].items():
                kind = steps.get(name)
                if kind == "happens":
                    if name not in g.witness_edges and test(s, post, out):
                        g.witness_edges[name] = e
                elif kind is not None and not test(s, post, out):
                    into = bad_edges if kind == "step" else hazards
                    into.setdefault(e, set()).add(name)
                    failing.add(name)
    g.bad_nodes = {n: sorted(v) for n, v in sorted(bad_nodes.items())}
    g.bad_edges = {e: sorted(v) for e, v in bad_edges.items()}
    g.hazard_edges = {e: sorted(v) for e, v in hazards.items()}
    order = [p.name for p in spec.props]
    g.witness_nodes = dict(sorted(g.witness_nodes.items(), key=lambda x: order.index(x[0])))
    g.witness_edges = dict(sorted(g.witness_edges.items(), key=lambda x: order.index(x[0])))
    g.unreached = [
        p.name
        for p in spec.props
        if p.kind in ("sometimes", "happens")
        and p.name not in g.witness_nodes
        and p.name not in g.witness_edges
    ]
    g.failing = sorted(failing)
    return g


def _describe(spec: Spec, s: Any) -> list[tuple[str, str]]:
    from mcp_inflight.model.declare import describe

    return list(describe(spec, s).items())


def _replay(spec: Spec, trace: list[dict[str, Any]]) -> list[tuple[Any, Move, Any]]:
    """The run a rendered trace tells, as ``(pre, move, post)`` from the initial state."""
    b = spec.logic()
    s = spec.initial()
    out = []
    for st in trace:
        m = make_move(spec, st["action"], **st["args"])
        t = take(spec, s, m, b)
        if t is None:
            raise RuntimeError(f"{spec.label()}: a trace does not replay at {m}")
        out.append((s, m, t[0]))
        s = t[0]
    return out


def _place_liveness(spec: Spec, g: Graph) -> None:
    """Put each liveness property the explorer finds failing on the node of the state from
    which it found a fair run that never reaches the goal (its trace's last state)."""
    res = explore(
        spec, engine="fastest"
    )  # native where a compiler is (the same verdicts and traces)
    if (res.states, res.transitions) != (g.states, g.transitions):
        raise RuntimeError(
            f"{spec.label()}: walked {g.states} states and {g.transitions} transitions, the "
            f"explorer {res.states} and {res.transitions}"
        )
    for p in spec.props:
        if p.kind != "liveness" or res.verdicts.get(p.name) != "fails":
            continue
        run = _replay(spec, res.traces.get(p.name) or [])
        last = run[-1][2] if run else spec.initial()
        g.liveness_nodes[p.name] = _node_of(spec, g, last)
        g.failing.append(p.name)


def _node_of(spec: Spec, g: Graph, s: Any) -> int:
    """The node of state ``s`` in ``g`` (found by its label, which is unique per node)."""
    whole = g.kind == "full"
    lines = [f"{x}: {y}" for x, y in _describe(spec, s)] if whole else _label(spec, g.keeps, s)
    return g.nodes.index(lines)
