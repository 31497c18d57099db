"""One result for every model: a cell per model x design x run x property, in exact words.

The checkers of each model return records of their own shape (the session's ``RunResult`` and
``ProveResult``, the lease protocol's ``ExploreResult``/``ProveResult``/``HazardResult``, the
small models' ``Checked``).  This module reads them into one list of :class:`Cell`; the text
table, the JSON and the JUnit file of ``mcp-inflight check`` are written from that list only,
and the exit code is ``all(cell.passed)``, so the three can never disagree.

A cell's verdict is one of the :class:`Word` values, and says how far the guarantee reaches:

* ``proved``: the explorer found no violation at its bounds (when it ran) and the prover showed
  the property inductive for *any* number of ids, instances and workers;
* ``proved at bounds``: the same induction, run on the finite universe of the given bounds only
  (the small models' prover): it covers every state at those bounds, reachable or not, and says
  nothing beyond them;
* ``holds (explored)``: only the explorer judged it, on the states reachable at its bounds;
* ``fails``, ``not proved`` (the induction found a counterexample to induction and no trace),
  ``unknown`` (the solver gave up: never a pass), ``reached``/``not reached`` (witnesses),
  ``not applicable`` (the property does not speak of this profile: never counted as a pass of
  anything, and never a failure).

A hazard's cell passes whatever its word (the protocol allows the bad trace; it is reported with
its trace).  Run-level problems (an incomplete search, a value out of its range) are cells too,
with ``kind`` ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mcp_inflight.model.kinds import Kind, kind_of
from mcp_inflight.model.trace import trace_lines


class Word(StrEnum):
    PROVED = "proved"
    PROVED_AT_BOUNDS = "proved at bounds"
    HOLDS = "holds (explored)"
    FAILS = "fails"
    NOT_PROVED = "not proved"
    UNKNOWN = "unknown"
    REACHED = "reached"
    NOT_REACHED = "not reached"
    NA = "not applicable"
    # sensitivity (``proofs/sensitivity.py``): whether a design named to break a property does
    BROKEN = "broken (as it must be)"
    NOT_BROKEN = "not broken"
    UNTESTED = "untested"


#: the words that are a pass for an invariant, step invariant or liveness property
PASSING = (Word.PROVED, Word.PROVED_AT_BOUNDS, Word.HOLDS, Word.REACHED, Word.NA)


@dataclass
class Cell:
    """One property of one run: ``model`` x ``design`` x ``run`` (the profile or bounds) x
    ``prop``.  ``passed``: whether it lets the check pass; ``message``: a line saying why not;
    ``detail``: the trace or counterexample to induction, as text lines."""

    model: str
    design: str
    run: str
    prop: str
    kind: Kind | None
    word: Word
    passed: bool
    message: str = ""
    detail: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: a witness: the actions of the path it names (reached only on a step of one of them)
    through: list[str] = field(default_factory=list)
    #: a liveness property: the actions whose weak fairness it rests on, on this run
    fairness: list[str] | None = None

    @property
    def case(self) -> tuple[str, str]:
        """The JUnit class name and test name."""
        cls = f"{self.model}.{self.design}.{self.run}".replace(" ", "_")
        return cls, f"{self.kind or 'run'}:{self.prop}"

    def to_json(self) -> dict[str, Any]:
        return (
            {
                "model": self.model,
                "design": self.design,
                "run": self.run,
                "property": self.prop,
                "kind": None if self.kind is None else str(self.kind),
                "verdict": str(self.word),
                "passed": self.passed,
                "message": self.message,
                "detail": self.detail,
                "seconds": round(self.seconds, 3),
            }
            | ({"through": self.through} if self.through else {})
            | ({"fairness": self.fairness} if self.fairness is not None else {})
        )

    @property
    def rests_on(self) -> str:
        """What the verdict rests on, in words: a witness's path, a liveness property's
        fairness (empty for the other kinds)."""
        if self.through:
            return "through " + ", ".join(self.through)
        if self.fairness is not None:
            return "fair: " + (", ".join(self.fairness) if self.fairness else "none")
        return ""


def _cell(
    model: str,
    design: str,
    run: str,
    prop: str,
    kind: Kind | None,
    word: Word,
    detail: Sequence[str] = (),
    seconds: float = 0.0,
    message: str = "",
    through: Sequence[str] = (),
    fairness: Sequence[str] | None = None,
) -> Cell:
    passed = kind is Kind.HAZARD or kind is Kind.AUXILIARY or word in PASSING
    if kind is Kind.WITNESS:
        passed = word in (Word.REACHED, Word.NA)
    if not passed and not message:
        path = f" through {', '.join(through)}" if through else ""
        message = f"{prop} {word}{path} on {model} {design} {run}"
    return Cell(
        model,
        design,
        run,
        prop,
        kind,
        word,
        passed,
        message,
        list(detail),
        seconds,
        list(through),
        None if fairness is None else list(fairness),
    )


def ok(cells: Iterable[Cell]) -> bool:
    return all(c.passed for c in cells)


def _vacuous(model: str, design: str, run: str, pr: Any) -> list[Cell]:
    """An invariant that folds to a constant before the solver sees it cannot fail."""
    names = getattr(pr, "vacuous", [])
    if not names:
        return []
    return [
        _cell(
            model,
            design,
            run,
            "no_vacuous_property",
            None,
            Word.FAILS,
            message=f"vacuous: {', '.join(names)} fold to true (on every action, for a step "
            "invariant): they cannot fail whatever the design (a misspelt action name, or a "
            "condition that cannot hold)",
        )
    ]


def _dead(
    model: str, design: str, run: str, dead: Sequence[str], where: str = "any reachable state"
) -> list[Cell]:
    """A run where some action never fired: every property about that action holds vacuously,
    so the run fails (an action that does not belong to a profile or design is declared by the
    model not to apply there, and is not counted)."""
    if not dead:
        return []
    return [
        _cell(
            model,
            design,
            run,
            "every_action_fires",
            None,
            Word.FAILS,
            message=f"dead actions: {', '.join(dead)}: never enabled in {where}"
            + (" at these bounds" if where == "any reachable state" else "")
            + " (a guard that cannot hold, or bounds too small for the action); what the "
            "properties say about them holds vacuously",
        )
    ]


# --- the session model ------------------------------------------------------------------------


def _proof_word(status: str, unbounded: bool) -> Word:
    return {
        "proved": Word.PROVED if unbounded else Word.PROVED_AT_BOUNDS,
        "trace": Word.FAILS,
        "cti": Word.NOT_PROVED,
        "unknown": Word.UNKNOWN,
        "n/a": Word.NA,
    }[status]


def session_cells(results: Sequence[Any] | None, proofs: Sequence[Any] | None) -> list[Cell]:
    """Cells of the session model's runs: the explorer's ``RunResult`` list and the prover's
    ``ProveResult`` list (either may be None; when both are given they pair up by position)."""
    from mcp_inflight.model.properties import PROPERTIES

    scope = {p.name: p.scope for p in PROPERTIES}
    out: list[Cell] = []
    for pr in proofs or ():
        out += _vacuous("session", pr.cfg.design.name, pr.cfg.label, pr)
        typed = getattr(pr, "in_range", None)
        if typed is not None:  # every verdict of the run rests on it
            detail = typed.cti.lines() if typed.cti else [f"  {typed.note}"] if typed.note else []
            word = _proof_word(typed.status, True)
            out.append(
                _cell("session", pr.cfg.design.name, pr.cfg.label, "in_range", None, word, detail)
            )
    if results is None:
        for pr in proofs or ():
            d, run = pr.cfg.design.name, pr.cfg.label
            out += _dead("session", d, run, getattr(pr, "dead", []), "the proved invariants")
            for p in pr.proofs:
                if p.kind == "auxiliary":
                    continue
                word = _proof_word(p.status if p.applies else "n/a", True)
                detail = trace_lines(p.trace) if p.trace else p.cti.lines() if p.cti else []
                out.append(_cell("session", d, run, p.name, Kind(p.kind), word, detail, p.seconds))
        return out
    for k, r in enumerate(results):
        pr = proofs[k] if proofs is not None else None
        d, run = r.cfg.design.name, r.cfg.label
        if not r.complete:
            out.append(
                _cell(
                    "session",
                    d,
                    run,
                    "complete",
                    None,
                    Word.UNKNOWN,
                    message="the search "
                    f"stopped at --max-states ({r.states:,} states): nothing is known beyond",
                )
            )
        out += _dead("session", d, run, r.dead_actions if r.complete else [])
        for v in r.verdicts:
            kind = kind_of(v.kind, scope.get(v.name, "state"))
            seconds = r.seconds
            detail = trace_lines(v.trace) if v.trace else []
            if not v.applies:
                word = Word.NA
            elif kind is Kind.WITNESS:
                word = Word.REACHED if v.ok else Word.NOT_REACHED
                detail = []
            elif not v.ok:
                word = Word.FAILS
            else:
                word = Word.HOLDS
                if pr is not None and kind in (Kind.INVARIANT, Kind.STEP, Kind.HAZARD):
                    p = pr.proof(v.name)
                    word = _proof_word(p.status, True)
                    seconds += p.seconds
                    if p.trace:
                        detail = trace_lines(p.trace)
                    elif p.cti:
                        detail = p.cti.lines()
            out.append(
                _cell(
                    "session",
                    d,
                    run,
                    v.name,
                    kind,
                    word,
                    detail,
                    seconds,
                    through=v.through,
                    fairness=v.fair if kind is Kind.LIVENESS else None,
                )
            )
    return out


# --- the declared models (lease, rounds, resume) ---------------------------------------------


def declared_cells(explored: Any, proved: Any | None, hazards: Sequence[Any] = ()) -> list[Cell]:
    """Cells of one declared model's run (``proofs/declared.py``): its ``Explored``, its
    ``Proved`` (or None) and its hazards' runs (``HazardRun``).  A proof is ``proved`` when
    the prover took the model's unbounded sorts for any size, ``proved at bounds`` when it ran
    on the model's finite bounds."""
    from .stepping import cti_lines, loop_text, trace_text

    ex, pr = explored, proved
    sp = ex.spec
    run = sp.bounds_label()
    out: list[Cell] = []
    limit = [e for e in ex.errors if not e.startswith("model bug")]  # the search's own bound
    for e in ex.errors:
        if e in limit:
            continue
        detail = trace_text(ex.traces["range"]) if "range" in ex.traces else []
        out.append(_cell(sp.model, sp.design, run, "in_range", None, Word.FAILS, detail, message=e))
    if not ex.complete:
        out.append(
            _cell(
                sp.model,
                sp.design,
                run,
                "complete",
                None,
                Word.UNKNOWN,
                message="; ".join(["the search stopped before the end", *limit]),
            )
        )
    out += _dead(sp.model, sp.design, run, ex.dead_actions if ex.complete else [])
    unbounded = pr is not None and pr.unbounded
    words = {
        "proved": Word.PROVED if unbounded else Word.PROVED_AT_BOUNDS,
        "not proved": Word.NOT_PROVED,
        "unknown": Word.UNKNOWN,
    }
    for p in sp.props:
        kind = kind_of(p.kind)
        v = ex.verdicts[p.name]
        detail = trace_text(ex.traces[p.name]) if p.name in ex.traces else []
        if p.name in ex.loops:  # a liveness failure: its lasso
            detail += loop_text(len(ex.traces[p.name]), ex.loops[p.name])
        if kind is Kind.WITNESS:
            word, detail = (Word.REACHED if v == "reached" else Word.NOT_REACHED), []
        elif v == "fails":
            word = Word.FAILS
        else:
            word = Word.HOLDS
            if pr is not None and p.name in pr.verdicts:
                word = words[pr.verdicts[p.name]]
                if p.name in pr.ctis:
                    detail = cti_lines(pr.ctis[p.name])
                elif p.name in pr.notes:
                    detail = [f"  {pr.notes[p.name]}"]
        fairness = p.fair if kind is Kind.LIVENESS else None  # what a liveness verdict rests on
        out.append(
            _cell(
                sp.model, sp.design, run, p.name, kind, word, detail, ex.seconds, fairness=fairness
            )
        )
    if pr is not None:  # the prover proves typedness too (every slot within its range)
        out.append(
            _cell(
                sp.model,
                sp.design,
                run,
                "in_range",
                None,
                words[pr.verdicts["in_range"]],
                cti_lines(pr.ctis["in_range"]) if "in_range" in pr.ctis else [],
            )
        )
    for hazard in hazards:
        broken = hazard.broken
        detail = [
            ln for n in broken for ln in [f"  breaks {n}:", *trace_text(hazard.run.traces[n])]
        ]
        word = Word.FAILS if broken else Word.HOLDS
        msg = f"breaks {', '.join(broken)}; {hazard.hazard.remedy}" if broken else ""
        out.append(
            _cell(
                sp.model,
                hazard.run.spec.design,
                run,
                hazard.hazard.name,
                Kind.HAZARD,
                word,
                detail,
                hazard.run.seconds,
                msg,
            )
        )
    return out
