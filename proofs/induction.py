"""The one z3 induction prover of every model: the declared ones (``model/declare.py``) and
the session, in its declaration (``model/session_spec.py``; ``proofs/prove.py`` adds the
session's bounded search and vacuity checks around it).

:class:`Induction` (run by ``proofs/prove.py:prove``, the one entry point of proof) reads a
:class:`~mcp_inflight.model.declare.Spec`'s guards, outputs, effects and
properties with the z3 backend of ``proofs/symbolic.py`` (one reading per universe,
``proofs/universe.py``): a scalar is a z3 constant; a keyed
variable over a sort the spec declares ``unbounded`` is a z3 array (and an argument over it any
natural), so that what is proved holds for any number of them (``proved``); a keyed variable
over a finite sort is one z3 constant per slot (:class:`~.symbolic.Vec`), so that what is proved
holds at those bounds only (``proved at bounds``).  The writes are stores under their ``when``.

The candidates are the ``always`` properties and the auxiliary invariants.  Houdini: each must
hold initially and be preserved by every action from any well-typed state where every kept
candidate holds; one that is not is dropped, with its counterexample to induction, and the rest
tried again without it.  A property that follows, in every well-typed state, from the kept
auxiliary invariants needs no step of its own: it holds wherever they do, and they are kept
only while preserved (this is how the session's ``quiescent_clean`` is proved for any size).
What is left is inductive as a whole, so no property is ever proved by assuming one that fails.  Then typedness is proved, not assumed: every slot keeps a value of its
variable's range or sort after every action from such a state (it is assumed in each pre-state
above, so nothing is proved unless this is); then each ``step`` property on every action from a
state where the kept set holds.

On an unbounded sort an obligation is first tried on a small resource budget; when it is not
unsat at once, a counterexample is looked for on the spec's finite ``universes`` (smallest
first: a counterexample to induction is shown as two concrete states and the move), and only
when none has one is the unbounded query given the whole budget.  A query the solver gives up
on is ``unknown``, never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import z3

from mcp_inflight.model.declare import Prop, Spec, changes, describe
from mcp_inflight.model.logic import Concrete

from .bmc import solve, why
from .symbolic import Vec, to_bool
from .universe import StateTerms, Step, Universe, value_of

#: z3 resource units per query (millions) on an unbounded universe
DEFAULT_BUDGET = 200
DEFAULT_TIMEOUT = 60.0
#: Resource units of the quick first attempt at an unbounded obligation (an unbounded query
#: that is not unsat at once usually has a small counterexample, which a finite universe shows
#: quickly).
QUICK_UNITS = 300_000
#: Resource units of the query asking whether kept properties follow from the kept auxiliary
#: invariants: the implications shown on every model, design and profile need at most about
#: 20 thousand, and a property not shown to follow is shown preserved on its own (time
#: depends on it, no verdict).  Most of these queries that do not come back unsat spend their
#: whole budget.
FOLLOWS_UNITS = 60_000
IN_RANGE = "in_range"


@dataclass(frozen=True)
class CtiStates:
    """A counterexample to induction as states: ``pre`` (the invariants hold), the move
    (``action`` with its arguments ``args``), ``post`` (the property fails), on a universe of
    ``sizes``."""

    action: str
    args: dict[str, int]
    pre: Any
    post: Any
    sizes: dict[str, int]


@dataclass
class Proved:
    """What :class:`Induction` found: per ``always``/``step`` property and ``in_range`` (every slot
    keeps a value of its variable) ``proved``, ``not proved`` (with a counterexample to
    induction) or ``unknown``; the auxiliary invariants kept and dropped; whether the proof is
    for any size (``unbounded``) or at the spec's bounds."""

    spec: Spec
    unbounded: bool = False
    verdicts: dict[str, str] = field(default_factory=dict)
    ctis: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    #: the kept properties shown to follow from the kept auxiliary invariants (no step of
    #: their own)
    implied: list[str] = field(default_factory=list)
    #: per ``hazard`` property (a step that may break what the protocol leaves open; never
    #: part of :attr:`ok`): ``proved``, ``not proved`` or ``unknown``
    hazards: dict[str, str] = field(default_factory=dict)
    #: per counterexample to induction shown, its two concrete states and move (for a reader
    #: that renders them its own way; not part of the JSON)
    cti_states: dict[str, CtiStates] = field(default_factory=dict)
    seconds: float = 0.0
    queries: int = 0
    #: the slowest query: its seconds and what it asked
    slowest: tuple[float, str] = (0.0, "")
    #: seconds of solving spent on each property (a query about several, shared among them)
    spent: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(v == "proved" for v in self.verdicts.values())

    def word(self, name: str) -> str:
        """The verdict on ``name`` in the words every report uses: ``proved`` only for any
        size, ``proved at bounds`` where the induction ran on the spec's finite bounds."""
        v = self.verdicts[name]
        return "proved at bounds" if v == "proved" and not self.unbounded else v

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.spec.model,
            "design": self.spec.design,
            "bounds": dict(self.spec.bounds),
            "unbounded": list(self.spec.unbounded) if self.unbounded else [],
            "properties": {
                k: {
                    "verdict": v,
                    "counterexample_to_induction": self.ctis.get(k),
                    **({"note": self.notes[k]} if k in self.notes else {}),
                }
                for k, v in self.verdicts.items()
            },
            "auxiliary_kept": self.kept,
            "auxiliary_dropped": self.dropped,
            "seconds": round(self.seconds, 3),
            "queries": self.queries,
            "ok": self.ok,
        }


