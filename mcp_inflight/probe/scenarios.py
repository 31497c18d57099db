"""The scenarios (I/O) as one table and one runner, the calibration of the tools, and the whole
probe: calibrate, then every scenario, control then test, all scenarios at once.

Every scenario has one shape: a session; A, the client's request; once A is at a given point,
B, whose id collides with A's in the test run and differs in the control; optionally an action
on A once B runs (a cancel under A's id, or dropping A's connection); then waiting until the
posts end (what has not come by then counts as lost).  :data:`TABLE` says, per scenario, what A
and B send, who sends B, when, and what is done to A; :func:`record_run` runs one row.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .judging import Verdict, judge
from .recording import Post, Session, Target, until
from .records import (
    ATTRIBUTE,
    COLLISIONS,
    MIN_DURATION,
    MIN_ELICIT_AFTER,
    SCENARIOS,
    TIME_ATTRIBUTED,
    CannotTest,
    events,
    first_response,
    is_progress,
    is_response,
    is_server_request,
    is_success,
    progress_token,
    show,
)
from .report import summarize


@dataclass(frozen=True)
class Scenario:
    """One row of the table.

    ``a``/``b``: what A and B send (``call`` the slow tool, ``ask`` the eliciting tool, ``ping``);
    ``b_sender``: ``rogue`` (a duplicate no client should send) or ``client`` (a legitimate one);
    ``b_when``: ``half`` (A reported half its progress), ``first`` (A's first progress),
    ``answered`` (A has its response) or ``before_ask`` (half of the eliciting tool's wait);
    ``then``: None, ``cancel`` (a cancel under A's id, meaning A) or ``abort`` (A's connection
    dropped), done once B runs and while A is still early on."""

    name: str
    control_ids: tuple
    test_ids: tuple
    a: str
    b: str
    b_sender: str
    b_when: str
    then: str | None = None


TABLE = {
    s.name: s
    for s in (
        Scenario("duplicate_progress", (11, 12), (11, 11), "call", "call", "rogue", "half"),
        Scenario("response_routing", (21, 22), (21, 21), "call", "ping", "rogue", "first"),
        Scenario("cancel_routing", (31, 32), (31, 31), "call", "call", "rogue", "first", "cancel"),
        Scenario("server_request_routing", (51, 52), (51, 51), "ask", "ask", "rogue", "before_ask"),
        Scenario("collateral_close", (61, 62), (61, 61), "call", "call", "rogue", "first", "abort"),
        Scenario("id_types", (8, "9"), (7, "7"), "call", "call", "client", "half"),
        Scenario("reuse", (71, 72), (71, 71), "call", "call", "client", "answered"),
    )
}
assert tuple(TABLE) == COLLISIONS


@dataclass(frozen=True)
class Pace:
    """How long the probe waits.  A POST that has not ended ``lost_factor`` times the tool's
    running time plus ``lost_slack`` seconds after the last step counts as lost.  The URL probe
    leaves room for the network; in-process there is none (:mod:`.inprocess`)."""

    lost_factor: float = 2.5
    lost_slack: float = 3.0
    calibrate_together: bool = False


URL_PACE = Pace()


def _own_progress(post: Post) -> int:
    return sum(1 for e in post.events if progress_token(e["msg"]) == post.token)


def _token_seen(session: Session, token: Any) -> int:
    return sum(1 for p in session.posts for e in p.events if progress_token(e["msg"]) == token)


def _answered(post: Post) -> bool:
    return any(is_response(e["msg"]) for e in post.events)


async def _finish(s: Session, cal: Any, pace: Pace, posts: Any = None) -> None:
    """Wait until every POST has ended, at most ``lost_factor`` times the tool's running time
    plus ``lost_slack`` (what has not come by then counts as lost)."""
    posts = s.posts if posts is None else posts
    wait = pace.lost_factor * cal["duration"] + pace.lost_slack
    await until(lambda: all(p.done for p in posts), time.monotonic() + wait)


async def _session(t: Target, t0: float) -> Session:
    s = Session(t, t0)
    await s.open()
    return s


def _message(t: Target, kind: str, rid: Any, token: Any) -> dict:
    if kind == "call":
        return t.call(rid, token)
    if kind == "ask":
        return t.ask(rid, token)
    return {"jsonrpc": "2.0", "id": rid, "method": "ping"}


async def _until_b(sc: Scenario, a: Post, cal: Any) -> None:
    """Wait until A is where B is to be sent."""
    if sc.b_when == "before_ask":
        await asyncio.sleep(0.5 * cal["elicit_after"])
        return
    half = max(1, cal["steps"] // 2)
    ready: Callable[[], bool] = {
        "half": lambda: _own_progress(a) >= half,
        "first": lambda: _own_progress(a) >= 1,
        "answered": lambda: _answered(a),
    }[sc.b_when]
    await until(lambda: ready() or a.done, time.monotonic() + cal["duration"] * 2 + 2)


async def record_run(
    sc: Scenario, t: Target, cal: Any, variant: str, t0: float, pace: Pace = URL_PACE
) -> dict:
    """Record one run of scenario ``sc``: ``variant`` ``control`` (distinct ids) or ``test``
    (colliding ids)."""
    s = await _session(t, t0)
    try:
        ida, idb = sc.test_ids if variant == "test" else sc.control_ids

        def tok(name: str) -> str:
            return f"{sc.name}:{variant}:{name}"

        a = s.post("A", _message(t, sc.a, ida, tok("A")), "client", tok("A"))
        await _until_b(sc, a, cal)
        b_token = None if sc.b == "ping" else tok("B")
        b = s.post("B", _message(t, sc.b, idb, b_token), sc.b_sender, b_token)
        timing = cal if sc.a == "call" else {"duration": cal["elicit_duration"]}
        if sc.then is None:
            await _finish(s, timing, pace)
        else:
            half = max(1, cal["steps"] // 2)  # once B runs, and while A is still early on
            await until(
                lambda: _token_seen(s, b.token) >= 1 or b.done or _own_progress(a) >= half,
                time.monotonic() + cal["duration"] + 1,
            )
            if sc.then == "cancel":
                await s.cancel(ida, "A")
            else:
                await s.abort(a)
            await _finish(s, timing, pace, posts=[b])
            if sc.then == "cancel":
                await until(lambda: a.done, time.monotonic() + 1.0)
    finally:
        await s.close()
    return s.record(sc.name, variant)


async def record_twice(t: Target, cal: Any, t0: float, pace: Pace = URL_PACE) -> dict:
    """``two_elicitations``: one call of the tool that elicits twice (each elicitation declined
    as it comes), until its POST ends."""
    s = await _session(t, t0)
    try:
        s.post("Q", t.ask_twice(81, "two_elicitations:Q"), "client", "two_elicitations:Q")
        await _finish(s, {"duration": max(cal["duration"], 2.0)}, pace)
    finally:
        await s.close()
    return s.record("two_elicitations", "test")


async def record_replay(
    t: Target, cal: Any, variant: str, t0: float, pace: Pace = URL_PACE
) -> dict:
    """``replay_routing``: A calls the slow tool; once A has its first progress, B calls it
    (under A's id in the test, another in the control); once B runs, A's connection is dropped;
    a moment later R resumes A's stream with ``Last-Event-ID`` (the last event id A's stream
    carried).  Waits until B and R end."""
    s = await _session(t, t0)
    try:
        ida, idb = (41, 41) if variant == "test" else (41, 42)
        tok_a, tok_b = f"replay_routing:{variant}:A", f"replay_routing:{variant}:B"
        a = s.post("A", t.call(ida, tok_a), "client", tok_a)
        await until(lambda: _own_progress(a) >= 1 or a.done, time.monotonic() + cal["duration"] + 2)
        b = s.post("B", t.call(idb, tok_b), "rogue", tok_b)
        half = max(1, cal["steps"] // 2)
        await until(
            lambda: _token_seen(s, tok_b) >= 1 or b.done or _own_progress(a) >= half,
            time.monotonic() + cal["duration"] + 1,
        )
        await s.abort(a)
        await asyncio.sleep(min(0.5, 0.2 * cal["duration"]))  # A's handler goes on meanwhile
        if a.last_event_id is not None:
            r = s.resume("R", a)
            wait = pace.lost_factor * cal["duration"] + pace.lost_slack
            await until(lambda: b.done and (r.done or _answered(r)), time.monotonic() + wait)
            # a server may keep the resumed stream open after the response: once it has one,
            # wait only until B's handler must have ended too (what it misroutes comes by then)
            by = s.t0 + b.sent + (1 + ATTRIBUTE) * cal["duration"]
            await until(lambda: b.done and (r.done or _answered(r)), max(by, time.monotonic()))
        else:
            await _finish(s, cal, pace, posts=[b])
    finally:
        await s.close()
    return s.record("replay_routing", variant)


async def _measure_slow(s: Session, t: Target, rid: int) -> dict:
    """One call of the slow tool on its own: its progress count and running time."""
    p = s.post("cal", t.call(rid, "calibrate"), "client", "calibrate")
    await until(lambda: p.done and not s.answers_pending(), time.monotonic() + 30)
    await p.give_up()
    rec = p.record()
    if p.status != 200:
        raise CannotTest(f"tools/call {t.tool} got HTTP {p.status}: {str(p.body)[:200]}")
    if "text/event-stream" not in (p.content_type or ""):
        raise CannotTest(
            "the target answered tools/call with a JSON body, not an SSE stream: it "
            "sends no progress, so no routing can be observed"
        )
    r = first_response(rec)
    if r is None:
        raise CannotTest(f"tools/call {t.tool} got no response within 30s")
    if not is_success(r["msg"]):
        raise CannotTest(f"tools/call {t.tool} {show(t.args)} failed: {show(r['msg'])[:300]}")
    prog = [e for e in events(rec, is_progress) if progress_token(e["msg"]) == "calibrate"]
    duration = r["t"] - rec["sent"]
    if not prog:
        raise CannotTest(
            f"tool {t.tool!r} reported no progress for the client's progress token; "
            f"the probe needs a tool that does (give one with --tool and --args)"
        )
    if len(prog) < 2:
        raise CannotTest(
            f"tool {t.tool!r} reported progress only once; the probe needs at least "
            f"two steps (give --args with more steps)"
        )
    if duration < MIN_DURATION:
        raise CannotTest(
            f"too fast to overlap: {t.tool} {show(t.args)} answered in "
            f"{duration:.2f}s; give --args that make it run at least "
            f"{MIN_DURATION:.0f} second"
        )
    return {
        "steps": len(prog),
        "duration": round(duration, 4),
        "window": (s.t0 + rec["sent"], s.t0 + r["t"]),
    }


async def _measure_ask(s: Session, t: Target, rid: int) -> dict:
    """One call of the eliciting tool on its own: when it asks and when it answers; or, under
    ``skip``, why the scenario that needs it does not apply."""
    q = s.post("cal-ask", t.ask(rid, "calibrate-ask"), "client", "calibrate-ask")
    await until(lambda: q.done, time.monotonic() + 30)
    await q.give_up()
    rq = q.record()
    reqs = events(rq, is_server_request)
    r = first_response(rq)
    if not reqs or r is None:
        if not reqs:
            return {
                "skip": f"tool {t.elicit_tool!r} {show(t.elicit_args)} sent no "
                f"server-to-client request on its stream"
            }
        return {"skip": f"tool {t.elicit_tool!r} got no response"}
    after = reqs[0]["t"] - rq["sent"]
    if after < MIN_ELICIT_AFTER:
        return {
            "skip": f"tool {t.elicit_tool!r} asks {after:.2f}s after the call, too soon to "
            f"overlap; give --elicit-args that make it wait at least "
            f"{MIN_ELICIT_AFTER}s"
        }
    return {
        "elicits": len(reqs),
        "elicit_after": round(after, 4),
        "elicit_duration": round(r["t"] - rq["sent"], 4),
        "window": (s.t0 + rq["sent"], s.t0 + reqs[0]["t"]),
    }


def stall_budget(measured: float) -> float:
    """The longest stall of the event loop a calibration may have seen and still hold: a stall
    lengthens the measured time, and the attribution floor (``ATTRIBUTE`` of it) must stay below
    the true time; half of that margin."""
    return 0.5 * (1 / ATTRIBUTE - 1) * measured


async def calibrate(t: Target, pace: Pace = URL_PACE, watch: Any = None) -> tuple[dict, dict, dict]:
    """Check the target and measure its tools: how many progress notifications one call of the
    slow tool reports and how long it runs; when the eliciting tool asks.  Returns
    ``(calibration, not_applicable, unjudgeable)``; raises :class:`CannotTest`.

    ``watch`` (in-process only, :class:`.inprocess.LoopWatch`): the stalls of the event loop the
    probe shares with the server.  A measurement that saw a stall over :func:`stall_budget` is
    taken again once; if the second stalls too, the scenarios whose verdicts rest on that
    measurement's times are ``unjudgeable`` (name -> why)."""
    t0 = time.monotonic()
    s = await _session(t, t0)
    skipped: dict[str, str] = {}
    unjudgeable: dict[str, str] = {}
    try:
        listing = await s.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tools = [x.get("name") for x in (listing.get("result") or {}).get("tools", [])]
        if t.tool not in tools:
            raise CannotTest(
                f"tool missing: the target has no tool {t.tool!r} (it has: "
                f"{', '.join(map(str, tools)) or 'none'}); pick one with --tool "
                f"and --args"
            )
        asks = t.elicit_tool is not None and t.elicit_tool in tools
        if t.elicit_tool is None:
            skipped["server_request_routing"] = "no eliciting tool given"
        elif not asks:
            skipped["server_request_routing"] = (
                f"the target has no tool {t.elicit_tool!r} that elicits"
            )

        def stalled(m: dict, measured: str) -> float:
            if watch is None or "window" not in m:
                return 0.0
            worst = watch.worst(*m["window"])
            return worst if worst > stall_budget(m[measured]) else 0.0

        async def slow(rid: int) -> dict:
            m = await _measure_slow(s, t, rid)
            worst = stalled(m, "duration")
            if worst:
                m = await _measure_slow(s, t, rid + 10)
                worst = stalled(m, "duration")
                if worst:
                    why = (
                        f"the event loop the probe shares with the app stalled {worst:.2f}s "
                        f"while {t.tool} was measured (a tool that blocks the loop?): its "
                        f"running time, and so the attribution by time, cannot be trusted"
                    )
                    unjudgeable.update(
                        {n: why for n in TIME_ATTRIBUTED if n != "server_request_routing"}
                    )
            return m

        async def ask(rid: int) -> dict:
            m = await _measure_ask(s, t, rid)
            if stalled(m, "elicit_after"):
                m = await _measure_ask(s, t, rid + 10)
                worst = stalled(m, "elicit_after")
                if worst:
                    unjudgeable["server_request_routing"] = (
                        f"the event loop the probe shares with the app stalled {worst:.2f}s while "
                        f"{t.elicit_tool} was measured: when it asks cannot be trusted in-process"
                    )
            return m

        if t.twice_tool is None:
            skipped["two_elicitations"] = "no tool that elicits twice given"
        elif t.twice_tool not in tools:
            skipped["two_elicitations"] = f"the target has no tool {t.twice_tool!r}"
        q: dict[Any, Any] | None
        if asks and pace.calibrate_together:
            m, q = await asyncio.gather(slow(2), ask(3))
        else:
            m = await slow(2)
            q = await ask(3) if asks else None
        cal = {
            "tool": t.tool,
            "args": t.args,
            "steps": m["steps"],
            "duration": m["duration"],
            "elicit_tool": None,
            "elicits": 0,
            "elicit_after": None,
            "elicit_duration": None,
        }
        if q is not None:
            if "skip" in q:
                skipped["server_request_routing"] = q["skip"]
            else:
                cal.update(
                    elicit_tool=t.elicit_tool,
                    elicits=q["elicits"],
                    elicit_after=q["elicit_after"],
                    elicit_duration=q["elicit_duration"],
                )
    finally:
        await s.close()
    return cal, skipped, unjudgeable


async def probe(
    t: Target,
    scenarios: Any = SCENARIOS,
    progress: Any = None,
    pace: Pace = URL_PACE,
    watch: Any = None,
) -> dict:
    """Calibrate, then run every scenario (control, then test) concurrently; returns the report
    (with the recorded runs under ``records``)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    say(f"calibrating {t.tool} {show(t.args)} on {t.name}")
    cal, skipped, unjudgeable = await calibrate(t, pace, watch)
    say(
        f"  {cal['steps']} progress notifications in {cal['duration']:.2f}s"
        + (
            f"; {cal['elicit_tool']} asks after {cal['elicit_after']:.2f}s"
            if cal["elicits"]
            else ""
        )
    )
    todo = [n for n in scenarios if n not in skipped]

    async def one(name: Any) -> Any:
        if name in unjudgeable:
            v = Verdict(
                name,
                status="not_judged",
                note="not run: the time-based attribution cannot hold: " + unjudgeable[name],
            )
            say(f"  {name}: {v.status}")
            return v, {}
        t0 = time.monotonic()
        if name == "two_elicitations":
            control = None
            test = await record_twice(t, cal, t0, pace)
        elif name == "replay_routing":
            control = await record_replay(t, cal, "control", t0, pace)
            if not any(p["last_event_id"] for p in control["posts"] if p["name"] == "A"):
                skipped[name] = "the target's POST streams carry no SSE event ids: not resumable"
                say(f"  {name}: n/a")
                return None, {}
            t0 = time.monotonic()
            test = await record_replay(t, cal, "test", t0, pace)
        else:
            control = await record_run(TABLE[name], t, cal, "control", t0, pace)
            t0 = time.monotonic()
            test = await record_run(TABLE[name], t, cal, "test", t0, pace)
        v = judge(name, control, test, cal)
        say(
            f"  {name}: "
            + (v.status if v.status != "judged" else ("defects" if v.findings else "clean"))
        )
        return v, {"control": control, "test": test}

    results = [r for r in await asyncio.gather(*(one(n) for n in todo)) if r[0] is not None]
    report = summarize(
        t.name, [v for v, _ in results], {k: v for k, v in skipped.items() if k in scenarios}, cal
    )
    report["seconds"] = round(time.monotonic() - started, 2)
    report["records"] = {v.scenario: rec for v, rec in results}
    return report
