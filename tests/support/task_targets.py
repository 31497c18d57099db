"""Small 2025-11-25 Streamable HTTP servers with tasks, each with one known defect, for the task
probe's tests (``tests/test_probe_tasks.py``): the probe must fail the scenario meant to catch
each defect, and pass the sound twin.

One raw ASGI app (JSON answers, ``Mcp-Session-Id`` from ``initialize``) with one task tool,
``job {label, seconds}`` (``execution.taskSupport: optional``): a task completes ``seconds``
after it was made.  ``defect``:

* ``ok``: tasks bound to their session, random ids, terminal statuses sticky;
* ``shared``: one task table for every session (get, result, list, cancel by id alone);
* ``cancel_any``: reads and lists bound to the session, but ``tasks/cancel`` by id alone;
* ``seq``: ids from a counter (``"1"``, ``"2"``, ...), still bound to the session;
* ``seq_shared``: both of the above (a guessed neighbour reaches another session's task);
* ``rid``: ids made from the request id (``"task-<id>"``), bound to the session;
* ``overwrite``: a completion overwrites ``cancelled``, and a cancel of a completed task is
  accepted;
* ``no_tasks``: the same tool without ``taskSupport`` and no ``capabilities.tasks``.

:class:`Served` runs one on a loopback port with uvicorn in a thread.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from typing import Any

import uvicorn

DEFECTS = ("ok", "shared", "cancel_any", "seq", "seq_shared", "rid", "overwrite", "no_tasks")


class TaskApp:
    def __init__(self, defect: str = "ok") -> None:
        assert defect in DEFECTS, defect
        self.defect = defect
        self.sessions: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.counter = itertools.count(1)

    # --- the tasks ------------------------------------------------------------------------

    def status(self, task: dict) -> str:
        done = time.monotonic() >= task["done_at"]
        if self.defect == "overwrite":
            return "completed" if done and not task["cancel_after_done"] else task_state(task, done)
        return "cancelled" if task["cancelled"] else ("completed" if done else "working")

    def find(self, sid: str, tid: Any, cancel: bool = False) -> dict | None:
        task = self.tasks.get(tid) if isinstance(tid, str) else None
        if task is None:
            return None
        by_id = self.defect in ("shared", "seq_shared") or (cancel and self.defect == "cancel_any")
        return task if by_id or task["owner"] == sid else None

    def new_id(self, rid: Any) -> str:
        if self.defect in ("seq", "seq_shared"):
            return str(next(self.counter))
        if self.defect == "rid":
            return f"task-{rid}"
        return str(uuid.uuid4())

    def view(self, task: dict) -> dict:
        return {
            "taskId": task["id"],
            "status": self.status(task),
            "ttl": 120_000,
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "pollInterval": 100,
        }

    # --- the methods ------------------------------------------------------------------------

    async def handle(self, sid: str, msg: dict) -> dict:
        rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}

        def ok(result: dict) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "result": result}

        def err(code: int, text: str) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

        tasks = self.defect != "no_tasks"
        if method == "ping":
            return ok({})
        if method == "tools/list":
            tool: dict[str, Any] = {"name": "job", "inputSchema": {"type": "object"}}
            if tasks:
                tool["execution"] = {"taskSupport": "optional"}
            return ok({"tools": [tool]})
        if method == "tools/call":
            args = params.get("arguments") or {}
            seconds = float(args.get("seconds", 1.0))
            if "task" in params and tasks:
                tid = self.new_id(rid)
                self.tasks[tid] = {
                    "id": tid,
                    "owner": sid,
                    "done_at": time.monotonic() + seconds,
                    "cancelled": False,
                    "cancel_after_done": False,
                    "label": args.get("label"),
                }
                return ok({"task": self.view(self.tasks[tid])})
            await asyncio.sleep(seconds)
            return ok({"content": [{"type": "text", "text": f"job:{args.get('label')}"}]})
        if not tasks or not method or not method.startswith("tasks/"):
            return err(-32601, f"method not found: {method}")
        if method == "tasks/list":
            mine = [
                self.view(t)
                for t in self.tasks.values()
                if t["owner"] == sid or self.defect in ("shared", "seq_shared")
            ]
            return ok({"tasks": mine})
        task = self.find(sid, params.get("taskId"), cancel=method == "tasks/cancel")
        if task is None:
            return err(-32602, "unknown task")
        if method == "tasks/get":
            return ok(self.view(task))
        if method == "tasks/cancel":
            status = self.status(task)
            if status in ("completed", "cancelled") and self.defect != "overwrite":
                return err(-32602, f"task is already {status}")
            task["cancelled"] = True
            task["cancel_after_done"] = status == "completed"
            return ok(self.view(task))
        if method == "tasks/result":
            while self.status(task) == "working":
                await asyncio.sleep(0.02)
            if self.status(task) == "cancelled":
                return err(-32602, "task was cancelled")
            return ok({"content": [{"type": "text", "text": f"job:{task['label']}"}]})
        return err(-32601, f"method not found: {method}")

    # --- ASGI -------------------------------------------------------------------------------

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                m = await receive()
                if m["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif m["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        sid = headers.get("mcp-session-id", "")
        if scope["method"] == "DELETE":
            self.sessions.discard(sid)
            return await respond(send, 200, None)
        if scope["method"] != "POST":
            return await respond(send, 405, None)
        msg = json.loads(body)
        if msg.get("method") == "initialize":
            sid = uuid.uuid4().hex
            self.sessions.add(sid)
            caps: dict[str, Any] = {"tools": {}}
            if self.defect != "no_tasks":
                caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": caps,
                "serverInfo": {"name": f"task-target-{self.defect}", "version": "0"},
            }
            reply = {"jsonrpc": "2.0", "id": msg.get("id"), "result": result}
            return await respond(send, 200, reply, sid)
        if sid not in self.sessions:
            return await respond(send, 404, None)
        if "id" not in msg or "method" not in msg:
            return await respond(send, 202, None)
        await respond(send, 200, await self.handle(sid, msg))


def task_state(task: dict, done: bool) -> str:
    if task["cancelled"]:
        return "cancelled"
    return "completed" if done else "working"


async def respond(send: Any, status: int, body: dict | None, sid: str | None = None) -> None:
    raw = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    if sid is not None:
        headers.append((b"mcp-session-id", sid.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


class Served:
    """``app`` on a loopback port (uvicorn in a thread); ``url`` its endpoint."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
