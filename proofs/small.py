"""The checkers of the small models: an exhaustive breadth-first explorer and a z3 induction prover.

A small model is a :class:`~mcp_inflight.model.small.Spec` (``model/small.py`` says how one is
declared: integer variables over finite ranges, actions with finite parameters, guards, effects
and properties written once against ``model/logic.py``'s interface).  Two readers here:

:func:`explore` walks every reachable state breadth first from the initial state (so each
counterexample is a shortest one), evaluating the guards and effects with the concrete logic.
It checks every ``always`` property (and auxiliary invariant) on each state, every ``step``
property on each transition, each slot's range, and records which ``sometimes`` witnesses are
reached.  A failure comes back as a trace: the moves from the initial state, each with its
story and only the variables it changed (:func:`trace_text`, and JSON in :class:`Explored`).

:func:`prove` reads the same functions with the z3 backend (``proofs/symbolic.py``): every
slot is a z3 integer, a read at a symbolic key an if-then-else chain, the writes stores under
their ``when``.  For the bounds of the spec, it finds the largest set of ``always`` properties
and auxiliary invariants that is inductive as a whole (Houdini: a candidate that can fail after
some move from a state where every candidate holds is dropped, and the rest tried again without
it), so a property is never proved by assuming one that fails; then it proves that every slot
stays in its range (assumed in each pre-state, so nothing is proved unless this is) and each
``step`` property on every transition from a state where the set holds.  A property that is
not proved comes back as a counterexample to induction: a state where the candidates hold, the
move, and the successor (only the changed variables shown), as text and
JSON.  Induction at given bounds says more than the explorer's search when the bounds are larger
than a search could cover; it says nothing for bounds beyond them.

Another small model uses both by giving a ``Spec``; :func:`check` runs both and says whether the
design holds everything and every witness is reached (the command line's verdict).  A sketch (a
lock that two clients take and give back; ``owner`` is NONE when free)::

    from mcp_inflight.model.logic import NONE, Write
    from mcp_inflight.model.small import Act, Spec, Var, always, sometimes

    def take_g(b, s, c): return s.owner == NONE
    def take_e(b, s, c): return [Write("owner", None, c), Write("held", c, 1)]
    def give_g(b, s, c): return s.owner == c
    def give_e(b, s, c): return [Write("owner", None, NONE), Write("held", c, 0)]

    def one_holder(b, s):
        '''At most one client holds the lock.'''
        return b.Not(b.And(s.held[0] == 1, s.held[1] == 1))

    def held_by_owner(b, s):
        '''A client holds the lock exactly when it is the owner.'''
        return b.ForAll("client", lambda c: (s.held[c] == 1) == (s.owner == c))

    spec = Spec("lock", "safe", {"clients": 2},
                (Var("owner", NONE, 1, NONE), Var("held", 0, 1, 0, keys=2)),
                (Act("take", (("c", 2),), take_g, take_e, lambda a: f"c{a['c']} takes"),
                 Act("give", (("c", 2),), give_g, give_e, lambda a: f"c{a['c']} gives")),
                (always(one_holder),), {"client": range(2)}, aux=(always(held_by_owner),))
    check(spec).ok   # True: explored (3 states) and proved; without the auxiliary invariant
                     # the prover returns a counterexample to induction (held[1] = 1 while
                     # owner = NONE, then c0 takes)

:func:`drive` walks another implementation (the runtime) along every transition of the explored
space, for agreement tests; :func:`transitions` and :func:`path_to` give the space's transitions
and a shortest run to a state.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import z3

from mcp_inflight.model.logic import Write, apply_writes
from mcp_inflight.model.small import (
    Move,
    Prop,
    Spec,
    changes,
    describe,
    out_of_range,
    render_step,
    step_lines,
)

from .symbolic import Symbolic, Vec, strict_truth

W = TypeVar("W")

# --- the explorer --------------------------------------------------------------------------


@dataclass
class Explored:
    """What :func:`explore` found: per property ``holds``/``fails`` (with its shortest trace)
    for ``always`` and ``step``, ``reached``/``not reached`` for ``sometimes``."""

    spec: Spec
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    verdicts: dict[str, str] = field(default_factory=dict)
    traces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and all(
            v in ("holds", "reached") for k, v in self.verdicts.items() if not k.startswith("aux:")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.spec.model,
            "design": self.spec.design,
            "bounds": dict(self.spec.bounds),
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "properties": {
                p.name: {
                    "kind": p.kind,
                    "verdict": self.verdicts[p.name],
                    "doc": p.doc,
                    "trace": self.traces.get(p.name),
                }
                for p in self.spec.props
            },
            "auxiliary": {p.name: self.verdicts["aux:" + p.name] for p in self.spec.aux},
            "coverage": self.coverage,
            "errors": self.errors,
            "ok": self.ok,
        }


def explore(spec: Spec, max_states: int = 2_000_000) -> Explored:
    """Every reachable state of ``spec``, breadth first (see the module text)."""
    t0 = time.perf_counter()
    b = spec.logic()
    res = Explored(spec)
    moves = list(spec.moves())
    always = [p for p in spec.props if p.kind == "always"] + list(spec.aux)
    steps = [p for p in spec.props if p.kind == "step"]
    witnesses = [p for p in spec.props if p.kind == "sometimes"]
    happens = [p for p in spec.props if p.kind == "happens"]
    table = [(m, m.act.guard, m.act.effect, m.kw) for m in moves]
    failed: dict[str, Any] = {}  # property -> (state, move or None, post or None)
    reached: dict[str, Any] = {}
    coverage = {a.name: 0 for a in spec.acts}
    init = spec.initial()
    parent: dict[Any, tuple[Any, Move] | None] = {init: None}
    depth = {init: 0}
    queue = deque([init])

    def judge_state(s: Any) -> None:
        bad = out_of_range(spec, s)
        if bad is not None and not res.errors:
            res.errors.append(f"model bug: {bad}")
            failed.setdefault("range", (s, None, None))
        for p in always:
            if p.name not in failed and not p.fn(b, s):
                failed[p.name] = (s, None, None)
        for p in witnesses:
            if p.name not in reached and p.fn(b, s):
                reached[p.name] = s

    judge_state(init)
    while queue:
        s = queue.popleft()
        for m, guard, effect, kw in table:
            if not guard(b, s, **kw):
                continue
            post = apply_writes(s, effect(b, s, **kw))
            res.transitions += 1
            coverage[m.name] += 1
            for p in steps:
                if p.name not in failed and not p.fn(b, s, post, m):
                    failed[p.name] = (s, m, post)
            for p in happens:
                if p.name not in reached and p.fn(b, s, post, m):
                    reached[p.name] = (s, m, post)
            if post not in parent:
                parent[post] = (s, m)
                depth[post] = depth[s] + 1
                res.depth = max(res.depth, depth[post])
                queue.append(post)
                judge_state(post)
                if len(parent) > max_states:
                    res.errors.append(f"more than {max_states} states: bounds too large")
                    queue.clear()
                    break
    res.states = len(parent)
    res.coverage = coverage
    for p in spec.props + spec.aux:
        key = p.name if p in spec.props else "aux:" + p.name
        if p.kind == "sometimes":
            res.verdicts[key] = "reached" if p.name in reached else "not reached"
            if p.name in reached:
                res.traces[key] = _trace(spec, parent, reached[p.name])
        elif p.kind == "happens":
            res.verdicts[key] = "reached" if p.name in reached else "not reached"
            if p.name in reached:
                s, m, post = reached[p.name]
                res.traces[key] = _trace(spec, parent, s) + [render_step(spec, m, s, post)]
        elif p.name in failed:
            res.verdicts[key] = "fails"
            s, m, post = failed[p.name]
            tr = _trace(spec, parent, s)
            if m is not None:
                tr.append(render_step(spec, m, s, post))
            res.traces[key] = tr
        else:
            res.verdicts[key] = "holds"
    if "range" in failed:
        res.traces["range"] = _trace(spec, parent, failed["range"][0])
    res.seconds = time.perf_counter() - t0
    return res


def _trace(spec: Spec, parent: dict[Any, Any], s: Any) -> list[dict[str, Any]]:
    steps = []
    while parent[s] is not None:
        pre, m = parent[s]
        steps.append(render_step(spec, m, pre, s))
        s = pre
    return steps[::-1]


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
            post = _take(spec, b, s, m)
            if post is not None and post not in parent:
                parent[post] = (s, m)
                queue.append(post)
    if target not in parent:
        return None
    run = []
    s = target
    while parent[s] is not None:
        pre, m = parent[s]
        run.append((m, pre, s))
        s = pre
    return run[::-1]


def _take(spec: Spec, b: Any, s: Any, m: Move) -> Any | None:
    kw = m.kw
    if not m.act.guard(b, s, **kw):
        return None
    return apply_writes(s, m.act.effect(b, s, **kw))


def transitions(spec: Spec) -> Iterable[tuple[Any, Move, Any]]:
    """Every transition ``(pre, move, post)`` of the reachable space, breadth first."""
    b = spec.logic()
    moves = list(spec.moves())
    init = spec.initial()
    seen = {init}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        for m in moves:
            post = _take(spec, b, s, m)
            if post is None:
                continue
            yield s, m, post
            if post not in seen:
                seen.add(post)
                queue.append(post)


def drive(
    spec: Spec,
    fresh: Callable[[], W],
    step: Callable[[W, Any, Move, Any], list[str]],
    copy: Callable[[W], W],
    stop_at: int = 1,
) -> list[str]:
    """Drive another implementation (the runtime) along every transition of ``spec``'s
    reachable space, breadth first: ``fresh()`` is its world in the initial state, ``step(world,
    pre, move, post)`` takes the move's counterpart in ``world`` (a copy of the world of the
    first run that reached ``pre``; the call may change it) and returns the disagreements
    it saw.  Stops after ``stop_at`` transitions with disagreements; returns them, each
    prefixed with the run that led to it."""
    b = spec.logic()
    moves = list(spec.moves())
    init = spec.initial()
    worlds: dict[Any, W] = {init: fresh()}
    parent: dict[Any, Any] = {init: None}
    queue = deque([init])
    problems: list[str] = []
    while queue:
        s = queue.popleft()
        for m in moves:
            post = _take(spec, b, s, m)
            if post is None:
                continue
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


def trace_text(steps: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for n, st in enumerate(steps, 1):
        out.extend(step_lines(n, st))
    return out


# --- the prover ----------------------------------------------------------------------------


class _SymState:
    """A state of z3 terms read like a concrete one (``s.var[k]``, ``s.var``)."""

    def __init__(self, vals: dict[str, Any]):
        self.__dict__.update(vals)


def _fresh(spec: Spec, prefix: str) -> _SymState:
    vals: dict[str, Any] = {}
    for v in spec.vars:
        if v.keys is None:
            vals[v.name] = z3.Int(f"{prefix}.{v.name}")
        else:
            vals[v.name] = Vec(
                [z3.Int(f"{prefix}.{v.name}[{k}]") for k in range(v.keys)], z3.IntVal(v.init)
            )
    return _SymState(vals)


def _literal(spec: Spec, s: Any) -> _SymState:
    vals: dict[str, Any] = {}
    for v in spec.vars:
        x = getattr(s, v.name)
        vals[v.name] = (
            z3.IntVal(x) if v.keys is None else Vec([z3.IntVal(y) for y in x], z3.IntVal(v.init))
        )
    return _SymState(vals)


def _well_typed(spec: Spec, s: _SymState) -> list[Any]:
    out = []
    for v in spec.vars:
        x = getattr(s, v.name)
        for term in [x] if v.keys is None else x.slots:
            out += [term >= v.lo, term <= v.hi]
    return out


def _sym_apply(spec: Spec, s: _SymState, writes: list[Write]) -> _SymState:
    vals = dict(s.__dict__)
    for w in writes:
        when = w.when
        if isinstance(when, bool) and not when:
            continue
        value = z3.IntVal(w.value) if isinstance(w.value, int) else w.value
        old = vals[w.field]
        if isinstance(old, Vec):
            vals[w.field] = old.store(w.key, value, when)
        else:
            vals[w.field] = value if isinstance(when, bool) else z3.If(when, value, old)
    return _SymState(vals)


def _b(x: Any) -> Any:
    return z3.BoolVal(x) if isinstance(x, bool) else x


@dataclass
class Proved:
    """What :func:`prove` found: per ``always``/``step`` property ``proved`` or ``not proved``
    (with a counterexample to induction), the auxiliary invariants kept, the time."""

    spec: Spec
    verdicts: dict[str, str] = field(default_factory=dict)
    ctis: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(v == "proved" for v in self.verdicts.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.spec.model,
            "design": self.spec.design,
            "bounds": dict(self.spec.bounds),
            "properties": {
                k: {"verdict": v, "counterexample_to_induction": self.ctis.get(k)}
                for k, v in self.verdicts.items()
            },
            "auxiliary_kept": self.kept,
            "auxiliary_dropped": self.dropped,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
        }


def _concrete(spec: Spec, model: z3.ModelRef, s: _SymState) -> Any:
    vals = []
    for v in spec.vars:
        x = getattr(s, v.name)
        if v.keys is None:
            vals.append(model.eval(x, model_completion=True).as_long())
        else:
            vals.append(tuple(model.eval(t, model_completion=True).as_long() for t in x.slots))
    return spec.state_type(*vals)


def prove(spec: Spec, timeout_ms: int = 60_000) -> Proved:
    """Induction at ``spec``'s bounds (see the module text)."""
    with strict_truth():
        return _prove(spec, timeout_ms)


