"""The one explorer of the declared models (``model/declare.py``): lease, rounds, resume, ...

:func:`explore` walks every reachable state of a :class:`~mcp_inflight.model.declare.Spec`
breadth first from the initial state (so each counterexample is a shortest one), evaluating the
guards, outputs and effects with the concrete logic (``proofs/stepping.py``).  It judges

* every ``always`` property and auxiliary invariant on each state, and each slot's range;
* every ``step`` property on each transition (with the move's output when it reads one);
* the witnesses: ``sometimes`` on some state, ``happens`` on some transition;
* every ``liveness`` property on the explored graph: from every reachable state a state where
  its goal holds must stay reachable (backward reachability from the goal states); the property
  names the weakly fair actions it rests on, which is what makes that reachability "eventually";
* coverage: how often each action fired (an action that never fires is dead, and every
  property about it holds vacuously: the report fails such a run).

``until`` names properties whose failure is all a caller wants to see (the sensitivity check:
does this mutant still break what it must?).  The search then stops at the first breadth-first
level after which each of them has failed, their traces still shortest ones; the run is marked
incomplete, and every verdict it could not settle (a property not yet failed, a witness not yet
reached, liveness) reads ``not judged``.

A failure comes back as a trace: the moves from the initial state, each with its story and only
the variables it changed.  :func:`drive` walks another implementation (the runtime) along every
transition, for agreement tests; :func:`transitions` and :func:`path_to` give the space's
transitions and a shortest run to a state.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp_inflight.model.declare import Move, Spec, out_of_range, render_step

from .stepping import take

W = TypeVar("W")


@dataclass
class Explored:
    """What :func:`explore` found: per property ``holds``/``fails`` (with its shortest trace)
    for ``always``, ``step`` and ``liveness``, ``reached``/``not reached`` for the witnesses;
    auxiliary invariants under ``aux:<name>``."""

    spec: Spec
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    verdicts: dict[str, str] = field(default_factory=dict)
    traces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)
    complete: bool = True

    @property
    def dead_actions(self) -> list[str]:
        return [a for a, n in self.coverage.items() if n == 0]

    @property
    def ok(self) -> bool:
        hazards = {p.name for p in self.spec.props if p.kind == "hazard"}
        return (
            self.complete
            and not self.errors
            and all(
                v in ("holds", "reached")
                for k, v in self.verdicts.items()
                if not k.startswith("aux:") and k not in hazards
            )
        )

    def broken(self) -> list[str]:
        """The properties (not witnesses) that fail."""
        return [p.name for p in self.spec.props if self.verdicts.get(p.name) == "fails"]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.spec.model,
            "design": self.spec.design,
            "bounds": dict(self.spec.bounds),
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
            "properties": {
                p.name: {
                    "kind": p.kind,
                    "verdict": self.verdicts[p.name],
                    "doc": p.doc,
                    "trace": self.traces.get(p.name),
                    **({"fair": list(p.fair)} if p.fair else {}),
                }
                for p in self.spec.props
            },
            "auxiliary": {p.name: self.verdicts["aux:" + p.name] for p in self.spec.aux},
            "coverage": self.coverage,
            "dead_actions": self.dead_actions,
            "errors": self.errors,
            "ok": self.ok,
        }


#: the verdict of a property an early-stopped run (``until``) could not settle
NOT_JUDGED = "not judged"


def explore(
    spec: Spec, max_states: int = 2_000_000, until: Iterable[str] | None = None
) -> Explored:
    """Every reachable state of ``spec``, breadth first (see the module text); with ``until``,
    only until each property it names has failed."""
    t0 = time.perf_counter()
    b = spec.logic()
    res = Explored(spec)
    always = [p for p in spec.props if p.kind == "always"] + list(spec.aux)
    steps = [p for p in spec.props if p.kind in ("step", "hazard")]
    witnesses = [p for p in spec.props if p.kind == "sometimes"]
    happens = [p for p in spec.props if p.kind == "happens"]
    live = [p for p in spec.props if p.kind == "liveness"]
    table = [(m, m.act.guard, m.act.effect, m.act.output, m.kw) for m in spec.moves()]
    failed: dict[str, Any] = {}  # property -> (state, move or None, post, output)
    reached: dict[str, Any] = {}
    coverage = {a.name: 0 for a in spec.acts}
    init = spec.initial()
    index: dict[Any, int] = {init: 0}
    states = [init]
    parent: list[tuple[int, Move | None, Any]] = [(-1, None, None)]
    depth = [0]
    preds: list[list[int]] = [[]]
    goal: dict[str, list[bool]] = {p.name: [] for p in live}
    wanted = _stoppable(spec, until)
    stopped = False

    def judge_state(n: int, s: Any) -> None:
        bad = out_of_range(spec, s)
        if bad is not None and not res.errors:
            res.errors.append(f"model bug: {bad}")
            failed.setdefault("range", (n, None, None, None))
        for p in always:
            if p.name not in failed and not p.fn(b, s):
                failed[p.name] = (n, None, None, None)
        for p in witnesses:
            if p.name not in reached and p.fn(b, s):
                reached[p.name] = (n, None, None, None)
        for p in live:
            goal[p.name].append(bool(p.fn(b, s)))

    judge_state(0, init)
    queue = deque([0])
    level_end = 0  # the last state of the level being expanded
    while queue:
        n = queue.popleft()
        if n > level_end:
            if wanted is not None and wanted <= failed.keys():
                stopped = True
                break
            level_end = len(states) - 1
        s = states[n]
        for m, guard, effect, output, kw in table:
            if not guard(b, s, **kw):
                continue
            out = {} if output is None else output(b, s, **kw)
            post = spec.post(s, effect(b, s, **kw))
            res.transitions += 1
            coverage[m.name] += 1
            for p in steps:
                if p.name not in failed and not p.on_step(b, s, post, m, out):
                    failed[p.name] = (n, m, post, out)
            for p in happens:
                if p.name not in reached and p.on_step(b, s, post, m, out):
                    reached[p.name] = (n, m, post, out)
            k = index.get(post)
            if k is None:
                if len(states) >= max_states:
                    res.complete = False
                    if not res.errors:
                        res.errors.append(f"more than {max_states} states: bounds too large")
                    continue
                k = len(states)
                index[post] = k
                states.append(post)
                parent.append((n, m, out))
                depth.append(depth[n] + 1)
                if live:
                    preds.append([])
                judge_state(k, post)
                queue.append(k)
            if live:
                preds[k].append(n)
    res.states = len(states)
    res.depth = max(depth)
    res.coverage = coverage
    res.complete = res.complete and not stopped

    def trace(n: int, last: tuple[Any, Any, Any, Any] | None = None) -> list[dict[str, Any]]:
        tr = _trace(spec, states, parent, n)
        if last is not None and last[1] is not None:
            pre = states[last[0]]
            tr.append(render_step(spec, last[1], pre, last[2], last[3]))
        return tr

    for p in spec.props + spec.aux:
        key = p.name if p in spec.props else "aux:" + p.name
        if stopped and p.name not in failed and p.name not in reached:
            res.verdicts[key] = NOT_JUDGED
        elif p.kind in ("sometimes", "happens"):
            res.verdicts[key] = "reached" if p.name in reached else "not reached"
            if p.name in reached:
                res.traces[key] = trace(reached[p.name][0], reached[p.name])
        elif p.kind == "liveness":
            ok = _backward(goal[p.name], preds)
            bad = next((n for n, v in enumerate(ok) if not v), None)
            res.verdicts[key] = "holds" if bad is None else "fails"
            if bad is not None:
                res.traces[key] = trace(bad)
        elif p.name in failed:
            res.verdicts[key] = "fails"
            res.traces[key] = trace(failed[p.name][0], failed[p.name])
        else:
            res.verdicts[key] = "holds"
    if "range" in failed:
        res.traces["range"] = trace(failed["range"][0])
    res.seconds = time.perf_counter() - t0
    return res


def _stoppable(spec: Spec, until: Iterable[str] | None) -> set[str] | None:
    """The properties an early stop waits for, or None when the run must be whole: no
    ``until``, or one of them is liveness (judged only on the whole graph)."""
    if until is None:
        return None
    names = set(until)
    kinds = {p.name: p.kind for p in spec.props}
    unknown = sorted(names - kinds.keys())
    if unknown:
        raise ValueError(f"until names no property of {spec.model}: {', '.join(unknown)}")
    if not names or any(kinds[n] == "liveness" for n in names):
        return None
    return names


def _trace(
    spec: Spec, states: list[Any], parent: list[tuple[int, Move | None, Any]], n: int
) -> list[dict[str, Any]]:
    steps = []
    while parent[n][0] >= 0:
        k, m, out = parent[n]
        assert m is not None
        steps.append(render_step(spec, m, states[k], states[n], out))
        n = k
    return steps[::-1]


def _backward(goal: list[bool], preds: list[list[int]]) -> list[bool]:
    """Which states can reach a goal state (backward reachability over ``preds``)."""
    ok = list(goal)
    todo = [n for n, v in enumerate(goal) if v]
    while todo:
        n = todo.pop()
        for p in preds[n]:
            if not ok[p]:
                ok[p] = True
                todo.append(p)
    return ok


# --- walking the space for other readers -----------------------------------------------------


def path_to(spec: Spec, target: Any) -> list[tuple[Move, Any, Any]] | None:
    """A shortest run ``[(move, pre, post)]`` from the initial state to ``target`` (for the
    runtime agreement tests), or None when it is not reachable."""
    b = spec.logic()
    moves = list(spec.moves())
    init = spec.initial()
    parent: dict[Any, Any] = {init: None}
    queue = deque([init])
    while queue and target not in parent:
        s = queue.popleft()
        for m in moves:
            t = take(spec, s, m, b)
            if t is not None and t[0] not in parent:
                parent[t[0]] = (s, m)
                queue.append(t[0])
    if target not in parent:
        return None
    run = []
    s = target
    while parent[s] is not None:
        pre, m = parent[s]
        run.append((m, pre, s))
        s = pre
    return run[::-1]


def transitions(spec: Spec) -> Iterable[tuple[Any, Move, Any]]:
    """Every transition ``(pre, move, post)`` of the reachable space, breadth first."""
    for pre, m, post, _ in transitions_out(spec):
        yield pre, m, post


def transitions_out(spec: Spec) -> Iterable[tuple[Any, Move, Any, Any]]:
    """Every transition ``(pre, move, post, output)`` of the reachable space, breadth first."""
    b = spec.logic()
    moves = list(spec.moves())
    init = spec.initial()
    seen = {init}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        for m in moves:
            t = take(spec, s, m, b)
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
    b = spec.logic()
    moves = list(spec.moves())
    init = spec.initial()
    worlds: dict[Any, W] = {init: fresh()}
    parent: dict[Any, Any] = {init: None}
    queue = deque([init])
    problems: list[str] = []
    driven = 0
    while queue:
        s = queue.popleft()
        for m in moves:
            t = take(spec, s, m, b)
            if t is None:
                continue
            if limit is not None and driven >= limit:
                return problems
            driven += 1
            post = t[0]
            world = copy(worlds[s])
            seen = step(world, s, m, post)
            if seen:
                run = [str(mv) for mv in _moves_to(parent, s)] + [str(m)]
                problems.append(f"after {' '.join(run)}: " + "; ".join(seen))
                if len(problems) >= stop_at:
                    return problems
            if post not in worlds:
                worlds[post] = world
                parent[post] = (s, m)
                queue.append(post)
    return problems


def _moves_to(parent: dict[Any, Any], s: Any) -> list[Move]:
    out = []
    while parent[s] is not None:
        s, m = parent[s]
        out.append(m)
    return out[::-1]
