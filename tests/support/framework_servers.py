"""MCP servers built on the Python frameworks people use, each as its author would write it, with
and without the guard: the targets of ``tests/test_frameworks.py``.

Run one: ``python tests/support/framework_servers.py FRAMEWORK [--guard] [--stateless]``; it
prints ``listening on URL`` (the MCP endpoint) once it accepts connections on a free loopback
port.  FRAMEWORK is one of:

* ``fastmcp``: FastMCP (the ``fastmcp`` package, on ``mcp`` 2.x) with the tools the probe's
  defaults expect (``slow``, ``ask``, ``ask_twice``, ``echo``), a custom route ``/health``, a
  lifespan, and a static bearer token (``Authorization: Bearer fw-token``) required on MCP;
  ``--stateless`` serves it in FastMCP's ``stateless_http`` mode; ``--run-guarded`` serves it
  by FastMCP's own ``run(transport="http")`` with the guard in its middleware list;
* ``fastapi-mcp``: a FastAPI app whose endpoints ``fastapi-mcp`` serves as tools (``slow`` waits,
  ``get_item`` reads), with its own routes left as they were and a dependency that requires the
  bearer token on MCP (``fastapi-mcp`` runs on ``mcp`` 1.x only);
* ``gradio``: a Gradio interface with its MCP server (``mcp_server=True``, ``mcp`` 1.x only),
  mounted on a FastAPI app;
* ``backend``: the stdio server that ``mcp-proxy`` fronts in the tests (``--stdio``), written on
  the SDK's high-level server of whichever ``mcp`` major version is installed.

Nothing here works around a framework: with ``--guard`` the framework's ASGI app is wrapped by
:func:`mcp_inflight.guard.guard`, the lines its recipe page documents.
"""

import argparse
import asyncio
import contextlib
import logging
import sys

import anyio

TOKEN = "fw-token"
#: What the lifespan of each framework app sets, read back by a tool or a route.
STARTED: dict[str, bool] = {}


# --- FastMCP -----------------------------------------------------------------------------------


def fastmcp_server():
    from fastmcp import Context, FastMCP
    from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @contextlib.asynccontextmanager
    async def lifespan(server):
        STARTED["fastmcp"] = True
        yield {"started": True}

    verifier = StaticTokenVerifier(tokens={TOKEN: {"client_id": "tests", "scopes": []}})
    mcp = FastMCP("fw-fastmcp", lifespan=lifespan, auth=verifier)

    @mcp.tool
    async def slow(label: str, steps: int = 5, delay: float = 0.2, ctx: Context = None) -> str:
        """Report progress on each of ``steps`` steps, ``delay`` seconds apart, then answer."""
        for n in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(n, steps, f"{label} step {n}/{steps}")
        return f"done:{label}"

    @mcp.tool
    async def ask(label: str, delay: float = 0.5, ctx: Context = None) -> str:
        """Wait ``delay`` seconds, elicit a confirmation, answer with the action."""
        await anyio.sleep(delay)
        result = await ctx.elicit(f"{label}: go on?", bool)
        return f"ask:{label}:{result.action}"

    @mcp.tool
    async def ask_twice(label: str, ctx: Context = None) -> str:
        """Elicit twice in one call; answer with both actions."""
        first = await ctx.elicit(f"{label}: first question?", bool)
        second = await ctx.elicit(f"{label}: second question?", bool)
        return f"ask_twice:{label}:{first.action}:{second.action}"

    @mcp.tool
    def echo(text: str) -> str:
        """Answer with the text."""
        return text

    @mcp.tool
    def lifespan_started(ctx: Context = None) -> bool:
        """Whether the server's lifespan ran before this call."""
        return bool(ctx.lifespan_context.get("started"))

    @mcp.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "framework": "fastmcp"})

    return mcp


def fastmcp_app(stateless: bool = False, guarded: bool = False):
    app = fastmcp_server().http_app(stateless_http=stateless)
    if guarded:
        from mcp_inflight.guard import guard

        app = guard(app)
    return app


# --- fastapi-mcp -------------------------------------------------------------------------------


