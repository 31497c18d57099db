"""``mcp-inflight probe URL``: a black-box check of a Streamable HTTP MCP server for in-flight
request id collisions.

The probe speaks raw HTTP and SSE (httpx) so that it controls every request id, including the
ones an ordinary client would never send: a second request under an id that is still in flight,
``7`` next to ``"7"``.  It opens 2025-era stateful sessions (``initialize`` with protocol version
2025-11-25, ``Mcp-Session-Id``), and only ever talks to the URL it is given.

Two layers, kept apart so that the verdicts can be tested without a server:

* **recording** (I/O): each scenario opens fresh sessions, sends its POSTs, cancels and aborts,
  answers every server-to-client request (elicitation is declined), and records what each POST's
  stream received, with arrival times, as plain JSON data (:class:`Post`, ``run`` dicts);
* **judging** (pure): :func:`judge` reads those records and the calibration of the tools and
  returns findings per defect class.  Misrouting is judged by progress tokens (every POST gets its
  own), request ids and the structure of results, never by the tool's text.  Where two requests
  share an id, a response or server-to-client request is attributed by time: it cannot belong to
  a request sent less than 3/4 of the tool's measured running time before it arrived.

Every scenario runs a control first, the same steps with distinct ids: a scenario whose control
fails says nothing about ids and is reported as not judged.

Exit status: 0 clean, 1 defects found, 2 could not test (no session, tool missing, the tool too
fast to overlap, no progress for the client's token, a control that failed) or a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field

CLASSES = (
    "misrouted_notification",
    "misrouted_server_request",
    "misrouted_response",
    "lost_response",
    "cancel_misdirected",
    "collateral_close",
    "id_type_confusion",
    "reuse_refused",
)

CLASS_HELP = {
    "misrouted_notification": "a progress notification for one request arrived on another request's POST stream",
    "misrouted_server_request": "a server-to-client request made for one request arrived on another's stream",
    "misrouted_response": "a POST received a response that belongs to another request",
    "lost_response": "a request that was neither refused nor cancelled never got its response",
    "cancel_misdirected": "a cancel missed the request it meant, or stopped another one",
    "collateral_close": "aborting one POST ended another request's stream",
    "id_type_confusion": "ids 7 and \"7\" (distinct in JSON-RPC) were treated as one",
    "reuse_refused": "an id was refused again after its response had arrived",
}

SCENARIOS = (
    "duplicate_progress",
    "response_routing",
    "cancel_routing",
    "server_request_routing",
    "collateral_close",
    "id_types",
    "reuse",
)

PROTOCOL_VERSION = "2025-11-25"
INVALID_REQUEST = -32600
DEFAULT_TOOL = "slow"
DEFAULT_ARGS = {"label": "probe", "steps": 6, "delay": 0.25}
DEFAULT_ELICIT_TOOL = "ask"
DEFAULT_ELICIT_ARGS = {"label": "probe", "delay": 1.0}
MIN_DURATION = 1.0      # the slow tool must run at least this long (seconds)
MIN_ELICIT_AFTER = 0.6  # the eliciting tool must wait at least this long before it asks
ATTRIBUTE = 0.75        # a message of r cannot arrive earlier than this share of the tool's time
ACCEPT = "application/json, text/event-stream"


class CannotTest(Exception):
    """The target cannot be probed (exit 2); the message says why."""


# =============================================================================================
# Reading records (pure)
# =============================================================================================

def same_id(a, b) -> bool:
    """JSON-RPC id equality: ``7`` and ``"7"`` are different ids."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return type(a) is type(b) and a == b


def loose_id(a, b) -> bool:
    """Equal as text (what a server that stringifies ids would confuse)."""
    return a is not None and b is not None and str(a) == str(b)


def show(v) -> str:
    return json.dumps(v)


def is_response(msg) -> bool:
    return isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)


def is_server_request(msg) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def progress_token(msg):
    if isinstance(msg, dict) and msg.get("method") == "notifications/progress":
        params = msg.get("params") or {}
        return params.get("progressToken")
    return None


def is_progress(msg) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "notifications/progress"


def is_call_result(msg) -> bool:
    """A tools/call result (``CallToolResult`` has ``content``), as opposed to e.g. ping's ``{}``."""
    return (is_response(msg) and isinstance(msg.get("result"), dict)
            and "content" in msg["result"])


def is_success(msg) -> bool:
    return is_call_result(msg) and not msg["result"].get("isError")


def error_of(msg):
    if is_response(msg) and isinstance(msg.get("error"), dict):
        return msg["error"]
    return None


def events(post, pred=None):
    return [e for e in post.get("events", []) if pred is None or pred(e["msg"])]


def first_response(post):
    rs = events(post, is_response)
    return rs[0] if rs else None


def progress_of(run, token):
    """Every progress event for ``token`` on any POST of the run: ``(t, post name)``."""
    out = []
    for p in run["posts"]:
        for e in events(p, is_progress):
            if same_id(progress_token(e["msg"]), token) or progress_token(e["msg"]) == token:
                out.append((e["t"], p["name"]))
    return sorted(out)


def post_named(run, name):
    for p in run["posts"]:
        if p["name"] == name:
            return p
    raise KeyError(name)


def refusal_of(post):
    """How this POST was refused, or None: an HTTP error status, or a JSON-RPC Invalid Request
    error (or an error with ``id: null``) as its answer."""
    status = post.get("status")
    if status is not None and status >= 400:
        body = post.get("body")
        err = body.get("error") if isinstance(body, dict) else None
        return {"status": status,
                "code": err.get("code") if isinstance(err, dict) else None,
                "message": err.get("message") if isinstance(err, dict) else None,
                "id": body.get("id") if isinstance(body, dict) else None}
    r = first_response(post)
    if r is not None:
        err = error_of(r["msg"])
        if err is not None and (err.get("code") == INVALID_REQUEST or r["msg"].get("id") is None):
            return {"status": status, "code": err.get("code"), "message": err.get("message"),
                    "id": r["msg"].get("id")}
    return None


def describe_refusal(ref) -> str:
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


def ended(post) -> str:
    how = post.get("how", "closed")
    end = post.get("end")
    at = f" at {end:.2f}s" if end is not None else ""
    return {"closed": f"its stream closed{at}", "timeout": f"it was still open when the probe gave up{at}",
            "aborted": f"the probe aborted it{at}", "error": f"the connection failed{at}"}.get(how, how + at)


