"""Which part of a property fails, found without reading the property's text.

The property is evaluated once more with :class:`_Explaining`, a ``Concrete`` logic that
records, for each quantifier that fails, the value it fails for, and with state proxies that
record every field read; the reads of the innermost failing quantifier instance are the part
that fails.  Part of the page's window on the model (:mod:`.model_api` calls it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from mcp_inflight.model.config import Config
from mcp_inflight.model.logic import Concrete
from mcp_inflight.model.property_kinds import Property
from mcp_inflight.model.session_state import FIELDS, Field, State
from mcp_inflight.model.trace import id_name, inst_name, render_value


class _Reads:
    """Indexing proxy of one field of a state: records every read into the current frame."""

    __slots__ = ("_log", "_field", "_vals", "_which")

    def __init__(self, log: _Explaining, fld: Field, vals: Any, which: str) -> None:
        self._log, self._field, self._vals, self._which = log, fld, vals, which

    def __getitem__(self, k: int) -> Any:
        v = self._vals[k]
        self._log.read(self._which, self._field, k, v)
        return v

    def __len__(self) -> int:
        return len(self._vals)

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self._vals)):
            yield self[k]


class _StateReads:
    """A state whose every field read is recorded (``which`` is ``""``, ``"before"`` or
    ``"after"``)."""

    def __init__(self, log: _Explaining, s: State, which: str) -> None:
        self._log, self._s, self._which = log, s, which

    def __getattr__(self, name: str) -> Any:
        vals = getattr(self._s, name)
        f = _FIELD.get(name)
        if f is None:
            return vals
        if f.key is None:
            self._log.read(self._which, f, None, vals)
            return vals
        return _Reads(self._log, f, vals, self._which)


_FIELD = {f.name: f for f in FIELDS}


class _Explaining(Concrete):
    """``Concrete`` that records, for each quantifier that fails (``ForAll`` false, or
    ``Exists`` true), the value it fails for and the reads made under it."""

    def __init__(self, doms: Mapping[str, Iterable[int]]) -> None:
        super().__init__(doms)
        self.frames: list[list[tuple[str, Field, int | None, Any]]] = [[]]
        self.failing: list[
            tuple[int, tuple[str, str, int], list[Any]]
        ] = []  # (depth, binding, reads), innermost last

    def read(self, which: str, f: Field, k: int | None, v: Any) -> None:
        self.frames[-1].append((which, f, k, v))

    def _quantify(self, sort: str, fn: Callable[[int], Any], forall: bool) -> bool:
        code = getattr(fn, "__code__", None)
        name = code.co_varnames[0] if code is not None and code.co_argcount else sort
        for v in self.domains[sort]:
            self.frames.append([])
            mark = len(self.failing)
            res = bool(fn(v))
            reads = self.frames.pop()
            self.frames[-1].extend(reads)
            if res != forall:
                self.failing.append((len(self.frames), (sort, name, v), reads))
                return not forall
            # this instance passed: what failed inside it is not why the whole fails
            del self.failing[mark:]
        return forall

    def ForAll(self, sort: str, fn: Callable[[int], Any]) -> bool:
        return self._quantify(sort, fn, True)

    def Exists(self, sort: str, fn: Callable[[int], Any]) -> bool:
        return self._quantify(sort, fn, False)


def _render_read(which: str, f: Field, k: int | None, v: Any) -> str:
    key = "" if k is None else f"[{(inst_name if f.key == 'inst' else id_name)(k)}]"
    when = f" ({which})" if which else ""
    return f"{f.name}{key}{when} = {render_value(f, v)}"


def explain(
    domains: Mapping[str, Iterable[int]],
    cfg: Config,
    p: Property,
    pre: State | None,
    post: State,
    move: Any = None,
    out: Any = None,
) -> dict[str, Any]:
    """Property ``p`` evaluated once more, on ``post`` (a state property) or on the step from
    ``pre`` by ``move`` with outputs ``out`` (a step property): its value, the failing instance
    of each nested quantifier (outermost first) and the field reads under the innermost."""
    b = _Explaining(domains)
    if p.scope == "state":
        value = p.fn(b, _StateReads(b, post, ""), cfg)
    else:
        value = p.fn(
            b,
            _StateReads(b, pre, "before"),
            _StateReads(b, post, "after"),
            cfg,
            move.action,
            move.r,
            move.i,
            out,
        )
    chain = []
    reads: list = []
    # the failing instances of nested quantifiers, outermost first
    for _depth, (sort, name, v), rd in sorted(b.failing, key=lambda x: x[0]):
        chain.append(f"{name} = {(inst_name if sort == 'inst' else id_name)(v)}")
        reads = rd
    if not chain:
        reads = b.frames[0]
    shown = list(dict.fromkeys(_render_read(*x) for x in reads))
    return {"value": bool(value), "where": chain, "reads": shown}
