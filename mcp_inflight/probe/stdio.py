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
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from .judging import Verdict
from .records import (
    ATTRIBUTE,
    DEFAULT_ARGS,
    DEFAULT_TOOL,
    INVALID_REQUEST,
    MIN_DURATION,
    PROTOCOL_VERSION,
    STDIO_SCENARIOS,
    CannotTest,
    error_of,
    is_response,
    is_server_request,
    is_success,
    progress_token,
    same_id,
    show,
)
from .report import Report, summarize, untested

STDIO_NOT_APPLICABLE = {
    "response_routing": "stdio has one channel: a response is told from another by its id only",
    "server_request_routing": "stdio has one channel: no request of the server can take "
    "another request's stream",
    "collateral_close": "stdio has one connection for every request: none can be closed alone",
    "replay_routing": "stdio has no resumption",
    "two_elicitations": "not run over stdio",
}
LINE_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class StdioScenario:
    """One row: ids of the control and the test; when B is sent (``half`` or ``first`` of A's
    progress, or ``answered``); ``cancel``: a cancel under A's id, meaning A, once B runs."""

    name: str
    control_ids: tuple
    test_ids: tuple
    b_sender: str
    b_when: str
    cancel: bool = False


STDIO_TABLE = {
    s.name: s
    for s in (
        StdioScenario("duplicate_progress", (11, 12), (11, 11), "rogue", "half"),
        StdioScenario("cancel_routing", (31, 32), (31, 31), "rogue", "first", cancel=True),
        StdioScenario("id_types", (8, "9"), (7, "7"), "client", "half"),
        StdioScenario("id_types_cancel", (6, "5"), (4, "4"), "client", "first", cancel=True),
        StdioScenario("reuse", (71, 72), (71, 71), "client", "answered"),
    )
}
assert tuple(STDIO_TABLE) == STDIO_SCENARIOS


@dataclass
class StdioTarget:
    """The command to start (``argv``) and the tool to call; ``env``: extra environment."""

    argv: list[str]
    tool: str
    args: dict
    env: dict = field(default_factory=dict)
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or "stdio: " + shlex.join(self.argv)

    def call(self, rid: Any, token: Any) -> dict:
        params: dict = {"name": self.tool, "arguments": self.args}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


class Channel:
    """One child process: what the probe wrote to its stdin and what came on its stdout, each
    line with its time (seconds from ``t0``)."""

    def __init__(self, target: StdioTarget, t0: float) -> None:
        self.target = target
        self.t0 = t0
        self.proc: asyncio.subprocess.Process | None = None
        self.sent: list[dict] = []
        self.received: list[dict] = []
        self.cancels: list[dict] = []
        self.unparsable: list[str] = []
        self._reader: asyncio.Task | None = None
        self.exit: int | None = None

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 4)

    async def open(self) -> Channel:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.target.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env={**os.environ, **self.target.env},
                limit=LINE_LIMIT,
            )
        except OSError as exc:
            raise CannotTest(f"could not start {shlex.join(self.target.argv)}: {exc}") from None
        self._reader = asyncio.ensure_future(self._read())
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "mcp-inflight-probe", "version": "0.1.0"},
            },
        }
        await self.write(init)
        if not await until(lambda: self.response_to(0) is not None or self.ended, 20):
            raise CannotTest("no answer to initialize within 20s on the child's stdout")
        r = self.response_to(0)
        if r is None or not isinstance(r["msg"].get("result"), dict):
            why = "it exited" if r is None else show(r["msg"])[:200]
            raise CannotTest(f"initialize failed over stdio: {why}")
        await self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # times from here on: the child's start-up (seconds on a busy machine) is not the run's
        shift = time.monotonic() - self.t0
        self.t0 += shift
        for e in self.received:
            e["t"] = round(e["t"] - shift, 4)
        return self

    @property
    def ended(self) -> bool:
        return self._reader is not None and self._reader.done()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self.unparsable.append("a line over the probe's limit")
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                msg = json.loads(text)
            except ValueError:
                self.unparsable.append(text[:200])
                continue
            self.received.append({"t": self.now(), "msg": msg})
            if is_server_request(msg):
                await self._answer(msg)

    async def _answer(self, msg: dict) -> None:
        method = msg.get("method")
        if method == "elicitation/create":
            result: dict | None = {"action": "decline"}
        elif method == "roots/list":
            result = {"roots": []}
        elif method == "ping":
            result = {}
        else:
            result = None
        reply: dict = {"jsonrpc": "2.0", "id": msg.get("id")}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"the probe does not answer {method}"}
        else:
            reply["result"] = result
        await self.write(reply)

    async def write(self, msg: dict) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def request(self, name: str, msg: dict, sender: str, token: Any) -> dict:
        entry = {
            "name": name,
            "sender": sender,
            "method": msg.get("method"),
            "id": msg.get("id"),
            "token": token,
            "sent": self.now(),
        }
        self.sent.append(entry)
        await self.write(msg)
        return entry

    async def cancel(self, rid: Any, means: str) -> None:
        self.cancels.append({"t": self.now(), "id": rid, "means": means})
        await self.write(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "mcp-inflight probe"},
            }
        )

    def response_to(self, rid: Any) -> Any:
        for e in self.received:
            if is_response(e["msg"]) and same_id(e["msg"].get("id"), rid):
                return e
        return None

    def progress(self, token: Any) -> int:
        return sum(1 for e in self.received if progress_token(e["msg"]) == token)

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 3)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        self.exit = proc.returncode
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 2)
            except (TimeoutError, asyncio.CancelledError):
                pass

    def record(self, scenario: str, variant: str) -> dict:
        return {
            "scenario": scenario,
            "variant": variant,
            "transport": "stdio",
            "requests": self.sent,
            "received": self.received,
            "cancels": self.cancels,
            "unparsable": self.unparsable,
            "exit": self.exit,
        }


