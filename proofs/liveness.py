"""Liveness on an explored state graph, as the one explorer (``proofs/explorer.py``) and its
native engine (``proofs/native_spec.py``) judge the declared models' liveness properties
(``model/declare.py``: ``eventually`` under the weak fairness of the actions a property names,
``reachable`` and ``unstuck`` of the graph itself; the session's three, ``model/eventually.py``,
read so in ``model/session_spec.py``), on the whole graph or on a reduced one.

An ``eventually`` property fails where a run fair to its actions can stay for ever among states
where its goal does not hold: a strongly connected component of such states (:func:`sccs`,
:func:`bad_components`) in which every fair move enabled in all of its states is taken inside
it (:func:`fair_component`; a single state counts, stuttering is allowed).  Under symmetry
reduction a component a run can go round in is unfolded into its orbits' real states and moves
(:class:`Unfolded`, :func:`fair_violation_unfolded`) and judged on them, weak fairness being a
matter of real moves, not of moves named on representatives.  ``reachable`` fails on the states
from which no goal state is reachable (:func:`cannot_reach`).  Each failure comes with a lasso:
the shortest prefix to the first bad state the search met, then a loop walked among bad states
(:func:`walk_on`, ``proofs/walk.py:tour``).
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from mcp_inflight.model.declare import Spec, render_step

from .walk import tour

__all__ = [
    "Unfolded",
    "bad_components",
    "cannot_reach",
    "fair_component",
    "fair_violation",
    "fair_violation_reduced",
    "fair_violation_unfolded",
    "sccs",
    "walk_on",
]


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
    run stops there)."""
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
