"""``mcp-inflight probe --stdio -- COMMAND ...``: the probe over a child process's pipes.

On stdio there is one ordered channel each way, so nothing can arrive "on another request's
stream": what a server can get wrong under a duplicate id is which request a cancel stops, which
request's response it writes (or fails to write), and whether ``7`` and ``"7"`` stay two ids.
The probe starts the command once per run (each run a fresh process: one control with distinct
ids, then the test with colliding ones), speaks newline-delimited JSON-RPC on its stdin and
stdout (2025-11-25 ``initialize``), and judges by progress tokens (each request its own), the
typed ids of the responses, and their count; never by the tool's text.

Scenarios (A is the client's request, B the second one):

* ``duplicate_progress``: at half of A's progress, B calls the slow tool under A's id. Both
  must end with a response of their own, or B be refused while A runs to its end.
* ``cancel_routing``: at A's first progress, B under A's id; once B runs (or was refused),
  ``notifications/cancelled`` for that id, meaning A: A must stop, B must run to its end.
* ``id_types``: A with id ``7``, B with id ``"7"`` (two ids in JSON-RPC): each must get its own
  response, under its own typed id.
* ``id_types_cancel``: the same, then a cancel for ``7``: A must stop, B must not.
* ``reuse``: A is answered, then B uses A's id: B must be served.

The others of the HTTP probe do not apply: a server-to-client request or a progress
notification cannot take another request's stream on one channel, no connection of one request
can be closed alone, and stdio has no resumption.

The task scenarios (``--tasks --stdio -- COMMAND``, :func:`probe_command_tasks`) are those of
:mod:`.task_scenarios`, each session a process of the command.

The transport is :mod:`.stdio_channel`, the table and the verdicts :mod:`.stdio_judging`; this
module runs them, and its names are the ones to import.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .inprocess import blocking
from .records import (
    DEFAULT_ARGS,
    DEFAULT_TOOL,
    MIN_DURATION,
    STDIO_SCENARIOS,
    TASK_SCENARIOS,
    CannotTest,
    is_response,
    is_success,
    same_id,
    show,
)
from .report import Report, summarize, untested
from .stdio_channel import LINE_LIMIT, Channel, StdioSession, StdioTarget, until
from .stdio_judging import (
    STDIO_NOT_APPLICABLE,
    STDIO_TABLE,
    StdioScenario,
    judge_stdio,
    stdio_refusal,
)

__all__ = [
    "LINE_LIMIT",
    "STDIO_NOT_APPLICABLE",
    "STDIO_TABLE",
    "Channel",
    "StdioScenario",
    "StdioSession",
    "StdioTarget",
    "calibrate_stdio",
    "judge_stdio",
    "probe_command",
    "probe_command_tasks",
    "probe_stdio",
    "until",
]

# --- running ---------------------------------------------------------------------------------


async def _record(sc: StdioScenario, t: StdioTarget, cal: dict, variant: str) -> dict:
    ch = Channel(t, time.monotonic())
    try:
        await ch.open()
        ida, idb = sc.test_ids if variant == "test" else sc.control_ids
        tok_a, tok_b = f"{sc.name}:{variant}:A", f"{sc.name}:{variant}:B"
        await ch.request("A", t.call(ida, tok_a), "client", tok_a)
        half = max(1, cal["steps"] // 2)
        ready = {
            "half": lambda: ch.progress(tok_a) >= half,
            "first": lambda: ch.progress(tok_a) >= 1,
            "answered": lambda: ch.response_to(ida) is not None,
        }[sc.b_when]
        await until(lambda: ready() or ch.ended, cal["duration"] * 2 + 2)
        b = await ch.request("B", t.call(idb, tok_b), sc.b_sender, tok_b)
        if sc.cancel:
            # once B runs (or was refused), and while A is still early on
            await until(
                lambda: (
                    ch.progress(tok_b) >= 1
                    or stdio_refusal(ch.record("", ""), b) is not None
                    or ch.progress(tok_a) >= half
                ),
                cal["duration"] + 1,
            )
            await ch.cancel(ida, "A")

        def settled() -> bool:
            rec = ch.record("", "")
            b_done = ch.progress(tok_b) >= cal["steps"] or stdio_refusal(rec, b) is not None
            ends = sum(
                1
                for e in rec["received"]
                if is_response(e["msg"])
                and any(same_id(e["msg"].get("id"), i) for i in (ida, idb, None))
            )
            return ch.ended or (b_done and ends >= (1 if sc.cancel else 2))

        await until(settled, 2.5 * cal["duration"] + 3)
        # what a server writes late comes within a moment of B's end
        await asyncio.sleep(min(0.5, 0.25 * cal["duration"]))
    finally:
        await ch.close()
    return ch.record(sc.name, variant)


async def calibrate_stdio(t: StdioTarget) -> dict:
    ch = Channel(t, time.monotonic())
    try:
        await ch.open()
        await ch.request(
            "list", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "client", None
        )
        await until(lambda: ch.response_to(1) is not None or ch.ended, 10)
        listing = ch.response_to(1)
        tools = [
            x.get("name")
            for x in ((listing or {}).get("msg", {}).get("result") or {}).get("tools", [])
        ]
        if t.tool not in tools:
            raise CannotTest(
                f"tool missing: the target has no tool {t.tool!r} (it has: "
                f"{', '.join(map(str, tools)) or 'none'}); pick one with --tool and --args"
            )
        req = await ch.request("cal", t.call(2, "calibrate"), "client", "calibrate")
        await until(lambda: ch.response_to(2) is not None or ch.ended, 30)
        r = ch.response_to(2)
        if r is None or not is_success(r["msg"]):
            got = "nothing" if r is None else show(r["msg"])[:300]
            raise CannotTest(f"tools/call {t.tool} {show(t.args)} got {got}, not a result")
        steps = ch.progress("calibrate")
        duration = r["t"] - req["sent"]
    finally:
        await ch.close()
    if steps < 2:
        raise CannotTest(
            f"tool {t.tool!r} reported progress {steps} time(s) for the client's token; the "
            f"probe needs at least two steps (give --tool and --args)"
        )
    if duration < MIN_DURATION:
        raise CannotTest(
            f"too fast to overlap: {t.tool} {show(t.args)} answered in {duration:.2f}s; give "
            f"--args that make it run at least {MIN_DURATION:.0f} second"
        )
    return {
        "tool": t.tool,
        "args": t.args,
        "steps": steps,
        "duration": round(duration, 4),
        "elicit_tool": None,
        "elicits": 0,
        "elicit_after": None,
        "elicit_duration": None,
    }


async def probe_stdio(
    t: StdioTarget, scenarios: Any = STDIO_SCENARIOS, progress: Any = None, parallel: int = 3
) -> dict:
    """Calibrate, then run each scenario (control, then test; each run its own process), at
    most ``parallel`` scenarios at once; returns the report (the runs under ``records``)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    say(f"calibrating {t.tool} {show(t.args)} on {t.name}")
    cal = await calibrate_stdio(t)
    say(f"  {cal['steps']} progress notifications in {cal['duration']:.2f}s")
    gate = asyncio.Semaphore(parallel)

    async def one(name: str) -> Any:
        async with gate:
            control = await _record(STDIO_TABLE[name], t, cal, "control")
            test = await _record(STDIO_TABLE[name], t, cal, "test")
        v = judge_stdio(name, control, test, cal)
        status = v.status if v.status != "judged" else ("defects" if v.findings else "clean")
        say(f"  {name}: {status}")
        return v, {"control": control, "test": test}

    todo = [n for n in STDIO_SCENARIOS if n in scenarios]
    results = await asyncio.gather(*(one(n) for n in todo))
    report = summarize(t.name, [v for v, _ in results], dict(STDIO_NOT_APPLICABLE), cal)
    report["transport"] = "stdio"
    report["planned"] = list(STDIO_SCENARIOS) + list(STDIO_NOT_APPLICABLE)
    report["seconds"] = round(time.monotonic() - started, 2)
    report["records"] = {v.scenario: rec for v, rec in results}
    return report


