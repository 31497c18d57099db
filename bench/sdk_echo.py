"""The official SDK's side of bench/runtime.py: a server on ``mcp`` 2.3.0's low-level ``Server``
with one tool, ``echo {text}`` (the same tool as ``mcp-inflight serve``), served by the SDK's
own ``streamable_http_app()`` with its defaults: sessions (stateful), SSE answers, DNS-rebinding
protection for 127.0.0.1.  ``app`` is the ASGI app.
"""

from __future__ import annotations

import logging

import mcp_types as types
from mcp.server.lowlevel import Server

ECHO = types.Tool(
    name="echo",
    description="Return the text unchanged.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "echo":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
            is_error=True,
        )
    text = (params.arguments or {}).get("text", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_app():
    server = Server("sdk-echo", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app()


logging.getLogger("mcp").setLevel(logging.WARNING)
app = build_app()
