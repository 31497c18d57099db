"""``python tests/support/task_stdio.py DEFECT``: a :class:`~support.task_targets.TaskApp` served
over stdio (newline-delimited JSON-RPC), for the task probe's stdio form.

Its one client is its session (``process-<pid>``): a second client is a second process.  With
``TASK_STORE=DIR`` in the environment, tasks (and ``seq``'s counter) live in files under ``DIR``,
shared by every process given it (``support.task_targets.FileTable``); without it each process
keeps its own, as a stdio server ordinarily does.  Requests are handled concurrently (a
``tasks/result`` waits while other requests are answered).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.task_targets import DEFECTS, FileCounter, FileTable, TaskApp  # noqa: E402


async def serve(app: TaskApp) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 22)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    sid = f"process-{os.getpid()}"
    running: set[asyncio.Task] = set()

    def write(msg: dict) -> None:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

    async def answer(msg: dict) -> None:
        write(await app.handle(sid, msg))

    while line := await reader.readline():
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue  # a notification, or an answer to a request this server never sends
        if msg["method"] == "initialize":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": app.init_result()})
            continue
        task = asyncio.ensure_future(answer(msg))
        running.add(task)
        task.add_done_callback(running.discard)


def main() -> int:
    defect = sys.argv[1]
    assert defect in DEFECTS, defect
    app = TaskApp(defect)
    store = os.environ.get("TASK_STORE")
    if store:
        app.tasks = FileTable(Path(store))
        app.counter = FileCounter(Path(store) / "counter")
    asyncio.run(serve(app))
    return 0


if __name__ == "__main__":
    sys.exit(main())
