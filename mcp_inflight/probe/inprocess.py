""":func:`probe_app`: the probe of an ASGI app in-process, with no socket and no port.

The same scenarios, controls, verdicts and JSON report as ``mcp-inflight probe URL``: the
recorder and the judges are the same code; only the transport differs.  Requests go through
:class:`.asgi.StreamingASGITransport` (httpx's own ASGI transport buffers whole responses, so it
cannot show an SSE stream as it arrives; see :mod:`.asgi`), and the app's lifespan runs around
the probe.

Two things differ from the URL probe, both said here and in the README:

* **pace**: with no network, a POST that has not ended 1.5 times the tool's running time plus
  1 s after the last step counts as lost (the URL probe waits 2.5 times plus 3 s), and the two
  tools are measured at once; that is what brings a probe under 10 s;
* **the attribution by time**.  A message is attributed to a request only if it arrived at least
  3/4 of the tool's measured running time after the request was sent.  In-process the probe and
  the app share one event loop and one clock, so a delay in the loop delays the server's work and
  the probe's readings alike: arrival times only grow, which can make an attribution ambiguous
  (then it is not made) but not wrong.  What can make it wrong is a stall of the loop *while the
  tool is measured*: the measured time, and with it the floor, grows past the tool's real time,
  and a request's own answer would look too early to be its own.  :class:`LoopWatch` records the
  loop's stalls; a measurement that saw a stall over :func:`.scenarios.stall_budget` is taken
  again, and if the second stalls too, the scenarios whose verdicts rest on it
  (:data:`.records.TIME_ATTRIBUTED`) are reported as not judged, with the reason.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypedDict, Unpack

from .records import (
    DEFAULT_ARGS,
    DEFAULT_ELICIT_ARGS,
    DEFAULT_ELICIT_TOOL,
    DEFAULT_TOOL,
    MODERN,
    PROTOCOL_VERSION,
    SCENARIOS,
    STATELESS_SCENARIOS,
    TASK_SCENARIOS,
    CannotTest,
)
from .report import Report, untested

_PROBING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_inflight_probing", default=False
)


class _QuietClients(logging.Filter):
    """Drops httpx's own line per request ("HTTP Request: POST ...") for the probe's requests
    (hundreds of them, in the user's test log); other httpx users keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _PROBING.get()


IN_PROCESS_PACE_ARGS: dict[str, Any] = {
    "lost_factor": 1.5,
    "lost_slack": 1.0,
    "calibrate_together": True,
}


class LoopWatch:
    """How late the event loop wakes a task that sleeps ``tick`` seconds: each lateness over
    ``least`` is a stall, kept as ``(monotonic end, seconds)``."""

    def __init__(self, tick: float = 0.01, least: float = 0.02) -> None:
        self.tick = tick
        self.least = least
        self.stalls: list[tuple[float, float]] = []
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.tick)
            after = time.monotonic()
            late = after - before - self.tick
            if late > self.least:
                self.stalls.append((after, late))

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def worst(self, start: float, end: float) -> float:
        """The longest stall that overlapped the monotonic interval ``[start, end]``."""
        return max((s for e, s in self.stalls if e >= start and e - s <= end), default=0.0)


class ProbeOptions(TypedDict, total=False):
    """The keyword options of :func:`probe_app` (the defaults are :func:`probe_app_async`'s)."""

    tool: str
    args: dict | None
    elicit_tool: str | None
    elicit_args: dict | None
    path: str
    base_url: str
    headers: dict | None
    scenarios: Iterable[str] | None
    lifespan: bool
    progress: Callable[[str], None] | None
    revision: str


async def probe_app_async(
    app: Any,
    *,
    tool: str = DEFAULT_TOOL,
    args: dict | None = None,
    elicit_tool: str | None = DEFAULT_ELICIT_TOOL,
    elicit_args: dict | None = None,
    path: str = "/mcp",
    base_url: str = "http://127.0.0.1:8000",
    headers: dict | None = None,
    scenarios: Iterable[str] | None = None,
    lifespan: bool = True,
    progress: Callable[[str], None] | None = None,
    revision: str = PROTOCOL_VERSION,
) -> Report:
    """Probe the ASGI ``app`` in the running event loop; see :func:`probe_app`."""
    from .asgi import AppRunner, LifespanFailed
    from .recording import Target
    from .scenarios import Pace, probe
    from .stateless import probe_stateless

    if revision not in (PROTOCOL_VERSION, MODERN):
        raise ValueError(f"revision must be {PROTOCOL_VERSION} or {MODERN}, not {revision!r}")
    modern = revision == MODERN
    chosen = _scenarios(scenarios, STATELESS_SCENARIOS if modern else SCENARIOS)
    url = base_url.rstrip("/") + path
    label = f"{url} (in-process {type(app).__name__})"
    watch = LoopWatch()
    watch.start()
    quiet = _QuietClients()
    logging.getLogger("httpx").addFilter(quiet)
    probing = _PROBING.set(True)
    try:
        try:
            async with AppRunner(app, lifespan=lifespan) as runner:
                t = Target(
                    url=url,
                    tool=tool,
                    args=dict(DEFAULT_ARGS if args is None else args),
                    elicit_tool=elicit_tool or None,
                    elicit_args=dict(DEFAULT_ELICIT_ARGS if elicit_args is None else elicit_args),
                    headers=dict(headers or {}),
                    transport=runner.transport,
                    label=label,
                )
                pace = Pace(**IN_PROCESS_PACE_ARGS)
                if modern:
                    doc = await probe_stateless(t, chosen, progress, pace)
                else:
                    doc = await probe(t, chosen, progress, pace, watch)
        except LifespanFailed as exc:
            return Report(untested(label, str(exc)))
        except CannotTest as exc:
            return Report(untested(label, str(exc)))
    finally:
        logging.getLogger("httpx").removeFilter(quiet)
        _PROBING.reset(probing)
        await watch.stop()
    records = doc.pop("records")
    return Report(doc, records)


