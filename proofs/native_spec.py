"""The one explorer's native engine: a declared model's rules as C, the whole search in C.

``proofs/native_spec_c.py`` generates each move's guard, outputs, writes and step properties
and each state property of a :class:`~mcp_inflight.model.declare.Spec` as C over states packed
one byte a slot, with the spec's ``ranks`` (send times kept by rank, ``model/declare.py``:
the session's stdio clock) applied after every move's writes and to the initial state, as
the compiled engine applies the ``canon`` they define; ``proofs/native_spec_search.py`` is the
breadth-first search, which :func:`search_native` runs on ``threads`` (default
``native_build.default_threads()``: both cores at most, one inside a worker of the checkers'
pools): each level's batches of ``native_build.PARALLEL_FROM`` states or more split among them,
their records handed over in order (``proofs/native_spec_threads.py``), so the same states,
numbering, counts and verdicts as on one thread; ``NativeExplored.threads`` says how many it
took.  The C is built
once per generated source with the C compiler and cached (:func:`build`: the directory of
``proofs/native_build.py``, under ``proofs/cache.py``'s directory, keyed by a hash of the source), then
loaded with :mod:`ctypes`.  :func:`search_native` hands back the :class:`Explored` of
``proofs/explorer.py``, found exactly as the compiled engine finds it: states, transitions,
depth, per property its verdict and shortest trace, coverage per action, deadlocks (the states
with no move where the spec's ``final`` does not hold, judged in C), the early stop of
``until``, ``max_states``, and liveness on the graph it kept: an ``eventually`` property under
the weak fairness it names (the fair strongly connected components found in C; a failure's
lasso loop walked here on that graph's edges, as the compiled engine walks its own), and the
graph's own ``reachable`` (backward reachability from the goal states, in C) and ``unstuck``
(per state, whether some move changes it, recorded by the C search as it expands the state):
the first state in index order that breaks one, the trace to it, then the run from it that
``liveness.walk_on`` walks, each move fired by the compiled engine's rules
(``proofs/rules.py``).

The C side gives back indices: the first state (or state and move) that settles each property,
and parent pointers.  A trace is rebuilt here by replaying the moves from the initial state
through the concrete rules (``model/declare.py``'s ``take``, the outputs read concretely), and
its last state is compared with the packed state the C side found: a move sequence the concrete
rules do not take to the same state stops the run (:class:`NativeSpecError`), never a wrong trace.

With ``symmetry`` the run is reduced as the compiled engine reduces it: the check of
``proofs/declared_symmetry.py`` is made first, in C on the reduced search's own library
(``proofs/native_spec_check.py``: the same result as the Python check on the compiled rules),
or in Python where that C is not generated (an output shape it does not compare) or does not
decide (:func:`reduction`: ``Explored.symmetry`` worded as the explorer words it), and only
when it passes does the C keep one state per orbit, the least of its renamings under the same order as
Python's tuple comparison (``proofs/native_spec_symmetry.py``: the used slots of each ordered
sort counted, every renaming of the group at that count tried from a table, each followed by
the ranks as ``declared_symmetry.renamer`` follows it by the ``canon``), so the same
representatives, counts, depth, coverage, verdicts and deadlocks.  A reduced trace is rebuilt
by the compiled engine's own replay (``declared_symmetry.replay``) on the states of its path in
the C search: each move renamed onto the real state before it and taken by the concrete rules,
and each real state's least renaming, computed in Python, compared with the state the C kept; a
step that disagrees is reported in ``errors``, as the compiled engine reports it.  When the
check fails the run is unreduced and says why.  Liveness is judged on the reduced graph as the
compiled engine judges it: ``reachable`` and ``unstuck`` in C as above, the walk from the real
state the replayed trace ends in; an ``eventually`` property as
``liveness.fair_violation_reduced`` judges it: the strongly connected components of goal-less
states found in C, a component of one state with no move to another state of its own orbit
(the states the search saw make one) judged there on its representative, and each other
component, one a run can go round in, handed to Python (``liveness.fair_violation_unfolded``)
and unfolded into the real states of its orbits (each kept state's renamings, ``Canon.group``) and their real moves (the compiled rules), each real
successor's reduced state found by the C search's own least renaming and table (``nb_find``);
a lasso's loop is walked among those real states from the trace's real end.

Refused (:class:`~.native_spec_c.Refused`, a ``Refused`` of the compiled engine): a variable
wider than a signed byte, a spec whose ``canon`` does not come from its ``ranks`` (a Python
function the C cannot run; no spec has one today, as ``Spec.canon`` is always the ranks'
renumbering), and a rule the generator cannot read.  Without a C compiler the build fails with ``proofs/native_build.py``'s ``BuildError``.
"""

