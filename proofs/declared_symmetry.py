"""Symmetry of a declared model, checked before the one explorer trusts it.

A :class:`~mcp_inflight.model.declare.Spec` declares its symmetric sorts: a variable's ``sort``
(the sort its slots range over), its ``ref`` (the sort its values name, ``NONE`` kept), an
action's ``sorts`` (the sort of each parameter) and ``out_sorts`` (the sort an output's value
names).  A *renaming* permutes the values of each sort and renames all of those alike.  The one
explorer (``proofs/explorer.py``, ``explore(spec, symmetry=True)``) may then keep one state per
orbit, the least renaming of it (:class:`Canon`: exact, every renaming of the group is tried),
but only when the model *is* symmetric: for every renaming ``pi``, state ``s`` and move ``m``,
``m`` is enabled on ``s`` exactly when ``pi(m)`` is enabled on ``pi(s)``, and then ``pi(m)``'s
successor and output on ``pi(s)`` are the renaming of ``m``'s on ``s``, and every property gives
the same answer on a state (a transition) and on its renaming.  A rule that treats one value of a
sort specially ("worker 0 never pauses") breaks it, and a reduced search would merge states the
rule tells apart.

:func:`check` tests that commutation on the rules the explorer runs, under generators of the
group (per sort with two or more values a swap of its first two, and a rotation when it has three
or more: they compose every renaming, so commutation with them gives it for all).  The states
checked are those reached from the initial state by moves *and* by the generators, breadth first:
every renaming of a checked state is then checked too (a reachable state's renaming need not be
reachable), which is what the composition argument needs.
At most ``limit`` states are checked (the result says whether that was all).  The first rule that
breaks it is named: the guard, effect or output of an action, or a property, with the renaming,
the state and the move.

Outputs are renamed as ``out_sorts`` declares; an output it does not declare is compared as it
is, which is stricter than needed (an undeclared output that names a sort fails the check and the
explorer runs unreduced: never unsound).

A sort whose slots the rules fill in order is declared in the spec's ``ordered``, with why (the
lease's arrivals and the session's sends, ``model/session_conditions.py:SLOT_ORDER``: a reduction of its own,
so a renaming of all instances is not a symmetry).  A slot is *used* once a variable keyed by
the sort leaves its initial value there (a variable whose values a renaming keeps at it: one
naming no sort, or starting at ``NONE``); the used slots of a state form a prefix, and a move
never frees one.  Renaming the used slots among themselves keeps the fresh ones in place, their
values too (a fresh slot's initial id names nothing yet: the move that uses the slot writes it,
and a rule that read it first would fail the check), so the states related by such renamings (of each state its own used slots) are an equivalence,
and, when the rules commute with them, a bisimulation.  The check then takes, per state, the
generators of the renamings of its used slots, and checks both conditions on every state and
move (a used slot after a fresh one, a move that frees a used slot: each named as the rule that
breaks the order).  A sort the rules do not treat alike at all is declared ``asymmetric``, with
why, and left out.  Leaving a sort out is always sound (the group is smaller); declaring an
ordered sort symmetric makes the check fail, and the tests show that it does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import permutations, product
from typing import Any

from mcp_inflight.model.declare import Move, Spec, render_step
from mcp_inflight.model.logic import NONE

from .rules import rules_of
from .stepping import take

#: States checked at most, breadth first over moves and renamings.
LIMIT = 20_000


def _named(spec: Spec) -> set[str]:
    named: set[str] = set()
    for v in spec.vars:
        named.update(x for x in (v.sort, v.ref) if x is not None)
    for a in spec.acts:
        named.update(s for _, s in a.sorts)
        for _, o in a.out_sorts:
            named.update([o] if isinstance(o, str) else [x for x in o if x is not None])
    missing = sorted(named - set(spec.domains))
    if missing:
        raise ValueError(f"{spec.model}: sort(s) {', '.join(missing)} not in its domains")
    return named


def sorts(spec: Spec) -> dict[str, int]:
    """The sorts a renaming permutes whole: every sort the spec declares on a variable,
    parameter or output, with its number of values (``spec.domains``), less the ``ordered``
    and ``asymmetric`` ones."""
    left = {s for s, _ in spec.asymmetric + spec.ordered}
    return {s: len(spec.domains[s]) for s in sorted(_named(spec) - left)}


def ordered(spec: Spec) -> dict[str, int]:
    """The ``ordered`` sorts the spec uses, with their number of values."""
    named = _named(spec)
    return {s: len(spec.domains[s]) for s, _ in spec.ordered if s in named}


def used(spec: Spec, sort: str) -> Callable[[Any], int | None]:
    """``s -> `` the number of used slots of ``sort`` in ``s``, or None when they are not a
    prefix.  A slot is used once a variable keyed by ``sort`` is off its initial value there;
    only the variables a renaming keeps at that value are read (those whose values name no
    sort, or whose initial value is ``NONE``): a fresh slot's id 0, renamed, is still fresh."""
    keyed = [
        (n, v.init)
        for n, v in enumerate(spec.vars)
        if v.sort == sort and (v.ref is None or v.init == NONE)
    ]
    size = len(spec.domains[sort])
    # each slot's flag (used or not) as generated Python; the flags to the count by a table
    flags = [
        "(" + (" or ".join(f"s[{n}][{r}] != {int(init)}" for n, init in keyed) or "False") + ")"
        for r in range(size)
    ]
    table = {
        f: (f.index(False) if False in f else size) for f in product((False, True), repeat=size)
    }
    env: dict[str, Any] = {"K": {f: k if not any(f[k:]) else None for f, k in table.items()}}
    src = f"def count(s):\n    return K[({', '.join(flags)},)]\n"
    exec(compile(src, f"<used slots of {sort}>", "exec"), env)
    fn: Callable[[Any], int | None] = env["count"]
    return fn


