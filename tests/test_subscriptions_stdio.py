"""``subscriptions/listen`` (2026-07-28) over stdio, the server a real subprocess: every
subscription shares the one channel, so each message carries its subscription id;
``notifications/cancelled`` for the listen id ends that subscription (no response, nothing more
for it); the server's end answers the listen request; stdin closing ends the process."""

import asyncio
import json
import sys
import textwrap

SUB = "io.modelcontextprotocol/subscriptionId"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SCRIPT = textwrap.dedent(
    """
    import asyncio

    from mcp_inflight.impl.stdio import serve_stdio
    from mcp_inflight.serve import demo_server

    server = demo_server()


    @server.tool()
    async def changed(ctx, kind: str = "", end: bool = False) -> str:
        if end:
            return f"ended:{server.end_subscriptions()}"
        return f"told:{server.list_changed(kind)}"


    asyncio.run(serve_stdio(server))
    """
)


class Proc:
    async def start(self, tmp_path):
        script = tmp_path / "listen_server.py"
        script.write_text(SCRIPT)
        self.p = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return self

    async def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.p.stdin.drain()

    async def recv(self, timeout=10):
        line = await asyncio.wait_for(self.p.stdout.readline(), timeout)
        assert line, "the server closed stdout"
        return json.loads(line)

    async def until_response(self, rid):
        seen = []
        while True:
            m = await self.recv()
            seen.append(m)
            if "method" not in m and m.get("id") == rid:
                return seen


def request(rid, method, **params):
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": META, **params}}


def changed(rid, **args):
    return request(rid, "tools/call", name="changed", arguments=args)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_listen_over_stdio(tmp_path):
    async def go():
        p = await Proc().start(tmp_path)
        await p.send(request(0, "server/discover"))
        assert "result" in (await p.recv())
        await p.send(request("a", "subscriptions/listen", notifications={"toolsListChanged": True}))
        await p.send(request("b", "subscriptions/listen", notifications={"toolsListChanged": True}))
        acks = [await p.recv(), await p.recv()]
        assert [m["method"] for m in acks] == ["notifications/subscriptions/acknowledged"] * 2
        assert sorted(m["params"]["_meta"][SUB] for m in acks) == ["a", "b"]
        # both subscriptions get the change, each message names its own
        await p.send(changed(1, kind="tools"))
        seen = await p.until_response(1)
        notes = [m for m in seen if m.get("method") == "notifications/tools/list_changed"]
        assert sorted(m["params"]["_meta"][SUB] for m in notes) == ["a", "b"]
        assert seen[-1]["result"]["content"][0]["text"] == "told:2"
        # the client cancels "a": no response for it, nothing more for it
        cancel = {"requestId": "a", "reason": "done"}
        await p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await p.send(changed(2, kind="tools"))
        seen = await p.until_response(2)
        assert seen[-1]["result"]["content"][0]["text"] == "told:1"
        assert [m["params"]["_meta"][SUB] for m in seen[:-1]] == ["b"]
        # the server ends "b": its listen is answered with the completion result
        await p.send(changed(3, end=True))
        seen = await p.until_response(3)
        assert seen[-1]["result"]["content"][0]["text"] == "ended:1"
        if not [m for m in seen if m.get("id") == "b"]:
            seen += await p.until_response("b")  # the listen's handler answers on its next step
        assert {
            "jsonrpc": "2.0",
            "id": "b",
            "result": {"resultType": "complete", "_meta": {SUB: "b"}},
        } in seen
        assert not [m for m in seen if m.get("id") == "a"]
        await p.send(request(4, "ping"))
        seen = await p.until_response(4)
        assert len(seen) == 1  # still nothing for "a"
        p.p.stdin.close()
        assert await asyncio.wait_for(p.p.wait(), 10) == 0

    run(go())
