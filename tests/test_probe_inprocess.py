"""The in-process probe (``mcp_inflight.probe.probe_app``): its streaming ASGI transport, the
lifespan it runs, what it says when it cannot test, the loop-stall rule that keeps the attribution
by time honest, and (slow) its verdicts against the URL probe's on the same three servers."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx
import pytest

from mcp_inflight import probe as P
from mcp_inflight.impl.sse import Decoder
from mcp_inflight.probe.asgi import AppRunner, LifespanFailed

# --- the transport ----------------------------------------------------------------------------


def sse_app(log: list, release: asyncio.Event):
    """Sends one SSE event, then waits for ``release`` (or the client's disconnect) before the
    second; records what ``receive()`` returned after the body."""

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                m = await receive()
                log.append(m["type"])
                await send({"type": m["type"] + ".complete"})
                if m["type"] == "lifespan.shutdown":
                    return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": b'data: {"n": 1}\n\n', "more_body": True})
        waiter = asyncio.ensure_future(receive())
        await asyncio.wait(
            {waiter, asyncio.ensure_future(release.wait())}, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter.done():
            log.append(waiter.result()["type"])
            return
        await send(
            {"type": "http.response.body", "body": b'data: {"n": 2}\n\n', "more_body": False}
        )
        log.append("sent all")

    return app


async def first_event(chunks) -> object:
    """The first event's JSON from an async iterator of body chunks (left open for the rest)."""
    d = Decoder()
    async for chunk in chunks:
        for e in d.feed(chunk):
            return e.json()
    return None


def test_transport_streams_each_event_while_the_app_still_runs():
    async def main():
        log, release = [], asyncio.Event()
        async with AppRunner(sse_app(log, release)) as runner:
            async with httpx.AsyncClient(transport=runner.transport()) as c:
                async with c.stream("POST", "http://127.0.0.1:8000/mcp", content=b"{}") as r:
                    chunks = r.aiter_bytes()
                    first = await first_event(chunks)  # the app waits for the test's release
                    release.set()
                    rest = b"".join([c async for c in chunks])
        return log, first, rest

    log, first, rest = asyncio.run(main())
    assert first == {"n": 1}
    assert rest.endswith(b'data: {"n": 2}\n\n')
    assert log == ["lifespan.startup", "sent all", "lifespan.shutdown"]


def test_httpx_asgi_transport_buffers_the_whole_response():
    """Why the probe has its own transport: httpx's returns no response until the app is done,
    so the first event never arrives while the app waits for the client."""

    async def main():
        log, release = [], asyncio.Event()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(sse_app(log, release))) as c:
            try:
                await asyncio.wait_for(c.post("http://127.0.0.1:8000/mcp", content=b"{}"), 1.0)
            except TimeoutError:
                return "no response while the app runs"
        return "a response"

    assert asyncio.run(main()) == "no response while the app runs"


def test_closing_the_response_is_a_disconnect_for_the_app():
    async def main():
        log, release = [], asyncio.Event()
        async with AppRunner(sse_app(log, release)) as runner:
            async with httpx.AsyncClient(transport=runner.transport()) as c:
                async with c.stream("POST", "http://127.0.0.1:8000/mcp", content=b"{}") as r:
                    await first_event(r.aiter_bytes())
            for _ in range(100):
                if "http.disconnect" in log:
                    break
                await asyncio.sleep(0.01)
        return log

    assert asyncio.run(main()) == ["lifespan.startup", "http.disconnect", "lifespan.shutdown"]


def test_lifespan_failure_and_apps_without_lifespan():
    async def failing(scope, receive, send):
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "no database"})

    async def http_only(scope, receive, send):
        assert scope["type"] == "http"
        await receive()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def main():
        with pytest.raises(LifespanFailed, match="no database"):
            async with AppRunner(failing):
                pass
        async with AppRunner(http_only) as runner:
            async with httpx.AsyncClient(transport=runner.transport()) as c:
                return (await c.get("http://127.0.0.1:8000/")).status_code

    assert asyncio.run(main()) == 204
    report = P.probe_app(failing)
    assert not report and report.status == "untested" and "no database" in report.reason


# --- probe_app: could not test, and the loop-stall rule ---------------------------------------


def _our_app(*tools):
    """Our runtime's app with ``echo`` and the given tool handlers."""
    from mcp_inflight.impl.http import create_app
    from mcp_inflight.impl.server import Server

    server = Server("inprocess-test")

    async def echo(ctx, text: str) -> str:
        return text

    for fn in (echo, *tools):
        server.add_tool(fn)
    return create_app(server)


