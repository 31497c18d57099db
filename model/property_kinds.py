"""What a property of the session model is: its record, its kinds and their constructors.


Each property is a predicate written against the state interface (``model/logic.py``):

* ``scope="state"``: ``fn(b, s, c)`` must hold in every reachable state (invariant, hazard) or
  in some reachable state (witness);
* ``scope="step"``: ``fn(b, pre, post, c, action, r, i, out)`` must hold on every transition,
  where ``out`` is the action's output (where each message it writes goes, ``Action.output``);
  it is written so that it is vacuously true for actions it does not speak of.

A witness names the path its name says (``through``: the actions of that path).  It is reached
only on a step of one of those actions that makes it true (false before the step, true after):
reached by another path, it says nothing about the path it names (``duplicate_refused`` reached
through ``reject`` at the session's end says nothing of ``refuse``).  The explorers judge such a
witness on transitions (:func:`judged`), a check as cheap as a step invariant, rather than on
whole traces.

``applies(c)`` says whether the property means anything on a profile; one that does not apply
is reported as such and counts neither way.

Each invariant and hazard says whose requests it protects (``protects``: every sender's, the
client's alone, or no request's but the server's own registries), and each hazard which sender
it needs to be reached (``needs``): the invariants hold with either client (``Config.client``);
a hazard is the protocol's only given the sender it names.

The properties themselves, each with the predicate that defines it, are the table of
``model/properties.py``; the auxiliary invariants the prover needs are in ``model/auxiliary.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from .config import Config
from .logic import Logic, Outputs
from .session import ACTION, Action

#: Whose requests a property protects.
EVERY_SENDER = "every sender's requests"  # the client's and the rogue's alike
CLIENT = "the client's requests"  # the rogue's may be refused, cancelled or lost
SERVER = "the server's registries"  # no request's: no leak, whoever sent the requests
PROTECTS = (EVERY_SENDER, CLIENT, SERVER)


@dataclass(frozen=True)
class Property:
    name: str
    kind: str  # "invariant" | "witness" | "hazard"
    scope: str  # "state" | "step"
    fn: Callable[..., Any]
    applies: Callable[[Config], bool]
    doc: str
    protects: str = ""  # one of PROTECTS (invariants and hazards)
    needs: str = ""  # hazards: the sender without which the protocol cannot produce the trace
    #: witnesses: the actions of the path the witness names; it is reached only on a step of
    #: one of them that makes it true (``judged``)
    through: tuple[str, ...] = ()


def _always(c: Config) -> bool:
    return True


def _property(
    kind: str,
    fn: Callable[..., Any],
    scope: str,
    applies: Callable[[Config], bool],
    protects: str = "",
    needs: str = "",
) -> Property:
    """A property named after ``fn``, documented by its docstring (whitespace folded)."""
    if not fn.__doc__:
        raise ValueError(f"property {fn.__name__} has no docstring")
    if kind in ("invariant", "hazard") and protects not in PROTECTS:
        raise ValueError(f"{kind} {fn.__name__}: protects must be one of {PROTECTS}")
    if kind == "hazard" and not needs:
        raise ValueError(f"hazard {fn.__name__} must name the sender it needs")
    doc = " ".join(fn.__doc__.split())
    return Property(fn.__name__, kind, scope, fn, applies, doc, protects, needs)


def invariant(
    fn: Callable[..., Any],
    scope: str = "state",
    applies: Callable[[Config], bool] = _always,
    protects: str = EVERY_SENDER,
) -> Property:
    """Must hold in every reachable state (``scope="state"``) or on every transition (``"step"``)."""
    return _property("invariant", fn, scope, applies, protects)


def witness(
    fn: Callable[..., Any], through: tuple[str, ...], applies: Callable[[Config], bool] = _always
) -> Property:
    """Must be made true, in some reachable run, by a step of one of the actions ``through``
    (the path its name says), so that no invariant holds vacuously.  Not applicable where none
    of those actions is part of the design or profile (``Action.applies``: no refusal in
    ``unguarded``), where no path could reach it."""
    if not through:
        raise ValueError(f"witness {fn.__name__} must name the actions of its path")
    unknown = [a for a in through if a not in ACTION]
    if unknown:
        raise ValueError(f"witness {fn.__name__}: no action {', '.join(unknown)}")

    def on_path(c: Config) -> bool:
        return applies(c) and any(ACTION[a].applies(c) for a in through)

    return replace(_property("witness", fn, "state", on_path), through=tuple(through))


def reached_on_step(p: Property) -> Callable[..., Any]:
    """The step form of witness ``p``: a step of one of its actions ``through`` from a state where
    it does not hold to one where it does."""
    through = p.through

    def step(
        b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
    ) -> Any:
        if action.name not in through:
            return False
        return b.And(b.Not(p.fn(b, pre, c)), p.fn(b, post, c))

    step.__name__ = p.name
    return step


def judged(properties: Iterable[Property]) -> list[Property]:
    """The properties as the explorers judge them: a witness with a path becomes a witness of
    scope ``step``, whose ``fn`` (``reached_on_step``) is true on a step that reaches it (a step
    witness's event is the step where ``fn`` holds; a step invariant's, where it fails)."""
    return [
        replace(p, scope="step", fn=reached_on_step(p))
        if p.kind == "witness" and p.through and p.scope == "state"
        else p
        for p in properties
    ]


def hazard(
    fn: Callable[..., Any],
    needs: str,
    scope: str = "step",
    applies: Callable[[Config], bool] = _always,
    protects: str = CLIENT,
) -> Property:
    """Checked and reported with its trace; a failure is the protocol's given the sender it
    ``needs``, and fails no check."""
    return _property("hazard", fn, scope, applies, protects, needs)


def auxiliary(fn: Callable[..., Any], applies: Callable[[Config], bool] = _always) -> Property:
    """A fact about states that helps the invariants be inductive (``model/auxiliary.py``)."""
    return _property("auxiliary", fn, "state", applies)