@dataclass(frozen=True)
class Renaming:
    """A permutation of each sort's values: ``perm[sort][k]`` is k's new name."""

    perm: tuple[tuple[str, tuple[int, ...]], ...]

    def of(self, sort: str | None) -> tuple[int, ...] | None:
        """The permutation of ``sort``, or None when the renaming leaves it alone."""
        for s, p in self.perm:
            if s == sort:
                return None if list(p) == sorted(p) else p
        return None

    def value(self, sort: str | None, x: Any) -> Any:
        p = self.of(sort)
        return x if p is None or x == NONE else p[x]

    def move(self, m: Move) -> Move:
        return Move(m.act, tuple((n, self.value(m.act.sort_of(n), x)) for n, x in m.args))

    def output(self, m: Move, out: Mapping[str, Any]) -> dict[str, Any]:
        declared = dict(m.act.out_sorts)
        res = {}
        for name, x in out.items():
            o = declared.get(name, declared.get("*"))
            if o is None:
                res[name] = x
            elif isinstance(o, str):
                res[name] = self.value(o, x)
            else:
                res[name] = tuple(self.value(s, y) for s, y in zip(o, x, strict=True))
        return res

    def __str__(self) -> str:
        parts = []
        for s, p in self.perm:
            if list(p) != sorted(p):
                parts.append(f"{s} " + ", ".join(f"{k}->{v}" for k, v in enumerate(p) if k != v))
        return " and ".join(parts) or "identity"


def _perms(n: int, k: int, whole: bool) -> list[tuple[int, ...]]:
    """Generators of the renamings of ``0..k-1`` among themselves (the rest kept) when
    ``whole`` is False, else every renaming of them."""
    rest = tuple(range(k, n))
    if whole:
        return [p + rest for p in permutations(range(k))]
    out = []
    if k >= 2:
        out.append((1, 0) + tuple(range(2, k)) + rest)
    if k >= 3:
        out.append(tuple(range(1, k)) + (0,) + rest)
    return out


def _renamings(spec: Spec, key: tuple[int, ...], whole: bool) -> list[Renaming]:
    """The renamings (``whole``) or their generators at a state whose ordered sorts have
    ``key`` used slots each: the symmetric sorts whole, the ordered ones among their used
    slots."""
    sizes = {**sorts(spec), **ordered(spec)}
    used_of = dict(zip(ordered(spec), key, strict=True))
    same = {s: tuple(range(n)) for s, n in sizes.items()}
    if whole:
        each = [_perms(n, used_of.get(s, n), True) for s, n in sizes.items()]
        return [Renaming(tuple(zip(sizes, ps, strict=True))) for ps in product(*each)]
    out = []
    for s, n in sizes.items():
        for p in _perms(n, used_of.get(s, n), False):
            out.append(Renaming(tuple((t, p if t == s else same[t]) for t in sizes)))
    return out


