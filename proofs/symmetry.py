"""Symmetry checked, not trusted: the session model's rules commute with renaming.

The explorer keeps one state per orbit under renaming of request instances and of ids
(``proofs/flat.py:canonical_source``), and the bounded model checker takes ids in order of first
use (``proofs/bmc.py``).  Both are sound only when the model is *symmetric* in those sorts: for
every renaming ``pi`` (a permutation of instances and one of ids), every state ``s`` and every
move ``m``, ``m`` is enabled on ``s`` exactly when ``pi(m)`` is enabled on ``pi(s)``, and then
``pi(m)``'s successor and outputs on ``pi(s)`` are the renaming of ``m``'s on ``s``; every
property gives the same answer on a state (or transition) and on its renaming.

A rule that reads a constant id or instance ("id 0 is special") breaks it, and a reduced search
then merges states that the rule tells apart: it may report "holds" where the unreduced search
finds a counterexample.  This module checks the commutation on the reachable states of a
configuration, unreduced, breadth first (every state when there are at most ``limit``; else the
first ``limit`` in breadth-first order, said in the result), under generators of the renaming
group (a swap of two elements and a rotation of all; commutation with the generators gives it
for every renaming they compose).  The first rule that breaks it is named, with the state and
the move.  This is the check of the session's own engines' reduction (``explore(cfg,
engine=...)``, the references); ``check`` makes the one explorer's declared check instead
(``proofs/declared_symmetry.py``), whose broken rule it words alike.

One condition breaks the symmetry of instances on purpose: sends fill instance slots in order
(``model/session_conditions.py:SLOT_ORDER``), a reduction of its own.  The rules are checked without it,
and on every checked state the unsent slots are checked to be interchangeable (each at its
initial values), so that taking the first of them loses no behaviour up to renaming.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import NONE, Concrete, apply_writes
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.session_conditions import CONDITIONS, SLOT_ORDER
from mcp_inflight.model.session_state import FIELDS, canonical_clock, initial
from mcp_inflight.model.step import Move, Transition, backend, enabled, moves, start, take

from .declared_symmetry import Broken
from .renaming import Renaming, SymmetryResult, generators

#: States checked per configuration at most, breadth first: the default bound's unreduced spaces
#: on 2026-07-28 (9-17 thousand states) are checked whole at 20,000; the session engines'
#: reductions were checked on the first 4,000 (every rule met on the shortest paths), the bound
#: the tests compare the flat and interpreted checks at (``check`` now makes the one
#: explorer's declared check, ``proofs/declared_symmetry.py``).
LIMIT = 20_000
CHECK_LIMIT = 4_000


def _value(sort: str, v: Any, pi: Renaming) -> Any:
    if sort == "id":
        return pi.ids[v]
    if sort == "inst?":
        return v if v == NONE else pi.inst[v]
    return v


def rename_state(cfg: Config, s: Any, pi: Renaming) -> Any:
    """``s`` with every instance and id renamed by ``pi`` (keys and values alike)."""
    vals = []
    for f in FIELDS:
        x = getattr(s, f.name)
        if f.key is None:
            vals.append(_value(f.sort, x, pi))
            continue
        perm = pi.inst if f.key == "inst" else pi.ids
        new = [None] * len(x)
        for k, v in enumerate(x):
            new[perm[k]] = _value(f.sort, v, pi)
        vals.append(tuple(new))
    return canonical_clock(cfg, type(s)(*vals))


def rename_move(m: Move, pi: Renaming) -> Move:
    return Move(m.action, pi.inst[m.r], None if m.i is None else pi.ids[m.i])


def _rename_out(out: dict[str, Any], pi: Renaming) -> dict[str, Any]:
    return {k: (_value("inst?", t, pi), d) for k, (t, d) in out.items()}


def _properties(cfg: Config) -> list[Any]:
    return [p for p in PROPERTIES if p.applies(cfg)]


def _judge(p: Any, b: Any, cfg: Config, t: Transition | None, s: Any) -> bool:
    if p.scope == "step":
        assert t is not None
        m = t.move
        return bool(p.fn(b, t.pre, t.post, cfg, m.action, m.r, m.i, t.out))
    return bool(p.fn(b, s, cfg))


def _relaxed(cfg: Config, s: Any, m: Move, b: Concrete) -> Transition | None:
    """``m`` from ``s`` with the guard's slot-order condition left out."""
    a, r, i = m.action, m.r, m.i
    if not enabled(cfg, s, m, b, skip=(SLOT_ORDER,)):
        return None
    out = a.output(b, s, cfg, r, i)
    return Transition(
        m, s, canonical_clock(cfg, apply_writes(s, a.effect(b, s, cfg, r, i, out))), out
    )


def _unsent_apart(cfg: Config, s: Any) -> str | None:
    """The first unsent slot that is not at its initial values (a field named), or None."""
    init = initial(cfg)
    for r in range(cfg.requests):
        if s.life[r] != Life.UNSENT:
            continue
        for f in FIELDS:
            if f.key == "inst" and getattr(s, f.name)[r] != getattr(init, f.name)[r]:
                return f"{f.name}[{r}]"
    return None


def _states(
    cfg: Config,
    limit: int,
    cut: list[bool],
    successors: Callable[[Any], Iterable[Any]] | None = None,
) -> Iterator[Any]:
    """The reachable states, breadth first, at most ``limit``; ``cut[0]`` set when some were
    left out.  ``successors``: a state's successors in the order of its moves (default: each
    move taken through ``model/step.py``); a state's are asked for after it is yielded."""
    if successors is None:
        b = backend(cfg)
        ms = list(moves(cfg))

        def successors(s: Any) -> Iterable[Any]:
            return [t.post for m in ms if (t := take(cfg, s, m, b)) is not None]

    s0 = start(cfg)
    seen = {s0}
    todo = deque([s0])
    while todo:
        s = todo.popleft()
        yield s
        for post in successors(s):
            if post not in seen:
                if len(seen) >= limit:
                    cut[0] = True
                    continue
                seen.add(post)
                todo.append(post)


