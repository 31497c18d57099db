"""The session model's liveness properties, stated: what each says, what it rests on.

``proofs/liveness.py`` judges them on the graph the session's explorer keeps; the session read
as a declaration (``model/session_spec.py``) carries ``requests_answered`` as an ``eventually``
property of the one explorer, under the weak fairness of the same actions:

* ``requests_answered``: every client request is eventually answered, refused, cancelled or its
  stream broken, on every run weakly fair to :data:`RESTS_ON`'s actions (the server's steps and
  the wire's deliveries);
* ``settles`` and ``no_deadlock`` are properties of the graph itself (a settled state stays
  reachable; every unsettled state has a move that changes it), which rest on no fairness.
"""

from __future__ import annotations

from typing import Any

from .lifecycle import Life
from .logic import Logic


def is_fair(action: Any) -> bool:
    """The model declares this action weakly fair (``Action.fair``; its side does not count)."""
    return bool(action.fair == "weak")


#: The actions whose weak fairness each liveness property rests on: the fairness under which
#: it is judged, no more (``settles`` and ``no_deadlock`` are about the graph alone and rest on
#: none).  Each must be declared ``fair="weak"`` in ``model/session.py`` (:func:`fair_actions`
#: refuses one that is not: a property cannot assume what the model does not grant).
RESTS_ON: dict[str, tuple[str, ...]] = {
    "settles": (),
    "no_deadlock": (),
    "requests_answered": (
        "arrive",
        "check",
        "claim_stream",
        "admit",
        "refuse",
        "emit",
        "server_request",
        "withdraw",
        "respond",
        "deliver_cancel",
        "unwind",
        "end_request",
        "reject",
    ),
}


def fair_actions(name: str, cfg: Any) -> tuple[str, ...]:
    """The actions of ``cfg``'s run that liveness property ``name`` rests on (its
    :data:`RESTS_ON` entry, those that apply to the run, in the model's order)."""
    from .session import ACTION, actions_for

    listed = RESTS_ON[name]
    for a in listed:
        if a not in ACTION:
            raise ValueError(f"{name} rests on the fairness of {a!r}, not an action")
        if not is_fair(ACTION[a]):
            raise ValueError(
                f"{name} rests on the weak fairness of {a}, which model/session.py does not "
                f"declare (fair={ACTION[a].fair!r})"
            )
    return tuple(a.name for a in actions_for(cfg) if a.name in listed)


#: A client request is pending in these lifecycle states (unless its channel has its response).
PENDING: tuple[Life, ...] = (Life.SENT, Life.RECEIVED, Life.IN_FLIGHT)

DOCS = {
    "settles": "From every reachable state a settled state is reachable (nothing unfinished, no "
    "cancel on the wire): no handler waits or runs forever.",
    "no_deadlock": "Every state that is not settled has a move that changes it (a pure-output "
    "self-loop such as emit is not progress).",
    "requests_answered": "Every client request is eventually answered, refused, cancelled or its "
    "stream broken, under weak fairness of the actions it rests on (the server's and message "
    "delivery).",
}
NAMES = tuple(DOCS)


def pending(s: Any, r: int) -> bool:
    """Client instance r has been sent and has had no response, refusal or cancellation."""
    return (not s.rogue[r]) and Life(s.life[r]) in PENDING and not s.got_resp[r]


def pending_in(b: Logic, s: Any, r: int) -> Any:
    """:func:`pending` in the logic of the rules (read concretely, generated or symbolically)."""
    return b.And(s.rogue[r] == 0, b.In(s.life[r], PENDING), s.got_resp[r] == 0)


def answered(b: Logic, s: Any, requests: int) -> Any:
    """No client request is pending: the goal of ``requests_answered``."""
    return b.Not(b.Or(*[pending_in(b, s, r) for r in range(requests)]))
