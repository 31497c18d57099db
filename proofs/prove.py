"""The z3 prover: inductive proofs, counterexamples to induction, bounded model checking.

It reads the model's actions and properties through the symbolic backend of
``proofs/symbolic.py`` and adds no rule of its own.  For one configuration (design x profile):

1. **Induction**, by the one prover of every model (``proofs/induction.py``) on the
   configuration in the one declaration (``model/session_spec.py``, ids and instances
   unbounded).  The candidates are the applicable state invariants of ``model/properties.py``
   and the auxiliary invariants of ``model/auxiliary.py``.  Every candidate must hold
   initially, and be preserved by every action from any state that satisfies all candidates
   (``inv and step => inv'``), for any number of ids and instances: ids and instances are
   unbounded integers, the quantifiers of the model are z3 quantifiers.  A candidate that
   fails is dropped with its *counterexample to induction* and the others are tried again
   without it (Houdini), so what remains is an inductive invariant; an invariant that follows
   from the kept auxiliary invariants needs no step of its own.  Every slot's range is proved,
   not assumed.  A step property (routing, removal, cancel, refusal) is proved when every
   action from every state of that inductive invariant keeps it; each hazard is asked the same
   way, on its own.
2. **Counterexamples to induction** are shown on a small finite universe (the fewest instances
   and ids that exhibit one, ``session_spec.CTI_UNIVERSES``): the pre-state, the action with
   its arguments, the post-state and the conjunct that broke.
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

What this module adds to the one prover is the session's: the bounded search, the check
that no action is dead and no invariant folds to true (:meth:`Prover._vacuity`), and the
session's words for a counterexample.  Its result records (:class:`Proof`, :class:`ProveResult`) live in
``proofs/records.py`` beside the explorer's, and are imported from here as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, overload

import z3

from mcp_inflight.model.auxiliary import AUXILIARY
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.properties import PROPERTIES, SPEAKS_OF
from mcp_inflight.model.property_kinds import Property
from mcp_inflight.model.session_spec import CTI_UNIVERSES, declared
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.model.session_state import State
from mcp_inflight.model.trace import (
    CounterexampleToInduction,
    Trace,
    changes,
    describe_state,
    id_name,
    inst_name,
)
from mcp_inflight.proofs import bmc, induction
from mcp_inflight.proofs import symbolic as sym
from mcp_inflight.proofs.bmc import solve, why
from mcp_inflight.proofs.induction import IN_RANGE, CtiStates, Induction, Proved
from mcp_inflight.proofs.records import Proof, ProveResult

#: what the session's ``in_range`` row says
TYPEDNESS = (
    "Every slot keeps a value of its field's range (a lifecycle, an enumeration, an id, an "
    "instance or none, a flag, a send time) after every action: proved, not assumed, since "
    "every other verdict rests on it."
)
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


class SolverUnknown(Exception):
    pass


# --- the prover -----------------------------------------------------------------------------


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
        # the model commutes with renaming ids and instances (``proofs/declared_symmetry.py``): the
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
        self.auxiliary = AUXILIARY if auxiliary is None else tuple(auxiliary)
        self.queries = 0
        self.slowest = (0.0, "")
        self.spent: dict[str, float] = {}
        self.dead: list[str] = []
        self.vacuous: list[str] = []
        self.in_range: Proof | None = None

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
        return why(s, self.rlimit, self.timeout_ms)

    # -- induction: the one prover of every model (``proofs/induction.py``)
    def _declared(self, targets: Sequence[Property], hazards: Sequence[Property]) -> Spec:
        """The configuration in the one declaration (ids and instances unbounded), with
        ``targets`` and ``hazards`` as its properties and this prover's auxiliary invariants."""
        cfg = self.cfg
        return replace(
            session_spec(cfg),
            props=tuple(declared(p, cfg) for p in [*targets, *hazards]),
            aux=tuple(declared(p, cfg) for p in self.auxiliary if p.applies(cfg)),
        )

    def induction(
        self, targets: Sequence[Property], hazards: Sequence[Property]
    ) -> tuple[list[Property], dict[str, Any], dict[str, str], set[str]]:
        """Houdini over the state candidates, then the step properties and the hazards under
        what survives, by the one induction prover on the configuration's declaration: for
        any number of ids and instances, every slot's range proved rather than assumed, a
        state invariant that follows from the kept auxiliary invariants taking no step of its
        own.  Returns ``(kept, ctis, unknown, implied)``: the candidates kept, the
        counterexample to induction of each property not proved, why the solver gave up on
        any, and the invariants that follow from the auxiliary ones."""
        sp = self._declared(targets, hazards)
        ind = Induction(
            sp, self.rlimit / 1e6, self.timeout_ms / 1000, batch=self.batch, quick_units=QUICK_UNITS
        )
        done = ind.run()
        self.queries += done.queries
        for n, dt in done.spent.items():
            self.spent[n] = self.spent.get(n, 0.0) + dt
        if done.slowest[0] > self.slowest[0]:
            self.slowest = done.slowest
        words = {**done.verdicts, **done.hazards}
        ctis: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        for name, c in done.ctis.items():
            ctis[name] = self._cti(name, c, done.cti_states.get(name))
        for name, word in words.items():
            if word == "unknown":
                unknown[name] = done.notes.get(name, "the solver gave up")
        for name in done.dropped:
            if name not in ctis:
                unknown[name] = done.notes.get(name, "the solver gave up")
        self.in_range = Proof(IN_RANGE, "typedness", True, doc=TYPEDNESS)
        typed = done.verdicts[IN_RANGE]
        if typed == "proved":
            self.in_range.status = "proved"
        elif typed == "unknown":
            self.in_range.status = "unknown"
            self.in_range.note = done.notes.get(IN_RANGE, "the solver gave up")
        else:
            self.in_range.status, self.in_range.cti = "cti", ctis.get(IN_RANGE)
            self.in_range.note = "a slot can leave its field's range"
        self.in_range.seconds = done.spent.get(IN_RANGE, 0.0)
        kept_names = set(done.kept) | {n for n, w in done.verdicts.items() if w == "proved"}
        cands = [*[p for p in self.auxiliary if p.applies(self.cfg)], *targets, *hazards]
        kept = [p for p in cands if p.scope == "state" and p.name in kept_names]
        self._vacuity(ind, sp, kept, [p for p in targets if p.kind == "invariant"])
        return kept, ctis, unknown, set(done.implied)

    def _cti(self, name: str, c: dict[str, Any], st: CtiStates | None) -> CounterexampleToInduction:
        """A counterexample to induction of the one prover in the session's words."""
        if st is None:
            action = c.get("action")
            if action is None:
                return CounterexampleToInduction(name, c["text"], initial=True)
            n, m = CTI_UNIVERSES[-1]
            return CounterexampleToInduction(
                name,
                f"{name} is not preserved by {action}; the counterexample needs more than "
                f"{n} instances or {m} ids to show",
                action=action,
            )
        pre, post = State(*st.pre), State(*st.post)
        args = {"r": inst_name(st.args["r"])}
        if "i" in st.args:
            args["i"] = id_name(st.args["i"])
        return CounterexampleToInduction(
            name,
            f"{name} is not preserved by {st.action}"
            f"({', '.join(f'{k}={v}' for k, v in args.items())})",
            action=st.action,
            args=args,
            pre=describe_state(pre),
            post=describe_state(post),
            changes=changes(pre, post),
        )

    def _vacuity(
        self, ind: Induction, sp: Spec, kept: list[Property], invariants: list[Property]
    ) -> None:
        """Each action's guard satisfiable where the proved invariants hold (else the action is
        dead, and everything said about it holds vacuously); each invariant not a constant."""
        self.dead, self.vacuous = [], []
        # satisfiability under quantified invariants rarely comes back sat on the unbounded
        # universe: ask on the finite universe of the explorer's default bound (2 x 2), where
        # each query is decidable; a guard that can hold there can hold
        F = ind.finite({"inst": 2, "id": 2})
        props = {p.name: p for p in sp.props + sp.aux}
        # the finite queries have no quantifiers: one solver holds what every action's query
        # shares (typedness and the invariants), each action's guard is asked in a scope of
        # its own; a state found for one action that also enables another (the whole query
        # evaluated true in it) shows that one can fire too, without a query of its own
        base = [F.typed] + [sym.to_bool(props[h.name].fn(F.b, F.pre)) for h in kept]
        s = self._solver()
        s.add(*base)
        witnesses: list[z3.ModelRef] = []
        for st in F.steps:
            mine = [st.params, st.guard]
            whole = z3.And(*base, *mine)
            if any(z3.is_true(m.eval(whole, model_completion=True)) for m in witnesses):
                continue
            res = self._check(mine, f"{st.name} can fire", st.name, on=s)
            if res == z3.sat:
                witnesses.append(self._model)
            elif res == z3.unsat:
                self.dead.append(st.name)
            elif res == z3.unknown:
                self.dead.append(f"{st.name} (undecided: {self._reason})")
        U = ind.U
        actions = [st.name for st in U.steps]
        for p in invariants:
            if SPEAKS_OF.get(p.name, "") not in ("", *actions):
                continue  # the one action it judges is not part of this configuration
            d = props[p.name]
            if p.scope == "step":
                folds = all(
                    d.on_step(U.b, U.pre, st.post, st.move, st.out) is True for st in U.steps
                )
            else:
                folds = z3.is_true(z3.simplify(sym.to_bool(d.fn(U.b, U.pre))))
            if folds:
                self.vacuous.append(p.name)

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
        res.in_range = self.in_range
        if names is None:
            res.dead, res.vacuous = self.dead, self.vacuous
        res.seconds = time.monotonic() - t0
        res.queries = self.queries
        res.slowest = self.slowest
        return res


