"""The request lifecycle: one declarative table, per protocol revision, read by ``transitions``.

This table is the per-instance skeleton of the model.  Every session-level action in
``model/session.py`` that moves an instance names its trigger here; the action's guard is the
trigger's source set plus the trigger's named ``conditions`` (defined once, in
``model/session_conditions.py:CONDITIONS``), and its effect sets the trigger's destination.  The explorer,
the prover, the diagrams and the runtime core all read the lifecycle from this table; nothing
else defines a source or a destination state.

Two pre-states precede the six lifecycle states of the design brief: ``unsent`` (a model slot no
request has used yet) and ``sent`` (the client issued it; it is on the wire, not yet read by the
server).  They exist because the wire is part of what the checker explores.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Any

from .config import REVISIONS


class Domain(IntEnum):
    """A finite value domain of the state; ``label`` is how reports and diagrams name a value."""

    @property
    def label(self) -> str:
        return self.name.lower()


class Life(Domain):
    UNSENT = 0
    SENT = 1
    RECEIVED = 2
    IN_FLIGHT = 3
    RESPONDED = 4
    CANCELLED = 5
    STREAM_BROKEN = 6
    REFUSED = 7


STATES: tuple[str, ...] = tuple(s.label for s in Life)
INITIAL = "unsent"

#: The two pre-states: a slot no request has used yet, and a request on the wire.
PRE: tuple[Life, ...] = (Life.UNSENT, Life.SENT)
#: Instances whose handler was admitted and has neither finished nor been cancelled.
LIVE: tuple[Life, ...] = (Life.IN_FLIGHT, Life.STREAM_BROKEN)
#: Where an instance's lifecycle ends (a cancelled handler may still be unwinding).
FINAL: tuple[Life, ...] = (Life.RESPONDED, Life.REFUSED, Life.CANCELLED)


@dataclass(frozen=True)
class Row:
    """One transition of the lifecycle table: ``trigger`` moves an instance from any of
    ``source`` to ``dest`` when every named condition holds (``model/session_conditions.py:CONDITIONS``)."""

    trigger: str
    source: tuple[str, ...]
    dest: str
    conditions: tuple[str, ...]
    doc: str

    def transition(self) -> dict[str, Any]:
        """The row as a ``transitions`` transition (``trigger``, ``source``, ``dest``,
        ``conditions``; fresh lists)."""
        return {
            "trigger": self.trigger,
            "source": list(self.source),
            "dest": self.dest,
            "conditions": list(self.conditions),
        }


def _t(
    trigger: str,
    source: str | list[str],
    dest: str,
    conditions: tuple[str, ...] | list[str] = (),
    doc: str = "",
) -> Row:
    src = tuple(source) if isinstance(source, (list, tuple)) else (source,)
    return Row(trigger, src, dest, tuple(conditions), doc)


@cache
def _table(revision: str) -> tuple[Row, ...]:
    if revision not in REVISIONS:
        raise ValueError(f"unknown revision {revision!r}; valid: {', '.join(REVISIONS)}")
    rows = [
        _t("send", "unsent", "sent", ["next_free_slot"], "a sender issues a request under an id"),
        _t(
            "arrive",
            "sent",
            "received",
            ["in_channel_order"],
            "the server reads the request (stdio: in order; http: POSTs in any order)",
        ),
        _t(
            "check",
            "received",
            "received",
            ["split_claim", "unchecked", "id_not_in_flight"],
            "check_then_claim only: the transport's in-flight check passes",
        ),
        _t(
            "claim_stream",
            "received",
            "received",
            ["split_claim", "checked"],
            "check_then_claim only: the transport stores the POST stream under the id",
        ),
        _t(
            "admit",
            "received",
            "in_flight",
            ["claim_complete", "claim_ok", "session_live"],
            "the in-flight entry (handler, cancel handle) is claimed; atomic: with the stream slot",
        ),
        _t(
            "refuse",
            "received",
            "refused",
            ["refuses_duplicates", "at_decision_point", "id_in_flight"],
            "a duplicate of an in-flight id is turned away with one error on its own channel",
        ),
        _t(
            "respond",
            list(s.label for s in LIVE),
            "responded",
            [],
            "the handler finishes and its response is written; entries released",
        ),
        _t(
            "cancel",
            list(s.label for s in LIVE),
            "cancelled",
            [],
            "notifications/cancelled reaches the request (the handler is signalled)",
        ),
        _t(
            "unwind",
            "cancelled",
            "cancelled",
            ["handler_running"],
            "a cancelled handler stops (cancellation is cooperative); entries released",
        ),
        _t(
            "end",
            list(s.label for s in LIVE),
            "cancelled",
            ["session_ended"],
            "the session ends (DELETE, idle expiry, shutdown): its live requests are cancelled",
        ),
        _t(
            "reject",
            "received",
            "refused",
            ["session_ended", "at_decision_point"],
            "a request read after the session ended is turned away (http: 404)",
        ),
    ]
    if revision == "2025-11-25":
        rows.append(
            _t(
                "stream_closed",
                "in_flight",
                "stream_broken",
                ["stream_open"],
                "the POST stream breaks; a disconnect is not a cancel, the handler goes on",
            )
        )
    else:
        rows.append(
            _t(
                "stream_closed",
                "in_flight",
                "cancelled",
                [],
                "the client closes the response stream: on 2026-07-28 that is cancellation",
            )
        )
    return tuple(rows)


def table(revision: str) -> tuple[Row, ...]:
    """The lifecycle transitions of ``revision``, in table order."""
    return _table(revision)


@cache
def row(revision: str, trigger: str) -> Row:
    for r in _table(revision):
        if r.trigger == trigger:
            return r
    raise KeyError(f"no trigger {trigger!r} in the {revision} lifecycle")


@cache
def sources(revision: str, trigger: str) -> tuple[Life, ...]:
    return tuple(Life[s.upper()] for s in row(revision, trigger).source)


@cache
def dest(revision: str, trigger: str) -> Life:
    return Life[row(revision, trigger).dest.upper()]


def triggers(revision: str) -> list[str]:
    return [r.trigger for r in _table(revision)]


def machine(revision: str, model: object = None, graph: bool = False) -> Any:
    """A ``transitions`` machine built from the table of ``revision``.

    ``model`` must provide a method per condition name when the machine is driven; for drawing
    (``graph=True``, a ``GraphMachine``) any object will do.  Conditions are passed by name, so
    a machine built here reads exactly the table above.
    """
    from transitions import Machine
    from transitions.extensions import GraphMachine

    M = GraphMachine if graph else Machine
    rows = [r.transition() for r in table(revision)]
    kwargs: dict[str, Any] = dict(
        states=list(STATES),
        transitions=rows,
        initial=INITIAL,
        auto_transitions=False,
        send_event=True,
    )
    if model is not None:
        kwargs["model"] = model
    if graph:
        kwargs["show_conditions"] = True
    return M(**kwargs)
