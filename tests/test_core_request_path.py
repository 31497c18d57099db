"""The request path's shortcuts read the same verdicts as the checks they stand for.

Two checks on every POST are written for speed and held here to their references:

* ``jsonio.loads`` looks for a run of 19 or more digits (an integer orjson would read as a float)
  with one ``translate`` and a substring search instead of a regular expression: the same
  verdict on any text;
* ``messages.classify`` accepts a plain request's envelope without the ``mcp_types`` validator:
  whatever it accepts so, the validator accepts, and every message gets the verdict it gets
  with the validator alone.

Each property is also run against a deliberately wrong shortcut, which it must catch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_inflight.impl import jsonio, messages
from mcp_inflight.impl.messages import _VALIDATE_REQUEST, Kind, _plain_request, classify, parse

LONG_INT = re.compile(rb"[0-9]{19}")

#: texts mostly of digits, with the other bytes that sit next to numbers in JSON
digit_texts = st.lists(
    st.sampled_from([b"0", b"1", b"9", b" ", b",", b"-", b".", b"e", b"\xff", b"a", b"/", b":"]),
    max_size=60,
).map(b"".join) | st.binary(max_size=60)


def _scan(raw: bytes) -> bool:
    return jsonio._LONG_RUN in raw.translate(jsonio._DIGITS)


@given(digit_texts, st.integers(min_value=0, max_value=40))
@settings(max_examples=400, deadline=None)
def test_long_digit_scan_is_the_regular_expressions(text: bytes, run: int) -> None:
    raw = text + b"1" * run + text
    assert _scan(raw) == (LONG_INT.search(raw) is not None)
    assert _scan(bytearray(raw)) == (LONG_INT.search(raw) is not None)


def test_long_digit_scan_edges_and_a_wrong_scan_is_caught() -> None:
    assert _scan(b"1" * 19) and not _scan(b"1" * 18)
    assert not _scan(b"1" * 18 + b"x" + b"1" * 18)
    # the byte just past '9' and just before '0' are not digits
    assert not _scan(b":" * 19) and not _scan(b"/" * 19)
    wrong = bytes(48 if 48 <= b <= 58 else 32 for b in range(256))  # ':' counted as a digit
    assert (b"0" * 19 in (b"1" * 18 + b":").translate(wrong)) != (
        LONG_INT.search(b"1" * 18 + b":") is not None
    )
    # the reading the scan guards: an integer beyond 64 bits stays an int, its JSON type kept
    big = jsonio.loads(b'{"jsonrpc":"2.0","id":123456789012345678901,"method":"ping"}')
    assert type(big["id"]) is int and big["id"] == 123456789012345678901
    assert type(jsonio.loads(bytearray(b"[12345678901234567890123]"))[0]) is int
    assert type(jsonio.loads('"12345678901234567890123"')) is str


# --- the envelope of a request ---------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
field_values = (
    st.sampled_from(["2.0", "2.0 ", "2", "1.0", "", "tools/call", "ping"])
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False)
    | st.just({})
    | st.just([])
    | json_values
)


def _often(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` half the time, any of :data:`field_values` otherwise (a plain ``|`` would be
    flattened with the many branches of ``field_values`` and draw ``good`` seldom)."""
    return st.booleans().flatmap(lambda ok: good if ok else field_values)


#: messages near a valid request (each field of the right kind half the time, else a bool, a
#: float, a list, anything), and messages of any of the envelope's keys
near_requests = st.fixed_dictionaries(
    {
        "jsonrpc": _often(st.just("2.0")),
        "id": _often(st.text(max_size=3) | st.integers(min_value=-(2**70), max_value=2**70)),
        "method": _often(st.sampled_from(["tools/call", "ping", ""])),
    },
    optional={
        "params": _often(st.dictionaries(st.text(max_size=3), json_values, max_size=2)),
        "result": field_values,
        "extra": field_values,
    },
)
messages_ = near_requests | st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "extra"]),
    field_values,
    max_size=6,
)


def _validator_accepts(msg: dict[str, Any]) -> bool:
    try:
        _VALIDATE_REQUEST(msg)
    except messages.pydantic.ValidationError:
        return False
    return True


def _classify_by_validator(msg: dict[str, Any]) -> tuple[Kind, Any]:
    """``classify`` with the shortcut off: every envelope checked by the validator."""
    original = messages._plain_request
    messages._plain_request = lambda m, r: False  # type: ignore[assignment]
    try:
        inc = classify(msg)
    finally:
        messages._plain_request = original
    return inc.kind, inc.error


def _shortcut_sound(shortcut: Callable[[dict[str, Any], Any], bool], msg: dict[str, Any]) -> bool:
    return not shortcut(msg, msg.get("id")) or _validator_accepts(msg)


@given(messages_)
@settings(max_examples=600, deadline=None)
def test_plain_request_only_where_the_validator_accepts(msg: dict[str, Any]) -> None:
    # a message as it reaches classify: read from JSON text (so its object keys are strings)
    msg = json.loads(json.dumps(msg))
    assert _shortcut_sound(_plain_request, msg)
    inc = classify(msg)
    kind, err = _classify_by_validator(msg)
    assert (inc.kind, inc.error) == (kind, err)


def test_plain_request_cases_and_a_wrong_shortcut_is_caught() -> None:
    good = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}}
    assert _plain_request(good, 7) and _validator_accepts(good)
    for bad in (
        {**good, "id": True},  # a bool is not an integer id (strict)
        {**good, "jsonrpc": "2.0 "},
        {**good, "jsonrpc": 2.0},
        {**good, "method": 3},
        {**good, "params": []},
        {**good, "params": "x"},
    ):
        assert not _plain_request(bad, bad["id"])
        assert parse(json.dumps(bad)).kind is Kind.INVALID
    no_params = {"jsonrpc": "2.0", "id": "a", "method": "ping"}
    assert _plain_request(no_params, "a") and parse(json.dumps(no_params)).kind is Kind.REQUEST

    def wrong(m: dict[str, Any], rid: Any) -> bool:  # forgets that bool is not an integer id
        return m.get("jsonrpc") == "2.0" and isinstance(rid, (str, int))

    assert not _shortcut_sound(wrong, {**good, "id": True})


@pytest.mark.parametrize("rid", ["x", 0, -5, 2**64, 2**100])
def test_plain_requests_are_requests(rid: Any) -> None:
    raw = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {}})
    inc = parse(raw)
    assert inc.kind is Kind.REQUEST and inc.id == rid and type(inc.id) is type(rid)
