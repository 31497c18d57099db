"""A plain RESP2 connection to Redis for the store's scripts on the request path.

:class:`.redis_store.RedisStore` sends its claim, release and checked writes over one plain
connection (:class:`Lean`): commands written as RESP2, replies read in order into the futures
that wait for them, so coroutines sharing the connection pipeline by themselves.  Everything
else goes through redis-py.  Apart from the store because it is one thing of its own, a protocol
codec and its connection, and knows nothing of sessions, claims or keys.
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from typing import Any

__all__ = ["Lean", "RespError", "checked_reply", "encode_command", "parse_reply"]


class Lean(asyncio.Protocol):
    """One plain connection for the scripts on the request path (claim, release, the checked
    writes): commands written as RESP2, replies read in order into the futures that wait for
    them, so coroutines sharing it pipeline by themselves.  redis-py's asyncio client spends
    about three times as long per command on this path; everything else (pub/sub, reads,
    loading the scripts) goes through it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiting: deque[asyncio.Future] = deque()
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        pos = 0
        while self.waiting:
            got = parse_reply(self.buf, pos)
            if got is None:
                break
            value, pos = got
            fut = self.waiting.popleft()
            if not fut.done():
                fut.set_result(value)
        del self.buf[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        from redis.exceptions import ConnectionError as Lost

        while self.waiting:
            fut = self.waiting.popleft()
            if not fut.done():
                fut.set_exception(Lost(f"the connection to Redis was lost: {exc or 'closed'}"))

    def send(self, commands: list[list[Any]]) -> list[asyncio.Future]:
        """Write ``commands`` at once; one future per reply."""
        from redis.exceptions import ConnectionError as Lost

        if self.closed or self.transport is None:
            raise Lost("the connection to Redis is closed")
        loop = asyncio.get_running_loop()
        futs = [loop.create_future() for _ in commands]
        self.waiting.extend(futs)
        self.transport.write(b"".join(encode_command(c) for c in commands))
        return futs

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def encode_command(args: list[Any]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class RespError(str):
    """A RESP error reply."""


def parse_reply(buf: bytearray, i: int) -> tuple[Any, int] | None:
    """One RESP2 reply at ``buf[i:]``: (value, end), or None while incomplete."""
    end = buf.find(b"\r\n", i)
    if end < 0:
        return None
    kind, line = buf[i : i + 1], bytes(buf[i + 1 : end])
    nxt = end + 2
    if kind == b"+":
        return line, nxt
    if kind == b"-":
        return RespError(line.decode(errors="replace")), nxt
    if kind == b":":
        return int(line), nxt
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, nxt
        if len(buf) < nxt + n + 2:
            return None
        return bytes(buf[nxt : nxt + n]), nxt + n + 2
    if kind == b"*":
        n = int(line)
        if n < 0:
            return None, nxt
        items = []
        for _ in range(n):
            got = parse_reply(buf, nxt)
            if got is None:
                return None
            value, nxt = got
            items.append(value)
        return items, nxt
    raise ValueError(f"not a RESP2 reply: {bytes(buf[i : i + 16])!r}")


def checked_reply(value: Any) -> Any:
    if isinstance(value, RespError):
        from redis.exceptions import NoScriptError, ResponseError

        raise (NoScriptError if value.startswith("NOSCRIPT") else ResponseError)(str(value))
    return value
