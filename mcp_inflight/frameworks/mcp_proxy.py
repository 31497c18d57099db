"""``mcp-proxy`` (a stdio-to-HTTP bridge) with the guard in front of its HTTP side.

``mcp-proxy`` builds its Starlette app and hands it to uvicorn inside one function
(``mcp_proxy.mcp_server.run_mcp_server``), so a user never holds the app to wrap.  This module
runs ``mcp-proxy``'s own command line, unchanged, with one difference: the app it gives uvicorn is
wrapped by :func:`mcp_inflight.guard.guard` first.  Every option, route and server of the bridge
(``/status``, the SSE endpoints, named servers, CORS) is the bridge's own::

    python -m mcp_inflight.frameworks.mcp_proxy --port 8080 -- python my_server.py

takes the place of ``mcp-proxy --port 8080 -- python my_server.py``.

What the guard covers: the bridge's Streamable HTTP endpoints (``/mcp``, ``/servers/NAME/mcp``),
which are the official SDK's session manager.  Its legacy SSE endpoints (``/sse`` and
``/messages/``) carry the session in a query parameter, not in ``Mcp-Session-Id``, so they pass
through unguarded.  Toward the stdio server the bridge is an SDK client that mints its own ids,
so the stdio side needs no guard.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any


class _GuardedUvicorn(ModuleType):
    """The ``uvicorn`` module as the bridge's server module sees it: the same, except that the
    app of a ``Config`` is guarded."""

    def __init__(self, uvicorn: ModuleType) -> None:
        super().__init__(uvicorn.__name__)
        self._uvicorn = uvicorn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._uvicorn, name)

    def Config(self, app: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 - uvicorn's name
        from mcp_inflight.guard import guard

        return self._uvicorn.Config(guard(app), *args, **kwargs)


def install() -> None:
    """Make the bridge guard the app it serves (idempotent)."""
    import uvicorn
    from mcp_proxy import mcp_server

    if not isinstance(mcp_server.uvicorn, _GuardedUvicorn):
        mcp_server.uvicorn = _GuardedUvicorn(uvicorn)


def main(argv: list[str] | None = None) -> None:
    """``mcp-proxy``'s command line, guarded."""
    install()
    from mcp_proxy.__main__ import main as proxy_main

    if argv is not None:
        sys.argv = ["mcp-proxy", *argv]
    proxy_main()


if __name__ == "__main__":
    main()
