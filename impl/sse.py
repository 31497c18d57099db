"""Server-sent events: one incremental decoder and one encoder for every part of the project.

The runtime's HTTP adapter writes events with :func:`encode`; the guard watches the wrapped
server's events, the probe reads the target's, and the tests and benchmarks read ours, all with
:class:`Decoder`.  Decoding follows the WHATWG HTML "event stream" interpretation: lines end in
CRLF, LF or CR; a line starting with ``:`` is a comment; ``field: value`` with one optional space
after the colon; ``data`` lines accumulate (joined with LF); a blank line dispatches the event; an
event with no ``data`` field is not dispatched (so a priming event, an id and empty data, *is*
dispatched with data ``""``); an incomplete event at the end of the stream is discarded; ``retry``
is kept only when it is all ASCII digits; an ``id`` containing NUL is ignored.

Bytes are decoded as UTF-8 with replacement (the standard's rule), after the lines are split, so a
multi-byte character split across two chunks is never damaged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson


@dataclass(frozen=True, slots=True)
class Event:
    """One dispatched event.  ``id`` is the last event id seen on the stream so far (the
    standard's "last event ID buffer"), ``None`` if none was ever set."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None

    def json(self) -> object:
        """The data parsed as JSON; raises ``ValueError`` when it is not JSON."""
        return orjson.loads(self.data)


class Decoder:
    """Feed bytes as they arrive; get back the events completed by them.

    >>> d = Decoder()
    >>> d.feed(b"event: message\\ndata: {\\"a\\":")
    []
    >>> [e.json() for e in d.feed(b" 1}\\n\\n")]
    [{'a': 1}]
    """

    __slots__ = ("_buf", "_data", "_event", "_id", "_retry", "_cr")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._data: list[str] | None = None
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._cr = False  # the previous chunk ended in CR: a leading LF belongs to it

    @property
    def last_event_id(self) -> str | None:
        return self._id

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        if not chunk:
            return out
        if self._cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._cr = False
        buf = self._buf
        buf += chunk
        start = 0
        n = len(buf)
        while True:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            elif cr + 1 < n:
                end, nxt = cr, cr + 2 if buf[cr + 1] == 0x0A else cr + 1
            else:  # CR at the end of what we have: the line ends; an LF may follow in the next chunk
                end, nxt = cr, cr + 1
                self._cr = True
            self._line(bytes(buf[start:end]), out)
            start = nxt
        del buf[:start]
        return out

    def _line(self, raw: bytes, out: list[Event]) -> None:
        if not raw:
            if self._data is not None:
                out.append(
                    Event("\n".join(self._data), self._event or "message", self._id, self._retry)
                )
            self._data = None
            self._event = ""
            return
        if raw[:1] == b":":
            return
        line = raw.decode("utf-8", "replace")
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            if self._data is None:
                self._data = []
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry = int(value)


def events(chunks: Iterable[bytes]) -> Iterator[Event]:
    """Every event of a stream given as byte chunks (the trailing incomplete event discarded)."""
    d = Decoder()
    for chunk in chunks:
        yield from d.feed(chunk)


def messages(body: bytes | str) -> list[object]:
    """The JSON data of every event of a whole SSE body (an event whose data is not JSON is
    skipped; a priming event with empty data too)."""
    raw = body.encode() if isinstance(body, str) else body
    out: list[object] = []
    for e in events([raw]):
        if not e.data:
            continue
        try:
            out.append(e.json())
        except ValueError:
            continue
    return out


def encode(
    data: bytes, event: str | None = "message", id: str | None = None, retry: int | None = None
) -> bytes:
    """One event on the wire.  ``data`` must hold no line break (a JSON text serialised without
    indentation never does)."""
    if b"\n" in data or b"\r" in data:
        raise ValueError("SSE data must be one line")
    if event == "message":  # every message event, and a priming one: one concatenation
        if id is None:
            if retry is None:
                return b"event: message\ndata: " + data + b"\n\n"
        else:
            if "\n" in id or "\r" in id or "\0" in id:
                raise ValueError("an SSE id may not hold CR, LF or NUL")
            if retry is None:
                return b"event: message\nid: " + id.encode() + b"\ndata: " + data + b"\n\n"
            return (
                b"event: message\nid: "
                + id.encode()
                + b"\nretry: "
                + str(int(retry)).encode()
                + b"\ndata: "
                + data
                + b"\n\n"
            )
    parts = []
    if event is not None:
        parts.append(b"event: " + event.encode() + b"\n")
    if id is not None:
        if "\n" in id or "\r" in id or "\0" in id:
            raise ValueError("an SSE id may not hold CR, LF or NUL")
        parts.append(b"id: " + id.encode() + b"\n")
    if retry is not None:
        parts.append(b"retry: " + str(int(retry)).encode() + b"\n")
    parts.append(b"data: " + data + b"\n\n")
    return b"".join(parts)
