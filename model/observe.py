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
nothing) are not observed: ``model/observe_check.py`` infers them when it checks an abstraction
on a design.  Messages on the GET stream, on non-tool POSTs other than cancels, and
server-to-client requests (elicitation) and their answers are not mapped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REVISION = "2025-11-25"
TRANSPORT = "http"
#: The exchange of every event of a stdio trace: the one channel.
STDIO = "stdio"
#: The sessionless revision of Streamable HTTP.
STATELESS = "2026-07-28"
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
        self.calls = 0  # tool calls seen: each one is an instance of its own
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
                # a new instance even where an exchange number comes again (traces joined
                # together): numbered by the calls seen, never by the exchanges
                r = post_inst[(ex, n) if self.stdio else ex] = self.calls
                self.calls += 1
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
    out.ids, out.requests = max(1, len(ab.ids)), max(1, ab.calls)
    return out
