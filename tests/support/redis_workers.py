"""Real parts for the many-workers tests: a ``redis-server`` on a free port in a temporary
directory, ``mcp-inflight serve --workers N --redis URL`` as a process, workers run one per
port, a round-robin balancer in the client, and a delaying TCP proxy."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

import httpx2

from support import oracle

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
LISTEN = re.compile(r"listening on (http://\S+)")
READY = re.compile(r"worker (\d+)-[0-9a-f]+ ready")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """A ``redis-server`` of our own: no persistence, a free port, a temporary directory."""

    def __init__(self, port: int | None = None):
        self.dir = tempfile.mkdtemp(prefix="mcpi-redis-")
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        argv = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir,
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def restart(self) -> None:
        self.kill()
        self.start()

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Serve:
    """``mcp-inflight serve`` in its own process; ``workers`` maps each worker's pid to its
    name once it said it is ready.  stderr is kept (``log``) for the tests to read."""

    def __init__(self, *args: str, workers: int = 1, env: dict | None = None, wait: bool = True):
        argv = [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0", *args]
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.log: list[str] = []
        self.url = ""
        self.workers: dict[int, str] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.expected = workers
        if wait:
            self.ready()

    def ready(self) -> Serve:
        """Wait until the port is announced and every worker said it is ready."""
        workers = self.expected
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not self.url or len(self.workers) < workers):
            if self.proc.poll() is not None:
                raise RuntimeError("serve exited:\n" + "".join(self.log))
            time.sleep(0.02)
        if not self.url or len(self.workers) < workers:
            self.stop()
            raise RuntimeError("serve did not start:\n" + "".join(self.log))
        return self

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            m = LISTEN.search(line)
            if m:
                self.url = m.group(1)
            m = READY.search(line)
            if m:
                name = line.split("worker ", 1)[1].split()[0]
                self.workers[int(m.group(1))] = name

    def text(self) -> str:
        return "".join(self.log)

    def wait_for(self, pattern: str, timeout: float = 10.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text())
            if m:
                return m
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} not in the server's log:\n{self.text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class Worker:
    """One worker of a :class:`Pool`: its process, port, URL and name."""

    def __init__(self, pid: int, url: str, name: str):
        self.pid = pid
        self.url = url
        self.name = name
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])


class Pool(Serve):
    """``n`` workers, each on its own port, forked from one process (``redis_pool.py``)."""

    POOL = re.compile(r"pool worker (\d+) listening on (http://\S+)")

    def __init__(self, n: int, *args: str):
        self.n = n
        here = os.path.dirname(os.path.abspath(__file__))
        argv = [sys.executable, os.path.join(here, "redis_pool.py"), str(n), *args]
        # the workers' wire traces, checked by the model as one (support/oracle.py)
        argv, o = oracle.traced_argv(argv, f"pool of {n} workers")
        self.proc = oracle.watch(
            oracle.pool(o, n),
            subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
        )
        self.log = []
        self.url = ""
        self.workers = {}
        self.urls: dict[int, str] = {}
        self.expected = n
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (len(self.urls) == n == len(self.workers)):
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        if not len(self.urls) == n == len(self.workers):
            self.stop()
            raise RuntimeError("the pool did not start:\n" + self.text())
        self.list = [Worker(pid, self.urls[pid], self.workers[pid]) for pid in sorted(self.urls)]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            m = self.POOL.search(line)
            if m:
                self.urls[int(m.group(1))] = m.group(2)
                continue
            m = READY.search(line)
            if m:
                self.workers[int(m.group(1))] = line.split("worker ", 1)[1].split()[0]

    def __getitem__(self, k: int) -> Worker:
        return self.list[k]

    def __iter__(self):
        return iter(self.list)


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer in the client (``httpx2``, the official client's HTTP library): request
    k goes to ``ports[k % len(ports)]`` over a new connection, so no keep-alive pins a session
    to one worker.  ``served`` records, per request, what it carried (the method, ``answer``
    for a response) and the worker that answered it."""

    def __init__(self, ports: list[int]):
        self.ports = ports
        self.k = 0
        self.inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))
        self.served: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[self.k % len(self.ports)]
        self.k += 1
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        what = request.method
        if request.method == "POST":
            import json

            body = json.loads(request.content or b"{}")
            what = body.get("method") or "answer"
        resp = await self.inner.handle_async_request(request)
        self.served.append((what, resp.headers.get("mcp-inflight-worker", "?")))
        return resp

    async def aclose(self) -> None:
        await self.inner.aclose()


class DelayProxy:
    """A TCP proxy that holds each chunk ``delay`` seconds in each direction (a slow link
    between the workers and Redis).  Runs its own event loop in a thread."""

    def __init__(self, target_port: int, delay: float):
        self.target = target_port
        self.delay = delay
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self._started.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def pipe(reader, writer):
            try:
                while data := await reader.read(65536):
                    await asyncio.sleep(self.delay)
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        async def handle(reader, writer):
            try:
                r2, w2 = await asyncio.open_connection("127.0.0.1", self.target)
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, w2), pipe(r2, writer))

        async def main():
            self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)
            self._started.set()
            await self.server.serve_forever()

        try:
            self.loop.run_until_complete(main())
        except (RuntimeError, asyncio.CancelledError):
            pass

    def close(self) -> None:
        def stop():
            self.server.close()
            for t in asyncio.all_tasks(self.loop):
                t.cancel()

        self.loop.call_soon_threadsafe(stop)
        self.thread.join(5)


@contextlib.contextmanager
def serve_pair(*args: str) -> Iterator[tuple[Serve, Serve]]:
    """Two :class:`Serve` processes started with the same ``args`` (one worker each, a port
    each, so a test picks the instance of every request); both stopped on the way out."""
    one = Serve(*args)
    two = Serve(*args)
    try:
        yield one, two
    finally:
        one.stop()
        two.stop()
