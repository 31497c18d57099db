"""``mcp-inflight serve`` over Streamable HTTP: the socket, uvicorn as ``serve`` sets it up, and
the worker processes of ``--workers N --redis URL``.

``serve.py`` holds the command (its options, the demo tools and fixtures, stdio) and calls
:func:`serve_http` or :func:`serve_workers`.  One worker listens, binds and announces its port
(``mcp-inflight serve: listening on ...``); with ``--workers`` the socket is bound first and the
workers, forked after, all accept on it, each saying ``worker NAME ready`` once connected to
Redis.  Headers must arrive within ``--header-timeout``: the protocol class here enforces it.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

from mcp_inflight.impl.server import Server


class ServeError(Exception):
    pass


def _run_loop(coro: Any) -> Any:
    """Run on uvloop when it is installed (faster I/O), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def _with_header_timeout(base: type, timeout: float) -> type:
    """uvicorn's HTTP protocol ``base`` with a deadline on each request's headers: a connection
    that has not completed a request's headers ``timeout`` seconds after it opened (or after its
    last response) is closed.  uvicorn bounds the idle time between requests but not this, so
    slow clients could hold every file descriptor."""

    class HeaderTimeout(base):
        def _arm_headers(self) -> None:
            armed = self.cycle

            def expire() -> None:
                if self.cycle is armed and not self.transport.is_closing():
                    self.transport.close()

            self._header_timer = self.loop.call_later(timeout, expire)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_headers()

        def on_response_complete(self) -> None:
            timer = getattr(self, "_header_timer", None)
            if timer is not None:
                timer.cancel()
            super().on_response_complete()
            self._arm_headers()

        def connection_lost(self, exc: Any) -> None:
            timer = getattr(self, "_header_timer", None)
            if timer is not None:
                timer.cancel()
            super().connection_lost(exc)

    return HeaderTimeout


class HeldHead:
    """The transport as one request's response sees it (uvicorn's ``RequestResponseCycle``
    writes through it): the head of the response is held and written together with the
    response's first body write, one ``write`` (one ``send`` on the socket) where uvicorn makes
    two.  Nothing is reordered or changed: the bytes are the same, in the same order.  A held
    head is written at the latest when the loop next turns (``call_soon``), so the head of a
    stream whose first event comes later (SSE) still goes out at once, before the app waits for
    anything, and when the connection is closed."""

    __slots__ = ("_transport", "_cycle", "_loop", "_head", "_seen")

    def __init__(self, transport: Any, cycle: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._cycle = cycle
        self._loop = loop
        self._head: bytes | None = None
        self._seen = False  # the head of this cycle's response has been written or held

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head + data)
            return
        cycle = self._cycle
        if not self._seen and cycle.response_started:
            self._seen = True  # this write is the head (uvicorn writes it as the response starts)
            if not cycle.response_complete:
                self._head = data
                self._loop.call_soon(self.flush)
                return
        self._transport.write(data)

    def flush(self) -> None:
        """Write a held head now (nothing if none is held)."""
        head = self._head
        if head is not None:
            self._head = None
            if not self._transport.is_closing():
                self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _coalescing(base: type) -> type:
    """uvicorn's httptools protocol ``base`` whose responses write through :class:`HeldHead`."""

    class Coalescing(base):
        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and type(cycle.transport) is not HeldHead:
                cycle.transport = HeldHead(cycle.transport, cycle, self.loop)

    return Coalescing


def http_protocol(header_timeout: float | None) -> Any:
    """The uvicorn ``http`` setting for ``serve``: uvicorn's httptools protocol with each
    response's head and first body written at once (:class:`HeldHead`), and the header deadline
    when one is set; without httptools, uvicorn's h11 protocol (with the deadline)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is optional for uvicorn
        if header_timeout is None:
            return "auto"
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return _with_header_timeout(H11Protocol, header_timeout)
    base = _coalescing(HttpToolsProtocol)
    if header_timeout is None:
        return base
    return _with_header_timeout(base, header_timeout)


def uvicorn_settings() -> dict:
    """The uvicorn settings ``serve`` runs its HTTP server with (the keyword arguments of
    ``uvicorn.Config`` besides the app and the socket): no access log, no ``server`` and ``date``
    headers, proxy headers not trusted, the app's lifespan run.  Benchmarks use the same."""
    return {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        "proxy_headers": False,
        "server_header": False,
        "date_header": False,
    }


