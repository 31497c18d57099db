"""The z3 prover: inductive proofs, counterexamples to induction, bounded model checking.

It reads the model's actions and properties through the symbolic backend of
``proofs/symbolic.py`` and adds no rule of its own.  For one configuration (design x profile):

1. **Induction** (in the style of Ivy and mypyvy).  The candidates are the applicable state
   invariants of ``model/properties.py`` and the auxiliary invariants of ``model/auxiliary.py``.
   Every candidate must hold initially, and be preserved by every action from any state that
   satisfies all candidates (``inv and step => inv'``), for any number of ids and instances:
   ids and instances are unbounded integers, the quantifiers of the model are z3 quantifiers.
   A candidate that fails is dropped with its *counterexample to induction* and the others are
   tried again without it (Houdini), so what remains is an inductive invariant.  A step
   property (routing, removal, cancel, refusal) is proved when every action from every state of
   that inductive invariant keeps it.
2. **Counterexamples to induction** are shown on a small finite universe (the fewest instances
   and ids that exhibit one): the pre-state, the action with its arguments, the post-state and
   the conjunct that broke.
3. **Bounded model checking** for what induction did not prove (``proofs/bmc.py``): from the
   initial state, a trace of at most ``depth`` steps that breaks the property, shortest first;
   the explorer gives the length, z3 the trace, replayed on the concrete backend.

Each solver query runs on a budget of z3 *resource units* (its ``rlimit``), not of seconds: the
units count the solver's own work, so a query decides the same way on an idle laptop and on a
loaded CI machine (for one z3 version); so does the quick first attempt at each obligation, on
a small budget of its own.  A wall-clock timeout stays as a backstop only.  A query that runs
out of either (``unknown``) is never a pass: the property is reported as unknown and ``prove``
exits 1.  z3's answers also depend on the terms its process made before, so ``prove_all`` gives
each configuration a fresh process: the same CTIs and traces whatever the load or ``--jobs``.
Finished results are cached on disk (``proofs/cache.py``).

Induction and its counterexamples stay in one module: they share the prover's universes and
solver bookkeeping.  Its result records (:class:`Proof`, :class:`ProveResult`) live in
``proofs/records.py`` beside the explorer's, and are imported from here as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import z3

from mcp_inflight.model.auxiliary import AUXILIARY
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.properties import PROPERTIES, SPEAKS_OF
from mcp_inflight.model.property_kinds import Property
from mcp_inflight.model.session import Action, actions_for
from mcp_inflight.model.session_state import State
from mcp_inflight.model.trace import (
    CounterexampleToInduction,
    Trace,
    changes,
    describe_state,
    id_name,
    inst_name,
)
from mcp_inflight.proofs import bmc
from mcp_inflight.proofs import symbolic as sym
from mcp_inflight.proofs.bmc import solve
from mcp_inflight.proofs.records import Proof, ProveResult

DEFAULT_DEPTH = 12
#: z3 resource units per query, in millions.  The slowest query of the default runs (a
#: 12-step bounded search on 2025-11-25 http) needs about 150 million; 20-30 s on this budget's
#: reference machine.
DEFAULT_BUDGET = 600
#: Wall-clock backstop per query, in seconds (the budget above normally ends a query first).
DEFAULT_TIMEOUT = 600.0
#: Resource units for a first attempt at an obligation before looking for a small
#: counterexample: the quick attempts that come back unsat on the default runs of the three
#: designs need at most 111 thousand (each query's units counted on every profile); one that
#: fails spends these in about 0.2 s.
QUICK_UNITS = 150_000
#: The universe of the bounded search (request instances, ids): the explorer's default bound.
BMC_REQUESTS = 2
BMC_IDS = 2
#: Finite universes (instances, ids) tried, smallest first, to show a counterexample to induction.
CTI_UNIVERSES = ((1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (4, 3))


class SolverUnknown(Exception):
    pass


# --- the prover -----------------------------------------------------------------------------


class _Step:
    """One action instantiated on a symbolic pre-state with symbolic arguments."""

    def __init__(
        self, b: sym.Symbolic, pre: sym.SymState, cfg: Config, action: Action, r: Any, i: Any
    ) -> None:
        self.action = action
        self.r = r
        self.i = i if "i" in action.params else None
        self.guard, self.out, self.writes = action.run(b, pre, cfg, r, self.i)
        self.post = sym.apply_writes(pre, self.writes)
        self.params = b.And(
            sym.param_ok(b, "inst", r), sym.param_ok(b, "id", i) if self.i is not None else True
        )


class _Universe:
    """A pre-state and every action on it, read by one backend (unbounded or finite)."""

    def __init__(self, cfg: Config, b: sym.Symbolic, tag: str) -> None:
        self.cfg = cfg
        self.b = b
        if b.domains is None:
            self.pre = sym.fresh_state(tag)
        else:
            self.pre = sym.fresh_finite_state(tag, len(b.domains["inst"]), len(b.domains["id"]))
        self.r = z3.Int(f"{tag}.r")
        self.i = z3.Int(f"{tag}.i")
        self._cache: dict[tuple[str, int], tuple[Any, Any]] = {}
        self.typed = sym.to_bool(sym.well_typed(b, self.pre))
        self.steps = {a.name: _Step(b, self.pre, cfg, a, self.r, self.i) for a in actions_for(cfg)}

    def state(self, prop: Property, s: sym.SymState) -> z3.BoolRef:
        key = (prop.name, id(s))
        if key not in self._cache:
            self._cache[key] = (s, sym.to_bool(prop.fn(self.b, s, self.cfg)))
        return self._cache[key][1]

    def step_prop(self, prop: Property, st: _Step) -> Any:
        v = prop.fn(self.b, self.pre, st.post, self.cfg, st.action, st.r, st.i, st.out)
        return v if isinstance(v, bool) else v

    def hypotheses(self, st: _Step, hyps: Iterable[Property]) -> list[z3.BoolRef]:
        return [self.typed, sym.to_bool(st.params), sym.to_bool(st.guard)] + [
            self.state(h, self.pre) for h in hyps
        ]


class Prover:
    def __init__(
        self,
        cfg: Config,
        depth: int = DEFAULT_DEPTH,
        timeout: float = DEFAULT_TIMEOUT,
        progress: Callable[[str], Any] | None = None,
        requests: int = BMC_REQUESTS,
        budget: float = DEFAULT_BUDGET,
        ids: int = BMC_IDS,
        batch: bool = True,
        auxiliary: Iterable[Property] | None = None,
        guide: bool = True,
        symmetric: bool = True,
    ):
        self.cfg = cfg
        # the model commutes with renaming ids and instances (``proofs/symmetry.py``): the
        # bounded search may then take ids in order of first use, and its guide reduce by it
        self.symmetric = symmetric
        self.depth = depth
        self.timeout_ms = max(1, int(timeout * 1000))
        self.rlimit = max(1, int(budget * 1_000_000))
        self.progress = progress or (lambda msg: None)
        self.requests = requests
        self.ids = ids
        self.batch = batch
        self.guide = guide
        self._universes: dict[tuple[int, int], _Universe] = {}
        self.auxiliary = AUXILIARY if auxiliary is None else tuple(auxiliary)
        self.queries = 0
        self.slowest = (0.0, "")
        self.spent: dict[str, float] = {}
        self.dead: list[str] = []
        self.vacuous: list[str] = []

    # -- solving
    def _check(
        self,
        formulas: Iterable[Any],
        what: str,
        name: str | list[str],
        quick: bool = False,
        on: z3.Solver | None = None,
    ) -> z3.CheckSatResult:
        """Whether ``formulas`` are satisfiable: on a fresh solver, or (``on``) added to the
        assertions of ``on`` in a scope of their own, taken back after."""
        s = on or self._solver(quick)
        if on is not None:
            s.push()
        s.add(*formulas)
        t0 = time.monotonic()
        res = solve(s, self.timeout_ms)
        dt = time.monotonic() - t0
        self.queries += 1
        names = name if isinstance(name, list) else [name]
        for n in names:  # a query about several properties is shared among them
            self.spent[n] = self.spent.get(n, 0.0) + dt / len(names)
        if dt > self.slowest[0]:
            self.slowest = (dt, what)
        self._model = s.model() if res == z3.sat else None
        self._reason = self._why(s) if res == z3.unknown else ""
        if on is not None:
            s.pop()
        return res

    def _solver(self, quick: bool = False) -> z3.Solver:
        """A solver on the budget; a quick attempt has a small budget of its own (a heuristic:
        its running out only leads to the search for a small counterexample, then to the full
        query, so no verdict depends on it).  Budgets count the solver's work, not seconds, so
        the same queries give the same answers on a loaded machine."""
        s = z3.Solver()
        s.set("rlimit", min(self.rlimit, QUICK_UNITS) if quick else self.rlimit)
        s.set("timeout", self.timeout_ms)
        return s

    def _why(self, s: z3.Solver) -> str:
        """Why ``s`` answered unknown, in the prover's terms."""
        why = s.reason_unknown()
        st = s.statistics()
        spent = st.get_key_value("rlimit count") if "rlimit count" in st.keys() else 0
        if "resource" in why or spent >= self.rlimit:
            return f"budget of {self.rlimit / 1e6:g} million resource units spent (raise --budget)"
        if why in ("timeout", "canceled", "interrupted from keyboard"):
            return f"wall-clock timeout of {self.timeout_ms / 1000:g} s (raise --timeout)"
        return why or "unknown"

    # -- induction
    def _obligation(
        self,
        formulas: Iterable[Any],
        what: str,
        name: str | list[str],
        finite: Callable[[], CounterexampleToInduction | None],
    ) -> tuple[str, Any]:
        """Decide one proof obligation (``formulas`` unsatisfiable).  A quick unbounded attempt
        first; if it is not unsat, a counterexample on a small finite universe; then, if still
        undecided, the unbounded query with the full timeout.  Returns ``(verdict, cti)`` with
        verdict ``ok``, ``cti`` or ``unknown``."""
        res = self._check(formulas, what, name, quick=True)
        if res == z3.unsat:
            return "ok", None
        cti = finite()
        if cti is not None:
            return "cti", cti
        if res == z3.unknown:
            res = self._check(formulas, what, name)
            if res == z3.unsat:
                return "ok", None
        if res == z3.sat:
            return "cti", None
        return "unknown", f"{what}: {self._reason or 'unknown'}"

    def induction(
        self, targets: Sequence[Property], hazards: Sequence[Property]
    ) -> tuple[list[Property], dict[str, Any], dict[str, str], set[str]]:
        """Houdini over the state candidates, then the step properties under what survives.

        Auxiliary invariants must be preserved by every action.  A state invariant is proved
        either the same way or, more cheaply, by following in every state from the auxiliary
        invariants that are themselves preserved (then it is preserved too).  Returns
        ``(kept, ctis, unknown, implied)``."""
        cfg = self.cfg
        U = _Universe(cfg, sym.Symbolic(), "pre")
        init = sym.initial_state()
        aux = [p for p in self.auxiliary if p.applies(cfg)]
        state_targets = [p for p in [*targets, *hazards] if p.scope == "state"]
        ctis: dict[str, CounterexampleToInduction] = {}
        unknown: dict[str, str] = {}
        kept: list[Property] = []
        cands = aux + state_targets
        # one query shows every candidate holds initially; else each is asked on its own
        every = (
            len(cands) > 1
            and self._check(
                [z3.Not(z3.And(*[U.state(p, init) for p in cands]))],
                "every candidate: initial state",
                [p.name for p in cands],
            )
            == z3.unsat
        )
        for p in cands:
            if every:
                kept.append(p)
                continue
            res = self._check([z3.Not(U.state(p, init))], f"{p.name}: initial state", p.name)
            if res == z3.unsat:
                kept.append(p)
            elif res == z3.sat:
                ctis[p.name] = CounterexampleToInduction(
                    p.name, f"{p.name} does not hold in the initial state", initial=True
                )
            else:
                unknown[p.name] = f"initial state: {self._reason}"
        implied: set[str] = set()
        changed = True
        while changed:
            changed = False
            kept_aux = [p for p in kept if p.kind == "auxiliary"]
            implied = set()
            others = [p for p in kept if p.kind != "auxiliary"]
            if len(others) > 1:  # one query for them all first; else each on its own
                res = self._check(
                    [U.typed]
                    + [U.state(h, U.pre) for h in kept_aux]
                    + [z3.Not(z3.And(*[U.state(p, U.pre) for p in others]))],
                    "every invariant follows from the auxiliary invariants",
                    [p.name for p in others],
                    quick=True,
                )
                if res == z3.unsat:
                    implied = {p.name for p in others}
            for p in others:
                if p.name in implied:
                    continue
                res = self._check(
                    [U.typed] + [U.state(h, U.pre) for h in kept_aux] + [z3.Not(U.state(p, U.pre))],
                    f"{p.name} follows from the auxiliary invariants",
                    p.name,
                    quick=True,
                )
                if res == z3.unsat:
                    implied.add(p.name)
            for name, st in U.steps.items():
                todo = [p for p in kept if p.name not in implied]
                if not todo:
                    break
                if self.batch and len(todo) > 1:
                    goal = z3.Not(z3.And(*[U.state(p, st.post) for p in todo]))
                    # no candidate dropped yet this round: the implied ones follow from the
                    # rest in the pre-state, so leaving them out asks the same
                    lean = None if changed else todo
                    res = self._batch(
                        U, st, kept, lean, goal, f"every candidate preserved by {name}", todo
                    )
                    if res == z3.unsat:
                        continue
                hyps = list(kept)
                for p in todo:
                    goal = z3.Not(U.state(p, st.post))
                    verdict, cti = self._obligation(
                        U.hypotheses(st, hyps) + [goal],
                        f"{p.name} preserved by {name}",
                        p.name,
                        partial(self._finite_cti, hyps, p, name),
                    )
                    if verdict == "ok":
                        continue
                    kept.remove(p)
                    changed = True
                    if verdict == "unknown":
                        unknown[p.name] = cti
                    else:
                        ctis[p.name] = cti or self._raw_cti(st, p)
        step_props = [p for p in [*targets, *hazards] if p.scope == "step"]
        for name, st in U.steps.items():
            pending: list[tuple[Property, Any]] = []
            for p in step_props:
                if p.name in ctis or p.name in unknown:
                    continue
                v = U.step_prop(p, st)
                if v is not True:
                    pending.append((p, sym.to_bool(v)))
            if not pending:
                continue
            # the invariants in one query first (a hazard is expected to fail: on its own)
            invs = [(p, v) for p, v in pending if p.kind == "invariant"]
            if self.batch and len(invs) > 1:
                lean = [p for p in kept if p.name not in implied]
                res = self._batch(
                    U,
                    st,
                    kept,
                    lean,
                    z3.Not(z3.And(*[v for _, v in invs])),
                    f"every step property on {name}",
                    [p for p, _ in invs],
                )
                if res == z3.unsat:
                    pending = [(p, v) for p, v in pending if p.kind != "invariant"]
            for p, v in pending:
                verdict, cti = self._obligation(
                    U.hypotheses(st, kept) + [z3.Not(v)],
                    f"{p.name} on {name}",
                    p.name,
                    partial(self._finite_cti, kept, p, name),
                )
                if verdict == "ok":
                    continue
                if verdict == "unknown":
                    unknown[p.name] = cti
                else:
                    ctis[p.name] = cti or self._raw_cti(st, p)
        self._vacuity(U, kept, [p for p in targets if p.kind == "invariant"])
        return kept, ctis, unknown, implied

    def _batch(
        self,
        U: _Universe,
        st: _Step,
        kept: list[Property],
        lean: list[Property] | None,
        goal: Any,
        what: str,
        about: Sequence[Property],
    ) -> z3.CheckSatResult:
        """One quick query for several obligations of step ``st`` at once (``goal``: the
        negation of their conjunction), from the states where ``kept`` holds.  ``lean``: the
        kept candidates less those that follow from the kept auxiliary invariants (the same
        states, fewer quantified hypotheses for the solver), asked first; when that is not
        unsat, the query with every kept candidate, as without it."""
        names = [p.name for p in about]
        if lean is not None and len(lean) < len(kept):
            res = self._check(U.hypotheses(st, lean) + [goal], what, names, quick=True)
            if res == z3.unsat:
                return res
        return self._check(U.hypotheses(st, kept) + [goal], what, names, quick=True)

    def _vacuity(self, U: _Universe, kept: list[Property], invariants: list[Property]) -> None:
        """Each action's guard satisfiable where the proved invariants hold (else the action is
        dead, and everything said about it holds vacuously); each invariant not a constant."""
        self.dead, self.vacuous = [], []
        # satisfiability under quantified invariants rarely comes back sat on the unbounded
        # universe: ask on the finite universe of the explorer's default bound (2 x 2), where
        # each query is decidable; a guard that can hold there can hold
        if (2, 2) not in self._universes:
            b = sym.Symbolic({"inst": range(2), "id": range(2)})
            self._universes[(2, 2)] = _Universe(self.cfg, b, "cti22")
        F = self._universes[(2, 2)]
        # the finite queries have no quantifiers: one solver holds what every action's query
        # shares (typedness and the invariants), each action's guard is asked in a scope of
        # its own; a state found for one action that also enables another (the whole query
        # evaluated true in it) shows that one can fire too, without a query of its own
        base = [F.typed] + [F.state(h, F.pre) for h in kept]
        s = self._solver()
        s.add(*base)
        witnesses: list[z3.ModelRef] = []
        for name, st in F.steps.items():
            mine = [sym.to_bool(st.params), sym.to_bool(st.guard)]
            whole = z3.And(*base, *mine)
            if any(z3.is_true(m.eval(whole, model_completion=True)) for m in witnesses):
                continue
            res = self._check(mine, f"{name} can fire", name, on=s)
            if res == z3.sat:
                witnesses.append(self._model)
            elif res == z3.unsat:
                self.dead.append(name)
            elif res == z3.unknown:
                self.dead.append(f"{name} (undecided: {self._reason})")
        for p in invariants:
            if SPEAKS_OF.get(p.name, "") not in ("", *U.steps):
                continue  # the one action it judges is not part of this configuration
            if p.scope == "step":
                folds = all(U.step_prop(p, st) is True for st in U.steps.values())
            else:
                folds = z3.is_true(z3.simplify(U.state(p, U.pre)))
            if folds:
                self.vacuous.append(p.name)

    def _finite_cti(
        self, hyps: list[Property], prop: Property, action_name: str
    ) -> CounterexampleToInduction | None:
        """A counterexample to induction on the smallest finite universe that has one."""
        for n, m in CTI_UNIVERSES:
            if (n, m) not in self._universes:
                b = sym.Symbolic({"inst": range(n), "id": range(m)})
                self._universes[(n, m)] = _Universe(self.cfg, b, f"cti{n}{m}")
            U = self._universes[(n, m)]
            st = U.steps[action_name]
            if prop.scope == "state":
                goal = z3.Not(U.state(prop, st.post))
                base = [h for h in hyps if h is not prop] + [prop]
            else:
                v = U.step_prop(prop, st)
                if v is True:
                    continue
                goal = z3.Not(sym.to_bool(v))
                base = hyps
            res = self._check(
                U.hypotheses(st, base) + [goal],
                f"{prop.name} on {action_name}: counterexample, {n} instances {m} ids",
                prop.name,
            )
            if res == z3.sat:
                return self._render_cti(self._model, U, st, prop, list(range(n)), list(range(m)))
        return None

    def _raw_cti(self, st: _Step, prop: Property) -> CounterexampleToInduction:
        return CounterexampleToInduction(
            prop.name,
            f"{prop.name} is not preserved by {st.action.name}; the counterexample "
            f"needs more than {CTI_UNIVERSES[-1][0]} instances or "
            f"{CTI_UNIVERSES[-1][1]} ids to show",
            action=st.action.name,
        )

    def _render_cti(
        self,
        model: z3.ModelRef,
        U: _Universe,
        st: _Step,
        prop: Property,
        insts: list[int],
        ids: list[int],
    ) -> CounterexampleToInduction:
        pre = sym.concrete_state(model, U.pre, insts, ids, State)
        post = sym.concrete_state(model, st.post, insts, ids, State)
        r = model.eval(st.r, model_completion=True).as_long()
        args = {"r": inst_name(r)}
        if st.i is not None:
            args["i"] = id_name(model.eval(st.i, model_completion=True).as_long())
        return CounterexampleToInduction(
            prop.name,
            f"{prop.name} is not preserved by {st.action.name}"
            f"({', '.join(f'{k}={v}' for k, v in args.items())})",
            action=st.action.name,
            args=args,
            pre=describe_state(pre),
            post=describe_state(post),
            changes=changes(pre, post),
        )

    # -- bounded model checking (proofs/bmc.py)
    def bmc(
        self,
        props: Sequence[Property],
        depth: int | None = None,
        requests: int | None = None,
        ids: int | None = None,
    ) -> tuple[dict[str, Trace], dict[str, str]]:
        """Shortest traces (at most ``depth`` steps) breaking each of ``props``: see
        :func:`mcp_inflight.proofs.bmc.search`."""
        return bmc.search(self, props, depth, requests, ids)

    # -- everything for one configuration
    def run(self, names: Iterable[str] | None = None) -> ProveResult:
        cfg = self.cfg
        t0 = time.monotonic()
        res = ProveResult(cfg, self.depth)
        props = [
            p
            for p in PROPERTIES
            if p.kind in ("invariant", "hazard") and (names is None or p.name in names)
        ]
        targets = [p for p in props if p.kind == "invariant" and p.applies(cfg)]
        hazards = [p for p in props if p.kind == "hazard" and p.applies(cfg)]
        self.progress(f"{cfg.label}: induction")
        kept, ctis, unknown, implied = self.induction(targets, hazards)
        self.implied = implied
        kept_names = {p.name for p in kept}
        aux_names = [p.name for p in self.auxiliary if p.name in kept_names]
        open_props = [p for p in targets + hazards if p.name in ctis and p.name not in unknown]
        traces, bmc_unknown = self.bmc(open_props) if open_props else ({}, {})
        for p in props:
            pr = Proof(p.name, p.kind, p.applies(cfg), doc=p.doc)
            if pr.applies:
                pr.seconds = self.spent.get(p.name, 0.0)
                pr.auxiliary = aux_names
                if p.name in unknown:
                    pr.status, pr.note = "unknown", unknown[p.name]
                elif p.name not in ctis:
                    pr.status = "proved"
                else:
                    pr.cti = ctis[p.name]
                    pr.depth = self.depth
                    if p.name in traces:
                        pr.status, pr.trace = "trace", traces[p.name]
                    elif p.name in bmc_unknown:
                        pr.status, pr.note = "unknown", bmc_unknown[p.name]
                    else:
                        pr.status = "cti"
                        pr.note = (
                            f"not inductive with the auxiliary invariants that hold here, "
                            f"and no violation within {self.depth} steps"
                        )
            res.proofs.append(pr)
        for p in self.auxiliary:
            pr = Proof(p.name, "auxiliary", p.applies(cfg), doc=p.doc)
            if pr.applies:
                pr.seconds = self.spent.get(p.name, 0.0)
                if p.name in kept_names:
                    pr.status = "proved"
                    pr.auxiliary = [n for n in aux_names if n != p.name]
                elif p.name in unknown:
                    pr.status, pr.note = "unknown", unknown[p.name]
                else:
                    pr.status, pr.cti = "cti", ctis.get(p.name)
                    pr.note = "not an invariant of this design's proof"
            res.proofs.append(pr)
        if names is None:
            res.dead, res.vacuous = self.dead, self.vacuous
        res.seconds = time.monotonic() - t0
        res.queries = self.queries
        res.slowest = self.slowest
        return res