from __future__ import annotations

import ctypes
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_inflight.model.declare import Move, Spec, out_of_range, render_step, take

from .explored import NOT_JUDGED, NOTHING, TOO_MANY, Explored, default_sink, stoppable
from .liveness import Unfolded, fair_violation_unfolded, walk_on
from .native_spec_c import Generated, Refused, generate, refusal
from .progress import Sink, Tracker
from .rules import rules_of
from .walk import tour

__all__ = ["NativeExplored", "NativeSpecError", "Refused", "search_native"]


class NativeSpecError(RuntimeError):
    """The native search stopped on a model bug, ran out of memory, or disagreed with the
    concrete rules on a trace."""


@dataclass
class NativeExplored(Explored):
    """:class:`Explored` of the native engine: the build (with ``symmetry``, the symmetry check
    first; generation, compiler or cache, load) and the search (with verdicts and traces) timed
    apart; ``seconds`` is their sum."""

    build_seconds: float = 0.0
    search_seconds: float = 0.0
    #: the C search's share of ``search_seconds`` (what :data:`PROMOTE_AFTER` is measured on)
    c_seconds: float = 0.0
    #: the threads the search expanded its levels on (1: every batch on one thread)
    threads: int = 1

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["build_seconds"] = round(self.build_seconds, 3)
        out["search_seconds"] = round(self.search_seconds, 3)
        return out


#: the compiler's flags: ``-O1`` builds in about half the time of ``-O2`` (most of a cold run is
#: the build); ``bench/explore_declared.py`` shows the build and the search apart
CFLAGS = ["-O1", "-shared", "-fPIC", "-std=c99", "-pthread", "-w"]
#: a spec is built first with these: ``-O0`` builds in about half the time of ``-O1`` and
#: searches about half as fast (the session at 2 x 2 on 2025-11-25 http, reduced: 0.3 s to
#: build against 0.7, 0.29 s to search against 0.14), and most searches of the declared
#: models take a few milliseconds
QUICK_CFLAGS = ["-O0", *CFLAGS[1:]]
#: seconds of C search after which a spec built quick is built again with :data:`CFLAGS`, in
#: the background (``native_build.build_later``: the run that asks does not wait for it), for
#: its next runs, which then search and check symmetry about twice as fast: the session at
#: 2 x 2 on 2025-11-25, 0.10-0.14 s of search at -O0, is; on 2026-07-28, 2-6 ms, and the
#: declared models at their default bounds, a few ms, are not
PROMOTE_AFTER = 0.05


def build(source: str, optimised: bool = False) -> Path:
    """The shared object of ``source``, compiled once and cached
    (``proofs/native_build.py:build``): with :data:`QUICK_CFLAGS`, or the :data:`CFLAGS` build where
    one is cached (``optimised``: that build, made now if need be)."""
    from .native_build import build as build_flags

    if optimised:
        return build_flags(source, CFLAGS)
    return build_flags(source, QUICK_CFLAGS, better=CFLAGS)


