"""The session model's state: its fields, their value domains, and views read off a state.

State (``FIELDS``) -- keyed by request instance (``inst``), by id (``id``), or scalar:

* real server state: ``life`` (lifecycle, ``model/lifecycle.py``), ``rid`` (the request's
  id), ``running`` (its handler runs), ``open`` (its response channel is open), ``step``
  (check_then_claim's progress through check and claims), ``inflight`` and ``stream`` (the
  id-keyed registries: in-flight entry with the cancel handle, and the POST stream slot on http),
  ``waiter`` (the server's registry of its own requests to the client, keyed by the ids it
  mints: which handler waits for each answer), ``ended`` (the session has ended: DELETE, idle
  expiry or shutdown);
* the wire: ``ts``/``cts`` (send times of a request and of its cancel; stdio delivers in send
  order, http in any order), ``cmsg`` (the cancel message: none, on the wire, delivered),
  ``clock``, ``sq`` (what became of the server-to-client request under each server-minted id:
  the server mints ids from a counter of its own, so an id it takes is one never minted before in
  the session, and the runtime keeps no table of them);
* ghosts, never read by a server rule: ``rogue`` (who sent it: the client, which obeys its id
  rule, or a rogue in the same session, which may send any id), ``got_resp`` (the client's
  view: this instance's channel has received a response or a refusal) and ``shown`` (the request
  on whose stream a server-to-client request went out: its sender is the one who saw it).  A cancel message
  *means* the instance it is indexed by.

Server-minted ids share the abstract id sort with the clients' ids (``--ids`` bounds both):
the two are separate namespaces (``inflight``/``stream`` are keyed by the clients' ids,
``waiter``/``sq``/``shown`` by the server's), and no rule compares a value of one with a value
of the other, so renaming ids stays a symmetry of the model.

The standalone GET stream of 2025-11-25 is not keyed by any request id in any design here, so
no request action touches it; it is left out of the explored state (the runtime keeps it in a
slot of its own, and its tests send an id that names it).  ``_meta.progressToken`` is taken to
be the request id, as the official clients mint it, so the progress-token registry coincides
with ``inflight``.

Beside the fields: the initial state of a configuration, the ranges of its keys, the views of a
state that conditions and properties read (``answered``, ``unfinished``, ``quiescent``,
``settled``), and the exact renumbering of send times (``canonical_clock``).  The conditions
that read this state are in ``model/session_conditions.py``, the actions that write it in
``model/session.py``.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import Config
from .lifecycle import LIVE, Domain, Life
from .logic import NONE, Concrete, Logic

# --- value domains ------------------------------------------------------------------------


class Step(Domain):
    """check_then_claim's progress through the transport's check and the claims."""

    UNCHECKED = 0
    CHECKED = 1
    CLAIMED = 2

    @property
    def label(self) -> str:
        return "stream claimed" if self is Step.CLAIMED else self.name.lower()


class Sreq(Domain):
    """The fate of the server-to-client request under one server-minted id."""

    NONE = 0  # not minted in this session
    PENDING = 1  # written on a stream; no answer has reached the server yet
    ANSWERED = 2  # an answer reached the server while a handler waited on it
    FAILED = 3  # dropped (no live stream), or its handler stopped waiting unanswered


class Cmsg(Domain):
    """An instance's cancel message."""

    NONE = 0
    WIRE = 1  # sent, not yet read by the server
    DELIVERED = 2

    @property
    def label(self) -> str:
        return "on wire" if self is Cmsg.WIRE else self.name.lower()


@dataclass(frozen=True)
class Field:
    """One field of the state.  ``domain``: the enumeration of its values, for a field of a
    finite sort; the renderers, the prover's typing and the drawings read its range from it."""

    name: str
    key: str | None  # "inst", "id" or None (scalar)
    sort: str  # "life", "id", "inst?", "bool", "step", "sreq", "cmsg", "time"
    ghost: bool
    wire: bool
    default: object
    doc: str
    domain: type[Domain] | None = None


