"""``requestState`` for 2026-07-28 input-required rounds: sealed by the server, held by the client.

On 2026-07-28 a handler that needs the client's input (elicitation, sampling, roots) does not
wait for it: the call answers ``InputRequiredResult`` (``inputRequests`` plus ``requestState``)
and the client retries the call under a new id with ``inputResponses`` and the ``requestState``
it was given.  The runtime re-runs the handler from its start on each retry; every
``ctx.elicit``/``ctx.sample``/``ctx.request`` gets a key from its call order (``method#n``), and
the answers of earlier rounds travel in ``requestState`` so that each question is asked once.

The client holds the state and may forge, alter or replay it, so the state is a token:

    mi1.<base64url(JSON payload)>.<base64url(HMAC-SHA256(key, "mi1." + payload))>

The payload carries the call it belongs to (a SHA-256 digest of the method and the params
without ``inputResponses``, ``requestState`` and ``_meta``: for ``tools/call`` the tool's name
and arguments), an expiry (wall clock, so that processes sharing the key agree), a random nonce,
the round number, the answers so far and the keys asked in the last round.  :meth:`RequestStates.resume`
checks, in this order, and refuses with the name of the first check that fails: the token's
size (``size``), its MAC compared in constant time (``signature``), its shape (``malformed``),
its expiry (``expired``), its call (``call``), and that its nonce was not used before
(``replayed``).  A retry's ``inputResponses`` are taken only for the keys the state says were
asked in the last round, so an answer reaches only the question it was given for.

Replay: a state is single-use.  Each process keeps the nonces of the states it has accepted
until they expire (bounded by ``max_live``; when the record is full a retry is refused as
``capacity`` rather than forgetting a nonce, which would let that state be replayed).  One
client (by its address, where the transport knows it) holds at most ``max_live_per_client`` of
the record (a tenth by default), so that one client cannot fill it for all.  The record
does not span processes: servers sharing one key across processes refuse forged, altered,
expired and cross-call states everywhere, but a state replayed to another process is accepted
there once.

Limits: at most ``max_rounds`` input-required results per call and at most ``max_bytes`` of
token; exceeding either when sealing raises :class:`StateLimit` (the call ends with an error).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import hmac
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Sealer",
    "RequestStates",
    "Resumed",
    "StateRefused",
    "StateLimit",
    "call_binding",
]

#: the params fields a retry changes, left out of the call's binding
_UNBOUND = ("inputResponses", "requestState", "_meta")


class StateRefused(Exception):
    """A ``requestState`` failed a check; ``reason`` names it (``size``, ``signature``,
    ``malformed``, ``expired``, ``call``, ``replayed``, ``capacity``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StateLimit(Exception):
    """The state to seal would exceed a limit (``rounds`` or ``size``)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def call_binding(method: str, params: dict[str, Any] | None) -> str:
    """The digest that binds a state to one call: the method and the params a retry repeats."""
    kept = {k: v for k, v in (params or {}).items() if k not in _UNBOUND}
    return hashlib.sha256(_canonical({"method": method, "params": kept})).hexdigest()


class Sealer:
    """HMAC-SHA256 sealing of a JSON object under ``key``, with a ``kind`` label in clear (so a
    server can tell its own tokens from others) covered by the MAC."""

    def __init__(self, key: bytes | str, kind: str) -> None:
        if isinstance(key, str):
            key = key.encode()
        if len(key) < 16:
            raise ValueError("a requestState key needs at least 16 bytes")
        if not kind or "." in kind:
            raise ValueError("a sealer's kind is a non-empty label without '.'")
        self._key = key
        self.kind = kind

    def _tag(self, signed: str) -> bytes:
        return hmac.new(self._key, signed.encode(), hashlib.sha256).digest()

    def owns(self, token: object) -> bool:
        """Whether ``token`` claims to be of this sealer's kind (nothing is verified)."""
        return isinstance(token, str) and token.startswith(self.kind + ".")

    def seal(self, payload: dict[str, Any]) -> str:
        signed = f"{self.kind}.{_b64(_canonical(payload))}"
        return f"{signed}.{_b64(self._tag(signed))}"

    def open(self, token: object) -> dict[str, Any]:
        """The payload of a token this sealer sealed; :class:`StateRefused` (``signature`` or
        ``malformed``) for anything else."""
        if not self.owns(token):
            raise StateRefused("malformed", f"requestState is not a {self.kind} token")
        assert isinstance(token, str)
        signed, _, tag = token.rpartition(".")
        try:
            given = _unb64(tag)
        except (binascii.Error, ValueError):
            given = b""
        if not hmac.compare_digest(self._tag(signed), given):
            raise StateRefused("signature", "requestState failed its integrity check")
        try:
            payload = json.loads(_unb64(signed[len(self.kind) + 1 :]))
        except (binascii.Error, ValueError):
            payload = None
        if not isinstance(payload, dict):
            raise StateRefused("malformed", "requestState does not hold an object")
        return payload


@dataclass(frozen=True)
class Resumed:
    """What a verified state hands to the retry: the answers so far (the retry's own merged in
    for the keys asked last round) and the round the state was issued in."""

    answers: dict[str, Any]
    round: int


class RequestStates:
    """The server's requestState authority: one key, its limits and its record of used states.

    ``secret``: the HMAC key (random per process by default; give the same bytes to every process
    that must accept the others' states).  ``ttl``: seconds a state stays valid.  ``clock``:
    wall-clock seconds (injectable for tests)."""

    KIND = "mi1"

    def __init__(
        self,
        secret: bytes | str | None = None,
        *,
        ttl: float = 600.0,
        max_rounds: int = 32,
        max_bytes: int = 64 * 1024,
        max_live: int = 100_000,
        max_live_per_client: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sealer = Sealer(secret if secret is not None else os.urandom(32), self.KIND)
        self.ttl = ttl
        self.max_rounds = max_rounds
        self.max_bytes = max_bytes
        self.max_live = max_live
        #: one client's share of the record (default a tenth of it, at least 1)
        self.max_live_per_client = (
            max(1, max_live // 10) if max_live_per_client is None else max_live_per_client
        )
        self.clock = clock
        self._used: set[str] = set()
        self._expiries: list[tuple[float, str, str | None]] = []  # (expiry, nonce, client)
        self._per_client: dict[str, int] = {}  # client -> its used states in the record
        self._lock = threading.Lock()

    def owns(self, token: object) -> bool:
        return self._sealer.owns(token)

    def issue(self, binding: str, answers: dict[str, Any], asked: list[str], round: int) -> str:
        """Seal the state of round ``round`` (1 for the first input-required result)."""
        if round > self.max_rounds:
            raise StateLimit(
                "rounds",
                f"the call asked for input in more than {self.max_rounds} rounds "
                f"(the server's limit of input-required rounds per call)",
            )
        payload = {
            "call": binding,
            "exp": self.clock() + self.ttl,
            "nonce": _b64(os.urandom(16)),
            "round": round,
            "answers": answers,
            "asked": asked,
        }
        token = self._sealer.seal(payload)
        if len(token) > self.max_bytes:
            raise StateLimit(
                "size",
                f"the call's requestState would take {len(token)} bytes, over the server's "
                f"limit of {self.max_bytes}",
            )
        return token

    def resume(
        self,
        token: object,
        binding: str,
        responses: dict[str, Any] | None,
        client: str | None = None,
    ) -> Resumed:
        """Verify ``token`` for the call ``binding``, use it up, and merge ``responses`` (the
        retry's ``inputResponses``) for the keys asked in its last round.  ``client`` (the
        peer's address, when the transport knows one) has at most ``max_live_per_client`` used
        states in the record at once, so one client cannot fill it for everyone."""
        p = self._verified(token, binding)
        self._use(p["nonce"], p["exp"], self.clock(), client)
        merged = dict(p["answers"])
        for key in p["asked"]:
            if isinstance(key, str) and responses and key in responses:
                merged[key] = responses[key]
        return Resumed(merged, p["round"])

    def verify(self, token: object, binding: str) -> tuple[str, float]:
        """Every check of :meth:`resume` but the record of used states: the state's nonce and
        expiry (a store shared by several processes records its use there first); raises
        :class:`StateRefused`."""
        p = self._verified(token, binding)
        return p["nonce"], p["exp"]

    def _verified(self, token: object, binding: str) -> dict[str, Any]:
        if isinstance(token, str) and len(token) > self.max_bytes:
            raise StateRefused(
                "size", f"requestState is over the server's limit of {self.max_bytes} bytes"
            )
        p = self._sealer.open(token)
        exp, nonce, rnd = p.get("exp"), p.get("nonce"), p.get("round")
        answers, asked = p.get("answers"), p.get("asked")
        if not (
            isinstance(exp, (int, float))
            and isinstance(nonce, str)
            and isinstance(rnd, int)
            and isinstance(answers, dict)
            and isinstance(asked, list)
        ):
            raise StateRefused("malformed", "requestState lacks a field it needs")
        now = self.clock()
        if now >= exp:
            raise StateRefused("expired", "requestState has expired")
        if not hmac.compare_digest(str(p.get("call")), binding):
            raise StateRefused("call", "requestState belongs to another call")
        return p

    def _use(self, nonce: str, exp: float, now: float, client: str | None = None) -> None:
        with self._lock:
            per = self._per_client
            while self._expiries and self._expiries[0][0] <= now:
                _, old, owner = heapq.heappop(self._expiries)
                self._used.discard(old)
                if owner is not None:
                    left = per.get(owner, 1) - 1
                    if left > 0:
                        per[owner] = left
                    else:
                        per.pop(owner, None)
            if nonce in self._used:
                raise StateRefused("replayed", "requestState was already used")
            if len(self._used) >= self.max_live:
                raise StateRefused(
                    "capacity", "too many input-required calls in progress; retry the call later"
                )
            if client is not None and per.get(client, 0) >= self.max_live_per_client:
                raise StateRefused(
                    "capacity",
                    "too many input-required calls in progress from this client; retry the "
                    "call later",
                )
            self._used.add(nonce)
            if client is not None:
                per[client] = per.get(client, 0) + 1
            heapq.heappush(self._expiries, (exp, nonce, client))

    def live(self) -> int:
        """How many used states the replay record holds."""
        return len(self._used)
