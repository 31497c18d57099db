"""The checkers' records: the explorer's (one property's verdict on a run, :class:`Verdict`;
one run, :class:`RunResult`) and the prover's (one property's proof, :class:`Proof`; one
configuration's, :class:`ProveResult`).

They live apart from ``proofs/explorer.py`` so that what the explorer drives
(``session_run.py``) can build them without importing the explorer back; ``prove.py``
re-exports the prover's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_inflight.model.config import Config
from mcp_inflight.model.trace import CounterexampleToInduction, Trace, trace_to_json


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

    def to_json(self) -> dict[Any, Any]:
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
    coverage: dict[Any, Any] = field(default_factory=dict)
    deadlocks: int = 0
    deadlock_trace: Trace | None = None
    #: the engine that searched, and for the native one how its C was built (the text report
    #: shows it beside the run's time; not in the JSON, which is the same whatever engine ran)
    engine: str = ""
    #: what went wrong in the checker rather than in the model's properties (a value out of
    #: its declared range, a reduced trace that does not replay): any makes the run fail
    errors: list[str] = field(default_factory=list)

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
        return (
            self.complete
            and not self.errors
            and all(v.ok for v in self.verdicts if v.applies and v.kind != "hazard")
        )

    def to_json(self) -> dict[Any, Any]:
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
            "errors": list(self.errors),
        }


# --- the search ---------------------------------------------------------------------------


# --- the prover's records (``proofs/prove.py``) ---------------------------------------


@dataclass
class Proof:
    """The prover's verdict on one property of one configuration.

    ``status``: ``proved`` (inductive, for any number of ids and instances), ``trace`` (a
    reachable violation within the depth), ``cti`` (not proved inductive and no violation within
    the depth), ``unknown`` (the solver gave up), ``n/a`` (does not apply to the profile).
    """

    name: str
    kind: str
    applies: bool
    status: str = "n/a"
    seconds: float = 0.0
    auxiliary: list[Any] = field(default_factory=list)
    cti: CounterexampleToInduction | None = None
    trace: Trace | None = None
    depth: int | None = None
    note: str = ""
    doc: str = ""

    @property
    def method(self) -> str | None:
        if not self.applies:
            return None
        return "induction" if self.status == "proved" else "bmc"

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    @property
    def holds(self) -> bool | None:
        """True: proved, or no violation within the depth; False: a trace; None: unknown."""
        if self.status == "unknown":
            return None
        return self.status != "trace"

    def to_json(self) -> dict[Any, Any]:
        return {
            "method": self.method,
            "proved": self.proved,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "auxiliary": list(self.auxiliary),
            "cti": None if self.cti is None else self.cti.to_json(),
            "trace": trace_to_json(self.trace),
            "depth": self.depth,
            **({"note": self.note} if self.note else {}),
        }


@dataclass
class ProveResult:
    cfg: Config
    depth: int
    proofs: list[Proof] = field(default_factory=list)
    seconds: float = 0.0
    queries: int = 0
    slowest: tuple[Any, ...] = (0.0, "")
    #: read from the cache (``seconds`` and ``queries`` are those of the run that stored it)
    cached: bool = False
    #: actions whose guard cannot hold in any state where the proved invariants hold (they
    #: never fire: what the properties say about them holds vacuously), and those the solver
    #: could not decide
    dead: list[Any] = field(default_factory=list)
    #: invariants that fold to true before the solver sees them (on every action, for a step
    #: invariant): they cannot fail, whatever the design
    vacuous: list[Any] = field(default_factory=list)
    #: typedness, proved rather than assumed: every slot keeps a value of its field's range
    #: after every action from a state where the proved invariants hold (every verdict above
    #: rests on it); None in a result read from an older cache entry
    in_range: Proof | None = None

    def of(self, kind: str) -> list[Proof]:
        return [p for p in self.proofs if p.kind == kind]

    def proof(self, name: str) -> Proof:
        for p in self.proofs:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def ok(self) -> bool:
        typed = self.in_range is None or self.in_range.proved
        return typed and all(p.proved for p in self.of("invariant") if p.applies)

    def to_json(self) -> dict[str, Any]:
        c = self.cfg

        def entry(p: Proof) -> dict[str, Any]:
            return {
                "name": p.name,
                "applies": p.applies,
                "proof": p.to_json() if p.applies else None,
            }

        return {
            "design": c.design.name,
            "revision": c.revision,
            "transport": c.transport,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "queries": self.queries,
            "slowest_query": {"seconds": round(self.slowest[0], 3), "query": self.slowest[1]},
            **({"cached": True} if self.cached else {}),
            "ok": self.ok,
            "invariants": [entry(p) for p in self.of("invariant")],
            **({} if self.in_range is None else {"in_range": entry(self.in_range)}),
            "hazards": [entry(p) for p in self.of("hazard")],
            "auxiliary": [dict(entry(p), doc=p.doc) for p in self.of("auxiliary")],
        }
