"""What the probe tests' small raw ASGI servers (``task_targets.py``, ``stateless_mutants.py``)
share: the lifespan protocol, reading a request's body, a JSON (or empty) response, and
:class:`Served`, one such app on a loopback port with uvicorn in a thread.

They are raw ASGI on purpose: each has one known defect that no framework would let it have,
and the probe must find it.  Only the scaffolding is here; each module keeps its own protocol.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import uvicorn


async def lifespan(receive: Any, send: Any) -> None:
    """Answer the lifespan protocol: startup complete, then shutdown complete."""
    while True:
        m = await receive()
        if m["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif m["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive: Any) -> bytes:
    """The whole body of an HTTP request, however many parts it came in."""
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            return body


async def respond_json(
    send: Any, status: int, doc: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """One whole response: ``doc`` as JSON (``None``: an empty body)."""
    raw = b"" if doc is None else json.dumps(doc).encode()
    hdrs = [(b"content-type", b"application/json"), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


class Served:
    """``app`` on a loopback port (uvicorn in a thread); ``url`` its endpoint.  The tests'
    in-process server of the runtime (``support/http_server.py``) is one, behind the trace
    tap."""

    def __init__(self, app: Any) -> None:
        self.config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
