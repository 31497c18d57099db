"""The one explorer: :func:`explore` is the entry point of exploration for every model, and the
search of the declared models (``model/declare.py``: the session's declaration,
``model/session_spec.py``; lease, rounds, resume, ...).  A session configuration (a
:class:`~mcp_inflight.model.config.Config`) is searched on its declaration and read back as the
session's run record (:func:`search_session`, ``proofs/session_run.py``).

:func:`explore` walks every reachable state of a :class:`~mcp_inflight.model.declare.Spec`
breadth first from the initial state (so each counterexample is a shortest one), on the rules
generated as Python per move (``proofs/compiled_spec.py``) or read through the concrete logic
(``proofs/stepping.py``; the fallback, and the reference the tests compare with).  It judges

* every ``always`` property and auxiliary invariant on each state, and each slot's range;
* every ``step`` property on each transition (with the move's output when it reads one);
* the witnesses: ``sometimes`` on some state, ``happens`` on some transition;
* every ``liveness`` property on the explored graph, under the weak fairness of the actions it
  names (its moves): it fails when a run fair to them can stay for ever among states where its
  goal does not hold, that is, in a strongly connected component of such states (a single state
  counts: stuttering is allowed) in which every fair move is taken or somewhere disabled; a
  goal that stays reachable only through a move nobody owes is not "eventually";
* coverage: how often each action fired (an action that never fires is dead, and every
  property about it holds vacuously: the report fails such a run).

``until`` names properties whose failure is all a caller wants to see (the sensitivity check:
does this mutant still break what it must?).  The search then stops at the first breadth-first
level after which each of them has failed, their traces still shortest ones; the run is marked
incomplete, and every verdict it could not settle (a property not yet failed, a witness not yet
reached, liveness) reads ``not judged``.

With ``symmetry`` the search keeps one state per orbit under renaming of the sorts the model
declares (``proofs/declared_symmetry.py``: the least renaming, exact), only once that module has
checked that the rules and properties commute with renaming; otherwise it runs unreduced and
says why in :attr:`Explored.symmetry`.  Each orbit is reached at the least depth of its members,
so every verdict and every shortest trace length is that of the unreduced run; a trace is
rebuilt as a real run from the initial state, each move renamed onto the real state and taken
by the concrete rules.  Liveness is judged under reduction exactly as on the whole graph: the
reduced graph names each move as on its orbit's representative, not as on the run, so weak
fairness is not read there; a component of goal-less reduced states a run can go round in has
its orbits unfolded (every renaming of its states and every real move between them) and is
judged on the real moves, a lasso's loop walked among them from the real state its trace ends
in; a component of one state with no move back into its orbit is judged on its representative
(each renaming of it is such a state, its moves renamed alike).

A failure comes back as a trace: the moves from the initial state, each with its story and only
the variables it changed.  The space walked for its other readers (a shortest run to a state,
every transition, another implementation driven along them) is ``proofs/walk.py``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, overload

from mcp_inflight.model.declare import Move, Spec, out_of_range, render_step

from . import liveness
from .explored import NOT_JUDGED, NOTHING, TOO_MANY, Explored, default_sink, stoppable
from .progress import Silent, Sink, Tracker, sink_for
from .rules import Rules, rules_of
from .walk import tour

if TYPE_CHECKING:
    from mcp_inflight.model.config import Config

    from .records import RunResult


@overload
def explore(
    model: Spec,
    max_states: int | None = None,
    *,
    until: Iterable[str] | None = None,
    engine: str | None = None,
    progress: Sink | None = None,
    symmetry: bool | str | None = None,
) -> Explored: ...


@overload
def explore(
    model: Config,
    max_states: int | None = None,
    *,
    engine: str | None = None,
    progress: bool | Sink | None = None,
    symmetry: bool | str | None = None,
    liveness: bool = False,
) -> RunResult: ...


def explore(
    model: Spec | Config,
    max_states: int | None = None,
    *,
    until: Iterable[str] | None = None,
    engine: str | None = None,
    progress: bool | Sink | None = None,
    symmetry: bool | str | None = None,
    liveness: bool = False,
) -> Explored | RunResult:
    """The one entry point of exploration, for every model: every reachable state, breadth
    first, and every property judged on them.

    A declared model (a :class:`~mcp_inflight.model.declare.Spec`) is searched here (see the
    module text) and comes back as an :class:`Explored`; the session model (a
    :class:`~mcp_inflight.model.config.Config`: a design at a profile and bounds) is searched
    here too, on its declaration (:func:`search_session`), and comes back as a
    :class:`~.records.RunResult`; ``proofs/outcome.py`` reads both records into the one
    result.  The options mean the same for both:

    * ``max_states``: stop, incomplete, beyond that many states (default: two million for a
      declared model; none for the session);
    * ``engine``: ``fastest`` (native where a C compiler is and the model is one it runs, else
      as ``auto``), ``native``, ``compiled``, and the reading of the rules as written
      (``concrete``; for the session also named ``interpreted``, as ``check --engine`` names
      it); ``auto``: for a declared model the compiled engine, or the concrete one where the
      generator refuses a rule; for the session, ``fastest``.  Default: ``auto``;
    * ``symmetry``: one state per orbit under renaming, once ``proofs/declared_symmetry.py``
      has checked the reduction (default: on for the session, off for a declared model); a
      string is that check's verdict made already (:func:`reduction`, as ``check`` makes and
      caches it), reduced on without checking again;
    * ``progress``: where a run reports its states, depth and queue as it goes: a sink, True
      (a display on stderr), False (nothing), or None (for the session, a display when stderr
      is a terminal; for a declared model, the process's default sink, ``explored.progress_to``).

    ``until`` (a declared model's: stop once the properties it names have failed) and
    ``liveness`` (the session's: judge its liveness properties, keeping the graph; a declared
    model judges its own, always) are refused for the other kind of model."""
    if not isinstance(model, Spec):
        if until is not None:
            raise TypeError("explore: until is an option of the declared models")
        return search_session(
            model,
            symmetry=True if symmetry is None else symmetry,
            max_states=max_states,
            progress=progress,
            engine={"fastest": "auto", "concrete": "interpreted"}.get(
                engine or "auto", engine or "auto"
            ),
            liveness=liveness,
        )
    if liveness:
        raise TypeError(
            "explore: liveness is an option of the session model (a declared model judges "
            "all its properties, liveness included)"
        )
    if isinstance(progress, bool):  # as for the session: a display on stderr, or none at all
        progress = sink_for(True) if progress else Silent()
    limit = 2_000_000 if max_states is None else max_states
    if engine == "fastest":
        return _fastest(model, limit, until, progress, symmetry or False)
    return _search(model, limit, until, engine or "auto", progress, symmetry or False)


#: the session's runs stop at no number of states unless told (``check --max-states``); the
#: native engine's table holds at most 2**31 - 2
NO_LIMIT = (1 << 31) - 2


def search_session(
    cfg: Config,
    symmetry: bool | str = True,
    max_states: int | None = None,
    progress: bool | Sink | None = None,
    engine: str = "auto",
    liveness: bool = True,
) -> RunResult:
    """The session configuration ``cfg`` searched by the one explorer, on its declaration
    (``model/session_spec.py``), and read as the session's run record
    (``proofs/session_run.py:run_result``).  ``engine`` is a name of ``check --engine``
    (``session_run.ENGINES``: ``auto``, the native engine where a C compiler is and it runs
    the declaration, else the compiled one); ``symmetry``: one state per orbit where the
    declared symmetry check passes, or where ``symmetry``, that check's verdict made already,
    says so (the record's ``symmetry`` says whether the run was reduced); ``progress``: a sink,
    True, False, or None (a display when stderr is a terminal); without ``liveness`` the liveness properties are left out of the run (no graph
    kept) and of the record."""
    from mcp_inflight.model.session_spec import spec

    from .session_run import ENGINES, reducible, run_result

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    sink = sink_for(progress)
    ex = explore(
        spec(cfg, liveness),
        max_states=NO_LIMIT if max_states is None else max_states,
        engine=ENGINES[engine],
        progress=Silent() if sink is None else sink,
        symmetry=symmetry,
    )
    return run_result(cfg, ex, reducible(ex.symmetry), liveness)


def search_sessions(
    cfgs: Iterable[Config], jobs: int | None = None, progress: Any = None, **kwargs: Any
) -> list[RunResult]:
    """:func:`search_session` for each of ``cfgs``, in that order, spread over up to ``jobs``
    processes (``proofs/pool.py:run_many``; default: the number of CPUs); ``symmetry`` one
    flag or verdict for every run, or a sequence of them, one per configuration."""
    from .pool import run_many

    cfgs = list(cfgs)
    flags = kwargs.pop("symmetry", True)
    per = list(flags) if isinstance(flags, list | tuple) else [flags] * len(cfgs)
    if len(per) != len(cfgs):
        raise ValueError("search_sessions: one symmetry flag per configuration")
    return run_many(
        search_session, cfgs, jobs, progress, per=[{"symmetry": y} for y in per], **kwargs
    )


def _fastest(
    spec: Spec,
    max_states: int,
    until: Iterable[str] | None,
    progress: Sink | None,
    symmetry: bool | str,
) -> Explored:
    """``spec`` searched on the native engine where it runs, else on ``auto``;
    :attr:`Explored.engine` is ``native``, or the engine that ran followed by why the native
    one did not."""
    from . import native_build

    if native_build.available():
        from .native_spec import Refused

        try:
            return _native(spec, max_states, until, progress, symmetry)
        except Refused as e:
            why = f"the native engine refused the spec: {e}"
        except native_build.BuildError as e:
            why = f"the native engine could not be built: {str(e).splitlines()[0]}"
    else:
        why = "no C compiler for the native engine"
    ex = _search(spec, max_states, until, "auto", progress, symmetry)
    ex.engine = f"{ex.engine} ({why})"
    return ex


def _native(
    spec: Spec,
    max_states: int,
    until: Iterable[str] | None,
    progress: Sink | None,
    symmetry: bool | str,
) -> Explored:
    """``proofs/native_spec.py``'s search, or its ``Refused`` for a spec it does not run."""
    from .native_spec import search_native

    return search_native(spec, max_states, until, progress, symmetry)


def _search(
    spec: Spec,
    max_states: int,
    until: Iterable[str] | None,
    engine: str,
    progress: Sink | None,
    symmetry: bool | str,
) -> Explored:
    """The declared model's breadth-first search (see the module text) on ``engine``:
    ``compiled`` (the rules generated as Python per move, ``proofs/compiled_spec.py``),
    ``concrete`` (the rules read through the concrete logic), ``auto`` (compiled, or concrete
    where the generator refuses a rule; :attr:`Explored.engine` says which ran and why) or
    ``native`` (the rules and the search generated as C, ``proofs/native_spec.py``: the same
    findings, or ``Refused`` for a spec it does not run).  ``symmetry``: keep one state per
    orbit under renaming of the declared sorts, once ``proofs/declared_symmetry.py`` has
    checked that the rules commute with renaming (else the run is unreduced);
    :attr:`Explored.symmetry` says which, and why.  A string ``symmetry`` is that check's
    verdict, made already (:func:`reduction`): the run reduces where it says ``reduced: ``,
    without checking again."""
    if engine == "native":
        return _native(spec, max_states, until, progress, symmetry)
    t0 = time.perf_counter()
    tracker = Tracker(spec.label(), progress if progress is not None else default_sink())
    res = Explored(spec)
    rules = rules_of(spec, engine)
    res.engine = rules.name
    if isinstance(symmetry, str):
        canon = _checked(spec, symmetry, res)
    else:
        canon = _reduction(spec, rules, res) if symmetry else None
    # a state event's key (``aux:<name>`` for an auxiliary invariant) as the verdicts name it
    always_named = {p.name: p.name for p in spec.props if p.kind == "always"}
    always_named.update(("aux:" + p.name, p.name) for p in spec.aux)
    live = [p for p in spec.props if p.kind == "liveness"]
    # per state, whether some move changes it (what an ``unstuck`` property reads)
    changes: list[bool] | None = [False] if any(p.shape == "unstuck" for p in live) else None
    live_tests = [(p.name, rules.state[p.name]) for p in live]
    steps = {p.name for p in spec.props if p.kind in ("step", "hazard")}
    happens = {p.name for p in spec.props if p.kind == "happens"}
    # the moves that can fire (a move whose guard folds to false has no row), each with its
    # step properties' events
    table: list[tuple[Move, Callable[[Any], Any], Callable[..., list[str]]]] = []
    rows: dict[int, int] = {}  # a move's index in ``spec.moves()`` -> its row in ``table``
    for i, (m, fire, events) in enumerate(zip(rules.moves, rules.fire, rules.events, strict=True)):
        if fire is not None and events is not None:
            rows[i] = len(table)
            table.append((m, fire, events))
    in_range, expand, state_events = rules.in_range, rules.expand, rules.state_events

    def enabled(s: Any) -> list[tuple[int, Any, Any]]:
        """Every move enabled on ``s``: its row in ``table``, the successor, the output."""
        return [(rows[k], post, out) for k, post, out in expand(s)]

    failed: dict[str, Any] = {}  # property -> (state, move or None, post, output)
    reached: dict[str, Any] = {}
    coverage = {a.name: 0 for a in spec.acts}
    init = spec.initial() if canon is None else canon(spec.initial())
    index: dict[Any, int] = {init: 0}
    states = [init]
    parent: list[tuple[int, Move | None, Any]] = [(-1, None, None)]
    depth = [0]
    edges: list[list[tuple[int, int]]] = [[]]  # per state, (move's row in table, successor)
    goal: dict[str, list[bool]] = {p.name: [] for p in live}
    wanted = stoppable(spec, until)
    stopped = False
    dead_ends: list[int] = []  # states with no move where a run may not end
    renamed: set[int] = set()  # reduced states with a move to another state of their orbit
    final, b = spec.final, spec.logic()

    witnesses = {p.name for p in spec.props if p.kind == "sometimes"}

    def judge_state(n: int, s: Any) -> None:
        if not in_range(s) and not res.errors:
            res.errors.append(f"model bug: {out_of_range(spec, s)}")
            failed.setdefault("range", (n, None, None, None))
        for key in state_events(s):
            name = always_named.get(key)
            if name is not None:
                if name not in failed:
                    failed[name] = (n, None, None, None)
            elif key in witnesses and key not in reached:
                reached[key] = (n, None, None, None)
        for name, test in live_tests:
            goal[name].append(test(s))

    judge_state(0, init)
    queue = deque([0])
    level_end = 0  # the last state of the level being expanded
    while queue:
        n = queue.popleft()
        if n > level_end:
            if wanted is not None and wanted <= failed.keys():
                stopped = True
                break
            tracker.level(len(states) - 1 - level_end)
            level_end = len(states) - 1
        if tracker.enabled and not n & 1023:
            tracker.tick(len(states), depth[n], len(queue))
        s = states[n]
        moved = False
        for j, post, out in enabled(s):
            m, _, events = table[j]
            moved = True
            if changes is not None and post != s:
                changes[n] = True
            res.transitions += 1
            coverage[m.name] += 1
            for name in events(s, post, out):
                if name in steps:
                    if name not in failed:
                        failed[name] = (n, m, post, out)
                elif name in happens and name not in reached:
                    reached[name] = (n, m, post, out)
            key = post if canon is None else canon(post)
            k = index.get(key)
            if k is None:
                if len(states) >= max_states:
                    res.complete = False
                    if not res.errors:
                        res.errors.append(f"more than {max_states} {TOO_MANY}")
                    continue
                k = len(states)
                index[key] = k
                states.append(key)
                parent.append((n, m, out))
                depth.append(depth[n] + 1)
                if live:
                    edges.append([])
                if changes is not None:
                    changes.append(False)
                judge_state(k, key)
                queue.append(k)
            if live:
                edges[n].append((j, k))
                if k == n and post != s:
                    renamed.add(n)
        if not moved and (final is None or not final(b, s)):
            dead_ends.append(n)
    res.states = len(states)
    res.depth = max(depth)
    res.coverage = coverage
    res.complete = res.complete and not stopped
    tracker.done(res.states, res.transitions, res.depth, res.complete)

    def unfold(comp: list[int]) -> liveness.Unfolded:
        """The real states of the orbits of reduced component ``comp`` and the moves between
        them (each real move, to the real successor, or -1 where it leaves the component)."""
        assert canon is not None
        members = set(comp)
        real = liveness.Unfolded()
        for n in comp:
            for rename in canon.group(states[n])[1]:
                real.add(rename(states[n]), n)
        i = 0
        while i < len(real.states):
            x = real.states[i]
            row = []
            for j, post, _ in enabled(x):
                k = index.get(canon(post), -1)
                row.append((j, real.add(post, k) if k in members else -1))
            real.edges.append(row)
            i += 1
        return real

    def trace_to(n: int) -> tuple[list[dict[str, Any]], Any]:
        """A trace to state ``n`` and the real state it ends in."""
        from .declared_symmetry import replay

        if canon is None:
            return trace(n), states[n]
        tr, x, wrong = replay(spec, canon, states, parent, n)
        if wrong is not None:
            res.errors.append(f"symmetry: a reduced trace does not replay: {wrong}")
        return tr, x

    def trace(n: int, last: tuple[Any, Any, Any, Any] | None = None) -> list[dict[str, Any]]:
        if canon is not None:
            from .declared_symmetry import replay

            tr, _, wrong = replay(spec, canon, states, parent, n, last)
            if wrong is not None:
                res.errors.append(f"symmetry: a reduced trace does not replay: {wrong}")
            return tr
        tr = _trace(spec, states, parent, n)
        if last is not None and last[1] is not None:
            pre = states[last[0]]
            tr.append(render_step(spec, last[1], pre, last[2], last[3]))
        return tr

    for p in spec.props + spec.aux:
        key = p.name if p in spec.props else "aux:" + p.name
        if stopped and p.name not in failed and p.name not in reached:
            res.verdicts[key] = NOT_JUDGED
        elif p.kind in ("sometimes", "happens"):
            res.verdicts[key] = "reached" if p.name in reached else "not reached"
            if p.name in reached:
                res.traces[key] = trace(reached[p.name][0], reached[p.name])
        elif p.kind == "liveness" and p.shape != "eventually":
            if p.shape == "reachable":
                away = liveness.cannot_reach(goal[p.name], edges)
            else:
                assert changes is not None
                pairs = zip(goal[p.name], changes, strict=True)
                away = [n for n, (g, c) in enumerate(pairs) if not g and not c]
            res.verdicts[key] = "fails" if away else "holds"
            res.away[key] = len(away)
            if away:
                # the run from the first such state on: from one with no way to the goal,
                # whatever it does stays away from it; a stuck one stays where it is
                res.traces[key], x = trace_to(away[0])
                stem, res.loops[key] = liveness.walk_on(spec, x, table)
                res.traces[key] += stem
        elif p.kind == "liveness":
            fair = {j for j, row in enumerate(table) if row[0].act.name in p.fair}
            if canon is None:
                found = liveness.fair_violation(goal[p.name], edges, fair)
                res.verdicts[key] = "holds" if found is None else "fails"
                if found is not None:
                    bad, comp = found
                    res.traces[key] = trace(bad)
                    res.loops[key] = [
                        render_step(spec, table[j][0], states[n], *table[j][1](states[n]))
                        for n, j in tour(bad, set(comp), edges)
                    ]
                continue
            unfolded = liveness.fair_violation_reduced(goal[p.name], edges, fair, unfold, renamed)
            res.verdicts[key] = "holds" if unfolded is None else "fails"
            if unfolded is not None:
                bad, real = unfolded
                res.traces[key], x = trace_to(bad)
                res.loops[key] = real.loop(x, table, spec)
        elif p.name in failed:
            res.verdicts[key] = "fails"
            res.traces[key] = trace(failed[p.name][0], failed[p.name])
        else:
            res.verdicts[key] = "holds"
    if "range" in failed:
        res.traces["range"] = trace(failed["range"][0])
    res.deadlocks = len(dead_ends)
    if dead_ends:
        res.deadlock_trace = trace(dead_ends[0])
    res.seconds = time.perf_counter() - t0
    return res


def reduction(spec: Spec, engine: str = "fastest") -> str:
    """What ``explore(spec, symmetry=True, engine=engine)`` says of its reduction
    (:attr:`Explored.symmetry`: ``reduced: ...`` or ``unreduced: ...`` and why), from the
    declared symmetry check alone: in C where the native engine runs ``spec`` (``fastest``,
    ``native``), else on the rules of ``engine`` (``auto`` for ``fastest``)."""
    if engine in ("fastest", "native"):
        from . import native_build

        if native_build.available():
            from .native_spec import Refused
            from .native_spec import reduction as in_c

            try:
                return in_c(spec)[0]
            except (Refused, native_build.BuildError):
                if engine == "native":
                    raise
        engine = "auto"
    res = Explored(spec)
    _reduction(spec, rules_of(spec, engine), res)
    return res.symmetry


def _checked(spec: Spec, told: str, res: Explored) -> Any:
    """The canonical representative of orbits where ``told``, the declared symmetry check's
    verdict made already, says the reduction is sound, else None (said in ``res.symmetry``)."""
    from .declared_symmetry import canon_of

    res.symmetry = told
    return canon_of(spec, told)


def _reduction(spec: Spec, rules: Rules, res: Explored) -> Any:
    """The canonical representative of orbits when ``spec`` is checked symmetric (said in
    ``res.symmetry``), else None: the run is then unreduced, and ``res.symmetry`` says why."""
    from .declared_symmetry import canon_of, check, nothing_to_rename, verdict

    if nothing_to_rename(spec):
        res.symmetry = "unreduced: " + NOTHING
        return None
    res.symmetry = verdict(check(spec, rules))
    return canon_of(spec, res.symmetry)


def _trace(
    spec: Spec, states: list[Any], parent: list[tuple[int, Move | None, Any]], n: int
) -> list[dict[str, Any]]:
    steps = []
    while parent[n][0] >= 0:
        k, m, out = parent[n]
        assert m is not None
        steps.append(render_step(spec, m, states[k], states[n], out))
        n = k
    return steps[::-1]


# --- walking the space for other readers -----------------------------------------------------
