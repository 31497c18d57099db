"""What a request to the Streamable HTTP app must pass before a session sees it: headers given
once where they must be single, content negotiation (``Accept``, ``Content-Type``), the Host and
Origin against the allowed names (DNS rebinding), and the body's size and time bounds.

:mod:`.http` (the app) asks these; each verdict here depends on the request's bytes and the
app's options alone, never on a session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from .asgi_types import Receive

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


# --- headers ----------------------------------------------------------------------------------


class Headers(dict):
    """A request's headers (names lower-cased by the server, as ASGI says; values as bytes);
    ``twice`` holds the names given more than once, so that a header that must be single can
    be refused.  Made by :meth:`of`: the mapping is the dict's own (C) construction, and the
    names are counted only when the mapping came out shorter than the list."""

    twice: frozenset[bytes] = frozenset()

    @classmethod
    def of(cls, raw: Any) -> Headers:
        headers = cls(raw)
        if len(headers) != len(raw):
            seen: set[bytes] = set()
            twice: set[bytes] = set()
            for k, _ in raw:
                if k in seen:
                    twice.add(k)
                seen.add(k)
            headers.twice = frozenset(twice)
        return headers


#: headers a request may carry once only (a second copy could be read differently by a proxy)
SINGLE = (
    b"host",
    b"origin",
    b"content-length",
    b"content-type",
    b"mcp-session-id",
    b"mcp-protocol-version",
)


def media_types(value: bytes | None) -> set[str]:
    if value is None:
        return set()
    return {part.split(";", 1)[0].strip().lower() for part in value.decode("latin-1").split(",")}


def accepts(value: bytes | None, *wanted: str) -> bool:
    """Whether an ``Accept`` header admits every media type in ``wanted`` (wildcards count)."""
    types = media_types(value)
    if "*/*" in types:
        return True
    return all(w in types or (w.split("/", 1)[0] + "/*") in types for w in wanted)


_POST_ACCEPT: dict[bytes | None, bool] = {}
_JSON_CTYPE: dict[bytes | None, bool] = {}


def accepts_post(value: bytes | None) -> bool:
    """A POST's ``Accept`` admits both JSON and SSE (verdicts remembered per value, bounded)."""
    v = _POST_ACCEPT.get(value)
    if v is None:
        v = accepts(value, "application/json", "text/event-stream")
        if len(_POST_ACCEPT) >= 256:
            _POST_ACCEPT.clear()
        _POST_ACCEPT[value] = v
    return v


def is_json(value: bytes | None) -> bool:
    """A ``Content-Type`` of ``application/json`` (parameters allowed; remembered, bounded)."""
    v = _JSON_CTYPE.get(value)
    if v is None:
        v = "application/json" in media_types(value)
        if len(_JSON_CTYPE) >= 256:
            _JSON_CTYPE.clear()
        _JSON_CTYPE[value] = v
    return v


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (an IPv6 literal in brackets) as (lower-case name, port or None); None
    when it is not a well-formed Host value."""
    if not value or any(c.isspace() or c in "/?#@\\" for c in value):
        return None
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            return None
        name, rest = value[: close + 1], value[close + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text = value.partition(":")
        if not colon:
            port_text = None
        if ":" in (port_text or ""):
            return None
    if port_text is None:
        return name.lower(), None
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        return None
    return name.lower(), int(port_text)


# --- Host and Origin ------------------------------------------------------------------------


class HostCheck:
    """The Host and Origin a request may carry (DNS rebinding): ``allowed_hosts`` (names, or
    ``name:port``, default the loopback names) and ``allowed_origins``."""

    def __init__(self, allowed_hosts: Any = None, allowed_origins: Any = None) -> None:
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or LOOPBACK)}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or ())}
        self.verdicts: dict[tuple, bool] = {}

    def _name_ok(self, name: str, port: int | None, own_port: int | None) -> bool:
        if port is not None and f"{name}:{port}" in self.allowed_hosts:
            return True
        if name not in self.allowed_hosts:
            return False
        return port is None or own_port is None or port == own_port

    def checked(self, kind: str, value: bytes | None, own_port: int | None) -> bool:
        """The verdict of a header check, remembered per value (clients send the same few values
        on every request; the table is bounded)."""
        key = (kind, value, own_port)
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = (self._host_ok if kind == "host" else self._origin_ok)(value, own_port)
            if len(self.verdicts) >= 256:
                self.verdicts.clear()
            self.verdicts[key] = verdict
        return verdict

    def _host_ok(self, host: bytes | None, own_port: int | None) -> bool:
        """DNS rebinding: the Host names this server (case-insensitive), with this server's port
        when it names one (or a ``name:port`` that is allowed as such)."""
        if host is None:
            return False
        parts = split_host(host.decode("latin-1"))
        return parts is not None and self._name_ok(*parts, own_port)

    def _origin_ok(self, origin: bytes | None, own_port: int | None) -> bool:
        """An Origin, if sent, is an allowed origin, or an http(s) origin naming an allowed host
        and this server's port (a page served from another local port is another origin)."""
        if origin is None:
            return True
        o = origin.decode("latin-1").lower()
        if o in self.allowed_origins:
            return True
        try:
            u = urlsplit(o)
            port = u.port
        except ValueError:
            return False
        if (
            u.scheme not in ("http", "https")
            or not u.hostname
            or u.path
            or u.query
            or u.fragment
            or u.username is not None
        ):
            return False
        name = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
        if port is None:
            port = 80 if u.scheme == "http" else 443
        return self._name_ok(name, port, own_port) or (
            name.strip("[]") in self.allowed_hosts
            and self._name_ok(name.strip("[]"), port, own_port)
        )


