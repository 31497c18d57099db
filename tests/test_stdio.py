"""stdio over a real subprocess: ``mcp-inflight serve --transport stdio``."""

import asyncio
import json

from support.sessions import INITIALIZED, init_params, spawn_stdio_server
from support.sessions import tool_call as call

INIT = init_params()


class Proc:
    async def start(self):
        self.p = await spawn_stdio_server(limit=1 << 24)
        return self

    async def send(self, msg):
        data = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.p.stdin.write(data + b"\n")
        await self.p.stdin.drain()

    async def recv(self, timeout=10):
        line = await asyncio.wait_for(self.p.stdout.readline(), timeout)
        assert line, "the server closed stdout"
        return json.loads(line)

    async def until(self, pred, timeout=10):
        seen = []
        while True:
            m = await self.recv(timeout)
            seen.append(m)
            if pred(m):
                return seen

    async def handshake(self):
        await self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        r = await self.recv()
        assert r["id"] == 0 and r["result"]["protocolVersion"] == "2025-11-25"
        await self.send(INITIALIZED)

    async def close(self):
        self.p.stdin.close()
        return await asyncio.wait_for(self.p.wait(), 10)


def is_response(rid):
    return lambda m: "method" not in m and m.get("id") == rid and type(m.get("id")) is type(rid)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_duplicate_refused_original_served_and_id_reused():
    async def go():
        p = await Proc().start()
        await p.handshake()
        await p.send(call(5, "slow", {"label": "A", "steps": 3, "delay": 0.05}, "tA"))
        await p.send(call(5, "echo", {"text": "dup"}))
        seen = await p.until(is_response(5))
        refusal = [m for m in seen if "error" in m]
        assert len(refusal) == 1 and refusal[0]["id"] is None
        assert refusal[0]["error"]["code"] == -32600 and refusal[0]["error"]["data"] == {"id": 5}
        progress = [
            m["params"]["progress"] for m in seen if m.get("method") == "notifications/progress"
        ]
        assert progress == [1, 2, 3]
        assert seen[-1]["result"]["content"][0]["text"] == "done:A"
        await p.send(call(5, "echo", {"text": "reuse"}))
        m = await p.recv()
        assert m["id"] == 5 and m["result"]["content"][0]["text"] == "reuse"
        assert await p.close() == 0

    run(go())


def test_typed_ids_and_cancel_hits_its_target():
    async def go():
        p = await Proc().start()
        await p.handshake()
        await p.send(call(7, "slow", {"label": "int", "steps": 4, "delay": 0.05}, "i"))
        await p.send(call("7", "slow", {"label": "str", "steps": 4, "delay": 0.05}, "s"))
        await p.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "7"}}
        )
        await p.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        )
        seen = await p.until(is_response(7))
        assert seen[-1]["result"]["content"][0]["text"] == "done:int"
        await p.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        seen += await p.until(is_response("after"))
        assert not any(is_response("7")(m) for m in seen), "a cancelled request gets no response"
        assert await p.close() == 0

    run(go())


def test_bad_lines_get_errors_and_the_server_stays_up():
    async def go():
        p = await Proc().start()
        await p.handshake()
        await p.send(b"{not json")
        m = await p.recv()
        assert m["id"] is None and m["error"]["code"] == -32700
        await p.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        m = await p.recv()
        assert m["error"]["code"] == -32600
        await p.send({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})
        m = await p.recv()
        assert m["error"]["code"] == -32600 and m["id"] is None
        await p.send({"jsonrpc": "2.0", "id": 2, "method": "no/such"})
        m = await p.recv()
        assert m["id"] == 2 and m["error"]["code"] == -32601
        await p.send({"jsonrpc": "2.0", "id": 3, "result": {}})  # answers nothing: ignored
        await p.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        m = await p.recv()
        assert m == {"jsonrpc": "2.0", "id": 4, "result": {}}
        assert await p.close() == 0

    run(go())


def test_modern_stdio_discover_then_call():
    async def go():
        p = await Proc().start()
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        await p.send(
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
        )
        m = await p.recv()
        assert "2026-07-28" in m["result"]["supportedVersions"]
        body = call(2, "ask", {"label": "M", "delay": 0})
        body["params"]["_meta"] = meta
        await p.send(body)
        m = await p.recv()
        assert m["result"]["resultType"] == "input_required"
        ((key, req),) = m["result"]["inputRequests"].items()
        assert req["method"] == "elicitation/create" and "M" in req["params"]["message"]
        body = call(3, "ask", {"label": "M", "delay": 0})
        body["params"]["_meta"] = meta
        body["params"]["inputResponses"] = {key: {"action": "accept", "content": {"ok": True}}}
        body["params"]["requestState"] = m["result"]["requestState"]
        await p.send(body)
        m = await p.recv()
        assert m["id"] == 3 and m["result"]["content"][0]["text"] == "ask:M:accept"
        assert await p.close() == 0

    run(go())


def test_registered_methods_context_request_and_errors():
    """The server API beyond tools: a handler per method, a server-to-client request through the
    context (answered on the same channel), a JSON-RPC error raised by a handler."""
    from mcp_inflight.impl.server import JsonRpcError, Server, Session
    from mcp_inflight.impl.stdio import serve_stdio

    server = Server("custom", capabilities={"prompts": {}})

    @server.method("prompts/get")
    async def get_prompt(ctx, params):
        if params["name"] != "roots":
            raise JsonRpcError(-32602, f"no prompt {params['name']}")
        roots = await ctx.request("roots/list", {})
        assert ctx.client_capabilities == {"roots": {}} and ctx.protocol_version == "2025-11-25"
        return {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": str(len(roots["roots"]))}}
            ]
        }

    async def go():
        reader = asyncio.StreamReader()
        out = []
        session = Session(server, "stdio")
        task = asyncio.create_task(serve_stdio(server, reader, out.append, session))

        async def recv():
            while not out:
                await asyncio.sleep(0.005)
            return json.loads(out.pop(0))

        def feed(m):
            reader.feed_data(json.dumps(m).encode() + b"\n")

        feed(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {**INIT, "capabilities": {"roots": {}}},
            }
        )
        assert (await recv())["result"]["capabilities"]["prompts"] == {}
        feed({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "nope"}})
        m = await recv()
        assert m["id"] == 1 and m["error"]["code"] == -32602
        feed({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "roots"}})
        req = await recv()
        assert req["method"] == "roots/list"
        feed({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": [{"uri": "file:///a"}]}})
        m = await recv()
        assert m["id"] == 2 and m["result"]["messages"][0]["content"]["text"] == "1"
        feed({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"nam": 1}})
        m = await recv()
        assert m["id"] == 3 and m["error"]["code"] == -32602  # schema-checked params
        reader.feed_eof()
        await asyncio.wait_for(task, 5)
        assert session.idle()

    run(go())
