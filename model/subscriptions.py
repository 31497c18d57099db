"""``subscriptions/listen`` (2026-07-28): a long-lived request and its server-side teardown.

On 2026-07-28 the GET stream and ``resources/subscribe`` are gone: a client that wants
notifications sends ``subscriptions/listen``, a request whose answer stream stays open.  The
server acknowledges it first, then sends the notifications the client asked for, each carrying
the subscription's id (the listen request's JSON-RPC id) in ``_meta``; the subscription ends
when the client cancels it, when the server tears it down, or when the transport closes.  With
no sessions, two clients of one deployment may use the same listen id, so a server that routes a
subscription's notifications by that id has the duplicate-id problem again.

What is modelled (bounds: ``listens`` listen requests, ``ids`` JSON-RPC ids), two clients:

* ``listen``: a client sends ``subscriptions/listen`` and the server acknowledges it on its
  stream (``notifications/subscriptions/acknowledged``, the first message);
* ``notify``: something the subscription asked for changes, and the server writes the
  notification on the stream its registry names;
* ``ccancel``: the client ends it (its POST closed on http, ``notifications/cancelled`` on stdio);
  ``drop``: the transport closes; ``teardown``: the server ends it, as its design reads the spec.

Rules encoded, with their source (the modelcontextprotocol/modelcontextprotocol repository,
``docs/specification/2026-07-28/basic/patterns/``):

* the subscription's id is the listen request's JSON-RPC id, carried by every message of the
  stream, and a client may hold several subscriptions at once: ``subscriptions``;
* a client ends a subscription by closing the stream (http) or ``notifications/cancelled``
  (stdio); a closed response stream is the request's cancellation, after which the server
  sends nothing more for it: ``cancellation`` (transport-specific cancellation);
* server teardown, the open contradiction (spec issue #3348): ``cancellation`` says a server
  MUST send ``notifications/cancelled`` referencing the listen request's id when it tears the
  subscription down (and that a cancelled request gets no response); ``subscriptions``
  (graceful closure) says it SHOULD answer the listen request with a completion result carrying
  the subscription id, then close.  Both readings are designs here: ``graceful-response``
  (the subscriptions page, which the schema's declared result and the issue's proposed
  alignment follow) and ``cancelled-notification`` (the cancellation page).  The first keeps
  ``server_end_answers_listen`` and breaks the cancellation page's rule
  (:func:`cancellation_page_rule`, checked by the tests, not part of ``check``); the second
  keeps that rule and breaks ``server_end_answers_listen``: its listen request is never
  answered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .declare import Act, Hazard, Move, Prop, Spec, Var, always, happens, sometimes, step
from .logic import NONE, Logic, Write


@dataclass(frozen=True)
class Design:
    by_instance: bool = True  # notifications routed to the listen's own stream (not by its id)
    graceful: bool = True  # teardown answers the listen request (else notifications/cancelled)
    unsubscribe: bool = True  # the client's cancel removes the subscription from the registry


DESIGNS: dict[str, Design] = {
    "graceful-response": Design(),
    "cancelled-notification": Design(graceful=False),
    "by-listen-id": Design(by_instance=False),
    "no-unsubscribe": Design(unsubscribe=False),
}

DESIGN_DOCS = {
    "graceful-response": "routed by the listen's own stream; teardown answers the listen "
    "request (subscriptions page, graceful closure)",
    "cancelled-notification": "teardown sends notifications/cancelled for the listen id and no "
    "response (the cancellation page's reading of #3348)",
    "by-listen-id": "notifications routed by the listen request's id (one table for every "
    "client of the deployment)",
    "no-unsubscribe": "the client's cancel leaves the subscription registered",
}

#: Sensitivity: the designs and mutants that must break each property at the default bounds.
BROKEN_BY: dict[str, tuple[str, ...]] = {
    "notification_reaches_subscriber": ("by-listen-id",),
    "no_message_after_end": ("no-unsubscribe",),
    "registry_dies_with_listen": ("no-unsubscribe",),
    "server_end_answers_listen": ("cancelled-notification",),
}

#: traces no design of this model excludes, each explored in a run of its own: none
HAZARDS: tuple[Hazard, ...] = ()

BOUNDS: dict[str, tuple[int, str]] = {
    "listens": (2, "subscriptions/listen requests in a run (of both clients)"),
    "ids": (1, "JSON-RPC ids the clients use"),
}

IDLE, OPEN, ENDED = range(3)
PHASES = ("idle", "open", "ended")
# how a subscription ended
BY_CLIENT, BY_SERVER, BY_TRANSPORT = range(3)
HOW = ("client", "server", "transport")
C = 2


def spec(design: str = "graceful-response", **bounds: int) -> Spec:
    """The subscriptions model at ``design`` and ``bounds`` (defaults: :data:`BOUNDS`)."""
    bad = set(bounds) - set(BOUNDS)
    if bad:
        raise ValueError(f"unknown bound(s) of subscriptions: {', '.join(sorted(bad))}")
    bd = {k: bounds.get(k, v[0]) for k, v in BOUNDS.items()}
    d = DESIGNS[design]
    L, I = bd["listens"], bd["ids"]

    def at(b: Logic, vec: Any, k: Any) -> Any:
        return b.Ite(k == NONE, NONE, vec[k])

    def target(b: Logic, s: Any, x: int) -> Any:
        """The stream the server writes x's messages on (NONE: none)."""
        if d.by_instance:
            return b.Ite(s.sub[x] == 1, x, NONE)
        return s.route[s.lid[x]]

    # --- moves ----------------------------------------------------------------------------

    def g_listen(b: Logic, s: Any, x: int, c: int, i: int) -> Any:
        mine = [b.And(s.ph[y] == OPEN, s.who[y] == c, s.lid[y] == i) for y in range(L) if y != x]
        return b.And(
            s.ph[x] == IDLE,
            True if x == 0 else s.ph[x - 1] != IDLE,
            b.Not(b.Or(*mine)) if mine else True,  # the sender's id rule
        )

    def e_listen(b: Logic, s: Any, x: int, c: int, i: int) -> list[Write]:
        return [
            Write("ph", x, OPEN),
            Write("who", x, c),
            Write("lid", x, i),
            Write("sub", x, 1),
            Write("route", i, x, not d.by_instance),
        ]

    def g_notify(b: Logic, s: Any, x: int) -> Any:
        return s.sub[x] == 1

    def e_notify(b: Logic, s: Any, x: int) -> list[Write]:
        t = target(b, s, x)
        return [Write("got", t, 1, t != NONE)]

    def unregister(b: Logic, s: Any, x: int, when: Any) -> list[Write]:
        out = [Write("sub", x, 0, when)]
        if not d.by_instance:
            k = s.lid[x]
            out.append(Write("route", k, NONE, b.And(when, s.route[k] == x)))
        return out

    def g_ccancel(b: Logic, s: Any, x: int) -> Any:
        return s.ph[x] == OPEN

    def e_ccancel(b: Logic, s: Any, x: int) -> list[Write]:
        return [
            Write("ph", x, ENDED),
            Write("how", x, BY_CLIENT),
            *unregister(b, s, x, d.unsubscribe),
        ]

    def g_drop(b: Logic, s: Any, x: int) -> Any:
        return s.ph[x] == OPEN

    def e_drop(b: Logic, s: Any, x: int) -> list[Write]:
        return [Write("ph", x, ENDED), Write("how", x, BY_TRANSPORT), *unregister(b, s, x, True)]

    def g_teardown(b: Logic, s: Any, x: int) -> Any:
        return s.sub[x] == 1

    def e_teardown(b: Logic, s: Any, x: int) -> list[Write]:
        t = target(b, s, x)
        return [
            Write("ph", x, ENDED, s.ph[x] == OPEN),
            Write("how", x, BY_SERVER, s.ph[x] == OPEN),
            Write("answered", t, 1, b.And(t != NONE, d.graceful)),
            Write("cancelled", t, 1, b.And(t != NONE, not d.graceful)),
            Write("got", t, 1, t != NONE),
            *unregister(b, s, x, True),
        ]

    def story(fmt: str) -> Callable[[Mapping[str, int]], str]:
        def tell(a: Mapping[str, int]) -> str:
            return fmt.format(x=f"l{a['x']}", c=f"c{a['c']}" if "c" in a else "", i=a.get("i", ""))

        return tell

    x_p = (("x", L),)
    teardown = (
        "the server tears {x} down: the listen response (graceful closure), then closes"
        if d.graceful
        else "the server tears {x} down: notifications/cancelled for its id, then closes"
    )
    acts = (
        Act(
            "listen",
            (("x", L), ("c", C), ("i", I)),
            g_listen,
            e_listen,
            story("{c} sends subscriptions/listen {x} with id {i}; the server acknowledges it"),
            "client",
        ),
        Act("notify", x_p, g_notify, e_notify, story("a notification for {x}'s subscription")),
        Act(
            "ccancel",
            x_p,
            g_ccancel,
            e_ccancel,
            story("{x}'s client ends it (closes its POST, or notifications/cancelled on stdio)"),
            "client",
        ),
        Act("drop", x_p, g_drop, e_drop, story("{x}'s transport closes"), "transport"),
        Act("teardown", x_p, g_teardown, e_teardown, story(teardown)),
    )

    # --- properties ------------------------------------------------------------------------

    def notification_reaches_subscriber(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A subscription's notification (its subscriptionId) is written only on the stream of
        the listen request that opened it, never on another client's listen under that id."""
        if m.name not in ("notify", "teardown"):
            return True
        x = m.kw["x"]
        t = target(b, pre, x)
        return b.Or(t == NONE, t == x)

    def no_message_after_end(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """No message is written for a subscription after it ended (a closed stream is its
        cancellation; the server sends nothing more for it)."""
        if m.name not in ("notify", "teardown"):
            return True
        t = target(b, pre, m.kw["x"])
        return b.Or(t == NONE, at(b, pre.ph, t) == OPEN)

    def registry_dies_with_listen(b: Logic, s: Any) -> Any:
        """Nothing keyed by a listen request outlives it: the server's registry names only
        open subscriptions."""
        return b.And(
            b.ForAll("listen", lambda x: b.Implies(s.sub[x] == 1, s.ph[x] == OPEN)),
            b.ForAll(
                "id", lambda i: b.Implies(s.route[i] != NONE, at(b, s.ph, s.route[i]) == OPEN)
            ),
        )

    def server_end_answers_listen(b: Logic, s: Any) -> Any:
        """A subscription the server ends is answered with the listen request's response, so
        the client's request does not stay pending and it can tell a graceful end from a
        dropped connection (subscriptions page, graceful closure)."""
        return b.ForAll(
            "listen",
            lambda x: b.Implies(b.And(s.ph[x] == ENDED, s.how[x] == BY_SERVER), s.answered[x] == 1),
        )

    def notified(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A subscriber receives a notification on its stream."""
        return b.And(m.name == "notify", post.got[m.kw["x"]] == 1)

    def two_clients_one_id(b: Logic, s: Any) -> Any:
        """Two clients hold open subscriptions under the same listen id."""
        if L < 2:
            return False
        return b.And(s.ph[0] == OPEN, s.ph[1] == OPEN, s.lid[0] == s.lid[1], s.who[0] != s.who[1])

    def graceful_end(b: Logic, s: Any) -> Any:
        """The server ends a subscription and its client is told so."""
        return b.Or(
            *[
                b.And(s.how[x] == BY_SERVER, b.Or(s.answered[x] == 1, s.cancelled[x] == 1))
                for x in range(L)
            ]
        )

    def ended_by_client(b: Logic, s: Any) -> Any:
        """A client ends its subscription."""
        return b.Or(*[s.how[x] == BY_CLIENT for x in range(L)])

    def ended_by_transport(b: Logic, s: Any) -> Any:
        """A subscription ends with its transport."""
        return b.Or(*[s.how[x] == BY_TRANSPORT for x in range(L)])

    props: tuple[Prop, ...] = (
        step(notification_reaches_subscriber),
        step(no_message_after_end),
        always(registry_dies_with_listen),
        always(server_end_answers_listen),
        happens(notified),
        sometimes(two_clients_one_id),
        sometimes(graceful_end),
        sometimes(ended_by_client),
        sometimes(ended_by_transport),
    )

    # --- auxiliary invariants -----------------------------------------------------------------

    def shape(b: Logic, s: Any) -> Any:
        """Listens are sent in slot order; an unsent one is as at the start; a subscription is
        registered only while open; only a server-ended listen is answered or cancelled."""
        order = [b.Implies(s.ph[x + 1] != IDLE, s.ph[x] != IDLE) for x in range(L - 1)]
        return b.And(
            *order,
            b.ForAll(
                "listen",
                lambda x: b.And(
                    b.Implies(
                        s.ph[x] == IDLE,
                        b.And(
                            s.who[x] == NONE,
                            s.lid[x] == NONE,
                            s.how[x] == NONE,
                            s.got[x] == 0,
                            s.answered[x] == 0,
                            s.cancelled[x] == 0,
                        ),
                    ),
                    b.Implies(s.ph[x] != IDLE, b.And(s.who[x] >= 0, s.lid[x] >= 0)),
                    b.Implies(s.ph[x] == OPEN, b.And(s.sub[x] == 1, s.how[x] == NONE)),
                    b.Implies(s.ph[x] == ENDED, b.And(s.sub[x] == 0, s.how[x] != NONE)),
                    b.Implies(
                        b.Or(s.answered[x] == 1, s.cancelled[x] == 1),
                        b.And(s.ph[x] == ENDED, s.how[x] == BY_SERVER),
                    ),
                    b.Implies(
                        b.And(s.ph[x] == ENDED, s.how[x] == BY_SERVER),
                        s.answered[x] == 1 if d.graceful else s.cancelled[x] == 1,
                    ),
                ),
            ),
        )

    def routes_empty(b: Logic, s: Any) -> Any:
        """Routed by instance, the id table is never used."""
        return b.ForAll("id", lambda i: s.route[i] == NONE) if d.by_instance else True

    aux = (always(shape), always(routes_empty))

    def lname(x: int) -> str:
        return f"l{x}"

    def show(names: tuple[str, ...]) -> Callable[[int], str]:
        return lambda v: "-" if v == NONE else names[v]

    variables = (
        Var("ph", 0, len(PHASES) - 1, IDLE, L, show(PHASES), lname),
        Var("who", NONE, C - 1, NONE, L, lambda v: "-" if v == NONE else f"c{v}", lname),
        Var("lid", NONE, I - 1, NONE, L, key=lname),
        Var("sub", 0, 1, 0, L, key=lname),
        Var("route", NONE, L - 1, NONE, I, lambda v: "-" if v == NONE else f"l{v}"),
        Var("how", NONE, len(HOW) - 1, NONE, L, show(HOW), lname, ghost=True),
        Var("got", 0, 1, 0, L, key=lname, ghost=True),
        Var("answered", 0, 1, 0, L, key=lname, ghost=True),
        Var("cancelled", 0, 1, 0, L, key=lname, ghost=True),
    )
    return Spec(
        "subscriptions",
        design,
        bd,
        variables,
        acts,
        props,
        {"listen": range(L), "id": range(I)},
        aux,
    )


def cancellation_page_rule(b: Logic, s: Any) -> Any:
    """A subscription the server ends is told so by notifications/cancelled referencing the
    listen request's id (the 2026-07-28 cancellation page's reading of spec issue #3348)."""
    n = len(s.ph)
    return b.And(
        *[
            b.Implies(b.And(s.ph[x] == ENDED, s.how[x] == BY_SERVER), s.cancelled[x] == 1)
            for x in range(n)
        ]
    )


def with_cancellation_page_rule(sp: Spec) -> Spec:
    """``sp`` with :func:`cancellation_page_rule` as one more invariant (for the tests that
    show what each reading of #3348 keeps and breaks)."""
    return replace(sp, props=(*sp.props, always(cancellation_page_rule)))
