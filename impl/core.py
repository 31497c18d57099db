"""The sans-IO session core: the model's ``atomic`` design, running on one session's state.

Like h11, this module does no I/O: no sockets, no asyncio, no clock.  An adapter (stdio,
Streamable HTTP, a guard in front of another server) tells the core what happened on the wire
and the core answers what to do: admit this request (with an opaque handle) or refuse it with
this JSON-RPC error, write this message on that request's stream or drop it, cancel that
handler.  Every answer is computed by the model's own actions (``model/session.py``: ``arrive``,
``admit``, ``refuse``, ``emit``, ``server_request``, ``answer``, ``respond``, ``on_cancel``,
``unwind``, ``break_stream``) under ``model.config.ATOMIC``; this module adds no guard and no
effect of its own.  Two engines run them on the same runtime state: ``"generated"`` (the
default) runs Python generated once per profile from those functions (``impl/generated.py``),
``"model"`` calls the functions themselves with the concrete backend of ``model/logic.py``.
``tests/test_core.py`` checks that both agree with the model on explored state spaces and runs
the side-by-side state machine on both.

One module on purpose, though longer than the project's modules usually are: all of it is the
one mapping from the model's actions to the calls an adapter makes, namely the admission API
below, the runtime form of the model's state that those actions read and write, and the
binding of the two engines that run them.  The parts keep each other's invariants (instance
numbers never reused, so identity comparisons stay sound; a write of a field's default deletes
the entry, so the tables hold only what is live).  Its code is about 400 lines; the rest is
this text, the API's and blank lines.

The admission API (stable; other adapters build on it)
-------------------------------------------------------
::

    core = SessionCore("2025-11-25", "http")  # one per session (2026-07-28 http: one per POST)
    v = core.arrive(rid)            # rid: the request's JSON id exactly as parsed
    if isinstance(v, Refused):      # an id in flight: send v.error (on HTTP: 409, ``id: null``)
        ...
    else:
        h = v.handle                # opaque, compared by identity
    core.emit(h)      -> Handle | None   # progress/log: the stream to write it on, None = drop
    core.server_request(h) -> (sid, Handle) | None  # elicitation/sampling: a fresh id, its stream
    core.answer(sid)  -> Handle | None   # the client's answer to sid: the waiter to resolve
    core.withdraw(h, sid)            # h stops waiting on sid (timeout, failure, cancellation)
    core.finish(h)    -> Handle | None   # the handler ended: stream for its response, or None
    core.close(h)     -> bool        # h's stream closed; True if that cancels h's handler
    core.cancel(rid)  -> Handle | None   # notifications/cancelled: the handle to cancel, if any
    core.end()        -> list[Handle]    # the session ends: handles to cancel

``arrive`` raises :class:`InvalidId` (JSON-RPC -32600) for an id that is not a string or an
integer (``null``, booleans, floats, objects, arrays).  Ids keep their JSON type: ``7`` and
``"7"`` are two ids (:func:`typed_id`).  A handle is released by identity only: releasing a
finished or foreign handle changes nothing.  ``initialize`` is never handed to ``cancel``'s
target because adapters answer it within the step that admits it (no cancel can come between).

How the model's state is kept at run time
-----------------------------------------
The explorer's state is a tuple per field over a bounded set of instances and ids.  Here each
keyed field is a mapping with the field's default (:class:`_Table`): instances are numbered by
a per-session counter (never reused, so identity comparisons stay sound), ids are typed keys.
The model's functions read it by indexing exactly as they read the explorer's tuples.  Writes
are applied by :func:`apply_runtime` (``"model"`` engine) or by the generated assignments (a
write of the default value deletes the entry, so the tables hold only what is live);
``tests/test_core.py`` checks both against ``model.logic.apply_writes`` on every transition of
explored state spaces.  Quantifiers over ``inst`` range over the live instances, over ``id``
over the ids present in a registry.

Ghost fields (``rogue``, ``got_resp``) and wire fields (``cmsg``, ``ts``, ``cts``, ``clock``)
are not server state: the core never stores them (writes to them are discarded, reads give the
field's default).  No server-side guard depends on them: ``arrive``'s channel-order condition
reads send times, which are all equal here (the adapter hands messages over in the order it
reads them), and a cancel is handled by the model's ``on_cancel``, which reads only server state.

A message that comes in enters as the model's send (its effect: life ``sent``, the id, an open
channel) followed by ``arrive``; the send's guard is the sender's obligation (the client's id
rule), which a server cannot check, so it is not evaluated.  An instance that has finished
(responded, refused, or cancelled and unwound) is no longer read by any server rule (no
registry points at it, its stream is done); its entries are forgotten and its final lifecycle
state is kept on its handle.

Server-to-client requests: the core mints each id (a per-session counter, so it is fresh, which
the model's ``fresh_server_id`` asks for, with a random part, so no one who did not see the
request can guess it, which ``unguessable_server_ids`` assumes) and keeps the model's ``waiter``
table: which handler waits on which id.  An answer is handed to the handler the model's
``answer`` names (none: ignored).  A handler may make any number of them, in sequence or at
once.  The sender's obligation on an answer (it answers only what it saw) is not the server's to
check (``Action.obligations``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import count
from typing import TYPE_CHECKING, Any

from mcp_inflight.model import ACTION, ATOMIC, Concrete, Config, Design, Life
from mcp_inflight.model.lifecycle import FINAL
from mcp_inflight.model.logic import NONE, Logic, Write
from mcp_inflight.model.session import SERVER_ACTIONS, SERVER_EFFECTS, Action, on_cancel
from mcp_inflight.model.session_conditions import CONDITIONS, Condition
from mcp_inflight.model.session_state import FIELDS

INVALID_REQUEST = -32600
_STORED = tuple(f.name for f in FIELDS if f.key is not None and not (f.ghost or f.wire))
_PER_INSTANCE = tuple(f.name for f in FIELDS if f.key == "inst" and not (f.ghost or f.wire))
_DISCARDED = frozenset(f.name for f in FIELDS if f.ghost or f.wire)
_SCALAR = object()
#: per field: None (discarded), _SCALAR, or the keyed field's default
_KIND = {
    f.name: None if f.name in _DISCARDED else _SCALAR if f.key is None else f.default
    for f in FIELDS
}
#: a stored life value (a plain int in the generated engine's tables) to its ``Life``
_LIFE = {int(v): v for v in Life}
_FINAL = frozenset(int(v) for v in FINAL)


class InvalidId(ValueError):
    """The id is not a JSON-RPC request id (a string or an integer)."""

    code = INVALID_REQUEST

    def __init__(self, rid: object):
        self.rid = rid
        super().__init__(
            f"Invalid Request: a request id must be a string or an integer, not {_show(rid)}"
        )

    @property
    def error(self) -> dict[str, Any]:
        return {"code": INVALID_REQUEST, "message": str(self)}


def _show(rid: object) -> str:
    try:
        return json.dumps(rid)
    except (TypeError, ValueError):
        return repr(rid)


class IdKey(tuple[str, Any]):
    """A typed id: ``IdKey(("int", 7))`` and ``IdKey(("str", "7"))`` differ.  No internal slot
    (such as the standalone GET stream) is ever stored under an ``IdKey``."""

    __slots__ = ()

    @property
    def value(self) -> Any:
        return self[1]


def typed_id(rid: object) -> IdKey:
    """The registry key of a JSON-RPC id; raises :class:`InvalidId` for anything else."""
    t = type(rid)
    if t is int:
        return IdKey(("int", rid))
    if t is str:
        return IdKey(("str", rid))
    raise InvalidId(rid)


class Handle:
    """One admitted request.  Opaque to adapters; compared by identity."""

    __slots__ = ("inst", "id", "key", "final", "data")

    def __init__(self, inst: int, rid: object, key: IdKey):
        self.inst = inst
        self.id = rid
        self.key = key
        self.final: Life | None = None  # set when the instance is finished and forgotten
        self.data: Any = None  # free for the adapter (its stream, its task)

    def __repr__(self) -> str:
        return f"Handle(#{self.inst}, id={_show(self.id)})"


@dataclass(slots=True)
class Admitted:
    handle: Handle  # (not frozen: a frozen dataclass costs twice as much to make, per request)


@dataclass(frozen=True, slots=True)
class Refused:
    """A duplicate of an id in flight.  ``error`` is the JSON-RPC error object to send; on
    Streamable HTTP it goes in a 409 response whose body has ``id: null``."""

    id: object
    error: dict[str, Any]


class _Table(dict[Any, Any]):
    """A keyed field of the model: a mapping that reads the field's default for absent keys
    (one subclass per field holds the default, so a table is created without arguments)."""

    __slots__ = ()
    default: Any = None

    def __missing__(self, key: Any) -> Any:
        return self.default


class _Discard:
    """A ghost or wire field: never stored, always read as its default."""

    __slots__ = ("default",)

    def __init__(self, default: Any):
        self.default = default

    def __getitem__(self, key: Any) -> Any:
        return self.default


_TABLES = tuple(
    (f.name, type(f"_Table_{f.name}", (_Table,), {"__slots__": (), "default": f.default}))
    for f in FIELDS
    if f.key is not None and f.name not in _DISCARDED
)
_FIXED = {
    f.name: (f.default if f.key is None else _Discard(f.default))
    for f in FIELDS
    if f.key is None or f.name in _DISCARDED
}


class RuntimeState:
    """The model's state (``model.session_state.FIELDS``) as mappings, readable by the model's rules."""

    if TYPE_CHECKING:  # one attribute per field of FIELDS, set in __init__

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self) -> None:
        d = self.__dict__
        d.update(_FIXED)  # ghost and wire fields: shared, read-only defaults
        for name, table in _TABLES:
            d[name] = table()

    def snapshot(self) -> dict[str, dict[Any, Any]]:
        """The stored (server) fields, as plain dicts (for tests and debugging)."""
        return {name: dict(getattr(self, name)) for name in _STORED}


def apply_runtime(state: RuntimeState, writes: list[Write]) -> None:
    """Apply the model's writes to a runtime state in place (``model.logic`` semantics: values
    come from the pre-state, writes apply in order, a false ``when`` skips).  Ghost and wire
    fields are discarded; a write of a field's default removes the entry."""
    for w in writes:
        if not w.when:
            continue
        kind = _KIND[w.field]
        if kind is None:  # ghost or wire: not server state
            continue
        if kind is _SCALAR:
            setattr(state, w.field, w.value)
            continue
        if w.key == NONE:
            raise ValueError(f"write to {w.field}[NONE]: an unmasked NONE key (model bug)")
        table = getattr(state, w.field)
        if w.value == kind:
            table.pop(w.key, None)
        else:
            table[w.key] = w.value


