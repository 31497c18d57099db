"""2025-11-25 tasks over stdio: ``mcp-inflight serve --transport stdio --fixtures tasks`` as a
real subprocess, newline-delimited JSON-RPC on its pipes, its trace checked by the model.

On stdio a task belongs to the connection: its status notifications and its work's progress
come on the one channel, unasked; a second process is a second connection that cannot see
the first one's tasks."""

from __future__ import annotations

import asyncio
import json
import sys

from support import oracle
from support.sessions import INITIALIZED, initialize


async def spawn():
    argv, o = oracle.traced_argv(
        [
            sys.executable,
            "-m",
            "mcp_inflight",
            "serve",
            "--transport",
            "stdio",
            "--fixtures",
            "tasks",
        ],
        "stdio tasks server",
    )
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    return oracle.watch(o, proc)


class Conn:
    def __init__(self, proc) -> None:
        self.proc = proc
        self.seen: list[dict] = []  # every message read, in order

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def read(self) -> dict:
        line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        msg = json.loads(line)
        self.seen.append(msg)
        return msg

    async def ask(self, rid, method: str, params: dict) -> dict:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = await self.read()
            if msg.get("id") == rid and "method" not in msg:
                return msg

    async def until(self, pred) -> dict:
        for m in self.seen:
            if pred(m):
                return m
        while True:
            m = await self.read()
            if pred(m):
                return m

    async def open(self) -> dict:
        res = await self.ask(0, "initialize", initialize(0)["params"])
        self.send(INITIALIZED)
        return res

    async def close(self) -> None:
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 10)


def status_of(tid):
    return lambda m: (
        m.get("method") == "notifications/tasks/status" and m["params"]["taskId"] == tid
    )


def test_tasks_over_stdio():
    async def go():
        a, b = Conn(await spawn()), Conn(await spawn())
        try:
            init = await a.open()
            assert "tools" in init["result"]["capabilities"]["tasks"]["requests"]
            await b.open()
            made = await a.ask(
                1,
                "tools/call",
                {
                    "name": "job",
                    "arguments": {"label": "s", "seconds": 0.3},
                    "task": {"ttl": 30_000},
                    "_meta": {"progressToken": "p1"},
                },
            )
            tid = made["result"]["task"]["taskId"]
            assert made["result"]["task"]["status"] == "working"
            got = await a.ask(2, "tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "working"
            # the status notification comes unasked on the channel; the work's progress does
            # not outlive its request (the session model ends a request's notifications there)
            done = await a.until(status_of(tid))
            assert done["params"]["status"] == "completed"
            assert not [m for m in a.seen if m.get("method") == "notifications/progress"]
            res = await a.ask(3, "tasks/result", {"taskId": tid})
            assert res["result"]["content"][0]["text"] == "job:s"
            # another connection: the same answer as for an unknown id
            for k, method in enumerate(("tasks/get", "tasks/result", "tasks/cancel")):
                theirs = await b.ask(10 + k, method, {"taskId": tid})
                assert theirs["error"]["code"] == -32602
            listed = await b.ask(20, "tasks/list", {})
            assert listed["result"]["tasks"] == []
            # cancel: cancelled before the answer, notified, and sticky past the late completion
            made = await a.ask(
                4,
                "tools/call",
                {"name": "stubborn", "arguments": {"label": "t", "seconds": 0.3}, "task": {}},
            )
            tid2 = made["result"]["task"]["taskId"]
            res = await a.ask(5, "tasks/cancel", {"taskId": tid2})
            assert res["result"]["status"] == "cancelled"
            note = await a.until(status_of(tid2))
            assert note["params"]["status"] == "cancelled"
            await asyncio.sleep(0.8)  # the work completes late
            got = await a.ask(6, "tasks/get", {"taskId": tid2})
            assert got["result"]["status"] == "cancelled"
            notes = [m["params"]["status"] for m in a.seen if status_of(tid2)(m)]
            assert notes == ["cancelled"]  # nothing after a terminal status
            # a question of the task: input_required, then asked on tasks/result's stream
            made = await a.ask(
                7, "tools/call", {"name": "confirm", "arguments": {"label": "u"}, "task": {}}
            )
            tid3 = made["result"]["task"]["taskId"]
            note = await a.until(status_of(tid3))
            assert note["params"]["status"] == "input_required"
            a.send(
                {"jsonrpc": "2.0", "id": 8, "method": "tasks/result", "params": {"taskId": tid3}}
            )
            question = await a.until(lambda m: m.get("method") == "elicitation/create")
            assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": tid3
            }
            a.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
            res = await a.until(lambda m: m.get("id") == 8 and "method" not in m)
            assert res["result"]["content"][0]["text"] == "u:decline"
            notes = [m["params"]["status"] for m in a.seen if status_of(tid3)(m)]
            assert notes == ["input_required", "working", "completed"]
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())
