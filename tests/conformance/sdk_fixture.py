"""The conformance fixture contract served by the official MCP Python SDK (``mcp`` 2.x).

A low-level ``mcp.server.lowlevel.Server`` whose handlers answer from
``mcp_inflight.fixtures.contract``, served over Streamable HTTP with the SDK's own
``streamable_http_app()`` on uvicorn. With ``--guard`` the same ASGI app is wrapped in
``mcp_inflight.guard`` first, so the suite sees the official SDK behind the guard.

    python tests/conformance/sdk_fixture.py --port 8931 [--guard]

Serves ``http://127.0.0.1:PORT/mcp`` until interrupted.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata

from mcp_inflight.fixtures import contract

warnings.simplefilter("ignore", MCPDeprecationWarning)


def _wire(model: Any) -> dict:
    if model is None:
        return {}
    if isinstance(model, dict):
        return model
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


class _SdkPeer:
    """The contract's Peer over one SDK request context."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.protocol_version = ctx.protocol_version
        self.client_capabilities = _wire(ctx.session.client_capabilities)

    async def progress(self, token, progress, total):
        await self._ctx.session.send_progress_notification(
            token, progress, total, related_request_id=self._ctx.request_id
        )

    async def log(self, level, data):
        await self._ctx.session.send_log_message(
            level, data, related_request_id=self._ctx.request_id
        )

    async def request(self, method, params):
        meta = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        if method == "elicitation/create":
            req, result_type = (
                types.ElicitRequest(params=types.ElicitRequestFormParams.model_validate(params)),
                types.ElicitResult,
            )
        elif method == "sampling/createMessage":
            req, result_type = (
                types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams.model_validate(params)
                ),
                types.CreateMessageResult,
            )
        elif method == "roots/list":
            req, result_type = types.ListRootsRequest(), types.ListRootsResult
        else:
            raise contract.ContractError(-32603, f"no server-to-client request {method}")
        result = await self._ctx.session.send_request(req, result_type, metadata=meta)
        return _wire(result)

    async def list_changed(self, kind):
        if kind == "tools":
            await self._ctx.session.send_tool_list_changed()
        else:
            await self._ctx.session.send_prompt_list_changed()


def _params(params: Any) -> dict:
    return _wire(params)


def _complete(ctx, result: dict) -> dict:
    """2026-07-28 requires every result to say its resultType; a plain result is complete."""
    if ctx.protocol_version == contract.MODERN and "resultType" not in result:
        return {"resultType": "complete", **result}
    return result


async def _guarded(ctx, call):
    try:
        return _complete(ctx, await call)
    except contract.ContractError as e:
        raise MCPError(e.code, e.message, e.data) from None


def build_server() -> Server:
    async def list_tools(ctx, params):
        return _complete(ctx, {"tools": contract.TOOLS})

    async def call_tool(ctx, params):
        return await _guarded(ctx, contract.call_tool(_SdkPeer(ctx), _params(params)))

    async def list_resources(ctx, params):
        return _complete(ctx, {"resources": contract.RESOURCES})

    async def list_resource_templates(ctx, params):
        return _complete(ctx, {"resourceTemplates": contract.RESOURCE_TEMPLATES})

    async def read_resource(ctx, params):
        try:
            return _complete(ctx, contract.read_resource(_params(params)))
        except contract.ContractError as e:
            raise MCPError(e.code, e.message, e.data) from None

    async def subscribe(ctx, params):
        return {}

    async def unsubscribe(ctx, params):
        return {}

    async def list_prompts(ctx, params):
        return _complete(ctx, {"prompts": contract.PROMPTS})

    async def get_prompt(ctx, params):
        return await _guarded(ctx, contract.get_prompt(_SdkPeer(ctx), _params(params)))

    async def completion(ctx, params):
        return _complete(ctx, contract.complete(_params(params)))

    async def set_level(ctx, params):
        return {}

    return Server(
        "mcp-inflight-conformance-sdk",
        version="0.1.0",
        # 2026-07-28 requires ttlMs and cacheScope on every cacheable result.
        cache_hints={m: CacheHint(ttl_ms=0, scope="private") for m in CACHEABLE_METHODS},
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=completion,
        on_set_logging_level=set_level,
    )


def build_app(guard: bool = False):
    server = build_server()
    app = server.streamable_http_app(host="127.0.0.1")
    if guard:
        from mcp_inflight import guard as guard_mod

        app = guard_mod.guard(app)
    return app


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Serve the conformance fixture contract with the official MCP SDK."
    )
    p.add_argument("--port", type=int, required=True, help="loopback port to listen on")
    p.add_argument("--guard", action="store_true", help="wrap the SDK app in mcp_inflight.guard")
    a = p.parse_args(argv)
    app = build_app(a.guard)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