_L, _P, _B = ctypes.c_long, ctypes.c_void_p, ctypes.c_char_p
_LP = ctypes.POINTER(ctypes.c_long)
_IP = ctypes.POINTER(ctypes.c_int)
#: the C functions of ``proofs/native_spec_search.py`` as :mod:`ctypes` sees them
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "nb_new": (_P, [_B, _L, _B, _B, _B, _B, _B]),
    "nb_run": (ctypes.c_int, [_P, _L]),
    "nb_run_par": (ctypes.c_int, [_P, _L, ctypes.c_int, _L]),
    "nb_stats": (None, [_P, _LP]),
    "nb_level": (_L, [_P, _L]),
    "nb_results": (None, [_P, _LP, _LP, _LP, _LP]),
    "nb_path": (_L, [_P, _L, ctypes.POINTER(ctypes.c_int), _L]),
    "nb_nodes": (_L, [_P, _L, _LP, _L]),
    "nb_state": (None, [_P, _L, _B]),
    "nb_canon": (None, [_B, _B]),
    "nb_ranks": (None, [_B, _B]),
    "nb_fair": (_L, [_P, ctypes.c_int, _B, _LP, _LP, _LP, _LP, _LP]),
    "nb_edges": (_L, [_P, _L, _IP, _IP, _L]),
    "nb_find": (_L, [_P, _B]),
    "nb_reach": (_L, [_P, ctypes.c_int, _LP]),
    "nb_stuck": (_L, [_P, ctypes.c_int, _LP]),
    "nb_free": (None, [_P]),
}


def _load(source: str) -> Any:
    from .native_build import open_library

    return open_library(build(source), _SIGNATURES)


def prepare(spec: Spec, symmetry: bool = False) -> tuple[Generated, Any]:
    """The generated C of ``spec`` (with ``symmetry``, keeping the least renaming of each
    state) and its loaded library (built or read from the cache)."""
    gen = generate(spec, symmetry)
    return gen, _load(gen.source)


def _never(x: Any) -> None:
    """The fire of a move whose guard the compiled rules fold to false: never enabled."""
    return None


def _flags(xs: Iterable[bool]) -> bytes:
    return bytes(1 if x else 0 for x in xs) + b"\0"


def _pack(spec: Spec, s: Any) -> bytes:
    out = []
    for v in spec.vars:
        x = getattr(s, v.name)
        out += [x] if v.keys is None else list(x)
    return bytes(int(x) & 0xFF for x in out)


def _packer(spec: Spec) -> Callable[[Any], bytes]:
    """:func:`_pack` for many states of ``spec``: the slots joined by one generated call of
    :mod:`struct` (what an unfolding packs each real successor with), the plain reading where
    a value does not fit a signed byte."""
    n = sum(1 if v.keys is None else v.keys for v in spec.vars)
    parts = [f"s[{k}]" if v.keys is None else f"*s[{k}]" for k, v in enumerate(spec.vars)]
    env: dict[str, Any] = {"P": struct.Struct(f"{n}b").pack}
    exec(compile(f"def pack(s):\n    return P({', '.join(parts)})\n", "<pack>", "exec"), env)
    fast: Callable[[Any], bytes] = env["pack"]

    def pack(s: Any) -> bytes:
        try:
            return fast(s)
        except struct.error:
            return _pack(spec, s)

    return pack


def _unpack(spec: Spec, raw: bytes) -> Any:
    """The state packed in ``raw`` (signed bytes) as the explorer's state tuple."""
    xs = [x - 256 if x > 127 else x for x in raw]
    out: list[Any] = []
    at = 0
    for v in spec.vars:
        if v.keys is None:
            out.append(xs[at])
            at += 1
        else:
            out.append(tuple(xs[at : at + v.keys]))
            at += v.keys
    return spec.state_type(*out)


def reduction(spec: Spec) -> tuple[str, Any]:
    """What ``explore(spec, symmetry=True)`` says of its reduction (``Explored.symmetry``,
    worded as ``proofs/explorer.py:_reduction`` words it) and the canonical form of the orbits
    (``declared_symmetry.Canon``) when the check passes, else None: the run is unreduced.
    ``Refused`` for a spec the C does not run (:func:`~.native_spec_c.refusal`: a ``canon``
    that is not its ``ranks``, ...)."""
    told, canon, _ = _reduction(spec)
    return told, canon


