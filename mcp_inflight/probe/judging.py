"""Judging one scenario (pure): its verdict from the recorded control and test runs.

Misrouting is judged by progress tokens (every POST gets its own), request ids and the structure
of results, never by the tool's text.  Where two requests share an id, a response or
server-to-client request is attributed by time (:func:`.records.attribute`).  A scenario whose
control (the same steps with distinct ids) failed, or whose two requests never overlapped at the
server, is not judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .records import (
    ATTRIBUTE,
    CLASSES,
    attribute,
    crossed_tokens,
    describe_refusal,
    duration_floor,
    ended,
    error_of,
    events,
    first_response,
    is_call_result,
    is_response,
    is_server_request,
    is_success,
    post_named,
    progress_of,
    progress_token,
    refusal_of,
    same_id,
    show,
)


@dataclass
class Verdict:
    """What one scenario found.  ``status``: ``judged`` or ``not_judged`` (with ``note``)."""

    scenario: str
    status: str = "judged"
    note: str = ""
    findings: list = field(default_factory=list)  # (class, evidence)
    refusal: dict | None = None

    def add(self, cls: Any, text: Any) -> None:
        assert cls in CLASSES, cls
        self.findings.append((cls, f"{self.scenario}: {text}"))

    def to_json(self) -> Any:
        return {
            "scenario": self.scenario,
            "status": self.status,
            "note": self.note,
            "findings": [{"class": c, "evidence": e} for c, e in self.findings],
            "refusal": self.refusal,
        }


def _control_problems(run: Any, cal: Any, *, completes: Any = (), tokens_complete: Any = ()) -> Any:
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
            problems.append(
                f"{name} (id {show(p['id'])}) got a response with id {show(r['msg'].get('id'))}"
            )
    for name in tokens_complete:
        p = post_named(run, name)
        n = len(progress_of(run, p["token"]))
        if n < cal["steps"]:
            problems.append(f"{name} reported {n} of {cal['steps']} progress notifications")
    return problems


def _judge_routing(
    v: Verdict, run: Any, cal: Any, names: Any, *, tool_names: Any, type_scenario: bool = False
) -> None:
    """Tokens, responses and loss for posts ``names`` that should each get their own answer.

    ``tool_names``: the posts that call the slow tool (their responses are attributed by time).
    In the ``id_types`` scenario every problem is an ``id_type_confusion``.
    """

    def cls(c: Any) -> Any:
        return "id_type_confusion" if type_scenario else c

    for text in crossed_tokens(run):
        v.add(cls("misrouted_notification"), text)
    posts = [post_named(run, n) for n in names]
    admitted = [p for p in posts if refusal_of(p) is None]
    callers = [p for p in admitted if p["name"] in tool_names]
    items = [
        (e["t"], p["name"], e["msg"])
        for p in admitted
        for e in events(p, is_response)
        if p["name"] in tool_names
    ]
    owned = attribute(items, callers, duration_floor(cal))
    got_own = set()
    for t, stream, msg, owner in owned:
        if owner is None:
            owner = stream  # ambiguous: give the stream the benefit of the doubt
        if owner != stream:
            o = post_named(run, owner)
            s = post_named(run, stream)
            v.add(
                cls("misrouted_response"),
                f"{stream}'s POST (id {show(s['id'])}, sent at {s['sent']:.2f}s) received at "
                f"{t:.2f}s a response with id {show(msg.get('id'))} that can only be "
                f"{owner}'s (sent at {o['sent']:.2f}s): the tool takes {cal['duration']:.2f}s, "
                f"so {stream}'s own could not come before {s['sent'] + duration_floor(cal):.2f}s",
            )
        else:
            got_own.add(stream)
    for p in admitted:
        r = first_response(p)
        if r is not None and not same_id(r["msg"].get("id"), p["id"]):
            v.add(
                "id_type_confusion",
                f"{p['name']}'s POST (id {show(p['id'])}) was answered with id "
                f"{show(r['msg'].get('id'))}",
            )
        if p["name"] in tool_names and p["name"] not in got_own:
            if r is None:
                v.add(
                    cls("lost_response"),
                    f"{p['name']} (id {show(p['id'])}) never got a response: {ended(p)}",
                )
            else:
                v.add(
                    cls("lost_response"),
                    f"{p['name']} (id {show(p['id'])}) never got its own response (its POST got "
                    f"another's)",
                )


def judge_duplicate_progress(control: Any, test: Any, cal: Any) -> Verdict:
    """A calls the slow tool; once it has reported half of its progress, B (the rogue) calls it
    under the same id.  Each stream must carry only its own token; A its own response; B its own
    response or a refusal."""
    v = Verdict("duplicate_progress")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A", "B"))
    if stop := _cannot_judge(v, problems, test):
        return stop
    b = post_named(test, "B")
    v.refusal = refusal_of(b)
    _judge_routing(v, test, cal, ("A", "B"), tool_names=("A", "B"))
    return v


def judge_response_routing(control: Any, test: Any, cal: Any) -> Verdict:
    """A calls the slow tool; during its progress B (the rogue) sends ``ping`` under A's id.  A's
    POST must get a tools/call result, B's a ping result (``{}``) or a refusal."""
    v = Verdict("response_routing")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A",))
    if stop := _cannot_judge(v, problems, test):
        return stop
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    for e in events(a, is_response):
        if not is_call_result(e["msg"]) and error_of(e["msg"]) is None:
            v.add(
                "misrouted_response",
                f"A's tools/call POST (id {show(a['id'])}) received at {e['t']:.2f}s "
                f"a result without content, the shape of B's ping result: {show(e['msg'])[:120]}",
            )
    if not any(is_call_result(e["msg"]) for e in events(a, is_response)):
        v.add(
            "lost_response",
            f"A (tools/call, id {show(a['id'])}) never got its tools/call result: {ended(a)}",
        )
    if v.refusal is None:
        bresp = events(b, is_response)
        for e in bresp:
            if is_call_result(e["msg"]):
                v.add(
                    "misrouted_response",
                    f"B's ping POST (id {show(b['id'])}) received at {e['t']:.2f}s A's "
                    f"tools/call result",
                )
        if not bresp:
            v.add("lost_response", f"B (ping, id {show(b['id'])}) never got a response: {ended(b)}")
    return v


