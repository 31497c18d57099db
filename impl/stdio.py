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

from .server import Server, Session, dumps, error_reply, parse

LINE_LIMIT = 16 * 1024 * 1024


class _Channel:
    """The one output channel (stdout): every request's outlet."""

    def __init__(self, write):
        self.write = write

    def send(self, msg):
        self.write(dumps(msg) + b"\n")

    def close(self):
        pass


def handle_line(session: Session, channel: _Channel, line: bytes) -> None:
    line = line.strip()
    if not line:
        return
    inc = parse(line)
    if inc.kind == "invalid":
        channel.send(error_reply(inc.id, inc.error))
    elif inc.kind == "request":
        status, value = session.request(inc.msg, channel)
        if status == "refused":
            channel.send(error_reply(None, value))
        elif status == "reply" and value is not None:
            channel.send(value)
    elif inc.kind == "notification":
        session.notification(inc.msg)
    else:
        session.response(inc.msg)


async def serve_stdio(server: Server, reader: asyncio.StreamReader | None = None, write=None,
                      session: Session | None = None) -> None:
    """Serve ``server`` on stdin/stdout (or the given reader and ``write(bytes)``; ``session``
    lets a caller keep the session to inspect it)."""
    loop = asyncio.get_running_loop()
    if reader is None:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    if write is None:
        out = sys.stdout.buffer

        def write(data: bytes):
            out.write(data)
            out.flush()

    session = session or Session(server, "stdio")
    channel = _Channel(write)
    while True:
        try:
            line = await reader.readline()
        except ValueError:       # a line over the limit (its buffered part is discarded)
            channel.send(error_reply(None, {"code": -32600, "message": "Invalid Request: message too large"}))
            continue
        if not line:
            break
        handle_line(session, channel, line)
    session.end()
    tasks = [t for t, _ in list(session.tasks.values())]
    if tasks:
        await asyncio.wait(tasks, timeout=5)
