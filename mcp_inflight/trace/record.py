"""``mcp-inflight record``: a recording reverse proxy in front of any Streamable HTTP server.

An ASGI app (served by uvicorn on 127.0.0.1) forwards each request to the upstream URL with
httpx, streams the answer back as it arrives, and writes every event it sees to a trace in the
format of :mod:`mcp_inflight.trace.format`: the exchange opened, each JSON-RPC message of the
body, the status, each message of an SSE stream as it passes, and the close (by the server at
the end of the response, by the client when it goes away first; a client that goes away closes
the upstream stream too, so the server sees the disconnect).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..impl import sse
from ..impl.http_checks import LOOPBACK, split_host
from .format import C2S, MAX_RECORDED, S2C, Exchanges, Writer, event

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}
#: the largest request body the proxy forwards (413 beyond), and how long a body may take
MAX_BODY = 4 * 1024 * 1024
BODY_TIMEOUT = 30.0
#: how long a request's headers may take (the connection is closed then)
HEADER_TIMEOUT = 10.0


class Recorder:
    """The proxy as an ASGI app; ``writer`` receives the events."""

    def __init__(
        self,
        upstream: str,
        writer: Writer,
        max_body: int | None = MAX_BODY,
        body_timeout: float | None = BODY_TIMEOUT,
    ) -> None:
        self.upstream = upstream
        self.writer = writer
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.exchanges = Exchanges()
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10))

    async def _body(self, receive: Any) -> bytes | int:
        """The request body, or the status refusing it: 413 over ``max_body`` (as soon as it
        is over), 408 when it takes longer than ``body_timeout``, 400 when the client left."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    m = await receive()
                    if m["type"] == "http.disconnect":
                        return 400
                    chunk = m.get("body", b"")
                    size += len(chunk)
                    if self.max_body is not None and size > self.max_body:
                        return 413
                    chunks.append(chunk)
                    if not m.get("more_body"):
                        return b"".join(chunks)
        except TimeoutError:
            return 408

    @staticmethod
    def _foreign(scope: dict[str, Any]) -> int | None:
        """The proxy forwards with the upstream's own ``Host``, so it checks the client's
        ``Host`` and ``Origin`` itself, as a server on loopback must against DNS rebinding
        (else a page of any name resolved to 127.0.0.1 would reach the upstream through it):
        421 for a Host that is not a loopback name with the proxy's port, 403 for an Origin
        that is not a loopback one; None when both pass."""
        server = scope.get("server")
        own = server[1] if server and len(server) > 1 else None
        hosts = [v for k, v in scope["headers"] if k.lower() == b"host"]
        origins = [v for k, v in scope["headers"] if k.lower() == b"origin"]
        if len(hosts) != 1:
            return 421
        got = split_host(hosts[0].decode("latin-1"))
        if got is None or got[0] not in LOOPBACK or (got[1] is not None and got[1] != own):
            return 421
        for origin in origins:
            u = urlsplit(origin.decode("latin-1"))
            if len(origins) > 1 or u.scheme not in ("http", "https"):
                return 403
            if (u.hostname or "") not in LOOPBACK and f"[{u.hostname}]" not in LOOPBACK:
                return 403
        return None

    @staticmethod
    async def _refuse(send: Any, status: int) -> None:
        text = {
            403: b"Forbidden: Origin not allowed",
            408: b"Request Timeout",
            413: b"Payload Too Large",
            421: b"Misdirected Request: Host is not this proxy",
        }.get(status, b"Bad Request")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain"),
                    (b"content-length", str(len(text)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": text})

    @staticmethod
    def _loads(data: bytes | str) -> Any:
        """JSON, or None for what cannot be read (not JSON, or nested too deep to read): it is
        forwarded as it came, only not recorded as messages."""
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            return None

    def _messages(self, ex: int | str, d: str, session: str | None, body: Any) -> None:
        for m in body if isinstance(body, list) else [body]:
            if isinstance(m, dict):
                self.writer.write(event("message", ex, d, session, message=m))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        refused = self._foreign(scope)
        if refused is not None:
            return await self._refuse(send, refused)
        method = scope["method"]
        ex = self.exchanges.name(method)
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k.decode("latin-1").lower() not in _HOP
        ]
        session = next((v for k, v in headers if k.lower() == "mcp-session-id"), None)
        body = await self._body(receive)
        if isinstance(body, int):
            return await self._refuse(send, body)
        self.writer.write(event("open", ex, C2S, session, method=method))
        if body:
            self._messages(ex, C2S, session, self._loads(body))
        req = self.client.build_request(method, self.upstream, headers=headers, content=body)
        resp = await self.client.send(req, stream=True)
        session = resp.headers.get("mcp-session-id", session)
        self.writer.write(event("status", ex, S2C, session, status=resp.status_code))
        out_headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in resp.headers.items()
            if k.lower() not in _HOP
        ]
        await send(
            {"type": "http.response.start", "status": resp.status_code, "headers": out_headers}
        )
        is_sse = resp.headers.get("content-type", "").startswith("text/event-stream")
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        by = "server"
        try:
            dec = sse.Decoder()
            parts: list[bytes] | None = []
            kept = 0
            it = resp.aiter_raw().__aiter__()
            while True:
                nxt = asyncio.ensure_future(it.__anext__())
                stop = asyncio.ensure_future(gone.wait())
                done, _ = await asyncio.wait({nxt, stop}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    nxt.cancel()
                    by = "client"
                    break
                stop.cancel()
                try:
                    chunk = nxt.result()
                except StopAsyncIteration:
                    break
                if is_sse:
                    for e in dec.feed(chunk):
                        self._messages(ex, S2C, session, self._loads(e.data))
                elif parts is not None:
                    parts.append(chunk)
                    kept += len(chunk)
                    if kept > MAX_RECORDED:
                        parts = None  # forwarded whole, too large to record as messages
                try:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except OSError:
                    by = "client"
                    break
            if not is_sse and parts:
                self._messages(ex, S2C, session, self._loads(b"".join(parts)))
            if by == "server":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            await resp.aclose()
            self.writer.write(event("close", ex, C2S if by == "client" else S2C, session, by=by))


WHAT = (
    "Run a recording reverse proxy on 127.0.0.1:PORT in front of a Streamable HTTP MCP server, "
    "or run a stdio MCP server (--stdio -- COMMAND ...) between this process's stdin/stdout and "
    "its own, and write every exchange's events to a JSON Lines trace (check it with "
    "'mcp-inflight replay')."
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcp-inflight record", description=WHAT)
    p.add_argument("--upstream", help="the server's MCP endpoint URL")
    p.add_argument("--listen", type=int, help="the port to listen on (0: any)")
    p.add_argument("--out", required=True, help="the trace file to write")
    p.add_argument(
        "--max-body",
        type=int,
        default=MAX_BODY,
        metavar="BYTES",
        help="largest request body forwarded; larger gets 413 (default 4 MiB; 0: no bound)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT,
        metavar="SECONDS",
        help=f"answer 408 to a body slower than this (default {BODY_TIMEOUT:g}; 0: none)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT,
        metavar="SECONDS",
        help=f"close a connection whose headers take longer (default {HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--stdio",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="run COMMAND (after --stdio, with its arguments) as a stdio server and record "
        "its channel",
    )
    return p


async def record_stdio(cmd: list[str], writer: Writer) -> int:
    """Run ``cmd`` with its stdin and stdout piped through a
    :class:`~mcp_inflight.trace.tap.StdioTap`: this process's input goes to it, its output
    comes out here; the end of this input closes its input.  Its exit status."""
    import sys

    from .tap import StdioTap

    tap = StdioTap(writer.write)
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    loop = asyncio.get_running_loop()
    inp = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(inp), sys.stdin)
    reader = tap.reader(inp)
    out = sys.stdout.buffer

    async def pump_in() -> None:
        stdin = proc.stdin
        assert stdin is not None
        while chunk := await reader.read(65536):
            stdin.write(chunk)
            await stdin.drain()
        stdin.close()

    async def pump_out() -> None:
        stdout = proc.stdout
        assert stdout is not None
        while chunk := await stdout.read(65536):
            tap.write(chunk)
            out.write(chunk)
            out.flush()
        tap.close("server")

    feeding = asyncio.create_task(pump_in())
    await pump_out()
    code = await proc.wait()
    feeding.cancel()
    return code


def run(argv: list[str]) -> int:
    import uvicorn

    p = _parser()
    args = p.parse_args(argv)
    if args.stdio is not None:
        cmd = args.stdio[1:] if args.stdio[:1] == ["--"] else args.stdio
        if not cmd:
            p.error("--stdio needs the server's command")
        writer = Writer(args.out)
        try:
            return asyncio.run(record_stdio(cmd, writer))
        finally:
            writer.close()
    if args.upstream is None or args.listen is None:
        p.error("--upstream and --listen are required (or --stdio COMMAND)")
    from ..serve import http_protocol

    writer = Writer(args.out)
    app = Recorder(args.upstream, writer, args.max_body or None, args.body_timeout or None)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.listen,
        log_level="warning",
        lifespan="on",
        http=http_protocol(args.header_timeout or None),
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            sock = server.servers[0].sockets[0]
            print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
        await task

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        writer.close()
    return 0
