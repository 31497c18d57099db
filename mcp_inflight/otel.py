"""The request lifecycle in OpenTelemetry: each transition of a request as a span event on the
request's span, and metrics of in-flight, refused, cancelled and hung requests.

Needs ``opentelemetry-api`` (the ``otel`` extra); nothing of the runtime or the guard changes
without it, or without an observer.  Attach one observer to the guard or to a server of the
runtime::

    from mcp_inflight.guard import guard
    from mcp_inflight.otel import LifecycleTelemetry

    app = guard(server.streamable_http_app(), observer=LifecycleTelemetry())

    # mcp-inflight's own runtime (mcp_inflight.impl.server.Server):
    server.observer = LifecycleTelemetry()

It uses the global tracer and meter providers unless given its own.

**Where the events come from.**  Every lifecycle decision of the guard and the runtime is an
action of the model (``model/session.py``) taken by a session's core
(:class:`mcp_inflight.impl.core.SessionCore`); the core reports each action it takes to its
``on_step``.  The observer's hook (``arriving``, called by the guard and the runtime before a
core decides on a request) installs itself there, so the events are the model's actions
themselves, named as the model names them, never a second reading of the traffic.

**Spans.**  One span per request instance (an arrival: two requests under one id are two
spans), started when it arrives, as a child of the current span (an HTTP server span of your
ASGI instrumentation, when there is one), ended when the request is over in the model: refused,
its handler ended (responded, or unwound after a cancel), or its session ended.  Its name is the
method (``tools/call NAME`` for a tool call, as OpenTelemetry's MCP conventions name spans);
its kind INTERNAL.  Attributes, by the semantic conventions for JSON-RPC and MCP:
``mcp.method.name``, ``jsonrpc.request.id`` (the id as text), ``jsonrpc.protocol.version``
(``2.0``), ``mcp.session.id`` (where the request has a session), ``gen_ai.tool.name`` for a
tool call; and this project's ``mcp_inflight.request.id_type`` (``int`` or ``string``: ``7``
and ``"7"`` are two ids), ``mcp_inflight.request.instance`` (the core's arrival number) and
``mcp_inflight.model.profile`` (the model's profile the core runs, e.g. ``2025-11-25 http``;
not ``mcp.protocol.version``, which names the version the client negotiated and which the guard
does not read).

**Span events**, one per action of the model on that request, named ``mcp_inflight.<action>``
(``mcp_inflight.arrive``, ``.admit``, ``.refuse``, ``.break_stream``, ``.on_cancel``,
``.respond``, ``.unwind``, ``.server_request``, ``.answer``, ``.withdraw``, ``.end_request``,
``.reject``), with ``mcp_inflight.action``, ``mcp_inflight.state.before`` and
``mcp_inflight.state.after`` (the model's lifecycle states: ``sent``, ``received``,
``in_flight``, ``responded``, ``cancelled``, ``stream_broken``, ``refused``); a refusal and a
cancellation carry ``mcp_inflight.reason`` and a cancellation ``mcp_inflight.cancelled_by``
(``client``: ``notifications/cancelled``; ``close``: the client closed the request's stream,
2026-07-28; ``session``: its session ended).  A message written for a request (``emit``:
progress, logs) is not an event, unless the model dropped it (its stream was gone):
``mcp_inflight.message_dropped``.  The session-level actions (``end_session``) have no request
and so no span.  Many workers (``serve --workers N --redis URL``): a worker that lost the claim
of a running request's id (a renewal or a write refused, the store out of reach for a lease)
adds ``mcp_inflight.lease_lost`` (``mcp_inflight.reason``, ``mcp_inflight.worker``) to that
request's span before its handler is cancelled.

**Metrics** (meter ``mcp_inflight``):

* ``mcp_inflight.requests.in_flight`` (up-down counter): admitted requests whose handler has not
  ended;
* ``mcp_inflight.requests.refused`` (counter; ``mcp_inflight.reason``: ``duplicate`` or
  ``session_ended``);
* ``mcp_inflight.requests.cancelled`` (counter; ``mcp_inflight.cancelled_by``);
* ``mcp_inflight.streams.broken`` (counter): requests whose client went away before the response;
* ``mcp_inflight.requests.hung`` (counter): requests ended by their session's end (``DELETE``,
  or the SDK's idle expiry behind the guard) while their handler still ran with its stream
  gone: the requests that would otherwise never end;
* ``mcp_inflight.leases.lost`` (counter; ``mcp_inflight.worker``): claims a worker lost.

Each of the others carries ``mcp.method.name``.
"""