def _traced(app: Any, args: Any) -> Any:
    """``app`` with the trace writer and the online check of ``--trace``/``--online-check``."""
    if not args.trace and not args.online_check:
        return app
    import json

    from mcp_inflight.trace.tap import traced

    tap = traced(app, trace=args.trace, online=args.online_check and args.online_checker)

    def stopping() -> None:  # the online check's counts, as the server stops
        if tap.monitor is not None:
            counts = json.dumps(tap.monitor.close())
            print(f"mcp-inflight serve: online check: {counts}", file=sys.stderr, flush=True)

    tap.on_shutdown = stopping
    return tap


def _listen(args: Any) -> socket.socket:
    try:
        infos = socket.getaddrinfo(
            args.host, args.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, addr = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)  # bound and listening before the port is announced
    except OSError as e:
        raise ServeError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return sock


def _announce(sock: socket.socket, args: Any) -> None:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"mcp-inflight serve: listening on http://{shown}:{port}{args.path}",
        file=sys.stderr,
        flush=True,
    )


def _uvicorn_server(config: Any, server: Server) -> Any:
    """uvicorn's server for ``server``, which, when told to stop (SIGINT, SIGTERM), first ends
    every live ``subscriptions/listen`` (each answered, its stream closed): uvicorn waits for
    open connections before the app hears of the shutdown, and a listen never ends by itself."""
    import uvicorn

    class Stopping(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on the loop's thread: nothing live to end
                loop = None
            if loop is not None and not self.should_exit:
                loop.call_soon_threadsafe(server.end_subscriptions)
            super().handle_exit(sig, frame)

    return Stopping(config)


async def _serve_http(server: Server, args: Any, sock: socket.socket | None = None) -> None:
    import uvicorn

    from mcp_inflight.impl.http import LOOPBACK, create_app

    hosts = set(LOOPBACK) | {args.host} | set(args.allow_host)
    many = (
        {
            "redis": args.redis,
            "lease_ms": args.lease_ms,
            "store_timeout": args.store_timeout,
            "max_event_bytes": args.max_event_bytes,
        }
        if args.redis
        else {}
    )
    app = create_app(
        server,
        args.path,
        allowed_hosts=hosts,
        allowed_origins=args.allow_origin,
        max_body=args.max_body,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
        max_in_flight=args.max_in_flight,
        body_timeout=args.body_timeout,
        max_stream_buffer=args.max_stream_buffer,
        max_detached=args.max_detached,
        detached_timeout=args.detached_timeout,
        **many,
    )
    app = _traced(app, args)
    config = uvicorn.Config(app, **uvicorn_settings(), http=http_protocol(args.header_timeout))
    userver = _uvicorn_server(config, server)
    if sock is None:
        sock = _listen(args)
        _announce(sock, args)
    await userver.serve(sockets=[sock])
    if not userver.started:
        raise ServeError("the server did not start (see the error above)")


def _check_redis(url: str) -> None:
    """Fail early and plainly when the store is unreachable."""
    try:
        import redis
    except ImportError:
        raise ServeError(
            "--redis needs the redis package: pip install 'mcp-inflight[redis]'"
        ) from None
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        client.ping()
        client.close()
    except (redis.RedisError, OSError, ValueError) as e:
        raise ServeError(f"cannot reach Redis at {url}: {e}") from None


def _serve_workers(server: Server, args: Any) -> int:
    """``--workers N``: the parent binds and listens, then forks N workers that all accept on
    that one socket (one accept queue: a worker killed loses only the connections it had
    accepted, and the others go on serving the port), and starts a worker again when one dies
    (unless it died within two seconds of its start, which would only repeat)."""
    import os
    import signal
    import time

    sock = _listen(args)
    _announce(sock, args)
    children: dict[int, float] = {}
    stopping = False

    def start_one() -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _run_loop(_serve_http(server, args, sock))
                code = 0
            except KeyboardInterrupt:
                code = 0
            except ServeError as e:
                print(f"mcp-inflight serve: {e}", file=sys.stderr, flush=True)
            finally:
                os._exit(code)
        children[pid] = time.monotonic()

    def stop(signum: Any, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for _ in range(args.workers):
        start_one()
    failed = False
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started = children.pop(pid, None)
        if started is None or stopping:
            continue
        lived = time.monotonic() - started
        print(
            f"mcp-inflight serve: worker {pid} ended (status {status}) after {lived:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        if lived < 2.0:
            failed = True
            continue
        start_one()
    return 1 if failed else 0
