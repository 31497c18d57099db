"""Checking an abstracted trace on a design: the inference of the steps the wire does not show.

``model/observe.py`` maps a trace's wire events onto observed steps (an :class:`Abstraction`);
this module says whether a design explains them.  Server-internal steps the wire does not show
(``admit``, ``unwind``, ``check``, ``claim_stream``, ``deliver_cancel``, and a ``respond`` whose
stream is gone, which writes nothing) are inferred: before each observed move a breadth-first
search over internal moves finds the sequences after which the observed move is enabled with
the observed outputs, shortest first; :func:`check` backtracks over these choices (within a
budget), the online check (``mcp_inflight/trace/online.py``) keeps every state they lead to
(up to a cap) through :func:`advance`.

Its users are different ways of walking the same :func:`advance`: the whole-trace
:func:`check` (and :func:`explains`, the other designs that explain a trace), and for long
traces :func:`segments` with :func:`check_trace`, which cut the session where it is at rest on
the wire (the model's ``settled``), and :func:`check_stateless`, which checks 2026-07-28 POSTs
one by one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import ATOMIC, CHECK_THEN_CLAIM, UNGUARDED, Config, Design
from .lifecycle import Life
from .logic import Concrete
from .observe import STATELESS, Abstraction, Observed, abstract, is_call, transport_of
from .properties import INVARIANTS
from .session import ACTION
from .session_state import State
from .step import Move, Transition, backend, start, take

#: The server steps no wire event shows; the checker infers them.
INTERNAL = ("admit", "unwind", "check", "claim_stream", "deliver_cancel")
#: Moves the wire shows only when they write: a handler's answer or message whose stream is
#: gone (the client closed it) is a server step with nothing on the wire, inferred as well.
SILENT_WHEN_UNWRITTEN = {"respond": "response"}


@dataclass
class Verdict:
    """The outcome of checking an abstraction on one design.  ``explained``: every observed
    step was matched; ``failed``: the observed step no move explains (if any); ``broken``: the
    first invariant broken along the run, with the number of transitions up to it."""

    cfg: Config
    run: list[Transition]
    explained: bool
    failed: Observed | None = None
    broken: str | None = None
    broken_at: int | None = None
    inferred: list[bool] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.explained and self.broken is None


Expect = tuple[Move, dict[str, tuple[int, bool]]]


def _candidates(cfg: Config, s: State, o: Observed) -> list[list[Expect]]:
    """The move sequences that would explain ``o`` from ``s``, with the outputs each must give."""
    A = ACTION
    R = range(cfg.requests)
    if o.kind == "send":
        assert o.r is not None and o.i is not None
        return [
            [(Move(A[a], o.r, o.i), {}), (Move(A["arrive"], o.r), {})]
            for a in ("client_sends", "rogue_sends")
        ]
    if o.kind == "refuse" and "refuse" in A and cfg.design.refuses:
        if o.r is None:  # stdio: the refusal names the id only
            qs = [q for q in reversed(R) if s.life[q] != Life.UNSENT and s.rid[q] == o.i]
            return [[(Move(A["refuse"], q), {"response": (q, True)})] for q in qs]
        return [[(Move(A["refuse"], o.r), {"response": (o.r, True)})]]
    # on stdio (stream None) a message goes out on the channel labelled as its own instance's
    if o.kind == "respond":
        return [
            [(Move(A["respond"], q), {"response": (q if o.stream is None else o.stream, True)})]
            for q in R
            if s.life[q] != Life.UNSENT and s.rid[q] == o.i
        ]
    if o.kind == "emit":
        return [
            [(Move(A["emit"], q), {"progress": (q if o.stream is None else o.stream, True)})]
            for q in (o.of or R)
        ]
    if o.kind == "cancel":
        qs = [q for q in reversed(R) if s.life[q] != Life.UNSENT and s.rid[q] == o.i]
        return [[(Move(A["send_cancel"], q), {})] for q in qs]
    if o.kind == "break":
        assert o.r is not None
        if cfg.close_is_cancel:  # 2026-07-28: closing a request's stream cancels it
            return [[(Move(A["send_cancel"], o.r), {})]]
        return [[(Move(A["break_stream"], o.r), {})]]
    return []


def _try(cfg: Config, s: State, seq: list[Expect], b: Concrete) -> list[Transition] | None:
    out = []
    for mv, want in seq:
        t = take(cfg, s, mv, b)
        if t is None or any(t.out.get(k) != v for k, v in want.items()):
            return None
        out.append(t)
        s = t.post
    return out


def _explain(
    cfg: Config, s: State, o: Observed, b: Concrete, depth: int
) -> Iterator[tuple[list[Transition], list[Transition]]]:
    """Breadth-first over internal moves from ``s``: every internal prefix (shortest first)
    after which some candidate of ``o`` runs, as ``(internal transitions, observed ones)``.
    Candidates on the stream the message was seen on come first."""
    internal = [
        Move(ACTION[a], r)
        for a in INTERNAL + tuple(SILENT_WHEN_UNWRITTEN)
        if a in ACTION
        for r in range(cfg.requests)
    ]
    queue: deque[tuple[State, list[Transition]]] = deque([(s, [])])
    seen = {s}
    while queue:
        st, path = queue.popleft()
        cands = _candidates(cfg, st, o)
        cands.sort(key=lambda seq: seq[0][0].r != o.stream)
        for seq in cands:
            got = _try(cfg, st, seq, b)
            if got is not None:
                yield path, got
        if len(path) >= depth:
            continue
        for mv in internal:
            t = take(cfg, st, mv, b)
            out = SILENT_WHEN_UNWRITTEN.get(mv.action.name)
            if out is not None and t is not None and t.out[out][1]:
                continue  # it writes: an observed step, never an inferred one
            if t is not None and t.post not in seen:
                seen.add(t.post)
                queue.append((t.post, path + [t]))


def _broken(cfg: Config, t: Transition, b: Concrete) -> str | None:
    for p in INVARIANTS:
        if not p.applies(cfg):
            continue
        if p.scope == "step":
            ok = p.fn(b, t.pre, t.post, cfg, t.action, t.move.r, t.move.i, t.out)
        else:
            ok = p.fn(b, t.post, cfg)
        if not ok:
            return p.name
    return None


def config_for(design: Design, ab: Abstraction) -> Config:
    """The model's bound grown to the trace: its instances and its distinct ids."""
    return Config(design, ab.revision, ab.transport, ids=ab.ids, requests=ab.requests)


