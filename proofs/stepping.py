"""Concrete steps of a declared model (``model/declare.py``'s :class:`Spec`) and their rendering.

The one checker's explorer, prover and the runtime agreement tests step a declared model here:
a move's guard, output and writes evaluated by the concrete logic of ``model/logic.py``, and
traces and states rendered from the declaration's names (each variable's ``show`` and ``key``,
each action's ``story`` or ``tell``).  Nothing here states a rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from mcp_inflight.model.declare import (
    Move,
    Spec,
    changes,
    describe,
    loop_header,
    render_step,
    step_lines,
)
from mcp_inflight.model.logic import Concrete

__all__ = [
    "changes",
    "cti_lines",
    "describe",
    "move",
    "moves",
    "render_step",
    "run_moves",
    "successors",
    "take",
    "trace_text",
]


def moves(spec: Spec) -> tuple[Move, ...]:
    """Every move of ``spec``: each action with each tuple of its arguments, in declared order."""
    return tuple(spec.moves())


def move(spec: Spec, name: str, **args: int) -> Move:
    """The move ``name(**args)`` (arguments in the action's declared order)."""
    a = spec.act(name)
    return Move(a, tuple((p, args[p]) for p, _ in a.params))


def take(spec: Spec, s: Any, m: Move, b: Concrete) -> tuple[Any, Mapping[str, Any]] | None:
    """``(post, output)`` of ``m`` from ``s`` when its guard holds, else None."""
    a, kw = m.act, m.kw
    if not a.guard(b, s, **kw):
        return None
    out = a.outputs(b, s, **kw)
    return spec.post(s, a.effect(b, s, **kw)), out


def successors(
    spec: Spec, s: Any, b: Concrete, table: Iterable[Move] | None = None
) -> Iterator[tuple[Move, Any, Mapping[str, Any]]]:
    """``(move, post, output)`` for every enabled move from ``s``."""
    for m in spec.moves() if table is None else table:
        t = take(spec, s, m, b)
        if t is not None:
            yield m, t[0], t[1]


def run_moves(spec: Spec, named: Iterable[tuple[str, dict[str, int]]]) -> list[dict[str, Any]]:
    """The rendered trace of the moves ``(action, args)`` taken in order from the initial
    state; ``ValueError`` at the first one not enabled."""
    b = spec.logic()
    s = spec.initial()
    out = []
    for n, (name, args) in enumerate(named):
        m = move(spec, name, **args)
        t = take(spec, s, m, b)
        if t is None:
            raise ValueError(f"move {n}: {name}({args}) is not enabled")
        out.append(render_step(spec, m, s, t[0], t[1]))
        s = t[0]
    return out


def trace_text(steps: list[dict[str, Any]]) -> list[str]:
    """A rendered trace as text: each step's story, then its changes."""
    out: list[str] = []
    for n, st in enumerate(steps, 1):
        out.extend(step_lines(n, st))
    return out


def loop_text(start: int, loop: list[dict[str, Any]]) -> list[str]:
    """The loop of a liveness failure's lasso, after a trace of ``start`` steps: the steps a
    fair run repeats for ever, numbered on from the trace (none: it stays in the trace's last
    state, where no move it is owed is enabled)."""
    if not loop:
        return ["  then it stays there for ever: no move it is owed is enabled"]
    out = [loop_header(start + 1, start + len(loop))]
    for n, st in enumerate(loop, start + 1):
        out.extend(step_lines(n, st))
    return out


def cti_lines(cti: Mapping[str, Any]) -> list[str]:
    """The text of a counterexample to induction: the two states and the move."""
    if cti.get("pre") is None:  # in the initial state, or no small universe shows it
        return [f"  {cti['text']}"]
    out = [f"  counterexample to induction: {cti['text']}", "    pre-state:"]
    out += [f"      {k} = {v}" for k, v in cti["pre"].items()]
    out.append(f"    move: {cti['story']}")
    out.append(
        "    changes: " + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in cti["changes"].items())
        if cti["changes"]
        else "    changes: none"
    )
    return out