def _stopped(run: Any, post: Any, after: Any, cal: Any) -> Any:
    """``post``'s request stopped at time ``after``: no progress of its token more than a grace
    period later, and no successful tools/call result attributed to it."""
    grace = max(0.5, 2.5 * cal["duration"] / max(1, cal["steps"]))
    late = [t for t, _ in progress_of(run, post["token"]) if t > after + grace]
    return late, grace


def judge_cancel_routing(control: Any, test: Any, cal: Any) -> Verdict:
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
            problems.append(
                "the server did not stop A when it was cancelled under its own, distinct id"
            )
    if stop := _cannot_judge(v, problems, test, ("cancels", "the cancel")):
        return stop
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    tc = test["cancels"][0]["t"]
    late, grace = _stopped(test, a, tc, cal)
    if late:
        v.add(
            "cancel_misdirected",
            f"the client cancelled id {show(a['id'])} (meaning A) at {tc:.2f}s, but A's "
            f"token {show(a['token'])} kept reporting progress {len(late)} more time(s), "
            f"until {late[-1]:.2f}s",
        )
    items = [(e["t"], p["name"], e["msg"]) for p in (a, b) for e in events(p, is_response)]
    cands = [p for p in (a, b) if refusal_of(p) is None]
    for t, stream, msg, owner in attribute(items, cands, duration_floor(cal)):
        if owner == "A" and is_success(msg):
            v.add(
                "cancel_misdirected",
                f"A, cancelled at {tc:.2f}s, still got its tools/call result at "
                f"{t:.2f}s (on {stream}'s POST)",
            )
    if v.refusal is None:
        n_b = len(progress_of(test, b["token"]))
        b_success = any(is_success(e["msg"]) for e in events(b, is_response))
        errors = [error_of(e["msg"]) for e in events(b, is_response) if error_of(e["msg"])]
        if not b_success and n_b < cal["steps"]:
            how = f"its POST ended with error {show(errors[0])}" if errors else ended(b)
            v.add(
                "cancel_misdirected",
                f"B (id {show(b['id'])}, never cancelled) stopped at {n_b} of "
                f"{cal['steps']} progress notifications after the cancel meant for A at "
                f"{tc:.2f}s; {how}",
            )
    return v


