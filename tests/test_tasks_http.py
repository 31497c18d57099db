"""2025-11-25 tasks over real Streamable HTTP: uvicorn on a loopback port, raw JSON-RPC with
httpx (the official ``mcp`` client 2.3.0 has no task API: no ``tasks/get`` or ``tasks/result``
in its client, only ``mcp_types`` models), the wire trace checked by the model
(``support/oracle.py``).

What is checked: a task-augmented ``tools/call`` answers ``CreateTaskResult`` at once and the
tool runs on; the requester polls it, waits on ``tasks/result`` (status notifications come on
that stream, then the tool's result) and reads the result again; another session gets the
unknown-id error for every method on the task and does not list it; ``tasks/cancel`` makes a
task ``cancelled`` before its answer and a late completion does not change it; the ttl deletes
a task; the session's end cancels its tasks; ``execution.taskSupport`` is honoured."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import httpx
import pytest

from mcp_inflight.impl.server import Server
from support.http_server import serving, sse_stream, start
from support.rpc_client import NumberedClient, messages, run
from support.sessions import http_session as session
from support.sessions import initialize

#: what the tools did, seen from the test's thread
EVENTS: list[str] = []
LOCK = threading.Lock()


def note(what: str) -> None:
    with LOCK:
        EVENTS.append(what)


def build() -> Server:
    server = Server("tasks-http", max_task_ttl_ms=60_000)

    @server.tool(task_support="optional")
    async def work(ctx, label: str, seconds: float = 0.3) -> str:
        """Sleep, report progress, answer."""
        await asyncio.sleep(seconds)
        await ctx.progress(1, 1, f"{label} done")
        note(f"work {label} ends")
        return f"done:{label}"

    @server.tool(task_support="optional")
    async def stubborn(ctx, label: str, seconds: float = 0.5) -> str:
        """Finish even when cancelled (the late completion of a cancelled task)."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            note(f"stubborn {label} cancelled")
            await asyncio.sleep(seconds)
        note(f"stubborn {label} ends")
        return f"late:{label}"

    @server.tool(task_support="optional")
    async def confirm(ctx, label: str) -> str:
        """Ask the user (the task goes input_required), then answer."""
        answer = await ctx.elicit(f"go on with {label}?")
        return f"{label}:{answer['action']}"

    @server.tool(task_support="required")
    async def batch(ctx) -> str:
        return "batch"

    @server.tool()
    async def plain(ctx) -> str:
        return "plain"

    return server


@pytest.fixture(scope="module")
def srv():
    yield from serving(build())


class Client(NumberedClient):
    """One 2025-11-25 session: numbered requests, JSON or SSE answers."""

    def __init__(self, c: httpx.AsyncClient, url: str, headers: dict) -> None:
        super().__init__(c, url, headers, first=100)

    async def ask(self, method: str, params: dict | None = None) -> tuple[dict, list]:
        """The response to ``method`` and the messages before it on its stream."""
        r = await self.post(method, params)
        assert r.status_code == 200, r.text
        msgs = messages(r)
        assert msgs[-1].get("id") == self.n
        return msgs[-1], msgs[:-1]

    async def task(self, name: str, args: dict, ttl: int | None = 60_000) -> dict:
        res, _ = await self.ask(
            "tools/call", {"name": name, "arguments": args, "task": {"ttl": ttl}}
        )
        return res["result"]["task"]


@contextlib.asynccontextmanager
async def client(srv):
    async with httpx.AsyncClient(timeout=10) as c:
        yield Client(c, srv.url, await session(c, srv.url))


