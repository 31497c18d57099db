"""Ghost and obligation discipline: the server's rules read only what a server can see.

A ghost field (who really sent a request, what the client has seen, which request a message
meant) exists so that the properties can speak; no server can read it.  A rule that reads one
makes the checked model a server that cannot be built: the runtime, which reads ghosts as their
defaults, silently diverges from it, and a hazard the protocol allows can come out "proved".
Likewise an *obligation* (a condition of an action that the server does not evaluate, because
only the sender can keep it) must be one the server could not evaluate: one that reads a ghost
or a wire field.  An obligation that reads server state only is a server check mislabelled as
the sender's; the runtime skips it, and admits what the model refuses.

Both are judged here by evaluation, on states the explorer's step reaches from the initial state
(breadth first, up to a few hundred per run), through a state that records every field read and
a logic that evaluates every quantifier over its whole domain (so no read hides behind a short
cut):

* a server-side (and, for the session model, wire-side) action's guard as the server evaluates
  it and its output read no ghost; its effect's writes to real fields are the same whatever the
  ghosts hold (a write *to* a ghost is bookkeeping, allowed);
* each obligation reads at least one ghost or wire field.

The result is one cell per model x design x run (``proofs/outcome.py``), failing with the rule
and the field named.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from mcp_inflight.model.logic import Concrete

from .outcome import Cell, Word

SAMPLE = 400


class _Reads:
    """A state that records the names of the fields read from it."""

    __slots__ = ("_s", "_log")

    def __init__(self, s: Any, log: set[str]):
        object.__setattr__(self, "_s", s)
        object.__setattr__(self, "_log", log)

    def __getattr__(self, name: str) -> Any:
        self._log.add(name)
        return getattr(self._s, name)


class _Eager(Concrete):
    """The concrete logic with quantifiers that visit every value (no short cut)."""

    def ForAll(self, sort: str, fn: Callable[[int], bool]) -> bool:
        return all([bool(fn(v)) for v in self.domains[sort]])

    def Exists(self, sort: str, fn: Callable[[int], bool]) -> bool:
        return any([bool(fn(v)) for v in self.domains[sort]])


def _bfs(start: Any, successors: Callable[[Any], Iterable[Any]], limit: int) -> list[Any]:
    seen = {start}
    queue = deque([start])
    out = [start]
    while queue and len(out) < limit:
        for post in successors(queue.popleft()):
            if post not in seen:
                seen.add(post)
                out.append(post)
                queue.append(post)
    return out


def _flip(s: Any, ghosts: list[str]) -> Iterator[Any]:
    """``s`` with each ghost field changed in turn (a flag flipped, a value moved on)."""
    for g in ghosts:
        v = getattr(s, g)
        if isinstance(v, tuple):
            yield s._replace(**{g: tuple(_other(x) for x in v)})
        else:
            yield s._replace(**{g: _other(v)})


def _other(x: Any) -> Any:
    if isinstance(x, bool):
        return not x
    return int(x) + 1 if int(x) < 1 else int(x) - 1


def _real(writes: list[Any], ghosts: set[str]) -> list[tuple[Any, ...]]:
    return [(w.field, w.key, w.value) for w in writes if w.when and w.field not in ghosts]


class _Judge:
    def __init__(self, ghosts: set[str], wire: set[str]):
        self.ghosts, self.wire = ghosts, wire
        self.problems: list[str] = []
        self.obligation_reads: dict[str, set[str]] = {}

    def reads(self, what: str, fn: Callable[[Any], Any], s: Any) -> None:
        log: set[str] = set()
        fn(_Reads(s, log))
        bad = sorted(log & self.ghosts)
        if bad and not any(p.startswith(what) for p in self.problems):
            self.problems.append(f"{what} reads the ghost field {', '.join(bad)}")

    def same_writes(self, what: str, effect: Callable[[Any], list[Any]], s: Any) -> None:
        base = _real(effect(s), self.ghosts)
        for other in _flip(s, sorted(self.ghosts)):
            if _real(effect(other), self.ghosts) != base:
                if not any(p.startswith(what) for p in self.problems):
                    self.problems.append(f"{what} writes real fields from ghost fields")
                return

    def obligation(self, name: str, fn: Callable[[Any], Any], s: Any) -> None:
        log = self.obligation_reads.setdefault(name, set())
        fn(_Reads(s, log))

    def finish(self) -> list[str]:
        out = list(self.problems)
        for name, log in self.obligation_reads.items():
            if not log & (self.ghosts | self.wire):
                out.append(
                    f"obligation {name} reads only server state ({', '.join(sorted(log))}): a "
                    "server can evaluate it, so it is a server check, not the sender's obligation"
                )
        return out


def _cell(model: str, design: str, run: str, problems: list[str], states: int) -> Cell:
    ok = not problems
    return Cell(
        model,
        design,
        run,
        "server_reads_no_ghost",
        None,
        Word.HOLDS if ok else Word.FAILS,
        ok,
        f"judged on {states} states" if ok else "; ".join(problems),
        [f"  {p}" for p in problems],
    )


# --- the models ---------------------------------------------------------------------------------


def _read(fn: Callable[..., Any], b: Any, cfg: Any, r: Any, i: Any) -> Callable[[Any], Any]:
    """``fn`` of a session rule, read on a state ``x`` with the move's arguments fixed."""
    return lambda x: fn(b, x, cfg, r, i)