def _reduction(spec: Spec) -> tuple[str, Any, tuple[Generated, Any] | None]:
    """:func:`reduction`, and the reduced search's generated C and library when it was built
    for the check.  The check is ``proofs/native_spec_check.py``'s, in C on that library, the
    same result as ``declared_symmetry.check`` on the compiled rules; the Python check is made
    instead where the C check is not generated (an output shape it does not compare, said in
    ``Generated.check``), where the C did not decide, or where the reduced search is refused
    (too many renamings to tabulate: the run may still go unreduced, as the check decides)."""
    from .declared_symmetry import canon_of, nothing_to_rename, symmetry_of, verdict
    from .native_spec_check import check_native

    why = refusal(spec)  # before the check, which a refused spec would make for nothing
    if why is not None:
        raise Refused(why)
    if nothing_to_rename(spec):
        return "unreduced: " + NOTHING, None, None
    sym = None
    built: tuple[Generated, Any] | None = None
    try:
        built = prepare(spec, True)
    except Refused:
        pass
    if built is not None and not isinstance(built[0].check, (str, type(None))):
        sym = check_native(spec, *built)
    if sym is None:
        sym = symmetry_of(spec)
    told = verdict(sym)
    return told, canon_of(spec, told), built if sym.ok else None


def search_native(
    spec: Spec,
    max_states: int = 2_000_000,
    until: Iterable[str] | None = None,
    progress: Sink | None = None,
    symmetry: bool | str = False,
    threads: int | None = None,
    parallel_from: int | None = None,
) -> NativeExplored:
    """``proofs/explorer.py``'s ``explore`` on the native engine (see the module text); a
    string ``symmetry`` is the declared symmetry check's verdict, made already.  ``threads``
    (default ``native_build.default_threads()``, at most ``MAX_THREADS``) expand each level's
    batches of at least ``parallel_from`` states (default ``native_build.PARALLEL_FROM``) at
    once; the result is the one-thread run's."""
    from .native_build import PARALLEL_FROM, default_threads
    from .native_spec_threads import MAX_THREADS

    threads = max(1, min(default_threads() if threads is None else threads, MAX_THREADS))
    if parallel_from is None:
        parallel_from = PARALLEL_FROM
    t0 = time.perf_counter()
    if isinstance(symmetry, str):
        from .declared_symmetry import canon_of

        told, canon, built = symmetry, canon_of(spec, symmetry), None
    else:
        told, canon, built = _reduction(spec) if symmetry else ("", None, None)
    gen, lib = built if built is not None else prepare(spec, canon is not None)
    t1 = time.perf_counter()
    res = NativeExplored(spec, engine="native", build_seconds=t1 - t0, symmetry=told)
    tracker = Tracker(spec.label(), progress if progress is not None else default_sink())
    wanted = stoppable(spec, until)
    sp, tp = gen.state_props, gen.step_props
    failing = {p.name for p in spec.props if p.kind in ("always", "step", "hazard")}
    failing |= {"aux:" + p.name for p in spec.aux}
    if wanted is not None and not wanted <= failing:
        wanted = None  # a witness never stops the compiled engine's search either
    want = wanted or set()
    R = lib.nb_new(
        _pack(spec, spec.initial()),
        min(max_states, (1 << 31) - 2),
        _flags(p.kind == "sometimes" for _, p in sp),
        _flags(p.kind == "liveness" for _, p in sp),
        _flags(p.kind == "happens" for p in tp),
        _flags(k in want for k, _ in sp),
        _flags(p.name in want for p in tp),
    )
    if not R:
        raise NativeSpecError("out of memory")
    try:
        _run(spec, gen, lib, R, res, tracker, t0, max_states, canon, (threads, parallel_from))
    finally:
        lib.nb_free(R)
    if res.c_seconds > PROMOTE_AFTER:  # the optimised build, for the next runs: not waited for
        from .native_build import build_later

        build_later(gen.source, CFLAGS)
    return res


