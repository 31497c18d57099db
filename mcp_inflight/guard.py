"""The guard for servers built on the official Python SDK, as documented in the README::

    from mcp_inflight.guard import guard
    app = guard(server.streamable_http_app())

It lives beside the other adapters of the runtime, in :mod:`mcp_inflight.impl.guard`; this
module re-exports its public names, and adds to :func:`guard` the two options that need the
applications' trace package: ``trace=FILE`` writes every exchange the guarded app serves as a
wire trace (``mcp-inflight replay FILE`` checks it), ``online=True`` checks them against the
model as they happen (counting and logging violations; the counts are at ``app.monitor``).
"""

from typing import Any

from mcp_inflight.impl.guard import (
    DESIGN,
    MAX_BODY,
    REVISION,
    SDK_STANDALONE_SLOT,
    SESSION_HEADER,
    Guard,
    guard_stdio,
    new_core,
    serve_stdio,
)

__all__ = [
    "DESIGN",
    "REVISION",
    "SDK_STANDALONE_SLOT",
    "SESSION_HEADER",
    "Guard",
    "guard",
    "guard_stdio",
    "new_core",
    "serve_stdio",
]


def guard(app: Any, max_body: int = MAX_BODY, trace: Any = None, online: Any = False) -> Any:
    """Wrap an official-SDK Streamable HTTP ASGI app (``server.streamable_http_app()``);
    ``max_body`` should match the SDK's ``max_request_body_size`` when that was changed.
    ``trace``: a path (or a :class:`mcp_inflight.trace.format.Writer`) to write the wire trace
    to; ``online``: True (or a :class:`mcp_inflight.trace.online.Monitor`) to check it online.
    Without either, the :class:`Guard` itself."""
    from mcp_inflight.impl.guard import guard as _guard

    g = _guard(app, max_body)
    if trace is None and not online:
        return g
    from mcp_inflight.trace.tap import traced

    return traced(g, trace=trace, online=online)
