"""The renaming group of the session model's symmetry check and the check's result, shared by
its two evaluations (``proofs/symmetry.py``, the reference, and ``proofs/symmetry_flat.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.config import Config

from .declared_symmetry import Broken

__all__ = ["Renaming", "SymmetryResult", "generators"]


@dataclass(frozen=True)
class Renaming:
    """A permutation of instances (``inst[r]`` is r's new name) and of ids (``ids[k]``)."""

    inst: tuple[int, ...]
    ids: tuple[int, ...]

    def __str__(self) -> str:
        parts = []
        if list(self.inst) != sorted(self.inst):
            parts.append("instances " + _cycle(self.inst))
        if list(self.ids) != sorted(self.ids):
            parts.append("ids " + _cycle(self.ids))
        return " and ".join(parts) or "identity"


def _cycle(p: tuple[int, ...]) -> str:
    return ", ".join(f"{k}->{v}" for k, v in enumerate(p) if k != v)


def generators(cfg: Config) -> list[Renaming]:
    """A swap and a rotation of instances, and of ids (where there are two or more)."""
    n, m = cfg.requests, cfg.ids
    same_i, same_d = tuple(range(n)), tuple(range(m))
    out = []

    def of_instances(p: tuple[int, ...]) -> Renaming:
        return Renaming(p, same_d)

    def of_ids(p: tuple[int, ...]) -> Renaming:
        return Renaming(same_i, p)

    for size, make in ((n, of_instances), (m, of_ids)):
        if size >= 2:
            out.append(make((1, 0) + tuple(range(2, size))))
        if size >= 3:
            out.append(make(tuple(range(1, size)) + (0,)))
    return out


@dataclass(frozen=True)
class SymmetryResult:
    label: str
    states: int  # states checked
    complete: bool  # every reachable state was checked
    broken: Broken | None

    @property
    def ok(self) -> bool:
        return self.broken is None

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.label,
            "states_checked": self.states,
            "complete": self.complete,
            "ok": self.ok,
            "broken": None if self.broken is None else self.broken.text(),
        }