async def until(pred: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


# --- reading a recorded stdio run (pure) --------------------------------------------------------


def _progress(run: dict, token: Any) -> list[float]:
    return [e["t"] for e in run["received"] if progress_token(e["msg"]) == token]


def _responses(run: dict) -> list[dict]:
    return [e for e in run["received"] if is_response(e["msg"])]


def _request(run: dict, name: str) -> dict:
    return next(r for r in run["requests"] if r["name"] == name)


def _refusal(run: dict, req: dict) -> dict | None:
    """An Invalid Request error under the request's id, or with ``id: null`` naming it in
    ``data`` (or naming nothing), that came after it was sent."""
    for e in _responses(run):
        err = error_of(e["msg"])
        if err is None or e["t"] < req["sent"] or err.get("code") != INVALID_REQUEST:
            continue
        rid = e["msg"].get("id")
        data = err.get("data")
        named = data.get("id") if isinstance(data, dict) and "id" in data else rid
        if (rid is None or same_id(rid, req["id"])) and (
            named is None or same_id(named, req["id"])
        ):
            return {
                "status": None,
                "code": err.get("code"),
                "message": err.get("message"),
                "id": rid,
            }
    return None


def _typed(run: dict, rid: Any) -> list[dict]:
    return [e for e in _responses(run) if same_id(e["msg"].get("id"), rid)]


def _control_problems(run: dict, cal: dict, sc: StdioScenario) -> list[str]:
    out = []
    a, b = _request(run, "A"), _request(run, "B")
    for req in (a, b):
        if sc.cancel and req is a:
            continue
        rs = _typed(run, req["id"])
        if not rs or not is_success(rs[-1]["msg"]):
            got = show(rs[-1]["msg"])[:200] if rs else "nothing"
            out.append(f"{req['name']} (id {show(req['id'])}) got {got}, not a result")
        n = len(_progress(run, req["token"]))
        if n < cal["steps"]:
            out.append(f"{req['name']} reported {n} of {cal['steps']} progress notifications")
    if sc.cancel:
        n = len(_progress(run, a["token"]))
        if n >= cal["steps"] or any(is_success(e["msg"]) for e in _typed(run, a["id"])):
            out.append(
                f"A (id {show(a['id'])}) ran on after the cancel for its own id ({n} of "
                f"{cal['steps']} progress notifications): the server does not stop a cancelled "
                f"request, so a misdirected cancel cannot be told"
            )
    if run.get("unparsable"):
        out.append(f"stdout carried lines that are not JSON: {run['unparsable'][0]!r}")
    return out


def judge_stdio(name: str, control: dict, test: dict, cal: dict) -> Verdict:
    """The verdict of one stdio scenario from its two runs."""
    sc = STDIO_TABLE[name]
    v = Verdict(name)
    problems = _control_problems(control, cal, sc)
    if problems:
        v.status = "not_judged"
        v.note = "the control run (distinct ids) failed: " + "; ".join(problems)
        return v
    a, b = _request(test, "A"), _request(test, "B")
    steps = cal["steps"]
    ref = _refusal(test, b) if sc.b_sender == "rogue" else None
    v.refusal = ref
    prog_a, prog_b = _progress(test, a["token"]), _progress(test, b["token"])
    types = name.startswith("id_types")

    def cls(c: str) -> str:
        return "id_type_confusion" if types else c

    if sc.b_sender == "client":
        wrong = _refusal(test, b)
        if wrong is not None and not (name == "reuse" and not _typed(test, a["id"])):
            v.add(
                "reuse_refused" if name == "reuse" else "id_type_confusion",
                f"B (id {show(b['id'])}) was refused ({show(wrong['message'])}) though "
                + (
                    f"A (same id) had been answered at {_typed(test, a['id'])[0]['t']:.2f}s"
                    if name == "reuse"
                    else f"only A's id {show(a['id'])}, a different one, was in flight"
                ),
            )
            return v
    if ref is not None and prog_b:
        v.add(
            "misrouted_notification",
            f"B (id {show(b['id'])}) was refused, yet {len(prog_b)} progress notification(s) "
            f"for its token came from {prog_b[0]:.2f}s",
        )
    if sc.cancel:
        cancel_t = test["cancels"][0]["t"] if test["cancels"] else None
        late = [t for t in prog_a if cancel_t is not None and t > cancel_t + 0.05]
        if len(prog_a) >= steps:
            v.add(
                cls("cancel_misdirected"),
                f"A (id {show(a['id'])}) ran all {steps} steps though the cancel for its id came "
                f"at {cancel_t:.2f}s"
                + (f" ({len(late)} of its progress notifications after it)" if late else ""),
            )
        if ref is None and len(prog_b) < steps:
            v.add(
                cls("cancel_misdirected"),
                f"B (id {show(b['id'])}, never cancelled) stopped at {len(prog_b)} of {steps} "
                f"progress notifications after the cancel meant for A at {cancel_t:.2f}s",
            )
    # the responses: every admitted, uncancelled request needs one success under its own id
    need = [r for r in (a, b) if not (r is b and ref is not None) and not (sc.cancel and r is a)]
    if same_id(a["id"], b["id"]):
        got = [e for e in _typed(test, a["id"]) if is_success(e["msg"])]
        if sc.cancel and ref is None and len(prog_b) >= steps:
            # one result expected: B's; one that came before B could have finished is A's
            floor = b["sent"] + ATTRIBUTE * cal["duration"]
            early = [e for e in got if e["t"] < floor]
            for e in early:
                v.add(
                    "misrouted_response",
                    f"a result under id {show(a['id'])} came at {e['t']:.2f}s, before B (sent at "
                    f"{b['sent']:.2f}s) could have finished: it is A's, which was cancelled",
                )
        if len(got) < len(need):
            v.add(
                "lost_response",
                f"{len(need)} request(s) under id {show(a['id'])} were admitted and not "
                f"cancelled; {len(got)} result(s) came under that id"
                + (f" (A ran {len(prog_a)}, B {len(prog_b)} of {steps} steps)" if need else ""),
            )
    else:
        hit_b = sc.cancel and ref is None and len(prog_b) < steps  # told above
        for r in need:
            own = [e for e in _typed(test, r["id"]) if is_success(e["msg"])]
            if not own and not (r is b and hit_b):
                v.add(cls("lost_response"), f"{r['name']} (id {show(r['id'])}) got no result")
        for r in (a, b):
            own = [e for e in _typed(test, r["id"]) if is_success(e["msg"])]
            if len(own) > 1:
                v.add(
                    cls("misrouted_response"),
                    f"{len(own)} results came under id {show(r['id'])} (at "
                    + ", ".join(f"{e['t']:.2f}s" for e in own)
                    + "), which only one request had",
                )
        if len(prog_b) < steps and not sc.cancel:
            v.add(
                cls("lost_response"),
                f"B (id {show(b['id'])}) reported {len(prog_b)} of {steps} progress notifications",
            )
    if name == "reuse":
        own = [e for e in _typed(test, b["id"]) if is_success(e["msg"]) and e["t"] > b["sent"]]
        if not own:
            v.add("lost_response", f"B (id {show(b['id'])}, reused after A's answer) got no result")
    return v


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
                    or _refusal(ch.record("", ""), b) is not None
                    or ch.progress(tok_a) >= half
                ),
                cal["duration"] + 1,
            )
            await ch.cancel(ida, "A")

        def settled() -> bool:
            rec = ch.record("", "")
            b_done = ch.progress(tok_b) >= cal["steps"] or _refusal(rec, b) is not None
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

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(go())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()
