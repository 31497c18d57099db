"""``subscriptions/listen`` (2026-07-28): the registry of live subscriptions and its handler.

A listen request stays open: the server acknowledges it (``notifications/subscriptions/
acknowledged``, the first message of its stream), then writes the notifications its filter asks
for, each carrying the subscription id (the listen request's JSON-RPC id) in ``_meta``.  The
rules are ``model/subscriptions.py``'s ``graceful-response`` design, and this registry is what
``tests/test_subscriptions_runtime.py`` drives along that model's transitions:

* an entry is the listen's own stream (a :class:`Subscription` object, keyed by identity),
  never its JSON-RPC id: two clients of one deployment may both listen with id 1, and each must
  get only its own notifications;
* the client's end (its POST closed on HTTP, ``notifications/cancelled`` on stdio) and the
  transport's end remove the entry at once, so nothing more is written for it, and the listen
  request gets no response (a cancelled request is not answered);
* the server's end (:meth:`Subscriptions.teardown`, :meth:`Subscriptions.end_all`) removes the
  entry and answers the listen request with a completion result carrying the subscription id
  (the subscriptions page's graceful closure; the reading of spec issue #3348 the schema's
  declared ``SubscriptionsListenResult`` follows).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

#: the ``_meta`` key naming the subscription of a message (2026-07-28 schema)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
UPDATED = "notifications/resources/updated"
#: filter field -> the list-changed notification it asks for
LIST_CHANGED = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}

#: how a subscription ended
BY_CLIENT, BY_SERVER, BY_TRANSPORT = "client", "server", "transport"

#: writes one notification (method, params) on a listen's stream; False if it went nowhere
Send = Callable[[str, dict[str, Any]], bool]


class Subscription:
    """One listen request: its id, its filter, and the stream it writes on."""

    __slots__ = ("sid", "methods", "uris", "send", "how", "done")

    def __init__(self, sid: Any, notifications: dict[str, Any], send: Send) -> None:
        self.sid = sid
        self.methods = frozenset(m for k, m in LIST_CHANGED.items() if notifications.get(k) is True)
        uris = notifications.get("resourceSubscriptions")
        self.uris = (
            frozenset(u for u in uris if isinstance(u, str))
            if isinstance(uris, list)
            else frozenset()
        )
        self.send = send
        self.how: str | None = None  # None while open
        self.done = asyncio.Event()  # set when the server ends it (the listen is answered)

    def acknowledged(self) -> dict[str, Any]:
        """The subset of the filter this server honours (all four kinds)."""
        agreed: dict[str, Any] = {k: True for k, m in LIST_CHANGED.items() if m in self.methods}
        if self.uris:
            agreed["resourceSubscriptions"] = sorted(self.uris)
        return agreed

    def wants(self, method: str, uri: str | None) -> bool:
        if method == UPDATED:
            return uri is not None and uri in self.uris
        return method in self.methods


class Subscriptions:
    """The live subscriptions of one server (every transport and session shares it)."""

    def __init__(self) -> None:
        self.live: set[Subscription] = set()

    def open(self, sid: Any, notifications: dict[str, Any], send: Send) -> Subscription:
        """Register a listen and write its acknowledgement (the stream's first message)."""
        sub = Subscription(sid, notifications, send)
        self.live.add(sub)
        self.deliver(sub, ACKNOWLEDGED, {"notifications": sub.acknowledged()})
        return sub

    def target(self, sub: Subscription) -> Subscription | None:
        """The stream a message of ``sub`` goes to: its own, while it is registered."""
        return sub if sub in self.live else None

    def deliver(self, sub: Subscription, method: str, params: dict[str, Any]) -> bool:
        """Write one message of ``sub`` (its id in ``_meta``) on its stream, if it is live."""
        t = self.target(sub)
        if t is None or t.how is not None:
            return False
        meta = {**params.get("_meta", {}), SUBSCRIPTION_ID: sub.sid}
        return t.send(method, {**params, "_meta": meta})

    def announce(self, method: str, uri: str | None = None) -> int:
        """Deliver ``method`` (a list-changed notification, or ``resources/updated`` for
        ``uri``) to every live subscription that asked for it; how many got it."""
        params: dict[str, Any] = {} if uri is None else {"uri": uri}
        return sum(self.deliver(s, method, params) for s in list(self.live) if s.wants(method, uri))

    def end(self, sub: Subscription, how: str) -> None:
        """``sub`` ended by its client or its transport: unregistered, and never answered."""
        if sub.how is None:
            sub.how = how
        self.live.discard(sub)

    def teardown(self, sub: Subscription) -> bool:
        """The server ends ``sub``: unregistered, and its listen request is answered (by the
        handler waiting in :func:`listen`).  False if it had already ended."""
        if sub not in self.live:
            return False
        self.live.discard(sub)
        if sub.how is None:
            sub.how = BY_SERVER
            sub.done.set()
        return True

    def end_all(self) -> int:
        """Tear every live subscription down (server shutdown); how many."""
        return sum(self.teardown(s) for s in list(self.live))


def completion(sid: Any) -> dict[str, Any]:
    """The listen request's result when the server ends it (graceful closure)."""
    return {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: sid}}


async def listen(
    registry: Subscriptions,
    sid: Any,
    params: dict[str, Any],
    send: Send,
    cancelled: asyncio.Event,
) -> dict[str, Any]:
    """Serve one ``subscriptions/listen``: register, acknowledge, wait for the server's end and
    return the completion result.  Cancelled (the client's end, the transport's) it unregisters
    and raises, so no response goes out."""

    def guarded(method: str, p: dict[str, Any]) -> bool:
        return not cancelled.is_set() and send(method, p)

    notifications = params.get("notifications")
    sub = registry.open(sid, notifications if isinstance(notifications, dict) else {}, guarded)
    try:
        await sub.done.wait()
    except asyncio.CancelledError:
        registry.end(sub, BY_CLIENT)
        raise
    finally:
        registry.end(sub, BY_TRANSPORT)  # a no-op unless nothing else ended it
    return completion(sid)