class Induction:
    """One run of the prover over ``spec`` (:meth:`run`); ``U`` is the universe it proves on.
    ``batch``: ask the obligations of one step in one query first (off, each is asked on its
    own: the same verdicts, to see what each costs); ``quick_units``: the budget of the quick
    first attempt at an unbounded obligation (a heuristic: no verdict depends on it).  Call it inside
    :func:`~.symbolic.strict_truth` and :func:`~.symbolic.fast_operators`, as
    ``proofs/prove.py:prove`` (the one entry point of proof) does."""

    def __init__(
        self,
        spec: Spec,
        budget: float = DEFAULT_BUDGET,
        timeout: float = DEFAULT_TIMEOUT,
        unbounded: bool = True,
        batch: bool = True,
        quick_units: int = QUICK_UNITS,
    ):
        self.spec = spec
        self.batch = batch
        self.quick_units = quick_units
        self.rlimit = int(budget * 1_000_000)
        self.timeout_ms = int(timeout * 1000)
        self.queries = 0
        self.slowest = (0.0, "")
        self.spent: dict[str, float] = {}
        self.cti_states: dict[str, CtiStates] = {}
        #: kept properties that follow from the kept auxiliary invariants, left out of the
        #: hypotheses while that holds (see :meth:`_hyps`)
        self._lean: frozenset[str] = frozenset()
        #: why the last query the solver gave up on was not decided
        self.reason = "the solver gave up"
        self.unbounded = unbounded and bool(spec.unbounded)
        # at the spec's own bounds, one step per move (concrete arguments); otherwise one per
        # action, its arguments symbolic
        self.U = (
            Universe(spec, None, "pre")
            if self.unbounded
            else Universe(spec, {}, "pre", per_move=True)
        )
        self._finite: dict[tuple[tuple[str, int], ...], Universe] = {}
        # at bounds: one solver per kept set (its assumptions asserted once), the terms of each
        # property cached
        self._solvers: dict[tuple[str, ...], z3.Solver] = {}
        self._terms: dict[tuple[str, int, bool], Any] = {}

    def finite(self, sizes: Mapping[str, int]) -> Universe:
        """The spec on a finite universe of ``sizes`` (per sort; one step per action, its
        arguments symbolic), built once."""
        fin = tuple(sizes.items())
        if fin not in self._finite:
            tag = "cti" + "".join(str(n) for _, n in fin)
            self._finite[fin] = Universe(self.spec, dict(fin), tag)
        return self._finite[fin]

    def _universes(self) -> Iterable[Universe]:
        """The finite universes a counterexample is looked for on, smallest first."""
        if not self.unbounded:
            yield self.U
            return
        sizes = self.spec.universes or tuple(
            sorted(
                (tuple(zip(self.spec.unbounded, ns, strict=True)))
                for ns in product((1, 2), repeat=len(self.spec.unbounded))
            )
        )
        for fin in sizes:
            yield self.finite(dict(fin))

    def _check(
        self,
        formulas: list[Any],
        what: str,
        about: Iterable[str],
        quick: bool = False,
        units: int | None = None,
    ) -> tuple[Any, Any]:
        """``formulas`` decided on a fresh solver; ``quick``: on the quick attempt's budget, or
        on ``units`` where that is smaller."""
        s = z3.Solver()
        if self.unbounded:
            quick_units = self.quick_units if units is None else min(units, self.quick_units)
            s.set("rlimit", min(self.rlimit, quick_units) if quick else self.rlimit)
        s.set("timeout", self.timeout_ms)
        s.add(*formulas)
        res = self._solve(s, what, about)
        return res, (s.model() if res == z3.sat else None)

    def _solve(self, s: z3.Solver, what: str, about: Iterable[str]) -> Any:
        """``s`` decided, the time it took counted: the slowest query, and per property (a
        query about several shared among them)."""
        t0 = time.perf_counter()
        res = solve(s, self.timeout_ms)
        dt = time.perf_counter() - t0
        self.queries += 1
        if res == z3.unknown:
            self.reason = why(s, self.rlimit, self.timeout_ms)
        names = list(about)
        for n in names:
            self.spent[n] = self.spent.get(n, 0.0) + dt / len(names)
        if dt > self.slowest[0]:
            self.slowest = (dt, what)
        return res

    def _goal(self, U: Universe, p: Prop | None, st: Step, on_step: bool) -> Any:
        if U is self.U:
            key = (IN_RANGE if p is None else p.name, id(st), on_step)
            if key not in self._terms:
                self._terms[key] = self._make_goal(U, p, st, on_step)
            return self._terms[key]
        return self._make_goal(U, p, st, on_step)

    def _make_goal(self, U: Universe, p: Prop | None, st: Step, on_step: bool) -> Any:
        if p is None:
            return to_bool(U.well_typed(st.post))
        if on_step:
            return to_bool(p.on_step(U.b, U.pre, st.post, st.move, st.out))
        return to_bool(p.fn(U.b, st.post))

    def _hyps(self, U: Universe, st: Step, kept: list[Prop]) -> list[Any]:
        """What an obligation of step ``st`` assumes: a well-typed pre-state where the move is
        enabled and ``kept`` holds.  On the universe proved on, the kept properties shown to
        follow from the kept auxiliary invariants (``_lean``) are left out: the same states,
        fewer quantified hypotheses for the solver."""
        lean = self._lean if U is self.U else frozenset()
        return [U.typed, st.params, st.guard] + [
            self._pre(h, U) for h in kept if h.name not in lean
        ]

    def _obligation(
        self,
        kept: list[Prop],
        p: Prop | None,
        idx: int,
        on_step: bool = False,
        expect_cti: bool = False,
    ) -> tuple[str, dict[str, Any] | None]:
        """Whether ``p`` (None: typedness) holds after (``on_step``: on) step ``idx`` from every
        well-typed state where ``kept`` holds: ``ok``, ``cti`` (with the counterexample, when
        one is shown) or ``unknown``."""
        U = self.U
        st = U.steps[idx]
        goal = self._goal(U, p, st, on_step)
        if z3.is_true(z3.simplify(goal)):
            return "ok", None
        name = IN_RANGE if p is None else p.name
        what = f"{name} {'on' if on_step else 'preserved by'} {st.name}"
        if not self.unbounded:
            res, model = self._at_bounds(kept, st, goal, what, [name])
            if res == z3.unsat:
                return "ok", None
            if res == z3.sat:
                return "cti", self._render(U, p, st, model)
            return "unknown", None
        formulas = self._hyps(U, st, kept) + [z3.Not(goal)]
        if expect_cti:  # the finite counterexample first, then the quick attempt
            found = self._finite_cti(kept, p, idx, on_step, what, name)
            if found is not None:
                return "cti", found
        res, model = self._check(formulas, what, [name], quick=True)
        if res == z3.unsat:
            return "ok", None
        if not expect_cti:
            found = self._finite_cti(kept, p, idx, on_step, what, name)
            if found is not None:
                return "cti", found
        if res == z3.unknown:
            res, _ = self._check(formulas, what, [name])
            if res == z3.unsat:
                return "ok", None
        if res == z3.sat:
            return "cti", None
        return "unknown", None

    def _finite_cti(
        self, kept: list[Prop], p: Prop | None, idx: int, on_step: bool, what: str, name: str
    ) -> dict[str, Any] | None:
        """A counterexample to ``p`` on step ``idx`` on the finite universes, smallest first
        (None: none there)."""
        for F in self._universes():
            fst = F.steps[idx]
            fgoal = self._goal(F, p, fst, on_step)
            sizes = ", ".join(f"{n} {s}" for s, n in F.sizes.items())
            r2, m2 = self._check(
                self._hyps(F, fst, kept) + [z3.Not(fgoal)],
                f"{what}: counterexample, {sizes}",
                [name],
            )
            if r2 == z3.sat:
                return self._render(F, p, fst, m2)
        return None

    def _holds_on(
        self,
        kept: list[Prop],
        p: Prop,
        idx: int,
        ctis: dict[str, dict[str, Any] | None],
        unknown: dict[str, str],
        expect_cti: bool = False,
    ) -> bool:
        """Whether step property ``p`` holds on step ``idx`` from every well-typed state where
        ``kept`` holds; when it does not, its counterexample to induction (or why the solver
        gave up) is recorded in ``ctis`` (``unknown``).  ``expect_cti``: look for a finite
        counterexample before the quick unbounded attempt (the same verdict either way)."""
        verdict, cti = self._obligation(kept, p, idx, on_step=True, expect_cti=expect_cti)
        if verdict == "ok":
            return True
        st = self.U.steps[idx]
        if verdict == "cti":
            ctis[p.name] = cti or _no_cti(p.name, st.name)
        else:
            unknown[p.name] = f"on {st.name}: {self.reason}"
        return False

    def _all_hold(
        self,
        kept: list[Prop],
        props: list[Prop],
        idx: int,
        on_step: bool = False,
        typed: bool = False,
    ) -> bool:
        """Whether every one of ``props`` holds after (``on_step``: on) step ``idx`` from every
        well-typed state where ``kept`` holds (with ``typed``, and every slot keeps a value of
        its range after it), shown by one query for them all (their conjunction's negation
        unsatisfiable; on an unbounded sort on the quick budget only); a goal that is true as
        built takes no part, and none left needs no query.  False says nothing: each is then
        decided on its own, as without this query."""
        if not self.batch:
            return False
        U = self.U
        st = U.steps[idx]
        goals = [self._goal(U, p, st, on_step) for p in props]
        if typed:
            goals.append(self._goal(U, None, st, False))
        goals = [g for g in goals if not z3.is_true(g)]
        if not goals:
            return True
        if len(goals) < 2:
            return False
        goal = z3.And(*goals)
        what = f"every {'step property on' if on_step else 'candidate preserved by'} {st.name}"
        about = [p.name for p in props] + ([IN_RANGE] if typed else [])
        if not self.unbounded:
            res, _ = self._at_bounds(kept, st, goal, what, about)
        else:
            res, _ = self._check(self._hyps(U, st, kept) + [z3.Not(goal)], what, about, quick=True)
        return bool(res == z3.unsat)

    def _implied(self, kept: list[Prop]) -> set[str]:
        """The kept properties that follow, in every well-typed state, from the kept auxiliary
        invariants: those need not be shown preserved on their own, since they hold wherever
        the auxiliary invariants (kept only while themselves preserved) do.  One query for them
        all first, then each on its own; on an unbounded sort on the quick budget only, so a
        property the solver does not settle at once is shown preserved like any other."""
        aux = [p for p in kept if p in self.spec.aux]
        props = [p for p in kept if p not in self.spec.aux]
        if not aux or not props:
            return set()
        hyps = [self.U.typed] + [self._pre(h) for h in aux]

        def follows(ps: list[Prop]) -> bool:
            goal = z3.And(*[self._pre(p) for p in ps])
            what = "follows from the auxiliary invariants: " + ", ".join(p.name for p in ps)
            about = [p.name for p in ps]
            if self.unbounded:
                res = self._check(
                    hyps + [z3.Not(goal)], what, about, quick=True, units=FOLLOWS_UNITS
                )[0]
            else:
                res = self._at_bounds(aux, None, goal, what, about)[0]
            return bool(res == z3.unsat)

        if self.batch and len(props) > 1 and follows(props):
            return {p.name for p in props}
        return {p.name for p in props if follows([p])}

    def _at_bounds(
        self, kept: list[Prop], st: Step | None, goal: Any, what: str, about: Iterable[str]
    ) -> tuple[Any, Any]:
        """One obligation at the spec's bounds, on the solver that holds ``kept``."""
        key = tuple(p.name for p in kept)
        s = self._solvers.get(key)
        if s is None:
            U = self.U
            s = z3.Solver()
            s.set("timeout", self.timeout_ms)
            s.add(U.typed, *[self._pre(h) for h in kept])
            self._solvers = {key: s}
        s.push()
        s.add(*([] if st is None else [st.params, st.guard]), z3.Not(goal))
        res = self._solve(s, what, about)
        model = s.model() if res == z3.sat else None
        s.pop()
        return res, model

    def _pre(self, p: Prop, U: Universe | None = None) -> Any:
        """``p`` on the pre-state of ``U`` (default: the universe proved on), built once."""
        U = U or self.U
        key = (p.name, -1 - id(U), False)
        if key not in self._terms:
            self._terms[key] = to_bool(p.fn(U.b, U.pre))
        return self._terms[key]

    def _render(self, U: Universe, p: Prop | None, st: Step, model: Any) -> dict[str, Any]:
        spec = self.spec
        a = self._concrete(U, model, U.pre)
        z = self._concrete(U, model, st.post)
        kw = {k: value_of(model.eval(v, model_completion=True)) for k, v in st.args.items()}
        kw = kw or st.move.kw
        act = st.move.act
        name = IN_RANGE if p is None else p.name
        if act.tell is not None:
            b = Concrete({s: range(n) for s, n in U.sizes.items()})
            story = act.tell(kw, a, z, act.outputs(b, a, **kw))
        else:
            story = act.story(kw)
        args = ", ".join(f"{k}={v}" for k, v in kw.items())
        self.cti_states[name] = CtiStates(act.name, dict(kw), a, z, dict(U.sizes))
        return {
            "broken": name,
            "action": act.name,
            "args": kw,
            "story": story,
            "universe": dict(U.sizes),
            "pre": describe(spec, a),
            "post": describe(spec, z),
            "changes": changes(spec, a, z),
            "text": f"{name} is not inductive: from a state where the invariants hold, "
            f"{act.name}({args}) leads to one where it fails",
        }

    def _concrete(self, U: Universe, model: Any, s: StateTerms) -> Any:
        vals = []
        for v in self.spec.vars:
            x = getattr(s, v.name)
            if v.keys is None:
                vals.append(value_of(model.eval(x, model_completion=True)))
                continue
            if isinstance(x, Vec):
                terms = x.slots
            else:
                terms = [x[k] for k in range(U.sizes.get(v.sort or "", v.keys))]
            vals.append(tuple(value_of(model.eval(t, model_completion=True)) for t in terms))
        return self.spec.state_type(*vals)

    def run(self) -> Proved:
        t0 = time.perf_counter()
        spec, U = self.spec, self.U
        res = Proved(spec, unbounded=self.unbounded)
        invs = [p for p in spec.props if p.kind == "always"]
        steps = [p for p in spec.props if p.kind == "step"]
        hazards = [p for p in spec.props if p.kind == "hazard"]
        ctis: dict[str, dict[str, Any] | None] = {}
        unknown: dict[str, str] = {}
        kept: list[Prop] = []
        cands = invs + list(spec.aux)
        at_init = [to_bool(p.fn(U.b, U.init)) for p in cands]
        # one query shows every candidate holds initially; else each is asked on its own
        names = [p.name for p in cands]
        every = (
            len(cands) > 1
            and self._check([z3.Not(z3.And(*at_init))], "every candidate: initial state", names)[0]
            == z3.unsat
        )
        for p, init in zip(cands, at_init, strict=True):
            r = z3.unsat if every else self._check([z3.Not(init)], "initial state", [p.name])[0]
            if r == z3.unsat:
                kept.append(p)
            elif r == z3.sat:
                ctis[p.name] = {"initial": True, "text": f"{p.name} fails in the initial state"}
            else:
                unknown[p.name] = f"initial state: {self.reason}"
        # Houdini: drop a candidate not preserved from a state where every kept one holds, and
        # try the rest again without it
        changed = True
        implied: set[str] = set()
        typed_on: set[int] = set()  # the steps whose batch showed typedness too
        while changed:
            changed = False
            implied = self._implied(kept)
            self._lean = frozenset(implied)
            typed_on = set()
            for idx, st in enumerate(U.steps):
                todo = [p for p in kept if p.name not in implied]
                if todo and self._all_hold(kept, todo, idx, typed=True):
                    typed_on.add(idx)
                    continue  # every candidate preserved by this step, in one query
                for p in todo:
                    if p not in kept:
                        continue
                    verdict, cti = self._obligation(kept, p, idx)
                    if verdict == "ok":
                        continue
                    kept.remove(p)
                    changed = True
                    self._lean = frozenset()  # what followed may no longer
                    if verdict == "cti":
                        ctis[p.name] = cti or _no_cti(p.name, st.name)
                    else:
                        unknown[p.name] = f"preserved by {st.name}: {self.reason}"
        self._lean = frozenset(implied)  # the last round dropped nothing
        res.kept = [p.name for p in spec.aux if p in kept]
        res.dropped = [p.name for p in spec.aux if p not in kept]
        # typedness: assumed in every pre-state above, so proved here under the kept set (on
        # the steps whose batch in Houdini's last round, which dropped nothing, did not show
        # it)
        typed = "proved"
        for idx, st in enumerate(U.steps):
            if idx in typed_on:
                continue
            verdict, cti = self._obligation(kept, None, idx)
            if verdict == "ok":
                continue
            if verdict == "cti":
                typed = "not proved"
                ctis[IN_RANGE] = cti or _no_cti(IN_RANGE, st.name)
            else:
                typed = "unknown"
                unknown[IN_RANGE] = f"the slots' ranges on {st.name}: {self.reason}"
            break
        # each step property on every step, up to the first that breaks it; the steps in
        # order, with one query for every property still open on a step before any of its own
        open_ = list(steps)
        for idx in range(len(U.steps)):
            if not open_ or self._all_hold(kept, open_, idx, on_step=True):
                continue
            for p in list(open_):
                if not self._holds_on(kept, p, idx, ctis, unknown):
                    open_.remove(p)
        # each hazard on its own (one is expected to break): on every step, up to the first;
        # a finite counterexample looked for first (the quick attempt at a step that breaks
        # it would spend its whole budget before that search)
        for p in hazards:
            all(
                self._holds_on(kept, p, idx, ctis, unknown, expect_cti=True)
                for idx in range(len(U.steps))
            )
        for p in hazards:
            res.hazards[p.name] = (
                "unknown" if p.name in unknown else "not proved" if p.name in ctis else "proved"
            )
        for p in spec.aux:
            if p.name in unknown:
                res.notes[p.name] = unknown[p.name]
        res.implied = [p.name for p in invs if p.name in implied]
        res.ctis.update({k: c for k, c in ctis.items() if c is not None})
        res.cti_states = {k: v for k, v in self.cti_states.items() if k in res.ctis}
        for name in [p.name for p in invs] + [IN_RANGE] + [p.name for p in steps]:
            if name in unknown:
                res.verdicts[name] = "unknown"
                res.notes[name] = unknown[name]
            elif name in ctis:
                res.verdicts[name] = "not proved"
            elif typed != "proved":
                res.verdicts[name] = typed
                res.notes[name] = "rests on every slot keeping a value of its variable"
                res.ctis[name] = {"initial": True, "text": f"{name} {res.notes[name]}, not proved"}
            else:
                res.verdicts[name] = "proved"
        res.seconds = time.perf_counter() - t0
        res.queries = self.queries
        res.slowest = self.slowest
        res.spent = self.spent
        return res


def _no_cti(name: str, action: str) -> dict[str, Any]:
    return {
        "broken": name,
        "action": action,
        "text": f"{name} is not preserved by {action} (no counterexample within the finite "
        "universes tried)",
    }
