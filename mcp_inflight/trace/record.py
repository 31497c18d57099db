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

import httpx

from ..impl import sse
from .format import C2S, S2C, Exchanges, Writer, event

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


class Recorder:
    """The proxy as an ASGI app; ``writer`` receives the events."""

    def __init__(self, upstream: str, writer: Writer) -> None:
        self.upstream = upstream
        self.writer = writer
        self.exchanges = Exchanges()
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10))

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
        method = scope["method"]
        ex = self.exchanges.name(method)
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k.decode("latin-1").lower() not in _HOP
        ]
        session = next((v for k, v in headers if k.lower() == "mcp-session-id"), None)
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        self.writer.write(event("open", ex, C2S, session, method=method))
        if body:
            try:
                self._messages(ex, C2S, session, json.loads(body))
            except ValueError:
                pass
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
            whole = b""
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
                        try:
                            self._messages(ex, S2C, session, e.json())
                        except ValueError:
                            pass
                else:
                    whole += chunk
                try:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except OSError:
                    by = "client"
                    break
            if not is_sse and whole:
                try:
                    self._messages(ex, S2C, session, json.loads(whole))
                except ValueError:
                    pass
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
    writer = Writer(args.out)
    app = Recorder(args.upstream, writer)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=args.listen, log_level="warning", lifespan="on"
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
