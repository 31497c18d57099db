"""Bounded model checking for the prover: shortest traces from the initial state.

For the properties induction did not prove, z3 searches for a trace of at most ``depth`` steps
that breaks each one, over a finite universe (by default 2 request instances and 2 ids, the
unrolled transition relation of ``model/session.py`` read by ``proofs/symbolic.py``).  The
length to ask at comes from the explorer: its exhaustive breadth-first search of the same
universe gives the length of each property's shortest violation (``shortest``), and z3 is asked
only at that length, where it finds the trace; a property with no violation within ``depth``
steps is not asked at all.  Without the explorer (``Prover(guide=False)``, or when it cannot
run) z3 is asked at every depth from 0, shortest first, as the tests compare.  A trace found is
replayed on the concrete backend before it is reported (the two readings must agree), and
printed like the explorer's traces.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import z3

from mcp_inflight.model import step
from mcp_inflight.model.config import Config
from mcp_inflight.model.property_kinds import Property
from mcp_inflight.model.session import Action, actions_for
from mcp_inflight.model.trace import Trace, build_trace
from mcp_inflight.proofs import symbolic as sym


class Prover(Protocol):
    """What the bounded search reads of the prover (``proofs.prove.Prover``), named here so
    that this module does not import the one that imports it."""

    cfg: Config
    depth: int
    requests: int
    ids: int
    guide: bool
    symmetric: bool
    timeout_ms: int
    queries: int
    slowest: tuple[float, str]
    spent: dict[str, float]
    progress: Callable[[str], Any]

    def _solver(self, quick: bool = False) -> z3.Solver: ...

    def _why(self, s: z3.Solver) -> str: ...


def search(
    pr: Prover,
    props: Sequence[Property],
    depth: int | None = None,
    requests: int | None = None,
    ids: int | None = None,
) -> tuple[dict[str, Trace], dict[str, str]]:
    """Shortest traces (at most ``depth`` steps) breaking each of ``props``.

    Returns ``{name: trace}`` for those broken, and the names the solver could not decide."""
    depth = pr.depth if depth is None else depth
    cfg = pr.cfg
    n = requests or pr.requests
    m = ids or pr.ids
    b = sym.Symbolic({"inst": range(n), "id": range(m)})
    acts = list(actions_for(cfg))
    # the actions that take an id (requests sent, and server-minted ids on 2025-11-25)
    sends = [k for k, a in enumerate(acts) if "i" in a.params]
    s = z3.Solver()  # collects the unrolling; each query is solved afresh (faster here)
    cur = sym.initial_finite_state(n, m)
    top_id = z3.IntVal(-1)
    choices: list[tuple[Any, Any, Any]] = []
    last_steps = None
    found: dict[str, Trace] = {}
    unknown: dict[str, str] = {}
    todo = list(props)
    at = shortest(pr, todo, n, m, depth) if pr.guide else None
    if at is not None:
        todo = [p for p in todo if p.name in at]
    for d in range(depth + 1):
        for p in list(todo):
            if at is not None and at[p.name] != d:
                continue
            if p.scope == "state":
                bad = z3.Not(sym.to_bool(p.fn(b, cur, cfg)))
            else:
                if last_steps is None:
                    continue
                a_t = choices[-1][0]
                opts = []
                for k, (a, st_pre, r_t, i_t, _g, out, post) in enumerate(last_steps):
                    v = p.fn(b, st_pre, post, cfg, a, r_t, i_t, out)
                    if v is True:
                        continue
                    opts.append(z3.And(a_t == k, z3.Not(sym.to_bool(v))))
                if not opts:
                    continue
                bad = z3.Or(*opts)
            s2 = pr._solver()
            s2.add(*s.assertions())
            s2.add(bad)
            t0 = time.monotonic()
            res = solve(s2, pr.timeout_ms)
            dt = time.monotonic() - t0
            pr.queries += 1
            pr.spent[p.name] = pr.spent.get(p.name, 0.0) + dt
            if dt > pr.slowest[0]:
                pr.slowest = (dt, f"{p.name}: bounded search at depth {d}")
            if res == z3.sat:
                found[p.name] = replay(pr, s2.model(), choices, acts, p)
                todo.remove(p)
            elif res == z3.unknown:
                unknown[p.name] = f"depth {d}: {pr._why(s2)}"
                todo.remove(p)
            elif at is not None:
                raise RuntimeError(
                    f"bounded search for {p.name}: the explorer's shortest violation has "
                    f"{d} steps, z3 finds none of that length (the readings disagree)"
                )
        if not todo or d == depth:
            break
        pr.progress(f"bounded search depth {d + 1} ({len(todo)} properties left)")
        a_t, r_t, i_t = z3.Int(f"a{d}"), z3.Int(f"r{d}"), z3.Int(f"i{d}")
        choices.append((a_t, r_t, i_t))
        is_send = z3.Or(*[a_t == k for k in sends])
        # ids are interchangeable (the clients' and the server's alike; checked by
        # proofs/declared_symmetry.py): take them in order of first use (no trace is lost); a model not
        # shown symmetric is searched with ids in any order
        s.add(
            a_t >= 0,
            a_t < len(acts),
            r_t >= 0,
            r_t < n,
            i_t >= 0,
            i_t < m,
            z3.Implies(is_send, i_t <= top_id + 1) if pr.symmetric else z3.BoolVal(True),
            z3.Implies(z3.Not(is_send), i_t == 0),
        )
        top_id = z3.If(z3.And(is_send, i_t > top_id), i_t, top_id)
        steps = []
        for k, a in enumerate(acts):
            ia = i_t if "i" in a.params else None
            g, out, writes = a.run(b, cur, cfg, r_t, ia)
            post = sym.apply_writes(cur, writes)
            steps.append((a, cur, r_t, ia, g, out, post))
            s.add(z3.Implies(a_t == k, sym.to_bool(g)))
        nxt = sym.fresh_finite_state(f"s{d + 1}", n, m)
        for f, now in cur.fields().items():
            new = nxt.fields()[f]
            posts = [st[6].fields()[f] for st in steps]
            if isinstance(now, sym.Vec):
                for j in range(len(now)):
                    s.add(new[j] == choose(a_t, [p_[j] for p_ in posts], now[j]))
            else:
                s.add(new == choose(a_t, posts, now))
        cur = nxt
        last_steps = steps
    return found, unknown


def shortest(
    pr: Prover, props: Sequence[Property], n: int, m: int, depth: int
) -> dict[str, int] | None:
    """The length of the shortest violation of each of ``props`` within ``depth`` steps, on
    the universe of the bounded search (``n`` instances, ``m`` ids), found by the explorer's
    exhaustive breadth-first search (``None``: the explorer could not run).  The bounded
    search then asks z3 only at that length: every shallower query would come back unsat
    and the deeper ones are not needed; a property absent here has no violation within
    ``depth`` steps.  z3 finds the trace itself and its replay is checked as before."""
    from mcp_inflight.proofs.explorer import explore

    cfg = dataclasses.replace(pr.cfg, ids=m, requests=n)  # the same client and options
    t0 = time.monotonic()
    try:
        ex = explore(cfg, symmetry=pr.symmetric, progress=False)
    except Exception as e:  # pragma: no cover - then z3 searches every depth
        pr.progress(f"bounded search without the explorer ({e})")
        return None
    dt = time.monotonic() - t0
    for p in props:
        pr.spent[p.name] = pr.spent.get(p.name, 0.0) + dt / len(props)
    if not ex.complete:  # pragma: no cover - no state limit is given
        return None
    names = {p.name for p in props}
    return {
        v.name: len(v.trace)
        for v in ex.verdicts
        if v.name in names and not v.ok and v.trace is not None and len(v.trace) <= depth
    }


def replay(
    pr: Prover,
    model: z3.ModelRef,
    choices: list[tuple[Any, Any, Any]],
    acts: list[Action],
    prop: Property,
) -> Trace:
    """The trace in ``model``, replayed on the concrete backend and rendered as the explorer
    renders its traces.  A disagreement between the two readings is an error, not a result."""
    raw = []
    for a_t, r_t, i_t in choices:
        a = acts[model.eval(a_t, model_completion=True).as_long()]
        r = model.eval(r_t, model_completion=True).as_long()
        i = model.eval(i_t, model_completion=True).as_long() if "i" in a.params else None
        raw.append((a, r, i))
    id_map: dict[int, int] = {}
    for _a, _r, i in raw:
        if i is not None and i not in id_map:
            id_map[i] = len(id_map)
    sends = sum(1 for a, _, _ in raw if a.trigger == "send")
    # an action such as end_session names a slot no request used: keep it in the universe
    slots = max([sends] + [r + 1 for _, r, _ in raw])
    cfg = dataclasses.replace(pr.cfg, ids=max(1, len(id_map)), requests=max(1, slots))
    b = step.backend(cfg)
    s = step.start(cfg)
    steps = []
    for a, r, i in raw:
        i2 = None if i is None else id_map[i]
        tr = step.take(cfg, s, step.Move(a, r, i2), b) if r < cfg.requests else None
        if tr is None:
            raise RuntimeError(
                f"bounded trace for {prop.name}: {a.name} is not enabled when "
                "replayed concretely (the readings disagree)"
            )
        steps.append((a, tr.args, s, tr.post, tr.out))
        s = tr.post
    if prop.scope == "state":
        broken = not prop.fn(b, s, cfg)
    else:
        a, args, pre, post, out = steps[-1]
        broken = not prop.fn(b, pre, post, cfg, a, args["r"], args.get("i"), out)
    if not broken:
        raise RuntimeError(
            f"bounded trace for {prop.name} does not break it when replayed "
            "concretely (the readings disagree)"
        )
    return build_trace(cfg, [(a, args, pre, post) for a, args, pre, post, _ in steps])


def solve(solver: z3.Solver, timeout_ms: int) -> z3.CheckSatResult:
    """``solver.check()``, interrupted if it overruns its own timeout (z3 does not always notice
    a timeout inside quantifier instantiation); an interrupted query is ``unknown``.  One
    watchdog thread per process keeps every query's deadline (a thread per query cost more than
    many of the small queries themselves)."""
    token = _WATCHDOG.arm(timeout_ms / 1000 + 0.2)
    try:
        return solver.check()
    except z3.Z3Exception:
        return z3.unknown
    finally:
        _WATCHDOG.disarm(token)


def why(solver: z3.Solver, rlimit: int, timeout_ms: int) -> str:
    """Why ``solver`` answered unknown, in the provers' terms: its budget of ``rlimit``
    resource units spent, or its wall-clock timeout of ``timeout_ms`` passed."""
    reason = solver.reason_unknown()
    st = solver.statistics()
    spent = st.get_key_value("rlimit count") if "rlimit count" in st.keys() else 0
    if "resource" in reason or spent >= rlimit:
        return f"budget of {rlimit / 1e6:g} million resource units spent (raise --budget)"
    if reason in ("timeout", "canceled", "interrupted from keyboard"):
        return f"wall-clock timeout of {timeout_ms / 1000:g} s (raise --timeout)"
    return reason or "unknown"


class _Watchdog:
    """The deadlines of the queries running in this process, kept by one daemon thread that
    interrupts z3 when the earliest passes (what a ``threading.Timer`` per query did)."""

    def __init__(self) -> None:
        self._reset()
        # a forked child has no watchdog thread, and may have copied the lock while the
        # parent's thread held it: it starts afresh
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._cv = threading.Condition()
        self._deadlines: dict[int, float] = {}
        self._next = 0
        self._pid = -1  # the process whose thread keeps the deadlines

    def arm(self, seconds: float) -> int:
        with self._cv:
            self._next += 1
            self._deadlines[self._next] = time.monotonic() + seconds
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="z3-watchdog", daemon=True).start()
            self._cv.notify()
            return self._next

    def disarm(self, token: int) -> None:
        with self._cv:
            self._deadlines.pop(token, None)

    def _run(self) -> None:
        with self._cv:
            while True:
                if not self._deadlines:
                    self._cv.wait()
                    continue
                token, at = min(self._deadlines.items(), key=lambda kv: kv[1])
                left = at - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                del self._deadlines[token]
                z3.main_ctx().interrupt()


_WATCHDOG = _Watchdog()


def choose(a_t: Any, options: Sequence[Any], unchanged: Any) -> Any:
    """``options[a_t]``, skipping the actions that leave the slot as it was."""
    term = unchanged
    for k in range(len(options) - 1, -1, -1):
        v = options[k]
        if isinstance(v, bool):
            v = z3.BoolVal(v)
        if z3.is_expr(v) and v.eq(unchanged):
            continue
        term = z3.If(a_t == k, v, term)
    return term
