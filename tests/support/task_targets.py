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

Over stdio (``support/task_stdio.py``, the same :class:`TaskApp` on a process's pipes) a session
is a process; with ``TASK_STORE=DIR`` in its environment every process of the command keeps its
tasks (and, for ``seq``, its counter) in :class:`FileTable` under ``DIR``: a task store shared by
processes, which is how ``shared`` and ``seq_shared`` leak across stdio clients.

:class:`Served` (``support/raw_asgi.py``) runs one on a loopback port with uvicorn in a thread.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import itertools
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.raw_asgi import Served, lifespan, read_body, respond_json

__all__ = ["DEFECTS", "FileCounter", "FileTable", "Served", "TaskApp", "task_state"]
DEFECTS = ("ok", "shared", "cancel_any", "seq", "seq_shared", "rid", "overwrite", "no_tasks")


class TaskApp:
    def __init__(self, defect: str = "ok") -> None:
        assert defect in DEFECTS, defect
        self.defect = defect
        self.sessions: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] | FileTable = {}
        self.counter: Iterator[int] = itertools.count(1)

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

    def init_result(self) -> dict:
        """``initialize``'s result: ``capabilities.tasks`` unless ``no_tasks``."""
        caps: dict[str, Any] = {"tools": {}}
        if self.defect != "no_tasks":
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": caps,
            "serverInfo": {"name": f"task-target-{self.defect}", "version": "0"},
        }

    # --- ASGI -------------------------------------------------------------------------------

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        body = await read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        sid = headers.get("mcp-session-id", "")
        if scope["method"] == "DELETE":
            self.sessions.discard(sid)
            return await respond_json(send, 200, None)
        if scope["method"] != "POST":
            return await respond_json(send, 405, None)
        msg = json.loads(body)
        if msg.get("method") == "initialize":
            sid = uuid.uuid4().hex
            self.sessions.add(sid)
            reply = {"jsonrpc": "2.0", "id": msg.get("id"), "result": self.init_result()}
            return await respond_json(send, 200, reply, [(b"mcp-session-id", sid.encode())])
        if sid not in self.sessions:
            return await respond_json(send, 404, None)
        if "id" not in msg or "method" not in msg:
            return await respond_json(send, 202, None)
        await respond_json(send, 200, await self.handle(sid, msg))


class Row(dict):
    """A task of a :class:`FileTable`: every change is written back to its file."""

    def __init__(self, table: FileTable, data: dict) -> None:
        super().__init__(data)
        self.table = table

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.table[self["id"]] = dict(self)


class FileTable:
    """A task table in a directory, one JSON file per task, read afresh on every look-up:
    shared by every process that is given the directory (task times are ``time.monotonic()``,
    one clock for every process of the machine)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def _file(self, tid: str) -> Path:
        return self.path / (hashlib.sha256(tid.encode()).hexdigest()[:32] + ".task")

    def get(self, tid: str) -> Row | None:
        try:
            return Row(self, json.loads(self._file(tid).read_text()))
        except FileNotFoundError:
            return None

    def __getitem__(self, tid: str) -> Row:
        row = self.get(tid)
        if row is None:
            raise KeyError(tid)
        return row

    def __setitem__(self, tid: str, task: dict) -> None:
        tmp = self._file(tid).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(task)))
        os.replace(tmp, self._file(tid))

    def values(self) -> list[Row]:
        return [Row(self, json.loads(f.read_text())) for f in sorted(self.path.glob("*.task"))]


class FileCounter:
    """A counter in a file, under an exclusive lock: ``1``, ``2``, ... across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __next__(self) -> int:
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            n = int(f.read() or 0) + 1
            f.seek(0)
            f.truncate()
            f.write(str(n))
        return n


def task_state(task: dict, done: bool) -> str:
    if task["cancelled"]:
        return "cancelled"
    return "completed" if done else "working"