#: How many model states, each explaining every step so far, a check carries from one observed
#: step to the next (the first ones found, shortest explanations first).
CAP = 256

#: A way to a state: the way to the state before, the inferred and the observed transitions.
Way = tuple[Any, list[Transition], list[Transition]] | None


def advance(
    cfg: Config,
    frontier: dict[State, Way],
    o: Observed,
    b: Concrete,
    depth: int,
    cap: int = CAP,
) -> dict[State, Way]:
    """The states (with the way to each) reached from ``frontier`` by internal moves and then
    the observed step ``o`` with its observed outputs; empty when no move explains ``o``."""
    nxt: dict[State, Way] = {}
    for s, way in frontier.items():
        for pre, obs in _explain(cfg, s, o, b, depth):
            post = obs[-1].post
            if post not in nxt:
                nxt[post] = (way, pre, obs)
                if len(nxt) >= cap:
                    return nxt
    return nxt


def _unroll(way: Way) -> tuple[list[Transition], list[bool]]:
    parts = []
    while way is not None:
        way, pre, obs = way
        parts.append((pre, obs))
    run: list[Transition] = []
    inferred: list[bool] = []
    for pre, obs in reversed(parts):
        run += pre + obs
        inferred += [True] * len(pre) + [False] * len(obs)
    return run, inferred


def _first_way(
    cfg: Config, steps: list[Observed], b: Concrete, depth: int
) -> tuple[list[Transition], list[bool]] | None:
    """The run that takes the first (shortest) explanation of every step, if it carries the
    whole trace: the common case, linear in the trace; None sends the check to the full search."""
    s = start(cfg)
    run: list[Transition] = []
    inferred: list[bool] = []
    for o in steps:
        got = next(_explain(cfg, s, o, b, depth), None)
        if got is None:
            return None
        pre, obs = got
        run += pre + obs
        inferred += [True] * len(pre) + [False] * len(obs)
        s = obs[-1].post
    return run, inferred


def check(ab: Abstraction, design: Design = ATOMIC, cap: int = CAP) -> Verdict:
    """Run the observed steps of ``ab`` on ``design`` with the model's step function: every
    step enabled, every output as observed, every invariant along the run.

    The first (shortest) explanation of each step is tried first.  When that does not carry the
    whole trace (an observed step has several explanations, which instance responded, which
    internal steps came first, and a later step rules the first out), every state they lead to is kept (up to ``cap``, shortest explanations
    first), so a choice that only a later step rules out is never a dead end; the run judged is
    one that explains every step, or, when none does, one that got furthest."""
    cfg = config_for(design, ab)
    b = backend(cfg)
    depth = 3 * cfg.requests + 1
    quick = _first_way(cfg, ab.steps, b, depth)
    if quick is not None:  # the shortest explanation of each step carried the whole trace
        return _judge(cfg, quick[0], quick[1], b, None)
    frontier: dict[State, Way] = {start(cfg): None}
    for o in ab.steps:
        nxt = advance(cfg, frontier, o, b, depth, cap)
        if not nxt:
            run, inf = _unroll(next(iter(frontier.values())))
            return _judge(cfg, run, inf, b, o)
        frontier = nxt
    run, inf = _unroll(next(iter(frontier.values())))
    return _judge(cfg, run, inf, b, None)


