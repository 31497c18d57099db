"""Serve an ASGI app on a loopback socket the way the tests' server scripts all do: bind first
(port 0 picks a free one), start uvicorn on that socket, and print ``listening on URL`` once it
accepts connections, the line the tests wait for.  Imported by the scripts as a sibling module
(``python tests/support/<script>.py`` puts this folder on the path)."""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import Callable, Sequence
from typing import Any


def bind(host: str, port: int = 0) -> tuple[socket.socket, int]:
    """A bound TCP socket on ``host`` and the port it got.  Its protocol is named
    (``IPPROTO_TCP``, as ``getaddrinfo`` gives it to ``serve``'s own socket): asyncio turns
    Nagle's algorithm off (``TCP_NODELAY``) on the connections it accepts only from such a
    socket, and with it on every request waits out the client's delayed acknowledgement, about
    40 ms on loopback."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock, sock.getsockname()[1]


def serve(app: Any, sock: socket.socket, url: str, **config: Any) -> int:
    """Run ``app`` with uvicorn on ``sock`` until it stops; ``url`` is announced once it is up."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, **{"log_level": "warning", "lifespan": "on", **config})
    )

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                return await task
            await asyncio.sleep(0.02)
        print(f"listening on {url}", flush=True)
        await task

    asyncio.run(run())
    return 0


def main(
    description: str,
    http_app: Callable[[], Any],
    stdio: Callable[[], object],
    argv: Sequence[str] | None = None,
) -> int:
    """The command line of a server script that serves either way: ``--host``, ``--port`` (0,
    the default, picks a free one), ``--guard`` (the app wrapped by
    :func:`mcp_inflight.guard.guard`, the lines a server author would add) and ``--stdio``
    (``stdio()`` serves stdin/stdout instead of ``http_app()`` on the port)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--guard", action="store_true", help="wrap the app in mcp_inflight.guard")
    p.add_argument("--stdio", action="store_true")
    args = p.parse_args(argv)
    if args.stdio:
        stdio()
        return 0
    app = http_app()
    if args.guard:
        from mcp_inflight.guard import guard

        app = guard(app)
    sock, port = bind(args.host, args.port)
    return serve(app, sock, f"http://{args.host}:{port}/mcp")
