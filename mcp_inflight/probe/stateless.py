"""``mcp-inflight probe URL --revision 2026-07-28``: stateless Streamable HTTP.

2026-07-28 has no session: every request is a POST of its own (header ``MCP-Protocol-Version:
2026-07-28``, the client's info in ``_meta``), and two clients may send the same id at the same
time. Those are two requests, each to be served on its own stream; refusing one because of the
other is a defect (``refused_across_clients``), and so is anything of one on the other's stream.
Closing a POST's stream MUST be treated as cancelling that request, and nothing more may be sent
for it: the closing client cannot see that, so the probe asks the server afterwards through its
fixture contract (:mod:`mcp_inflight.fixtures.contract`: ``probe_outcome {label}`` tells what
became of the ``slow`` call with that label). A target without the contract gets those verdicts
as not judged, with the reason; never clean.

Scenarios (client 1 sends A, client 2 sends B, each on its own connection):

* ``stateless_isolation``: at half of A's progress, B under A's id. Each POST must carry only
  its own progress and its own result.
* ``stateless_close``: at A's first progress, B under A's id; once B runs, A's POST is closed.
  A must be cancelled (contract), B run on to its own result.
* ``stateless_close_early``: A's POST is closed before its handler's first step, then B sends
  A's id. A must not run on (contract: cancelled, or never started); B is served.
* ``stateless_reuse``: A and B under one id as in isolation; once A is answered, client 1 sends
  C under the same id (allowed: its own A was answered), then closes C once it runs. C must be
  admitted and cancelled (contract), B must run on to its own result.

Every scenario runs a control first with distinct ids.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from .judging import Verdict, _control_problems, _judge_routing
from .recording import Post, Session, Target, until
from .records import (
    ACCEPT,
    CLIENT_INFO,
    MODERN,
    OUTCOME_TOOL,
    STATELESS_SCENARIOS,
    CannotTest,
    crossed_tokens,
    duration_floor,
    ended,
    events,
    first_response,
    is_progress,
    is_response,
    is_success,
    post_named,
    progress_of,
    progress_token,
    refusal_of,
    show,
)
from .report import summarize
from .scenarios import URL_PACE, Pace

NOT_APPLICABLE = {
    "server_request_routing": "2026-07-28 has no server-to-client requests (input-required "
    "results come back as a request's own result)",
    "replay_routing": "2026-07-28 has no resumption",
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": {},
}
NO_CONTRACT = (
    f"the target has no {OUTCOME_TOOL!r} tool (the probe's fixture contract, "
    f"mcp_inflight.fixtures.contract): whether closing a POST cancelled its request cannot be "
    f"seen from outside"
)


class StatelessSession(Session):
    """The probe's 2026-07-28 clients: no initialize, no session id; each POST its own
    connection (so two POSTs are two clients as far as the server can tell)."""

    version = MODERN

    def headers(self) -> dict:
        return {
            "Accept": ACCEPT,
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.version,
        }

    def headers_for(self, msg: Any) -> dict:
        h = self.headers()
        method = msg.get("method") if isinstance(msg, dict) else None
        if method:
            h["Mcp-Method"] = method
            name = (msg.get("params") or {}).get("name")
            if method == "tools/call" and isinstance(name, str):
                h["Mcp-Name"] = name
        return h

    async def open(self) -> Any:
        self.client = self.target.client(10.0)
        return self

    async def close(self) -> None:
        for p in self.posts:
            await p.give_up()
        if self.client is not None:
            await self.client.aclose()


def _call(rid: Any, tool: str, args: dict, token: Any = None, revision: str = MODERN) -> dict:
    meta = dict(META) if revision == MODERN else {}  # 2026-07-28 names the client per request
    if token is not None:
        meta["progressToken"] = token
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta},
    }


def _outcome_of(msg: Any) -> dict | None:
    """The contract's outcome object in a probe_outcome result, or None."""
    result = msg.get("result") if isinstance(msg, dict) else None
    if not isinstance(result, dict):
        return None
    sc = result.get("structuredContent")
    if isinstance(sc, dict) and "state" in sc:
        return sc
    for c in result.get("content") or []:
        if isinstance(c, dict) and c.get("type") == "text":
            try:
                v = json.loads(c.get("text", ""))
            except ValueError:
                continue
            if isinstance(v, dict) and "state" in v:
                return v
    if isinstance(sc, dict) and isinstance(sc.get("result"), str):
        try:
            v = json.loads(sc["result"])
        except ValueError:
            return None
        return v if isinstance(v, dict) and "state" in v else None
    return None


