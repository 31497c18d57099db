"""Designs (how a server keys its registries) and protocol profiles, as data.

The three designs of the brief are configurations of the one model in ``model/session.py``;
each knob below switches one safeguard on or off, so a design that breaks a rule differs from
``atomic`` in named knobs, and a *mutant* (``atomic`` minus one safeguard) is just another
``Design`` built with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import product

REMOVAL_SITES = ("respond", "cancel", "unwind", "break", "refuse")


@dataclass(frozen=True)
class Design:
    """One way of keying the server's registries.

    claim
        ``overwrite``: arrival stores the request under its id whatever is there (no refusal).
        ``split``: the transport checks "is the id in flight?", then stores the stream slot, then
        the core claims the in-flight entry (refusing if taken) -- three interleavable steps.
        ``atomic``: one step refuses a taken id or claims in-flight entry and stream slot together.
    guarded
        Removal sites whose removal is guarded by identity (an entry is removed only by the
        instance or stream that owns it).  Sites: ``respond`` (handler finished), ``cancel``
        (on the cancel, when the id is freed there), ``unwind`` (a cancelled handler ends),
        ``break`` (a POST stream broke), ``refuse`` (a refused claim releases what it took).
    guard_write
        A message for instance r goes out only on r's own stream while r is live; otherwise it is
        dropped (and counted by the runtime).
    cancel_by_connection
        2026-07-28 http: a closed response stream cancels the request of *that connection*;
        otherwise the server looks the id up in its in-flight map.
    free_on
        When a cancelled request's id is free again: ``handler_end`` (the in-flight entry is held
        until the cooperative handler stops) or ``cancel`` (released on the cancel itself).
    fresh_server_ids
        The server mints each of its own request ids fresh in the session (a counter); otherwise
        it may take an id still in use (per-request counters, or no check).
    unguessable_server_ids
        The server's ids cannot be guessed (random), so only the sender that saw a
        server-to-client request can answer it; otherwise (a counter, as the official SDKs
        mint them) the rogue can answer any minted id.
    answer_clears_waiter
        An answer removes its waiter, so a second answer to the same id reaches no handler.
    releases_waiters
        A handler stops waiting on every server-to-client request of its own before it responds
        or unwinds, so no waiter outlives its request.
    end_stops_writes
        Once the session has ended, nothing more is written for the requests it had.
    waits_on_lost
        An injected bug for the liveness checks: a handler whose server-to-client request was
        dropped waits for its answer forever (it can neither respond nor stop on a cancel).
    waits_on_answer
        An injected bug for the liveness checks: a handler that sent a server-to-client request
        waits for its answer with no timeout before it responds (MCP asks senders to set timeouts
        on the requests they send), so a client that never answers leaves its request hanging.
    post_scopes
        2026-07-28 http (no sessions): every POST is a scope of its own that holds only the
        request it carries, so that request's in-flight entry and stream slot are the POST
        itself (its handle and its response stream) and nothing keyed by id is shared between
        POSTs; otherwise one registry keyed by id serves every POST (a server that keeps one
        table for all of them).  No effect on the other profiles, whose scope is the session.
    cancels_in_order
        stdio: the server acts on the messages of its one channel in the order they were sent,
        so a cancel is handled before any request sent after it; ``False``: cancels take a path
        of their own (a queue, another task) that a later request may overtake.  No effect on
        http, whose POSTs and cancels have no order to keep.
    stops_on_respond
        ``False`` is an injected bug for the liveness checks: a handler keeps running after it
        has written its response (its task is never reaped).
    """

    name: str
    claim: str
    guarded: frozenset[str] = field(default_factory=frozenset)
    guard_write: bool = False
    cancel_by_connection: bool = False
    free_on: str = "handler_end"
    fresh_server_ids: bool = True
    unguessable_server_ids: bool = True
    answer_clears_waiter: bool = True
    releases_waiters: bool = True
    end_stops_writes: bool = True
    waits_on_lost: bool = False
    waits_on_answer: bool = False
    stops_on_respond: bool = True
    post_scopes: bool = False
    cancels_in_order: bool = True

    def __post_init__(self) -> None:
        if self.claim not in ("overwrite", "split", "atomic"):
            raise ValueError(f"claim must be overwrite, split or atomic, not {self.claim!r}")
        if self.free_on not in ("handler_end", "cancel"):
            raise ValueError(f"free_on must be handler_end or cancel, not {self.free_on!r}")
        bad = set(self.guarded) - set(REMOVAL_SITES)
        if bad:
            raise ValueError(f"unknown removal sites {sorted(bad)}; valid: {REMOVAL_SITES}")

    @property
    def refuses(self) -> bool:
        return self.claim != "overwrite"

    def guards(self, site: str) -> bool:
        return site in self.guarded

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "claim": self.claim,
            "guarded": sorted(self.guarded),
            "guard_write": self.guard_write,
            "cancel_by_connection": self.cancel_by_connection,
            "free_on": self.free_on,
            "fresh_server_ids": self.fresh_server_ids,
            "unguessable_server_ids": self.unguessable_server_ids,
            "answer_clears_waiter": self.answer_clears_waiter,
            "releases_waiters": self.releases_waiters,
            "end_stops_writes": self.end_stops_writes,
            "post_scopes": self.post_scopes,
            "cancels_in_order": self.cancels_in_order,
        }


UNGUARDED = Design("unguarded", claim="overwrite")
CHECK_THEN_CLAIM = Design("check_then_claim", claim="split", guarded=frozenset(REMOVAL_SITES))
ATOMIC = Design(
    "atomic",
    claim="atomic",
    guarded=frozenset(REMOVAL_SITES),
    guard_write=True,
    cancel_by_connection=True,
    post_scopes=True,
)

DESIGNS: dict[str, Design] = {d.name: d for d in (ATOMIC, UNGUARDED, CHECK_THEN_CLAIM)}


def mutants() -> dict[str, Design]:
    """``atomic`` minus one safeguard at a time (for mutation tests and the README)."""
    out = {
        "atomic-split-claim": replace(ATOMIC, name="atomic-split-claim", claim="split"),
        "atomic-no-refusal": replace(ATOMIC, name="atomic-no-refusal", claim="overwrite"),
        "atomic-unguarded-write": replace(ATOMIC, name="atomic-unguarded-write", guard_write=False),
        "atomic-cancel-by-id": replace(
            ATOMIC, name="atomic-cancel-by-id", cancel_by_connection=False
        ),
        "atomic-free-on-cancel": replace(ATOMIC, name="atomic-free-on-cancel", free_on="cancel"),
        "atomic-reused-server-ids": replace(
            ATOMIC, name="atomic-reused-server-ids", fresh_server_ids=False
        ),
        "atomic-guessable-server-ids": replace(
            ATOMIC, name="atomic-guessable-server-ids", unguessable_server_ids=False
        ),
        "atomic-keeps-answered-waiter": replace(
            ATOMIC, name="atomic-keeps-answered-waiter", answer_clears_waiter=False
        ),
        "atomic-leaks-waiters": replace(
            ATOMIC, name="atomic-leaks-waiters", releases_waiters=False
        ),
        "atomic-writes-after-end": replace(
            ATOMIC, name="atomic-writes-after-end", end_stops_writes=False
        ),
        "atomic-shared-registry": replace(ATOMIC, name="atomic-shared-registry", post_scopes=False),
        "atomic-cancels-out-of-order": replace(
            ATOMIC, name="atomic-cancels-out-of-order", cancels_in_order=False
        ),
    }
    for site in REMOVAL_SITES:
        name = f"atomic-unguarded-{site}"
        out[name] = replace(ATOMIC, name=name, guarded=ATOMIC.guarded - {site})
    return out


def liveness_mutants() -> dict[str, Design]:
    """``atomic`` with one injected liveness bug (no safety property can see any of them)."""
    return {
        "atomic-waits-on-lost": replace(ATOMIC, name="atomic-waits-on-lost", waits_on_lost=True),
        "atomic-waits-on-answer": replace(
            ATOMIC, name="atomic-waits-on-answer", waits_on_answer=True
        ),
        "atomic-runs-after-respond": replace(
            ATOMIC, name="atomic-runs-after-respond", stops_on_respond=False
        ),
    }


def design_from_knobs(spec: dict[str, object]) -> Design:
    """A design described as knobs: ``{"name": ..., "base": "atomic" (default; any design or
    mutant), <knob>: <value>, ...}`` with the knobs of :class:`Design` (``guarded`` a list of
    removal sites).  A maintainer describes a proposed fix this way and checks it with
    ``mcp-inflight check --design-file``.  Raises ``ValueError`` naming what is wrong."""
    known = {**DESIGNS, **mutants(), **liveness_mutants()}
    spec = dict(spec)
    name = spec.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ValueError('a design needs a "name" (a string)')
    spec.pop("doc", None)
    base_name = spec.pop("base", "atomic")
    if base_name not in known:
        raise ValueError(f"unknown base {base_name!r}; valid: {', '.join(known)}")
    knobs = [f for f in Design.__dataclass_fields__ if f != "name"]
    bad = sorted(set(spec) - set(knobs))
    if bad:
        raise ValueError(f"unknown knob(s) {', '.join(bad)}; valid: {', '.join(knobs)}")
    values: dict[str, object] = {}
    for k, v in spec.items():
        default = getattr(known[base_name], k)
        if k == "guarded":
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"guarded must be a list of removal sites ({REMOVAL_SITES})")
            values[k] = frozenset(v)
        elif isinstance(default, bool):
            if not isinstance(v, bool):
                raise ValueError(f"{k} must be true or false, not {v!r}")
            values[k] = v
        elif not isinstance(v, str):
            raise ValueError(f"{k} must be a string, not {v!r}")
        else:
            values[k] = v
    return replace(known[base_name], name=name, **values)  # type: ignore[arg-type]


REVISIONS = ("2025-11-25", "2026-07-28")
TRANSPORTS = ("stdio", "http")

#: The client's id discipline (basic/index), the first of a session's two senders (the second,
#: the rogue, may send any id):
#:
#: ``reusing``
#:     reuses an id once every earlier request of its own under it has been answered: the rule
#:     of 2026-07-28 (an id MUST NOT match a request the sender has not yet had answered), and
#:     what clients do in practice on 2025-11-25 too, where it is not compliant (one production
#:     client sends every request with id 1, python-sdk issue #3060).
#: ``fresh``
#:     never reuses an id within the session: the rule of 2025-11-25 (an id MUST NOT have been
#:     previously used by the requestor within the same session).
CLIENTS = ("reusing", "fresh")
#: The client each revision's id rule asks for.
COMPLIANT_CLIENT = {"2025-11-25": "fresh", "2026-07-28": "reusing"}


@dataclass(frozen=True)
class Config:
    """One run: a design on a profile at a bound (``ids`` distinct ids, ``requests`` instances),
    with a client of id discipline ``client`` (``CLIENTS``; the reusing one by default: every
    invariant that holds with it holds with the fresh one, whose runs are a subset)."""

    design: Design
    revision: str
    transport: str
    ids: int = 2
    requests: int = 2
    client: str = "reusing"

    def __post_init__(self) -> None:
        if self.revision not in REVISIONS:
            raise ValueError(f"unknown revision {self.revision!r}; valid: {', '.join(REVISIONS)}")
        if self.transport not in TRANSPORTS:
            raise ValueError(
                f"unknown transport {self.transport!r}; valid: {', '.join(TRANSPORTS)}"
            )
        if self.ids < 1 or self.requests < 1:
            raise ValueError("bounds must be at least 1")
        if self.client not in CLIENTS:
            raise ValueError(f"unknown client {self.client!r}; valid: {', '.join(CLIENTS)}")

    @property
    def http(self) -> bool:
        return self.transport == "http"

    @property
    def stdio(self) -> bool:
        return self.transport == "stdio"

    @property
    def rev2025(self) -> bool:
        return self.revision == "2025-11-25"

    @property
    def close_is_cancel(self) -> bool:
        """2026-07-28 http: a cancel is the closing of that request's own response stream."""
        return self.revision == "2026-07-28" and self.transport == "http"

    @property
    def per_post(self) -> bool:
        """2026-07-28 http under a design with ``post_scopes``: each POST is the scope of its one
        request, so no registry keyed by id is read or written (``model/session.py``)."""
        return self.close_is_cancel and self.design.post_scopes

    @property
    def client_reuses(self) -> bool:
        """The client reuses an id once answered (else it never reuses one in the session)."""
        return self.client == "reusing"

    @property
    def client_compliant(self) -> bool:
        """The client follows the id rule of this run's revision."""
        return self.client == COMPLIANT_CLIENT[self.revision]

    @property
    def label(self) -> str:
        base = f"{self.design.name} {self.revision} {self.transport}"
        return base if self.client == "reusing" else f"{base} {self.client}-client"

    def fields(self) -> dict[str, str | int]:
        """The run's settings by name, for JSON reports (the design by its name)."""
        return {
            "design": self.design.name,
            "revision": self.revision,
            "transport": self.transport,
            "client": self.client,
            "ids": self.ids,
            "requests": self.requests,
        }


def client_for(choice: str, revision: str) -> str:
    """The client a user's choice names on ``revision``: one of ``CLIENTS``, or ``compliant``
    (the client that revision's id rule asks for)."""
    if choice == "compliant":
        return COMPLIANT_CLIENT[revision]
    if choice not in CLIENTS:
        raise ValueError(f"unknown client {choice!r}; valid: {', '.join(CLIENTS)}, compliant")
    return choice


def profiles(revision: str = "all", transport: str = "all") -> list[tuple[str, str]]:
    revs = REVISIONS if revision == "all" else (revision,)
    trs = TRANSPORTS if transport == "all" else (transport,)
    return list(product(revs, trs))