def _judge(
    cfg: Config, run: list[Transition], inferred: list[bool], b: Concrete, failed: Observed | None
) -> Verdict:
    v = Verdict(cfg, run, failed is None, failed, inferred=inferred)
    for n, t in enumerate(run, 1):
        name = _broken(cfg, t, b)
        if name is not None:
            v.broken, v.broken_at = name, n
            break
    return v


ALTERNATIVES: tuple[Design, ...] = (UNGUARDED, CHECK_THEN_CLAIM)


def explains(ab: Abstraction) -> list[Verdict]:
    """The verdicts of the other designs that explain every observed step of ``ab``."""
    return [v for v in (check(ab, d) for d in ALTERNATIVES) if v.explained]


# --- long traces -----------------------------------------------------------------------------


def segments(events: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The indices of ``events`` cut at the points where the session is at rest on the wire:
    every tools/call seen since the last cut has been answered (or refused) and its POST closed
    by the server, and no cancel and no client's close was seen since.  On ``atomic`` such a
    point is a settled state (every instance responded or refused, nothing on the wire), where
    every registry is empty (``quiescent_clean``), so the model can start afresh there: each
    part is checked on a model the size of that part, not of the whole session."""
    if transport_of(events) == "stdio":  # one channel, no POST to close: one part
        return [list(range(len(events)))]
    out: list[list[int]] = []
    cur: list[int] = []
    open_posts: set[Any] = set()
    ended: set[Any] = set()
    calls = tainted = False
    for n, ev in enumerate(events):
        cur.append(n)
        kind, ex = ev.get("kind"), ev.get("exchange")
        m = ev.get("message")
        m = m if isinstance(m, dict) else {}
        if is_call(ev):
            open_posts.add(ex)
            calls = True
        elif kind == "message" and m.get("method") == "notifications/cancelled":
            tainted = True
        elif kind == "close" and ev.get("by") == "client" and ex in open_posts:
            tainted = True
        elif kind == "status" and ev.get("status") == 409 and ex in open_posts:
            ended.add(ex)
        elif kind == "message" and ex in open_posts and ("result" in m or "error" in m):
            ended.add(ex)
        elif kind == "close" and ex in ended:
            open_posts.discard(ex)
            ended.discard(ex)
        if calls and not open_posts and not tainted:
            out.append(cur)
            cur, calls = [], False
    if cur:
        out.append(cur)
    return out


def check_trace(
    events: Sequence[Mapping[str, Any]], numbers: list[int] | None = None, design: Design = ATOMIC
) -> tuple[Abstraction, Verdict]:
    """:func:`check` of a session's events part by part (:func:`segments`): the first part that
    is not clean, or the last, with its abstraction."""
    at = numbers if numbers is not None else list(range(len(events)))
    tool_posts = {ev.get("exchange") for ev in events if is_call(ev)}
    parts = segments(events) or [[]]
    result: tuple[Abstraction, Verdict] | None = None
    for part in parts:
        ab = abstract([events[n] for n in part], [at[n] for n in part], tool_posts)
        result = ab, check(ab, design)
        if not result[1].clean:
            break
    assert result is not None
    return result


def check_stateless(
    events: Sequence[Mapping[str, Any]], numbers: list[int] | None = None, design: Design = ATOMIC
) -> tuple[Abstraction, Verdict]:
    """2026-07-28 traffic checked POST by POST, each a run of its own on the 2026-07-28 http
    profile: the first POST that is not clean, or the last, with its abstraction."""
    at = numbers if numbers is not None else list(range(len(events)))
    posts: dict[Any, list[int]] = {}
    for n, ev in enumerate(events):
        posts.setdefault(ev.get("exchange"), []).append(n)
    result: tuple[Abstraction, Verdict] | None = None
    for part in posts.values():
        ab = abstract([events[n] for n in part], [at[n] for n in part])
        ab.revision = STATELESS
        result = ab, check(ab, design)
        if not result[1].clean:
            break
    if result is None:
        ab = Abstraction(revision=STATELESS)
        result = ab, check(ab, design)
    return result