def test_an_app_without_a_slow_tool_cannot_be_tested_and_is_not_clean():
    report = P.probe_app(_our_app())
    assert report.status == "untested" and report.clean is False and not report
    assert "tool missing" in report.reason and "echo" in report.reason
    assert report.doc["exit"] == 2 and not any(f["found"] for f in report.doc["findings"])
    assert "COULD NOT TEST" in report.text() and "COULD NOT TEST" in repr(report)
    report = P.probe_app(_our_app(), tool="echo", args={"text": "x"})
    assert report.status == "untested" and "no progress" in report.reason


@pytest.mark.slow  # several seconds of real time; CI runs it with the slow tests
def test_a_tool_that_blocks_the_event_loop_leaves_the_time_attributed_scenarios_unjudged():
    """In-process, the probe shares the app's event loop: a tool that blocks it while it is
    measured makes the measured time, and so the attribution by time, untrustworthy.  The
    probe measures twice, then reports those scenarios as not judged instead of judging them
    with a wrong floor."""

    async def blocking(ctx, label: str, steps: int = 4, delay: float = 0.25) -> str:
        time.sleep(0.4)  # blocks the loop (on purpose)
        for k in range(1, steps + 1):
            await asyncio.sleep(delay)
            await ctx.progress(k, steps, f"{label}: {k}")
        return "done"

    report = P.probe_app(
        _our_app(blocking),
        tool="blocking",
        args={"label": "x"},
        elicit_tool=None,
        scenarios=["duplicate_progress", "reuse"],
    )
    assert report.status == "untested" and not report
    assert set(report.not_judged) == {"duplicate_progress"}
    assert "stalled" in report.not_judged["duplicate_progress"]
    judged = {s["scenario"]: s for s in report.doc["scenarios"]}
    assert judged["reuse"]["status"] == "judged"  # not timed: judged as usual
    assert "duplicate_progress" not in report.records or not report.records["duplicate_progress"]


def test_loop_watch_reports_a_stall_in_its_window():
    async def main():
        w = P.LoopWatch()
        w.start()
        await asyncio.sleep(0.05)
        start = time.monotonic()
        time.sleep(0.2)
        await asyncio.sleep(0.05)
        end = time.monotonic()
        await w.stop()
        return w.worst(start, end), w.worst(end + 1, end + 2)

    inside, after = asyncio.run(main())
    assert inside >= 0.15 and after == 0.0


def test_probe_app_from_a_running_event_loop_runs_in_a_thread():
    async def main():
        sync = P.probe_app(_our_app())  # its own loop, in a worker thread
        awaited = await P.probe_app_async(_our_app())  # this loop
        return sync, awaited

    sync, awaited = asyncio.run(main())
    assert sync.reason == awaited.reason and "tool missing" in sync.reason


def test_unknown_scenarios_are_refused():
    with pytest.raises(ValueError, match="unknown scenario"):
        P.probe_app(_our_app(), scenarios=["nope"])


# --- the same verdicts in-process and over a socket (slow) ------------------------------------


def _probe_argv(url: str) -> list[str]:
    return [sys.executable, "-m", "mcp_inflight", "probe", url, "--json", "--quiet"]


def _unjudged(doc: dict) -> bool:
    return doc["status"] == "untested" or any(
        sc["status"] == "not_judged" for sc in doc.get("scenarios", [])
    )


@pytest.mark.slow
def test_in_process_verdicts_equal_the_url_probes(sdk_bare, sdk_guarded, tmp_path):
    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server
    from support.sdk_server import build_app

    serve = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = serve.stderr.readline()
        serve_url = line.split()[-1]
        urls = {"bare": sdk_bare, "guarded": sdk_guarded, "serve": serve_url}
        procs = {
            n: subprocess.Popen(
                _probe_argv(u),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for n, u in urls.items()
        }
        url_docs = {n: json.loads(p.communicate(timeout=120)[0]) for n, p in procs.items()}
        for n, u in urls.items():
            # A probe that could not judge (a scenario's deadline passed on a loaded machine:
            # the three probes run at once) is not a verdict: that one runs again, alone.
            if _unjudged(url_docs[n]):
                again = subprocess.run(_probe_argv(u), capture_output=True, text=True, timeout=120)
                url_docs[n] = json.loads(again.stdout)
    finally:
        serve.terminate()
        serve.wait(10)
    apps = {
        "bare": lambda: build_app(False),
        "guarded": lambda: build_app(True),
        "serve": lambda: create_app(demo_server()),
    }
    for name, make in apps.items():
        doc = P.probe_app(make()).doc
        assert P.verdicts(doc) == P.verdicts(url_docs[name]), name
        assert set(doc) == set(url_docs[name])
    assert P.verdicts(url_docs["bare"])["status"] == "defects"
    assert P.verdicts(url_docs["guarded"])["status"] == "clean"
