"""Resumable streams (2025-11-25 Streamable HTTP, ``Last-Event-ID``), as a small model.

A request's POST is answered with an SSE stream; every event on it is first kept by the event
store, which gives it an id.  The client's connection may drop: on 2025-11-25 that is not a
cancellation, the handler goes on and what it writes is kept.  The client then sends ``GET``
with ``Last-Event-ID`` (the last id it saw on that stream); the server replays the kept events
that came after it on that stream only, and the connection carries the stream's later events,
its response included.

What is modelled (bounds: ``sessions``, ``requests`` spread over them round-robin, ``events``
the store can be given in a run):

* every request has the id ``1`` (the first request of a session, the one most often
  repeated); the second request of session 0 is the **rogue**'s (a buggy client or anyone with
  the session id), which reuses the id once the first one has been answered (allowed by the
  ``atomic`` core: the id is no longer in flight);
* ``send(q)``: the request's stream opens with a priming event; ``emit(q)``: the handler writes
  a notification; ``respond(q)``: its response; each is appended to the store and delivered when
  the stream's connection is attached (the response ends the stream);
* ``drop(q)``: the connection drops; ``resume(q)``: GET with the last event id the client saw on
  it; the store replays per the design, and the connection becomes the stream's writer again
  (or, the stream having ended, closes after the replay).

Designs: ``named-streams`` is ``impl/events.py`` (event ids name their session and stream; a
stream is one POST's, never a request id).  The mutants reproduce what servers did:
``request-id-streams`` (the stream is keyed by the request id: the official Python SDK's event
store; after a duplicate id the replay carries the other request's events),
``shared-store`` (one store for every session, event and stream ids without the session: the
defect FastMCP's fix #4402 addresses), ``replay-all`` (the replay carries the session's events
of every stream), ``inclusive-replay`` (the replay starts at ``Last-Event-ID`` itself),
``no-reattach`` (the resumed connection gets the replay but is not made the stream's writer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .declare import Act, Hazard, Move, Prop, Spec, Var, always, happens, sometimes
from .logic import NONE, Logic, Write


@dataclass(frozen=True)
class Design:
    stream_key: str = "post"  # post | request-id | id-only | session: what the store files under
    inclusive: bool = False  # the replay includes the Last-Event-ID event itself
    reattach: bool = True  # the resumed connection writes the stream's later events


DESIGNS: dict[str, Design] = {
    "named-streams": Design(),
    "request-id-streams": Design(stream_key="request-id"),
    "shared-store": Design(stream_key="id-only"),
    "replay-all": Design(stream_key="session"),
    "inclusive-replay": Design(inclusive=True),
    "no-reattach": Design(reattach=False),
}

DESIGN_DOCS = {
    "named-streams": "event ids name their session and their POST stream (impl/events.py)",
    "request-id-streams": "streams keyed by request id (the official Python SDK's event store)",
    "shared-store": "one store for all sessions, ids without the session (FastMCP fix #4402)",
    "replay-all": "the replay carries every stream's events of the session",
    "inclusive-replay": "the replay starts at the Last-Event-ID event itself",
    "no-reattach": "the resumed connection gets the replay, not the stream's later events",
}

#: Sensitivity: the mutants that must break each property at the default bounds (``check``
#: runs them; see ``model/properties.py``'s ``BROKEN_BY``).
BROKEN_BY: dict[str, tuple[str, ...]] = {
    "replay_carries_own_events": ("request-id-streams", "shared-store", "replay-all"),
    "resumed_response_delivered": ("no-reattach",),
    "delivered_once": ("inclusive-replay",),
}

#: traces no design of this model excludes, each explored in a run of its own: none
HAZARDS: tuple[Hazard, ...] = ()

BOUNDS: dict[str, tuple[int, str]] = {
    "sessions": (2, "sessions sharing the server's event store"),
    "requests": (3, "requests, spread over the sessions (the second of session 0 is the rogue's)"),
    "events": (4, "events the store is given in a run"),
}

# the handler of a request
UNSENT, RUNNING, RESPONDED = range(3)
HANDLER = ("unsent", "running", "responded")
# the client's connection to a request's stream
NOCONN, ATTACHED, DROPPED, CLOSED, LISTENING = range(5)
CONN = ("none", "attached", "dropped", "closed", "listening")
# what an event is
PRIMING, NOTE, RESPONSE = range(3)
KIND = ("priming", "notification", "response")

REQUEST_ID = 1  # every request's id


def spec(design: str = "named-streams", **bounds: int) -> Spec:
    """The resumption model at ``design`` and ``bounds`` (defaults: :data:`BOUNDS`)."""
    bad = set(bounds) - set(BOUNDS)
    if bad:
        raise ValueError(f"unknown bound(s) of resume: {', '.join(sorted(bad))}")
    bd = {k: bounds.get(k, v[0]) for k, v in BOUNDS.items()}
    d = DESIGNS[design]
    n_s, n_q, n_e = bd["sessions"], bd["requests"], bd["events"]
    rogue = n_s if n_q > n_s else NONE  # the second request of session 0

    def sess(q: int) -> int:
        return q % n_s

    def key(q: int) -> int:
        """The stream the store files q's events under."""
        return stream_key(d, n_s, n_q, q)

    def qname(q: int) -> str:
        return "-" if q == NONE else f"r{q}(s{sess(q)}" + (", rogue)" if q == rogue else ")")

    def ename(e: int) -> str:
        return "-" if e == NONE else f"e{e}"

    def got(s: Any, q: int, e: Any) -> Any:
        return s.got[q * n_e + e]

    def deliver(b: Logic, s: Any, q: int, e: int, when: Any) -> Write:
        """One more delivery of e on q's stream (counted up to 2: twice or more)."""
        return Write("got", q * n_e + e, b.Ite(got(s, q, e) >= 2, 2, got(s, q, e) + 1), when)

    def append(b: Logic, s: Any, q: int, kind: int, attached: Any) -> list[Write]:
        """Keep one event of q at the next slot; deliver it when q's connection writes."""
        e = s.nev
        out = [
            Write("ev_req", e, q),
            Write("ev_key", e, key(q)),
            Write("ev_kind", e, kind),
            Write("nev", None, s.nev + 1),
            Write("last", q, e, attached),
        ]
        out += [deliver(b, s, q, k, b.And(attached, e == k)) for k in range(n_e)]
        return out

    # --- moves ---------------------------------------------------------------------------

    def g_send(b: Logic, s: Any, q: int) -> Any:
        parts = [s.handler[q] == UNSENT, s.nev < n_e]
        # the core admits an id again only once no request of the session holds it
        parts += [s.handler[p] != RUNNING for p in range(n_q) if p != q and sess(p) == sess(q)]
        if q == rogue:  # the rogue reuses the id of the session's first request, once answered
            parts.append(s.handler[0] == RESPONDED)
        return b.And(*parts)

    def e_send(b: Logic, s: Any, q: int) -> list[Write]:
        return [
            Write("handler", q, RUNNING),
            Write("conn", q, ATTACHED),
            *append(b, s, q, PRIMING, True),
        ]

    def g_emit(b: Logic, s: Any, q: int) -> Any:
        return b.And(s.handler[q] == RUNNING, s.nev < n_e)

    def e_emit(b: Logic, s: Any, q: int) -> list[Write]:
        return append(b, s, q, NOTE, s.conn[q] == ATTACHED)

    def e_respond(b: Logic, s: Any, q: int) -> list[Write]:
        attached = s.conn[q] == ATTACHED
        return [
            Write("handler", q, RESPONDED),
            Write("conn", q, CLOSED, attached),
            *append(b, s, q, RESPONSE, attached),
        ]

    def g_drop(b: Logic, s: Any, q: int) -> Any:
        return b.In(s.conn[q], (ATTACHED, LISTENING))

    def e_drop(b: Logic, s: Any, q: int) -> list[Write]:
        return [Write("conn", q, DROPPED)]

    def g_resume(b: Logic, s: Any, q: int) -> Any:
        return b.And(s.conn[q] == DROPPED, s.last[q] != NONE)

    def replayed(b: Logic, s: Any, q: int, e: int) -> Any:
        """Event e is in the replay of q's resume (from q's Last-Event-ID)."""
        lid = s.last[q]
        after = (e >= lid) if d.inclusive else (e > lid)
        return b.And(after, e < s.nev, s.ev_key[e] == s.ev_key[lid])

    def e_resume(b: Logic, s: Any, q: int) -> list[Write]:
        ended = s.handler[q] == RESPONDED
        out = [
            Write("conn", q, b.Ite(ended, CLOSED, ATTACHED if d.reattach else LISTENING)),
            Write("resumed", q, 1),
        ]
        for e in range(n_e):
            hit = replayed(b, s, q, e)
            out.append(deliver(b, s, q, e, hit))
            out.append(Write("last", q, e, hit))  # in order: the last one replayed wins
        return out

    def story(fmt: str) -> Callable[[Mapping[str, int]], str]:
        def tell(a: Mapping[str, int]) -> str:
            return fmt.format(q=qname(a["q"]))

        return tell

    q_p = (("q", n_q),)
    acts = (
        Act(
            "send",
            q_p,
            g_send,
            e_send,
            story("{q} is sent: its stream opens (priming event)"),
            "client",
        ),
        Act("emit", q_p, g_emit, e_emit, story("{q}'s handler writes a notification")),
        Act("respond", q_p, g_emit, e_respond, story("{q}'s handler writes its response")),
        Act("drop", q_p, g_drop, e_drop, story("{q}'s connection drops"), "network"),
        Act("resume", q_p, g_resume, e_resume, story("GET with {q}'s Last-Event-ID"), "client"),
    )

    # --- properties ----------------------------------------------------------------------

    def replay_carries_own_events(b: Logic, s: Any) -> Any:
        """Every event delivered on a request's stream, replays included, is that request's:
        a replay never carries another request's events (of its session or another)."""
        return b.And(
            *[b.Implies(got(s, q, e) > 0, s.ev_req[e] == q) for q in range(n_q) for e in range(n_e)]
        )

    def resumed_response_delivered(b: Logic, s: Any) -> Any:
        """A request that has responded and whose client still listens (or has had its stream
        end) has got its response on its stream: the response of a resumed request reaches
        the resumed stream."""
        return b.And(
            *[
                b.Implies(
                    b.And(s.handler[q] == RESPONDED, s.conn[q] != DROPPED),
                    b.Or(
                        *[
                            b.And(s.ev_req[e] == q, s.ev_kind[e] == RESPONSE, got(s, q, e) > 0)
                            for e in range(n_e)
                        ]
                    ),
                )
                for q in range(n_q)
            ]
        )

    def delivered_once(b: Logic, s: Any) -> Any:
        """No event is delivered twice on one stream."""
        return b.And(*[got(s, q, e) <= 1 for q in range(n_q) for e in range(n_e)])

    def response_after_resume(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A resumed stream carries the response its handler writes after the resume."""
        if m.name != "respond":
            return False
        q = m.kw["q"]
        return b.And(pre.resumed[q] == 1, pre.conn[q] == ATTACHED)

    def response_replayed(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A response written while the connection was down reaches the client in a replay."""
        if m.name != "resume":
            return False
        q = m.kw["q"]
        return b.Or(
            *[
                b.And(pre.ev_req[e] == q, pre.ev_kind[e] == RESPONSE, got(post, q, e) > 0)
                for e in range(n_e)
            ]
        )

    def id_reused_in_session(b: Logic, s: Any) -> Any:
        """The rogue's request reuses the id of an answered request of its session."""
        return True if rogue == NONE else s.handler[rogue] != UNSENT

    props: tuple[Prop, ...] = (
        always(replay_carries_own_events),
        always(resumed_response_delivered),
        always(delivered_once),
        happens(response_after_resume),
        happens(response_replayed),
        sometimes(id_reused_in_session),
    )

    # --- auxiliary invariants (candidates for the prover; the explorer checks them) -------

    def free_slots_empty(b: Logic, s: Any) -> Any:
        """Slots at and after ``nev`` hold no event and nothing was delivered from them."""
        return b.And(
            *[
                b.Implies(
                    e >= s.nev,
                    b.And(
                        s.ev_req[e] == NONE,
                        s.ev_key[e] == NONE,
                        s.ev_kind[e] == PRIMING,
                        *[got(s, q, e) == 0 for q in range(n_q)],
                    ),
                )
                for e in range(n_e)
            ]
        )

    def kept_events(b: Logic, s: Any) -> Any:
        """A kept event belongs to a request that was sent, filed under that request's stream."""
        return b.And(
            *[
                b.Implies(
                    e < s.nev,
                    b.Or(
                        *[
                            b.And(s.ev_req[e] == q, s.ev_key[e] == key(q), s.handler[q] != UNSENT)
                            for q in range(n_q)
                        ]
                    ),
                )
                for e in range(n_e)
            ]
        )

    def unsent_untouched(b: Logic, s: Any) -> Any:
        """A request not sent has no connection, no last event id, and no event delivered."""
        return b.And(
            *[
                b.Implies(
                    s.handler[q] == UNSENT,
                    b.And(
                        s.conn[q] == NOCONN,
                        s.last[q] == NONE,
                        *[got(s, q, e) == 0 for e in range(n_e)],
                    ),
                )
                for q in range(n_q)
            ]
        )

    def last_is_own(b: Logic, s: Any) -> Any:
        """A sent request's last event id names a kept event of its own, delivered to it."""
        return b.And(
            *[
                b.Implies(
                    s.handler[q] != UNSENT,
                    b.And(
                        s.conn[q] != NOCONN,
                        s.last[q] >= 0,
                        s.last[q] < s.nev,
                        s.ev_req[s.last[q]] == q,
                        b.Or(*[b.And(s.last[q] == e, got(s, q, e) >= 1) for e in range(n_e)]),
                    ),
                )
                for q in range(n_q)
            ]
        )

    def delivered_in_order(b: Logic, s: Any) -> Any:
        """A request has got exactly its own events up to its last event id, and none after."""
        return b.And(
            *[
                b.And(
                    b.Implies(got(s, q, e) >= 1, e <= s.last[q]),
                    b.Implies(b.And(s.ev_req[e] == q, e <= s.last[q]), got(s, q, e) >= 1),
                )
                for q in range(n_q)
                for e in range(n_e)
            ]
        )

    def attached_up_to_date(b: Logic, s: Any) -> Any:
        """A request whose connection writes (or whose stream has ended) has its last event id
        at its latest event; a closed stream is a responded request's."""
        return b.And(
            *[
                b.And(
                    b.Implies(
                        b.In(s.conn[q], (ATTACHED, CLOSED)),
                        b.And(*[b.Implies(s.ev_req[e] == q, e <= s.last[q]) for e in range(n_e)]),
                    ),
                    b.Implies(s.conn[q] == CLOSED, s.handler[q] == RESPONDED),
                )
                for q in range(n_q)
            ]
        )

    def listening_only_unattached(b: Logic, s: Any) -> Any:
        """A resumed connection that is not the stream's writer exists only when the design
        does not reattach."""
        if not d.reattach:
            return True
        return b.And(*[s.conn[q] != LISTENING for q in range(n_q)])

    def response_kept(b: Logic, s: Any) -> Any:
        """A request has a kept response exactly when its handler has responded."""
        return b.And(
            *[
                (s.handler[q] == RESPONDED)
                == b.Or(
                    *[
                        b.And(e < s.nev, s.ev_req[e] == q, s.ev_kind[e] == RESPONSE)
                        for e in range(n_e)
                    ]
                )
                for q in range(n_q)
            ]
        )

    aux = tuple(
        always(f)
        for f in (
            free_slots_empty,
            kept_events,
            unsent_untouched,
            last_is_own,
            delivered_in_order,
            attached_up_to_date,
            listening_only_unattached,
            response_kept,
        )
    )

    def fmt_q(v: int) -> str:
        return qname(v)

    variables = (
        Var("handler", 0, 2, UNSENT, n_q, lambda v: HANDLER[v], qname),
        Var("conn", 0, 4, NOCONN, n_q, lambda v: CONN[v], qname),
        Var("last", NONE, n_e - 1, NONE, n_q, ename, qname),
        Var("resumed", 0, 1, 0, n_q, key=qname, ghost=True),
        Var("nev", 0, n_e, 0),
        Var("ev_req", NONE, n_q - 1, NONE, n_e, fmt_q, ename, ghost=True),
        Var("ev_key", NONE, max(n_q, n_s * 2, 2), NONE, n_e, key=ename),
        Var("ev_kind", 0, 2, PRIMING, n_e, lambda v: KIND[v], ename),
        Var(
            "got",
            0,
            2,
            0,
            n_q * n_e,
            key=lambda k: f"{qname(k // n_e)},{ename(k % n_e)}",
            ghost=True,
        ),
    )
    return Spec(
        "resume",
        design,
        bd,
        variables,
        acts,
        props,
        {"req": range(n_q), "ev": range(n_e)},
        aux,
    )


def stream_key(d: Design, n_s: int, n_q: int, q: int) -> int:
    """The stream the store files request q's events under, per design: its own POST stream
    (``post``), its session and request id, its request id alone, its session alone."""
    s = q % n_s
    if d.stream_key == "post":
        return q
    if d.stream_key == "request-id":
        return s * 2 + REQUEST_ID
    if d.stream_key == "id-only":
        return REQUEST_ID
    return s