def _prove(spec: Spec, timeout_ms: int) -> Proved:
    t0 = time.perf_counter()
    res = Proved(spec)
    b = Symbolic(spec.domains)
    invs = [p for p in spec.props if p.kind == "always"]
    steps = [p for p in spec.props if p.kind == "step"]
    pre = _fresh(spec, "pre")
    init = _literal(spec, spec.initial())
    posts = []
    for m in spec.moves():
        g = m.act.guard(b, pre, **m.kw)
        post = _sym_apply(spec, pre, m.act.effect(b, pre, **m.kw))
        posts.append((m, _b(g), post))

    def holds_initially(p: Prop) -> bool:
        return _valid(_b(p.fn(b, init)), timeout_ms) is None

    # Houdini over the invariants and the auxiliary invariants together: the candidates that
    # hold initially, assumed in the pre-state; one that can fail after some move is dropped
    # (with that move as its counterexample to induction) and the rest tried again without it.
    # What is left is inductive as a whole, so no property is proved by assuming one that is
    # not: a failing invariant cannot make another one "proved".
    ctis: dict[str, tuple[Move, z3.ModelRef, _SymState]] = {}
    cands = [p for p in invs + list(spec.aux) if holds_initially(p)]
    for p in invs + list(spec.aux):
        if p not in cands and p in invs:
            res.verdicts[p.name] = "not proved"
            res.ctis[p.name] = {"initial": True, "text": f"{p.name} fails in the initial state"}
    goals: dict[tuple[str, int], Any] = {}  # the terms of each property after each move
    while True:
        step = _Step(spec, b, pre, posts, cands, timeout_ms, goals)
        bad = step.failing(cands)
        if not bad:
            break
        ctis.update({k: v for k, v in bad.items() if k not in ctis})
        cands = [p for p in cands if p.name not in bad]
    res.kept = [p.name for p in cands if p in spec.aux]
    res.dropped = [p.name for p in spec.aux if p not in cands]
    # each slot stays in its range: assumed in every pre-state above, so proved here under the
    # same candidates; if it is not, nothing above is proved
    typed = step.failing([None])
    ctis.update(typed)
    ctis.update(step.failing(steps, on_step=True))
    for name in (
        [p.name for p in invs if p.name not in res.verdicts]
        + ["in_range"]
        + [p.name for p in steps]
    ):
        res.verdicts[name] = "not proved" if name in ctis or typed else "proved"
        if name in ctis:
            res.ctis[name] = _render_cti(spec, name, pre, *ctis[name])
        elif typed:
            res.ctis[name] = {
                "initial": True,
                "text": f"{name} rests on every slot staying in its range, which is not proved",
            }
    res.seconds = time.perf_counter() - t0
    return res