class _Live(Concrete):
    """The concrete backend whose quantifiers range over what is live in a runtime state."""

    def __init__(self, state: RuntimeState):
        self.state = state

    def _domain(self, sort: str) -> tuple[Any, ...]:
        if sort == "inst":
            return tuple(self.state.life)
        return tuple(set(self.state.inflight) | set(self.state.stream) | set(self.state.waiter))

    def ForAll(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        return all(fn(v) for v in self._domain(sort))

    def Exists(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        return any(fn(v) for v in self._domain(sort))


_SEND_EFFECT = ACTION[SERVER_EFFECTS["send"]].effect
_CLOSE_EFFECT = ACTION[SERVER_EFFECTS["close"]].effect


@cache
def compiled_guard(
    action: Action, cfg: Config
) -> tuple[tuple[Life, ...] | None, tuple[Condition, ...]]:
    """``action``'s guard on ``cfg`` as (source states or None, condition functions): the parts
    ``model.session.Action.guard`` combines with ``And``, read from the model's tables once.
    ``tests/test_core.py`` checks it against ``Action.guard`` on explored state spaces."""
    return action.sources(cfg), tuple(CONDITIONS[n] for n in action.server_conditions(cfg))


def guard_holds(action: Action, b: Logic, s: Any, cfg: Config, r: Any, i: Any = None) -> bool:
    """``action``'s guard evaluated from :func:`compiled_guard` (what the core runs)."""
    src, conds = compiled_guard(action, cfg)
    return (src is None or s.life[r] in src) and all(cond(b, s, cfg, r, i) for cond in conds)


@cache
def _config(design: Design, revision: str, transport: str) -> Config:
    return Config(design, revision, transport)


@cache
def _guards_for(cfg: Config) -> dict[str, tuple[tuple[Life, ...] | None, tuple[Condition, ...]]]:
    return {a.name: compiled_guard(a, cfg) for a in ACTION.values()}


ENGINES = ("generated", "model")
#: entries of an engine's action table that are not the model's server actions: the client's
#: send and close effects, and the cancel (reported to ``on_step`` by :meth:`_cancel_with`)
_UNOBSERVED = frozenset(("send", "close", "on_cancel"))
#: ``arrival`` (send, arrive and admit in one call) is not in an observed table at all


def _model_engine(core: SessionCore) -> dict[str, Callable[..., Any]]:
    """The actions run through the model's functions with the concrete backend on the runtime
    state (``engine="model"``): the reference the generated actions are tested against."""
    b, s, c = core.b, core.s, core.cfg
    guards = _guards_for(c)
    acts: dict[str, Callable[..., Any]] = {}

    def action(name: str) -> Callable[..., tuple[bool, Any]]:
        a = ACTION[name]
        src, conds = guards[name]

        def run(r: Any, i: Any = None) -> tuple[bool, Any]:
            if not a.applies(c):
                return False, None
            if src is not None and s.life[r] not in src:
                return False, None
            for cond in conds:
                if not cond(b, s, c, r, i):
                    return False, None
            out = a.output(b, s, c, r, i)
            apply_runtime(s, a.effect(b, s, c, r, i, out))
            return True, (next(iter(out.values())) if out else None)

        return run

    for name in SERVER_ACTIONS:
        acts[name] = action(name)
    acts["send"] = lambda r, i=None: apply_runtime(s, _SEND_EFFECT(b, s, c, r, i, {}))
    acts["close"] = lambda r, i=None: apply_runtime(s, _CLOSE_EFFECT(b, s, c, r, None, {}))

    def cancel(i: Any, conn: Any) -> tuple[Any, Any]:
        tgt, hit, writes = on_cancel(b, s, c, i, conn)
        apply_runtime(s, writes)
        return tgt, hit

    acts["on_cancel"] = cancel
    return acts


class SessionCore:
    """One session's requests under the ``atomic`` design (see the module text for the API)."""

    def __init__(
        self,
        revision: str = "2025-11-25",
        transport: str = "http",
        design: Design = ATOMIC,
        engine: str = "generated",
    ):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        self.cfg = _config(design, revision, transport)
        self.engine = engine
        self.s = RuntimeState()
        self.b = _Live(self.s)
        self._handles: dict[int, Handle] = {}
        self._next = count()
        self._sids = count(1)
        self.dropped = 0  # messages not written because their stream was gone
        if engine == "generated":
            from .generated import bind

            self._plain = bind(self.cfg, self.s)
        else:
            self._plain = _model_engine(self)
        self._on_step: Callable[[str, Any, Any], None] | None = None
        self._bind(self._plain)
        # the stored per-instance tables, cleared of a finished instance's entries (the id-keyed
        # registries are keyed by typed ids, and the model's own writes release those)
        self._tables = tuple(getattr(self.s, name) for name in _PER_INSTANCE)
        self._life = self.s.life
        self._running = self.s.running
        self._waiter = self.s.waiter

    def _bind(self, acts: dict[str, Callable[..., Any]]) -> None:
        """Take ``acts`` as the action table; the request path's actions are also kept as
        attributes (one lookup fewer per call)."""
        self._acts = acts
        self._send = acts["send"]
        self._arrive = acts["arrive"]
        self._admit = acts["admit"]
        self._emit = acts["emit"]
        self._respond = acts["respond"]
        # send, arrive and admit as one generated function (absent when observed: on_step is
        # told of each step, so they are taken one by one)
        self._arrival = acts.get("arrival")

    @property
    def on_step(self) -> Callable[[str, Any, Any], None] | None:
        """Optional ``fn(action_name, inst, out)``, called after each action taken (for tests).
        Setting it wraps the actions, so that the core pays nothing for it when it is unset."""
        return self._on_step

    @on_step.setter
    def on_step(self, fn: Callable[[str, Any, Any], None] | None) -> None:
        self._on_step = fn
        if fn is None:
            self._bind(self._plain)
            return

        def observed(name: str, act: Callable[..., Any]) -> Callable[..., Any]:
            def run(r: Any, i: Any = None) -> Any:
                ok, out = act(r, i)
                if ok:
                    fn(name, r, out)
                return ok, out

            return run

        self._bind(
            {
                name: act if name in _UNOBSERVED else observed(name, act)
                for name, act in self._plain.items()
                if name != "arrival"
            }
        )

    # --- running the model -----------------------------------------------------------------
    def _run(self, name: str, r: Any, i: Any = None) -> tuple[bool, Any]:
        """Take the model's action ``name`` on instance ``r`` if its guard holds; returns
        ``(taken, output)`` where ``output`` is ``(stream, goes_out)`` for an action that
        writes a message, else None."""
        return self._acts[name](r, i)  # type: ignore[no-any-return]

    def _forget_if_done(self, h: Handle) -> None:
        r = h.inst
        # a table holds no default value, so an absent entry reads as the default (False)
        life = self._life.get(r)
        if life in _FINAL and not self._running.get(r):
            h.final = _LIFE[life]
            for table in self._tables:
                table.pop(r, None)
            self._handles.pop(r, None)

    def _mine(self, h: object) -> bool:
        return self._handles.get(getattr(h, "inst", NONE)) is h

    def _target(self, out: Any) -> Handle | None:
        t, goes = out
        if not goes:
            self.dropped += 1
            return None
        return self._handles.get(t)

    # --- admission -------------------------------------------------------------------------
    def arrive(self, rid: object) -> Admitted | Refused:
        """A request with JSON id ``rid`` arrives: admitted or refused (before anything is
        registered).  Raises :class:`InvalidId` for an id that is not a string or integer."""
        t = type(rid)
        if t is int:
            key = IdKey(("int", rid))
        elif t is str:
            key = IdKey(("str", rid))
        else:
            raise InvalidId(rid)
        r = next(self._next)
        arrival = self._arrival
        if arrival is not None:  # the three steps in one generated call
            taken = arrival(r, key)
            if not taken:  # pragma: no cover - a fresh ``sent`` always arrives
                raise RuntimeError("the model did not let a fresh request arrive")
            h = Handle(r, rid, key)
            self._handles[r] = h
            if taken == 2:
                return Admitted(h)
        else:
            self._send(r, key)
            if not self._arrive(r, None)[0]:  # pragma: no cover - a fresh ``sent`` arrives
                raise RuntimeError("the model did not let a fresh request arrive")
            h = Handle(r, rid, key)
            self._handles[r] = h
            if self._admit(r, None)[0]:
                return Admitted(h)
        ok, _ = self._run("refuse", r)
        message = f"Invalid Request: id {_show(rid)} is already in flight"
        if not ok:
            ok, _ = self._run("reject", r)
            message = "Invalid Request: the session has ended"
        if not ok:  # pragma: no cover - atomic: every received request is admitted or refused
            raise RuntimeError("the model neither admitted nor refused the request")
        self._forget_if_done(h)
        return Refused(rid, {"code": INVALID_REQUEST, "message": message, "data": {"id": rid}})

    # --- a running handler ---------------------------------------------------------------
    def emit(self, h: Handle) -> Handle | None:
        """A progress or log notification of ``h``: the handle whose stream gets it, or None
        (dropped and counted: the handler is no longer running or its stream is gone)."""
        r = getattr(h, "inst", NONE)
        if self._handles.get(r) is h:
            ok, out = self._emit(r, None)
            if ok and out[1]:
                return self._handles.get(out[0])
        self.dropped += 1
        return None

    def server_request(self, h: Handle) -> tuple[str, Handle] | None:
        """``h``'s handler sends a server-to-client request (2025-11-25) under a fresh id that the
        core mints: ``(id, handle whose stream carries it)``, with ``h`` now waiting on that id;
        or None (not sent, nothing to wait on: the stream is gone or the handler stopped)."""
        if not self._mine(h) or not ACTION["server_request"].applies(self.cfg):
            return None
        sid = f"s{next(self._sids)}-{secrets.token_hex(8)}"
        ok, out = self._run("server_request", h.inst, sid)
        if not ok:
            return None
        target = self._target(out)
        return None if target is None else (sid, target)

    def answer(self, sid: object) -> Handle | None:
        """The client's answer to server request ``sid``: the handle of the handler it resolves
        (it stops waiting), or None (an id no handler waits on: unknown, answered, or given up;
        ignored)."""
        if not ACTION["answer"].applies(self.cfg) or not isinstance(sid, str):
            return None
        ok, out = self._run("answer", NONE, sid)
        if not ok or not out[1]:
            return None
        return self._handles.get(out[0])

    def withdraw(self, h: Handle, sid: str) -> None:
        """``h``'s handler stops waiting on ``sid`` unanswered (a timeout, a failure, its
        cancellation); nothing if it does not wait on it."""
        if self._mine(h) and ACTION["withdraw"].applies(self.cfg):
            self._run("withdraw", h.inst, sid)

    def _withdraw_all(self, h: Handle) -> None:
        """A handler that has ended waits on nothing: each of its waiters is withdrawn."""
        waiting = [k for k, v in self.s.waiter.items() if v == h.inst]
        for k in waiting:
            self._run("withdraw", h.inst, k)

    def finish(self, h: Handle) -> Handle | None:
        """``h``'s handler has ended.  Live: its response (the model's ``respond``) goes on the
        returned handle's stream, or nowhere (None: its stream broke).  Cancelled: the handler
        unwinds and nothing is written.  Entries are released by identity either way."""
        r = getattr(h, "inst", NONE)
        if self._handles.get(r) is not h:
            return None
        if self._waiter:
            self._withdraw_all(h)
        ok, out = self._respond(r, None)
        if ok:  # _target, inline
            if out[1]:
                target = self._handles.get(out[0])
            else:
                self.dropped += 1
                target = None
        else:
            self._run("unwind", r)
            target = None
        # _forget_if_done, inline (the request path's last step)
        life = self._life.get(r)
        if life in _FINAL and not self._running.get(r):
            h.final = _LIFE[life]
            for table in self._tables:
                table.pop(r, None)
            self._handles.pop(r, None)
        return target

    # --- the client's side of an admitted request ----------------------------------------
    def close(self, h: Handle) -> bool:
        """``h``'s response stream closed before its response.  2025-11-25 http: the stream is
        dropped, the handler goes on (``break_stream``).  2026-07-28 http: that is cancellation
        (``on_cancel`` by connection); returns True when the handler must be cancelled."""
        if not self._mine(h) or not self.cfg.http:
            return False
        r = h.inst
        if self.cfg.close_is_cancel:
            # The client's close is the model's send_cancel (its effect: the stream is no longer
            # open; its guard is the client's belief, not the server's to check), then on_cancel.
            self._acts["close"](r)
            return self._cancel_with(self.s.rid[r], r) is h
        if ACTION["break_stream"].applies(self.cfg):
            self._run("break_stream", r)
        return False

    def cancel(self, rid: object) -> Handle | None:
        """``notifications/cancelled`` for ``rid``: the handle whose handler must be cancelled,
        or None (unknown, finished, not a valid id, or not how this profile cancels: ignored)."""
        if self.cfg.close_is_cancel:
            return None
        try:
            key = typed_id(rid)
        except InvalidId:
            return None
        return self._cancel_with(key, NONE)

    def _cancel_with(self, key: Any, conn: Any) -> Handle | None:
        tgt, hit = self._acts["on_cancel"](key, conn)
        if not hit:
            return None
        if self.on_step is not None:
            self.on_step("on_cancel", tgt, {})
        return self._handles.get(tgt)

    def end(self) -> list[Handle]:
        """The session ends (DELETE, idle expiry, shutdown): the model's ``end_session``, then
        ``end_request`` for every live request; returns the handles whose handlers must be
        cancelled (each then ``finish``es, which withdraws its waiters and unwinds).  Nothing is
        written for them afterwards, and a request that arrives later is turned away."""
        self._run("end_session", NONE)
        out = []
        for h in list(self._handles.values()):
            if self._run("end_request", h.inst)[0]:
                out.append(h)
        return out

    @property
    def ended(self) -> bool:
        return bool(self.s.ended)

    # --- reading ---------------------------------------------------------------------------
    def life(self, h: Handle) -> Life:
        """``h``'s lifecycle state (its final one once finished)."""
        if h.final is not None:
            return h.final
        return Life(self.s.life[h.inst])

    def in_flight(self, rid: object) -> Handle | None:
        """The handle in flight under ``rid`` (typed), or None."""
        try:
            key = typed_id(rid)
        except InvalidId:
            return None
        return self._handles.get(self.s.inflight[key])

    def live(self) -> list[Handle]:
        return list(self._handles.values())

    def empty(self) -> bool:
        """No request of this session is unfinished and every registry is empty."""
        return not self._handles and all(not getattr(self.s, n) for n in _STORED)

    def registries(self) -> dict[str, Any]:
        """The id-keyed registries (typed id -> handle), for tests and diagnostics."""
        return {
            name: {k: self._handles.get(v, v) for k, v in getattr(self.s, name).items()}
            for name in ("inflight", "stream", "waiter")
        }
