"""What a request's arrival comes to is a typed result, and what a session writes to an Outlet."""

from __future__ import annotations

import asyncio

from mcp_inflight.impl.core import Refused
from mcp_inflight.impl.messages import Kind, parse
from mcp_inflight.impl.server import Answered, Outlet, Running, Server, Session
from mcp_inflight.impl.stdio import _Channel
from mcp_inflight.impl.streams import StreamOutlet


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.closed = asyncio.Event()

    def send(self, msg: dict) -> None:
        self.sent.append(msg)

    def close(self) -> None:
        self.closed.set()


def test_arrivals_are_refused_answered_or_running():
    server = Server("t")
    gate = asyncio.Event()

    @server.tool()
    async def wait(ctx) -> str:
        await gate.wait()
        return "done"

    async def go():
        session = Session(server, "stdio")
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
        first = session.request(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, Recorder()
        )
        assert type(first) is Answered and "result" in first.reply
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait"}}
        out = Recorder()
        running = session.request(call, out)
        assert type(running) is Running and running.handle.data is out
        again = session.request(call, Recorder())
        assert type(again) is Refused and again.error["data"] == {"id": 1}
        gate.set()
        await asyncio.wait_for(out.closed.wait(), 5)
        assert out.sent[-1]["result"]["content"][0]["text"] == "done"

    asyncio.run(go())


def test_the_adapters_outlets_are_outlets():
    def takes(o: Outlet) -> Outlet:
        return o

    for outlet in (StreamOutlet(), _Channel(lambda data: None), Recorder()):
        assert takes(outlet) is outlet and callable(outlet.send) and callable(outlet.close)


def test_message_kinds_are_an_enum_equal_to_their_text():
    assert parse(b'{"jsonrpc":"2.0","id":1,"method":"ping"}').kind is Kind.REQUEST
    assert parse(b'{"jsonrpc":"2.0","method":"x"}').kind is Kind.NOTIFICATION
    assert parse(b'{"jsonrpc":"2.0","id":1,"result":{}}').kind is Kind.RESPONSE
    assert parse(b"[1]").kind is Kind.INVALID == "invalid"
