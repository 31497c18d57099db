"""The explorer's records: one property's verdict on a run (:class:`Verdict`) and one run
(:class:`RunResult`).

They live apart from ``proofs/explore.py`` so that the engines the explorer drives (``native.py``,
``liveness.py``) can build them without importing the explorer back; ``explore.py`` re-exports
both, and users import them from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_inflight.model.config import Config
from mcp_inflight.model.trace import Trace, trace_to_json


@dataclass
class Verdict:
    name: str
    kind: str
    applies: bool
    ok: bool  # invariant/hazard/liveness: holds; witness: reached
    trace: Trace | None = None
    doc: str = ""
    #: liveness: the step of ``trace`` where its loop starts (the rest repeats forever)
    loop_start: int | None = None
    #: witness: the actions of the path it names (reached only on a step of one of them)
    through: tuple[str, ...] = ()
    #: liveness: the actions whose weak fairness it rests on, on this run
    fair: tuple[str, ...] | None = None

    def to_json(self) -> dict:
        key = "reached" if self.kind == "witness" else "holds"
        out = {
            "name": self.name,
            "applies": self.applies,
            key: self.ok,
            "trace": trace_to_json(self.trace),
        }
        if self.kind == "witness":
            out["through"] = list(self.through)
        if self.kind == "liveness":
            out["loop_start"] = self.loop_start
            out["fairness"] = None if self.fair is None else list(self.fair)
        return out


@dataclass
class RunResult:
    cfg: Config
    symmetry: bool
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    verdicts: list[Verdict] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    deadlocks: int = 0
    deadlock_trace: Trace | None = None

    def of(self, kind: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind == kind]

    def verdict(self, name: str) -> Verdict:
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(name)

    @property
    def dead_actions(self) -> list[str]:
        return sorted(a for a, n in self.coverage.items() if n == 0)

    @property
    def ok(self) -> bool:
        return self.complete and all(
            v.ok for v in self.verdicts if v.applies and v.kind != "hazard"
        )

    def to_json(self) -> dict:
        c = self.cfg
        return {
            "design": c.design.name,
            "revision": c.revision,
            "transport": c.transport,
            "client": c.client,
            "bounds": {"ids": c.ids, "requests": c.requests},
            "symmetry": self.symmetry,
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
            "ok": self.ok,
            "invariants": [v.to_json() for v in self.of("invariant")],
            "witnesses": [v.to_json() for v in self.of("witness")],
            "hazards": [v.to_json() for v in self.of("hazard")],
            "liveness": [v.to_json() for v in self.of("liveness")],
            "coverage": dict(self.coverage),
            "dead_actions": self.dead_actions,
            "deadlocks": self.deadlocks,
            "deadlock_trace": trace_to_json(self.deadlock_trace),
        }


# --- the search ---------------------------------------------------------------------------
