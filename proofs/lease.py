"""The lease protocol's checkers: an exhaustive explorer and a z3 prover of ``model/lease.py``.

Neither states a rule. Both read the actions and properties of ``model/lease.py``: the explorer
through the concrete backend of ``model/logic.py``, the prover through the z3 backend of
``proofs/symbolic.py``.

* :func:`explore`: breadth-first over every reachable state of one configuration (so every
  counterexample is a shortest one). State invariants are judged on each new state, step
  invariants on each transition, witnesses must be reached, and the liveness property on the
  kept graph: from every reachable state a goal state must be reachable (backward reachability
  from the goal states). Traces are rebuilt from the recorded moves and rendered as the rest of
  the project renders them (``model/trace.py``'s ``TraceStep``).
* :class:`Prover`: induction in the style of Ivy and mypyvy, for any number of workers,
  instances and ids (each a sort of unbounded naturals; every keyed field a z3 array). The
  candidates are the state invariants and the auxiliary invariants of the model; each must hold
  initially and be preserved by every action from any state where all candidates hold; one
  that is not is dropped with its counterexample to induction, shown on the smallest finite
  universe that has one (Houdini), and the rest tried again. Step invariants are proved on every
  action from that inductive invariant.
* :func:`hazard`: the failover run (the hazard action enabled) of the fenced design, with the
  invariants it breaks and their shortest traces.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import z3

from mcp_inflight.model import lease as L
from mcp_inflight.model.logic import NONE, Write
from mcp_inflight.model.trace import Trace, trace_to_json
from mcp_inflight.proofs.bmc import solve
from mcp_inflight.proofs.symbolic import Symbolic, Vec, strict_truth, to_bool

DEFAULT = L.Config()
#: z3 resource units per query (millions); a query that runs out is ``unknown``, never a pass.
DEFAULT_BUDGET = 200
DEFAULT_TIMEOUT = 60.0
#: Finite universes (workers, instances, ids) tried, smallest first, to show a CTI.
#: Resource units of the quick first attempt at an obligation (an unbounded query that is not
#: unsat at once usually has a small counterexample, which a finite universe shows quickly).
#: Every obligation of the default runs that is unsat comes back unsat within it (fenced: 64
#: queries, none on the full budget); a failing one spends it in about 0.2 s.
QUICK_UNITS = 300_000
CTI_UNIVERSES = ((1, 1, 1), (1, 2, 1), (2, 2, 1), (2, 3, 1), (2, 2, 2), (2, 3, 2))


# --- the explorer ---------------------------------------------------------------------------


@dataclass
class Verdict:
    """A property's verdict on one run. ``holds``: invariants and liveness: it holds on every
    reachable state; witnesses: it is reached. ``trace``: the shortest counterexample (or the
    shortest path to the witness)."""

    name: str
    kind: str
    holds: bool
    doc: str
    trace: Trace | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "holds": self.holds,
            "trace": trace_to_json(self.trace),
        }


@dataclass
class ExploreResult:
    cfg: L.Config
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    verdicts: list[Verdict] = field(default_factory=list)
    #: transitions taken per action of the configuration (0: the action never fired)
    coverage: dict[str, int] = field(default_factory=dict)

    @property
    def dead_actions(self) -> list[str]:
        return [a for a, n in self.coverage.items() if n == 0]

    def verdict(self, name: str) -> Verdict:
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(name)

    def broken(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind != "witness" and not v.holds]

    @property
    def ok(self) -> bool:
        return self.complete and all(v.holds for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        c = self.cfg
        return {
            "design": c.design.name,
            "failover": c.failover,
            "workers": c.workers,
            "requests": c.requests,
            "ids": c.ids,
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
            "ok": self.ok,
            "coverage": self.coverage,
            "properties": [v.to_json() for v in self.verdicts],
        }


def _trace(cfg: L.Config, parent: list, idx: int, last: tuple | None = None) -> Trace:
    """The moves from the initial state to state ``idx`` (then ``last``: a move from it),
    replayed on the concrete step and rendered."""
    path = []
    while parent[idx][0] >= 0:
        path.append(parent[idx][1])
        idx = parent[idx][0]
    path.reverse()
    if last is not None:
        path.append(last)
    b = L.backend(cfg)
    s = L.initial(cfg)
    out = []
    for m in path:
        t = L.take(cfg, s, m, b)
        if t is None:  # a recorded move must replay
            raise AssertionError(f"replay: {m} not enabled")
        out.append(L.trace_step(m, s, t[0], t[1]))
        s = t[0]
    return tuple(out)


def explore(cfg: L.Config = DEFAULT, max_states: int | None = None) -> ExploreResult:
    """Every reachable state of ``cfg``, breadth-first; see the module docstring."""
    t0 = time.monotonic()
    b = L.backend(cfg)
    props = [p for p in L.PROPERTIES if p.applies(cfg)]
    state_inv = [p for p in props if p.kind == "invariant" and p.scope == "state"]
    step_inv = [p for p in props if p.kind == "invariant" and p.scope == "step"]
    witnesses = [p for p in props if p.kind == "witness"]
    live = [p for p in props if p.kind == "liveness"]
    failed: dict[str, tuple[int, Any]] = {}  # name -> (state, move or None)
    reached: dict[str, int] = {}
    s0 = L.initial(cfg)
    index = {s0: 0}
    states = [s0]
    parent: list[tuple[int, Any]] = [(-1, None)]
    depth = [0]
    preds: list[list[int]] = [[]]
    goal = {p.name: [] for p in live}
    transitions = 0
    complete = True
    coverage = {a.name: 0 for a in L.actions_for(cfg)}

    def judge(n: int, s: Any) -> None:
        for p in state_inv:
            if p.name not in failed and not p.fn(b, s, cfg):
                failed[p.name] = (n, None)
        for p in witnesses:
            if p.name not in reached and p.fn(b, s, cfg):
                reached[p.name] = n
        for p in live:
            goal[p.name].append(bool(p.fn(b, s, cfg)))

    judge(0, s0)
    queue = deque([0])
    while queue:
        n = queue.popleft()
        s = states[n]
        for m, post, out in L.successors(cfg, s, b):
            transitions += 1
            coverage[m.action.name] += 1
            for p in step_inv:
                if p.name not in failed and not L.step_ok(cfg, b, p, s, post, m, out):
                    failed[p.name] = (n, m)
            k = index.get(post)
            if k is None:
                if max_states is not None and len(states) >= max_states:
                    complete = False
                    continue
                k = len(states)
                index[post] = k
                states.append(post)
                parent.append((n, m))
                depth.append(depth[n] + 1)
                preds.append([])
                judge(k, post)
                queue.append(k)
            preds[k].append(n)
    res = ExploreResult(
        cfg, len(states), transitions, max(depth), complete=complete, coverage=coverage
    )
    for p in state_inv + step_inv:
        if p.name in failed:
            n, m = failed[p.name]
            res.verdicts.append(Verdict(p.name, p.kind, False, p.doc, _trace(cfg, parent, n, m)))
        else:
            res.verdicts.append(Verdict(p.name, p.kind, True, p.doc))
    for p in live:
        ok = _backward(goal[p.name], preds)
        bad = next((n for n, v in enumerate(ok) if not v), None)
        if bad is None:
            res.verdicts.append(Verdict(p.name, p.kind, True, p.doc))
        else:
            res.verdicts.append(Verdict(p.name, p.kind, False, p.doc, _trace(cfg, parent, bad)))
    for p in witnesses:
        n = reached.get(p.name)
        tr = None if n is None else _trace(cfg, parent, n)
        res.verdicts.append(Verdict(p.name, p.kind, n is not None, p.doc, tr))
    res.seconds = time.monotonic() - t0
    return res


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


@dataclass
class HazardResult:
    hazard: L.Hazard
    run: ExploreResult

    @property
    def broken(self) -> list[Verdict]:
        return [v for v in self.run.verdicts if v.kind == "invariant" and not v.holds]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.hazard.name,
            "doc": self.hazard.doc,
            "remedy": self.hazard.remedy,
            "design": self.run.cfg.design.name,
            "states": self.run.states,
            "seconds": round(self.run.seconds, 3),
            "breaks": [v.to_json() for v in self.broken],
        }


def hazard(cfg: L.Config = DEFAULT) -> HazardResult:
    """The failover hazard: ``cfg`` (fenced by default) with the ``failover`` action enabled."""
    run = explore(L.Config(cfg.design, cfg.workers, cfg.requests, cfg.ids, failover=True))
    return HazardResult(L.FAILOVER, run)


# --- the prover: symbolic states ------------------------------------------------------------


class SymState:
    """A lease state whose fields are z3 terms (arrays, or :class:`Vec` on a finite universe),
    read by the model exactly as a concrete state."""

    def __init__(self, **fields: Any):
        for f in L.FIELDS:
            setattr(self, f.name, fields[f.name])

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in L.FIELDS}


def _sort(f: L.Field) -> z3.SortRef:
    return z3.BoolSort() if f.sort == "bool" else z3.IntSort()


def _lit(f: L.Field, v: Any) -> z3.ExprRef:
    return z3.BoolVal(bool(v)) if f.sort == "bool" else z3.IntVal(int(v))  # type: ignore[arg-type]


def fresh_state(prefix: str, finite: tuple[int, int, int] | None = None) -> SymState:
    """Every field an unconstrained z3 constant: arrays (unbounded), or one constant per slot
    over ``finite`` = (workers, instances, ids)."""
    vals = {}
    for f in L.FIELDS:
        if f.key is None:
            vals[f.name] = z3.Const(f"{prefix}.{f.name}", _sort(f))
        elif finite is None:
            vals[f.name] = z3.Array(f"{prefix}.{f.name}", z3.IntSort(), _sort(f))
        else:
            n = finite[("worker", "inst", "id").index(f.key)]
            slots = [z3.Const(f"{prefix}.{f.name}[{k}]", _sort(f)) for k in range(n)]
            vals[f.name] = Vec(slots, _lit(f, f.default))
    return SymState(**vals)


def from_concrete(state: Any) -> SymState:
    """A concrete state as a finite symbolic state (every slot a literal)."""
    vals = {}
    for f in L.FIELDS:
        v = getattr(state, f.name)
        vals[f.name] = (
            _lit(f, v) if f.key is None else Vec([_lit(f, x) for x in v], _lit(f, f.default))
        )
    return SymState(**vals)


def initial_state() -> SymState:
    vals = {}
    for f in L.FIELDS:
        d = _lit(f, f.default)
        vals[f.name] = d if f.key is None else z3.K(z3.IntSort(), d)
    return SymState(**vals)


def apply_writes(state: SymState, writes: list[Write]) -> SymState:
    """Stores in list order, each under its ``when`` (``model/logic.py``'s semantics)."""
    vals = state.fields()
    for w in writes:
        when = w.when
        if isinstance(when, bool) and not when:
            continue
        f = L.FIELD[w.field]
        value = w.value
        if isinstance(value, (bool, int)) and not isinstance(value, z3.ExprRef):
            value = _lit(f, value)
        old = vals[w.field]
        if isinstance(old, Vec):
            vals[w.field] = old.store(w.key, value, when)
            continue
        new = value if w.key is None else z3.Store(old, w.key, value)
        vals[w.field] = new if isinstance(when, bool) else z3.If(when, new, old)
    return SymState(**vals)


_REF = {"worker?": "worker", "inst?": "inst", "id?": "id", "worker": "worker", "id": "id"}


def well_typed(b: Symbolic, s: SymState) -> Any:
    """Each slot holds a value of its field's sort."""

    def in_sort(v: Any, sort: str, optional: bool) -> Any:
        if b.domains is not None:
            return b.In(v, ((NONE,) if optional else ()) + tuple(b.domains[sort]))
        return v >= (NONE if optional else 0)

    def slot(f: L.Field, v: Any) -> Any:
        if f.domain is not None:
            return b.And(v >= min(f.domain), v <= max(f.domain))
        if f.sort in _REF:
            return in_sort(v, _REF[f.sort], f.sort.endswith("?"))
        if f.sort in ("token", "count"):
            return v >= 0
        return True

    parts = []
    for key in ("worker", "inst", "id"):
        fs = [f for f in L.FIELDS if f.key == key]
        parts.append(
            b.ForAll(key, lambda x, fs=fs: b.And(*[slot(f, getattr(s, f.name)[x]) for f in fs]))
        )
    parts += [slot(f, getattr(s, f.name)) for f in L.FIELDS if f.key is None]
    return b.And(*parts)


def _py(v: z3.ExprRef) -> Any:
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    return v.as_long()  # type: ignore[attr-defined]


def concrete(model: z3.ModelRef, s: SymState, finite: tuple[int, int, int]) -> Any:
    """The finite state ``s`` in ``model`` as a concrete state."""
    out = []
    for f in L.FIELDS:
        term = getattr(s, f.name)
        if f.key is None:
            out.append(_py(model.eval(term, model_completion=True)))
            continue
        n = finite[("worker", "inst", "id").index(f.key)]
        out.append(tuple(_py(model.eval(term[k], model_completion=True)) for k in range(n)))
    return L.State(*out)


# --- the prover: induction ------------------------------------------------------------------


@dataclass
class CTI:
    """A counterexample to induction: a state where every kept candidate holds, an action,
    and the successor (or the transition) that breaks ``broken``."""

    broken: str
    action: str
    args: dict[str, str] | None = None
    pre: dict[str, Any] | None = None
    post: dict[str, Any] | None = None
    changes: dict[str, list[str]] | None = None
    initial: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "broken": self.broken,
            "action": self.action,
            "args": self.args,
            "initial": self.initial,
            "pre": self.pre,
            "post": self.post,
            "changes": self.changes,
        }

    def lines(self) -> list[str]:
        if self.initial:
            return [f"  {self.broken} does not hold in the initial state"]
        args = ", ".join(f"{k}={v}" for k, v in (self.args or {}).items())
        out = [f"  counterexample to induction: {self.broken} broken by {self.action}({args})"]
        if self.pre is None or self.post is None:
            out.append("    (no counterexample within the finite universes tried)")
            return out
        out.append("    pre-state:")
        out += ["      " + x for x in L.describe_lines(self.pre)]
        out.append(
            "    changes: " + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in self.changes.items())
            if self.changes
            else "    changes: none"
        )
        return out