class _Step:
    """One solver holding a state where ``assumed`` hold (and every slot is in range); asks,
    move by move, whether a property can fail after (or, ``on_step``, on) the move."""

    def __init__(
        self,
        spec: Spec,
        b: Symbolic,
        pre: _SymState,
        posts: list[tuple[Move, Any, _SymState]],
        assumed: list[Prop],
        timeout_ms: int,
        goals: dict[tuple[str, int], Any],
    ):
        self.spec, self.b, self.pre, self.posts, self.goals = spec, b, pre, posts, goals
        self.solver = z3.Solver()
        self.solver.set("timeout", timeout_ms)
        self.solver.add(*_well_typed(spec, pre), *[_pre_term(b, pre, p, goals) for p in assumed])

    def failing(
        self, props: list[Prop] | list[Prop | None], on_step: bool = False
    ) -> dict[str, tuple[Move, z3.ModelRef, _SymState]]:
        """The properties of ``props`` (None: every slot in range, named ``in_range``) that
        can fail after (``on_step``: on) an enabled move, each with the first such move and
        the model found (one query per property and move)."""
        out: dict[str, tuple[Move, z3.ModelRef, _SymState]] = {}
        s = self.solver
        for p in props:
            for n, (m, g, post) in enumerate(self.posts):
                s.push()
                s.add(g, z3.Not(self._goal(p, n, m, post, on_step)))
                r = s.check()
                model = s.model() if r == z3.sat else None
                s.pop()
                if r == z3.unknown:
                    raise RuntimeError(f"z3 gave up: {s.reason_unknown()}")
                if model is not None:
                    out[_name(p)] = (m, model, post)
                    break
        return out

    def _goal(self, p: Prop | None, n: int, m: Move, post: _SymState, on_step: bool) -> Any:
        key = (_name(p), n)
        if key not in self.goals:
            if p is None:
                goal = z3.And(*_well_typed(self.spec, post))
            elif on_step:
                goal = _b(p.fn(self.b, self.pre, post, m))
            else:
                goal = _b(p.fn(self.b, post))
            self.goals[key] = goal
        return self.goals[key]


