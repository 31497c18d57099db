"""impl/subscriptions.py against model/subscriptions.py: the registry is driven along every
explored transition of the ``graceful-response`` design, and on each one the runtime's operation
is compared with the model: who receives a notification (only the listen that opened the
subscription, never another client's listen under the same id), whether anything is written
for a subscription after it ended, whether the registry entry dies with the listen, and whether
the server's end answers the listen request (the client's and the transport's do not).  Driven
with a registry that routes by the listen id, or that keeps a cancelled subscription, or along a
mutant's model, the comparison disagrees somewhere: the test can fail."""

from __future__ import annotations

import copy

import pytest

from mcp_inflight.impl.subscriptions import (
    ACKNOWLEDGED,
    BY_CLIENT,
    BY_TRANSPORT,
    SUBSCRIPTION_ID,
    Subscription,
    Subscriptions,
    completion,
)
from mcp_inflight.model import subscriptions as M
from mcp_inflight.model.logic import NONE
from mcp_inflight.proofs.declared import drive

CHANGED = "notifications/tools/list_changed"


class Sink:
    """One listen's stream: what was written on it."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.msgs: list[tuple[str, dict]] = []

    def send(self, method: str, params: dict) -> bool:
        self.msgs.append((method, params))
        return True


class World:
    def __init__(self, registry: type[Subscriptions]) -> None:
        self.reg = registry()
        self.subs: dict[int, Subscription] = {}  # model slot -> its listen's subscription
        self.sinks: dict[int, Sink] = {}

    def copy(self) -> World:
        return copy.deepcopy(self)


class ByListenId(Subscriptions):
    """The ``by-listen-id`` mutant's behaviour: one table from listen id to subscription for
    every client of the deployment (the last listen under an id takes it)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[object, Subscription] = {}

    def open(self, sid, notifications, send):  # type: ignore[no-untyped-def]
        sub = Subscription(sid, notifications, send)
        self.live.add(sub)
        self.by_id[sid] = sub
        self.deliver(sub, ACKNOWLEDGED, {"notifications": sub.acknowledged()})
        return sub

    def target(self, sub: Subscription) -> Subscription | None:
        t = self.by_id.get(sub.sid)
        return t if t is not None and t in self.live else None


class NoUnsubscribe(Subscriptions):
    """The ``no-unsubscribe`` mutant's behaviour: the client's end leaves the entry."""

    def end(self, sub: Subscription, how: str) -> None:
        if how != BY_CLIENT:
            super().end(sub, how)


def expected_target(design: str, pre, x: int) -> int | None:
    """The stream the model writes x's messages on (None: none)."""
    if M.DESIGNS[design].by_instance:
        return x if pre.sub[x] == 1 else None
    r = pre.route[pre.lid[x]]
    return None if r == NONE else r


