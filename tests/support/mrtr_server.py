"""A server whose tool asks the client several times in one call (elicits twice, samples once,
lists the roots once), for the multi round-trip tests.

``python tests/support/mrtr_server.py`` serves it on stdin/stdout (a real subprocess for the
stdio tests); :func:`build` gives the server for a loopback HTTP run."""

from __future__ import annotations

import asyncio

from mcp_inflight.impl.server import Server
from mcp_inflight.impl.stdio import serve_stdio

_TEXT = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def build() -> Server:
    server = Server("mrtr-test")

    @server.tool(description="Ask a name and a colour, have a line written, count the roots.")
    async def interview(ctx, topic: str) -> str:
        name = await ctx.elicit(f"{topic}: your name?", _TEXT)
        colour = await ctx.elicit(f"{topic}: {name['content']['value']}, your colour?", _TEXT)
        line = await ctx.sample(
            [
                {
                    "role": "user",
                    "content": {"type": "text", "text": f"a line on {colour['content']['value']}"},
                }
            ],
            max_tokens=20,
        )
        roots = await ctx.list_roots()
        return "|".join(
            [
                name["content"]["value"],
                colour["content"]["value"],
                line["content"]["text"],
                str(len(roots["roots"])),
            ]
        )

    return server


if __name__ == "__main__":
    asyncio.run(serve_stdio(build()))