def crossed_tokens(run):
    """Progress notifications on a POST's stream that carry another POST's token."""
    tokens = {p["name"]: p.get("token") for p in run["posts"] if p.get("token") is not None}
    out = []
    for p in run["posts"]:
        foreign = {}
        for e in events(p, is_progress):
            tok = progress_token(e["msg"])
            if tok == p.get("token"):
                continue
            owner = next((n for n, t in tokens.items() if t == tok), None)
            if owner is not None:
                foreign.setdefault(owner, []).append(e["t"])
        for owner, ts in foreign.items():
            out.append(f"{p['name']}'s POST (id {show(p['id'])}, token {show(p.get('token'))}) carried "
                       f"{len(ts)} progress notification(s) for {owner}'s token {show(tokens[owner])}, "
                       f"from {ts[0]:.2f}s")
    return out


def attribute(items, candidates, min_after, per_request=1):
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
        poss = [c for c in candidates
                if (mid is None or loose_id(mid, c["id"]) or "method" in msg)
                and t >= c["sent"] + min_after]
        if len(poss) > 1:
            poss = [c for c in poss if used.get(c["name"], 0) < per_request] or poss
        owner = poss[0]["name"] if len(poss) == 1 else None
        if owner is not None:
            used[owner] = used.get(owner, 0) + 1
        out.append((t, stream, msg, owner))
    return out


def duration_floor(cal) -> float:
    return ATTRIBUTE * cal["duration"]


# =============================================================================================
# Judging one scenario (pure)
# =============================================================================================

@dataclass
class Verdict:
    """What one scenario found.  ``status``: ``judged`` or ``not_judged`` (with ``note``)."""

    scenario: str
    status: str = "judged"
    note: str = ""
    findings: list = field(default_factory=list)   # (class, evidence)
    refusal: dict | None = None

    def add(self, cls, text):
        assert cls in CLASSES, cls
        self.findings.append((cls, f"{self.scenario}: {text}"))

    def to_json(self):
        return {"scenario": self.scenario, "status": self.status, "note": self.note,
                "findings": [{"class": c, "evidence": e} for c, e in self.findings],
                "refusal": self.refusal}


def _control_problems(run, cal, *, completes=(), tokens_complete=()):
    """Why a control run (distinct ids) did not behave; empty when it did."""
    problems = []
    problems.extend(crossed_tokens(run))
    for name in completes:
        p = post_named(run, name)
        ref = refusal_of(p)
        if ref is not None:
            problems.append(f"{name} (id {show(p['id'])}) was refused: {describe_refusal(ref)}")
            continue
        r = first_response(p)
        if r is None:
            problems.append(f"{name} (id {show(p['id'])}) got no response: {ended(p)}")
        elif error_of(r["msg"]) is not None:
            problems.append(f"{name} (id {show(p['id'])}) got error {show(error_of(r['msg']))}")
        elif not same_id(r["msg"].get("id"), p["id"]):
            problems.append(f"{name} (id {show(p['id'])}) got a response with id {show(r['msg'].get('id'))}")
    for name in tokens_complete:
        p = post_named(run, name)
        n = len(progress_of(run, p["token"]))
        if n < cal["steps"]:
            problems.append(f"{name} reported {n} of {cal['steps']} progress notifications")
    return problems


def _judge_routing(v: Verdict, run, cal, names, *, tool_names, type_scenario=False):
    """Tokens, responses and loss for posts ``names`` that should each get their own answer.

    ``tool_names``: the posts that call the slow tool (their responses are attributed by time).
    In the ``id_types`` scenario every problem is an ``id_type_confusion``.
    """
    def cls(c):
        return "id_type_confusion" if type_scenario else c

    for text in crossed_tokens(run):
        v.add(cls("misrouted_notification"), text)
    posts = [post_named(run, n) for n in names]
    admitted = [p for p in posts if refusal_of(p) is None]
    callers = [p for p in admitted if p["name"] in tool_names]
    items = [(e["t"], p["name"], e["msg"]) for p in admitted for e in events(p, is_response)
             if p["name"] in tool_names]
    owned = attribute(items, callers, duration_floor(cal))
    got_own = set()
    for t, stream, msg, owner in owned:
        if owner is None:
            owner = stream  # ambiguous: give the stream the benefit of the doubt
        if owner != stream:
            o = post_named(run, owner)
            s = post_named(run, stream)
            v.add(cls("misrouted_response"),
                  f"{stream}'s POST (id {show(s['id'])}, sent at {s['sent']:.2f}s) received at {t:.2f}s a "
                  f"response with id {show(msg.get('id'))} that can only be {owner}'s (sent at "
                  f"{o['sent']:.2f}s): the tool takes {cal['duration']:.2f}s, so {stream}'s own "
                  f"could not come before {s['sent'] + duration_floor(cal):.2f}s")
        else:
            got_own.add(stream)
    for p in admitted:
        r = first_response(p)
        if r is not None and not same_id(r["msg"].get("id"), p["id"]):
            v.add("id_type_confusion",
                  f"{p['name']}'s POST (id {show(p['id'])}) was answered with id {show(r['msg'].get('id'))}")
        if p["name"] in tool_names and p["name"] not in got_own:
            if r is None:
                v.add(cls("lost_response"), f"{p['name']} (id {show(p['id'])}) never got a response: {ended(p)}")
            else:
                v.add(cls("lost_response"),
                      f"{p['name']} (id {show(p['id'])}) never got its own response (its POST got another's)")


def judge_duplicate_progress(control, test, cal) -> Verdict:
    """A calls the slow tool; once it has reported half of its progress, B (the rogue) calls it
    under the same id.  Each stream must carry only its own token; A its own response; B its own
    response or a refusal."""
    v = Verdict("duplicate_progress")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A", "B"))
    if problems:
        return _not_judged(v, problems)
    why = _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    b = post_named(test, "B")
    v.refusal = refusal_of(b)
    _judge_routing(v, test, cal, ("A", "B"), tool_names=("A", "B"))
    return v


