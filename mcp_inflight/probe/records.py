"""The probe's vocabulary (scenarios, defect classes) and the reading of recorded runs (pure).

A recorded run is plain JSON data, as :mod:`.recording` writes it: ``{"posts": [post, ...],
"cancels": [...], "aborts": [...]}``, each post ``{"name", "sender", "method", "id", "token",
"sent", "status", "head", "content_type", "body", "events": [{"t", "msg"}], "end", "how"}`` with
times in seconds from the start of the run.  The functions here read such records; they do no
I/O, so that the verdicts (:mod:`.judging`) can be tested without a server.
"""

from __future__ import annotations

import json
from typing import Any

CLASSES = (
    "misrouted_notification",
    "misrouted_server_request",
    "misrouted_response",
    "lost_response",
    "cancel_misdirected",
    "collateral_close",
    "id_type_confusion",
    "reuse_refused",
    "second_request_failed",
    "replay_misrouted",
    "refused_across_clients",
    "close_not_cancelled",
)

CLASS_HELP = {
    "misrouted_notification": "a progress notification for one request arrived on another request's POST stream",
    "misrouted_server_request": "a server-to-client request made for one request arrived on another's stream",
    "misrouted_response": "a POST received a response that belongs to another request",
    "lost_response": "a request that was neither refused nor cancelled never got its response",
    "cancel_misdirected": "a cancel missed the request it meant, or stopped another one",
    "collateral_close": "aborting one POST ended another request's stream",
    "id_type_confusion": 'ids 7 and "7" (distinct in JSON-RPC) were treated as one',
    "reuse_refused": "an id was refused again after its response had arrived",
    "second_request_failed": "a second server-to-client request in one call failed or never came",
    "replay_misrouted": "a stream resumed with Last-Event-ID carried another stream's events, "
    "or an event again",
    "refused_across_clients": "2026-07-28 (no session): a POST was refused because another "
    "client's POST in flight had the same id",
    "close_not_cancelled": "2026-07-28: closing a POST's stream did not cancel its request "
    "(it ran on, by the fixture contract's probe_outcome)",
    # 2025-11-25 tasks (:mod:`.task_scenarios`)
    "task_read_across_sessions": "another session learned a task's status (tasks/get)",
    "task_result_across_sessions": "another session took a task's result (tasks/result)",
    "task_cancel_across_sessions": "another session cancelled a task (tasks/cancel)",
    "task_listed_across_sessions": "another session's tasks/list showed a task",
    "task_id_guessable": "a task id equals or derives from the request id, or two "
    "consecutive task ids are sequential",
    "task_terminal_changed": "a task in a terminal status (completed, failed, cancelled) "
    "later showed another status",
}
#: 2025-11-25 tasks (:mod:`.task_scenarios`): who may read, take the result of, list or cancel
#: a task, whether its id can be guessed, whether a terminal status stays
TASK_CLASSES = (
    "task_read_across_sessions",
    "task_result_across_sessions",
    "task_cancel_across_sessions",
    "task_listed_across_sessions",
    "task_id_guessable",
    "task_terminal_changed",
)
TASK_SCENARIOS = ("task_isolation", "task_guessing", "task_ids", "task_terminal")

#: the scenarios of two requests under one id (a control with distinct ids, then the test)
COLLISIONS = (
    "duplicate_progress",
    "response_routing",
    "cancel_routing",
    "server_request_routing",
    "collateral_close",
    "id_types",
    "reuse",
)
#: what one call can do on its stream: two elicitations in one call (no ids collide: no
#: control), and the replay of a stream resumed with Last-Event-ID after a duplicate id
#: (a control with distinct ids, then the test)
STREAMS = ("two_elicitations", "replay_routing")
SCENARIOS = COLLISIONS + STREAMS
#: 2026-07-28 stateless HTTP (:mod:`.stateless`): POSTs of two clients under one id
STATELESS_SCENARIOS = (
    "stateless_isolation",
    "stateless_close",
    "stateless_close_early",
    "stateless_reuse",
)
MODERN = "2026-07-28"
OUTCOME_TOOL = "probe_outcome"
#: over stdio (:mod:`.stdio`): the collisions one channel can show, and a cancel between 7 and "7"
STDIO_SCENARIOS = ("duplicate_progress", "cancel_routing", "id_types", "id_types_cancel", "reuse")