def judge_server_request_routing(control: Any, test: Any, cal: Any) -> Verdict:
    """A calls the eliciting tool; B (the rogue) calls it under the same id before A asks.  Each
    elicitation must arrive on the stream of the request that made it (attributed by time)."""
    v = Verdict("server_request_routing")
    problems = _control_problems(control, cal, completes=("A", "B"))
    for name in ("A", "B"):
        p = post_named(control, name)
        n = len(events(p, is_server_request))
        if n != cal["elicits"]:
            problems.append(
                f"{name} got {n} server-to-client request(s) on its stream, "
                f"expected {cal['elicits']}"
            )
    if stop := _cannot_judge(v, problems, test):
        return stop
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    cands = [p for p in (a, b) if refusal_of(p) is None]
    items = [(e["t"], p["name"], e["msg"]) for p in (a, b) for e in events(p, is_server_request)]
    floor = ATTRIBUTE * cal["elicit_after"]
    for t, stream, msg, owner in attribute(items, cands, floor, per_request=cal["elicits"]):
        if owner is not None and owner != stream:
            o = post_named(test, owner)
            s = post_named(test, stream)
            v.add(
                "misrouted_server_request",
                f"{stream}'s POST (id {show(s['id'])}, sent at {s['sent']:.2f}s) received at "
                f"{t:.2f}s {msg.get('method')} (server id {show(msg.get('id'))}) that can only "
                f"be {owner}'s "
                f"(sent at {o['sent']:.2f}s): the tool asks after {cal['elicit_after']:.2f}s",
            )
    for p in cands:
        if first_response(p) is None:
            v.add(
                "lost_response",
                f"{p['name']} ({cal['elicit_tool']}, id {show(p['id'])}) never got a "
                f"response: {ended(p)}",
            )
    return v


def judge_collateral_close(control: Any, test: Any, cal: Any) -> Verdict:
    """A and B (the rogue, same id) call the slow tool; the probe aborts A's POST.  B's stream
    must go on to B's result."""
    v = Verdict("collateral_close")
    problems = _control_problems(control, cal, completes=("B",), tokens_complete=("B",))
    problems = ["after aborting A: " + p for p in problems]
    ca = post_named(control, "A")
    if control.get("aborts") and _finished_before(ca, control["aborts"][0]["t"]):
        problems.append(_too_late("the abort", ca, control["aborts"][0]["t"]))
    if stop := _cannot_judge(v, problems, test, ("aborts", "the abort")):
        return stop
    a, b = post_named(test, "A"), post_named(test, "B")
    v.refusal = refusal_of(b)
    if v.refusal is not None:
        return v
    for text in crossed_tokens(test):
        v.add("misrouted_notification", text)
    ta = test["aborts"][0]["t"]
    if not any(is_response(e["msg"]) for e in events(b, lambda m: True)):
        n_b = len(progress_of(test, b["token"]))
        v.add(
            "collateral_close",
            f"the probe aborted A's POST (id {show(a['id'])}) at {ta:.2f}s; B's POST "
            f"(same id) then got no response: {ended(b)}, after {n_b} of {cal['steps']} of its "
            f"progress notifications",
        )
    return v


def judge_id_types(control: Any, test: Any, cal: Any) -> Verdict:
    """A calls the slow tool with id ``7``; during its progress B (the client, too) calls it with
    id ``"7"``: two different ids, both to be served, each on its own stream."""
    v = Verdict("id_types")
    problems = _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A", "B"))
    if problems:
        return _not_judged(v, problems)
    a, b = post_named(test, "A"), post_named(test, "B")  # (two ids: they need not overlap)
    ref = refusal_of(b)
    if ref is not None:
        v.add(
            "id_type_confusion",
            f"B (id {show(b['id'])}) was refused while A (id {show(a['id'])}) was in "
            f"flight: {describe_refusal(ref)}",
        )
        return v
    _judge_routing(v, test, cal, ("A", "B"), tool_names=("A", "B"), type_scenario=True)
    return v


