"""The session model's search engines, reached through the one explorer's entry point
(``proofs/explorer.py:explore`` with a session :class:`~mcp_inflight.model.config.Config`):
explicit-state, breadth-first (so traces are shortest).

It reads the actions, conditions and properties of ``model/session.py``,
``model/session_conditions.py`` and ``model/properties.py`` and adds no rule of its own.  By default it runs them compiled: the
model's functions are called once with the code-generating backend of ``model/codegen.py``
(``proofs/compiled_model.py``), specialised to the run and to each action's arguments, and the
generated functions do the search's work; ``engine="interpreted"`` takes every step through
``model/step.py`` (the concrete backend) instead (same results, ``tests/test_compiled.py``).  What the explorer adds is search:
canonical hashing (a canonical form under symmetry of interchangeable ids and instances, on by
default), per-action coverage, deadlock detection, traces, and progress on stderr
(``proofs/progress.py``).  ``engine="native"`` runs the whole search in C generated from the
same rules (``proofs/native.py``).  With ``liveness=True`` (compiled and native engines) it also
keeps the graph's edges and judges the liveness properties of ``proofs/liveness.py`` (weak fairness of the
actions each rests on, as ``model/session.py`` declares them) on the explored graph.

States are flat tuples while they wait in the queue; the visited set keeps only a compact key
(bytes) per state and the move that first reached it.  A trace is rebuilt by replaying those
moves from the initial state, so it is the same concrete run the search took.

Symmetry: ids are interchangeable (no rule names a particular id) and so are instances (a rule
names an instance only through its fields).  The key of a state names its orbit under renaming
of ids and instances (``proofs/flat.py:canonical_source``, built from ``FIELDS``): it is
always a renaming of the state, so the reduction is sound for properties that are themselves
symmetric (all of ours), and it is exact (one state per orbit; ``tests/test_explore.py`` checks
it against a brute-force orbit) where only the clients' ids use the id sort; on 2025-11-25, whose
server-minted ids share it, an orbit may get two keys (``proofs/flat.py:canonical_source``).

One module (about 600 lines): the two Python engines (compiled and interpreted) share the
result records, the symmetry key, the path rebuilding and the judging of verdicts
(``_judge``), and :func:`search` chooses between them and the native engine of
``proofs/native.py``; the liveness judge (``proofs/liveness.py``) and progress
(``proofs/progress.py``) live apart.  ``explore(cfg)`` no longer runs them: it runs the one
explorer on the session's declaration (``model/session_spec.py``,
``proofs/explorer.py:search_session``), which finds the same states, verdicts and traces
without symmetry (``tests/test_session_spec.py``) and, reduced, one state per orbit.  They stay
the references those runs are compared with, reached by naming one of them
(``explore(cfg, engine=...)``), and the engine of what only they do (a callback per
transition, for the state-graph drawing).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from mcp_inflight.model import step
from mcp_inflight.model.config import Config
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.property_kinds import Property, judged
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import State, settled
from mcp_inflight.model.trace import build_trace
from mcp_inflight.proofs.compiled_model import Compiled
from mcp_inflight.proofs.flat import Layout, decode_key, key_function
from mcp_inflight.proofs.liveness import Graph, fair_actions, judge_liveness
from mcp_inflight.proofs.progress import (
    Display,
    Sink,
    Tracker,
    sink_for,
    worker_init,
    worker_sink,
)

# --- symmetry -----------------------------------------------------------------------------


class Canonicalizer:
    """The canonical representative of a state's orbit under renaming of ids and instances.

    The key is built by ``proofs/flat.py:canonical_source`` from ``FIELDS`` (every field by
    its key and sort, none listed by name), so a field added to the model takes part without
    being added here; ``tests/test_explore.py`` checks the key against a brute-force orbit.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.layout = Layout(cfg)
        self.bytes_key = key_function(cfg, self.layout, True)

    def key(self, s: State) -> State:
        k = self.bytes_key(self.layout.flatten(s))
        return self.layout.unflatten(decode_key(self.cfg, self.layout, k))


