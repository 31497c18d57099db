"""JSON read and write for the adapters: bounded depth, strict UTF-8, never an exception past them.

Reading uses orjson (already a dependency of the project): it is a maintained, fuzzed parser
that rejects what a JSON-RPC peer must not send and the standard library lets through or
crashes on:

* nesting deeper than 1024 levels is an error (the standard library recurses in C and raises
  ``RecursionError`` near 1000 levels, or earlier on a deep stack);
* invalid UTF-8 and lone surrogate escapes (``"\\ud800"``) are errors (the standard library
  returns a ``str`` that cannot be encoded again, so writing the id or method back fails);
* ``NaN``, ``Infinity`` and numbers that overflow a double are errors (not JSON).

orjson reads an integer beyond 64 bits as a float, which would change a request id's JSON type
(``typed_id`` refuses floats).  Such integers are rare, so when the text holds a run of 19 or
more digits, the text orjson has already accepted (so its depth and strings are known good) is
read again by the standard library, which keeps every integer an ``int``.  The run is looked
for in the text with every digit made ``0`` and every other byte a space (one ``translate`` and
one substring search, both in C: a regular expression trying a match at every byte took 3 to 15
times as long, a third of a small request's reading).

Writing uses orjson too; what it cannot write (an integer beyond 64 bits, a lone surrogate in a
handler's string, nesting beyond its 254 levels) falls back to the standard library, with any
lone surrogate written as U+FFFD so the output is valid UTF-8.  A message that still cannot be
written (nesting deeper than the interpreter's recursion limit, an object JSON has no form for)
is, for a response, replaced by a -32603 error under the same id, and otherwise dropped
(:func:`encode_message` returns None), so a handler's result never leaves its request
unanswered nor stops an adapter.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

#: The deepest nesting a message may have (orjson's own limit).
MAX_DEPTH = 1024
INTERNAL_ERROR = -32603
#: every digit to ``0``, every other byte to a space: a run of 19 digits becomes ``_LONG_RUN``
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * 19


class Unserialisable(ValueError):
    """A value that has no JSON text (too deep, or of a type JSON lacks)."""


def loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text; raises ``ValueError`` (never anything else) when it is not JSON,
    is not UTF-8, holds a lone surrogate, or nests deeper than :data:`MAX_DEPTH`."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ValueError(str(e)) from None
    except (TypeError, RecursionError, MemoryError) as e:  # pragma: no cover - defensive
        raise ValueError(str(e)) from None
    if not isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw) if isinstance(raw, memoryview) else raw.encode("utf-8")
    if _LONG_RUN in raw.translate(_DIGITS):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as e:  # pragma: no cover - orjson accepted it
            raise ValueError(str(e)) from None
    return value


def dumps(value: Any) -> bytes:
    """The compact JSON text of ``value``; raises :class:`Unserialisable` when it has none."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise Unserialisable(f"{type(e).__name__}: {e}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: written as U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def encode_message(msg: dict) -> bytes | None:
    """``msg`` as JSON text; a response that cannot be written becomes a -32603 error under its
    id; any other message that cannot be written gives None (drop it)."""
    try:
        return orjson.dumps(msg)  # the common case, without a call through dumps
    except TypeError:
        pass
    try:
        return dumps(msg)
    except Unserialisable as e:
        if "method" not in msg and "id" in msg:
            rid = msg.get("id")
            try:
                return dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {
                            "code": INTERNAL_ERROR,
                            "message": f"Internal error: the response could not be "
                            f"written as JSON ({e})",
                        },
                    }
                )
            except Unserialisable:  # pragma: no cover - ids are strings or integers
                return None
        return None