def prove(
    cfg: Config,
    depth: int = DEFAULT_DEPTH,
    timeout: float = DEFAULT_TIMEOUT,
    names: Iterable[str] | None = None,
    progress: Callable[[str], Any] | None = None,
    budget: float = DEFAULT_BUDGET,
    symmetric: bool = True,
) -> ProveResult:
    """Prove (or refute) every invariant and hazard of ``cfg``; see the module docstring.
    ``symmetric``: the model was checked symmetric in ids and instances (``proofs/symmetry.py``);
    without it the bounded search takes ids in any order."""
    with sym.strict_truth(), sym.fast_operators():
        return Prover(
            cfg,
            depth=depth,
            timeout=timeout,
            progress=progress,
            budget=budget,
            symmetric=symmetric,
        ).run(names)


def all_designs() -> dict[str, Any]:
    """The designs by name, and the mutants of ``atomic`` (one safeguard removed each)."""
    from mcp_inflight.model.config import mutants

    return {**DESIGNS, **mutants()}


def _prove_one(args: tuple[Config, int, float, float, bool]) -> ProveResult:
    cfg, depth, timeout, budget, symmetric = args
    return prove(cfg, depth=depth, timeout=timeout, budget=budget, symmetric=symmetric)


def prove_all(
    cfgs: Sequence[Config],
    depth: int = DEFAULT_DEPTH,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int = 1,
    progress: bool = False,
    budget: float = DEFAULT_BUDGET,
    cache: str | None = None,
    symmetric: Sequence[bool] | None = None,
) -> list[ProveResult]:
    """Prove every configuration, in ``jobs`` processes (one fresh process per configuration
    when there are several); results in the order given.

    ``cache``: ``"use"``: read a configuration's finished result from the cache of
    ``proofs/cache.py`` (keyed by the model's and the checkers' source, the z3 version, the
    whole configuration (design, profile, client), depth, budget and timeout) instead of proving it again, and store new ones there;
    ``symmetric``: per configuration, whether it was checked symmetric (default: all were)
    ``"refresh"``: prove everything and store it; ``None``: no cache.  A result with an unknown
    in it is never stored."""
    from .prove_runs import proving

    with proving(cfgs, depth, timeout, jobs, progress, budget, cache, symmetric) as collect:
        return collect()
