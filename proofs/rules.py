"""A declared model's rules as the explorer and the symmetry check call them, on one engine.

:func:`rules_of` gives per move ``fire(s) -> (post, output) | None``, per state property
``test(s)``, per move and step property ``test(pre, post, output)`` and ``in_range(s)``, and
what the explorer's search calls: every enabled move at once (``expand``) and every property's
event at once (``events``, ``state_events``); the
rules generated as Python per move (``proofs/compiled_spec.py``), or read through the concrete
logic (``model/declare.py``'s ``take``; the fallback, and the reference the tests compare with).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcp_inflight.model.declare import Move, Spec, out_of_range

from .stepping import take


@dataclass
class Rules:
    """A spec's rules as the explorer calls them, on one engine: per move ``fire(s) -> (post,
    output) | None``; per state property ``test(s)``; per move and step property ``test(pre,
    post, output)``; ``in_range(s)``."""

    name: str
    moves: list[Move]
    fire: list[Callable[[Any], Any] | None]
    state: dict[str, Callable[[Any], Any]]
    step: list[dict[str, Callable[[Any, Any, Any], Any]]]
    in_range: Callable[[Any], bool]
    #: every enabled move's ``(k, post, output)`` on a state at once, where the engine has it
    expand: Callable[[Any], list[tuple[int, Any, Any]]]
    #: per move: the names of the step properties whose event a transition is, at once (a
    #: ``step`` or ``hazard`` property false on it, a ``happens`` witness true)
    events: list[Callable[[Any, Any, Any], list[str]] | None]
    #: the ``always`` properties and auxiliary invariants (``aux:<name>``) false on a state and
    #: the ``sometimes`` witnesses true on it, at once
    state_events: Callable[[Any], list[str]]


ENGINES = ("auto", "compiled", "concrete", "native")


def rules_of(spec: Spec, engine: str) -> Rules:
    """``spec``'s rules on ``engine`` (:data:`ENGINES`, less ``native``, whose rules are C):
    ``compiled``, ``concrete``, or ``auto`` (compiled, or concrete where the generator refuses
    a rule: :attr:`Rules.name` says which and why)."""
    if engine not in ENGINES or engine == "native":
        raise ValueError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    moves = list(spec.moves())
    if engine != "concrete":
        from .compiled_spec import Refused, compile_spec

        try:
            c = compile_spec(spec)
        except Refused as e:
            if engine == "compiled":
                raise
            why = f"concrete (the generator refused a rule: {e})"
        else:
            return Rules(
                "compiled",
                moves,
                c.fire,
                c.state,
                c.step,
                c.in_range,
                c.expand,
                c.events,
                c.state_events,
            )
    else:
        why = "concrete"
    b = spec.logic()
    state: dict[str, Callable[[Any], Any]] = {}
    for p in spec.props:
        if p.scope == "state":
            state[p.name] = partial(_state_test, p.fn, b)
    for p in spec.aux:
        state["aux:" + p.name] = partial(_state_test, p.fn, b)
    step_props = [p for p in spec.props if p.scope == "step"]
    fire: list[Callable[[Any], Any] | None] = [partial(_fire, spec, m, b) for m in moves]
    step: list[dict[str, Callable[[Any, Any, Any], Any]]] = [
        {p.name: partial(_step_test, p, m, b) for p in step_props} for m in moves
    ]
    # the same events as the compiled engine's, each property's test called in turn
    kinds = {p.name: p.kind for p in spec.props}
    watched = [
        (key, test, kinds.get(key) == "sometimes")
        for key, test in state.items()
        if key.startswith("aux:") or kinds[key] in ("always", "sometimes")
    ]
    return Rules(
        why,
        moves,
        fire,
        state,
        step,
        lambda s: out_of_range(spec, s) is None,
        partial(_expand, fire),
        [partial(_events, [(n, t, kinds[n] == "happens") for n, t in k.items()]) for k in step],
        partial(_events, watched),
    )


def _expand(fire: list[Callable[[Any], Any] | None], s: Any) -> list[tuple[int, Any, Any]]:
    out = []
    for k, f in enumerate(fire):
        fired = None if f is None else f(s)
        if fired is not None:
            out.append((k, fired[0], fired[1]))
    return out


def _events(tests: list[tuple[str, Callable[..., Any], bool]], *at: Any) -> list[str]:
    """The names of ``tests`` whose event ``at`` (a state, or a transition's pre, post and
    output) is: where the test is true for those marked true, false for the others."""
    return [name for name, test, when in tests if bool(test(*at)) == when]


def _fire(spec: Spec, m: Move, b: Any, s: Any) -> Any:
    return take(spec, s, m, b)


def _state_test(fn: Callable[..., Any], b: Any, s: Any) -> bool:
    return bool(fn(b, s))


def _step_test(p: Any, m: Move, b: Any, pre: Any, post: Any, out: Any) -> bool:
    return bool(p.on_step(b, pre, post, m, out))
