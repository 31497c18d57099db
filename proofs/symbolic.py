"""The symbolic (z3) reading of the model: the second backend of ``model/logic.py``.

Nothing here states a lifecycle rule.  The guards, effects and properties are the functions of
``model/session.py``, ``model/properties.py`` and ``model/auxiliary.py``; this module only gives
the operations of the state interface a meaning over z3 terms:

* a keyed field (``life``, ``inflight``...) is a z3 array from ``Int`` to ``Int`` (or ``Bool``):
  ``s.life[r]`` is a ``Select``; an instance or id is an ``Int`` (``NONE`` = -1 is "no
  instance"), a scalar field (``clock``) is an ``Int``;
* a list of :class:`~mcp_inflight.model.logic.Write` becomes ``Store``\\ s, each under
  ``If(when, ...)``, every value and key computed from the pre-state and the stores applied in
  list order, exactly as :func:`~mcp_inflight.model.logic.apply_writes` does on tuples;
* ``ForAll``/``Exists`` over a sort become z3 quantifiers over the naturals (``domains=None``:
  the unbounded reading used by the induction proofs, any number of ids and instances), or
  finite conjunctions/disjunctions over given values (``domains={...}``: bounded model checking
  and the agreement tests, where a run can only ever touch finitely many of them).

Values that are constant in Python stay Python values (``True``, ``3``), so a guard that does
not apply to a configuration folds away before z3 sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import count
from typing import TYPE_CHECKING, Any

import z3

from mcp_inflight.model.logic import NONE, Write, truth_refused
from mcp_inflight.model.session_state import FIELDS, Field

_fresh = count()

# --- the same z3 terms, made with fewer Python steps ------------------------------------------
#
# z3's Python constructors (``z3.And``, ``z3.If``, ``x == 3``) first work out a common sort and
# cast every argument to it; the provers build hundreds of thousands of terms whose arguments
# already have it.  These make the very same terms (z3 shares equal terms: one term per
# operator and arguments) by calling z3's C API directly, and fall back to the constructors for
# anything else.

_Bool, _Arith = z3.BoolRef, z3.ArithRef


def _mk_bool(mk: Any, xs: list[Any]) -> Any:
    """``mk`` (``Z3_mk_and``, ``Z3_mk_or``) of Booleans ``xs`` of one context."""
    n = len(xs)
    arr = (z3.Ast * n)()
    for k in range(n):
        arr[k] = xs[k].ast
    ctx = xs[0].ctx
    return _Bool(mk(ctx.ref(), n, arr), ctx)


def _and(xs: list[Any]) -> Any:
    """``z3.And(*xs)`` for two or more z3 terms."""
    if all(isinstance(x, _Bool) for x in xs):
        return _mk_bool(z3.Z3_mk_and, xs)
    return z3.And(*xs)


def _or(xs: list[Any]) -> Any:
    """``z3.Or(*xs)`` for two or more z3 terms."""
    if all(isinstance(x, _Bool) for x in xs):
        return _mk_bool(z3.Z3_mk_or, xs)
    return z3.Or(*xs)


def _not(x: Any) -> Any:
    """``z3.Not(x)`` for a z3 term."""
    if isinstance(x, _Bool):
        return _Bool(z3.Z3_mk_not(x.ctx.ref(), x.ast), x.ctx)
    return z3.Not(x)


def _ite(c: Any, a: Any, b: Any) -> Any:
    """``z3.If(c, a, b)``: ``c`` a z3 Boolean, ``a`` and ``b`` z3 terms of one sort."""
    if isinstance(c, _Bool):
        if isinstance(a, _Bool) and isinstance(b, _Bool):
            return _Bool(z3.Z3_mk_ite(c.ctx.ref(), c.ast, a.ast, b.ast), c.ctx)
        if _is_int(a) and _is_int(b):
            return _Arith(z3.Z3_mk_ite(c.ctx.ref(), c.ast, a.ast, b.ast), c.ctx)
    return z3.If(c, a, b)


def _is_int(x: Any) -> bool:
    """``x`` is a z3 term of sort Int (what ``x.is_int()`` says, without making its sort)."""
    if not isinstance(x, _Arith):
        return False
    ref = x.ctx.ref()
    return bool(z3.Z3_get_sort_kind(ref, z3.Z3_get_sort(ref, x.ast)) == z3.Z3_INT_SORT)


_ints: dict[int, Any] = {}


def _eq_int(x: Any, j: int) -> Any:
    """``x == j``: ``x`` an integer z3 term, ``j`` a Python int."""
    if _is_int(x):
        v = _ints.get(j)
        if v is None or v.ctx is not x.ctx:
            v = _ints[j] = z3.IntVal(j, x.ctx)
        return _Bool(z3.Z3_mk_eq(x.ctx.ref(), x.ast, v.ast), x.ctx)
    return x == j


def _is_py(x: Any) -> bool:
    return isinstance(x, (bool, int)) and not isinstance(x, z3.ExprRef)


def to_bool(x: Any) -> z3.BoolRef:
    """A z3 Boolean for a backend value (which may be a Python ``bool``)."""
    if isinstance(x, bool):
        return z3.BoolVal(x)
    return x


def _strict_bool(self: z3.AstRef) -> bool:
    if z3.is_true(self):
        return True
    if z3.is_false(self):
        return False
    raise truth_refused(self)


@contextmanager
def strict_truth() -> Iterator[None]:
    """While it lasts, Python's truth test of a z3 term that is not the literal true or false
    raises :class:`~mcp_inflight.model.logic.ModelError` naming the rule and its line.  z3's
    own test silently answers for an equation by comparing the two sides as syntax (``x == y``
    is "false" for two different variables), so ``a and b`` in a rule would drop a conjunct
    from every proof; the provers read the model inside this."""
    old = z3.AstRef.__bool__
    z3.AstRef.__bool__ = _strict_bool
    try:
        yield
    finally:
        z3.AstRef.__bool__ = old


def _int_of(x: Any, like: Any) -> Any:
    """``x`` as an integer z3 term beside the integer term ``like``, or None where z3's own
    coercion is needed (a real, a Python bool or float, another sort)."""
    if isinstance(x, int) and not isinstance(x, bool):
        v = _ints.get(x)
        if v is None or v.ctx is not like.ctx:
            v = _ints[x] = z3.IntVal(x, like.ctx)
        return v
    return x if _is_int(x) else None


def _fast_compare(mk: Any, original: Any) -> Any:
    def op(self: Any, other: Any) -> Any:
        if _is_int(self):
            b = _int_of(other, self)
            if b is not None:
                return _Bool(mk(self.ctx.ref(), self.ast, b.ast), self.ctx)
        return original(self, other)

    op.__doc__ = original.__doc__
    return op


def _fast_arith(mk: Any, original: Any) -> Any:
    def op(self: Any, other: Any) -> Any:
        if _is_int(self):
            b = _int_of(other, self)
            if b is not None:
                arr = (z3.Ast * 2)()
                arr[0], arr[1] = self.ast, b.ast
                return _Arith(mk(self.ctx.ref(), 2, arr), self.ctx)
        return original(self, other)

    op.__doc__ = original.__doc__
    return op


def _distinct(ref: Any, a: Any, b: Any) -> Any:
    arr = (z3.Ast * 2)()
    arr[0], arr[1] = a, b
    return z3.Z3_mk_distinct(ref, 2, arr)


_OPERATORS: dict[str, Callable[[Any], Any]] = {
    "__eq__": lambda o: _fast_compare(z3.Z3_mk_eq, o),
    "__ne__": lambda o: _fast_compare(_distinct, o),
    "__ge__": lambda o: _fast_compare(z3.Z3_mk_ge, o),
    "__le__": lambda o: _fast_compare(z3.Z3_mk_le, o),
    "__gt__": lambda o: _fast_compare(z3.Z3_mk_gt, o),
    "__lt__": lambda o: _fast_compare(z3.Z3_mk_lt, o),
    "__add__": lambda o: _fast_arith(z3.Z3_mk_add, o),
    "__sub__": lambda o: _fast_arith(z3.Z3_mk_sub, o),
}


@contextmanager
def fast_operators() -> Iterator[None]:
    """While it lasts, the comparisons and sums of integer z3 terms with integer z3 terms or
    Python ints (``x == 3``, ``x >= y``, ``x + 1``) make their terms by calling z3's C API
    directly: the very terms z3's operators make (z3 shares equal terms), without their
    sort-finding and casting in Python; anything else goes to z3's own operators."""
    saved = {}
    for name, fast in _OPERATORS.items():
        saved[name] = z3.ArithRef.__dict__.get(name)  # == and != are inherited from ExprRef
        setattr(z3.ArithRef, name, fast(getattr(z3.ArithRef, name)))
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                delattr(z3.ArithRef, name)
            else:
                setattr(z3.ArithRef, name, old)