def _pre_term(b: Symbolic, pre: _SymState, p: Prop, cache: dict[tuple[str, int], Any]) -> Any:
    key = (p.name, -1)
    if key not in cache:
        cache[key] = _b(p.fn(b, pre))
    return cache[key]


def _name(p: Prop | None) -> str:
    return "in_range" if p is None else p.name


def _valid(f: Any, timeout_ms: int) -> z3.ModelRef | None:
    """None when ``f`` is valid; else a model of its negation (``unknown`` raises)."""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(z3.Not(f))
    r = solver.check()
    if r == z3.unsat:
        return None
    if r == z3.unknown:
        raise RuntimeError(f"z3 gave up: {solver.reason_unknown()}")
    return solver.model()


def _render_cti(
    spec: Spec, name: str, pre: _SymState, m: Move, model: z3.ModelRef, post: _SymState
) -> dict[str, Any]:
    a = _concrete(spec, model, pre)
    z = _concrete(spec, model, post)
    return {
        "broken": name,
        "action": m.name,
        "args": m.kw,
        "story": m.act.story(m.kw),
        "pre": describe(spec, a),
        "post": describe(spec, z),
        "changes": changes(spec, a, z),
        "text": f"{name} is not inductive: from a state where the invariants hold, "
        f"{m} leads to one where it fails",
    }


def cti_lines(cti: dict[str, Any]) -> list[str]:
    """The text of a counterexample to induction: the two states and the move."""
    if cti.get("initial"):
        return [f"  {cti['text']}"]
    out = [f"  counterexample to induction: {cti['text']}", "    pre-state:"]
    out += [f"      {k} = {v}" for k, v in cti["pre"].items()]
    out.append(f"    move: {cti['story']}")
    out.append(
        "    changes: " + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in cti["changes"].items())
    )
    return out


# --- both ------------------------------------------------------------------------------------


@dataclass
class Checked:
    explored: Explored
    proved: Proved | None

    @property
    def ok(self) -> bool:
        return self.explored.ok and (self.proved is None or self.proved.ok)

    def to_json(self) -> dict[str, Any]:
        return {
            "explored": self.explored.to_json(),
            "proved": None if self.proved is None else self.proved.to_json(),
            "ok": self.ok,
        }


def check(spec: Spec, with_proof: bool = True) -> Checked:
    """Explore ``spec`` and, unless ``with_proof`` is false, prove it."""
    return Checked(explore(spec), prove(spec) if with_proof else None)
