"""The provers' quick ways of making z3 terms make the very terms z3's own constructors make.

``proofs/symbolic.py`` builds And/Or/Not/If, slot reads and integer comparisons through z3's C
API (and, inside ``fast_operators()``, the comparison and sum operators of integer terms): the
formulas the solver sees, and so every verdict, must be those of z3's constructors."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import z3

from mcp_inflight.proofs import bmc
from mcp_inflight.proofs import symbolic as S

x, y = z3.Ints("x y")
r = z3.Real("r")
b, c = z3.Bools("b c")
q = z3.ForAll([x], x >= 0)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (got, want)
    assert got.eq(want), (got, want)


@pytest.mark.parametrize(
    "got, want",
    [
        (lambda: S._and([b, c]), lambda: z3.And(b, c)),
        (lambda: S._and([b, q, c]), lambda: z3.And(b, q, c)),
        (lambda: S._or([b, c, b]), lambda: z3.Or(b, c, b)),
        (lambda: S._not(b), lambda: z3.Not(b)),
        (lambda: S._ite(b, x, y + 1), lambda: z3.If(b, x, y + 1)),
        (lambda: S._ite(b, b, c), lambda: z3.If(b, b, c)),
        (lambda: S._ite(b, z3.IntVal(2), x), lambda: z3.If(b, 2, x)),
        (lambda: S._ite(b, r, x), lambda: z3.If(b, r, x)),
        (lambda: S._eq_int(x, 3), lambda: x == 3),
        (lambda: S._eq_int(r, 3), lambda: r == 3),
    ],
)
def test_quick_constructors_make_z3s_terms(got, want):
    _same(got(), want())


def test_fast_operators_make_z3s_terms_and_are_undone():
    ops = ["__eq__", "__ne__", "__ge__", "__le__", "__gt__", "__lt__", "__add__", "__sub__"]
    lhs = [x, y + 1, z3.IntVal(3), r]
    rhs = [x, y, 0, -1, 7, z3.IntVal(2), r, True, 2.5]
    before = {n: z3.ArithRef.__dict__.get(n) for n in ops}
    cases = list(itertools.product(lhs, ops, rhs))

    def make(a: Any, o: str, v: Any) -> Any:
        try:
            return getattr(a, o)(v)
        except z3.Z3Exception as e:  # z3 refuses some (a real compared with True)
            return type(e)

    want = [make(*case) for case in cases]
    with S.fast_operators():
        got = [make(*case) for case in cases]
    for g, w in zip(got, want, strict=True):
        if isinstance(w, type):
            assert g is w
        else:
            _same(g, w)
    assert {n: z3.ArithRef.__dict__.get(n) for n in ops} == before


def test_vec_reads_and_stores_are_z3s_terms():
    v = S.Vec([z3.Int("v0"), z3.Int("v1"), z3.Int("v2")], z3.IntVal(-1))
    k = z3.Int("k")
    want = z3.If(k == 0, v.slots[0], z3.If(k == 1, v.slots[1], z3.If(k == 2, v.slots[2], -1)))
    _same(v[k], want)
    w = v.store(k, z3.IntVal(5), b)
    _same(w.slots[1], z3.If(z3.And(b, k == 1), z3.IntVal(5), v.slots[1]))


def test_one_watchdog_interrupts_a_query_past_its_deadline():
    xs = [z3.Int(f"x{n}") for n in range(12)]
    s = z3.Solver()
    s.add(*[z3.And(v > 1, v < 10**6) for v in xs])
    s.add(z3.Product(*xs[:6]) == z3.Product(*xs[6:]) + 1)
    s.add(z3.Sum(*xs) * z3.Sum(*xs) == 7 * xs[0] * xs[1] * xs[2] + 3)
    assert bmc.solve(s, 200) == z3.unknown
    easy = z3.Solver()
    easy.add(xs[0] == 1)
    assert bmc.solve(easy, 200) == z3.sat  # a finished query's deadline is gone


def _hard_query_in_child(q) -> None:
    xs = [z3.Int(f"x{n}") for n in range(12)]
    s = z3.Solver()
    s.add(*[z3.And(v > 1, v < 10**6) for v in xs])
    s.add(z3.Product(*xs[:6]) == z3.Product(*xs[6:]) + 1)
    s.add(z3.Sum(*xs) * z3.Sum(*xs) == 7 * xs[0] * xs[1] * xs[2] + 3)
    q.put(str(bmc.solve(s, 200)))


def test_a_forked_child_keeps_its_own_deadlines():
    import multiprocessing as mp

    easy = z3.Solver()
    easy.add(z3.Int("y") == 1)
    assert bmc.solve(easy, 200) == z3.sat  # this process's watchdog thread is running
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_hard_query_in_child, args=(q,))
    # forked while the parent's watchdog lock is held: the child must not inherit it held
    with bmc._WATCHDOG._cv:
        child.start()
    child.join(20)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0, "the child hung or its query was never interrupted"
    assert q.get(timeout=1) == "unknown"
