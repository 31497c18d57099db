"""2025-11-25 tasks with the official Python client: the ``mcp`` SDK's 1.x line has a task API
(``session.experimental``: ``call_tool_as_task``, ``get_task``, ``get_task_result``,
``list_tasks``, ``cancel_task``; its 2.x line has none), run against
``mcp_inflight/fixtures/tasks.py`` on uvicorn on a loopback port.

The SDK 1.x line lives in the ``test-mcp1`` environment (``.ci/run``'s last stage runs this
file there); beside mcp 2.x the test skips, saying why.  The client makes a task and polls it
to its result, answers the question of an ``input_required`` task on its ``tasks/result``
stream through its elicitation callback, lists its tasks and cancels one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

experimental = pytest.importorskip(
    "mcp.client.experimental.tasks",
    reason="the official Python client's task API is in the mcp 1.x line (test-mcp1 extra)",
)

from mcp import ClientSession, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from mcp_inflight.fixtures.tasks import build  # noqa: E402
from support.http_server import start  # noqa: E402

# the SDK says its 1.x task API will leave with 2.0 (tasks return as an extension)
pytestmark = pytest.mark.filterwarnings(
    "ignore:The experimental tasks API is deprecated:DeprecationWarning"
)


@pytest.fixture(scope="module")
def srv():
    s = start(build())
    yield s
    s.stop()


async def _until_terminal(session: ClientSession, task_id: str, seconds: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while True:
        got = await session.experimental.get_task(task_id)
        if got.status in ("completed", "failed", "cancelled") or loop.time() > end:
            return got
        await asyncio.sleep(0.1)


def test_the_official_python_client_runs_tasks_on_our_server(srv):
    asked: list[str] = []
    notes: list[str] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def on_message(msg: Any) -> None:
        root = getattr(msg, "root", None)
        method = getattr(root, "method", None)
        if method is not None:
            notes.append(method)

    async def go() -> dict[str, Any]:
        async with streamable_http_client(srv.url) as (read, write, _):
            async with ClientSession(
                read, write, elicitation_callback=elicit, message_handler=on_message
            ) as session:
                init = await session.initialize()
                made = await session.experimental.call_tool_as_task(
                    "job", {"label": "py", "seconds": 0.2}
                )
                job = made.task.taskId
                assert made.task.status == "working"
                done = await _until_terminal(session, job)
                result = await session.experimental.get_task_result(job, types.CallToolResult)
                asked_task = await session.experimental.call_tool_as_task(
                    "confirm", {"label": "py"}
                )
                # tasks/result blocks until the task ends; the question comes on its stream
                confirmed = await session.experimental.get_task_result(
                    asked_task.task.taskId, types.CallToolResult
                )
                slow = await session.experimental.call_tool_as_task(
                    "stubborn", {"label": "py", "seconds": 30}
                )
                listed = await session.experimental.list_tasks()
                cancelled = await session.experimental.cancel_task(slow.task.taskId)
                after = await session.experimental.get_task(slow.task.taskId)
                return {
                    "caps": init.capabilities,
                    "job": job,
                    "done": done.status,
                    "result": [c.text for c in result.content],
                    "confirmed": [c.text for c in confirmed.content],
                    "listed": [t.taskId for t in listed.tasks],
                    "cancelled": cancelled.status,
                    "after": after.status,
                }

    out = asyncio.run(go())
    assert out["caps"].tasks is not None
    assert out["done"] == "completed" and out["result"] == ["job:py"]
    assert len(asked) == 1 and out["confirmed"] == ["py:accept"]
    assert out["job"] in out["listed"]
    assert out["cancelled"] == "cancelled" and out["after"] == "cancelled"
    assert "notifications/tasks/status" in notes
