"""From wire events to the model's moves: the abstraction a recorded trace is checked through.

Profile: 2025-11-25, Streamable HTTP.  An *event* is a plain dict of the trace format
(``mcp_inflight/trace/format.py`` documents it): ``kind`` (``open``, ``message``, ``status``,
``close``), ``dir`` (``client->server`` or ``server->client``), ``exchange`` (a POST number or
``"GET"``), and ``message`` / ``status`` / ``by`` by kind.  The mapping, written once:

* a POST whose body is a ``tools/call`` request under JSON id k opens a new request instance
  (instances are numbered in order of appearance, JSON ids likewise mapped to model ids): the
  sender's ``client_sends`` if the id rule allows it, else ``rogue_sends`` (the first sender of
  an id is the client; a sender reusing an in-flight id is the rogue), then ``arrive``;
* a ``409`` answer on an instance's POST is ``refuse`` of that instance, on its own stream
  (the first error body on that POST belongs to the refusal);
* a response (``result`` or ``error`` under a tool call's id) seen on POST p is ``respond`` of
  an instance under that id whose output stream is p's instance;
* ``notifications/progress`` (or ``notifications/message``) on POST p is ``emit`` of the
  instance whose request carried that progress token (any running one for a log), whose output
  stream is p's instance;
* ``notifications/cancelled`` for id k is ``send_cancel`` of the unanswered instance under k
  (the latest first); its delivery is a server-internal step;
* the client closing an instance's POST before its response is ``break_stream``;
* a 409 or a client's close on a POST whose ``tools/call`` comes later in the trace is a step
  no move explains (the recorder never writes one; a reordered trace does).

Profile: 2025-11-25, stdio (the trace's events all on exchange ``"stdio"``, the one channel).
The same mapping, with what the one channel shows instead of POSTs: every message goes to the
client on the one channel, labelled with the id its handler holds (the model's stdio ``route``),
so a response under id k is ``respond`` of an instance under k and a progress message ``emit`` of
an instance whose call carried the token, with no stream to compare; a refusal is the error with
``id: null`` whose ``data.id`` names the refused id (``refuse`` of the latest instance under it).

Profile: 2026-07-28, Streamable HTTP (tool calls on POSTs of no session, no ``initialize``).
Each POST is its own scope (the server admits its request on a core of its own, and ids of
different POSTs never meet), so each POST is checked as a run of its own, one instance under one
id (:func:`check_stateless`), with the mapping above, except that the client closing a POST
before its response is ``send_cancel`` (the 2026-07-28 cancellation) rather than
``break_stream``.  What is not mapped there: the model's relations between POSTs under one id
(the in-flight registry, the id rule are those of one client, and nothing on a sessionless wire
says which POSTs come from one client).

Server-internal steps the wire does not show (``admit``, ``unwind``, ``check``,
``claim_stream``, ``deliver_cancel``, and a ``respond`` whose stream is gone, which writes
nothing) are inferred: before each observed move a breadth-first search over internal moves
finds the sequences after which the observed move is enabled with the observed outputs,
shortest first; :func:`check` backtracks over these choices (within a budget), the online
check keeps every state they lead to (up to a cap).  Messages on the GET stream, on non-tool POSTs other than cancels, and
server-to-client requests (elicitation) and their answers are not mapped.

Why one module: the mapping (``Abstractor``), the inference of internal steps (``_explain``,
``advance``) and its three users (the whole-trace :func:`check`, the :class:`Online` check and
:func:`segments` with :func:`check_trace`) are one abstraction, read in that order: each user is
a different way of walking the same ``advance``, and the wire's notion of "at rest" that
``segments`` and ``Online`` cut at is the model's ``settled``.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import ATOMIC, CHECK_THEN_CLAIM, UNGUARDED, Config, Design
from .lifecycle import Life
from .logic import Concrete
from .properties import INVARIANTS
from .session import ACTION
from .session_state import State
from .step import Move, Transition, backend, start, take

REVISION = "2025-11-25"
TRANSPORT = "http"
#: The exchange of every event of a stdio trace: the one channel.
STDIO = "stdio"
#: The sessionless revision of Streamable HTTP.
STATELESS = "2026-07-28"
#: The server steps no wire event shows; the checker infers them.
INTERNAL = ("admit", "unwind", "check", "claim_stream", "deliver_cancel")
#: Moves the wire shows only when they write: a handler's answer or message whose stream is
#: gone (the client closed it) is a server step with nothing on the wire, inferred as well.
SILENT_WHEN_UNWRITTEN = {"respond": "response"}
#: A stream no instance owns (a non-tool POST, an exchange never opened).
NO_STREAM = -1


@dataclass(frozen=True)
class Observed:
    """One observed step: ``kind`` (send, refuse, respond, emit, cancel, break), the event's
    index in the trace (``at``), the instance it is about (``r``: the new one for send, the
    POST's for refuse and break), the model id (``i``), the instance of the stream it was seen
    on (``stream``) and, for emit, the instances its progress token names (``of``)."""

    kind: str
    at: int
    r: int | None = None  # None on a stdio refusal: the latest instance under ``i``
    i: int | None = None
    stream: int | None = None
    of: tuple[int, ...] = ()

    def describe(self) -> str:
        name = {None: "the channel", NO_STREAM: "no instance's stream"}
        s = name.get(self.stream, f"{_inst(self.stream)}'s stream")
        return {
            "send": f"event {self.at}: tools/call id={_id(self.i)} opens {_inst(self.r)}",
            "refuse": f"event {self.at}: {_inst(self.r)} answered 409"
            if self.r is not None
            else f"event {self.at}: a refusal of id={_id(self.i)}",
            "respond": f"event {self.at}: response id={_id(self.i)} seen on {s}",
            "emit": f"event {self.at}: progress/log seen on {s}",
            "cancel": f"event {self.at}: client cancels id={_id(self.i)}",
            "break": f"event {self.at}: client closes {_inst(self.r)}'s stream",
            "early": f"event {self.at}: a 409 or a close on a POST before its tools/call",
        }[self.kind]


def _inst(r: int | None) -> str:
    return "?" if r is None or r < 0 else chr(ord("A") + r)


def _id(i: int | None) -> str:
    return "?" if i is None else str(i + 1)


@dataclass
class Abstraction:
    """The observed steps of a trace and the bound they need (``ids``, ``requests``)."""

    steps: list[Observed] = field(default_factory=list)
    ids: int = 0
    requests: int = 0
    transport: str = TRANSPORT
    revision: str = REVISION


def _key(v: Any) -> Any:
    """A JSON value as a dict key: a string or an integer as itself (the common ids), anything
    else as its canonical JSON text in a tuple (so no two values share a key)."""
    t = type(v)
    return v if t is str or t is int else (json.dumps(v, sort_keys=True),)


class Abstractor:
    """The mapping of the module doc, one event at a time: :meth:`feed` gives the observed steps
    an event brings.  ``tool_posts``, when the whole trace is known, names the exchanges that
    carry a ``tools/call`` anywhere in it (so that a 409 or a close before the call is seen as
    such); a stream of events (the online check) has no such foresight.  :meth:`forget` starts
    the numbering of instances and ids again (the online check, at a settled point)."""

    def __init__(self, tool_posts: set[Any] | None = None, transport: str = TRANSPORT) -> None:
        self.tool_posts = tool_posts or set()
        self.stdio = transport == "stdio"
        self.own: dict[Any, set[Any]] = {}  # ids and tokens of the non-tool requests, per POST
        self.forget()

    def forget(self) -> None:
        self.ids: dict[Any, int] = {}
        self.post_inst: dict[Any, int] = {}
        self.tokens: dict[Any, list[int]] = {}
        self.refused: set[int] = set()
        self.answered: set[int] = set()
        self.consumed: set[int] = set()

    def feed(self, n: int, ev: Mapping[str, Any]) -> list[Observed]:
        """The observed steps of event ``ev``, the ``n``-th of its trace."""
        out: list[Observed] = []
        ids, post_inst, tokens, own = self.ids, self.post_inst, self.tokens, self.own
        refused, answered, consumed = self.refused, self.answered, self.consumed
        kind, ex, d = ev.get("kind"), ev.get("exchange"), ev.get("dir")
        if ex == "GET":
            return out
        if kind == "message" and d == "client->server":
            m = ev.get("message")
            if not isinstance(m, dict):
                return out
            if "id" in m and m.get("method") != "tools/call":
                own.setdefault(ex, set()).add(_key(m["id"]))
                tok = ((m.get("params") or {}).get("_meta") or {}).get("progressToken")
                if tok is not None:
                    own[ex].add(_key(tok))
            if m.get("method") == "tools/call" and "id" in m:
                i = ids.setdefault(_key(m["id"]), len(ids))
                r = post_inst[(ex, n) if self.stdio else ex] = len(post_inst)
                meta = (m.get("params") or {}).get("_meta") or {}
                if "progressToken" in meta:
                    tokens.setdefault(_key(meta["progressToken"]), []).append(r)
                out.append(Observed("send", n, r=r, i=i))
            elif m.get("method") == "notifications/cancelled":
                k = _key((m.get("params") or {}).get("requestId"))
                if k in ids:
                    out.append(Observed("cancel", n, i=ids[k]))
        elif (
            kind in ("status", "close")
            and ex in self.tool_posts
            and ex not in post_inst
            and (ev.get("status") == 409 or ev.get("by") == "client")
        ):
            out.append(Observed("early", n))  # no step of the model comes before a send
        elif kind == "status" and ex in post_inst and ev.get("status") == 409:
            refused.add(post_inst[ex])
            out.append(Observed("refuse", n, r=post_inst[ex]))
        elif kind == "message" and d == "server->client" and self.stdio:
            m = ev.get("message")
            if isinstance(m, dict):
                out += self._stdio_out(n, m)
        elif kind == "message" and d == "server->client":
            m = ev.get("message")
            if not isinstance(m, dict):
                return out
            owner = post_inst.get(ex)
            if owner in refused and owner not in consumed and "error" in m:
                consumed.add(owner)  # the refusal's own error body
                return out
            stream = NO_STREAM if owner is None else owner
            if "method" not in m and ("result" in m or "error" in m):
                k = _key(m.get("id"))
                if owner is None and k in own.get(ex, set()):
                    return out  # the answer to a request the model does not speak of
                if owner is not None and k in ids:
                    answered.add(owner)
                out.append(Observed("respond", n, i=ids.get(k), stream=stream))
            elif m.get("method") in ("notifications/progress", "notifications/message"):
                tok = (m.get("params") or {}).get("progressToken")
                if owner is None and tok is not None and _key(tok) in own.get(ex, set()):
                    return out  # progress of a request the model does not speak of
                of = tuple(tokens.get(_key(tok), ())) if tok is not None else ()
                if tok is not None and not of:
                    stream = NO_STREAM  # a token no tool call carried: no instance's message
                out.append(Observed("emit", n, stream=stream, of=of))
        elif kind == "close" and ev.get("by") == "client" and ex in post_inst and not self.stdio:
            r = post_inst[ex]
            if r not in answered and r not in refused:
                out.append(Observed("break", n, r=r))
        return out

    def _stdio_out(self, n: int, m: dict[str, Any]) -> list[Observed]:
        """A message to the client on the one stdio channel."""
        ids, own = self.ids, self.own.setdefault(STDIO, set())
        if "method" not in m and ("result" in m or "error" in m):
            k = _key(m.get("id"))
            if m.get("id") is None:  # a refusal names the id in its data (else: not mapped)
                data = (m.get("error") or {}).get("data")
                rid = _key(data.get("id")) if isinstance(data, dict) else None
                if rid in ids:
                    return [Observed("refuse", n, i=ids[rid])]
                return []
            if k in own:
                own.discard(k)
                return []  # the answer to a request the model does not speak of
            return [Observed("respond", n, i=ids.get(k))]
        if m.get("method") in ("notifications/progress", "notifications/message"):
            tok = (m.get("params") or {}).get("progressToken")
            if tok is not None and _key(tok) in own:
                return []
            of = tuple(self.tokens.get(_key(tok), ())) if tok is not None else ()
            stream = NO_STREAM if tok is not None and not of else None
            return [Observed("emit", n, stream=stream, of=of)]
        return []


def transport_of(events: Iterable[Mapping[str, Any]]) -> str:
    """``stdio`` for a trace of the one stdio channel, else ``http``."""
    return "stdio" if any(ev.get("exchange") == STDIO for ev in events) else TRANSPORT


def stateless(events: Iterable[Mapping[str, Any]]) -> bool:
    """Whether ``events`` (of no session) are 2026-07-28 traffic: tool calls and no
    ``initialize`` (a 2025-11-25 server that gives no session id still has its handshake)."""
    events = list(events)
    return any(is_call(ev) for ev in events) and not any(
        ev.get("dir") == "client->server"
        and (ev.get("message") or {}).get("method") == "initialize"
        for ev in events
        if ev.get("kind") == "message"
    )


def is_call(ev: Mapping[str, Any]) -> bool:
    m = ev.get("message")
    return (
        ev.get("kind") == "message"
        and ev.get("dir") == "client->server"
        and isinstance(m, dict)
        and m.get("method") == "tools/call"
    )


def abstract(
    events: Iterable[Mapping[str, Any]],
    numbers: list[int] | None = None,
    tool_posts: set[Any] | None = None,
) -> Abstraction:
    """The observed steps of ``events`` (in trace order), by the mapping of the module doc;
    ``numbers`` gives each event's index in a larger trace (one session's part of it), and
    ``tool_posts`` the exchanges that carry a tools/call anywhere in that trace."""
    events = list(events)
    at = numbers if numbers is not None else list(range(len(events)))
    transport = transport_of(events)
    if tool_posts is None:
        tool_posts = {ev.get("exchange") for ev in events if is_call(ev)}
    if transport == "stdio":
        tool_posts = set()
    ab = Abstractor(tool_posts, transport)
    out = Abstraction(transport=transport)
    for n, ev in zip(at, events, strict=True):
        out.steps += ab.feed(n, ev)
    out.ids, out.requests = max(1, len(ab.ids)), max(1, len(ab.post_inst))
    return out


# --- the check -------------------------------------------------------------------------------


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