def judge_response_routing(control, test, cal) -> Verdict:
    """A calls the slow tool; during its progress B (the rogue) sends ``ping`` under A's id.  A's
    POST must get a tools/call result, B's a ping result (``{}``) or a refusal."""
    v = Verdict("response_routing")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A",))
    if problems:
        return _not_judged(v, problems)
    why = _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    for e in events(a, is_response):
        if not is_call_result(e["msg"]) and error_of(e["msg"]) is None:
            v.add("misrouted_response", f"A's tools/call POST (id {show(a['id'])}) received at {e['t']:.2f}s "
                  f"a result without content, the shape of B's ping result: {show(e['msg'])[:120]}")
    if not any(is_call_result(e["msg"]) for e in events(a, is_response)):
        v.add("lost_response", f"A (tools/call, id {show(a['id'])}) never got its tools/call result: {ended(a)}")
    if v.refusal is None:
        bresp = events(b, is_response)
        for e in bresp:
            if is_call_result(e["msg"]):
                v.add("misrouted_response", f"B's ping POST (id {show(b['id'])}) received at {e['t']:.2f}s A's "
                      f"tools/call result")
        if not bresp:
            v.add("lost_response", f"B (ping, id {show(b['id'])}) never got a response: {ended(b)}")
    return v


def _stopped(run, post, after, cal):
    """``post``'s request stopped at time ``after``: no progress of its token more than a grace
    period later, and no successful tools/call result attributed to it."""
    grace = max(0.5, 2.5 * cal["duration"] / max(1, cal["steps"]))
    late = [t for t, _ in progress_of(run, post["token"]) if t > after + grace]
    return late, grace


def judge_cancel_routing(control, test, cal) -> Verdict:
    """A calls the slow tool, B (the rogue) calls it under the same id, then the client cancels
    A's id.  A must stop; B (if admitted) must run to its result."""
    v = Verdict("cancel_routing")
    problems = _control_problems(control, cal, completes=("B",), tokens_complete=("B",))
    ca = post_named(control, "A")
    c_cancel = control["cancels"][0]["t"] if control.get("cancels") else None
    if c_cancel is None:
        problems.append("no cancel was sent")
    elif _finished_before(ca, c_cancel):
        problems.append(_too_late("the cancel", ca, c_cancel))
    else:
        late, _ = _stopped(control, ca, c_cancel, cal)
        if late or any(is_success(e["msg"]) for e in events(ca, is_response)):
            problems.append("the server did not stop A when it was cancelled under its own, distinct id")
    if problems:
        return _not_judged(v, problems)
    a, b = post_named(test, "A"), post_named(test, "B")
    if _finished_before(a, test["cancels"][0]["t"]):
        return _not_judged(v, [_too_late("the cancel", a, test["cancels"][0]["t"])], "test")
    why = _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    v.refusal = refusal_of(b)
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    tc = test["cancels"][0]["t"]
    late, grace = _stopped(test, a, tc, cal)
    if late:
        v.add("cancel_misdirected", f"the client cancelled id {show(a['id'])} (meaning A) at {tc:.2f}s, but A's "
              f"token {show(a['token'])} kept reporting progress {len(late)} more time(s), until {late[-1]:.2f}s")
    items = [(e["t"], p["name"], e["msg"]) for p in (a, b) for e in events(p, is_response)]
    cands = [p for p in (a, b) if refusal_of(p) is None]
    for t, stream, msg, owner in attribute(items, cands, duration_floor(cal)):
        if owner == "A" and is_success(msg):
            v.add("cancel_misdirected", f"A, cancelled at {tc:.2f}s, still got its tools/call result at "
                  f"{t:.2f}s (on {stream}'s POST)")
    if v.refusal is None:
        n_b = len(progress_of(test, b["token"]))
        b_success = any(is_success(e["msg"]) for e in events(b, is_response))
        errors = [error_of(e["msg"]) for e in events(b, is_response) if error_of(e["msg"])]
        if not b_success and n_b < cal["steps"]:
            how = (f"its POST ended with error {show(errors[0])}" if errors else ended(b))
            v.add("cancel_misdirected", f"B (id {show(b['id'])}, never cancelled) stopped at {n_b} of "
                  f"{cal['steps']} progress notifications after the cancel meant for A at {tc:.2f}s; {how}")
    return v


def judge_server_request_routing(control, test, cal) -> Verdict:
    """A calls the eliciting tool; B (the rogue) calls it under the same id before A asks.  Each
    elicitation must arrive on the stream of the request that made it (attributed by time)."""
    v = Verdict("server_request_routing")
    problems = _control_problems(control, cal, completes=("A", "B"))
    for name in ("A", "B"):
        p = post_named(control, name)
        n = len(events(p, is_server_request))
        if n != cal["elicits"]:
            problems.append(f"{name} got {n} server-to-client request(s) on its stream, "
                            f"expected {cal['elicits']}")
    if problems:
        return _not_judged(v, problems)
    why = _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    cands = [p for p in (a, b) if refusal_of(p) is None]
    items = [(e["t"], p["name"], e["msg"]) for p in (a, b) for e in events(p, is_server_request)]
    floor = ATTRIBUTE * cal["elicit_after"]
    for t, stream, msg, owner in attribute(items, cands, floor, per_request=cal["elicits"]):
        if owner is not None and owner != stream:
            o = post_named(test, owner)
            s = post_named(test, stream)
            v.add("misrouted_server_request",
                  f"{stream}'s POST (id {show(s['id'])}, sent at {s['sent']:.2f}s) received at {t:.2f}s "
                  f"{msg.get('method')} (server id {show(msg.get('id'))}) that can only be {owner}'s "
                  f"(sent at {o['sent']:.2f}s): the tool asks after {cal['elicit_after']:.2f}s")
    for p in cands:
        if first_response(p) is None:
            v.add("lost_response", f"{p['name']} ({cal['elicit_tool']}, id {show(p['id'])}) never got a "
                  f"response: {ended(p)}")
    return v