# --- results: the records live in ``proofs/records.py`` (the engines build them too) --------

from mcp_inflight.proofs.records import RunResult, Verdict  # noqa: E402

#: ``on_edge(pre, action, args, post, out)``: called for every transition a search takes
OnEdge = Callable[[Any, Any, Any, Any, Any], Any]


def search(
    cfg: Config,
    symmetry: bool = True,
    max_states: int | None = None,
    progress: bool | Sink | None = None,
    properties: Sequence[Property] = PROPERTIES,
    on_edge: OnEdge | None = None,
    engine: str = "compiled",
    liveness: bool = False,
    threads: int | None = None,
) -> RunResult:
    """Explore every reachable state of ``cfg`` and judge every property on it.

    ``on_edge(pre, action, args, post, out)``, if given, is called for every transition taken
    (concrete pre- and post-states, with the action's output), so that callers such as the
    diagrams can see the state graph without searching it a second time.

    ``engine``: ``compiled`` (default) runs the model's rules specialised and compiled for the
    run (``proofs/compiled_model.py``); ``interpreted`` calls them through ``model.logic.Concrete``
    on every step.  Both read the same rules and give the same states, transitions and verdicts
    (``tests/test_compiled.py``); the compiled one is several times faster.  ``native``
    (``proofs/native.py``) generates the same rules as C and runs the whole search in C (with or
    without symmetry; not ``on_edge``) when a C compiler is present; its counts,
    verdicts and traces equal the others' (``tests/test_native.py``).  ``auto``: ``native``
    when a C compiler is present (and no ``on_edge``), else ``compiled``.

    ``liveness``: keep the graph's edges and judge the liveness properties of
    ``proofs/liveness.py`` on it (the compiled and native engines; ``interpreted`` reports none).

    ``threads``: the native engine's, see :func:`mcp_inflight.proofs.native.search_native`.
    """
    if engine == "auto":  # native when it can be built, else compiled
        from mcp_inflight.proofs.native import search_native
        from mcp_inflight.proofs.native_build import BuildError, available

        if on_edge is None and available():
            try:
                return search_native(
                    cfg, symmetry, max_states, progress, properties, on_edge, liveness, threads
                )
            except BuildError as e:
                sys.stderr.write(f"search: the native engine is unavailable ({e}); compiled\n")
        engine = "compiled"
    if engine == "interpreted":
        res = _explore_interpreted(cfg, symmetry, max_states, progress, properties, on_edge)
        res.engine = "interpreted"
        return res
    if engine == "native":
        from mcp_inflight.proofs.native import search_native

        return search_native(
            cfg, symmetry, max_states, progress, properties, on_edge, liveness, threads
        )
    if engine != "compiled":
        raise ValueError(f"engine must be auto, compiled, interpreted or native, not {engine!r}")
    res = _explore_compiled(cfg, symmetry, max_states, progress, properties, on_edge, liveness)
    res.engine = "compiled"
    return res


