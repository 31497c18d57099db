"""Liveness over the explored state graph: the session's (``proofs/session_search.py`` records
its graph when asked) and, at the end, the declared models' ``eventually`` properties as the one
explorer (``proofs/explorer.py``) judges them, on the whole graph or on a reduced one.

Three properties, judged on the graph whose nodes are the explored states (their canonical
keys under symmetry) and whose edges are the moves between them:

``settles``
    From every reachable state a settled state (``model/session_state.py:settled``) is reachable:
    backward reachability from the settled states over the graph.
``no_deadlock``
    Every state that is not settled has a move that changes the state: a move whose successor is
    the state itself (a pure-output step such as ``emit``) does not count as progress.  (The run's
    ``deadlocks`` count, states with no move at all, is kept as it was.)
``requests_answered``
    Every client request is eventually answered, refused, cancelled or its stream broken, on
    every run that is *weakly fair* to the actions it rests on (:data:`RESTS_ON`: the server's
    steps and the wire's deliveries, each declared ``fair="weak"`` in ``model/session.py``; not a
    stream breaking, which is the network's doing, nor the session's end): a move of those
    actions that stays enabled is eventually taken.  The
    clients and the rogue owe nothing (they may stop sending at any point), and stuttering is
    always allowed.  A violation is a strongly connected component (a state with stuttering
    counts as one) that a fair run can stay in forever with a client request pending throughout:
    for a single state, one where no fair move changes the state; for a larger component, one in
    which every fair move enabled in all of its states is taken inside it (weak fairness per
    move, with moves named as on each state's representative).

Each failure comes with a lasso: the shortest prefix to the first bad state the search met,
then a loop (a walk that stays among bad states until it repeats a state up to renaming, or a
stuttering step that changes nothing).  The verdicts are the same with and without symmetry
reduction on the configurations ``tests/test_liveness.py`` compares.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_inflight.model.declare import Spec, render_step

# the session's liveness properties are stated in the model (``model/eventually.py``); this
# module judges them on the explored graph
from mcp_inflight.model.eventually import (
    DOCS,
    NAMES,
    PENDING,
    RESTS_ON,
    fair_actions,
    is_fair,
    pending,
)

from .walk import tour

__all__ = [
    "DOCS",
    "NAMES",
    "Found",
    "PENDING",
    "RESTS_ON",
    "Graph",
    "StateIndex",
    "Unfolded",
    "fair_actions",
    "bad_components",
    "cannot_reach",
    "fair_component",
    "fair_violation",
    "fair_violation_reduced",
    "fair_violation_unfolded",
    "find",
    "is_fair",
    "judge_liveness",
    "pending",
    "sccs",
    "settle_unreachable",
    "stuck",
    "walk_on",
    "unanswered",
]


class StateIndex(Protocol):
    """A state's node by its key: a dict in the compiled engine, the C search's own table in
    the native one (``proofs/native.py``)."""

    def __contains__(self, key: object, /) -> bool: ...

    def __getitem__(self, key: Any, /) -> int: ...


@dataclass
class Graph:
    """The explored graph: node n is the n-th state met (breadth-first, so lower is shallower)."""

    src: array[int] = field(default_factory=lambda: array("i"))
    dst: array[int] = field(default_factory=lambda: array("i"))
    move: array[int] = field(default_factory=lambda: array("i"))
    settled: bytearray = field(default_factory=bytearray)
    #: per node: the move of a stuttering self-loop (the successor is the state itself), or -1
    stutter: array[int] = field(default_factory=lambda: array("i"))
    #: per node: some fair move leads to another state
    fair_exit: bytearray = field(default_factory=bytearray)

    @property
    def nodes(self) -> int:
        return len(self.settled)

    def succ_lists(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.nodes)]
        for u, v in zip(self.src, self.dst, strict=True):
            out[u].append(v)
        return out


def settle_unreachable(g: Graph) -> list[int]:
    """Nodes from which no settled node is reachable, in index order."""
    pred: list[list[int]] = [[] for _ in range(g.nodes)]
    for u, v in zip(g.src, g.dst, strict=True):
        pred[v].append(u)
    seen = bytearray(g.settled)
    stack = [n for n in range(g.nodes) if g.settled[n]]
    while stack:
        v = stack.pop()
        for u in pred[v]:
            if not seen[u]:
                seen[u] = 1
                stack.append(u)
    return [n for n in range(g.nodes) if not seen[n]]


def stuck(g: Graph, succ: list[list[int]]) -> list[int]:
    """Unsettled nodes whose every move leads back to the node itself (or that have none)."""
    return [n for n in range(g.nodes) if not g.settled[n] and all(v == n for v in succ[n])]


def sccs(succ: list[list[int]]) -> list[list[int]]:
    """Strongly connected components (Tarjan's algorithm, iterative)."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on = bytearray(n)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            v, pos = work.pop()
            if pos == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = 1
            if pos < len(succ[v]):
                work.append((v, pos + 1))
                w = succ[v][pos]
                if index[w] == -1:
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = 0
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def unanswered(
    g: Graph,
    succ: list[list[int]],
    state_of: Callable[[int], Any],
    enabled_fair: Callable[[int], set[int]],
    requests: int,
) -> int | None:
    """The shallowest node of a fair component with a client request pending throughout."""
    best: int | None = None
    comps = sccs(succ)
    comp_id = [0] * g.nodes
    for k, comp in enumerate(comps):
        for u in comp:
            comp_id[u] = k
    inside: list[set[int]] = [set() for _ in comps]
    for u, v, m in zip(g.src, g.dst, g.move, strict=True):
        if comp_id[u] == comp_id[v]:
            inside[comp_id[u]].add(m)
    for k, comp in enumerate(comps):
        if len(comp) == 1:
            u = comp[0]
            if g.fair_exit[u] and not any(v == u for v in succ[u]):
                continue
            if g.fair_exit[u]:
                # a self-edge that renames the state: judge it as a component below
                pass
            else:
                s = state_of(u)
                if any(pending(s, r) for r in range(requests)):
                    best = u if best is None else min(best, u)
                continue
        taken = inside[k]
        always = None
        for u in comp:
            en = enabled_fair(u)
            always = en if always is None else always & en
        if always is not None and not always <= taken:
            continue
        # A client request stops being pending for good, and a new one becomes pending only by
        # a send, which no cycle contains: every state of a component has the same pending
        # requests (up to the renaming of instances that symmetry reduction applies to each
        # state's representative), so the test is made per state, not per instance name.
        states = [state_of(u) for u in comp]
        if all(any(pending(s, r) for r in range(requests)) for s in states):
            u = min(comp)
            best = u if best is None else min(best, u)
    return best


def _walk(
    comp: Any,
    key_of: Callable[[tuple[Any, ...]], Any],
    index: StateIndex,
    start: tuple[Any, ...],
    allowed: Callable[[int], bool],
    limit: int = 64,
) -> tuple[list[tuple[Any, ...]], int]:
    """A loop from concrete state ``start`` among allowed nodes: ``(steps, loop_start)`` where the
    steps from ``loop_start`` on repeat (the walk returns to a state it met, up to renaming, or
    ends in a stuttering step; with no move left, the loop is empty and the run stops there)."""
    lay, moves = comp.layout, comp.moves
    seen = {key_of(start): 0}
    steps: list[tuple[Any, ...]] = []
    x = start
    while len(steps) < limit:
        options = [(m, t) for m, t, _, _ in comp.expand(x)]
        stutter = next((m for m, t in options if t is x or t == x), None)
        nxt = None
        for m, t in options:
            if t is x or t == x:
                continue
            k = key_of(t)
            if k in index and allowed(index[k]):
                if k not in seen:
                    nxt = (m, t, k)
                    break
                if nxt is None:
                    nxt = (m, t, k)
        if nxt is None:
            if stutter is None:
                return steps, len(steps)
            mv = moves[stutter]
            pre = lay.unflatten(x)
            return steps + [(mv.action, mv.args, pre, pre)], len(steps)
        m, t, k = nxt
        mv = moves[m]
        steps.append((mv.action, mv.args, lay.unflatten(x), lay.unflatten(t)))
        if k in seen:
            return steps, seen[k]
        seen[k] = len(steps)
        x = t
    return steps, 0


@dataclass
class Found:
    """What the judge needs from the graph: the nodes from which no settled node is reachable
    and the stuck ones (each in index order), and the shallowest node of a fair component with a
    client request pending throughout, with that component's nodes (or None)."""

    nodes: int
    never: list[int]
    dead: list[int]
    hung: int | None
    hung_comp: set[int]


def find(
    g: Graph,
    state_of: Callable[[int], Any],
    enabled_fair: Callable[[int], set[int]],
    requests: int,
) -> Found:
    """:class:`Found` on ``g``, in Python (the reference; ``proofs/native.py`` computes the same
    in C on the graph its search kept)."""
    succ = g.succ_lists()
    hung = unanswered(g, succ, state_of, enabled_fair, requests)
    comp: set[int] = set()
    if hung is not None:
        comp = next(set(c) for c in sccs(succ) if hung in c)
    return Found(g.nodes, settle_unreachable(g), stuck(g, succ), hung, comp)


def judge_liveness(
    cfg: Any,
    comp: Any,
    g: Graph | Callable[[Callable[[int], Any]], Found],
    complete: bool,
    path: Callable[[int], list[tuple[Any, ...]]],
    key_of: Callable[[tuple[Any, ...]], Any],
    index: StateIndex,
    flat: Callable[[int], tuple[Any, ...]] | None = None,
) -> list[Any]:
    """The liveness verdicts of one run (``proofs/records.py:Verdict``), with lasso traces.
    ``g``: the explored graph, read by :func:`find`, or a function that gives its
    :class:`Found` from a node's state (the native engine's, computed in C)."""
    from mcp_inflight.model.trace import build_trace
    from mcp_inflight.proofs.records import Verdict

    lay = comp.layout
    if not complete:
        return [
            Verdict(
                n,
                "liveness",
                False,
                True,
                None,
                DOCS[n] + " (not judged: the search stopped at --max-states)",
                fair=fair_actions(n, cfg),
            )
            for n in NAMES
        ]

    def start_of(n: int) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
        steps = path(n)
        return steps, (lay.flatten(steps[-1][3]) if steps else comp.initial())

    def flat_of(n: int) -> tuple[Any, ...]:
        return flat(n) if flat is not None else start_of(n)[1]

    def state_of(n: int) -> Any:
        return lay.unflatten(flat_of(n))

    fair = set(fair_actions("requests_answered", cfg))

    def enabled_fair(n: int) -> set[int]:
        x = flat_of(n)
        return {m for m, t, _, _ in comp.expand(x) if comp.moves[m].action.name in fair and t != x}

    res = find(g, state_of, enabled_fair, cfg.requests) if isinstance(g, Graph) else g(state_of)
    never, dead, hung = res.never, res.dead, res.hung
    bad_never = set(never)
    found = {
        "settles": (never[0], bad_never.__contains__) if never else None,
        "no_deadlock": (dead[0], lambda v: False) if dead else None,
        "requests_answered": (hung, res.hung_comp.__contains__) if hung is not None else None,
    }
    counts = {
        "settles": len(never),
        "no_deadlock": len(dead),
        "requests_answered": 0 if hung is None else 1,
    }
    out = []
    for name in NAMES:
        hit = found[name]
        if hit is None:
            out.append(
                Verdict(
                    name, "liveness", True, True, None, DOCS[name], fair=fair_actions(name, cfg)
                )
            )
            continue
        n, allowed = hit
        prefix, x = start_of(n)
        loop, at = _walk(comp, key_of, index, x, allowed)
        doc = DOCS[name]
        if name != "requests_answered":
            doc += f" ({counts[name]:,} of {res.nodes:,} states)"
        out.append(
            Verdict(
                name,
                "liveness",
                True,
                False,
                build_trace(cfg, prefix + loop),
                doc,
                loop_start=len(prefix) + at,
                fair=fair_actions(name, cfg),
            )
        )
    return out


# --- the declared models' liveness (proofs/explorer.py), whole or reduced ------------------------


def bad_components(goal: list[bool], edges: list[list[tuple[int, int]]]) -> list[list[int]]:
    """The strongly connected components of the graph of the states where the goal fails."""
    bad = [not g for g in goal]
    # the graph of the goal-less states only: a good state has no edge there
    succ = [[k for _, k in edges[n] if bad[k]] if bad[n] else [] for n in range(len(goal))]
    return [comp for comp in sccs(succ) if bad[comp[0]]]


def fair_component(comp: list[int], edges: list[list[tuple[int, int]]], fair: set[int]) -> bool:
    """Whether a run weakly fair to ``fair`` can stay in component ``comp`` forever: every
    fair move enabled in all of its states is taken inside it."""
    members = set(comp)
    inside = {j for n in comp for j, k in edges[n] if k in members}
    everywhere = set.intersection(*({j for j, _ in edges[n]} for n in comp))
    # a fair move enabled in every state of the component and never taken inside it
    # would have to be taken: such a component is no place for a fair run to stay
    return not (fair & everywhere) - inside


class Unfolded:
    """Real states of some orbits (``states``, numbered by ``add``, each with the reduced
    state of its orbit in ``node``) and per state its real moves ``(row, successor)``, -1 for a
    successor outside them."""

    def __init__(self) -> None:
        self.states: list[Any] = []
        self.node: list[int] = []
        self.at: dict[Any, int] = {}
        self.edges: list[list[tuple[int, int]]] = []

    def add(self, x: Any, node: int) -> int:
        k = self.at.get(x)
        if k is None:
            k = self.at[x] = len(self.states)
            self.states.append(x)
            self.node.append(node)
        return k

    def first_fair(self, fair: set[int]) -> int | None:
        """The first reduced state (breadth first) whose orbit meets a component of these
        states that a weakly fair run can stay in, or None when none can be stayed in."""
        succ = [[k for _, k in row if k >= 0] for row in self.edges]
        firsts = [
            min(self.node[n] for n in comp)
            for comp in sccs(succ)
            if fair_component(comp, self.edges, fair)
        ]
        return min(firsts, default=None)

    def loop(self, x: Any, table: list[Any], spec: Spec) -> list[dict[str, Any]]:
        """The loop of the lasso from real state ``x`` (the reduced trace's real end): a closed
        walk through the fair component that holds ``x``.  Every renaming of a fair component
        is one, and ``x`` is in the orbit of one of its states, so the component of ``x`` is
        fair too.  Where ``x`` is not among these states (a component of one state judged on
        its representative, with no move to another state of its orbit), the component is
        ``x`` alone: the loop is its first move back to itself in table order, as
        ``walk.tour`` walks it on the whole graph, and empty where it has none (the run stays
        there, every fair move disabled)."""
        start = self.at.get(x)
        if start is None:
            for m, fire, *_ in table:
                fired = fire(x)
                if fired is not None and fired[0] == x:
                    return [render_step(spec, m, x, *fired)]
            return []
        succ = [[k for _, k in row if k >= 0] for row in self.edges]
        comp = next(c for c in sccs(succ) if start in c)
        return [
            render_step(spec, table[j][0], self.states[n], *table[j][1](self.states[n]))
            for n, j in tour(start, set(comp), self.edges)
        ]


def fair_violation_reduced(
    goal: list[bool],
    edges: list[list[tuple[int, int]]],
    fair: set[int],
    unfold: Callable[[list[int]], Unfolded],
    renamed: Container[int],
) -> tuple[int, Unfolded] | None:
    """:func:`fair_violation` on a reduced graph, exactly as on the whole one: the first
    reduced state (breadth first) whose orbit meets a component of real states a weakly fair
    run can stay in, where the goal fails, and the orbits unfolded around it.

    A reduced state's moves are named as on its representative, so weak fairness is not read
    on the reduced graph itself.  A reduced component of one state with no move to another
    state of its own orbit (``renamed``: the reduced states with such a move, as the search
    found them) unfolds into single states,
    each a renaming of the representative with its moves renamed alike, its moves that leave
    it as it is included (fairness names actions, which renaming keeps): judged on the
    representative.  Any other component is unfolded (``unfold``: every renaming of its
    states, and every real move between them) and judged on the real moves
    (:func:`fair_violation_unfolded`)."""
    single: int | None = None
    comps = []
    for comp in bad_components(goal, edges):
        if len(comp) > 1 or comp[0] in renamed:
            comps.append(comp)
        elif fair_component(comp, edges, fair) and (single is None or comp[0] < single):
            single = comp[0]
    return fair_violation_unfolded(single, comps, fair, unfold)


def fair_violation_unfolded(
    single: int | None,
    comps: list[list[int]],
    fair: set[int],
    unfold: Callable[[list[int]], Unfolded],
) -> tuple[int, Unfolded] | None:
    """The end of :func:`fair_violation_reduced`, once the reduced components are judged
    (``single``: the first component of one state a fair run can stay in, judged on its
    representative, or None) or listed to be unfolded (``comps``): the first reduced state
    whose orbit meets a component of real states a weakly fair run can stay in, and the orbits
    unfolded around it (none for ``single``).  Components are unfolded in the order of their
    first states, and only while that comes before the state found so far (a component's
    states are all at or after its first)."""
    found = None if single is None else (single, Unfolded())
    for comp in sorted(comps, key=min):
        if found is not None and min(comp) >= found[0]:
            break
        real = unfold(comp)
        at = real.first_fair(fair)
        if at is not None and (found is None or at < found[0]):
            found = (at, real)
    return found


def fair_violation(
    goal: list[bool], edges: list[list[tuple[int, int]]], fair: set[int]
) -> tuple[int, list[int]] | None:
    """A state from which a run weakly fair to the moves ``fair`` (rows of the move table)
    can stay forever where the goal does not hold, and the component it can stay in; or None
    when every such run reaches the goal.

    Such a run ends in a strongly connected component of the states where the goal fails
    (a single state counts: stuttering is always allowed) and visits all of it forever; it is
    fair when every fair move is either taken inside the component or disabled in one of its
    states (weak fairness: a move that stays enabled is eventually taken).  Returned: the
    first such state in breadth-first order (its shortest run is the trace's prefix)."""
    found: tuple[int, list[int]] | None = None
    for comp in bad_components(goal, edges):
        if fair_component(comp, edges, fair):
            first = min(comp)
            if found is None or first < found[0]:
                found = (first, sorted(comp))
    return found


def cannot_reach(goal: list[bool], edges: list[list[tuple[int, int]]]) -> list[int]:
    """The states from which no goal state is reachable, in index order (on a reduced graph
    too: a path between orbits is a path between some of their states)."""
    pred: list[list[int]] = [[] for _ in goal]
    for u, row in enumerate(edges):
        for _, v in row:
            pred[v].append(u)
    seen = bytearray(goal)
    stack = [n for n, g in enumerate(goal) if g]
    while stack:
        for u in pred[stack.pop()]:
            if not seen[u]:
                seen[u] = 1
                stack.append(u)
    return [n for n in range(len(goal)) if not seen[n]]


def walk_on(
    spec: Spec, x: Any, table: list[Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run from real state ``x`` on which a goal unreachable from ``x`` stays unreached (or a
    stuck state stays stuck): the steps before its loop (the stem) and the loop.  Each step
    takes the first move (in table order) to a state not met yet, else the first to one met
    before, which closes the loop there; a state whose every move leaves it as it is loops on
    the first of them (a pure-output step repeated); one with no move has an empty loop (the
    run stops there).  The session's engines walk the same way."""
    seen = {x: 0}
    steps: list[dict[str, Any]] = []
    while True:
        stutter = back = None
        for m, fire, *_ in table:
            fired = fire(x)
            if fired is None:
                continue
            post, out = fired
            if post == x:
                stutter = stutter or (m, post, out)
            elif post not in seen:
                back = (m, post, out)
                break
            else:
                back = back or (m, post, out)
        if back is None:
            if stutter is None:
                return steps, []
            m, post, out = stutter
            return steps, [render_step(spec, m, x, post, out)]
        m, post, out = back
        steps.append(render_step(spec, m, x, post, out))
        if post in seen:
            return steps[: seen[post]], steps[seen[post] :]
        seen[post] = len(steps)
        x = post