def judge_collateral_close(control, test, cal) -> Verdict:
    """A and B (the rogue, same id) call the slow tool; the probe aborts A's POST.  B's stream
    must go on to B's result."""
    v = Verdict("collateral_close")
    problems = _control_problems(control, cal, completes=("B",), tokens_complete=("B",))
    problems = ["after aborting A: " + p for p in problems]
    ca = post_named(control, "A")
    if control.get("aborts") and _finished_before(ca, control["aborts"][0]["t"]):
        problems.append(_too_late("the abort", ca, control["aborts"][0]["t"]))
    if problems:
        return _not_judged(v, problems)
    a, b = post_named(test, "A"), post_named(test, "B")
    if _finished_before(a, test["aborts"][0]["t"]):
        return _not_judged(v, [_too_late("the abort", a, test["aborts"][0]["t"])], "test")
    why = _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    v.refusal = refusal_of(b)
    if v.refusal is not None:
        return v
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    ta = test["aborts"][0]["t"]
    if not any(is_response(e["msg"]) for e in events(b, lambda m: True)):
        n_b = len(progress_of(test, b["token"]))
        v.add("collateral_close", f"the probe aborted A's POST (id {show(a['id'])}) at {ta:.2f}s; B's POST "
              f"(same id) then got no response: {ended(b)}, after {n_b} of {cal['steps']} of its "
              f"progress notifications")
    return v


def judge_id_types(control, test, cal) -> Verdict:
    """A calls the slow tool with id ``7``; during its progress B (the client, too) calls it with
    id ``"7"``: two different ids, both to be served, each on its own stream."""
    v = Verdict("id_types")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A", "B"))
    if problems:
        return _not_judged(v, problems)
    a, b = post_named(test, "A"), post_named(test, "B")   # (two ids: they need not overlap)
    ref = refusal_of(b)
    if ref is not None:
        v.add("id_type_confusion", f"B (id {show(b['id'])}) was refused while A (id {show(a['id'])}) was in "
              f"flight: {describe_refusal(ref)}")
        return v
    _judge_routing(v, test, cal, ("A", "B"), tool_names=("A", "B"), type_scenario=True)
    return v


def judge_reuse(control, test, cal) -> Verdict:
    """A calls the slow tool and gets its response; then B calls it under the same id."""
    v = Verdict("reuse")
    problems = _control_problems(control, cal, completes=("A", "B"))
    if problems:
        return _not_judged(v, problems)
    a, b = post_named(test, "A"), post_named(test, "B")
    if first_response(a) is None:
        v.add("lost_response", f"A (id {show(a['id'])}) never got a response: {ended(a)}")
        return v
    ref = refusal_of(b)
    if ref is not None:
        v.add("reuse_refused", f"B reused id {show(b['id'])} at {b['sent']:.2f}s, after A's response at "
              f"{first_response(a)['t']:.2f}s, and was refused: {describe_refusal(ref)}")
    elif first_response(b) is None:
        v.add("lost_response", f"B (id {show(b['id'])}, reused after A's response) never got a response: "
              f"{ended(b)}")
    return v


def _not_judged(v: Verdict, problems, run="control") -> Verdict:
    v.status = "not_judged"
    v.note = ("the control run with distinct ids failed: " if run == "control" else
              "the run with colliding ids could not be judged: ") + "; ".join(problems)
    return v


def _no_overlap(run, a="A", b="B"):
    """Why the colliding run says nothing, or None: the server answered B's POST (its status
    line) only after A had its response, so the two never overlapped and B was rightly admitted."""
    pa, pb = post_named(run, a), post_named(run, b)
    if refusal_of(pb) is not None:
        return None
    ra = first_response(pa)
    if pb.get("head") is None:
        return f"{b}'s POST got no HTTP answer: {ended(pb)}"
    if ra is not None and ra["t"] <= pb["head"]:
        return (f"{a} had its response at {ra['t']:.2f}s, before the server answered {b}'s POST at "
                f"{pb['head']:.2f}s: the two did not overlap (the server holds a duplicate until the "
                f"first is done, or the machine is overloaded: give --args for a longer run)")
    return None


def _finished_before(post, t) -> bool:
    """``post`` had its response before time ``t``."""
    r = first_response(post)
    return r is not None and r["t"] <= t


def _too_late(what, post, t) -> str:
    return (f"A (id {show(post['id'])}) had its response at {first_response(post)['t']:.2f}s, before "
            f"{what} at {t:.2f}s (is the machine overloaded? give --args for a longer run)")


JUDGES = {
    "duplicate_progress": judge_duplicate_progress,
    "response_routing": judge_response_routing,
    "cancel_routing": judge_cancel_routing,
    "server_request_routing": judge_server_request_routing,
    "collateral_close": judge_collateral_close,
    "id_types": judge_id_types,
    "reuse": judge_reuse,
}


def judge(scenario, control, test, cal) -> Verdict:
    """The verdict of one scenario from its recorded control and test runs (pure)."""
    return JUDGES[scenario](control, test, cal)


def summarize(target, verdicts, skipped=None, cal=None) -> dict:
    """The report: ``{"ok", "target", "findings", "refusal", ...}``.

    ``ok`` is true only when no class was found and every scenario was judged; a scenario that
    does not apply (``skipped``, e.g. no eliciting tool) is listed with its reason.
    """
    skipped = skipped or {}
    findings = []
    for cls in CLASSES:
        ev = [e for v in verdicts for c, e in v.findings if c == cls]
        findings.append({"class": cls, "found": bool(ev), "evidence": ev})
    refusal = None
    for v in verdicts:
        if v.refusal is not None:
            refusal = dict(v.refusal, scenario=v.scenario)
            break
    not_judged = {v.scenario: v.note for v in verdicts if v.status != "judged"}
    found = any(f["found"] for f in findings)
    status = "defects" if found else ("untested" if not_judged or not verdicts else "clean")
    return {"ok": status == "clean", "target": target, "findings": findings, "refusal": refusal,
            "status": status, "exit": {"clean": 0, "defects": 1, "untested": 2}[status],
            "scenarios": [v.to_json() for v in verdicts],
            "not_applicable": skipped, "calibration": cal}