def _explore_compiled(
    cfg: Config,
    symmetry: bool,
    max_states: int | None,
    progress: bool | Sink | None,
    properties: Sequence[Property],
    on_edge: OnEdge | None,
    liveness: bool = True,
) -> RunResult:
    t0 = time.monotonic()
    comp = Compiled(cfg, properties)
    lay = comp.layout
    expand = comp.expand
    settled_ = comp.settled
    moves = comp.moves
    key_of = key_function(cfg, lay, symmetry)
    props = [(p, p.applies(cfg)) for p in properties]
    step_props = comp.step_props
    # state properties still to be decided: (name, check, is_witness)
    pending_state = [
        (p.name, chk, p.kind == "witness")
        for p, chk in zip(comp.state_props, comp.state_checks, strict=False)
    ]
    first_bad: dict[str, tuple[Any, ...]] = {}
    prog = Tracker(f"{cfg.label} {cfg.ids}x{cfg.requests}", sink_for(progress))

    s0 = comp.initial()
    k0 = key_of(s0)
    parent: dict[Any, Any] = {k0: None}  # key -> (parent key, move index); None for the root
    res = RunResult(cfg, symmetry)
    move_count = [0] * len(moves)
    complete = True
    n_trans = 0
    deadlock_key = None
    deadlocks = 0
    limit = max_states if max_states is not None else sys.maxsize

    events = comp.event_function(list(range(len(pending_state))))
    graph = Graph() if liveness else None
    index: dict[Any, Any] = {k0: 0}
    # the fair moves of the graph: those requests_answered rests on (the only property whose
    # judge, ``liveness.unanswered``, reads fairness)
    fair_names = set(fair_actions("requests_answered", cfg))
    fair = [mv.action.name in fair_names for mv in moves]

    def judge_state(key: Any, s: tuple[Any, ...]) -> None:
        nonlocal pending_state, events
        for name, chk, wit in pending_state:
            if bool(chk(s)) == wit:
                first_bad[name] = ("state", key)
        pending_state = [x for x in pending_state if x[0] not in first_bad]
        events = comp.event_function(
            [j for j, p in enumerate(comp.state_props) if p.name not in first_bad]
        )

    if events(s0):
        judge_state(k0, s0)
    level = [(k0, s0)]
    depth = 0
    expanded = 0
    while level:
        level_end = expanded + len(level)  # queue: the rest of this level and the next
        nxt: list[tuple[Any, tuple[Any, ...]]] = []
        # successors already met in this sweep are skipped before their (costlier) key is made
        met: dict[Any, Any] = {}
        nxt_append = nxt.append
        for key, s in level:
            expanded += 1
            if not expanded & 0x7FF:
                prog.tick(len(parent), depth, level_end - expanded + len(nxt), len(nxt))
            succ = expand(s)
            if graph is not None:
                u = len(graph.settled)
                graph.settled.append(1 if settled_(s) else 0)
                loop_move = -1
                fair_exit = 0
            if not succ:
                if graph is not None:
                    graph.stutter.append(-1)
                    graph.fair_exit.append(0)
                if not settled_(s):
                    deadlocks += 1
                    if deadlock_key is None:
                        deadlock_key = key
                continue
            n_trans += len(succ)
            if on_edge is not None:
                pre_state = lay.unflatten(s)
            for m, t, outs, bad in succ:
                move_count[m] += 1
                if on_edge is not None:
                    mv = moves[m]
                    on_edge(
                        pre_state, mv.action, mv.args, lay.unflatten(t), comp.out_dict(mv, outs)
                    )
                if bad:
                    for j in bad:
                        name = step_props[j].name
                        if name not in first_bad:
                            first_bad[name] = ("step", key, m)
                if graph is None:
                    if t is s or t in met:  # a move that writes nothing returns s itself
                        continue
                    met[t] = None
                    tk = key_of(t)
                    if tk in parent:
                        continue
                    if len(parent) >= limit:
                        complete = False
                        continue
                    parent[tk] = (key, m)
                    nxt_append((tk, t))
                    if events(t):
                        judge_state(tk, t)
                    continue
                # the same, keeping the edge u -> v for the liveness checks
                if t is s:
                    loop_move = m
                    continue
                v = met.get(t)
                if v is None:
                    tk = key_of(t)
                    v = index.get(tk)
                    if v is None:
                        if len(parent) >= limit:
                            complete = False
                            continue
                        v = index[tk] = len(index)
                        parent[tk] = (key, m)
                        nxt_append((tk, t))
                        if events(t):
                            judge_state(tk, t)
                    met[t] = v
                if v == u and t == s:
                    loop_move = m
                    continue
                graph.src.append(u)
                graph.dst.append(v)
                graph.move.append(m)
                if fair[m]:
                    fair_exit = 1
            if graph is not None and succ:
                graph.stutter.append(loop_move)
                graph.fair_exit.append(fair_exit)
        if nxt:
            depth += 1
            prog.level(len(nxt))
        level = nxt
    prog.done(len(parent), n_trans, depth, complete)

    def successor(s: tuple[Any, ...], m: int) -> tuple[Any, ...]:
        for mm, t, _, _ in expand(s):
            if mm == m:
                return cast(tuple[Any, ...], t)
        raise AssertionError("a stored move is no longer enabled (explorer bug)")

    def path(key: Any) -> list[Any]:
        ms = []
        while parent[key] is not None:
            key, m = parent[key]
            ms.append(m)
        steps = []
        s = s0
        for m in reversed(ms):
            t = successor(s, m)
            mv = moves[m]
            steps.append((mv.action, mv.args, lay.unflatten(s), lay.unflatten(t)))
            s = t
        return steps

    flat_memo: dict[Any, Any] = {k0: s0}

    def flat_of(key: Any) -> tuple[Any, ...]:
        """The concrete state the search expanded for ``key`` (replayed, remembered)."""
        chain = []
        while key not in flat_memo:
            chain.append(key)
            key = parent[key][0]
        s = flat_memo[key]
        for k in reversed(chain):
            s = flat_memo[k] = successor(s, parent[k][1])
        return cast(tuple[Any, ...], s)

    def step_path(key: Any, m: int) -> list[Any]:
        steps = path(key)
        s = lay.flatten(steps[-1][3]) if steps else s0
        mv = moves[m]
        return steps + [(mv.action, mv.args, lay.unflatten(s), lay.unflatten(successor(s, m)))]

    res.states = len(parent)
    res.transitions = n_trans
    res.depth = depth
    res.complete = complete
    res.deadlocks = deadlocks
    res.coverage = {a.name: 0 for a in actions_for(cfg)}
    for mv, n in zip(moves, move_count, strict=False):
        res.coverage[mv.action.name] += n
    _judge(res, cfg, props, first_bad, path, deadlock_key, lambda hit: step_path(hit[1], hit[2]))
    if graph is not None:
        keys = list(index)
        res.verdicts.extend(
            judge_liveness(
                cfg,
                comp,
                graph,
                complete,
                lambda n: path(keys[n]),
                key_of,
                index,
                lambda n: flat_of(keys[n]),
            )
        )
    res.seconds = time.monotonic() - t0
    return res


