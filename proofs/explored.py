"""What the one explorer of the declared models finds (``proofs/explorer.py``), whichever
engine searched: the :class:`Explored` record, the verdict of what an early-stopped run could
not settle, the properties such a run waits for, and where runs report progress by default.
The engines (``explorer.py``'s own, ``native_spec.py``) import it; it imports no engine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_inflight.model.declare import Spec

from .progress import Sink

__all__ = ["NOT_JUDGED", "Explored", "default_sink", "progress_to", "stoppable"]


#: how an error says the search stopped at ``max_states`` (after "more than N")
TOO_MANY = "states: bounds too large"

#: why a run is unreduced when no declared sort has two values to rename (nothing to reduce)
NOTHING = "no declared sort has two or more values to rename"


@dataclass
class Explored:
    """What :func:`explore` found: per property ``holds``/``fails`` (with its shortest trace)
    for ``always``, ``step`` and ``liveness``, ``reached``/``not reached`` for the witnesses;
    auxiliary invariants under ``aux:<name>``."""

    spec: Spec
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    verdicts: dict[str, str] = field(default_factory=dict)
    traces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: per failing liveness property (every engine, without symmetry): the loop of its lasso,
    #: a closed walk from the trace's last state through the component a fair run can stay in
    #: forever (empty: the run stays in that state, no fair move enabled)
    loops: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: per ``reachable`` and ``unstuck`` property: how many of the states kept fail it (from
    #: which no goal state is reachable; goal-less that no move changes)
    away: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)
    complete: bool = True
    #: the engine that ran: ``compiled``, ``concrete``, or why the generator was refused
    engine: str = ""
    #: states where no move is enabled (a run ends there) and the spec's ``final`` does not
    #: hold, and a shortest run to the first
    deadlocks: int = 0
    deadlock_trace: list[dict[str, Any]] | None = None
    #: with ``symmetry``: whether the run kept one state per orbit, and why (or why not)
    symmetry: str = ""

    @property
    def dead_actions(self) -> list[str]:
        return [a for a, n in self.coverage.items() if n == 0]

    @property
    def ok(self) -> bool:
        hazards = {p.name for p in self.spec.props if p.kind == "hazard"}
        return (
            self.complete
            and not self.errors
            and all(
                v in ("holds", "reached")
                for k, v in self.verdicts.items()
                if not k.startswith("aux:") and k not in hazards
            )
        )

    def broken(self) -> list[str]:
        """The properties (not witnesses) that fail."""
        return [p.name for p in self.spec.props if self.verdicts.get(p.name) == "fails"]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.spec.model,
            "design": self.spec.design,
            "bounds": dict(self.spec.bounds),
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
            "engine": self.engine,
            "deadlocks": self.deadlocks,
            "deadlock_trace": self.deadlock_trace,
            **({"symmetry": self.symmetry} if self.symmetry else {}),
            "properties": {
                p.name: {
                    "kind": p.kind,
                    "verdict": self.verdicts[p.name],
                    "doc": p.doc,
                    "trace": self.traces.get(p.name),
                    **({"fair": list(p.fair)} if p.fair else {}),
                    **({"loop": self.loops[p.name]} if p.name in self.loops else {}),
                    **({"away": self.away[p.name]} if p.name in self.away else {}),
                }
                for p in self.spec.props
            },
            "auxiliary": {p.name: self.verdicts["aux:" + p.name] for p in self.spec.aux},
            "coverage": self.coverage,
            "dead_actions": self.dead_actions,
            "errors": self.errors,
            "ok": self.ok,
        }


#: the verdict of a property an early-stopped run (``until``) could not settle
NOT_JUDGED = "not judged"

#: where runs not given a ``progress`` sink report (:func:`progress_to`); none by default
_default_sink: Sink | None = None


def progress_to(sink: Sink | None) -> None:
    """Make ``sink`` (``proofs/progress.py``) the progress of every later run of this process
    that is not given its own (``check`` sets it in the process of the declared models)."""
    global _default_sink
    _default_sink = sink


def default_sink() -> Sink | None:
    """Where a run not given its own ``progress`` sink reports (:func:`progress_to`)."""
    return _default_sink


def stoppable(spec: Spec, until: Iterable[str] | None) -> set[str] | None:
    """The properties an early stop waits for, or None when the run must be whole: no
    ``until``, or one of them is liveness (judged only on the whole graph)."""
    if until is None:
        return None
    names = set(until)
    kinds = {p.name: p.kind for p in spec.props}
    unknown = sorted(names - kinds.keys())
    if unknown:
        raise ValueError(f"until names no property of {spec.model}: {', '.join(unknown)}")
    if not names or any(kinds[n] == "liveness" for n in names):
        return None
    return names