PROTOCOL_VERSION = "2025-11-25"
INVALID_REQUEST = -32600
DEFAULT_TOOL = "slow"
DEFAULT_ARGS = {"label": "probe", "steps": 6, "delay": 0.25}
DEFAULT_ELICIT_TOOL = "ask"
DEFAULT_ELICIT_ARGS = {"label": "probe", "delay": 1.0}
#: who the probe says it is
CLIENT_INFO = {"name": "mcp-inflight-probe", "version": "0.1.0"}
#: the probe's 2025-11-25 ``initialize`` (id 0), over HTTP and stdio alike; it can answer
#: elicitation requests
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": CLIENT_INFO,
    },
}
DEFAULT_TWICE_TOOL = "ask_twice"  # a tool that elicits twice in one call
DEFAULT_TWICE_ARGS = {"label": "probe"}
MIN_DURATION = 1.0  # the slow tool must run at least this long (seconds)
MIN_ELICIT_AFTER = 0.6  # the eliciting tool must wait at least this long before it asks
ATTRIBUTE = 0.75  # a message of r cannot arrive earlier than this share of the tool's time
ACCEPT = "application/json, text/event-stream"


class CannotTest(Exception):
    """The target cannot be probed (exit 2); the message says why."""


def same_id(a: Any, b: Any) -> bool:
    """JSON-RPC id equality: ``7`` and ``"7"`` are different ids."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return type(a) is type(b) and a == b


def loose_id(a: Any, b: Any) -> bool:
    """Equal as text (what a server that stringifies ids would confuse)."""
    return a is not None and b is not None and str(a) == str(b)


def show(v: Any) -> str:
    return json.dumps(v)


def is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)


def is_server_request(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def progress_token(msg: Any) -> Any:
    if isinstance(msg, dict) and msg.get("method") == "notifications/progress":
        params = msg.get("params") or {}
        return params.get("progressToken")
    return None


def is_progress(msg: Any) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "notifications/progress"


def is_call_result(msg: Any) -> bool:
    """A tools/call result (``CallToolResult`` has ``content``), as opposed to e.g. ping's
    ``{}``."""
    return is_response(msg) and isinstance(msg.get("result"), dict) and "content" in msg["result"]


def is_success(msg: Any) -> bool:
    return is_call_result(msg) and not msg["result"].get("isError")


def error_of(msg: Any) -> Any:
    if is_response(msg) and isinstance(msg.get("error"), dict):
        return msg["error"]
    return None


def events(post: Any, pred: Any = None) -> Any:
    return [e for e in post.get("events", []) if pred is None or pred(e["msg"])]


def first_response(post: Any) -> Any:
    rs = events(post, is_response)
    return rs[0] if rs else None


def progress_of(run: Any, token: Any) -> Any:
    """Every progress event for ``token`` on any POST of the run: ``(t, post name)``."""
    out = []
    for p in run["posts"]:
        for e in events(p, is_progress):
            if same_id(progress_token(e["msg"]), token) or progress_token(e["msg"]) == token:
                out.append((e["t"], p["name"]))
    return sorted(out)


def post_named(run: Any, name: Any) -> Any:
    for p in run["posts"]:
        if p["name"] == name:
            return p
    raise KeyError(name)


def refusal_of(post: Any) -> Any:
    """How this POST was refused, or None: an HTTP error status, or a JSON-RPC Invalid Request
    error (or an error with ``id: null``) as its answer."""
    status = post.get("status")
    if status is not None and status >= 400:
        body = post.get("body")
        err = body.get("error") if isinstance(body, dict) else None
        return {
            "status": status,
            "code": err.get("code") if isinstance(err, dict) else None,
            "message": err.get("message") if isinstance(err, dict) else None,
            "id": body.get("id") if isinstance(body, dict) else None,
        }
    r = first_response(post)
    if r is not None:
        err = error_of(r["msg"])
        if err is not None and (err.get("code") == INVALID_REQUEST or r["msg"].get("id") is None):
            return {
                "status": status,
                "code": err.get("code"),
                "message": err.get("message"),
                "id": r["msg"].get("id"),
            }
    return None


def describe_refusal(ref: Any) -> str:
    if ref is None:
        return "not refused"
    parts = []
    if ref.get("status") is not None:
        parts.append(f"HTTP {ref['status']}")
    if ref.get("code") is not None:
        parts.append(f"JSON-RPC {ref['code']}")
    if ref.get("message"):
        parts.append(show(ref["message"]))
    return " ".join(parts) or "refused"


def ended(post: Any) -> str:
    how = post.get("how", "closed")
    end = post.get("end")
    at = f" at {end:.2f}s" if end is not None else ""
    return {
        "closed": f"its stream closed{at}",
        "timeout": f"it was still open when the probe gave up{at}",
        "aborted": f"the probe aborted it{at}",
        "error": f"the connection failed{at}",
    }.get(how, how + at)


def crossed_tokens(run: Any) -> Any:
    """Progress notifications on a POST's stream that carry another POST's token."""
    tokens = {p["name"]: p.get("token") for p in run["posts"] if p.get("token") is not None}
    out = []
    for p in run["posts"]:
        foreign: dict[Any, Any] = {}
        for e in events(p, is_progress):
            tok = progress_token(e["msg"])
            if tok == p.get("token"):
                continue
            owner = next((n for n, t in tokens.items() if t == tok), None)
            if owner is not None:
                foreign.setdefault(owner, []).append(e["t"])
        for owner, ts in foreign.items():
            out.append(
                f"{p['name']}'s POST (id {show(p['id'])}, token {show(p.get('token'))}) "
                f"carried {len(ts)} progress notification(s) for {owner}'s token "
                f"{show(tokens[owner])}, from {ts[0]:.2f}s"
            )
    return out


def attribute(items: Any, candidates: Any, min_after: Any, per_request: int = 1) -> Any:
    """Attribute messages to the requests that could have sent them, by time.

    ``items``: ``(t, stream name, msg)`` in any order; ``candidates``: posts (name, id, sent);
    ``min_after``: a request's message cannot arrive sooner than this after it was sent.  In time
    order, a message goes to its only possible sender; if more than one is possible, those that
    already sent ``per_request`` messages are dropped; what is left ambiguous maps to None.
    Returns a list of ``(t, stream name, msg, owner name or None)``.
    """
    used: dict[str, int] = {}
    out = []
    for t, stream, msg in sorted(items, key=lambda x: x[0]):
        mid = msg.get("id")
        poss = [
            c
            for c in candidates
            if (mid is None or loose_id(mid, c["id"]) or "method" in msg)
            and t >= c["sent"] + min_after
        ]
        if len(poss) > 1:
            poss = [c for c in poss if used.get(c["name"], 0) < per_request] or poss
        owner = poss[0]["name"] if len(poss) == 1 else None
        if owner is not None:
            used[owner] = used.get(owner, 0) + 1
        out.append((t, stream, msg, owner))
    return out


def duration_floor(cal: Any) -> float:
    return ATTRIBUTE * cal["duration"]


# The scenarios whose verdicts attribute a message to a request by its arrival time (see
# :func:`attribute`); the others judge by tokens, ids and result shapes alone.
TIME_ATTRIBUTED = ("duplicate_progress", "cancel_routing", "server_request_routing", "id_types")