@overload
def prove(
    model: Spec,
    *,
    budget: float | None = None,
    timeout: float | None = None,
    unbounded: bool = True,
) -> Proved: ...


@overload
def prove(
    model: Config,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout: float | None = None,
    names: Iterable[str] | None = None,
    progress: Callable[[str], Any] | None = None,
    budget: float | None = None,
    symmetric: bool = True,
) -> ProveResult: ...


def prove(
    model: Spec | Config,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout: float | None = None,
    names: Iterable[str] | None = None,
    progress: Callable[[str], Any] | None = None,
    budget: float | None = None,
    symmetric: bool = True,
    unbounded: bool = True,
) -> Proved | ProveResult:
    """The one entry point of proof, for every model.

    A declared model (a :class:`~mcp_inflight.model.declare.Spec`) is proved by induction
    (``proofs/induction.py``: for any size of the sorts it declares unbounded, unless
    ``unbounded`` is false, else at its bounds) and comes back as a
    :class:`~.induction.Proved`.  The session model (a :class:`~mcp_inflight.model.config.Config`)
    is proved by the same induction on its declaration, with the bounded search for traces
    (at most ``depth`` steps) and the vacuity checks around it (see the module docstring), as a
    :class:`~.records.ProveResult`; ``names`` restricts it to those properties, and
    ``symmetric`` says the model was checked symmetric in ids and instances
    (``proofs/declared_symmetry.py``; without it the bounded search takes ids in any order).
    ``budget`` (millions of z3 resource units per query) and ``timeout`` (seconds per query)
    default to each model's own (:data:`DEFAULT_BUDGET` and :data:`DEFAULT_TIMEOUT` for the
    session, ``induction.DEFAULT_BUDGET`` and ``induction.DEFAULT_TIMEOUT`` otherwise)."""
    if isinstance(model, Spec):
        with sym.strict_truth(), sym.fast_operators():
            return Induction(
                model,
                induction.DEFAULT_BUDGET if budget is None else budget,
                induction.DEFAULT_TIMEOUT if timeout is None else timeout,
                unbounded,
            ).run()
    with sym.strict_truth(), sym.fast_operators():
        return Prover(
            model,
            depth=depth,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            progress=progress,
            budget=DEFAULT_BUDGET if budget is None else budget,
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
