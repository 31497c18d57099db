"""The small state interface every guard and effect of the model is written against.

All of the model's rules (model/session.py, model/properties.py) are plain Python functions
that read the pre-state through indexing (``s.life[r]``, ``s.inflight[s.rid[r]]``), combine
values with ``==``, ``!=``, ``<``, ``+`` and the operations of a *logic* object ``b``
(``b.And``, ``b.Or``, ``b.Not``, ``b.Implies``, ``b.Ite``, ``b.In``, ``b.ForAll``,
``b.Exists``), and return effects as lists of :class:`Write`.  They never branch with a Python
``if`` on a state value, so the same function can be read by more than one backend:

* :class:`Concrete` evaluates to Python values (the explorer and the runtime core);
* a symbolic backend (z3 terms) builds formulas from the very same calls (the prover).

Python ``if`` is allowed only on the configuration (design, revision, transport), which is
static for a run.

Semantics of a list of writes: every value and key is computed from the *pre*-state; the writes
are then applied in list order (a later write to the same slot wins); a write whose ``when`` is
false is skipped.  A key that may be :data:`NONE` must be masked by ``when``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: The "no instance" value of a registry slot or ghost (an optional instance reference).
NONE = -1


class ModelError(TypeError):
    """A rule of the model is written in a way no backend can read the same: Python's ``and``,
    ``or``, ``not``, ``if`` (or a comparison tested for its truth) on a state value, which the
    concrete backend evaluates and a symbolic one cannot.  The message names the rule and its
    line (:func:`rule_site`)."""


def rule_site() -> str:
    """Where the rule that asked stands: the innermost frame of the caller's stack outside the
    backends (this module, ``model/codegen.py``, the checkers, z3), as ``function
    (folder/file.py:line)``; ``"an unknown rule"`` when there is none."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    skip = {os.path.join(here, "logic.py"), os.path.join(here, "codegen.py")}
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        parts = path.split(os.sep)
        backend = path in skip or "z3" in parts or "proofs" in parts
        if not backend:
            where = os.path.join(*parts[-2:])
            return f"{f.f_code.co_name} ({where}:{f.f_lineno})"
        f = f.f_back  # type: ignore[assignment]
    return "an unknown rule"


def truth_refused(term: object) -> ModelError:
    """The error for Python's truth test of the symbolic or generated value ``term``."""
    return ModelError(
        f"model error in {rule_site()}: Python's and/or/not/if tested the truth of a state "
        f"value ({term}); rules combine values with b.And, b.Or, b.Not, b.Implies, b.Ite "
        "(model/logic.py), and branch with Python only on the configuration"
    )


#: A value of the interface: a Python value (concrete), an expression (generated), a z3 term.
Value = Any
#: What an action writes, by message kind: ``(stream, goes_out)`` (``model.session.Action``).
Outputs = dict[str, tuple[Any, Any]]


@runtime_checkable
class Logic(Protocol):
    """The operations every backend gives the model's rules (concrete, generated, symbolic)."""

    symbolic: bool

    def And(self, *xs: Any) -> Any: ...
    def Or(self, *xs: Any) -> Any: ...
    def Not(self, x: Any) -> Any: ...
    def Implies(self, a: Any, c: Any) -> Any: ...
    def Ite(self, c: Any, a: Any, other: Any) -> Any: ...
    def In(self, x: Any, values: Iterable[Any]) -> Any: ...
    def ForAll(self, sort: str, fn: Callable[[Any], Any]) -> Any: ...
    def Exists(self, sort: str, fn: Callable[[Any], Any]) -> Any: ...


@dataclass(frozen=True, slots=True)
class Write:
    """Set ``field[key]`` (``key is None`` for a scalar field) to ``value`` when ``when`` holds."""

    field: str
    key: Any
    value: Any
    when: Any = True


class Concrete:
    """Evaluates the interface on concrete values over finite domains (the explorer's backend).

    ``domains`` maps a sort name (``"inst"``, ``"id"``) to the iterable of its values; the
    quantifiers range over it.
    """

    symbolic = False

    def __init__(self, domains: Mapping[str, Iterable[int]]):
        self.domains = {k: tuple(v) for k, v in domains.items()}

    @staticmethod
    def And(*xs: bool) -> bool:
        for x in xs:
            if not x:
                return False
        return True

    @staticmethod
    def Or(*xs: bool) -> bool:
        for x in xs:
            if x:
                return True
        return False

    @staticmethod
    def Not(x: bool) -> bool:
        return not x

    @staticmethod
    def Implies(a: bool, c: bool) -> bool:
        return (not a) or bool(c)

    @staticmethod
    def Ite(c: bool, a: Any, other: Any) -> Any:
        return a if c else other

    @staticmethod
    def In(x: Any, values: Iterable[Any]) -> bool:
        return x in values

    def ForAll(self, sort: str, fn: Callable[[int], bool]) -> bool:
        for v in self.domains[sort]:
            if not fn(v):
                return False
        return True

    def Exists(self, sort: str, fn: Callable[[int], bool]) -> bool:
        for v in self.domains[sort]:
            if fn(v):
                return True
        return False


def apply_writes(state: Any, writes: list[Write]) -> Any:
    """Apply ``writes`` (values already computed from ``state``) to a concrete state.

    ``state`` is a namedtuple whose keyed fields are tuples.  Returns a new namedtuple.
    """
    changed: dict[str, Any] = {}
    for w in writes:
        if not w.when:
            continue
        if w.key is None:
            changed[w.field] = w.value
            continue
        if w.key < 0:
            raise ValueError(f"write to {w.field}[{w.key}]: an unmasked NONE key (model bug)")
        cur = changed.get(w.field)
        if cur is None:
            cur = list(getattr(state, w.field))
            changed[w.field] = cur
        cur[w.key] = w.value
    if not changed:
        return state
    return state._replace(**{k: tuple(v) if isinstance(v, list) else v for k, v in changed.items()})