class Probe:
    """One stateless probe: the target, its calibration, a nonce that makes every label of
    this probe its own (a server's ledger may hold calls of earlier probes)."""

    def __init__(self, t: Target, pace: Pace, revision: str = MODERN) -> None:
        self.t = t
        self.pace = pace
        self.revision = revision
        self.nonce = os.urandom(4).hex()
        self.ids = iter(range(900000, 10**9))
        self.cal: dict = {}

    async def session(self) -> StatelessSession:
        s = StatelessSession(self.t, time.monotonic())
        s.version = self.revision
        return await s.open()

    def label(self, scenario: str, variant: str, name: str) -> str:
        return f"{scenario}:{variant}:{name}:{self.nonce}"

    def slow(self, s: Session, name: str, rid: Any, label: str, sender: str = "client") -> Post:
        args = {**self.t.args, "label": label}
        return s.post(name, _call(rid, self.t.tool, args, label, self.revision), sender, label)

    async def outcome(self, s: Session, label: str) -> dict | None:
        msg = _call(next(self.ids), OUTCOME_TOOL, {"label": label}, None, self.revision)
        try:
            answer = await s.request(msg)
        except CannotTest:
            return None
        return _outcome_of(answer)

    async def calibrate(self) -> tuple[dict, dict]:
        t = self.t
        s = await self.session()
        try:
            try:
                listing = await s.request(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/list",
                        "params": {"_meta": META} if self.revision == MODERN else {},
                    }
                )
            except CannotTest as exc:
                raise CannotTest(
                    f"the target does not serve {self.revision} POSTs without a session: {exc}"
                ) from None
            if "error" in listing:
                raise CannotTest(
                    f"the target does not serve {self.revision} POSTs without a session: "
                    f"tools/list got "
                    f"{show(listing['error'])[:300]}"
                )
            tools = [x.get("name") for x in (listing.get("result") or {}).get("tools", [])]
            if t.tool not in tools:
                raise CannotTest(
                    f"tool missing: the target has no tool {t.tool!r} (it has: "
                    f"{', '.join(map(str, tools)) or 'none'}); pick one with --tool and --args"
                )
            label = self.label("calibrate", "cal", "cal")
            p = self.slow(s, "cal", 2, label)
            await until(lambda: p.done, time.monotonic() + 30)
            await p.give_up()
            rec = p.record()
            r = first_response(rec)
            if r is None or not is_success(r["msg"]):
                got = "nothing" if r is None else show(r["msg"])[:300]
                raise CannotTest(
                    f"tools/call {t.tool} over 2026-07-28 got HTTP {p.status}, {got}, "
                    f"not a result: {show(p.body)[:200] if p.body else ''}"
                )
            steps = sum(1 for e in events(rec, is_progress) if progress_token(e["msg"]) == label)
            duration = round(r["t"] - rec["sent"], 4)
            if steps < 2:
                raise CannotTest(
                    f"tool {t.tool!r} reported progress {steps} time(s) for the client's token "
                    f"over 2026-07-28; the probe needs at least two steps"
                )
            if duration < 1.0:
                raise CannotTest(
                    f"too fast to overlap: {t.tool} answered in {duration:.2f}s; give --args "
                    f"that make it run at least 1 second"
                )
            contract, why = False, NO_CONTRACT
            if OUTCOME_TOOL in tools:
                o = await self.outcome(s, label)
                if o is not None and o.get("state") == "completed" and o.get("steps") == steps:
                    contract, why = True, ""
                else:
                    why = (
                        f"{OUTCOME_TOOL} answered {show(o)[:200]} for a call that completed "
                        f"with {steps} steps: the contract does not hold, so its verdicts cannot "
                        f"be trusted"
                    )
        finally:
            await s.close()
        self.cal = {
            "tool": t.tool,
            "args": t.args,
            "steps": steps,
            "duration": duration,
            "elicit_tool": None,
            "elicits": 0,
            "elicit_after": None,
            "elicit_duration": None,
            "revision": self.revision,
            "contract": contract,
        }
        return self.cal, {"contract": why} if why else {}

    async def record(self, name: str, variant: str) -> dict:
        """One run of scenario ``name``; ``variant`` ``control`` (distinct ids) or ``test``."""
        cal, pace = self.cal, self.pace
        s = await self.session()
        base = {n: k for k, n in enumerate(STATELESS_SCENARIOS)}[name] * 10 + 101
        ida, idb, idc = (base, base, base) if variant == "test" else (base, base + 1, base + 2)
        lab = {n: self.label(name, variant, n) for n in "ABC"}
        half = max(1, cal["steps"] // 2)
        wait = pace.lost_factor * cal["duration"] + pace.lost_slack
        outcomes: dict = {}

        def own(p: Post) -> int:
            return sum(1 for e in p.events if progress_token(e["msg"]) == p.token)

        async def close_once_b_runs(a: Post, b: Post) -> None:
            await until(
                lambda: own(b) >= 1 or b.done or own(a) >= half,
                time.monotonic() + cal["duration"] + 1,
            )
            await s.abort(a)

        try:
            if name == "stateless_close_early":
                a = self.slow(s, "A", ida, lab["A"])
                first_step = cal["duration"] / (cal["steps"] + 1)
                await until(lambda: a.head is not None, time.monotonic() + 0.3 * first_step)
                await s.abort(a)
                b = self.slow(s, "B", idb, lab["B"])
                await until(lambda: b.done, time.monotonic() + wait)
                await asyncio.sleep(max(0.0, a.sent + 1.25 * cal["duration"] - s.now()))
            else:
                a = self.slow(s, "A", ida, lab["A"])
                when = 1 if name == "stateless_close" else half
                await until(lambda: own(a) >= when or a.done, time.monotonic() + wait)
                b = self.slow(s, "B", idb, lab["B"])
                if name == "stateless_close":
                    await close_once_b_runs(a, b)
                    await until(lambda: b.done, time.monotonic() + wait)
                    # until A would have ended had it not been cancelled
                    await asyncio.sleep(max(0.0, a.sent + 1.25 * cal["duration"] - s.now()))
                elif name == "stateless_reuse":
                    await until(lambda: a.done, time.monotonic() + wait)
                    c = self.slow(s, "C", idc, lab["C"])
                    await until(lambda: own(c) >= 1 or c.done, time.monotonic() + wait)
                    await s.abort(c)
                    await until(lambda: b.done, time.monotonic() + wait)
                    await asyncio.sleep(max(0.0, c.sent + 1.25 * cal["duration"] - s.now()))
                else:
                    await until(lambda: a.done and b.done, time.monotonic() + wait)
            if cal["contract"]:
                for p in list(s.posts):
                    outcomes[p.name] = await self.outcome(s, p.token)
        finally:
            await s.close()
        rec = s.record(name, variant)
        rec["outcomes"] = outcomes
        return rec


# --- judging (pure) -----------------------------------------------------------------------------


def _cannot(v: Verdict, problems: list[str]) -> bool:
    if problems:
        v.status = "not_judged"
        v.note = "the control run (distinct ids) failed: " + "; ".join(problems)
        return True
    return False


def _refused(v: Verdict, run: dict, names: Any, reuse: bool = False) -> list[str]:
    """Flags every named POST that was refused (2026-07-28 has no id to refuse across clients);
    returns the names of those admitted."""
    admitted = []
    for n in names:
        p = post_named(run, n)
        ref = refusal_of(p)
        if ref is None:
            admitted.append(n)
            continue
        v.refusal = v.refusal or ref
        others = [
            q["name"]
            for q in run["posts"]
            if q["name"] != n
            and q["id"] == p["id"]
            and q["sent"] <= p["sent"]
            and (q["end"] is None or q["end"] > p["sent"])
        ] or ["no other POST"]
        v.add(
            "refused_across_clients",
            f"{n} (id {show(p['id'])}, {'client 1 reusing its answered id' if reuse else 'a client of its own'}) "
            f"was refused ({show(ref.get('status'))} {show(ref.get('message'))}) while "
            f"{', '.join(others)} (another client's POST, same id) was in flight",
        )
    return admitted


def _survivor(v: Verdict, run: dict, cal: dict, closed: str, name: str) -> None:
    """``name``'s POST, under the id of the closed one, must run on to its own result."""
    p = post_named(run, name)
    floor = p["sent"] + duration_floor(cal)
    resp = events(p, is_response)
    for e in resp:
        if e["t"] < floor:
            v.add(
                "misrouted_response",
                f"{name}'s POST (id {show(p['id'])}, sent at {p['sent']:.2f}s) received at "
                f"{e['t']:.2f}s a response that can only be {closed}'s: its own could not come "
                f"before {floor:.2f}s",
            )
    if not any(is_success(e["msg"]) and e["t"] >= floor for e in resp):
        n = len(progress_of(run, p["token"]))
        v.add(
            "collateral_close",
            f"after {closed}'s POST (same id) was closed, {name} got no result of its own: "
            f"{ended(p)}, after {n} of {cal['steps']} of its progress notifications",
        )


def _cancelled(v: Verdict, run: dict, name: str, *, may_not_start: bool = False) -> None:
    """By the contract's outcome: the closed POST's request was cancelled."""
    o = (run.get("outcomes") or {}).get(name)
    p = post_named(run, name)
    closed = (run.get("aborts") or [{}])[0].get("t")
    if o is None:
        v.status = "not_judged"
        v.note = f"{OUTCOME_TOOL} gave no outcome for {name}"
        return
    state = o.get("state")
    if state == "cancelled" or (may_not_start and state == "unknown"):
        if o.get("sentAfterCancel"):
            v.add(
                "close_not_cancelled",
                f"{name} (id {show(p['id'])}) was cancelled, yet its handler sent "
                f"{o['sentAfterCancel']} progress notification(s) after the cancellation",
            )
        return
    v.add(
        "close_not_cancelled",
        f"the probe closed {name}'s POST (id {show(p['id'])}) at {closed:.2f}s; "
        f"{OUTCOME_TOOL} then said {show(o)}: the close was not treated as its cancellation",
    )


def judge_stateless(name: str, control: dict, test: dict, cal: dict) -> Verdict:
    v = Verdict(name)
    contract = bool(cal.get("contract"))
    if name == "stateless_isolation":
        if _cannot(
            v, _control_problems(control, cal, completes=("A", "B"), tokens_complete=("A", "B"))
        ):
            return v
        admitted = _refused(v, test, ("B",))
        _judge_routing(v, test, cal, ("A", *admitted), tool_names=("A", *admitted))
        return v
    closed, survivor = ("C", "B") if name == "stateless_reuse" else ("A", "B")
    if _cannot(
        v, _control_problems(control, cal, completes=(survivor,), tokens_complete=(survivor,))
    ):
        return v
    if contract and cal.get("revision", MODERN) == MODERN:
        o = (control.get("outcomes") or {}).get(closed) or {}
        ok = o.get("state") == "cancelled" or (
            name == "stateless_close_early" and o.get("state") == "unknown"
        )
        if not ok:
            v.add(
                "close_not_cancelled",
                f"with distinct ids too: the probe closed {closed}'s POST, and "
                f"{OUTCOME_TOOL} then said {show(o)}",
            )
    if name != "stateless_reuse":  # there the routing of A and B is judged as a whole
        for text in crossed_tokens(test):
            v.add("misrouted_notification", text)
    if name == "stateless_reuse":
        admitted = _refused(v, test, ("B",))
        admitted += _refused(v, test, ("C",), reuse=True)
        if "B" in admitted:
            _judge_routing(v, test, cal, ("A", "B"), tool_names=("A", "B"))
        else:
            for text in crossed_tokens(test):
                v.add("misrouted_notification", text)
        if "C" not in admitted:
            return v
    else:
        admitted = _refused(v, test, ("B",))
        if "B" in admitted:
            _survivor(v, test, cal, closed, survivor)
    if cal.get("revision", MODERN) != MODERN:
        v.note = (
            f"{cal['revision']}: a closed stream is not a cancel there, so what became of "
            f"{closed} is not judged; only the other client's request is"
        )
        return v
    if not contract:
        v.status = "not_judged"
        v.note = NO_CONTRACT
        return v
    _cancelled(v, test, closed, may_not_start=name == "stateless_close_early")
    o = (test.get("outcomes") or {}).get(survivor) or {}
    if survivor in admitted and o.get("state") == "cancelled":
        v.add(
            "cancel_misdirected",
            f"closing {closed}'s POST cancelled {survivor} (another client's POST, same id): "
            f"{OUTCOME_TOOL} said {show(o)}",
        )
    return v


async def probe_stateless(
    t: Target,
    scenarios: Any = STATELESS_SCENARIOS,
    progress: Any = None,
    pace: Pace = URL_PACE,
    revision: str = MODERN,
) -> dict:
    """Calibrate, then run each stateless scenario (control, then test) concurrently; returns
    the report (the runs under ``records``).  ``revision``: the ``MCP-Protocol-Version`` sent;
    2026-07-28, or an earlier one for a server that runs without sessions (the TypeScript SDK's
    stateless mode): then the close of a POST is not judged as a cancel."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    pr = Probe(t, pace, revision)
    say(f"calibrating {t.tool} {show(t.args)} on {t.name} ({revision}, stateless)")
    cal, notes = await pr.calibrate()
    say(
        f"  {cal['steps']} progress notifications in {cal['duration']:.2f}s; fixture contract: "
        + ("yes" if cal["contract"] else "no")
    )

    async def one(name: str) -> Any:
        control = await pr.record(name, "control")
        test = await pr.record(name, "test")
        v = judge_stateless(name, control, test, cal)
        status = v.status if v.status != "judged" else ("defects" if v.findings else "clean")
        say(f"  {name}: {status}")
        return v, {"control": control, "test": test}

    todo = [n for n in STATELESS_SCENARIOS if n in scenarios]
    results = await asyncio.gather(*(one(n) for n in todo))
    skipped = (
        dict(NOT_APPLICABLE)
        if revision == MODERN
        else {n: "not run without a session (the stateless scenarios only)" for n in NOT_APPLICABLE}
    )
    report = summarize(t.name, [v for v, _ in results], skipped, cal)
    report["revision"] = revision + ("" if revision == MODERN else " stateless")
    report["planned"] = list(STATELESS_SCENARIOS) + list(NOT_APPLICABLE)
    if notes:
        report["contract"] = notes["contract"]
    report["seconds"] = round(time.monotonic() - started, 2)
    report["records"] = {v.scenario: rec for v, rec in results}
    return report
