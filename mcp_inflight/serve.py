"""``mcp-inflight serve``: an MCP server on the verified core, over Streamable HTTP or stdio.

The demo tools (other checks depend on their names and arguments):

* ``slow {label, steps, delay}``: each step waits ``delay`` seconds, reports progress (the
  message contains the label) and logs a line containing the label; returns ``done:<label>``;
* ``ask {label, delay}``: after ``delay`` seconds elicits with a message containing the label;
  returns ``ask:<label>:<action>``;
* ``echo {text}``: returns the text.

``--fixtures NAME`` serves ``mcp_inflight.fixtures.NAME`` instead: that module provides
``build() -> Server`` (or ``register(server)``, or a module-level ``server``).

On HTTP the server prints ``mcp-inflight serve: listening on http://HOST:PORT/PATH`` to stderr
once the socket is bound (``--port 0`` picks a free port), so scripts can read the port.

``--redis URL`` keeps 2025-11-25 sessions, in-flight claims, routing and resumable streams in
Redis (:mod:`mcp_inflight.impl.redis_http`), so that ``--workers N`` worker processes, forked
after the socket is bound and all accepting on it, serve any request of any session; each prints
``mcp-inflight serve: worker NAME ready`` once connected to Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import sys
from typing import Any

from mcp_inflight.cli import whole_number
from mcp_inflight.impl.server import Server
from mcp_inflight.serve_http import (
    ServeError,
    _check_redis,
    _run_loop,
    _serve_http,
    _serve_workers,
    http_protocol,
    uvicorn_settings,
)

__all__ = [
    "FixtureError",
    "ServeError",
    "demo_server",
    "fixture_names",
    "fixture_server",
    "http_protocol",
    "run",
    "uvicorn_settings",
]


def demo_server() -> Server:
    server = Server("mcp-inflight-demo", instructions="Demo tools: slow, ask, echo.")

    @server.tool(
        description="Report progress and a log line for each of `steps` steps, then return done:<label>."
    )
    async def slow(ctx: Any, label: str, steps: int = 3, delay: float = 0.1) -> str:
        for k in range(1, steps + 1):
            await asyncio.sleep(delay)
            await ctx.progress(k, steps, f"{label}: step {k}/{steps}")
            await ctx.log(f"{label}: step {k}/{steps}")
        return f"done:{label}"

    @server.tool(
        description="After `delay` seconds ask the user (elicitation); return ask:<label>:<action>."
    )
    async def ask(ctx: Any, label: str, delay: float = 0.0) -> str:
        if delay > 0:
            await asyncio.sleep(delay)
        answer = await ctx.elicit(
            f"{label}: may I go on?",
            {"type": "object", "properties": {"ok": {"type": "boolean", "title": "OK"}}},
        )
        return f"ask:{label}:{answer.get('action')}"

    @server.tool(description="Return the text unchanged.")
    async def echo(ctx: Any, text: str) -> str:
        return text

    return server


class FixtureError(Exception):
    pass


def _serves(mod: Any) -> bool:
    """Whether a module provides a server (``build()``, ``register(server)`` or ``server``)."""
    return (
        callable(getattr(mod, "build", None))
        or callable(getattr(mod, "register", None))
        or isinstance(getattr(mod, "server", None), Server)
    )


def fixture_names() -> list[str]:
    """The modules of ``mcp_inflight.fixtures`` that provide a server (the others are the
    parts they share)."""
    import pkgutil

    import mcp_inflight.fixtures as pkg

    return sorted(
        m.name
        for m in pkgutil.iter_modules(pkg.__path__)
        if _serves(importlib.import_module(f"mcp_inflight.fixtures.{m.name}"))
    )


def fixture_server(name: str) -> Server:
    modname = f"mcp_inflight.fixtures.{name}"
    try:
        found = importlib.util.find_spec(modname)
    except ModuleNotFoundError:
        found = None
    if not name.isidentifier() or found is None:
        known = fixture_names()
        raise FixtureError(
            f"no fixture module {modname!r}; available: {', '.join(known) or 'none'}"
        )
    mod = importlib.import_module(modname)
    if hasattr(mod, "build"):
        server = mod.build()
    elif hasattr(mod, "register"):
        server = Server(f"mcp-inflight-{name}")
        mod.register(server)
    elif isinstance(getattr(mod, "server", None), Server):
        server = mod.server
    else:
        raise FixtureError(f"{modname} has no build(), register(server) or server")
    if not isinstance(server, Server):
        raise FixtureError(f"{modname}.build() returned {type(server).__name__}, not a Server")
    return server


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcp-inflight serve",
        description="Run an MCP server whose request lifecycle is the verified model (atomic design): "
        "the demo tools slow, ask and echo, or a fixture server. Streamable HTTP serves "
        "2025-11-25 (sessions) and 2026-07-28 (stateless) on one endpoint; stdio serves "
        "whichever the client negotiates.",
    )
    p.add_argument(
        "--transport",
        choices=("http", "stdio"),
        default="http",
        help="http: Streamable HTTP with uvicorn (default); stdio: newline-delimited JSON",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=_port,
        default=8000,
        help="port to bind, 0 to 65535; 0 picks a free one (default 8000)",
    )
    p.add_argument("--path", default="/mcp", help="the MCP endpoint's path (default /mcp)")
    p.add_argument(
        "--fixtures",
        metavar="NAME",
        help="serve mcp_inflight.fixtures.NAME instead of the demo tools",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host header name accepted besides loopback names and --host (repeatable; "
        "other Hosts get 421, against DNS rebinding)",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an Origin allowed besides this host's own (repeatable)",
    )
    many = p.add_argument_group("many workers (2025-11-25 sessions shared through Redis)")
    many.add_argument(
        "--redis",
        metavar="URL",
        help="keep sessions, in-flight claims and routing in this Redis (redis://HOST:PORT/DB); "
        "any worker then serves any request of a session",
    )
    many.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="worker processes accepting on one listening socket (default 1; more than 1 "
        "needs --redis)",
    )
    many.add_argument(
        "--lease-ms",
        type=_lease,
        default=10_000,
        metavar="MS",
        help="the lease of an in-flight claim in Redis, renewed every third of it (default "
        "10000); a worker paused or cut off longer loses its requests",
    )
    many.add_argument(
        "--store-timeout",
        type=_seconds,
        default=2.0,
        metavar="SECONDS",
        help="the longest any one call to Redis may take; a store silent longer fails the "
        "request with 503, and a lease unrenewed that long is lost (default 2, at least 1)",
    )
    many.add_argument(
        "--max-event-bytes",
        type=_count,
        default=16 * 1024 * 1024,
        metavar="BYTES",
        help="bytes of events one session keeps in Redis for resumption; beyond, its streams "
        "go on unkept (default 16 MiB; in all, at most this times --max-sessions)",
    )
    check = p.add_argument_group("record and check what runs")
    check.add_argument(
        "--trace",
        metavar="FILE",
        help="write every exchange (HTTP) or every message of the channel (stdio) to FILE as "
        "a JSON Lines wire trace (check it with 'mcp-inflight replay FILE')",
    )
    check.add_argument(
        "--online-check",
        action="store_true",
        help="check each session's exchanges against the model as they happen; count and log "
        "(logger mcp_inflight.trace) every step the atomic design does not explain; the "
        "counts are printed to stderr as the server stops",
    )
    check.add_argument(
        "--online-checker",
        choices=("process", "thread", "inline"),
        default="process",
        help="where --online-check runs: a process beside the server that the server hands "
        "its events to (default), a thread of the server's process, or inline on the "
        "request's path",
    )
    bounds = p.add_argument_group("resource bounds (0 turns one off)")
    bounds.add_argument(
        "--max-body",
        type=_count,
        default=4 * 1024 * 1024,
        metavar="BYTES",
        help="largest POST body accepted; larger gets 413 (default 4 MiB)",
    )
    bounds.add_argument(
        "--max-sessions",
        type=_count,
        default=1024,
        metavar="N",
        help="2025-11-25 sessions open at once; initialize beyond gets 503 (default 1024)",
    )
    bounds.add_argument(
        "--session-idle-timeout",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="end a session idle that long (no request in flight, no stream); its id "
        "then gets 404 and clients initialize again (default 3600)",
    )
    bounds.add_argument(
        "--max-in-flight",
        type=_count,
        default=256,
        metavar="N",
        help="requests running at once in one session; more get 429 (default 256)",
    )
    bounds.add_argument(
        "--max-stream-buffer",
        type=_count,
        default=1024 * 1024,
        metavar="BYTES",
        help="bytes queued for one stream's connection; a client reading slower is cut off "
        "and its request treated as on a closed stream (default 1 MiB)",
    )
    bounds.add_argument(
        "--max-detached",
        type=_count,
        default=1024,
        metavar="N",
        help="handlers running on after their connection went away, in the process; the next "
        "is cancelled at once (default 1024)",
    )
    bounds.add_argument(
        "--detached-timeout",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="cancel a handler still running this long after its connection went away "
        "(default 600)",
    )
    bounds.add_argument(
        "--max-client-capabilities",
        type=_count,
        default=16 * 1024,
        metavar="BYTES",
        help="largest client capabilities an initialize may carry, as compact JSON; larger "
        "is refused with -32602 (default 16 KiB)",
    )
    bounds.add_argument(
        "--header-timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request headers take longer (default 10)",
    )
    bounds.add_argument(
        "--body-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="answer 408 when a request's body is not all there this long after the request "
        "began (default 30)",
    )
    return p


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (0 to 65535)")
    return port


def _workers(text: str) -> int:
    n = whole_number(text)
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"workers must be 1 to 256, not {n}")
    return n


def _lease(text: str) -> int:
    n = whole_number(text)
    if n < 100:
        raise argparse.ArgumentTypeError(f"a lease shorter than 100 ms cannot be renewed: {n}")
    return n


def _count(text: str) -> int | None:
    n = whole_number(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {n}")
    return n or None


def _seconds(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (v >= 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, not {text}")
    return v or None


async def _serve_stdio(server: Server, trace: str | None, online: str | bool = False) -> None:
    """stdio, with the trace of ``--trace`` and the check of ``--online-check`` fed by a
    :class:`~mcp_inflight.trace.tap.StdioTap` between the channel and the server."""
    from mcp_inflight.impl.stdio import LINE_LIMIT, serve_stdio

    if trace is None and not online:
        return await serve_stdio(server)
    import json

    from mcp_inflight.trace.format import Writer
    from mcp_inflight.trace.tap import StdioTap, fan_out, online_check

    writer = Writer(trace) if trace is not None else None
    monitor = online_check(online)
    sinks: list[Any] = [
        s for s in (writer and writer.write, monitor and monitor.feed) if s is not None
    ]
    tap = StdioTap(fan_out(*sinks))
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        tap.write(data)
        out.write(data)
        out.flush()

    try:
        await serve_stdio(server, tap.reader(reader), write)
    finally:
        tap.close()
        if writer is not None:
            writer.close()
        if monitor is not None:
            counts = json.dumps(monitor.close())
            print(f"mcp-inflight serve: online check: {counts}", file=sys.stderr, flush=True)


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not args.path.startswith("/"):
        print("mcp-inflight serve: --path must start with /", file=sys.stderr)
        return 2
    try:
        server = fixture_server(args.fixtures) if args.fixtures else demo_server()
    except FixtureError as e:
        print(f"mcp-inflight serve: {e}", file=sys.stderr)
        return 2
    server.max_client_capabilities = args.max_client_capabilities
    if args.store_timeout is not None and args.store_timeout < 1.0:
        print(
            "mcp-inflight serve: --store-timeout must be at least 1 second (0 turns it off)",
            file=sys.stderr,
        )
        return 2
    if args.workers > 1 and not args.redis:
        print(
            "mcp-inflight serve: --workers needs --redis (the workers share sessions there)",
            file=sys.stderr,
        )
        return 2
    if args.redis and args.transport != "http":
        print("mcp-inflight serve: --redis is for --transport http", file=sys.stderr)
        return 2
    if args.workers > 1 and (args.trace or args.online_check):
        print(
            "mcp-inflight serve: --trace and --online-check run in one process (not --workers)",
            file=sys.stderr,
        )
        return 2
    try:
        if args.redis:
            _check_redis(args.redis)
        if args.workers > 1:
            return _serve_workers(server, args)
        if args.transport == "stdio":
            asyncio.run(_serve_stdio(server, args.trace, args.online_check and args.online_checker))
        else:
            _run_loop(_serve_http(server, args))
    except ServeError as e:
        print(f"mcp-inflight serve: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def main() -> int:  # pragma: no cover
    return run(sys.argv[1:])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