def _explore_interpreted(
    cfg: Config,
    symmetry: bool = True,
    max_states: int | None = None,
    progress: bool | Sink | None = None,
    properties: Sequence[Property] = PROPERTIES,
    on_edge: OnEdge | None = None,
) -> RunResult:
    """Explore every reachable state of ``cfg`` and judge every property on it.

    ``on_edge(pre, action, args, post, out)``, if given, is called for every transition taken
    (concrete pre- and post-states, with the action's output), so that callers such as the
    diagrams can see the state graph without searching it a second time.
    """
    b = step.backend(cfg)
    acts = actions_for(cfg)
    props = [(p, p.applies(cfg)) for p in properties]
    on_run = [p for p in judged(properties) if p.applies(cfg)]  # witnesses with a path: steps
    state_props = [p for p in on_run if p.scope == "state"]
    step_props = [p for p in on_run if p.scope == "step"]
    first_bad: dict[str, tuple[Any, ...]] = {}
    canon = Canonicalizer(cfg).key if symmetry else (lambda s: s)
    prog = Tracker(f"{cfg.label} {cfg.ids}x{cfg.requests}", sink_for(progress))
    levels = [1]  # states found per BFS depth

    t0 = time.monotonic()
    s0 = step.start(cfg)
    k0 = canon(s0)
    parent: dict[Any, Any] = {k0: None}  # key -> (parent key, action, args, this concrete state)
    concrete: dict[Any, Any] = {k0: s0}
    depth_of = {k0: 0}
    queue = deque([k0])
    res = RunResult(cfg, symmetry)
    res.coverage = {a.name: 0 for a in acts}
    complete = True
    n_trans = 0
    deadlock_key = None
    deadlocks = 0

    def judge_state(key: Any, s: State) -> None:
        for p in state_props:
            if p.name in first_bad:
                continue
            v = p.fn(b, s, cfg)
            if (p.kind == "witness") == bool(v):
                first_bad[p.name] = ("state", key)

    judge_state(k0, s0)
    while queue:
        key = queue.popleft()
        s = concrete[key]
        d = depth_of[key]
        enabled = False
        for tr in step.successors(cfg, s, b):
            enabled = True
            a, args, t, out = tr.action, tr.args, tr.post, tr.out
            r, i = tr.move.r, tr.move.i
            n_trans += 1
            res.coverage[a.name] += 1
            if on_edge is not None:
                on_edge(s, a, args, t, out)
            for p in step_props:  # a step invariant fails; a step witness is reached
                if p.name not in first_bad and bool(p.fn(b, s, t, cfg, a, r, i, out)) == (
                    p.kind == "witness"
                ):
                    first_bad[p.name] = ("step", key, a, args, t)
            tk = canon(t)
            if tk in parent:
                continue
            if max_states is not None and len(parent) >= max_states:
                complete = False
                continue
            parent[tk] = (key, a, args)
            concrete[tk] = t
            depth_of[tk] = d + 1
            if d + 1 > res.depth:
                if res.depth:
                    prog.level(levels[-1])  # the level of depth res.depth is complete
                res.depth = d + 1
                levels.append(0)
            levels[-1] += 1
            queue.append(tk)
            judge_state(tk, t)
        if not enabled and not settled(b, s):
            deadlocks += 1
            if deadlock_key is None:
                deadlock_key = key
        if len(parent) & 0xFFF == 0:
            prog.tick(len(parent), d, len(queue), levels[-1] if res.depth > d else 0)
    prog.done(len(parent), n_trans, res.depth, complete)

    def path(key: Any) -> list[Any]:
        steps = []
        while parent[key] is not None:
            pk, a, args = parent[key]
            steps.append((a, args, concrete[pk], concrete[key]))
            key = pk
        return steps[::-1]

    res.states = len(parent)
    res.transitions = n_trans
    res.seconds = time.monotonic() - t0
    res.complete = complete
    res.deadlocks = deadlocks

    def step_steps(hit: tuple[Any, ...]) -> list[Any]:
        _, pk, a, args, t = hit
        return path(pk) + [(a, args, concrete[pk], t)]

    _judge(res, cfg, props, first_bad, path, deadlock_key, step_steps)
    return res


