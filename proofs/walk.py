"""The reachable space of a declared model walked for its other readers, on the concrete rules
(``proofs/stepping.py``): a shortest run to a state (:func:`path_to`), every transition
(:func:`transitions`, :func:`transitions_out`), and :func:`drive`, which walks another
implementation (the runtime) along every transition for the agreement tests; and :func:`tour`,
the loop of a liveness failure's lasso on an explored graph, for the explorer's engines.  The
search that judges the properties is ``proofs/explorer.py``'s."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mcp_inflight.model.declare import Move, Spec

from .stepping import take

W = TypeVar("W")


def path_to(spec: Spec, target: Any) -> list[tuple[Move, Any, Any]] | None:
    """A shortest run ``[(move, pre, post)]`` from the initial state to ``target`` (for the
    runtime agreement tests), or None when it is not reachable."""
    parent: dict[Any, Any] = {spec.initial(): None}
    if target not in parent:
        for pre, m, post, _ in transitions_out(spec):
            if post not in parent:
                parent[post] = (pre, m)
                if post == target:
                    break
    if target not in parent:
        return None
    return _run_to(parent, target)


def transitions(spec: Spec) -> Iterable[tuple[Any, Move, Any]]:
    """Every transition ``(pre, move, post)`` of the reachable space, breadth first."""
    for pre, m, post, _ in transitions_out(spec):
        yield pre, m, post


#: a move's step: ``s -> (post, output)``, or None where the move is not enabled on ``s``
Fire = Callable[[Any], "tuple[Any, Any] | None"]


def transitions_out(
    spec: Spec, fire: list[Fire | None] | None = None
) -> Iterable[tuple[Any, Move, Any, Any]]:
    """Every transition ``(pre, move, post, output)`` of the reachable space, breadth first.
    ``fire``: per move of ``spec.moves()``, its step (None: never enabled), as
    ``proofs/compiled_spec.py:compile_spec`` generates them; default: each move taken through
    the rules as written (``proofs/stepping.py:take``)."""
    moves = list(spec.moves())
    if fire is None:
        b = spec.logic()

        def taking(m: Move) -> Fire:
            return lambda s: take(spec, s, m, b)

        steps = [(m, taking(m)) for m in moves]
    else:
        steps = [(m, f) for m, f in zip(moves, fire, strict=True) if f is not None]
    init = spec.initial()
    seen = {init}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        for m, step in steps:
            t = step(s)
            if t is None:
                continue
            yield s, m, t[0], t[1]
            if t[0] not in seen:
                seen.add(t[0])
                queue.append(t[0])


def drive(
    spec: Spec,
    fresh: Callable[[], W],
    step: Callable[[W, Any, Move, Any], list[str]],
    copy: Callable[[W], W],
    stop_at: int = 1,
    limit: int | None = None,
) -> list[str]:
    """Drive another implementation (the runtime) along every transition of ``spec``'s
    reachable space, breadth first: ``fresh()`` is its world in the initial state, ``step(world,
    pre, move, post)`` takes the move's counterpart in ``world`` (a copy of the world of the
    first run that reached ``pre``; the call may change it) and returns the disagreements
    it saw.  Stops after ``stop_at`` transitions with disagreements; returns them, each
    prefixed with the run that led to it.  ``limit``: drive only the first ``limit``
    transitions, in breadth-first order (the shortest runs first), for an implementation
    whose steps are too slow for the whole space."""
    init = spec.initial()
    worlds: dict[Any, W] = {init: fresh()}
    parent: dict[Any, Any] = {init: None}
    problems: list[str] = []
    for driven, (s, m, post, _) in enumerate(transitions_out(spec)):
        if limit is not None and driven >= limit:
            break
        world = copy(worlds[s])
        seen = step(world, s, m, post)
        if seen:
            run = [str(mv) for mv, _, _ in _run_to(parent, s)] + [str(m)]
            problems.append(f"after {' '.join(run)}: " + "; ".join(seen))
            if len(problems) >= stop_at:
                break
        if post not in worlds:
            worlds[post] = world
            parent[post] = (s, m)
    return problems


def _run_to(parent: dict[Any, Any], s: Any) -> list[tuple[Move, Any, Any]]:
    """The run ``[(move, pre, post)]`` that ``parent`` (each state's first ``(pre, move)``)
    records from the initial state to ``s``."""
    out = []
    while parent[s] is not None:
        pre, m = parent[s]
        out.append((m, pre, s))
        s = pre
    return out[::-1]


def tour(
    start: int, members: set[int], edges: list[list[tuple[int, int]]]
) -> list[tuple[int, int]]:
    """A closed walk ``[(state, move row)]`` from ``start`` through every state of the
    component ``members`` and back (the loop of a lasso: a weakly fair run that stays in the
    component visits all of it forever); empty for a single state without a move back to
    itself (the run stays there, every fair move disabled)."""
    walk: list[tuple[int, int, int]] = []
    at, left = start, members - {start}
    while True:
        # a shortest path inside the component to the nearest state not yet visited, and
        # once every state is, back to the start
        path = _path_inside(at, left or {start}, members, edges)
        if path is None:
            return [(n, j) for n, j, _ in walk]
        walk += path
        at = path[-1][2]
        left.discard(at)
        if at == start and not left:
            return [(n, j) for n, j, _ in walk]


def _path_inside(
    at: int, targets: set[int], members: set[int], edges: list[list[tuple[int, int]]]
) -> list[tuple[int, int, int]] | None:
    """A shortest path ``[(state, move row, successor)]`` of one move or more from ``at`` to a
    state of ``targets``, through ``members`` only; None when there is none."""
    parent: dict[int, tuple[int, int]] = {}
    queue = deque([at])
    seen = {at}
    while queue:
        n = queue.popleft()
        for j, k in edges[n]:
            if k not in members:
                continue
            if k in targets:
                path = [(n, j, k)]
                while n != at:
                    n0, j0 = parent[n]
                    path.append((n0, j0, n))
                    n = n0
                return path[::-1]
            if k not in seen:
                seen.add(k)
                parent[k] = (n, j)
                queue.append(k)
    return None