def test_capability_and_tool_listing(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            r = await c.post(
                srv.url,
                json=initialize(),
                headers={
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                },
            )
            caps = r.json()["result"]["capabilities"]
            assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        async with client(srv) as cl:
            res, _ = await cl.ask("tools/list", {})
            ex = {t["name"]: t.get("execution") for t in res["result"]["tools"]}
            assert ex["work"] == {"taskSupport": "optional"}
            assert ex["batch"] == {"taskSupport": "required"}
            assert ex["plain"] is None

    run(go())


def test_a_task_is_created_polled_and_its_result_read_by_its_requester(srv):
    async def go():
        async with client(srv) as cl:
            t0 = time.monotonic()
            task = await cl.task("work", {"label": "a", "seconds": 0.4})
            assert time.monotonic() - t0 < 0.4  # answered before the tool ends
            tid = task["taskId"]
            assert task["status"] == "working" and task["ttl"] == 60_000
            assert task["createdAt"].endswith("Z") and task["lastUpdatedAt"]
            got, _ = await cl.ask("tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "working"
            listed, _ = await cl.ask("tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [tid]
            assert "nextCursor" not in listed["result"]
            # tasks/result blocks until the task is terminal; the task's messages come first
            res, before = await cl.ask("tasks/result", {"taskId": tid})
            assert res["result"]["content"] == [{"type": "text", "text": "done:a"}]
            assert res["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": tid}
            statuses = [
                m["params"]["status"] for m in before if m["method"] == "notifications/tasks/status"
            ]
            assert statuses == ["completed"]
            assert all(m["params"]["taskId"] == tid for m in before if "taskId" in m["params"])
            got, _ = await cl.ask("tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "completed"
            # the result is there on every read, not once (the model's result_on_every_read)
            again, _ = await cl.ask("tasks/result", {"taskId": tid})
            assert again["result"] == res["result"]

    run(go())


def test_another_session_can_neither_read_nor_cancel_nor_list_the_task(srv):
    async def go():
        async with client(srv) as owner, client(srv) as other:
            tid = (await owner.task("work", {"label": "b", "seconds": 0.3}))["taskId"]
            unknown = "x" * len(tid)
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                theirs, _ = await other.ask(method, {"taskId": tid})
                none, _ = await other.ask(method, {"taskId": unknown})
                assert theirs["error"]["code"] == none["error"]["code"] == -32602
                assert theirs["error"]["message"].replace(tid, unknown) == none["error"]["message"]
            listed, _ = await other.ask("tasks/list", {})
            assert listed["result"]["tasks"] == []
            # untouched: the owner still reads it to its end
            res, _ = await owner.ask("tasks/result", {"taskId": tid})
            assert res["result"]["content"][0]["text"] == "done:b"

    run(go())


def test_cancel_is_sticky_and_a_late_completion_does_not_change_it(srv):
    async def go():
        async with client(srv) as cl:
            tid = (await cl.task("stubborn", {"label": "c", "seconds": 0.4}))["taskId"]
            res, _ = await cl.ask("tasks/cancel", {"taskId": tid})
            assert res["result"]["status"] == "cancelled"  # before the answer
            waited, _ = await cl.ask("tasks/result", {"taskId": tid})
            assert "error" in waited and "cancelled" in waited["error"]["message"]
            deadline = time.monotonic() + 5
            while "stubborn c ends" not in EVENTS and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert EVENTS.index("stubborn c cancelled") < EVENTS.index("stubborn c ends")
            got, _ = await cl.ask("tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "cancelled"
            # a terminal task's cancel is refused (-32602)
            again, _ = await cl.ask("tasks/cancel", {"taskId": tid})
            assert again["error"]["code"] == -32602

    run(go())


def test_the_ttl_deletes_a_task_and_a_long_ttl_is_capped(srv):
    async def go():
        async with client(srv) as cl:
            task = await cl.task("work", {"label": "d", "seconds": 5}, ttl=300)
            assert task["ttl"] == 300
            tid = task["taskId"]
            got, _ = await cl.ask("tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "working"
            waited, _ = await cl.ask("tasks/result", {"taskId": tid})  # woken by the deletion
            assert waited["error"]["code"] == -32602
            got, _ = await cl.ask("tasks/get", {"taskId": tid})
            assert got["error"]["code"] == -32602
            listed, _ = await cl.ask("tasks/list", {})
            assert tid not in [t["taskId"] for t in listed["result"]["tasks"]]
            capped = await cl.task("work", {"label": "e", "seconds": 0}, ttl=10**9)
            assert capped["ttl"] == 60_000
            unbounded = await cl.task("work", {"label": "f", "seconds": 0}, ttl=None)
            assert unbounded["ttl"] == 60_000
            res, _ = await cl.ask(
                "tools/call", {"name": "work", "arguments": {"label": "n"}, "task": {"ttl": -1}}
            )
            assert res["error"]["code"] == -32602

    run(go())


def test_the_session_end_cancels_its_tasks(srv):
    async def go():
        async with client(srv) as cl:
            tid = (await cl.task("work", {"label": "g", "seconds": 2}))["taskId"]
            r = await cl.c.delete(cl.url, headers=cl.h)
            assert r.status_code == 200
        async with client(srv) as other:
            got, _ = await other.ask("tasks/get", {"taskId": tid})
            assert got["error"]["code"] == -32602
        await asyncio.sleep(0.1)
        assert "work g ends" not in EVENTS  # its work was stopped

    run(go())


def test_task_support_is_honoured(srv):
    async def go():
        async with client(srv) as cl:
            res, _ = await cl.ask("tools/call", {"name": "batch", "arguments": {}})
            assert res["error"]["code"] == -32601  # required: a plain call is refused
            res, _ = await cl.ask(
                "tools/call", {"name": "plain", "arguments": {}, "task": {"ttl": 1000}}
            )
            assert res["error"]["code"] == -32601  # not a task tool
            res, _ = await cl.ask(
                "tools/call", {"name": "work", "arguments": {"label": "h", "seconds": 0}}
            )
            assert res["result"]["content"][0]["text"] == "done:h"  # optional: plain is fine
            task = await cl.task("batch", {})
            res, _ = await cl.ask("tasks/result", {"taskId": task["taskId"]})
            assert res["result"]["content"][0]["text"] == "batch"

    run(go())


def test_a_server_without_task_tools_ignores_the_task_field():
    server = Server("no-tasks")

    @server.tool()
    async def echo(ctx, text: str) -> str:
        return text

    s = start(server)
    try:

        async def go():
            async with client(s) as cl:
                res, _ = await cl.ask(
                    "tools/call",
                    {"name": "echo", "arguments": {"text": "x"}, "task": {"ttl": 1000}},
                )
                assert res["result"]["content"][0]["text"] == "x"
                res, _ = await cl.ask("tasks/list", {})
                assert res["error"]["code"] == -32601

        run(go())
    finally:
        s.stop()


def test_the_tasks_capability_follows_the_tools():
    server = Server("later")

    @server.tool()
    async def f(ctx) -> str:
        return "f"

    assert not server.serves_tasks and "tasks" not in server.capabilities_for("2025-11-25")
    server.tool(name="f", task_support="optional")(f)  # replaced under the same name
    assert server.serves_tasks and "tasks" in server.capabilities_for("2025-11-25")
    ext = server.capabilities_for("2026-07-28")["extensions"]
    assert "io.modelcontextprotocol/tasks" in ext
    with pytest.raises(ValueError, match="task_support"):
        server.tool(name="g", task_support="sometimes")(f)


def test_a_question_of_the_task_goes_on_the_tasks_result_stream(srv):
    """2025-11-25: the work asks, the task is input_required; the client calls tasks/result,
    whose stream carries the question (with the task's related-task key); the answer makes the
    task work again, and the same stream ends with the status changes and the result."""

    async def go():
        async with client(srv) as cl:
            tid = (await cl.task("confirm", {"label": "q"}))["taskId"]
            deadline = time.monotonic() + 5
            while True:
                got, _ = await cl.ask("tasks/get", {"taskId": tid})
                if got["result"]["status"] == "input_required" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert got["result"]["status"] == "input_required"
            body = {
                "jsonrpc": "2.0",
                "id": 900,
                "method": "tasks/result",
                "params": {"taskId": tid},
            }
            seen = []
            async with cl.c.stream("POST", cl.url, json=body, headers=cl.h) as resp:
                async for msg in sse_stream(resp):
                    seen.append(msg)
                    if msg.get("method") == "elicitation/create":
                        related = msg["params"]["_meta"]["io.modelcontextprotocol/related-task"]
                        assert related == {"taskId": tid}
                        answer = {
                            "jsonrpc": "2.0",
                            "id": msg["id"],
                            "result": {"action": "accept", "content": {}},
                        }
                        r = await cl.c.post(cl.url, json=answer, headers=cl.h)
                        assert r.status_code == 202
                    if msg.get("id") == 900:
                        break
            kinds = [m.get("method") or "response" for m in seen]
            statuses = [
                m["params"]["status"]
                for m in seen
                if m.get("method") == "notifications/tasks/status"
            ]
            assert kinds[0] == "elicitation/create" and kinds[-1] == "response"
            assert statuses == ["working", "completed"]
            assert seen[-1]["result"]["content"][0]["text"] == "q:accept"

    run(go())
