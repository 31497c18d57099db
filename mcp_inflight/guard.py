"""The guard for servers built on the official Python SDK, as documented in the README::

    from mcp_inflight.guard import guard
    app = guard(server.streamable_http_app())

It lives beside the other adapters of the runtime, in :mod:`mcp_inflight.impl.guard`; this
module re-exports its public names.
"""

from mcp_inflight.impl.guard import (
    DESIGN,
    REVISION,
    SDK_STANDALONE_SLOT,
    SESSION_HEADER,
    Guard,
    guard,
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
