"""Which exchanges of a trace the model speaks of.

The model's account of an HTTP exchange starts when a session's core reads its request.  An
exchange the server answers with an error status before that, or whose request the core refuses
without its being a request the mapping speaks of, is outside the account:

* a status of 400 or more other than 409: the request never reached a session's core (no
  session, or not this session any more: 404; a body, header, Host or Origin the transport
  refuses: 400, 403, 413, 415, 421, ...); its error body carries ``id: null`` (the transport
  read no id it would answer under), and no move of the model stands for it;
* a 409 on an exchange whose request is not a ``tools/call`` (a ``ping`` under the id of a
  tool call in flight): the core's refusal of a request the mapping (``model/observe.py``)
  does not speak of; the model's ``refuse`` changes no registry (``refusal_is_inert``), so the
  tool calls' run is the same without it.

A 409 on a tool call's POST is the model's ``refuse`` and stays in the account, as does any
exchange answered 2xx.  :func:`within` drops their answer (an error under ``id: null``, and nothing
else) from a whole trace (``replay``); the online check
(:class:`~mcp_inflight.trace.online.Monitor`) does the same as the events come, from the
exchange's status on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.observe import is_call
from .format import S2C


def outside(status: int, call: bool) -> bool:
    """Whether an exchange answered ``status`` is outside the model's account; ``call``: its
    request is a ``tools/call``."""
    return status >= 400 and (status != 409 or not call)


def transport_answer(ev: Mapping[str, Any]) -> bool:
    """Whether ``ev`` is the answer such an exchange gets: an error to the client under
    ``id: null``.  Only that is dropped: anything else on the exchange (a result, a message
    under an id) goes through the mapping, so an adapter cannot hide a misrouted message
    behind an error status."""
    m = ev.get("message")
    return (
        ev.get("kind") == "message"
        and ev.get("dir") == S2C
        and isinstance(m, dict)
        and "error" in m
        and "id" in m
        and m["id"] is None
        and "method" not in m
    )


def within(events: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indices of ``events`` the model speaks of: all but the transport's answers on
    exchanges outside its account (see the module text)."""
    calls = {ev.get("exchange") for ev in events if is_call(ev)}
    out_of = {
        ev.get("exchange")
        for ev in events
        if ev.get("kind") == "status"
        and isinstance(ev.get("status"), int)
        and outside(ev["status"], ev.get("exchange") in calls)
    }
    return [
        n
        for n, ev in enumerate(events)
        if ev.get("exchange") not in out_of or not transport_answer(ev)
    ]
