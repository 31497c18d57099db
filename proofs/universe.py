"""A declared model read by z3 (``proofs/symbolic.py``): :class:`Universe` is one reading of a
:class:`~mcp_inflight.model.declare.Spec` (its sorts' sizes, or unbounded), with a fresh
pre-state, the initial state, typedness, and one step per action or per move.  The one prover
(``proofs/induction.py``) proves on these; the session's prover asks its vacuity questions on
them too.

A scalar is a z3 constant; a keyed variable over an unbounded sort is a z3 array (an argument
over it any natural); a keyed variable over a finite sort is one z3 constant per slot
(:class:`~.symbolic.Vec`).  The writes are stores under their ``when``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import z3

from mcp_inflight.model.declare import Move, Spec, Var
from mcp_inflight.model.logic import NONE, Write

from .symbolic import Symbolic, Vec, to_bool


class _Logic(Symbolic):
    """The z3 backend over a universe where some sorts are finite (``domains``) and the others
    range over every natural."""

    def __init__(self, domains: Mapping[str, Iterable[int]], unbounded: Iterable[str]):
        super().__init__(dict(domains))
        self.unbounded = frozenset(unbounded)

    def _quant(self, sort: str, fn: Callable[..., Any], forall: bool) -> Any:
        if sort not in self.unbounded:
            return super()._quant(sort, fn, forall)
        saved, self.domains = self.domains, None
        try:
            return super()._quant(sort, fn, forall)
        finally:
            self.domains = saved

    def finite(self, sort: str) -> tuple[int, ...] | None:
        if sort in self.unbounded or self.domains is None:
            return None
        return self.domains[sort]


class StateTerms:
    """A state of z3 terms read like a concrete one (``s.var[k]``, ``s.var``)."""

    def __init__(self, vals: dict[str, Any]):
        self.__dict__.update(vals)

    def fields(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _z3sort(v: Var) -> z3.SortRef:
    return z3.BoolSort() if v.boolean else z3.IntSort()


def _lit(v: Var, x: Any) -> z3.ExprRef:
    return z3.BoolVal(bool(x)) if v.boolean else z3.IntVal(int(x))


def value_of(v: z3.ExprRef) -> Any:
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    return v.as_long()


class Universe:
    """One reading of the spec: its sorts' sizes (``sizes``; an unbounded sort absent), a fresh
    pre-state, the initial state, and one step per action (symbolic arguments) or, when every
    sort is finite, per move (concrete arguments)."""

    def __init__(
        self, spec: Spec, sizes: Mapping[str, int] | None, tag: str, per_move: bool = False
    ):
        self.spec = spec
        unbounded = spec.unbounded if sizes is None else ()
        doms = {
            s: range(sizes[s]) if sizes is not None and s in sizes else r
            for s, r in spec.domains.items()
            if s not in unbounded
        }
        self.b = _Logic(doms, unbounded)
        self.sizes = {s: len(r) for s, r in doms.items()}
        self.unbounded = tuple(unbounded)
        self.pre = self._fresh(tag)
        self.init = self._initial()
        self.typed = to_bool(self.well_typed(self.pre))
        self.steps = self._steps(tag, per_move)

    # states

    def _slots(self, v: Var) -> int | None:
        """The number of slots of keyed ``v`` here, or None over an unbounded sort."""
        assert v.keys is not None
        if v.sort is None:
            return v.keys
        return None if v.sort in self.unbounded else self.sizes[v.sort]

    def _fresh(self, tag: str) -> StateTerms:
        vals: dict[str, Any] = {}
        for v in self.spec.vars:
            if v.keys is None:
                vals[v.name] = z3.Const(f"{tag}.{v.name}", _z3sort(v))
                continue
            n = self._slots(v)
            if n is None:
                vals[v.name] = z3.Array(f"{tag}.{v.name}", z3.IntSort(), _z3sort(v))
            else:
                slots = [z3.Const(f"{tag}.{v.name}[{k}]", _z3sort(v)) for k in range(n)]
                vals[v.name] = Vec(slots, _lit(v, v.init))
        return StateTerms(vals)

    def _initial(self) -> StateTerms:
        vals: dict[str, Any] = {}
        for v in self.spec.vars:
            d = _lit(v, v.init)
            if v.keys is None:
                vals[v.name] = d
                continue
            n = self._slots(v)
            vals[v.name] = z3.K(z3.IntSort(), d) if n is None else Vec([d] * n, d)
        return StateTerms(vals)

    def literal(self, s: Any) -> StateTerms:
        """A concrete state as z3 literals (every slot of a finite universe)."""
        vals: dict[str, Any] = {}
        for v in self.spec.vars:
            x = getattr(s, v.name)
            d = _lit(v, v.init)
            vals[v.name] = _lit(v, x) if v.keys is None else Vec([_lit(v, y) for y in x], d)
        return StateTerms(vals)

    def well_typed(self, s: StateTerms) -> Any:
        """Every slot holds a value of its variable: its range, or the sort it names, or (a
        growing natural) at least its lower end."""
        b = self.b

        def slot(v: Var, x: Any) -> Any:
            if v.boolean:
                return True
            if v.ref is not None:
                none = (NONE,) if v.lo == NONE else ()
                dom = b.finite(v.ref)
                return x >= (NONE if none else 0) if dom is None else b.In(x, none + dom)
            if v.grows:
                return x >= v.lo
            return b.And(x >= v.lo, x <= v.hi)

        parts = []
        for v in self.spec.vars:
            x = getattr(s, v.name)
            if v.keys is None:
                parts.append(slot(v, x))
            elif isinstance(x, Vec):
                parts += [slot(v, t) for t in x.slots]
            else:
                assert v.sort is not None

                def at(k: Any, v: Var = v, x: Any = x) -> Any:
                    return slot(v, x[k])

                parts.append(b.ForAll(v.sort, at))
        return b.And(*parts)

    def apply(self, s: StateTerms, writes: list[Write]) -> StateTerms:
        """Stores in list order, each under its ``when`` (``model/logic.py``'s semantics)."""
        vals = s.fields()
        for w in writes:
            when = w.when
            if isinstance(when, bool) and not when:
                continue
            v = self.spec.var(w.field)
            value = w.value
            if isinstance(value, (bool, int)):
                value = _lit(v, value)
            old = vals[w.field]
            if isinstance(old, Vec):
                vals[w.field] = old.store(w.key, value, when)
                continue
            new = value if w.key is None else z3.Store(old, w.key, value)
            vals[w.field] = new if isinstance(when, bool) else z3.If(when, new, old)
        return StateTerms(vals)

    # steps

    def _steps(self, tag: str, per_move: bool) -> list[Step]:
        out = []
        if per_move:
            for m in self.spec.moves():
                out.append(Step(self, m.act.name, m, {}, True))
            return out
        for a in self.spec.acts:
            args: dict[str, Any] = {}
            params = []
            for p, size in a.params:
                x = z3.Int(f"{tag}.{a.name}.{p}")
                args[p] = x
                sort = a.sort_of(p)
                if sort is None:
                    if self.unbounded:
                        raise ValueError(f"{a.name}: parameter {p} has no sort")
                    params.append(self.b.And(x >= 0, x < size))
                elif sort in self.unbounded:
                    params.append(x >= 0)
                else:
                    params.append(self.b.In(x, self.b.finite(sort) or ()))
            m = Move(a, tuple(args.items()))
            out.append(Step(self, a.name, m, args, self.b.And(*params)))
        return out


class Step:
    """One action (or move) on the universe's pre-state: its guard, output and post-state."""

    def __init__(self, u: Universe, name: str, m: Move, args: dict[str, Any], params: Any):
        self.name, self.move, self.args = name, m, args
        kw = m.kw
        self.guard = to_bool(m.act.guard(u.b, u.pre, **kw))
        self.out = m.act.outputs(u.b, u.pre, **kw)
        self.post = u.apply(u.pre, m.act.effect(u.b, u.pre, **kw))
        self.params = to_bool(params)
