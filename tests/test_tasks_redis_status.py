"""2025-11-25 status notifications across workers: two ``serve --redis`` processes on one real
``redis-server``.  A task runs on worker 1; its session's ``tasks/result`` waits on worker 2,
which sends each status change of the task (made on worker 1, published by the store's
scripts) on that stream as ``notifications/tasks/status``, as it happens and in order, then
the result; as in one process.  A ``tasks/result`` of a task already terminal is one JSON
body."""

from __future__ import annotations

import json
import time

import httpx
from test_tasks_redis import _open, _rpc, _task, pair  # noqa: F401 - fixtures (redis: conftest)

STATUS = "notifications/tasks/status"


def _events(lines) -> dict:
    """The next JSON-RPC message of an SSE body read line by line."""
    for line in lines:
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError("the stream ended")


def test_the_worker_holding_the_result_stream_sends_the_status_changes(pair):  # noqa: F811
    one, two = pair
    with httpx.Client(timeout=10) as c, httpx.Client(timeout=10) as other:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "s", "seconds": 30})
        body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": tid}}
        with c.stream("POST", two.url, headers=h, json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            assert r.headers["mcp-inflight-worker"] == two.workers[two.pid]
            lines = r.iter_lines()
            # the stream waits; the task is cancelled through the worker that runs it
            time.sleep(0.2)
            cancelled = _rpc(other, one.url, h, 3, "tasks/cancel", {"taskId": tid})
            assert cancelled["result"]["status"] == "cancelled"
            note = _events(lines)
            assert (note["method"], note["params"]["taskId"]) == (STATUS, tid)
            assert note["params"]["status"] == "cancelled"
            assert {"ttl", "createdAt", "lastUpdatedAt", "pollInterval"} <= set(note["params"])
            last = _events(lines)
            assert last["id"] == 2 and last["error"]["message"] == "the task was cancelled"
        # terminal already: one JSON body, no notification
        r = c.post(two.url, headers=h, json={**body, "id": 4})
        assert r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["message"] == "the task was cancelled"


def test_a_result_stream_elsewhere_gets_the_completion_then_the_result(pair):  # noqa: F811
    one, two = pair
    with httpx.Client(timeout=10) as c:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "n", "seconds": 0.6})
        started = time.monotonic()
        body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": tid}}
        with c.stream("POST", two.url, headers=h, json=body) as r:
            lines = r.iter_lines()
            note = _events(lines)
            res = _events(lines)
        assert (note["method"], note["params"]["status"]) == (STATUS, "completed")
        assert res["id"] == 2 and res["result"]["content"][0]["text"] == "job:n"
        assert time.monotonic() - started < 5
