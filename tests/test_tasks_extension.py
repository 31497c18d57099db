"""The 2026-07-28 tasks extension (SEP-2663) over real Streamable HTTP: uvicorn on loopback,
raw JSON-RPC with httpx (the ``mcp`` 2.3.0 client has no task API), each POST its own scope,
the wire trace checked by the model.

The server decides: a tool that may run as a task runs as one when the request's client
capabilities name ``io.modelcontextprotocol/tasks``; ``tasks/get`` carries the result once
terminal; ``tasks/cancel`` is acknowledged and honoured when the work stops (a work that
finishes anyway completes); a question of the work makes the task ``input_required`` until
``tasks/update`` answers every pending key; without the extension the methods are refused
-32021, and a required-task tool too."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from mcp_inflight.impl.server import JsonRpcError, Server
from support.http_server import serving
from support.rpc_client import MODERN_HEADERS as ACCEPT
from support.rpc_client import TASKS_EXT as EXT
from support.rpc_client import NumberedClient, messages, run
from support.rpc_client import modern_meta as meta


def build() -> Server:
    server = Server("tasks-extension")

    @server.tool(task_support="optional")
    async def work(ctx, label: str, seconds: float = 0.2) -> str:
        await asyncio.sleep(seconds)
        return f"done:{label}"

    @server.tool(task_support="optional")
    async def stubborn(ctx, seconds: float = 0.3) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            await asyncio.sleep(seconds)
        return "finished anyway"

    @server.tool(task_support="optional")
    async def broken(ctx) -> str:
        raise JsonRpcError(-32603, "broken inside")

    @server.tool(task_support="optional")
    async def two_questions(ctx) -> str:
        a, b = await asyncio.gather(ctx.elicit("first?"), ctx.elicit("second?"))
        return f"{a['content']['v']}+{b['content']['v']}"

    @server.tool(task_support="required")
    async def only_task(ctx) -> str:
        return "task"

    @server.tool()
    async def greet(ctx) -> str:
        return "hello"

    return server


@pytest.fixture(scope="module")
def srv():
    yield from serving(build())


class Client(NumberedClient):
    def __init__(self, c: httpx.AsyncClient, url: str) -> None:
        super().__init__(c, url, ACCEPT)

    async def ask(self, method: str, params: dict, extension: bool = True) -> dict:
        return messages(await self.post(method, {**params, "_meta": meta(extension)}))[-1]

    async def until(self, tid: str, statuses: tuple[str, ...]) -> dict:
        deadline = time.monotonic() + 10
        while True:
            got = (await self.ask("tasks/get", {"taskId": tid}))["result"]
            if got["status"] in statuses or time.monotonic() > deadline:
                return got
            await asyncio.sleep(0.05)


def client_run(srv, body):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            await body(Client(c, srv.url))

    run(go())


def test_discover_advertises_the_extension(srv):
    async def body(cl):
        res = (await cl.ask("server/discover", {}))["result"]
        assert res["capabilities"]["extensions"][EXT] == {}
        assert "tasks" not in res["capabilities"]

    client_run(srv, body)


def test_the_server_decides_and_tasks_get_inlines_the_result(srv):
    async def body(cl):
        made = (await cl.ask("tools/call", {"name": "work", "arguments": {"label": "x"}}))["result"]
        assert made["resultType"] == "task" and made["status"] == "working"
        assert isinstance(made["ttlMs"], int) and "ttl" not in made and "task" not in made
        tid = made["taskId"]
        first = (await cl.ask("tasks/get", {"taskId": tid}))["result"]
        assert first["resultType"] == "complete" and "result" not in first
        done = await cl.until(tid, ("completed",))
        assert done["result"]["content"] == [{"type": "text", "text": "done:x"}]
        again = (await cl.ask("tasks/get", {"taskId": tid}))["result"]
        assert again["result"] == done["result"]  # on every read
        # a sync-only tool stays sync, even with a (legacy) task field
        sync = await cl.ask("tools/call", {"name": "greet", "arguments": {}, "task": {"ttl": 5}})
        assert sync["result"]["resultType"] == "complete" and "taskId" not in sync["result"]

    client_run(srv, body)


def test_a_protocol_error_fails_the_task_with_the_error(srv):
    async def body(cl):
        tid = (await cl.ask("tools/call", {"name": "broken", "arguments": {}}))["result"]["taskId"]
        got = await cl.until(tid, ("failed",))
        assert got["status"] == "failed" and got["error"]["code"] == -32603
        assert "result" not in got

    client_run(srv, body)


def test_cancel_is_acknowledged_and_honoured(srv):
    async def body(cl):
        tid = (
            await cl.ask("tools/call", {"name": "work", "arguments": {"label": "c", "seconds": 30}})
        )["result"]["taskId"]
        ack = (await cl.ask("tasks/cancel", {"taskId": tid}))["result"]
        assert ack == {"resultType": "complete"}
        assert (await cl.until(tid, ("cancelled",)))["status"] == "cancelled"
        # a terminal task's cancel: the same acknowledgement, and it stays cancelled
        assert (await cl.ask("tasks/cancel", {"taskId": tid}))["result"] == ack
        assert (await cl.ask("tasks/get", {"taskId": tid}))["result"]["status"] == "cancelled"
        # a work that finishes anyway completes (the cancel is cooperative on 2026-07-28)
        tid = (await cl.ask("tools/call", {"name": "stubborn", "arguments": {}}))["result"][
            "taskId"
        ]
        await cl.ask("tasks/cancel", {"taskId": tid})
        got = await cl.until(tid, ("completed", "cancelled"))
        assert got["status"] == "completed"
        assert got["result"]["content"][0]["text"] == "finished anyway"

    client_run(srv, body)


def test_input_required_until_every_key_is_answered(srv):
    async def body(cl):
        tid = (await cl.ask("tools/call", {"name": "two_questions", "arguments": {}}))["result"][
            "taskId"
        ]
        got = await cl.until(tid, ("input_required",))
        keys = sorted(got["inputRequests"])
        assert len(keys) == 2
        assert all(got["inputRequests"][k]["method"] == "elicitation/create" for k in keys)
        ack = await cl.ask(
            "tasks/update",
            {"taskId": tid, "inputResponses": {keys[0]: {"action": "accept", "content": {"v": 1}}}},
        )
        assert ack["result"] == {"resultType": "complete"}
        got = (await cl.ask("tasks/get", {"taskId": tid}))["result"]
        assert got["status"] == "input_required" and list(got["inputRequests"]) == [keys[1]]
        await cl.ask(
            "tasks/update",
            {"taskId": tid, "inputResponses": {keys[1]: {"action": "accept", "content": {"v": 2}}}},
        )
        got = await cl.until(tid, ("completed",))
        assert got["result"]["content"][0]["text"] == "1+2"

    client_run(srv, body)


def test_without_the_extension(srv):
    async def body(cl):
        for method, params in (
            ("tasks/get", {"taskId": "t"}),
            ("tasks/cancel", {"taskId": "t"}),
            ("tasks/update", {"taskId": "t", "inputResponses": {}}),
        ):
            res = await cl.ask(method, params, extension=False)
            assert res["error"]["code"] == -32021
        res = await cl.ask("tools/call", {"name": "only_task", "arguments": {}}, extension=False)
        assert res["error"]["code"] == -32021
        assert res["error"]["data"]["requiredCapabilities"] == {"extensions": {EXT: {}}}
        res = await cl.ask(
            "tools/call", {"name": "work", "arguments": {"label": "s"}}, extension=False
        )
        assert res["result"]["resultType"] == "complete"  # falls through to a plain call
        # removed in the extension
        for method in ("tasks/result", "tasks/list"):
            res = await cl.ask(method, {"taskId": "t"})
            assert res["error"]["code"] == -32601
        res = await cl.ask("tasks/get", {"taskId": "no-such-task"})
        assert res["error"]["code"] == -32602

    client_run(srv, body)