# --- the body ---------------------------------------------------------------------------------


try:  # the running task of a loop, without the call through asyncio.current_task (3.11)
    from asyncio.tasks import _current_tasks  # type: ignore[attr-defined]

    _current_task: Callable[[asyncio.AbstractEventLoop], asyncio.Task | None] = _current_tasks.get
except ImportError:  # pragma: no cover - a Python without the table
    _current_task = asyncio.current_task


class BodyReader:
    """Reads a request's body within ``max_body`` bytes and ``body_timeout`` seconds (either
    ``None``: no bound)."""

    def __init__(self, max_body: int | None, body_timeout: float | None) -> None:
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.reading: dict[asyncio.Task, float] = {}  # body reads under way -> deadline
        self.overdue: set[asyncio.Task] = set()
        self.timer: asyncio.TimerHandle | None = None

    async def read(self, receive: Receive, headers: Any) -> bytes | int:
        """The whole body, or the HTTP status refusing it: 413 too large, 408 not all there
        within ``body_timeout``, 400 a body that never fully arrived (the client left mid-body:
        nothing of it is served)."""
        limit = self.max_body
        clen = headers.get(b"content-length")
        if clen is not None:
            if not (clen.isdigit() and len(clen) < 20):
                return 400
            if limit is not None and int(clen) > limit:
                return 413
        if self.body_timeout is None:
            return await self._read_body(receive, limit, await receive())
        # No timer per request (arming and cancelling one costs more than the rest of a small
        # request's reading): the task is noted with its deadline, and one timer for the whole
        # app, armed only while bodies are being read, cancels the reads past theirs.
        loop = asyncio.get_running_loop()
        task = _current_task(loop)
        assert task is not None  # a body is read by a task
        assert self.body_timeout is not None
        self.reading[task] = loop.time() + self.body_timeout
        if self.timer is None:
            self.timer = loop.call_later(min(1.0, self.body_timeout / 4), self._sweep)
        try:
            m = await receive()
            if m["type"] == "http.request" and not m.get("more_body"):  # all in one message
                body = m.get("body", b"")
                return 413 if limit is not None and len(body) > limit else body
            return await self._read_body(receive, limit, m)
        except asyncio.CancelledError:
            if task in self.overdue:
                self.overdue.discard(task)
                task.uncancel()
                return 408
            raise
        finally:
            self.reading.pop(task, None)

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, deadline in list(self.reading.items()):
            if deadline <= now:
                del self.reading[task]
                self.overdue.add(task)
                task.cancel()
        self.timer = None
        if self.reading and self.body_timeout is not None:
            self.timer = loop.call_later(min(1.0, self.body_timeout / 4), self._sweep)

    @staticmethod
    async def _read_body(receive: Receive, limit: int | None, m: Any) -> bytes | int:
        """The body whose first message ``m`` is (the rest read from ``receive``)."""
        chunks = []
        size = 0
        while True:
            if m is None:
                m = await receive()
            if m["type"] == "http.disconnect":
                return 400
            chunk = m.get("body", b"")
            size += len(chunk)
            if limit is not None and size > limit:
                return 413
            chunks.append(chunk)
            if not m.get("more_body"):
                break
            m = None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