def step(design: str, seen: set[str]):
    def run(w: World, pre, m, post) -> list[str]:
        k, out = m.kw, []
        before = {x: len(s.msgs) for x, s in w.sinks.items()}
        x = k["x"]
        if m.name == "listen":
            w.sinks[x] = sink = Sink(x)
            w.subs[x] = w.reg.open(k["i"], {"toolsListChanged": True}, sink.send)
            first = sink.msgs[:1]
            if first != [
                (
                    ACKNOWLEDGED,
                    {
                        "notifications": {"toolsListChanged": True},
                        "_meta": {SUBSCRIPTION_ID: k["i"]},
                    },
                )
            ]:
                out.append(f"l{x}'s stream did not open with its acknowledgement: {first}")
            before[x] = len(sink.msgs)
        sub = w.subs[x]
        answered = None
        if m.name == "notify":
            w.reg.deliver(sub, CHANGED, {})
        elif m.name == "ccancel":
            w.reg.end(sub, BY_CLIENT)
        elif m.name == "drop":
            w.reg.end(sub, BY_TRANSPORT)
        elif m.name == "teardown":
            t = w.reg.target(sub)
            if w.reg.teardown(sub) and sub.done.is_set() and t is not None:
                # the listen's handler answers on the stream its registry names
                w.sinks[t_slot(w, t)].send("response", completion(sub.sid))
                answered = t_slot(w, t)
        # who received what in this step
        got = {y for y, s in w.sinks.items() if len(s.msgs) > before.get(y, 0)}
        if m.name in ("notify", "teardown"):
            t = expected_target(design, pre, x)
            want = set() if t is None else {t}
            if got != want:
                out.append(f"{m.name} of l{x} reached {sorted(got)}, the model {sorted(want)}")
            elif got:
                seen.add(m.name)
            for y in got:
                for _, p in w.sinks[y].msgs[before.get(y, 0) :]:
                    if p["_meta"][SUBSCRIPTION_ID] != pre.lid[x]:
                        out.append(f"l{y} got a message without its subscription id")
        elif got:
            out.append(f"{m.name} wrote on {sorted(got)}")
        for y in got:
            if pre.ph[y] != M.OPEN:
                out.append(f"l{y} got a message after its subscription ended")
        if m.name == "teardown" and pre.ph[x] == M.OPEN:
            if not M.DESIGNS[design].graceful and answered is not None:
                out.append(f"l{x}'s listen answered where the model sends notifications/cancelled")
            elif M.DESIGNS[design].graceful and answered != x:
                out.append(f"the server ended l{x} without answering its listen")
            else:
                seen.add("answered")
        if m.name in ("ccancel", "drop") and sub.done.is_set():
            out.append(f"l{x} was answered after its {m.name}")
        # the registry holds exactly the model's open subscriptions
        live = {y for y, s in w.subs.items() if s in w.reg.live}
        want_live = {y for y in range(len(post.sub)) if post.sub[y] == 1}
        if live != want_live:
            out.append(f"registry holds {sorted(live)}, the model {sorted(want_live)}")
        if pre.ph[x] == M.OPEN and post.ph[x] == M.ENDED and not live & {x}:
            seen.add(f"unregistered by {m.name}")
        return out

    return run


def t_slot(w: World, t: Subscription) -> int:
    return next(y for y, s in w.subs.items() if s is t)


def test_the_registry_agrees_with_graceful_response_on_every_transition():
    seen: set[str] = set()
    problems = drive(
        M.spec("graceful-response"),
        lambda: World(Subscriptions),
        step("graceful-response", seen),
        World.copy,
    )
    assert problems == []
    # not vacuous: every kind of outcome was compared somewhere
    assert seen == {
        "notify",
        "teardown",
        "answered",
        "unregistered by ccancel",
        "unregistered by drop",
        "unregistered by teardown",
    }


@pytest.mark.parametrize(
    "registry,why",
    [(ByListenId, "reached"), (NoUnsubscribe, "registry holds")],
)
def test_a_mutant_registry_disagrees_with_the_model(registry, why):
    problems = drive(
        M.spec("graceful-response"),
        lambda: World(registry),
        step("graceful-response", set()),
        World.copy,
    )
    assert problems and why in problems[0], problems


@pytest.mark.parametrize("design", ["by-listen-id", "no-unsubscribe"])
def test_the_registry_disagrees_with_a_mutant_model(design):
    problems = drive(M.spec(design), lambda: World(Subscriptions), step(design, set()), World.copy)
    assert problems


def test_the_registry_follows_graceful_closure_not_the_cancellation_page():
    """Driven along ``cancelled-notification`` the registry answers the listen where that
    reading of #3348 sends notifications/cancelled and no response: it follows the
    subscriptions page (graceful closure), and the comparison sees the difference."""
    problems = drive(
        M.spec("cancelled-notification"),
        lambda: World(Subscriptions),
        step("cancelled-notification", set()),
        World.copy,
    )
    assert problems and "answered where the model sends" in problems[0], problems
