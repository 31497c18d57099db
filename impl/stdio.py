"""stdio: newline-delimited JSON-RPC on stdin/stdout, asyncio, one session over the core.

Messages are read in order and each request is admitted or refused (by the core) as it is read,
so the model's stdio profile (one ordered channel) is what runs.  A refused duplicate gets an
error with ``id: null`` whose ``data`` names the id, so no pending request of the client takes
it for its own answer.  A line that is not a JSON-RPC message gets the JSON-RPC error it
deserves (``-32700`` or ``-32600``; ``id`` when it could be read, else ``null``).  Notifications
and responses that answer nothing are ignored.  At end of input the session ends: running
handlers are cancelled and the process exits once they have stopped.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from .messages import INVALID_REQUEST, Kind, encode_message, error_reply, parse
from .server import Answered, Refused, Server, Session

LINE_LIMIT = 16 * 1024 * 1024
_CHUNK = 64 * 1024
#: what :func:`lines` yields for a line over the limit (its whole content is skipped)
TOO_LONG = object()


class _Channel:
    """The one output channel (stdout): every request's outlet."""

    def __init__(self, write: Any) -> None:
        self.write = write

    def send(self, msg: dict[str, Any]) -> None:
        data = encode_message(msg)
        if data is not None:
            self.write(data + b"\n")

    def close(self) -> None:
        pass


def handle_line(session: Session, channel: _Channel, line: bytes) -> None:
    line = line.strip()
    if not line:
        return
    inc = parse(line)
    if inc.kind is Kind.INVALID:
        channel.send(error_reply(inc.id, inc.error))
    elif inc.kind is Kind.REQUEST:
        arrival = session.request(inc.msg, channel)
        if type(arrival) is Refused:
            channel.send(error_reply(None, arrival.error))
        elif type(arrival) is Answered and arrival.reply is not None:
            channel.send(arrival.reply)
    elif inc.kind is Kind.NOTIFICATION:
        session.notification(inc.msg)
    else:
        session.response(inc.msg)


async def serve_stdio(
    server: Server,
    reader: asyncio.StreamReader | None = None,
    write: Any = None,
    session: Session | None = None,
) -> None:
    """Serve ``server`` on stdin/stdout (or the given reader and ``write(bytes)``; ``session``
    lets a caller keep the session to inspect it)."""
    loop = asyncio.get_running_loop()
    if reader is None:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    if write is None:
        out = sys.stdout.buffer

        def write(data: bytes) -> None:
            out.write(data)
            out.flush()

    session = session or Session(server, "stdio")
    channel = _Channel(write)
    try:
        async for line in lines(reader):
            if line is TOO_LONG:
                channel.send(
                    error_reply(
                        None,
                        {"code": INVALID_REQUEST, "message": "Invalid Request: message too large"},
                    )
                )
                continue
            handle_line(session, channel, line)
    finally:
        session.end()
        tasks = [t for t, _ in list(session.tasks.values())]
        if tasks:
            await asyncio.wait(tasks, timeout=5)


async def lines(reader: asyncio.StreamReader, limit: int = LINE_LIMIT) -> AsyncIterator[Any]:
    """The input's lines (bytes, without the newline); a line longer than ``limit`` is skipped
    to its end, however long, and :data:`TOO_LONG` stands for it (nothing of it is parsed).  A
    last line without a newline counts."""
    buf = bytearray()
    skipping = False
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if buf and not skipping:
                yield bytes(buf)
            return
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            if skipping:
                skipping = False
            elif len(buf) + nl - start > limit:
                buf.clear()
                yield TOO_LONG
            else:
                buf += chunk[start:nl]
                yield bytes(buf)
                buf.clear()
            start = nl + 1
        if not skipping:
            buf += chunk[start:]
            if len(buf) > limit:
                buf.clear()
                skipping = True
                yield TOO_LONG