FIELDS: tuple[Field, ...] = (
    Field("life", "inst", "life", False, False, Life.UNSENT, "lifecycle state", Life),
    Field("rid", "inst", "id", False, False, 0, "the request's JSON-RPC id"),
    Field("rogue", "inst", "bool", True, False, False, "sent by the rogue, not the client"),
    Field("running", "inst", "bool", False, False, False, "its handler is running"),
    Field("open", "inst", "bool", False, False, False, "its response channel is open"),
    Field(
        "step",
        "inst",
        "step",
        False,
        False,
        Step.UNCHECKED,
        "check_then_claim: unchecked, checked, stream claimed",
        Step,
    ),
    Field(
        "got_resp",
        "inst",
        "bool",
        True,
        False,
        False,
        "its channel has received a response or refusal (the client's view)",
    ),
    Field(
        "cmsg",
        "inst",
        "cmsg",
        False,
        True,
        Cmsg.NONE,
        "its cancel: none, on the wire, delivered",
        Cmsg,
    ),
    Field("ts", "inst", "time", False, True, 0, "send time of the request (stdio order)"),
    Field("cts", "inst", "time", False, True, 0, "send time of its cancel (stdio order)"),
    Field(
        "inflight",
        "id",
        "inst?",
        False,
        False,
        NONE,
        "in-flight entry (handler, cancel handle) per id",
    ),
    Field("stream", "id", "inst?", False, False, NONE, "POST stream slot per id (http)"),
    Field(
        "waiter",
        "id",
        "inst?",
        False,
        False,
        NONE,
        "per server-minted id: the handler waiting for the answer to that server-to-client request",
    ),
    Field(
        "sq",
        "id",
        "sreq",
        False,
        True,
        Sreq.NONE,
        "per server-minted id: none (not minted), pending, answered, failed",
        Sreq,
    ),
    Field(
        "shown",
        "id",
        "inst?",
        True,
        False,
        NONE,
        "per server-minted id: the request whose stream carried it (whose sender saw it), or none",
    ),
    Field("clock", None, "time", False, True, 0, "next send time (stdio)"),
    Field("ended", None, "bool", False, False, False, "the session has ended"),
)
FIELD = {f.name: f for f in FIELDS}
REGISTRIES = ("inflight", "stream")
#: The server's registry of its own requests to the client (keyed by the ids it mints).
WAITERS = "waiter"

if TYPE_CHECKING:
    #: A state: a namedtuple with one attribute per field of ``FIELDS`` (built at run time, so
    #: a type checker knows it only as a value read by attribute).
    State = Any
else:
    State = namedtuple("State", [f.name for f in FIELDS])


def initial(cfg: Config) -> State:
    vals = []
    for f in FIELDS:
        n = cfg.requests if f.key == "inst" else cfg.ids if f.key == "id" else None
        vals.append(f.default if n is None else (f.default,) * n)
    return State(*vals)


def domains(cfg: Config) -> dict[str, range]:
    return {"inst": range(cfg.requests), "id": range(cfg.ids)}


# --- views of a state (read-only: conditions and properties read them) ----------------------


def answered(b: Logic, s: Any, r: Any) -> Any:
    """Instance r's channel has received a response (its own or, if misrouted, another's)."""
    return s.got_resp[r]


def unfinished(b: Logic, s: Any, r: Any) -> Any:
    """r is on the wire, being admitted, live, or a cancelled handler still unwinding."""
    return b.Or(b.In(s.life[r], (Life.SENT, Life.RECEIVED) + LIVE), s.running[r])


def quiescent(b: Logic, s: Any) -> Any:
    return b.ForAll("inst", lambda r: b.Not(unfinished(b, s, r)))


def settled(b: Logic, s: Any) -> Any:
    """Nothing left to do: nothing unfinished and no cancel on the wire (a state with no enabled
    action that is not settled is a deadlock)."""
    return b.And(quiescent(b, s), b.ForAll("inst", lambda r: s.cmsg[r] != Cmsg.WIRE))


#: The send times ``canonical_clock`` renumbers, in its order of kinds, each with when its slot
#: holds a time still read: a request's while it is on the wire, a cancel's likewise (the
#: declaration's ``ranks``, ``model/session_spec.py``, reads this table too).
CLOCK_STAMPS: tuple[tuple[str, Any], ...] = (
    ("ts", lambda b, s, r: s.life[r] == Life.SENT),
    ("cts", lambda b, s, r: s.cmsg[r] == Cmsg.WIRE),
)


_PLAIN = Concrete({})  # the stamps' conditions quantify over nothing


def canonical_clock(c: Config, s: State) -> State:
    """Renumber send times: only the order of *undelivered* messages is ever read (``in_order``),
    so times are replaced by their rank among undelivered messages and the rest set to 0.  This
    keeps the concrete state space finite on stdio; it is an exact abstraction (every guard and
    property gives the same answer before and after), not a rule.
    """
    if not c.stdio:
        return s
    pending = sorted(
        (getattr(s, name)[r], kind, r)
        for kind, (name, live) in enumerate(CLOCK_STAMPS)
        for r in range(c.requests)
        if live(_PLAIN, s, r)
    )
    ts = [0] * c.requests
    cts = [0] * c.requests
    for rank, (_, kind, r) in enumerate(pending):
        (ts if kind == 0 else cts)[r] = rank
    return s._replace(ts=tuple(ts), cts=tuple(cts), clock=len(pending))
