"""The stdio probe's transport: a child process started from a command, spoken to in
newline-delimited JSON-RPC on its stdin and stdout, every line kept with its arrival time.

:class:`Channel` is one process (``initialize`` done on :meth:`Channel.open`, server-to-client
requests answered: elicitation declined, roots empty, pings); :class:`StdioSession` is the same
channel seen as a session that sends a request and waits for the response under its id, the
form the task scenarios (:mod:`.task_scenarios`) speak to every transport through.  The
scenarios of the id probe and their verdicts are in :mod:`.stdio_judging`, the runs in
:mod:`.stdio`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from .records import (
    INITIALIZE,
    CannotTest,
    is_response,
    is_server_request,
    progress_token,
    same_id,
    show,
)

LINE_LIMIT = 4 * 1024 * 1024


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
        init = INITIALIZE
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


class StdioSession:
    """One process of the command as a session: :meth:`request` writes a request and waits for
    the response under its id.  A second session is a second process: on stdio a server has one
    client, so "another client" can only be another process of the same command."""

    def __init__(self, target: StdioTarget, t0: float) -> None:
        self.channel = Channel(target, t0)
        self.init_result: dict = {}

    async def open(self) -> StdioSession:
        ch = self.channel
        try:
            await ch.open()
        except BaseException:
            await ch.close()
            raise
        r = ch.response_to(0)
        self.init_result = r["msg"]["result"] if r is not None else {}
        return self

    async def request(self, msg: dict, timeout: float = 10.0) -> Any:
        ch, rid = self.channel, msg.get("id")
        await ch.request(str(msg.get("method")), msg, "client", None)
        if not await until(lambda: ch.response_to(rid) is not None or ch.ended, timeout):
            raise CannotTest(f"no response to {msg.get('method')} within {timeout:.0f}s")
        r = ch.response_to(rid)
        if r is None:
            raise CannotTest(f"the process ended before it answered {msg.get('method')}")
        return r["msg"]

    async def close(self) -> None:
        await self.channel.close()