def generators(spec: Spec, key: tuple[int, ...] | None = None) -> list[Renaming]:
    """Per symmetric sort with two or more values, a swap of its first two; with three or more,
    also a rotation of all; the same for each ordered sort's ``key`` used slots (none when
    ``key`` is not given)."""
    return _renamings(spec, key or (0,) * len(ordered(spec)), False)


def group(spec: Spec, key: tuple[int, ...] | None = None) -> list[Renaming]:
    """Every renaming of the symmetric sorts and of each ordered sort's ``key`` used slots
    (none when ``key`` is not given), the identity first."""
    return _renamings(spec, key or (0,) * len(ordered(spec)), True)


def sources(pi: Renaming, sort: str | None, keys: int) -> list[int]:
    """For each slot of a variable keyed by ``sort`` (``keys`` slots), the slot whose values
    it takes under ``pi``."""
    inv = list(range(keys))
    kp = pi.of(sort)
    if kp is not None:
        for k, to in enumerate(kp):
            inv[to] = k
    return inv


def renamer(spec: Spec, pi: Renaming, key: tuple[int, ...] | None = None) -> Callable[[Any], Any]:
    """``s -> pi(s)`` as generated Python: each keyed slot moved to its renamed key, each value
    of a ``ref`` renamed (``NONE`` kept), then the spec's ``canon``.  ``key``: the number of
    used slots of each ordered sort in the states it renames (as :class:`Canon` groups them);
    a fresh slot of an ordered sort keeps its values as they are, a ``ref`` included (the lease's
    unsent instances keep id 0, the session's their ``rid`` 0: the initial value of a slot no
    move has used yet, which the send that uses it overwrites, is no name of anything)."""
    env: dict[str, Any] = {"T": spec.state_type, "C": spec.canon}
    fresh_from = dict(zip(ordered(spec), key or (), strict=False))
    parts = []
    for n, v in enumerate(spec.vars):
        vp = pi.of(v.ref)
        if vp is not None:
            env[f"M{n}"] = {NONE: NONE, **dict(enumerate(vp))}

        def val(x: str, n: int = n, vp: Any = vp) -> str:
            return x if vp is None else f"M{n}[{x}]"

        if v.keys is None:
            parts.append(val(f"s[{n}]"))
            continue
        inv = sources(pi, v.sort, v.keys)
        first_fresh = fresh_from.get(v.sort, v.keys) if v.sort is not None else v.keys
        parts.append(
            "("
            + "".join(
                (val(f"s[{n}][{k}]") if k < first_fresh else f"s[{n}][{k}]") + ", " for k in inv
            )
            + ")"
        )
    body = f"T({', '.join(parts)})"
    src = f"def rename(s):\n    return {body if spec.canon is None else f'C({body})'}\n"
    exec(compile(src, f"<renaming {pi}>", "exec"), env)
    fn: Callable[[Any], Any] = env["rename"]
    return fn


class Canon:
    """The canonical representative of a state's orbit: the least of its renamings under every
    renaming of the symmetric sorts and of the used slots of the ordered ones (exact: two states
    get the same one exactly when one is such a renaming of the other).  A state whose used slots
    are not a prefix (the check refuses a model that reaches one) is renamed in its symmetric
    sorts alone: still a renaming, so still sound."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.used = [used(spec, s) for s in ordered(spec)]
        self._at: dict[tuple[int, ...], tuple[list[Renaming], list[Callable[[Any], Any]]]] = {}

    def key(self, s: Any) -> tuple[int, ...]:
        """The number of used slots of each ordered sort in ``s`` (0 where not a prefix)."""
        return tuple([u(s) or 0 for u in self.used])

    def group(self, s: Any) -> tuple[list[Renaming], list[Callable[[Any], Any]]]:
        """The renamings of ``s``'s orbit, the identity first, and their renamers."""
        key = self.key(s)
        found = self._at.get(key)
        if found is None:
            rs = group(self.spec, key)
            found = self._at[key] = (rs, [renamer(self.spec, pi, key) for pi in rs])
        return found

    def __call__(self, s: Any) -> Any:
        fns = self.group(s)[1]
        # the identity needs no copy (without ``canon``: a state is its own identity renaming)
        best = s
        for r in fns[1:] if self.spec.canon is None else fns:
            t = r(s)
            if t < best:
                best = t
        return best

    def relating(self, c: Any, x: Any) -> Renaming | None:
        """A renaming taking ``c`` to ``x``, or None when ``x`` is not in ``c``'s orbit."""
        for pi, r in zip(*self.group(c), strict=True):
            if r(c) == x:
                return pi
        return None