@dataclass
class Proof:
    name: str
    kind: str
    status: str  # "proved" | "cti" | "unknown"
    doc: str
    cti: CTI | None = None
    note: str = ""

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "cti": None if self.cti is None else self.cti.to_json(),
            **({"note": self.note} if self.note else {}),
        }


@dataclass
class ProveResult:
    design: str
    proofs: list[Proof] = field(default_factory=list)
    seconds: float = 0.0
    queries: int = 0
    #: whether every slot provably keeps a value of its field's sort (assumed in every
    #: pre-state, so no invariant is proved unless this is): ``proved``, ``cti`` or ``unknown``
    typed: str = "proved"
    typed_note: list[str] = field(default_factory=list)

    def proof(self, name: str) -> Proof:
        for p in self.proofs:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def ok(self) -> bool:
        return self.typed == "proved" and all(
            p.proved for p in self.proofs if p.kind == "invariant"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "design": self.design,
            "ok": self.ok,
            "well_typed": self.typed,
            "seconds": round(self.seconds, 3),
            "queries": self.queries,
            "invariants": [p.to_json() for p in self.proofs if p.kind == "invariant"],
            "auxiliary": [p.to_json() for p in self.proofs if p.kind == "auxiliary"],
        }


class _Step:
    """One action on the universe's pre-state with symbolic arguments."""

    def __init__(self, b: Symbolic, pre: SymState, cfg: L.Config, a: L.Action, tag: str):
        self.action = a
        self.args = {p: z3.Int(f"{tag}.{a.name}.{p}") for p in a.params}
        r, w, i = (self.args.get(p) for p in ("r", "w", "i"))
        self.guard, self.out, writes = a.run(b, pre, cfg, r, w, i)
        self.post = apply_writes(pre, writes)
        sorts = {"r": "inst", "w": "worker", "i": "id"}
        self.params = b.And(
            *[
                b.In(x, b.domains[sorts[p]]) if b.domains is not None else x >= 0
                for p, x in self.args.items()
            ]
        )
        self.r, self.w, self.i = r, w, i


