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
reachable: the lease's unsent instances keep id 0), which is what the composition argument needs.
At most ``limit`` states are checked (the result says whether that was all).  The first rule that
breaks it is named: the guard, effect or output of an action, or a property, with the renaming,
the state and the move.

Outputs are renamed as ``out_sorts`` declares; an output it does not declare is compared as it
is, which is stricter than needed (an undeclared output that names a sort fails the check and the
explorer runs unreduced: never unsound).

A sort the rules do not treat alike by design is declared in the spec's ``asymmetric`` with why
(the session's instance slots, filled in order by ``model/session.py:SLOT_ORDER``, a reduction of
its own): the check and the reduction leave it out, and the result says so.  Leaving it out is
always sound (the group is smaller); declaring it symmetric would make the check fail, and the
tests show that it does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import permutations, product
from typing import Any

from mcp_inflight.model.declare import Move, Spec, render_step
from mcp_inflight.model.logic import NONE

from .stepping import take

#: States checked at most, breadth first over moves and renamings.
LIMIT = 20_000


def sorts(spec: Spec) -> dict[str, int]:
    """The sorts a renaming permutes: every sort the spec declares on a variable, parameter or
    output, with its number of values (``spec.domains``), less the ``asymmetric`` ones."""
    named: set[str] = set()
    for v in spec.vars:
        named.update(x for x in (v.sort, v.ref) if x is not None)
    for a in spec.acts:
        named.update(s for _, s in a.sorts)
        for _, o in a.out_sorts:
            named.update([o] if isinstance(o, str) else [x for x in o if x is not None])
    exempt = {s for s, _ in spec.asymmetric}
    missing = sorted(named - set(spec.domains))
    if missing:
        raise ValueError(f"{spec.model}: sort(s) {', '.join(missing)} not in its domains")
    return {s: len(spec.domains[s]) for s in sorted(named - exempt)}


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


def generators(spec: Spec) -> list[Renaming]:
    """Per symmetric sort with two or more values, a swap of its first two; with three or more,
    also a rotation of all."""
    sizes = sorts(spec)
    same = {s: tuple(range(n)) for s, n in sizes.items()}
    out = []
    for s, n in sizes.items():
        moved = []
        if n >= 2:
            moved.append((1, 0) + tuple(range(2, n)))
        if n >= 3:
            moved.append(tuple(range(1, n)) + (0,))
        for p in moved:
            out.append(Renaming(tuple((t, p if t == s else same[t]) for t in sizes)))
    return out


def group(spec: Spec) -> list[Renaming]:
    """Every renaming of the symmetric sorts, the identity first."""
    sizes = sorts(spec)
    names = list(sizes)
    each = [list(permutations(range(sizes[s]))) for s in names]
    return [Renaming(tuple(zip(names, ps, strict=True))) for ps in product(*each)]


def renamer(spec: Spec, pi: Renaming) -> Callable[[Any], Any]:
    """``s -> pi(s)`` as generated Python: each keyed slot moved to its renamed key, each value
    of a ``ref`` renamed (``NONE`` kept), then the spec's ``canon``."""
    env: dict[str, Any] = {"T": spec.state_type, "C": spec.canon}
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
        kp = pi.of(v.sort)
        inv = list(range(v.keys))
        if kp is not None:
            for k, to in enumerate(kp):
                inv[to] = k
        parts.append("(" + "".join(val(f"s[{n}][{k}]") + ", " for k in inv) + ")")
    body = f"T({', '.join(parts)})"
    src = f"def rename(s):\n    return {body if spec.canon is None else f'C({body})'}\n"
    exec(compile(src, f"<renaming {pi}>", "exec"), env)
    fn: Callable[[Any], Any] = env["rename"]
    return fn


class Canon:
    """The canonical representative of a state's orbit: the least of its renamings under every
    renaming of the symmetric sorts (exact: two states get the same one exactly when one is a
    renaming of the other)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.group = group(spec)
        self.renamers = [renamer(spec, pi) for pi in self.group]
        # the identity needs no copy (without ``canon``: a state is its own identity renaming)
        self.others = self.renamers[1:] if spec.canon is None else self.renamers

    def __call__(self, s: Any) -> Any:
        best = s
        for r in self.others:
            t = r(s)
            if t < best:
                best = t
        return best

    def relating(self, c: Any, x: Any) -> Renaming | None:
        """A renaming taking ``c`` to ``x``, or None when ``x`` is not in ``c``'s orbit."""
        for pi, r in zip(self.group, self.renamers, strict=True):
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
        left = "".join(f"; {s} left out: {why}" for s, why in self.exempt)
        if self.broken is not None:
            return f"not symmetric in {renamed}: {self.broken.text()}{left}"
        return f"symmetric in {renamed}, checked on {reach} ({self.states}){left}"


def _states(
    spec: Spec, rules: Any, gens: list[Callable[[Any], Any]], limit: int, cut: list[bool]
) -> Iterator[Any]:
    """The states reached from the initial one by moves and by ``gens``, breadth first, at
    most ``limit``; ``cut[0]`` set when some were left out."""
    s0 = spec.initial()
    seen = {s0}
    todo = deque([s0])
    while todo:
        s = todo.popleft()
        yield s
        nxt = [g(s) for g in gens]
        for fire in rules.fire:
            fired = None if fire is None else fire(s)
            if fired is not None:
                nxt.append(fired[0])
        for t in nxt:
            if t not in seen:
                if len(seen) >= limit:
                    cut[0] = True
                    continue
                seen.add(t)
                todo.append(t)


def check(
    spec: Spec, limit: int = LIMIT, rules: Any = None, engine: str = "auto"
) -> SymmetryResult:
    """Check that ``spec``'s rules and properties commute with renaming (module text), on the
    rules ``rules`` (the explorer's, ``proofs/explorer.py``; by default those of ``engine``)."""
    if rules is None:
        from .explorer import _rules

        rules = _rules(spec, engine)
    sizes = tuple(sorts(spec).items())
    gens = generators(spec)
    fns = [renamer(spec, pi) for pi in gens]
    moves = rules.moves
    at = {m: k for k, m in enumerate(moves)}
    renamed = [[at[pi.move(m)] for m in moves] for pi in gens]
    state_tests = [(n, t) for n, t in rules.state.items()]

    def result(count: int, complete: bool, broken: Broken | None) -> SymmetryResult:
        return SymmetryResult(spec.label(), sizes, spec.asymmetric, count, complete, broken)

    count, cut = 0, [False]
    for s in _states(spec, rules, fns, limit, cut):
        count += 1
        mine = [None if f is None else f(s) for f in rules.fire]
        for g, (pi, fn) in enumerate(zip(gens, fns, strict=True)):
            ps = fn(s)
            for name, test in state_tests:
                if bool(test(s)) != bool(test(ps)):
                    return result(count, False, Broken(f"property {name}", str(pi), s, "-"))
            for k, t in enumerate(mine):
                m = moves[k]
                j = renamed[g][k]
                fire = rules.fire[j]
                u = None if fire is None else fire(ps)
                where = None
                if (t is None) != (u is None):
                    where = f"the guard of {m.name}"
                elif t is not None and u is not None:
                    if fn(t[0]) != u[0]:
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
    return result(count, not cut[0], None)


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
    steps = []
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
