"""One step of the model on a concrete state: guard, output, writes, successor, in one place.

Every reader that walks concrete states (the explorer's interpreted engine, the prover's replay
of a bounded trace, the drawings, the tests) takes a step here, so the sequence "the guard
holds, the output is computed on the pre-state, the writes are applied, the clock is
renumbered" is written once.  The runtime (``impl/generated.py``) generates the same sequence
as code and is tested against this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from .config import Config
from .logic import Concrete, apply_writes
from .session import Action, actions_for
from .session_state import State, canonical_clock, domains, initial


@dataclass(frozen=True)
class Move:
    """An action with its arguments fixed: instance ``r`` and, for a send, id ``i``."""

    action: Action
    r: int
    i: int | None = None

    @property
    def args(self) -> dict[str, int]:
        return {"r": self.r} if self.i is None else {"r": self.r, "i": self.i}


@dataclass(frozen=True)
class Transition:
    """A move taken from ``pre``: its outputs (``Action.output``, read on ``pre``) and ``post``
    (clock-canonical, as every reader stores states)."""

    move: Move
    pre: State
    post: State
    out: dict[str, Any]

    @property
    def action(self) -> Action:
        return self.move.action

    @property
    def args(self) -> dict[str, int]:
        return self.move.args


@cache
def moves(cfg: Config) -> tuple[Move, ...]:
    """Every (action, r, i) of ``cfg``, in the order of ``actions_for``, then r, then i."""
    out = []
    for a in actions_for(cfg):
        for r in range(cfg.requests):
            for i in range(cfg.ids) if "i" in a.params else (None,):
                out.append(Move(a, r, i))
    return tuple(out)


def backend(cfg: Config) -> Concrete:
    """The concrete logic over ``cfg``'s bounded domains."""
    return Concrete(domains(cfg))


def start(cfg: Config) -> State:
    """The initial state, clock-canonical."""
    return canonical_clock(cfg, initial(cfg))


def enabled(
    cfg: Config, s: State, move: Move, b: Concrete | None = None, skip: tuple[str, ...] = ()
) -> bool:
    """``move``'s guard on ``s`` (the source set first, the cheap test); ``skip``: without the
    conditions named (``Action.guard``'s)."""
    a = move.action
    src = a.sources(cfg)
    if src is not None and s.life[move.r] not in src:
        return False
    return bool(a.guard(b or backend(cfg), s, cfg, move.r, move.i, skip=skip))


def take(cfg: Config, s: State, move: Move, b: Concrete | None = None) -> Transition | None:
    """``move`` from ``s`` if its guard holds, else None."""
    b = b or backend(cfg)
    if not enabled(cfg, s, move, b):
        return None
    a, r, i = move.action, move.r, move.i
    out = a.output(b, s, cfg, r, i)
    post = canonical_clock(cfg, apply_writes(s, a.effect(b, s, cfg, r, i, out)))
    return Transition(move, s, post, out)


def run_of(cfg: Config, named: Iterable[tuple[str, int, int | None]]) -> list[Transition]:
    """The transitions of the moves ``(action name, r, i)`` taken in order from the initial
    state; ``ValueError`` at the first one not enabled where it stands."""
    from .session import ACTION

    s, run = start(cfg), []
    for n, (name, r, i) in enumerate(named):
        t = take(cfg, s, Move(ACTION[name], r, i))
        if t is None:
            raise ValueError(f"move {n}: {name}({r}, {i}) is not enabled on {cfg.label}")
        run.append(t)
        s = t.post
    return run


def successors(cfg: Config, s: State, b: Concrete | None = None) -> Iterator[Transition]:
    """Every enabled move from ``s`` with its outputs and successor, in :func:`moves` order."""
    b = b or backend(cfg)
    for m in moves(cfg):
        t = take(cfg, s, m, b)
        if t is not None:
            yield t
