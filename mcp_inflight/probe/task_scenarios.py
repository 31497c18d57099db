"""``mcp-inflight probe URL --tasks``: who may read, take the result of, list or cancel a
2025-11-25 task, whether its id can be guessed, and whether a terminal status stays.

A task id outlives the request that made it: the request's JSON-RPC id is answered at once with
a ``CreateTaskResult`` and the id that matters from then on is the task's.  So the in-flight
question of the other scenarios (whose request is this?) becomes: whose task is this?  The spec
(2025-11-25, basic/utilities/tasks, "Security Considerations") asks receivers to bind a task to
the context of its requester when there is one (here: the session, and the credentials the probe
sends) and to mint ids that cannot be guessed; its lifecycle says a task in a terminal status
(``completed``, ``failed``, ``cancelled``) never moves to another.

Two sessions: A (the requester) and B (another client).  A session is whatever the target
opens (:meth:`TaskTarget.session`): over HTTP, a URL or an ASGI app in-process
(:func:`.inprocess.probe_app_tasks`), one ``Mcp-Session-Id``; over stdio
(:func:`.stdio.probe_command_tasks`), one process of the command, since a stdio server has one
client: B is then a second process, and :data:`.task_report.STDIO_SCOPE` says what that lets
each scenario judge (a task id of process 1 must be unknown in process 2).  The scenarios, the
judges and the report are the same in every form.  The scenarios:

* ``task_isolation``: A creates two tasks; B is given their ids (a leak) and calls ``tasks/get``,
  ``tasks/list``, ``tasks/cancel`` (on the second) and ``tasks/result`` (on the first).  B must
  learn no status, no result, not see them listed, and A's ``tasks/get`` afterwards must not say
  ``cancelled``.
* ``task_guessing``: A creates a task, then B creates its own and tries ids guessed from what it
  knows: its own id's neighbours (a trailing decimal or hex number plus or minus one or two, which
  covers a UUID-shaped neighbour too) and A's request id.  Any guess that ``tasks/get`` answers
  with a task that is not B's, or that ``tasks/cancel`` accepts, is a violation.
* ``task_ids``: A creates two tasks one after the other; an id that equals or contains the
  request's id, or two ids whose differing tails are numbers at most 16 apart, are guessable.
* ``task_terminal``: A cancels a running task, waits past the tool's running time and reads it
  again; A lets another task complete, cancels it (to be refused) and reads it again.  A terminal
  status that changed is a violation.

A server whose ``initialize`` result advertises no ``capabilities.tasks`` (or no task-augmented
``tools/call``), or has no tool whose ``execution.taskSupport`` allows a task, gets every
scenario as not applicable with that reason: never clean.  Every exchange (request, response,
time, session) is kept in the records; every finding quotes the exchanges it rests on.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .judging import Verdict
from .recording import Session, Target
from .records import TASK_CLASSES, TASK_SCENARIOS, CannotTest, show
from .stdio_channel import StdioSession, StdioTarget
from .task_report import RULES, SOURCE, STDIO_SCOPE, render_tasks, summarize_tasks

TERMINAL = ("completed", "failed", "cancelled")
DEFAULT_TASK_ARGS = {"label": "probe", "seconds": 2.0}
MIN_WORKING = 1.0  # a task must stay working at least this long (seconds)


class TaskVerdict(Verdict):
    """A verdict whose findings are task classes (:data:`TASK_CLASSES`)."""

    def add(self, cls: Any, text: Any) -> None:
        assert cls in TASK_CLASSES, cls
        self.findings.append((cls, f"{self.scenario}: {text}"))


class TaskSession(Protocol):
    """What a scenario needs of a transport: open a session (``initialize``, its result kept),
    send one request and get its response (:class:`.recording.Session` over HTTP, in-process
    too; :class:`.stdio_channel.StdioSession` over a child process's pipes), close."""

    init_result: dict

    async def open(self) -> Any: ...

    async def request(self, msg: dict, timeout: float = 10.0) -> Any: ...

    async def close(self) -> None: ...


@dataclass
class TaskTarget:
    """Where the task probe goes and with which tool: ``target`` a :class:`.recording.Target`
    (a URL, or an ASGI app through its transport) or a :class:`.stdio_channel.StdioTarget` (a
    command: each session its own process); ``tool`` None picks the first tool whose
    ``execution.taskSupport`` is ``optional`` or ``required``; ``args`` must make it run at
    least :data:`MIN_WORKING` seconds."""

    target: Target | StdioTarget
    tool: str | None = None
    args: dict | None = None

    @property
    def transport(self) -> str:
        return "stdio" if isinstance(self.target, StdioTarget) else "http"

    def session(self, t0: float) -> TaskSession:
        """A new session, not yet open (over stdio: a new process of the command)."""
        if isinstance(self.target, StdioTarget):
            return StdioSession(self.target, t0)
        return Session(self.target, t0)


class Wire:
    """The exchanges of one scenario, in order: ``{"t", "who", "request", "response"}``."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.log: list[dict] = []
        self.rid = 0

    async def ask(
        self, who: str, s: TaskSession, rid: Any, method: str, params: dict, timeout: float = 10.0
    ) -> dict:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        entry: dict[str, Any] = {"t": round(time.monotonic() - self.t0, 4), "who": who}
        entry["request"] = msg
        try:
            r = await s.request(msg, timeout)
        except CannotTest as exc:
            r = {"no_answer": str(exc)}
        entry["response"] = r
        self.log.append(entry)
        return r if isinstance(r, dict) else {"no_answer": show(r)}


def exchange(who: str, method: str, params: dict, r: dict) -> str:
    """One exchange as evidence: ``B tasks/get {...} -> {...}``."""
    return f"{who} {method} {show(params)} -> {show(r)[:300]}"


def result_of(r: dict) -> dict | None:
    res = r.get("result")
    return res if isinstance(res, dict) and "error" not in r else None


def status_of(r: dict) -> str | None:
    res = result_of(r)
    return res.get("status") if res is not None else None


def task_id_of(r: dict) -> str | None:
    res = result_of(r)
    task = res.get("task") if res is not None else None
    tid = task.get("taskId") if isinstance(task, dict) else None
    return tid if isinstance(tid, str) else None


# --- ids --------------------------------------------------------------------------------------

_TAIL = re.compile(r"([0-9a-fA-F]+)$")


def neighbours(tid: str) -> list[str]:
    """Ids next to ``tid``: its trailing decimal number (else hex digits) plus or minus one and
    two, keeping its width and case (a UUID's last group gives a UUID-shaped neighbour); an id
    with neither at its end, its last character's neighbours."""
    out: list[str] = []
    m = re.search(r"(\d+)$", tid) or _TAIL.search(tid)
    if m is None:  # a token: its last character's neighbours in the alphabet
        return [tid[:-1] + chr(ord(tid[-1]) + d) for d in (-1, 1)] if tid else out
    tail = m.group(1)
    base = 10 if tail.isdigit() else 16
    value = int(tail, base)
    for d in (-2, -1, 1, 2):
        v = value + d
        if v < 0:
            continue
        text = str(v) if base == 10 else format(v, "x")
        if base == 16 and tail != tail.lower():
            text = text.upper()
        out.append(tid[: m.start()] + text.rjust(len(tail), "0"))
    return out


def sequential(a: str, b: str, within: int = 16) -> bool:
    """Whether two ids differ only in a tail that reads as numbers at most ``within`` apart (a
    counter, even with other clients' tasks made in between)."""
    if a == b:
        return False
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    # back up to the start of the number the ids differ in
    while n > 0 and a[n - 1] in "0123456789abcdefABCDEF":
        n -= 1
    ta, tb = a[n:], b[n:]
    for base in (10, 16):
        try:
            va, vb = int(ta, base), int(tb, base)
        except ValueError:
            continue
        return 0 < abs(va - vb) <= within
    return False


def from_request_id(tid: str, rid: int) -> bool:
    """Whether the task id equals or contains the request's id as a number of its own."""
    return tid == str(rid) or str(rid) in re.findall(r"\d+", tid)


# --- discovery --------------------------------------------------------------------------------


async def discover(tt: TaskTarget, wire: Wire) -> tuple[dict, str | None]:
    """Open a session, read ``capabilities.tasks`` and the tools, create one task and time it.
    Returns ``(calibration, why not applicable or None)``; raises :class:`CannotTest`."""
    s = tt.session(wire.t0)
    await s.open()
    try:
        caps = (s.init_result.get("capabilities") or {}).get("tasks")
        if not isinstance(caps, dict):
            return {}, "the target advertises no tasks capability (initialize's capabilities.tasks)"
        call = ((caps.get("requests") or {}).get("tools") or {}).get("call")
        if not isinstance(call, dict):
            return {}, (
                "the target's capabilities.tasks has no requests.tools.call: tools/call cannot "
                "be made a task"
            )
        listing = await wire.ask("A", s, 1, "tools/list", {})
        tools = (result_of(listing) or {}).get("tools") or []
        support = {
            t.get("name"): (t.get("execution") or {}).get("taskSupport")
            for t in tools
            if isinstance(t, dict)
        }
        able = [n for n, v in support.items() if v in ("optional", "required")]
        tool = tt.tool or (able[0] if able else None)
        if tool is None:
            return {}, "no tool of the target says execution.taskSupport optional or required"
        if tool not in support:
            raise CannotTest(f"tool missing: the target has no tool {tool!r}")
        if support[tool] not in ("optional", "required"):
            raise CannotTest(f"tool {tool!r} does not allow tasks (execution.taskSupport)")
        args = DEFAULT_TASK_ARGS if tt.args is None else tt.args
        cal = {
            "tool": tool,
            "args": args,
            "cancel": isinstance(caps.get("cancel"), dict),
            "list": isinstance(caps.get("list"), dict),
        }
        started = time.monotonic()
        made = await create(wire, "A", s, 2, cal)
        tid = task_id_of(made)
        if tid is None:
            raise CannotTest(f"a task-augmented tools/call {tool} got no task: {show(made)[:300]}")
        got = await wire.ask("A", s, 3, "tasks/get", {"taskId": tid})
        if status_of(got) not in ("working", "input_required"):
            raise CannotTest(
                f"the task was not working right after it was made ({show(got)[:200]}); "
                f"give --task-args that make {tool} run at least {MIN_WORKING:.0f} second"
            )
        done = await wire.ask("A", s, 4, "tasks/result", {"taskId": tid}, timeout=60)
        took = time.monotonic() - started
        if result_of(done) is None:
            raise CannotTest(f"the requester's tasks/result failed: {show(done)[:300]}")
        if took < MIN_WORKING:
            raise CannotTest(
                f"too fast: the task ran {took:.2f}s; give --task-args that make {tool} run "
                f"at least {MIN_WORKING:.0f} second"
            )
        cal["duration"] = round(took, 4)
        return cal, None
    finally:
        await s.close()


async def create(wire: Wire, who: str, s: TaskSession, rid: int, cal: dict) -> dict:
    params = {"name": cal["tool"], "arguments": cal["args"], "task": {"ttl": 120_000}}
    return await wire.ask(who, s, rid, "tools/call", params)


async def _two(tt: TaskTarget, t0: float) -> tuple[TaskSession, TaskSession]:
    a, b = tt.session(t0), tt.session(t0)
    await a.open()
    try:
        await b.open()
    except BaseException:
        await a.close()
        raise
    return a, b


# --- the scenarios ----------------------------------------------------------------------------


async def run_isolation(tt: TaskTarget, cal: dict, wire: Wire) -> TaskVerdict:
    v = TaskVerdict("task_isolation")
    a, b = await _two(tt, wire.t0)
    try:
        t1 = task_id_of(await create(wire, "A", a, 739301, cal))
        t2 = task_id_of(await create(wire, "A", a, 739302, cal))
        if t1 is None or t2 is None:
            return _not_judged(v, "the requester's task-augmented tools/call made no task")
        own = await wire.ask("A", a, 739303, "tasks/get", {"taskId": t1})
        if status_of(own) is None:
            return _not_judged(v, f"the requester could not read its own task: {show(own)[:200]}")
        p = {"taskId": t1}
        r = await wire.ask("B", b, 48301, "tasks/get", p)
        if status_of(r) is not None:
            v.add("task_read_across_sessions", exchange("B", "tasks/get", p, r))
        r = await wire.ask("B", b, 48302, "tasks/list", {})
        seen = [x.get("taskId") for x in (result_of(r) or {}).get("tasks") or []]
        if t1 in seen or t2 in seen:
            v.add("task_listed_across_sessions", exchange("B", "tasks/list", {}, r))
        if cal["cancel"]:
            p2 = {"taskId": t2}
            r = await wire.ask("B", b, 48303, "tasks/cancel", p2)
            after = await wire.ask("A", a, 739304, "tasks/get", p2)
            if result_of(r) is not None or status_of(after) == "cancelled":
                v.add(
                    "task_cancel_across_sessions",
                    exchange("B", "tasks/cancel", p2, r)
                    + "; then "
                    + exchange("A", "tasks/get", p2, after),
                )
        wait = 2 * cal["duration"] + 5
        r = await wire.ask("B", b, 48304, "tasks/result", p, timeout=wait)
        if result_of(r) is not None:
            v.add("task_result_across_sessions", exchange("B", "tasks/result", p, r))
        mine = await wire.ask("A", a, 739305, "tasks/result", p, timeout=wait)
        if result_of(mine) is None and not v.findings:
            return _not_judged(v, f"the requester's tasks/result failed: {show(mine)[:200]}")
    finally:
        await a.close()
        await b.close()
    return v


async def run_guessing(tt: TaskTarget, cal: dict, wire: Wire) -> TaskVerdict:
    v = TaskVerdict("task_guessing")
    a, b = await _two(tt, wire.t0)
    try:
        rid_a = 739401
        ta = task_id_of(await create(wire, "A", a, rid_a, cal))
        tb = task_id_of(await create(wire, "B", b, 48401, cal))
        if ta is None or tb is None:
            return _not_judged(v, "a task-augmented tools/call made no task")
        own = await wire.ask("B", b, 48402, "tasks/get", {"taskId": tb})
        if status_of(own) is None:
            return _not_judged(v, f"B could not read its own task: {show(own)[:200]}")
        guesses = [g for g in dict.fromkeys([*neighbours(tb), str(rid_a)]) if g != tb]
        rid = 48410
        for g in guesses:
            rid += 1
            p = {"taskId": g}
            r = await wire.ask("B", b, rid, "tasks/get", p)
            res = result_of(r) or {}
            if status_of(r) is not None and res.get("taskId") != tb:
                v.add(
                    "task_read_across_sessions", "guessed id: " + exchange("B", "tasks/get", p, r)
                )
            if cal["cancel"]:
                rid += 1
                r = await wire.ask("B", b, rid, "tasks/cancel", p)
                if result_of(r) is not None:
                    v.add(
                        "task_cancel_across_sessions",
                        "guessed id: " + exchange("B", "tasks/cancel", p, r),
                    )
        after = await wire.ask("A", a, 739402, "tasks/get", {"taskId": ta})
        if status_of(after) == "cancelled" and not any(
            c == "task_cancel_across_sessions" for c, _ in v.findings
        ):
            v.add(
                "task_cancel_across_sessions",
                "A's task was cancelled by B's guesses: "
                + exchange("A", "tasks/get", {"taskId": ta}, after),
            )
        v.note = f"guesses: {show(guesses)}"
    finally:
        await a.close()
        await b.close()
    return v


async def run_ids(tt: TaskTarget, cal: dict, wire: Wire) -> TaskVerdict:
    v = TaskVerdict("task_ids")
    a = tt.session(wire.t0)
    await a.open()
    try:
        rids = (739501, 739502)
        made = [await create(wire, "A", a, rid, cal) for rid in rids]
        ids = [task_id_of(m) for m in made]
        if None in ids:
            return _not_judged(v, "the requester's task-augmented tools/call made no task")
        for rid, tid, m in zip(rids, ids, made, strict=True):
            assert tid is not None
            if from_request_id(tid, rid):
                v.add(
                    "task_id_guessable",
                    f"task id {show(tid)} derives from request id {rid}: {show(m)[:200]}",
                )
        i1, i2 = ids
        assert i1 is not None and i2 is not None
        if sequential(i1, i2):
            v.add(
                "task_id_guessable", f"consecutive task ids are sequential: {show(i1)}, {show(i2)}"
            )
    finally:
        await a.close()
    return v


async def run_terminal(tt: TaskTarget, cal: dict, wire: Wire) -> TaskVerdict:
    v = TaskVerdict("task_terminal")
    if not cal["cancel"]:
        return _not_judged(v, "the target's capabilities.tasks has no cancel")
    a = tt.session(wire.t0)
    await a.open()
    try:

        async def cancelled_stays() -> None:
            tid = task_id_of(await create(wire, "A", a, 739601, cal))
            if tid is None:
                return
            p = {"taskId": tid}
            await wire.ask("A", a, 739602, "tasks/cancel", p)
            first = await wire.ask("A", a, 739603, "tasks/get", p)
            await asyncio.sleep(cal["duration"] + 1.0)  # past the tool's own end
            later = await wire.ask("A", a, 739604, "tasks/get", p)
            _judge_stays(v, p, first, later)

        async def completed_stays() -> None:
            tid = task_id_of(await create(wire, "A", a, 739611, cal))
            if tid is None:
                return
            p = {"taskId": tid}
            await wire.ask("A", a, 739612, "tasks/result", p, timeout=2 * cal["duration"] + 5)
            first = await wire.ask("A", a, 739613, "tasks/get", p)
            r = await wire.ask("A", a, 739614, "tasks/cancel", p)
            later = await wire.ask("A", a, 739615, "tasks/get", p)
            if status_of(first) in TERMINAL and result_of(r) is not None:
                v.add(
                    "task_terminal_changed",
                    f"a cancel of a {status_of(first)} task was accepted: "
                    + exchange("A", "tasks/cancel", p, r),
                )
            _judge_stays(v, p, first, later)

        await asyncio.gather(cancelled_stays(), completed_stays())
        judged = [e for e in wire.log if e["request"]["id"] in (739604, 739615)]
        if len(judged) < 2:
            return _not_judged(v, "the requester's task-augmented tools/call made no task")
    finally:
        await a.close()
    return v


def _judge_stays(v: TaskVerdict, p: dict, first: dict, later: dict) -> None:
    s1, s2 = status_of(first), status_of(later)
    if s1 in TERMINAL and s2 != s1:
        v.add(
            "task_terminal_changed",
            exchange("A", "tasks/get", p, first)
            + "; later "
            + exchange("A", "tasks/get", p, later),
        )


def _not_judged(v: TaskVerdict, why: str) -> TaskVerdict:
    v.status, v.note = "not_judged", why
    return v


RUNNERS = {
    "task_isolation": run_isolation,
    "task_guessing": run_guessing,
    "task_ids": run_ids,
    "task_terminal": run_terminal,
}
assert tuple(RUNNERS) == TASK_SCENARIOS
__all__ = [
    "RULES",
    "RUNNERS",
    "SOURCE",
    "STDIO_SCOPE",
    "TaskSession",
    "TaskTarget",
    "discover",
    "from_request_id",
    "neighbours",
    "probe_tasks",
    "render_tasks",
    "sequential",
    "summarize_tasks",
]


# --- the probe and its report -----------------------------------------------------------------


async def probe_tasks(
    tt: TaskTarget, scenarios: Any = TASK_SCENARIOS, progress: Any = None
) -> dict:
    """Discover, then run the chosen task scenarios concurrently; returns the report (with every
    scenario's exchanges under ``records``)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    t = tt.target
    wire = Wire(started)
    say(f"looking for a task tool on {t.name}")
    cal, why = await discover(tt, wire)
    chosen = [n for n in TASK_SCENARIOS if n in scenarios]
    if why is not None:
        say(f"  n/a: {why}")
        report = summarize_tasks(t.name, [], {n: why for n in chosen}, None, tt.transport)
        report["records"] = {"discovery": wire.log}
        report["seconds"] = round(time.monotonic() - started, 2)
        return report
    say(f"  {cal['tool']} {show(cal['args'])}: a task of {cal['duration']:.2f}s")

    async def one(name: str) -> tuple[TaskVerdict, list]:
        w = Wire(time.monotonic())
        try:
            v = await RUNNERS[name](tt, cal, w)
        except CannotTest as exc:
            v = _not_judged(TaskVerdict(name), str(exc))
        say(
            f"  {name}: "
            + (v.status if v.status != "judged" else ("defects" if v.findings else "clean"))
        )
        return v, w.log

    results = await asyncio.gather(*(one(n) for n in chosen))
    report = summarize_tasks(t.name, [v for v, _ in results], {}, cal, tt.transport)
    report["records"] = {"discovery": wire.log, **{v.scenario: log for v, log in results}}
    report["seconds"] = round(time.monotonic() - started, 2)
    return report