def probe_command(
    argv: list[str],
    *,
    tool: str = DEFAULT_TOOL,
    args: dict | None = None,
    env: dict | None = None,
    scenarios: Any = None,
    progress: Any = None,
) -> Report:
    """Probe the stdio server that ``argv`` starts and return the :class:`.report.Report` (the
    same report as ``mcp-inflight probe --stdio -- COMMAND ...``); a target that cannot be
    probed gives ``status == "untested"`` with the reason, never a clean report.  Runs its own
    event loop (in a worker thread when called from a running loop)."""
    chosen = tuple(STDIO_SCENARIOS if scenarios is None else scenarios)
    unknown = [n for n in chosen if n not in STDIO_SCENARIOS]
    if unknown:
        raise ValueError(
            f"not a stdio scenario: {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(STDIO_SCENARIOS)}"
        )
    t = StdioTarget(
        argv=list(argv),
        tool=tool,
        args=dict(DEFAULT_ARGS if args is None else args),
        env=dict(env or {}),
    )

    async def go() -> Report:
        try:
            doc = await probe_stdio(t, chosen or STDIO_SCENARIOS, progress)
        except CannotTest as exc:
            return Report(dict(untested(t.name, str(exc)), transport="stdio"))
        records = doc.pop("records")
        return Report(doc, records)

    return blocking(go())


def probe_command_tasks(
    argv: list[str],
    *,
    tool: str | None = None,
    args: dict | None = None,
    env: dict | None = None,
    scenarios: Any = None,
    progress: Any = None,
) -> Report:
    """The 2025-11-25 task scenarios on the stdio server that ``argv`` starts (the same report
    as ``mcp-inflight probe --tasks --stdio -- COMMAND ...``): every session is a process of its
    own, so client B is a second process (what that lets a scenario judge:
    :data:`.task_report.STDIO_SCOPE`).  ``tool`` None picks the first tool that allows tasks;
    ``args`` must make it run at least a second.  A server without tasks gives
    ``status == "untested"``, never a clean report."""
    from .task_scenarios import TaskTarget, probe_tasks

    chosen = tuple(TASK_SCENARIOS if scenarios is None else scenarios)
    unknown = [n for n in chosen if n not in TASK_SCENARIOS]
    if unknown:
        raise ValueError(
            f"not a task scenario: {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(TASK_SCENARIOS)}"
        )
    t = StdioTarget(argv=list(argv), tool=tool or "", args={}, env=dict(env or {}))

    async def go() -> Report:
        try:
            doc = await probe_tasks(TaskTarget(t, tool, args), chosen or TASK_SCENARIOS, progress)
        except CannotTest as exc:
            return Report(
                dict(untested(t.name, str(exc)), transport="stdio", planned=list(TASK_SCENARIOS))
            )
        records = doc.pop("records")
        return Report(doc, records)

    return blocking(go())
