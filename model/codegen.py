"""The code-generating backend of the state interface: the model's rules as source text.

The guards, effects, outputs and properties of ``model/`` are Python functions over a logic
object ``b`` and a state read by indexing (``model/logic.py``).  :class:`Gen` is a backend for
them beside :class:`~mcp_inflight.model.logic.Concrete` and the symbolic one of the prover: its
values are *expressions* (:class:`Expr`), source text in some target language.  Calling a rule
once with ``Gen`` for a fixed configuration and fixed arguments yields the source of that rule
specialised to them (quantifiers unrolled over finite domains, configuration tests and constants
folded away).

Three readers build on it, each with its own view of the state (what ``s.life[r]`` reads):
the one explorer's generated rules (``proofs/compiled_spec.py``, ``proofs/native_spec_c.py``), the runtime core's tables
(``impl/generated.py``) and the SPIN benchmark's Promela variables (``bench/promela.py``, with
:data:`PROMELA` syntax).  This module knows no field and no rule; it turns the interface's
operations into text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .logic import truth_refused


@dataclass(frozen=True)
class Syntax:
    """How a target language spells the interface's operations."""

    true: str
    false: str
    conj: str  # " and "
    disj: str  # " or "
    neg: str  # "(not {x})"
    ite: str  # "({a} if {c} else {b})"
    membership: bool  # ``x in (a, b)`` exists (else a disjunction of equalities)


PYTHON = Syntax("True", "False", " and ", " or ", "(not {x})", "({a} if {c} else {b})", True)
PROMELA = Syntax("1", "0", " && ", " || ", "!({x})", "({c} -> {a} : {b})", False)


def lift(x: object, syntax: Syntax = PYTHON) -> str:
    """Source for a value of the interface: an expression, a bool or an int (IntEnum included)."""
    if isinstance(x, Expr):
        return x.src
    if isinstance(x, bool):
        return syntax.true if x else syntax.false
    if isinstance(x, int):
        return repr(int(x))
    raise TypeError(f"the model produced a value the generator cannot render: {x!r}")


def maybe_negative(x: object) -> bool:
    """May this value be negative (``NONE``)?  Readers use it to emulate indexing by ``NONE``."""
    if isinstance(x, Expr):
        return x.maybe_neg
    return isinstance(x, int) and not isinstance(x, bool) and x < 0


class Expr:
    """A value known only when the generated code runs: its source text.

    Comparisons and ``+``/``-`` build larger expressions; truth is refused, so a rule that
    branched with a Python ``if`` on a state value fails loudly.  ``maybe_neg`` says whether the
    value may be ``NONE`` (an instance reference read from a registry).
    """

    __slots__ = ("src", "maybe_neg")
    syntax: Syntax = PYTHON

    def __init__(self, src: str, maybe_neg: bool = True):
        self.src = src
        self.maybe_neg = maybe_neg

    def __bool__(self) -> bool:
        raise truth_refused(f"a model rule branched on {self.src}")

    def __repr__(self) -> str:
        return f"Expr({self.src})"

    def _make(self, src: str, maybe_neg: bool) -> Expr:
        return type(self)(src, maybe_neg)

    def _bin(self, op: str, other: object, rev: bool = False) -> Expr:
        o = lift(other, self.syntax)
        a, c = (o, self.src) if rev else (self.src, o)
        return self._make(f"({a} {op} {c})", False)

    def __eq__(self, o: object) -> Expr:  # type: ignore[override]
        return self._bin("==", o)

    def __ne__(self, o: object) -> Expr:  # type: ignore[override]
        return self._bin("!=", o)

    def __lt__(self, o: object) -> Expr:
        return self._bin("<", o)

    def __le__(self, o: object) -> Expr:
        return self._bin("<=", o)

    def __gt__(self, o: object) -> Expr:
        return self._bin(">", o)

    def __ge__(self, o: object) -> Expr:
        return self._bin(">=", o)

    def __add__(self, o: object) -> Expr:
        return self._make(
            f"({self.src} + {lift(o, self.syntax)})", self.maybe_neg or maybe_negative(o)
        )

    def __radd__(self, o: object) -> Expr:
        return self._make(
            f"({lift(o, self.syntax)} + {self.src})", self.maybe_neg or maybe_negative(o)
        )

    def __sub__(self, o: object) -> Expr:
        return self._make(f"({self.src} - {lift(o, self.syntax)})", True)

    def __rsub__(self, o: object) -> Expr:
        return self._make(f"({lift(o, self.syntax)} - {self.src})", True)

    __hash__ = None  # type: ignore[assignment]


class Gen:
    """The logic interface of ``model/logic.py`` producing source; Python constants fold.

    ``expr`` is the expression class built (its ``syntax`` says how to spell the operations);
    quantifiers unroll over ``domains`` (a subclass may range over run-time collections).
    """

    symbolic = False
    expr: type[Expr] = Expr

    def __init__(self, domains: Mapping[str, Iterable[int]]):
        self.domains = {k: tuple(v) for k, v in domains.items()}

    @property
    def syntax(self) -> Syntax:
        return self.expr.syntax

    def _join(self, xs: tuple[Any, ...], sep: str, absorbing: bool) -> Any:
        parts = []
        for x in xs:
            if isinstance(x, Expr):
                parts.append(x.src)
            elif bool(x) == absorbing:
                return absorbing
        if not parts:
            return not absorbing
        if len(parts) == 1:
            return self.expr(parts[0], False)
        return self.expr("(" + sep.join(parts) + ")", False)

    def And(self, *xs: Any) -> Any:
        return self._join(xs, self.syntax.conj, False)

    def Or(self, *xs: Any) -> Any:
        return self._join(xs, self.syntax.disj, True)

    def Not(self, x: Any) -> Any:
        if isinstance(x, Expr):
            return self.expr(self.syntax.neg.format(x=x.src), False)
        return not x

    def Implies(self, a: Any, c: Any) -> Any:
        return self.Or(self.Not(a), c)

    def Ite(self, c: Any, a: Any, other: Any) -> Any:
        if not isinstance(c, Expr):
            return a if c else other
        text = self.syntax.ite.format(c=c.src, a=lift(a, self.syntax), b=lift(other, self.syntax))
        return self.expr(text, maybe_negative(a) or maybe_negative(other))

    def In(self, x: Any, values: Iterable[Any]) -> Any:
        values = tuple(values)
        if not isinstance(x, Expr):
            return x in values
        if not self.syntax.membership:
            return self.Or(*[x == v for v in values])
        if not values:
            return False
        if len(values) == 1:
            return self.expr(f"({x.src} == {lift(values[0], self.syntax)})", False)
        return self.expr(
            f"({x.src} in ({', '.join(lift(v, self.syntax) for v in values)},))", False
        )

    def ForAll(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.And(*[fn(v) for v in self.domains[sort]])

    def Exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.Or(*[fn(v) for v in self.domains[sort]])


def is_false(x: object) -> bool:
    """A value known, at generation time, to be false."""
    return not isinstance(x, Expr) and not x


class Source:
    """Lines of generated source, indented by depth."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def compile_source(text: str, filename: str) -> dict[str, Any]:
    """Execute generated ``text`` and return its namespace (``filename`` names it in tracebacks)."""
    namespace: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), namespace)
    return namespace
