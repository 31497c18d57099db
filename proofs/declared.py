"""The one checker of the declared models, behind one façade: :func:`check` explores a
:class:`~mcp_inflight.model.declare.Spec` (``proofs/explorer.py``) and proves it
(``proofs/induction.py``); :func:`hazard` explores a hazard's own run.

Lease, rounds, resume (and every model declared with ``model/declare.py``) are checked here;
the words of the verdicts are the same for all: ``proved`` (for any size of the sorts the model
declares unbounded), ``proved at bounds`` (the induction ran on the model's finite bounds),
``holds (explored)`` (the explorer alone judged it).

Each model is explored by :func:`explore_declared`: on the native engine
(``proofs/native_spec.py``, the rules and the search as C) where a C compiler is present and
the engine does not refuse the spec, else on the explorer's ``auto`` engine; the run's
``engine`` says which ran, and why the native one did not.  Both find the same states,
verdicts and traces (``tests/test_native_spec.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.declare import Hazard, Spec

from .explored import Explored
from .explorer import drive, explore, path_to, transitions, transitions_out
from .induction import Proved, prove
from .stepping import cti_lines, trace_text

__all__ = [
    "Checked",
    "Explored",
    "HazardRun",
    "Proved",
    "check",
    "cti_lines",
    "drive",
    "explore",
    "explore_declared",
    "hazard",
    "path_to",
    "prove",
    "trace_text",
    "transitions",
    "transitions_out",
]


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


def explore_declared(spec: Spec, until: Iterable[str] | None = None) -> Explored:
    """``spec`` explored on the native engine where it runs, else on ``auto`` (the compiled
    engine, or the concrete one where the generator refuses a rule): :attr:`Explored.engine`
    is ``native``, or the engine that ran followed by why the native one did not."""
    from . import native

    if native.available():
        from .native_spec import Refused, explore_native

        try:
            return explore_native(spec, until=until)
        except Refused as e:
            why = f"the native engine refused the spec: {e}"
        except native.BuildError as e:
            why = f"the native engine could not be built: {str(e).splitlines()[0]}"
    else:
        why = "no C compiler for the native engine"
    ex = explore(spec, until=until)
    ex.engine = f"{ex.engine} ({why})"
    return ex


def check(spec: Spec, with_proof: bool = True) -> Checked:
    """Explore ``spec`` (:func:`explore_declared`) and, unless ``with_proof`` is false, prove it."""
    return Checked(explore_declared(spec), prove(spec) if with_proof else None)


@dataclass
class HazardRun:
    """A hazard's own run (its action enabled) and the invariants it breaks there."""

    hazard: Hazard
    run: Explored

    @property
    def broken(self) -> list[str]:
        sp = self.run.spec
        return [
            p.name
            for p in sp.props
            if p.kind in ("always", "step") and self.run.verdicts[p.name] == "fails"
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.hazard.name,
            "doc": self.hazard.doc,
            "remedy": self.hazard.remedy,
            "design": self.run.spec.design,
            "states": self.run.states,
            "seconds": round(self.run.seconds, 3),
            "breaks": [
                {"name": n, "kind": "invariant", "holds": False, "trace": self.run.traces[n]}
                for n in self.broken
            ],
        }


def hazard(h: Hazard, spec: Spec) -> HazardRun:
    """``h``'s run: ``spec`` is the model at the hazard's bound (its action enabled)."""
    return HazardRun(h, explore_declared(spec))