class Symbolic:
    """The state interface over z3 terms.  ``domains=None``: quantifiers range over every natural
    number (unbounded); otherwise over the given values of each sort ("inst", "id")."""

    symbolic = True

    def __init__(self, domains: dict[str, Iterable[int]] | None = None):
        self.domains = None if domains is None else {k: tuple(v) for k, v in domains.items()}

    @staticmethod
    def And(*xs: Any) -> Any:
        out = []
        for x in xs:
            if isinstance(x, bool):
                if not x:
                    return False
                continue
            out.append(x)
        if not out:
            return True
        return out[0] if len(out) == 1 else _and(out)

    @staticmethod
    def Or(*xs: Any) -> Any:
        out = []
        for x in xs:
            if isinstance(x, bool):
                if x:
                    return True
                continue
            out.append(x)
        if not out:
            return False
        return out[0] if len(out) == 1 else _or(out)

    @staticmethod
    def Not(x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        return _not(x)

    @staticmethod
    def Implies(a: Any, c: Any) -> Any:
        if isinstance(a, bool):
            return Symbolic.Or(not a, c)
        if isinstance(c, bool):
            return True if c else _not(a)
        return z3.Implies(a, c)

    @staticmethod
    def Ite(c: Any, a: Any, other: Any) -> Any:
        if isinstance(c, bool):
            return a if c else other
        if isinstance(a, bool) and isinstance(other, bool):
            return Symbolic.Or(Symbolic.And(c, a), Symbolic.And(Symbolic.Not(c), other))
        return _ite(c, a, other)

    @staticmethod
    def In(x: Any, values: Iterable[Any]) -> Any:
        if _is_py(x):
            return x in values
        return Symbolic.Or(*[x == v for v in values])

    def _quant(self, sort: str, fn: Callable[[Any], Any], forall: bool) -> Any:
        if self.domains is not None:
            parts = [fn(v) for v in self.domains[sort]]
            return self.And(*parts) if forall else self.Or(*parts)
        x = z3.Int(f"{sort}!{next(_fresh)}")
        body = fn(x)
        if isinstance(body, bool):
            return body  # the domain is never empty
        if forall:
            return z3.ForAll([x], z3.Implies(x >= 0, body))
        return z3.Exists([x], z3.And(x >= 0, body))

    def ForAll(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant(sort, fn, True)

    def Exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant(sort, fn, False)


# --- states -------------------------------------------------------------------------------


class SymState:
    """A session state whose fields are z3 terms, read by the model exactly like a concrete
    ``State``: ``s.life[r]``, ``s.inflight[s.rid[r]]``, ``s.clock``."""

    __slots__ = tuple(f.name for f in FIELDS)

    def __init__(self, **fields: Any) -> None:
        for f in FIELDS:
            setattr(self, f.name, fields[f.name])

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in FIELDS}

    if TYPE_CHECKING:  # the fields, one attribute each, named by ``FIELDS``

        def __getattr__(self, name: str) -> Any: ...


def _sort(f: Field) -> z3.SortRef:
    return z3.BoolSort() if f.sort == "bool" else z3.IntSort()


def fresh_state(prefix: str) -> SymState:
    """A state with every field an unconstrained z3 constant (the pre-state of an induction step)."""
    vals = {}
    for f in FIELDS:
        if f.key is None:
            vals[f.name] = z3.Const(f"{prefix}.{f.name}", _sort(f))
        else:
            vals[f.name] = z3.Array(f"{prefix}.{f.name}", z3.IntSort(), _sort(f))
    return SymState(**vals)


def _lit(f: Field, v: Any) -> z3.ExprRef:
    return z3.BoolVal(bool(v)) if f.sort == "bool" else z3.IntVal(int(v))


def initial_state() -> SymState:
    """The initial state: every slot holds its field's default, for every instance and id."""
    vals = {}
    for f in FIELDS:
        d = _lit(f, f.default)
        vals[f.name] = d if f.key is None else z3.K(z3.IntSort(), d)
    return SymState(**vals)


def from_concrete(state: Any, default_tail: bool = True) -> SymState:
    """A concrete ``State`` as z3 terms: each array holds the tuple's values at 0..n-1 and the
    field's default elsewhere (the instances and ids a bounded run never uses)."""
    vals = {}
    for f in FIELDS:
        v = getattr(state, f.name)
        if f.key is None:
            vals[f.name] = _lit(f, v)
            continue
        arr = z3.K(z3.IntSort(), _lit(f, f.default))
        for k, x in enumerate(v):
            arr = z3.Store(arr, k, _lit(f, x))
        vals[f.name] = arr
    return SymState(**vals)


class Vec:
    """A keyed field over a finite universe as one z3 term per slot (bounded model checking and
    small counterexamples: no arrays, no quantifiers).  Reading at a symbolic key is the chain
    ``If(k == 0, v0, If(k == 1, v1, ...))``; outside the universe it reads the field's default
    (only ever reached under a false ``when``: a masked ``NONE`` key)."""

    __slots__ = ("slots", "default")

    def __init__(self, slots: Iterable[Any], default: Any) -> None:
        self.slots = list(slots)
        self.default = default

    def __getitem__(self, k: Any) -> Any:
        if _is_py(k):
            return self.slots[k] if 0 <= k < len(self.slots) else self.default
        term = self.default
        for j in range(len(self.slots) - 1, -1, -1):
            term = _ite(_eq_int(k, j), self.slots[j], term)
        return term

    def __len__(self) -> int:
        return len(self.slots)

    def store(self, k: Any, v: Any, when: Any) -> Vec:
        slots = list(self.slots)
        for j in range(len(slots)):
            if _is_py(k):
                if k != j:
                    continue
                hit = when
            else:
                hit = Symbolic.And(when, _eq_int(k, j))
            if isinstance(hit, bool):
                if hit:
                    slots[j] = v
                continue
            slots[j] = _ite(hit, v, slots[j])
        return Vec(slots, self.default)


def fresh_finite_state(prefix: str, n_inst: int, n_id: int) -> SymState:
    """A state over ``n_inst`` instances and ``n_id`` ids, every slot a fresh z3 constant."""
    vals = {}
    for f in FIELDS:
        if f.key is None:
            vals[f.name] = z3.Const(f"{prefix}.{f.name}", _sort(f))
        else:
            n = n_inst if f.key == "inst" else n_id
            vals[f.name] = Vec(
                [z3.Const(f"{prefix}.{f.name}[{k}]", _sort(f)) for k in range(n)],
                _lit(f, f.default),
            )
    return SymState(**vals)


def initial_finite_state(n_inst: int, n_id: int) -> SymState:
    vals = {}
    for f in FIELDS:
        d = _lit(f, f.default)
        vals[f.name] = d if f.key is None else Vec([d] * (n_inst if f.key == "inst" else n_id), d)
    return SymState(**vals)


def finite_from_concrete(state: Any) -> SymState:
    """A concrete ``State`` as a finite symbolic state (every slot a literal)."""
    vals = {}
    for f in FIELDS:
        v = getattr(state, f.name)
        vals[f.name] = (
            _lit(f, v) if f.key is None else Vec([_lit(f, x) for x in v], _lit(f, f.default))
        )
    return SymState(**vals)


def apply_writes(state: SymState, writes: list[Write]) -> SymState:
    """The post-state of ``writes`` (values computed from the pre-state): stores in list order,
    each under its ``when``; the reading of :func:`mcp_inflight.model.logic.apply_writes`."""
    vals = state.fields()
    for w in writes:
        when = w.when
        if isinstance(when, bool) and not when:
            continue
        f = _FIELD[w.field]
        old = vals[w.field]
        value = _coerce(f, w.value)
        if isinstance(old, Vec):
            vals[w.field] = old.store(w.key, value, when)
            continue
        new = value if w.key is None else z3.Store(old, w.key, value)
        vals[w.field] = new if isinstance(when, bool) else z3.If(when, new, old)
    return SymState(**vals)


def _coerce(f: Field, v: Any) -> Any:
    if _is_py(v):
        return _lit(f, v)
    return v


_FIELD = {f.name: f for f in FIELDS}


def well_typed(b: Symbolic, s: SymState) -> Any:
    """Each slot holds a value of its field's sort: lifecycle and small enumerations in range,
    ids natural, instance references natural or ``NONE`` (with finite domains: within them)."""

    def inst_slot(x: Any) -> Any:
        parts = []
        for f in FIELDS:
            if f.key != "inst":
                continue
            v = getattr(s, f.name)[x]
            if f.domain is not None:  # a finite sort: the range of its enumeration
                parts += [v >= min(f.domain), v <= max(f.domain)]
            elif f.sort == "id":
                parts.append(b.In(v, b.domains["id"]) if b.domains is not None else v >= 0)
        return b.And(*parts)

    def id_slot(k: Any) -> Any:
        parts = []
        for f in FIELDS:
            if f.key != "id":
                continue
            v = getattr(s, f.name)[k]
            if f.sort == "inst?":
                if b.domains is not None:
                    parts.append(b.In(v, (NONE,) + b.domains["inst"]))
                else:
                    parts.append(v >= NONE)
            elif f.domain is not None:
                parts += [v >= min(f.domain), v <= max(f.domain)]
        return b.And(*parts)

    scalars = [
        b.And(getattr(s, f.name) >= min(f.domain), getattr(s, f.name) <= max(f.domain))
        for f in FIELDS
        if f.key is None and f.domain is not None
    ]
    return b.And(b.ForAll("inst", inst_slot), b.ForAll("id", id_slot), *scalars)


def param_ok(b: Symbolic, sort: str, x: Any) -> Any:
    """An action argument of ``sort`` ("inst" or "id") is a member of that sort."""
    if b.domains is not None:
        return b.In(x, b.domains[sort])
    return x >= 0


# --- reading values back out of a model ---------------------------------------------------


def concrete_state(
    model: z3.ModelRef, s: SymState, insts: list[int], ids: list[int], State: Any
) -> Any:
    """The finite view of ``s`` in ``model`` on the given instances and ids, as a concrete
    ``State`` whose instance number n is ``insts[n]`` and id number m is ``ids[m]``; instance
    references and ids outside the view become ``NONE``/the raw value (callers close the view
    first)."""
    inst_pos = {v: n for n, v in enumerate(insts)}
    id_pos = {v: n for n, v in enumerate(ids)}
    out = []
    for f in FIELDS:
        term = getattr(s, f.name)
        if f.key is None:
            out.append(_py(model.eval(term, model_completion=True)))
            continue
        keys = insts if f.key == "inst" else ids
        vals = []
        for k in keys:
            v = _py(model.eval(term[k], model_completion=True))

            if f.sort == "inst?":
                v = inst_pos.get(v, NONE)
            elif f.sort == "id":
                v = id_pos.get(v, v)
            vals.append(v)
        out.append(tuple(vals))
    return State(*out)


def _py(v: Any) -> Any:
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    return v.as_long()
