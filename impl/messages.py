"""The messages both adapters speak: the revisions, the JSON-RPC error codes and error replies,
JSON in and out (``jsonio``), and the decoding of one incoming message into a request,
notification, response or invalid one, its envelope checked with ``mcp_types``.

Re-exported by :mod:`.server`, which routes what this module decodes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pydantic
from mcp_types import jsonrpc as J
from mcp_types import methods as _methods

from . import jsonio as _jsonio
from .core import InvalidId, typed_id

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
REVISIONS = (LEGACY, MODERN)
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

PARSE_ERROR = J.PARSE_ERROR
INVALID_REQUEST = J.INVALID_REQUEST
METHOD_NOT_FOUND = J.METHOD_NOT_FOUND
INVALID_PARAMS = J.INVALID_PARAMS
INTERNAL_ERROR = J.INTERNAL_ERROR
UNSUPPORTED_PROTOCOL_VERSION = J.UNSUPPORTED_PROTOCOL_VERSION
HEADER_MISMATCH = J.HEADER_MISMATCH
MISSING_REQUIRED_CLIENT_CAPABILITY = J.MISSING_REQUIRED_CLIENT_CAPABILITY
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"


def error(code: int, message: str, data: Any = None) -> dict:
    e = {"code": code, "message": message}
    if data is not None:
        e["data"] = data
    return e


def error_reply(rid: Any, err: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": err}


#: Outgoing messages: bytes, or None when the message cannot be written (see ``impl.jsonio``).
encode_message = _jsonio.encode_message
#: JSON text of a message the adapter builds itself (errors, refusals): always writable.
dumps = _jsonio.dumps
#: Bounded-depth, strict UTF-8 JSON reading; raises only ``ValueError``.
loads = _jsonio.loads


# --- parsing -----------------------------------------------------------------------------------


class Kind(StrEnum):
    """What a decoded message is (a string enum: each compares equal to its name's text)."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    INVALID = "invalid"


class Incoming:
    """One decoded message: its :class:`Kind`, the message, its id, and (invalid) the error."""

    __slots__ = ("kind", "msg", "id", "error")

    def __init__(self, kind: Kind, msg: Any = None, rid: Any = None, err: Any = None) -> None:
        self.kind = kind
        self.msg = msg
        self.id = rid
        self.error = err


_ENVELOPE = {
    kind: model.__pydantic_validator__.validate_python
    for kind, model in (
        ("request", J.JSONRPCRequest),
        ("notification", J.JSONRPCNotification),
        ("response", J.JSONRPCResponse),
        ("error", J.JSONRPCError),
    )
}


_VALIDATE_REQUEST = _ENVELOPE["request"]


def _plain_request(msg: dict[str, Any], rid: Any) -> bool:
    """Whether ``msg`` is a request whose envelope ``JSONRPCRequest`` accepts, told without the
    validator for the common case: ``jsonrpc`` the string ``"2.0"``, the id a string or an
    integer (not a bool: the model's integer id is strict), ``method`` a string, ``params``
    absent, null or an object.  False means "ask the validator", which then has the last word
    (and the error to report); True only where the validator would accept.  A JSON object's
    keys are strings, so an object read from JSON text is a ``dict[str, Any]``."""
    jsonrpc = msg.get("jsonrpc")
    params = msg.get("params")
    t = type(rid)
    return (
        type(jsonrpc) is str
        and jsonrpc == "2.0"
        and (t is str or t is int)
        and type(msg.get("method")) is str
        and (params is None or type(params) is dict)
    )


def parse(raw: Any) -> Incoming:
    """Decode one JSON-RPC message (bytes or str) and check its envelope with ``mcp_types``."""
    try:
        msg = loads(raw)
    except ValueError:
        return Incoming(Kind.INVALID, err=error(PARSE_ERROR, "Parse error: the body is not JSON"))
    return classify(msg)


def classify(msg: dict[str, Any]) -> Incoming:
    """What ``msg``, read from JSON text, is; its envelope checked (a plain request's by
    :func:`_plain_request`, every other by the ``mcp_types`` validator)."""
    if isinstance(msg, list):
        return Incoming(
            Kind.INVALID,
            err=error(
                INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are not supported (one message per body)",
            ),
        )
    if not isinstance(msg, dict):
        return Incoming(
            Kind.INVALID,
            err=error(INVALID_REQUEST, "Invalid Request: a message must be a JSON object"),
        )
    if "method" in msg:
        kind = Kind.REQUEST if "id" in msg else Kind.NOTIFICATION
    elif "id" in msg and ("result" in msg or "error" in msg):
        kind = Kind.RESPONSE
    else:
        return Incoming(
            Kind.INVALID,
            err=error(
                INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response"
            ),
        )
    rid = msg.get("id")
    if kind is Kind.REQUEST:
        t = type(rid)
        if t is not str and t is not int:  # (the test of ``typed_id``, without making the key)
            try:
                typed_id(rid)
            except InvalidId as e:
                return Incoming(Kind.INVALID, err=e.error)
        if _plain_request(msg, rid):
            return Incoming(kind, msg, rid)
        validate = _VALIDATE_REQUEST
    else:
        validate = _ENVELOPE["error" if kind is Kind.RESPONSE and "error" in msg else kind.value]
    try:
        validate(msg)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "message"
        good_id = rid if kind is Kind.REQUEST else None
        return Incoming(
            Kind.INVALID,
            rid=good_id,
            err=error(INVALID_REQUEST, f"Invalid Request: {where}: {first['msg']}"),
        )
    return Incoming(kind, msg, rid)


#: one validator per (method, revision), made when first asked for (:func:`check_request`)
_REQUEST_VALIDATORS: dict[tuple[str, str], Any] = {}


def _request_validator(method: str, version: str) -> Any:
    key = (method, version)
    validate = _REQUEST_VALIDATORS.get(key)
    if validate is None:
        if version not in _methods.KNOWN_PROTOCOL_VERSIONS:
            raise ValueError(f"version must be a known protocol version, got {version!r}")
        model = _methods.CLIENT_REQUESTS[key]  # KeyError: no such method in this revision
        validate = _REQUEST_VALIDATORS[key] = model.__pydantic_validator__.validate_python
    return validate


def check_request(method: str, version: str, params: Any) -> None:
    """The request ``method`` with ``params`` checked against the MCP schema of ``version``:
    what ``mcp_types.methods.validate_client_request`` checks (``KeyError``: a method this
    revision does not have; ``ValueError``: an unknown revision; ``pydantic.ValidationError``:
    the schema rejects it), with the request model's validator looked up once per (method,
    revision) and called directly rather than through ``model_validate`` on every request."""
    validate = _REQUEST_VALIDATORS.get((method, version)) or _request_validator(method, version)
    body = {"jsonrpc": "2.0", "id": 0, "method": method}
    if params is not None:
        body["params"] = params
    validate(body, by_name=False)