def _run(
    spec: Spec,
    gen: Generated,
    lib: Any,
    R: Any,
    res: NativeExplored,
    tracker: Tracker,
    t0: float,
    max_states: int,
    canon: Any,
    threads: tuple[int, int] = (1, 1),
) -> NativeExplored:
    t1 = time.perf_counter()
    st = (ctypes.c_long * 13)()
    fed, budget = 1, 1 << 14
    while True:
        c0 = time.perf_counter()
        rc = lib.nb_run_par(R, budget, *threads) if threads[0] > 1 else lib.nb_run(R, budget)
        spent = time.perf_counter() - c0  # about a tenth of a second a slice
        res.c_seconds += spent
        lib.nb_stats(R, st)
        if rc < 0:
            if st[9] > 0:
                m = gen.moves[gen.table[st[9] - 1]]
                raise NativeSpecError(
                    f"{m}: a write to a key outside its variable, or of a value wider than a "
                    "byte (model bug)"
                )
            raise NativeSpecError("out of memory")
        if tracker.enabled:
            while fed < st[10]:
                tracker.level(lib.nb_level(R, fed))
                fed += 1
            tracker.tick(st[0], st[2], st[0] - st[3])
        if rc == 1:
            break
        budget = max(1024, min(1 << 22, int(budget * 0.1 / max(spent, 1e-4))))
    sp, tp, nm = gen.state_props, gen.step_props, len(gen.table)
    sfirst = (ctypes.c_long * (len(sp) + 1))()
    tfirst = (ctypes.c_long * (len(tp) + 1))()
    tmove = (ctypes.c_long * (len(tp) + 1))()
    cov = (ctypes.c_long * (nm + 1))()
    lib.nb_results(R, sfirst, tfirst, tmove, cov)
    stopped = bool(st[8])
    res.threads = threads[0] if st[12] else 1
    res.states, res.transitions, res.depth = st[0], st[1], st[2]
    res.complete = not st[7] and not stopped
    res.coverage = {a.name: 0 for a in spec.acts}
    for j, n in enumerate(cov[:nm]):
        res.coverage[gen.moves[gen.table[j]].name] += n
    tracker.done(res.states, res.transitions, res.depth, res.complete)
    b = spec.logic()
    s0 = spec.initial()
    buf = (ctypes.c_int * (res.depth + 1))()
    packed = ctypes.create_string_buffer(max(gen.nslots, 1))

    def step(s: Any, row: int, steps: list[dict[str, Any]], what: str = "search") -> Any:
        """Move ``row`` of the C search taken from ``s`` by the concrete rules, its rendered
        step appended to ``steps``: the successor."""
        m = gen.moves[gen.table[row]]
        post = take(spec, s, m, b)
        if post is None:
            raise NativeSpecError(f"{m} of the native {what} is not enabled concretely")
        steps.append(render_step(spec, m, s, post, m.act.outputs(b, s, **m.kw)))
        return post

    def state_at(n: int) -> tuple[Any, list[dict[str, Any]]]:
        """The state ``n`` of the C search, replayed through the concrete rules, with its trace."""
        k = lib.nb_path(R, n, buf, len(buf))
        steps: list[dict[str, Any]] = []
        s = s0
        for row in reversed(buf[:k]):
            s = step(s, row, steps)
        lib.nb_state(R, n, packed)
        if packed.raw[: gen.nslots] != _pack(spec, s):
            raise NativeSpecError(f"state {n} of the native search is not the concrete one")
        return s, steps

    def kept(n: int) -> Any:
        """The state ``n`` of the C search, as it keeps it (with symmetry: a representative)."""
        lib.nb_state(R, n, packed)
        return _unpack(spec, packed.raw[: gen.nslots])

    def replayed(n: int, row: int | None) -> tuple[list[dict[str, Any]], Any]:
        """The trace to reduced state ``n`` (and move ``row`` from it) and the real state it
        ends in: the compiled engine's replay (``declared_symmetry.replay``) on the states of
        its path in the C search, each move renamed onto the real state, and each real state
        checked to lie in the orbit the C search kept (Python's least renaming of it is the
        C's)."""
        from .declared_symmetry import replay

        nodes = (ctypes.c_long * (res.depth + 1))()
        k = lib.nb_nodes(R, n, nodes, len(nodes))
        rows = list(reversed(buf[: lib.nb_path(R, n, buf, len(buf))]))
        states = [kept(x) for x in reversed(nodes[:k])]
        moves = [gen.moves[gen.table[j]] for j in rows]
        parent: list[tuple[int, Move | None, Any]] = [(-1, None, None)]
        parent += [(i, m, None) for i, m in enumerate(moves)]
        last = None
        if row is not None:
            m = gen.moves[gen.table[row]]
            post = take(spec, states[-1], m, b)
            if post is None:
                raise NativeSpecError(f"{m} of the native search is not enabled concretely")
            last = (len(states) - 1, m, post, None)
        steps, x, wrong = replay(spec, canon, states, parent, len(states) - 1, last)
        if wrong is not None:
            res.errors.append(f"symmetry: a reduced trace does not replay: {wrong}")
        return steps, x

    def trace(n: int, row: int | None = None) -> list[dict[str, Any]]:
        if canon is not None:
            return replayed(n, row)[0]
        s, steps = state_at(n)
        if row is not None:
            step(s, row, steps)
        return steps

    def trace_to(n: int) -> tuple[list[dict[str, Any]], Any]:
        """A trace to state ``n`` and the real state it ends in."""
        if canon is not None:
            return replayed(n, None)
        s, steps = state_at(n)
        return steps, s

    fires: list[tuple[Move, Any]] = []

    def moves() -> list[tuple[Move, Any]]:
        """The move table's rows as ``liveness`` reads them, ``(move, fire)``: each move fired
        by the compiled engine's own rules (``proofs/rules.py``), built once a walk or an
        unfolding needs them."""
        if not fires:
            rules = rules_of(spec, "auto")
            fires.extend((gen.moves[k], rules.fire[k] or _never) for k in gen.table)
        return fires

    packs: dict[int, Callable[[Any], bytes]] = {}

    def to_unfold(g: int, fair: Any) -> tuple[int | None, list[list[int]]]:
        """Liveness goal ``g`` under reduction, judged in C where a component is one state
        with no move to another state of its own orbit (the first such fair one, or None),
        and the other components of goal-less states, to be unfolded (``nb_fair``)."""
        n = max(res.states, 1)
        members, count = (ctypes.c_long * n)(), ctypes.c_long(0)
        firsts, sizes, ncomps = (ctypes.c_long * n)(), (ctypes.c_long * n)(), ctypes.c_long(0)
        single = lib.nb_fair(
            R, g, fair, members, ctypes.byref(count), firsts, sizes, ctypes.byref(ncomps)
        )
        if single == -2:
            raise NativeSpecError("out of memory")
        comps, at = [], 0
        for size in sizes[: ncomps.value]:
            comps.append(members[at : at + size])
            at += size
        return (None if single < 0 else single), comps

    def unfold(comp: list[int]) -> Unfolded:
        """The real states of the orbits of reduced component ``comp`` and the moves between
        them, as the compiled engine unfolds them (``proofs/explorer.py``): each renaming of
        each kept state (``Canon.group``), each move fired by the compiled rules, its
        successor's reduced state found by the C search's own canon and table (-1 where it
        leaves the component)."""
        members = set(comp)
        real = Unfolded()
        pack = packs[0] if packs else packs.setdefault(0, _packer(spec))
        for n in comp:
            s = kept(n)
            for rename in canon.group(s)[1]:
                real.add(rename(s), n)
        table = moves()
        i = 0
        while i < len(real.states):
            x = real.states[i]
            row = []
            for j, (_, fire) in enumerate(table):
                fired = fire(x)
                if fired is not None:
                    k = lib.nb_find(R, pack(fired[0]))
                    row.append((j, real.add(fired[0], k) if k in members else -1))
            real.edges.append(row)
            i += 1
        return real

    def loop(start: int, component: set[int]) -> list[dict[str, Any]]:
        """The loop of a lasso: the compiled engine's walk (``proofs/walk.py:tour``) through
        the component on the edges the C search kept, each move taken by the concrete rules
        from the state before it, and the walk's end compared with its start."""
        edges: list[list[tuple[int, int]]] = [[] for _ in range(res.states)]
        cap = len(gen.table)
        mv, to = (ctypes.c_int * cap)(), (ctypes.c_int * cap)()
        for n in component:
            k = lib.nb_edges(R, n, mv, to, cap)
            edges[n] = list(zip(mv[:k], to[:k], strict=True))
        s, _ = state_at(start)
        first = s
        steps: list[dict[str, Any]] = []
        for _, row in tour(start, component, edges):
            s = step(s, row, steps, "lasso")
        if s != first:
            raise NativeSpecError("the native lasso's loop does not come back to its start")
        return steps

    if st[6] >= 0:
        bad = kept(st[6]) if canon is not None else state_at(st[6])[0]
        res.errors.append(f"model bug: {out_of_range(spec, bad)}")
    elif st[7]:
        res.errors.append(f"more than {max_states} {TOO_MANY}")
    first = {k: sfirst[n] for n, (k, _) in enumerate(sp)}
    first_step = {p.name: (tfirst[n], tmove[n]) for n, p in enumerate(tp)}
    live = [k for k, p in sp if p.kind == "liveness"]
    for p in spec.props + spec.aux:
        key = p.name if p in spec.props else "aux:" + p.name
        if p.scope == "step":
            n, row = first_step[p.name]
            settled = n >= 0
        elif p.kind != "liveness":
            n, row = first[key], None
            settled = n >= 0
        else:
            settled = False
        if stopped and not settled:
            res.verdicts[key] = NOT_JUDGED
        elif p.kind in ("sometimes", "happens"):
            res.verdicts[key] = "reached" if settled else "not reached"
            if settled:
                res.traces[key] = trace(n, row)
        elif p.kind == "liveness" and p.shape != "eventually":
            g = live.index(key)
            many = ctypes.c_long(0)
            judge = lib.nb_reach if p.shape == "reachable" else lib.nb_stuck
            away = judge(R, g, ctypes.byref(many))
            if away == -2:
                raise NativeSpecError("out of memory")
            res.verdicts[key] = "fails" if away >= 0 else "holds"
            res.away[key] = many.value
            if away >= 0:
                # the run from the first such state on (the real one the trace ends in),
                # walked as the compiled engine walks it (``liveness.walk_on``)
                res.traces[key], x = trace_to(away)
                stem, res.loops[key] = walk_on(spec, x, moves())
                res.traces[key] += stem
        elif p.kind == "liveness" and canon is not None:
            # weak fairness judged on the real moves of the reduced components' orbits
            fair_rows = {j for j, k in enumerate(gen.table) if gen.moves[k].act.name in p.fair}
            single, comps = to_unfold(live.index(key), _flags(j in fair_rows for j in range(nm)))
            unfolded = fair_violation_unfolded(single, comps, fair_rows, unfold)
            res.verdicts[key] = "holds" if unfolded is None else "fails"
            if unfolded is not None:
                bad, real = unfolded
                res.traces[key], x = trace_to(bad)
                res.loops[key] = real.loop(x, moves(), spec)
        elif p.kind == "liveness":
            fair = _flags(gen.moves[k].act.name in p.fair for k in gen.table)
            members, count = (ctypes.c_long * max(res.states, 1))(), ctypes.c_long(0)
            bad_state = lib.nb_fair(
                R, live.index(key), fair, members, ctypes.byref(count), None, None, None
            )
            if bad_state == -2:
                raise NativeSpecError("out of memory")
            res.verdicts[key] = "holds" if bad_state < 0 else "fails"
            if bad_state >= 0:
                res.traces[key] = trace(bad_state)
                res.loops[key] = loop(bad_state, set(members[: count.value]))
        elif settled:
            res.verdicts[key] = "fails"
            res.traces[key] = trace(n, row)
        else:
            res.verdicts[key] = "holds"
    if st[6] >= 0:
        res.traces["range"] = trace(st[6])
    res.deadlocks = st[4]
    if st[5] >= 0:
        res.deadlock_trace = trace(st[5])
    t2 = time.perf_counter()
    res.search_seconds = t2 - t1
    res.seconds = t2 - t0
    return res