def judge_reuse(control: Any, test: Any, cal: Any) -> Verdict:
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
        v.add(
            "reuse_refused",
            f"B reused id {show(b['id'])} at {b['sent']:.2f}s, after A's response at "
            f"{first_response(a)['t']:.2f}s, and was refused: {describe_refusal(ref)}",
        )
    elif first_response(b) is None:
        v.add(
            "lost_response",
            f"B (id {show(b['id'])}, reused after A's response) never got a response: {ended(b)}",
        )
    return v


def judge_two_elicitations(control: Any, test: Any, cal: Any) -> Verdict:
    """Q calls the tool that elicits twice (the probe declines each elicitation as it comes).
    Its stream must carry two server-to-client requests under distinct ids, then a successful
    result.  No ids collide, so there is no control (``control`` is unused)."""
    v = Verdict("two_elicitations")
    q = post_named(test, "Q")
    ref = refusal_of(q)
    if ref is not None or q.get("status") != 200:
        return _not_judged(
            v,
            [f"the call was not served (HTTP {q.get('status')}): {describe_refusal(ref)}"],
            "test",
        )
    reqs = [e["msg"] for e in events(q, is_server_request)]
    ids = [m.get("id") for m in reqs]
    r = first_response(q)
    result = show(r["msg"])[:300] if r is not None else "none"
    if len(reqs) < 2:
        v.add(
            "second_request_failed",
            f"Q (id {show(q['id'])}) received {len(reqs)} server-to-client request(s) on its "
            f"stream; the tool asks twice; its answer: {result}",
        )
    elif len(set(map(show, ids))) < len(ids):
        v.add(
            "second_request_failed",
            f"Q's server-to-client requests reused an id within one call: {show(ids)}",
        )
    elif r is not None and not is_success(r["msg"]):
        v.add(
            "second_request_failed",
            f"Q (id {show(q['id'])}) received both requests {show(ids)} but failed: {result}",
        )
    if r is None:
        v.add("lost_response", f"Q (id {show(q['id'])}) never got a response: {ended(q)}")
    return v