def render_text(report) -> str:
    lines = [f"mcp-inflight probe {report['target']}"]
    cal = report.get("calibration") or {}
    if cal:
        lines.append(f"  tool {cal['tool']}: {cal['steps']} progress notifications in {cal['duration']:.2f}s"
                     + (f"; {cal['elicit_tool']}: {cal['elicits']} elicitation(s) after "
                        f"{cal['elicit_after']:.2f}s" if cal.get("elicits") else ""))
    lines.append("")
    lines.append("Scenarios (each after a control run with distinct ids)")
    for s in report["scenarios"]:
        mark = "not judged" if s["status"] != "judged" else (
            "defects" if s["findings"] else "clean")
        extra = ""
        if s["refusal"] is not None:
            extra = f"  duplicate refused: {describe_refusal(s['refusal'])}"
        lines.append(f"  {s['scenario']:<24} {mark}{extra}")
        if s["status"] != "judged":
            lines.append(f"      {s['note']}")
    for name, why in report.get("not_applicable", {}).items():
        lines.append(f"  {name:<24} n/a  {why}")
    lines.append("")
    lines.append("Defect classes")
    for f in report["findings"]:
        lines.append(f"  {f['class']:<26} {'FOUND' if f['found'] else 'not found'}")
        for e in f["evidence"]:
            lines.append(f"      - {e}")
    lines.append("")
    ref = report["refusal"]
    lines.append("Duplicate of an in-flight id: " + (
        f"refused with {describe_refusal(ref)}" if ref else "never refused (admitted, or not tested)"))
    msg = {"clean": "CLEAN: no defect class found, every scenario judged",
           "defects": "DEFECTS FOUND: " + ", ".join(f["class"] for f in report["findings"] if f["found"]),
           "untested": "COULD NOT TEST every scenario (see the notes above); no defect found in the rest"}
    lines.append(msg[report["status"]])
    return "\n".join(lines)


# =============================================================================================
# Recording (I/O)
# =============================================================================================

class Post:
    """One POST and what its response stream delivered, with arrival times."""

    def __init__(self, session, name, msg, sender, token):
        self.session = session
        self.name = name
        self.msg = msg
        self.sender = sender
        self.token = token
        self.sent = session.now()
        self.status = None
        self.head = None
        self.content_type = None
        self.body = None
        self.events: list[dict] = []
        self.end = None
        self.how = None
        self.client = None
        self._task = asyncio.ensure_future(self._run())

    async def _run(self):
        import httpx

        s = self.session
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), headers=s.extra_headers,
                                        verify=_tls())
        try:
            async with self.client.stream("POST", s.url, json=self.msg, headers=s.headers()) as r:
                self.status = r.status_code
                self.head = round(self.session.now(), 4)
                self.content_type = r.headers.get("content-type", "")
                if r.status_code >= 300 or "text/event-stream" not in self.content_type:
                    raw = await r.aread()
                    self.body = _parse_json(raw)
                    if isinstance(self.body, dict) and r.status_code < 300:
                        self._got(self.body)
                    elif isinstance(self.body, list):
                        for m in self.body:
                            self._got(m)
                    self._finish("closed")
                    return
                await _read_sse(r, self._got)
                self._finish("closed")
        except asyncio.CancelledError:
            self._finish(self.how or "aborted")
            raise
        except Exception as exc:  # noqa: BLE001  (a failing connection is a result to record)
            self.body = self.body or {"transport_error": repr(exc)}
            self._finish("error")
        finally:
            await self.client.aclose()

    def _got(self, m):
        self.events.append({"t": round(self.session.now(), 4), "msg": m})
        if is_server_request(m):
            self.session.answer(m)

    def _finish(self, how):
        if self.end is None:
            self.end = round(self.session.now(), 4)
            self.how = how

    @property
    def done(self):
        return self._task.done()

    async def abort(self):
        """Close this POST's connection, as a client that goes away does."""
        self.how = "aborted"
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
        self._finish("aborted")

    async def give_up(self):
        if not self.done:
            self.how = "timeout"
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._finish("timeout")

    def record(self):
        return {"name": self.name, "sender": self.sender, "method": self.msg.get("method"),
                "id": self.msg.get("id"), "token": self.token, "sent": round(self.sent, 4),
                "status": self.status, "head": self.head, "content_type": self.content_type,
                "body": self.body,
                "events": self.events, "end": self.end, "how": self.how}


_TLS = []


def _tls():
    """One TLS context for every connection of the probe (building one per client costs more
    CPU than the probe's own work; each POST has its own client so that it can be aborted)."""
    if not _TLS:
        import ssl
        _TLS.append(ssl.create_default_context())
    return _TLS[0]


def _parse_json(raw: bytes):
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return {"text": raw.decode("utf-8", "replace")[:200]}