@dataclass(frozen=True)
class Broken:
    """Where the commutation fails: the rule (the guard, effect or output of an action, or a
    property), the renaming, the state and the move (``-`` for a state property)."""

    rule: str
    renaming: str
    state: Any
    move: str

    def text(self) -> str:
        return (
            f"{self.rule} is not symmetric under renaming {self.renaming}: "
            f"{self.move} from state {dict(self.state._asdict())}"
        )


@dataclass(frozen=True)
class SymmetryResult:
    """What :func:`check` found: the sorts renamed (with their sizes), those left out and why,
    the states checked, whether that was every state, and the first break, if any."""

    label: str
    sorts: tuple[tuple[str, int], ...]
    exempt: tuple[tuple[str, str], ...]
    states: int
    complete: bool
    broken: Broken | None

    @property
    def ok(self) -> bool:
        return self.broken is None

    def text(self) -> str:
        renamed = ", ".join(f"{s} ({n})" for s, n in self.sorts if n >= 2) or "no sort"
        reach = "every state" if self.complete else f"the first {self.states} states"
        left = "".join(f"; {s} {why}" for s, why in self.exempt)
        if self.broken is not None:
            return f"not symmetric in {renamed}: {self.broken.text()}{left}"
        return f"symmetric in {renamed}, checked on {reach} ({self.states}){left}"


def check(spec: Spec, rules: Any, limit: int = LIMIT) -> SymmetryResult:
    """Check that ``spec``'s rules and properties commute with renaming, and that its ordered
    sorts are filled in order (module text), on ``rules``, the rules the explorer runs
    (:func:`symmetry_of` calls this on an engine's, ``proofs/rules.py``), on the
    states reached from the initial one by moves and by the generators, breadth first, at most
    ``limit``."""
    sizes = tuple(sorts(spec).items()) + tuple(ordered(spec).items())
    order_names = list(ordered(spec))
    used_of = [(s, used(spec, s)) for s in order_names]
    moves = rules.moves
    at = {m: k for k, m in enumerate(moves)}
    gens_at: dict[tuple[int, ...], list[tuple[Renaming, Callable[[Any], Any], list[int]]]] = {}
    state_tests = list(rules.state.items())
    left = tuple((s, "left out: " + why) for s, why in spec.asymmetric) + tuple(
        (s, "renamed only among its used slots: " + why) for s, why in spec.ordered
    )

    def result(count: int, complete: bool, broken: Broken | None) -> SymmetryResult:
        return SymmetryResult(spec.label(), sizes, left, count, complete, broken)

    renamers: dict[tuple[Renaming, tuple[int, ...]], Callable[[Any], Any]] = {}

    def rename(pi: Renaming, key: tuple[int, ...]) -> Callable[[Any], Any]:
        found = renamers.get((pi, key))
        if found is None:
            found = renamers[pi, key] = renamer(spec, pi, key)
        return found

    def gens(key: tuple[int, ...]) -> list[tuple[Renaming, Callable[[Any], Any], list[int]]]:
        found = gens_at.get(key)
        if found is None:
            found = gens_at[key] = [
                (pi, rename(pi, key), [at[pi.move(m)] for m in moves])
                for pi in generators(spec, key)
            ]
        return found

    def order(s: Any) -> tuple[tuple[int, ...] | None, str]:
        """The used slots of each ordered sort, or None and the first sort out of order."""
        key = []
        for sort, u in used_of:
            k = u(s)
            if k is None:
                return None, sort
            key.append(k)
        return tuple(key), ""

    s0 = spec.initial()
    seen = {s0}
    todo = deque([s0])
    count = 0
    cut = False
    while todo:
        s = todo.popleft()
        count += 1
        key, sort = order(s)
        if key is None:
            rule = f"the order of {sort} (a used slot after a fresh one)"
            return result(count, False, Broken(rule, "-", s, "-"))
        mine = [None if f is None else f(s) for f in rules.fire]
        nxt = []
        keys_after: list[tuple[int, ...] | None] = [None] * len(mine)
        for k, t in enumerate(mine):
            if t is None:
                continue
            after, sort = order(t[0])
            keys_after[k] = after
            if after is None:
                rule = f"the order of {sort} (a used slot after a fresh one)"
            else:
                sort = next(
                    (n for n, x, y in zip(order_names, after, key, strict=True) if x < y), ""
                )
                rule = f"it frees a used slot of {sort}" if sort else ""
            if rule:
                rule = f"the effect of {moves[k].name} ({rule})"
                return result(count, False, Broken(rule, "-", s, str(moves[k])))
            nxt.append(t[0])
        for pi, fn, renamed in gens(key):
            ps = fn(s)
            nxt.append(ps)
            for name, test in state_tests:
                if bool(test(s)) != bool(test(ps)):
                    return result(count, False, Broken(f"property {name}", str(pi), s, "-"))
            for k, t in enumerate(mine):
                m = moves[k]
                j = renamed[k]
                fire = rules.fire[j]
                u = None if fire is None else fire(ps)
                where = None
                if (t is None) != (u is None):
                    where = f"the guard of {m.name}"
                elif t is not None and u is not None:
                    after = keys_after[k]
                    assert after is not None  # else the order was refused above
                    if rename(pi, after)(t[0]) != u[0]:
                        where = f"the effect of {m.name}"
                    elif pi.output(m, t[1]) != dict(u[1]):
                        where = f"the output of {m.name}"
                    else:
                        theirs = rules.step[j]
                        for name, test in rules.step[k].items():
                            if bool(test(s, t[0], t[1])) != bool(theirs[name](ps, u[0], u[1])):
                                where = f"property {name}"
                                break
                if where is not None:
                    return result(count, False, Broken(where, str(pi), s, str(m)))
        for x in nxt:
            if x not in seen:
                if len(seen) >= limit:
                    cut = True
                    continue
                seen.add(x)
                todo.append(x)
    return result(count, not cut, None)