def check(cfg: Config, limit: int = LIMIT, engine: str | None = None) -> SymmetryResult:
    """Check that ``cfg``'s rules and properties commute with every renaming (module text).

    ``engine``: ``flat`` (the default) evaluates the rules generated as Python over the
    compiled explorer's flat states (``proofs/symmetry_flat.py``); ``interpreted`` is
    :func:`check_interpreted`, the reference, which reads them through ``model/step.py``.  Both
    give the same result (``tests/test_symmetry.py``).  The environment variable
    ``MCP_INFLIGHT_REFERENCE=1`` makes ``interpreted`` the default."""
    engine = engine or ("interpreted" if reference_paths() else "flat")
    if engine == "interpreted":
        return check_interpreted(cfg, limit)
    if engine != "flat":
        raise ValueError(f"engine must be flat or interpreted, not {engine!r}")
    from .symmetry_flat import check as check_flat

    return check_flat(cfg, limit, PROPERTIES)


def reference_paths() -> bool:
    """Whether ``MCP_INFLIGHT_REFERENCE`` asks ``check`` for its reference paths (the
    interpreted symmetry check, the prover after the explorer): the same verdicts, slower."""
    import os

    return os.environ.get("MCP_INFLIGHT_REFERENCE", "") not in ("", "0")


def check_interpreted(cfg: Config, limit: int = LIMIT) -> SymmetryResult:
    """Check that ``cfg``'s rules and properties commute with every renaming (module text),
    through ``model/step.py`` and the concrete backend: the reference of ``symmetry_flat``.

    A renamed reachable state is itself reachable, so most states are met twice, as a state
    of the search and as another's renaming: each state's relaxed moves and property
    verdicts are computed once and kept for the run."""
    b = backend(cfg)
    gens = generators(cfg)
    props = _properties(cfg)
    state_props = [p for p in props if p.scope == "state"]
    step_props = [p for p in props if p.scope == "step"]
    ms = list(moves(cfg))
    at = {m: k for k, m in enumerate(ms)}
    renamed = [[at[rename_move(m, pi)] for m in ms] for pi in gens]
    relaxed: dict[Any, list[Transition | None]] = {}
    judged: dict[Any, list[bool]] = {}
    judged_steps: dict[tuple[Any, int], list[bool]] = {}
    renamings: list[dict[Any, Any]] = [{} for _ in gens]

    def renamed_state(s: Any, g: int) -> Any:
        found = renamings[g].get(s)
        if found is None:
            found = renamings[g][s] = rename_state(cfg, s, gens[g])
        return found

    def steps_of(s: Any) -> list[Transition | None]:
        found = relaxed.get(s)
        if found is None:
            found = relaxed[s] = [_relaxed(cfg, s, m, b) for m in ms]
        return found

    def verdicts_of(s: Any) -> list[bool]:
        found = judged.get(s)
        if found is None:
            found = judged[s] = [_judge(p, b, cfg, None, s) for p in state_props]
        return found

    def step_verdicts_of(s: Any, k: int, t: Transition) -> list[bool]:
        found = judged_steps.get((s, k))
        if found is None:
            found = judged_steps[s, k] = [_judge(p, b, cfg, t, None) for p in step_props]
        return found

    def in_order(s: Any, m: Move) -> bool:
        """Whether ``m``'s slot-order condition, left out of its relaxed transition, holds."""
        a = m.action
        return SLOT_ORDER not in a.conditions(cfg) or bool(
            CONDITIONS[SLOT_ORDER](b, s, cfg, m.r, m.i)
        )

    def successors(s: Any) -> list[Any]:
        """A move's transition is its relaxed one where its slot-order condition holds."""
        return [t.post for m, t in zip(ms, steps_of(s), strict=True) if t and in_order(s, m)]

    count, cut = 0, [False]
    for s in _states(cfg, limit, cut, successors):
        count += 1
        apart = _unsent_apart(cfg, s)
        if apart is not None:
            rule = f"slot order (unsent slot {apart} differs from its initial value)"
            return SymmetryResult(cfg.label, count, False, Broken(rule, "-", s, "-"))
        mine = steps_of(s)
        for g, pi in enumerate(gens):
            ps = renamed_state(s, g)
            for p, v, w in zip(state_props, verdicts_of(s), verdicts_of(ps), strict=True):
                if v != w:
                    return SymmetryResult(
                        cfg.label, count, False, Broken(f"property {p.name}", str(pi), s, "-")
                    )
            theirs = steps_of(ps)
            for k, t in enumerate(mine):
                m = ms[k]
                u = theirs[renamed[g][k]]
                where = None
                if (t is None) != (u is None):
                    where = f"the guard of {m.action.name}"
                elif t is not None and u is not None:
                    if renamed_state(t.post, g) != u.post:
                        where = f"the effect of {m.action.name}"
                    elif _rename_out(t.out, pi) != u.out:
                        where = f"the output of {m.action.name}"
                    else:
                        here, there = (
                            step_verdicts_of(s, k, t),
                            step_verdicts_of(ps, renamed[g][k], u),
                        )
                        for p, v, w in zip(step_props, here, there, strict=True):
                            if v != w:
                                where = f"property {p.name}"
                                break
                if where is not None:
                    mv = f"{m.action.name}({', '.join(f'{k}={v}' for k, v in m.args.items())})"
                    return SymmetryResult(cfg.label, count, False, Broken(where, str(pi), s, mv))
    return SymmetryResult(cfg.label, count, not cut[0], None)