def fastapi_mcp_app(guarded: bool = False):
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi_mcp import AuthConfig, FastApiMCP

    @contextlib.asynccontextmanager
    async def lifespan(app):
        STARTED["fastapi-mcp"] = True
        yield

    api = FastAPI(lifespan=lifespan)

    @api.get("/items/{item}", operation_id="get_item")
    async def get_item(item: int) -> dict:
        """Read one item."""
        return {"item": item, "started": STARTED.get("fastapi-mcp", False)}

    @api.get("/slow", operation_id="slow")
    async def slow(label: str, delay: float = 1.0) -> dict:
        """Wait ``delay`` seconds, then answer with the label."""
        await asyncio.sleep(delay)
        return {"done": label}

    def require_token(request: Request) -> None:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            raise HTTPException(status_code=401, detail="missing or wrong bearer token")

    mcp = FastApiMCP(api, auth_config=AuthConfig(dependencies=[Depends(require_token)]))
    mcp.mount_http()
    if guarded:
        from mcp_inflight.guard import guard

        return guard(api)
    return api


# --- gradio ------------------------------------------------------------------------------------


def gradio_app(guarded: bool = False):
    import gradio as gr
    from fastapi import FastAPI

    async def slow(label: str, delay: float = 1.0) -> str:
        """Wait, then answer with the label.

        Args:
            label: what to answer with
            delay: seconds to wait
        """
        await asyncio.sleep(float(delay))
        return f"done:{label}"

    demo = gr.Interface(fn=slow, inputs=["text", "number"], outputs="text", api_name="slow")
    api = FastAPI()

    @api.get("/health")
    async def health() -> dict:
        return {"ok": True, "framework": "gradio"}

    app = gr.mount_gradio_app(api, demo, path="/", mcp_server=True)
    if guarded:
        from mcp_inflight.guard import guard

        return guard(app)
    return app


# --- the stdio backend of mcp-proxy --------------------------------------------------------------


def backend_server():
    """The SDK test server's tools (``sdk_server.py``) on a server of its own name, its steps
    not logged."""
    from sdk_server import MCPServer, add_tools  # run as a script: this folder is on the path

    return add_tools(MCPServer("fw-backend"), log_steps=False)


# --- serving -----------------------------------------------------------------------------------

PATHS = {"fastmcp": "/mcp", "fastapi-mcp": "/mcp", "gradio": "/gradio_api/mcp/"}


def build(framework: str, guarded: bool, stateless: bool):
    if framework == "fastmcp":
        return fastmcp_app(stateless, guarded)
    if framework == "fastapi-mcp":
        return fastapi_mcp_app(guarded)
    if framework == "gradio":
        return gradio_app(guarded)
    raise SystemExit(f"unknown framework {framework!r}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("framework", choices=[*PATHS, "backend"])
    p.add_argument("--guard", action="store_true", help="wrap the app in mcp_inflight.guard")
    p.add_argument("--stateless", action="store_true", help="FastMCP's stateless_http mode")
    p.add_argument(
        "--run-guarded",
        action="store_true",
        help="FastMCP served by its own run(), the guard in its middleware list",
    )
    p.add_argument("--host", default="127.0.0.1")
    args = p.parse_args(argv)
    if args.framework == "backend":
        anyio.run(backend_server().run_stdio_async)
        return 0

    for name in ("mcp", "fastmcp", "gradio", "httpx", "FastMCP"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from loopback import bind, serve  # run as a script: this folder is on the path

    sock, port = bind(args.host)
    if args.run_guarded:  # FastMCP's own way to serve, as its recipe documents it
        from starlette.middleware import Middleware

        from mcp_inflight.guard import Guard

        sock.listen(128)  # connections wait in the backlog until FastMCP's uvicorn accepts
        print(f"listening on http://{args.host}:{port}/mcp", flush=True)
        fastmcp_server().run(
            transport="http",
            middleware=[Middleware(Guard)],
            stateless_http=args.stateless,
            sockets=[sock],
            show_banner=False,
            log_level="warning",
        )
        return 0
    app = build(args.framework, args.guard, args.stateless)
    return serve(app, sock, f"http://{args.host}:{port}{PATHS[args.framework]}")


if __name__ == "__main__":
    sys.exit(main())