def _replay_problems(run: Any, a: Any, r: Any) -> Any:
    """What R, the resumption of A's stream, carried that it must not: another token's
    progress, an event A's stream had already delivered, an event twice, a second response."""
    out: list[Any] = []
    if r is None:
        return out
    foreign: dict = {}
    for e in events(r, lambda m: progress_token(m) is not None):
        tok = progress_token(e["msg"])
        if tok != a["token"]:
            foreign.setdefault(tok, []).append(e["t"])
    for tok, ts in foreign.items():
        owner = next((p["name"] for p in run["posts"] if p.get("token") == tok), "another")
        out.append(
            f"R (A's stream resumed after event {show(r['resumed_from'])}) carried {len(ts)} "
            f"progress notification(s) for {owner}'s token {show(tok)}, from {ts[0]:.2f}s"
        )
    had = {e["id"] for e in a["events"] if "id" in e}
    if a.get("last_event_id"):
        had.add(a["last_event_id"])
    again = [e["id"] for e in r["events"] if e.get("id") in had]
    if again:
        out.append(f"R delivered again {len(again)} event(s) A's stream had carried: {again[:3]}")
    ids = [e["id"] for e in r["events"] if "id" in e]
    if len(set(ids)) < len(ids):
        out.append(f"R carried an event id twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    if len(events(r, is_response)) > 1:
        out.append(f"R carried {len(events(r, is_response))} responses (one request's stream)")
    return out


def judge_replay_routing(control: Any, test: Any, cal: Any) -> Verdict:
    """A calls the slow tool; B (the rogue) calls it under A's id; A's connection is dropped; R
    resumes A's stream with ``Last-Event-ID``.  R must carry only A's events (its progress
    token, no event twice) and A's response; B's stream only B's."""
    v = Verdict("replay_routing")

    def resumed(run: Any) -> Any:
        return next((p for p in run["posts"] if p["name"] == "R"), None)

    problems = []
    ca, cr = post_named(control, "A"), resumed(control)
    if cr is None:
        problems.append("A's stream carried no event id to resume from")
    elif cr["status"] != 200:
        problems.append(
            f"resuming A's stream (Last-Event-ID {show(cr['resumed_from'])}) got HTTP "
            f"{cr['status']}: {show(cr.get('body'))[:200]}"
        )
    else:
        problems += _replay_problems(control, ca, cr)
        if not events(cr, is_response) and not events(ca, is_response):
            problems.append(f"A's resumed stream never got A's response: {ended(cr)}")
    problems += _control_problems(control, cal, completes=("B",))
    if problems:
        return _not_judged(v, problems)
    a, b, r = post_named(test, "A"), post_named(test, "B"), resumed(test)
    v.refusal = refusal_of(b)
    for text in crossed_tokens({"posts": [a, b]}):
        v.add("misrouted_notification", text)
    if r is None:
        return _not_judged(v, ["A's stream carried no event id to resume from"], "test")
    if r["status"] != 200:
        v.add(
            "replay_misrouted",
            f"resuming A's stream (Last-Event-ID {show(r['resumed_from'])}) after B reused "
            f"its id got HTTP {r['status']} (with distinct ids: 200)",
        )
        return v
    for text in _replay_problems(test, a, r):
        v.add("replay_misrouted", text)
    if not events(r, is_response) and not events(a, is_response):
        v.add("lost_response", f"A's resumed stream never got a response: {ended(r)}")
    return v


def _cannot_judge(v: Verdict, problems: Any, test: Any, acted: Any = None) -> Verdict | None:
    """The not-judged verdict of a scenario whose control run had ``problems``, or whose colliding
    run says nothing (with ``acted``, an ``(action, what)`` on A: :func:`_test_says_nothing`;
    without, :func:`_no_overlap`); None when the scenario can be judged."""
    if problems:
        return _not_judged(v, problems)
    why = _test_says_nothing(test, *acted) if acted else _no_overlap(test)
    if why:
        return _not_judged(v, [why], "test")
    return None


def _not_judged(v: Verdict, problems: Any, run: str = "control") -> Verdict:
    v.status = "not_judged"
    v.note = (
        "the control run with distinct ids failed: "
        if run == "control"
        else "the run with colliding ids could not be judged: "
    ) + "; ".join(problems)
    return v


def _no_overlap(run: Any, a: str = "A", b: str = "B") -> Any:
    """Why the colliding run says nothing, or None: the server answered B's POST (its status
    line) only after A had its response, so the two never overlapped and B was rightly admitted."""
    pa, pb = post_named(run, a), post_named(run, b)
    if refusal_of(pb) is not None:
        return None
    ra = first_response(pa)
    if pb.get("head") is None:
        return f"{b}'s POST got no HTTP answer: {ended(pb)}"
    if ra is not None and ra["t"] <= pb["head"]:
        return (
            f"{a} had its response at {ra['t']:.2f}s, before the server answered {b}'s POST at "
            f"{pb['head']:.2f}s: the two did not overlap (the server holds a duplicate until "
            f"the "
            f"first is done, or the machine is overloaded: give --args for a longer run)"
        )
    return None


def _test_says_nothing(test: Any, action: str, what: str) -> str | None:
    """Why the colliding run of a scenario that acts on A (``action``: ``cancels`` or
    ``aborts``) says nothing, or None: A had its response before the action, or the two
    requests never overlapped."""
    a = post_named(test, "A")
    t = test[action][0]["t"]
    if _finished_before(a, t):
        return _too_late(what, a, t)
    return _no_overlap(test)


def _finished_before(post: Any, t: Any) -> bool:
    """``post`` had its response before time ``t``."""
    r = first_response(post)
    return r is not None and r["t"] <= t


def _too_late(what: Any, post: Any, t: Any) -> str:
    return (
        f"A (id {show(post['id'])}) had its response at "
        f"{first_response(post)['t']:.2f}s, before "
        f"{what} at {t:.2f}s (is the machine overloaded? give --args for a longer run)"
    )


JUDGES = {
    "duplicate_progress": judge_duplicate_progress,
    "response_routing": judge_response_routing,
    "cancel_routing": judge_cancel_routing,
    "server_request_routing": judge_server_request_routing,
    "collateral_close": judge_collateral_close,
    "id_types": judge_id_types,
    "reuse": judge_reuse,
    "two_elicitations": judge_two_elicitations,
    "replay_routing": judge_replay_routing,
}


def judge(scenario: Any, control: Any, test: Any, cal: Any) -> Verdict:
    """The verdict of one scenario from its recorded control and test runs (pure)."""
    return JUDGES[scenario](control, test, cal)
