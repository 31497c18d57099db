"""Small 2026-07-28 stateless servers (raw ASGI, SSE answers) with one known defect each, so
that the probe's stateless scenarios are seen to fail where they should.  Each has the probe's
fixture contract (``slow`` on a :class:`~mcp_inflight.fixtures.contract.CallLedger`,
``probe_outcome``).

``mode``:

* ``"overwrite"``: every POST's stream is registered under its request id in one map shared by
  all POSTs, and a handler looks its stream up by id when it sends (the shape of the stateless
  cross-client leak in the TypeScript SDK's advisory GHSA-345p-7cg4-v4c7);
* ``"refuse"``: the same map, but a POST whose id is registered is refused (the shape of a
  shared registry across POSTs, the ``atomic-shared-registry`` mutant);
* ``"nocancel"``: each POST its own stream, but a closed stream does not cancel the handler;
* ``"ok"``: each POST its own stream, cancelled when closed.
"""

from __future__ import annotations

import asyncio
import json

from mcp_inflight.fixtures.contract import PROBE_OUTCOME_TOOL, PROBE_SLOW_TOOL, CallLedger
from support.raw_asgi import lifespan, read_body, respond_json


class App:
    def __init__(self, mode: str) -> None:
        assert mode in ("overwrite", "refuse", "nocancel", "ok")
        self.mode = mode
        self.streams: dict[str, asyncio.Queue] = {}
        self.ledger = CallLedger()
        self.tasks: set[asyncio.Task] = set()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        msg = json.loads(await read_body(receive))
        if "id" not in msg:
            return await respond_json(send, 202, None)
        rid, method = msg["id"], msg.get("method")
        params = msg.get("params") or {}
        if method == "tools/list":
            tools = [PROBE_SLOW_TOOL, PROBE_OUTCOME_TOOL]
            return await respond_json(
                send, 200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}}
            )
        args = params.get("arguments") or {}
        if method == "tools/call" and params.get("name") == "probe_outcome":
            text = self.ledger.outcome_text(args["label"])
            result = {"content": [{"type": "text", "text": text}]}
            return await respond_json(send, 200, {"jsonrpc": "2.0", "id": rid, "result": result})
        if method != "tools/call" or params.get("name") != "slow":
            err = {"code": -32601, "message": "no such method or tool"}
            return await respond_json(send, 200, {"jsonrpc": "2.0", "id": rid, "error": err})
        key = json.dumps(rid)
        shared = self.mode in ("overwrite", "refuse")
        if self.mode == "refuse" and key in self.streams:
            err = {"code": -32600, "message": f"id {key} is in flight"}
            return await respond_json(send, 409, {"jsonrpc": "2.0", "id": None, "error": err})
        own: asyncio.Queue = asyncio.Queue()
        if shared:
            self.streams[key] = own
        token = (params.get("_meta") or {}).get("progressToken")

        def out() -> asyncio.Queue | None:
            return self.streams.get(key) if shared else own

        async def report(k, n):
            q = out()
            if q is not None and token is not None:
                note = {"progressToken": token, "progress": k, "total": n}
                q.put_nowait({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})

        async def handler():
            text = await self.ledger.run_slow(
                args["label"], int(args.get("steps", 3)), float(args.get("delay", 0.1)), report
            )
            q = out()
            if q is not None:
                content = [{"type": "text", "text": text}]
                q.put_nowait({"jsonrpc": "2.0", "id": rid, "result": {"content": content}})

        task = asyncio.ensure_future(handler())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )

        async def closed():
            while (await receive())["type"] != "http.disconnect":
                pass

        gone = asyncio.ensure_future(closed())
        try:
            while True:
                get = asyncio.ensure_future(own.get())
                done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:
                    get.cancel()
                    if self.mode != "nocancel":
                        task.cancel()
                    return
                item = get.result()
                data = b"event: message\ndata: " + json.dumps(item).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": data, "more_body": True})
                if "id" in item:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
        finally:
            gone.cancel()
            if shared and self.streams.get(key) is own:
                del self.streams[key]