def _judge(
    res: RunResult,
    cfg: Config,
    props: list[tuple[Property, bool]],
    first_bad: dict[str, tuple[Any, ...]],
    path: Callable[[Any], list[Any]],
    deadlock_key: Any,
    step_steps: Callable[[tuple[Any, ...]], list[Any]],
) -> None:
    """The verdicts of a finished search into ``res``, with the traces of the first violations
    (``first_bad``: a state property's state key, or a step property's hit, which
    ``step_steps`` turns into the steps of the run that ends with it), and the deadlock's."""
    res.deadlock_trace = build_trace(cfg, path(deadlock_key)) if deadlock_key is not None else None
    for p, ap in props:
        hit = first_bad.get(p.name) if ap else None
        trace = None
        if hit is not None:
            trace = build_trace(cfg, path(hit[1]) if hit[0] == "state" else step_steps(hit))
        ok = (hit is not None) if p.kind == "witness" else (hit is None)
        res.verdicts.append(
            Verdict(p.name, p.kind, ap, ok if ap else True, trace, p.doc, through=p.through)
        )


def _explore_job(args: tuple[Callable[..., RunResult], Config, dict[str, Any]]) -> RunResult:
    run, cfg, kwargs = args
    if kwargs.pop("progress_to_parent", False):
        kwargs["progress"] = worker_sink() or False
    return run(cfg, **kwargs)