async def _read_sse(response, on_message):
    """Read an SSE body: ``data:`` lines up to a blank line make one event; each event's data is
    one JSON-RPC message."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                text = "\n".join(data)
                data = []
                try:
                    on_message(json.loads(text))
                except ValueError:
                    on_message({"unparsable": text[:200]})
            continue
        if line.startswith(":"):
            continue
        fieldname, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if fieldname == "data":
            data.append(value)
    if data:
        try:
            on_message(json.loads("\n".join(data)))
        except ValueError:
            pass


class Session:
    """One 2025-era session on the target: initialize, then POSTs that carry its session id."""

    def __init__(self, url, extra_headers, t0):
        self.url = url
        self.extra_headers = extra_headers
        self.t0 = t0
        self.sid = None
        self.version = PROTOCOL_VERSION
        self.client = None
        self.posts: list[Post] = []
        self.answers: list[asyncio.Task] = []
        self.cancels: list[dict] = []
        self.aborts: list[dict] = []

    def now(self):
        return time.monotonic() - self.t0

    def headers(self):
        h = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.sid is not None:
            h["Mcp-Session-Id"] = self.sid
            h["MCP-Protocol-Version"] = self.version
        return h

    async def open(self):
        import httpx

        self.client = httpx.AsyncClient(timeout=10.0, headers=self.extra_headers, verify=_tls())
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": PROTOCOL_VERSION,
                           "capabilities": {"elicitation": {}},
                           "clientInfo": {"name": "mcp-inflight-probe", "version": "0.1.0"}}}
        try:
            async with self.client.stream("POST", self.url, json=init, headers=self.headers()) as r:
                status = r.status_code
                ctype = r.headers.get("content-type", "")
                sid = r.headers.get("mcp-session-id")
                msgs = []
                if "text/event-stream" in ctype:
                    async def until_response():
                        await _read_sse(r, msgs.append)
                    await asyncio.wait_for(until_response(), 10)
                else:
                    msgs.append(_parse_json(await r.aread()))
        except (httpx.HTTPError, asyncio.TimeoutError, OSError) as exc:
            raise CannotTest(f"no session: initialize failed to {self.url}: {exc!r}") from None
        if status != 200:
            raise CannotTest(f"no session: initialize got HTTP {status}")
        result = next((m.get("result") for m in msgs if isinstance(m, dict) and "result" in m), None)
        if not isinstance(result, dict):
            raise CannotTest(f"no session: initialize got no result ({str(msgs)[:200]})")
        if not sid:
            raise CannotTest("no session: initialize returned no Mcp-Session-Id (a stateless server; "
                             "ids only collide within a session)")
        self.sid = sid
        self.version = result.get("protocolVersion") or PROTOCOL_VERSION
        r = await self.client.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                   headers=self.headers())
        if r.status_code >= 300:
            raise CannotTest(f"notifications/initialized got HTTP {r.status_code}")
        return self

    async def request(self, msg, timeout=10.0):
        """A short request: its answer (first response message)."""
        p = self.post("probe", msg, "client", None)
        end = time.monotonic() + timeout
        while not p.done and time.monotonic() < end and first_response(p.record()) is None:
            await asyncio.sleep(0.01)
        await p.give_up()
        self.posts.remove(p)
        r = first_response(p.record())
        if r is None:
            raise CannotTest(f"{msg['method']} got no answer (HTTP {p.status}, {str(p.body)[:200]})")
        return r["msg"]

    def answers_pending(self):
        return any(not a.done() for a in self.answers)

    def post(self, name, msg, sender, token) -> Post:
        p = Post(self, name, msg, sender, token)
        self.posts.append(p)
        return p

    def answer(self, msg):
        """Answer a server-to-client request: elicitation declined, roots empty, ping."""
        method = msg.get("method")
        if method == "elicitation/create":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "decline"}}
        elif method == "roots/list":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}
        elif method == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": f"the probe does not answer {method}"}}

        async def send():
            try:
                await self.client.post(self.url, json=reply, headers=self.headers())
            except Exception:  # noqa: BLE001  (a lost answer shows up in the records)
                pass
        self.answers.append(asyncio.ensure_future(send()))

    async def cancel(self, rid, means):
        self.cancels.append({"t": round(self.now(), 4), "id": rid, "means": means})
        await self.client.post(self.url, headers=self.headers(), json={
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "mcp-inflight probe"}})

    async def abort(self, post: Post):
        self.aborts.append({"t": round(self.now(), 4), "post": post.name})
        await post.abort()

    async def close(self):
        for p in self.posts:
            await p.give_up()
        for a in self.answers:
            if not a.done():
                a.cancel()
        try:
            await self.client.delete(self.url, headers=self.headers())
        except Exception:  # noqa: BLE001
            pass
        await self.client.aclose()

    def record(self, scenario, variant):
        return {"scenario": scenario, "variant": variant,
                "posts": [p.record() for p in self.posts],
                "cancels": self.cancels, "aborts": self.aborts}


async def until(pred, deadline):
    """Wait until ``pred()`` or the monotonic ``deadline``; returns whether ``pred()`` held."""
    while not pred():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


# =============================================================================================
# Scenarios (I/O): each records one run, control (distinct ids) or test (colliding ids)
# =============================================================================================

@dataclass
class Target:
    url: str
    tool: str
    args: dict
    elicit_tool: str | None
    elicit_args: dict
    headers: dict

    def call(self, rid, token, tool=None, args=None):
        params = {"name": tool or self.tool, "arguments": self.args if args is None else args}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    def ask(self, rid, token):
        return self.call(rid, token, self.elicit_tool, self.elicit_args)


def _own_progress(post: Post):
    return sum(1 for e in post.events if progress_token(e["msg"]) == post.token)


def _token_seen(session: Session, token):
    return sum(1 for p in session.posts for e in p.events if progress_token(e["msg"]) == token)


def _answered(post: Post):
    return any(is_response(e["msg"]) for e in post.events)


async def _finish(s: Session, cal, posts=None, extra=0.0):
    """Wait until every POST has ended, at most 2.5 times the tool's running time plus 3 s (what
    has not come by then counts as lost)."""
    posts = s.posts if posts is None else posts
    wait = 2.5 * cal["duration"] + 3.0 + extra
    await until(lambda: all(p.done for p in posts), time.monotonic() + wait)


async def _session(t: Target, t0):
    s = Session(t.url, t.headers, t0)
    await s.open()
    return s


def _tok(scenario, variant, name):
    return f"{scenario}:{variant}:{name}"


async def scenario_duplicate_progress(t: Target, cal, variant, t0):
    name, sender = "duplicate_progress", "rogue"
    s = await _session(t, t0)
    try:
        ida, idb = 11, (11 if variant == "test" else 12)
        a = s.post("A", t.call(ida, _tok(name, variant, "A")), "client", _tok(name, variant, "A"))
        half = max(1, cal["steps"] // 2)
        await until(lambda: _own_progress(a) >= half or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        s.post("B", t.call(idb, _tok(name, variant, "B")), sender, _tok(name, variant, "B"))
        await _finish(s, cal)
    finally:
        await s.close()
    return s.record(name, variant)


async def scenario_id_types(t: Target, cal, variant, t0):
    ids = (7, "7") if variant == "test" else (8, "9")
    s = await _session(t, t0)
    try:
        a = s.post("A", t.call(ids[0], _tok("id_types", variant, "A")), "client", _tok("id_types", variant, "A"))
        half = max(1, cal["steps"] // 2)
        await until(lambda: _own_progress(a) >= half or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        s.post("B", t.call(ids[1], _tok("id_types", variant, "B")), "client", _tok("id_types", variant, "B"))
        await _finish(s, cal)
    finally:
        await s.close()
    return s.record("id_types", variant)


async def scenario_response_routing(t: Target, cal, variant, t0):
    s = await _session(t, t0)
    try:
        ida, idb = 21, (21 if variant == "test" else 22)
        a = s.post("A", t.call(ida, _tok("response_routing", variant, "A")), "client",
                   _tok("response_routing", variant, "A"))
        await until(lambda: _own_progress(a) >= 1 or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        s.post("B", {"jsonrpc": "2.0", "id": idb, "method": "ping"}, "rogue", None)
        await _finish(s, cal)
    finally:
        await s.close()
    return s.record("response_routing", variant)


async def scenario_cancel_routing(t: Target, cal, variant, t0):
    s = await _session(t, t0)
    try:
        ida, idb = 31, (31 if variant == "test" else 32)
        a = s.post("A", t.call(ida, _tok("cancel_routing", variant, "A")), "client",
                   _tok("cancel_routing", variant, "A"))
        await until(lambda: _own_progress(a) >= 1 or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        b = s.post("B", t.call(idb, _tok("cancel_routing", variant, "B")), "rogue",
                   _tok("cancel_routing", variant, "B"))
        half = max(1, cal["steps"] // 2)   # cancel once B runs, and while A is still early on
        await until(lambda: _token_seen(s, b.token) >= 1 or b.done or _own_progress(a) >= half,
                    time.monotonic() + cal["duration"] + 1)
        await s.cancel(ida, "A")
        await _finish(s, cal, posts=[b])
        await until(lambda: a.done, time.monotonic() + 1.0)
    finally:
        await s.close()
    return s.record("cancel_routing", variant)


async def scenario_server_request_routing(t: Target, cal, variant, t0):
    s = await _session(t, t0)
    try:
        ida, idb = 51, (51 if variant == "test" else 52)
        s.post("A", t.ask(ida, _tok("server_request_routing", variant, "A")), "client",
               _tok("server_request_routing", variant, "A"))
        await asyncio.sleep(0.5 * cal["elicit_after"])
        s.post("B", t.ask(idb, _tok("server_request_routing", variant, "B")), "rogue",
               _tok("server_request_routing", variant, "B"))
        await _finish(s, {"duration": cal["elicit_duration"]})
    finally:
        await s.close()
    return s.record("server_request_routing", variant)


async def scenario_collateral_close(t: Target, cal, variant, t0):
    s = await _session(t, t0)
    try:
        ida, idb = 61, (61 if variant == "test" else 62)
        a = s.post("A", t.call(ida, _tok("collateral_close", variant, "A")), "client",
                   _tok("collateral_close", variant, "A"))
        await until(lambda: _own_progress(a) >= 1 or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        b = s.post("B", t.call(idb, _tok("collateral_close", variant, "B")), "rogue",
                   _tok("collateral_close", variant, "B"))
        half = max(1, cal["steps"] // 2)
        await until(lambda: _token_seen(s, b.token) >= 1 or b.done or _own_progress(a) >= half,
                    time.monotonic() + cal["duration"] + 1)
        await s.abort(a)
        await _finish(s, cal, posts=[b])
    finally:
        await s.close()
    return s.record("collateral_close", variant)


async def scenario_reuse(t: Target, cal, variant, t0):
    s = await _session(t, t0)
    try:
        ida, idb = 71, (71 if variant == "test" else 72)
        a = s.post("A", t.call(ida, _tok("reuse", variant, "A")), "client", _tok("reuse", variant, "A"))
        await until(lambda: _answered(a) or a.done, time.monotonic() + cal["duration"] * 2 + 2)
        s.post("B", t.call(idb, _tok("reuse", variant, "B")), "client", _tok("reuse", variant, "B"))
        await _finish(s, cal)
    finally:
        await s.close()
    return s.record("reuse", variant)


RUNNERS = {
    "duplicate_progress": scenario_duplicate_progress,
    "response_routing": scenario_response_routing,
    "cancel_routing": scenario_cancel_routing,
    "server_request_routing": scenario_server_request_routing,
    "collateral_close": scenario_collateral_close,
    "id_types": scenario_id_types,
    "reuse": scenario_reuse,
}


async def calibrate(t: Target) -> tuple[dict, dict]:
    """Check the target and measure its tools: how many progress notifications one call of the
    slow tool reports and how long it runs; when the eliciting tool asks.  Returns
    ``(calibration, not_applicable)``; raises :class:`CannotTest`."""
    t0 = time.monotonic()
    s = await _session(t, t0)
    skipped = {}
    try:
        listing = await s.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tools = [x.get("name") for x in (listing.get("result") or {}).get("tools", [])]
        if t.tool not in tools:
            raise CannotTest(f"tool missing: the target has no tool {t.tool!r} (it has: "
                             f"{', '.join(map(str, tools)) or 'none'}); pick one with --tool and --args")
        p = s.post("cal", t.call(2, "calibrate"), "client", "calibrate")
        await until(lambda: p.done and not s.answers_pending(), time.monotonic() + 30)
        await p.give_up()
        rec = p.record()
        if p.status != 200:
            raise CannotTest(f"tools/call {t.tool} got HTTP {p.status}: {str(p.body)[:200]}")
        if "text/event-stream" not in (p.content_type or ""):
            raise CannotTest("the target answered tools/call with a JSON body, not an SSE stream: it sends "
                             "no progress, so no routing can be observed")
        r = first_response(rec)
        if r is None:
            raise CannotTest(f"tools/call {t.tool} got no response within 30s")
        if not is_success(r["msg"]):
            raise CannotTest(f"tools/call {t.tool} {show(t.args)} failed: {show(r['msg'])[:300]}")
        prog = [e for e in events(rec, is_progress) if progress_token(e["msg"]) == "calibrate"]
        duration = r["t"] - rec["sent"]
        if not prog:
            raise CannotTest(f"tool {t.tool!r} reported no progress for the client's progress token; "
                             f"the probe needs a tool that does (give one with --tool and --args)")
        if len(prog) < 2:
            raise CannotTest(f"tool {t.tool!r} reported progress only once; the probe needs at least two "
                             f"steps (give --args with more steps)")
        if duration < MIN_DURATION:
            raise CannotTest(f"too fast to overlap: {t.tool} {show(t.args)} answered in {duration:.2f}s; "
                             f"give --args that make it run at least {MIN_DURATION:.0f} second")
        cal = {"tool": t.tool, "args": t.args, "steps": len(prog), "duration": round(duration, 4),
               "elicit_tool": None, "elicits": 0, "elicit_after": None, "elicit_duration": None}
        if t.elicit_tool is None:
            skipped["server_request_routing"] = "no eliciting tool given"
        elif t.elicit_tool not in tools:
            skipped["server_request_routing"] = f"the target has no tool {t.elicit_tool!r} that elicits"
        else:
            q = s.post("cal-ask", t.ask(3, "calibrate-ask"), "client", "calibrate-ask")
            await until(lambda: q.done, time.monotonic() + 30)
            await q.give_up()
            rq = q.record()
            reqs = events(rq, is_server_request)
            r = first_response(rq)
            if not reqs or r is None:
                skipped["server_request_routing"] = (
                    f"tool {t.elicit_tool!r} {show(t.elicit_args)} sent no server-to-client request on its "
                    f"stream" if not reqs else f"tool {t.elicit_tool!r} got no response")
            else:
                after = reqs[0]["t"] - rq["sent"]
                if after < MIN_ELICIT_AFTER:
                    skipped["server_request_routing"] = (
                        f"tool {t.elicit_tool!r} asks {after:.2f}s after the call, too soon to overlap; "
                        f"give --elicit-args that make it wait at least {MIN_ELICIT_AFTER}s")
                else:
                    cal.update(elicit_tool=t.elicit_tool, elicits=len(reqs), elicit_after=round(after, 4),
                               elicit_duration=round(r["t"] - rq["sent"], 4))
    finally:
        await s.close()
    return cal, skipped


async def probe(t: Target, scenarios=SCENARIOS, progress=None):
    """Calibrate, then run every scenario (control, then test) concurrently; returns the report."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    say(f"calibrating {t.tool} {show(t.args)} on {t.url}")
    cal, skipped = await calibrate(t)
    say(f"  {cal['steps']} progress notifications in {cal['duration']:.2f}s"
        + (f"; {cal['elicit_tool']} asks after {cal['elicit_after']:.2f}s" if cal["elicits"] else ""))
    todo = [n for n in scenarios if n not in skipped]

    async def one(name):
        t0 = time.monotonic()
        control = await RUNNERS[name](t, cal, "control", t0)
        t0 = time.monotonic()
        test = await RUNNERS[name](t, cal, "test", t0)
        v = judge(name, control, test, cal)
        say(f"  {name}: " + (v.status if v.status != "judged" else
                             ("defects" if v.findings else "clean")))
        return v, {"control": control, "test": test}

    results = await asyncio.gather(*(one(n) for n in todo))
    report = summarize(t.url, [v for v, _ in results], {k: v for k, v in skipped.items() if k in scenarios},
                       cal)
    report["seconds"] = round(time.monotonic() - started, 2)
    report["records"] = {v.scenario: rec for v, rec in results}
    return report