def probe_app(app: Any, **options: Unpack[ProbeOptions]) -> Report:
    """Probe the ASGI ``app`` (a Streamable HTTP MCP endpoint at ``path``) in-process and return
    the :class:`.report.Report`: the same scenarios, controls and verdicts as
    ``mcp-inflight probe URL``, and in ``report.doc`` the same JSON.

    ``tool``/``args``: a tool that reports progress for the client's progress token at least
    twice and runs at least a second; ``elicit_tool``/``elicit_args``: one that elicits after at
    least 0.6 s (None skips ``server_request_routing``); the defaults fit ``mcp-inflight serve``'s
    demo tools.  ``base_url``: the scheme, host and port the requests name (the official SDK
    checks the Host header: keep a loopback name with a port).  ``scenarios``: a subset of
    ``SCENARIOS``.  ``lifespan``: run the app's ASGI lifespan around the probe (the official SDK's
    app starts its session manager there; that manager runs only once, so build a fresh app for
    each probe).  A target that cannot be probed gives a report with ``status == "untested"``
    and ``reason``, never a clean one.

    Runs its own event loop (in a worker thread when called from a running loop); from async
    code, await :func:`probe_app_async` instead.  The options and their defaults are those of
    :func:`probe_app_async`.
    """
    return blocking(probe_app_async(app, **options))


async def probe_app_tasks_async(
    app: Any,
    *,
    tool: str | None = None,
    args: dict | None = None,
    path: str = "/mcp",
    base_url: str = "http://127.0.0.1:8000",
    headers: dict | None = None,
    scenarios: Iterable[str] | None = None,
    lifespan: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The task scenarios (``mcp-inflight probe URL --tasks``) on the ASGI ``app``, in the running
    event loop; see :func:`probe_app_tasks`."""
    from .asgi import AppRunner, LifespanFailed
    from .recording import Target
    from .task_scenarios import TaskTarget, probe_tasks

    chosen = _scenarios(scenarios, TASK_SCENARIOS)
    url = base_url.rstrip("/") + path
    label = f"{url} (in-process {type(app).__name__})"
    quiet = _QuietClients()
    logging.getLogger("httpx").addFilter(quiet)
    probing = _PROBING.set(True)
    try:
        async with AppRunner(app, lifespan=lifespan) as runner:
            t = Target(
                url=url,
                tool="",
                args={},
                elicit_tool=None,
                elicit_args={},
                headers=dict(headers or {}),
                transport=runner.transport,
                label=label,
            )
            doc = await probe_tasks(TaskTarget(t, tool, args), chosen, progress)
    except (LifespanFailed, CannotTest) as exc:
        return Report(dict(untested(label, str(exc)), planned=list(TASK_SCENARIOS)))
    finally:
        logging.getLogger("httpx").removeFilter(quiet)
        _PROBING.reset(probing)
    records = doc.pop("records")
    return Report(doc, records)


def probe_app_tasks(app: Any, **options: Any) -> Report:
    """The 2025-11-25 task scenarios of ``mcp-inflight probe URL --tasks`` on the ASGI ``app``
    in-process: the same table, judges and JSON report (``"kind": "tasks"``).  ``tool``: the
    tool to run as a task (None: the first whose ``execution.taskSupport`` allows it);
    ``args``: its arguments, making it run at least a second; ``scenarios``: a subset of
    ``TASK_SCENARIOS``; the other options as :func:`probe_app`'s.  A server without tasks gets
    every scenario as not applicable (``status == "untested"``), never a clean report.  Runs its
    own event loop (in a worker thread when called from a running loop)."""
    return blocking(probe_app_tasks_async(app, **options))


def blocking(coro: Coroutine[Any, Any, Report]) -> Report:
    """Run ``coro`` to its end in a loop of its own: here, or in a worker thread when this thread
    already runs a loop (a test of an async framework)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _scenarios(chosen: Iterable[str] | None, known: tuple[str, ...] = SCENARIOS) -> tuple[str, ...]:
    if chosen is None:
        return known
    if isinstance(chosen, str):
        chosen = (chosen,)
    out = tuple(chosen)
    unknown = [s for s in out if s not in known]
    if unknown:
        raise ValueError(
            f"unknown scenario(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
        )
    return tuple(s for s in known if s in out) if out else known