def search_many(
    cfgs: Iterable[Config],
    jobs: int | None = None,
    progress: Any = None,
    run: Callable[..., RunResult] = search,
    **kwargs: Any,
) -> list[RunResult]:
    """``run(cfg, **kwargs)`` for each of ``cfgs``, in that order, the runs spread over up
    to ``jobs`` processes (default: the number of CPUs) when there is more than one.  Results
    are the same as one run after another; only the wall time differs.  ``run`` is
    :func:`search` (these engines) or ``proofs/session_run.py:search`` (the one explorer).

    ``progress`` as for :func:`search` (True, False, None: on a terminal, or a sink such as a
    ``proofs.progress.Display``).  Runs in worker processes send their progress to this
    process through a queue while they run; it is drawn here with the others'.

    ``symmetry`` may be one flag for every run or a sequence of flags, one per configuration
    (``check`` refuses the reduction where the symmetry check failed)."""
    import os

    cfgs = list(cfgs)
    flags = kwargs.pop("symmetry", True)
    per = list(flags) if isinstance(flags, list | tuple) else [flags] * len(cfgs)
    if len(per) != len(cfgs):
        raise ValueError("search_many: one symmetry flag per configuration")
    if kwargs.get("on_edge") is not None:
        raise ValueError("search_many does not take on_edge (it runs in other processes)")
    sink = sink_for(progress)
    jobs = min(jobs or os.cpu_count() or 1, len(cfgs))
    if jobs <= 1:
        return [
            run(c, progress=sink or False, symmetry=y, **kwargs)
            for c, y in zip(cfgs, per, strict=True)
        ]
    import multiprocessing as mp
    import queue as queue_mod
    from concurrent.futures import FIRST_COMPLETED, wait

    from mcp_inflight.proofs.pool import worker_pool

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    q = ctx.Queue() if sink is not None else None
    kwargs = dict(kwargs, progress=False, progress_to_parent=q is not None)
    out: list[Any] = [None] * len(cfgs)

    def drain() -> None:
        while q is not None and sink is not None:
            try:
                snap = q.get_nowait()
            except queue_mod.Empty:
                return
            sink.update(snap)

    with worker_pool(jobs, ctx, init=worker_init if q is not None else None, initargs=(q,)) as pool:
        futs = {
            pool.submit(_explore_job, (run, c, dict(kwargs, symmetry=per[n]))): n
            for n, c in enumerate(cfgs)
        }
        todo = set(futs)
        while todo:
            done, todo = wait(todo, timeout=0.1, return_when=FIRST_COMPLETED)
            drain()
            for fut in done:
                out[futs[fut]] = fut.result()
    drain()  # the workers have ended: what they sent last is in the queue
    if q is not None:
        q.close()
    if isinstance(sink, Display):
        sink.close()
    return out


__all__ = ["Canonicalizer", "RunResult", "Verdict", "search", "search_many"]


def reachable_graph(cfg: Config) -> tuple[frozenset[Any], frozenset[Any]]:
    """Every reachable state of ``cfg`` and every transition, without symmetry reduction:
    ``(states, edges)`` with each edge ``(pre, action name, args, outputs, post)`` on flat
    states.  Two designs whose graphs are equal on a profile and bound are the same system
    there: the same states, moves, outputs (where each message is written, or that it is
    dropped) and runs, so every property, safety or liveness, has the same verdict on both."""
    comp = Compiled(cfg, ())
    s0 = comp.initial()
    seen = {s0}
    todo = [s0]
    edges = set()
    while todo:
        s = todo.pop()
        for m, t, outs, _ in comp.expand(s):
            mv = comp.moves[m]
            edges.add((s, mv.action.name, (mv.r, mv.i), tuple(outs), t))
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return frozenset(seen), frozenset(edges)