# =============================================================================================
# Command line
# =============================================================================================

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _json_object(text):
    try:
        v = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return v


def _header(text):
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _url(text):
    if not (text.startswith("http://") or text.startswith("https://")):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text


def build_parser():
    classes = "\n".join(f"  {c:<26} {CLASS_HELP[c]}" for c in CLASSES)
    p = _Parser(
        prog="mcp-inflight probe",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Probe a Streamable HTTP MCP server (2025-era protocol, stateful session) for what\n"
                    "it does when a request arrives under a JSON-RPC id that is still in flight.\n\n"
                    "Each scenario runs first with distinct ids (the control), then with colliding ids:\n"
                    "  " + ", ".join(SCENARIOS[:4]) + ",\n  " + ", ".join(SCENARIOS[4:]) + ".\n"
                    "Misrouting is judged by progress tokens, request ids and result shapes, never by\n"
                    "the tool's text. Every POST gets its own progress token. Only URL is contacted;\n"
                    "a whole probe takes about 10-20 s against a healthy server.",
        epilog="defect classes:\n" + classes + "\n\nexit status: 0 clean, 1 defects found, 2 could not "
               "test (no session, tool missing,\ntoo fast to overlap, a control failed) or usage error. "
               "The defaults fit `mcp-inflight serve`.")
    p.add_argument("url", type=_url, metavar="URL", help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    p.add_argument("--tool", default=DEFAULT_TOOL, metavar="NAME",
                   help=f"a tool that reports progress for the client's progress token and runs at least "
                        f"a second (default: {DEFAULT_TOOL})")
    p.add_argument("--args", type=_json_object, default=DEFAULT_ARGS, metavar="JSON",
                   help=f"its arguments (default: {json.dumps(DEFAULT_ARGS)})")
    p.add_argument("--elicit-tool", default=DEFAULT_ELICIT_TOOL, metavar="NAME",
                   help=f"a tool that sends elicitation/create after a delay (default: {DEFAULT_ELICIT_TOOL}; "
                        f"'' to skip that scenario)")
    p.add_argument("--elicit-args", type=_json_object, default=DEFAULT_ELICIT_ARGS, metavar="JSON",
                   help=f"its arguments (default: {json.dumps(DEFAULT_ELICIT_ARGS)})")
    p.add_argument("--header", type=_header, action="append", default=[], metavar="'NAME: VALUE'",
                   help="an extra HTTP header on every request (e.g. Authorization); repeatable")
    p.add_argument("--only", action="append", choices=SCENARIOS, metavar="SCENARIO",
                   help="run only this scenario (repeatable): " + ", ".join(SCENARIOS))
    p.add_argument("--json", action="store_true",
                   help='print one JSON object: {"ok", "target", "findings": [{"class", "found", '
                        '"evidence"}], "refusal", ...}')
    p.add_argument("--records", metavar="PATH", help="write every recorded stream (JSON) to PATH")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        import httpx  # noqa: F401
    except ImportError:
        sys.stderr.write("mcp-inflight probe: needs the httpx package (pip install httpx)\n")
        return 2
    t = Target(url=args.url, tool=args.tool, args=args.args,
               elicit_tool=args.elicit_tool or None, elicit_args=args.elicit_args,
               headers=dict(args.header))

    def say(text):
        if not args.quiet:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    try:
        report = asyncio.run(probe(t, tuple(args.only or SCENARIOS), say))
    except CannotTest as exc:
        report = {"ok": False, "target": args.url,
                  "findings": [{"class": c, "found": False, "evidence": []} for c in CLASSES],
                  "refusal": None, "status": "untested", "exit": 2, "reason": str(exc)}
        if args.json:
            sys.stdout.write(json.dumps(report, indent=1) + "\n")
        else:
            sys.stdout.write(f"mcp-inflight probe {args.url}\nCOULD NOT TEST: {exc}\n")
        return 2
    records = report.pop("records")
    if args.records:
        with open(args.records, "w") as fh:
            json.dump({"calibration": report["calibration"], "records": records}, fh, indent=1)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        sys.stdout.write(render_text(report) + "\n")
    return report["exit"]


def main() -> int:
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