class _Universe:
    def __init__(self, cfg: L.Config, finite: tuple[int, int, int] | None, tag: str):
        if finite is None:
            self.b = Symbolic()
        else:
            nw, ni, nk = finite
            self.b = Symbolic({"worker": range(nw), "inst": range(ni), "id": range(nk)})
        self.finite = finite
        self.cfg = cfg
        self.pre = fresh_state(tag, finite)
        self.typed = to_bool(well_typed(self.b, self.pre))
        self.steps = {a.name: _Step(self.b, self.pre, cfg, a, tag) for a in L.actions_for(cfg)}

    def holds(self, p: L.Property, s: SymState) -> z3.BoolRef:
        return to_bool(p.fn(self.b, s, self.cfg))

    def step_holds(self, p: L.Property, st: _Step) -> z3.BoolRef:
        v = p.fn(self.b, self.pre, st.post, self.cfg, st.action.name, st.r, st.w, st.i, st.out)
        return to_bool(v)

    def hyps(self, st: _Step, kept: list[L.Property]) -> list[z3.BoolRef]:
        return [self.typed, to_bool(st.params), to_bool(st.guard)] + [
            self.holds(h, self.pre) for h in kept
        ]


class Prover:
    def __init__(
        self, cfg: L.Config, budget: float = DEFAULT_BUDGET, timeout: float = DEFAULT_TIMEOUT
    ):
        self.cfg = cfg
        self.rlimit = int(budget * 1_000_000)
        self.timeout_ms = int(timeout * 1000)
        self.queries = 0
        self._finite: dict[tuple[int, int, int], _Universe] = {}

    def _check(
        self, formulas: list[Any], quick: bool = False
    ) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
        s = z3.Solver()
        s.set("rlimit", min(self.rlimit, QUICK_UNITS) if quick else self.rlimit)
        s.set("timeout", self.timeout_ms)
        s.add(*formulas)
        self.queries += 1
        res = solve(s, self.timeout_ms)
        return res, (s.model() if res == z3.sat else None)

    def _obligation(
        self, formulas: list[Any], kept: list[L.Property], p: L.Property, action: str
    ) -> tuple[str, CTI | None]:
        """Decide one obligation (``formulas`` unsatisfiable): a quick unbounded attempt; if
        not unsat, a counterexample on a small finite universe; if none, the unbounded query on
        the full budget. Returns (``ok`` | ``cti`` | ``unknown``, the CTI)."""
        res, _ = self._check(formulas, quick=True)
        if res == z3.unsat:
            return "ok", None
        cti = self._cti(kept, p, action)
        if cti is not None:
            return "cti", cti
        if res == z3.unknown:
            res, _ = self._check(formulas)
            if res == z3.unsat:
                return "ok", None
        if res == z3.sat:
            return "cti", CTI(p.name, action)
        return "unknown", None

    def _cti(self, kept: list[L.Property], p: L.Property, action: str) -> CTI | None:
        """The counterexample on the smallest finite universe that has one, or None."""
        for fin in CTI_UNIVERSES:
            if fin not in self._finite:
                self._finite[fin] = _Universe(self.cfg, fin, "cti" + "".join(map(str, fin)))
            U = self._finite[fin]
            st = U.steps[action]
            goal = U.holds(p, st.post) if p.scope == "state" else U.step_holds(p, st)
            hyps = kept if p.scope == "step" else [h for h in kept if h is not p] + [p]
            res, model = self._check(U.hyps(st, hyps) + [z3.Not(goal)])
            if res == z3.sat and model is not None:
                pre = concrete(model, U.pre, fin)
                post = concrete(model, st.post, fin)
                names = {"r": L.inst_name, "w": L.worker_name, "i": L.id_name}
                args = {
                    k: names[k](model.eval(v, model_completion=True).as_long())  # type: ignore[attr-defined]
                    for k, v in st.args.items()
                }
                return CTI(
                    p.name,
                    action,
                    args,
                    L.describe(pre),
                    L.describe(post),
                    L.changes(pre, post),
                )
        return None

    def run(self) -> ProveResult:
        t0 = time.monotonic()
        cfg = self.cfg
        U = _Universe(cfg, None, "pre")
        init = initial_state()
        state_inv = [p for p in L.INVARIANTS if p.scope == "state" and p.applies(cfg)]
        step_inv = [p for p in L.INVARIANTS if p.scope == "step" and p.applies(cfg)]
        cands = list(L.AUXILIARY) + state_inv
        ctis: dict[str, CTI] = {}
        unknown: dict[str, str] = {}
        kept: list[L.Property] = []
        for p in cands:
            res, _ = self._check([z3.Not(U.holds(p, init))])
            if res == z3.unsat:
                kept.append(p)
            elif res == z3.sat:
                ctis[p.name] = CTI(p.name, "", initial=True)
            else:
                unknown[p.name] = "initial state: the solver gave up"
        changed = True
        while changed:
            changed = False
            for name, st in U.steps.items():
                for p in list(kept):
                    verdict, cti = self._obligation(
                        U.hyps(st, kept) + [z3.Not(U.holds(p, st.post))], kept, p, name
                    )
                    if verdict == "ok":
                        continue
                    kept.remove(p)
                    changed = True
                    if cti is not None:
                        ctis[p.name] = cti
                    else:
                        unknown[p.name] = f"preserved by {name}: the solver gave up"
        # every slot keeps a value of its sort: assumed in each pre-state above, proved here
        # under the kept invariants; without it nothing above is proved
        typed, typed_note = "proved", []
        for name, st in U.steps.items():
            query = U.hyps(st, kept) + [z3.Not(to_bool(well_typed(U.b, st.post)))]
            if self._check(query, quick=True)[0] == z3.unsat:
                continue
            # a quantified query rarely comes back sat: look for the state on a finite universe,
            # then spend the full budget
            typed = "unknown"
            for fin in CTI_UNIVERSES:
                F = self._finite.setdefault(
                    fin, _Universe(self.cfg, fin, "cti" + "".join(map(str, fin)))
                )
                fst = F.steps[name]
                hyps = F.hyps(fst, kept) + [z3.Not(to_bool(well_typed(F.b, fst.post)))]
                if self._check(hyps)[0] == z3.sat:
                    typed = "cti"
                    break
            if typed == "unknown" and self._check(query)[0] == z3.unsat:
                typed = "proved"
                continue
            typed_note.append(
                f"  {name} can leave a slot outside its field's sort"
                if typed == "cti"
                else f"  {name}: the solver gave up on the slots' sorts"
            )
            break
        for p in step_inv:
            for name, st in U.steps.items():
                v = U.step_holds(p, st)
                if z3.is_true(z3.simplify(v)):
                    continue
                verdict, cti = self._obligation(U.hyps(st, kept) + [z3.Not(v)], kept, p, name)
                if verdict == "ok":
                    continue
                if cti is not None:
                    ctis[p.name] = cti
                else:
                    unknown[p.name] = f"on {name}: the solver gave up"
                break
        out = ProveResult(cfg.design.name, typed=typed, typed_note=typed_note)
        for p in state_inv + step_inv + list(L.AUXILIARY):
            if typed != "proved" and p.name not in ctis:
                pr = Proof(p.name, p.kind, typed, p.doc, note="rests on well-typed states")
            elif p.name in unknown:
                pr = Proof(p.name, p.kind, "unknown", p.doc, note=unknown[p.name])
            elif p.name in ctis:
                pr = Proof(p.name, p.kind, "cti", p.doc, ctis[p.name])
            else:
                pr = Proof(p.name, p.kind, "proved", p.doc)
            out.proofs.append(pr)
        out.seconds = time.monotonic() - t0
        out.queries = self.queries
        return out


def prove(
    cfg: L.Config = DEFAULT, budget: float = DEFAULT_BUDGET, timeout: float = DEFAULT_TIMEOUT
) -> ProveResult:
    """Prove (or refute with a counterexample to induction) the invariants of ``cfg``'s design
    for any number of workers, instances and ids (the bounds of ``cfg`` only size the CTIs)."""
    with strict_truth():
        return Prover(cfg, budget, timeout).run()
