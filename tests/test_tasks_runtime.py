"""The task runtime (``impl/task_runtime.py``) around the store, on one event loop: the ttl
timer, the session's end, and what an ended session leaves behind."""

from __future__ import annotations

import asyncio

import pytest

from mcp_inflight.impl.task_runtime import TaskError, TaskRuntime


async def _work(seconds: float):
    await asyncio.sleep(seconds)
    return True, {"content": [], "isError": False}


def test_an_ended_session_is_forgotten_with_its_last_task():
    async def go():
        rt = TaskRuntime(max_ttl_ms=200)
        sent: list[tuple[str, str]] = []
        rt.listeners["s1"] = lambda tid, msg: sent.append((tid, msg["params"]["status"]))
        view = rt.create("s1", None, _work(5))
        assert view["ttl"] == 200
        rt.end_session("s2")  # a session without tasks leaves no trace
        assert rt.store.ended == set()
        rt.end_session("s1")
        assert rt.store.tasks[view["taskId"]].status == "cancelled"
        assert sent == []  # the ended session's listener is gone before the status changes
        with pytest.raises(TaskError):
            rt.get("s1", view["taskId"])
        await asyncio.sleep(0.3)  # the ttl deletes the task, and the session with it
        assert rt.store.tasks == {} and rt.store.ended == set() and rt.works == {}

    asyncio.run(go())


def test_the_ttl_wakes_a_waiting_result_with_the_unknown_id_error():
    async def go():
        rt = TaskRuntime(max_ttl_ms=100)
        tid = rt.create("s", 50, _work(5))["taskId"]
        with pytest.raises(TaskError):
            await asyncio.wait_for(rt.result("s", tid), 2)
        assert tid not in rt.times and tid not in rt.terminal and tid not in rt.timers

    asyncio.run(go())


def test_tasks_list_pages_with_an_opaque_cursor():
    async def go():
        rt = TaskRuntime(page=2)
        ids = [rt.create("s", None, _work(5))["taskId"] for _ in range(5)]
        rt.create("other", None, _work(5))
        seen, cursor, pages = [], None, 0
        while True:
            page = rt.list("s", cursor)
            pages += 1
            seen += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == ids and pages == 3
        with pytest.raises(TaskError):
            rt.list("s", "not-a-cursor")
        with pytest.raises(TaskError):
            rt.list("other", ids[0])  # another owner's task id is no cursor of its list
        rt.close()

    asyncio.run(go())
