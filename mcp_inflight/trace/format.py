"""The wire-trace format: JSON Lines, one event per line.

Every event is one JSON object with these keys:

``t``
    seconds since the epoch (float) when the recorder saw the event.
``session``
    the ``Mcp-Session-Id`` the exchange carried or was given, or ``null`` before one exists
    (and always on 2026-07-28, which has no sessions); on stdio ``"stdio"``.
``exchange``
    the HTTP exchange it travelled on: the POST's number (``1``, ``2``, ... in the order the
    POSTs were opened) or ``"GET"`` for the standalone stream (``"DELETE"`` for a session end);
    on stdio ``"stdio"``, the one channel (stdin and stdout of the server's process).
``dir``
    ``"client->server"`` or ``"server->client"``.
``kind``
    ``"open"`` (the client opened the exchange; ``method`` holds the HTTP method),
    ``"message"`` (one JSON-RPC message, in ``message``; a batch is split into its messages),
    ``"status"`` (the server answered with HTTP status ``status``),
    ``"close"`` (the exchange ended; ``by`` is ``"client"`` when the client went away first,
    ``"server"`` when the server finished the response).  On stdio the channel opens once
    (``method`` ``"stdio"``) and closes once: by the client when it closed the server's input,
    by the server when it stopped first; there is no status.

A reader (:func:`read`) returns the events in order and raises :class:`TraceError` with the
line number of the first line that is not such an event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

C2S = "client->server"
S2C = "server->client"
KINDS = ("open", "message", "status", "close")
#: the largest JSON response body read whole to trace its messages (a larger one is passed on,
#: its messages not traced): the recording proxy's and the in-process tap's bound alike
MAX_RECORDED = 16 * 1024 * 1024


class TraceError(ValueError):
    """An unreadable trace line; ``line`` is its 1-based number."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line
        self.why = why


def event(
    kind: str, exchange: int | str, direction: str, session: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One event in the format above, stamped now."""
    return {
        "t": time.time(),
        "session": session,
        "exchange": exchange,
        "dir": direction,
        "kind": kind,
        **extra,
    }


class Exchanges:
    """Names the HTTP exchanges of one server as the format does: each POST by its number, in
    the order they were opened; any other by its method."""

    def __init__(self) -> None:
        self.posts = 0

    def name(self, method: str) -> int | str:
        if method != "POST":
            return method
        self.posts += 1
        return self.posts


def validate(ev: Any) -> str | None:
    """Why ``ev`` is not an event of the format, or None."""
    if not isinstance(ev, dict):
        return "not a JSON object"
    for k in ("t", "exchange", "dir", "kind"):
        if k not in ev:
            return f"missing key {k!r}"
    if not isinstance(ev["t"], (int, float)) or isinstance(ev["t"], bool):
        return "'t' is not a number"
    ex = ev["exchange"]
    if not (
        (isinstance(ex, int) and not isinstance(ex, bool) and ex >= 1)
        or ex in ("GET", "DELETE", "stdio")
    ):
        return "'exchange' is neither a POST number nor GET/DELETE/stdio"
    if ev["dir"] not in (C2S, S2C):
        return f"'dir' is not {C2S!r} or {S2C!r}"
    if ev["kind"] not in KINDS:
        return f"'kind' is not one of {', '.join(KINDS)}"
    if ev["kind"] == "message" and not isinstance(ev.get("message"), dict):
        return "a message event without a JSON-RPC object in 'message'"
    if ev["kind"] == "status" and not isinstance(ev.get("status"), int):
        return "a status event without an integer 'status'"
    if ev["kind"] == "close" and ev.get("by") not in ("client", "server"):
        return "a close event without 'by' client or server"
    session = ev.get("session")
    if session is not None and not isinstance(session, str):
        return "'session' is neither a string nor null"
    return None


def parse(lines: Iterator[str] | list[str]) -> list[dict[str, Any]]:
    """The events of ``lines`` (blank lines skipped); :class:`TraceError` on the first bad one."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError as e:
            raise TraceError(n, f"not JSON ({e})") from None
        except RecursionError:
            raise TraceError(n, "not JSON the trace format allows (nested too deep)") from None
        why = validate(ev)
        if why is not None:
            raise TraceError(n, why)
        out.append(ev)
    return out


def read(path: str | Path) -> list[dict[str, Any]]:
    """The events of the trace file at ``path``."""
    lines = []
    for n, raw in enumerate(Path(path).read_bytes().split(b"\n"), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise TraceError(n, "not UTF-8") from None
    return parse(lines)


class Writer:
    """Appends events to a file, one line each, flushed as written (a recording stopped at any
    moment leaves a readable prefix)."""

    def __init__(self, path: str | Path) -> None:
        self._f: IO[str] = open(path, "w", encoding="utf-8")

    def write(self, ev: dict[str, Any]) -> None:
        self._f.write(json.dumps(ev, separators=(",", ":")) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()
