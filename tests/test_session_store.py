"""The session store is a strategy the app composes: ``create_app(server, store=...)`` calls it
where one process and several workers differ, and nowhere else."""

from __future__ import annotations

import asyncio

import pytest

from mcp_inflight.impl.http import App, MemorySessions, create_app
from mcp_inflight.impl.stores import SessionStore
from mcp_inflight.serve import demo_server
from support.asgi import open_session, request

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Recording(MemorySessions):
    """The in-process store, recording which of its hooks the app called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def find(self, headers):
        self.calls.append("find")
        return await super().find(headers)

    async def initialize(self, msg, send):
        self.calls.append("initialize")
        return await super().initialize(msg, send)

    async def request(self, session, msg, receive, send):
        self.calls.append("request")
        return await super().request(session, msg, receive, send)

    async def notification(self, session, msg):
        self.calls.append("notification")
        return await super().notification(session, msg)

    async def delete(self, session):
        self.calls.append("delete")
        return await super().delete(session)

    async def state_replayed(self, msg):
        self.calls.append("state_replayed")
        return await super().state_replayed(msg)


def test_the_app_calls_its_store_for_sessions_and_requests():
    store = Recording()
    app = create_app(demo_server(), store=store)
    assert isinstance(app, App) and app.store is store

    async def go():
        h = await open_session(app)
        assert store.calls == ["initialize", "find", "notification"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        r = await request(app, msg=call, headers=h)
        assert r.status == 200 and "result" in r.messages()[0]
        assert store.calls[-2:] == ["find", "request"]
        modern = {"mcp-protocol-version": "2026-07-28"}
        r = await request(app, msg={**call, "params": {"_meta": META}}, headers=modern)
        assert r.status == 200 and store.calls[-1] == "state_replayed"
        r = await request(app, "DELETE", headers=h)
        assert r.status == 200 and store.calls[-2:] == ["find", "delete"]
        assert app.sessions == {}

    asyncio.run(go())


def test_a_store_that_refuses_a_replayed_state_is_heard():
    """2026-07-28: the store's verdict on a ``requestState`` is the POST's answer."""

    class Refusing(MemorySessions):
        async def state_replayed(self, msg):
            return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "no"}}

    app = create_app(demo_server(), store=Refusing())

    async def go():
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
        r = await request(app, msg=call, headers={"mcp-protocol-version": "2026-07-28"})
        assert r.status == 400 and r.messages()[0]["error"]["message"] == "no"

    asyncio.run(go())


def test_the_stores_keep_the_protocol():
    from mcp_inflight.impl.redis_http import RedisSessions

    for cls in (MemorySessions, RedisSessions):
        for name in SessionStore.__dict__:
            if not name.startswith("_") and callable(getattr(SessionStore, name)):
                assert callable(getattr(cls, name, None)), (cls, name)


def test_redis_options_go_to_the_redis_store():
    from mcp_inflight.impl.redis_http import RedisSessions

    app = create_app(demo_server(), redis="redis://127.0.0.1:1/0", lease_ms=3000, max_body=10)
    assert isinstance(app.store, RedisSessions) and app.store.lease_ms == 3000
    assert app.event_store is None and app.bodies is not None
    with pytest.raises(ValueError):
        create_app(demo_server(), redis="redis://127.0.0.1:1/0", store=MemorySessions())