def nothing_to_rename(spec: Spec) -> bool:
    """Whether no declared sort of ``spec`` has two values to rename (a run is then unreduced,
    with nothing lost)."""
    return all(n < 2 for n in [*sorts(spec).values(), *ordered(spec).values()])


def verdict(sym: SymmetryResult) -> str:
    """How a run says what the check ``sym`` decided (``Explored.symmetry``): ``reduced: `` or
    ``unreduced: `` and what was checked, or the renaming that breaks it."""
    return ("reduced: " if sym.ok else "unreduced: ") + sym.text()


def canon_of(spec: Spec, told: str) -> Canon | None:
    """The canonical representative of ``spec``'s orbits where ``told`` (:func:`verdict`)
    says the reduction is sound, else None: the run is unreduced."""
    return Canon(spec) if told.startswith("reduced: ") else None


def symmetry_of(spec: Spec, engine: str = "auto") -> Any:
    """The check of ``proofs/declared_symmetry.py`` on the rules of ``engine``: do they commute
    with renaming of the declared sorts (a ``SymmetryResult``)?"""
    return check(spec, rules_of(spec, engine))


def replay(
    spec: Spec,
    canon: Canon,
    states: list[Any],
    parent: list[tuple[int, Move | None, Any]],
    n: int,
    last: tuple[Any, Any, Any, Any] | None = None,
) -> tuple[list[dict[str, Any]], Any, str | None]:
    """The real run from the initial state to (a renaming of) reduced state ``n`` and, with
    ``last`` (``(node, move, post, output)`` of a failing or witnessing move), that move too:
    each reduced move renamed to act on the real state before it, taken by the concrete rules,
    and its successor checked to lie in the next reduced state's orbit.  Returns the rendered
    steps, the real last state, and what disagreed (None when every step checked)."""
    path: list[tuple[int, Move]] = []
    k = n
    while parent[k][0] >= 0:
        p, m, _ = parent[k]
        assert m is not None
        path.append((k, m))
        k = parent[k][0]
    path.reverse()
    if last is not None and last[1] is not None:
        path.append((-1, last[1]))
    b = spec.logic()
    x = spec.initial()
    node = 0
    steps: list[dict[str, Any]] = []
    for nxt, m in path:
        pi = canon.relating(states[node], x)
        if pi is None:
            return steps, x, f"step {len(steps) + 1}: the real state is not in its orbit"
        mv = pi.move(m)
        t = take(spec, x, mv, b)
        if t is None:
            return steps, x, f"step {len(steps) + 1}: {mv} is not enabled on the real state"
        y, out = t
        want = states[nxt] if nxt >= 0 else canon(last[2]) if last is not None else None
        if canon(y) != want:
            return steps, x, f"step {len(steps) + 1}: {mv} leaves the reduced run's orbit"
        steps.append(render_step(spec, mv, x, y, out))
        x, node = y, nxt
    return steps, x, None