from __future__ import annotations

import weakref
from typing import Any

from opentelemetry import metrics, trace

from .model.lifecycle import Life

SCOPE = "mcp_inflight"
#: The actions that end a request instance in the model (its span ends with them).
#: ``end_request`` ends it too: once its session is gone, nothing may be asked of the request
#: (behind the guard, the SDK's handler of a gone client is never heard of again).
_ENDING = frozenset(("refuse", "reject", "respond", "unwind", "end_request"))


def _label(value: Any) -> str:
    try:
        return Life(int(value)).label
    except (TypeError, ValueError):
        return "unsent"


class LifecycleTelemetry:
    """The lifecycle observer: pass it as ``guard(app, observer=...)`` or set it as
    ``server.observer``; see the module text."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.in_flight = meter.create_up_down_counter(
            "mcp_inflight.requests.in_flight",
            unit="{request}",
            description="admitted requests whose handler has not ended",
        )

        def counter(name: str, description: str) -> metrics.Counter:
            return meter.create_counter(name, unit="{request}", description=description)

        self.refused = counter(
            "mcp_inflight.requests.refused", "requests refused before anything was registered"
        )
        self.cancelled = counter("mcp_inflight.requests.cancelled", "requests cancelled")
        self.broken = counter(
            "mcp_inflight.streams.broken", "requests whose client went away before their response"
        )
        self.hung = counter(
            "mcp_inflight.requests.hung",
            "requests ended by their session's end while running with no stream",
        )
        self.leases_lost = counter(
            "mcp_inflight.leases.lost",
            "requests whose worker lost the claim of their id (many workers)",
        )
        self._cores: weakref.WeakKeyDictionary[Any, _CoreWatch] = weakref.WeakKeyDictionary()

    # --- the hook the guard and the runtime call ----------------------------------------------
    def arriving(self, session_id: str | None, core: Any, msg: dict[str, Any]) -> None:
        """A request ``msg`` is about to be decided on by ``core`` (of session ``session_id``,
        None without one)."""
        watch = self._cores.get(core)
        if watch is None:
            watch = self._cores[core] = _CoreWatch(self, core)
        watch.session_id = session_id
        watch.pending = msg

    def lease_lost(self, session_id: str, core: Any, handle: Any, why: str, worker: str) -> None:
        """Many workers (``serve --workers N --redis URL``): this worker no longer owns the
        claim of ``handle`` (its renewal or a write was refused, or the store was out of reach
        for a lease); its handler is cancelled next."""
        self.leases_lost.add(1, {"mcp_inflight.worker": worker})
        watch = self._cores.get(core)
        entry = None if watch is None else watch.spans.get(handle.inst)
        if entry is not None:
            entry[0].add_event(
                "mcp_inflight.lease_lost",
                {
                    "mcp_inflight.reason": why,
                    "mcp_inflight.worker": worker,
                    "mcp_inflight.state": entry[2],
                },
            )


class _CoreWatch:
    """One core's ``on_step``: the spans of its request instances."""

    def __init__(self, telemetry: LifecycleTelemetry, core: Any) -> None:
        self.t = telemetry
        self.core = weakref.ref(core)
        self.session_id: str | None = None
        self.pending: dict[str, Any] | None = None
        self.profile = f"{core.cfg.revision} {'http' if core.cfg.http else 'stdio'}"
        self.spans: dict[Any, tuple[Any, dict[str, Any], str]] = {}  # inst -> span, attrs, state
        self.admitted: set[Any] = set()
        self.before = core.on_step  # another observer (a test's): called too
        core.on_step = self.step

    def _life(self, r: Any) -> str:
        core = self.core()
        return "unsent" if core is None else _label(core.s.life.get(r))

    def step(self, name: str, r: Any, out: Any) -> None:
        if self.before is not None:
            self.before(name, r, out)
        if name == "arrive":
            self._open(r)
        elif name == "answer" and out is not None:
            r = out[0]  # the client's answer is no request's step: it resolves the waiter's
        entry = self.spans.get(r)
        if entry is None:  # a session-level action, or a request arrived before the observer
            return
        span, attrs, before = entry
        after = self._life(r)
        metric = {"mcp.method.name": attrs["mcp.method.name"]}
        extra: dict[str, Any] = {}
        if name == "emit":
            if out is not None and not out[1]:
                span.add_event("mcp_inflight.message_dropped", {"mcp_inflight.state": after})
            return
        if name == "admit":
            self.admitted.add(r)
            self.t.in_flight.add(1, metric)
        elif name in ("refuse", "reject"):
            reason = "duplicate" if name == "refuse" else "session_ended"
            extra["mcp_inflight.reason"] = (
                "id already in flight in this session" if name == "refuse" else "session ended"
            )
            self.t.refused.add(1, {**metric, "mcp_inflight.reason": reason})
        elif name == "on_cancel":
            core = self.core()
            by = "close" if core is not None and core.cfg.close_is_cancel else "client"
            extra["mcp_inflight.cancelled_by"] = by
            extra["mcp_inflight.reason"] = (
                "notifications/cancelled" if by == "client" else "the client closed its stream"
            )
            self.t.cancelled.add(1, {**metric, "mcp_inflight.cancelled_by": by})
        elif name == "end_request":
            extra["mcp_inflight.cancelled_by"] = "session"
            extra["mcp_inflight.reason"] = "the session ended"
            self.t.cancelled.add(1, {**metric, "mcp_inflight.cancelled_by": "session"})
            if before == "stream_broken":
                self.t.hung.add(1, metric)
        elif name == "break_stream":
            self.t.broken.add(1, metric)
        span.add_event(
            f"mcp_inflight.{name}",
            {
                "mcp_inflight.action": name,
                "mcp_inflight.state.before": before,
                "mcp_inflight.state.after": after,
                **extra,
            },
        )
        self.spans[r] = (span, attrs, after)
        if name in _ENDING:
            self._close(r, metric)

    def _open(self, r: Any) -> None:
        msg = self.pending or {}
        self.pending = None
        method = msg.get("method")
        method = method if isinstance(method, str) else "unknown"
        rid = msg.get("id")
        attrs: dict[str, Any] = {
            "mcp.method.name": method,
            "jsonrpc.protocol.version": "2.0",
            "jsonrpc.request.id": rid if isinstance(rid, str) else str(rid),
            "mcp_inflight.model.profile": self.profile,
            "mcp_inflight.request.id_type": "string" if isinstance(rid, str) else "int",
            "mcp_inflight.request.instance": int(r),
        }
        name = method
        params = msg.get("params")
        if (
            method == "tools/call"
            and isinstance(params, dict)
            and isinstance(params.get("name"), str)
        ):
            attrs["gen_ai.tool.name"] = params["name"]
            name = f"{method} {params['name']}"
        if self.session_id is not None:
            attrs["mcp.session.id"] = self.session_id
        span = self.t.tracer.start_span(name, kind=trace.SpanKind.INTERNAL, attributes=attrs)
        self.spans[r] = (span, attrs, "sent")

    def _close(self, r: Any, metric: dict[str, Any]) -> None:
        span, _attrs, state = self.spans.pop(r)
        if r in self.admitted:
            self.admitted.discard(r)
            self.t.in_flight.add(-1, metric)
        if state == "refused":
            span.set_status(trace.Status(trace.StatusCode.ERROR, "refused"))
        span.end()
