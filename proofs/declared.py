"""The one checker of the declared models, behind one façade: :func:`check` explores a
:class:`~mcp_inflight.model.declare.Spec` (``proofs/explorer.py``) and proves it
(``proofs/induction.py``, through ``proofs/prove.py``); :func:`hazard` explores a hazard's own run.

Lease, rounds, resume (and every model declared with ``model/declare.py``) are checked here;
the words of the verdicts are the same for all: ``proved`` (for any size of the sorts the model
declares unbounded), ``proved at bounds`` (the induction ran on the model's finite bounds),
``holds (explored)`` (the explorer alone judged it).

Each model is explored by the one entry point, :func:`~.explorer.explore`, on its ``fastest``
engine: native (``proofs/native_spec.py``, the rules and the search as C) where a C compiler
is present and the engine does not refuse the spec, else the explorer's ``auto`` engine; the
run's ``engine`` says which ran, and why the native one did not.  Both find the same states,
verdicts and traces (``tests/test_native_spec.py``).  It is proved by the one entry point of
proof, :func:`~.prove.prove`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.declare import Hazard, Spec

from .explored import Explored
from .explorer import explore
from .induction import Proved
from .prove import prove
from .stepping import cti_lines, trace_text
from .walk import drive, path_to, transitions, transitions_out

__all__ = [
    "Checked",
    "Explored",
    "HazardRun",
    "Proved",
    "check",
    "cti_lines",
    "drive",
    "explore",
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


def check(spec: Spec, with_proof: bool = True) -> Checked:
    """Explore ``spec`` on the fastest engine that runs it and, unless ``with_proof`` is false,
    prove it."""
    return Checked(explore(spec, engine="fastest"), prove(spec) if with_proof else None)


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
    return HazardRun(h, explore(spec, engine="fastest"))