def _effect_of(a: Any) -> Callable[..., Any]:
    """A session action's effect as a rule of ``(b, s, cfg, r, i)``: its writes given its output."""
    return lambda b, x, cfg, r, i: a.effect(b, x, cfg, r, i, a.output(b, x, cfg, r, i))


def _read_move(fn: Callable[..., Any], b: Any, kw: dict[str, int]) -> Callable[[Any], Any]:
    """``fn`` of a declared action, read on a state ``x`` with the move's arguments fixed."""
    return lambda x: fn(b, x, **kw)


def session(cfg: Any, limit: int = SAMPLE) -> Cell:
    from mcp_inflight.model import step
    from mcp_inflight.model.session_conditions import CONDITIONS
    from mcp_inflight.model.session_state import FIELDS

    ghosts = {f.name for f in FIELDS if f.ghost}
    wire = {f.name for f in FIELDS if f.wire}
    b = _Eager(step.backend(cfg).domains)
    states = _bfs(step.start(cfg), lambda s: [t.post for t in step.successors(cfg, s)], limit)
    j = _Judge(ghosts, wire)
    for s in states:
        for m in step.moves(cfg):
            a, r, i = m.action, m.r, m.i
            for name in a.obligations:
                j.obligation(name, _read(CONDITIONS[name], b, cfg, r, i), s)
            if a.side == "client":
                continue
            j.reads(f"{a.name}'s guard", _read(partial(a.guard, server=True), b, cfg, r, i), s)
            j.reads(f"{a.name}'s output", _read(a.output, b, cfg, r, i), s)
            if a.guard(b, s, cfg, r, i, server=True):
                j.same_writes(f"{a.name}'s effect", _read(_effect_of(a), b, cfg, r, i), s)
    return _cell("session", cfg.design.name, cfg.label, j.finish(), len(states))


def small(spec: Any, limit: int = SAMPLE) -> Cell:

    ghosts = {v.name for v in spec.vars if v.ghost}
    b = _Eager(spec.domains)
    moves = list(spec.moves())

    def succ(s: Any) -> list[Any]:
        return [
            spec.post(s, m.act.effect(b, s, **m.kw)) for m in moves if m.act.guard(b, s, **m.kw)
        ]

    states = _bfs(spec.initial(), succ, limit)
    j = _Judge(ghosts, set())
    for s in states:
        for m in moves:
            if m.act.side != "server":
                continue
            j.reads(f"{m.name}'s guard", _read_move(m.act.guard, b, m.kw), s)
            if m.act.output is not None:
                j.reads(f"{m.name}'s output", _read_move(m.act.outputs, b, m.kw), s)
            if m.act.guard(b, s, **m.kw):
                j.same_writes(f"{m.name}'s effect", _read_move(m.act.effect, b, m.kw), s)
    return _cell(spec.model, spec.design, spec.bounds_label(), j.finish(), len(states))
